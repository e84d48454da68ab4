"""Word 97-2003 (DOC) read here, from the file's own structures (MS-DOC), not by a tool.

The text of a Word file is a sequence of characters (CPs) stored in pieces (the piece
table, in the CLX): each piece says where its characters sit in the WordDocument stream
and whether they are 8-bit (cp1252) or UTF-16. That sequence holds the stories one after
the other: the body, footnotes, headers and footers, comments, endnotes, text boxes. Table
structure comes from the paragraph properties (PAPX, found by file position through the
BTE/FKP pages): which paragraph is in a table, and which mark ends a row. Fields keep their
result and drop their instruction (``HYPERLINK "..."``), as Word shows them.

Compared with antiword (kept as the fallback, then catdoc for Word 6/95), this reads
fast-saved files, Unicode text, headers, footers, footnotes, endnotes and text boxes, and
needs no process per file. Word 6/95 files (an older FIB) are ``unsupported`` here, so the
next reader takes them; so is any file whose structures do not add up.
"""

from __future__ import annotations

import bisect
import contextlib
import re
import struct
from dataclasses import dataclass
from typing import Any

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader
from ..kernels.ole import opened, pack_storage, unwrap_package
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder, number_text
from . import Context, wants_pictures
from .legacy import doc_source

# Output version (archives re-extract what an older one made).
FORMAT = Format(name="word97", version=2, readers=(Reader(d.DOC),), hints={"doc": d.DOC})

_WIDENT, _WIDENT_WORD6 = 0xA5EC, 0xA5DC  # Word 97 and later; Word 6 and 95
_NFIB_WORD97 = 0x00C1  # Word 97; 2000-2003 and later DOCs have a higher nFib
_F_WHICH_TABLE = 0x0200
# FibRgLw97 indexes of the story lengths, FibRgFcLcb97 indexes of the (fc, lcb) pairs used.
_LW_TEXT, _LW_FTN, _LW_HDD, _LW_MCR, _LW_ATN, _LW_EDN, _LW_TXBX, _LW_HDR_TXBX = range(3, 11)
_FC_PLCFHDD, _FC_PLCFBTEPAPX, _FC_CLX = 11, 13, 33
# Paragraph sprms (MS-DOC 2.6.2) that carry table structure.
_SPRM_IN_TABLE, _SPRM_TTP, _SPRM_ITAP = 0x2416, 0x2417, 0x6649
_SPRM_INNER_CELL, _SPRM_INNER_TTP = 0x244B, 0x244C
_SPRM_ILFO, _SPRM_ILVL = 0x460B, 0x260A
_FC_STSHF, _FC_PLFLST, _FC_PLFLFO = 1, 73, 74
_NFC_BULLET, _NFC_NONE = 23, 255  # number formats that show no number
_NFC_STYLES = {1: "upperRoman", 2: "lowerRoman", 3: "upperLetter", 4: "lowerLetter"}
_FIELD_BEGIN, _FIELD_SEP, _FIELD_END = "\x13", "\x14", "\x15"
# In-paragraph characters with a meaning: line break, page/column/section breaks,
# non-breaking and optional hyphens; every other control character is an anchor
# (picture, drawing, note or comment reference) and shows nothing.
_SHOWN = {"\x0b": "\n", "\x0c": "\n", "\x0e": "\n", "\x1e": "-", "\x1f": "", "\t": "\t"}
_DROP: dict[int, str | None] = {i: None for i in range(32) if chr(i) not in _SHOWN}
_DROP.update({ord(k): v for k, v in _SHOWN.items()})
# Header/footer stories after the six note separators, per section (MS-DOC 2.8.24 Plcfhdd).
_HDD_KINDS = ("header", "header", "footer", "footer", "header", "footer")
_MAX_PIECES = 1_000_000
# A character outside the BMP: two UTF-16 code units, so two CPs (MS-DOC counts units).
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")
# 8-bit pieces are cp1252, except that the five bytes cp1252 leaves undefined stand for
# U+0081 and the like (MS-DOC 2.4.1): decoded as Latin-1, then 0x80-0x9F mapped.
_CP1252 = {i: bytes([i]).decode("cp1252") for i in range(0x80, 0xA0)
           if i not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)}


