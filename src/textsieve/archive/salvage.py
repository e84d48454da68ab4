"""Rows of a damaged SQLite file read straight from its pages, where SQLite's own reading
stops: the row-by-row copy of ``check.repair`` gets every row SQLite can still reach
through its b-trees, and this finds the rest. One damaged interior page hides every leaf
below it (a third of an archive's items, say) although those leaves are whole.

What SQLite's ``.recover`` does, for the tables of an archive (Debian's ``sqlite3`` is built
without the ``sqlite_dbpage`` table that ``.recover`` needs, and Python's ``sqlite3`` has no
recovery API): each table's b-tree is walked from its root page as far as its pages make
sense; then every page that is a whole table leaf but that no walk reached and that is
not on the free list (a leaf cut off by a damaged parent) is read too, and its rows go to
the one table whose columns they fit. Every row found is checked against its table's
columns (count, NOT NULL, declared types), so a page of garbage that happens to look like
a leaf yields nothing; the caller inserts with ``OR IGNORE`` (what SQLite read wins) and
still drops rows whose contents do not read (``check._drop_damaged``).

The file format is SQLite's documented, stable one (https://www.sqlite.org/fileformat.html):
pages, b-tree page headers, cells, varints, records, overflow chains, the free list.
The file must have no write-ahead log left (``check`` checkpoints a scratch copy first).
"""

from __future__ import annotations

import logging
import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_TABLE_INTERIOR, _TABLE_LEAF = 5, 13
_MAX_CHAIN = 1 << 20  # overflow pages followed at most for one row (1 M: 4 GB at 4 KiB)

Value = int | float | str | bytes | None


@dataclass
class Column:
    """One stored column of a table (virtual generated columns are not stored)."""

    name: str
    type: str  # the declared type, upper case
    notnull: bool
    ipk: bool  # INTEGER PRIMARY KEY: the rowid, stored as NULL in the record


@dataclass
class Table:
    name: str
    root: int  # root page in the damaged file
    columns: list[Column]
    # Records written before an ``ALTER TABLE ADD COLUMN`` lack the columns added: a
    # record may hold this many values and up to all of them.
    min_values: int
    insertable: frozenset[str] = frozenset()  # all but stored generated columns


class Pages:
    """The pages of an SQLite file without a write-ahead log, read with a bound check."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as f:  # mapped, not read: an archive may be gigabytes
            self.data: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if len(self.data) < 100 or self.data[:16] != b"SQLite format 3\0":
            raise ValueError("not an SQLite file")
        size = struct.unpack(">H", self.data[16:18])[0]
        self.size = 65536 if size == 1 else size
        if self.size < 512 or self.size & (self.size - 1):
            raise ValueError(f"page size {self.size} is not one SQLite makes")
        self.usable = self.size - self.data[20]
        self.count = len(self.data) // self.size  # a truncated file: what is left of it
        if self.data[56:60] not in (b"\0\0\0\0", b"\0\0\0\1"):
            raise ValueError("not UTF-8 (archives are)")

    def page(self, n: int) -> bytes | None:
        if not 1 <= n <= self.count:
            return None
        return self.data[(n - 1) * self.size:n * self.size]

    def free(self) -> set[int]:
        """Pages on the free list (their rows are deleted ones), as far as it reads."""
        out: set[int] = set()
        trunk = struct.unpack(">I", self.data[32:36])[0]
        while trunk and trunk not in out:
            page = self.page(trunk)
            if page is None:
                break
            out.add(trunk)
            nxt, n = struct.unpack(">II", page[:8])
            if n > (self.usable - 8) // 4:
                break
            out.update(struct.unpack(f">{n}I", page[8:8 + 4 * n]))
            trunk = nxt
        return out


def _varint(b: bytes, i: int) -> tuple[int, int]:
    """An SQLite varint at ``b[i]``: (value, next index). IndexError past the end."""
    v = 0
    for k in range(8):
        c = b[i + k]
        v = (v << 7) | (c & 0x7F)
        if c < 0x80:
            return v, i + k + 1
    return (v << 8) | b[i + 8], i + 9


def _header(page: bytes, n: int) -> tuple[int, int, int]:
    """(page type, cell count, where the cell pointers start) of b-tree page ``n``."""
    at = 100 if n == 1 else 0
    kind = page[at]
    cells = struct.unpack(">H", page[at + 3:at + 5])[0]
    return kind, cells, at + (12 if kind in (2, 5) else 8)


def _cells(page: bytes, n: int, usable: int) -> list[int]:
    """Offsets of a b-tree page's cells, [] when its header does not make sense."""
    try:
        _kind, cells, start = _header(page, n)
    except (IndexError, struct.error):
        return []
    if start + 2 * cells > usable:
        return []
    offsets = list(struct.unpack(f">{cells}H", page[start:start + 2 * cells]))
    if any(not start + 2 * cells <= o < usable for o in offsets):
        return []
    return offsets


def _children(page: bytes, n: int, usable: int) -> list[int]:
    """Child pages of a table interior page."""
    offsets = _cells(page, n, usable)
    at = 100 if n == 1 else 0
    out = [struct.unpack(">I", page[o:o + 4])[0] for o in offsets if o + 4 <= usable]
    out.append(struct.unpack(">I", page[at + 8:at + 12])[0])
    return out


