"""Schema step 6: scrub ``user:secret@`` credentials from every URL an older archive stored.

Before the credential fix the normal form kept the userinfo, so an archive made then can
hold passwords in item keys (and the keys of their children, ``parent//member``), in the
originals, in source specs (``url:http://alice:secret@host/``), in run records, in
metadata (``url``, ``final_url``, ``redirects``, canonical links), in error messages and
titles. This step rewrites all of them the way the current code would have written them:

- a top-level URL key gets ``links.url_key`` (the fetcher's normal form, credentials
  dropped), so a re-run of the same URL finds the same row;
- a child key gets its parent's new key as prefix;
- every other text cell has the userinfo cut out of each URL in it (``strip_userinfo``
  semantics: all of it for http(s), the password for other schemes, whose user name can be
  part of a source's identity, as in ``imap://user@host``).

Rows whose keys collide after the scrub (``http://a:1@h/`` next to ``http://h/``) are merged
into one: the best row survives (an ok row before an error, then the newest extraction), and
it inherits the others' provenance, mails and first/last seen, so no item is lost. Sources
that collide are merged the same way. Full-text entries of rows whose title changed are
re-indexed, and the index is optimised so the old tokens leave its segments; the step runs
with ``secure_delete`` so freed pages and cells are zeroed instead of keeping the secret in
the file's bytes. Stored texts (compressed document content) are left as extracted: the
current code stores a page's or a mail's text verbatim too.
"""

from __future__ import annotations

import logging
import re
import sqlite3

from ..links.normalize import url_key

log = logging.getLogger(__name__)

# scheme://userinfo@ — the userinfo may itself hold '@' (greedy up to the last one in the
# authority); it stops at the end of the authority and at characters that end a URL in
# running text or JSON, so a cut never crosses a JSON string boundary.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/?#\s\"'<>\\\[\]]*)@")
_WEB = ("http://", "https://", "ftp://", "ws://", "wss://")
_SKIP_TABLE = re.compile(r"^(sqlite_|items_fts)")


def scrub_text(value: str) -> str:
    """``value`` with the credentials cut out of every URL in it."""
    def cut(m: re.Match[str]) -> str:
        scheme, userinfo = m.group(1), m.group(2)
        if scheme.lower() in _WEB:
            return scheme
        if ":" in userinfo:  # keep a user name that names a mailbox, drop its password
            return f"{scheme}{userinfo.split(':', 1)[0]}@"
        return m.group(0)
    return _USERINFO.sub(cut, value)


def _has_credentials(value: str | None) -> bool:
    return bool(value) and scrub_text(value) != value  # type: ignore[arg-type]


def _new_top_key(key: str) -> str:
    """The key the current code gives this URL (a file path or mail key: only scrubbed)."""
    if key.lower().startswith(("http://", "https://")):
        return url_key(scrub_text(key))
    return scrub_text(key)


def scrub_credentials(conn: sqlite3.Connection) -> None:
    """The migration step (runs inside the step's transaction, see ``schema.migrate``)."""
    secure = conn.execute("PRAGMA secure_delete").fetchone()[0]
    conn.execute("PRAGMA secure_delete = ON")  # freed cells are zeroed, not left in the file
    try:
        reindex: set[int] = set()
        merged = _scrub_item_keys(conn, reindex)
        merged += _scrub_sources(conn)
        cells = _scrub_cells(conn, reindex)
        if reindex or merged:  # deleted entries and old tokens leave the segments
            conn.execute("INSERT INTO items_fts (items_fts) VALUES ('optimize')")
        if merged or cells:
            log.info("archive migration: credentials scrubbed from %d rows, %d rows merged",
                     cells, merged)
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(secure)}")


def _unindex(conn: sqlite3.Connection, ids: list[int]) -> None:
    for i in ids:
        conn.execute("INSERT INTO items_fts (items_fts, rowid, title, text) "
                     "SELECT 'delete', id, COALESCE(title, ''), ts_unzstd(text) FROM items "
                     "WHERE id = ? AND (text IS NOT NULL OR title IS NOT NULL)", (i,))


def _index(conn: sqlite3.Connection, ids: list[int]) -> None:
    for i in ids:
        conn.execute("INSERT INTO items_fts (rowid, title, text) "
                     "SELECT id, COALESCE(title, ''), ts_unzstd(text) FROM items "
                     "WHERE id = ? AND (text IS NOT NULL OR title IS NOT NULL)", (i,))


