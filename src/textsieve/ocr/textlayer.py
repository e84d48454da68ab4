"""The invisible text layer of a searchable page, written from the words as finally read.

Tesseract writes a text-only PDF page of its own reading, but the reading kept for a page
is often not Tesseract's first one: words its page segmentation dropped read again where
they lie, tables put in rows, weak lines read a second time (``raster.read_upright``). A
searchable PDF laid from Tesseract's page would lack exactly those words, so a search in
the PDF would miss what the archive's text has. This writes the same kind of page from
the final words instead.

The page is what Tesseract's PDF renderer makes, written here: its glyphless TrueType font
(``pdf.ttf``, installed with Tesseract's data) as a Type 0 font whose every character code
draws glyph 1 (an empty box half an em wide) and whose codes are the text's own UTF-16
units (an identity ToUnicode map), text render mode 3 (no pixel drawn), each word scaled
(``Tz``) to span its box on the scan. Rows come in reading order (``layout.reading_rows``):
what reads the PDF's text gets it in the order of the archive's text.
"""

from __future__ import annotations

import logging
import zlib
from functools import lru_cache
from pathlib import Path

from . import engine
from .layout import Line, Word, reading_rows

log = logging.getLogger(__name__)

_CMAP = b"""/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def
/CMapName /Adobe-Identity-UCS def
/CMapType 2 def
1 begincodespacerange
<0000> <FFFF>
endcodespacerange
1 beginbfrange
<0000> <FFFF> <0000>
endbfrange
endcmap
CMapName currentdict /CMap defineresource pop
end
end
"""
_EM = 0.5  # the glyphless font's advance, in ems (its /DW 500)


@lru_cache(maxsize=1)
def _font() -> bytes | None:
    """Tesseract's glyphless font, or None where its data has none."""
    folder = engine.tessdata_dir()
    path = Path(folder, "pdf.ttf") if folder else None
    try:
        return path.read_bytes() if path is not None else None
    except OSError:
        return None


def page_pdf(lines: list[Line], size: tuple[int, int], dpi: int) -> bytes | None:
    """A one-page text-only PDF of ``lines`` on a page of ``size`` pixels read at
    ``dpi``: the same page box as Tesseract's own for that image. None without the
    font."""
    font = _font()
    if font is None:
        return None
    k = 72 / dpi  # points per pixel
    width, height = size[0] * k, size[1] * k
    content = _content(reading_rows(lines), size[1], k)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [ 9 0 R ] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type0 /BaseFont /GlyphLessFont /Encoding /Identity-H"
        b" /DescendantFonts [ 4 0 R ] /ToUnicode 6 0 R >>",
        b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /GlyphLessFont /CIDSystemInfo"
        b" << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor 7 0 R"
        b" /CIDToGIDMap 5 0 R /DW 500 >>",
        _stream(b"\x00\x01" * 65536, compress=True),
        _stream(_CMAP),
        b"<< /Type /FontDescriptor /FontName /GlyphLessFont /Flags 5 /FontBBox [ 0 0 500"
        b" 1000 ] /ItalicAngle 0 /Ascent 1000 /Descent -1 /CapHeight 1000 /StemV 80"
        b" /FontFile2 8 0 R >>",
        _stream(font, extra=f" /Length1 {len(font)}".encode()),
        f"<< /Type /Page /Parent 2 0 R /MediaBox [ 0 0 {width:.2f} {height:.2f} ]"
        f" /Contents 10 0 R /Resources << /Font << /f-0-0 3 0 R >> >> >>".encode(),
        _stream(content, compress=True),
    ]
    return _document(objects)


def _content(rows: list[list[Word]], height_px: int, k: float) -> bytes:
    """The page's text operators: a row at a time, each word placed at its box's lower
    left corner, as tall as its row and stretched to reach the next word (the space
    between them is part of it, as a reader joining the glyphs expects)."""
    out = ["BT", "3 Tr"]
    for row in rows:
        words = [w for w in row if w.text]
        if not words:
            continue
        left, top = min(w.box[0] for w in words), min(w.box[1] for w in words)
        right, bottom = max(w.box[2] for w in words), max(w.box[3] for w in words)
        if bottom - top > right - left:
            # Standing up (a column Tesseract read as vertical text): each word on its
            # own box, so its words do not pile up on one baseline as one run of glyphs.
            for w in words:
                out.append(_word(w, w.text, w.box[2] - w.box[0], w.box[1], w.box[3],
                                 height_px, k))
            continue
        for i, w in enumerate(words):
            last = i == len(words) - 1
            reach = (w.box[2] if last else max(w.box[2], words[i + 1].box[0])) - w.box[0]
            out.append(_word(w, w.text if last else w.text + " ", reach, top, bottom,
                             height_px, k))
    out.append("ET")
    return ("\n".join(out) + "\n").encode("ascii")


def _word(w: Word, text: str, reach: int, top: int, bottom: int, height_px: int,
          k: float) -> str:
    """One word's operators: ``text`` from the left of its box on the baseline
    ``bottom``, ``bottom - top`` tall, stretched to ``reach`` pixels across."""
    size = max(1.0, (bottom - top) * k)
    units = len(text.encode("utf-16-be")) // 2
    stretch = 100 * max(1, reach) * k / (units * _EM * size)
    return (f"/f-0-0 {size:.2f} Tf {stretch:.2f} Tz 1 0 0 1 {w.box[0] * k:.2f} "
            f"{(height_px - bottom) * k:.2f} Tm <{text.encode('utf-16-be').hex().upper()}> Tj")


def _stream(data: bytes, *, compress: bool = False, extra: bytes = b"") -> bytes:
    if compress:
        data = zlib.compress(data)
    flate = b" /Filter /FlateDecode" if compress else b""
    return (b"<< /Length " + str(len(data)).encode() + flate + extra + b" >>\nstream\n"
            + data + b"\nendstream")


def _document(objects: list[bytes]) -> bytes:
    """A PDF file of ``objects`` (numbered from 1, the first the catalog)."""
    out = bytearray(b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
            "%%EOF\n").encode()
    return bytes(out)
