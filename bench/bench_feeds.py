"""A feed of N entries (default 100,000): CPU and peak memory of reading it, side by side.

    .venv/bin/python bench/bench_feeds.py [--entries 100000] [--format rss|atom|json]

Peers, each in a fresh process on the same file: the document read whole the usual way
(``feedparser.parse`` for RSS and Atom, ``json.loads`` for a JSON Feed: what textsieve
does with small feeds), textsieve's streamed reading (``sources.feedparse.parse``: for
RSS and Atom lxml cuts the entries into slices of 500 that feedparser reads one at a
time, a JSON Feed is read item by item by ijson), and the whole listing step of
``textsieve run feed:FILE`` (``FeedSource.items()``: streamed reading plus entry ids,
revisions, labels and items; nothing fetched, the entries carry no content, so no
article is compared). For a JSON Feed also textsieve's own reading and listing with
streaming off (``textsieve-whole``, ``listing-whole``: as before ijson). Prints CPU
seconds (user + system of the child), peak RSS and the ratios.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
def peak():  # VmHWM: this process's own peak (ru_maxrss keeps the parent's over exec)
    with open('/proc/self/status') as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith('VmHWM:'))
path, mode = sys.argv[1], sys.argv[2]
data = open(path, 'rb').read()
t = time.process_time()
if mode == 'feedparser-whole':
    import feedparser
    n = len(feedparser.parse(data).entries)
elif mode == 'json-whole':
    n = len(json.loads(data)['items'])
elif mode == 'textsieve-whole':  # textsieve's reading, never streamed (as before ijson)
    from textsieve.sources import feedparse
    feedparse.STREAM_ABOVE = len(data) + 1
    n = sum(1 for _ in feedparse.parse(data).entries)
elif mode == 'textsieve-streamed':
    from textsieve.sources.feedparse import parse
    n = sum(1 for _ in parse(data).entries)
else:
    if mode == 'listing-whole':  # the listing step, its feed never streamed
        from textsieve.sources import feedparse
        feedparse.STREAM_ABOVE = len(data) + 1
    from textsieve.options import Options
    from textsieve.sources.feeds import FeedSource
    n = sum(1 for _ in FeedSource('feed:' + path, Options()).items())
print(json.dumps({'n': n, 'cpu': time.process_time() - t,
                  'rss_mb': peak() / 1024}))
"""


def make_feed(path: Path, n: int, fmt: str) -> None:
    """A large feed as a blog engine writes one: one element per entry, no content."""
    with path.open("w", encoding="utf-8") as f:
        if fmt == "json":
            f.write('{"version": "https://jsonfeed.org/version/1.1", "title": "Big", '
                    '"home_page_url": "https://example.org/", "items": [\n')
            for i in range(n):
                f.write(("," if i else "") + json.dumps(
                    {"id": f"urn:e:{i}", "url": f"https://example.org/posts/{i}",
                     "title": f"Entry {i} about herons",
                     "date_published": f"2026-03-02T10:{i % 60:02d}:00Z"}) + "\n")
            f.write("]}\n")
        elif fmt == "rss":
            f.write('<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0"><channel>'
                    "<title>Big</title><link>https://example.org/</link>"
                    "<description>n entries</description>\n")
            for i in range(n):
                f.write(f"<item><title>Entry {i} about herons</title>"
                        f"<link>https://example.org/posts/{i}</link><guid>urn:e:{i}</guid>"
                        f"<pubDate>Mon, 02 Mar 2026 10:{i % 60:02d}:00 GMT</pubDate></item>\n")
            f.write("</channel></rss>\n")
        else:
            f.write('<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns='
                    '"http://www.w3.org/2005/Atom"><title>Big</title><id>urn:big</id>'
                    "<updated>2026-03-02T10:00:00Z</updated>\n")
            for i in range(n):
                f.write(f"<entry><title>Entry {i} about herons</title><id>urn:e:{i}</id>"
                        f'<link href="https://example.org/posts/{i}"/>'
                        f"<updated>2026-03-02T10:{i % 60:02d}:00Z</updated></entry>\n")
            f.write("</feed>\n")


def measure(path: Path, mode: str) -> dict[str, float]:
    before = _children_cpu()
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), mode], capture_output=True,
                         text=True, check=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    res["child_cpu"] = _children_cpu() - before
    return res


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--format", choices=("rss", "atom", "json"), default="rss")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"big.{args.format}"
        make_feed(path, args.entries, args.format)
        size = path.stat().st_size / 2**20
        print(f"{args.entries:,} entries, {args.format}, {size:.1f} MiB")
        whole = "json-whole" if args.format == "json" else "feedparser-whole"
        peers = (whole, "textsieve-whole", "textsieve-streamed", "listing-whole",
                 "textsieve-listing") if args.format == "json" else \
            (whole, "textsieve-streamed", "textsieve-listing")
        rows = {m: measure(path, m) for m in peers}
    base = rows[whole]
    print(f"{'peer':<22}{'entries':>9}{'CPU s':>9}{'CPU vs whole':>14}{'peak RSS MB':>13}"
          f"{'RSS vs whole':>14}")
    for mode, r in rows.items():
        print(f"{mode:<22}{r['n']:>9,}{r['child_cpu']:>9.2f}"
              f"{r['child_cpu'] / base['child_cpu']:>13.2f}x{r['rss_mb']:>13.0f}"
              f"{r['rss_mb'] / base['rss_mb']:>13.2f}x")


if __name__ == "__main__":
    main()