@dataclass(frozen=True)
class _Para:
    """What a paragraph's properties say about its role: table, style, list."""

    in_table: bool = False
    row_end: bool = False  # the TTP mark that ends a table row
    depth: int = 0  # table nesting (itap): 1 = a cell of an outer table
    inner_cell: bool = False  # the end of a cell of a nested table
    inner_row_end: bool = False
    istd: int = 0  # its style (an index into the style sheet)
    ilfo: int = 0  # its list (1-based index into the list overrides; 0: none)
    ilvl: int = 0  # its level in that list


_PLAIN = _Para()


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    src = doc_source(src, ctx, doc)  # metadata; a decrypted copy if it is encrypted
    with opened(src, "Word") as ole:  # any parse error in here: the file is damaged
        word = ole.openstream("WordDocument").read()
        fib = _Fib(word)
        name = "1Table" if fib.flags & _F_WHICH_TABLE else "0Table"
        if not ole.exists(name):
            raise ExtractionError(ErrorKind.CORRUPT, f"no {name} stream")
        _render(_Reader(word, ole.openstream(name).read(), fib), ctx, out)
        _embedded(ole, ctx, doc)
        if wants_pictures(ctx, out):
            from .docx import pictures_to_children  # here: most DOCs need no lxml

            data = ole.openstream("Data").read() if ole.exists("Data") else b""
            pictures = dict(_pictures((data, word), ctx.options.max_members))
            pictures_to_children(list(pictures), pictures.__getitem__, ctx, doc)


def _pictures(streams: tuple[bytes, ...], limit: int) -> list[tuple[str, bytes]]:
    """The PNG and JPEG pictures of a Word file, each once. They sit whole in the Data
    stream (inline pictures) and the WordDocument stream (floating ones), inside Office
    drawing records; a picture is found by its signature and cut at its real end."""
    found: dict[bytes, None] = {}
    for data in streams:
        for sig, end_of in ((_PNG, _png_end), (_JPEG, _jpeg_end)):
            at = data.find(sig)
            while at != -1 and len(found) < limit:
                end = end_of(data, at)
                if end:
                    found.setdefault(data[at:end])
                at = data.find(sig, end or at + 1)
    return [(f"picture{i + 1}.{'png' if p.startswith(_PNG) else 'jpg'}", p)
            for i, p in enumerate(found)]


_PNG, _JPEG = b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff"


def _png_end(data: bytes, at: int) -> int | None:
    """The end of the PNG at ``at``: its chunks walked to IEND (and its CRC)."""
    pos = at + 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, pos)
        pos += 12 + length
        if kind == b"IEND":
            return pos if pos <= len(data) else None
    return None


def _jpeg_end(data: bytes, at: int) -> int | None:
    """The end of the JPEG at ``at``: its marker segments walked to the first scan, then
    the end-of-image marker (inside scan data a 0xFF byte is always stuffed)."""
    pos = at + 2
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xD9:
            return pos + 2
        length = struct.unpack_from(">H", data, pos + 2)[0]
        if marker == 0xDA:  # start of scan: what follows is entropy-coded to EOI
            eoi = data.find(b"\xff\xd9", pos + 2 + length)
            return eoi + 2 if eoi != -1 else None
        pos += 2 + length
    return None


# Streams that make an ObjectPool storage a document worth reading, and the name its child
# gets; other objects (equations, pictures, charts without data) are left out.
_EMBEDDED_KINDS = {"WordDocument": ".doc", "Workbook": ".xls", "Book": ".xls",
                   "PowerPoint Document": ".ppt", "\x01Ole10Native": "", "Package": "",
                   "CONTENTS": ""}
_MAX_EMBEDDED = 256 << 20


