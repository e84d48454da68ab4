"""IMAP: ``imap://user@host[:port]/Folder[?tls=ssl|starttls|none&insecure=1]``.

Security first: port 993 (or ``imaps://``, or ``?tls=ssl``) means implicit TLS; any other
port means STARTTLS, and a server that does not offer it is refused rather than sent the
password in clear, unless ``?tls=none`` says so explicitly. ``?insecure=1`` skips
certificate verification (a self-signed test server), never implied.

The password is never part of the spec (the spec is stored in the archive): it comes from
``Options.imap_password`` (the command line fills it from ``TEXTSIEVE_IMAP_PASSWORD`` or
``--imap-password-file``; this module reads no environment), else ``~/.netrc``
(``machine HOST``), else a prompt when stdin is a terminal; with none of those the error
says what to set.

Incremental: the folder is selected read-only (nothing is marked seen) and its UIDVALIDITY
read; when it equals the stored one only UIDs above the stored last UID are fetched,
otherwise (first run, folder recreated) everything is. Bodies are fetched with
``BODY.PEEK[]`` in batches, in UID order.
"""

from __future__ import annotations

import base64
import contextlib
import getpass
import imaplib
import netrc
import re
import ssl
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from ...model import RawMail
from ...options import KNOBS, Options
from .base import MailAuthError, MailConnectionError, MailSourceError, mail_ref

PASSWORD_ENV = KNOBS["imap_password"].env  # read by the command line only; named in messages
BATCH = 50  # UIDs per FETCH command: few round trips, bounded memory
_UID = re.compile(rb"\bUID (\d+)")


@dataclass(frozen=True)
class ImapSpec:
    user: str
    host: str
    port: int
    folder: str
    tls: str  # "ssl" | "starttls" | "none"
    insecure: bool

    @property
    def spec(self) -> str:
        """The canonical spec (the archive's key for provenance and sync state)."""
        query = [] if self.tls == ("ssl" if self.port == 993 else "starttls") else \
            [f"tls={self.tls}"]
        if self.insecure:
            query.append("insecure=1")
        tail = "?" + "&".join(query) if query else ""
        return f"imap://{self.user}@{self.host}:{self.port}/{self.folder}{tail}"


