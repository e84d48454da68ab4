"""Local mail sources over generated mailboxes: mbox (From_ lines, a ``>From `` body line,
no Message-ID), Maildir (cur/ and new/), a folder of .eml files; refs, order, raw bytes."""

from __future__ import annotations

import hashlib
import mailbox
from pathlib import Path

import pytest

from textsieve.sources.mailboxes import MailSourceError, mail_ref, open_mail_source
from textsieve.sources.mailboxes.local import EmlFolderSource, MaildirSource, MboxSource


def mail(n: int, *, subject: str | None = None, mid: bool = True, body: str = "") -> bytes:
    head = [f"From: Sender {n} <s{n}@example.org>", "To: me+links@example.org",
            f"Subject: {subject or f'mail {n}'}", f"Date: Tue, {n:02d} Jan 2024 08:30:00 +0100"]
    if mid:
        head.append(f"Message-ID: <id{n}@example.org>")
    return ("\n".join(head) + "\n\n" + (body or f"https://example.org/{n}\n")).encode()


def test_mbox_streamed_in_file_order(tmp_path: Path) -> None:
    body2 = "Look:\n>From the archive: https://example.org/x\nFrom here on, plain text.\n"
    mails = [mail(1, subject="=?utf-8?q?Caf=C3=A9_links?="), mail(2, body=body2),
             mail(3, mid=False)]
    path = tmp_path / "links.mbox"
    with path.open("wb") as f:
        for m in mails:
            escaped = m.replace(b"\n>From ", b"\n>>From ").replace(b"\nFrom ", b"\n>From ")
            f.write(b"From me@example.org Tue Jan  2 08:30:00 2024\n" + escaped + b"\n")
    src = open_mail_source(f"mbox:{path}")
    assert isinstance(src, MboxSource) and src.spec == f"mbox:{path}"
    got = list(src.mails({}))
    assert [m.ref.subject for m in got] == ["Café links", "mail 2", "mail 3"]
    assert got[0].ref.message_id == "<id1@example.org>"
    assert got[0].ref.sender == "Sender 1 <s1@example.org>"
    assert got[0].ref.date == "2024-01-01T08:30:00+01:00"
    # >From escapes undone, so the bytes are the mail as it was sent.
    assert [m.raw for m in got] == mails
    assert b"\n>From the archive" in got[1].raw and b"\nFrom here on" in got[1].raw
    # No Message-ID: a stable stand-in from the bytes.
    assert got[2].ref.message_id == "sha1:" + hashlib.sha1(mails[2]).hexdigest()
    assert all(m.ref.source == src.spec for m in got)
    uids = [int(m.ref.uid or -1) for m in got]
    assert uids == sorted(uids) and uids[0] > 0  # byte offsets, in file order
    assert src.new_state() == {}
    # Python's own mailbox module agrees on the count.
    assert len(mailbox.mbox(str(path))) == 3


def test_mbox_empty_and_missing(tmp_path: Path) -> None:
    (tmp_path / "empty.mbox").write_bytes(b"")
    assert list(MboxSource(str(tmp_path / "empty.mbox")).mails({})) == []
    with pytest.raises(MailSourceError):
        list(MboxSource(str(tmp_path / "nope.mbox")).mails({}))


def test_maildir_cur_and_new_sorted(tmp_path: Path) -> None:
    root = tmp_path / "Maildir"
    for sub in ("cur", "new", "tmp"):
        (root / sub).mkdir(parents=True)
    (root / "new" / "1700000003.M3P1.host").write_bytes(mail(3))
    (root / "cur" / "1700000001.M1P1.host:2,S").write_bytes(mail(1))
    (root / "cur" / "1700000002.M2P1.host:2,RS").write_bytes(mail(2))
    (root / "tmp" / "1700000004.M4P1.host").write_bytes(mail(4))  # delivery in progress
    src = open_mail_source(f"maildir:{root}")
    assert isinstance(src, MaildirSource)
    got = list(src.mails({}))
    assert [m.ref.message_id for m in got] == [f"<id{n}@example.org>" for n in (1, 2, 3)]
    assert [m.raw for m in got] == [mail(1), mail(2), mail(3)]
    assert got[0].ref.uid == "1700000001.M1P1.host"  # flags are not part of the identity
    with pytest.raises(MailSourceError, match="not a Maildir"):
        list(MaildirSource(str(tmp_path)).mails({}))


def test_eml_folder_recursive_sorted(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.eml").write_bytes(mail(2))
    (tmp_path / "a.eml").write_bytes(mail(1))
    (tmp_path / "c.EML").write_bytes(mail(3, subject="=?iso-8859-1?q?R=E9sum=E9?="))
    (tmp_path / "notes.txt").write_text("not a mail")
    src = open_mail_source(f"eml:{tmp_path}")
    assert isinstance(src, EmlFolderSource)
    got = list(src.mails({}))
    assert [m.ref.uid for m in got] == [str(tmp_path / p) for p in ("a.eml", "b/x.eml", "c.EML")]
    assert got[2].ref.subject == "Résumé"
    assert [m.raw for m in got] == [(tmp_path / p).read_bytes()
                                    for p in ("a.eml", "b/x.eml", "c.EML")]


def test_not_a_mail_source(tmp_path: Path) -> None:
    assert open_mail_source(str(tmp_path)) is None
    assert open_mail_source("https://example.org/") is None


def test_broken_headers_do_not_fail() -> None:
    raw = (b"From: =?utf-8?b?broken\nSubject: caf\xe9 \xff\nDate: not a date\n"
           b"Message-ID:\n\nbody\n")
    ref = mail_ref(raw, "eml:/x", fallback_date="2024-05-01T00:00:00+00:00")
    assert ref.subject and "caf" in ref.subject and "\udcff" not in ref.subject
    assert ref.date == "2024-05-01T00:00:00+00:00"
    assert ref.message_id.startswith("sha1:")
    # Headers only: a huge body is not parsed (and a mail without any body still works).
    assert mail_ref(b"Subject: hi\n", "x").subject == "hi"
    big = b"Subject: big\n\n" + b"x" * 20_000_000
    assert mail_ref(big, "x").subject == "big"


def test_mbox_windows_give_the_same_mails(tmp_path: Path) -> None:
    """Small windows: messages cut at a window edge are read again whole, a message larger
    than the window widens it, and nothing is lost or duplicated."""
    mails = [mail(n, body="https://example.org/x\n" * (n * 7 % 60 + 1)) for n in range(1, 40)]
    mails[20] = mail(21, body="From the start: a body line.\n" + "y" * 5000 + "\n")
    path = tmp_path / "w.mbox"
    path.write_bytes(b"".join(b"From me@example.org Tue Jan  2 08:30:00 2024\n"
                              + m.replace(b"\nFrom ", b"\n>From ") + b"\n" for m in mails))
    whole = list(MboxSource(str(path)).mails({}))
    small = MboxSource(str(path))
    small.WINDOW = 1024
    windowed = list(small.mails({}))
    assert [m.raw for m in whole] == [m.raw for m in windowed] == mails
    assert [m.ref.uid for m in whole] == [m.ref.uid for m in windowed]
