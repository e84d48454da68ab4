"""The fetcher against a hostile local server: right bytes or the right typed error, in time.

Everything goes to 127.0.0.1 (tests/http_server.py); the DNS tests use names under the
reserved ``.invalid`` TLD that the C library refuses before sending any query.
"""

from __future__ import annotations

import itertools
import resource
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from http_server import (
    ARTICLE_HTML,
    BOMB_MIB,
    CP1252_HTML,
    LATIN1_META_HTML,
    LATIN1_WORDS,
    TestServer,
    http_server_fixture,  # noqa: F401 - registers the http_server fixture
)
from textsieve.fetch import Fetcher, FetchResult, parse_content_type, parse_retry_after
from textsieve.model import ErrorKind
from textsieve.options import MiB, Options
from textsieve.textcodec import decode

ARTICLE = ARTICLE_HTML.encode("utf-8")

# Fast defaults: no politeness delay and short backoff unless a test is about them; the
# server is on 127.0.0.1, which textsieve only fetches from when told to.
FAST = {"per_host_delay": 0.0, "backoff": 0.05, "fetch_timeout": 10.0, "allow_private": True}

MakeFetcher = Callable[..., Fetcher]


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx honours *_PROXY variables: a developer's proxy must not see these requests."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                "all_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def make_fetcher() -> Iterator[MakeFetcher]:
    made: list[Fetcher] = []

    def make(**changes: object) -> Fetcher:
        f = Fetcher(Options().with_(**{**FAST, **changes}))
        made.append(f)
        return f

    yield make
    for f in made:
        f.close()


@pytest.fixture
def token() -> str:
    """Stateful routes (/flaky, /busy) start fresh for each test."""
    return uuid.uuid4().hex


def _timed(f: Fetcher, url: str, **kw: str) -> tuple[FetchResult, float]:
    t = time.monotonic()
    r = f.fetch(url, **kw)
    return r, time.monotonic() - t


def _kind(r: FetchResult) -> ErrorKind | None:
    return r.error.kind if r.error else None


# -- content --------------------------------------------------------------------------


def test_article_bytes_type_charset_and_user_agent(http_server: TestServer,
                                                   make_fetcher: MakeFetcher, token: str) -> None:
    f = make_fetcher()
    url = http_server.url(f"/article.html?token={token}")
    r = f.fetch(url)
    assert r.ok and r.status == 200, r.error
    assert r.content == ARTICLE
    assert (r.content_type, r.charset) == ("text/html", "utf-8")
    assert r.final_url == url and r.redirects == [] and not r.not_modified
    seen = http_server.requests("/article.html", token)
    assert len(seen) == 1
    ua = seen[0].headers["user-agent"]
    assert ua == Options().agent and "textsieve" in ua
    assert "gzip" in seen[0].headers["accept-encoding"]


def test_pdf_served_as_pdf(http_server: TestServer, make_fetcher: MakeFetcher) -> None:
    r = make_fetcher().fetch(http_server.url("/doc.pdf"))
    assert r.ok, r.error
    assert r.content == http_server.pdf_bytes() and r.content.startswith(b"%PDF-")
    assert r.content_type == "application/pdf" and r.charset is None


def test_what_was_served_is_reported_not_what_the_url_says(http_server: TestServer,
                                                           make_fetcher: MakeFetcher) -> None:
    f = make_fetcher()
    html = f.fetch(http_server.url("/pdf-but-html.pdf"))
    assert html.ok and html.content_type == "text/html" and html.content == ARTICLE
    octet = f.fetch(http_server.url("/wrong-type"))
    assert octet.ok and octet.content_type == "application/octet-stream"
    assert octet.content == ARTICLE
    pdf = f.fetch(http_server.url("/wrong-type/pdf"))
    assert pdf.ok and pdf.content_type == "text/plain"
    assert pdf.content is not None and pdf.content.startswith(b"%PDF-")


