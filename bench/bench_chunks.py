"""Chunking benchmark: chunks per second on the dev corpus, textsieve beside its peers.

Run by hand, niced (the extraction first, a minute or two; then seconds)::

    nice -n 10 .venv/bin/python bench/bench_chunks.py [--max-tokens 512] [--overlap 64]
        [--repeat 3] [--ocr never]

Every item of ``../shared/data/dev-corpus`` with text (attachments and members included)
is extracted once; then each chunker is run over all of them ``--repeat`` times, and the
best round's process CPU seconds are printed, with chunks/s, MB of text/s, and the share of
chunks over budget (counted by textsieve's approximation, the same yardstick for all).

Peers, when installed (``pip install langchain-text-splitters semchunk``):
``langchain_text_splitters.RecursiveCharacterTextSplitter`` (the common baseline; its
``length_function`` is given the same token count) and ``semchunk`` (same counter). Both
chunk the plain text only: they know nothing of headings, pages or table rows, so they are
the cost of chunking without structure, not the same product.

With ``bpe-openai`` installed (GPT's cl100k tables bundled: nothing downloaded), the
approximate token count is compared with cl100k's exact one: the ratio on pieces of 2,000
characters of every item, and how many of textsieve's chunks cl100k puts over the budget.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import textsieve
from textsieve.chunking import approx_tokens, chunk

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "dev-corpus"


def load(ocr: str) -> list[textsieve.Document]:
    docs = []
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.parent != CORPUS):
        doc = textsieve.extract(path, ocr=ocr)
        docs.extend(d for d in doc.walk() if d.status != "error" and d.text.strip())
    return docs


def peers(max_tokens: int, overlap: int) -> dict[str, Callable[[str], list[str]]]:
    out: dict[str, Callable[[str], list[str]]] = {}
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        splitter = RecursiveCharacterTextSplitter(
            chunk_size=max_tokens, chunk_overlap=overlap, length_function=approx_tokens)
        out["langchain recursive"] = splitter.split_text
    except ImportError:
        print("(langchain-text-splitters not installed: skipped)", file=sys.stderr)
    try:
        import semchunk

        # A fresh chunker per document, unmemoized: its cache of token counts would
        # make every round after the first free.
        out["semchunk"] = lambda text: semchunk.chunkerify(
            approx_tokens, max_tokens, memoize=False)(text, overlap=overlap or None)
    except ImportError:
        print("(semchunk not installed: skipped)", file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--overlap", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ocr", default="never", help="OCR while extracting (auto: minutes)")
    ns = ap.parse_args()
    docs = load(ns.ocr)
    chars = sum(len(d.text) for d in docs)
    print(f"{len(docs)} items with text, {chars / 1e6:.1f} MB of text; "
          f"max_tokens={ns.max_tokens} overlap={ns.overlap}")
    runners: dict[str, Callable[[textsieve.Document], list[str]]] = {
        "textsieve": lambda d: [c.text for c in chunk(d, ns.max_tokens, ns.overlap,
                                                     children=False)]}
    for name, split in peers(ns.max_tokens, ns.overlap).items():
        runners[name] = lambda d, split=split: split(d.text)
    base = None
    print(f"{'chunker':22} {'CPU s':>8} {'chunks':>8} {'chunks/s':>10} {'MB/s':>7} "
          f"{'over budget':>11} {'CPU ratio':>9}")
    for name, run in runners.items():
        best, pieces = float("inf"), []
        for _ in range(ns.repeat):
            t0 = time.process_time()
            pieces = [p for d in docs for p in run(d)]
            best = min(best, time.process_time() - t0)
        over = sum(approx_tokens(p) > ns.max_tokens for p in pieces)
        base = base or best
        print(f"{name:22} {best:8.2f} {len(pieces):8} {len(pieces) / best:10.0f} "
              f"{chars / 1e6 / best:7.2f} {over / max(len(pieces), 1):10.1%} "
              f"{best / base:9.2f}")
    against_cl100k(docs, ns.max_tokens, ns.overlap)


def against_cl100k(docs: list[textsieve.Document], max_tokens: int, overlap: int) -> None:
    try:
        import bpe_openai
    except ImportError:
        print("(bpe-openai not installed: no comparison with cl100k)", file=sys.stderr)
        return
    enc = bpe_openai.get_encoding("cl100k_base")
    ratios = sorted(approx_tokens(p) / n for d in docs
                    for p in (d.text[i:i + 2000] for i in range(0, len(d.text), 2000))
                    if (n := len(enc.encode(p))))
    qs = ", ".join(f"p{int(q * 100)} {ratios[int(len(ratios) * q)]:.2f}"
                   for q in (0.05, 0.1, 0.25, 0.5, 0.75, 0.95))
    print(f"approx / cl100k tokens on {len(ratios)} pieces of 2,000 characters: {qs}")
    chunks = [c.text for d in docs for c in chunk(d, max_tokens, overlap, children=False)]
    counts = sorted(len(enc.encode(c)) for c in chunks)
    over = sum(n > max_tokens for n in counts)
    print(f"textsieve chunks over {max_tokens} cl100k tokens: {over} of {len(chunks)} "
          f"({over / len(chunks):.1%}); the largest {counts[-1]}")


if __name__ == "__main__":
    main()
