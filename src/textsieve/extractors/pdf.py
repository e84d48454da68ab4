"""PDF: the text layer via PDFium (pypdfium2), page by page, in reading order.

PDFium is a C++ parser that is fast and recovers most damaged files; we open from the path
when we have one (PDFium reads lazily, the file is never loaded whole) and close every page
and text page as soon as its text is out, so memory stays flat on long documents.

A PDF with no text layer is not "empty": pages that hold only images, or a text layer that
is garbage (fonts without a Unicode mapping), are marked for OCR (``ctx.ocr_pending``) and the
core or the worker pool OCRs exactly those pages; with OCR off they are reported
(``needs_ocr``, or ``pages_needing_ocr`` for mixed documents).
"""

from __future__ import annotations

import ctypes
import os
import re
import stringprep
import time
import unicodedata
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field

import pypdfium2 as pdfium
import pypdfium2.raw as c

from .. import detection as d
from ..bytesource import Source
from ..forking import MAX_JOBS, JobsTimeout, share_jobs
from ..formats import Format, Reader, Signature
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder, md_escape
from . import Context

# Imported on the first scanned page (OCR: prep.prepare), so preload() loads them ahead.
LAZY = ("numpy", "scipy.ndimage", "textsieve.ocr.prep")

# Output version (archives re-extract items made by an older one): 2 = OCR of pages/images;
# 3 = text of FreeText annotations (and notes with --comments); 4 = right-to-left
# ligatures in logical order, a space where the script changes; 5 = a rights-management
# wrapper (placeholder page + encrypted payload) and a rights-managed PDF are `encrypted`.
FORMAT = Format(
    name="pdf", version=5,
    readers=(Reader(d.PDF),),
    # A PDF's marker may follow junk bytes (up to 1 KiB, as PDF readers allow): looked for
    # ahead of every other signature.
    signatures=(Signature(d.PDF, b"%PDF", priority=-1),
                Signature(d.PDF, b"%PDF-", within=1024, priority=-1)),
    hints={"pdf": d.PDF},
)

# Control characters PDFium or broken fonts leave in the text (NUL, form feed, ...). PDFium
# marks a hyphen it removed at a line end with U+FFFE and has already joined the word
# ("com\ufffepile"), so dropping U+FFFE is the whole, free, dehyphenation.
_JUNK = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]+")
_ANY_JUNK = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")  # 2x faster to find
_PDF_DATE = re.compile(
    r"D?:?\s*(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?\s*(?:([Zz])|([+-])(\d{2})'?(\d{2})?'?)?"
)
# Pages are read in this process for this long first; the rest is spread over forked
# processes only if, at the rate seen so far, it would take longer than _FORK_WORTH. A fork
# costs ~2 ms, and each child opens the document again and re-parses the fonts it needs
# (a font-heavy file loses ~10 ms to that), so short documents stay in one process.
_SERIAL_FIRST = 0.006
_FORK_WORTH = 0.06
# The clock the rate is measured with: a test swaps in one that advances a fixed step per
# page, so the fork-or-not decision is deterministic there, not a race with a busy machine.
_clock = time.perf_counter
_BLOCK = 8  # pages per job handed to a process (see forking.share_jobs)
_GARBLED_SHARE = 0.3  # pages whose text is more than this share of control chars
# Markup annotations whose Contents is a reader's note (ISO 32000-1 12.5.6.2).
_MARKUP = {c.FPDF_ANNOT_TEXT, c.FPDF_ANNOT_HIGHLIGHT, c.FPDF_ANNOT_UNDERLINE,
           c.FPDF_ANNOT_SQUIGGLY, c.FPDF_ANNOT_STRIKEOUT, c.FPDF_ANNOT_SQUARE,
           c.FPDF_ANNOT_CIRCLE, c.FPDF_ANNOT_LINE, c.FPDF_ANNOT_POLYGON, c.FPDF_ANNOT_POLYLINE,
           c.FPDF_ANNOT_INK, c.FPDF_ANNOT_STAMP, c.FPDF_ANNOT_CARET}
