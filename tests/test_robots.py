"""robots.txt is read (once per host, through the same guarded fetcher) and honoured for
every URL and redirect hop, with RFC 9309's answers to a missing or failing file, a
Crawl-delay that slows us down, and --ignore-robots for one's own sites.

The site is a small server on 127.0.0.1 (opened with ``allow_private``) whose robots.txt
each test sets.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from textsieve.archive import Archive
from textsieve.fetch import Fetcher, FetchResult
from textsieve.model import ErrorKind
from textsieve.options import Options

FAST = {"allow_private": True, "per_host_delay": 0.0, "retries": 0, "fetch_timeout": 10.0}
PAGE = b"<html><head><title>A page</title></head><body><p>Words about herons.</p></body></html>"


@dataclass
class _Site:
    robots: tuple[int, bytes] = (404, b"")
    seen: list[tuple[str, str, float]] = field(default_factory=list)  # path, UA, time


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        site: _Site = self.server.site  # type: ignore[attr-defined]
        site.seen.append((self.path, self.headers.get("User-Agent", ""), time.monotonic()))
        parts = urlsplit(self.path)
        if parts.path == "/robots.txt":
            status, body = site.robots
        elif parts.path == "/moved-robots.txt":
            status, body = 200, b"User-agent: *\nDisallow: /private\n"
        elif parts.path == "/to":
            self.send_response(302)
            self.send_header("Location", parse_qs(parts.query)["u"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        else:
            status, body = 200, PAGE
        if status in (301, 302):
            self.send_response(status)
            self.send_header("Location", body.decode())
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if "robots" in parts.path else "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[tuple[str, _Site]]:
    """A fresh site per test (a robots.txt is cached per host and port)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.site = _Site()  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True,
                     kwargs={"poll_interval": 0.05}).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", httpd.site  # type: ignore[attr-defined]
    httpd.shutdown()
    httpd.server_close()


def _fetch_all(urls: list[str], **options: object) -> list[FetchResult]:
    with Fetcher(Options().with_(**{**FAST, **options})) as f:
        return [f.fetch(u) for u in urls]


def _paths(site: _Site) -> list[str]:
    return [p for p, _, _ in site.seen]


def _kind(r: FetchResult) -> ErrorKind | None:
    return r.error.kind if r.error else None


def test_disallowed_path_is_not_fetched_and_robots_is_read_once(
        site: tuple[str, _Site]) -> None:
    base, s = site
    s.robots = (200, b"User-agent: *\nDisallow: /private\n")
    private, public, _ = _fetch_all([f"{base}/private/x", f"{base}/public/x",
                                     f"{base}/public/y"])
    assert _kind(private) is ErrorKind.ROBOTS_DISALLOWED and private.content is None
    assert "--ignore-robots" in private.error.message  # type: ignore[union-attr]
    assert public.ok and public.content == PAGE
    assert _paths(s) == ["/robots.txt", "/public/x", "/public/y"]
    assert "textsieve" in s.seen[0][1]  # the robots request names us too


@pytest.mark.parametrize(("robots", "path", "allowed"), [
    (b"User-agent: textsieve\nDisallow: /\n\nUser-agent: *\nAllow: /\n", "/a", False),
    (b"User-agent: otherbot\nDisallow: /\n", "/a", True),
    (b"User-agent: *\nDisallow: /*.pdf$\n", "/report.pdf", False),
    (b"User-agent: *\nDisallow: /*.pdf$\n", "/report.pdf.html", True),
    (b"User-agent: *\nDisallow: /\nAllow: /open/\n", "/open/page", True),
    (b"User-agent: *\nDisallow: /\nAllow: /open/\n", "/closed", False),
    (b"\xff\xfe garbage \x00\nDisallow /x\n", "/x", True),
])
def test_rules_for_our_token_and_wildcards(site: tuple[str, _Site], robots: bytes, path: str,
                                           allowed: bool) -> None:
    base, s = site
    s.robots = (200, robots)
    [r] = _fetch_all([base + path])
    assert r.ok is allowed, r.error
    assert (path in _paths(s)) is allowed