def _embedded(ole: Any, ctx: Context, doc: Document) -> None:
    """Documents embedded in the Word file (ObjectPool storages) become its children, at
    most ``max_members`` of them; the unpack budget spent, the rest is one failed child."""
    if not ole.exists("ObjectPool"):
        return
    listing = [e for e in ole.listdir(streams=True, storages=True) if e[0] == "ObjectPool"]
    streams: dict[tuple[str, ...], set[str]] = {}  # storage -> names of its own streams
    for e in listing:
        if len(e) == 3:
            streams.setdefault(tuple(e[:2]), set()).add(e[2])
    kept = 0
    for path in sorted(streams):
        kind = next((k for k in _EMBEDDED_KINDS if k in streams[path]), None)
        if kind is None:
            continue
        if kept == ctx.options.max_members:
            doc.warnings.append(f"more than {kept} embedded objects: the rest are not read")
            return
        kept += 1
        try:
            data = pack_storage(ole, list(path), _MAX_EMBEDDED, listing)
        except Exception as exc:  # a damaged storage: the document's own text stands
            doc.warnings.append(f"embedded object {path[1]} could not be read: {exc}")
            continue
        name = path[1] + _EMBEDDED_KINDS[kind]
        if data is None:
            doc.warnings.append(f"embedded object {path[1]} is too large to unpack")
            continue
        try:
            ctx.account(len(data), "embedded objects")
        except ExtractionError as exc:  # the budget is spent: say so once, keep the text
            doc.children.append(Document.failed(exc.kind, exc.message, name=name))
            return

        data, name = unwrap_package(data, name)
        doc.children.append(ctx.child(data, name))


def _render(reader: _Reader, ctx: Context, out: Builder) -> None:
    """Headers, the body, footers, then text boxes, footnotes, endnotes (and comments when
    asked): the order DOCX documents come out in."""
    fib = reader.fib
    text = reader.text()
    body_end = fib.lw(_LW_TEXT)
    if body_end > 1 and not text[:body_end].strip("\x00"):
        # The file says it holds text and the pieces point at zeros: let antiword try.
        # (Blank paragraphs and picture anchors are a document without text, not this.)
        raise ExtractionError(ErrorKind.CORRUPT, "the piece table gives no text")
    # The stories follow the body in this order (MS-DOC 2.3.1, every ccp* of FibRgLw97):
    # one left out (the macro story, which "MUST be 0" but is not always) moves the rest.
    stories, pos = {}, body_end
    for key, index in (("footnotes", _LW_FTN), ("headers", _LW_HDD), ("macros", _LW_MCR),
                       ("comments", _LW_ATN), ("endnotes", _LW_EDN), ("boxes", _LW_TXBX),
                       ("header boxes", _LW_HDR_TXBX)):
        stories[key] = (pos, pos + fib.lw(index))
        pos += fib.lw(index)
    headers, footers = reader.header_footer_texts(text, *stories["headers"])
    for h in headers:
        out.paragraph(h)
    reader.body(text, 0, body_end, out)
    for f in footers:
        out.paragraph(f)
    for key in ("boxes", "header boxes", "footnotes", "endnotes", "comments"):
        if key == "comments" and not ctx.options.comments:
            continue
        a, b = stories[key]
        for para in _note_paragraphs(text[a:b]):
            out.paragraph(para)


class _Fib:
    """The File Information Block: format version, flags, story lengths, table pointers."""

    def __init__(self, word: bytes) -> None:
        if len(word) < 64:
            raise ExtractionError(ErrorKind.CORRUPT, "Word file information block is truncated")
        ident, self.nfib = struct.unpack_from("<HH", word, 0)
        if ident not in (_WIDENT, _WIDENT_WORD6):
            raise ExtractionError(ErrorKind.CORRUPT, "not a Word document (bad FIB signature)")
        if ident == _WIDENT_WORD6 or self.nfib < _NFIB_WORD97:
            raise ExtractionError(ErrorKind.UNSUPPORTED,
                                  f"Word 6/95 document (nFib {self.nfib:#x})")
        self.flags = struct.unpack_from("<H", word, 0x0A)[0]
        try:
            csw = struct.unpack_from("<H", word, 32)[0]
            pos = 34 + 2 * csw
            cslw = struct.unpack_from("<H", word, pos)[0]
            self._lw = struct.unpack_from(f"<{cslw}i", word, pos + 2)
            pos += 2 + 4 * cslw
            cb = struct.unpack_from("<H", word, pos)[0]
            self._fclcb = struct.unpack_from(f"<{2 * cb}I", word, pos + 2)
        except struct.error as exc:
            raise ExtractionError(ErrorKind.CORRUPT, "Word FIB is truncated") from exc
        if len(self._lw) <= _LW_TXBX or len(self._fclcb) <= 2 * _FC_CLX + 1:
            raise ExtractionError(ErrorKind.CORRUPT, "Word FIB is too short for Word 97")

    def lw(self, index: int) -> int:
        """A FibRgLw97 value; 0 past the end of a short FIB."""
        return max(self._lw[index], 0) if index < len(self._lw) else 0

    def fclcb(self, index: int) -> tuple[int, int]:
        """(offset, length) in the table stream; (0, 0) past the end of a short FIB."""
        if 2 * index + 1 >= len(self._fclcb):
            return 0, 0
        return self._fclcb[2 * index], self._fclcb[2 * index + 1]


