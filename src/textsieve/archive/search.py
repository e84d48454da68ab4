"""Full-text search over the archive (SQLite FTS5, ranked by bm25, with snippets)."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from ..errors import UsageError
from ..terminal import for_terminal
from .store import Archive, ArchiveError


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
    source_state: str | None = None  # gone: the source failed when last checked; alive: not
    label: str | None = None  # a label of any source (mail label, folder, tag), any case


SORTS = ("relevance", "read", "published")
# A word in most documents ("the") matches the whole archive: ranking all of it costs 2-30
# ms per 1,000 matches (a phrase needs positions), seconds on 100,000 items. Past
# RANK_WINDOW hits only the most recently read ones are ranked (the page says so); a query
# with fewer matches is ranked exactly. Counting is cheaper (~1 ms per 1,000): capped too.
# Except a phrase (or NEAR): bm25 first counts the documents holding it, reading the
# positions of every match (0.1-0.2 s for "the of" on 100,000 items) whatever the window,
# so a phrase with more matches than the window lists them newest first, unranked.
RANK_WINDOW = 2_000
COUNT_CAP = 10_000
_QUOTED = re.compile(r'"([^"]*)"')


def ranks_past_window(query: str) -> bool:
    """Whether a query with more than RANK_WINDOW matches is still ranked (its newest
    matches), or listed newest first: a phrase is too dear to rank then."""
    q = fts_query(query)
    return "NEAR" not in q and not any(len(p.split()) > 1 for p in _QUOTED.findall(q))


def _where(f: Filters, ident: str) -> tuple[str, list[object]]:
    """SQL conditions for the filters on the item id ``ident``, each a set of ids read from
    an index alone (schema version 4): no row of ``items`` is read, so neither its
    compressed texts nor its metadata JSON. The unary plus keeps a set a filter: as a
    constraint on the full-text table's rowid it would re-run the MATCH once per id."""
    sql: list[str] = []
    args: list[object] = []
    if f.language:  # "de" finds the declared "de-AT" too
        sql.append("SELECT id FROM items WHERE language = ? OR language LIKE ? || '-%'")
        args += [f.language, f.language]
    for col, value in (("mime_type", f.type), ("status", f.status), ("site", f.site)):
        if value:
            sql.append(f"SELECT id FROM items WHERE {col} = ?")
            args.append(value)
    if f.since or f.until:
        sql.append("SELECT id FROM items WHERE first_seen >= "
                   "coalesce(CAST(strftime('%s', ?) AS REAL), 0) AND first_seen < "
                   "coalesce(CAST(strftime('%s', ?, '+1 day') AS REAL), 1e18)")
        args += [f.since, f.until]
    if f.source:
        sql.append("SELECT p.item_id FROM provenance p JOIN sources s ON s.id = p.source_id "
                   "WHERE s.spec = ?")
        args.append(f.source)
    if f.source_state == "gone":
        sql.append("SELECT item_id FROM checks WHERE gone_since IS NOT NULL")
    elif f.source_state == "alive":
        sql.append("SELECT id FROM items EXCEPT SELECT item_id FROM checks "
                   "WHERE gone_since IS NOT NULL")
    if f.mailbox:
        sql.append("SELECT im.item_id FROM item_mails im JOIN mails m ON m.id = im.mail_id "
                   "JOIN sources s ON s.id = m.source_id WHERE s.spec = ? "
                   "OR EXISTS (SELECT 1 FROM json_each(m.labels) WHERE value = ?)")
        args += [f.mailbox, f.mailbox]
    if f.label:  # the item's labels, or those of the item it is part of (an attachment)
        sql.append("SELECT item_id FROM item_labels WHERE label = ? COLLATE NOCASE UNION "
                   "SELECT c.id FROM item_labels l JOIN items c ON c.parent_id = l.item_id "
                   "WHERE l.label = ? COLLATE NOCASE")
        args += [f.label, f.label]
    return "".join(f" AND +{ident} IN ({w})" for w in sql), args


