"""Legacy binary Office: Word 97-2003 (DOC) and PowerPoint 97-2003 (PPT), plus LibreOffice.

DOC is read by ``word97`` (our own reader); antiword, then catdoc (which also reads Word
6/95 files) take what it cannot. PPT is parsed here from its record stream (catppt misses
most slide text), with catppt as a second opinion. Encryption is detected from the OLE2
structures *before* any tool runs, so an encrypted file is reported as ``encrypted``
instead of a tool's garbled output.
LibreOffice headless is the last resort for every legacy format when it is installed.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader
from ..kernels.ole import opened, stream_head, summary_metadata
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder
from ..textcodec import decode
from . import Context

# Imported on first use only (rare paths); ``preload`` imports them ahead.
LAZY = ("olefile", "msoffcrypto.format.doc97", "msoffcrypto.format.ppt97",
        "msoffcrypto.method.xor_obfuscation", "cryptography.hazmat.backends.openssl.backend")

# Output version (archives re-extract what an older one made): 2 = PPT speaker notes,
# encrypted DOC/PPT opened with the default password; 3 = DOC read by word97 first (its
# items made here by antiword are re-read).
FORMAT = Format(
    name="legacy", version=3,
    # After our own Word reader (word97) and RTF reader (rtf); LibreOffice last of all.
    readers=(Reader(d.DOC, "extract_doc_antiword", 1), Reader(d.DOC, "extract_doc_catdoc", 2),
             Reader(d.DOC, "extract_libreoffice", 3),
             Reader(d.PPT, "extract_ppt"), Reader(d.PPT, "extract_ppt_catppt", 1),
             Reader(d.PPT, "extract_libreoffice", 2),
             Reader(d.RTF, "extract_libreoffice", 1)),
    hints={"ppt": d.PPT},
)

@contextlib.contextmanager
def tool_path(src: Source) -> Iterator[str]:
    """A file path for command-line tools: the source's own, or a private temporary copy."""
    if src.data_ is None and src.path is not None:
        yield str(src.path)
        return
    import tempfile  # here, as shutil below: only the external tools' paths need them

    fd, name = tempfile.mkstemp(suffix="." + (src.extension or "bin"))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(src.read())
        yield name
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def run_text_tool(ctx: Context, args: list[str], size: int) -> Any:
    """antiword/catdoc/catppt read ~50 MB/s, but a damaged file can send catdoc into an
    endless loop: allow 10 s plus 1 s per MB (at most ``tool_timeout``), and call a tool
    that overruns that a failure to read the file, so the next reader gets its turn and
    re-runs do not wait for it again (a timeout would be retried on every run)."""
    limit = min(ctx.options.tool_timeout, 10.0 + size / (1 << 20))
    try:
        return ctx.run_tool(args, timeout=limit)
    except ExtractionError as exc:
        if exc.kind is not ErrorKind.TIMEOUT:
            raise
        raise ExtractionError(ErrorKind.CORRUPT, f"{args[0]} hung on this file (stopped after "
                              f"{limit:.0f} s)") from exc


def _tool_failure(tool: str, proc: Any) -> ExtractionError:
    err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    why = err[0][:200] if err else f"exit status {proc.returncode}"
    return ExtractionError(ErrorKind.CORRUPT, f"{tool} could not read the file: {why}")


# --------------------------------------------------------------------------------------
# DOC
# --------------------------------------------------------------------------------------


def doc_source(src: Source, ctx: Context, doc: Document) -> Source:
    """Metadata, and the file to read: decrypted when the FIB says it is encrypted
    (fEncrypted, bit 0 of byte 0x0B); ``encrypted`` when no password opens it."""
    with opened(src, "Word") as ole:
        summary_metadata(ole, doc)
        if not ole.exists("WordDocument"):
            raise ExtractionError(ErrorKind.CORRUPT, "no WordDocument stream")
        fib = stream_head(ole, "WordDocument", 64)[:64]  # the reader loads the rest
    if len(fib) < 12:
        raise ExtractionError(ErrorKind.CORRUPT, "Word file information block is truncated")
    if fib[0x0B] & 0x01:
        from .encrypted import decrypt_legacy

        return decrypt_legacy(src, ctx, doc, "Word document")
    return src