class _Reader:
    """The character sequence (from the piece table) and the paragraph properties."""

    def __init__(self, word: bytes, table: bytes, fib: _Fib) -> None:
        self.word, self.table, self.fib = word, table, fib
        self.pieces = self._pieces()  # (cp start, cp end, byte offset, 8-bit)
        self.piece_starts = [p[0] for p in self.pieces]
        # (fc start, fc end, where its PAPX is: word offset, or 0 for none), in fc order;
        # none from a damaged index: tables then come out as cells without rows
        try:
            self._runs = self._papx_runs()
        except (ExtractionError, struct.error):
            self._runs = []
        self._run_starts = [r[0] for r in self._runs]
        self._props: dict[int, _Para] = {0: _PLAIN}  # PAPXs read so far, by their offset

    # -- the text ------------------------------------------------------------------------
    def _pieces(self) -> list[tuple[int, int, int, bool]]:
        fc, lcb = self.fib.fclcb(_FC_CLX)
        table = self.table
        if lcb <= 0 or fc + lcb > len(table):
            raise ExtractionError(ErrorKind.CORRUPT, "the piece table is missing or cut off")
        pos, end = fc, fc + lcb
        while pos < end and table[pos] == 0x01:  # Prc: formatting we do not need
            pos += 3 + struct.unpack_from("<H", table, pos + 1)[0]
        if pos + 5 > end or table[pos] != 0x02:
            raise ExtractionError(ErrorKind.CORRUPT, "the piece table is damaged")
        size = struct.unpack_from("<I", table, pos + 1)[0]
        plc = table[pos + 5:pos + 5 + size]
        n = (len(plc) - 4) // 12
        if n < 1 or n > _MAX_PIECES or len(plc) != 4 + 12 * n:
            raise ExtractionError(ErrorKind.CORRUPT, "the piece table is damaged")
        cps = struct.unpack_from(f"<{n + 1}I", plc, 0)
        out = []
        for i in range(n):
            raw = struct.unpack_from("<I", plc, 4 * (n + 1) + 8 * i + 2)[0]
            compressed = bool(raw & 0x40000000)
            offset = (raw & 0x3FFFFFFF) // 2 if compressed else raw & 0x3FFFFFFF
            if cps[i + 1] < cps[i]:
                raise ExtractionError(ErrorKind.CORRUPT, "the piece table is out of order")
            out.append((cps[i], cps[i + 1], offset, compressed))
        # Pieces do not overlap: together they hold at most the stream. A damaged table
        # whose pieces each claim the whole stream would otherwise decode it n times.
        claimed = sum((e - b) * (1 if c else 2) for b, e, _, c in out)
        if claimed > len(self.word) + 1024:
            raise ExtractionError(ErrorKind.CORRUPT, "the piece table claims more text than "
                                  "the WordDocument stream holds")
        return out

    def text(self) -> str:
        """Every story's characters, in CP order (a CP is an index into this string)."""
        parts = []
        word = self.word
        for start, end, offset, compressed in self.pieces:
            n = end - start
            if compressed:
                raw = word[offset:offset + n]
                parts.append(raw.decode("latin-1").translate(_CP1252))
            else:
                raw = word[offset:offset + 2 * n]
                chars = raw.decode("utf-16-le", "replace")
                if len(chars) * 2 != len(raw) and len(raw) % 2 == 0:
                    # A character outside the BMP is two CPs (a surrogate pair) but one
                    # Python character: pad it back to two, or every later story (headers,
                    # notes, text boxes) is sliced that many characters too far on.
                    chars = _ASTRAL.sub("\\g<0>\x00", chars)
                parts.append(chars)
            if len(raw) < (n if compressed else 2 * n):
                raise ExtractionError(ErrorKind.CORRUPT, "a text piece lies past the end of "
                                      "the WordDocument stream")
        return "".join(parts)

    def fc_of(self, cp: int) -> int | None:
        """The byte offset of character ``cp`` in the WordDocument stream."""
        i = bisect.bisect_right(self.piece_starts, cp) - 1
        if i < 0:
            return None
        start, end, offset, compressed = self.pieces[i]
        if cp >= end:
            return None
        return offset + (cp - start) * (1 if compressed else 2)

    # -- paragraph properties ------------------------------------------------------------
    def para_at(self, cp: int) -> _Para:
        """The table role of the paragraph whose mark is at ``cp``."""
        fc = self.fc_of(cp)
        if fc is None:
            return _PLAIN
        i = bisect.bisect_right(self._run_starts, fc) - 1
        if i < 0 or fc >= self._runs[i][1]:
            return _PLAIN
        where = self._runs[i][2]
        props = self._props.get(where)
        if props is None:  # read on first use: most runs are never asked for
            page = where - where % 512
            props = self._props[where] = _papx(self.word[page:page + 512], where - page)
        return props

    def _papx_runs(self) -> list[tuple[int, int, int]]:
        fc, lcb = self.fib.fclcb(_FC_PLCFBTEPAPX)
        if lcb < 12 or fc + lcb > len(self.table) or (lcb - 4) % 8:
            raise ExtractionError(ErrorKind.CORRUPT, "the paragraph property index is damaged")
        n = (lcb - 4) // 8
        pns = struct.unpack_from(f"<{n}I", self.table, fc + 4 * (n + 1))
        runs: list[tuple[int, int, int]] = []
        word = self.word
        for pn in dict.fromkeys(pns):  # each page once: a damaged index may repeat one
            base = (pn & 0x3FFFFF) * 512
            page = word[base:base + 512]
            if len(page) < 512:
                raise ExtractionError(ErrorKind.CORRUPT, "a paragraph property page is missing")
            crun = page[511]
            if 4 * (crun + 1) + 13 * crun > 511:
                raise ExtractionError(ErrorKind.CORRUPT, "a paragraph property page is damaged")
            fcs = struct.unpack_from(f"<{crun + 1}I", page, 0)
            for i in range(crun):
                at = 2 * page[4 * (crun + 1) + 13 * i]
                runs.append((fcs[i], fcs[i + 1], base + at if at else 0))
        runs.sort(key=lambda r: r[0])
        return runs

    # -- stories -------------------------------------------------------------------------
    def body(self, text: str, start: int, end: int, out: Builder) -> None:
        """The main story: headings, list items and paragraphs (from their styles and
        list membership), and tables from the cell and row marks."""
        table = _Table(out)
        fields = _Fields()
        styles, lists = _Styles(self.table, self.fib), _Lists(self.table, self.fib)
        pos = start
        for mark in _marks(text, start, end):
            para = fields.shown(text[pos:mark]).strip()
            pos = mark + 1
            cell_mark = text[mark] == "\x07"
            props = self.para_at(mark)
            if cell_mark and not props.in_table:
                props = _Para(in_table=True, depth=1)  # a cell mark whose run is unknown
            if props.depth > 1 or props.inner_cell or props.inner_row_end:
                table.inner(para, props)
            elif props.row_end:
                table.end_row()
            elif props.in_table:
                table.add(para)
                if cell_mark:
                    table.end_cell()
            else:
                table.flush()
                if not para:
                    continue
                if level := styles.heading_level(props.istd):
                    out.heading(para, level)
                elif props.ilfo:
                    lists.item(para, props, out)
                else:
                    out.paragraph(para)
        tail = fields.shown(text[pos:end]).strip()  # after the last mark: a file cut short
        if tail and table.open:  # the last cell's text, or a paragraph of its own
            table.add(tail)
            tail = ""
        table.flush()
        if tail:
            out.paragraph(tail)

    def header_footer_texts(self, text: str, start: int, end: int
                            ) -> tuple[list[str], list[str]]:
        """Each distinct header and footer text once (every section repeats them)."""
        if end <= start:
            return [], []
        fc, lcb = self.fib.fclcb(_FC_PLCFHDD)
        n = lcb // 4
        if lcb < 8 or fc + lcb > len(self.table):
            return [], []
        cps = struct.unpack_from(f"<{n}I", self.table, fc)
        seen: set[str] = set()
        kinds: dict[str, list[str]] = {"header": [], "footer": []}
        for i in range(6, n - 1):
            a, b = start + cps[i], start + cps[i + 1]
            if not start <= a < b <= end:
                continue
            shown = "\n".join(_note_paragraphs(text[a:b]))
            if shown and shown not in seen:
                seen.add(shown)
                kinds[_HDD_KINDS[(i - 6) % 6]].append(shown)
        return kinds["header"], kinds["footer"]


