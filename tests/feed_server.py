"""A small web site on 127.0.0.1 whose pages a test sets and changes: feeds, articles.

Every page is served with an ETag (its hash) and a Last-Modified (when it was set), and
answered 304 to a request whose If-None-Match or If-Modified-Since matches, as a real
server does; every request is recorded with its headers, so a test sees which
validators a conditional GET sent and what was answered.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass(frozen=True)
class Hit:
    path: str
    headers: dict[str, str]
    status: int


class FeedSite:
    def __init__(self) -> None:
        self.pages: dict[str, tuple[bytes, str, str]] = {}  # path -> body, type, modified
        self.delays: dict[str, float] = {}  # path -> seconds to wait before answering
        self.down: set[str] = set()  # paths answered 503 for now (their server is down)
        self.hits: list[Hit] = []  # answered requests
        self.arrived: list[str] = []  # paths asked for, as they arrive
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                with site.lock:
                    site.arrived.append(path)
                    page = site.pages.get(path)
                if path in site.down:
                    return self._answer(path, 503, b"down for now", "text/plain")
                if page is None:
                    return self._answer(path, 404, b"not here", "text/plain")
                body, ctype, modified = page
                if site.delays.get(path):
                    time.sleep(site.delays[path])
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                if self.headers.get("If-None-Match") == etag or (
                        "If-None-Match" not in self.headers
                        and self.headers.get("If-Modified-Since") == modified):
                    return self._answer(path, 304, b"", ctype, etag, modified)
                return self._answer(path, 200, body, ctype, etag, modified)

            def _answer(self, path: str, status: int, body: bytes, ctype: str,
                        etag: str | None = None, modified: str | None = None) -> None:
                with site.lock:
                    site.hits.append(Hit(path, dict(self.headers.items()), status))
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                if etag:
                    self.send_header("ETag", etag)
                if modified:
                    self.send_header("Last-Modified", modified)
                if status != 304:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if status != 304:
                    self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return self.base + path

    def set(self, path: str, body: bytes | str, ctype: str = "text/html; charset=utf-8",
            *, when: float | None = None, delay: float = 0.0) -> None:
        data = body.encode() if isinstance(body, str) else body
        with self.lock:
            self.delays[path] = delay
            self.pages[path] = (data, ctype, formatdate(when or time.time(), usegmt=True))

    def requests(self, path: str) -> list[Hit]:
        with self.lock:
            return [h for h in self.hits if h.path == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(name="feed_site")
def feed_site_fixture() -> Iterator[FeedSite]:
    site = FeedSite()
    try:
        yield site
    finally:
        site.close()