def parse_imap_spec(spec: str) -> ImapSpec:
    try:
        parts = urlsplit(spec)
        port_given = parts.port
    except ValueError as exc:
        raise MailSourceError(f"{spec}: not a valid IMAP URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("imap", "imaps") or not parts.hostname:
        raise MailSourceError(f"{spec}: expected imap://user@host[:port]/Folder")
    if parts.password is not None:
        raise MailSourceError(f"{spec}: do not put the password in the URL (it is stored in "
                              f"the archive); set {PASSWORD_ENV} or use ~/.netrc")
    if not parts.username:
        raise MailSourceError(f"{spec}: the user is missing (imap://user@host/Folder)")
    query = {k.lower(): v[-1].lower() for k, v in parse_qs(parts.query).items()}
    tls = query.get("tls") or ("ssl" if scheme == "imaps" or port_given == 993 else "starttls")
    if tls not in ("ssl", "starttls", "none"):
        raise MailSourceError(f"{spec}: tls must be ssl, starttls or none, not {tls!r}")
    port = port_given or (993 if tls == "ssl" else 143)
    folder = unquote(parts.path.lstrip("/")) or "INBOX"
    return ImapSpec(user=unquote(parts.username), host=parts.hostname, port=port, folder=folder,
                    tls=tls, insecure=query.get("insecure") in ("1", "true", "yes"))


def find_password(user: str, host: str, given: str | None = None) -> str:
    """The password given (Options.imap_password), then ~/.netrc, then a prompt (only on a
    terminal)."""
    if given:
        return given
    try:
        auth = netrc.netrc().authenticators(host)
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        auth = None
    if auth and auth[2] and (not auth[0] or auth[0] == user):
        return auth[2]
    if sys.stdin is not None and sys.stdin.isatty():
        return getpass.getpass(f"IMAP password for {user}@{host}: ")
    raise MailAuthError(f"no IMAP password for {user}@{host}: set {PASSWORD_ENV}, use "
                        "--imap-password-file (API: imap_password=) or add "
                        f"'machine {host} login {user} password ...' to ~/.netrc")


def quote_mailbox(name: str) -> str:
    """A mailbox name as an IMAP string: modified UTF-7 (RFC 3501 5.1.3), then quoted."""
    out: list[str] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            b64 = "".join(pending).encode("utf-16-be")
            out.append("&" + base64.b64encode(b64).decode().rstrip("=").replace("/", ",") + "-")
            pending.clear()

    for ch in name:
        if 0x20 <= ord(ch) <= 0x7E:
            flush()
            out.append("&-" if ch == "&" else ch)
        else:
            pending.append(ch)
    flush()
    encoded = "".join(out)
    return '"' + encoded.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _check(typ: str, data: list, what: str) -> list:
    if typ != "OK":
        detail = b" ".join(d for d in data if isinstance(d, bytes)).decode("utf-8", "replace")
        raise MailConnectionError(f"IMAP {what} failed: {detail or typ}")
    return data


class ImapSource:
    """One IMAP folder as a mail source; see the module docstring."""

    def __init__(self, spec: str, options: Options | None = None) -> None:
        self.target = parse_imap_spec(spec)
        self.spec = self.target.spec
        self.options = options or Options()
        self._state: dict[str, str] = {}

    # -- connection ---------------------------------------------------------------------

    def _context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context()
        if self.target.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx

    def connect(self) -> imaplib.IMAP4:
        """An authenticated connection (TLS as the spec demands), or a typed error."""
        t, o = self.target, self.options
        where = f"{t.host}:{t.port}"
        try:
            if t.tls == "ssl":
                conn: imaplib.IMAP4 = imaplib.IMAP4_SSL(t.host, t.port, ssl_context=self._context(),
                                                        timeout=o.connect_timeout)
            else:
                conn = imaplib.IMAP4(t.host, t.port, timeout=o.connect_timeout)
            conn.sock.settimeout(o.read_timeout)
            if t.tls == "starttls":
                if "STARTTLS" not in conn.capabilities:
                    conn.shutdown()
                    raise MailConnectionError(
                        f"{where} does not offer STARTTLS: refusing to send the password in "
                        "clear (add ?tls=none to the URL to allow it, e.g. on localhost)")
                conn.starttls(ssl_context=self._context())
        except ssl.SSLError as exc:
            raise MailConnectionError(f"TLS with {where} failed: {exc}") from None
        except (OSError, imaplib.IMAP4.error) as exc:
            raise MailConnectionError(f"cannot connect to IMAP server {where}: {exc}") from None
        password = find_password(t.user, t.host, o.imap_password)
        try:
            conn.login(t.user, password)
        except imaplib.IMAP4.error as exc:
            conn.shutdown()
            raise MailAuthError(f"IMAP login as {t.user} at {where} refused: {exc}") from None
        return conn

    # -- sync ---------------------------------------------------------------------------

    def mails(self, state: dict[str, str] | None = None) -> Iterator[RawMail]:
        state = state or {}
        conn = self.connect()
        try:
            yield from self._sync(conn, state)
        finally:
            with contextlib.suppress(OSError, imaplib.IMAP4.error):
                conn.logout()

    def _sync(self, conn: imaplib.IMAP4, state: dict[str, str]) -> Iterator[RawMail]:
        folder = self.target.folder
        typ, data = conn.select(quote_mailbox(folder), readonly=True)
        _check(typ, data, f"SELECT {folder}")
        validity = (conn.response("UIDVALIDITY")[1] or [b""])[0]
        uidvalidity = (validity or b"").decode("ascii", "replace").strip()
        last = 0
        if uidvalidity and state.get("uidvalidity") == uidvalidity:
            last = int(state.get("last_uid") or 0)
        self._state = {"uidvalidity": uidvalidity, "last_uid": str(last)}
        # "UID n:*" always matches the highest UID even when it is below n: filter.
        criteria = f"UID {last + 1}:*" if last else "ALL"
        data = _check(*conn.uid("SEARCH", criteria), "UID SEARCH")
        uids = sorted({int(x) for x in b" ".join(d for d in data if d).split()} - {0})
        uids = [u for u in uids if u > last]
        for i in range(0, len(uids), BATCH):
            batch = uids[i:i + BATCH]
            fetched = _check(*conn.uid("FETCH", ",".join(map(str, batch)), "(UID BODY.PEEK[])"),
                             "UID FETCH")
            got: dict[int, bytes] = {}
            for part in fetched:
                if isinstance(part, tuple) and len(part) >= 2:
                    m = _UID.search(part[0])
                    if m:
                        got[int(m.group(1))] = part[1]
            for uid in batch:  # in UID order; a message expunged meanwhile is just absent
                raw = got.get(uid)
                if raw is None:
                    continue
                yield RawMail(raw, mail_ref(raw, self.spec, labels=(folder,), uid=str(uid)))
                self._state["last_uid"] = str(uid)

    def new_state(self) -> dict[str, str]:
        """UIDVALIDITY and the highest UID yielded (not merely listed) in this run."""
        return dict(self._state)


__all__ = ["ImapSource", "find_password", "parse_imap_spec", "quote_mailbox"]
