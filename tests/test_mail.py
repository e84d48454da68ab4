"""Mail: generated EML/mbox round trips and every dev-corpus EML, MSG and mbox file."""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
from email.message import EmailMessage
from email.mime.text import MIMEText
from pathlib import Path

import pytest

import textsieve
from textsieve.model import ErrorKind, Status


def _pdf(text: str) -> bytes:
    canvas = pytest.importorskip("reportlab.pdfgen.canvas")
    buf = io.BytesIO()
    c = canvas.Canvas(buf)
    c.drawString(72, 720, text)
    c.showPage()
    c.save()
    return buf.getvalue()


def _docx(text: str) -> bytes:
    docx = pytest.importorskip("docx")
    d = docx.Document()
    d.add_paragraph(text)
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _rich_mail() -> bytes:
    inner = EmailMessage()
    inner["From"] = "Inner Sender <inner@example.org>"
    inner["To"] = "someone@example.org"
    inner["Subject"] = "Forwarded minutes"
    inner.set_content("The inner message body talks about budgets.")

    msg = EmailMessage()
    msg["From"] = "Alice Example <alice@example.com>"
    msg["To"] = "Bob <bob@example.com>, carol@example.com"
    msg["Cc"] = "Dave <dave@example.com>"
    msg["Subject"] = "Quarterly numbers ✓"
    msg["Date"] = "Tue, 02 Mar 2021 10:15:00 +0100"
    msg["Message-ID"] = "<abc123@example.com>"
    msg.set_content("Hello Bob,\n\nplease find the numbers attached.\n")
    msg.add_alternative("<html><body><p>Hello <b>Bob</b> (html)</p></body></html>",
                        subtype="html")
    msg.add_attachment(_pdf("Revenue grew by seven percent"), maintype="application",
                       subtype="pdf", filename="report.pdf")
    msg.add_attachment(_docx("Minutes of the board meeting"), maintype="application",
                       subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
                       filename="minutes.docx")
    msg.add_attachment(inner)
    return msg.as_bytes()


def test_multipart_alternative_attachments_and_nested_message() -> None:
    doc = textsieve.extract(_rich_mail())
    assert doc.status == "ok", doc.error
    assert doc.mime_type == "message/rfc822"
    assert doc.title == "Quarterly numbers ✓"
    assert doc.metadata.author == "Alice Example <alice@example.com>"
    extra = doc.metadata.extra
    assert extra["to"] == ["Bob <bob@example.com>", "carol@example.com"]
    assert extra["cc"] == ["Dave <dave@example.com>"]
    assert extra["date"] == "2021-03-02T10:15:00+01:00"
    assert extra["message_id"] == "<abc123@example.com>"
    text = doc.text
    assert text.index("From: Alice Example") < text.index("Subject: Quarterly numbers")
    assert text.index("Subject:") < text.index("please find the numbers attached.")
    assert "(html)" not in text  # text/plain is preferred over its HTML alternative
    kids = {c.name: c for c in doc.children}
    assert "Revenue grew by seven percent" in kids["report.pdf"].text
    assert "Minutes of the board meeting" in kids["minutes.docx"].text
    nested = kids["Forwarded minutes.eml"]
    assert nested.mime_type == "message/rfc822"
    assert "The inner message body talks about budgets." in nested.text
    assert "budgets" in doc.full_text()


def test_html_only_body_becomes_text() -> None:
    msg = EmailMessage()
    msg["From"] = "a@example.com"
    msg["Subject"] = "html only"
    msg.set_content("<html><head><style>p{color:red}</style></head>"
                    "<body><p>Visible words</p><script>var x=1;</script></body></html>",
                    subtype="html")
    doc = textsieve.extract(msg.as_bytes())
    assert "Visible words" in doc.text
    assert "color:red" not in doc.text and "var x" not in doc.text


def test_iso_2022_jp_body_and_header() -> None:
    body = MIMEText("こんにちは、世界。日本語のメールです。", "plain", "iso-2022-jp")
    body["From"] = "taro@example.jp"
    body["To"] = "hanako@example.jp"
    body["Subject"] = "=?ISO-2022-JP?B?GyRCRnxLXDhsGyhC?="  # 日本語
    doc = textsieve.extract(body.as_bytes())
    assert "こんにちは、世界。日本語のメールです。" in doc.text
    assert doc.title == "日本語"


def test_broken_boundary_keeps_text() -> None:
    raw = (b"From: x@example.com\nTo: y@example.com\nSubject: broken\n"
           b"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"XYZ\"\n\n"
           b"--ABC\nContent-Type: text/plain\n\nThe body survives a wrong boundary.\n--ABC--\n")
    doc = textsieve.extract(raw)
    assert doc.status == "ok", doc.error
    assert "The body survives a wrong boundary." in doc.text


