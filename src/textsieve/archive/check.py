"""`textsieve check [--repair]`: is the archive whole, and rebuilding it when it is not.

SQLite's own checks see a broken tree (``integrity_check``: every page, every index entry
against its row), but not a flipped byte inside a stored value: a compressed text that no
longer decompresses, a key that is no longer UTF-8, a metadata field that is no longer JSON.
So the check also reads every row the way the commands do, and compares the full-text
index's list of documents with the rows.

The repair never edits the damaged file: it copies it aside (``FILE.bak``), folds its
write-ahead log into a scratch copy, copies every row SQLite can read into a fresh file with
the same schema (which rebuilds every index), reading leniently (a truncated file is read
as far as it goes), then reads the rows SQLite can no longer reach straight from the pages
(``salvage``: a damaged interior page hides whole leaves), drops the top-level items any
damaged row belongs to (the next ``textsieve run`` extracts them again, as new), rebuilds
the full-text index from the rows, checks the result, and only then puts it in place of
the original.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import zstandard

from ..model import ErrorKind, Status
from . import originals, salvage, schema
from .store import ArchiveError, check_file, integrity_problems

logger = logging.getLogger(__name__)

_MAX_PROBLEMS = 20  # damaged rows reported one a line; more only lengthen the message
_CHUNK = 256  # rows copied per statement during a repair
# The columns that hold zstd-compressed texts, per table (the rest are text or numbers);
# ``originals.data`` is zstd of any bytes, checked apart (``originals.problems``).
_BLOBS = {"items": ("text", "markdown", "pages"), "captures": ("text", "markdown")}
# JSON columns, per table, and what a damaged one is reset to (instead of losing the row).
_JSON = {"items": ("metadata", "warnings"), "runs": ("options", "sources", "counts"),
         "mails": ("labels",)}
_RESET = {"runs": {"options": "{}", "sources": "[]", "counts": "{}"}}


@dataclass
class Report:
    """What a check found: one line per problem (empty: the archive is whole)."""

    items: int = 0
    problems: list[str] = field(default_factory=list)
    damaged_items: set[int] = field(default_factory=set)  # rows of `items` that cannot be read

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class RepairReport:
    backup: Path
    kept: int  # items (all levels) in the repaired archive
    dropped: int  # items dropped: damaged, or part of a damaged top-level item
    lost_rows: int  # rows of any table that could not be read at all (at most)
    salvaged: int = 0  # rows SQLite could no longer reach, read from the pages


def _unzstd() -> Callable[[bytes | None], str]:
    zd = zstandard.ZstdDecompressor()
    return lambda b: zd.decompress(b).decode("utf-8") if b else ""


def _connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    uri = f"file:{path}" + ("?mode=ro" if readonly else "")
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    conn.create_function("ts_unzstd", 1, _unzstd(), deterministic=True)
    if readonly:
        _lenient(conn)
    return conn


def _lenient(conn: sqlite3.Connection) -> None:
    """Read what can be read of a damaged file: with ``writable_schema`` SQLite takes a
    file shorter than its header says (truncated, a lost tail) at its real length
    instead of refusing it whole, and skips schema entries it cannot parse. Only ever on
    connections that do not write to the damaged file."""
    conn.execute("PRAGMA writable_schema = ON")


def check(path: str | os.PathLike[str]) -> Report:
    """Every check there is, read-only: SQLite's ``integrity_check``, every row readable,
    the full-text index in step with the rows."""
    path = Path(path)
    if not path.exists():
        raise ArchiveError(f"{path}: no such archive")
    check_file(path)
    conn = _connect(path, readonly=True)
    report = Report()
    try:
        _check_ours(conn, path)
        report.problems += integrity_problems(conn)
        try:
            report.items = conn.execute("SELECT count(*) FROM items").fetchone()[0]
            damaged, lines = _unreadable_rows(conn)
            report.damaged_items |= damaged
            report.problems += lines
            report.problems += _fts_out_of_step(conn)
            report.problems += originals.problems(conn, path)
        except sqlite3.DatabaseError as exc:
            report.problems.append(str(exc))
    finally:
        conn.close()
    report.problems = list(dict.fromkeys(report.problems))  # each problem once, in order
    return report


def _check_ours(conn: sqlite3.Connection, path: Path) -> None:
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise ArchiveError(f"{path}: damaged beyond repair: {exc}") from exc
    if app_id != schema.APPLICATION_ID:
        raise ArchiveError(f"{path}: an SQLite database, but not a textsieve archive")
    if version > schema.VERSION:
        raise ArchiveError(f"{path}: made by a newer textsieve (schema {version})")


def _tables(conn: sqlite3.Connection, db: str = "main") -> list[tuple[str, bool]]:
    """(name, has rowid) of the archive's own tables, parents before children."""
    rows = conn.execute(f"SELECT name, sql FROM {db}.sqlite_master WHERE type = 'table' "
                        "AND name NOT LIKE 'items_fts%' AND name NOT LIKE 'sqlite_%' "
                        "ORDER BY rootpage").fetchall()
    order = ["meta", "runs", "sources", "items", "provenance", "mails", "item_mails",
             "source_state", "originals", "captures", "checks"]
    rows.sort(key=lambda r: order.index(r[0]) if r[0] in order else len(order))
    return [(name, "WITHOUT ROWID" not in (sql or "").upper()) for name, sql in rows]


