"""Mail: RFC 822 messages (EML), Outlook MSG and mbox folders.

Every message is shown the way a person reads it: a header block (From, To, Cc, Date,
Subject) then the body (text/plain preferred, HTML converted to text otherwise);
attachments and enclosed messages become children extracted by their own format. Broken
mail is the norm, not the exception: undecodable headers fall back to the compat32 policy
or raw bytes, charsets go through ``textcodec`` (ISO-2022-JP, Shift_JIS, ks_c_5601-1987),
MIME nesting is capped, and a parse that still fails keeps the raw text.
"""

from __future__ import annotations

import binascii
import email
import mmap
import re
import struct
from datetime import UTC, datetime, timedelta
from email._policybase import compat32  # email.policy's own: see _parse
from email.message import Message
from email.utils import getaddresses
from typing import Any

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader
from ..kernels import mime
from ..model import Document, ErrorKind, ExtractionError, Status
from ..render import Builder
from ..textcodec import decode, normalize_charset
from . import Context

# Imported on first use only (rare paths); ``preload`` imports them ahead.
LAZY = ("olefile", "lxml.html", "email.parser", "email.generator")

# Output version (archives re-extract what an older one made): 2 = header block from the
# raw headers (display names unquoted, original Date text); 3 = MSG recipients with their
# addresses, Bcc and Message-ID, Exchange senders by SMTP address; 4 = PGP, S/MIME and
# IRM-protected bodies are `encrypted`, not ciphertext or a placeholder printed as text.
FORMAT = Format(
    name="mail", version=4,
    readers=(Reader(d.MSG, "extract_msg"), Reader(d.EML, "extract_eml"),
             Reader(d.MBOX, "extract_mbox")),
    hints={"msg": d.MSG, "eml": d.EML, "mbox": d.MBOX},
)

_HEADERS = (("From", "from"), ("To", "to"), ("Cc", "cc"), ("Date", "date"),
            ("Subject", "subject"))
_ADDRESS_KEYS = ("from", "to", "cc")


# --------------------------------------------------------------------------------------
# HTML bodies
# --------------------------------------------------------------------------------------


def html_to_text(html: str, ctx: Context) -> str:
    """HTML body -> text through the HTML extractor; a plain tag strip if it fails."""
    child = ctx.child(b"\xef\xbb\xbf" + html.encode("utf-8", "replace"), "body.html")
    if child.status is not Status.ERROR and child.text.strip():
        return child.text
    try:
        import lxml.html

        parser = lxml.html.HTMLParser(encoding="utf-8", no_network=True, remove_comments=True,
                                      remove_pis=True, huge_tree=False)
        root = lxml.html.document_fromstring(html.encode("utf-8", "replace"), parser=parser)
        for bad in root.xpath("//script|//style|//head"):
            bad.drop_tree()
        return re.sub(r"\n\s*\n+", "\n\n", root.text_content()).strip()
    except Exception:  # unparseable HTML: strip tags with a regex
        return re.sub(r"<[^>]*>", " ", html)


# --------------------------------------------------------------------------------------
# EML
# --------------------------------------------------------------------------------------


