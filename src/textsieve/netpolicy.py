"""Which network addresses textsieve may connect to: the one address policy of every fetch.

URLs come from hostile content (mails, pages, redirects): without a policy a page on an
outside host that redirects to ``http://127.0.0.1:8080/admin`` or to the cloud metadata
service (``169.254.169.254``) gets fetched and archived, so the archive leaks what only this
machine can see (server-side request forgery). The policy refuses every address that is not
public: loopback, private (RFC 1918, fc00::/7), link-local (169.254/16, fe80::/10, which
holds the metadata services), CGNAT (100.64/10), multicast, unspecified, reserved and
documentation ranges, and the same addresses hidden in IPv4-mapped, 6to4 and NAT64 IPv6.
``Options.allow_private`` opens them all; ``Options.allow_cidrs`` opens chosen networks
(the demo opens its own 127.0.0.1 server that way).

The check is made where it cannot be dodged: on the addresses the name RESOLVES to, at
connect time, by ``GuardedBackend`` (an httpcore network backend). It resolves a name once,
vets every address, and connects to a vetted address itself, so a DNS answer that changes
between a check and the connect (DNS rebinding) gains nothing; TLS still names the host
(SNI, certificate) and the Host header is untouched. Every redirect hop opens its
connections through the same backend. Spellings of an IPv4 address that resolvers accept
(``2130706433``, ``0x7f.1``, ``017700000001``) are resolved to the address they mean, so
they are caught like any name; ``literal_address`` lets a caller refuse them before any
connection (the fetcher does, for a clear early error).

Resolution has a deadline of its own: ``getaddrinfo`` cannot be interrupted, and a
resolver that never answers holds it for as long as the system resolver's retries last
(``timeout`` x ``attempts`` x servers x search domains: a minute is common), far past a
fetch's deadline. ``AddressPolicy.resolve`` therefore runs the lookup in a daemon thread
and stops waiting at the connect timeout httpcore passes down (the fetch clamps it to what
is left of its deadline); the lookup left behind ends when the system resolver gives up.
It is then ``DnsTimeout``, a ``socket.timeout``, which the backend raises as
``httpcore.ConnectTimeout`` and the fetcher types as ``timeout``.

The future REST service uses the same ``AddressPolicy``.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpcore

if TYPE_CHECKING:
    from .options import Options

log = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean...
    "169.254.170.2",  # AWS ECS task credentials
    "100.100.100.200",  # Alibaba Cloud
    "fd00:ec2::254",  # AWS over IPv6
))
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


# getaddrinfo's shape: (host, port) -> [(family, type, proto, canonname, sockaddr), ...]
Lookup = Callable[[str, int], list[tuple]]


def system_lookup(host: str, port: int) -> list[tuple]:
    """The system resolver (hosts file, DNS, whatever nsswitch says), TCP addresses."""
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


class DnsTimeout(socket.timeout):
    """The name did not resolve within the time the connection had."""


def lookup_within(lookup: Lookup, host: str, port: int, timeout: float | None
                  ) -> list[tuple]:
    """``lookup(host, port)``, given up after ``timeout`` seconds (None: wait for it).

    The lookup runs in a daemon thread: a blocking resolver call cannot be cancelled, so
    it is left to finish on its own (the system resolver gives up eventually) while the
    caller moves on with ``DnsTimeout``.
    """
    if timeout is None:
        return lookup(host, port)
    box: list[object] = []
    done = threading.Event()

    def run() -> None:
        try:
            box.append(lookup(host, port))
        except BaseException as exc:  # handed to the waiting caller, re-raised there
            box.append(exc)
        done.set()

    threading.Thread(target=run, name=f"dns {host}", daemon=True).start()
    if not done.wait(max(0.0, timeout)):
        raise DnsTimeout(f"DNS lookup of {host} timed out after {timeout:.1f} s")
    result = box[0]
    if isinstance(result, BaseException):
        raise result
    return result  # type: ignore[return-value]


class BlockedAddress(Exception):
    """A connection the address policy refuses; ``fetch`` reports it as ``blocked_address``."""

    def __init__(self, host: str, address: str, reason: str) -> None:
        self.host, self.address, self.reason = host, address, reason
        where = host if host == address else f"{host} ({address})"
        bits = 128 if ":" in address else 32
        super().__init__(
            f"{where} is a {reason} address: refused for safety (a link could reach this "
            f"machine or its network); --allow-private or --allow-cidr {address}/{bits} "
            f"opens it")


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64), which is where it goes."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def classify(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public address (a word for the error message), or None."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
        inner = _embedded_v4(ip)
        if inner is not None:
            return classify(inner)
    if ip in _METADATA:
        return "cloud metadata"
    if ip.is_loopback:
        return "loopback"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_link_local:
        return "link-local"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return "shared (CGNAT)"
    if ip.is_multicast:
        return "multicast"
    if ip.is_private:
        return "private"
    if ip.is_reserved:
        return "reserved"
    if not ip.is_global:
        return "non-public"
    return None


def literal_address(host: str) -> IPAddress | None:
    """The address a URL's host names literally, in any form a resolver accepts: dotted
    IPv4, ``[v6]``, and the decimal, octal, hex and short forms of IPv4 (``2130706433``,
    ``0177.1``, ``0x7f000001``). None for a name."""
    host = host.strip().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if host and all(c in "0123456789abcdefxABCDEFX." for c in host) and host[0].isdigit():
        try:  # inet_aton is the parser resolvers use for these spellings
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


@dataclass(frozen=True)
class AddressPolicy:
    """Which addresses may be connected to; made from ``Options`` (``from_options``)."""

    allow_private: bool = False
    allow: tuple[IPNetwork, ...] = ()
    # How names are resolved: the system resolver; tests point it at a local DNS server.
    lookup: Lookup = field(default=system_lookup, compare=False, repr=False)

    @classmethod
    def from_options(cls, options: Options) -> AddressPolicy:
        return cls(allow_private=options.allow_private,
                   allow=tuple(parse_cidr(c) for c in options.allow_cidrs))

    def refusal(self, ip: IPAddress) -> str | None:
        """Why a connection to ``ip`` is refused (None: allowed)."""
        if self.allow_private:
            return None
        plain = ipaddress.ip_address(str(ip).split("%", 1)[0])
        if any(plain.version == net.version and plain in net for net in self.allow):
            return None
        return classify(plain)

    def check_literal(self, host: str) -> None:
        """Raise ``BlockedAddress`` when ``host`` is an address literal that is refused."""
        ip = literal_address(host)
        if ip is not None:
            reason = self.refusal(ip)
            if reason is not None:
                raise BlockedAddress(host, str(ip), reason)

    def resolve(self, host: str, port: int, timeout: float | None = None) -> list[str]:
        """Every address of ``host`` that may be connected to, in resolver order.

        ``socket.gaierror`` when the name does not resolve; ``DnsTimeout`` when it does not
        within ``timeout`` seconds; ``BlockedAddress`` when none of its addresses is allowed
        (a name resolving to a mix is served by its public ones).
        """
        literal = literal_address(host) is not None  # no DNS involved: no thread needed
        infos = lookup_within(self.lookup, host, port, None if literal else timeout)
        allowed: list[str] = []
        blocked: tuple[str, str] | None = None
        for *_, sockaddr in infos:
            address = str(sockaddr[0])
            ip = ipaddress.ip_address(address.split("%", 1)[0])
            reason = self.refusal(ip)
            if reason is None:
                if address not in allowed:
                    allowed.append(address)
            elif blocked is None:
                blocked = (address, reason)
        if not allowed:
            address, reason = blocked or (host, "unresolvable")
            raise BlockedAddress(host, address, reason)
        if blocked is not None:
            log.info("%s: skipping its %s address %s", host, blocked[1], blocked[0])
        return allowed


def parse_cidr(text: str) -> IPNetwork:
    """``10.0.0.0/8``, ``127.0.0.2`` (one address) or ``fd00::/8``; ValueError otherwise."""
    return ipaddress.ip_network(text.strip(), strict=False)


class GuardedBackend(httpcore.NetworkBackend):
    """An httpcore network backend that connects only to addresses the policy allows.

    httpcore hands ``connect_tcp`` the host name of the URL; this resolves it once, vets
    the addresses, and connects to a vetted one (TLS is started later by httpcore with the
    original name as SNI). ``BlockedAddress`` passes through httpx untouched (it is not an
    httpcore error), so the fetcher can type it.
    """

    def __init__(self, policy: AddressPolicy) -> None:
        self.policy = policy
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None
                    ) -> httpcore.NetworkStream:
        self.policy.check_literal(host)
        started = time.monotonic()
        try:  # the name is resolved within the connect timeout, not beyond it
            addresses = self.policy.resolve(host, port, timeout)
        except DnsTimeout as exc:
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except socket.gaierror as exc:  # typed as DNS by the fetcher, from the cause
            raise httpcore.ConnectError(str(exc)) from exc
        if timeout is not None:  # each address gets what the lookup left over
            timeout = max(0.001, timeout - (time.monotonic() - started))
        last: Exception | None = None
        for address in addresses:
            try:
                return self._inner.connect_tcp(address, port, timeout=timeout,
                                               local_address=local_address,
                                               socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None
                            ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not fetched")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)
