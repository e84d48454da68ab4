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
from typing import Any

import python_calamine as pc

from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder
from ..source import Source
from . import Context

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_BIFF_FILEPASS = 0x002F
_BIFF_EOF = 0x000A

Cell = int | float | str | bool | dt.date | dt.datetime | dt.time | dt.timedelta


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """Every sheet in workbook order (hidden ones too): a heading, then its table."""
    if src.head(8) == _OLE_MAGIC:
        _refuse_encrypted_xls(src, ctx)
    wb = _open(src, ctx)
    names: list[str] = []
    hidden: list[str] = []
    try:
        metas = wb.sheets_metadata
        for index, meta in enumerate(metas):
            names.append(meta.name)
            if meta.visible != pc.SheetVisibleEnum.Visible:
                hidden.append(meta.name)
            out.start_page(index + 1)
            out.heading(meta.name, 2)
            if meta.typ not in (pc.SheetTypeEnum.WorkSheet, pc.SheetTypeEnum.DialogSheet,
                                pc.SheetTypeEnum.MacroSheet):
                continue  # chart sheets hold no cells; calamine cannot read some of them
            rows = _read_sheet(wb, index, meta.name, doc)
            if rows:
                out.table(rows)
    finally:
        wb.close()
    doc.metadata.page_count = len(names)
    doc.metadata.extra["sheets"] = names
    if hidden:
        doc.metadata.extra["hidden_sheets"] = hidden


def _open(src: Source, ctx: Context) -> pc.CalamineWorkbook:
    try:
        if src.path is not None:
            return pc.CalamineWorkbook.from_path(str(src.path))
        return pc.CalamineWorkbook.from_filelike(io.BytesIO(src.read()))
    except pc.PasswordError as exc:
        raise ExtractionError(ErrorKind.ENCRYPTED, _encrypted_msg(ctx)) from exc
    except (pc.CalamineError, OSError, ValueError) as exc:
        raise _map_error(exc) from exc


def _read_sheet(wb: pc.CalamineWorkbook, index: int, name: str, doc: Document
                ) -> list[list[str]]:
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


def _encrypted_msg(ctx: Context) -> str:
    if ctx.options.password:
        return "password-protected workbook; decrypting it is not supported"
    return "password-protected workbook"


def _refuse_encrypted_xls(src: Source, ctx: Context) -> None:
    """BIFF8 with a FILEPASS record: cells are RC4/XOR-scrambled and calamine would
    either fail with a misleading codepage error or return garbage."""
    import olefile

    try:
        with src.open() as f, olefile.OleFileIO(f) as ole:
            stream = next((s for s in ("Workbook", "Book") if ole.exists(s)), None)
            if stream is None:
                return
            data = ole.openstream(stream).read(1 << 18)
    except Exception:  # a damaged container is calamine's to judge
        return
    pos = 0
    while pos + 4 <= len(data):
        rtype, rlen = struct.unpack_from("<HH", data, pos)
        if rtype == _BIFF_FILEPASS:
            raise ExtractionError(ErrorKind.ENCRYPTED, _encrypted_msg(ctx))
        if rtype == _BIFF_EOF:
            return
        pos += 4 + rlen


# -- values as a person sees them ------------------------------------------------------
def _fmt(v: Cell) -> str:
    t = type(v)
    if t is float:
        return _FLOAT(v)
    if t is bool:
        return "TRUE" if v else "FALSE"
    if t is int:
        return str(v)
    if t is dt.datetime:
        return v.isoformat(sep=" ") if v.time() != dt.time() else v.date().isoformat()
    if t is dt.date or t is dt.time:
        return v.isoformat()
    if t is dt.timedelta:
        secs = int(v.total_seconds())
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
