"""What a file really is, from its content; the name's extension is only a hint.

Order: magic bytes (the signatures the formats declare, ``textsieve.formats``); then a
look inside containers (which ZIP: OOXML / ODF / EPUB; which OLE2: Word / Excel /
PowerPoint / Outlook / encrypted OOXML); then, for text, what kind of text (HTML, XML,
mail, mbox, CSV, plain). The extension (the formats' name hints) only breaks ties that
content cannot (a CSV is also plain text; a truncated ZIP may still say it was a DOCX).
When all that ends in nothing specific (plain text, XML, a bare ZIP or OLE2 container,
unknown bytes, a format textsieve does not read), plugin formats get their say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .bytesource import Source
from .extractors.registry import HINTS, REGISTRY, SIGNATURES, plugin_claim
from .textcodec import bom_encoding, looks_binary

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
DOCM = "application/vnd.ms-word.document.macroenabled.12"
DOTX = "application/vnd.openxmlformats-officedocument.wordprocessingml.template"
DOTM = "application/vnd.ms-word.template.macroenabled.12"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
PPTM = "application/vnd.ms-powerpoint.presentation.macroenabled.12"
PPSX = "application/vnd.openxmlformats-officedocument.presentationml.slideshow"
POTX = "application/vnd.openxmlformats-officedocument.presentationml.template"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
XLSM = "application/vnd.ms-excel.sheet.macroenabled.12"
XLTX = "application/vnd.openxmlformats-officedocument.spreadsheetml.template"
XLSB = "application/vnd.ms-excel.sheet.binary.macroenabled.12"
XLS = "application/vnd.ms-excel"
DOC = "application/msword"
PPT = "application/vnd.ms-powerpoint"
MSG = "application/vnd.ms-outlook"
OOXML_ENCRYPTED = "application/x-ooxml-encrypted"  # OOXML inside an encrypted OLE2 file
IRM_PROTECTED = "application/x-ms-irm-protected"  # Office file under Rights Management
OLE_OTHER = "application/x-ole-storage"
ODT = "application/vnd.oasis.opendocument.text"
ODS = "application/vnd.oasis.opendocument.spreadsheet"
ODP = "application/vnd.oasis.opendocument.presentation"
ODF_PREFIX = "application/vnd.oasis.opendocument."
EPUB = "application/epub+zip"
ZIP = "application/zip"
TAR = "application/x-tar"
GZIP = "application/gzip"
BZIP2 = "application/x-bzip2"
XZ = "application/x-xz"
ZSTD = "application/zstd"
SEVENZ = "application/x-7z-compressed"
RAR = "application/vnd.rar"
RTF = "application/rtf"
HTML = "text/html"
XML = "application/xml"
EML = "message/rfc822"
MBOX = "application/mbox"
CSV = "text/csv"
TSV = "text/tab-separated-values"
TEXT = "text/plain"
WORDPERFECT = "application/vnd.wordperfect"
PNG = "image/png"
JPEG = "image/jpeg"
GIF = "image/gif"
TIFF = "image/tiff"
BMP = "image/bmp"
WEBP = "image/webp"
JP2 = "image/jp2"
HEIC = "image/heic"
ICO = "image/vnd.microsoft.icon"
PSD = "image/vnd.adobe.photoshop"
OCTET = "application/octet-stream"
EMPTY = "application/x-empty"

_OOXML_MAIN = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml": DOCX,
    "application/vnd.ms-word.document.macroEnabled.main+xml": DOCM,
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml": DOTX,
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml": DOTM,
    "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml": PPTX,
    "application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml": PPTM,
    "application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml": PPSX,
    "application/vnd.openxmlformats-officedocument.presentationml.template.main+xml": POTX,
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml": XLSX,
    "application/vnd.ms-excel.sheet.macroEnabled.main+xml": XLSM,
    "application/vnd.openxmlformats-officedocument.spreadsheetml.template.main+xml": XLTX,
    "application/vnd.ms-excel.sheet.binary.macroEnabled.main": XLSB,
}

TEXT_FAMILY = {HTML, XML, EML, MBOX, CSV, TSV, TEXT}
# Answers that say little: a plugin format may know better.
_GENERIC = {TEXT, XML, ZIP, OLE_OTHER, OCTET}


@dataclass(frozen=True)
class Detection:
    mime: str
    how: str  # "magic" | "container" | "text" | "extension" | "empty"
    note: str = ""


def detect(src: Source) -> Detection:
    head = src.head(65536)
    if not head:
        return Detection(EMPTY, "empty")
    found = _detect(src, head)
    # A plugin format has its say when ours have nothing specific to say: no reader, or a
    # generic type the name does not confirm (``notes.txt`` is ours, ``notes.rst`` may not).
    if found.mime not in REGISTRY or (found.mime in _GENERIC
                                      and HINTS.get(src.extension) != found.mime):
        claimed = plugin_claim(head, src.extension)
        if claimed is not None:
            return Detection(*claimed)
    return found


def _detect(src: Source, head: bytes) -> Detection:
    """What textsieve's own formats make of a file."""
    found = _magic(head)
    if found == ZIP:
        return _zip_kind(src, head)
    if found == OLE_OTHER:
        return _ole_kind(src)
    if found:
        return Detection(found, "magic")
    if looks_binary(head):
        hint = HINTS.get(src.extension)
        if hint and hint not in TEXT_FAMILY:
            # No signature we know, but the name says what it meant to be: let that
            # parser judge it (a fuzzed PDF becomes "corrupt", not "unsupported").
            return Detection(hint, "extension", "no known signature; trusting the extension")
        return Detection(OCTET, "magic", "unrecognised binary")
    return Detection(_text_kind(head, src.extension), "text")


