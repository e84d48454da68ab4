"""Enrichment benchmark: topics, summaries, keyphrases, related items and near-duplicates
over an archive of N items built from real web pages, then the cost of adding 100 items.

Run by hand, niced (a few minutes for 10,000 items on 2 shared cores)::

    nice -n 10 .venv/bin/python bench/bench_enrich.py [--items 10000] [--add 100] [-k 0]

Items: the WCXB dev pages' ground-truth texts (1,459 real pages of 400+ characters). Item i
is page i mod 1,459 with a seeded random third of its paragraphs dropped and one paragraph
of another page added, so no two items are the same text and the word statistics stay
those of real pages. They are written through ``Archive.write`` as a run would.

Each stage runs in this one process, in the order ``run --enrich`` runs them; its wall time
and its own peak RSS (a thread samples /proc/self/statm every 20 ms while it runs) are
printed, with the RSS before it. Then ``--add`` new items are written and every stage is
run again: the incremental cost (no refit, only the new items). ``--tmp`` puts the archive
in that folder (default: the system's temporary folder), never in the repository.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from textsieve.archive.store import Archive
from textsieve.enrich import keyphrases, neardup, related, summary, topics
from wcxb_archive import pages, write_pages


def _items(n: int, start: int, base: list[dict], rng: random.Random) -> list[dict]:
    out = []
    for i in range(start, start + n):
        page = base[i % len(base)]
        paras = page["text"].split("\n\n")
        keep = [p for p in paras if rng.random() > 0.33] or paras[:1]
        other = base[rng.randrange(len(base))]["text"].split("\n\n")
        keep.insert(rng.randrange(len(keep) + 1), rng.choice(other))
        out.append({**page, "url": f"{page['url']}#v{i}", "text": "\n\n".join(keep)})
    return out


def _write(archive: Archive, n: int, start: int, base: list[dict], seed: int) -> None:
    """Write n items a few thousand at a time: the bench's own copies of the texts must not
    be what the peak memory figures measure."""
    rng = random.Random(seed)
    for i in range(start, start + n, 5000):
        write_pages(archive, _items(min(5000, start + n - i), i, base, rng))


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _now_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


class _Peak:
    """The highest RSS seen while a stage runs (ru_maxrss only ever rises)."""

    def __enter__(self) -> _Peak:
        self.start = self.peak = _now_mib()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _now_mib())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _now_mib())


def _stages(archive: Archive, k: int | None) -> list[tuple[str, float, float, float, str]]:
    rows = []
    for name, fn in (
            ("topics", lambda: topics.update(archive, k=k)),
            ("summaries", lambda: summary.update(archive)),
            ("keyphrases", lambda: keyphrases.update(archive)),
            ("related", lambda: related.update(archive)),
            ("duplicates", lambda: neardup.update(archive))):
        with _Peak() as peak:
            t = time.perf_counter()
            result = fn()
            secs = time.perf_counter() - t
        what = (f"k={result.k} placed {result.placed}" if name == "topics"
                else f"{result} items")
        rows.append((name, secs, peak.start, peak.peak, what))
        print(f"  {name}: {secs:.1f} s", file=sys.stderr, flush=True)
    return rows


def _table(title: str, rows: list[tuple[str, float, float, float, str]], n: int,
           full: tuple[list[tuple[str, float, float, float, str]], int] | None = None) -> None:
    """One row per stage; with ``full`` (the full pass's rows and size), also how much a
    new item costs here against an item of the full pass (about 1: the cost of the new
    items alone; far above 1: the archive is being read or computed again)."""
    print(f"\n== {title}")
    print(f"{'stage':<12}{'seconds':>9}{'items/s':>10}{'RSS before':>12}{'peak RSS MiB':>14}"
          + ("  per item vs full" if full else "") + "  done")
    for i, (name, secs, before, peak, what) in enumerate(rows):
        ratio = ""
        if full:
            per_full = full[0][i][1] / full[1]
            ratio = f"{(secs / n) / per_full if per_full else 0:>19.1f}"
        print(f"{name:<12}{secs:>9.1f}{n / secs if secs else 0:>10.0f}{before:>12.0f}"
              f"{peak:>14.0f}{ratio}  {what}")
    print(f"process peak RSS (ru_maxrss): {_rss_mib():.0f} MiB", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--add", type=int, default=100)
    ap.add_argument("-k", type=int, default=0, help="topics (0: chosen by coherence)")
    ap.add_argument("--tmp", default=None, help="folder for the archive (default: system)")
    args = ap.parse_args()
    base = pages()
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        archive = Archive(Path(tmp) / "bench.db")
        t = time.perf_counter()
        _write(archive, args.items, 0, base, 1)
        print(f"{args.items:,} items from {len(base):,} real pages written in "
              f"{time.perf_counter() - t:.1f} s; RSS {_rss_mib():.0f} MiB", flush=True)
        full = _stages(archive, args.k or None)
        _table(f"full pass over {args.items:,} items", full, args.items)
        _write(archive, args.add, args.items, base, 2)
        _table(f"incremental: {args.add} items added", _stages(archive, None), args.add,
               (full, args.items))
        archive.close()


if __name__ == "__main__":
    main()
