"""Labels and listings: one kind of label whatever gave it (a Gmail label, an IMAP folder,
a bookmark folder or tag, a feed's name), and what a list of links said about an item:
its listing (title, note, date) and the source's facts (``Item.facts``: a feed entry's id,
its feed), which the archive writer puts in every capture of the item (``source_facts``).

Sources attach them to the items they yield (``Item.labels``, ``Item.listing``; mails
through ``MailRef.labels``); the run's writer records them here for every item listed,
changed or not, so moving a bookmark to another folder relabels it without a fetch. A list
source's labels for an item are replaced each time it lists the item (the export is the
truth of now); mail labels add up over the mails that named it. Every reader (search,
exports, the reading room, ``reextract``/``topics --label``) filters with ``LABEL_SQL``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from ..model.items import Listing

# An item (or the item it is part of: a mail's attachment, a ZIP member) has the label;
# ASCII case is ignored ("Python" finds "python"). ``i`` is the items table's alias.
LABEL_SQL = ("EXISTS (SELECT 1 FROM item_labels lb WHERE lb.item_id IN (i.id, i.parent_id) "
             "AND lb.label = ? COLLATE NOCASE)")

# (item key, source spec, labels, listing, facts): what one source said of one item in this
# run; the facts (``Item.facts``: a feed entry's id, its feed) are kept with the listing, so
# a capture made later without the source (a retry, ``reextract``) says them too
# (``source_facts``).
Pending = tuple[str, str, tuple[str, ...], Listing | None, tuple[tuple[str, object], ...]]


def record(c: sqlite3.Connection, pending: Iterable[Pending], run_id: int,
           source_ids: dict[str, int], source_id_in: Any) -> list[Pending]:
    """Record labels and listings of items that exist by now, in the caller's transaction;
    returns those whose item is not written yet, to try again after the next batch."""
    later: list[Pending] = []
    for key, spec, labels, listing, facts in pending:
        row = c.execute("SELECT id FROM items WHERE key = ?", (key,)).fetchone()
        if row is None:
            later.append((key, spec, labels, listing, facts))
            continue
        item_id = row[0]
        sid = source_ids.get(spec) or source_id_in(c, spec)
        c.execute("DELETE FROM item_labels WHERE item_id = ? AND source_id = ?", (item_id, sid))
        c.executemany("INSERT OR IGNORE INTO item_labels (item_id, source_id, label) "
                      "VALUES (?,?,?)", [(item_id, sid, lab) for lab in labels])
        said: dict[str, object] = {}  # provenance columns this source's word sets
        if listing is not None:
            said.update(title=listing.title, note=listing.note, listed=listing.date)
        if facts:
            said["facts"] = json.dumps(dict(facts), default=str)
        if said:  # one upsert: the column names are the fixed ones above
            c.execute(f"INSERT INTO provenance (item_id, source_id, first_run, last_run, "
                      f"{', '.join(said)}) VALUES (?,?,?,?{',?' * len(said)}) "
                      "ON CONFLICT (item_id, source_id) DO UPDATE SET "
                      + ", ".join(f"{k} = excluded.{k}" for k in said),
                      (item_id, sid, run_id, run_id, *said.values()))
    return later


def source_facts(c: sqlite3.Connection, item_id: int, source_id: int) -> dict[str, Any]:
    """What a source told of an item beyond its listing (``Item.facts``), for a capture
    made without it (a retry lists a bare link, ``reextract`` reads the kept original):
    those of the source the capture is made under, else of the source that said them
    last. Empty when no source said any."""
    row = c.execute("SELECT facts FROM provenance WHERE item_id = ? AND facts IS NOT NULL "
                    "ORDER BY source_id = ? DESC, last_run DESC LIMIT 1",
                    (item_id, source_id)).fetchone()
    try:
        facts = json.loads(row[0]) if row else {}
    except ValueError:
        return {}
    return facts if isinstance(facts, dict) else {}


def add_mail_labels(c: sqlite3.Connection, item_id: int, source_id: int,
                    labels: Iterable[str]) -> None:
    """A mail's labels (Gmail labels, its IMAP folder) are the item's labels too."""
    c.executemany("INSERT OR IGNORE INTO item_labels (item_id, source_id, label) "
                  "VALUES (?,?,?)", [(item_id, source_id, lab) for lab in labels if lab])


def labels_of(conn: sqlite3.Connection, item_id: int) -> list[str]:
    """An item's labels from every source (and those of the item it is part of)."""
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT label FROM item_labels WHERE item_id IN "
        "(?, (SELECT parent_id FROM items WHERE id = ?)) ORDER BY label COLLATE NOCASE",
        (item_id, item_id))]


def labels_by_item(conn: sqlite3.Connection, ids: list[int]) -> dict[int, list[str]]:
    """Labels of many items at once (a page of search hits, an export's batch)."""
    out: dict[int, list[str]] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for item_id, label in conn.execute(
                f"SELECT DISTINCT item_id, label FROM item_labels WHERE item_id IN ({marks}) "
                "ORDER BY label COLLATE NOCASE", chunk):
            out.setdefault(item_id, []).append(label)
    return out


def listings_of(conn: sqlite3.Connection, item_id: int) -> list[dict[str, Any]]:
    """What each list that named the item said of it (title, note, date listed)."""
    rows = conn.execute(
        "SELECT s.spec, p.title, p.note, p.listed FROM provenance p "
        "JOIN sources s ON s.id = p.source_id WHERE p.item_id = ? AND "
        "(p.title IS NOT NULL OR p.note IS NOT NULL OR p.listed IS NOT NULL) "
        "ORDER BY p.listed", (item_id,)).fetchall()
    return [{"source": r[0], "title": r[1], "note": r[2], "listed": r[3]} for r in rows]


def all_labels(conn: sqlite3.Connection, limit: int = 500) -> list[tuple[str, int]]:
    """The labels in the archive with their item counts, most used first."""
    return [(r[0], r[1]) for r in conn.execute(
        "SELECT label, count(DISTINCT item_id) n FROM item_labels GROUP BY label "
        "COLLATE NOCASE ORDER BY n DESC, label LIMIT ?", (limit,))]
