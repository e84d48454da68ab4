"""A hostile little web server on 127.0.0.1 for fetch, source and runner tests.

Import the fixture into a test module (``from http_server import http_server_fixture``,
which registers the fixture ``http_server``) and ask it for URLs:
``http_server.url("/article.html")``. Every request is recorded (path, headers, arrival
time) so a test can assert that retries happened, that a Retry-After was waited
for, that requests to one host were spaced, and which validators a conditional GET sent.

Routes (``?token=...`` makes a stateful route fresh for one test):

=====================  ===================================================================
/article.html          UTF-8 article page with navigation, cookie banner, comments, footer
/doc.pdf               a small real PDF (reportlab), application/pdf
/pdf-but-html.pdf      an HTML page behind a .pdf URL, served as text/html
/wrong-type            HTML served as application/octet-stream (also /wrong-type/html)
/wrong-type/pdf        a PDF served as text/plain
/redirect/N            a chain of N redirects (alternately relative and absolute Location,
                       301/302/303/307/308 in turn) ending at /article.html
/loop-a, /loop-b       redirect to each other
/redirect-file         redirects to file:///etc/passwd (must be refused)
/404, /410             not found / gone
/status/NNN            always answers NNN (e.g. /status/503, /status/403)
/flaky                 500 on the first request per token, then the article
/busy                  429 with Retry-After: 1 on the first request per token, then the article
/busy-date             same, with Retry-After as an HTTP-date 2 s ahead
/busy-long             429 with Retry-After: 3600, always
/slow-drip             chunked, one byte every 0.5 s, for at most 30 s
/endless               chunked, 64 KiB chunks as fast as possible, for at most 15 s
/stall?s=N             sends nothing at all for N s (at most 10), then the article
/stall-body?s=N        headers and a few bytes, then silence for N s (at most 10)
/sleep?ms=N            waits N ms, then answers; the server records peak concurrency
/latin1                ISO-8859-1 page, charset in the Content-Type header only
/latin1-meta           ISO-8859-1 page, charset only in <meta charset>
/nodecl-cp1252         windows-1252 page, no declaration anywhere (text/html, no charset)
/gzip                  the article gzip-encoded (when the client accepts gzip)
/zstd                  the article zstd-encoded (when the client accepts zstd)
/deflate-raw           the article as raw deflate (no zlib wrapper), Content-Encoding: deflate
/bad-gzip              Content-Encoding: gzip over bytes that are not gzip
/zstd-bomb             ~16 KB of zstd that inflates to 512 MiB
/etag                  ETag + Last-Modified; 304 on a matching If-None-Match/If-Modified-Since
=====================  ===================================================================

Every loop is bounded in time and stops when the server stops, so nothing outlives a test.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

ARTICLE_TITLE = "How the river town kept its bridges"
ARTICLE_PHRASES = [
    "The old stone bridge over the Lune was built in 1788",
    "Engineers from Zürich surveyed every arch — twice",
    "The council’s decision surprised no one",
]
ARTICLE_HTML = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{ARTICLE_TITLE} | The Valley Post</title>
<meta name="author" content="Ada Byrne">
<meta property="og:site_name" content="The Valley Post">
<meta property="article:published_time" content="2024-03-05T08:00:00Z">
<link rel="canonical" href="https://example.org/news/bridges">
</head><body>
<div id="cookie-banner">We use cookies to improve your experience. Accept all cookies</div>
<header><nav><a href="/">Home</a> <a href="/news">News</a> <a href="/sport">Sport</a>
<a href="/weather">Weather</a> <a href="/subscribe">Subscribe</a></nav></header>
<main><article>
<h1>{ARTICLE_TITLE}</h1>
<p class="byline">By Ada Byrne, 5 March 2024</p>
<p>{ARTICLE_PHRASES[0]}, and it has carried carts, cattle and cars ever since. Its five
arches were cut from the hillside quarry that still scars the valley above the town.</p>
<p>{ARTICLE_PHRASES[1]}, and found the mortar sound though the parapets leaned.
Repairs would take a summer and cost less than a new crossing downstream.</p>
<h2>A vote in the town hall</h2>
<p>{ARTICLE_PHRASES[2]}: the bridge stays, the lorries go, and the footpath on the
western side will be widened for the school children who cross it every morning.</p>
</article>
<section class="comments"><h3>Comments</h3><p>First! Great article.</p></section>
</main>
<footer><p>© 2024 The Valley Post. All rights reserved. Privacy policy. Terms.</p></footer>
</body></html>
"""

