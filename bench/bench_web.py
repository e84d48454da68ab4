"""Web main-content and metadata benchmark: textsieve vs trafilatura on WCXB dev.

Run by hand: `.venv/bin/python bench/bench_web.py [--limit N] [--no-metadata]`.

Content: ../shared/tools/web_score.py's own loader, metric (WCXB: lowercased word-bag
precision/recall/F1 per page, averaged over pages) and timed runner, imported here, so the
figures are the scorer's; both extractors run in the same process and run, one after the
other, each timed sequentially on one core. Printed: overall and per page type F1,
precision, recall, pages/s, textsieve/trafilatura ratios, and per page type on the two
halves of the split: A (md5 of the page id even) was used for tuning, B (odd) is held out.

Metadata: title, author and publish date against the ground truth, for textsieve's
``page_metadata`` and for ``trafilatura.extract_metadata`` alone. A field is correct when
normalised values are equal (title and author: case-folded, whitespace collapsed, quotes
and dashes unified; date: the YYYY-MM-DD prefix); an empty prediction for an empty truth
is correct, so a reader that invents authors is penalised.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import time
import unicodedata
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT.parent / "shared" / "tools"
sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(ROOT / "src"))

import web_score as ws  # noqa: E402

from textsieve.model import Document  # noqa: E402
from textsieve.web import main_text, page_metadata  # noqa: E402
from textsieve.web.main import _tree  # noqa: E402

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                         "\u2013": "-", "\u2014": "-", "\u00a0": " "})


def norm(value: object) -> str:
    text = unicodedata.normalize("NFKC", str(value or "")).translate(_QUOTES)
    return re.sub(r"\s+", " ", text).strip().casefold()


def norm_date(value: object) -> str:
    m = re.match(r"\d{4}-\d{2}-\d{2}", str(value or "").strip())
    return m.group(0) if m else ""


def content(pages: list, limit_note: str) -> None:
    metric = ws.WcxbMetric()
    runs = [
        ws.Extractor("trafilatura", ws._version("trafilatura"), ws.make_trafilatura()),
        ws.Extractor("textsieve", "main_text", main_text),
    ]
    results = [ws.run_extractor(ex, pages, metric, 0, False, False) for ex in runs]
    traf, ours = results
    print(f"\n## Main content, WCXB dev ({len(pages)} pages{limit_note})\n")
    print("| extractor | precision | recall | F1 | F1 half A | F1 half B | pages/s | "
          "pages/cpu-s | empty |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        s = r.summary
        print(f"| {r.name} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} | "
              f"{_f1(r.per_page, 'A')} | {_f1(r.per_page, 'B')} | {r.pages_per_s:.1f} | "
              f"{r.pages_per_cpu_s:.1f} | {r.empty} |")
    print(f"\nratios textsieve/trafilatura: F1 {ours.summary['f1'] / traf.summary['f1']:.3f}, "
          f"pages/s {ours.pages_per_s / traf.pages_per_s:.2f}, "
          f"pages/cpu-s {ours.pages_per_cpu_s / traf.pages_per_cpu_s:.2f}")
    print("\n| type | n | trafilatura P | R | F1 | textsieve P | R | F1 | ΔF1 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for g in sorted(ours.groups):
        t, o = traf.groups[g], ours.groups[g]
        print(f"| {g} | {o['n']} | {t['precision']:.3f} | {t['recall']:.3f} | {t['f1']:.3f} | "
              f"{o['precision']:.3f} | {o['recall']:.3f} | {o['f1']:.3f} | "
              f"{o['f1'] - t['f1']:+.3f} |")
    print("\nF1 per type and half (A: tuned on, B: held out), trafilatura / textsieve\n")
    print("| type | A n | A trafilatura | A textsieve | B n | B trafilatura | B textsieve |")
    print("|---|---|---|---|---|---|---|")
    for g in sorted(ours.groups):
        cells = []
        for h in "AB":
            n = sum(1 for row in ours.per_page if row["group"] == g and half(row["id"]) == h)
            cells += [str(n), _f1(traf.per_page, h, g), _f1(ours.per_page, h, g)]
        print(f"| {g} | " + " | ".join(cells) + " |")


def half(page_id: str) -> str:
    """The fixed split: "A" (tuning) or "B" (held out), by a hash of the page id."""
    return "B" if int(hashlib.md5(page_id.encode()).hexdigest(), 16) % 2 else "A"


def _f1(rows: list, part: str, group: str | None = None) -> str:
    f1s = [r["f1"] for r in rows if half(r["id"]) == part and group in (None, r["group"])]
    return f"{sum(f1s) / len(f1s):.3f}" if f1s else "-"


def metadata(pages: list) -> None:
    from trafilatura.metadata import extract_metadata

    fields = ("title", "author", "publish_date")
    hits: dict[str, dict[str, list[int]]] = {"textsieve": defaultdict(list),
                                            "trafilatura": defaultdict(list)}
    seconds = {"textsieve": 0.0, "trafilatura": 0.0}
    for page in pages:
        html = ws.decode_html(ws.read_raw(page.path))
        truth = {f: page.truth.get(f) for f in fields}
        t0 = time.perf_counter()
        doc = Document()
        page_metadata(_tree(html), page.url, doc)
        seconds["textsieve"] += time.perf_counter() - t0
        ours = {"title": doc.title, "author": doc.metadata.author,
                "publish_date": doc.metadata.created}
        t0 = time.perf_counter()
        try:
            info = extract_metadata(html, default_url=page.url)
        except Exception:
            info = None
        seconds["trafilatura"] += time.perf_counter() - t0
        theirs = {"title": getattr(info, "title", None), "author": getattr(info, "author", None),
                  "publish_date": getattr(info, "date", None)}
        for name, pred in (("textsieve", ours), ("trafilatura", theirs)):
            for f in fields:
                fn = norm_date if f == "publish_date" else norm
                ok = fn(pred[f]) == fn(truth[f])
                hits[name][f].append(int(ok))
                hits[name][f + (" (truth set)" if truth[f] else " (truth empty)")].append(int(ok))
    print(f"\n## Metadata accuracy, WCXB dev ({len(pages)} pages; exact after normalisation)\n")
    keys = [k for k in hits["textsieve"] if not k.endswith(")")]
    keys += sorted(k for k in hits["textsieve"] if k.endswith(")"))
    print("| field | n | textsieve | trafilatura |")
    print("|---|---|---|---|")
    for k in keys:
        a, b = hits["textsieve"][k], hits["trafilatura"][k]
        print(f"| {k} | {len(a)} | {sum(a) / len(a):.3f} | {sum(b) / len(b):.3f} |")
    print(f"\nmetadata seconds/page: textsieve {seconds['textsieve'] / len(pages) * 1000:.1f} ms, "
          f"trafilatura {seconds['trafilatura'] / len(pages) * 1000:.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, help="only the first N pages (smoke test)")
    ap.add_argument("--no-metadata", action="store_true")
    ap.add_argument("--no-content", action="store_true")
    args = ap.parse_args()
    pages = ws.load_pages("wcxb", ws.DEFAULT_DIRS["wcxb"], "dev")
    note = ""
    if args.limit:
        pages, note = pages[: args.limit], f", first {args.limit}"
    if not args.no_content:
        content(pages, note)
    if not args.no_metadata:
        metadata(pages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
