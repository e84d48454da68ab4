"""The one request guard of ``textsieve serve`` and of the reading room: every route (the
API, Tika's routes, jobs and runs, the docs, the web pages) passes it before anything runs.

What it decides, once, for all of them:

- **Host.** Without a token the service answers loopback names only (``localhost``,
  ``127.0.0.1``, ``[::1]``, any port) and the names given with ``--allowed-host``: a web
  page whose DNS name is rebound to 127.0.0.1 sends its own name as Host and is refused,
  so it can neither read the archive nor start work.
- **Origin.** A request that changes state (any method but GET, HEAD, OPTIONS) from a
  browser must come from the page's own origin: a foreign ``Origin`` (or ``null``) is
  refused, and so is ``Sec-Fetch-Site`` other than ``same-origin`` or ``none``.
- **Token.** With a token, every route needs it (``/healthz`` alone answers without, for
  liveness probes; the stylesheet and the login page of the reading room too, which hold
  nothing): as ``Authorization: Bearer TOKEN``, or the session cookie the reading room's
  login form sets (a value derived from the token, so it is worth nothing once the token
  changes). A request authenticated by the cookie that changes state must say where it
  comes from (Origin or Sec-Fetch-Site): browsers always do, and the forms carry a CSRF
  token besides.

A refusal is answered in the route's language: typed JSON on the API, a page in the
reading room (its login form for a missing token). Pure ASGI, no per-request task: the
guard costs microseconds on the hot path of ``PUT /v1/extract``.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlsplit

from ..errors import UsageError

MIN_TOKEN = 16
SESSION_COOKIE = "textsieve_session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
# (scope, base path of the pages, status, message, login form?) -> an ASGI response
PageRenderer = Callable[[Scope, str, int, str, bool], ASGIApp]


def check_token(token: str | None, where: str = "the token") -> str | None:
    """A token fit to guard a service, or a ``UsageError`` saying what is wrong with it:
    at least ``MIN_TOKEN`` characters, visible ASCII only (no space, tab or newline: a
    token read with a stray blank would never match what clients send)."""
    if token is None:
        return None
    if not token:
        raise UsageError(f"{where} is empty")
    if any(not 0x21 <= ord(c) <= 0x7E for c in token):
        raise UsageError(f"{where} holds whitespace or characters that are not visible "
                         "ASCII; use letters, digits and punctuation only")
    if len(token) < MIN_TOKEN:
        raise UsageError(f"{where} is {len(token)} characters long: use at least "
                         f"{MIN_TOKEN} (python -c 'import secrets; "
                         "print(secrets.token_urlsafe(32))')")
    return token


@functools.lru_cache(maxsize=256)  # per request: a few names, asked again and again
def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(value: str) -> str:
    """The name of a Host header (or an Origin's netloc) without its port, lower case,
    an IPv6 literal without its brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    name, sep, port = value.rpartition(":")
    if sep and port.isdigit() and ":" not in name:
        value = name
    return value.rstrip(".")


@dataclass(frozen=True)
class Policy:
    """Who may be answered: the token (None: loopback names only) and the extra names a
    loopback service answers to (``--allowed-host``, for a proxy in front of it)."""

    token: str | None = field(default=None, repr=False)  # a secret: never in its repr
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        check_token(self.token)
        object.__setattr__(self, "allowed_hosts",
                           frozenset(host_name(h) for h in self.allowed_hosts if h))

    @property
    def session(self) -> str:
        """The session cookie's value: derived from the token, never the token itself."""
        assert self.token is not None
        return hmac.new(self.token.encode(), b"textsieve reading room session v1",
                        hashlib.sha256).hexdigest()

    def host_ok(self, host: str | None) -> bool:
        if self.token is not None:
            return True  # the token guards it; any name a client reaches it by
        if host is None:
            return True  # HTTP/1.0 without Host: no browser, no rebinding
        name = host_name(host)
        return is_loopback(name) or name in self.allowed_hosts

    def credentials(self, headers: Mapping[str, str]) -> str | None:
        """How the request proves it knows the token: ``bearer``, ``cookie`` or None."""
        assert self.token is not None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
                given.strip().encode(), self.token.encode()):
            return "bearer"
        cookie = _cookie(headers.get("cookie", ""), SESSION_COOKIE)
        if cookie and hmac.compare_digest(cookie.encode(), self.session.encode()):
            return "cookie"
        return None

    def token_matches(self, given: str) -> bool:
        """A token typed into the login form, compared in constant time."""
        return self.token is not None and hmac.compare_digest(
            given.strip().encode(), self.token.encode())