def _payload(pages: Pages, page: bytes, o: int) -> tuple[int, bytes] | None:
    """(rowid, whole record) of the table leaf cell at ``o``; None if it does not read."""
    u = pages.usable
    try:
        size, i = _varint(page, o)
        rowid, i = _varint(page, i)
    except IndexError:
        return None
    if rowid >= 1 << 63:
        rowid -= 1 << 64
    x = u - 35
    if size <= x:
        local = size
    else:
        m = (u - 12) * 32 // 255 - 23
        k = m + (size - m) % (u - 4)
        local = k if k <= x else m
    if i + local + (4 if local < size else 0) > u:
        return None
    out = bytearray(page[i:i + local])
    if local < size:
        nxt = struct.unpack(">I", page[i + local:i + local + 4])[0]
        seen: set[int] = set()
        while len(out) < size:
            over = pages.page(nxt)
            if over is None or nxt in seen or len(seen) > _MAX_CHAIN:
                return None  # a broken chain: the row cannot be whole
            seen.add(nxt)
            out += over[4:u][:size - len(out)]
            nxt = struct.unpack(">I", over[:4])[0]
    return rowid, bytes(out)


def _record(data: bytes) -> list[Value] | None:
    """The values of a record; None if it is not one."""
    try:
        end, i = _varint(data, 0)
        if not 1 <= end <= len(data):
            return None
        types = []
        while i < end:
            t, i = _varint(data, i)
            types.append(t)
        if i != end:
            return None
        out: list[Value] = []
        p = end
        for t in types:
            if t == 0:
                out.append(None)
            elif 1 <= t <= 6:
                n = (1, 2, 3, 4, 6, 8)[t - 1]
                out.append(int.from_bytes(data[p:p + n], "big", signed=True))
                p += n
            elif t == 7:
                out.append(struct.unpack(">d", data[p:p + 8])[0])
                p += 8
            elif t in (8, 9):
                out.append(t - 8)
            elif t >= 12:
                n = (t - 12) // 2
                raw = data[p:p + n]
                if len(raw) != n:
                    return None
                out.append(raw if t % 2 == 0 else raw.decode("utf-8"))
                p += n
            else:
                return None  # 10 and 11 are reserved
        return out if p == len(data) else None
    except (IndexError, UnicodeDecodeError, struct.error):
        return None


def _fits(table: Table, rowid: int, values: list[Value]) -> dict[str, Value] | None:
    """The row as column -> value if ``values`` fit the table's columns, else None."""
    cols = table.columns
    if not table.min_values <= len(values) <= len(cols):
        return None
    row: dict[str, Value] = {}
    for col, v in zip(cols, values, strict=False):
        if col.ipk:
            if v is not None:
                return None
            v = rowid
        elif v is None:
            if col.notnull:
                return None
        elif "INT" in col.type:
            if not isinstance(v, int):
                return None
        elif "CHAR" in col.type or "CLOB" in col.type or "TEXT" in col.type:
            if not isinstance(v, str):
                return None
        elif "BLOB" in col.type:
            if not isinstance(v, bytes):
                return None
        elif ("REAL" in col.type or "FLOA" in col.type or "DOUB" in col.type) and \
                not isinstance(v, (int, float)):
            return None
        row[col.name] = v
    if not any(c.ipk for c in cols):
        row["rowid"] = rowid
    return row


def _leaf_rows(pages: Pages, n: int) -> Iterator[tuple[int, list[Value]]]:
    page = pages.page(n)
    if page is None:
        return
    for o in _cells(page, n, pages.usable):
        cell = _payload(pages, page, o)
        if cell is None:
            continue
        values = _record(cell[1])
        if values is not None:
            yield cell[0], values


def _walk(pages: Pages, root: int) -> list[int]:
    """The leaf pages of the b-tree at ``root``, as far as its interior pages read."""
    leaves, todo, seen = [], [root], set()
    while todo:
        n = todo.pop()
        page = pages.page(n)
        if page is None or n in seen:
            continue
        seen.add(n)
        kind = page[100 if n == 1 else 0]
        if kind == _TABLE_LEAF:
            leaves.append(n)
        elif kind == _TABLE_INTERIOR:
            todo.extend(_children(page, n, pages.usable))
    return leaves


def rows(path: Path, tables: list[Table]) -> Iterator[tuple[Table, dict[str, Value]]]:
    """Every row of ``tables`` found in the pages of ``path``: first each table's own
    leaves, then the leaves no table reaches any more (to the one table they fit)."""
    pages = Pages(path)
    claimed: set[int] = set()  # leaves with rows of the table whose tree reaches them
    for table in tables:
        for n in _walk(pages, table.root):
            for rowid, values in _leaf_rows(pages, n):
                row = _fits(table, rowid, values)
                if row is not None:
                    claimed.add(n)
                    yield table, row
    free = pages.free()
    for n in range(1, pages.count + 1):
        if n in claimed or n in free:
            continue
        page = pages.page(n)
        if page is None or page[100 if n == 1 else 0] != _TABLE_LEAF:
            continue
        found = list(_leaf_rows(pages, n))
        if not found:
            continue
        # The page goes to the one table all its rows fit: a leaf holds rows of one table.
        owners = [t for t in tables if all(_fits(t, r, v) is not None for r, v in found)]
        if len(owners) != 1:
            logger.debug("page %d: %d tables fit its rows; left alone", n, len(owners))
            continue
        for rowid, values in found:
            row = _fits(owners[0], rowid, values)
            if row is not None:
                yield owners[0], row