def _papx(page: bytes, at: int) -> _Para:
    """The table sprms of one PAPX in an FKP page (MS-DOC 2.9.175 PapxInFkp)."""
    if at + 2 > len(page):
        return _PLAIN
    cb = page[at]
    if cb == 0:
        start, size = at + 2, 2 * page[at + 1]
    else:
        start, size = at + 1, 2 * cb - 1
    if start + 2 > len(page):
        return _PLAIN
    istd = page[start] | page[start + 1] << 8
    grpprl = page[start + 2:min(start + size, len(page))]
    in_table = row_end = inner_cell = inner_ttp = False
    depth = ilfo = ilvl = 0
    pos = 0
    while pos + 2 <= len(grpprl):
        sprm = grpprl[pos] | grpprl[pos + 1] << 8
        pos += 2
        opsize = _operand_size(sprm, grpprl, pos)
        if opsize is None or pos + opsize > len(grpprl):
            break
        value = grpprl[pos] if opsize else 0
        if sprm == _SPRM_IN_TABLE:
            in_table = bool(value)
        elif sprm == _SPRM_TTP:
            row_end = bool(value)
        elif sprm == _SPRM_ITAP and opsize == 4:
            depth = struct.unpack_from("<i", grpprl, pos)[0]
        elif sprm == _SPRM_INNER_CELL:
            inner_cell = bool(value)
        elif sprm == _SPRM_INNER_TTP:
            inner_ttp = bool(value)
        elif sprm == _SPRM_ILFO and opsize == 2:
            ilfo = struct.unpack_from("<h", grpprl, pos)[0]
        elif sprm == _SPRM_ILVL:
            ilvl = min(value, 8)
        pos += opsize
    if in_table and not depth:
        depth = 1
    if not (in_table or row_end or inner_cell or inner_ttp or istd or ilfo > 0):
        return _PLAIN
    return _Para(in_table or depth > 0, row_end, depth, inner_cell, inner_ttp, istd,
                 max(ilfo, 0), ilvl)


