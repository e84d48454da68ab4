"""A large JSON Feed is read item by item (ijson), like a large RSS or Atom feed.

`textsieve run feed:URL` on a JSON Feed over the streaming threshold, served locally:
every item is archived, the feed's title is its label even when it comes after the
items (JSON members have no order), a document that breaks off keeps the items before
the break and says so; and the listing takes a fraction of the memory of reading the
document whole (measured side by side in the same test).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from feed_server import FeedSite, feed_site_fixture  # noqa: F401 - registers feed_site
from test_feeds import _meta, exported, run

LONG = "<p>The herons came back to the marsh at dawn and the godwits followed. </p>" * 110


def entries(db: Path) -> dict[str, dict]:
    """The archived entries without a link: keyed by the feed and the entry's id."""
    return {k: r for k, r in exported(db).items() if "#" in k}


def _json_feed(path: Path | None, n: int, *, text: str = LONG, title_last: bool = True
               ) -> bytes:
    """A JSON Feed 1.1 whose items carry their whole text and no link (kept from the
    feed alone: nothing is fetched), its title after its items."""
    items = ",\n".join(json.dumps({"id": f"urn:marsh:{i}", "title": f"Marsh note {i}",
                                   "content_html": f"<p>Note {i} of the marsh.</p>{text}",
                                   "date_published": "2026-05-01T06:00:00Z"})
                       for i in range(n))
    head = '{"version": "https://jsonfeed.org/version/1.1", '
    title = '"title": "Marsh Streams"'
    body = (f'{head}"items": [\n{items}\n], {title}}}' if title_last
            else f'{head}{title}, "items": [\n{items}\n]}}').encode()
    if path is not None:
        path.write_bytes(body)
    return body


def test_large_json_feed_streamed_through_run(feed_site: FeedSite, tmp_path: Path) -> None:
    data = _json_feed(None, 300)
    assert len(data) > 2 * 1024 * 1024  # over the threshold: streamed
    feed_site.set("/big.json", data, "application/feed+json")
    db = tmp_path / "a.db"
    done = run(db, f"feed:{feed_site.url('/big.json')}")
    assert done.returncode == 0, done.stderr
    items = entries(db)
    assert len(items) == 300
    row = next(r for r in items.values() if r["title"] == "Marsh note 7")
    assert row["labels"] == ["Marsh Streams"]  # the title that came after the items
    assert "Note 7 of the marsh" in row["text"]
    assert _meta(row)["extra"]["feed_content"] == "feed"
    # Broken off halfway (a small document, read whole, and a large one, streamed): the
    # items before the break are kept, and the feed says why.
    for n in (30, 600):
        data = _json_feed(None, n)
        feed_site.set(f"/cut{n}.json", data[: len(data) // 2], "application/feed+json")
        db2 = tmp_path / f"cut{n}.db"
        assert run(db2, f"feed:{feed_site.url(f'/cut{n}.json')}").returncode == 0
        cut = entries(db2)
        assert n // 3 < len(cut) < n
        # Said by the entries listed once the break is known (the last batch of 256).
        assert any("breaks off" in p for r in cut.values()
                   for p in _meta(r)["extra"].get("feed_problems", []))


_MEASURE = r"""
import json, sys
def peak():  # VmHWM: this process's own peak (ru_maxrss keeps the parent's over exec)
    with open('/proc/self/status') as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith('VmHWM:'))
path, mode = sys.argv[1], sys.argv[2]
from textsieve.sources import feedparse
if mode == 'whole':  # textsieve's own reading with streaming off: the document parsed whole
    feedparse.STREAM_ABOVE = 1 << 40
from textsieve.options import Options
from textsieve.sources.feeds import FeedSource
n = sum(1 for _ in FeedSource('feed:' + path, Options()).items())
print(json.dumps([n, peak()]))
"""


@pytest.mark.slow
def test_large_json_feed_listed_in_bounded_memory(tmp_path: Path) -> None:
    """40,000 items (about 28 MiB): every one becomes an item, in well under the memory
    of parsing the document whole (bench/bench_feeds.py --format json has figures)."""
    path = tmp_path / "big.json"
    _json_feed(path, 40_000, text=LONG[:600])

    def measure(mode: str) -> tuple[int, int]:
        out = subprocess.run([sys.executable, "-c", _MEASURE, str(path), mode],
                             capture_output=True, text=True, timeout=600, check=True)
        n, rss = json.loads(out.stdout.strip().splitlines()[-1])
        return n, rss

    n, rss = measure("streamed")
    whole_n, whole_rss = measure("whole")
    assert n == whole_n == 40_001  # every item, and the feed's own
    assert rss < whole_rss * 0.8, (rss, whole_rss)