class _MailWalker:
    """Collects the readable body and the attachments of one message."""

    def __init__(self, ctx: Context, doc: Document) -> None:
        self.ctx = ctx
        self.doc = doc
        self.bodies: list[str] = []
        self.count = 0
        self.truncated = False
        self.encrypted: list[str] = []  # "PGP/MIME", "S/MIME", "inline PGP": bodies we lack

    def attach(self, payload: bytes, name: str) -> None:
        self.count += 1
        try:
            self.ctx.account(len(payload), "mail attachments")
        except ExtractionError as exc:
            self.doc.children.append(Document.failed(exc.kind, exc.message, name=name))
            return
        self.doc.children.append(self.ctx.child(payload, name))

    def walk(self, root: Message) -> None:
        stack: list[tuple[Message, int]] = [(root, 0)]
        while stack:
            part, depth = stack.pop()
            if depth > mime.MAX_MIME_DEPTH:
                if not self.truncated:
                    self.doc.warnings.append(f"MIME nesting deeper than {mime.MAX_MIME_DEPTH}: "
                                             "inner parts skipped")
                    self.truncated = True
                continue
            subs = self.part(part, depth)
            stack.extend((s, depth + 1) for s in reversed(subs))

    def part(self, part: Message, depth: int) -> list[Message]:
        """Handle one part; returns the sub-parts still to walk."""
        ctype = part.get_content_type()
        if ctype == "message/rfc822" and depth > 0:
            inner = part.get_payload()
            inner = inner[0] if isinstance(inner, list) and inner else inner
            if isinstance(inner, Message):
                subject = mime.header(inner, "Subject") or "message"
                self.attach(_as_bytes(inner), f"{_safe_name(subject)}.eml")
            return []
        if ctype == "multipart/encrypted":  # RFC 1847 / 3156: a version part, then cipher
            protocol = str(part.get_param("protocol") or "").lower()
            self.encrypted.append("PGP/MIME" if "pgp" in protocol else "multipart/encrypted")
            return []
        if ctype in _PKCS7_TYPES and _enveloped(part):
            self.encrypted.append("S/MIME")
            return []
        if part.is_multipart():
            subs = [p for p in part.get_payload() if isinstance(p, Message)]
            if ctype == "multipart/alternative" and subs:
                return [_best_alternative(subs)]
            return subs
        filename = _filename(part)
        if ctype == _RPMSG or (filename or "").lower().endswith(".rpmsg"):
            self.encrypted.append(_IRM)  # the readable body is the client's placeholder
            return []
        disposition = part.get_content_disposition()
        payload = mime.payload(part)
        # A multipart whose boundary never appears arrives as one string: keep it as text.
        is_text = ctype.startswith(("text/", "message/", "multipart/"))
        if filename or disposition == "attachment" or not is_text:
            if payload:
                self.attach(payload, filename or f"part-{self.count + 1}{_ext(ctype)}")
            return []
        text = mime.decode_body(payload, part.get_content_charset())
        if ctype == "text/html":
            text = html_to_text(text, self.ctx)
        elif ctype == "text/plain" or ctype.startswith("multipart/"):
            text = self.uudecode(text)
            if "-----BEGIN PGP MESSAGE-----" in text:
                text = _PGP_BLOCK.sub("", text)  # ciphertext is not the message's text
                self.encrypted.append("inline PGP")
        if text.strip():
            self.bodies.append(text)
        return []

    _UU = re.compile(r"^begin [0-7]{3,4} (.+?)\n(.*?)^end$", re.M | re.S)

    def uudecode(self, text: str) -> str:
        """Inline uuencoded files in a plain body become attachments."""
        if "begin " not in text:
            return text

        def repl(m: re.Match[str]) -> str:
            data = bytearray()
            for line in m.group(2).split("\n"):
                if not line or line == "`":
                    continue
                try:
                    data += binascii.a2b_uu(line)
                except binascii.Error:
                    # Some encoders pad lines short: retry with the declared length.
                    n = (ord(line[0]) - 32) & 63
                    data += binascii.a2b_uu(line[:1] + line[1:].ljust((n + 2) // 3 * 4))
            self.attach(bytes(data), m.group(1).strip())
            return ""

        try:
            return self._UU.sub(repl, text)
        except binascii.Error:
            return text


_PKCS7_TYPES = ("application/pkcs7-mime", "application/x-pkcs7-mime")
_RPMSG = "application/x-microsoft-rpmsg-message"  # Microsoft Rights Management (IRM) mail
_IRM = "IRM"
_PGP_BLOCK = re.compile(r"-----BEGIN PGP MESSAGE-----.*?(-----END PGP MESSAGE-----|\Z)", re.S)
# DER of the CMS content types that hold an encrypted message: envelopedData
# (1.2.840.113549.1.7.3) and authEnvelopedData (1.2.840.113549.1.9.16.1.23).
_ENVELOPED_OIDS = (b"\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x07\x03",
                   b"\x06\x0b\x2a\x86\x48\x86\xf7\x0d\x01\x09\x10\x01\x17")


def _enveloped(part: Message) -> bool:
    """An S/MIME part that is encrypted, not signed-only or a certificate bundle: by its
    smime-type, or (old clients leave it out) by the CMS content type at its start."""
    smime_type = str(part.get_param("smime-type") or "").lower()
    if smime_type:
        return smime_type in ("enveloped-data", "authenveloped-data")
    return any(oid in mime.payload(part)[:64] for oid in _ENVELOPED_OIDS)


def _encrypted_body(kinds: list[str], readable: bool) -> ExtractionError | Document:
    """The verdict on a message whose body is encrypted: the message is ``encrypted`` when
    nothing else of it is readable, else an ``encrypted`` part beside what is."""
    if _IRM in kinds:  # what a reader sees is "This message is protected with ..."
        return ExtractionError(ErrorKind.ENCRYPTED, "message protected with Information "
                               "Rights Management: the text shown is the mail client's "
                               "placeholder; the body is encrypted in message.rpmsg")
    what = " and ".join(dict.fromkeys(kinds))
    message = f"{what}-encrypted message body (it needs the recipient's private key)"
    if not readable:
        return ExtractionError(ErrorKind.ENCRYPTED, message)
    return Document.failed(ErrorKind.ENCRYPTED, message, name="encrypted body")


def _as_bytes(msg: Message) -> bytes:
    try:
        return msg.as_bytes(policy=msg.policy.clone(linesep="\n"))
    except Exception:  # re-serialising a broken message: fall back to the lenient policy
        try:
            return msg.as_bytes(policy=compat32)
        except Exception:
            return msg.as_string(policy=compat32).encode("utf-8", "replace")


def _best_alternative(parts: list[Message]) -> Message:
    """text/plain if it says something, else HTML, else the last (richest) part."""
    by_type = {p.get_content_type(): p for p in parts}
    plain = by_type.get("text/plain")
    if plain is not None and mime.payload(plain).strip():
        return plain
    return by_type.get("text/html") or parts[-1]


def _filename(part: Message) -> str | None:
    """Content-Disposition filename, else Content-Type name: RFC 2231, encoded words and
    raw 8-bit bytes (compat32 would turn those into U+FFFD) all decoded."""
    for header, param in (("Content-Disposition", "filename"), ("Content-Type", "name")):
        raw = mime.raw_header(part, header)
        if raw is None:
            continue
        holder = Message()  # re-parse the header as proper text, not surrogate escapes
        holder[header] = mime.fix_header(raw)
        try:
            value = holder.get_param(param, header=header)
        except Exception:
            continue
        if isinstance(value, tuple):
            value = email.utils.collapse_rfc2231_value(value)
        if value:
            return mime.decode_words(str(value))
    return None


def _safe_name(text: str) -> str:
    return re.sub(r"[\\/:*?\"<>|\x00-\x1f]+", "_", text).strip()[:80] or "message"


_EXTS = {"application/pdf": ".pdf", "image/png": ".png", "image/jpeg": ".jpg",
         "image/gif": ".gif", "text/html": ".html", "text/plain": ".txt",
         "application/msword": ".doc", "application/zip": ".zip"}


def _ext(ctype: str) -> str:
    return _EXTS.get(ctype, ".bin")


def _fill_headers(msg: Message, doc: Document, out: Builder) -> None:
    """Metadata from the headers, and the header block shown above the body."""
    values: dict[str, str | None] = {}
    lists: dict[str, list[str]] = {}
    for name, key in _HEADERS:
        if key in _ADDRESS_KEYS:
            values[key], lists[key] = mime.address_header(msg, name)
        else:
            values[key] = mime.header(msg, name)
    subject = values["subject"]
    doc.title = subject or doc.title
    doc.metadata.author = values["from"]
    doc.metadata.subject = subject
    date_iso = mime.iso_date(values["date"])
    doc.metadata.created = date_iso
    extra = doc.metadata.extra
    for key in ("from", "subject"):
        if values[key]:
            extra[key] = values[key]
    for key in ("to", "cc"):
        if values[key]:
            extra[key] = lists[key]
    if date_iso or values["date"]:
        extra["date"] = date_iso or values["date"]
    if mid := mime.header(msg, "Message-ID"):
        extra["message_id"] = mid
    block = [f"{name}: {values[key]}" for name, key in _HEADERS if values[key]]
    if any(values[key] for _, key in _HEADERS if key != "date"):  # a bare date is no content
        out.paragraph("\n".join(block))


def render_message(msg: Message, ctx: Context, doc: Document, out: Builder) -> None:
    _fill_headers(msg, doc, out)
    walker = _MailWalker(ctx, doc)
    walker.walk(msg)
    if walker.encrypted:
        readable = any(b.strip() for b in walker.bodies) or \
            any(c.status is Status.OK for c in doc.children)
        verdict = _encrypted_body(walker.encrypted, readable)
        if isinstance(verdict, ExtractionError):
            raise verdict
        doc.children.append(verdict)
    for body in walker.bodies:
        out.preformatted(_tidy(body))
    if walker.count:
        doc.metadata.extra["attachments"] = walker.count


def _tidy(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", text.replace("\r\n", "\n").replace("\r", "\n"))


def extract_eml(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    data = src.read()
    try:
        msg = mime.parse_message(data)
    except RecursionError:
        # Pathological nesting defeats the parser: keep the text of the raw message.
        doc.warnings.append("MIME structure nested too deeply to parse; raw text kept")
        out.preformatted(_tidy(decode(data)[0]))
        return
    if not msg.keys() and not msg.get_payload():
        raise ExtractionError(ErrorKind.CORRUPT, "no mail headers or body found")
    render_message(msg, ctx, doc, out)


# --------------------------------------------------------------------------------------
# mbox
# --------------------------------------------------------------------------------------

def extract_mbox(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    with src.open() as f:
        if src.data_ is not None:
            _mbox(src.data_, ctx, doc, out)
            return
        try:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):  # empty or unmappable: read it
            _mbox(f.read(), ctx, doc, out)
            return
        try:
            _mbox(mm, ctx, doc, out)
        finally:
            mm.close()


def _mbox(buf: Any, ctx: Context, doc: Document, out: Builder) -> None:
    start = 3 if bytes(buf[:3]) == b"\xef\xbb\xbf" else 0
    view = buf if start == 0 else bytes(buf[start:])  # a BOM before the first From_
    spans = list(mime.message_spans(view))
    if not spans:
        raise ExtractionError(ErrorKind.CORRUPT, "no From_ separated messages found")
    pre = mime.preamble(view)
    if pre.strip():
        out.preformatted(_tidy(decode(pre)[0]))
    index: list[str] = []
    for n, (s, e) in enumerate(spans, 1):
        raw = mime.mbox_message(view, s, e)
        try:
            ctx.account(len(raw), "mbox")
        except ExtractionError as exc:
            doc.children.append(Document.failed(exc.kind, exc.message, name=f"message {n}"))
            break
        child = ctx.child(raw, f"message {n}.eml")
        child.name = child.title or f"message {n}"
        doc.children.append(child)
        who = child.metadata.author or ""
        index.append(f"{child.name}" + (f" — {who}" if who else ""))
    doc.metadata.extra["messages"] = len(spans)
    for line in index[:1000]:
        out.list_item(line)


# --------------------------------------------------------------------------------------
# MSG (Outlook, OLE2)
# --------------------------------------------------------------------------------------

_PT_UNICODE, _PT_STRING8, _PT_BINARY = "001F", "001E", "0102"
_FILETIME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)


class _Msg:
    """Property access under one storage prefix (the message or an embedded one)."""

    def __init__(self, ole: Any, prefix: str, codepage: str | None = None,
                 header: int | None = None) -> None:
        self.ole = ole
        self.prefix = prefix
        # The property stream's header: 32 bytes for the message, 24 for an embedded
        # one, 8 for a recipient or an attachment (MS-OXMSG 2.4).
        self.header = header if header is not None else (24 if prefix else 32)
        self.fixed = self._fixed_props()
        cp = self.fixed.get(0x3FFD) or self.fixed.get(0x3FDE)
        self.codepage = (normalize_charset(f"cp{cp}") if isinstance(cp, int) else None) or \
            codepage or "cp1252"
        self.sender_smtp: str | None = None  # set by _msg_sender / _msg_recipients
        self.sender_dn: str | None = None  # the sender's Exchange directory path, if any

    def _read(self, name: str) -> bytes | None:
        path = self.prefix + name
        if not self.ole.exists(path):
            return None
        return self.ole.openstream(path).read()

    def _fixed_props(self) -> dict[int, Any]:
        """Integer and time properties from __properties_version1.0."""
        data = self._read("__properties_version1.0") or b""
        props: dict[int, Any] = {}
        for off in range(self.header, len(data) - 15, 16):
            ptype, pid = struct.unpack_from("<HH", data, off)
            if ptype == 0x0003:
                props[pid] = struct.unpack_from("<i", data, off + 8)[0]
            elif ptype == 0x0040:
                props[pid] = struct.unpack_from("<Q", data, off + 8)[0]
        return props

    def text(self, pid: str) -> str | None:
        raw = self._read(f"__substg1.0_{pid}{_PT_UNICODE}")
        if raw is not None:
            return raw.decode("utf-16-le", "replace").rstrip("\x00")
        raw = self._read(f"__substg1.0_{pid}{_PT_STRING8}")
        if raw is not None:
            return raw.rstrip(b"\x00").decode(self.codepage, "replace")
        return None

    def binary(self, pid: str) -> bytes | None:
        return self._read(f"__substg1.0_{pid}{_PT_BINARY}")

    def time(self, pid: int) -> str | None:
        value = self.fixed.get(pid)
        if not isinstance(value, int) or value <= 0:
            return None
        try:
            return (_FILETIME_EPOCH + timedelta(microseconds=value // 10)).isoformat()
        except OverflowError:
            return None


def _msg_storages(ole: Any, prefix: str, kind: str) -> list[str]:
    depth = prefix.count("/")
    found = set()
    for entry in ole.listdir(streams=True, storages=True):
        if len(entry) > depth and "/".join(entry[:depth]) + ("/" if depth else "") == prefix \
                and entry[depth].startswith(kind):
            found.add(entry[depth])
    return sorted(found)


# PidTagRecipientType values (MS-OXOMSG 2.2.3.1) and the display-list property of each.
_RECIPIENT_KINDS = ((1, "to", "To", "0E04"), (2, "cc", "Cc", "0E03"), (3, "bcc", "Bcc", "0E02"))


def _smtp(address: str | None) -> str | None:
    """An Internet address, or None for an Exchange directory path ("/O=ORG/OU=.../CN=X",
    the legacy X.500 DN Outlook stores for senders and recipients inside one organisation)
    and for other non-SMTP address types."""
    address = (address or "").strip()
    return address if "@" in address and not address.startswith("/") else None


def _named(name: str | None, address: str | None) -> str | None:
    """ "Name <address>", as a mail client shows a person; either part alone if that is
    all there is (Outlook wraps some display names in single quotes: dropped)."""
    name = (name or "").strip()
    if len(name) > 1 and name[0] == name[-1] == "'":
        name = name[1:-1].strip()
    if name and address and address.lower() != name.lower():
        return f"{name} <{address}>"
    return address or name or None


def _msg_recipients(ole: Any, m: _Msg) -> dict[str, list[str]]:
    """To/Cc/Bcc from the recipient storages, each as "Name <smtp address>".

    The message's own display lists (PR_DISPLAY_TO ...) hold names only, and not even
    that for Bcc; the recipient table has the name, the address as sent (an Exchange DN
    for colleagues) and the SMTP address (PR_SMTP_ADDRESS)."""
    found: dict[str, list[str]] = {key: [] for _, key, _, _ in _RECIPIENT_KINDS}
    for storage in _msg_storages(ole, m.prefix, "__recip_version1.0_"):
        r = _Msg(ole, f"{m.prefix}{storage}/", m.codepage, header=8)
        kind = r.fixed.get(0x0C15, 1) & 0x0F  # the high bits are flags (sent, ...)
        key = next((k for n, k, _, _ in _RECIPIENT_KINDS if n == kind), None)
        address = _smtp(r.text("39FE")) or _smtp(r.text("3003")) or _smtp(r.text("3A00"))
        shown = _named(r.text("3001") or r.text("3A20"), address)
        if key and shown:
            found[key].append(shown)
        if m.sender_dn and not m.sender_smtp and address and \
                (r.text("3003") or "").lower() == m.sender_dn.lower():
            m.sender_smtp = address  # the sender wrote to themselves: same DN
    return found


def _msg_sender(m: _Msg) -> tuple[str | None, str | None]:
    """The sender's name and, for an Exchange sender, the SMTP address instead of the
    directory path: PidTagSenderSmtpAddress, the sent-representing one, or the From of
    the transport headers a received message keeps."""
    name = m.text("0C1A") or m.text("0042")
    stored = m.text("0C1F") or m.text("0065")
    smtp = _smtp(stored) or _smtp(m.text("5D01")) or _smtp(m.text("5D02"))
    if smtp is None and stored:
        m.sender_dn = stored
    if smtp is None and (headers := m.text("007D")):
        raw = mime.raw_header(mime.parse_message(headers.encode("utf-8", "replace")), "From")
        try:
            pairs = getaddresses([mime.fix_header(raw)]) if raw else []
        except Exception:  # hostile header text: no address, not a failed message
            pairs = []
        smtp = next((_smtp(a) for _, a in pairs if _smtp(a)), None)
    return name, smtp


def _render_msg(ole: Any, prefix: str, ctx: Context, doc: Document, out: Builder,
                level: int = 0) -> None:
    m = _Msg(ole, prefix)
    subject = m.text("0037")
    sender_name, m.sender_smtp = _msg_sender(m)
    recipients = _msg_recipients(ole, m)
    # A directory path is shown only when nothing better (a name) is known.
    sender = _named(sender_name, m.sender_smtp) or m.sender_dn
    shown = {key: "; ".join(recipients[key]) or m.text(pid) or None
             for _, key, _, pid in _RECIPIENT_KINDS}
    date = m.time(0x0039) or m.time(0x0E06)
    message_id = m.text("1035")
    doc.title, doc.metadata.author, doc.metadata.subject = subject, sender, subject
    doc.metadata.created = date
    extra = doc.metadata.extra
    for key, value in (("from", sender), ("subject", subject), ("date", date),
                       ("message_id", message_id)):
        if value:
            extra[key] = value
    for _, key, _, _ in _RECIPIENT_KINDS:
        if recipients[key]:
            extra[key] = recipients[key]
        elif shown[key]:
            extra[key] = [x.strip() for x in (shown[key] or "").split(";") if x.strip()]
    fields = [("From", sender), *((label, shown[key]) for _, key, label, _ in _RECIPIENT_KINDS),
              ("Date", date), ("Subject", subject)]
    block = [f"{k}: {v}" for k, v in (*fields, ("Message-ID", message_id)) if v]
    if sender or any(shown.values()) or subject:  # a bare date is no content
        out.paragraph("\n".join(block))
    body = m.text("1000")
    if not (body and body.strip()):
        body = _msg_html(m, ctx)
    if not (body and body.strip()):
        body = _msg_rtf(m)
    encrypted = _msg_encryption(m)
    if body and "-----BEGIN PGP MESSAGE-----" in body:
        body = _PGP_BLOCK.sub("", body)
        encrypted.append("inline PGP")
    if encrypted:
        verdict = _encrypted_body(encrypted, bool(body and body.strip()))
        if isinstance(verdict, ExtractionError):
            raise verdict
        doc.children.append(verdict)
    if body and body.strip():
        out.preformatted(_tidy(body.replace("\x00", "")))
    for storage in _msg_storages(ole, prefix, "__attach_version1.0_"):
        _msg_attachment(ole, f"{prefix}{storage}/", ctx, doc, level, m.codepage)


def _msg_encryption(m: _Msg) -> list[str]:
    """What the message class (PidTagMessageClass) says is encrypted: S/MIME
    ("IPM.Note.SMIME", but not the clear-signed "IPM.Note.SMIME.MultipartSigned") or
    Rights Management ("IPM.Note.rpmsg...", whose body is a placeholder)."""
    klass = (m.text("001A") or "").lower()
    if ".rpmsg" in klass:
        return [_IRM]
    if klass.startswith("ipm.note.smime") and "multipartsigned" not in klass:
        return ["S/MIME"]
    return []


def _msg_html(m: _Msg, ctx: Context) -> str | None:
    raw = m.binary("1013")
    html: str | None
    if raw is not None:
        head = raw[:2048].decode("ascii", "replace")
        cs = re.search(r"charset=[\"']?([\w-]+)", head, re.I)
        html = mime.decode_body(raw, cs.group(1) if cs else m.codepage)
    else:
        html = m.text("1013")
    return html_to_text(html, ctx) if html and html.strip() else None


def _msg_rtf(m: _Msg) -> str | None:
    raw = m.binary("1009")
    if not raw:
        return None
    try:
        from .rtf import rtf_to_text

        return rtf_to_text(lzfu_decompress(raw))
    except (ValueError, struct.error, IndexError):
        return None


def _msg_attachment(ole: Any, prefix: str, ctx: Context, doc: Document, level: int,
                    codepage: str) -> None:
    a = _Msg(ole, prefix, codepage, header=8)
    name = a.text("3707") or a.text("3704") or a.text("3001") or "attachment"
    name = _safe_name(name.replace("\x00", ""))
    if ole.exists(prefix + "__substg1.0_3701000D"):
        sub = Document(name=name if name != "attachment" else "message.msg",
                       mime_type="application/vnd.ms-outlook")
        if ctx.depth + level + 1 > ctx.options.max_depth:
            doc.children.append(Document.failed(ErrorKind.TOO_LARGE, "nested too deeply",
                                                name=sub.name))
            return
        b = Builder()
        try:
            _render_msg(ole, prefix + "__substg1.0_3701000D/", ctx, sub, b, level + 1)
        except ExtractionError as exc:  # an encrypted enclosed message: that part only
            doc.children.append(Document.failed(exc.kind, exc.message, name=sub.name))
            return
        sub.text, sub.markdown, sub.pages = b.build()
        sub.status = Status.OK if sub.text.strip() else Status.EMPTY
        sub.name = sub.title or sub.name
        doc.children.append(sub)
        return
    data = a.binary("3701")
    if not data:
        return
    try:
        ctx.account(len(data), "MSG attachments")
    except ExtractionError as exc:
        doc.children.append(Document.failed(exc.kind, exc.message, name=name))
        return
    doc.children.append(ctx.child(data, name))


def extract_msg(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    try:
        ole = src.ole()  # parsed by detection already
    except Exception as exc:
        raise ExtractionError(ErrorKind.CORRUPT, f"damaged Outlook file: {exc}") from exc
    try:
        _render_msg(ole, "", ctx, doc, out)
    except ExtractionError:
        raise
    except RecursionError:
        raise
    except Exception as exc:  # olefile/struct errors on fuzzed directories and sectors
        raise ExtractionError(ErrorKind.CORRUPT, f"damaged Outlook file: {exc}") from exc


# --------------------------------------------------------------------------------------
# Compressed RTF (MS-OXRTFCP), the only body some MSG files have
# --------------------------------------------------------------------------------------

_LZFU_DICT = (
    b"{\\rtf1\\ansi\\mac\\deff0\\deftab720{\\fonttbl;}{\\f0\\fnil \\froman \\fswiss "
    b"\\fmodern \\fscript \\fdecor MS Sans SerifSymbolArialTimes New RomanCourier"
    b"{\\colortbl\\red0\\green0\\blue0\r\n\\par \\pard\\plain\\f0\\fs20\\b\\i\\u\\tab\\tx"
)


def lzfu_decompress(data: bytes) -> bytes:
    """Decompress an RTF body (LZFu); uncompressed ('MELA') bodies pass through."""
    if len(data) < 16:
        raise ValueError("compressed RTF header truncated")
    _csize, raw_size, magic, _crc = struct.unpack_from("<IIII", data, 0)
    if magic == 0x414C454D:  # "MELA": stored uncompressed
        return data[16:16 + raw_size]
    if magic != 0x75465A4C:  # "LZFu"
        raise ValueError("unknown compressed RTF signature")
    window = bytearray(4096)
    window[:len(_LZFU_DICT)] = _LZFU_DICT
    wpos = len(_LZFU_DICT)
    out = bytearray()
    pos, end = 16, len(data)
    limit = raw_size + 4096
    while pos < end and len(out) < limit:
        flags = data[pos]
        pos += 1
        for bit in range(8):
            if pos >= end:
                break
            if flags & (1 << bit):
                if pos + 2 > end:
                    break
                ref = (data[pos] << 8) | data[pos + 1]
                pos += 2
                offset, length = ref >> 4, (ref & 0xF) + 2
                if offset == wpos:
                    return bytes(out)
                for i in range(length):
                    c = window[(offset + i) & 0xFFF]
                    out.append(c)
                    window[wpos] = c
                    wpos = (wpos + 1) & 0xFFF
            else:
                c = data[pos]
                pos += 1
                out.append(c)
                window[wpos] = c
                wpos = (wpos + 1) & 0xFFF
    return bytes(out)
