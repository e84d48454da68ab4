"""Gmail: ``gmail:LABEL`` through the Gmail REST API (read-only scope).

Mail is fetched with ``messages.get?format=raw`` so Gmail mail goes through the same parser
as every other source. The label name is resolved to its id with ``labels.list``; a first
run lists the label's messages (paging with ``nextPageToken``) and fetches them oldest
first; later runs ask ``history.list`` for what was added since the stored history id
(new mail, or old mail given the label). Gmail keeps history for about a week: a 404 on
the stored id means it expired, and the label is synced in full again (the archive
already knows the items, so that costs requests, not duplicates).

Authorisation is Google's installed-app OAuth flow. ``authorize()`` runs it once (a
loopback redirect on 127.0.0.1, the consent URL printed for the user to open) and stores
the token file (access and refresh token, expiry, client id and secret, mode 0600); runs
then refresh the access token with the refresh token when it has expired, and rewrite
the file. The API base URL and token URL come from ``Options`` so the same client code
runs against a local fake in the tests.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import random
import secrets
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import httpx

from ...fetch import parse_retry_after
from ...model import RawMail
from ...options import Options
from .base import MailAuthError, MailConnectionError, MailSourceError, iso_from_epoch_ms, mail_ref

SCOPE = "https://www.googleapis.com/auth/gmail.readonly"
AUTH_URL = "https://accounts.google.com/o/oauth2/v2/auth"
PAGE_SIZE = 500  # messages.list / history.list maxResults (the API's maximum)
_EARLY = 60  # refresh an access token this many seconds before it expires


def default_token_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "textsieve" / "gmail-token.json"


class HistoryExpired(Exception):
    """The stored history id is older than what Gmail keeps: sync in full."""


class GmailApiError(MailConnectionError):
    """An API call that failed for good; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


# --------------------------------------------------------------------------------------
# Token file
# --------------------------------------------------------------------------------------


class Token:
    """The stored OAuth token; refreshed in place (and on disk) when it has expired."""

    def __init__(self, path: Path, token_url: str, data: dict[str, Any] | None = None) -> None:
        self.path = path
        self.token_url = token_url
        self.data: dict[str, Any]
        if data is not None:  # a new token (first authorisation), not yet on disk
            self.data = data
            return
        try:
            self.data = json.loads(path.read_text())
        except FileNotFoundError:
            raise MailAuthError(f"no Gmail token at {path}: run `textsieve gmail-auth` first"
                                ) from None
        except (OSError, ValueError) as exc:
            raise MailAuthError(f"unreadable Gmail token file {path}: {exc}") from None

    def expired(self) -> bool:
        expiry = self.data.get("expiry")
        if not self.data.get("access_token") or not expiry:
            return True
        try:
            when = datetime.fromisoformat(str(expiry).replace("Z", "+00:00"))
        except ValueError:
            return True
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when <= datetime.now(UTC) + timedelta(seconds=_EARLY)

    def refresh(self, client: httpx.Client) -> None:
        d = self.data
        if not d.get("refresh_token") or not d.get("client_id"):
            raise MailAuthError(f"the Gmail token in {self.path} cannot be refreshed (no "
                                "refresh token or client id): run `textsieve gmail-auth` again")
        form = {"grant_type": "refresh_token", "refresh_token": d["refresh_token"],
                "client_id": d["client_id"]}
        if d.get("client_secret"):
            form["client_secret"] = d["client_secret"]
        self._update(_token_request(client, self.token_url, form))

    def _update(self, answer: dict[str, Any]) -> None:
        self.data["access_token"] = answer["access_token"]
        expires_in = float(answer.get("expires_in") or 3600)
        self.data["expiry"] = (datetime.now(UTC) + timedelta(seconds=expires_in)).isoformat()
        if answer.get("refresh_token"):  # Google may rotate it
            self.data["refresh_token"] = answer["refresh_token"]
        save_token(self.path, self.data)

    def bearer(self, client: httpx.Client) -> str:
        if self.expired():
            self.refresh(client)
        return str(self.data["access_token"])


