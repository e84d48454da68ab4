"""A bookmark file of 50,000 links: time and memory, with peers, in one run.

    .venv/bin/python bench/bench_bookmarks.py [--links 50000] [--repeat 3]

Generates a Netscape bookmark file (nested folders five deep, two tags and a <DD> note on
every link, one link in ten bookmarked twice) and measures:

- parsing alone, in this process (best of ``--repeat``, CPU seconds): textsieve's
  streaming parser (``sources.bookmarks.read_export`` + ``merge``: one item per link, labels,
  listing) against lxml's HTML parser building the tree and reading every <A> (C, no
  folders, no labels: the floor for any tree-based reader) and the standard library's
  HTMLParser doing nothing (the tokenizer textsieve's parser is built on);
- the command users run, each in a fresh process (CPU seconds of that process, and its
  peak RSS): ``textsieve run --fetch never bookmarks:FILE`` into a new archive, against the
  same links as a plain URL list (``textsieve run --fetch never urls.txt``: the cost of
  the run and the archive without titles, labels or listings), and the second run of the
  same bookmarks (nothing new: every link only looked up and relabelled).

CPU seconds are the process's user + system time (robust on a shared machine); wall
seconds are printed beside them.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path


def make_file(path: Path, links: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    urls = [f"https://site{i % 997}.example/article/{i}" for i in range(links)]
    out = ['<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<META HTTP-EQUIV="Content-Type" '
           'CONTENT="text/html; charset=UTF-8">\n<TITLE>Bookmarks</TITLE>\n<H1>Bookmarks</H1>\n'
           "<DL><p>\n"]
    per_folder = 50
    for start in range(0, links, per_folder):
        depth = 1 + (start // per_folder) % 5
        for d in range(depth):
            out.append(f'{"    " * d}<DT><H3 ADD_DATE="1700000000">Folder {start}-{d}</H3>\n'
                       f'{"    " * d}<DL><p>\n')
        for i in range(start, min(start + per_folder, links)):
            tags = f"tag{rnd.randrange(200)},topic {rnd.randrange(50)}"
            out.append(f'<DT><A HREF="{urls[i]}" ADD_DATE="{1600000000 + i}" TAGS="{tags}">'
                       f"Article number {i} about things</A>\n<DD>Why I kept {i}: a note.\n")
            if i % 10 == 0:
                out.append(f'<DT><A HREF="{urls[i]}?utm_source=x" ADD_DATE="{1500000000 + i}">'
                           f"Again {i}</A>\n")
        out.append("</DL><p>\n" * depth)
    out.append("</DL>\n")
    path.write_text("".join(out), "utf-8")
    return urls


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best(fn, repeat: int) -> tuple[float, float, int]:
    runs = []
    for _ in range(repeat):
        c0, w0 = cpu(), time.perf_counter()
        n = fn()
        runs.append((cpu() - c0, time.perf_counter() - w0, n))
    return min(runs)


def textsieve_parse(path: Path) -> int:
    from textsieve.sources.bookmarks import merge, read_export

    return sum(1 for _ in merge(read_export(str(path), 1 << 40), "bench"))


def lxml_parse(path: Path) -> int:
    import lxml.html

    tree = lxml.html.parse(str(path))
    return sum(1 for a in tree.iter("a") if a.get("href"))


class _Nothing(HTMLParser):
    pass


def stdlib_tokens(path: Path) -> int:
    p = _Nothing(convert_charrefs=True)
    p.feed(path.read_text("utf-8"))
    p.close()
    return 0


def run_cli(args: list[str]) -> tuple[float, float, int, int]:
    """CPU seconds, wall seconds, peak RSS (KiB) of one fresh `textsieve` process, and its
    exit code."""
    w0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "textsieve", *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - w0
    return ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss, os.waitstatus_to_exitcode(status)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--links", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bookmarks-") as tmp:
        t = Path(tmp)
        html = t / "bookmarks.html"
        urls = make_file(html, ns.links)
        (t / "urls.txt").write_text("\n".join(urls) + "\n", "utf-8")
        size = html.stat().st_size / 1e6
        print(f"{ns.links:,} links ({ns.links // 10:,} bookmarked twice), {size:.1f} MB; "
              f"python {sys.version.split()[0]}\n")
        print(f"== parsing alone, in process (best of {ns.repeat})")
        print(f"{'parser':<34}{'CPU s':>8}{'wall s':>8}{'items':>9}{'vs textsieve':>14}")
        ours = best(lambda: textsieve_parse(html), ns.repeat)
        rows = [("textsieve (labels, listings)", ours),
                ("lxml.html tree, <a> only", best(lambda: lxml_parse(html), ns.repeat)),
                ("html.parser tokens only", best(lambda: stdlib_tokens(html), ns.repeat))]
        for name, (c, w, n) in rows:
            print(f"{name:<34}{c:>8.2f}{w:>8.2f}{n:>9,}{c / ours[0]:>13.2f}x")

        print("\n== the command, a fresh process each (CPU s of the process, peak RSS)")
        print(f"{'command':<52}{'CPU s':>8}{'wall s':>8}{'RSS MiB':>9}{'exit':>6}")
        cmds = [
            ("run --fetch never bookmarks:FILE (new archive)",
             ["run", "-q", "--fetch", "never", "--archive", str(t / "a.db"),
              f"bookmarks:{html}"]),
            ("run --fetch never bookmarks:FILE (again)",
             ["run", "-q", "--fetch", "never", "--archive", str(t / "a.db"),
              f"bookmarks:{html}"]),
            ("run --fetch never urls.txt (same links, plain)",
             ["run", "-q", "--fetch", "never", "--archive", str(t / "b.db"),
              str(t / "urls.txt")]),
        ]
        for name, args in cmds:
            c, w, rss, code = run_cli(args)
            print(f"{name:<52}{c:>8.2f}{w:>8.2f}{rss / 1024:>9.0f}{code:>6}")


if __name__ == "__main__":
    main()
