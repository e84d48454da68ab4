"""The IMAP mail source against a real Dovecot on 127.0.0.1 (tests/dovecot.py).

Mail is APPENDed over IMAP the way a mail client would; the source syncs a folder, a second
sync fetches only what is new, a folder recreated under the same name (new UIDVALIDITY)
is synced again in full, and bad or missing credentials fail with a typed error.
"""

from __future__ import annotations

import imaplib
import itertools
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dovecot import DOVECOT, PASSWORD, Dovecot, start_dovecot
from http_server import TestServer, http_server_fixture  # noqa: F401
from textsieve.options import Options
from textsieve.sources.mailboxes import MailAuthError, MailSourceError, open_mail_source
from textsieve.sources.mailboxes.imap import (
    PASSWORD_ENV,
    ImapSource,
    parse_imap_spec,
    quote_mailbox,
)

pytestmark = pytest.mark.skipif(DOVECOT is None, reason="the dovecot binary is not installed "
                                "(scripts/setup installs dovecot-imapd)")

_counter = itertools.count(1)


@pytest.fixture(scope="module")
def dovecot() -> Iterator[Dovecot]:
    server = start_dovecot()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fresh_dovecot() -> Iterator[Dovecot]:
    """A server of its own for a test that fails a login: Dovecot delays every login from
    an address after a failure from it (anvil's auth penalty), which would slow the rest."""
    server = start_dovecot()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def password(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc of the machine leaks in
    monkeypatch.setenv(PASSWORD_ENV, "not-read-by-the-library")  # only the CLI reads it


def mail(n: int, subject: str | None = None) -> bytes:
    subject = subject or f"link {n}"
    return (f"From: Me <me+links@example.org>\r\nTo: me+links@example.org\r\n"
            f"Subject: {subject}\r\nDate: Mon, 0{n % 9 + 1} Jan 2024 10:00:00 +0000\r\n"
            f"Message-ID: <m{n}@example.org>\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"\r\nhttps://example.org/page/{n}\r\n").encode()


def new_folder(server: Dovecot, count: int, name: str | None = None) -> str:
    folder = name or f"Links{next(_counter)}"
    c = server.client()
    try:
        assert c.create(quote_mailbox(folder))[0] == "OK"
        for n in range(1, count + 1):
            assert c.append(quote_mailbox(folder), None, None, mail(n))[0] == "OK"
    finally:
        c.logout()
    return folder


def append(server: Dovecot, folder: str, numbers: range) -> None:
    c = server.client()
    try:
        for n in numbers:
            assert c.append(quote_mailbox(folder), None, None, mail(n))[0] == "OK"
    finally:
        c.logout()


def sync(url: str, state: dict[str, str] | None = None, password: str | None = PASSWORD
         ) -> tuple[list, dict[str, str]]:
    src = open_mail_source(url, Options(connect_timeout=5, read_timeout=10,
                                        imap_password=password))
    assert isinstance(src, ImapSource)
    got = list(src.mails(state or {}))
    return got, src.new_state()


def test_full_then_incremental_sync(dovecot: Dovecot) -> None:
    folder = new_folder(dovecot, 3)
    url = dovecot.url(folder)  # STARTTLS (the default), self-signed certificate accepted
    got, state = sync(url)
    assert [m.ref.message_id for m in got] == ["<m1@example.org>", "<m2@example.org>",
                                               "<m3@example.org>"]
    ref = got[0].ref
    assert ref.source == url  # the canonical spec
    assert ref.labels == (folder,) and ref.uid == "1"
    assert ref.subject == "link 1" and ref.sender == "Me <me+links@example.org>"
    assert ref.date == "2024-01-02T10:00:00+00:00"
    assert got[2].raw.replace(b"\r\n", b"\n") == mail(3).replace(b"\r\n", b"\n")
    assert state["last_uid"] == "3" and state["uidvalidity"].isdigit()

    append(dovecot, folder, range(4, 6))
    got2, state2 = sync(url, state)
    assert [m.ref.message_id for m in got2] == ["<m4@example.org>", "<m5@example.org>"]
    assert state2 == {"uidvalidity": state["uidvalidity"], "last_uid": "5"}

    # Nothing new: "UID 6:*" still matches the last message on the server; it is filtered.
    got3, state3 = sync(url, state2)
    assert got3 == [] and state3 == state2


def test_uidvalidity_change_resyncs_everything(dovecot: Dovecot) -> None:
    folder = new_folder(dovecot, 2)
    url = dovecot.url(folder)
    got, state = sync(url)
    assert len(got) == 2
    c = dovecot.client()
    try:
        assert c.delete(quote_mailbox(folder))[0] == "OK"
    finally:
        c.logout()
    new_folder(dovecot, 3, name=folder)  # same name, new UIDVALIDITY, UIDs start at 1 again
    got2, state2 = sync(url, state)
    assert state2["uidvalidity"] != state["uidvalidity"]
    assert [m.ref.message_id for m in got2] == [f"<m{n}@example.org>" for n in (1, 2, 3)]
    assert state2["last_uid"] == "3"


def test_batches_and_non_ascii_folder(dovecot: Dovecot) -> None:
    folder = new_folder(dovecot, 0, name=f"Liens à lire {next(_counter)}")
    append(dovecot, folder, range(1, 58))  # more than one FETCH batch of 50
    got, state = sync(dovecot.url(folder))
    assert [m.ref.uid for m in got] == [str(n) for n in range(1, 58)]
    assert got[0].ref.labels == (folder,)
    assert state["last_uid"] == "57"


def test_implicit_tls_port(dovecot: Dovecot) -> None:
    folder = new_folder(dovecot, 1)
    url = f"imap://alice@127.0.0.1:{dovecot.ssl_port}/{folder}?tls=ssl&insecure=1"
    got, _ = sync(url)
    assert len(got) == 1
    # Without ?insecure=1 the self-signed certificate is rejected.
    with pytest.raises(MailSourceError, match=r"TLS|certificate"):
        sync(f"imap://alice@127.0.0.1:{dovecot.ssl_port}/{folder}?tls=ssl")


def test_plaintext_only_when_asked(dovecot: Dovecot) -> None:
    folder = new_folder(dovecot, 1)
    got, _ = sync(dovecot.url(folder, query="tls=none"))
    assert len(got) == 1


def test_no_starttls_no_password_sent() -> None:
    """A server on a plain port that does not offer STARTTLS never sees LOGIN: the source
    refuses unless ?tls=none says plaintext is fine. (A tiny scripted IMAP server: Dovecot
    here always offers STARTTLS.)"""
    seen: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with conn, conn.makefile("rwb") as io:
            io.write(b"* OK IMAP4rev1 ready\r\n")
            io.flush()
            for line in io:
                seen.append(line)
                tag, cmd = line.split()[:2]
                if cmd.upper() == b"CAPABILITY":
                    io.write(b"* CAPABILITY IMAP4rev1 AUTH=PLAIN\r\n")
                io.write(tag + b" OK done\r\n")
                io.flush()
                if cmd.upper() == b"LOGOUT":
                    return

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        with pytest.raises(MailSourceError, match="STARTTLS"):
            sync(f"imap://alice@127.0.0.1:{port}/INBOX")
    finally:
        listener.close()
        t.join(5)
    assert not any(b"LOGIN" in line.upper() for line in seen)
    assert seen and seen[0].split()[1] == b"CAPABILITY"


def test_wrong_password(fresh_dovecot: Dovecot, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(MailAuthError, match="refused"):
        sync(fresh_dovecot.url("INBOX"), password="wrong")


def test_password_from_netrc(fresh_dovecot: Dovecot, monkeypatch: pytest.MonkeyPatch,
                             tmp_path: Path) -> None:
    dovecot = fresh_dovecot
    folder = new_folder(dovecot, 1)
    rc = tmp_path / ".netrc"
    rc.write_text(f"machine 127.0.0.1 login alice password {PASSWORD}\n")
    rc.chmod(0o600)
    got, _ = sync(dovecot.url(folder), password=None)
    assert len(got) == 1
    rc.write_text("machine 127.0.0.1 login alice password nope\n")
    with pytest.raises(MailAuthError):
        sync(dovecot.url(folder), password=None)


def test_no_password_anywhere(dovecot: Dovecot, monkeypatch: pytest.MonkeyPatch) -> None:
    with open("/dev/null") as devnull:
        monkeypatch.setattr("sys.stdin", devnull)  # not a terminal: no prompt
        with pytest.raises(MailAuthError, match=PASSWORD_ENV):  # set in the environment,
            sync(dovecot.url("INBOX"), password=None)  # but only the command line reads it


def test_missing_folder(dovecot: Dovecot) -> None:
    with pytest.raises(MailSourceError, match="SELECT"):
        sync(dovecot.url("NoSuchFolder"))


def test_spec_parsing() -> None:
    s = parse_imap_spec("imap://me%40example.org@mail.example.org/Links")
    assert (s.user, s.host, s.port, s.folder, s.tls) == ("me@example.org", "mail.example.org",
                                                         143, "Links", "starttls")
    assert parse_imap_spec("imaps://u@h/INBOX").port == 993
    assert parse_imap_spec("imap://u@h:993/").tls == "ssl"
    assert parse_imap_spec("imap://u@h:993/").folder == "INBOX"
    for bad in ("imap://u:pw@h/INBOX", "imap://h/INBOX", "imap://u@h/X?tls=maybe"):
        with pytest.raises(MailSourceError):
            parse_imap_spec(bad)
    assert quote_mailbox("Liens & co é") == '"Liens &- co &AOk-"'
    assert issubclass(MailAuthError, MailSourceError)
    assert imaplib.IMAP4  # imaplib from the stdlib is the client


def test_run_keeps_the_sync_state_in_the_archive(dovecot: Dovecot, tmp_path: Path,
                                                 http_server: TestServer) -> None:
    """`textsieve run imap://...` end to end: mails -> links -> local pages -> archive; the
    UIDVALIDITY/last-UID state is stored in the archive and the next run reads only new
    mails (each a link to the local server)."""
    from textsieve.archive import Archive
    from textsieve.run.runner import run
    from textsieve.sources import open_source

    def linked(n: int) -> bytes:
        return mail(n).replace(f"https://example.org/page/{n}".encode(),
                               http_server.url(f"/article.html?n={n}").encode())

    folder = f"Run{next(_counter)}"
    c = dovecot.client()
    try:
        assert c.create(quote_mailbox(folder))[0] == "OK"
        for n in (1, 2, 3):
            assert c.append(quote_mailbox(folder), None, None, linked(n))[0] == "OK"
    finally:
        c.logout()
    options = Options(workers=2, per_host_delay=0.0, connect_timeout=5, read_timeout=10,
                      allow_private=True,  # the linked pages are on 127.0.0.1
                      imap_password=PASSWORD)
    db = tmp_path / "mail.db"

    def once() -> int:
        with Archive(db) as archive:
            source = open_source(dovecot.url(folder), options=options)
            stats = run([source], archive, options)
            assert stats.status.get("error", 0) == 0, stats
            return source.mails_seen  # type: ignore[attr-defined]

    assert once() == 3
    with Archive(db, readonly=True) as a:
        state = a.source_state(dovecot.url(folder))
        assert state["last_uid"] == "3" and state["uidvalidity"]
        assert a.conn.execute("SELECT count(*) FROM mails").fetchone()[0] == 3
    c = dovecot.client()
    try:
        for n in (4, 5):
            assert c.append(quote_mailbox(folder), None, None, linked(n))[0] == "OK"
    finally:
        c.logout()
    assert once() == 2  # only the new mails were read
    with Archive(db, readonly=True) as a:
        assert a.conn.execute("SELECT count(*) FROM mails").fetchone()[0] == 5
        assert a.conn.execute("SELECT count(*) FROM items WHERE key LIKE '%article.html%'"
                              ).fetchone()[0] == 5


def test_imap_folder_is_a_label(dovecot: Dovecot, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder a link was mailed to is its label, as a bookmark folder is:
    `textsieve search --label` finds the folder's links and no others."""
    import subprocess
    import sys

    folder = new_folder(dovecot, 2, name=f"Reading Ünïcode {next(_counter)}")
    other = new_folder(dovecot, 0, name=f"Other{next(_counter)}")
    append(dovecot, other, range(7, 8))
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    db = tmp_path / "a.db"
    res = subprocess.run([sys.executable, "-m", "textsieve", "run", "--fetch", "never",
                          "--archive", str(db), dovecot.url(folder), dovecot.url(other)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    got = subprocess.run([sys.executable, "-m", "textsieve", "search", "--label",
                          folder.replace("Reading", "reading"), "--archive", str(db)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert got.returncode == 0, got.stderr
    assert sorted(set(re.findall(r"https://example\.org/page/\d+", got.stdout))) == [
        "https://example.org/page/1", "https://example.org/page/2"]
