"""Web pages parsed as libxml2 does vs as a browser (HTML5) does: main content, side by side.

Run by hand: `.venv/bin/python bench/bench_parse.py [--dataset articles|wcxb|both|none]
[--part tune|holdout|all] [--limit N] [--lexbor browser|plain] [--changed N] [--full]
[--save FILE]`.

Two parses of every page, in the same process and run:

* ``libxml2``: today's ``parse_html``: libxml2 (lxml), re-parsed through Lexbor only where
  libxml2 left the page's <main>/<article>/<h1> inside an element no reader renders.
* ``html5``: every page through Lexbor (selectolax), the HTML5 parser of the standard
  browsers follow, its serialisation read again by libxml2 (the project's tree is lxml's).
  ``--lexbor browser`` (default): with scripting on, as a browser that runs scripts (so a
  <noscript> is raw text: ``<noscript><iframe/></noscript>`` no longer swallows the page),
  and the void elements libxml2 does not know (embed, source, track, wbr, keygen, bgsound)
  written self-closed, so libxml2 reads back Lexbor's tree. ``--lexbor plain``: Lexbor as
  today's fallback calls it (scripting off, its serialisation as it is).

For each page and each parse: ``textsieve.web:main_text``'s text (``--html main``), scored
with ../shared/tools/web_score.py's metric (lowercased word-bag P/R/F1 per page, averaged
over pages), and the CPU time (process time) of the parse alone and of the whole
extraction; the two parses run on each page in turn, the order alternating (fair on a
loaded machine). Printed per set, per part (bench_web.py's site split) and per WCXB page
type: P/R/F1 both ways, ΔF1, pages up/down; CPU per page and the ratios html5/libxml2; the
pages whose F1 changes most (``--changed N`` each way). ``--full``: the dev corpus's HTML
files (``../shared/data/dev-corpus/html``) through ``textsieve.extract(..., html="full")``
both ways: pages whose text changes, the words gained and lost, CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "src"))

from lxml import etree  # noqa: E402

import textsieve  # noqa: E402
import textsieve.extractors.html as html_extractor  # noqa: E402
import textsieve.kernels.html as kernel  # noqa: E402
import textsieve.web.main as web_main  # noqa: E402
from bench_web import load, part, ws  # noqa: E402
from textsieve.web import main_text  # noqa: E402

MODES = ("libxml2", "html5")
FULL_DIR = ROOT.parent / "shared" / "data" / "dev-corpus" / "html"
# Void in HTML5, unknown to libxml2's element table: ``<source src=x>`` there is left open
# and holds what follows up to its parent's end tag (the <img> of a <picture>, the rest of
# a paragraph after <wbr>, the rest of an <article> after <embed>).
_VOID = re.compile(r"<(embed|source|track|wbr|keygen|bgsound)\b((?:\"[^\"]*\"|[^>\"])*)>",
                   re.IGNORECASE)
_LEXBOR = {"browser": {"scripting": True, "voids": True},
           "plain": {"scripting": False, "voids": False}}


def _lexbor(text: str, scripting: bool, voids: bool) -> str | None:
    from selectolax.lexbor import LexborHTMLParser

    clean = text.encode("utf-8", "replace").decode("utf-8")  # no lone surrogates
    try:
        out = LexborHTMLParser(clean, scripting=scripting).html
    except Exception:  # as in parse_html: the libxml2 tree is kept then
        return None
    if out and voids:
        out = _VOID.sub(lambda m: f"<{m.group(1)}{m.group(2).rstrip('/')}/>", out)
    return out or None


def html5_parser(scripting: bool, voids: bool) -> Callable[[str], etree._Element]:
    """parse_html with every page through Lexbor first (the same clean-ups before)."""

    def parse(text: str) -> etree._Element:
        if text[:1] != "<":
            lead = text.lstrip()
            stray = kernel._STRAY_LEAD.match(lead)
            if stray is not None:
                text = lead[stray.end():]
        if "/>" in text:
            text = kernel._SELF_CLOSED_RAW.sub(kernel._open_self_closed, text)
        fixed = _lexbor(text, scripting, voids)
        return kernel._parse_lxml(fixed if fixed is not None else text)

    return parse


@contextlib.contextmanager
def parsed_as(mode: str, html5: Callable[[str], etree._Element]) -> Iterator[None]:
    """Pages parsed the HTML5 way (``html5``) or today's way (``libxml2``)."""
    saved = web_main.parse_html, html_extractor.parse_html
    if mode == "html5":
        web_main.parse_html = html_extractor.parse_html = html5
    try:
        yield
    finally:
        web_main.parse_html, html_extractor.parse_html = saved