def test_charset_from_header_only_when_the_header_says_so(http_server: TestServer,
                                                          make_fetcher: MakeFetcher) -> None:
    f = make_fetcher()
    latin1 = f.fetch(http_server.url("/latin1"))
    assert latin1.ok and latin1.charset == "iso-8859-1"
    assert latin1.content is not None and "ü".encode("latin-1") in latin1.content
    text, _ = decode(latin1.content, declared=latin1.charset)
    assert LATIN1_WORDS in text
    meta = f.fetch(http_server.url("/latin1-meta"))  # charset in <meta> only: bytes untouched
    assert meta.ok and meta.charset is None and meta.content_type == "text/html"
    assert meta.content == LATIN1_META_HTML.encode("iso-8859-1")
    cp = f.fetch(http_server.url("/nodecl-cp1252"))
    assert cp.ok and cp.charset is None and cp.content == CP1252_HTML.encode("cp1252")


@pytest.mark.parametrize("route", ["/gzip", "/zstd"])
def test_compressed_transfer_is_decoded(http_server: TestServer, make_fetcher: MakeFetcher,
                                        route: str) -> None:
    f = make_fetcher()
    encoding = route.strip("/")
    if encoding not in f.encodings:
        pytest.skip(f"this httpx cannot decode {encoding}")
    before = http_server.count(route)
    r = f.fetch(http_server.url(route))
    assert r.ok and r.content == ARTICLE, r.error
    seen = http_server.requests(route)[before:]
    assert len(seen) == 1 and encoding in seen[0].headers["accept-encoding"]


def test_raw_deflate_decoded(http_server: TestServer, make_fetcher: MakeFetcher) -> None:
    r = make_fetcher().fetch(http_server.url("/deflate-raw"))
    assert r.ok and r.content == ARTICLE, r.error


def test_broken_content_encoding_is_corrupt(http_server: TestServer,
                                            make_fetcher: MakeFetcher) -> None:
    r = make_fetcher().fetch(http_server.url("/bad-gzip"))
    assert _kind(r) is ErrorKind.CORRUPT and r.content is None


def test_compression_bomb_stops_at_the_cap_without_inflating(
        http_server: TestServer, make_fetcher: MakeFetcher) -> None:
    f = make_fetcher(max_body=1 * MiB)
    if "zstd" not in f.encodings:
        pytest.skip("zstd is not offered")
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    r, took = _timed(f, http_server.url("/zstd-bomb"))
    grew_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    assert _kind(r) is ErrorKind.TOO_LARGE and took < 3
    assert grew_mib < BOMB_MIB / 4, f"peak memory grew by {grew_mib:.0f} MiB"


# -- redirects ------------------------------------------------------------------------


def test_redirect_chain_followed(http_server: TestServer, make_fetcher: MakeFetcher) -> None:
    before = {n: http_server.count(f"/redirect/{n}") for n in range(1, 6)}
    r = make_fetcher().fetch(http_server.url("/redirect/5"))
    assert r.ok and r.content == ARTICLE, r.error
    # Relative and absolute Locations, 301/302/303/307/308 all followed.
    assert r.redirects == [http_server.url(f"/redirect/{n}") for n in (4, 3, 2, 1)] + [
        http_server.url("/article.html")]
    assert r.final_url == http_server.url("/article.html")
    assert r.attempts == 6
    for n in range(1, 6):
        assert http_server.count(f"/redirect/{n}") == before[n] + 1


def test_redirect_limit(http_server: TestServer, make_fetcher: MakeFetcher) -> None:
    f = make_fetcher(max_redirects=3)
    assert f.fetch(http_server.url("/redirect/3")).ok  # 3 redirects: at the limit
    r, took = _timed(f, http_server.url("/redirect/4"))
    assert _kind(r) is ErrorKind.TOO_MANY_REDIRECTS and r.content is None
    assert len(r.redirects) == 3 and took < 2


def test_redirect_loop_detected(http_server: TestServer, make_fetcher: MakeFetcher) -> None:
    before = http_server.count("/loop-a"), http_server.count("/loop-b")
    r, took = _timed(make_fetcher(max_redirects=50), http_server.url("/loop-a"))
    assert _kind(r) is ErrorKind.REDIRECT_LOOP, r.error
    assert took < 2
    # Stopped the first time a URL came back, not after 50 hops.
    assert (http_server.count("/loop-a"), http_server.count("/loop-b")) == (
        before[0] + 1, before[1] + 1)


