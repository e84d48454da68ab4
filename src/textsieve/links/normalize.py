"""One normal form for URLs, so a link given ten ways is fetched once.

Scheme and host lower-cased (IDNA host kept as given in Unicode-free punycode), default
ports dropped, dot segments resolved, empty path made "/", percent-encoding normalised
(unreserved characters decoded, hex upper-cased), query parameters sorted with tracking
parameters (utm_*, fbclid, gclid, ...) removed, fragment dropped.
"""

from __future__ import annotations

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


def is_tracking_param(name: str) -> bool:
    low = name.lower()
    return low in TRACKING_PARAMS or low.startswith(_TRACKING_PREFIXES)


def normalize_url(url: str, drop: frozenset[str] = frozenset()) -> str:
    """The canonical form of an http(s) URL (other schemes are returned stripped).

    ``drop``: more query parameter names (lower-case) to strip, beyond the tracking ones.
    """
    url = url.strip()
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        return url
    host = (parts.hostname or "").rstrip(".")
    try:
        host = host.encode("idna").decode("ascii") if not host.isascii() else host.lower()
    except UnicodeError:
        host = host.lower()
    port = parts.port if parts.port and parts.port != _DEFAULT_PORTS[scheme] else None
    netloc = host if port is None else f"{host}:{port}"
    if parts.username:
        creds = parts.username + (f":{parts.password}" if parts.password else "")
        netloc = f"{creds}@{netloc}"
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
