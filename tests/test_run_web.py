"""`textsieve run` over web sources, end to end against the local hostile server.

A URL list goes through the one fetcher into the archive: pages give their main content,
a PDF its text, failures their typed error; a re-run asks with the stored validators and
re-extracts nothing that did not change.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from http_server import (  # noqa: F401 - registers the http_server fixture
    ARTICLE_PHRASES,
    CP1252_WORDS,
    LATIN1_WORDS,
    PDF_TEXT,
    TestServer,
    http_server_fixture,
)
from textsieve.archive import Archive


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", "run", *map(str, args),
                           "--host-delay", "0.01", "--fetch-timeout", "20", "-j", "2",
                           "--allow-private"],
                          capture_output=True, text=True, timeout=180, check=False)


def _items(db: Path) -> dict[str, dict[str, object]]:
    with Archive(db, readonly=True) as a:
        out = {}
        for (iid, original) in a.conn.execute(
                "SELECT id, original FROM items WHERE parent_id IS NULL"):
            doc = a.document(iid)
            assert doc is not None
            out[original] = {"status": str(doc.status), "kind": str(doc.error.kind)
                             if doc.error else None, "text": doc.full_text(),
                             "mime": doc.mime_type, "extra": doc.metadata.extra}
        return out


def _counts(db: Path) -> dict[str, int]:
    with Archive(db, readonly=True) as a:
        return json.loads(a.conn.execute(
            "SELECT counts FROM runs ORDER BY id DESC LIMIT 1").fetchone()[0])


def test_url_list_into_the_archive(http_server: TestServer, tmp_path: Path) -> None:
    tok = f"?token={tmp_path.name}"
    urls = {name: http_server.url(path) for name, path in {
        "article": "/article.html", "pdf": "/doc.pdf", "fake_pdf": "/pdf-but-html.pdf",
        "pdf_as_text": "/wrong-type/pdf", "missing": "/404", "loop": "/loop-a",
        "latin1": "/latin1", "cp1252": "/nodecl-cp1252", "flaky": f"/flaky{tok}",
        "busy": f"/busy{tok}", "etag": "/etag", "chain": "/redirect/3",
    }.items()}
    listing = tmp_path / "links.txt"
    listing.write_text("# my reading list\n" + "\n".join(urls.values()) + "\n")
    db = tmp_path / "web.db"

    p = _run(listing, "--archive", db)
    assert p.returncode == 1, p.stderr  # the 404 and the loop failed
    assert "Traceback" not in p.stderr
    items = _items(db)
    assert set(items) == set(urls.values())
    art = items[urls["article"]]
    assert art["status"] == "ok" and all(ph in art["text"] for ph in ARTICLE_PHRASES)
    # main content by default for web pages: banner, navigation, comments, footer gone
    for junk in ("Accept all cookies", "Subscribe", "First! Great article", "Privacy policy"):
        assert junk not in art["text"], junk
    assert art["extra"]["http_status"] == 200
    assert PDF_TEXT in items[urls["pdf"]]["text"]
    assert items[urls["pdf"]]["mime"] == "application/pdf"
    assert items[urls["fake_pdf"]]["mime"] == "text/html"  # what was served decides
    assert PDF_TEXT in items[urls["pdf_as_text"]]["text"]
    assert items[urls["missing"]]["kind"] == "http_404"
    assert items[urls["loop"]]["kind"] == "redirect_loop"
    assert LATIN1_WORDS in items[urls["latin1"]]["text"]
    assert CP1252_WORDS in items[urls["cp1252"]]["text"]
    for name in ("flaky", "busy", "chain"):  # retried / followed, then read
        assert items[urls[name]]["status"] == "ok", (name, items[urls[name]])
        assert ARTICLE_PHRASES[0] in items[urls[name]]["text"]
    assert items[urls["chain"]]["extra"]["final_url"].endswith("/article.html")

    # A re-run fetches again (conditionally where it can) and extracts nothing new.
    before = {p: http_server.count(p) for p in ("/etag", "/404", "/article.html")}
    p = _run(listing, "--archive", db)
    assert "Traceback" not in p.stderr
    counts = _counts(db)
    assert counts["extracted"] == 0 and counts["skipped"] == len(urls), counts
    assert http_server.count("/404") == before["/404"]  # a settled failure: not asked again
    assert http_server.count("/article.html") > before["/article.html"]  # pages are
    assert http_server.count("/etag") == before["/etag"] + 1
    etag_req = http_server.requests("/etag")[-1]
    assert etag_req.headers.get("if-none-match")  # ... and /etag answered 304
    p = _run(listing, "--archive", db, "--retry-errors")
    assert _counts(db)["extracted"] == 2


def test_one_url_and_a_csv(http_server: TestServer, tmp_path: Path) -> None:
    db = tmp_path / "one.db"
    p = _run(http_server.url("/article.html"), "--archive", db)
    assert p.returncode == 0, p.stderr
    csv = tmp_path / "reading.csv"
    csv.write_text("title,url\nBridges," + http_server.url("/article.html")
                   + "?utm_source=mail\nReport," + http_server.url("/doc.pdf") + "\n")
    p = _run(csv, "--archive", db)
    assert p.returncode == 0, p.stderr
    items = _items(db)
    # the tracking parameter does not make a second item: one normal form per page
    assert len(items) == 2
    assert any(PDF_TEXT in v["text"] for v in items.values())