def _columns(conn: sqlite3.Connection, table: str, db: str = "main") -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA {db}.table_info({table})")]


def _row_problem(table: str, row: dict[str, object], unzstd: Callable[[bytes], str]
                 ) -> str | None:
    """Why a row (read with bytes for text) cannot be used as the commands read it."""
    for col, value in row.items():
        if not isinstance(value, bytes):
            continue
        try:
            if col in _BLOBS.get(table, ()):
                unzstd(value)
            elif table == "originals" and col == "data":
                continue  # any bytes, read back and hashed by originals.problems
            else:
                text = value.decode("utf-8")
                if col in _JSON.get(table, ()):
                    json.loads(text)
        except (zstandard.ZstdError, UnicodeDecodeError, ValueError) as exc:
            return f"{col}: {type(exc).__name__}: {exc}"
    if table == "items":
        try:
            Status(_s(row["status"]))
            if row["error_kind"] is not None:
                ErrorKind(_s(row["error_kind"]))
        except ValueError as exc:
            return f"status: {exc}"
    return None


def _s(v: object) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _unreadable_rows(conn: sqlite3.Connection) -> tuple[set[int], list[str]]:
    """Item ids whose row cannot be read, and one line per damaged row of any table."""
    unzstd = _unzstd()
    damaged: set[int] = set()
    lines: list[str] = []
    tables = [(t, _columns(conn, t)) for t, _rowid in _tables(conn)]
    old = conn.text_factory
    conn.text_factory = bytes
    try:
        for table, cols in tables:
            for values in conn.execute(f"SELECT {', '.join(cols)} FROM {table}"):
                row = dict(zip(cols, values, strict=True))
                why = _row_problem(table, row, unzstd)
                if why is None:
                    continue
                if table == "items":
                    damaged.add(int(row["id"]))
                if len(lines) < _MAX_PROBLEMS:
                    lines.append(f"{table} row {row.get('id', '?')}: cannot be read ({why})")
    finally:
        conn.text_factory = old
    return damaged, lines


def _fts_out_of_step(conn: sqlite3.Connection) -> list[str]:
    """Rows the full-text index lacks, or holds without a row: the index no longer matches."""
    missing = conn.execute(
        "SELECT count(*) FROM items WHERE (text IS NOT NULL OR title IS NOT NULL) AND id NOT "
        "IN (SELECT id FROM items_fts_docsize)").fetchone()[0]
    extra = conn.execute("SELECT count(*) FROM items_fts_docsize WHERE id NOT IN "
                         "(SELECT id FROM items)").fetchone()[0]
    out = []
    if missing:
        out.append(f"full-text index: {missing} item(s) missing from it")
    if extra:
        out.append(f"full-text index: {extra} entr(ies) for items that do not exist")
    return out


# -- repair -------------------------------------------------------------------------------------
def repair(path: str | os.PathLike[str]) -> RepairReport:
    """Rebuild a damaged archive from its readable rows, keeping the original as a backup.

    Refused while another process writes to the archive (a ``textsieve run``): it holds
    the write lock from the backup to the end of the copy, so nothing is written meanwhile.
    """
    path = Path(path)
    if not path.exists():
        raise ArchiveError(f"{path}: no such archive")
    check_file(path)
    probe = _connect(path, readonly=True)
    try:
        _check_ours(probe, path)
        version = probe.execute("PRAGMA user_version").fetchone()[0]
    finally:
        probe.close()
    new_path = path.with_name(path.name + ".repair")
    lock = _write_lock(path)
    try:
        backup = _backup(path)
        report = _rebuild(path, new_path, version, backup)
    finally:
        lock.close()  # before the swap: closing must not touch the new file's neighbours
    for suffix in ("-wal", "-shm"):  # they belong to the damaged file, not to the new one
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    os.replace(new_path, path)
    return report


