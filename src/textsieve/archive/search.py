"""Full-text search over the archive (SQLite FTS5, ranked by bm25, with snippets)."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from ..errors import UsageError
from ..terminal import for_terminal
from .store import Archive


class QueryError(UsageError, ValueError):
    """A search query FTS5 cannot parse."""


@dataclass(frozen=True)
class Hit:
    id: int
    where: list[str]  # from the top-level item down to the hit (zip -> member ...)
    title: str | None
    mime_type: str | None
    snippet: str
    rank: float


_BARE = re.compile(r"^[\w\s]+$", re.UNICODE)


def fts_query(text: str) -> str:
    """Plain words are matched as words (all of them, any order, prefix on the last one
    when it ends in ``*``); anything else is passed to FTS5 syntax (phrases, OR, NEAR)."""
    text = text.strip()
    if _BARE.match(text):
        return " ".join(f'"{w}"' for w in text.split())
    return text


@dataclass(frozen=True)
class Filters:
    """What a search may be narrowed to (the reading room's filters); None: any."""

    type: str | None = None  # MIME type
    status: str | None = None  # ok | empty | error
    source: str | None = None  # a source spec, as the run was given it
    mailbox: str | None = None  # a mail source spec or a mail label
    site: str | None = None  # a web host
    since: str | None = None  # YYYY-MM-DD, first seen on or after
    until: str | None = None  # YYYY-MM-DD, first seen on or before
    language: str | None = None


# The host of a web item's key (children's keys start with their parent's): no column needed.
SITE_SQL = ("CASE WHEN i.key LIKE 'http%://%' THEN substr(substr(i.key, instr(i.key, '://') + 3),"
            " 1, instr(substr(i.key, instr(i.key, '://') + 3) || '/', '/') - 1) END")
SORTS = {"relevance": "r", "read": "i.first_seen DESC, i.id DESC",
         "published": "json_extract(i.metadata, '$.created') DESC, i.id DESC"}


def _where(f: Filters) -> tuple[str, list[object]]:
    sql, args = [], []
    for col, value in (("i.mime_type", f.type), ("i.status", f.status),
                       ("json_extract(i.metadata, '$.language')", f.language),
                       (SITE_SQL, f.site)):
        if value:
            sql.append(f"{col} = ?")
            args.append(value)
    if f.since:
        sql.append("i.first_seen >= CAST(strftime('%s', ?) AS REAL)")
        args.append(f.since)
    if f.until:
        sql.append("i.first_seen < CAST(strftime('%s', ?, '+1 day') AS REAL)")
        args.append(f.until)
    if f.source:
        sql.append("EXISTS (SELECT 1 FROM provenance p JOIN sources s ON s.id = p.source_id "
                   "WHERE p.item_id = i.id AND s.spec = ?)")
        args.append(f.source)
    if f.mailbox:
        sql.append("EXISTS (SELECT 1 FROM item_mails im JOIN mails m ON m.id = im.mail_id "
                   "JOIN sources s ON s.id = m.source_id WHERE im.item_id = i.id AND "
                   "(s.spec = ? OR EXISTS (SELECT 1 FROM json_each(m.labels) WHERE value = ?)))")
        args += [f.mailbox, f.mailbox]
    return "".join(f" AND {w}" for w in sql), args


def find(archive: Archive, query: str, filters: Filters | None = None, *,
         sort: str = "relevance", limit: int = 20, offset: int = 0,
         marks: tuple[str, str] = ("[", "]"), count: bool = False
         ) -> tuple[list[Hit], int | None]:
    """The one search: FTS5 ranked by bm25 (or by date), narrowed by ``filters``, with
    snippets whose matches are wrapped in ``marks``; and the number of hits when ``count``.
    An empty query lists the items the filters keep, newest first."""
    q = fts_query(query)
    where, args = _where(filters or Filters())
    order = SORTS.get(sort, "r")
    if q:
        base = ("FROM items_fts f JOIN items i ON i.id = f.rowid WHERE items_fts MATCH ?"
                + where)
        args = [q, *args]
        cols = ("i.id, i.title, i.mime_type, snippet(items_fts, 1, ?, ?, ' … ', 12), "
                "bm25(items_fts, 5.0, 1.0) AS r ")
        cargs: list[object] = [*marks]
    else:
        base, cols, cargs = "FROM items i WHERE 1" + where, "i.id, i.title, i.mime_type, " \
            "substr(ts_unzstd(i.text), 1, 200), 0 AS r ", []
        order = order if order != "r" else SORTS["read"]
    try:
        rows = archive.conn.execute(f"SELECT {cols} {base} ORDER BY {order} LIMIT ? OFFSET ?",
                                    (*cargs, *args, limit, offset)).fetchall()
        total = archive.conn.execute(f"SELECT count(*) {base}", args).fetchone()[0] \
            if count else None
    except sqlite3.OperationalError as exc:
        raise QueryError(f"cannot search for {query!r}: {exc}") from exc
    return [Hit(id=r[0], where=[w for _, w in archive.lineage(r[0])], title=r[1],
                mime_type=r[2], snippet=" ".join((r[3] or "").split()), rank=r[4])
            for r in rows], total


def search(archive: Archive, query: str, *, limit: int = 20, offset: int = 0) -> list[Hit]:
    if not fts_query(query):
        return []
    return find(archive, query, limit=limit, offset=offset)[0]


def format_hit(hit: Hit) -> str:
    """A hit as the two lines ``textsieve search`` prints: where it is and its title, then
    the snippet. Titles, paths and texts come from hostile documents and pages: their
    escape sequences and control characters are dropped so they cannot drive the terminal
    (clear it, retitle it, forge lines)."""
    where = " › ".join(hit.where)
    title = f"  {hit.title}" if hit.title else ""
    head = for_terminal(f"[{hit.id}] {where}{title}", one_line=True)
    return f"{head}\n    {for_terminal(hit.snippet, one_line=True)}"
