"""A feed entry revised under the same id is read again by `textsieve run feed:URL`.

The feeds are made by feedgen and served by a local HTTP server that answers conditional
GETs; the revised text becomes the item's new capture, the earlier one stays reachable
(`show ID --captures`, `export --format warc`), an entry that did not change is not
fetched again, a generator that re-stamps every entry's date on each build is not taken
for a revision of every entry, and a revision whose article cannot be fetched keeps the
text the item had.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from feed_server import FeedSite, feed_site_fixture  # noqa: F401 - registers feed_site
from test_feeds import _article, _meta, articles, run

UTC = dt.UTC


def _counted(n: int, what: str) -> str:
    """An article body: the paragraphs of a count, with a number a revision corrects."""
    return "".join(
        f"<p>Paragraph {i + 1}: the volunteers counted {n} {what} on the salt marsh at "
        f"dawn, walking the dykes with notebooks before the tide came in.</p>"
        for i in range(6))


def _show(db: Path, item_id: int) -> dict:
    out = subprocess.run([sys.executable, "-m", "textsieve", "show", str(item_id),
                          "--archive", str(db), "--captures", "-f", "json"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return json.loads(out)


def _warc_payloads(db: Path, tmp_path: Path) -> list[bytes]:
    from warcio.archiveiterator import ArchiveIterator

    out = tmp_path / "out.warc.gz"
    subprocess.run([sys.executable, "-m", "textsieve", "export", "--format", "warc",
                    "--to", str(out), "--archive", str(db)],
                   capture_output=True, text=True, timeout=120, check=True)
    with open(out, "rb") as f:
        return [rec.content_stream().read() for rec in ArchiveIterator(f)
                if rec.rec_type in ("response", "resource")]


def _atom_diary(site: FeedSite, entries: dict[int, tuple[str, str, dt.datetime]],
                moved: dict[int, str] | None = None) -> None:
    """An Atom feed carrying each whole article (the same text as its page), every entry
    with its own <updated>; ``moved``: entries whose link is another path."""
    from feedgen.feed import FeedGenerator

    fg = FeedGenerator()
    fg.id(site.url("/"))
    fg.title("Marsh Diary")
    fg.link(href=site.url("/"), rel="alternate")
    for i, (title, body, updated) in sorted(entries.items()):
        fe = fg.add_entry(order="append")
        fe.id(f"tag:diary.test,2026:{i}")
        fe.title(title)
        path = (moved or {}).get(i, f"/diary/{i}.html")
        fe.link(href=site.url(path))
        fe.content(body, type="html")
        fe.published(dt.datetime(2026, 5, 1 + i, 6, 0, tzinfo=UTC))
        fe.updated(updated)
        site.set(path, _article(title, body))
    site.set("/diary.atom", fg.atom_str(pretty=True), "application/atom+xml")


def test_revised_atom_entry_becomes_a_new_capture(feed_site: FeedSite, tmp_path: Path
                                                  ) -> None:
    """The feed carries whole articles: a revised entry (newer <updated>, corrected
    text and title) replaces the item's text from the feed, nothing is fetched, the
    earlier text stays an earlier capture of the same item; the others are untouched."""
    first = dt.datetime(2026, 5, 1, 6, 0, tzinfo=UTC)
    entries = {i: (f"Count {i}", _counted(10 + i, what), first + dt.timedelta(days=i))
               for i, what in enumerate(("herons", "egrets", "godwits"))}
    _atom_diary(feed_site, entries)
    db = tmp_path / "a.db"
    feed = f"feed:{feed_site.url('/diary.atom')}"
    assert run(db, feed).returncode == 0
    before = articles(db)
    assert len(before) == 3
    key = feed_site.url("/diary/1.html")
    assert "counted 11 egrets" in before[key]["text"]
    assert _meta(before[key])["extra"]["feed_content"] == "feed"

    entries[1] = ("Count 1 (corrected)", _counted(110, "egrets"),
                  dt.datetime(2026, 5, 20, 9, 30, tzinfo=UTC))
    _atom_diary(feed_site, entries)
    hits = len(feed_site.hits)
    done = run(db, feed)
    assert done.returncode == 0, done.stderr
    assert [h.path for h in feed_site.hits[hits:] if h.path != "/robots.txt"] == \
        ["/diary.atom"]  # the feed carries the text: no article fetched
    after = articles(db)
    assert set(after) == set(before)  # the same items, none added
    row = after[key]
    assert row["id"] == before[key]["id"]
    assert "counted 110 egrets" in row["text"] and "counted 11 egrets" not in row["text"]
    assert row["title"] == "Count 1 (corrected)"
    caps = _show(db, row["id"])["captures"]
    assert [c["current"] for c in caps] == [0, 1]
    assert caps[0]["title"] == "Count 1" and caps[1]["title"] == "Count 1 (corrected)"
    for other in (0, 2):  # unchanged entries: one capture, as before
        unchanged = after[feed_site.url(f"/diary/{other}.html")]
        assert unchanged["text"] == before[unchanged["key"]]["text"]
        assert len(_show(db, unchanged["id"])["captures"]) == 1
    # The earlier text is still there to read: its original is kept and exported.
    payloads = _warc_payloads(db, tmp_path)
    assert any(b"counted 11 egrets" in p for p in payloads)
    assert any(b"counted 110 egrets" in p for p in payloads)

    # A revision that moves the entry to another link (its title's typo fixed in the
    # address too): still the same item, now with the corrected text; none added.
    entries[2] = ("Count 2", _counted(120, "godwits"), dt.datetime(2026, 5, 21, tzinfo=UTC))
    _atom_diary(feed_site, entries, moved={2: "/diary/2-godwits.html"})
    assert run(db, feed).returncode == 0
    moved = articles(db)
    assert set(moved) == set(before)
    row = moved[feed_site.url("/diary/2.html")]
    assert "counted 120 godwits" in row["text"] and row["id"] == after[row["key"]]["id"]
    assert len(_show(db, row["id"])["captures"]) == 2


def _rss_tides(site: FeedSite, entries: dict[int, tuple[str, dt.datetime]],
               moved: dict[int, str] | None = None) -> None:
    """An RSS 2.0 feed of one-line teasers (the articles are fetched), each item with
    its guid and pubDate and no modification date; ``moved``: items linking elsewhere."""
    from feedgen.feed import FeedGenerator

    fg = FeedGenerator()
    fg.title("Tide Tables")
    fg.link(href=site.url("/"), rel="alternate")
    fg.description("Short notes")
    for i, (teaser, published) in sorted(entries.items()):
        fe = fg.add_entry(order="append")
        fe.guid(f"tag:tides.test,2026:{i}", permalink=False)
        fe.title(f"Tide table {i}")
        fe.link(href=site.url((moved or {}).get(i, f"/tides/{i}.html")))
        fe.description(teaser)
        fe.published(published)
    site.set("/tides.rss", fg.rss_str(pretty=True), "application/rss+xml")


def test_revised_rss_item_is_fetched_again_and_a_failure_keeps_the_text(
        feed_site: FeedSite, tmp_path: Path) -> None:
    """Teasers: a revised item (same guid, changed description) has its article fetched
    again and the new page becomes its text; unchanged items are not fetched; a build
    that re-stamps every pubDate fetches nothing; a revision whose article is gone (404)
    keeps the text the item had and the run says it failed."""
    when, entries, feed = _tides(feed_site, 3)
    db = tmp_path / "a.db"
    assert run(db, feed).returncode == 0
    before = articles(db)
    assert len(before) == 3
    assert _meta(before[feed_site.url("/tides/1.html")])["extra"]["feed_content"] == "article"

    def fetched_since(n: int) -> list[str]:
        return sorted(h.path for h in feed_site.hits[n:] if h.path.startswith("/tides/"))

    # Item 1 revised: a corrected teaser and article.
    entries[1] = ("The tides of week 1, corrected: 21 became 210.", when[1])
    feed_site.set("/tides/1.html", _article("Tide table 1", _counted(210, "oystercatchers")))
    _rss_tides(feed_site, entries)
    hits = len(feed_site.hits)
    assert run(db, feed).returncode == 0
    assert fetched_since(hits) == ["/tides/1.html"]
    after = articles(db)
    assert set(after) == set(before)
    row = after[feed_site.url("/tides/1.html")]
    assert "counted 210 oystercatchers" in row["text"]
    assert "counted 21 oystercatchers" not in row["text"]
    caps = _show(db, row["id"])["captures"]
    assert [c["current"] for c in caps] == [0, 1] and caps[0]["http_status"] == 200

    # A generator that stamps every pubDate with the build time: not a revision.
    stamp = dt.datetime(2026, 6, 1, 12, 0, 7, tzinfo=UTC)
    _rss_tides(feed_site, {i: (t, stamp) for i, (t, _) in entries.items()})
    hits = len(feed_site.hits)
    assert run(db, feed).returncode == 0
    assert fetched_since(hits) == []

    # Item 2 revised while its article is gone: the run fails for it, the text stays.
    entries = {i: (t, stamp) for i, (t, _) in entries.items()}
    entries[2] = ("The tides of week 2, corrected.", stamp)
    with feed_site.lock:
        del feed_site.pages["/tides/2.html"]
    _rss_tides(feed_site, entries)
    hits = len(feed_site.hits)
    done = run(db, feed)
    assert done.returncode == 1
    assert [(h.path, h.status) for h in feed_site.hits[hits:]
            if h.path.startswith("/tides/")] == [("/tides/2.html", 404)]
    kept = articles(db)[feed_site.url("/tides/2.html")]
    assert kept["status"] == "ok" and "counted 22 oystercatchers" in kept["text"]
    assert kept["text"] == before[kept["key"]]["text"]
    shown = _show(db, kept["id"])
    assert shown["source_state"]["error_kind"] == "http_404"
    assert [c["current"] for c in shown["captures"]] == [1]

    # One item re-dated alone (a newer pubDate, same guid): its article is asked again,
    # with its validators, and found unchanged.
    entries[0] = (entries[0][0], dt.datetime(2026, 6, 9, 8, 0, tzinfo=UTC))
    _rss_tides(feed_site, entries)
    hits = len(feed_site.hits)
    run(db, feed)
    asked = [h for h in feed_site.hits[hits:] if h.path.startswith("/tides/")]
    assert [(h.path, h.status) for h in asked] == [("/tides/0.html", 304)]
    assert asked[0].headers.get("If-None-Match")

    # Item 1 moved to another address with a corrected article: fetched from there, and
    # still the same item.
    feed_site.set("/tides/1-fixed.html", _article("Tide table 1",
                                                  _counted(211, "oystercatchers")))
    _rss_tides(feed_site, entries, moved={1: "/tides/1-fixed.html"})
    hits = len(feed_site.hits)
    run(db, feed)
    assert fetched_since(hits) == ["/tides/1-fixed.html"]
    items = articles(db)
    assert set(items) == set(before)
    row = items[feed_site.url("/tides/1.html")]
    assert "counted 211 oystercatchers" in row["text"]
    assert len(_show(db, row["id"])["captures"]) == 3


def _tides(site: FeedSite, n: int) -> tuple[dict[int, dt.datetime],
                                             dict[int, tuple[str, dt.datetime]], str]:
    """``n`` weekly tide articles (week i counts 20 + i oystercatchers) and the feed of
    their teasers: (dates, entries, the feed's source spec), for a test to revise."""
    when = {i: dt.datetime(2026, 4, 1 + i, 6, 0, tzinfo=UTC) for i in range(n)}
    entries = {i: (f"The tides of week {i}, in short.", when[i]) for i in range(n)}
    for i in range(n):
        site.set(f"/tides/{i}.html", _article(f"Tide table {i}",
                                              _counted(20 + i, "oystercatchers")))
    _rss_tides(site, entries)
    return when, entries, f"feed:{site.url('/tides.rss')}"


def _again(cmd: str, db: Path, feed: str) -> subprocess.CompletedProcess[str]:
    """One more pass over the feed as a user runs it: ``run``, or one round of ``watch``
    (each round of a long ``watch`` is this same incremental run). No retries within a
    fetch: each pass asks a down site once, so the passes can be counted."""
    extra = ["--every", "1s", "--rounds", "1"] if cmd == "watch" else []
    done = subprocess.run([sys.executable, "-m", "textsieve", cmd, feed, *extra,
                           "--archive", str(db), "--allow-private", "--host-delay", "0",
                           "-j", "1", "--fetch-timeout", "20", "--retries", "0"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    return done


@pytest.mark.parametrize("cmd", ["watch", "run"])
def test_revision_whose_site_was_down_is_fetched_by_a_later_pass(
        feed_site: FeedSite, tmp_path: Path, cmd: str) -> None:
    """An entry is revised while its article's site answers 503: that pass keeps the
    text the item had (its status stays ok); the feed has seen the revision and lists it
    never again, yet the next pass (a round of ``watch``, or ``run`` again) fetches the
    article again by itself, and once the site is back the revised text is a new capture,
    the earlier one kept. Then it is owed nothing: no more fetches."""
    when, entries, feed = _tides(feed_site, 2)
    db = tmp_path / "a.db"
    key = feed_site.url("/tides/1.html")
    _again(cmd, db, feed)
    before = articles(db)[key]
    assert "counted 21 oystercatchers" in before["text"]

    entries[1] = ("The tides of week 1, corrected: 21 became 210.", when[1])
    feed_site.set("/tides/1.html", _article("Tide table 1", _counted(210, "oystercatchers")))
    _rss_tides(feed_site, entries)
    feed_site.down.add("/tides/1.html")
    _again(cmd, db, feed)
    assert [h.status for h in feed_site.requests("/tides/1.html")] == [200, 503]
    kept = articles(db)[key]
    assert kept["status"] == "ok" and kept["text"] == before["text"]
    assert _show(db, kept["id"])["source_state"]["error_kind"] == "http_5xx"

    _again(cmd, db, feed)  # still down: asked again, the text still kept
    assert [h.status for h in feed_site.requests("/tides/1.html")] == [200, 503, 503]
    assert articles(db)[key]["text"] == before["text"]

    feed_site.down.clear()
    _again(cmd, db, feed)
    assert [h.status for h in feed_site.requests("/tides/1.html")][-1] == 200
    after = articles(db)[key]
    assert after["id"] == before["id"] and after["status"] == "ok"
    assert "counted 210 oystercatchers" in after["text"]
    assert "counted 21 oystercatchers" not in after["text"]
    shown = _show(db, after["id"])
    assert [c["current"] for c in shown["captures"]] == [0, 1]
    assert shown["source_state"]["error_kind"] is None
    assert any(b"counted 21 oystercatchers" in p for p in _warc_payloads(db, tmp_path))

    asked = len(feed_site.requests("/tides/1.html"))
    _again(cmd, db, feed)  # nothing owed any more
    assert len(feed_site.requests("/tides/1.html")) == asked
    assert len(feed_site.requests("/tides/0.html")) == 1


def test_revision_that_fails_for_good_is_not_fetched_every_round(
        feed_site: FeedSite, tmp_path: Path) -> None:
    """Two entries revised: one article is gone (404), the other now serves bytes that
    cannot be read (a broken PDF). Each keeps its text, each failure is a typed record
    (``show``, ``search --gone``), and the rounds of ``watch`` that follow do not ask for
    either again."""
    when, entries, feed = _tides(feed_site, 3)
    db = tmp_path / "a.db"
    _again("watch", db, feed)
    before = articles(db)
    assert len(before) == 3

    for i in (0, 1):
        entries[i] = (f"The tides of week {i}, corrected.", when[i])
    with feed_site.lock:
        del feed_site.pages["/tides/0.html"]
    feed_site.set("/tides/1.html", b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ntruncated",
                  "application/pdf")
    _rss_tides(feed_site, entries)
    done = subprocess.run([sys.executable, "-m", "textsieve", "watch", feed, "--every", "1s",
                           "--rounds", "3", "--archive", str(db), "--allow-private",
                           "--host-delay", "0", "-j", "1", "--fetch-timeout", "20"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert [h.status for h in feed_site.requests("/tides/0.html")] == [200, 404]
    assert [h.status for h in feed_site.requests("/tides/1.html")] == [200, 200]
    assert len(feed_site.requests("/tides/2.html")) == 1
    after = articles(db)
    kinds = {}
    for i in (0, 1):
        row = after[feed_site.url(f"/tides/{i}.html")]
        assert row["status"] == "ok" and row["text"] == before[row["key"]]["text"]
        kinds[i] = _show(db, row["id"])["source_state"]["error_kind"]
    assert kinds == {0: "http_404", 1: "corrupt"}  # the PDF reader's word, not "degraded"
    notes = {}
    for i in (0, 1):
        shown = subprocess.run([sys.executable, "-m", "textsieve", "show",
                                str(after[feed_site.url(f"/tides/{i}.html")]["id"]),
                                "--archive", str(db)],
                               capture_output=True, text=True, timeout=120, check=True)
        notes[i] = shown.stderr + shown.stdout
    assert "source gone since" in notes[0] and "http_404" in notes[0]
    assert "source sent what cannot be read since" in notes[1] and "corrupt" in notes[1]
    gone = subprocess.run([sys.executable, "-m", "textsieve", "search", "oystercatchers",
                           "--gone", "--archive", str(db)],
                          capture_output=True, text=True, timeout=120, check=True).stdout
    assert "Tide table 0" in gone and "Tide table 1" in gone and "Tide table 2" not in gone


def test_revision_moved_to_a_link_that_was_down_stays_its_item(
        feed_site: FeedSite, tmp_path: Path) -> None:
    """A revision that moves an entry to another link whose site answers 503: a later
    round of ``watch`` fetches the new link, and its text becomes a capture of the same
    item (the one the entry made), not an item of its own."""
    when, entries, feed = _tides(feed_site, 2)
    db = tmp_path / "a.db"
    _again("watch", db, feed)
    before = articles(db)

    entries[1] = ("The tides of week 1, corrected and moved.", when[1])
    feed_site.set("/tides/1-fixed.html", _article("Tide table 1",
                                                  _counted(211, "oystercatchers")))
    feed_site.down.add("/tides/1-fixed.html")
    _rss_tides(feed_site, entries, moved={1: "/tides/1-fixed.html"})
    _again("watch", db, feed)
    assert [h.status for h in feed_site.requests("/tides/1-fixed.html")] == [503]
    feed_site.down.clear()
    _again("watch", db, feed)
    assert [h.status for h in feed_site.requests("/tides/1-fixed.html")] == [503, 200]
    after = articles(db)
    assert set(after) == set(before)
    row = after[feed_site.url("/tides/1.html")]
    assert "counted 211 oystercatchers" in row["text"]
    assert [c["current"] for c in _show(db, row["id"])["captures"]] == [0, 1]