def test_redirect_to_file_scheme_refused(http_server: TestServer,
                                         make_fetcher: MakeFetcher) -> None:
    r = make_fetcher().fetch(http_server.url("/redirect-file"))
    assert _kind(r) is ErrorKind.UNSUPPORTED and r.content is None
    assert "file" in r.error.message  # type: ignore[union-attr]


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "not a url"])
def test_only_http_and_https(make_fetcher: MakeFetcher, url: str) -> None:
    r = make_fetcher().fetch(url)
    assert _kind(r) is ErrorKind.UNSUPPORTED and r.content is None and r.attempts == 0


# -- HTTP errors and retries ----------------------------------------------------------


@pytest.mark.parametrize(("route", "kind"), [
    ("/404", ErrorKind.HTTP_404),
    ("/410", ErrorKind.HTTP_410),
    ("/status/403", ErrorKind.HTTP_4XX),
    ("/status/400", ErrorKind.HTTP_4XX),
])
def test_client_errors_typed_and_not_retried(http_server: TestServer, make_fetcher: MakeFetcher,
                                             route: str, kind: ErrorKind) -> None:
    before = http_server.count(route)
    r = make_fetcher(retries=3).fetch(http_server.url(route))
    assert _kind(r) is kind and r.content is None
    assert r.status == int(route.rsplit("/", 1)[1])
    assert http_server.count(route) == before + 1


def test_500_then_200_retried(http_server: TestServer, make_fetcher: MakeFetcher,
                              token: str) -> None:
    r = make_fetcher(retries=3).fetch(http_server.url(f"/flaky?token={token}"))
    assert r.ok and r.content == ARTICLE, r.error
    assert http_server.count("/flaky", token) == 2 and r.attempts == 2


def test_5xx_after_all_retries(http_server: TestServer, make_fetcher: MakeFetcher,
                               token: str) -> None:
    r = make_fetcher(retries=2).fetch(http_server.url(f"/status/503?token={token}"))
    assert _kind(r) is ErrorKind.HTTP_5XX and r.status == 503
    assert http_server.count("/status/503", token) == 3


def test_backoff_grows(http_server: TestServer, make_fetcher: MakeFetcher, token: str) -> None:
    make_fetcher(retries=3, backoff=0.2).fetch(http_server.url(f"/status/502?token={token}"))
    at = [s.at for s in http_server.requests("/status/502", token)]
    gaps = [b - a for a, b in itertools.pairwise(at)]
    assert len(gaps) == 3
    # step 0.2 * 2**n, jitter keeps at least half of it
    for n, gap in enumerate(gaps):
        assert 0.1 * 2 ** n - 0.02 <= gap <= 0.2 * 2 ** n + 0.3, gaps


def test_retries_stop_at_the_deadline(http_server: TestServer, make_fetcher: MakeFetcher,
                                      token: str) -> None:
    r, took = _timed(make_fetcher(retries=20, backoff=0.4, fetch_timeout=1.5),
                     http_server.url(f"/status/500?token={token}"))
    assert _kind(r) is ErrorKind.HTTP_5XX and took < 2.0
    assert http_server.count("/status/500", token) < 20


@pytest.mark.parametrize(("route", "at_least"), [("/busy", 0.95), ("/busy-date", 0.9)])
def test_429_honours_retry_after(http_server: TestServer, make_fetcher: MakeFetcher,
                                 token: str, route: str, at_least: float) -> None:
    r = make_fetcher(retries=2, backoff=0.01).fetch(http_server.url(f"{route}?token={token}"))
    assert r.ok and r.content == ARTICLE, r.error
    seen = http_server.requests(route, token)
    assert len(seen) == 2
    assert seen[1].at - seen[0].at >= at_least


def test_429_with_retry_after_beyond_the_cap_fails_at_once(http_server: TestServer,
                                                           make_fetcher: MakeFetcher,
                                                           token: str) -> None:
    r, took = _timed(make_fetcher(retries=3, max_retry_after=5),
                     http_server.url(f"/busy-long?token={token}"))
    assert _kind(r) is ErrorKind.HTTP_429 and took < 1
    assert http_server.count("/busy-long", token) == 1


