"""Hostile URLs at every entry point: a malformed URL is one typed ``bad_url`` record (the run
goes on, and so does the next one), IPv6 literals keep their brackets, and credentials
in a URL never reach the archive nor the wire.

Everything runs against the local server of tests/http_server.py (127.0.0.1, opened with
``--allow-private``) or against addresses that fail before any packet leaves the machine.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from http_server import (  # noqa: F401 - registers the http_server fixture
    ARTICLE_PHRASES,
    TestServer,
    http_server_fixture,
)
from textsieve.archive import Archive
from textsieve.fetch import Fetcher
from textsieve.links import BadUrl, normalize_url
from textsieve.model import ErrorKind
from textsieve.options import Options
from textsieve.sources.urls import url_item

BAD_PORT = "http://example.com:99999/x"
BAD_V6 = "http://[2001:db8::1/a"  # no closing bracket


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", "run", *map(str, args),
                           "--host-delay", "0", "--fetch-timeout", "20", "-j", "1",
                           "--allow-private"],
                          capture_output=True, text=True, timeout=180, check=False)


def _rows(db: Path) -> dict[str, tuple[str, str | None, str]]:
    """original -> (key, error kind, everything stored about it as text)."""
    with Archive(db, readonly=True) as a:
        out = {}
        for iid, key, original in a.conn.execute(
                "SELECT id, key, original FROM items WHERE parent_id IS NULL"):
            doc = a.document(iid)
            assert doc is not None
            out[original] = (key, str(doc.error.kind) if doc.error else None,
                             repr(doc.to_dict()))
        return out


@pytest.mark.parametrize(("url", "want"), [
    ("http://[2001:DB8::0:1]/a", "http://[2001:db8::1]/a"),
    ("https://[::1]:8443/x?b=2&a=1", "https://[::1]:8443/x?a=1&b=2"),
    ("http://[::ffff:127.0.0.1]:80/", "http://[::ffff:7f00:1]/"),
    ("http://user:secret@Example.COM/p", "http://example.com/p"),
    ("https://user@example.com:443/", "https://example.com/"),
])
def test_normal_form_keeps_ipv6_brackets_and_drops_credentials(url: str, want: str) -> None:
    assert normalize_url(url) == want
    assert normalize_url(want) == want  # a fixed point: a re-run finds the same key


@pytest.mark.parametrize("url", [BAD_PORT, BAD_V6, "http://[zz::1]/", "http:///no-host",
                                 "http://host:port/"])
def test_malformed_urls_raise_a_typed_error_and_still_make_an_item(url: str) -> None:
    with pytest.raises(BadUrl):
        normalize_url(url)
    item = url_item(url, "urls:test")  # never raises: the item carries the bad URL on
    assert item.key == url and item.url == url


def test_credentials_are_stripped_from_key_original_and_url() -> None:
    item = url_item("http://alice:hunter2@example.com:99999/x", "urls:test")
    for value in (item.key, item.original, item.url):
        assert "hunter2" not in (value or "") and "alice" not in (value or "")
    item = url_item("https://alice:hunter2@example.com/a", "urls:test")
    assert (item.key, item.original) == ("https://example.com/a", "https://example.com/a")


@pytest.mark.parametrize("url", [BAD_PORT, BAD_V6, "http:///no-host"])
def test_fetcher_types_a_malformed_url_as_bad_url(url: str) -> None:
    with Fetcher(Options(allow_private=True)) as f:
        r = f.fetch(url)
    assert r.error is not None and r.error.kind is ErrorKind.BAD_URL and r.attempts == 0


class _Redirector(BaseHTTPRequestHandler):
    """Every path redirects to what follows ``/to/`` (taken verbatim, however broken)."""

    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(302)
        self.send_header("Location", self.path.removeprefix("/to/"))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def redirector() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Redirector)
    threading.Thread(target=httpd.serve_forever, daemon=True,
                     kwargs={"poll_interval": 0.05}).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("location", [BAD_PORT, BAD_V6])
def test_a_malformed_redirect_location_is_bad_url(redirector: str, location: str) -> None:
    with Fetcher(Options(allow_private=True, per_host_delay=0, retries=0)) as f:
        r = f.fetch(f"{redirector}/to/{location}")
    assert r.error is not None and r.error.kind is ErrorKind.BAD_URL, r.error
    assert r.attempts == 1  # not retried: it will not get better


def test_a_redirect_never_carries_credentials(redirector: str, http_server: TestServer) -> None:
    target = http_server.url("/article.html?token=creds-in-location")
    with Fetcher(Options(allow_private=True, per_host_delay=0, retries=0)) as f:
        r = f.fetch(f"{redirector}/to/" + target.replace("http://", "http://eve:pw@"))
    assert r.ok, r.error
    assert "pw@" not in r.final_url and all("pw@" not in u for u in r.redirects)
    [seen] = http_server.requests("/article.html", "creds-in-location")
    assert "authorization" not in seen.headers


def test_credentials_are_never_sent(http_server: TestServer) -> None:
    url = http_server.url("/article.html?token=creds-never-sent")
    with Fetcher(Options(allow_private=True, per_host_delay=0)) as f:
        r = f.fetch(url.replace("http://", "http://alice:hunter2@"))
    assert r.ok, r.error
    assert "hunter2" not in r.url and "hunter2" not in r.final_url
    [seen] = http_server.requests("/article.html", "creds-never-sent")
    assert "authorization" not in seen.headers


def test_url_list_with_bad_urls_runs_on_and_reruns(http_server: TestServer,
                                                   tmp_path: Path) -> None:
    good = http_server.url("/article.html")
    secret = good.replace("http://", "http://alice:hunter2@") + "?token=creds"
    listing = tmp_path / "links.txt"
    listing.write_text("\n".join([BAD_PORT, good, BAD_V6, secret]) + "\n")
    table = tmp_path / "reading.csv"
    table.write_text(f"title,url\nbad port,{BAD_PORT}\nbad host,http://host:port/x\n")
    db = tmp_path / "a.db"
    for run in range(2):  # the second run must not die on the same lines either
        p = _run(listing, table, "--archive", db)
        # the first run records the failures (exit 1); the second leaves them settled
        assert p.returncode == (1 if run == 0 else 0), p.stderr
        assert "Traceback" not in p.stderr and "items seen           6" in p.stderr
        rows = _rows(db)
        assert rows[BAD_PORT][1] == "bad_url" and rows[BAD_V6][1] == "bad_url"
        assert rows["http://host:port/x"][1] == "bad_url"
        assert rows[good][1] is None
        assert ARTICLE_PHRASES[0] in rows[good][2]
        stored = repr(rows)
        assert "hunter2" not in stored and "alice" not in stored


def test_mailed_bad_and_ipv6_links_become_records(tmp_path: Path) -> None:
    mbox = tmp_path / "links.mbox"
    mbox.write_text(
        "From me@example.org Mon Jan  1 00:00:00 2024\n"
        "From: me@example.org\nTo: me@example.org\nSubject: links\n"
        "Message-ID: <bad-links@example.org>\nDate: Mon, 1 Jan 2024 00:00:00 +0000\n"
        "Content-Type: text/plain; charset=utf-8\n\n"
        f"a bad port {BAD_PORT}\nan IPv6 host http://[::1]:9/a\n"
        "a password http://bob:s3cr3t@[::1]:9/b\n\n")
    db = tmp_path / "m.db"
    p = _run(f"mbox:{mbox}", "--archive", db, "--fetch-timeout", "5")
    assert "Traceback" not in p.stderr and p.returncode == 1, p.stderr
    with Archive(db, readonly=True) as a:
        keys = {k for (k,) in a.conn.execute("SELECT key FROM items")}
    assert keys == {BAD_PORT, "http://[::1]:9/a", "http://[::1]:9/b"}
    rows = _rows(db)
    assert rows[BAD_PORT][1] == "bad_url"
    assert "s3cr3t" not in repr(rows) and "bob" not in repr(rows)