def _magic(h: bytes) -> str | None:
    return next((sig.mime for sig in SIGNATURES if sig.matches(h)), None)


def _zip_kind(src: Source, head: bytes) -> Detection:
    import zipfile  # here: a plain text or PDF never pays for it

    try:
        with src.open() as f, zipfile.ZipFile(f) as zf:
            names = zf.namelist()
            name_set = set(names)
            hint = HINTS.get(src.extension)
            if not names and hint and hint not in (ZIP, *TEXT_FAMILY):
                return Detection(hint, "extension", "empty ZIP container")
            if "mimetype" in name_set:
                mt = zf.read("mimetype")[:200].decode("ascii", "replace").strip()
                if mt == EPUB:
                    return Detection(EPUB, "container")
                if mt.startswith(ODF_PREFIX):
                    return Detection(mt, "container")
            if "[Content_Types].xml" in name_set:
                ct = zf.read("[Content_Types].xml")[:200_000].decode("utf-8", "replace")
                for main, mime in _OOXML_MAIN.items():
                    if main.lower() in ct.lower():
                        return Detection(mime, "container")
                return _ooxml_by_parts(name_set, src)
            if "META-INF/container.xml" in name_set:
                return Detection(EPUB, "container", "no mimetype entry")
            if "content.xml" in name_set and "META-INF/manifest.xml" in name_set:
                man = zf.read("META-INF/manifest.xml")[:100_000].decode("utf-8", "replace")
                m = re.search(r'full-path="/"[^>]*media-type="([^"]+)"', man) or re.search(
                    r'media-type="([^"]+)"[^>]*full-path="/"', man)
                if m and m.group(1).startswith(ODF_PREFIX):
                    return Detection(m.group(1), "container", "no mimetype entry")
                return Detection(ODT, "container", "ODF without declared type")
            if any(n.startswith("word/") for n in names):
                return Detection(DOCX, "container", "no [Content_Types].xml")
            return Detection(ZIP, "magic")
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError, RuntimeError,
            NotImplementedError, zipfile.LargeZipFile) as exc:
        # A damaged ZIP: the first local header's name (and the extension) still tell
        # what it meant to be, so the right parser can report it as corrupt.
        first = _first_local_name(head)
        guess = _ooxml_by_parts({first}, src) if first else None
        if first == "mimetype":
            mt = head[38:38 + 80].split(b"PK")[0].decode("ascii", "replace").strip()
            if mt == EPUB or mt.startswith(ODF_PREFIX):
                return Detection(mt, "container", f"damaged zip: {exc}")
        if guess and guess.mime != ZIP:
            return Detection(guess.mime, "container", f"damaged zip: {exc}")
        hint = HINTS.get(src.extension)
        if hint and hint not in TEXT_FAMILY and hint not in (PDF, RTF, DOC, XLS, PPT, MSG):
            return Detection(hint, "extension", f"damaged zip: {exc}")
        return Detection(ZIP, "magic", f"damaged zip: {exc}")


def _ooxml_by_parts(names: set[str], src: Source) -> Detection:
    joined = " ".join(names)
    if "word/" in joined:
        return Detection(DOCX, "container")
    if "xl/workbook.bin" in joined:
        return Detection(XLSB, "container")
    if "xl/" in joined:
        return Detection(XLSX, "container")
    if "ppt/" in joined:
        return Detection(PPTX, "container")
    hint = HINTS.get(src.extension)
    ooxml = set(_OOXML_MAIN.values())
    if hint in ooxml:
        return Detection(hint, "extension", "OOXML parts not identified")
    return Detection(ZIP, "magic")


def _first_local_name(head: bytes) -> str | None:
    if not head.startswith(b"PK\x03\x04") or len(head) < 30:
        return None
    n = int.from_bytes(head[26:28], "little")
    return head[30:30 + n].decode("utf-8", "replace") or None


