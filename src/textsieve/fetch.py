"""Fetch web resources politely and within bounds; every failure comes back as a typed error.

One ``Fetcher`` serves a whole run and is shared by its threads. What it guarantees:

* **Bounded.** ``Options.fetch_timeout`` is a deadline for the whole ``fetch()`` (every
  redirect hop, retry wait and body byte), counted from the moment the first request is let
  through the host gate (queueing behind our own politeness is not the server's fault;
  ``FetchResult.elapsed`` does include it). httpx's read timeout is per socket read, so a
  server dripping one byte per second would never trip it: the body loop checks the clock
  after every chunk, and a watchdog shuts the socket down at the deadline for a server that
  sends nothing at all. The body is read up to ``Options.max_body`` decoded bytes, then the
  fetch stops with ``too_large`` (a declared Content-Length above it is refused unread).
* **Polite.** At most ``per_host_concurrency`` requests in flight per host and request
  starts to one host spaced by ``per_host_delay`` (raised to a robots.txt Crawl-delay, up
  to ``max_crawl_delay``); retries (429, 5xx, connect failures, timeouts) back off
  exponentially with jitter and honour Retry-After; a User-Agent naming textsieve.
* **robots.txt** (RFC 9309) is read once per scheme+host+port with this same fetcher (same
  address policy, caps and deadline; up to 5 redirects) and honoured for every URL and
  every redirect hop, unless ``Options.obey_robots`` is off: 4xx means no rules, 5xx means
  everything is disallowed, and a host that cannot be reached fails its URLs the same way.
  A URL it disallows is ``robots_disallowed``; robots.txt itself is never returned.
* **Public addresses only** (``textsieve.netpolicy``): every connection, redirect hops and
  robots.txt included, goes through ``GuardedBackend``, which connects only to vetted
  addresses; a refused one is ``blocked_address``. Proxies from the environment are not
  used (``trust_env`` off): a proxy would connect where the check cannot see.
* **Redirects by hand** (not httpx's ``follow_redirects``), so a loop is told apart from a
  long chain, every hop goes through the host gate, and a Location pointing at a non-HTTP
  scheme (``file:``) is refused. A URL that cannot be parsed, first or any hop, is
  ``bad_url``; credentials in a URL (``user:secret@``) are dropped from every hop, never
  sent (httpx would turn them into a Basic Authorization header) and never reported back.
* **Conditional GET**: the caller passes the ETag / Last-Modified it archived; a 304 comes
  back as ``not_modified=True`` without a body.

Decoding the body (charset from header, meta, sniffing) is not done here: the result keeps
the header's charset for ``textcodec.decode`` and the extractors to weigh.
"""

from __future__ import annotations

import email.utils
import importlib.util
import itertools
import random
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import IO, cast
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx
from protego import Protego

from .links.normalize import BadUrl, check_url, strip_userinfo
from .model import ErrorInfo, ErrorKind
from .netpolicy import AddressPolicy, BlockedAddress, GuardedBackend
from .options import Options

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ROBOTS_TOKEN = "textsieve"  # the product token robots.txt groups are matched against
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2: follow at least five
ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 2.5: parse at least 500 KiB, we parse that much
# robots.txt failures that mean "no rules" (RFC 9309 2.3.1.3: unavailable -> allow all).
_ROBOTS_ALLOW_ALL = frozenset({ErrorKind.HTTP_404, ErrorKind.HTTP_410, ErrorKind.HTTP_4XX,
                               ErrorKind.HTTP_429, ErrorKind.REDIRECT_LOOP,
                               ErrorKind.TOO_MANY_REDIRECTS, ErrorKind.TOO_LARGE,
                               ErrorKind.BAD_URL, ErrorKind.UNSUPPORTED, ErrorKind.CORRUPT,
                               ErrorKind.BLOCKED_ADDRESS})
_CHUNK = 64 * 1024