LATIN1_WORDS = "Über die Brücke gehen Mädchen und Jungen; Café, crème brûlée, señor"
LATIN1_HTML = (
    "<!DOCTYPE html><html><head><title>Grüße aus Köln</title></head><body>"
    f"<h1>Grüße aus Köln</h1><p>{LATIN1_WORDS}.</p>"
    "<p>Die Straße am Fluß ist schön im Frühling, sagt die Bäckerin.</p></body></html>"
)
LATIN1_META_HTML = LATIN1_HTML.replace(
    "<head>", '<head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'
)
CP1252_WORDS = "“Smart quotes” cost €5 – naïve façade"
CP1252_HTML = (
    "<!DOCTYPE html><html><head><title>Prices</title></head><body>"
    f"<h1>Prices in the café</h1><p>{CP1252_WORDS}. Déjà vu, résumé, coöperate.</p>"
    "<p>The menu says “soupe à l’oignon” — €7.50 — and ‘crêpes’ for dessert.</p>"
    "</body></html>"
)
PDF_TEXT = "Quarterly river levels report"
BOMB_MIB = 512

_LOOP_LIMIT_DRIP = 30.0
_LOOP_LIMIT_ENDLESS = 15.0
_LOOP_LIMIT_STALL = 10.0


def make_pdf(text: str = PDF_TEXT) -> bytes:
    """A small real PDF with one line of text (reportlab), so extractors have work to do."""
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf)
    c.setTitle(text)
    c.drawString(72, 720, text)
    c.drawString(72, 700, "Levels rose by 12 centimetres in March.")
    c.showPage()
    c.save()
    return buf.getvalue()


@dataclass
class Seen:
    """One request as the server saw it."""

    path: str  # path without the query
    query: dict[str, str]
    headers: dict[str, str]  # header names lower-case
    at: float  # time.monotonic() on arrival