def _operand_size(sprm: int, grpprl: bytes, pos: int) -> int | None:
    """Bytes of a sprm's operand (its spra, MS-DOC 2.6.1); variable ones count their own."""
    spra = sprm >> 13
    if spra in (0, 1):
        return 1
    if spra in (2, 4, 5):
        return 2
    if spra == 3:
        return 4
    if spra == 7:
        return 3
    if pos >= len(grpprl):
        return None
    if sprm == 0xD608:  # sprmTDefTable: a two-byte size that counts itself
        if pos + 2 > len(grpprl):
            return None
        return struct.unpack_from("<H", grpprl, pos)[0] + 1
    if sprm == 0xC615 and grpprl[pos] == 255:  # sprmPChgTabs, the long form (2.9.185):
        try:  # tabs deleted (count, 4 bytes each), then added (count, 3 bytes each)
            deleted = grpprl[pos + 1]
            added = grpprl[pos + 2 + 4 * deleted]
        except IndexError:
            return None
        return 3 + 4 * deleted + 3 * added
    return 1 + grpprl[pos]


def _marks(text: str, start: int, end: int) -> list[int]:
    """Positions of paragraph marks (CR) and cell/row marks (BEL) in [start, end)."""
    out = []
    for ch in ("\r", "\x07"):
        i = text.find(ch, start, end)
        while i != -1:
            out.append(i)
            i = text.find(ch, i + 1, end)
    out.sort()
    return out