# A security handler's name is the /Filter of the /Encrypt dictionary; every other /Filter in
# a file names a stream filter (ISO 32000-1 7.4), so the first name outside these is it.
_FILTER_NAME = re.compile(rb"/Filter\s*/([^\s/<>\[\]()%]+)")
_STREAM_FILTERS = {b"FlateDecode", b"Fl", b"ASCIIHexDecode", b"AHx", b"ASCII85Decode", b"A85",
                   b"LZWDecode", b"LZW", b"RunLengthDecode", b"RL", b"CCITTFaxDecode", b"CCF",
                   b"JBIG2Decode", b"DCTDecode", b"DCT", b"JPXDecode", b"Crypt",
                   b"BrotliDecode"}
# A wrapper is a cover page or two; a longer document that happens to carry a protected
# attachment keeps its own text (the attachment child says `encrypted` on its own).
_WRAPPER_MAX_PAGES = 2
_SHOWN_FIELD_TYPES = {c.FPDF_FORMFIELD_TEXTFIELD, c.FPDF_FORMFIELD_COMBOBOX,
                      c.FPDF_FORMFIELD_LISTBOX}


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    password = ctx.options.password
    with open_document(src, password) as pdf, _forms(pdf) as forms:
        _metadata(pdf, doc)
        n_pages = len(pdf)
        doc.metadata.page_count = n_pages
        pages = _read_all(src, ctx, pdf, forms, n_pages)
        image_only: list[int] = []
        garbled: list[int] = []
        seen_fields: set[tuple[str, str]] = set()
        any_text = False
        for i, page in enumerate(pages):
            out.start_page(i + 1)
            out.preformatted(page.text, page.md)
            if page.warning:
                doc.warnings.append(page.warning)
            if page.garbled:
                garbled.append(i + 1)
            elif page.text:
                any_text = True
                if page.stamped_scan:
                    image_only.append(i + 1)
            elif page.has_images:
                image_only.append(i + 1)
            fields = []
            for key in page.fields:  # a field may have widgets on several pages: show once
                if key not in seen_fields:
                    seen_fields.add(key)
                    fields.append(key[1])
            if fields:
                out.preformatted("\n".join(fields))
                any_text = True
            for note in page.notes:
                out.paragraph(note)
                any_text = True
        payload = _attachments(pdf, ctx, doc)
    if payload is not None and n_pages <= _WRAPPER_MAX_PAGES:
        # Microsoft Purview/AIP "protected PDF" (PDF 2.0 unencrypted wrapper, ISO 32000-2
        # 7.6.7) and Adobe LiveCycle/AEM "page 0" cover pages: the page only tells a reader
        # to get another viewer; the document is the payload, encrypted for licensed users.
        name, handler = payload
        raise ExtractionError(ErrorKind.ENCRYPTED, f"protected PDF: the content is the "
                              f"attachment {name!r}, encrypted with the {handler} rights-"
                              "management handler; the readable page is only the "
                              "wrapper's placeholder")
    mode = ctx.options.ocr
    if mode == "always":
        ctx.ocr_pending = list(range(1, n_pages + 1))
    elif mode == "auto" and (image_only or garbled):
        # The pages without usable text are OCRed, the others keep their text layer.
        ctx.ocr_pending = sorted(image_only + garbled)
    else:
        _classify_scans(doc, image_only, garbled, any_text)


