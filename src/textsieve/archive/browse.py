"""Read-only views of the archive for the reading room (the web UI): one item with its
provenance and children, the reading list of mailed links, problems grouped by kind and
site, and the figures the overview charts. Each is a few indexed queries, so a page stays
fast on an archive of 100,000 items; search itself is ``search.find``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .store import Archive

_ITEM_COLS = ("id", "key", "original", "parent_id", "name", "sha256", "size", "mime_type",
              "title", "metadata", "status", "error_kind", "error_message", "text_chars",
              "warnings", "extractor_version", "first_seen", "last_seen", "extracted_at")


def item(archive: Archive, item_id: int) -> dict[str, Any] | None:
    """One item's row (without its texts), metadata and warnings decoded, its page count,
    the pages read by OCR and those missing; None when there is no such item."""
    row = archive.conn.execute(
        f"SELECT {', '.join(_ITEM_COLS)}, pages FROM items WHERE id = ?",
        (item_id,)).fetchone()
    if row is None:
        return None
    out = dict(zip(_ITEM_COLS, row[:-1], strict=True))
    out["metadata"] = _json(out["metadata"], {})
    out["warnings"] = _json(out["warnings"], [])
    pages = _json(archive.unzip(row[-1]), []) if row[-1] else []
    out["pages"] = len(pages)
    extra = out["metadata"].get("extra") if isinstance(out["metadata"], dict) else None
    extra = extra if isinstance(extra, dict) else {}
    ocr = [p[0] for p in pages if isinstance(p, list) and len(p) > 3 and p[3]]
    out["ocr_pages"] = ocr or _numbers(extra.get("ocr_pages"))
    out["missing_pages"] = _numbers(extra.get("missing_pages"))  # OCR failed or timed out
    out["captures"] = archive.captures(item_id) if out["parent_id"] is None else []
    out["source_state"] = archive.check_of(item_id)
    out["source_note"] = source_note(out["source_state"], out["captures"])
    return out


def _day(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch)) if epoch else "?"


def source_note(check: dict[str, Any] | None, captures: list[dict[str, Any]]) -> str | None:
    """One line about an item whose source failed when last checked: since when, why, and
    which capture the text comes from ("source gone since ...; text from the capture of
    ..."; or that it shrank); None while the source answers (or was never checked)."""
    if not check or check.get("gone_since") is None:
        return None
    why = check.get("error_kind") or "failed"
    if check.get("http_status"):
        why += f", HTTP {check['http_status']}"
    if check.get("error_kind") == "degraded":
        what = "source shrank to a fraction of its text (a cookie wall, a parked domain?)"
    elif 200 <= (check.get("http_status") or 0) < 400:  # it answered: with what fails
        what = "source sent what cannot be read"
    else:
        what = "source gone"
    line = (f"{what} since {_day(check['gone_since'])} ({why}; last checked "
            f"{_day(check.get('checked_at'))})")
    current = next((c for c in captures if c.get("current")), None)
    if current is not None:
        line += f"; text from the capture of {_day(current.get('captured_at'))}"
    return line


def children(archive: Archive, item_id: int, depth: int = 6,
             limit: int = 500) -> list[dict[str, Any]]:
    """The children of an item as a tree (a ZIP's members, a mail's attachments), names
    and status only; bounded in depth and breadth so a zip bomb's listing stays a page."""
    rows = archive.conn.execute(
        "SELECT id, name, mime_type, status, error_kind, title FROM items "
        "WHERE parent_id = ? ORDER BY id LIMIT ?", (item_id, limit)).fetchall()
    return [{"id": r[0], "name": r[1], "mime_type": r[2], "status": r[3], "error_kind": r[4],
             "title": r[5], "children": children(archive, r[0], depth - 1, limit)
             if depth > 0 else []} for r in rows]


def provenance(archive: Archive, item_id: int) -> list[dict[str, Any]]:
    """Which sources gave a top-level item, and in which runs it was first and last seen."""
    rows = archive.conn.execute(
        "SELECT s.spec, p.first_run, r1.started, p.last_run, r2.started, p.title, p.note, "
        "p.listed FROM provenance p "
        "JOIN sources s ON s.id = p.source_id LEFT JOIN runs r1 ON r1.id = p.first_run "
        "LEFT JOIN runs r2 ON r2.id = p.last_run WHERE p.item_id = ? ORDER BY p.first_run",
        (item_id,)).fetchall()
    return [{"source": r[0], "first_run": r[1], "first_seen": r[2], "last_run": r[3],
             "last_seen": r[4], "title": r[5], "note": r[6], "listed": r[7]} for r in rows]


def mails_with_ids(archive: Archive, item_id: int) -> list[dict[str, Any]]:
    """The mails that named an item, with their ids (to link to the mail's page)."""
    rows = archive.conn.execute(
        "SELECT m.id, m.date, m.sender, m.subject, m.labels, s.spec FROM mails m "
        "JOIN item_mails im ON im.mail_id = m.id JOIN sources s ON s.id = m.source_id "
        "WHERE im.item_id = ? ORDER BY m.date", (item_id,)).fetchall()
    return [{"id": r[0], "date": r[1], "from": r[2], "subject": r[3],
             "labels": _json(r[4], []), "source": r[5]} for r in rows]


def mail(archive: Archive, mail_id: int) -> dict[str, Any] | None:
    """One mail of a mailbox source and the items it named."""
    row = archive.conn.execute(
        "SELECT m.id, m.message_id, m.date, m.sender, m.subject, m.labels, s.spec FROM mails m "
        "JOIN sources s ON s.id = m.source_id WHERE m.id = ?", (mail_id,)).fetchone()
    if row is None:
        return None
    named = archive.conn.execute(
        "SELECT i.id, i.key, i.title, i.status, i.error_kind FROM item_mails im "
        "JOIN items i ON i.id = im.item_id WHERE im.mail_id = ? ORDER BY i.id",
        (mail_id,)).fetchall()
    return {"id": row[0], "message_id": row[1], "date": row[2], "from": row[3],
            "subject": row[4], "labels": _json(row[5], []), "source": row[6],
            "items": [dict(zip(("id", "key", "title", "status", "error_kind"), r, strict=True))
                      for r in named]}


def reading_list(archive: Archive, *, limit: int = 100, offset: int = 0
                 ) -> tuple[list[dict[str, Any]], int]:
    """The mailed links in the order they were sent (newest first), each mail with what its
    links became (title, status, error); and how many mails there are."""
    total = archive.conn.execute("SELECT count(*) FROM mails").fetchone()[0]
    mails = archive.conn.execute(
        "SELECT id, date, sender, subject, labels FROM mails ORDER BY date DESC, id DESC "
        "LIMIT ? OFFSET ?", (limit, offset)).fetchall()
    out = []
    for mid, date, sender, subject, labels in mails:
        named = archive.conn.execute(
            "SELECT i.id, i.key, i.original, i.title, i.status, i.error_kind, i.error_message "
            "FROM item_mails im JOIN items i ON i.id = im.item_id WHERE im.mail_id = ? "
            "ORDER BY i.id", (mid,)).fetchall()
        out.append({"id": mid, "date": date, "from": sender, "subject": subject,
                    "labels": _json(labels, []),
                    "items": [dict(zip(("id", "key", "original", "title", "status",
                                        "error_kind", "error_message"), r, strict=True))
                              for r in named]})
    return out, total


def problems(archive: Archive, *, per_group: int = 20) -> list[dict[str, Any]]:
    """Failed top-level items grouped by error kind and site (files: site None), biggest
    group first, each with its count and its first ``per_group`` items. One pass over the
    status index: failures are a small share of an archive."""
    groups: dict[tuple[str | None, str | None], dict[str, Any]] = {}
    for row in archive.conn.execute(
            "SELECT id, key, original, title, error_message, error_kind, site FROM items "
            "INDEXED BY items_status WHERE status = 'error' AND parent_id IS NULL"):
        g = groups.setdefault((row[5], row[6]), {"kind": row[5], "site": row[6], "count": 0,
                                                 "items": []})
        g["count"] += 1
        if len(g["items"]) < per_group:
            g["items"].append(dict(zip(("id", "key", "original", "title", "error_message"),
                                       row[:5], strict=True)))
    out = sorted(groups.values(), key=lambda g: (-g["count"], g["kind"] or "",
                                                 g["site"] or ""))
    for g in out:  # the index gives them in its own order: oldest first, as listed
        g["items"].sort(key=lambda i: i["id"])
    return out


def failed_ids(archive: Archive, kind: str | None, site: str | None) -> list[int]:
    """The failed top-level items of one problems group."""
    return [r[0] for r in archive.conn.execute(
        "SELECT id FROM items INDEXED BY items_status WHERE status = 'error' "
        "AND parent_id IS NULL AND error_kind IS ? AND site IS ?", (kind, site))]


# A top-level item whose last attempt failed: the item itself (no good capture), or the
# last fetch of an item that keeps a good capture (its ``checks`` row: a revision whose
# new bytes could not be had).
_FAILED = "(i.status = 'error' OR k.gone_since IS NOT NULL)"
# Where to ask for such an item again: where it failed (the address its check asked: a
# revision may have moved a feed entry to another link), else where it came from.
_ASK_AT = ("CASE WHEN i.status = 'error' THEN i.original "
           "ELSE coalesce(k.url, i.original) END")


def retry_targets(archive: Archive, ids: list[int]) -> list[tuple[str, str, str | None]]:
    """(source spec, key, original) of these top-level items whose last attempt failed
    (``_FAILED``), for a re-run: the source each was last seen in."""
    out = []
    for i in ids:
        row = archive.conn.execute(
            f"SELECT s.spec, i.key, {_ASK_AT} FROM items i "
            "JOIN provenance p ON p.item_id = i.id JOIN sources s ON s.id = p.source_id "
            f"LEFT JOIN checks k ON k.item_id = i.id WHERE i.id = ? AND {_FAILED} "
            "AND i.parent_id IS NULL ORDER BY p.last_run DESC LIMIT 1", (i,)).fetchone()
        if row is not None:
            out.append((row[0], row[1], row[2]))
    return out


def passing_failures(archive: Archive, spec: str, kinds: frozenset[str], limit: int | None,
                     *, any_error: bool = False) -> list[tuple[str, str | None]]:
    """(key, original) of the top-level items of one source whose last attempt failed
    for one of ``kinds`` (reasons that pass: a server error, a timeout), those tried
    longest ago first, at most ``limit``: an item that failed outright, and an item whose
    good capture stands while its last fetch failed (a revised feed entry whose article's
    site was down). The second is the archive's record of a fetch that is still owed, so
    a source that never lists what it has seen again (a feed, a mailbox) need not
    remember it too; its original is the address that check asked (a revision may have
    moved the entry to another link). ``any_error``: items that failed outright for any
    reason (``--retry-errors``); ``limit`` None: all of them."""
    ks = sorted(kinds)
    marks = ", ".join("?" * len(ks))
    return [(row[0], row[1]) for row in archive.conn.execute(
        f"SELECT i.key, {_ASK_AT} FROM items i JOIN provenance p ON p.item_id = i.id "
        "JOIN sources s ON s.id = p.source_id LEFT JOIN checks k ON k.item_id = i.id "
        "WHERE s.spec = ? AND i.parent_id IS NULL AND ("
        f"(i.status = 'error' AND (? OR i.error_kind IN ({marks}))) OR (i.status != 'error' "
        f"AND k.gone_since IS NOT NULL AND k.error_kind IN ({marks}))) "
        "ORDER BY i.last_seen LIMIT ?",
        (spec, any_error, *ks, *ks, -1 if limit is None else limit))]


def facets(archive: Archive, limit: int = 50) -> dict[str, list[tuple[Any, int]]]:
    """The values each search filter can take, most common first, with their counts."""
    c = archive.conn

    def top(sql: str) -> list[tuple[Any, int]]:
        return [(r[0], r[1]) for r in c.execute(sql + f" LIMIT {int(limit)}") if r[0]]

    return {
        "type": top("SELECT mime_type, count(*) FROM items GROUP BY 1 ORDER BY 2 DESC"),
        "status": top("SELECT status, count(*) FROM items GROUP BY 1 ORDER BY 2 DESC"),
        "language": top("SELECT language, count(*) FROM items GROUP BY 1 ORDER BY 2 DESC"),
        "site": top("SELECT site, count(*) FROM items GROUP BY 1 ORDER BY 2 DESC"),
        "source": top("SELECT s.spec, count(*) FROM provenance p JOIN sources s "
                      "ON s.id = p.source_id GROUP BY 1 ORDER BY 2 DESC"),
        "mailbox": top("SELECT s.spec, count(*) FROM mails m JOIN sources s "
                       "ON s.id = m.source_id GROUP BY 1 ORDER BY 2 DESC"),
        # Labels of every source (mail labels and folders, bookmark folders and tags).
        "label": top("SELECT label, count(DISTINCT item_id) FROM item_labels "
                     "GROUP BY label COLLATE NOCASE ORDER BY 2 DESC, 1"),
    }


def overview(archive: Archive) -> dict[str, Any]:
    """The figures of the overview page: items by month first seen, type, status, site and
    language, and the last runs with their counts."""
    c = archive.conn
    by = {
        "month": c.execute("SELECT strftime('%Y-%m', first_seen, 'unixepoch'), count(*) "
                           "FROM items INDEXED BY items_first_seen GROUP BY 1 "
                           "ORDER BY 1").fetchall(),
        "type": c.execute("SELECT coalesce(mime_type, '?'), count(*) FROM items "
                          "GROUP BY mime_type ORDER BY 2 DESC LIMIT 12").fetchall(),
        "status": c.execute("SELECT status, count(*) FROM items GROUP BY 1 "
                            "ORDER BY 2 DESC").fetchall(),
        "site": c.execute("SELECT coalesce(site, '(files)'), count(*) FROM items "
                          "GROUP BY site ORDER BY 2 DESC LIMIT 12").fetchall(),
        "language": c.execute("SELECT coalesce(language, '?'), count(*) FROM items "
                              "GROUP BY language ORDER BY 2 DESC LIMIT 12").fetchall(),
    }
    runs = [{"id": r[0], "started": r[1], "ended": r[2], "status": r[3],
             "sources": _json(r[4], []), "counts": _json(r[5], {})}
            for r in c.execute("SELECT id, started, ended, status, sources, counts FROM runs "
                               "ORDER BY id DESC LIMIT 20")]
    return {"by": {k: [(str(a), int(b)) for a, b in v] for k, v in by.items()}, "runs": runs}


def _numbers(value: Any) -> list[int]:
    """A list of page numbers from stored metadata; anything else (damaged, hostile) is []."""
    if isinstance(value, list) and all(isinstance(n, int) for n in value):
        return value[:10_000]
    return []


def _json(value: str | None, default: Any) -> Any:
    """Stored JSON, or ``default`` when absent or unreadable (a page shows what it can)."""
    if not value:
        return default
    try:
        return json.loads(value)
    except ValueError:
        return default