_TABLE_ROW = re.compile(r"^\|.*\|$")


def _emit_tool_text(text: str, out: Builder) -> None:
    """Tool output to blocks: blank-line paragraphs; antiword's ``|a |b |`` rows to tables."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x0c", "\n\n")
    rows: list[list[str]] = []
    para: list[str] = []

    def flush_para() -> None:
        if para:
            out.paragraph("\n".join(para))
            para.clear()

    def flush_rows() -> None:
        if rows:
            out.table(rows, header=False)
            rows.clear()

    for line in text.split("\n"):
        if _TABLE_ROW.match(line) and line.count("|") >= 2:
            flush_para()
            rows.append([c.strip() for c in line[1:-1].split("|")])
            continue
        flush_rows()
        if line.strip():
            para.append(line)
        else:
            flush_para()
    flush_para()
    flush_rows()


def _run_doc_tool(src: Source, ctx: Context, doc: Document, out: Builder,
                  args: list[str]) -> None:
    src = doc_source(src, ctx, doc)
    with tool_path(src) as path:
        proc = run_text_tool(ctx, [*args, path], src.size)
    text = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        raise _tool_failure(args[0], proc)
    if not text.strip():
        raise ExtractionError(ErrorKind.CORRUPT, f"{args[0]} found no text")
    _emit_tool_text(text, out)


def extract_doc_antiword(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """Word 97-2003 via antiword: good paragraphs and tables; refuses Word 95/fast-saved."""
    _run_doc_tool(src, ctx, doc, out, ["antiword", "-w", "0", "-m", "UTF-8.txt"])


def extract_doc_catdoc(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """Word 6/95/97+ via catdoc: the fallback for what antiword rejects."""
    _run_doc_tool(src, ctx, doc, out, ["catdoc", "-d", "utf-8", "-w"])


# --------------------------------------------------------------------------------------
# PPT: the record stream
# --------------------------------------------------------------------------------------

_RT_DOCUMENT = 0x03E8
_RT_SLIDE = 0x03EE
_RT_SLIDE_PERSIST = 0x03F3
_RT_NOTES = 0x03F0
_RT_NOTES_ATOM = 0x03F1
_RT_TEXT_HEADER = 0x0F9F
_RT_TEXT_CHARS = 0x0FA0
_RT_TEXT_BYTES = 0x0FA8
_RT_SLWT = 0x0FF0
_RT_USER_EDIT = 0x0FF5
_RT_PERSIST_DIR = 0x1772
_HEADER_TOKEN_ENCRYPTED = 0xF3D1C4DF
_MAX_RECORDS = 2_000_000


def _records(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(type, instance, payload offset, payload length) of the records in [start, end)."""
    pos = start
    end = min(end, len(data))
    while pos + 8 <= end:
        ver_inst, rtype, length = struct.unpack_from("<HHI", data, pos)
        body = pos + 8
        if body + length > end:
            length = end - body  # truncated last record: keep what is there
        yield rtype, ver_inst >> 4, body, length
        pos = body + length


def _walk(data: bytes, start: int, end: int, budget: list[int]
          ) -> Iterator[tuple[int, int, int, int]]:
    """All records below [start, end), depth first; containers have version 0xF."""
    stack = [(start, end)]
    while stack:
        s, e = stack.pop()
        children = []
        for rec in _records(data, s, e):
            budget[0] -= 1
            if budget[0] < 0:
                return
            yield rec
            _rtype, _inst, body, length = rec
            if data[body - 8] & 0x0F == 0x0F and length >= 8:
                children.append((body, body + length))
        stack.extend(reversed(children))