def save_token(path: Path, data: dict[str, Any]) -> None:
    """Write the token file atomically, readable by its owner only (it is a credential)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2)
    os.replace(tmp, path)


def _token_request(client: httpx.Client, url: str, form: dict[str, str]) -> dict[str, Any]:
    try:
        r = client.post(url, data=form)
    except httpx.HTTPError as exc:
        raise MailConnectionError(f"cannot reach the OAuth token endpoint {url}: {exc}") from None
    if r.status_code != 200:
        raise MailAuthError(f"the OAuth token endpoint refused ({r.status_code}): "
                            f"{r.text[:200]}")
    try:
        answer = r.json()
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not answer.get("access_token"):
        raise MailAuthError(f"unexpected answer from the token endpoint: {r.text[:200]}")
    return answer


# --------------------------------------------------------------------------------------
# API client
# --------------------------------------------------------------------------------------


class GmailClient:
    """The few Gmail API calls we use, with retries (429, 5xx, connection errors) and one
    token refresh on a 401."""

    def __init__(self, options: Options, token_file: Path | None = None) -> None:
        self.options = options
        self.base = options.gmail_api_base.rstrip("/") + "/gmail/v1/users/me"
        path = token_file or (Path(options.gmail_token_file) if options.gmail_token_file
                              else default_token_file())
        self.http = httpx.Client(
            timeout=httpx.Timeout(options.read_timeout, connect=options.connect_timeout),
            headers={"User-Agent": options.agent}, trust_env=False)
        self.token = Token(path, options.gmail_token_url)

    def close(self) -> None:
        self.http.close()

    def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        url = self.base + path
        o = self.options
        refreshed = False
        attempt = 0
        while True:
            headers = {"Authorization": f"Bearer {self.token.bearer(self.http)}"}
            try:
                r = self.http.get(url, params=params, headers=headers)
            except httpx.TransportError as exc:
                if attempt >= o.retries:
                    raise GmailApiError(f"Gmail API {path}: {exc}") from None
                attempt += 1
                time.sleep(self._backoff(attempt, None) or 0.0)  # None only with a Retry-After
                continue
            if r.status_code == 200:
                try:
                    return dict(r.json())
                except ValueError:
                    raise GmailApiError(f"Gmail API {path}: not JSON", 200) from None
            if r.status_code == 401 and not refreshed:  # revoked or clock skew: refresh once
                self.token.refresh(self.http)
                refreshed = True
                continue
            if (r.status_code == 429 or r.status_code >= 500) and attempt < o.retries:
                attempt += 1
                wait = self._backoff(attempt, parse_retry_after(r.headers.get("Retry-After")))
                if wait is not None:
                    time.sleep(wait)
                    continue
            if r.status_code == 404 and path == "/history":
                raise HistoryExpired(r.text[:200])
            if r.status_code in (401, 403):
                raise MailAuthError(f"Gmail API {path} refused ({r.status_code}): "
                                    f"{r.text[:200]}")
            raise GmailApiError(f"Gmail API {path}: HTTP {r.status_code} {r.text[:200]}",
                                r.status_code)

    def _backoff(self, attempt: int, retry_after: float | None) -> float | None:
        if retry_after is not None:
            return retry_after if retry_after <= self.options.max_retry_after else None
        base = self.options.backoff * 2 ** (attempt - 1)
        return base * (0.5 + random.random())

    def pages(self, path: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every page of a list call (``nextPageToken`` paging); yields the page objects."""
        token: str | None = None
        while True:
            page = self.get(path, {**params, **({"pageToken": token} if token else {})})
            yield page
            token = page.get("nextPageToken")
            if not token:
                return


# --------------------------------------------------------------------------------------
# The source
# --------------------------------------------------------------------------------------