class _Fields:
    """Field state across paragraphs: a result is shown, an instruction is not. A field
    may span paragraphs (a table of contents), so the state outlives one paragraph."""

    def __init__(self) -> None:
        self.stack: list[bool] = []  # per open field: True while in its instruction

    def shown(self, chunk: str) -> str:
        if not self.stack and _FIELD_BEGIN not in chunk:
            return chunk.translate(_DROP)
        out = []
        for ch in chunk:
            if ch == _FIELD_BEGIN:
                self.stack.append(True)
            elif ch == _FIELD_SEP:
                if self.stack:
                    self.stack[-1] = False
            elif ch == _FIELD_END:
                if self.stack:
                    self.stack.pop()
            elif not any(self.stack):
                out.append(ch)
        return "".join(out).translate(_DROP)


def _note_paragraphs(story: str) -> list[str]:
    """The paragraphs of a secondary story (notes, comments, text boxes, a header)."""
    fields = _Fields()
    out = []
    for chunk in story.replace("\x07", "\r").split("\r"):
        shown = fields.shown(chunk).strip()
        if shown:
            out.append(shown)
    return out


class _Styles:
    """Which styles are headings: the built-in Heading 1-9 (style identifier 1-9, the same
    in every language, unlike the style names)."""

    def __init__(self, table: bytes, fib: _Fib) -> None:
        self.sti: dict[int, int] = {}
        fc, lcb = fib.fclcb(_FC_STSHF)
        if lcb < 4 or fc + lcb > len(table):
            return
        try:
            cb_stshi = struct.unpack_from("<H", table, fc)[0]
            cstd = struct.unpack_from("<H", table, fc + 2)[0]
            pos, end = fc + 2 + cb_stshi, fc + lcb
            for istd in range(cstd):
                cb = struct.unpack_from("<H", table, pos)[0]
                if cb >= 2:
                    self.sti[istd] = struct.unpack_from("<H", table, pos + 2)[0] & 0x0FFF
                pos += 2 + cb
                if pos > end:
                    break
        except (struct.error, IndexError):
            pass  # a damaged style sheet: no headings, the text is unharmed

    def heading_level(self, istd: int) -> int | None:
        sti = self.sti.get(istd)
        return sti if sti is not None and 1 <= sti <= 9 else None