def test_cr_only_line_endings_and_nul_bytes() -> None:
    raw = (b"From: old@mac.example\rTo: y@example.com\rSubject: classic\r\r"
           b"Line one\rLine\x00 two\r")
    doc = textsieve.extract(raw)
    assert doc.title == "classic"
    assert "Line one\nLine two" in doc.text


def test_deep_mime_nesting_does_not_crash() -> None:
    depth = 400
    parts = [b"From: a@example.com\nTo: b@example.com\nSubject: deep\nMIME-Version: 1.0\n"]
    for i in range(depth):
        parts.append(b'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n' % (i, i))
    parts.append(b"Content-Type: text/plain\n\ninnermost\n")
    for i in reversed(range(depth)):
        parts.append(b"--b%d--\n" % i)
    doc = textsieve.extract(b"".join(parts))
    assert doc.error is None or doc.error.kind != ErrorKind.INTERNAL
    assert doc.title == "deep" or "deep" in doc.text


def test_mbox_three_messages_with_escaped_from() -> None:
    def message(n: int, body: str) -> str:
        return (f"From sender{n}@example.com Sat Jan  3 01:05:34 1996\n"
                f"From: Sender {n} <sender{n}@example.com>\nTo: list@example.com\n"
                f"Subject: Message number {n}\nDate: Sat, 3 Jan 1996 01:05:34 +0000\n\n"
                f"{body}\n\n")

    data = (message(1, "First body.") +
            message(2, "Second body.\n>From the mboxrd escaping, this line is quoted.") +
            message(3, "Third body.")).encode()
    doc = textsieve.extract(data)
    assert doc.mime_type == "application/mbox"
    assert doc.metadata.extra["messages"] == 3
    assert [c.name for c in doc.children] == [f"Message number {n}" for n in (1, 2, 3)]
    assert "First body." in doc.children[0].text
    second = doc.children[1].text
    assert "\nFrom the mboxrd escaping, this line is quoted." in second
    assert ">From" not in second
    assert "Third body." in doc.children[2].text
    assert "Message number 2" in doc.text  # the index


def test_mbox_single_message() -> None:
    data = (b"From a@example.com Mon Jan  1 00:00:00 2001\nFrom: a@example.com\n"
            b"Subject: only one\n\nLonely body\n")
    doc = textsieve.extract(data)
    assert len(doc.children) == 1
    assert "Lonely body" in doc.children[0].text


# -- dev corpus -----------------------------------------------------------------------------


def test_every_dev_corpus_mail(corpus: Path) -> None:
    files = sorted([*(corpus / "eml").iterdir(), *(corpus / "msg").iterdir(),
                    *(corpus / "mbox").iterdir()])
    assert len(files) > 40
    for f in files:
        doc = textsieve.extract(f)
        if f.name == "poi__blank.msg":  # no sender, recipient, subject or body: only a date
            assert doc.status == "empty", (f.name, doc.text)
            continue
        assert doc.status == "ok", (f.name, doc.error)
        assert doc.text.strip() or any(c.text.strip() for c in doc.children), f.name


@pytest.mark.parametrize(("name", "needles"), [
    ("eml/rubymail__japanese_iso_2022.eml", ["まみむめも", "すみま"]),
    ("eml/rubymail__japanese_shift_jis.eml", ["このメールはテスト用のメールです"]),
    ("eml/rubymail__ks_c_5601-1987.eml", ["스티해"]),
    ("eml/rubymail__utf8_headers.eml", ["Jöhn Doe", "Märy Smith"]),
    ("msg/poi__cyrillic_message.msg", ["Свиридов Дмитрий Владимирович"]),
    ("msg/poi__HTMLBodyBinary_CP1251.msg", ["HTML автоматически"]),
    ("msg/poi__simple_test_msg.msg", ["travis@overwrittenstack.com"]),
])
def test_known_mail_text(corpus: Path, name: str, needles: list[str]) -> None:
    text = textsieve.extract(corpus / name).full_text()
    for needle in needles:
        assert needle in text, (name, needle)


def test_msg_attachments_become_children(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "msg/poi__attachment_msg_pdf.msg")
    assert doc.children
    assert any(c.name and c.name.lower().endswith(".pdf") for c in doc.children)
    assert doc.title and doc.metadata.author


def test_stack_overflow_mail_is_handled(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "eml/mimekit__stack-overflow.txt")
    assert doc.status == "ok", doc.error