class GmailSource:
    """The messages carrying one Gmail label; see the module docstring."""

    def __init__(self, label: str, options: Options | None = None,
                 token_file: Path | None = None) -> None:
        if not label:
            raise MailSourceError("gmail: needs a label name (gmail:Links)")
        self.label = label
        self.spec = f"gmail:{label}"
        self.options = options or Options()
        self.token_file = token_file
        self._state: dict[str, str] = {}
        self.full_sync: bool | None = None  # how the last mails() ran (for the report)

    def mails(self, state: dict[str, str] | None = None) -> Iterator[RawMail]:
        state = state or {}
        api = GmailClient(self.options, self.token_file)
        try:
            names = {lab["id"]: lab.get("name") or lab["id"]
                     for lab in api.get("/labels").get("labels", [])}
            label_id = next((i for i, n in names.items() if n == self.label), None)
            if label_id is None:
                label_id = next((i for i, n in names.items()
                                 if n.lower() == self.label.lower()), None)
            if label_id is None:
                raise MailSourceError(f"Gmail has no label {self.label!r} (labels: "
                                      f"{', '.join(sorted(names.values())[:20])})")
            ids: list[str] | None = None
            history_id = ""
            start = state.get("history_id")
            if start and state.get("label_id") == label_id:
                with contextlib.suppress(HistoryExpired):
                    ids, history_id = self._added_since(api, label_id, start)
            self.full_sync = ids is None
            if ids is None:
                # The mark is taken before listing: anything added while we list shows up in
                # the next run's history (and, listed twice, is still one item).
                history_id = str(api.get("/profile")["historyId"])
                ids = self._all_ids(api, label_id)
            self._state = {}
            for mid in ids:
                msg = self._get(api, mid)
                if msg is not None:
                    yield self._raw_mail(msg, names)
            self._state = {"label_id": label_id, "history_id": history_id}
        finally:
            api.close()

    def _all_ids(self, api: GmailClient, label_id: str) -> list[str]:
        ids: list[str] = []
        for page in api.pages("/messages", {"labelIds": label_id,
                                                 "maxResults": PAGE_SIZE}):
            ids.extend(m["id"] for m in page.get("messages", []))
        ids.reverse()  # the API lists newest first: archive in the order mail arrived
        return list(dict.fromkeys(ids))

    def _added_since(self, api: GmailClient, label_id: str, start: str
                     ) -> tuple[list[str], str]:
        ids: list[str] = []
        latest = start
        params = {"startHistoryId": start, "labelId": label_id, "maxResults": PAGE_SIZE,
                  "historyTypes": ["messageAdded", "labelAdded"]}
        for page in api.pages("/history", params):
            latest = str(page.get("historyId") or latest)
            for h in page.get("history", []):
                for added in h.get("messagesAdded", []):
                    ids.append(added["message"]["id"])
                for added in h.get("labelsAdded", []):
                    if label_id in added.get("labelIds", []):
                        ids.append(added["message"]["id"])
        return list(dict.fromkeys(ids)), latest

    def _get(self, api: GmailClient, mid: str) -> dict[str, Any] | None:
        try:
            return api.get(f"/messages/{quote(mid, safe='')}", {"format": "raw"})
        except GmailApiError as exc:
            if exc.status == 404:  # deleted since it was listed
                return None
            raise

    def _raw_mail(self, msg: dict[str, Any], names: dict[str, str]) -> RawMail:
        data = str(msg.get("raw", ""))
        raw = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
        labels = tuple(names.get(i, i) for i in msg.get("labelIds", []))
        ref = mail_ref(raw, self.spec, labels=labels, uid=str(msg["id"]),
                       fallback_date=iso_from_epoch_ms(msg.get("internalDate")))
        return RawMail(raw, ref)

    def new_state(self) -> dict[str, str]:
        """The label id and the history id to ask ``history.list`` from next time; set
        only once every message of the run was yielded (a partial run keeps the old mark)."""
        return dict(self._state)


# --------------------------------------------------------------------------------------
# First authorisation (installed-app flow with a loopback redirect and PKCE)
# --------------------------------------------------------------------------------------


def authorize(client_id: str, client_secret: str | None, options: Options | None = None, *,
              token_file: Path | None = None, show: Callable[[str], None] = print,
              auth_url: str = AUTH_URL, wait: float = 300.0) -> Path:
    """Ask the user's consent once and store the token file; returns its path.

    A one-shot HTTP server on 127.0.0.1 receives Google's redirect with the code; the
    consent URL is handed to ``show`` (printed by default) for the user to open.
    """
    options = options or Options()
    path = token_file or (Path(options.gmail_token_file) if options.gmail_token_file
                          else default_token_file())
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()
                                         ).decode().rstrip("=")
    state = secrets.token_urlsafe(16)
    got: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            q = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}
            if q.get("state") == state:
                got.update(q)
            body = b"textsieve: authorised, you can close this page." if "code" in q else \
                b"textsieve: authorisation failed or refused."
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    server.timeout = 0.5
    redirect = f"http://127.0.0.1:{server.server_address[1]}/"
    show(auth_url + "?" + urlencode({
        "client_id": client_id, "redirect_uri": redirect, "response_type": "code",
        "scope": SCOPE, "access_type": "offline", "prompt": "consent", "state": state,
        "code_challenge": challenge, "code_challenge_method": "S256"}))
    deadline = time.monotonic() + wait
    try:
        while not got and time.monotonic() < deadline:
            server.handle_request()  # one request, or None after server.timeout
    finally:
        server.server_close()
    if "code" not in got:
        raise MailAuthError(f"no authorisation received: {got.get('error', 'timed out')}")
    form = {"grant_type": "authorization_code", "code": got["code"], "redirect_uri": redirect,
            "client_id": client_id, "code_verifier": verifier}
    if client_secret:
        form["client_secret"] = client_secret
    with httpx.Client(timeout=httpx.Timeout(options.read_timeout,
                                            connect=options.connect_timeout),
                      trust_env=False) as http:
        answer = _token_request(http, options.gmail_token_url, form)
    token = Token(path, options.gmail_token_url,
                  {"client_id": client_id, "client_secret": client_secret})
    token._update(answer)
    return path