def _descendants(conn: sqlite3.Connection, item_id: int) -> list[int]:
    return [r[0] for r in conn.execute(
        "WITH RECURSIVE d(id) AS (SELECT id FROM items WHERE parent_id = ? "
        "UNION ALL SELECT i.id FROM items i JOIN d ON i.parent_id = d.id) SELECT id FROM d",
        (item_id,))]


def _scrub_item_keys(conn: sqlite3.Connection, reindex: set[int]) -> int:
    """Give every item with credentials in its key the key the current code would; merge
    collisions. Returns the number of rows merged away."""
    rows = {r[0]: (r[1], r[2]) for r in conn.execute(
        "SELECT id, key, parent_id FROM items WHERE key LIKE '%://%@%'")
        if _has_credentials(r[1])}  # an '@' further on (a path, a query) is no credential
    if not rows:
        return 0
    parents = {r[0]: r[1] for r in conn.execute(
        "SELECT id, key FROM items WHERE id IN (SELECT DISTINCT parent_id FROM items "
        "WHERE key LIKE '%://%@%' AND parent_id IS NOT NULL)")}
    new: dict[int, str] = {}

    def new_key(item_id: int) -> str:
        if item_id in new:
            return new[item_id]
        key, parent = rows[item_id]
        if parent is None:
            out = _new_top_key(key)
        else:
            pkey = parents.get(parent) or rows.get(parent, (None,))[0]
            if pkey and key.startswith(pkey + "//"):
                pnew = new_key(parent) if parent in rows else pkey
                out = pnew + scrub_text(key[len(pkey):])
            else:
                out = scrub_text(key)
        new[item_id] = out
        return out

    for item_id in rows:
        new_key(item_id)
    # Parents before children, so a child of a merged-away row is gone before its turn.
    order = sorted(rows, key=lambda i: (rows[i][1] is not None, new[i].count("//"), i))
    gone: set[int] = set()
    merged = 0
    for item_id in order:
        if item_id in gone:
            continue
        target = new[item_id]
        if target == rows[item_id][0]:
            continue
        clash = conn.execute("SELECT id FROM items WHERE key = ?", (target,)).fetchone()
        if clash is None:
            conn.execute("UPDATE items SET key = ? WHERE id = ?", (target, item_id))
            continue
        keep, drop = _better(conn, clash[0], item_id)
        gone.update(_merge_item(conn, keep, drop))
        merged += 1
        if keep == item_id:
            conn.execute("UPDATE items SET key = ? WHERE id = ?", (target, item_id))
    return merged


def _better(conn: sqlite3.Connection, a: int, b: int) -> tuple[int, int]:
    """(survivor, loser): an ok row before an error, then the newest extraction."""
    def rank(i: int) -> tuple[int, float, int]:
        status, at = conn.execute("SELECT status, COALESCE(extracted_at, last_seen) "
                                  "FROM items WHERE id = ?", (i,)).fetchone()
        return (status != "error", at or 0.0, i)
    return (a, b) if rank(a) >= rank(b) else (b, a)


def _merge_item(conn: sqlite3.Connection, keep: int, drop: int) -> list[int]:
    """Fold row ``drop`` into ``keep`` and delete it with its children; the ids deleted."""
    conn.execute(
        "INSERT INTO provenance (item_id, source_id, first_run, last_run) "
        "SELECT ?, source_id, first_run, last_run FROM provenance WHERE item_id = ? AND true "
        "ON CONFLICT (item_id, source_id) DO UPDATE SET "
        "first_run = min(first_run, excluded.first_run), "
        "last_run = max(last_run, excluded.last_run)", (keep, drop))
    conn.execute("INSERT OR IGNORE INTO item_mails (item_id, mail_id) "
                 "SELECT ?, mail_id FROM item_mails WHERE item_id = ?", (keep, drop))
    conn.execute("UPDATE items SET first_seen = min(first_seen, (SELECT first_seen FROM "
                 "items WHERE id = :d)), last_seen = max(last_seen, (SELECT last_seen FROM "
                 "items WHERE id = :d)) WHERE id = :k", {"k": keep, "d": drop})
    ids = [drop, *_descendants(conn, drop)]
    _unindex(conn, ids)
    for table in ("provenance", "item_mails", "item_topics", "enrichment"):
        conn.execute(f"DELETE FROM {table} WHERE item_id IN ({','.join('?' * len(ids))})",
                     ids)
    conn.execute(f"DELETE FROM related WHERE item_id IN ({','.join('?' * len(ids))}) "
                 f"OR other_id IN ({','.join('?' * len(ids))})", ids + ids)
    for i in reversed(ids):  # children first: no dangling parent_id, FKs on or off
        conn.execute("DELETE FROM items WHERE id = ?", (i,))
    return ids