@pytest.mark.parametrize(("status", "allowed"), [(404, True), (410, True), (403, True),
                                                 (500, False), (503, False)])
def test_missing_robots_allows_all_and_a_failing_one_disallows_all(
        site: tuple[str, _Site], status: int, allowed: bool) -> None:
    base, s = site
    s.robots = (status, b"User-agent: *\nDisallow: /\n")  # the body of an error is no rule
    [r] = _fetch_all([f"{base}/page"])
    assert r.ok is allowed, r.error
    if not allowed:
        assert _kind(r) is ErrorKind.ROBOTS_DISALLOWED and "/page" not in _paths(s)


def test_a_redirected_robots_is_followed(site: tuple[str, _Site]) -> None:
    base, s = site
    s.robots = (301, b"/moved-robots.txt")
    private, public = _fetch_all([f"{base}/private/1", f"{base}/public/1"])
    assert _kind(private) is ErrorKind.ROBOTS_DISALLOWED and public.ok


def test_every_redirect_hop_is_checked(site: tuple[str, _Site]) -> None:
    base, s = site
    s.robots = (200, b"User-agent: *\nDisallow: /private\n")
    [r] = _fetch_all([f"{base}/to?u=/private/secret"])
    assert _kind(r) is ErrorKind.ROBOTS_DISALLOWED
    assert "/private/secret" not in _paths(s)


def test_ignore_robots_reads_no_robots(site: tuple[str, _Site]) -> None:
    base, s = site
    s.robots = (200, b"User-agent: *\nDisallow: /\n")
    [r] = _fetch_all([f"{base}/private/x"], obey_robots=False)
    assert r.ok and _paths(s) == ["/private/x"]


def test_crawl_delay_spaces_requests(site: tuple[str, _Site]) -> None:
    base, s = site
    s.robots = (200, b"User-agent: *\nCrawl-delay: 0.6\n")
    assert all(r.ok for r in _fetch_all([f"{base}/a", f"{base}/b"]))
    times = {p: t for p, _, t in s.seen}
    assert times["/b"] - times["/a"] >= 0.55


def test_a_huge_crawl_delay_is_capped(site: tuple[str, _Site]) -> None:
    base, s = site
    s.robots = (200, b"User-agent: *\nCrawl-delay: 3600\n")
    results = _fetch_all([f"{base}/a", f"{base}/b"], max_crawl_delay=0.3)
    assert all(r.ok for r in results)  # an hour was not waited: the cap applied
    times = {p: t for p, _, t in s.seen}
    assert times["/b"] - times["/a"] >= 0.25


def test_user_agent_names_textsieve_and_the_contact_url(site: tuple[str, _Site]) -> None:
    base, s = site
    _fetch_all([f"{base}/a"], contact_url="https://me.example/about-my-crawler")
    agents = {ua for _, ua, _ in s.seen}
    assert len(agents) == 1
    [ua] = agents
    assert "textsieve" in ua and "https://me.example/about-my-crawler" in ua


def test_run_records_robots_disallowed_and_ignore_robots_fetches(
        site: tuple[str, _Site], tmp_path: Path) -> None:
    base, s = site
    s.robots = (200, b"User-agent: *\nDisallow: /private\n")
    db = tmp_path / "r.db"

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "textsieve", "run", f"{base}/private/page", "--archive",
             str(db), "--allow-private", "--host-delay", "0", "-j", "1", *extra],
            capture_output=True, text=True, timeout=120, check=False)

    p = run()
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    with Archive(db, readonly=True) as a:
        [(iid,)] = a.conn.execute("SELECT id FROM items").fetchall()
        doc = a.document(iid)
        assert doc is not None and doc.error is not None
        assert doc.error.kind is ErrorKind.ROBOTS_DISALLOWED
    p = run("--ignore-robots", "--retry-errors")
    assert p.returncode == 0, p.stderr
    with Archive(db, readonly=True) as a:
        doc = a.document(iid)
        assert doc is not None and doc.error is None and "herons" in doc.text
        # robots.txt itself is never an item
        assert a.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 1