def test_fuzzed_msg_bytes_are_a_typed_error(corpus: Path) -> None:
    data = bytearray((corpus / "msg/poi__quick.msg").read_bytes())
    data[600:4000] = bytes(3400)  # wipe the directory/FAT region
    doc = textsieve.extract(bytes(data))
    assert doc.error is None or doc.error.kind != ErrorKind.INTERNAL


# -- Outlook MSG recipients ------------------------------------------------------------
def _msg_with_bcc(original: Path, name: str, address: str) -> bytes:
    """``original`` with one more recipient of type Bcc, written the way Outlook stores
    recipients (a ``__recip_version1.0_`` storage: a fixed-property stream with
    PidTagRecipientType = 3, the display name and the SMTP address as UTF-16 strings)."""
    import olefile

    from textsieve.kernels.ole import pack

    ole = olefile.OleFileIO(str(original))
    tree: dict[tuple[str, ...], bytes | None] = {}
    for entry in ole.listdir(streams=True, storages=False):
        tree[tuple(entry)] = ole.openstream(entry).read()
    ole.close()
    recip = "__recip_version1.0_#0000000F"
    props = bytes(8) + struct.pack("<HHI", 0x0003, 0x0C15, 6) + struct.pack("<Q", 3)
    tree[(recip, "__properties_version1.0")] = props
    tree[(recip, "__substg1.0_3001001F")] = name.encode("utf-16-le")
    tree[(recip, "__substg1.0_3002001F")] = "SMTP".encode("utf-16-le")
    tree[(recip, "__substg1.0_39FE001F")] = address.encode("utf-16-le")
    return pack(tree)


def test_msg_recipients_have_names_and_addresses(corpus: Path) -> None:
    """To and Cc show each person's name and SMTP address (the message's own display
    lists hold names only), and the Message-ID is in the header block."""
    doc = textsieve.extract(corpus / "msg/poi__example_received_unicode.msg")
    head = doc.text.split("\n\n", 1)[0]
    assert ("To: Ashutosh Dandavate <ashutosh.dandavate@alfresco.com>; "
            "Paul Holmes-Higgin <paul.hh@alfresco.com>") in head
    assert "Roy Wetherall <roy.wetherall@alfresco.com>" in head.split("Cc: ", 1)[1]
    assert "Message-ID: <27350255.35521263227107828.JavaMail.root@zimbra.alfresco.com>" in head
    assert doc.metadata.extra["to"][0] == "Ashutosh Dandavate <ashutosh.dandavate@alfresco.com>"


@pytest.mark.parametrize(("name", "sender"), [
    # The SMTP address of the sender's own recipient entry (same directory path).
    ("poi__quick.msg", "From: Kevin Roast <kevin.roast@alfresco.org>"),
    ("poi__outlook_30_msg.msg", "From: Cramer, Nick <nick.cramer@pnl.gov>"),
    # The From of the transport headers a received message keeps.
    ("poi__attachment_msg_pdf.msg", "From: Nick Booth <nick.booth@pof.com.au>"),
    # No SMTP address anywhere: the name, not the directory path.
    ("poi__attachment_msg_inlineImg.msg", "From: Angela Deng\n"),
])
def test_msg_exchange_sender_shows_smtp_address(corpus: Path, name: str, sender: str) -> None:
    doc = textsieve.extract(corpus / "msg" / name)
    assert sender in doc.text
    assert "/O=" not in doc.text.split("\n\n", 1)[0].upper()


def test_msg_bcc_recipient_is_shown(corpus: Path) -> None:
    data = _msg_with_bcc(corpus / "msg/poi__simple_test_msg.msg", "Hidden Auditor",
                         "audit@example.org")
    doc = textsieve.extract(data)
    assert doc.status is Status.OK
    assert "Bcc: Hidden Auditor <audit@example.org>" in doc.text
    assert doc.metadata.extra["bcc"] == ["Hidden Auditor <audit@example.org>"]
    assert "To: travis@overwrittenstack.com" in doc.text  # the other recipient kept


# -- encrypted and rights-managed bodies -----------------------------------------------
def _pgp_armor(tmp_path: Path, text: str) -> str:
    """Real OpenPGP ciphertext (gpg, symmetric: no key ring needed)."""
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    env = {**os.environ, "GNUPGHOME": str(home)}
    try:
        return subprocess.run(
            ["gpg", "--batch", "--quiet", "--pinentry-mode", "loopback", "--passphrase", "pw",
             "--symmetric", "--armor", "-o", "-"], input=text.encode(), capture_output=True,
            check=True, env=env, timeout=60).stdout.decode()
    finally:  # gpg starts an agent that would outlive the test run
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=env, capture_output=True,
                       timeout=30)