@dataclass
class FetchResult:
    """What one ``Fetcher.fetch`` learned; ``error`` is set instead of raising."""

    url: str  # the URL asked for
    final_url: str  # after redirects (the URL the content came from)
    status: int  # HTTP status of the last response (304 for not modified; 0: no response)
    content: bytes | None = None  # decoded transfer (gzip...) body; None for 304 or errors
    content_type: str | None = None  # media type only, lower-case ("text/html")
    charset: str | None = None  # from the Content-Type header, lower-case
    etag: str | None = None
    last_modified: str | None = None
    date: str | None = None  # the response's Date header (kept with the capture)
    not_modified: bool = False
    error: ErrorInfo | None = None
    elapsed: float = 0.0  # seconds from the call to the return, queueing included
    redirects: list[str] = field(default_factory=list)  # each hop after ``url``, in order
    attempts: int = 0  # HTTP requests sent (retries and redirect hops included)

    @property
    def ok(self) -> bool:
        return self.error is None


class _Failure(Exception):
    """Internal: a typed failure of one hop; ``retry`` says whether trying again may help."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        retry: bool = False,
        retry_after: float | None = None,
        status: int = 0,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry = retry
        self.retry_after = retry_after
        self.status = status


def parse_content_type(value: str | None) -> tuple[str | None, str | None]:
    """``'text/HTML; Charset="ISO-8859-1"'`` -> ``('text/html', 'iso-8859-1')``.

    Lenient on purpose: servers send junk here, and a junk header must mean "unknown"
    rather than an error, since what was served is sniffed later anyway.
    """
    if not value:
        return None, None
    parts = value.split(";")
    media = parts[0].strip().lower() or None
    if media is not None and "/" not in media:
        media = None
    charset = None
    for param in parts[1:]:
        name, _, val = param.partition("=")
        if name.strip().lower() == "charset":
            val = val.strip().strip("'\"").strip().lower()
            charset = val or None
    return media, charset


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds from now: delta-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def status_error(status: int) -> ErrorInfo:
    """The typed error of an HTTP failure status (a fetch's, or one a WARC recorded)."""
    f = _status_failure(status, None)
    return ErrorInfo(f.kind, f.message)


def _status_failure(status: int, retry_after: float | None) -> _Failure:
    if status == 404:
        return _Failure(ErrorKind.HTTP_404, "HTTP 404 Not Found", status=status)
    if status == 410:
        return _Failure(ErrorKind.HTTP_410, "HTTP 410 Gone", status=status)
    if status == 429:
        return _Failure(ErrorKind.HTTP_429, "HTTP 429 Too Many Requests", retry=True,
                        retry_after=retry_after, status=status)
    if 500 <= status <= 599:
        # 501 Not Implemented will not change on a retry.
        return _Failure(ErrorKind.HTTP_5XX, f"HTTP {status}", retry=status != 501,
                        retry_after=retry_after, status=status)
    if 400 <= status <= 499:
        return _Failure(ErrorKind.HTTP_4XX, f"HTTP {status}", status=status)
    return _Failure(ErrorKind.CORRUPT, f"unexpected HTTP status {status}", status=status)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


_DNS_WORDS = ("name or service not known", "temporary failure in name resolution",
              "nodename nor servname", "no address associated", "getaddrinfo failed",
              "name resolution")


def classify_exception(exc: BaseException) -> _Failure:
    """Map an httpx/httpcore/socket exception to a typed failure.

    The cause chain is searched for the OS-level exception (``socket.gaierror`` means DNS,
    ``ssl.SSLError`` means TLS) because httpx flattens them all into ConnectError.
    """
    text = " ".join(str(e) for e in _chain(exc)).lower()
    for e in _chain(exc):
        if isinstance(e, socket.gaierror):
            return _Failure(ErrorKind.DNS, f"DNS lookup failed: {e}")
        if isinstance(e, ssl.SSLError | ssl.CertificateError):
            return _Failure(ErrorKind.TLS, f"TLS error: {e}")
    if isinstance(exc, httpx.TimeoutException):
        return _Failure(ErrorKind.TIMEOUT, f"timed out: {type(exc).__name__} {exc}".strip(),
                        retry=True)
    if isinstance(exc, httpx.ConnectError):
        if any(w in text for w in _DNS_WORDS):
            return _Failure(ErrorKind.DNS, f"DNS lookup failed: {exc}")
        if "ssl" in text or "certificate" in text or "tls" in text:
            return _Failure(ErrorKind.TLS, f"TLS error: {exc}")
        return _Failure(ErrorKind.CONNECTION, f"cannot connect: {exc}", retry=True)
    if isinstance(exc, httpx.DecodingError):
        return _Failure(ErrorKind.CORRUPT, f"bad Content-Encoding: {exc}")
    if isinstance(exc, httpx.InvalidURL):
        return _Failure(ErrorKind.BAD_URL, f"invalid URL: {exc}")
    if isinstance(exc, httpx.UnsupportedProtocol):
        return _Failure(ErrorKind.UNSUPPORTED, f"invalid URL: {exc}")
    if isinstance(exc, httpx.RemoteProtocolError) and "location header" in text:
        # httpx parses a redirect's Location itself, before the response is ours to see.
        return _Failure(ErrorKind.BAD_URL, f"malformed redirect Location: {exc}")
    if isinstance(exc, httpx.TransportError | OSError):
        # Reset, closed mid-response, protocol violations: the transport, not the content.
        return _Failure(ErrorKind.CONNECTION, f"connection failed: {type(exc).__name__} {exc}",
                        retry=isinstance(exc, httpx.NetworkError))
    return _Failure(ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}")


def _check_url(url: str) -> str:
    """The URL to request (credentials dropped), or the typed reason it cannot be."""
    url = strip_userinfo(url)
    try:
        scheme, _, _ = check_url(url)
    except BadUrl as exc:
        raise _Failure(ErrorKind.BAD_URL, str(exc)) from None
    if scheme not in ("http", "https"):
        raise _Failure(ErrorKind.UNSUPPORTED,
                       f"only http and https URLs are fetched, not {scheme or 'no'}: {url}")
    try:
        return str(httpx.URL(url))  # one spelling per URL, so loops are seen
    except httpx.InvalidURL as exc:
        raise _Failure(ErrorKind.BAD_URL, f"invalid URL {url!r}: {exc}") from None


def _host_key(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}:{parts.port or ''}"


class _Clock:
    """The deadline of one ``fetch()``. It starts when the first request is let through the
    host gate: time queued behind our own politeness limits (other URLs of the same host)
    is not the server's slowness and must not turn into a timeout."""

    def __init__(self, budget: float) -> None:
        self.budget = budget if budget and budget > 0 else None
        self.at: float | None = None  # monotonic deadline, once started

    def start(self) -> None:
        if self.at is None and self.budget is not None:
            self.at = time.monotonic() + self.budget

    def left(self) -> float | None:
        """Seconds left; None while not started or without a budget (no limit)."""
        return None if self.at is None else self.at - time.monotonic()


class _HostGate:
    """Per-host politeness: a semaphore for concurrency and spaced request starts."""

    def __init__(self, concurrency: int, delay: float) -> None:
        self._sem = threading.BoundedSemaphore(max(1, concurrency))
        self._delay = max(0.0, delay)
        self._lock = threading.Lock()
        self._next_start = 0.0

    def at_least(self, delay: float) -> None:
        """Space request starts by ``delay`` at least (a robots.txt Crawl-delay)."""
        with self._lock:
            self._delay = max(self._delay, delay)

    @contextmanager
    def slot(self, clock: _Clock) -> Iterator[None]:
        left = clock.left()
        if not self._sem.acquire(timeout=None if left is None else max(0.0, left)):
            raise _Failure(ErrorKind.TIMEOUT, "deadline passed waiting for the host")
        try:
            with self._lock:  # reserve the next start time; wait outside the lock
                start = max(time.monotonic(), self._next_start)
                self._next_start = start + self._delay
            wait = start - time.monotonic()
            if clock.at is not None and start > clock.at:
                raise _Failure(ErrorKind.TIMEOUT, "deadline passed waiting for the host")
            if wait > 0:
                time.sleep(wait)
            clock.start()
            yield
        finally:
            self._sem.release()


def _shutdown_socket(response: httpx.Response) -> None:
    """Wake a thread blocked reading ``response``: the only way to bound a silent read."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class _RawReader:
    """File-like view of an iterator of raw chunks, for zstandard's pull-based reader."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""

    def read(self, n: int = -1) -> bytes:
        while not self._buf:
            nxt = next(self._chunks, None)
            if nxt is None:
                return b""
            self._buf = nxt
        if n < 0:
            n = len(self._buf)
        out, self._buf = self._buf[:n], self._buf[n:]
        return out


def _inflate(raw: Iterator[bytes], wbits: int) -> Iterator[bytes]:
    """zlib/gzip/raw deflate, at most ``_CHUNK`` bytes of output per step.

    ``max_length`` is what bounds it: a few KB of deflate can hold ~1000x that, and the
    caller must get the chance to stop at the cap after every step.
    """
    d = zlib.decompressobj(wbits)
    for data in raw:
        while True:
            out = d.decompress(data, _CHUNK)
            if out:
                yield out
            data = d.unconsumed_tail
            if d.eof or (not data and len(out) < _CHUNK):
                break
        if d.eof:
            break  # trailing bytes after the stream end are ignored, as browsers do
    tail = d.flush()
    if tail:
        yield tail


def _deflate(raw: Iterator[bytes]) -> Iterator[bytes]:
    """HTTP "deflate" is meant to be zlib-wrapped, but many servers send it raw."""
    first = next(raw, b"")
    wbits = zlib.MAX_WBITS
    try:
        zlib.decompressobj(wbits).decompress(first, 1)
    except zlib.error:
        wbits = -zlib.MAX_WBITS
    yield from _inflate(itertools.chain([first], raw), wbits)


def _unzstd(raw: Iterator[bytes]) -> Iterator[bytes]:
    import zstandard

    # zstandard only calls read(): the chunks need not be a whole file object.
    reader = zstandard.ZstdDecompressor().stream_reader(
        cast("IO[bytes]", _RawReader(raw)), read_size=_CHUNK, read_across_frames=True)
    while True:
        out = reader.read(_CHUNK)
        if not out:
            return
        yield out


_DECODERS: dict[str, Callable[[Iterator[bytes]], Iterator[bytes]]] = {
    "gzip": lambda raw: _inflate(raw, 16 + zlib.MAX_WBITS),
    "x-gzip": lambda raw: _inflate(raw, 16 + zlib.MAX_WBITS),
    "deflate": _deflate,
}
if importlib.util.find_spec("zstandard") is not None:
    _DECODERS["zstd"] = _unzstd
# Brotli is not offered: its Python decoder has no output bound in most released versions.


def _decoded(response: httpx.Response) -> Iterator[bytes]:
    """The body with its Content-Encoding(s) undone, in bounded steps.

    Done here rather than by httpx, whose decoders inflate each network read in one go: a
    32 KB zstd body inflated to 2 GB of memory before the size cap could see it.
    Unknown codings pass through untouched (httpx's and browsers' behaviour too).
    """
    stream: Iterator[bytes] = response.iter_raw(_CHUNK)
    codings = [c.strip().lower() for c in response.headers.get("content-encoding", "").split(",")]
    for coding in reversed(codings):  # listed in the order applied: undo the last first
        dec = _DECODERS.get(coding)
        if dec is not None:
            stream = dec(stream)
    return stream


@dataclass
class _RobotsRules:
    """What one host's robots.txt says for this run."""

    parser: Protego | None = None  # None: no rules, everything allowed
    disallow_all: str | None = None  # why everything is disallowed (5xx)
    failure: _Failure | None = None  # the host could not be reached: its URLs fail alike


def _guarded_transport(policy: AddressPolicy, http2: bool,
                       limits: httpx.Limits) -> httpx.HTTPTransport:
    """httpx's own transport, its connection pool opening sockets through ``GuardedBackend``.

    httpx 0.28 has no public way to hand its pool a network backend (encode/httpx#3749
    adds one), so the pool it made is swapped for an identical one that has ours.
    """
    transport = httpx.HTTPTransport(http2=http2, limits=limits, trust_env=False)
    transport._pool.close()
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(trust_env=False),
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry, http1=True, http2=http2,
        network_backend=GuardedBackend(policy))
    return transport


