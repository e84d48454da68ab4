"""Web main-content and metadata benchmark: textsieve vs trafilatura, side by side.

Run by hand: `.venv/bin/python bench/bench_web.py [--dataset articles|wcxb|both]
[--part tune|holdout|all] [--limit N] [--speed] [--no-metadata]`.

Data: ``../shared/data/articles-dev`` (129 article pages, the text a reader should get)
and ``../shared/data/wcxb/dev`` (1,497 pages of seven types). Each set is split by site
(articles: the page's folder name without its number; WCXB: the URL's host without
"www."): a site whose md5 ends in 0-2 of 10 is *holdout* (about 30% of the sites), the
rest *tune*. Develop on ``--part tune``; score *holdout* only to check that a change
generalises (no page of a holdout site was looked at while tuning).

Content: ../shared/tools/web_score.py's own loader, metric (lowercased word-bag
precision/recall/F1 per page, averaged over pages) and timed runner, imported here, so the
figures are the scorer's; trafilatura 2.3 (``extract(include_comments=False)``, the
scorer's built-in) and ``textsieve.web:main_text`` run in the same process and run.
Printed per set and part: precision, recall, F1, and the *chrome pages* both ways: pages
where one keeps the page's chrome (precision < 0.5) while the other is clean (>= 0.8).

Speed (``--speed``, also part of every content run): pages per CPU-second (process time),
interleaved: both extractors on each page in turn, the order alternating, so load
drifting on a shared machine hits both alike.

Metadata (WCXB only): title, author and publish date against the ground truth, for
textsieve's ``page_metadata`` and for ``trafilatura.extract_metadata`` alone. A field is
correct when normalised values are equal (title and author: case-folded, whitespace
collapsed, quotes and dashes unified; date: the YYYY-MM-DD prefix); an empty prediction
for an empty truth is correct, so a reader that invents authors is penalised.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import re
import sys
import time
import unicodedata
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

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
# Chrome pages: one extractor keeps the chrome (precision below LOW) where the other is
# clean (precision at least HIGH).
LOW, HIGH = 0.5, 0.8


def norm(value: object) -> str:
    text = unicodedata.normalize("NFKC", str(value or "")).translate(_QUOTES)
    return re.sub(r"\s+", " ", text).strip().casefold()


def norm_date(value: object) -> str:
    m = re.match(r"\d{4}-\d{2}-\d{2}", str(value or "").strip())
    return m.group(0) if m else ""


def site(page: ws.Page) -> str:
    """The site a page comes from: the URL's host, else the folder name sans number."""
    if page.url:
        host = urlsplit(page.url).hostname or ""
        return host.removeprefix("www.")
    return re.sub(r"-\d+$", "", page.page_id)


def part(page: ws.Page) -> str:
    """"holdout" for about 30% of the sites (by md5 of the site), else "tune"."""
    return "holdout" if int(hashlib.md5(site(page).encode()).hexdigest(), 16) % 10 < 3 \
        else "tune"


def load(dataset: str, which: str, limit: int | None) -> list[ws.Page]:
    pages = ws.load_pages(dataset, ws.DEFAULT_DIRS[dataset], "dev")
    if which != "all":
        pages = [p for p in pages if part(p) == which]
    return pages[:limit] if limit else pages


def _row(name: str, s: dict, chrome: int) -> str:
    return (f"| {name} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} | "
            f"{chrome} |")


