"""A small web site on 127.0.0.1 whose pages a test can change, remove, and take down.

Link rot as a reader meets it: a page is archived, later it answers 404 (or shrinks to a
cookie wall), then the whole host is gone. ``Site`` serves a dict of pages (path ->
``Page``) from a real HTTP server in a thread, answers conditional GETs with 304 from the
ETag, counts every request, and ``stop()`` closes the port for good (a later fetch is
refused: ``connection``). Used by the link-rot, re-extraction and WARC tests and by
``bench/bench_originals.py``.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Page:
    body: bytes
    status: int = 200
    ctype: str = "text/html; charset=utf-8"


def essay(title: str, paragraphs: list[str]) -> bytes:
    """An article page with the furniture main-content extraction must drop."""
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}"
            f"</title></head><body><nav><a href='/'>Home</a> <a href='/about'>About</a></nav>"
            f"<main><article><h1>{title}</h1>\n{body}\n</article></main>"
            f"<footer>© The site, all rights reserved</footer></body></html>").encode()


class Site:
    def __init__(self) -> None:
        self.pages: dict[str, Page] = {}
        self.hits: dict[str, int] = {}
        self._lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                with site._lock:
                    site.hits[path] = site.hits.get(path, 0) + 1
                    page = site.pages.get(path)
                if page is None:
                    page = Page(b"<html><body><h1>Not found</h1></body></html>", 404)
                etag = '"' + hashlib.sha256(page.body).hexdigest()[:16] + '"'
                if page.status == 200 and self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(page.status)
                self.send_header("Content-Type", page.ctype)
                self.send_header("Content-Length", str(len(page.body)))
                self.send_header("Date", formatdate(usegmt=True))
                if page.status == 200:
                    self.send_header("ETag", etag)
                self.end_headers()
                self.wfile.write(page.body)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:
                pass  # a client that hangs up early (a fetch's deadline) is no news

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        self.running = True

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def requests(self) -> int:
        with self._lock:
            return sum(self.hits.values())

    def stop(self) -> None:
        """Take the host down: the port is closed, every later fetch is refused."""
        if self.running:
            self._server.shutdown()
            self._server.server_close()
            self.running = False
