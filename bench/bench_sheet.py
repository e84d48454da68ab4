"""Two big-input targets, textsieve against the peers in one run.

* a 100,000-row x 10-column XLSX: seconds (best of ``--repeat``); goal < 2 s for textsieve;
* a 500-page text PDF: peak RSS of one extraction; goal < 300 MB for textsieve.

Run by hand, after ``bash bench/peers_setup.sh``::

    bench/.peers/venv/bin/python bench/bench_sheet.py [--rows 100000] [--pages 500]

Both inputs are generated once and cached in ``bench/out/``. Every (tool, input) pair runs
in a FRESH subprocess, so its peak RSS (``ru_maxrss``, import included; "start MB" is the
figure right after import and a warm-up) belongs to that tool and that input alone. The
tools are called exactly as in bench_corpus.py (same adapters, peers offline, no OCR). A
marker from the last row / last page must appear in the output, so a tool that silently
stops early does not look fast.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_corpus import FACTORIES, OUT, PEERS_PY, TOOLS, _peak_rss_kb, table, warm_up

SHEET_GOAL_S = 2.0
PDF_GOAL_MB = 300.0


# -- inputs ------------------------------------------------------------------------------------

def make_xlsx(path: Path, rows: int) -> str:
    """A 10-column sheet of mixed types (openpyxl write-only: constant memory to write)."""
    from openpyxl import Workbook

    marker = f"row-{rows:06d}-end"
    if not path.exists():
        wb = Workbook(write_only=True)
        ws = wb.create_sheet("data")
        ws.append(["id", "label", "amount", "date", "city", "flag", "qty", "ratio",
                   "code", "note"])
        cities = ("Lisbon", "Utrecht", "Kraków", "Zürich", "Göteborg", "Tallinn")
        day0 = dt.date(2020, 1, 1)
        for i in range(1, rows + 1):
            ws.append([i, f"row-{i:06d}-end", i * 1.25, day0 + dt.timedelta(days=i % 3650),
                       cities[i % len(cities)], i % 2 == 0, i % 977, (i % 101) / 7,
                       f"C{i % 10_000:05d}", f"note {i % 53} of batch {i // 1000}"])
        tmp = path.with_suffix(".tmp")
        wb.save(tmp)
        tmp.rename(path)
    return marker


def make_pdf(path: Path, pages: int) -> str:
    """A report-like text PDF: 45 lines per page and a marker at the foot of each page."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    marker = f"endofpage{pages}marker"
    if not path.exists():
        vocab = ["quarterly", "revenue", "analysis", "forecast", "customer", "contract",
                 "appendix", "section", "pipeline", "document", "parser", "latency", "memory",
                 "budget", "stream", "object", "font", "glyph", "river", "meadow", "harbour",
                 "lantern", "copper", "violet"]
        tmp = path.with_suffix(".tmp")
        c = canvas.Canvas(str(tmp), pagesize=A4)
        for p in range(1, pages + 1):
            y = 800
            for line in range(45):
                words = [vocab[(p * 7 + line * 3 + k * 5) % len(vocab)] for k in range(11)]
                c.drawString(50, y, f"{p}.{line + 1} " + " ".join(words))
                y -= 17
            c.drawString(50, y, f"endofpage{p}marker")
            c.showPage()
        c.save()
        tmp.rename(path)
    return marker


# -- one measurement, in a fresh process -------------------------------------------------------

def measure(tool: str, path: str, repeat: int, marker: str, budget: float) -> dict:
    """Import, warm up, then time up to ``repeat`` extractions (stop once past ``budget``)."""
    res: dict = {"tool": tool, "runs": []}
    try:
        run = FACTORIES[tool]()
        warm_up(run)
    except Exception as exc:
        return {**res, "error": f"unavailable: {type(exc).__name__}: {exc}"[:300]}
    res["start_mb"] = _peak_rss_kb() / 1024
    spent = 0.0
    for _ in range(repeat):
        t = time.perf_counter()
        try:
            text, _note = run(path)
        except Exception as exc:
            res["error"] = f"{type(exc).__name__}: {exc}"[:300]
            break
        took = time.perf_counter() - t
        res["runs"].append(took)
        res["chars"] = len(text)
        res["marker"] = marker in text
        spent += took
        if spent > budget:
            break
    res["peak_mb"] = _peak_rss_kb() / 1024
    return res