def _cookie(header: str, name: str) -> str | None:
    if name not in header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # a malformed Cookie header is no credential
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def cross_site(method: str, headers: Mapping[str, str],
               ours: frozenset[str] = frozenset()) -> str | None:
    """Why a state-changing request is refused as coming from another site, or None. The
    page's origin must be the host asked (or one of ``ours``, ``--allowed-host``: a proxy
    in front may pass the request on under another Host)."""
    if method in SAFE_METHODS:
        return None
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"a {site} request may not change anything here"
    origin = headers.get("origin")
    if origin is not None:
        host = headers.get("host", "")
        try:
            netloc = urlsplit(origin).netloc
        except ValueError:
            netloc = ""
        if origin == "null" or not netloc or (netloc.lower() != host.lower()
                                              and host_name(netloc) not in ours):
            return "a request from another origin may not change anything here"
    return None


class Guard:
    """ASGI middleware applying a ``Policy`` to every HTTP request of the app it wraps.

    ``public``: route paths answered without the token (the Host and Origin checks still
    hold); one ending in ``*`` covers every path that starts with what is before it.
    ``pages``: route-path prefixes whose refusals are web pages, with what renders them
    (the reading room's)."""

    def __init__(self, app: ASGIApp, policy: Policy, *, public: Iterable[str] = (),
                 pages: Mapping[str, PageRenderer] | None = None) -> None:
        self.app, self.policy = app, policy
        self.public = tuple(public)
        self.pages = dict(pages or {})

    def _public(self, path: str) -> bool:
        return any(path == p or (p.endswith("*") and path.startswith(p[:-1]))
                   for p in self.public)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        policy = self.policy
        refusal: tuple[int, str, str] | None = None
        if not policy.host_ok(headers.get("host")):
            refusal = (403, "forbidden_host", "this server answers loopback names only "
                       "(or those of --allowed-host); set a token to serve beyond it")
        elif (why := cross_site(scope["method"], headers, policy.allowed_hosts)) is not None:
            refusal = (403, "cross_site", why)
        elif policy.token is not None and not self._public(_route_path(scope)):
            how = policy.credentials(headers)
            if how is None:
                refusal = (401, "unauthorized", "a valid token is required")
            elif how == "cookie" and scope["method"] not in SAFE_METHODS and not (
                    "origin" in headers or "sec-fetch-site" in headers):
                refusal = (403, "cross_site", "a request carrying the session cookie must "
                           "say where it comes from (Origin)")
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, kind, message = refusal
        await self._refuse(scope, status, kind, message)(scope, receive, send)

    def _refuse(self, scope: Scope, status: int, kind: str, message: str) -> ASGIApp:
        path = _route_path(scope)
        for prefix, renderer in self.pages.items():
            if not prefix or path == prefix or path.startswith(prefix + "/"):
                base = scope.get("root_path", "") + prefix
                return renderer(scope, base, status, message, status == 401)
        return json_response(status, kind, message,
                             {"WWW-Authenticate": "Bearer"} if status == 401 else None)


def json_response(status: int, kind: str, message: str,
                  headers: Mapping[str, str] | None = None) -> ASGIApp:
    """The API's typed error as a bare ASGI response (no framework in the way)."""
    body = json.dumps({"error": {"kind": kind, "message": message}},
                      separators=(",", ":")).encode()
    raw = [(b"content-type", b"application/json"),
           (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]

    async def respond(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body})

    return respond


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (the first of repeated ones)."""
    out: dict[str, str] = {}
    for k, v in scope.get("headers", ()):
        out.setdefault(k.decode("latin-1").lower(), v.decode("latin-1"))
    return out


def _route_path(scope: Scope) -> str:
    path: str = scope.get("path", "")
    root = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):] or "/"
    return path