def _classify_scans(doc: Document, image_only: list[int], garbled: list[int],
                    any_text: bool) -> None:
    """Never an empty success for scans or unreadable text layers: OCR is the way out.

    No readable page at all -> needs_ocr; some -> ``pages_needing_ocr`` and a warning.
    """
    need = sorted(image_only + garbled)
    if not need:
        return
    if not any_text and not doc.children:
        parts = []
        if image_only:
            n = len(image_only)
            parts.append(f"{n} {'pages have' if n > 1 else 'page has'} only images")
        if garbled:
            n = len(garbled)
            parts.append(f"{n} {'pages have' if n > 1 else 'page has'} an unreadable "
                         "text layer (fonts without a Unicode mapping)")
        raise ExtractionError(ErrorKind.NEEDS_OCR, "; ".join(parts) + "; OCR needed")
    doc.metadata.extra["pages_needing_ocr"] = need
    for label, pages in (("have only images", image_only),
                         ("have an unreadable text layer", garbled)):
        if pages:
            shown = ", ".join(map(str, pages[:20])) + (" ..." if len(pages) > 20 else "")
            doc.warnings.append(f"{len(pages)} page(s) {label} and need OCR: {shown}")


# -- opening ---------------------------------------------------------------------------------

@contextmanager
def open_document(src: Source, password: str | None) -> Iterator[pdfium.PdfDocument]:
    """Open with the raw API so we can read PDFium's error code and retry the password."""
    data = None if src.path is not None else src.read()
    candidates = _password_bytes(password)
    raw, err = None, c.FPDF_ERR_UNKNOWN
    for pw in candidates:
        if data is None:
            assert src.path is not None
            raw = c.FPDF_LoadDocument(str(src.path).encode("utf-8", "surrogateescape") + b"\0",
                                      pw)
        else:
            raw = c.FPDF_LoadMemDocument64(data, len(data), pw)
        if raw:
            break
        err = c.FPDF_GetLastError()
        if err != c.FPDF_ERR_PASSWORD:
            break
    if not raw:
        raise _open_error(err, password, src)
    pdf = pdfium.PdfDocument(raw)  # ``data`` stays referenced here until close
    try:
        if len(pdf) < 1:
            raise ExtractionError(ErrorKind.CORRUPT, f"PDF has no readable pages ({_why(src)})")
        yield pdf
    finally:
        pdf.close()


def _password_bytes(password: str | None) -> list[bytes | None]:
    """The encodings a password may need; PDFium takes bytes as they are.

    AES-256 (R5/R6) wants SASLprep'd UTF-8 cut to 127 bytes; older handlers want
    PDFDocEncoding (~Latin-1). Trying each costs one cheap reopen, only for encrypted files.
    """
    if password is None:
        return [None]
    out = [password.encode("utf-8"), _saslprep(password).encode("utf-8")[:127]]
    with suppress(UnicodeEncodeError):
        out.append(password.encode("latin-1"))
    return [pw + b"\0" for pw in dict.fromkeys(out)]


def _saslprep(text: str) -> str:
    """RFC 4013 mapping + NFKC (enough for passwords; prohibited chars are left alone)."""
    mapped = "".join(" " if stringprep.in_table_c12(ch) else ch
                     for ch in text if not stringprep.in_table_b1(ch))
    return unicodedata.normalize("NFKC", mapped)


def _open_error(err: int, password: str | None, src: Source) -> ExtractionError:
    if err == c.FPDF_ERR_PASSWORD:
        if password is None:
            return ExtractionError(ErrorKind.ENCRYPTED, "encrypted PDF: password required")
        return ExtractionError(ErrorKind.ENCRYPTED, "encrypted PDF: wrong password")
    if err == c.FPDF_ERR_SECURITY:
        # Not the password handler: rights management (MicrosoftIRMServices, Adobe.APS) or
        # certificates (Adobe.PubSec). No password opens it, but it is encrypted content,
        # not a format we lack, so the verdict is the one an IRM Office file gets.
        with src.open() as f:
            handler = _security_handler(f.read(_HANDLER_SCAN))
        return ExtractionError(ErrorKind.ENCRYPTED, f"PDF encrypted with the {handler} "
                               "security handler (rights management or certificates): no "
                               "password opens it")
    if err == c.FPDF_ERR_FILE and src.path is not None and not src.path.is_file():
        return ExtractionError(ErrorKind.NOT_FOUND, f"cannot open {src.path}")
    if b"%PDF-" not in src.head(1024):
        return ExtractionError(ErrorKind.CORRUPT, "not a PDF: no %PDF header")
    return ExtractionError(ErrorKind.CORRUPT, f"damaged PDF: {_why(src)}")