def _write_lock(path: Path) -> sqlite3.Connection:
    """Take the archive's write lock (no waiting): a run writing to it is told apart from
    damage, which may keep even the lock from being taken (then there is no writer)."""
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            conn.close()
            raise ArchiveError(f"{path}: in use by another process (a run writing to it?); "
                               "repair it once that is done") from exc
    except sqlite3.DatabaseError:
        pass
    return conn


def _rebuild(path: Path, new_path: Path, version: int, backup: Path) -> RepairReport:
    """Copy the readable rows of ``path`` into a fresh archive at ``new_path``: what
    SQLite reads row by row, then what only the pages still hold (``salvage``)."""
    for p in (new_path, Path(f"{new_path}-wal"), Path(f"{new_path}-journal")):
        p.unlink(missing_ok=True)
    source = _scratch(backup, path.with_name(path.name + ".repair-src"))
    new = _connect(new_path, readonly=False)
    try:
        schema.migrate(new, target=version)
        _lenient(new)  # reads the old file as far as it goes (the new one is not written
        new.execute("ATTACH DATABASE ? AS old", (f"file:{source}?mode=ro",))  # by hand)
        missing = {t: _copy_table(new, t, rowid) for t, rowid in _tables(new)}
        new.execute("DETACH DATABASE old")
        new.execute("PRAGMA writable_schema = OFF")
        damaged = any(ids is None or ids for ids in missing.values())
        salvaged = _salvage(new, source, missing) if damaged else 0
        lost = sum(_still_missing(new, t, ids) for t, ids in missing.items())
        dropped = _drop_damaged(new)
        new.execute("INSERT INTO items_fts (items_fts) VALUES ('rebuild')")
        left = integrity_problems(new) + _fts_out_of_step(new)
        if left:
            raise ArchiveError(f"{path}: the rebuilt archive is still not whole "
                               f"({left[0]}); the original is unchanged")
        kept = new.execute("SELECT count(*) FROM items").fetchone()[0]
    except BaseException as exc:
        new.close()
        new_path.unlink(missing_ok=True)
        if isinstance(exc, sqlite3.DatabaseError):  # e.g. the schema itself is damaged
            raise ArchiveError(f"{path}: cannot be repaired ({exc}); the original is "
                               f"unchanged, a copy of it is {backup}") from exc
        raise
    finally:
        for p in (source, Path(f"{source}-wal"), Path(f"{source}-shm")):
            p.unlink(missing_ok=True)
    new.close()
    return RepairReport(backup=backup, kept=kept, dropped=dropped, lost_rows=lost,
                        salvaged=salvaged)


