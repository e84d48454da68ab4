"""The Gmail source against a local HTTP server speaking the Gmail API (tests/gmail_fake.py):
full sync with paging, incremental sync through history.list, full re-sync when the history
expired, access-token refresh (token file rewritten), the first authorisation flow."""

from __future__ import annotations

import json
import stat
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from gmail_fake import (
    AUTH_CODE,
    CLIENT_ID,
    CLIENT_SECRET,
    REFRESH_TOKEN,
    FakeGmail,
    serve_fake_gmail,
)
from textsieve.options import Options
from textsieve.sources.mailboxes import MailAuthError, MailSourceError, open_mail_source
from textsieve.sources.mailboxes.gmail import GmailSource, authorize


@pytest.fixture
def fake() -> Iterator[FakeGmail]:
    with serve_fake_gmail() as f:
        yield f


def write_token(path: Path, fake: FakeGmail, *, expired: bool = False) -> None:
    expiry = datetime.now(UTC) + (timedelta(hours=-1) if expired else timedelta(minutes=50))
    path.write_text(json.dumps({"access_token": fake.access_token, "refresh_token": REFRESH_TOKEN,
                                "expiry": expiry.isoformat(), "client_id": CLIENT_ID,
                                "client_secret": CLIENT_SECRET}))


@pytest.fixture
def options(fake: FakeGmail, tmp_path: Path) -> Options:
    token = tmp_path / "gmail-token.json"
    write_token(token, fake)
    return Options(gmail_api_base=fake.url, gmail_token_url=fake.url + "/token",
                   gmail_token_file=str(token), backoff=0.01, connect_timeout=5,
                   read_timeout=10)


def mail(n: int, *, date: bool = True) -> bytes:
    return (f"From: =?utf-8?q?J=C3=B6rg?= <jorg@example.org>\r\nTo: me+links@gmail.com\r\n"
            f"Subject: link {n}\r\n" + (f"Date: Wed, 0{n % 9 + 1} Feb 2024 12:00:00 +0000\r\n"
                                        if date else "")
            + f"Message-ID: <g{n}@example.org>\r\n\r\nhttps://example.org/{n}\r\n").encode()


def sync(options: Options, state: dict[str, str] | None = None, label: str = "Links"
         ) -> tuple[list, dict[str, str], GmailSource]:
    src = open_mail_source(f"gmail:{label}", options)
    assert isinstance(src, GmailSource)
    got = list(src.mails(state or {}))
    return got, src.new_state(), src


def test_full_sync_pages_through_the_label(fake: FakeGmail, options: Options) -> None:
    ids = [fake.add(mail(n)) for n in range(1, 6)]
    fake.add(mail(99), labels=("INBOX", "Label_9"))  # another label: not ours
    no_date = fake.add(mail(6, date=False), internal_ms=1_706_000_000_000)
    got, state, src = sync(options)
    assert src.full_sync is True
    assert [m.ref.uid for m in got] == [*ids, no_date]  # oldest first
    ref = got[0].ref
    assert ref.source == "gmail:Links" and ref.message_id == "<g1@example.org>"
    assert ref.labels == ("INBOX", "Links") and ref.sender == "Jörg <jorg@example.org>"
    assert ref.date == "2024-02-02T12:00:00+00:00"
    assert got[-1].ref.date == "2024-01-23T08:53:20+00:00"  # internalDate when no Date header
    assert got[0].raw == mail(1)  # base64url without padding decoded to the exact bytes
    # 6 messages in pages of 2: three messages.list calls, following nextPageToken.
    pages = fake.calls("/gmail/v1/users/me/messages")
    assert [q.get("pageToken") for q in pages] == [None, ["2"], ["4"]]
    assert all(q["labelIds"] == ["Label_7"] for q in pages)
    assert state == {"label_id": "Label_7", "history_id": str(fake.history_id)}


def test_incremental_sync_gets_only_new_mail(fake: FakeGmail, options: Options) -> None:
    for n in range(1, 4):
        fake.add(mail(n))
    other = fake.add(mail(50), labels=("INBOX", "Label_9"))
    _, state, _ = sync(options)
    new = [fake.add(mail(n)) for n in (4, 5, 6)]
    fake.add(mail(51), labels=("INBOX",))  # not labelled Links
    fake.add_label(other, "Label_7")  # an old mail given the label later
    fake.requests.clear()
    got, state2, src = sync(options, state)
    assert src.full_sync is False
    assert [m.ref.uid for m in got] == [*new, other]
    assert [m.ref.message_id for m in got][-1] == "<g50@example.org>"
    assert not fake.calls("/gmail/v1/users/me/messages")  # no full listing
    history = fake.calls("/gmail/v1/users/me/history")
    assert len(history) == 2 and history[0]["startHistoryId"] == [state["history_id"]]
    assert history[1]["pageToken"] == ["2"]
    assert state2["history_id"] == str(fake.history_id)
    # Nothing new: nothing fetched, the mark stays.
    got3, state3, _ = sync(options, state2)
    assert got3 == [] and state3 == state2


