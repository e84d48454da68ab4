"""What a feed told of an item survives every later fetch of it: ``show ID -f json``, the
JSON export and the WARC export's metadata still name the feed and the entry whichever
capture is current, when the article was fetched again without the feed's listing (a
later pass's owed retries, ``run --retry-errors``, the reading room's "retry these") or
extracted again from its kept original (``reextract``). And ``run --retry-errors`` of a
feed retries every failure of it, a good item whose last fetch failed for a passing
reason too.

The feeds are made by feedgen and served by a local HTTP server whose pages a test takes
down (503) and brings back.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from feed_server import FeedSite, feed_site_fixture  # noqa: F401 - registers feed_site
from test_feeds import _article, _meta, articles
from test_feeds_revised import _again, _counted, _rss_tides, _show

UTC = dt.UTC
WHEN = {i: dt.datetime(2026, 4, 1 + i, 6, 0, tzinfo=UTC) for i in range(4)}


def _tides(site: FeedSite, n: int) -> dict[int, tuple[str, dt.datetime]]:
    """An RSS feed of ``n`` teasers whose articles are fetched, each article served."""
    entries = {i: (f"The tides of week {i}, in short.", WHEN[i]) for i in range(n)}
    for i in range(n):
        site.set(f"/tides/{i}.html", _article(f"Tide table {i}",
                                              _counted(20 + i, "oystercatchers")))
    _rss_tides(site, entries)
    return entries


def _warc_metadata(db: Path, tmp_path: Path) -> list[dict[str, list[str]]]:
    """The fields of each metadata record of ``export --format warc``, by name."""
    from warcio.archiveiterator import ArchiveIterator

    out = tmp_path / "out.warc.gz"
    subprocess.run([sys.executable, "-m", "textsieve", "export", "--format", "warc",
                    "--to", str(out), "--archive", str(db)],
                   capture_output=True, text=True, timeout=120, check=True)
    records = []
    with open(out, "rb") as f:
        for rec in ArchiveIterator(f):
            if rec.rec_type != "metadata":
                continue
            fields: dict[str, list[str]] = {}
            for line in rec.content_stream().read().decode().splitlines():
                name, _, value = line.partition(": ")
                fields.setdefault(name, []).append(value)
            records.append(fields)
    return records


def _feed_details(db: Path, item_id: int) -> dict:
    """The feed keys of an item's ``metadata.extra`` as ``show ID -f json`` gives them."""
    extra = _show(db, item_id)["metadata"]["extra"]
    return {k: v for k, v in extra.items() if k == "feed" or k.startswith("feed_")}


def _expected(site: FeedSite, i: int) -> dict:
    return {"feed": site.url("/tides.rss"), "feed_entry": f"tag:tides.test,2026:{i}",
            "feed_content": "article"}


def _says_its_feed(db: Path, tmp_path: Path, site: FeedSite, i: int) -> None:
    """Every way a user reads the item names its feed and entry: ``show``, the JSON
    export, the WARC export's metadata record of each of its captures."""
    row = articles(db)[site.url(f"/tides/{i}.html")]
    assert _feed_details(db, row["id"]) == _expected(site, i)
    assert {k: v for k, v in _meta(row)["extra"].items()
            if k == "feed" or k.startswith("feed_")} == _expected(site, i)
    records = [m for m in _warc_metadata(db, tmp_path)
               if m.get("textsieve-item") == [str(row["id"])]]
    assert records, "no WARC record of the item"
    for m in records:
        assert m["feed-entry"] == [f"tag:tides.test,2026:{i}"]
        assert f"feed:{site.url('/tides.rss')}" in m["source"]


@pytest.mark.parametrize("cmd", ["watch", "run"])
def test_entry_whose_site_was_down_keeps_its_feed_details_once_fetched(
        feed_site: FeedSite, tmp_path: Path, cmd: str) -> None:
    """The article of a new entry answers 503: its failure already names the feed and the
    entry; the next pass (a round of ``watch``, ``run`` again) fetches it as owed, outside
    the feed's listing (the feed lists it never again), and the text it archives still
    says which feed and entry it came from."""
    _tides(feed_site, 2)
    feed_site.down.add("/tides/1.html")
    db, feed = tmp_path / "a.db", f"feed:{feed_site.url('/tides.rss')}"
    _again(cmd, db, feed)
    failed = articles(db)[feed_site.url("/tides/1.html")]
    assert failed["status"] == "error" and failed["error_kind"] == "http_5xx"
    assert _feed_details(db, failed["id"]) == _expected(feed_site, 1)

    feed_site.down.clear()
    asked = len(feed_site.requests("/tides/1.html"))
    _again(cmd, db, feed)
    assert [h.status for h in feed_site.requests("/tides/1.html")][asked:] == [200]
    row = articles(db)[feed_site.url("/tides/1.html")]
    assert row["status"] == "ok" and "counted 21 oystercatchers" in row["text"]
    _says_its_feed(db, tmp_path, feed_site, 1)
    _says_its_feed(db, tmp_path, feed_site, 0)  # fetched with the listing: as it was