def content(dataset: str, pages: list[ws.Page], label: str) -> None:
    metric = ws.METRICS[dataset]()
    runs = [
        ws.Extractor("trafilatura", ws._version("trafilatura"), ws.make_trafilatura()),
        ws.Extractor("textsieve", "main_text", main_text),
    ]
    traf, ours = (ws.run_extractor(ex, pages, metric, 0, False, False) for ex in runs)
    by_part: dict[str, list[int]] = defaultdict(list)
    for i, page in enumerate(pages):
        by_part[part(page)].append(i)
    print(f"\n## Main content, {dataset} ({label})\n")
    print("| part | pages | extractor | precision | recall | F1 | chrome pages |")
    print("|---|---|---|---|---|---|---|")
    for name in ("tune", "holdout", "all"):
        idx = by_part[name] if name != "all" else list(range(len(pages)))
        if not idx:
            continue
        t = [traf.per_page[i] for i in idx]
        o = [ours.per_page[i] for i in idx]
        ts, os_ = metric.aggregate(t), metric.aggregate(o)
        ours_chrome = sum(1 for a, b in zip(t, o, strict=True)
                          if b["precision"] < LOW and a["precision"] >= HIGH)
        their_chrome = sum(1 for a, b in zip(t, o, strict=True)
                           if a["precision"] < LOW and b["precision"] >= HIGH)
        for tag, s, c in (("trafilatura", ts, their_chrome), ("textsieve", os_, ours_chrome)):
            print(f"| {name} | {len(idx)} " + _row(tag, s, c))
    print("\nchrome pages: precision < 0.5 where the other extractor's is >= 0.8")
    if dataset == "wcxb":
        print("\n| type | n | trafilatura P | R | F1 | textsieve P | R | F1 | ΔF1 |")
        print("|---|---|---|---|---|---|---|---|---|")
        for g in sorted(ours.groups):
            t, o = traf.groups[g], ours.groups[g]
            print(f"| {g} | {o['n']} | {t['precision']:.3f} | {t['recall']:.3f} | "
                  f"{t['f1']:.3f} | {o['precision']:.3f} | {o['recall']:.3f} | "
                  f"{o['f1']:.3f} | {o['f1'] - t['f1']:+.3f} |")


def speed(pages: list[ws.Page], label: str) -> None:
    """Pages per CPU-second, interleaved (see the module docstring)."""
    runs = {"trafilatura": ws.make_trafilatura(), "textsieve": main_text}
    inputs = list(ws.iter_inputs(pages, None))
    for fn in runs.values():  # warm-up: lazy imports and caches
        with contextlib.suppress(Exception):
            fn(inputs[0][1], inputs[0][0].url)
    cpu = dict.fromkeys(runs, 0.0)
    for i, (page, html, _path) in enumerate(inputs):
        for name in (list(runs) if i % 2 else list(runs)[::-1]):
            t0 = time.process_time()
            with contextlib.suppress(Exception):  # a failure costs its time, as in the scorer
                runs[name](html, page.url)
            cpu[name] += time.process_time() - t0
    print(f"\n## Speed, interleaved ({label}, {len(pages)} pages, process CPU time)\n")
    for name, seconds in cpu.items():
        print(f"{name}: {len(pages) / seconds:.1f} pages/cpu-s ({seconds:.1f} CPU-s)")
    print(f"ratio textsieve/trafilatura: {cpu['trafilatura'] / cpu['textsieve']:.2f}")


def metadata(pages: list[ws.Page]) -> None:
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
    ap.add_argument("--dataset", choices=("articles", "wcxb", "both"), default="both")
    ap.add_argument("--part", choices=("tune", "holdout", "all"), default="all",
                    help="which sites (see the module docstring); default all, each printed")
    ap.add_argument("--limit", type=int, help="only the first N pages (smoke test)")
    ap.add_argument("--no-metadata", action="store_true")
    ap.add_argument("--no-content", action="store_true")
    ap.add_argument("--speed", action="store_true", help="only the interleaved speed run")
    args = ap.parse_args()
    datasets = ("articles", "wcxb") if args.dataset == "both" else (args.dataset,)
    for dataset in datasets:
        pages = load(dataset, args.part, args.limit)
        label = f"part {args.part}" + (f", first {args.limit}" if args.limit else "")
        if not args.speed and not args.no_content:
            content(dataset, pages, label)
        speed(pages, f"{dataset}, {label}")
        if dataset == "wcxb" and not args.speed and not args.no_metadata:
            metadata(pages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