def find(archive: Archive, query: str, filters: Filters | None = None, *,
         sort: str = "relevance", limit: int = 20, offset: int = 0,
         marks: tuple[str, str] = ("[", "]"), count: bool = False
         ) -> tuple[list[Hit], int | None]:
    """The one search: FTS5 ranked by bm25, or by date read (newest first) or published,
    narrowed by ``filters``, with snippets whose matches are wrapped in ``marks``; and the
    number of hits (at most COUNT_CAP + 1) when ``count``. An empty query lists the items
    the filters keep. Only the page's hits get a snippet and a lineage: a snippet
    decompresses its text, which for every match of a common word would take seconds."""
    q = fts_query(query)
    sort = sort if sort in SORTS else "relevance"
    c = archive.conn
    # Rowids grow with first_seen (an item keeps its id when re-extracted), so "read" is
    # the rowid order of either table, without a sort; "published" walks its index.
    if q:
        where, args = _where(filters or Filters(), "f.rowid")
        base = "FROM items_fts f WHERE items_fts MATCH ?" + where
        args = [q, *args]
    else:
        where, args = _where(filters or Filters(), "i.id")
        base = "FROM items i WHERE 1" + where
    rank_args = list(args)  # the ranking query's arguments: the window edge may follow
    if sort == "published":
        match = " AND +i.id IN (SELECT rowid FROM items_fts WHERE items_fts MATCH ?)" \
            if q else ""
        pwhere, _ = _where(filters or Filters(), "i.id")  # the same sets, on this table
        sql = (f"SELECT i.id, 0 FROM items i INDEXED BY items_published WHERE 1{match}{pwhere} "
               "ORDER BY i.published DESC, i.id DESC")
    elif sort == "read" or not q:
        sql = f"SELECT {'f.rowid' if q else 'i.id'} AS id, 0 {base} ORDER BY id DESC"
    else:
        sql = f"SELECT f.rowid, bm25(items_fts, 5.0, 1.0) AS r {base} AND f.rowid >= ? ORDER BY r"
    try:
        if sql.endswith("AND f.rowid >= ? ORDER BY r"):  # the window: the newest matches
            edge = c.execute(f"SELECT f.rowid {base} ORDER BY f.rowid DESC LIMIT 1 OFFSET ?",
                             (*args, RANK_WINDOW - 1)).fetchone()
            rank_args.append(edge[0] if edge else 0)
            if edge and not ranks_past_window(query):
                sql, rank_args = f"SELECT f.rowid, 0 {base} ORDER BY f.rowid DESC", list(args)
        rows = c.execute(f"{sql} LIMIT ? OFFSET ?", (*rank_args, limit, offset)).fetchall()
        total = c.execute(f"SELECT count(*) FROM (SELECT 1 {base} LIMIT {COUNT_CAP + 1})",
                          args).fetchone()[0] if count else None
        ids = [r[0] for r in rows]
        snippets = _snippets(archive, q, ids, marks)
        hits = []
        for item_id, rank in rows:
            title, mime = c.execute("SELECT title, mime_type FROM items WHERE id = ?",
                                    (item_id,)).fetchone()
            hits.append(Hit(id=item_id, where=[w for _, w in archive.lineage(item_id)],
                            title=title, mime_type=mime,
                            snippet=" ".join(snippets.get(item_id, "").split()), rank=rank))
    except sqlite3.OperationalError as exc:
        raise _search_error(query, exc) from exc
    return hits, total


# What FTS5 says of a query it cannot parse; any other error comes from the archive itself.
_QUERY_FAULTS = ("syntax error", "unterminated string", "no such column", "unknown special query")


def _search_error(query: str, exc: sqlite3.OperationalError) -> Exception:
    """A query FTS5 cannot parse is the user's to fix (a usage error); a damaged full-text
    index ("SQL logic error", "malformed") is the archive's (``textsieve check``)."""
    if any(fault in str(exc) for fault in _QUERY_FAULTS):
        return QueryError(f"cannot search for {query!r}: {exc}")
    return ArchiveError(f"cannot search: the archive's full-text index failed ({exc}); "
                        "`textsieve check` tells what is damaged, `--repair` rebuilds it")


def _snippets(archive: Archive, q: str, ids: list[int], marks: tuple[str, str]
              ) -> dict[int, str]:
    """The snippets of a page of hits in one pass over the index: per hit (MATCH plus
    rowid = ?) a prefix query expands its terms each time, 9 ms a hit on 100,000 items.
    The range bounds the walk; ``+rowid IN`` is only a filter (the unary plus keeps SQLite
    from turning it into one index lookup per id), so snippet() runs for the page's rows
    alone. An empty query's "snippet" is the start of the text."""
    if not ids:
        return {}
    marks_in = ",".join("?" * len(ids))
    if not q:
        return dict(archive.conn.execute(
            f"SELECT id, substr(ts_unzstd(text), 1, 200) FROM items WHERE id IN ({marks_in})",
            ids).fetchall())
    return {r[0]: r[1] or "" for r in archive.conn.execute(
        "SELECT rowid, snippet(items_fts, 1, ?, ?, ' … ', 12) FROM items_fts "
        f"WHERE items_fts MATCH ? AND rowid BETWEEN ? AND ? AND +rowid IN ({marks_in})",
        (*marks, q, min(ids), max(ids), *ids))}


def search(archive: Archive, query: str, *, limit: int = 20, offset: int = 0,
           source_state: str | None = None, label: str | None = None,
           language: str | None = None) -> list[Hit]:
    """Ranked hits of ``query``; with a ``label`` and no query, that label's items, newest
    first. ``language``: only items in it (``de`` includes ``de-AT``)."""
    if not fts_query(query) and not label:
        return []
    return find(archive, query, Filters(source_state=source_state, label=label,
                                        language=language), limit=limit, offset=offset)[0]


def languages_of(archive: Archive, ids: list[int]) -> dict[int, str]:
    """The language of each of these items that has one (declared or detected)."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return dict(archive.conn.execute(
        f"SELECT id, language FROM items WHERE id IN ({marks}) AND language IS NOT NULL",
        ids).fetchall())


def format_hit(hit: Hit) -> str:
    """A hit as the two lines ``textsieve search`` prints: where it is and its title, then
    the snippet. Titles, paths and texts come from hostile documents and pages: their
    escape sequences and control characters are dropped so they cannot drive the terminal
    (clear it, retitle it, forge lines)."""
    where = " › ".join(hit.where)
    title = f"  {hit.title}" if hit.title else ""
    head = for_terminal(f"[{hit.id}] {where}{title}", one_line=True)
    return f"{head}\n    {for_terminal(hit.snippet, one_line=True)}"