def _scrub_sources(conn: sqlite3.Connection) -> int:
    """Scrub source specs (``url:`` specs get the current key); merge colliding ones."""
    merged = 0
    for sid, spec in conn.execute(
            "SELECT id, spec FROM sources WHERE spec LIKE '%://%@%'").fetchall():
        if not _has_credentials(spec):
            continue
        kind, sep, rest = spec.partition(":")
        target = f"url:{_new_top_key(rest)}" if kind == "url" and sep else scrub_text(spec)
        if target == spec:
            continue
        clash = conn.execute("SELECT id FROM sources WHERE spec = ?", (target,)).fetchone()
        if clash is None:
            conn.execute("UPDATE sources SET spec = ? WHERE id = ?", (target, sid))
            continue
        keep = clash[0]
        conn.execute(
            "INSERT INTO provenance (item_id, source_id, first_run, last_run) "
            "SELECT item_id, ?, first_run, last_run FROM provenance WHERE source_id = ? "
            "AND true ON CONFLICT (item_id, source_id) DO UPDATE SET "
            "first_run = min(first_run, excluded.first_run), "
            "last_run = max(last_run, excluded.last_run)", (keep, sid))
        for mid, message_id in conn.execute("SELECT id, message_id FROM mails "
                                            "WHERE source_id = ?", (sid,)).fetchall():
            twin = conn.execute("SELECT id FROM mails WHERE source_id = ? AND message_id = ?",
                                (keep, message_id)).fetchone()
            if twin is None:
                conn.execute("UPDATE mails SET source_id = ? WHERE id = ?", (keep, mid))
            else:
                conn.execute("INSERT OR IGNORE INTO item_mails (item_id, mail_id) "
                             "SELECT item_id, ? FROM item_mails WHERE mail_id = ?",
                             (twin[0], mid))
                conn.execute("DELETE FROM item_mails WHERE mail_id = ?", (mid,))
                conn.execute("DELETE FROM mails WHERE id = ?", (mid,))
        conn.execute("INSERT OR IGNORE INTO source_state (source_id, key, value) "
                     "SELECT ?, key, value FROM source_state WHERE source_id = ?", (keep, sid))
        for table in ("provenance", "source_state"):
            conn.execute(f"DELETE FROM {table} WHERE source_id = ?", (sid,))
        conn.execute("DELETE FROM sources WHERE id = ?", (sid,))
        merged += 1
    return merged


def _scrub_cells(conn: sqlite3.Connection, reindex: set[int]) -> int:
    """Every other text cell of every table: URLs in it lose their credentials. Titles are
    in the full-text index, so a changed title is re-indexed (old entry out first)."""
    count = 0
    for rowid, title in conn.execute("SELECT id, title FROM items WHERE typeof(title) = "
                                     "'text' AND title LIKE '%://%@%'").fetchall():
        clean = scrub_text(title)
        if clean != title:
            _unindex(conn, [rowid])
            conn.execute("UPDATE items SET title = ? WHERE id = ?", (clean, rowid))
            _index(conn, [rowid])
            reindex.add(rowid)
            count += 1
    conn.create_function("ts_scrub_credentials", 1,
                         lambda v: scrub_text(v) if isinstance(v, str) else v,
                         deterministic=True)
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE "
        "'CREATE VIRTUAL%'")]
    for table in tables:
        if _SKIP_TABLE.match(table):
            continue
        # Keys are done above, or are no URLs (and rewriting them could make duplicates).
        skip = {"items": {"key", "title"}, "sources": {"spec"}, "meta": {"key"},
                "source_state": {"key"}, "mails": {"message_id"}}.get(table, set())
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")
                if r[2].upper() in ("TEXT", "") and r[1] not in skip]
        if not cols:
            continue
        # One pass over the table (items rows carry the compressed texts: a scan per
        # column would read them all a dozen times).
        sets = ", ".join(f"{c} = ts_scrub_credentials({c})" for c in cols)
        where = " OR ".join(f"({c} LIKE '%://%@%' AND ts_scrub_credentials({c}) IS NOT {c})"
                            for c in cols)
        conn.execute(f"UPDATE {table} SET {sets} WHERE {where}")
        count += conn.execute("SELECT changes()").fetchone()[0]
    return count
