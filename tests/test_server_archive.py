"""The archive routes of textsieve serve: runs into the archive, search, items, stats."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from http_server import http_server_fixture  # noqa: F401 - the http_server fixture
from server_proc import running_server

SAMPLES = Path(__file__).parent.parent / "samples" / "docs"


def _wait(c, url: str) -> dict:
    for _ in range(600):
        state = c.get(url).json()
        if state["status"] != "running":
            return state
        time.sleep(0.1)
    raise AssertionError(f"{url} still running")


def test_run_search_items_stats(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("letter.docx", "field-notes.pdf", "trip.zip"):
        shutil.copy(SAMPLES / name, docs / name)
    archive = tmp_path / "a.db"
    with running_server("-j", "1", "--archive", str(archive), "--file-root",
                        str(tmp_path)) as server, server.client() as c:
        assert c.get("/v1/search", params={"q": "heron"}).json()["error"]["kind"] == \
            "no_archive"
        started = c.post("/v1/runs", json={"sources": [str(docs)]})
        assert started.status_code == 202
        done = _wait(c, f"/v1/runs/{started.json()['id']}")
        assert done["status"] == "done", done
        assert done["counts"]["total"] == 3 and done["counts"]["extracted"] == 3
        second = c.post("/v1/runs", json={"sources": [str(docs)]}).json()
        again = _wait(c, f"/v1/runs/{second['id']}")
        assert again["counts"]["skipped"] == 3  # incremental
        hits = c.get("/v1/search", params={"q": "heron"}).json()
        assert hits and all("heron" in h["snippet"].lower() for h in hits)
        item = c.get(f"/v1/items/{hits[0]['id']}").json()
        text = c.get(f"/v1/items/{hits[0]['id']}/text")
        md = c.get(f"/v1/items/{hits[0]['id']}/markdown")
        assert item["status"] == "ok" and "heron" in text.text.lower()
        assert md.headers["content-type"].startswith("text/markdown")
        stats = c.get("/v1/stats").json()
        assert stats["items"] == 3 and stats["by_status"]["ok"] >= 3
        assert c.get("/v1/items/999999").status_code == 404
        bad_query = c.get("/v1/search", params={"q": '"unclosed'})
        assert bad_query.status_code == 400 and bad_query.json()["error"]["kind"]
        outside = c.post("/v1/runs", json={"sources": ["/etc"]})
        mail = c.post("/v1/runs", json={"sources": ["imap://me@example.org/INBOX"]})
    assert outside.status_code == 403 and outside.json()["error"]["kind"] == "blocked_address"
    assert mail.status_code == 400 and mail.json()["error"]["kind"] == "bad_source"


def test_serve_opens_the_reading_room_over_its_archive(tmp_path):
    """`serve --archive FILE` serves the reading room under /ui beside the API: its pages
    are HTML with their CSP, while the API's errors stay typed JSON."""
    import subprocess
    import sys

    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLES / "letter.docx", docs / "letter.docx")
    archive = tmp_path / "a.db"
    made = subprocess.run([sys.executable, "-m", "textsieve", "run", str(docs), "--archive",
                           str(archive), "-q", "-j", "1"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert made.returncode == 0, made.stderr
    with running_server("-j", "1", "--archive", str(archive)) as server, \
            server.client() as c:
        page = c.get("/ui/search", params={"q": "heron"})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        hit = c.get("/v1/search", params={"q": "heron"}).json()[0]
        assert f"items/{hit['id']}" in page.text
        item = c.get(f"/ui/items/{hit['id']}")
        assert item.status_code == 200 and "heron" in item.text.lower()
        missing_api = c.get("/v1/items/999999")
        assert missing_api.status_code == 404 and missing_api.json()["error"]["kind"]
        assert c.get("/ui/items/999999").status_code == 404


def test_bookmarks_run_and_search_by_label(tmp_path, http_server):
    """`POST /v1/runs` with a bookmark export (a real Firefox one, its links pointing at
    the local server), then `GET /v1/search?label=`: the folder's and tag's items, each
    with its labels; a bookmark file outside --file-root is refused."""
    import re

    fixture = Path(__file__).parent / "fixtures" / "bookmarks" / "firefox-153.html"
    export = tmp_path / "bookmarks.html"
    export.write_text(re.sub(r'HREF="https?://([^"]*)"',
                             lambda m: 'HREF="' + http_server.url(
                                 "/article.html?u=" + m.group(1).replace("&", "%26")) + '"',
                             fixture.read_text("utf-8")), "utf-8")
    archive = tmp_path / "a.db"
    with running_server("-j", "1", "--archive", str(archive), "--file-root", str(tmp_path),
                        "--allow-cidr", "127.0.0.1/32", "--ignore-robots") as server, \
            server.client() as c:
        started = c.post("/v1/runs", json={"sources": [f"bookmarks:{export}"]})
        assert started.status_code == 202, started.text
        done = _wait(c, f"/v1/runs/{started.json()['id']}")
        assert done["status"] == "done", done
        hits = c.get("/v1/search", params={"label": "recipes"}).json()
        assert len(hits) == 2 and all("Recipes" in h["labels"] for h in hits)
        birds = c.get("/v1/search", params={"label": "birds"}).json()
        assert [h["labels"] for h in birds] == [["birds", "Reading", "wading birds"]]
        assert c.get("/v1/search").status_code == 422
        outside = c.post("/v1/runs", json={"sources": ["bookmarks:/etc/passwd"]})
    assert outside.status_code == 403