class _Lists:
    """List numbering: each list's number format, start and number text per level (the
    LSTF and LVL records after the PlfLst), the list overrides that paragraphs point to
    (PlfLfo), and the running numbers, so that "6." or "b)" reads as Word shows it."""

    def __init__(self, table: bytes, fib: _Fib) -> None:
        self.levels: dict[int, list[tuple[int, int, str]]] = {}  # lsid -> [(start, nfc, xst)]
        self.lfo: list[int] = []  # ilfo - 1 -> lsid
        self.counts: dict[int, list[int | None]] = {}
        with contextlib.suppress(struct.error, IndexError):  # damaged: items stay unnumbered
            self._read(table, fib)

    def _read(self, table: bytes, fib: _Fib) -> None:
        fc, lcb = fib.fclcb(_FC_PLFLST)
        if lcb >= 2 and fc + lcb <= len(table):
            count = struct.unpack_from("<h", table, fc)[0]
            lstfs = []
            for i in range(max(count, 0)):
                at = fc + 2 + 28 * i
                lsid = struct.unpack_from("<i", table, at)[0]
                lstfs.append((lsid, 1 if table[at + 26] & 0x01 else 9))
            pos = fc + 2 + 28 * max(count, 0)  # the LVLs follow the PlfLst
            for lsid, n in lstfs:
                levels = []
                for _ in range(n):
                    start, nfc = struct.unpack_from("<iB", table, pos)
                    pos += 28 + table[pos + 24] + table[pos + 25]  # + the two grpprls
                    cch = struct.unpack_from("<H", table, pos)[0]  # the number text (xst)
                    xst = table[pos + 2:pos + 2 + 2 * cch].decode("utf-16-le", "replace")
                    pos += 2 + 2 * cch
                    levels.append((start, nfc, xst))
                self.levels[lsid] = levels
        fc, lcb = fib.fclcb(_FC_PLFLFO)
        if lcb >= 4 and fc + lcb <= len(table):
            n = struct.unpack_from("<i", table, fc)[0]
            self.lfo = [struct.unpack_from("<i", table, fc + 4 + 16 * i)[0]
                        for i in range(max(min(n, (lcb - 4) // 16), 0))]

    def item(self, text: str, props: _Para, out: Builder) -> None:
        lsid = self.lfo[props.ilfo - 1] if props.ilfo <= len(self.lfo) else -1
        levels = self.levels.get(lsid, [])
        level = min(props.ilvl, 8)
        start, nfc, xst = levels[level] if level < len(levels) else (1, _NFC_BULLET, "")
        counts = self.counts.setdefault(lsid, [None] * 9)
        counts[level] = start if counts[level] is None else counts[level] + 1  # type: ignore[operator]
        for deeper in range(level + 1, 9):
            counts[deeper] = None
        if nfc == _NFC_NONE:
            out.paragraph(text)
        elif nfc == _NFC_BULLET:
            out.list_item(text, level)
        else:
            out.list_item(text, level, True, counts[level] or 1,
                          self._label(xst, levels, counts))

    @staticmethod
    def _label(xst: str, levels: list[tuple[int, int, str]], counts: list[int | None]
               ) -> str | None:
        """The number as Word shows it: the level's number text, whose characters 0-8
        stand for the running number of that level, in that level's format."""
        if not xst:
            return None
        out = []
        for ch in xst:
            i = ord(ch)
            if i < 9:
                nfc = levels[i][1] if i < len(levels) else 0
                n = counts[i] or (levels[i][0] if i < len(levels) else 1)
                out.append(number_text(n, _NFC_STYLES.get(nfc, "decimal")))
            else:
                out.append(ch)
        return "".join(out)


class _Table:
    """Rows and cells as the marks arrive; a nested table goes into its cell as lines."""

    def __init__(self, out: Builder) -> None:
        self.out = out
        self.rows: list[list[str]] = []
        self.row: list[str] = []
        self.cell: list[str] = []  # paragraphs of the current cell
        self.nested: list[str] = []  # rows of a nested table in the current cell
        self.nested_row: list[str] = []

    @property
    def open(self) -> bool:
        return bool(self.rows or self.row or self.cell or self.nested or self.nested_row)

    def add(self, para: str) -> None:
        self._close_nested()
        if para:
            self.cell.append(para)

    def inner(self, para: str, props: _Para) -> None:
        if props.inner_row_end:
            if any(self.nested_row):
                self.nested.append(" | ".join(c for c in self.nested_row if c))
            self.nested_row = []
        elif para:
            self.nested_row.append(para)

    def end_cell(self) -> None:
        self._close_nested()
        self.row.append("\n".join(self.cell))
        self.cell = []

    def end_row(self) -> None:
        if self.cell or self.nested or self.nested_row:
            self.end_cell()
        if self.row:
            self.rows.append(self.row)
        self.row = []

    def flush(self) -> None:
        if self.cell or self.nested or self.nested_row:
            self.end_cell()
        if self.row:
            self.end_row()
        if self.rows:
            self.out.table(self.rows, header=False)
        self.rows = []

    def _close_nested(self) -> None:
        if any(self.nested_row):
            self.nested.append(" | ".join(c for c in self.nested_row if c))
        self.nested_row = []
        if self.nested:
            self.cell.append("\n".join(self.nested))
            self.nested = []
