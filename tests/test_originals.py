"""The archive keeps what it read: originals, captures, and no lost work to link rot.

Everything runs the command a user runs (``textsieve run``, ``reextract``, ``show``,
``search``, ``export``, ``check``, ``gc``) in a subprocess against a real HTTP server on
127.0.0.1 (``site_server.Site``) whose pages the tests change, remove, and take down.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from site_server import Page, Site, essay
from textsieve.archive import Archive

PARAS = [f"Paragraph {i} on the heron colony of the salt marsh, counted each spring by the "
         f"volunteers who walk the dykes at dawn with notebooks and a telescope." for i in
         range(10)]


def ts(*args: str | Path, check: bool = False) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([sys.executable, "-m", "textsieve", *map(str, args)],
                       capture_output=True, text=True, timeout=300, check=False)
    assert "Traceback" not in p.stderr, p.stderr
    if check:
        assert p.returncode == 0, p.stderr
    return p


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return ts("run", *args, "--allow-private", "--host-delay", "0", "--retries", "0",
              "--fetch-timeout", "20", "-j", "2", "-q")


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    yield s
    s.stop()


def _item(db: Path, key_part: str) -> dict[str, object]:
    with Archive(db, readonly=True) as a:
        row = a.conn.execute("SELECT id FROM items WHERE key LIKE ? AND parent_id IS NULL",
                             (f"%{key_part}",)).fetchone()
        assert row is not None, key_part
        doc = a.document(row[0])
        assert doc is not None
        return {"id": row[0], "status": str(doc.status), "text": doc.text,
                "version": a.conn.execute("SELECT extractor_version FROM items WHERE id = ?",
                                          (row[0],)).fetchone()[0]}


def _outdate(db: Path) -> None:
    """What an upgrade of textsieve does to an archive: every extractor version is older."""
    conn = sqlite3.connect(db)
    conn.execute("UPDATE items SET extractor_version = '0:html/0#00000000'")
    conn.commit()
    conn.close()


def test_link_rot_keeps_the_text(site: Site, tmp_path: Path) -> None:
    site.pages["/essay.html"] = Page(essay("The herons of the marsh", PARAS))
    url = site.url("/essay.html")
    db = tmp_path / "a.db"
    assert run(url, "--archive", db).returncode == 0
    first = _item(db, "/essay.html")
    assert first["status"] == "ok" and PARAS[3] in first["text"]

    del site.pages["/essay.html"]  # the page is removed: 404
    p = run(url, "--archive", db, "--force")
    assert p.returncode == 1  # the source failed, and the run says so ...
    assert _item(db, "/essay.html")["text"] == first["text"]  # ... but the text stays
    show = ts("show", str(first["id"]), "--archive", db, check=True)
    assert "source gone since" in show.stderr and "http_404" in show.stderr
    assert "text from the capture of" in show.stderr
    assert PARAS[3] in show.stdout
    assert "heron" in ts("search", "heron", "--archive", db, "--gone", check=True).stdout
    assert ts("search", "heron", "--archive", db, "--alive").returncode == 1  # no match

    # Offline re-extraction: the same text, and not one request reaches the server.
    before = site.requests()
    p = ts("reextract", "--archive", db, "--force", check=True)
    assert site.requests() == before
    assert _item(db, "/essay.html")["text"] == first["text"]

    site.stop()  # the whole host is gone
    for args in (["--force"], ["--retry-errors"], []):
        run(url, "--archive", db, *args)
        assert _item(db, "/essay.html")["text"] == first["text"], args
    _outdate(db)  # an upgrade: the item is outdated; its kept original is read again
    run(url, "--archive", db)
    again = _item(db, "/essay.html")
    assert again["text"] == first["text"] and again["version"] == first["version"]
    show = ts("show", str(first["id"]), "--archive", db, "--captures", check=True)
    assert "source gone since" in show.stdout and "http_404" not in show.stdout  # last: refused
    stats = ts("stats", "--archive", db, check=True).stdout
    assert "1 gone" in stats and "originals    1 kept" in stats


def test_changed_page_is_a_new_capture_and_a_cookie_wall_is_not(site: Site,
                                                                 tmp_path: Path) -> None:
    site.pages["/p.html"] = Page(essay("Marsh diary", PARAS))
    url, db = site.url("/p.html"), tmp_path / "a.db"
    run(url, "--archive", db)
    changed = [*PARAS[:5], "A new paragraph: the spoonbills came back to the lagoon in May, "
               "forty of them, the first since the storm.", *PARAS[5:]]
    site.pages["/p.html"] = Page(essay("Marsh diary", changed))
    run(url, "--archive", db)
    item = _item(db, "/p.html")
    assert "spoonbills" in item["text"]
    hits = ts("search", "spoonbills", "--archive", db, check=True).stdout
    assert f"[{item['id']}]" in hits  # search finds the latest capture
    # A cookie wall where the article was: kept as a capture, never shown as the text.
    site.pages["/p.html"] = Page(b"<html><body><main><p>We value your privacy. Accept all "
                                 b"cookies to continue reading.</p></main></body></html>")
    run(url, "--archive", db)
    assert "spoonbills" in _item(db, "/p.html")["text"]
    p = ts("show", str(item["id"]), "--archive", db, "--captures", "-f", "json", check=True)
    caps = json.loads(p.stdout)["captures"]
    assert [c["kind"] for c in caps] == ["capture", "capture", "degraded"]
    assert [c["current"] for c in caps] == [0, 1, 0]
    assert len({c["original"] for c in caps}) == 3  # every answer's bytes are kept
    lines = ts("show", str(item["id"]), "--archive", db, "--captures", check=True).stdout
    assert "source shrank" in lines
    assert sum("HTTP 200" in ln and "chars" in ln for ln in lines.splitlines()) == 3


def test_fifty_pages_reextracted_with_the_server_stopped(site: Site, tmp_path: Path) -> None:
    urls = []
    for i in range(50):
        path = f"/notes/{i}.html"
        site.pages[path] = Page(essay(f"Field note {i}", [f"Note {i}: {p}" for p in PARAS[:4]]))
        urls.append(site.url(path))
    listing = tmp_path / "links.txt"
    listing.write_text("\n".join(urls) + "\n")
    db = tmp_path / "a.db"
    assert run(listing, "--archive", db).returncode == 0
    with Archive(db, readonly=True) as a:
        texts = dict(a.conn.execute("SELECT key, ts_unzstd(text) FROM items"))
    assert len(texts) == 50 and all(t for t in texts.values())
    site.stop()
    _outdate(db)
    p = ts("reextract", "--archive", db, check=True)
    assert "extracted            50" in p.stderr
    with Archive(db, readonly=True) as a:
        assert dict(a.conn.execute("SELECT key, ts_unzstd(text) FROM items")) == texts
        assert a.conn.execute("SELECT count(*) FROM items WHERE extractor_version LIKE "
                              "'0:html/0%'").fetchone()[0] == 0


def test_warc_export_reads_back_with_warcio(site: Site, tmp_path: Path) -> None:
    from warcio.archiveiterator import ArchiveIterator

    pdf = site.pages["/r.pdf"] = Page(_pdf("Ringing report: 412 reed warblers"),
                                      ctype="application/pdf")
    site.pages["/a.html"] = Page(essay("Marsh diary", PARAS))
    db = tmp_path / "a.db"
    run(site.url("/a.html"), site.url("/r.pdf"), "--archive", db)
    out = tmp_path / "out.warc.gz"
    ts("export", "--format", "warc", "--to", out, "--archive", db, check=True)
    responses, metadata = {}, {}
    with open(out, "rb") as f:
        for rec in ArchiveIterator(f):
            if rec.rec_type == "response":
                payload = rec.content_stream().read()
                digest = rec.rec_headers.get_header("WARC-Payload-Digest")
                algo, _, value = digest.partition(":")
                assert algo == "sha1"
                assert base64.b32encode(hashlib.sha1(payload).digest()).decode() == value
                responses[rec.rec_headers.get_header("WARC-Record-ID")] = (
                    rec.rec_headers.get_header("WARC-Target-URI"), payload,
                    rec.http_headers.get_header("Content-Type"))
                assert rec.rec_headers.protocol == "WARC/1.1"
            elif rec.rec_type == "metadata":
                metadata[rec.rec_headers.get_header("WARC-Refers-To")] = \
                    rec.content_stream().read().decode()
    by_url = {u: (p, t) for u, p, t in responses.values()}
    assert by_url[site.url("/r.pdf")] == (pdf.body, "application/pdf")
    assert by_url[site.url("/a.html")][0] == site.pages["/a.html"].body
    assert set(metadata) == set(responses)
    with Archive(db, readonly=True) as a:
        kept = {r[0] for r in a.conn.execute("SELECT sha256 FROM originals")}
    assert {hashlib.sha256(p).hexdigest() for _, p, _ in responses.values()} == kept
    assert all("original-sha256: " in m and "textsieve-item: " in m for m in metadata.values())


def _pdf(text: str) -> bytes:
    from http_server import make_pdf

    return make_pdf(text)


def test_wget_warc_gives_the_texts_of_fetching(site: Site, tmp_path: Path) -> None:
    for i in range(4):
        site.pages[f"/s/{i}.html"] = Page(essay(f"Station {i}", [f"Station {i}: {p}"
                                                                 for p in PARAS[:5]]))
    site.pages["/s/report.pdf"] = Page(_pdf("Annual count: 57 bitterns booming"),
                                       ctype="application/pdf")
    urls = [site.url(p) for p in site.pages]
    listing = tmp_path / "links.txt"
    listing.write_text("\n".join(urls) + "\n")
    fetched = tmp_path / "fetched.db"
    assert run(listing, "--archive", fetched).returncode == 0
    warcs = tmp_path / "crawl"
    warcs.mkdir()
    w = subprocess.run(["wget", "-q", "--warc-file", str(warcs / "site"), "-e", "robots=off",
                        "-O", os.devnull, "-i", str(listing)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, check=False)
    assert (warcs / "site.warc.gz").exists(), w.stderr
    site.stop()  # nothing may be fetched from here on
    from_warc = tmp_path / "warc.db"
    p = ts("run", warcs, "--archive", from_warc, "-q")
    assert p.returncode == 0, p.stderr

    def texts(db: Path) -> dict[str, tuple[str, str]]:
        with Archive(db, readonly=True) as a:
            return {k: (t, m) for k, t, m in a.conn.execute(
                "SELECT key, ts_unzstd(text), mime_type FROM items WHERE parent_id IS NULL")}
    got = texts(from_warc)
    assert got == texts(fetched)
    assert any("57 bitterns" in t for t, _ in got.values())
    with Archive(from_warc, readonly=True) as a:  # each keyed by URI and capture date
        rows = a.conn.execute("SELECT http_status, source FROM captures").fetchall()
    assert len(rows) == 5 and all(s == 200 and v.startswith("site.warc.gz#") for s, v in rows)
    again = ts("run", warcs, "--archive", from_warc)  # the same WARC again: nothing to do
    assert "unchanged (skipped)  5" in again.stderr


def test_large_originals_live_beside_the_archive(tmp_path: Path) -> None:
    """--keep-originals all: files too; a large one is a file in FILE.originals, checked
    by `check`, exported, and a stray file is dropped by `gc`."""
    docs = tmp_path / "docs"
    docs.mkdir()
    noise = base64.b64encode(os.urandom(3 << 20)).decode()  # compresses to ~3 MiB
    (docs / "big.txt").write_text("marsh census\n" + noise)
    (docs / "small.txt").write_text("A small note about the bittern.")
    db = tmp_path / "a.db"
    ts("run", docs, "--archive", db, "--keep-originals", "none", "-q", check=True)
    with Archive(db, readonly=True) as a:
        assert a.conn.execute("SELECT count(*) FROM originals").fetchone()[0] == 0
    ts("run", docs, "--archive", db, "--keep-originals", "all", "--force", "-q", check=True)
    folder = tmp_path / "a.db.originals"
    files = list(folder.rglob("*.zst"))
    assert len(files) == 1
    with Archive(db, readonly=True) as a:
        rows = dict(a.conn.execute("SELECT sha256, data IS NULL FROM originals"))
    big = hashlib.sha256((docs / "big.txt").read_bytes()).hexdigest()
    assert rows == {big: 1, hashlib.sha256((docs / "small.txt").read_bytes()).hexdigest(): 0}
    assert files[0].name == f"{big}.zst"
    stats = ts("stats", "--archive", db, check=True).stdout
    assert "originals    2 kept" in stats and "in 1 file(s) beside the archive" in stats
    assert ts("check", "--archive", db).returncode == 0
    stray = folder / "ab" / ("ab" + "0" * 62 + ".zst")
    stray.parent.mkdir(exist_ok=True)
    stray.write_bytes(b"left by a killed run")
    data = bytearray(files[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    files[0].write_bytes(bytes(data))
    p = ts("check", "--archive", db)
    assert p.returncode == 1 and f"original {big[:16]}" in p.stderr
    p = ts("gc", "--archive", db, check=True)
    assert "0 unused original(s) dropped, 1 file(s) removed" in p.stderr
    assert not stray.exists() and files[0].exists()


def test_reading_room_says_the_source_is_gone(site: Site, tmp_path: Path) -> None:
    """The item page of a page that went away: the note, its captures, the kept text."""
    pytest.importorskip("selenium")
    import selenium.webdriver as webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    from test_ui import CHROMIUM, DRIVER, _serving

    if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
        pytest.skip("no Chromium")
    site.pages["/essay.html"] = Page(essay("The herons of the marsh", PARAS))
    url, db = site.url("/essay.html"), tmp_path / "a.db"
    run(url, "--archive", db)
    site.pages["/essay.html"] = Page(essay("The herons of the marsh", PARAS[:6]))
    run(url, "--archive", db)  # a second capture
    site.stop()
    run(url, "--archive", db)  # the host is gone
    item_id = _item(db, "/essay.html")["id"]
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--user-data-dir={tmp_path / 'chromium'}"):
        opts.add_argument(flag)
    d = webdriver.Chrome(options=opts, service=Service(DRIVER))
    try:
        with _serving(db) as server:
            d.get(f"{server}/items/{item_id}")
            note = d.find_element(By.ID, "source-state").text
            assert "source gone since" in note and "connection" in note
            assert "text from the capture of" in note
            caps = d.find_elements(By.CSS_SELECTOR, "section.captures li")
            assert len(caps) == 2 and all("original kept" in c.text for c in caps)
            assert "shown" in caps[1].text and "shown" not in caps[0].text
            assert PARAS[5] in d.find_element(By.CSS_SELECTOR, "section.text").text
            assert PARAS[7] not in d.find_element(By.CSS_SELECTOR, "section.text").text
    finally:
        d.quit()


def _warc(path: Path, records: list[tuple[str, str, int, bytes]]) -> None:
    """A WARC/1.1 file of response records (uri, WARC-Date, status, body), by warcio."""
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True, warc_version="1.1")
        for uri, date, status, body in records:
            http = StatusAndHeaders(f"{status} X", [("Content-Type", "text/html; charset=utf-8"),
                                                    ("Content-Length", str(len(body)))],
                                    protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(uri, "response", payload=io.BytesIO(body),
                                                length=len(body), http_headers=http,
                                                warc_headers_dict={"WARC-Date": date}))


def test_warc_records_are_captures_by_date(tmp_path: Path) -> None:
    """Records of one URI in two WARCs, given newest first: the newest is the text, the
    older joins as an earlier capture, a later 404 keeps the text; nothing is fetched
    (the host does not exist)."""
    uri = "http://archive.invalid/diary.html"
    old = essay("Marsh diary", PARAS[:3])
    new = essay("Marsh diary", [*PARAS[:3], "The spoonbills returned in May."])
    _warc(tmp_path / "b.warc.gz", [(uri, "2024-06-01T10:00:00Z", 200, new)])
    _warc(tmp_path / "a.warc.gz", [(uri, "2023-06-01T10:00:00Z", 200, old)])
    _warc(tmp_path / "c.warc.gz", [(uri, "2025-06-01T10:00:00Z", 404, b"gone")])
    db = tmp_path / "a.db"
    for name in ("b", "a", "c"):
        ts("run", tmp_path / f"{name}.warc.gz", "--archive", db, "-q")
    item = _item(db, "diary.html")
    assert "spoonbills" in item["text"]
    p = ts("show", str(item["id"]), "--archive", db, "--captures", "-f", "json", check=True)
    record = json.loads(p.stdout)
    caps = record["captures"]
    assert [c["captured_at"] for c in caps] == sorted(c["captured_at"] for c in caps)
    assert [c["current"] for c in caps] == [0, 1]
    assert all(c["source"].split("#")[0] in ("a.warc.gz", "b.warc.gz") for c in caps)
    assert record["source_state"]["error_kind"] == "http_404"
    again = ts("run", tmp_path / "a.warc.gz", "--archive", db)  # read before: nothing to do
    assert "unchanged (skipped)  1" in again.stderr


def test_reextract_says_which_originals_are_lost(site: Site, tmp_path: Path) -> None:
    """An original deleted or damaged since it was kept: reextract used to pass over its
    item as if nothing needed doing. It now says so, fails, and keeps the item's text."""
    urls = []
    for i in range(3):
        path = f"/lost/{i}.html"
        site.pages[path] = Page(essay(f"Lost note {i}", [f"Lost {i}: {p}" for p in PARAS[:3]]))
        urls.append(site.url(path))
    listing = tmp_path / "links.txt"
    listing.write_text("\n".join(urls) + "\n")
    db = tmp_path / "a.db"
    assert run(listing, "--archive", db).returncode == 0
    with Archive(db, readonly=True) as a:
        texts = dict(a.conn.execute("SELECT key, ts_unzstd(text) FROM items"))
    site.stop()
    _outdate(db)
    conn = sqlite3.connect(db)
    shas = [r[0] for r in conn.execute(
        "SELECT c.original FROM captures c JOIN items i ON i.id = c.item_id "
        "WHERE c.current ORDER BY i.key")]
    assert len(set(shas)) == 3
    conn.execute("DELETE FROM originals WHERE sha256 = ?", (shas[0],))
    conn.execute("UPDATE originals SET data = ? WHERE sha256 = ?", (b"not zstd", shas[1]))
    conn.commit()
    conn.close()
    p = ts("reextract", "--archive", db)
    assert p.returncode == 1, p.stderr
    assert "2 item(s) not re-extracted" in p.stderr and "textsieve check" in p.stderr
    assert re.search(r"^extracted +1$", p.stderr, re.M), p.stderr
    with Archive(db, readonly=True) as a:
        assert dict(a.conn.execute("SELECT key, ts_unzstd(text) FROM items")) == texts
        assert a.conn.execute("SELECT count(*) FROM items WHERE extractor_version LIKE "
                              "'0:html/0%'").fetchone()[0] == 2