def _text_of(data: bytes, rtype: int, body: int, length: int) -> str | None:
    if rtype == _RT_TEXT_CHARS:
        raw = data[body:body + (length & ~1)].decode("utf-16-le", "replace")
    elif rtype == _RT_TEXT_BYTES:
        raw = data[body:body + length].decode("latin-1")
    else:
        return None
    # \r ends a paragraph, \x0b is a soft line break inside one.
    return raw.replace("\x0b", "\n").replace("\r", "\n").replace("\x00", "")


def _persist_directory(stream: bytes, current_user: bytes) -> tuple[dict[int, int], int | None]:
    """persist id -> stream offset, following the UserEditAtom chain (newest wins)."""
    if len(current_user) < 20:
        return {}, None
    offset = struct.unpack_from("<I", current_user, 16)[0]
    edits: list[tuple[int, int]] = []  # (persist dir offset, doc persist id)
    seen: set[int] = set()
    while 0 < offset + 8 <= len(stream) and offset not in seen and len(seen) < 10_000:
        seen.add(offset)
        if struct.unpack_from("<H", stream, offset + 2)[0] != _RT_USER_EDIT:
            break
        if offset + 8 + 24 > len(stream):
            break
        _last, _v, _mi, _ma, last_edit, pdir, doc_ref = struct.unpack_from(
            "<IHBBIII", stream, offset + 8)
        edits.append((pdir, doc_ref))
        offset = last_edit
    persist: dict[int, int] = {}
    for pdir, _doc in reversed(edits):  # oldest first, newer entries override
        if pdir + 8 > len(stream):
            continue
        _vi, rtype, length = struct.unpack_from("<HHI", stream, pdir)
        if rtype != _RT_PERSIST_DIR:
            continue
        pos, end = pdir + 8, min(pdir + 8 + length, len(stream))
        while pos + 4 <= end:
            head = struct.unpack_from("<I", stream, pos)[0]
            first, count = head & 0xFFFFF, head >> 20
            pos += 4
            for i in range(count):
                if pos + 4 > end:
                    break
                persist[first + i] = struct.unpack_from("<I", stream, pos)[0]
                pos += 4
    return persist, (edits[0][1] if edits else None)


def _container_at(stream: bytes, offset: int | None, rtype: int) -> tuple[int, int] | None:
    if offset is None or offset + 8 > len(stream):
        return None
    _vi, t, length = struct.unpack_from("<HHI", stream, offset)
    if t != rtype:
        return None
    return offset + 8, min(offset + 8 + length, len(stream))


def _ppt_slides(stream: bytes, current_user: bytes) -> list[tuple[list[str], list[str]]]:
    """(text blocks, speaker notes) per slide, in slide order: outline text plus the
    slide's own text boxes; notes from the notes pages that point at the slide."""
    persist, doc_ref = _persist_directory(stream, current_user)
    doc_span = _container_at(stream, persist.get(doc_ref) if doc_ref is not None else None,
                             _RT_DOCUMENT)
    if doc_span is None:  # no usable edit chain: the first document container
        doc_span = next(((b, b + n) for t, _i, b, n in _records(stream, 0, len(stream))
                         if t == _RT_DOCUMENT), None)
    if doc_span is None:
        raise ExtractionError(ErrorKind.CORRUPT, "no PowerPoint document record found")
    budget = [_MAX_RECORDS]
    # (persist id, slide id, blocks): SlidePersistAtom = persistIdRef, flags, texts, slideId
    slides: list[tuple[int | None, int | None, list[str]]] = []
    notes_refs: list[int] = []
    for rtype, inst, body, length in _records(stream, *doc_span):
        if rtype != _RT_SLWT or inst not in (0, 2):
            continue  # instance 0 lists the slides, 2 the notes pages (1: masters)
        for t, _i, b, n in _walk(stream, body, body + length, budget):
            if t == _RT_SLIDE_PERSIST and n >= 4:
                ref = struct.unpack_from("<I", stream, b)[0]
                if inst == 2:
                    notes_refs.append(ref)
                else:
                    sid = struct.unpack_from("<I", stream, b + 12)[0] if n >= 16 else None
                    slides.append((ref, sid, []))
            elif inst == 0 and slides and (text := _text_of(stream, t, b, n)) is not None:
                slides[-1][2].append(text)
    pages: list[tuple[list[str], list[str]]] = []
    for ref, _sid, blocks in slides:
        span = _container_at(stream, persist.get(ref) if ref is not None else None, _RT_SLIDE)
        if span is not None:
            for t, _i, b, n in _walk(stream, *span, budget):
                if (text := _text_of(stream, t, b, n)) is not None:
                    blocks.append(text)
        pages.append((blocks, []))
    if not slides:  # no slide list: every slide container in the stream, in stream order
        for t, _i, b, n in _records(stream, 0, len(stream)):
            if t == _RT_SLIDE:
                page = [x for tt, _ii, bb, nn in _walk(stream, b, b + n, budget)
                        if (x := _text_of(stream, tt, bb, nn)) is not None]
                pages.append((page, []))
        return pages
    by_id = {sid: i for i, (_r, sid, _b) in enumerate(slides) if sid is not None}
    for ref in notes_refs:
        owner, texts = _ppt_notes(stream, persist.get(ref), budget)
        if owner in by_id and texts:
            pages[by_id[owner]][1].extend(texts)
    return pages


