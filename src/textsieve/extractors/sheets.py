"""Spreadsheets (XLSX/XLSM/XLTX/XLSB, XLS BIFF5-8, ODS) through python-calamine.

calamine is a Rust reader: it gives every sheet's used range as typed cell values in one
call, which is what makes a 100,000-row sheet take a fraction of a second. We add what it
leaves to the caller: values printed the way a person sees them, trimming of blank edges,
and typed errors (encrypted, corrupt, too large) instead of library exceptions.
"""

from __future__ import annotations

import datetime as dt
import io
import struct
from collections.abc import Callable, Sequence
from typing import Any, cast

import python_calamine as pc

from .. import detection as d
from ..bytesource import Source
from ..forking import CallDied, JobsTimeout, call_isolated, in_worker
from ..formats import Format, Reader, Signature
from ..kernels.ole import stream_head
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder
from . import Context

# Imported on first use only (rare paths); ``preload`` imports them ahead.
LAZY = ("olefile", "msoffcrypto.format.xls97", "msoffcrypto.method.xor_obfuscation")

# Output version (archives re-extract what an older one made): 2 = encrypted XLS opened
# with Excel's default password; 3 = an ODS's header and footer text; 4 = a workbook
# without cells is empty (no sheet names).
FORMAT = Format(
    name="sheets", version=4,
    readers=tuple(Reader(m) for m in (d.XLSX, d.XLSM, d.XLTX, d.XLSB, d.XLS, d.ODS,
                                      d.ODS + "-template")),
    # A bare BIFF2-5 workbook stream (pre-OLE Excel): a few bytes only, so tried after
    # every longer signature.
    signatures=tuple(Signature(d.XLS, b"\x09" + v, also=((3, b"\x00"),), priority=1)
                     for v in (b"\x00", b"\x02", b"\x04", b"\x08")),
    hints={"xlsx": d.XLSX, "xlsm": d.XLSM, "xltx": d.XLTX, "xlsb": d.XLSB, "xls": d.XLS,
           "ods": d.ODS},
)

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_BIFF_FILEPASS = 0x002F
_BIFF_EOF = 0x000A

Cell = int | float | str | bool | dt.date | dt.datetime | dt.time | dt.timedelta


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """Every sheet in workbook order (hidden ones too): a heading, then its table."""
    head = src.head(8)
    if head == _OLE_MAGIC and _encrypted_xls(src):
        from .encrypted import decrypt_legacy

        src = decrypt_legacy(src, ctx, doc, "workbook")
    elif head[:2] in _BIFF_BOF and head[2:4] in (b"\x04\x00", b"\x06\x00"):
        _extract_old_biff(src.read(), doc, out)
        return
    elif head[:2] == b"PK" and "opendocument" in (doc.mime_type or ""):
        from .odfcrypt import plain_source

        src = plain_source(src, ctx, doc)  # a password-protected ODS: decrypted
    if head == _OLE_MAGIC and not in_worker():
        _read_contained(src, ctx, doc, out)
    else:
        _read_workbook(src, doc, out)
    if head[:2] == b"PK" and "opendocument" in (doc.mime_type or ""):
        from .odf import master_page_texts  # a sheet's printed header and footer (styles.xml)

        for text in (t for texts in master_page_texts(src, ctx) for t in texts):
            out.paragraph(text)


