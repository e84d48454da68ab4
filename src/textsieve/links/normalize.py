"""One normal form for URLs, so a link given ten ways is fetched once.

Scheme and host lower-cased (IDNA host kept as given in Unicode-free punycode), default
ports dropped, dot segments resolved, empty path made "/", percent-encoding normalised
(unreserved characters decoded, hex upper-cased), query parameters sorted with tracking
parameters (utm_*, fbclid, gclid, ...) removed, fragment dropped. IPv6 literals keep their
brackets (in compressed form). Credentials (``user:secret@``) are dropped: a normal form is
what the archive stores, and a password must never land there.

A URL that cannot be parsed (port 99999, a broken IPv6 literal, no host) raises ``BadUrl``;
callers turn it into a per-item ``bad_url`` record instead of stopping a run.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

TRACKING_PARAMS = frozenset({
    "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "mc_cid", "mc_eid",
    "igshid", "yclid", "_hsenc", "_hsmi", "mkt_tok", "ref", "ref_src", "ref_url", "src",
    "spm", "vero_conv", "vero_id", "oly_anon_id", "oly_enc_id", "rb_clickid", "s_cid",
    "cmpid", "zanpid", "ncid", "sr_share", "share", "__s", "trk", "trkcampaign",
})
_TRACKING_PREFIXES = ("utm_", "pk_", "mtm_", "hsa_", "at_", "itm_")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SAFE_PATH = "/:@!$&'()*+,;=-._~"


class BadUrl(ValueError):
    """A URL that cannot be parsed as http(s) (bad port, broken IPv6 literal, no host)."""


def strip_userinfo(url: str) -> str:
    """``url`` without ``user:secret@``, even when the rest of it is malformed.

    Done on the raw text rather than through ``urlsplit`` so that a URL too broken to parse
    still never carries its password into the archive or a log line.
    """
    url = url.strip()
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)", url)
    if m is None or "@" not in m.group(2):
        return url
    return m.group(1) + m.group(2).rpartition("@")[2] + url[m.end():]


def check_url(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of an http(s) URL, the host in its normal form (lower-case,
    IDNA, IPv6 compressed inside brackets); ``BadUrl`` for anything unparseable.
    Other schemes come back with an empty host: they are refused elsewhere as unsupported.
    """
    try:
        parts = urlsplit(url.strip())
        port = parts.port  # raises for 99999 or "x"
    except ValueError as exc:
        raise BadUrl(f"malformed URL {strip_userinfo(url)!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        return scheme, "", port
    raw_host = parts.netloc.rpartition("@")[2]
    if raw_host.startswith("["):
        literal = (parts.hostname or "").split("%", 1)[0]
        try:
            host = f"[{ipaddress.IPv6Address(literal).compressed}]"
        except ValueError:
            raise BadUrl(f"malformed IPv6 address in {strip_userinfo(url)!r}") from None
    else:
        host = (parts.hostname or "").rstrip(".")
        if not host:
            raise BadUrl(f"URL without a host: {strip_userinfo(url)!r}")
        try:
            host = host.encode("idna").decode("ascii") if not host.isascii() else host.lower()
        except UnicodeError:
            host = host.lower()
    return scheme, host, port


def is_tracking_param(name: str) -> bool:
    low = name.lower()
    return low in TRACKING_PARAMS or low.startswith(_TRACKING_PREFIXES)


def normalize_url(url: str, drop: frozenset[str] = frozenset()) -> str:
    """The canonical form of an http(s) URL (other schemes are returned stripped);
    ``BadUrl`` when it cannot be parsed.

    ``drop``: more query parameter names (lower-case) to strip, beyond the tracking ones.
    """
    url = url.strip()
    scheme, host, port = check_url(url)
    if scheme not in ("http", "https"):
        return url
    parts = urlsplit(url)
    port = port if port and port != _DEFAULT_PORTS[scheme] else None
    netloc = host if port is None else f"{host}:{port}"
    path = _normalize_path(parts.path)
    query = _normalize_query(parts.query, drop)
    return urlunsplit((scheme, netloc, path, query, ""))


_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _normalize_path(path: str) -> str:
    if not path:
        return "/"
    trailing = path.endswith("/")
    path = posixpath.normpath(path)
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    if trailing and not path.endswith("/"):
        path += "/"
    # One spelling per path: escapes of unreserved characters decoded, the others kept
    # (upper-case hex: %2F stays an escaped slash), raw spaces and non-ASCII escaped.
    path = _PCT.sub(lambda m: chr(int(m.group(1), 16)) if chr(int(m.group(1), 16))
                    in _UNRESERVED else f"%{m.group(1).upper()}", path)
    return quote(path, safe=_SAFE_PATH + "%")


def _normalize_query(query: str, drop: frozenset[str] = frozenset()) -> str:
    if not query:
        return ""
    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True)
             if not is_tracking_param(k) and k.lower() not in drop]
    pairs.sort()
    return urlencode(pairs, quote_via=quote, safe="/:@!$'()*,;-._~")


def url_key(url: str) -> str:
    """The archive key of a URL: its normal form, or for a URL that cannot be parsed the
    URL as given minus credentials, so the bad URL still gets its own (stable) record and
    a re-run finds it instead of dying on it again."""
    try:
        return normalize_url(url)
    except BadUrl:
        return strip_userinfo(url)
