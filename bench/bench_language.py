"""The cost per item of telling its language, and how often it agrees with what pages
declare, side by side with py3langid (the peer; bench extra).

    .venv/bin/python bench/bench_language.py [--limit 300]

Texts: the main text of the recipes-dev pages (many languages; each page's declared
``lang`` is the reference, primary subtag) and the text of every dev-corpus file
(mostly undeclared: counted only for cost). Each detector gets the same sample of each
text (``kernels.language.sample``: what textsieve looks at). Reported: CPU ms per item
(process time, best of 3 passes), the one-time load cost, agreement with the declared
language, and the cost next to extracting the item (textsieve's own extraction CPU of
the same texts).
"""

from __future__ import annotations

import argparse
import gzip
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def texts(limit: int) -> tuple[list[tuple[str, str | None]], float]:
    """(text, declared primary language) pairs, and the CPU seconds their extraction took."""
    import textsieve

    out: list[tuple[str, str | None]] = []
    cpu = 0.0
    pages = sorted((DATA / "recipes-dev").glob("*/*.html.gz"))[:limit]
    for p in pages:
        html = gzip.decompress(p.read_bytes())
        t = time.process_time()
        doc = textsieve.extract(html, name="page.html", html="main")
        cpu += time.process_time() - t
        lang = doc.metadata.language
        if doc.text:
            out.append((doc.text, lang.split("-")[0].lower() if lang else None))
    for p in sorted((DATA / "dev-corpus").rglob("*")):
        if not p.is_file() or p.name in ("MANIFEST.tsv", "README.md"):
            continue
        t = time.process_time()
        doc = textsieve.extract(str(p), ocr="never")
        cpu += time.process_time() - t
        if doc.text:
            out.append((doc.text, None))
    return out, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=300, help="recipes-dev pages to use")
    args = ap.parse_args()
    from textsieve.kernels.language import detect, sample

    items, extract_cpu = texts(args.limit)
    samples = [sample(t) for t, _ in items]
    t = time.process_time()
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    peer_load = time.process_time() - t
    t = time.process_time()
    import pycld2  # noqa: F401

    ours_load = time.process_time() - t

    def ours(s: str) -> str | None:
        return detect(s)

    def peer(s: str) -> str | None:
        lang, prob = ident.classify(s)
        return lang if prob >= 0.9 else None

    rows = []
    for name, fn, load in (("textsieve (pycld2)", ours, ours_load),
                           ("py3langid", peer, peer_load)):
        best, found = float("inf"), []
        for _ in range(3):
            t = time.process_time()
            found = [fn(s) for s in samples]
            best = min(best, time.process_time() - t)
        declared = [(f, d) for f, (_, d) in zip(found, items, strict=True) if d]
        agree = sum(1 for f, d in declared if f and f.split("-")[0] == d)
        answered = sum(1 for f in found if f)
        rows.append((name, best / len(samples) * 1000, load, agree, len(declared), answered))
    n = len(samples)
    print(f"{n} texts ({sum(1 for _, d in items if d)} with a declared language); "
          f"extraction {extract_cpu / n * 1000:.2f} ms CPU per item")
    print(f"{'detector':<20}{'ms/item':>9}{'load s':>8}{'agrees':>12}{'answered':>10}"
          f"{'of extraction':>15}")
    for name, ms, load, agree, declared, answered in rows:
        print(f"{name:<20}{ms:>9.3f}{load:>8.2f}{agree:>6}/{declared:<5}{answered:>10}"
              f"{ms / (extract_cpu / n * 1000):>14.1%}")
    print(f"py3langid / textsieve, per item: {rows[1][1] / rows[0][1]:.1f}x")


if __name__ == "__main__":
    main()