def _ppt_notes(stream: bytes, offset: int | None, budget: list[int]
               ) -> tuple[int | None, list[str]]:
    """(slide id it belongs to, its text) of one notes page (NotesContainer)."""
    span = _container_at(stream, offset, _RT_NOTES)
    if span is None:
        return None, []
    owner: int | None = None
    texts: list[str] = []
    for t, _i, b, n in _walk(stream, *span, budget):
        if t == _RT_NOTES_ATOM and n >= 4 and owner is None:
            owner = struct.unpack_from("<I", stream, b)[0]
        elif (text := _text_of(stream, t, b, n)) is not None and text.strip() not in ("", "*"):
            texts.append(text)  # "*" is the slide-number field of the notes page
    return owner, texts


def _ppt_current_user(ole: Any) -> bytes:
    """The 'Current User' stream; ``corrupt`` without a 'PowerPoint Document' stream."""
    if not ole.exists("PowerPoint Document"):
        raise ExtractionError(ErrorKind.CORRUPT, "no 'PowerPoint Document' stream")
    return ole.openstream("Current User").read(4096) if ole.exists("Current User") else b""


def _ppt_decrypted(ole: Any, current: bytes, src: Source, ctx: Context,
                   doc: Document) -> Source | None:
    """None when the open file can be read as it is; else its decrypted copy, to read
    instead. Encryption is what the Current User header token says (a decrypted copy keeps
    its EncryptedSummary stream but gets the plain token), else the EncryptedSummary."""
    if len(current) >= 16:
        encrypted = struct.unpack_from("<I", current, 12)[0] == _HEADER_TOKEN_ENCRYPTED
    else:
        encrypted = bool(ole.exists("EncryptedSummary"))
    if not encrypted:
        return None
    if doc.metadata.extra.get("encrypted"):  # a decrypted copy still says so: give up
        raise ExtractionError(ErrorKind.ENCRYPTED, "PowerPoint file is password-protected")
    from .encrypted import decrypt_legacy

    return decrypt_legacy(src, ctx, doc, "PowerPoint file")


_MASTER_PROMPT = re.compile(r"^Click to edit (the )?Master .*", re.I)


