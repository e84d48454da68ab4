"""The archive routes of textsieve serve: runs into the archive, search, items, stats."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

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


def test_the_reading_room_retries_through_the_api_run_service(tmp_path):
    """One run service for the API and the reading room: a retry from the problems page is
    a run of its own process, listed under /v1/runs like any run, and the archive's one
    writer is never shared (a retry while a run goes on is refused, 503)."""
    import subprocess
    import sys

    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLES / "letter.docx", docs / "letter.docx")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4\n broken beyond repair")
    archive = tmp_path / "a.db"
    made = subprocess.run([sys.executable, "-m", "textsieve", "run", str(docs), "--archive",
                           str(archive), "-q", "-j", "1"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert made.returncode == 1, made.stderr  # the broken PDF failed
    with running_server("-j", "1", "--archive", str(archive), "--file-root",
                        str(tmp_path)) as server, server.client() as c:
        page = c.get("/ui/problems").text
        token = page.split('name="csrf_token" value="')[1].split('"')[0]
        item = page.split('name="item" value="')[1].split('"')[0]
        shutil.copy(SAMPLES / "field-notes.pdf", docs / "broken.pdf")  # mended on disk
        origin = {"Origin": str(c.base_url).rstrip("/")}
        retry = c.post("/ui/problems/retry", data={"item": item, "csrf_token": token},
                       headers=origin, follow_redirects=False)
        assert retry.status_code == 303, retry.text
        run_id = retry.headers["location"].rsplit("/", 1)[1]
        done = _wait(c, f"/v1/runs/{run_id}")  # the API knows the reading room's run
        assert done["status"] == "done" and done["result"]["ok"] == 1, done
        assert done["items"] == [int(item)]
        assert "done" in c.get(f"/ui/jobs/{run_id}").text
        # While a run goes on, a retry is refused rather than a second writer started.
        slow = c.post("/v1/runs", json={"sources": [str(docs)], "force": True}).json()
        busy = c.post("/ui/problems/retry", data={"item": item, "csrf_token": token},
                      headers=origin, follow_redirects=False)
        _wait(c, f"/v1/runs/{slow['id']}")
    assert busy.status_code == 503 and busy.headers["retry-after"]