def measure_in_subprocess(python: str, tool: str, path: Path, repeat: int, marker: str,
                          budget: float, timeout: float) -> dict:
    cmd = [python, str(Path(__file__).resolve()), "--measure", tool, str(path),
           "--repeat", str(repeat), "--marker", marker, "--budget", str(budget)]
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(OUT))
    except subprocess.TimeoutExpired:
        return {"tool": tool, "runs": [], "error": f"timeout after {timeout:g} s"}
    lines = [ln for ln in cp.stdout.splitlines() if ln.startswith("{")]
    if cp.returncode or not lines:
        tail = cp.stderr.strip().splitlines()[-1:] or [f"exit {cp.returncode}"]
        return {"tool": tool, "runs": [], "error": f"crashed: {tail[0]}"[:300]}
    return json.loads(lines[-1])


# -- report ------------------------------------------------------------------------------------

def rows_for(results: list[dict]) -> list[dict]:
    base = next((min(r["runs"]) for r in results if r["tool"] == "textsieve" and r["runs"]),
                None)
    rows = []
    for r in results:
        best = min(r["runs"]) if r["runs"] else None
        rows.append({
            "tool": r["tool"],
            "best s": f"{best:.2f}" if best is not None else "-",
            "runs": len(r["runs"]),
            "x textsieve time": f"{best / base:.1f}x" if best and base else "-",
            "chars": r.get("chars", "-"),
            "last marker": {True: "yes", False: "NO"}.get(r.get("marker"), "-"),
            "peak RSS MB": f"{r['peak_mb']:.0f}" if "peak_mb" in r else "-",
            "start MB": f"{r['start_mb']:.0f}" if "start_mb" in r else "-",
            "error": (r.get("error") or "")[:70],
        })
    return rows


COLS = ["tool", "best s", "runs", "x textsieve time", "chars", "last marker", "peak RSS MB",
        "start MB", "error"]


def verdict(results: list[dict], what: str) -> str:
    ts = next((r for r in results if r["tool"] == "textsieve"), None)
    if not ts or not ts["runs"] or not ts.get("marker"):
        return f"goal ({what}): textsieve did not extract it completely -> FAIL"
    if what == "sheet":
        best = min(ts["runs"])
        return (f"goal: 100k-row sheet < {SHEET_GOAL_S:g} s -> textsieve {best:.2f} s -> "
                f"{'PASS' if best < SHEET_GOAL_S else 'FAIL'}")
    return (f"goal: 500-page PDF peak RSS < {PDF_GOAL_MB:g} MB -> textsieve "
            f"{ts['peak_mb']:.0f} MB -> {'PASS' if ts['peak_mb'] < PDF_GOAL_MB else 'FAIL'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--measure", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--marker", default="", help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--pages", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per tool (best kept)")
    ap.add_argument("--budget", type=float, default=30.0,
                    help="stop repeating a tool once its runs took this many seconds")
    ap.add_argument("--timeout", type=float, default=300.0, help="per tool and input")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--python", default=str(PEERS_PY if PEERS_PY.exists() else sys.executable))
    ns = ap.parse_args(argv)
    if ns.measure:
        print(json.dumps(measure(ns.measure[0], ns.measure[1], ns.repeat, ns.marker,
                                 ns.budget)))
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    tools = ns.tools.split(",")
    xlsx = OUT / f"sheet-{ns.rows}x10.xlsx"
    pdf = OUT / f"text-{ns.pages}p.pdf"
    t = time.perf_counter()
    sheet_marker, pdf_marker = make_xlsx(xlsx, ns.rows), make_pdf(pdf, ns.pages)
    print(f"inputs ready in {time.perf_counter() - t:.1f} s: {xlsx.name} "
          f"({xlsx.stat().st_size / 1e6:.1f} MB), {pdf.name} ({pdf.stat().st_size / 1e6:.1f} MB)",
          flush=True)
    sheet = [measure_in_subprocess(ns.python, tool, xlsx, ns.repeat, sheet_marker, ns.budget,
                                   ns.timeout) for tool in tools]
    print(f"\n## {ns.rows:,}-row x 10-column XLSX (best of up to {ns.repeat}; "
          "'x textsieve time' > 1 = slower than textsieve)")
    print(table(rows_for(sheet), COLS))
    print(verdict(sheet, "sheet"))
    pdfs = [measure_in_subprocess(ns.python, tool, pdf, 1, pdf_marker, ns.budget, ns.timeout)
            for tool in tools]
    print(f"\n## {ns.pages}-page text PDF (one extraction per fresh process; peak RSS incl. "
          "import)")
    print(table(rows_for(pdfs), COLS))
    print(verdict(pdfs, "pdf"))
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    raw = OUT / f"sheet-{stamp}.json"
    raw.write_text(json.dumps({"sheet": sheet, "pdf": pdfs}, indent=1), encoding="utf-8")
    print(f"\nraw results: {raw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