class Fetcher:
    """Fetch URLs for one run: one connection pool, host gates shared across threads."""

    def __init__(self, options: Options | None = None, *,
                 policy: AddressPolicy | None = None) -> None:
        """``policy``: the address policy (default: from ``options``); tests hand one whose
        lookup asks a local DNS server."""
        self.options = options or Options()
        o = self.options
        self.policy = policy or AddressPolicy.from_options(o)
        self.http2 = importlib.util.find_spec("h2") is not None
        self.encodings = [k for k in _DECODERS if k != "x-gzip"]
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=32)
        self._client = httpx.Client(
            transport=_guarded_transport(self.policy, self.http2, limits),
            trust_env=False,
            follow_redirects=False,
            headers={
                "User-Agent": o.agent,
                "Accept": "text/html,application/xhtml+xml,application/pdf;q=0.9,*/*;q=0.8",
                "Accept-Encoding": ", ".join(self.encodings),
            },
            timeout=httpx.Timeout(o.read_timeout, connect=o.connect_timeout),
        )
        self._gates: dict[str, _HostGate] = {}
        self._gates_lock = threading.Lock()
        self._robots: dict[str, _RobotsRules] = {}
        self._robots_locks: dict[str, threading.Lock] = {}

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def _gate(self, url: str) -> _HostGate:
        key = _host_key(url)
        with self._gates_lock:
            gate = self._gates.get(key)
            if gate is None:
                gate = self._gates[key] = _HostGate(self.options.per_host_concurrency,
                                                    self.options.per_host_delay)
            return gate

    def fetch(
        self, url: str, *, etag: str | None = None, last_modified: str | None = None
    ) -> FetchResult:
        """GET ``url`` following redirects; never raises for network or HTTP trouble."""
        t0 = time.monotonic()
        o = self.options
        clock = _Clock(o.fetch_timeout)
        url = strip_userinfo(url)
        result = FetchResult(url=url, final_url=url, status=0)
        headers: dict[str, str] = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        try:
            self._follow(url, headers, clock, result)
        except _Failure as f:
            result.error = ErrorInfo(f.kind, f.message)
            result.content = None
            if f.status:
                result.status = f.status
        except Exception as exc:  # a bug or an exotic library error: typed, never raised
            failure = classify_exception(exc)
            result.error = ErrorInfo(failure.kind, failure.message)
            result.content = None
        result.elapsed = time.monotonic() - t0
        return result

    def _follow(self, url: str, headers: dict[str, str], clock: _Clock,
                result: FetchResult, *, robots: bool = True,
                max_redirects: int | None = None) -> None:
        limit = self.options.max_redirects if max_redirects is None else max_redirects
        seen = {url}
        current = url
        while True:
            current = _check_url(current)
            try:  # an address literal: refused before any connection (the backend would too)
                self.policy.check_literal(urlsplit(current).hostname or "")
            except BlockedAddress as exc:
                raise _Failure(ErrorKind.BLOCKED_ADDRESS, str(exc)) from None
            if robots and self.options.obey_robots:
                self._obey_robots(current, clock, result)
            status, location = self._with_retries(current, headers, clock, result)
            if status not in REDIRECT_STATUSES:
                return
            if not location:
                raise _Failure(ErrorKind.CORRUPT, f"HTTP {status} redirect without Location",
                               status=status)
            try:
                nxt = urljoin(current, location.strip())
            except ValueError as exc:  # a broken IPv6 literal in the Location
                raise _Failure(ErrorKind.BAD_URL, f"malformed redirect Location "
                               f"{strip_userinfo(location)!r}: {exc}", status=status) from None
            nxt = strip_userinfo(nxt.split("#", 1)[0])
            if nxt in seen:
                raise _Failure(ErrorKind.REDIRECT_LOOP,
                               f"redirect loop: {current} -> {nxt} (seen before)",
                               status=status)
            if len(result.redirects) >= limit:
                raise _Failure(ErrorKind.TOO_MANY_REDIRECTS, f"more than {limit} redirects",
                               status=status)
            seen.add(nxt)
            result.redirects.append(nxt)
            result.final_url = current = nxt

    def _obey_robots(self, url: str, clock: _Clock, result: FetchResult) -> None:
        """Raise ``robots_disallowed`` (or the host's network failure) for ``url``."""
        rules = self._robots_rules(url, clock, result)
        if rules.failure is not None:
            f = rules.failure
            raise _Failure(f.kind, f"robots.txt unreachable, so nothing is fetched from this "
                           f"host (RFC 9309): {f.message}", status=f.status)
        if rules.disallow_all is not None:
            raise _Failure(ErrorKind.ROBOTS_DISALLOWED, rules.disallow_all)
        if rules.parser is not None and not rules.parser.can_fetch(url, ROBOTS_TOKEN):
            raise _Failure(ErrorKind.ROBOTS_DISALLOWED,
                           f"robots.txt of {_host_key(url)} disallows {url} for "
                           f"{ROBOTS_TOKEN} (--ignore-robots for your own sites)")

    def _robots_rules(self, url: str, clock: _Clock, result: FetchResult) -> _RobotsRules:
        """The host's rules, fetched once per run; other threads wait for the first.

        When the robots.txt request itself failed (the host is unreachable), its requests
        count in ``result.attempts``: they are the ones this URL's outcome rests on.
        """
        key = _host_key(url)
        with self._gates_lock:
            lock = self._robots_locks.setdefault(key, threading.Lock())
        with lock:
            rules = self._robots.get(key)
            if rules is None:
                rules, attempts = self._fetch_robots(url, clock)
                self._robots[key] = rules
                if rules.failure is not None:
                    result.attempts += attempts
                delay = rules.parser.crawl_delay(ROBOTS_TOKEN) if rules.parser else None
                if delay:
                    self._gate(url).at_least(min(float(delay), self.options.max_crawl_delay))
            return rules

    def _fetch_robots(self, url: str, clock: _Clock) -> tuple[_RobotsRules, int]:
        """The rules of ``url``'s host and the number of requests it took to learn them."""
        parts = urlsplit(url)
        robots_url = f"{parts.scheme}://{parts.netloc}/robots.txt"
        res = FetchResult(url=robots_url, final_url=robots_url, status=0)
        try:
            self._follow(robots_url, {}, clock, res, robots=False,
                         max_redirects=ROBOTS_MAX_REDIRECTS)
        except _Failure as f:
            if f.kind in _ROBOTS_ALLOW_ALL:
                return _RobotsRules(), res.attempts
            if f.kind is ErrorKind.HTTP_5XX:
                return _RobotsRules(disallow_all=f"robots.txt of {_host_key(url)} answered "
                                    f"{f.status or '5xx'}: the whole site counts as "
                                    f"disallowed (RFC 9309)"), res.attempts
            return _RobotsRules(failure=f), res.attempts  # DNS, TLS, connection, timeout
        text = (res.content or b"")[:ROBOTS_MAX_BYTES].decode("utf-8", "replace")
        try:
            return _RobotsRules(parser=Protego.parse(text)), res.attempts
        except Exception:  # a parser bug on hostile input must not cost the page
            return _RobotsRules(), res.attempts

    def _with_retries(self, url: str, headers: dict[str, str], clock: _Clock,
                      result: FetchResult) -> tuple[int, str | None]:
        o = self.options
        attempt = 0
        while True:
            try:
                return self._once(url, headers, clock, result)
            except _Failure as f:
                if not f.retry or attempt >= o.retries:
                    raise
                if f.retry_after is not None:
                    if f.retry_after > o.max_retry_after:
                        # Waiting less than asked is rude; waiting longer is not ours to do.
                        f.message += f" (Retry-After {f.retry_after:.0f} s is beyond the cap)"
                        raise
                    wait = f.retry_after
                else:
                    step = o.backoff * (2 ** attempt)
                    wait = step / 2 + random.uniform(0, step / 2)
                left = clock.left()
                if left is not None and wait >= left:
                    f.message += " (no time left to retry)"
                    raise
                time.sleep(wait)
                attempt += 1

    def _once(self, url: str, headers: dict[str, str], clock: _Clock,
              result: FetchResult) -> tuple[int, str | None]:
        """One request; fills ``result`` for a final response. Returns (status, Location)."""
        o = self.options
        with self._gate(url).slot(clock):
            left = clock.left()
            if left is not None and left <= 0:
                raise _Failure(ErrorKind.TIMEOUT, f"fetch deadline of {o.fetch_timeout} s passed")
            timeout = httpx.Timeout(
                _min(o.read_timeout, left), connect=_min(o.connect_timeout, left),
                pool=_min(o.connect_timeout, left))
            result.attempts += 1
            try:
                request = self._client.build_request("GET", url, headers=headers,
                                                     timeout=timeout)
                response = self._client.send(request, stream=True)
            except BlockedAddress as exc:
                raise _Failure(ErrorKind.BLOCKED_ADDRESS, str(exc)) from None
            except httpx.HTTPError as exc:
                f = classify_exception(exc)
                left = clock.left()
                if f.kind is ErrorKind.TIMEOUT and left is not None and left < 0.05:
                    f.retry = False
                raise f from None
            try:
                return self._read(response, clock.at, result)
            finally:
                response.close()

    def _read(self, response: httpx.Response, deadline: float | None,
              result: FetchResult) -> tuple[int, str | None]:
        o = self.options
        status = response.status_code
        result.status = status
        result.final_url = str(response.url)
        if status in REDIRECT_STATUSES:
            return status, response.headers.get("location")
        result.etag = response.headers.get("etag")
        result.last_modified = response.headers.get("last-modified")
        result.date = response.headers.get("date")
        result.content_type, result.charset = parse_content_type(
            response.headers.get("content-type"))
        if status == 304:
            result.not_modified = True
            return status, None
        if status >= 400 or status < 200:
            raise _status_failure(status, parse_retry_after(response.headers.get("retry-after")))
        declared = response.headers.get("content-length", "").strip()
        if declared.isdigit() and int(declared) > o.max_body \
                and not response.headers.get("content-encoding"):
            raise _Failure(ErrorKind.TOO_LARGE,
                           f"Content-Length {declared} is above the limit of {o.max_body} bytes",
                           status=status)
        result.content = self._body(response, deadline)
        return status, None

    def _body(self, response: httpx.Response, deadline: float | None) -> bytes:
        o = self.options
        expired = threading.Event()
        watchdog = None
        if deadline is not None:
            def _fire() -> None:
                expired.set()
                _shutdown_socket(response)

            watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), _fire)
            watchdog.daemon = True
            watchdog.start()
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in _decoded(response):
                size += len(chunk)
                if size > o.max_body:
                    raise _Failure(ErrorKind.TOO_LARGE,
                                   f"body larger than the limit of {o.max_body} bytes",
                                   status=response.status_code)
                chunks.append(chunk)
                if deadline is not None and time.monotonic() >= deadline:
                    raise _Failure(ErrorKind.TIMEOUT,
                                   f"body not complete within {o.fetch_timeout} s",
                                   status=response.status_code)
        except httpx.HTTPError as exc:
            if expired.is_set():
                raise _Failure(ErrorKind.TIMEOUT,
                               f"body not complete within {o.fetch_timeout} s",
                               status=response.status_code) from None
            f = classify_exception(exc)
            f.status = response.status_code
            raise f from None
        except _Failure:
            raise
        except Exception as exc:  # zlib.error, ZstdError: the coding is broken
            raise _Failure(ErrorKind.CORRUPT, f"bad Content-Encoding: {exc}",
                           status=response.status_code) from None
        finally:
            if watchdog is not None:
                watchdog.cancel()
        if expired.is_set():  # the socket was shut just as the last bytes came in
            raise _Failure(ErrorKind.TIMEOUT, f"body not complete within {o.fetch_timeout} s",
                           status=response.status_code)
        return b"".join(chunks)


def _min(a: float, b: float | None) -> float:
    return a if b is None else max(0.001, min(a, b))