def _cpu(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.process_time()
    try:
        out = fn()
    except Exception:  # a failure costs its time and counts as an empty text
        out = ""
    return time.process_time() - t0, out


def run(pages: list[ws.Page], metric: object, html5: Callable) -> list[dict]:
    """Per page and parse: the text, its score, parse and extraction CPU seconds."""
    rows = []
    inputs = list(ws.iter_inputs(pages, None))
    for mode in MODES:  # warm-up: lazy imports (Lexbor) and caches
        with parsed_as(mode, html5), contextlib.suppress(Exception):
            main_text(inputs[0][1], inputs[0][0].url)
    for i, (page, html, _path) in enumerate(inputs):
        row: dict = {"id": page.page_id, "group": page.group, "part": part(page)}
        for mode in (MODES if i % 2 else MODES[::-1]):
            with parsed_as(mode, html5):
                parse_s, _ = _cpu(lambda: web_main._tree(html))  # noqa: B023
                main_s, text = _cpu(lambda: main_text(html, page.url))  # noqa: B023
            text = text if isinstance(text, str) else ""
            row[mode] = {"parse": parse_s, "main": main_s, "text": text,
                         **metric.score_page(text, page)}
        rows.append(row)
    return rows


def _agg(metric: object, rows: list[dict], mode: str) -> dict:
    return metric.aggregate([{k: v for k, v in r[mode].items()
                              if k not in ("parse", "main", "text")} for r in rows])


def _cpu_lines(rows: list[dict], keys: tuple[str, ...], whole: str) -> None:
    n = len(rows)
    cpu = {m: {k: sum(r[m][k] for r in rows) for k in keys} for m in MODES}
    print(f"\nCPU per page (process time, ms, {n} pages, interleaved):")
    for k in keys:
        a, b = cpu["libxml2"][k], cpu["html5"][k]
        print(f"  {k:5}: libxml2 {1000 * a / n:.2f}, html5 {1000 * b / n:.2f}, "
              f"ratio html5/libxml2 {b / a:.3f}, extra {1000 * (b - a) / n:+.2f} ms/page "
              f"({(b - a) / cpu['libxml2'][whole]:+.1%} of libxml2's whole extraction)")


def report(dataset: str, rows: list[dict], metric: object, changed: int) -> None:
    print(f"\n## {dataset}: main content, libxml2 vs html5 parse\n")
    print("| part | pages | libxml2 P / R / F1 | html5 P / R / F1 | ΔF1 | F1 up / down |")
    print("|---|---|---|---|---|---|")
    groups = [("part", p) for p in ("tune", "holdout", "all")]
    if dataset == "wcxb":
        groups += [("group", g) for g in sorted({r["group"] for r in rows})]
    for key, name in groups:
        sel = [r for r in rows if name == "all" or r[key] == name]
        if not sel:
            continue
        a, b = (_agg(metric, sel, m) for m in MODES)
        up = sum(1 for r in sel if r["html5"]["f1"] > r["libxml2"]["f1"] + 1e-9)
        down = sum(1 for r in sel if r["html5"]["f1"] < r["libxml2"]["f1"] - 1e-9)
        print(f"| {name} | {len(sel)} | {a['precision']:.3f} / {a['recall']:.3f} / "
              f"{a['f1']:.3f} | {b['precision']:.3f} / {b['recall']:.3f} / {b['f1']:.3f} | "
              f"{b['f1'] - a['f1']:+.4f} | {up} / {down} |")
    _cpu_lines(rows, ("parse", "main"), "main")
    same = sum(1 for r in rows if r["html5"]["text"] == r["libxml2"]["text"])
    print(f"  text identical on {same} of {len(rows)} pages")
    if changed:
        print(f"\nF1 changes most (html5 - libxml2), up to {changed} each way:")
        by = sorted(rows, key=lambda r: r["html5"]["f1"] - r["libxml2"]["f1"])
        for r in by[:changed] + by[-changed:]:
            d = r["html5"]["f1"] - r["libxml2"]["f1"]
            if abs(d) > 1e-9:
                print(f"  {d:+.3f} {r['part']:7} {r['group'] or '-':13} {r['id']}")


def full(html5: Callable) -> None:
    """``--html full`` on the dev corpus's HTML files, both ways."""
    paths = sorted(FULL_DIR.glob("*.htm*"))
    rows = []
    for i, path in enumerate(paths):
        row: dict = {"id": path.name}
        for mode in (MODES if i % 2 else MODES[::-1]):
            with parsed_as(mode, html5):
                seconds, doc = _cpu(lambda: textsieve.extract(path, html="full"))  # noqa: B023
            row[mode] = {"full": seconds, "text": getattr(doc, "text", "") or ""}
        rows.append(row)
    print(f"\n## dev corpus, --html full, libxml2 vs html5 parse ({len(rows)} pages)\n")
    for r in rows:
        a, b = (Counter(re.findall(r"\w+", r[m]["text"].lower())) for m in MODES)
        if a != b:
            print(f"  {r['id']}: words {sum(a.values())} -> {sum(b.values())} "
                  f"(+{sum((b - a).values())} / -{sum((a - b).values())})")
    same = sum(1 for r in rows if r["html5"]["text"] == r["libxml2"]["text"])
    print(f"  text identical on {same} of {len(rows)} pages")
    _cpu_lines(rows, ("full",), "full")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=("articles", "wcxb", "both", "none"),
                    default="both")
    ap.add_argument("--part", choices=("tune", "holdout", "all"), default="all")
    ap.add_argument("--limit", type=int, help="only the first N pages (smoke test)")
    ap.add_argument("--lexbor", choices=tuple(_LEXBOR), default="browser")
    ap.add_argument("--changed", type=int, default=8, help="pages listed each way")
    ap.add_argument("--full", action="store_true", help="also --html full, dev corpus")
    ap.add_argument("--save", type=Path, help="every page's texts and scores (JSON)")
    args = ap.parse_args()
    from selectolax.lexbor import LexborHTMLParser

    try:  # the scripting flag is selectolax 1.0's; without it every page would stay libxml2's
        LexborHTMLParser("<p>", scripting=True)
    except TypeError:
        sys.exit("bench_parse needs selectolax >= 1.0 (LexborHTMLParser(scripting=...))")
    html5 = html5_parser(**_LEXBOR[args.lexbor])
    print(f"html5 = Lexbor ({args.lexbor}) then libxml2")
    saved = {}
    datasets = {"both": ("articles", "wcxb"), "none": ()}.get(args.dataset, (args.dataset,))
    for dataset in datasets:
        pages = load(dataset, args.part, args.limit)
        metric = ws.METRICS[dataset]()
        rows = run(pages, metric, html5)
        report(dataset, rows, metric, args.changed)
        saved[dataset] = rows
    if args.full:
        full(html5)
    if args.save:
        args.save.write_text(json.dumps(saved))
    return 0


if __name__ == "__main__":
    sys.exit(main())