def test_429_without_retries(http_server: TestServer, make_fetcher: MakeFetcher,
                             token: str) -> None:
    r = make_fetcher(retries=0).fetch(http_server.url(f"/busy?token={token}"))
    assert _kind(r) is ErrorKind.HTTP_429 and r.status == 429


# -- time and size bounds -------------------------------------------------------------


def test_slow_drip_stops_at_the_total_deadline(http_server: TestServer,
                                               make_fetcher: MakeFetcher) -> None:
    r, took = _timed(make_fetcher(fetch_timeout=2.0, read_timeout=30.0),
                     http_server.url("/slow-drip"))
    assert _kind(r) is ErrorKind.TIMEOUT and r.content is None
    assert 1.8 <= took < 4.0


def test_silent_body_stops_at_the_total_deadline(http_server: TestServer,
                                                 make_fetcher: MakeFetcher) -> None:
    # Headers and a few bytes, then nothing: only the deadline watchdog can end this read.
    r, took = _timed(make_fetcher(fetch_timeout=1.5, read_timeout=30.0),
                     http_server.url("/stall-body?s=8"))
    assert _kind(r) is ErrorKind.TIMEOUT
    assert 1.3 <= took < 3.0


def test_silent_server_read_timeout_then_retry(http_server: TestServer,
                                               make_fetcher: MakeFetcher, token: str) -> None:
    r, took = _timed(make_fetcher(read_timeout=0.5, retries=1, fetch_timeout=10),
                     http_server.url(f"/stall?s=3&token={token}"))
    assert _kind(r) is ErrorKind.TIMEOUT
    assert http_server.count("/stall", token) == 2 and took < 3


def test_endless_body_stops_at_the_size_cap(http_server: TestServer,
                                            make_fetcher: MakeFetcher) -> None:
    r, took = _timed(make_fetcher(max_body=1 * MiB, fetch_timeout=10), http_server.url("/endless"))
    assert _kind(r) is ErrorKind.TOO_LARGE and r.content is None
    assert took < 5


def test_endless_body_stops_at_the_deadline_when_that_comes_first(
        http_server: TestServer, make_fetcher: MakeFetcher) -> None:
    r, took = _timed(make_fetcher(max_body=100_000 * MiB, fetch_timeout=1.0),
                     http_server.url("/endless"))
    assert _kind(r) is ErrorKind.TIMEOUT
    assert took < 3


def test_declared_length_above_the_cap_refused(http_server: TestServer,
                                               make_fetcher: MakeFetcher) -> None:
    r = make_fetcher(max_body=100).fetch(http_server.url("/article.html"))
    assert _kind(r) is ErrorKind.TOO_LARGE and "Content-Length" in r.error.message  # type: ignore[union-attr]


# -- conditional GET ------------------------------------------------------------------


def test_conditional_get(http_server: TestServer, make_fetcher: MakeFetcher) -> None:
    f = make_fetcher()
    first = f.fetch(http_server.url("/etag"))
    assert first.ok and first.content == ARTICLE and not first.not_modified
    assert first.etag == '"v1-article"' and first.last_modified
    n = http_server.count("/etag")
    again = f.fetch(http_server.url("/etag"), etag=first.etag)
    assert again.ok and again.not_modified and again.status == 304 and again.content is None
    assert http_server.requests("/etag")[n].headers["if-none-match"] == first.etag
    by_date = f.fetch(http_server.url("/etag"), last_modified=first.last_modified)
    assert by_date.not_modified
    assert http_server.requests("/etag")[n + 1].headers["if-modified-since"] == \
        first.last_modified
    changed = f.fetch(http_server.url("/etag"), etag='"v0-old"')
    assert changed.ok and not changed.not_modified and changed.content == ARTICLE


# -- politeness -----------------------------------------------------------------------


def test_per_host_delay(http_server: TestServer, make_fetcher: MakeFetcher, token: str) -> None:
    f = make_fetcher(per_host_delay=0.6)
    for _ in range(3):
        assert f.fetch(http_server.url(f"/article.html?token={token}")).ok
    at = [s.at for s in http_server.requests("/article.html", token)]
    assert len(at) == 3
    assert all(b - a >= 0.55 for a, b in itertools.pairwise(at)), at