def test_retry_errors_retries_every_failure_of_a_feed_and_keeps_its_details(
        feed_site: FeedSite, tmp_path: Path) -> None:
    """``run feed:URL --retry-errors`` after the sites are back: an entry whose article
    was down (503), one whose article was not there yet (404, which a plain run leaves as
    a typed record), and a good item whose revision's fetch failed (its old text stands)
    are all fetched, each still naming its feed and entry; an entry the feed added
    meanwhile is not read by the retry, and the next plain run still reads it."""
    entries = _tides(feed_site, 3)
    db, feed = tmp_path / "a.db", f"feed:{feed_site.url('/tides.rss')}"
    feed_site.down.add("/tides/1.html")
    with feed_site.lock:
        del feed_site.pages["/tides/2.html"]
    _again("run", db, feed)
    entries[0] = ("The tides of week 0, corrected: 20 became 200.", WHEN[0])
    _rss_tides(feed_site, entries)
    feed_site.set("/tides/0.html", _article("Tide table 0", _counted(200, "oystercatchers")))
    feed_site.down.add("/tides/0.html")
    _again("run", db, feed)  # the revision's fetch fails; entry 1 is owed, still down
    before = articles(db)
    good = before[feed_site.url("/tides/0.html")]
    assert good["status"] == "ok" and "counted 20 oystercatchers" in good["text"]
    assert _show(db, good["id"])["source_state"]["error_kind"] == "http_5xx"
    assert [before[feed_site.url(f"/tides/{i}.html")]["error_kind"] for i in (1, 2)] == \
        ["http_5xx", "http_404"]

    feed_site.down.clear()
    feed_site.set("/tides/2.html", _article("Tide table 2", _counted(22, "oystercatchers")))
    entries[3] = ("The tides of week 3, in short.", WHEN[3])
    feed_site.set("/tides/3.html", _article("Tide table 3", _counted(23, "oystercatchers")))
    _rss_tides(feed_site, entries)
    done = subprocess.run([sys.executable, "-m", "textsieve", "run", feed, "--retry-errors",
                           "--archive", str(db), "--allow-private", "--host-delay", "0",
                           "-j", "1", "--fetch-timeout", "20", "--retries", "0"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    after = articles(db)
    for i, n in ((0, 200), (1, 21), (2, 22)):
        row = after[feed_site.url(f"/tides/{i}.html")]
        assert row["status"] == "ok" and f"counted {n} oystercatchers" in row["text"], i
        _says_its_feed(db, tmp_path, feed_site, i)
    assert _show(db, good["id"])["source_state"]["error_kind"] is None
    assert feed_site.url("/tides/3.html") not in after  # a retry reads nothing new
    assert feed_site.requests("/tides/3.html") == []
    _again("run", db, feed)
    assert "counted 23 oystercatchers" in articles(db)[feed_site.url("/tides/3.html")]["text"]
    _says_its_feed(db, tmp_path, feed_site, 3)


def test_retry_errors_fetches_a_good_page_whose_last_fetch_failed(
        feed_site: FeedSite, tmp_path: Path) -> None:
    """A URL run again while its site is down keeps its text; ``run URL --retry-errors``
    once the site is back fetches it (its last fetch failed) and archives what it says
    now."""
    url = feed_site.url("/notes.html")
    feed_site.set("/notes.html", _article("Notes", _counted(5, "avocets")))
    db = tmp_path / "a.db"
    _again("run", db, url)
    feed_site.down.add("/notes.html")
    _again("run", db, url)
    row = articles(db)[url]
    assert row["status"] == "ok" and "counted 5 avocets" in row["text"]
    assert _show(db, row["id"])["source_state"]["error_kind"] == "http_5xx"
    feed_site.down.clear()
    feed_site.set("/notes.html", _article("Notes", _counted(50, "avocets")))
    done = subprocess.run([sys.executable, "-m", "textsieve", "run", url, "--retry-errors",
                           "--archive", str(db), "--allow-private", "--host-delay", "0",
                           "-j", "1", "--retries", "0"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert [h.status for h in feed_site.requests("/notes.html")] == [200, 503, 200]
    assert "counted 50 avocets" in articles(db)[url]["text"]


def test_reextract_keeps_the_feed_details(feed_site: FeedSite, tmp_path: Path) -> None:
    """Articles extracted again from their kept originals (``reextract --force``, no
    network), one fetched with the feed's listing, one fetched once its site was back:
    each still names its feed and entry."""
    _tides(feed_site, 2)
    feed_site.down.add("/tides/1.html")
    db, feed = tmp_path / "a.db", f"feed:{feed_site.url('/tides.rss')}"
    _again("run", db, feed)
    feed_site.down.clear()
    _again("run", db, feed)
    first = articles(db)[feed_site.url("/tides/0.html")]
    assert _feed_details(db, first["id"]) == _expected(feed_site, 0)
    feed_site.down.update({"/tides/0.html", "/tides/1.html", "/tides.rss"})
    hits = len(feed_site.hits)
    done = subprocess.run([sys.executable, "-m", "textsieve", "reextract", "--force",
                           "--archive", str(db), "-j", "1"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert len(feed_site.hits) == hits  # from the kept originals
    for i in (0, 1):
        row = articles(db)[feed_site.url(f"/tides/{i}.html")]
        assert row["status"] == "ok" and f"counted {20 + i} oystercatchers" in row["text"]
        _says_its_feed(db, tmp_path, feed_site, i)


def _wait(c, url: str) -> dict:  # c: an httpx client
    for _ in range(1200):
        state = c.get(url).json()
        if state["status"] != "running":
            return state
        time.sleep(0.1)
    raise AssertionError(f"{url} still running")


def test_reading_room_retry_keeps_the_feed_details(feed_site: FeedSite, tmp_path: Path
                                                   ) -> None:
    """The problems page's "retry these" on an entry whose article was down lists the
    bare link again; the text it archives still names the feed and the entry."""
    from server_proc import running_server

    _tides(feed_site, 2)
    feed_site.down.add("/tides/1.html")
    db, feed = tmp_path / "a.db", f"feed:{feed_site.url('/tides.rss')}"
    _again("run", db, feed)
    failed = articles(db)[feed_site.url("/tides/1.html")]
    assert failed["status"] == "error"
    feed_site.down.clear()
    with running_server("-j", "1", "--archive", str(db), "--allow-cidr", "127.0.0.1/32",
                        "--host-delay", "0", "--retries", "0") as server, \
            server.client() as c:
        page = c.get("/ui/problems").text
        token = page.split('name="csrf_token" value="')[1].split('"')[0]
        assert f'name="item" value="{failed["id"]}"' in page
        retry = c.post("/ui/problems/retry",
                       data={"item": str(failed["id"]), "csrf_token": token},
                       headers={"Origin": str(c.base_url).rstrip("/")},
                       follow_redirects=False)
        assert retry.status_code == 303, retry.text
        done = _wait(c, f"/v1/runs/{retry.headers['location'].rsplit('/', 1)[1]}")
        assert done["status"] == "done" and done["result"]["ok"] == 1, done
        shown = c.get(f"/v1/items/{failed['id']}").json()
    assert {k: v for k, v in shown["metadata"]["extra"].items()
            if k == "feed" or k.startswith("feed_")} == _expected(feed_site, 1)
    _says_its_feed(db, tmp_path, feed_site, 1)


def test_show_names_the_feed_of_an_item_archived_before_facts_were_provenance(
        feed_site: FeedSite, tmp_path: Path) -> None:
    """An archive whose feed items were written before version 11 (their feed details in
    the current capture's metadata only) keeps them through its migration and a later
    re-fetch: the migration takes them into provenance."""
    import sqlite3

    _tides(feed_site, 1)
    db, feed = tmp_path / "a.db", f"feed:{feed_site.url('/tides.rss')}"
    _again("run", db, feed)
    conn = sqlite3.connect(db, isolation_level=None)  # back to how version 10 kept it
    conn.execute("UPDATE provenance SET facts = NULL")
    conn.execute("PRAGMA user_version = 10")
    conn.execute("ALTER TABLE provenance DROP COLUMN facts")
    conn.close()
    feed_site.set("/tides/0.html", _article("Tide table 0", _counted(99, "oystercatchers")))
    done = subprocess.run([sys.executable, "-m", "textsieve", "run",
                           feed_site.url("/tides/0.html"), "--archive", str(db),
                           "--allow-private", "--host-delay", "0", "-j", "1"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    row = articles(db)[feed_site.url("/tides/0.html")]
    assert "counted 99 oystercatchers" in row["text"]
    _says_its_feed(db, tmp_path, feed_site, 0)
    kept = sqlite3.connect(db).execute(
        "SELECT facts FROM provenance WHERE item_id = ? AND facts IS NOT NULL",
        (row["id"],)).fetchall()
    assert [json.loads(f) for (f,) in kept] == [_expected(feed_site, 0)]