needs_gpg = pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg not installed")
needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None,
                                   reason="openssl not installed")
SECRET = "The meeting moves to the boathouse at nine."


@needs_gpg
def test_pgp_mime_message_is_encrypted(tmp_path: Path) -> None:
    armor = _pgp_armor(tmp_path, SECRET)
    raw = ("From: Alice <alice@example.org>\nTo: bob@example.org\nSubject: plans\n"
           "MIME-Version: 1.0\nContent-Type: multipart/encrypted; "
           'protocol="application/pgp-encrypted"; boundary="b1"\n\n'
           "--b1\nContent-Type: application/pgp-encrypted\n\nVersion: 1\n\n"
           '--b1\nContent-Type: application/octet-stream; name="encrypted.asc"\n\n'
           f"{armor}\n--b1--\n")
    doc = textsieve.extract(raw.encode())
    assert doc.error is not None and doc.error.kind is ErrorKind.ENCRYPTED
    assert "PGP/MIME" in doc.error.message
    assert "BEGIN PGP" not in doc.full_text() and doc.metadata.subject == "plans"


@needs_gpg
def test_inline_pgp_block_is_an_encrypted_part_beside_the_clear_text(tmp_path: Path) -> None:
    armor = _pgp_armor(tmp_path, SECRET)
    msg = MIMEText(f"Hi Bob, the plan is below.\n\n{armor}\nCheers, Alice\n")
    msg["From"], msg["Subject"] = "alice@example.org", "inline"
    doc = textsieve.extract(msg.as_bytes())
    assert doc.status is Status.OK
    assert "Hi Bob, the plan is below." in doc.text and "Cheers, Alice" in doc.text
    assert "BEGIN PGP" not in doc.full_text() and "jA0E" not in doc.full_text()
    [part] = [c for c in doc.children if c.error]
    assert part.error is not None and part.error.kind is ErrorKind.ENCRYPTED
    assert "inline PGP" in part.error.message


def _smime(tmp_path: Path, *extra: str) -> bytes:
    """A real S/MIME message made by openssl (encrypted, or signed with ``-sign``)."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    if not cert.exists():
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj",
                        "/CN=bob", "-keyout", str(key), "-out", str(cert), "-days", "2"],
                       check=True, capture_output=True, timeout=60)
    body = tmp_path / "body.txt"
    body.write_text(SECRET + "\n")
    args = ["-sign", "-signer", str(cert), "-inkey", str(key), "-nodetach"] if "-sign" in \
        extra else ["-encrypt", "-aes256"]
    args += [a for a in extra if a != "-sign"]
    out = subprocess.run(["openssl", "smime", *args, "-in", str(body), "-from", "a@example.org",
                          "-to", "bob@example.org", "-subject", "S/MIME test",
                          *([] if "-sign" in extra else [str(cert)])],
                         check=True, capture_output=True, timeout=60).stdout
    return out


@needs_openssl
def test_smime_encrypted_message_is_encrypted(tmp_path: Path) -> None:
    data = _smime(tmp_path)
    assert b"enveloped-data" in data
    doc = textsieve.extract(data)
    assert doc.error is not None and doc.error.kind is ErrorKind.ENCRYPTED
    assert "S/MIME" in doc.error.message
    # Old clients leave smime-type out: the CMS content type inside still says so.
    bare = textsieve.extract(data.replace(b' smime-type=enveloped-data;', b''))
    assert bare.error is not None and bare.error.kind is ErrorKind.ENCRYPTED


@needs_openssl
def test_smime_signed_only_message_is_not_encrypted(tmp_path: Path) -> None:
    data = _smime(tmp_path, "-sign")
    doc = textsieve.extract(data)
    assert doc.error is None or doc.error.kind is not ErrorKind.ENCRYPTED


def test_rights_managed_mail_is_encrypted_not_its_placeholder() -> None:
    """An IRM-protected mail shows every client a placeholder; the body is message.rpmsg."""
    msg = EmailMessage()
    msg["From"], msg["Subject"] = "hr@example.org", "Salary review"
    msg.set_content("This message is protected with Microsoft Information Protection. "
                    "You can open it using Microsoft Outlook.")
    msg.add_attachment(b"\x76\xe8\x04\x60\xc4\x11\xe3\x86" + bytes(200),
                       maintype="application", subtype="x-microsoft-rpmsg-message",
                       filename="message.rpmsg")
    doc = textsieve.extract(msg.as_bytes())
    assert doc.error is not None and doc.error.kind is ErrorKind.ENCRYPTED
    assert "Rights Management" in doc.error.message
