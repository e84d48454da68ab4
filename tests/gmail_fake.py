"""A small Gmail API on 127.0.0.1: the calls ``textsieve.sources.mailboxes.gmail`` makes, for real.

It is an HTTP server speaking the Gmail REST API's JSON (``/gmail/v1/users/me/...``) and
an OAuth token endpoint (``/token``), so the source's own client code is what the tests
exercise. State is a little mailbox: labels, messages (raw RFC 5322 bytes), a history log
with increasing ids. Pages are at most ``page_size`` long whatever ``maxResults`` asks,
so paging is always exercised. Every API call must carry ``Authorization: Bearer`` with
the current, unexpired access token, else 401, like Google.

Calls: labels.list, getProfile, messages.list (labelIds, pageToken), messages.get
(format=raw only), history.list (startHistoryId, labelId, historyTypes, pageToken; 404
when the start id is older than ``expire_history()`` left), POST /token (refresh_token
and authorization_code grants). ``fail_next`` queues error statuses (429, 503) to answer
before the next API calls.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

PREFIX = "/gmail/v1/users/me"
CLIENT_ID = "client-123.apps.googleusercontent.com"
CLIENT_SECRET = "shh"
REFRESH_TOKEN = "refresh-abc"
AUTH_CODE = "the-auth-code"


@dataclass
class FakeGmail:
    labels: dict[str, str] = field(default_factory=lambda: {
        "INBOX": "INBOX", "UNREAD": "UNREAD", "Label_7": "Links", "Label_9": "Other"})
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    history_id: int = 4000
    oldest_history: int = 0  # a startHistoryId below this is expired (404)
    page_size: int = 2
    access_token: str = "access-1"
    token_expires: float = 0.0  # epoch seconds; 0: never
    tokens_issued: int = 1
    token_requests: list[dict[str, str]] = field(default_factory=list)
    requests: list[tuple[str, str, dict[str, list[str]]]] = field(default_factory=list)
    fail_next: list[int] = field(default_factory=list)
    url: str = ""
    _n: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    # -- state changes made by tests -----------------------------------------------------

    def add(self, raw: bytes, labels: tuple[str, ...] = ("INBOX", "Label_7"),
            internal_ms: int | None = None) -> str:
        with self.lock:
            self._n += 1
            self.history_id += 3
            mid = f"18c{self._n:013x}"
            self.messages[mid] = {"raw": raw, "labelIds": list(labels),
                                  "internalDate": str(internal_ms or 1_700_000_000_000 + self._n),
                                  "historyId": str(self.history_id)}
            self.history.append({"id": self.history_id, "kind": "messagesAdded", "mid": mid,
                                 "labelIds": list(labels)})
            return mid

    def add_label(self, mid: str, label: str) -> None:
        with self.lock:
            self.history_id += 2
            self.messages[mid]["labelIds"].append(label)
            self.history.append({"id": self.history_id, "kind": "labelsAdded", "mid": mid,
                                 "labelIds": [label]})

    def expire_history(self) -> None:
        """Gmail forgot the history up to now: older start ids get a 404."""
        self.oldest_history = self.history_id + 1
        self.history_id += 1

    def revoke_access_token(self) -> None:
        self.access_token = "revoked-" + self.access_token

    def calls(self, path: str) -> list[dict[str, list[str]]]:
        return [q for m, p, q in self.requests if p == path]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGmail

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"code": status, "message": message}})

    def do_POST(self) -> None:
        fake = self.fake
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[-1] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        fake.requests.append(("POST", parts.path, {k: [v] for k, v in form.items()}))
        if parts.path != "/token":
            return self._error(404, "not found")
        fake.token_requests.append(form)
        ok_client = form.get("client_id") == CLIENT_ID and \
            form.get("client_secret") == CLIENT_SECRET
        grant = form.get("grant_type")
        if grant == "refresh_token":
            ok = ok_client and form.get("refresh_token") == REFRESH_TOKEN
        elif grant == "authorization_code":
            ok = ok_client and form.get("code") == AUTH_CODE and bool(form.get("code_verifier"))
        else:
            ok = False
        if not ok:
            return self._json(400, {"error": "invalid_grant"})
        with fake.lock:
            fake.tokens_issued += 1
            fake.access_token = f"access-{fake.tokens_issued}"
            fake.token_expires = time.time() + 3600
        answer = {"access_token": fake.access_token, "expires_in": 3599, "token_type": "Bearer",
                  "scope": "https://www.googleapis.com/auth/gmail.readonly"}
        if grant == "authorization_code":
            answer["refresh_token"] = REFRESH_TOKEN
        self._json(200, answer)

    def do_GET(self) -> None:
        fake = self.fake
        parts = urlsplit(self.path)
        q = parse_qs(parts.query)
        fake.requests.append(("GET", parts.path, q))
        if not parts.path.startswith(PREFIX):
            return self._error(404, "not found")
        auth = self.headers.get("Authorization", "")
        if auth != f"Bearer {fake.access_token}" or (
                fake.token_expires and time.time() > fake.token_expires):
            return self._error(401, "Request had invalid authentication credentials.")
        if fake.fail_next:
            return self._json(fake.fail_next.pop(0), {"error": {"message": "try later"}},
                              {"Retry-After": "0"})
        path = parts.path[len(PREFIX):]
        one = {k: v[-1] for k, v in q.items()}
        with fake.lock:
            if path == "/labels":
                return self._json(200, {"labels": [
                    {"id": i, "name": n, "type": "system" if i.isupper() else "user"}
                    for i, n in fake.labels.items()]})
            if path == "/profile":
                return self._json(200, {"emailAddress": "me@example.org",
                                        "messagesTotal": len(fake.messages),
                                        "historyId": str(fake.history_id)})
            if path == "/messages":
                label = one.get("labelIds")
                ids = [m for m, d in fake.messages.items() if not label or label in d["labelIds"]]
                ids.reverse()  # newest first, like Gmail
                return self._page(ids, one, "messages",
                                  lambda m: {"id": m, "threadId": m}, {"resultSizeEstimate":
                                                                      len(ids)})
            if path.startswith("/messages/"):
                mid = unquote(path[len("/messages/"):])
                msg = fake.messages.get(mid)
                if msg is None:
                    return self._error(404, "Requested entity was not found.")
                if one.get("format") != "raw":
                    return self._error(400, "the fake serves format=raw only")
                raw = base64.urlsafe_b64encode(msg["raw"]).decode().rstrip("=")
                return self._json(200, {"id": mid, "threadId": mid, "raw": raw,
                                        "labelIds": msg["labelIds"], "sizeEstimate": len(raw),
                                        "historyId": msg["historyId"],
                                        "internalDate": msg["internalDate"]})
            if path == "/history":
                return self._history(q, one)
        return self._error(404, "not found")

    def _page(self, rows: list[Any], one: dict[str, str], key: str, shape: Any,
              extra: dict[str, Any]) -> None:
        size = min(int(one.get("maxResults") or 100), self.fake.page_size)
        start = int(one.get("pageToken") or 0)
        page = rows[start:start + size]
        out: dict[str, Any] = dict(extra)
        if page:
            out[key] = [shape(r) for r in page]
        if start + size < len(rows):
            out["nextPageToken"] = str(start + size)
        self._json(200, out)

    def _history(self, q: dict[str, list[str]], one: dict[str, str]) -> None:
        fake = self.fake
        try:
            start = int(one["startHistoryId"])
        except (KeyError, ValueError):
            return self._error(400, "startHistoryId required")
        if start < fake.oldest_history:
            return self._error(404, "Requested entity was not found.")
        types = set(q.get("historyTypes", [])) or {"messageAdded", "labelAdded"}
        label = one.get("labelId")
        rows = []
        for h in fake.history:
            if h["id"] <= start:
                continue
            kind = h["kind"]
            if (kind == "messagesAdded" and "messageAdded" not in types) or (
                    kind == "labelsAdded" and "labelAdded" not in types):
                continue
            if label and label not in fake.messages[h["mid"]]["labelIds"]:
                continue
            rows.append(h)

        def shape(h: dict[str, Any]) -> dict[str, Any]:
            msg = {"id": h["mid"], "threadId": h["mid"],
                   "labelIds": fake.messages[h["mid"]]["labelIds"]}
            entry: dict[str, Any] = {"id": str(h["id"]), "messages": [msg]}
            if h["kind"] == "messagesAdded":
                entry["messagesAdded"] = [{"message": msg}]
            else:
                entry["labelsAdded"] = [{"message": msg, "labelIds": h["labelIds"]}]
            return entry

        self._page(rows, one, "history", shape, {"historyId": str(fake.history_id)})


@contextmanager
def serve_fake_gmail() -> Iterator[FakeGmail]:
    fake = FakeGmail()
    handler = type("Handler", (_Handler,), {"fake": fake})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    t = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    t.start()
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()
