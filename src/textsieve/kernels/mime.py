"""MIME messages and mboxes: parsing them, decoding their headers and bodies, splitting an
mbox into its messages.

One mail parser for every part of textsieve that reads mail: the mail extractor (EML, the
messages of an mbox, MSG headers), the link harvester (``links.harvest``) and the mail
sources (``sources.mailboxes``: provenance from the headers, mboxes streamed in windows).
Broken mail is the norm, not the exception: messages are parsed with the lenient compat32
policy (the modern header registry is 3x slower on every header and super-linear on long
ones), so headers stay raw strings and only the few shown are decoded, here, by hand;
8-bit headers and bodies go through ``textcodec``.
"""

from __future__ import annotations

import email
import email.parser
import re
from collections.abc import Iterator
from email._policybase import Policy, compat32  # email.policy's own: see parse_message
from email.header import decode_header, make_header
from email.message import Message
from email.utils import getaddresses, parsedate_to_datetime
from typing import Any

from ..textcodec import decode, normalize_charset

MAX_MIME_DEPTH = 40
_STATEFUL = ("iso2022", "utf_7", "hz")  # 7-bit charsets that plain ASCII would swallow
_SURROGATE = re.compile("[\udc80-\udcff]")


# -- messages ------------------------------------------------------------------------------


def parse_message(data: bytes, policy: Policy = compat32) -> Message:
    """compat32: headers stay raw strings and are decoded by ``header`` when shown. It is
    taken from ``email._policybase``, where ``email.policy`` gets it: importing
    ``email.policy`` also builds the modern policy's header registry (~3 ms of every
    `textsieve extract` of a mail), which nothing here uses."""
    if b"\n" not in data[:65536] and b"\r" in data[:65536]:
        data = data.replace(b"\r", b"\n")  # CR-only line ends (old Mac mail)
    try:
        return email.message_from_bytes(data, policy=policy)
    except RecursionError:
        raise
    except Exception:  # the modern policy gave up: the lenient legacy one rarely does
        return email.message_from_bytes(data, policy=compat32)


_MAX_HEAD = 256 * 1024  # headers past this are junk; do not feed them to the parser


def _head(raw: bytes) -> bytes:
    """The header block only: parsing a 20 MB attachment just to read the Subject would
    make listing a mailbox slow."""
    cut = len(raw)
    for sep in (b"\n\n", b"\r\n\r\n"):
        i = raw.find(sep, 0, _MAX_HEAD)
        if i != -1:
            cut = min(cut, i + len(sep))
    return raw[:min(cut, _MAX_HEAD)]


def parse_headers(raw: bytes) -> Message:
    """The headers of a raw mail, its body left unread. compat32: values stay raw;
    ``header`` decodes the few a caller keeps."""
    return email.parser.BytesHeaderParser(policy=compat32).parsebytes(_head(raw))


def decode_body(payload: bytes, charset: str | None) -> str:
    """Body bytes to text: a declared 7-bit stateful charset first, then ``textcodec``."""
    enc = normalize_charset(charset)
    if enc and ((enc.startswith(_STATEFUL) and b"\x1b" in payload) or enc == "utf-7"):
        try:
            return payload.decode(enc)
        except (UnicodeDecodeError, LookupError):
            pass
    text, _ = decode(payload, charset)
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")


def fix_header(value: str) -> str:
    """Raw 8-bit header bytes arrive as surrogate escapes: decode them properly."""
    if _SURROGATE.search(value):
        raw = value.encode("utf-8", "surrogateescape")
        value = _mostly_utf8(raw) or decode(raw)[0]
    return " ".join(value.split())


def _mostly_utf8(raw: bytes) -> str | None:
    """Mostly-valid UTF-8, e.g. a long 8-bit file name whose last character a mailer cut in
    half: charset sniffing would call it cp1252 for one bad byte. Needs many valid
    multi-byte characters per bad one, so real cp1252 text never qualifies."""
    text = raw.decode("utf-8", "replace")
    bad = text.count("\ufffd")
    good = sum(1 for ch in text if ch > "\x7f") - bad
    return text if good >= 4 * max(bad, 1) else None


def header(msg: Message, name: str) -> str | None:
    """One header, encoded-words decoded.

    Messages are parsed with the compat32 policy (the modern header registry is 3x slower
    on every header and super-linear on long ones), so only the few headers shown are
    decoded, here, by hand.
    """
    raw = raw_header(msg, name)
    return None if raw is None else decode_words(raw)