def _scratch(backup: Path, at: Path) -> Path:
    """A copy of the damaged file with its write-ahead log folded in (SQLite's own WAL
    recovery and checkpoint: they copy whole pages and need no b-tree to be whole), so
    the row-by-row copy and the page scan read one file in its last committed state."""
    for p in (at, Path(f"{at}-wal"), Path(f"{at}-shm")):
        p.unlink(missing_ok=True)
    shutil.copyfile(backup, at)
    wal = Path(f"{backup}-wal")
    if wal.exists():
        shutil.copyfile(wal, f"{at}-wal")
    conn = sqlite3.connect(at, isolation_level=None)
    try:
        _lenient(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")  # no log left beside it
    except sqlite3.DatabaseError as exc:  # the log could not be folded in: read as it is
        logger.warning("%s: write-ahead log not folded in: %s", backup, exc)
    finally:
        conn.close()
    return at


def _salvage(conn: sqlite3.Connection, source: Path,
             missing: dict[str, set[int] | None]) -> int:
    """Rows the copy could not read, found in the pages of ``source``: inserted where
    nothing was copied (what SQLite read wins); returns how many."""
    roots = _roots(source)
    # Every rowid table of ours, also those copied whole: a page that no tree reaches
    # any more goes to the one table its rows fit, and only a full list can tell.
    tables = [salvage_table(conn, t, roots[t]) for t, rowid in _tables(conn)
              if rowid and t in roots]
    found = 0
    conn.execute("BEGIN")
    try:
        for table, row in salvage.rows(source, tables):
            if missing.get(table.name, set()) == set():
                continue  # copied whole: nothing of it to find
            names = [c for c in row if c in table.insertable]
            cur = conn.execute(
                f"INSERT OR IGNORE INTO main.{table.name} ({', '.join(names)}) "
                f"VALUES ({', '.join('?' * len(names))})", [row[c] for c in names])
            found += max(cur.rowcount, 0)
    except (ValueError, OSError) as exc:  # not a file the page reader can take
        logger.warning("%s: pages not read: %s", source, exc)
    conn.execute("COMMIT")
    return found


def _roots(source: Path) -> dict[str, int]:
    """Root page of each table of the damaged file (its schema, page 1, must read)."""
    conn = _connect(source, readonly=True)
    try:
        return {name: int(root) for name, root in conn.execute(
            "SELECT name, rootpage FROM sqlite_master WHERE type = 'table' AND rootpage > 0")}
    except sqlite3.DatabaseError:
        return {}
    finally:
        conn.close()


def salvage_table(conn: sqlite3.Connection, name: str, root: int) -> salvage.Table:
    """What the page reader needs of table ``name`` (its columns as stored, from the
    rebuilt archive's schema: the same version as the damaged file's)."""
    cols: list[salvage.Column] = []
    insertable: set[str] = set()
    required = 0
    for _cid, col, ctype, notnull, default, pk, hidden in conn.execute(
            f"PRAGMA main.table_xinfo({name})"):
        if hidden == 2:  # a virtual generated column is not stored
            continue
        ipk = bool(pk) and str(ctype).upper() == "INTEGER"
        cols.append(salvage.Column(col, str(ctype).upper(), bool(notnull), ipk))
        if hidden != 3:  # a stored generated column is stored, never inserted
            insertable.add(col)
        if (notnull and default is None) or ipk:
            required = len(cols)  # columns added later have a default or allow NULL
    if sum(1 for c in cols if c.ipk) > 1:  # a composite key: no rowid alias
        for c in cols:
            c.ipk = False
    insertable.add("rowid")
    return salvage.Table(name, root, cols, required, frozenset(insertable))


def _still_missing(conn: sqlite3.Connection, table: str, ids: set[int] | None) -> int:
    """Of the rows the copy could not read, those the page scan did not find either
    (0 when which rows there were is not known)."""
    if ids is None:
        return 0
    if ids == {-1}:
        return 1  # a table without rowids that did not copy: counted once
    return sum(1 for i in ids if conn.execute(
        f"SELECT 1 FROM main.{table} WHERE rowid = ?", (i,)).fetchone() is None)


def _backup(path: Path) -> Path:
    """Copy the archive (and its write-ahead log, which holds committed work) aside."""
    backup = path.with_name(path.name + ".bak")
    n = 1
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.name}.bak{n}")
    shutil.copy2(path, backup)
    wal = Path(f"{path}-wal")
    if wal.exists():
        shutil.copy2(wal, f"{backup}-wal")
    return backup


def _copy_table(conn: sqlite3.Connection, table: str, rowid: bool) -> set[int] | None:
    """Copy what can be read of ``old.table`` into ``main.table``; returns the rowids
    that could not be read ({-1}: a table without rowids that did not copy; None: not
    known, not even its largest rowid reads: the page scan finds what it can)."""
    cols = ", ".join(_columns(conn, table))
    insert = f"INSERT OR IGNORE INTO main.{table} ({cols}) SELECT {cols} FROM old.{table}"
    if not rowid:
        try:
            conn.execute(insert)
            return set()
        except sqlite3.DatabaseError:
            return {-1}  # a damaged table without rowids: what was not copied is lost
    try:
        top = conn.execute(f"SELECT max(rowid) FROM old.{table}").fetchone()[0] or 0
    except sqlite3.DatabaseError:
        return None
    lost: set[int] = set()
    for start in range(1, top + 1, _CHUNK):
        try:
            conn.execute(insert + " WHERE rowid BETWEEN ? AND ?", (start, start + _CHUNK - 1))
            continue
        except sqlite3.DatabaseError:
            pass
        for r in range(start, min(start + _CHUNK, top + 1)):  # row by row around the damage
            try:
                conn.execute(insert + " WHERE rowid = ?", (r,))
            except sqlite3.DatabaseError:
                lost.add(r)
    return lost