def test_per_host_concurrency_from_many_threads(http_server: TestServer,
                                                make_fetcher: MakeFetcher, token: str) -> None:
    f = make_fetcher(per_host_concurrency=2)
    http_server.reset_peak()
    results: list[FetchResult] = []
    lock = threading.Lock()

    def one() -> None:
        r = f.fetch(http_server.url(f"/sleep?ms=250&token={token}"))
        with lock:
            results.append(r)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(results) == 6 and all(r.ok for r in results)
    assert http_server.peak_concurrency == 2


def test_queueing_behind_the_host_gate_is_not_charged_to_the_deadline(
        http_server: TestServer, make_fetcher: MakeFetcher, token: str) -> None:
    # One slot per host, three 0.4 s requests: the last waits ~0.8 s for its turn and then
    # needs 0.4 s more, beyond a 1 s budget counted from the call; fine counted from admission.
    f = make_fetcher(per_host_concurrency=1, fetch_timeout=1.0)
    results: list[FetchResult] = []
    threads = [threading.Thread(target=lambda: results.append(
        f.fetch(http_server.url(f"/sleep?ms=400&token={token}")))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(results) == 3 and all(r.ok for r in results), [r.error for r in results]
    assert max(r.elapsed for r in results) >= 1.1  # one of them did queue past the budget


# -- network failures -----------------------------------------------------------------


def test_dns_failure_without_a_query() -> None:
    # 263 characters under .invalid (RFC 2606): longer than DNS allows, so the C library
    # refuses it before any packet leaves the machine.
    host = ".".join(["a" * 63] * 4) + ".invalid"
    with Fetcher(Options().with_(**FAST, retries=2)) as f:
        r, took = _timed(f, f"http://{host}/page")
    assert _kind(r) is ErrorKind.DNS, r.error
    assert r.attempts == 1 and took < 2  # a name that does not resolve is not retried


def _local_stub_resolver() -> bool:
    """True when /etc/resolv.conf only names loopback resolvers (e.g. systemd-resolved),
    which answer .invalid themselves; otherwise the query would leave the machine."""
    try:
        lines = Path("/etc/resolv.conf").read_text().splitlines()
    except OSError:
        return False
    servers = [ln.split()[1] for ln in lines if ln.startswith("nameserver") and len(ln.split()) > 1]
    return bool(servers) and all(s.startswith("127.") or s == "::1" for s in servers)


def test_dns_failure_invalid_tld() -> None:
    if not _local_stub_resolver():
        pytest.skip("the configured resolver is not local: a .invalid query would leave here")
    with Fetcher(Options().with_(**FAST, retries=0)) as f:
        r = f.fetch("http://textsieve-test.invalid/")
    assert _kind(r) is ErrorKind.DNS, r.error


def test_connection_refused(make_fetcher: MakeFetcher) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    r, took = _timed(make_fetcher(retries=1), f"http://127.0.0.1:{port}/")
    assert _kind(r) is ErrorKind.CONNECTION and r.status == 0
    assert r.attempts == 2 and took < 2  # refused is retried (a restarting server)


def test_tls_error(http_server: TestServer, make_fetcher: MakeFetcher) -> None:
    # HTTPS to a plain-HTTP port: the handshake fails.
    r = make_fetcher(retries=2).fetch(f"https://127.0.0.1:{http_server.port}/article.html")
    assert _kind(r) is ErrorKind.TLS, r.error
    assert r.attempts == 1


# -- header parsing -------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    ('text/HTML; Charset="ISO-8859-1"', ("text/html", "iso-8859-1")),
    ("application/pdf", ("application/pdf", None)),
    ("text/html;charset=", ("text/html", None)),
    ("text/plain; format=flowed; charset=utf-8", ("text/plain", "utf-8")),
    ("garbage", (None, None)),
    (None, (None, None)),
])
def test_parse_content_type(value: str | None, expected: tuple[str | None, str | None]) -> None:
    assert parse_content_type(value) == expected


def test_parse_retry_after() -> None:
    assert parse_retry_after("5") == 5.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 - 10) == 10.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
