"""`textsieve watch`, as a real process: a real feed that changes between rounds, a
source that fails and backs off, and a stop by signal that leaves the archive whole."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from feed_server import FeedSite, feed_site_fixture  # noqa: F401 - registers feed_site
from test_feeds import _teasers, articles


def _watch(db: Path, log: Path, *specs: str, every: str = "2s") -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "textsieve", "watch", *specs,
                             "--every", every, "--archive", str(db), "--allow-private",
                             "--host-delay", "0", "-j", "1", "--fetch-timeout", "20"],
                            stdout=subprocess.DEVNULL, stderr=log.open("wb"))


def _wait_for(what: str, test, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if test():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _rounds(log: Path) -> list[str]:
    return [ln for ln in log.read_text(errors="replace").splitlines()
            if ln.startswith("textsieve watch: round ")]


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
            return c.execute("SELECT count(*) FROM items WHERE key LIKE '%/tides/%'"
                             ).fetchone()[0]
    except sqlite3.Error:
        return 0


def _stop(proc: subprocess.Popen[bytes], sig: int) -> int:
    proc.send_signal(sig)
    try:
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_watch_reads_a_changing_feed_until_stopped(feed_site: FeedSite, tmp_path: Path,
                                                   sig: int) -> None:
    _teasers(feed_site, 2)
    db, log = tmp_path / "a.db", tmp_path / "watch.log"
    missing = tmp_path / "no-such.mbox"
    proc = _watch(db, log, f"feed:{feed_site.url('/teasers.rss')}", f"mbox:{missing}")
    try:
        _wait_for("the first round", lambda: len(_rounds(log)) >= 1)
        assert _count(db) == 2
        _wait_for("a round with nothing new", lambda: len(_rounds(log)) >= 2)
        # The unchanged feed was asked with its validators and answered 304.
        feed_hits = feed_site.requests("/teasers.rss")
        assert feed_hits[0].status == 200 and feed_hits[1].status == 304
        assert feed_hits[1].headers.get("If-None-Match")
        _teasers(feed_site, 4)  # two new entries
        _wait_for("the new entries", lambda: _count(db) == 4)
        # The mailbox that is not there backs off: not tried in every round.
        _wait_for("a round backing off the mailbox",
                  lambda: any("backing off: mbox:" in r for r in _rounds(log)))
        code = _stop(proc, sig)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert code == 0, text
    assert "Traceback" not in text
    assert f"stopped ({signal.Signals(sig).name})" in text
    assert f"{missing}" in text  # the failing source was reported
    # Each new article fetched once, however many rounds ran.
    for i in range(4):
        assert len(feed_site.requests(f"/tides/{i}.html")) == 1
    assert len(articles(db)) == 4
    check = subprocess.run([sys.executable, "-m", "textsieve", "check", "--archive", str(db)],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr


def test_watch_fetches_again_an_article_whose_site_was_down(feed_site: FeedSite,
                                                              tmp_path: Path) -> None:
    """The site of one entry's article answers 503 in the first round: a later round
    fetches it again by itself (the feed lists a seen entry never again, so before it
    stayed failed until someone pressed "retry"); the article read fine is not asked
    again."""
    _teasers(feed_site, 2)
    feed_site.down.add("/tides/1.html")
    db, log = tmp_path / "a.db", tmp_path / "watch.log"
    proc = _watch(db, log, f"feed:{feed_site.url('/teasers.rss')}")
    def read() -> list[str]:
        return sorted(k for k, r in articles(db).items() if r["status"] == "ok")

    try:
        _wait_for("the first round", lambda: len(_rounds(log)) >= 1)
        assert read() == [feed_site.url("/tides/0.html")], _rounds(log)
        assert {h.status for h in feed_site.requests("/tides/1.html")} == {503}
        feed_site.down.clear()
        _wait_for("the article once its site is back", lambda: len(read()) == 2)
        code = _stop(proc, signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, log.read_text()
    assert [h.status for h in feed_site.requests("/tides/1.html")][-1] == 200
    assert len(feed_site.requests("/tides/0.html")) == 1


def test_watch_stopped_in_the_middle_of_a_round(feed_site: FeedSite, tmp_path: Path) -> None:
    """SIGTERM while a round fetches: what was extracted is committed, the run is marked
    interrupted, the archive is whole, and a plain run afterwards finishes the job."""
    _teasers(feed_site, 6)
    for i in range(6):
        path = f"/tides/{i}.html"
        body = feed_site.pages[path][0]
        feed_site.set(path, body, delay=0.0 if i < 2 else 8.0)
    db, log = tmp_path / "a.db", tmp_path / "watch.log"
    proc = _watch(db, log, f"feed:{feed_site.url('/teasers.rss')}", every="1h")
    try:
        _wait_for("a slow article asked for", lambda: any(
            p in feed_site.arrived for p in ("/tides/2.html", "/tides/3.html")))
        code = _stop(proc, signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert code == 0 and "Traceback" not in text and "stopped (SIGTERM) in round 1" in text
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT status FROM runs ORDER BY id DESC").fetchone()[0] == \
            "interrupted"
    check = subprocess.run([sys.executable, "-m", "textsieve", "check", "--archive", str(db)],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    for i in range(6):
        feed_site.set(f"/tides/{i}.html", feed_site.pages[f"/tides/{i}.html"][0])
    done = subprocess.run([sys.executable, "-m", "textsieve", "run",
                           f"feed:{feed_site.url('/teasers.rss')}", "--archive", str(db),
                           "--allow-private", "--host-delay", "0"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(articles(db)) == 6


def test_serve_watch_reads_a_feed_while_serving(feed_site: FeedSite, tmp_path: Path) -> None:
    """`serve --watch SOURCE --every`: the feed's new entries become searchable through
    the API while it serves; stopping the server stops the watch with the archive whole."""
    pytest.importorskip("fastapi")
    from server_proc import running_server

    _teasers(feed_site, 2)
    db = tmp_path / "a.db"
    with running_server("-j", "1", "--archive", str(db), "--allow-private",
                        "--host-delay", "0", "--watch",
                        f"feed:{feed_site.url('/teasers.rss')}", "--every", "2s") as server, \
            server.client() as c:
        _wait_for("the first entries", lambda: _count(db) == 2)
        hits = c.get("/v1/search", params={"q": "tides", "label": "Estuary Teasers"}).json()
        assert len(hits) == 2
        _teasers(feed_site, 3)
        _wait_for("the new entry", lambda: _count(db) == 3)
        proc = server.proc
    assert proc.returncode is not None
    with sqlite3.connect(db) as conn:
        assert not conn.execute("SELECT count(*) FROM runs WHERE status = 'running'"
                                ).fetchone()[0]
    check = subprocess.run([sys.executable, "-m", "textsieve", "check", "--archive", str(db)],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr


def test_api_runs_a_feed_and_searches_its_label(feed_site: FeedSite, tmp_path: Path) -> None:
    """POST /v1/runs takes feed:URL (and an OPML file under --file-root, not outside)."""
    pytest.importorskip("fastapi")
    from server_proc import running_server

    _teasers(feed_site, 2)
    db = tmp_path / "a.db"
    root = tmp_path / "root"
    root.mkdir()
    (root / "subs.opml").write_text(
        '<?xml version="1.0"?><opml version="2.0"><body><outline text="Tides" xmlUrl="'
        f'{feed_site.url("/teasers.rss")}"/></body></opml>')
    with running_server("-j", "1", "--archive", str(db), "--allow-private", "--host-delay",
                        "0", "--file-root", str(root)) as server, server.client() as c:
        for spec in (f"feed:{feed_site.url('/teasers.rss')}", f"opml:{root / 'subs.opml'}"):
            started = c.post("/v1/runs", json={"sources": [spec]})
            assert started.status_code == 202, started.text
            url = f"/v1/runs/{started.json()['id']}"
            for _ in range(600):
                state = c.get(url).json()
                if state["status"] != "running":
                    break
                time.sleep(0.1)
            assert state["status"] == "done", state
        hits = c.get("/v1/search", params={"label": "Tides"}).json()
        assert {h["id"] for h in hits}  # the OPML's name for the feed is a label now
        outside = c.post("/v1/runs", json={"sources": [f"opml:{tmp_path / 'x.opml'}"]})
        assert outside.status_code == 403