def test_expired_history_means_full_resync(fake: FakeGmail, options: Options) -> None:
    for n in range(1, 4):
        fake.add(mail(n))
    _, state, _ = sync(options)
    fake.add(mail(4))
    fake.expire_history()
    got, state2, src = sync(options, state)
    assert src.full_sync is True
    assert [m.ref.message_id for m in got] == [f"<g{n}@example.org>" for n in range(1, 5)]
    assert int(state2["history_id"]) > int(state["history_id"])


def test_expired_access_token_is_refreshed(fake: FakeGmail, options: Options) -> None:
    fake.add(mail(1))
    token_file = Path(str(options.gmail_token_file))
    write_token(token_file, fake, expired=True)
    fake.revoke_access_token()  # the old token no longer works on the server either
    got, _, _ = sync(options)
    assert len(got) == 1
    assert [t["grant_type"] for t in fake.token_requests] == ["refresh_token"]
    saved = json.loads(token_file.read_text())
    assert saved["access_token"] == fake.access_token
    assert datetime.fromisoformat(saved["expiry"]) > datetime.now(UTC) + timedelta(minutes=30)
    assert saved["refresh_token"] == REFRESH_TOKEN
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600


def test_token_revoked_server_side_refreshes_once(fake: FakeGmail, options: Options) -> None:
    fake.add(mail(1))
    fake.revoke_access_token()  # still "valid" by its expiry, but the server says 401
    got, _, _ = sync(options)
    assert len(got) == 1 and len(fake.token_requests) == 1


def test_bad_refresh_token_is_an_auth_error(fake: FakeGmail, options: Options) -> None:
    token_file = Path(str(options.gmail_token_file))
    data = json.loads(token_file.read_text())
    token_file.write_text(json.dumps({**data, "expiry": "2000-01-01T00:00:00+00:00",
                                      "refresh_token": "stolen"}))
    with pytest.raises(MailAuthError, match="refused"):
        sync(options)


def test_missing_token_and_unknown_label(fake: FakeGmail, options: Options,
                                         tmp_path: Path) -> None:
    with pytest.raises(MailAuthError, match="gmail-auth"):
        sync(options.with_(gmail_token_file=str(tmp_path / "none.json")))
    with pytest.raises(MailSourceError, match="no label"):
        sync(options, label="Nope")


def test_retries_server_errors(fake: FakeGmail, options: Options) -> None:
    fake.add(mail(1))
    fake.fail_next = [503, 429]
    got, _, _ = sync(options)
    assert len(got) == 1
    fake.fail_next = [503] * 10
    with pytest.raises(MailSourceError, match="503"):
        sync(options.with_(retries=2))


def test_first_authorisation_flow(fake: FakeGmail, tmp_path: Path) -> None:
    """The consent URL is shown; the "browser" (a thread) follows Google's redirect back to
    the loopback server with a code, which is exchanged for tokens at the token URL."""
    token_file = tmp_path / "new" / "token.json"
    opts = Options(gmail_api_base=fake.url, gmail_token_url=fake.url + "/token",
                   gmail_token_file=str(token_file))
    shown: list[str] = []

    def browser(url: str) -> None:
        shown.append(url)
        q = {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}
        threading.Thread(target=lambda: httpx.get(
            q["redirect_uri"], params={"code": AUTH_CODE, "state": q["state"]},
            timeout=5), daemon=True).start()

    path = authorize(CLIENT_ID, CLIENT_SECRET, opts, show=browser, wait=10)
    assert path == token_file
    q = parse_qs(urlsplit(shown[0]).query)
    assert q["scope"] == ["https://www.googleapis.com/auth/gmail.readonly"]
    assert q["code_challenge_method"] == ["S256"] and q["access_type"] == ["offline"]
    exchange = fake.token_requests[0]
    assert exchange["grant_type"] == "authorization_code"
    assert exchange["redirect_uri"] == q["redirect_uri"][0]
    saved = json.loads(token_file.read_text())
    assert saved["refresh_token"] == REFRESH_TOKEN and saved["access_token"] == fake.access_token
    fake.add(mail(1))
    assert len(sync(opts)[0]) == 1  # and the stored token works for a sync
