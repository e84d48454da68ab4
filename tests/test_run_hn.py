"""A mailed Hacker News link, end to end: the discussion is archived as context and the
story it points to is fetched as an item of its own, both tied to the mail.

A local server stands in for news.ycombinator.com (``Options.hn_hosts`` admits it).
"""

from __future__ import annotations

import email.message
import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from textsieve import Options
from textsieve.archive import Archive
from textsieve.run.runner import run
from textsieve.sources import open_source

ITEM = """<html><head><title>Herons of the Thames | Hacker News</title></head><body>
<table class="fatitem"><tr class="athing submission" id="4242"><td class="title">
<span class="titleline"><a href="{base}/story.html">Herons of the Thames</a></span></td></tr>
</table>
<div class="comment"><span class="commtext c00">I watched one eat a whole eel at Barnes.</span>
</div>
<div class="comment"><span class="commtext c00">The colony at Walthamstow is bigger.</span></div>
</body></html>"""
STORY = """<html><head><title>Herons of the Thames</title></head><body><nav>Home</nav>
<article><h1>Herons of the Thames</h1><p>Grey herons now nest within sight of the city,
in colonies that grew every year since the river was cleaned in the sixties.</p>
<p>Counts from the reservoirs show more than a hundred nests along the river this spring,
the highest number since counting began.</p></article><footer>Subscribe</footer>
</body></html>"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "site"
    root.mkdir()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=root))
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    (root / "item").write_text(ITEM.format(base=base))  # served for /item?id=4242
    (root / "story.html").write_text(STORY)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield base
    httpd.shutdown()


def test_hn_item_gives_discussion_and_story(site: str, tmp_path: Path) -> None:
    msg = email.message.EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "me@example.org", "me@example.org", "read: HN"
    msg["Message-ID"] = "<hn-1@example.org>"
    msg.set_content(f"Good thread: {site}/item?id=4242\n")
    mbox = tmp_path / "links.mbox"
    mbox.write_bytes(b"From me@example.org Mon Oct  5 08:12:00 2026\n" + bytes(msg) + b"\n")
    options = Options(workers=2, per_host_delay=0.0, hn_hosts=("127.0.0.1",),
                      allow_private=True)
    with Archive(tmp_path / "a.db") as archive:
        stats = run([open_source(f"mbox:{mbox}", options=options)], archive, options)
        assert stats.status.get("error", 0) == 0, stats
        rows = dict(archive.conn.execute(
            "SELECT key, id FROM items WHERE parent_id IS NULL").fetchall())
        item = next(i for k, i in rows.items() if "/item" in k)
        story = next(i for k, i in rows.items() if k.endswith("/story.html"))
        discussion = archive.document(item)
        assert discussion is not None
        assert "whole eel at Barnes" in discussion.text  # the comments, kept as context
        page = archive.document(story)
        assert page is not None and "more than a hundred nests" in page.text
        assert "Subscribe" not in page.text  # main content
        for iid in (item, story):  # both tied to the mail that named the HN link
            assert [m["subject"] for m in archive.mails_of(iid)] == ["read: HN"]