def extract_ppt(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """PowerPoint 97-2003 from its records: one page per slide, in presentation order."""
    with opened(src, "PowerPoint") as ole:
        current = _ppt_current_user(ole)
        plain = _ppt_decrypted(ole, current, src, ctx, doc)
        if plain is None:
            summary_metadata(ole, doc, pages_attr="slides")
            if ole.exists("Text_Content") and ole.exists("Header"):
                _ppt95(ole.openstream("Text_Content").read(), out)
                return
            stream = ole.openstream("PowerPoint Document").read()
            ctx.account(len(stream), "PowerPoint stream")
    if plain is not None:
        extract_ppt(plain, ctx, doc, out)
        return
    try:
        pages = _ppt_slides(stream, current)
    except struct.error as exc:
        raise ExtractionError(ErrorKind.CORRUPT, f"damaged PowerPoint records: {exc}") from exc
    # Slides without any text (pictures, empty tables) are a real, empty result.
    doc.metadata.page_count = len(pages)
    for number, (blocks, notes) in enumerate(pages, 1):
        out.start_page(number)
        for text in blocks:
            if not _MASTER_PROMPT.match(text.strip()):
                out.paragraph(text)
        notes = [t for t in notes if not _MASTER_PROMPT.match(t.strip())]
        if notes:  # as for PPTX: the speaker notes follow the slide, on its page
            out.paragraph("Notes:")
            for text in notes:
                out.paragraph(text)


def _ppt95(data: bytes, out: Builder) -> None:
    """PowerPoint 95 keeps all slide text, ``\r``-separated, in a Text_Content stream."""
    text = decode(data, "cp1252")[0].replace("\x00", "")
    for block in re.split(r"\r\s*\r", text):
        out.paragraph(block.replace("\r", "\n"))


def extract_ppt_catppt(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """catppt as a second opinion when the record parser finds nothing."""
    with opened(src, "PowerPoint") as ole:
        plain = _ppt_decrypted(ole, _ppt_current_user(ole), src, ctx, doc)
        if plain is None:
            summary_metadata(ole, doc, pages_attr="slides")
    if plain is not None:
        extract_ppt_catppt(plain, ctx, doc, out)
        return
    with tool_path(src) as path:
        proc = run_text_tool(ctx, ["catppt", "-d", "utf-8", path], src.size)
    if proc.returncode != 0:
        raise _tool_failure("catppt", proc)
    text = proc.stdout.decode("utf-8", "replace")
    if not text.strip():
        raise ExtractionError(ErrorKind.CORRUPT, "catppt found no text")
    _emit_tool_text(text, out)


# --------------------------------------------------------------------------------------
# LibreOffice
# --------------------------------------------------------------------------------------


def _soffice() -> str | None:
    import shutil

    return shutil.which("soffice") or shutil.which("libreoffice")


def extract_libreoffice(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """Last resort: LibreOffice converts to DOCX/PPTX in a private profile; we re-extract.

    A private ``-env:UserInstallation`` keeps parallel conversions from fighting over one
    profile lock; the result is extracted by our own OOXML extractors via ``ctx.child``.
    """
    exe = _soffice() if ctx.options.libreoffice else None
    if exe is None:
        why = "disabled by options" if not ctx.options.libreoffice else "not installed"
        raise ExtractionError(ErrorKind.MISSING_TOOL, f"LibreOffice is {why}")
    target = "pptx" if doc.mime_type == "application/vnd.ms-powerpoint" else "docx"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="textsieve-lo-") as tmp, tool_path(src) as path:
        profile = Path(tmp, "profile").as_uri()
        proc = ctx.run_tool([exe, f"-env:UserInstallation={profile}", "--headless",
                             "--norestore", "--convert-to", target, "--outdir", tmp, path])
        produced = [p for p in Path(tmp).glob(f"*.{target}")]
        if proc.returncode != 0 or not produced:
            raise _tool_failure("soffice", proc)
        data = produced[0].read_bytes()
    child = ctx.child(data, f"{Path(src.name or 'document').stem}.{target}")
    if child.error is not None:
        raise ExtractionError(ErrorKind.CORRUPT,
                              f"LibreOffice output unreadable: {child.error.message}")
    doc.title = doc.title or child.title
    for page in child.pages:
        out.start_page(page.number)
        out.preformatted(page.text)
    if not child.pages:
        out.preformatted(child.text)
