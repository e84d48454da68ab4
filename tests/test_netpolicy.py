"""The address policy: nothing but public addresses unless opened, checked on the address
actually connected to, on every redirect hop, with no proxy around it.

The "outside" host is a server on 127.0.0.2, opened with an explicit CIDR as a stand-in for
a public address; the "inside" one is tests/http_server.py on 127.0.0.1, which stays
refused. A name that resolves to an inside address is ``localhost``.
"""

from __future__ import annotations

import ipaddress
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from http_server import (  # noqa: F401 - registers the http_server fixture
    ARTICLE_PHRASES,
    TestServer,
    http_server_fixture,
)
from textsieve.archive import Archive
from textsieve.fetch import Fetcher, FetchResult
from textsieve.model import ErrorKind
from textsieve.netpolicy import AddressPolicy, BlockedAddress, classify, literal_address
from textsieve.options import Options, OptionsError

OUTSIDE = "127.0.0.2"
OUTSIDE_ONLY = {"allow_cidrs": (f"{OUTSIDE}/32",), "per_host_delay": 0.0, "retries": 0,
                "fetch_timeout": 10.0}


class _Outside(BaseHTTPRequestHandler):
    """/to?u=URL redirects (302) to URL; anything else is a small page."""

    def do_GET(self) -> None:
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        if parts.path == "/to":
            self.send_response(302)
            self.send_header("Location", parse_qs(parts.query)["u"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"<html><body><p>an outside page</p></body></html>"
        self.send_response(404 if parts.path == "/robots.txt" else 200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def outside() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer((OUTSIDE, 0), _Outside)
    httpd.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True,
                     kwargs={"poll_interval": 0.05}).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _base(httpd: ThreadingHTTPServer) -> str:
    return f"http://{OUTSIDE}:{httpd.server_address[1]}"


def _fetch(url: str, **options: object) -> FetchResult:
    with Fetcher(Options().with_(**{**OUTSIDE_ONLY, **options})) as f:
        return f.fetch(url)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy",
                "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(var, raising=False)


# -- classification ---------------------------------------------------------------------


@pytest.mark.parametrize(("address", "reason"), [
    ("127.0.0.1", "loopback"), ("127.255.0.9", "loopback"), ("::1", "loopback"),
    ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("192.168.1.1", "private"),
    ("fc00::1", "private"), ("fd12:3456::1", "private"),
    ("169.254.169.254", "cloud metadata"), ("fd00:ec2::254", "cloud metadata"),
    ("100.100.100.200", "cloud metadata"), ("169.254.1.1", "link-local"),
    ("fe80::1", "link-local"), ("100.64.0.1", "shared (CGNAT)"),
    ("100.127.255.254", "shared (CGNAT)"), ("0.0.0.0", "unspecified"), ("::", "unspecified"),
    ("0.1.2.3", "private"), ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"), ("255.255.255.255", "private"), ("240.0.0.1", "private"),
    ("192.0.2.1", "private"), ("2001:db8::1", "private"),
    # IPv4 inside IPv6: judged by the IPv4 address they lead to
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:169.254.169.254", "cloud metadata"),
    ("64:ff9b::a9fe:a9fe", "cloud metadata"), ("2002:7f00:1::", "loopback"),
    ("2002:c0a8:101::1", "private"),
    # public
    ("8.8.8.8", None), ("93.184.215.14", None), ("2606:4700::1111", None),
    ("::ffff:8.8.8.8", None), ("100.63.255.255", None),
])
def test_classify(address: str, reason: str | None) -> None:
    assert classify(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize(("host", "address"), [
    ("2130706433", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("0x7f000001", "127.0.0.1"),
    ("017700000001", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"), ("127.1", "127.0.0.1"),
    ("[::1]", "::1"), ("[::ffff:7f00:1]", "::ffff:7f00:1"), ("169.254.169.254.", "169.254.169.254"),
    ("example.com", None), ("1example.com", None), ("0x7g.1", None),
])
def test_literal_address_reads_every_form_a_resolver_accepts(host: str,
                                                             address: str | None) -> None:
    got = literal_address(host)
    assert (str(got) if got else None) == address


def test_allow_list_and_switch() -> None:
    policy = AddressPolicy.from_options(Options(allow_cidrs=("127.0.0.2/32", "10.0.0.0/8")))
    assert policy.refusal(ipaddress.ip_address("127.0.0.2")) is None
    assert policy.refusal(ipaddress.ip_address("10.9.9.9")) is None
    assert policy.refusal(ipaddress.ip_address("127.0.0.1")) == "loopback"
    with pytest.raises(BlockedAddress, match="--allow-private"):
        policy.check_literal("2130706433")
    everything = AddressPolicy.from_options(Options(allow_private=True))
    assert everything.refusal(ipaddress.ip_address("169.254.169.254")) is None
    for bad in (("10.0.0.0/33",), ("example.com",), "10.0.0.0/8"):
        with pytest.raises(OptionsError):
            Options(allow_cidrs=bad)  # type: ignore[arg-type]


# -- the fetcher ------------------------------------------------------------------------


def test_redirect_from_outside_to_loopback_is_refused(http_server: TestServer,
                                                      outside: ThreadingHTTPServer) -> None:
    inside = http_server.url("/article.html?token=ssrf-redirect")
    r = _fetch(f"{_base(outside)}/to?u={inside}")
    assert r.error is not None and r.error.kind is ErrorKind.BLOCKED_ADDRESS, r.error
    assert "127.0.0.1" in r.error.message and "--allow-private" in r.error.message
    assert r.content is None and r.redirects == [inside]
    assert http_server.count("/article.html", "ssrf-redirect") == 0  # never reached
    # the same chain with loopback opened is followed: the refusal was the policy's
    r = _fetch(f"{_base(outside)}/to?u={inside}", allow_private=True)
    assert r.ok and ARTICLE_PHRASES[0].encode() in (r.content or b"")


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "127.1", "localhost",
                                  "[::ffff:127.0.0.1]"])
def test_loopback_in_any_spelling_is_refused(http_server: TestServer, host: str) -> None:
    token = f"spelling-{host.strip('[]').replace(':', '-')}"
    url = f"http://{host}:{http_server.port}/article.html?token={token}"
    r = _fetch(url)
    assert r.error is not None and r.error.kind is ErrorKind.BLOCKED_ADDRESS, r.error
    assert http_server.count("/article.html", token) == 0
    if host != "[::ffff:127.0.0.1]":  # the server listens on IPv4 only
        assert _fetch(url, allow_cidrs=("127.0.0.1/32",)).ok  # opened: it is reached


@pytest.mark.parametrize("first", [OUTSIDE, "127.0.0.1"])
def test_the_address_checked_is_the_address_connected_to(
        http_server: TestServer, outside: ThreadingHTTPServer,
        monkeypatch: pytest.MonkeyPatch, first: str) -> None:
    """DNS rebinding: a name whose first answer is checked, and whose later answers are
    loopback. An allowed first answer is the one connected to (one lookup, no second one
    to be fooled by); a loopback first answer is refused."""
    real = socket.getaddrinfo
    lookups: list[str] = []

    def rebinding(host: str, *args: Any, **kw: Any) -> Any:
        if host == "rebind.test":
            host = first if not lookups else "127.0.0.1"
            lookups.append(host)
        return real(host, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    port = outside.server_address[1] if first == OUTSIDE else http_server.port
    before = len(outside.seen)  # type: ignore[attr-defined]
    r = _fetch(f"http://rebind.test:{port}/article.html?token=rebind", obey_robots=False)
    if first == OUTSIDE:
        assert r.ok, r.error
        assert outside.seen[before:] == ["/article.html?token=rebind"]  # type: ignore[attr-defined]
        assert lookups == [OUTSIDE]
    else:
        assert r.error is not None and r.error.kind is ErrorKind.BLOCKED_ADDRESS
    assert http_server.count("/article.html", "rebind") == 0


def test_a_proxy_from_the_environment_is_not_a_way_around(
        http_server: TestServer, outside: ThreadingHTTPServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", _base(outside))
    monkeypatch.setenv("http_proxy", _base(outside))
    before = len(outside.seen)  # type: ignore[attr-defined]
    r = _fetch(http_server.url("/article.html?token=via-proxy"))
    assert r.error is not None and r.error.kind is ErrorKind.BLOCKED_ADDRESS
    assert len(outside.seen) == before  # type: ignore[attr-defined]


# -- a run ------------------------------------------------------------------------------


def test_run_archives_refusals_and_opens_only_when_asked(
        http_server: TestServer, outside: ThreadingHTTPServer, tmp_path: Path) -> None:
    inside = http_server.url("/article.html?token=run-inside")
    urls = [f"{_base(outside)}/to?u={inside}",
            f"http://2130706433:{http_server.port}/article.html?token=run-decimal",
            http_server.url("/article.html?token=run-direct")]
    listing = tmp_path / "links.txt"
    listing.write_text("\n".join(urls) + "\n")
    db = tmp_path / "a.db"

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "textsieve", "run", str(listing), "--archive", str(db),
             "--host-delay", "0", "--fetch-timeout", "10", "-j", "1", *extra],
            capture_output=True, text=True, timeout=120, check=False)

    p = run("--allow-cidr", f"{OUTSIDE}/32")
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    with Archive(db, readonly=True) as a:
        kinds = [a.document(i).error.kind for (i,) in a.conn.execute(  # type: ignore[union-attr]
            "SELECT id FROM items WHERE parent_id IS NULL ORDER BY id")]
    assert kinds == [ErrorKind.BLOCKED_ADDRESS] * 3
    for token in ("run-inside", "run-decimal", "run-direct"):
        assert http_server.count("/article.html", token) == 0
    p = run("--allow-private", "--retry-errors")  # asked for: now they are fetched
    assert p.returncode == 0, p.stderr
    assert http_server.count("/article.html", "run-direct") == 1


class _DeadDns:
    """A real DNS server on 127.0.0.1 that reads every query and never answers, and a stub
    resolver that asks it (no timeout of its own, like a resolver stuck on a dead server)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.queries: list[bytes] = []
        self._clients: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                data, _ = self.sock.recvfrom(512)
            except OSError:
                return
            self.queries.append(data)  # read and dropped

    def lookup(self, host: str, port: int) -> list[tuple[Any, ...]]:
        qname = b"".join(bytes([len(p)]) + p.encode("ascii") for p in host.split(".")) + b"\0"
        query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + qname + b"\x00\x01\x00\x01"
        client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._clients.append(client)
        client.sendto(query, self.sock.getsockname())
        with client:
            client.recv(512)  # blocks until an answer that never comes (or the test ends)
        raise socket.gaierror(socket.EAI_AGAIN, "no answer")

    def close(self) -> None:
        """Wake the stuck lookups (a datagram each: they end as a DNS failure), then close."""
        for client in self._clients:
            self.sock.sendto(b"bye", client.getsockname())
        self.sock.close()


@pytest.fixture
def dead_dns() -> Iterator[_DeadDns]:
    dns = _DeadDns()
    yield dns
    dns.close()


@pytest.mark.parametrize("robots", [False, True], ids=["page", "robots-first"])
def test_a_resolver_that_never_answers_ends_in_a_timeout(dead_dns: _DeadDns,
                                                         robots: bool) -> None:
    """A fetch whose name lookup hangs ends at its deadline as ``timeout``, not never."""
    options = Options(fetch_timeout=1.5, connect_timeout=10.0, retries=1, backoff=0.1,
                      per_host_delay=0.0, obey_robots=robots)
    policy = AddressPolicy(lookup=dead_dns.lookup)
    box: list[FetchResult] = []
    with Fetcher(options, policy=policy) as f:
        t = threading.Thread(target=lambda: box.append(f.fetch("http://never.example/a")),
                             daemon=True)
        t.start()
        t.join(60)  # without a lookup deadline this never returns: the stub waits forever
        assert not t.is_alive(), "the fetch hung in DNS resolution"
    [r] = box
    assert r.error is not None and r.error.kind is ErrorKind.TIMEOUT, r.error
    assert "DNS lookup of never.example timed out" in r.error.message
    assert dead_dns.queries  # the lookup did reach the (dead) server