@dataclass
class _State:
    requests: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    in_flight: int = 0
    peak: int = 0
    pdf: bytes | None = None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: object) -> None:
        pass

    # -- helpers ---------------------------------------------------------------------
    def _send(self, status: int, body: bytes = b"", ctype: str | None = "text/html; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _redirect(self, status: int, location: str) -> None:
        self._send(status, b"", None, {"Location": location})

    def _chunked(self, pieces: Iterator[bytes], ctype: str) -> None:
        """Stream ``pieces`` with chunked encoding; a client hanging up just ends it."""
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        try:
            for piece in pieces:
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass

    def _first_for_token(self, path: str, token: str) -> bool:
        st = self.server.state
        with st.lock:
            n = sum(1 for r in st.requests if r.path == path and r.query.get("token") == token)
        return n == 1

    # -- routes ----------------------------------------------------------------------
    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        path = parts.path
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        st = self.server.state
        with st.lock:
            st.requests.append(Seen(path, query, {k.lower(): v for k, v in self.headers.items()},
                                    time.monotonic()))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._route(path, query)

    def _route(self, path: str, query: dict[str, str]) -> None:
        st = self.server.state
        token = query.get("token", "")
        article = ARTICLE_HTML.encode("utf-8")
        accept = self.headers.get("Accept-Encoding", "").lower()
        if path == "/article.html":
            self._send(200, article)
        elif path == "/doc.pdf":
            self._send(200, self.server.pdf(), "application/pdf")
        elif path == "/pdf-but-html.pdf":
            self._send(200, article, "text/html; charset=utf-8")
        elif path in ("/wrong-type", "/wrong-type/html"):
            self._send(200, article, "application/octet-stream")
        elif path == "/wrong-type/pdf":
            self._send(200, self.server.pdf(), "text/plain")
        elif path.startswith("/redirect/"):
            n = int(path.rsplit("/", 1)[1] or 0)
            if n <= 0:
                self._redirect(302, "/article.html")
                return
            codes = (301, 302, 303, 307, 308)
            nxt = f"/redirect/{n - 1}" if n > 1 else "/article.html"
            if n % 2:  # relative Location, resolved against the current URL
                nxt = nxt.rsplit("/", 1)[1] if n > 1 else "../article.html"
            else:
                nxt = f"http://127.0.0.1:{self.server.server_address[1]}{nxt}"
            self._redirect(codes[n % len(codes)], nxt)
        elif path == "/loop-a":
            self._redirect(302, "/loop-b")
        elif path == "/loop-b":
            self._redirect(301, "/loop-a")
        elif path == "/redirect-file":
            self._redirect(302, "file:///etc/passwd")
        elif path == "/404":
            self._send(404, b"<html><body><h1>Not Found</h1></body></html>")
        elif path == "/410":
            self._send(410, b"<html><body><h1>Gone</h1></body></html>")
        elif path.startswith("/status/"):
            code = int(path.rsplit("/", 1)[1])
            self._send(code, f"<html><body>status {code}</body></html>".encode())
        elif path == "/flaky":
            if self._first_for_token(path, token):
                self._send(500, b"<html><body>Internal Server Error</body></html>")
            else:
                self._send(200, article)
        elif path in ("/busy", "/busy-date"):
            if self._first_for_token(path, token):
                after = "1" if path == "/busy" else formatdate(time.time() + 2, usegmt=True)
                self._send(429, b"slow down", "text/plain", {"Retry-After": after})
            else:
                self._send(200, article)
        elif path == "/busy-long":
            self._send(429, b"slow down", "text/plain", {"Retry-After": "3600"})
        elif path == "/slow-drip":
            def drip() -> Iterator[bytes]:
                end = time.monotonic() + _LOOP_LIMIT_DRIP
                yield b"<html><body><p>"
                while time.monotonic() < end and not st.stopping.is_set():
                    time.sleep(0.5)
                    yield b"a"
            self._chunked(drip(), "text/html; charset=utf-8")
        elif path == "/endless":
            def flood() -> Iterator[bytes]:
                end = time.monotonic() + _LOOP_LIMIT_ENDLESS
                block = b"<p>" + b"endless " * 8190 + b"</p>\n"
                while time.monotonic() < end and not st.stopping.is_set():
                    yield block
            self._chunked(flood(), "text/html; charset=utf-8")
        elif path == "/stall":
            st.stopping.wait(min(float(query.get("s", _LOOP_LIMIT_STALL)), _LOOP_LIMIT_STALL))
            self._send(200, article)
        elif path == "/stall-body":
            def stall() -> Iterator[bytes]:
                yield b"<html><body><p>first words, then silence"
                st.stopping.wait(min(float(query.get("s", _LOOP_LIMIT_STALL)),
                                     _LOOP_LIMIT_STALL))
                yield b"</p></body></html>"
            self._chunked(stall(), "text/html; charset=utf-8")
        elif path == "/sleep":
            with st.lock:
                st.in_flight += 1
                st.peak = max(st.peak, st.in_flight)
            try:
                st.stopping.wait(min(int(query.get("ms", "200")), 5000) / 1000)
            finally:
                with st.lock:
                    st.in_flight -= 1
            self._send(200, b"<html><body><p>slept</p></body></html>")
        elif path == "/latin1":
            self._send(200, LATIN1_HTML.encode("iso-8859-1"), "text/html; charset=ISO-8859-1")
        elif path == "/latin1-meta":
            self._send(200, LATIN1_META_HTML.encode("iso-8859-1"), "text/html")
        elif path == "/nodecl-cp1252":
            self._send(200, CP1252_HTML.encode("cp1252"), "text/html")
        elif path == "/gzip":
            if "gzip" in accept:
                self._send(200, gzip.compress(article), headers={"Content-Encoding": "gzip",
                                                                 "Vary": "Accept-Encoding"})
            else:
                self._send(200, article)
        elif path == "/zstd":
            import zstandard

            if "zstd" in accept:
                self._send(200, zstandard.ZstdCompressor().compress(article),
                           headers={"Content-Encoding": "zstd"})
            else:
                self._send(200, article)
        elif path == "/deflate-raw":  # raw deflate without the zlib wrapper, as IIS sends it
            c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
            self._send(200, c.compress(article) + c.flush(),
                       headers={"Content-Encoding": "deflate"})
        elif path == "/bad-gzip":
            self._send(200, b"\x1f\x8b\x08\x00 this is not gzip at all",
                       headers={"Content-Encoding": "gzip"})
        elif path == "/zstd-bomb":
            self._send(200, zstd_bomb(), headers={"Content-Encoding": "zstd"})
        elif path == "/etag":
            etag, modified = '"v1-article"', "Tue, 05 Mar 2024 08:00:00 GMT"
            inm = self.headers.get("If-None-Match")
            ims = self.headers.get("If-Modified-Since")
            if (inm is not None and etag in [t.strip() for t in inm.split(",")]) or \
                    (inm is None and ims == modified):
                self._send(304, b"", None, {"ETag": etag, "Last-Modified": modified})
            else:
                self._send(200, article, headers={"ETag": etag, "Last-Modified": modified})
        else:
            self._send(404, b"<html><body>no such route</body></html>")


def zstd_bomb(mib: int = BOMB_MIB) -> bytes:
    """~16 KB of zstd that inflates to ``mib`` MiB of zeros."""
    import zstandard

    c = zstandard.ZstdCompressor(level=3).compressobj()
    zeros = bytes(1 << 20)
    return b"".join(c.compress(zeros) for _ in range(mib)) + c.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = _State()

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients hanging up (timeouts, size caps, a TLS hello) are the point, not news."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]

    def pdf(self) -> bytes:
        with self.state.lock:
            if self.state.pdf is None:
                self.state.pdf = make_pdf()
            return self.state.pdf


class TestServer:
    """Handle on a running server: URLs, and what it was asked."""

    __test__ = False  # not a test class, despite the name

    def __init__(self) -> None:
        self._httpd = _Server()
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.05})
        self._thread.start()
        self.port: int = self._httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def requests(self, path: str | None = None, token: str | None = None) -> list[Seen]:
        """Requests seen so far, optionally only those for ``path`` (and ``token``)."""
        st = self._httpd.state
        with st.lock:
            out = list(st.requests)
        if path is not None:
            out = [r for r in out if r.path == path]
        if token is not None:
            out = [r for r in out if r.query.get("token") == token]
        return out

    def count(self, path: str, token: str | None = None) -> int:
        return len(self.requests(path, token))

    @property
    def peak_concurrency(self) -> int:
        return self._httpd.state.peak

    def reset_peak(self) -> None:
        with self._httpd.state.lock:
            self._httpd.state.peak = 0

    def pdf_bytes(self) -> bytes:
        return self._httpd.pdf()

    def stop(self) -> None:
        self._httpd.state.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture(scope="session", name="http_server")
def http_server_fixture() -> Iterator[TestServer]:
    """One hostile server for the whole session; tests tell their requests apart by token."""
    srv = TestServer()
    try:
        yield srv
    finally:
        srv.stop()