def _read_contained(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """An XLS read in the caller's own process (the API, not a worker) goes through a
    helper process with a memory cap: calamine's OLE reader trusts damaged sector counts
    and allocates gigabytes, and the kernel's OOM killer would take the caller down."""
    where = str(src.path) if src.path is not None else src.read()
    try:
        got_doc, got_out = call_isolated(_read_detached, where, doc, out,
                                         timeout=ctx.options.timeout,
                                         memory=ctx.options.memory_limit)
    except CallDied as exc:
        raise ExtractionError(ErrorKind.CORRUPT, "the spreadsheet reader died on this "
                              "damaged workbook (an impossible size in it)") from exc
    except JobsTimeout as exc:
        raise ExtractionError(ErrorKind.TIMEOUT, "reading the workbook took too long") from exc
    doc.__dict__.update(got_doc.__dict__)
    out.__dict__.update(got_out.__dict__)


def _read_detached(where: str | bytes, doc: Document, out: Builder
                   ) -> tuple[Document, Builder]:
    """``_read_workbook`` in the helper process: the file comes as a path or its bytes,
    the document and builder as copies, sent back filled."""
    src = Source.from_bytes(where) if isinstance(where, bytes) else Source.from_path(where)
    _read_workbook(src, doc, out)
    return doc, out


def _read_workbook(src: Source, doc: Document, out: Builder) -> None:
    wb = _open(src)
    names: list[str] = []
    hidden: list[str] = []
    sheets: list[list[tuple[str, ...]]] = []
    try:
        metas = wb.sheets_metadata
        for index, meta in enumerate(metas):
            names.append(meta.name)
            if meta.visible != pc.SheetVisibleEnum.Visible:
                hidden.append(meta.name)
            rows: list[tuple[str, ...]] = []
            if meta.typ in (pc.SheetTypeEnum.WorkSheet, pc.SheetTypeEnum.DialogSheet,
                            pc.SheetTypeEnum.MacroSheet):
                # chart sheets hold no cells; calamine cannot read some of them
                rows = _read_sheet(wb, index, meta.name, doc)
            sheets.append(rows)
    finally:
        wb.close()
    # Sheet names are labels, not content: a workbook whose sheets hold no cell at all
    # is empty, not a document whose text is "Sheet1".
    if any(sheets):
        for index, (name, rows) in enumerate(zip(names, sheets, strict=True)):
            out.start_page(index + 1)
            out.heading(name, 2)
            if rows:
                out.table(rows)
    doc.metadata.page_count = len(names)
    doc.metadata.extra["sheets"] = names
    if hidden:
        doc.metadata.extra["hidden_sheets"] = hidden


# BIFF2-4 (Excel 2.x-4.0) worksheets are a bare record stream, not an OLE file: calamine
# cannot open them, so read their cell records directly (labels, numbers, RKs, booleans).
_BIFF_BOF = (b"\x09\x00", b"\x09\x02", b"\x09\x04")
_BIFF_CODEPAGE = 0x0042


def _biff_value(rtype: int, body: bytes, codepage: str) -> tuple[int, int, str] | None:
    if len(body) < 4:
        return None
    row, col = struct.unpack_from("<HH", body)
    if rtype == 0x0204 and len(body) >= 8:  # LABEL (BIFF3-4)
        n = struct.unpack_from("<H", body, 6)[0]
        return row, col, body[8:8 + n].decode(codepage, "replace")
    if rtype == 0x0004 and len(body) >= 8:  # LABEL (BIFF2)
        return row, col, body[8:8 + body[7]].decode(codepage, "replace")
    if rtype == 0x0203 and len(body) >= 14:  # NUMBER
        return row, col, _FLOAT(struct.unpack_from("<d", body, 6)[0])
    if rtype == 0x0003 and len(body) >= 15:  # NUMBER (BIFF2)
        return row, col, _FLOAT(struct.unpack_from("<d", body, 7)[0])
    if rtype == 0x027E and len(body) >= 10:  # RK
        return row, col, _FLOAT(_rk(struct.unpack_from("<I", body, 6)[0]))
    if rtype == 0x0002 and len(body) >= 9:  # INTEGER (BIFF2)
        return row, col, str(struct.unpack_from("<H", body, 7)[0])
    if rtype == 0x0205 and len(body) >= 8 and body[7] == 0:  # BOOLERR: booleans only
        return row, col, "TRUE" if body[6] else "FALSE"
    return None


def _rk(rk: int) -> float:
    """An RK number: a 30-bit integer or the top of a double, optionally divided by 100."""
    if rk & 2:
        num = float(struct.unpack("<i", struct.pack("<I", rk & 0xFFFFFFFC))[0] >> 2)
    else:
        num = struct.unpack("<d", struct.pack("<Q", (rk & 0xFFFFFFFC) << 32))[0]
    return num / 100 if rk & 1 else num


def _extract_old_biff(data: bytes, doc: Document, out: Builder) -> None:
    cells: dict[tuple[int, int], str] = {}
    codepage = "cp1252"
    pos = 0
    while pos + 4 <= len(data):
        rtype, rlen = struct.unpack_from("<HH", data, pos)
        body = data[pos + 4:pos + 4 + rlen]
        pos += 4 + rlen
        if rtype == _BIFF_EOF:
            break
        if rtype == _BIFF_CODEPAGE and len(body) >= 2:
            cp = struct.unpack_from("<H", body)[0]
            codepage = f"cp{cp}" if cp not in (0x8000, 0x8001, 1200, 367) else "cp1252"
            try:
                "".encode(codepage)
            except LookupError:
                codepage = "cp1252"
            continue
        value = _biff_value(rtype, body, codepage)
        if value is not None and value[2]:
            cells[value[0], value[1]] = value[2]
    if not cells:
        raise ExtractionError(ErrorKind.CORRUPT, "BIFF2-4 worksheet holds no readable cells")
    nrows = max(r for r, _ in cells) + 1
    ncols = max(c for _, c in cells) + 1
    if nrows * ncols > 10_000_000:
        raise ExtractionError(ErrorKind.TOO_LARGE, "BIFF worksheet range is too large")
    grid = [[""] * ncols for _ in range(nrows)]
    for (r, c), v in cells.items():
        grid[r][c] = v
    out.start_page(1)
    out.table(grid)
    doc.metadata.page_count = 1
    doc.metadata.extra["sheets"] = ["Sheet1"]  # a BIFF2-4 worksheet file has no sheet name
    doc.metadata.extra["biff"] = "2-4"


def _open(src: Source) -> pc.CalamineWorkbook:
    try:
        if src.path is not None:
            return pc.CalamineWorkbook.from_path(str(src.path))
        return pc.CalamineWorkbook.from_filelike(io.BytesIO(src.read()))
    except pc.PasswordError as exc:
        raise ExtractionError(ErrorKind.ENCRYPTED, "password-protected workbook") from exc
    except (pc.CalamineError, OSError, ValueError) as exc:
        raise _map_error(exc) from exc


def _read_sheet(wb: pc.CalamineWorkbook, index: int, name: str, doc: Document
                ) -> list[tuple[str, ...]]:
    try:
        raw = wb.get_sheet_by_index(index).to_python()
    except pc.PasswordError as exc:
        raise ExtractionError(ErrorKind.ENCRYPTED, "the sheet is encrypted") from exc
    except (pc.CalamineError, OSError, ValueError) as exc:
        err = _map_error(exc)
        if err.kind is ErrorKind.TOO_LARGE:
            raise err from exc
        doc.warnings.append(f"sheet {name!r} could not be read: {exc}")
        return []
    return _format_rows(raw)


def _map_error(exc: Exception) -> ExtractionError:
    msg = str(exc) or type(exc).__name__
    if "limit exceeded" in msg.lower():
        return ExtractionError(ErrorKind.TOO_LARGE, f"spreadsheet too large: {msg}")
    return ExtractionError(ErrorKind.CORRUPT, f"damaged spreadsheet: {msg}")


def _encrypted_xls(src: Source) -> bool:
    """BIFF8 with a FILEPASS record: cells are RC4/XOR-scrambled and calamine would
    either fail with a misleading codepage error or return garbage."""
    try:
        ole = src.ole()  # parsed by detection already
        stream = next((s for s in ("Workbook", "Book") if ole.exists(s)), None)
        if stream is None:
            return False
        data = stream_head(ole, stream, 4096)
    except Exception:  # a damaged container is calamine's to judge
        return False
    pos = 0
    while pos + 4 <= len(data):
        rtype, rlen = struct.unpack_from("<HH", data, pos)
        if rtype == _BIFF_FILEPASS:
            return True
        if rtype == _BIFF_EOF:
            return False
        pos += 4 + rlen
    return False


# -- values as a person sees them ------------------------------------------------------
def _fmt(v: Cell) -> str:
    t = type(v)
    if t is float:
        return _FLOAT(v)
    if t is bool:
        return "TRUE" if v else "FALSE"
    if t is int:
        return str(v)
    # Exact types (a bool is an int; a datetime a date), so mypy is told what ``t`` found.
    if t is dt.datetime:
        when = cast(dt.datetime, v)
        return when.isoformat(sep=" ") if when.time() != dt.time() else when.date().isoformat()
    if t is dt.date or t is dt.time:
        return cast("dt.date | dt.time", v).isoformat()
    if t is dt.timedelta:
        secs = int(cast(dt.timedelta, v).total_seconds())
        sign, secs = ("-", -secs) if secs < 0 else ("", secs)
        return f"{sign}{secs // 3600}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    return str(v)


def _format_rows(raw: Sequence[Sequence[Cell]]) -> list[tuple[str, ...]]:
    """Cells to strings; drop trailing empty rows and columns (the used range's slack).

    Works column by column: a column is usually of one type, so it is formatted with one
    C-level ``map`` instead of a Python-level branch per cell (1M cells in ~0.2 s)."""
    if not raw:
        return []
    width = max(map(len, raw))
    if any(len(r) != width for r in raw):
        raw = [list(r) + [""] * (width - len(r)) for r in raw]
    cols = [_format_column(c) for c in zip(*raw, strict=True)]
    while cols and not any(cols[-1]):
        cols.pop()
    if not cols:
        return []
    rows = list(zip(*cols, strict=True))
    filled = list(map(any, rows))
    last = len(filled) - filled[::-1].index(True) if True in filled else 0
    del rows[last:]
    return rows


_FLOAT = "{:.15g}".format  # Excel shows 15 significant digits: 0.1+0.2 -> 0.3, 3.0 -> 3


_COLUMN_FORMAT: dict[type, Callable[[Any], str]] = {
    float: _FLOAT,
    int: str,
    bool: {True: "TRUE", False: "FALSE"}.__getitem__,
    dt.date: dt.date.isoformat,
    dt.time: dt.time.isoformat,
}


def _format_column(col: Sequence[Cell]) -> Sequence[str]:
    kinds = set(map(type, col))
    if kinds <= {str}:
        return col  # type: ignore[return-value]
    if len(kinds) == 1:
        fast = _COLUMN_FORMAT.get(next(iter(kinds)))
        if fast is not None:
            return list(map(fast, col))
    if kinds <= {str, float}:
        return [c if type(c) is str else _FLOAT(c) for c in col]
    return [c if type(c) is str else _fmt(c) for c in col]