_HANDLER_SCAN = 64 << 20  # bytes read to name a security handler (only after a failure)


def _security_handler(data: bytes) -> str:
    """The /Filter name of the /Encrypt dictionary, for the message (best effort)."""
    for m in _FILTER_NAME.finditer(data):
        if m.group(1) not in _STREAM_FILTERS:
            return m.group(1).decode("latin-1")
    return "an unknown"


def _rights_managed(data: bytes) -> str | None:
    """The security handler of a PDF no password can open, or None for any other data.

    PDFium reports FPDF_ERR_SECURITY exactly when the /Encrypt dictionary names a handler
    other than the Standard (password) one, which is what a wrapper's payload is.
    """
    if b"%PDF-" not in data[:1024]:
        return None
    raw = c.FPDF_LoadMemDocument64(data, len(data), None)
    if raw:
        c.FPDF_CloseDocument(raw)
        return None
    if c.FPDF_GetLastError() != c.FPDF_ERR_SECURITY:
        return None
    return _security_handler(data)


def _why(src: Source) -> str:
    """A best guess at why PDFium gave up; this reads the file, so only on failure."""
    tail = b""
    with src.open() as f:
        for _ in range(256):  # at most 256 MiB scanned
            chunk = f.read(1 << 20)
            if not chunk:
                break
            if b"/BrotliDecode" in tail + chunk:
                return "uses the BrotliDecode stream filter, which is not supported"
            tail = chunk[-16:]
    return "PDFium cannot parse its cross-reference table, trailer or page tree"


# -- pages ------------------------------------------------------------------------------------

@dataclass(slots=True)
class _PageText:
    """What one page gives; plain data, so a forked reader can send it back."""

    text: str = ""
    md: str = ""  # the text escaped for Markdown: done where the page is read, in parallel
    has_images: bool = False
    garbled: bool = False  # a text layer in fonts without a Unicode mapping
    stamped_scan: bool = False  # a little text over a page-covering image: OCR it all
    fields: list[tuple[str, str]] = field(default_factory=list)  # (name, value) of form fields
    notes: list[str] = field(default_factory=list)  # text of annotations shown on the page
    warning: str | None = None


