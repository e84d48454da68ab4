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


def search(archive: Archive, query: str, *, limit: int = 20, offset: int = 0) -> list[Hit]:
    q = fts_query(query)
    if not q:
        return []
    sql = (
        "SELECT f.rowid, i.title, i.mime_type, "
        "snippet(items_fts, 1, '[', ']', ' … ', 12) AS snip, bm25(items_fts, 5.0, 1.0) AS r "
        "FROM items_fts f JOIN items i ON i.id = f.rowid "
        "WHERE items_fts MATCH ? ORDER BY r LIMIT ? OFFSET ?")
    try:
        rows = archive.conn.execute(sql, (q, limit, offset)).fetchall()
    except sqlite3.OperationalError as exc:
        raise QueryError(f"cannot search for {query!r}: {exc}") from exc
    return [Hit(id=r[0], where=[w for _, w in archive.lineage(r[0])], title=r[1],
                mime_type=r[2], snippet=" ".join((r[3] or "").split()), rank=r[4])
            for r in rows]


def format_hit(hit: Hit) -> str:
    """A hit as the two lines ``textsieve search`` prints: where it is and its title, then
    the snippet. Titles, paths and texts come from hostile documents and pages: their
    escape sequences and control characters are dropped so they cannot drive the terminal
    (clear it, retitle it, forge lines)."""
    where = " › ".join(hit.where)
    title = f"  {hit.title}" if hit.title else ""
    head = for_terminal(f"[{hit.id}] {where}{title}", one_line=True)
    return f"{head}\n    {for_terminal(hit.snippet, one_line=True)}"