def _ole_kind(src: Source) -> Detection:
    try:
        streams = {"/".join(p) for p in src.ole().listdir(streams=True, storages=True)}
    except Exception as exc:  # olefile raises a zoo of errors on damaged files
        if b"\xffWPC" in src.head(65536):  # a WordPerfect stream in a damaged container
            return Detection(WORDPERFECT, "container", f"damaged OLE2 container: {exc}")
        hint = HINTS.get(src.extension)
        if hint in (DOC, XLS, PPT, MSG, WORDPERFECT):
            return Detection(hint, "extension", f"damaged OLE2 container: {exc}")
        return Detection(OLE_OTHER, "magic", f"damaged OLE2 container: {exc}")
    lower = {s.lower() for s in streams}
    if "\tdrmcontent" in lower or any(s.startswith("\x06dataspaces/") and "drm" in s
                                       for s in lower):
        # Information Rights Management (MS-OFFCRYPTO 2.2.10, 2.3.3): the readable
        # WordDocument (or whatever) stream only holds the placeholder Office shows
        # ("This document is protected..."); the content is in \tDRMContent or in an
        # EncryptedPackage with a DRM transform.
        return Detection(IRM_PROTECTED, "container")
    if "encryptioninfo" in lower and "encryptedpackage" in lower:
        return Detection(OOXML_ENCRYPTED, "container")
    if "worddocument" in lower:
        return Detection(DOC, "container")
    if "workbook" in lower or "book" in lower:
        return Detection(XLS, "container")
    if "powerpoint document" in lower:
        return Detection(PPT, "container")
    if any(s.startswith("__substg1.0_") or s == "__properties_version1.0" for s in lower):
        return Detection(MSG, "container")
    if "perfectoffice_main" in lower:  # WordPerfect 8+ may save inside OLE2
        return Detection(WORDPERFECT, "container")
    return Detection(OLE_OTHER, "container", "OLE2 file of an unknown application")


_MAIL_HEADER = re.compile(
    rb"^(from|to|cc|subject|date|message-id|received|return-path|mime-version|"
    rb"content-type|delivered-to|reply-to|x-[a-z0-9-]+|dkim-signature|sender|"
    rb"in-reply-to|references|thread-topic|content-transfer-encoding):", re.I)
_HEADER_LINE = re.compile(rb"^[!-9;-~]+:[ \t]?")  # RFC 5322 field name, then colon
_MBOX_FROM = re.compile(rb"^From \S+")


def _text_kind(head: bytes, ext: str) -> str:
    enc = bom_encoding(head)
    if enc and enc.startswith(("utf-16", "utf-32")):
        sample = head.decode(enc.replace("-sig", ""), errors="ignore").encode("utf-8")
    else:
        sample = head[3:] if enc == "utf-8-sig" else head
    sample = sample.lstrip(b"\x00")
    sample = sample.lstrip()
    low = sample[:4096].lower()
    if _looks_like_headers(sample):  # before HTML: an MHTML mail holds <html> too
        first = sample.split(b"\n", 1)[0]
        return MBOX if _MBOX_FROM.match(first) else EML
    if low.startswith((b"<!doctype html", b"<html")) or (
        not low.startswith(b"<?xml")  # XML with a <body> (JATS, TEI) is not HTML
        and re.search(rb"<(html|head|body)[\s>]", low[:2048])
    ):
        return HTML
    if low.startswith((b"<?xml", b"<!doctype", b"<!--")):
        return HTML if b"<html" in low[:2048] else XML
    if low.startswith(b"<") and re.match(rb"<[a-z_][\w:.-]*[\s>/]", low):
        # A bare element: XML unless it is plainly an HTML fragment.
        if re.match(rb"<(div|p|span|table|h[1-6]|ul|ol|a|meta|title|section|article)\b", low):
            return HTML
        return XML
    first = sample.split(b"\n", 1)[0]
    if _MBOX_FROM.match(first) and _looks_like_headers(sample.split(b"\n", 1)[-1]):
        return MBOX
    if _looks_like_headers(sample):
        return EML
    m = re.search(rb"\nFrom \S+.*\d{4}[^\n]*\n", sample[:16384])
    if m and _looks_like_headers(sample[m.end():]) and ext in ("mbox", "", "txt"):
        return MBOX  # text before the first From_ line
    if ext in ("csv", "tsv", "tab") or _looks_like_table(sample):
        return TSV if ext in ("tsv", "tab") or b"\t" in sample[:2048] else CSV
    return TEXT


def _looks_like_headers(sample: bytes) -> bool:
    lines = re.split(rb"\r\n|\r|\n", sample[:8192])
    known = 0
    seen = 0
    for line in lines[:40]:
        if not line.strip():
            break
        if line[:1] in (b" ", b"\t"):
            continue  # folded continuation
        if not _HEADER_LINE.match(line):
            return False
        seen += 1
        if _MAIL_HEADER.match(line):
            known += 1
    return known >= 2 and seen >= 2


def _looks_like_table(sample: bytes) -> bool:
    lines = [ln for ln in re.split(rb"\r\n|\r|\n", sample[:8192]) if ln.strip()][:20]
    if len(lines) < 3:
        return False
    for delim in (b",", b"\t", b";", b"|"):
        counts = [ln.count(delim) for ln in lines[:-1]]  # the last line may be cut
        if counts[0] >= 1 and sum(1 for c in counts if c == counts[0]) >= 0.8 * len(counts):
            return True
    return False
