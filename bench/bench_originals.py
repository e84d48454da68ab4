"""Originals benchmark: what keeping the bytes as received costs, and what it buys.

Run by hand (a few minutes on 2 cores)::

    .venv/bin/python bench/bench_originals.py [--pages 5000] [--corpus DIR] [--skip-storage]

Three measurements in one run, printed as tables:

1. Storage of one original: SQLite rows (WAL, a transaction per 64 as the writer does)
   against one file each in a folder, for compressed originals of 16 KiB to 64 MiB, writing
   and reading 192 MiB per size. This decides where originals live (``ORIGINAL_INLINE_MAX``
   in ``archive/store.py``).
2. The dev corpus with ``textsieve run --keep-originals none`` and ``all`` (files too):
   process CPU seconds (the run and its workers), items/s, the originals' stored size.
3. ``--pages`` generated article pages (3-12 KB of text each, fixed seed) served by a
   local HTTP server: ``textsieve run`` of the URL list with ``--keep-originals none`` and
   ``fetched`` (MB of originals per 1,000 pages, items/s, CPU seconds), then ``textsieve
   reextract --force`` with the server stopped, against the first run.

Figures are process CPU seconds (``RUSAGE_CHILDREN`` of the ``textsieve`` process, its
workers included) and wall-clock items/s; on a shared machine the CPU figures are the
ones to compare.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
CORPUS = ROOT.parent / "shared" / "data" / "dev-corpus"
WORDS = ["heron", "marsh", "reed", "bittern", "census", "dyke", "tide", "lagoon", "warbler",
         "ringing", "spring", "autumn", "volunteer", "colony", "nest", "survey", "estuary",
         "mudflat", "spoonbill", "egret", "count", "winter", "flock", "telescope", "notebook",
         "dawn", "wader", "curlew", "godwit", "plover", "saltmarsh", "channel", "sluice"]


def _timed(fn, *args) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    t, w = time.process_time(), time.perf_counter()
    fn(*args)
    return time.perf_counter() - w, time.process_time() - t


def _write_rows(c: sqlite3.Connection, blobs: list[bytes], n: int) -> None:
    for i in range(n):
        if i % 64 == 0:
            c.execute("BEGIN")
        c.execute("INSERT INTO o VALUES (?, ?)", (str(i), blobs[i % len(blobs)]))
        if i % 64 == 63 or i == n - 1:
            c.execute("COMMIT")
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _write_files(folder: Path, blobs: list[bytes], n: int) -> None:
    for i in range(n):
        p = folder / f"{i}.tmp"
        with open(p, "wb") as f:
            f.write(blobs[i % len(blobs)])
            f.flush()
            os.fsync(f.fileno())  # as the writer does before committing the row
        os.replace(p, folder / str(i))


def _read_rows(c: sqlite3.Connection, n: int) -> None:
    for i in range(n):
        c.execute("SELECT d FROM o WHERE k = ?", (str(i),)).fetchone()


def _read_files(folder: Path, n: int) -> None:
    for i in range(n):
        (folder / str(i)).read_bytes()


def storage(total: int = 192 << 20) -> None:
    print("\n1. one original: SQLite rows vs files in a folder (seconds wall, CPU)")
    print(f"{'size':>9} {'n':>6}  {'write rows':>16} {'write files':>16}  "
          f"{'read rows':>16} {'read files':>16}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in (16 << 10, 128 << 10, 1 << 20, 8 << 20, 64 << 20):
            n = max(4, total // size)
            blobs = [os.urandom(size) for _ in range(min(n, 4))]
            db, folder = Path(tmp) / f"s{size}.db", Path(tmp) / f"f{size}"
            folder.mkdir()
            c = sqlite3.connect(db, isolation_level=None)
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("PRAGMA synchronous=NORMAL")
            c.execute("CREATE TABLE o (k TEXT PRIMARY KEY, d BLOB)")
            figures = [_timed(_write_rows, c, blobs, n), _timed(_write_files, folder, blobs, n),
                       _timed(_read_rows, c, n), _timed(_read_files, folder, n)]
            c.close()
            print(f"{size >> 10:>7}Ki {n:>6}  " + "  ".join(
                f"{w:6.2f}s ({cpu:5.2f})" for w, cpu in figures))


def textsieve(*args: str | Path) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Run the command; (wall seconds, CPU seconds of it and its workers, process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "textsieve", *map(str, args)],
                       capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if "Traceback" in p.stderr:
        raise SystemExit(p.stderr)
    return wall, cpu, p


def originals_bytes(db: Path) -> tuple[int, int]:
    """(compressed bytes of the kept originals, top-level items)."""
    c = sqlite3.connect(db)
    try:
        stored = c.execute("SELECT coalesce(sum(stored), 0) FROM originals").fetchone()[0]
        items = c.execute("SELECT count(*) FROM items WHERE parent_id IS NULL").fetchone()[0]
    finally:
        c.close()
    return stored, items


def fresh(db: Path) -> None:
    for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        p.unlink(missing_ok=True)
    shutil.rmtree(f"{db}.originals", ignore_errors=True)


def corpus(path: Path, tmp: Path) -> None:
    print(f"\n2. dev corpus ({path}): keeping originals of files too")
    print(f"{'--keep-originals':<18} {'items':>6} {'wall s':>7} {'CPU s':>7} {'items/s':>8} "
          f"{'originals MB':>13} {'archive MB':>11}")
    base = None
    for keep in ("none", "all"):
        db = tmp / f"corpus-{keep}.db"
        fresh(db)
        wall, cpu, _ = textsieve("run", path, "--archive", db, "-q", "--keep-originals", keep)
        stored, items = originals_bytes(db)
        size = db.stat().st_size + sum(f.stat().st_size for f in
                                       Path(f"{db}.originals").rglob("*") if f.is_file())
        print(f"{keep:<18} {items:>6} {wall:7.1f} {cpu:7.1f} {items / wall:8.1f} "
              f"{stored / 1e6:13.1f} {size / 1e6:11.1f}")
        base = base or cpu
    print(f"   CPU with/without: {cpu / base:.2f}x")


def web(pages: int, tmp: Path) -> None:
    from site_server import Page, Site, essay

    rng = random.Random(22)
    site = Site()
    for i in range(pages):
        paras = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120))) + "."
                 for _ in range(rng.randint(4, 12))]
        site.pages[f"/p/{i}.html"] = Page(essay(f"Page {i}", paras))
    listing = tmp / "links.txt"
    listing.write_text("\n".join(site.url(f"/p/{i}.html") for i in range(pages)) + "\n")
    flags = ("--allow-private", "--host-delay", "0", "--per-host-concurrency", "8", "-q")
    print(f"\n3. {pages:,} fetched pages from a local server")
    print(f"{'step':<34} {'wall s':>7} {'CPU s':>7} {'items/s':>8} {'MB/1,000 pages':>15}")
    rows = {}
    for keep in ("none", "fetched"):
        db = tmp / f"web-{keep}.db"
        fresh(db)
        wall, cpu, _ = textsieve("run", listing, "--archive", db, "--keep-originals", keep,
                                 *flags)
        stored, items = originals_bytes(db)
        rows[keep] = (wall, cpu)
        print(f"{'run --keep-originals ' + keep:<34} {wall:7.1f} {cpu:7.1f} "
              f"{items / wall:8.1f} {stored / 1e6 / items * 1000 if items else 0:15.2f}")
    raw = sum(len(pg.body) for pg in site.pages.values())
    site.stop()
    wall, cpu, _ = textsieve("reextract", "--archive", tmp / "web-fetched.db", "--force", "-q")
    print(f"{'reextract --force (server down)':<34} {wall:7.1f} {cpu:7.1f} "
          f"{pages / wall:8.1f} {'':>15}")
    w0, c0 = rows["none"]
    w1, c1 = rows["fetched"]
    print(f"   bodies as served: {raw / 1e6 / pages * 1000:.2f} MB per 1,000 pages")
    print(f"   keeping originals: {c1 / c0:.2f}x the CPU, {w1 / w0:.2f}x the wall time")
    print(f"   re-extraction from originals: {w1 / wall:.2f}x the first run's items/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=5000)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--skip-storage", action="store_true")
    args = ap.parse_args()
    if not args.skip_storage:
        storage()
    with tempfile.TemporaryDirectory(prefix="bench-originals-") as tmp:
        if args.corpus.is_dir():
            corpus(args.corpus, Path(tmp))
        web(args.pages, Path(tmp))


if __name__ == "__main__":
    main()