def _drop_damaged(conn: sqlite3.Connection) -> int:
    """Drop the top-level items (with all their descendants) that hold an unreadable row
    or lost their parent, and unreadable rows of the other tables; returns items dropped."""
    conn.execute("PRAGMA foreign_keys = ON")  # deleting an item takes its provenance along
    damaged, _ = _unreadable_rows(conn)
    orphans = {r[0] for r in conn.execute(
        "SELECT id FROM items WHERE parent_id IS NOT NULL "
        "AND parent_id NOT IN (SELECT id FROM items)")}
    before = conn.execute("SELECT count(*) FROM items").fetchone()[0]
    roots: set[int] = set()
    for item_id in damaged | orphans:
        roots.add(conn.execute(
            "WITH RECURSIVE up(id, parent) AS (SELECT id, parent_id FROM items WHERE id = ? "
            "UNION ALL SELECT i.id, i.parent_id FROM items i JOIN up ON i.id = up.parent) "
            "SELECT id FROM up WHERE parent IS NULL OR parent NOT IN (SELECT id FROM items)",
            (item_id,)).fetchone()[0])
    conn.execute("BEGIN")
    for root in roots:
        conn.execute("DELETE FROM items WHERE id IN (WITH RECURSIVE d(id) AS (SELECT ? "
                     "UNION ALL SELECT i.id FROM items i JOIN d ON i.parent_id = d.id) "
                     "SELECT id FROM d)", (root,))
    _fix_other_tables(conn)
    _drop_orphans(conn)
    conn.execute("COMMIT")
    return before - conn.execute("SELECT count(*) FROM items").fetchone()[0]


def _drop_orphans(conn: sqlite3.Connection) -> None:
    """Rows that only mean something with a row the repair could not keep (a capture or
    provenance of a lost item, a mail of a lost source): the foreign keys declared ON
    DELETE CASCADE say which. Left, they would collide with what the next run writes
    (a lost item comes back under a free id, and finds a stranger's capture there)."""
    for _ in range(8):  # a deletion may orphan more rows (most cascade at once)
        gone = 0
        for table, _rowid in _tables(conn):
            fks: dict[int, list[tuple[str, str, str | None, str]]] = {}
            for fid, _seq, parent, frm, to, _upd, on_delete, _match in conn.execute(
                    f"PRAGMA foreign_key_list({table})"):
                fks.setdefault(fid, []).append((parent, frm, to, on_delete))
            for cols in fks.values():
                parent = cols[0][0]
                if cols[0][3].upper() != "CASCADE":
                    continue  # the row stands without it (a provenance's lost run)
                match = " AND ".join(f"p.{to or 'rowid'} = {table}.{frm}"
                                     for _, frm, to, _ in cols)
                given = " AND ".join(f"{table}.{frm} IS NOT NULL" for _, frm, _, _ in cols)
                gone += conn.execute(
                    f"DELETE FROM {table} WHERE {given} AND NOT EXISTS "
                    f"(SELECT 1 FROM {parent} AS p WHERE {match})").rowcount
        if not gone:
            return


def _fix_other_tables(conn: sqlite3.Connection) -> None:
    """Unreadable rows outside `items`: a run's JSON is reset (items refer to the run), any
    other row is dropped (a mail, a source and what hangs on it, a sync state: re-made by
    the next run)."""
    unzstd = _unzstd()
    tables = [(t, rowid, _columns(conn, t)) for t, rowid in _tables(conn) if t != "items"]
    conn.text_factory = bytes
    try:
        for table, rowid, cols in tables:
            key = "rowid" if rowid else ", ".join(cols)
            bad = []
            for values in conn.execute(f"SELECT {key}, {', '.join(cols)} FROM {table}"):
                n = 1 if rowid else len(cols)
                row = dict(zip(cols, values[n:], strict=True))
                if _row_problem(table, row, unzstd) is not None:
                    bad.append(values[:n])
            for ident in bad:
                if table in _RESET:
                    sets = ", ".join(f"{c} = '{v}'" for c, v in _RESET[table].items())
                    conn.execute(f"UPDATE {table} SET {sets}, status = 'interrupted' "
                                 "WHERE rowid = ?", ident)
                elif rowid:
                    conn.execute(f"DELETE FROM {table} WHERE rowid = ?", ident)
                else:
                    where = " AND ".join(f"{c} IS ?" for c in cols)
                    conn.execute(f"DELETE FROM {table} WHERE {where}", ident)
    finally:
        conn.text_factory = str
