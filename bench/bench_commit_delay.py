"""Commit delay behind a slow item: how long a finished item waits before search sees it.

Run by hand (about half a minute on 2 cores)::

    .venv/bin/python bench/bench_commit_delay.py [--files 1500] [--workers 2]
        [--before REV] [--rounds 2]

The folder of the issue: a 3000x4000 scan (read by tesseract: seconds) first, then
``--files`` small text files. ``textsieve run DIR -j 2`` over it, once with the code at
``--before`` (default: the commit before the completion-order commits, taken with
``git archive``) and once with this tree, round after round, each into a fresh archive.

For every item: *finished* is when its Document came back from the executor to the driver
(``DocumentFlow.step``, the same function in both versions, stamped in the driver
process); *visible* is when a second connection to the archive, polling every 10 ms as
search would, first sees its row. The delay is visible - finished. Reported per version:
the median, 95th percentile and maximum delay of the small files, the share of them visible
while the scan was still being read, and the run's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "4a16505"  # results committed in input order, behind the slow item
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

# Run in a child with PYTHONPATH set to one version's src: stamps when each document comes
# back from the executor, runs `textsieve run` in-process (its real code path), and polls
# the archive from a second connection on a thread.
_DRIVER = r"""
import json, sqlite3, sys, threading, time
from textsieve import core as steps
from textsieve import cli

finished = {}
step = steps.DocumentFlow.step

def stamped(self, timeout=None):
    out = step(self, timeout)
    now = time.monotonic()
    for _key, doc in out:
        finished.setdefault(doc.name, now)
    return out

steps.DocumentFlow.step = stamped
src, db = sys.argv[1], sys.argv[2]
visible, stop = {}, threading.Event()

def poll():
    while not stop.is_set():
        try:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            names = conn.execute("SELECT name FROM items WHERE parent_id IS NULL").fetchall()
            conn.close()
        except sqlite3.Error:
            names = []
        now = time.monotonic()
        for (n,) in names:
            visible.setdefault(n, now)
        time.sleep(0.01)

t = threading.Thread(target=poll, daemon=True)
t0 = time.monotonic()
t.start()
rc = cli.main(["run", src, "--archive", db, "-q", "-j", sys.argv[3]])
wall = time.monotonic() - t0
time.sleep(0.1)
stop.set()
t.join()
json.dump({"rc": rc, "wall": wall, "t0": t0, "finished": finished, "visible": visible},
          sys.stdout)
"""


def make_tree(root: Path, files: int) -> str:
    """The scan first (sorted names), then the small files; returns the scan's name."""
    from PIL import Image, ImageDraw, ImageFont

    root.mkdir(parents=True)
    rng = random.Random(3)
    words = ["the", "archive", "keeps", "what", "it", "read", "so", "that", "outlives",
             "web", "and", "every", "page", "of", "a", "scan", "is", "by", "tesseract"]
    img = Image.new("L", (3000, 4000), 255)
    draw, font, y = ImageDraw.Draw(img), ImageFont.truetype(FONT, 40), 150
    while y < 3850:
        draw.text((150, y), " ".join(rng.choice(words) for _ in range(14)), font=font,
                  fill=0)
        y += 62
    img.save(root / "0000-scan.png")
    for i in range(files):
        (root / f"f{i:05d}.txt").write_text(f"small file {i} heron{i}x egret\n")
    return "0000-scan.png"


def version_src(rev: str, into: Path) -> Path:
    """The src folder of ``rev`` (``git archive``), to import that version from."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"],
                          capture_output=True, check=True).stdout
    import io

    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def one_run(src_dir: Path, tree: Path, db: Path, workers: int) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(src_dir))
    p = subprocess.run([sys.executable, "-c", _DRIVER, str(tree), str(db), str(workers)],
                       capture_output=True, text=True, env=env, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"run failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout)


def summarise(res: dict[str, object], scan: str) -> dict[str, float]:
    finished: dict[str, float] = res["finished"]  # type: ignore[assignment]
    visible: dict[str, float] = res["visible"]  # type: ignore[assignment]
    small = [n for n in finished if n != scan and n in visible]
    delays = sorted(visible[n] - finished[n] for n in small)
    scan_done = visible.get(scan, float("inf"))
    early = sum(1 for n in small if visible[n] < scan_done)
    q = statistics.quantiles(delays, n=20) if len(delays) > 1 else delays * 19
    t0 = float(res["t0"])  # type: ignore[arg-type]
    seen = sorted(visible[n] - t0 for n in small)
    return {"median": statistics.median(delays), "p95": q[18], "max": delays[-1],
            "early": early / len(small) if small else 0.0,
            "half": seen[len(seen) // 2], "all": seen[-1], "scan": scan_done - t0,
            "wall": float(res["wall"]), "n": len(small)}  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=1500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--before", default=BEFORE, help="git revision of the 'before' peer")
    ap.add_argument("--rounds", type=int, default=2)
    ns = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-commit-") as tmp:
        base = Path(tmp)
        tree = base / "tree"
        scan = make_tree(tree, ns.files)
        peers = {f"before ({ns.before})": version_src(ns.before, base / "before"),
                 "after (this tree)": ROOT / "src"}
        results: dict[str, list[dict[str, float]]] = {k: [] for k in peers}
        for r in range(ns.rounds):
            for name, src_dir in peers.items():
                db = base / f"{r}-{len(results[name])}-{name[:5]}.db"
                results[name].append(summarise(one_run(src_dir, tree, db, ns.workers), scan))
    print(f"1 scan (3000x4000) + {ns.files} small files, -j {ns.workers}, "
          f"{ns.rounds} round(s), wall seconds; per peer the round with the median 'all'.\n"
          "delay: visible to a second connection - finished in the driver (small files); "
          "half/all/scan: seconds from the start until half / all of the small files / the "
          "scan are visible; early: small files visible before the scan")
    print(f"{'peer':<22}{'median':>8}{'p95':>7}{'max':>7}{'half':>7}{'all':>7}"
          f"{'scan':>7}{'early':>7}{'run':>7}")
    best: dict[str, dict[str, float]] = {}
    for name, rows in results.items():
        s = sorted(rows, key=lambda x: x["all"])[len(rows) // 2]
        best[name] = s
        print(f"{name:<22}{s['median']:>8.3f}{s['p95']:>7.3f}{s['max']:>7.2f}"
              f"{s['half']:>7.2f}{s['all']:>7.2f}{s['scan']:>7.2f}{s['early']:>7.0%}"
              f"{s['wall']:>7.2f}")
    before, after = best.values()
    print(f"before/after: max delay {before['max'] / after['max']:.1f}x, half of the small "
          f"files visible {before['half'] / after['half']:.1f}x sooner")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