def address_header(msg: Message, name: str) -> tuple[str | None, list[str]]:
    """An address header as shown, with display names decoded and quotes dropped
    (``"=?utf-8?b?...?=" <a@b>`` reads ``Name <a@b>``), and its addresses one by one.

    One parse gives both: email.utils' parser goes character by character in Python, and
    a header with thousands of recipients (a list's mail) took ~10 ms a parse."""
    raw = raw_header(msg, name)
    if raw is None:
        return None, []
    try:
        pairs = getaddresses([fix_header(raw)])
    except Exception:
        pairs = []
    plain = "=?" not in raw and '"' not in raw
    names = pairs if plain else [
        (decode_words(n).strip(' "') if n and n != a else "", a) for n, a in pairs]
    listed = [f"{n} <{a}>" if n and a else (a or n) for n, a in names]
    if plain:
        shown = fix_header(raw)
    else:
        out = [f"{_quoted(n)} <{a}>" if n and a else (a or n) for n, a in names]
        shown = ", ".join(x for x in out if x) or decode_words(raw)
    return shown, [x for x in listed if x] or [shown]


def _quoted(name: str) -> str:
    """A display name that would split an address list keeps its quotes."""
    return f'"{name}"' if any(c in name for c in ",;<>@:") else name


def decode_words(raw: str) -> str:
    if "=?" not in raw:
        return fix_header(raw)
    try:
        return fix_header(str(make_header(decode_header(raw))))
    except Exception:  # a malformed encoded-word: keep the raw text
        return fix_header(raw)


def raw_header(msg: Message, name: str) -> str | None:
    low = name.lower()
    for k, v in msg.raw_items():  # the unparsed (name, value) pairs
        if k.lower() == low:
            return str(v)
    return None


def iso_date(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).isoformat()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def payload(part: Message) -> bytes:
    try:
        data = part.get_payload(decode=True)
    except Exception:  # damaged base64/uuencode: keep the raw text
        data = None
    if not isinstance(data, bytes):  # None: nothing to decode (or a multipart)
        raw = part.get_payload()
        if isinstance(raw, list):  # message/delivery-status and friends: header blocks
            return "\n".join(str(p) for p in raw).encode("utf-8", "replace")
        return raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else b""
    return data


# -- mboxes --------------------------------------------------------------------------------

_FROM_LINE = re.compile(rb"^From [^\n]*\n", re.M)
_HEADER_BLOCK_KNOWN = re.compile(
    rb"^(from|to|subject|date|received|return-path|message-id|mime-version|"
    rb"content-type|delivered-to|x-[a-z0-9-]+|sender|reply-to):", re.I | re.M)
_HEADER_LINE = re.compile(rb"^([!-9;-~]+:|[ \t])")
_CONTENT_LENGTH = re.compile(rb"^content-length:[ \t]*(\d+)[ \t]*\r?$", re.I | re.M)
_ESCAPED_FROM = re.compile(rb"^>(>*From )", re.M)


def _header_block(buf: Any, start: int) -> bytes | None:
    """The header block after a From_ line, if it really is one (not a body line)."""
    chunk = bytes(buf[start:start + 16384])
    end = chunk.find(b"\n\n")
    end2 = chunk.find(b"\r\n\r\n")
    if end2 != -1 and (end == -1 or end2 < end):
        end = end2
    head = chunk if end == -1 else chunk[:end]
    lines = head.split(b"\n")
    if not lines or not all(_HEADER_LINE.match(ln) or not ln.strip(b"\r") for ln in lines[:40]):
        return None
    return head if _HEADER_BLOCK_KNOWN.search(head) else None


def message_spans(buf: Any) -> Iterator[tuple[int, int]]:
    """(start, end) of each message body after its From_ line; Content-Length honoured."""
    size = len(buf)
    starts: list[int] = []
    skip_until = 0
    for m in _FROM_LINE.finditer(buf):
        pos = m.start()
        if pos < skip_until:
            continue
        if pos > 0 and not (pos == 1 or buf[pos - 2:pos] in (b"\n\n", b"\r\n")
                            or (pos >= 3 and buf[pos - 3:pos] == b"\n\r\n")):
            continue  # a From_ line must follow a blank line (or open the file)
        head = _header_block(buf, m.end())
        if head is None:
            continue
        starts.append(m.end())
        cl = _CONTENT_LENGTH.search(head)
        if cl:
            body = m.end() + len(head) + 2
            after = body + int(cl.group(1))
            rest = bytes(buf[after:after + 8]).lstrip(b"\r\n")
            if after <= size and (not rest or rest.startswith(b"From ")):
                skip_until = after
    for i, s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else size
        if i + 1 < len(starts):
            e = buf.rfind(b"From ", s, e)  # back to the start of the next From_ line
        yield s, e


def preamble(buf: Any) -> bytes:
    m = _FROM_LINE.search(buf)
    return bytes(buf[:m.start()]) if m else b""


def mbox_message(buf: Any, start: int, end: int) -> bytes:
    """The raw message of a span of ``message_spans``, its ``>From`` escapes undone (as
    mbox readers must)."""
    return _ESCAPED_FROM.sub(rb"\1", bytes(buf[start:end]).rstrip(b"\r\n") + b"\n")