def _read_all(src: Source, ctx: Context, pdf: pdfium.PdfDocument,
              forms: c.FPDF_FORMHANDLE | None, n_pages: int) -> list[_PageText]:
    """Every page, in order: a long document's pages over ``ctx.page_workers`` processes."""
    pages: list[_PageText] = []
    comments = ctx.options.comments
    t0 = _clock()
    elapsed = 0.0
    while len(pages) < n_pages and (ctx.page_workers < 2 or elapsed < _SERIAL_FIRST):
        pages.append(_page(pdf, len(pages), forms, comments))
        elapsed = _clock() - t0
    first, left = len(pages), n_pages - len(pages)
    if not left:
        return pages
    work = elapsed / first * left  # seconds the rest would take here, at this rate
    if work < _FORK_WORTH:
        return pages + [_page(pdf, i, forms, comments) for i in range(first, n_pages)]
    # Every process should get a fair amount of work (each opens the document again), so
    # a 500-page file uses a handful of processes even on a machine with dozens of cores.
    processes = max(2, min(ctx.page_workers, int(work / (_FORK_WORTH / 2))))
    # Blocks small enough that the processes finish together (about four per process),
    # at most _BLOCK pages; more pages than MAX_JOBS blocks hold make bigger blocks.
    block = max(1, min(_BLOCK, left // (4 * processes)), -(-left // MAX_JOBS))
    blocks = [range(a, min(a + block, n_pages)) for a in range(first, n_pages, block)]
    reader = _Reader(src, ctx.options.password, pdf, forms, comments)
    try:
        parts = share_jobs(lambda j: reader.read(blocks[j]), len(blocks), processes,
                           timeout=ctx.options.timeout)
    except JobsTimeout as exc:
        raise ExtractionError(ErrorKind.TIMEOUT, f"reading the pages: {exc}") from exc
    return pages + [p for part in parts for p in part]


class _Reader:
    """Reads blocks of pages in whichever process claims them: the parent from its open
    document, a forked child from its own (a PDFium handle is not shared across processes;
    the child keeps it open for its next blocks and leaves with ``os._exit``)."""

    def __init__(self, src: Source, password: str | None, pdf: pdfium.PdfDocument,
                 forms: c.FPDF_FORMHANDLE | None, comments: bool) -> None:
        self.src, self.password, self.comments = src, password, comments
        self.docs = {os.getpid(): (pdf, forms)}
        self._stack = ExitStack()

    def read(self, pages: range) -> list[_PageText]:
        pid = os.getpid()
        if pid not in self.docs:  # the first block in a child
            own = self._stack.enter_context(open_document(self.src, self.password))
            self.docs[pid] = (own, self._stack.enter_context(_forms(own)))
        pdf, forms = self.docs[pid]
        return [_page(pdf, i, forms, self.comments) for i in pages]


_STAMP_CHARS = 120  # at most this much text on a scan is a stamp, not a text layer


def _page(pdf: pdfium.PdfDocument, index: int, forms: c.FPDF_FORMHANDLE | None,
          comments: bool = False) -> _PageText:
    """Text, images, garbling, form values and annotation text of one page.

    Closes what it opens, so memory does not grow with the page count.
    """
    page = c.FPDF_LoadPage(pdf.raw, index)
    if not page:
        return _PageText(warning=f"page {index + 1} could not be loaded (damaged)")
    try:
        text, garbled = _page_text(page)
        # Images matter only on a page without text: garbled pages go to OCR anyway, and
        # walking every object of a page of unmapped glyphs costs more than its text.
        result = _PageText(text, md_escape(text),
                           not text and not garbled and _has_images(page), garbled)
        # A scan with a line of text drawn on it (a Bates number, a court's filing header,
        # a page number added by the scanner) is still a scan: its text is in the picture.
        result.stamped_scan = bool(text) and len(text) <= _STAMP_CHARS and not garbled \
            and _covered_by_image(page)
        if forms is not None:  # values are read from the fields; no form-fill page events
            result.fields = _field_values(page, forms)
        result.notes = _annotation_texts(page, comments)
        return result
    finally:
        c.FPDF_ClosePage(page)


def _page_text(page: c.FPDF_PAGE) -> tuple[str, bool]:
    """Text of a page, and whether it is garbled (mostly control characters: a font whose
    codes have no Unicode mapping, which only OCR can read)."""
    textpage = c.FPDFText_LoadPage(page)
    if not textpage:
        return "", False
    try:
        n = c.FPDFText_CountChars(textpage)
        if n <= 0:
            return "", False
        # PDFium may emit a few more UTF-16 units than chars (surrogates); leave room.
        size = n * 2 + 2
        buf = (ctypes.c_ushort * size)()
        got = c.FPDFText_GetText(textpage, 0, n, buf)
        if got <= 1:
            return "", False
        raw = ctypes.string_at(buf, (min(got, size) - 1) * 2).decode("utf-16-le", "replace")
        if _RTL.search(raw):
            raw = _logical_ligatures(textpage, raw)
    finally:
        c.FPDFText_ClosePage(textpage)
    text = _clean(raw)
    if _RTL.search(text):
        text = _SCRIPT_CHANGE.sub(" ", text)
    # Tabs count as junk too: PDFium emits no tabs of its own, unmapped code 9 is one.
    junk = len(raw) - len(text) - raw.count("\r\n") + raw.count("\t")
    return text, junk > _GARBLED_SHARE * len(raw)


# Right-to-left text (Hebrew, Arabic, Syriac, Thaana, NKo and their presentation forms).
_RTL_CLASS = "\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc"
_RTL = re.compile(f"[{_RTL_CLASS}]")
# A right-to-left letter against a Latin one: producers draw each direction's run apart,
# and the space between them (drawn at the far end of one run) is lost; in logical text
# the scripts do not share a word, so the boundary is a word break ("Pythonمن").
_LATIN = "A-Za-z\u00c0-\u024f"
_SCRIPT_CHANGE = re.compile(f"(?<=[{_RTL_CLASS}])(?=[{_LATIN}])|(?<=[{_LATIN}])(?=[{_RTL_CLASS}])")


# A reversed lam-alef: alef (plain, with hamza or madda) then lam. In logical order an
# alef can never start a ligature (it does not join the letter after it).
_REVERSED_LAM_ALEF = re.compile("[\u0622\u0623\u0625\u0627](?=\u0644)")


def _logical_ligatures(textpage: c.FPDF_TEXTPAGE, raw: str) -> str:
    """Arabic lam-alef ligatures back in logical order.

    A lam-alef glyph that ToUnicode maps to its two letters ("\u0644\u0627", as Word and
    LibreOffice write it) gives PDFium two characters at one origin; reordering the
    visual line into logical order, PDFium reverses them with the run, so lam-alef reads
    alef-lam ("السالم" for "السلام"). "ال" is also the article, so only a pair that shares
    its origin (one glyph) is swapped back. Origins are asked for at those pairs only: an
    Arabic page pays two calls per "ال", not one per character."""
    if c.FPDFText_CountChars(textpage) != len(raw):  # surrogates: indexes do not line up
        return raw
    x, y = ctypes.c_double(), ctypes.c_double()
    ref_x, ref_y = ctypes.byref(x), ctypes.byref(y)

    def origin(i: int) -> tuple[float, float] | None:
        ok = c.FPDFText_GetCharOrigin(textpage, i, ref_x, ref_y)
        return (x.value, y.value) if ok else None

    chars = list(raw)
    for m in _REVERSED_LAM_ALEF.finditer(raw):
        i = m.start()
        first = origin(i)
        if first is not None and origin(i + 1) == first:
            chars[i], chars[i + 1] = raw[i + 1], raw[i]
    return "".join(chars)


def _clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\ufffe" in text:  # the common junk (hyphen marks): str.replace is 5x a regex sub
        text = text.replace("\ufffe", "")
    if _ANY_JUNK.search(text):
        text = _JUNK.sub("", text)
    if "\t" in text:
        text = text.replace("\t", " ")
    text = text.strip("\n")
    return text if text.strip() else ""


def _has_images(page: c.FPDF_PAGE) -> bool:
    """Image objects on the page, also inside form XObjects (a scan is often wrapped)."""
    return _any_image(c.FPDFPage_CountObjects(page),
                      lambda i: c.FPDFPage_GetObject(page, i), depth=0)


def _covered_by_image(page: c.FPDF_PAGE) -> bool:
    """Half the page or more is one picture (an image, or a form XObject holding one)."""
    area = c.FPDF_GetPageWidthF(page) * c.FPDF_GetPageHeightF(page)
    for i in range(max(c.FPDFPage_CountObjects(page), 0)):
        obj = c.FPDFPage_GetObject(page, i)
        if not obj:
            continue
        kind = c.FPDFPageObj_GetType(obj)
        if kind == c.FPDF_PAGEOBJ_FORM:
            if not _any_image(c.FPDFFormObj_CountObjects(obj),
                              lambda j, o=obj: c.FPDFFormObj_GetObject(o, j), 1):
                continue
        elif kind != c.FPDF_PAGEOBJ_IMAGE:
            continue
        box = [ctypes.c_float() for _ in range(4)]
        if c.FPDFPageObj_GetBounds(obj, *(ctypes.byref(v) for v in box)):
            left, bottom, right, top = (v.value for v in box)
            if (right - left) * (top - bottom) >= 0.5 * area:
                return True
    return False


def _any_image(count: int, get: object, depth: int) -> bool:
    for i in range(max(count, 0)):
        obj = get(i)  # type: ignore[operator]
        if not obj:
            continue
        kind = c.FPDFPageObj_GetType(obj)
        if kind == c.FPDF_PAGEOBJ_IMAGE:
            return True
        if kind == c.FPDF_PAGEOBJ_FORM and depth < 8 and _any_image(
                c.FPDFFormObj_CountObjects(obj),
                lambda j, o=obj: c.FPDFFormObj_GetObject(o, j), depth + 1):
            return True
    return False


# -- forms --------------------------------------------------------------------------------------

@contextmanager
def _forms(pdf: pdfium.PdfDocument) -> Iterator[c.FPDF_FORMHANDLE | None]:
    """A form-fill environment, only for documents with form fields (costs a little).

    Raw API rather than ``init_forms()``: that one logs a warning on every XFA file.
    """
    if c.FPDF_GetFormType(pdf.raw) == c.FORMTYPE_NONE:
        yield None
        return
    config = c.FPDF_FORMFILLINFO(version=2)  # must outlive the handle
    handle = c.FPDFDOC_InitFormFillEnvironment(pdf.raw, config)
    try:
        yield handle or None
    finally:
        if handle:
            c.FPDFDOC_ExitFormFillEnvironment(handle)


def _field_values(page: c.FPDF_PAGE, forms: c.FPDF_FORMHANDLE) -> list[tuple[str, str]]:
    """(name, value) of filled text/choice fields; checkboxes ("Off"/"Yes") carry no words."""
    values: list[tuple[str, str]] = []
    for i in range(max(c.FPDFPage_GetAnnotCount(page), 0)):
        annot = c.FPDFPage_GetAnnot(page, i)
        if not annot:
            continue
        try:
            if (c.FPDFAnnot_GetSubtype(annot) != c.FPDF_ANNOT_WIDGET
                    or c.FPDFAnnot_GetFormFieldType(forms, annot) not in _SHOWN_FIELD_TYPES):
                continue
            value = _clean(_wide(c.FPDFAnnot_GetFormFieldValue, forms, annot)).strip()
            if not value:
                continue
            values.append((_wide(c.FPDFAnnot_GetFormFieldName, forms, annot), value))
        finally:
            c.FPDFPage_CloseAnnot(annot)
    return values


def _annotation_texts(page: c.FPDF_PAGE, comments: bool) -> list[str]:
    """Text that annotations put on the page, which is not in its text layer: a FreeText
    box (typed onto the page) always; a markup annotation's note (a sticky note, the
    comment on a highlight) when comments are asked for. Hidden ones are left out, and
    pop-ups, which repeat their parent's note."""
    texts: list[str] = []
    for i in range(max(c.FPDFPage_GetAnnotCount(page), 0)):
        annot = c.FPDFPage_GetAnnot(page, i)
        if not annot:
            continue
        try:
            kind = c.FPDFAnnot_GetSubtype(annot)
            if kind != c.FPDF_ANNOT_FREETEXT and not (comments and kind in _MARKUP):
                continue
            if c.FPDFAnnot_GetFlags(annot) & (c.FPDF_ANNOT_FLAG_HIDDEN
                                              | c.FPDF_ANNOT_FLAG_NOVIEW):
                continue
            text = _clean(_wide(c.FPDFAnnot_GetStringValue, annot, b"Contents")).strip()
            if text and text not in texts:
                texts.append(text)
        finally:
            c.FPDFPage_CloseAnnot(annot)
    return texts


def _wide(fn: object, *args: object) -> str:
    """Call a PDFium getter that fills a UTF-16LE buffer (size query, then fill)."""
    n = fn(*args, None, 0)  # type: ignore[operator]
    if n <= 2:
        return ""
    buf = ctypes.create_string_buffer(n)
    fn(*args, ctypes.cast(buf, ctypes.POINTER(ctypes.c_ushort)), n)  # type: ignore[operator]
    return buf.raw[: n - 2].decode("utf-16-le", "replace")


# -- metadata ---------------------------------------------------------------------------------

_INFO_KEYS = ("Title", "Author", "Subject", "Keywords", "Creator", "Producer", "CreationDate",
              "ModDate")


def _metadata(pdf: pdfium.PdfDocument, doc: Document) -> None:
    # Read through _wide (undecodable UTF-16 is replaced): pypdfium2's own metadata helper
    # decodes strictly and raised on a damaged Info dictionary.
    info = {k: _clean(_wide(c.FPDF_GetMetaText, pdf.raw, k.encode("ascii"))).strip()
            for k in _INFO_KEYS}
    md = doc.metadata
    doc.title = info.get("Title") or None
    md.author = info.get("Author") or None
    md.subject = info.get("Subject") or None
    md.keywords = info.get("Keywords") or None
    md.created = pdf_date(info.get("CreationDate", ""))
    md.modified = pdf_date(info.get("ModDate", ""))
    for key in ("Creator", "Producer"):
        if info.get(key):
            md.extra[key.lower()] = info[key]
    md.extra["pdf_version"] = _version(pdf)
    lang = _wide(c.FPDFCatalog_GetLanguage, pdf.raw).strip()
    if lang:
        md.language = lang


def _version(pdf: pdfium.PdfDocument) -> str | None:
    v = ctypes.c_int()
    return f"{v.value // 10}.{v.value % 10}" if c.FPDF_GetFileVersion(pdf.raw, v) else None


def pdf_date(value: str) -> str | None:
    """``D:YYYYMMDDHHmmSS+HH'mm'`` (any tail optional) -> ISO 8601; None if unparseable."""
    m = _PDF_DATE.match(value.strip())
    if not m:
        return None
    y, mo, d, h, mi, s, z, sign, th, tm = m.groups()
    mo, d = mo or "01", d or "01"
    if not ("01" <= mo <= "12" and "01" <= d <= "31"):
        return None
    out = f"{y}-{mo}-{d}"
    if h is None:
        return out
    if h > "23" or (mi or "00") > "59" or (s or "00") > "59":
        return out
    out += f"T{h}:{mi or '00'}:{s or '00'}"
    if z:
        out += "Z"
    elif sign and th is not None and th <= "23":
        out += f"{sign}{th}:{tm or '00'}"
    return out


# -- attachments ------------------------------------------------------------------------------

def _attachments(pdf: pdfium.PdfDocument, ctx: Context,
                 doc: Document) -> tuple[str, str] | None:
    """Embedded files become children, extracted like any other input (with budgets).

    Returns (name, security handler) of the first attachment that is a rights-managed PDF:
    the payload of a protected-PDF wrapper.
    """
    payload = None
    for i in range(max(pdf.count_attachments(), 0)):
        name = f"attachment-{i + 1}"
        try:
            att = pdf.get_attachment(i)
            name = att.get_name() or name
            data = att.get_data()
        except pdfium.PdfiumError as exc:
            child = Document.failed(ErrorKind.CORRUPT,
                                    f"embedded file cannot be read: {exc}", name=name)
            doc.children.append(child)
            continue
        data = bytes(data)
        try:
            ctx.account(len(data), "PDF attachments")
        except ExtractionError as exc:
            doc.warnings.append(f"attachment {name} skipped: {exc.message}")
            return payload
        handler = _rights_managed(data) if payload is None else None
        if handler is not None:
            payload = (name, handler)
        doc.children.append(ctx.child(data, name))
    return payload
