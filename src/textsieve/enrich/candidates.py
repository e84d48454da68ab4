"""Which archived items enrichment works on, their texts, and what is stale.

One place decides both, so every capability agrees: an item is a candidate when it was
extracted ``ok`` with enough text to say something about; a result is stale when the item
was re-extracted after it was computed (``enrichment.extracted_at`` no longer matches).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from ..archive.store import Archive
from . import EnrichError

# What a long step reports as it goes: (stage, done, total).
Progress = Callable[[str, int, int], None]

MIN_CHARS = 200  # shorter texts (error pages, stubs) say too little to model or summarise
MAX_CHARS = 200_000  # a huge text is read up to this much: enough to know what it is about


@dataclass(frozen=True)
class Selection:
    """A subset of the archive: a MIME type (prefix), a date range (first seen, ISO dates)
    and a label. Empty fields select everything."""

    mime: str | None = None
    since: str | None = None
    until: str | None = None
    label: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v}

    def where(self) -> tuple[str, list[object]]:
        """SQL conditions on ``items i`` and their parameters."""
        sql = ["i.status = 'ok'", f"i.text_chars >= {MIN_CHARS}"]
        args: list[object] = []
        if self.mime:
            sql.append("i.mime_type LIKE ?")
            args.append(self.mime.rstrip("*") + "%")
        for bound, op in ((self.since, ">="), (self.until, "<")):
            if bound:
                sql.append(f"i.first_seen {op} ?")
                args.append(_epoch(bound, end=op == "<"))
        if self.label:
            # Any source's label (a mail's, a folder, a tag); an item's members and
            # attachments (one level down) share it.
            from ..archive.labels import LABEL_SQL

            sql.append(LABEL_SQL)
            args.append(self.label)
        return " AND ".join(sql), args


def _epoch(day: str, *, end: bool) -> float:
    """An ISO date (YYYY-MM-DD) as seconds since the epoch, local time; ``end`` makes the
    bound inclusive of that whole day."""
    try:
        t = time.mktime(time.strptime(day, "%Y-%m-%d"))
    except ValueError:
        raise EnrichError(f"{day!r} is not a date like 2024-05-31") from None
    return t + 86400 if end else t


def refresh(archive: Archive) -> None:
    """Forget results computed from an older text of an item (re-extracted since), and
    give every candidate a row, so each capability only has to look for NULLs."""
    with archive.transaction() as c:
        # items from the covering index (the rows hold the texts), then their results
        stale = [r[0] for r in c.execute(
            "SELECT e.item_id FROM items i INDEXED BY items_enrich CROSS JOIN enrichment e "
            "ON e.item_id = i.id WHERE e.extracted_at IS NOT i.extracted_at")]
        for i in range(0, len(stale), 500):
            chunk = stale[i:i + 500]
            marks = ",".join("?" * len(chunk))
            c.execute(f"DELETE FROM item_topics WHERE item_id IN ({marks})", chunk)
            # An item that listed a re-extracted one as a neighbour looks again.
            c.execute(f"UPDATE enrichment SET related_done = 0 WHERE item_id IN (SELECT "
                      f"item_id FROM related WHERE other_id IN ({marks}))", chunk)
            c.execute(f"DELETE FROM minhash_bands WHERE item_id IN ({marks})", chunk)
            c.execute(f"DELETE FROM related WHERE item_id IN ({marks}) "
                      f"OR other_id IN ({marks})", chunk + chunk)
            c.execute(f"DELETE FROM enrichment WHERE item_id IN ({marks})", chunk)
        where, args = Selection().where()
        c.execute("INSERT OR IGNORE INTO enrichment (item_id, extracted_at) "
                  f"SELECT i.id, i.extracted_at FROM items i WHERE {where}", args)


def candidate_ids(archive: Archive, selection: Selection | None = None,
                  missing: str | None = None) -> list[int]:
    """Ids of candidate items in the selection, oldest first; ``missing`` names an
    ``enrichment`` condition (e.g. ``e.summary IS NULL``) to keep only the work left."""
    where, args = (selection or Selection()).where()
    if missing:
        where += f" AND ({missing})"
    return [r[0] for r in archive.conn.execute(
        f"SELECT i.id FROM items i INDEXED BY items_enrich JOIN enrichment e "
        f"ON e.item_id = i.id WHERE {where} ORDER BY i.id", args)]


def work_ids(archive: Archive, ids: list[int] | None, missing: str, force: bool) -> list[int]:
    """The items a per-item step works on: the ``ids`` asked for that are candidates, or
    every candidate still ``missing`` its result (all of them with ``force``)."""
    if ids is None:
        return candidate_ids(archive, missing=None if force else missing)
    known = set(candidate_ids(archive))
    return [i for i in ids if i in known]


def store_in_batches(archive: Archive, ids: list[int], column: str, stage: str,
                     values: Callable[[list[int]], list[tuple[object, int]]], *,
                     batch: int, progress: Progress | None) -> int:
    """Work on ``ids`` a batch at a time: ``values(chunk)`` gives ``(value, item_id)`` rows,
    stored in ``enrichment.<column>`` in one transaction per batch (an interrupted pass
    keeps what it finished), with progress. Returns how many rows were stored."""
    done = 0
    for i in range(0, len(ids), batch):
        rows = values(ids[i:i + batch])
        with archive.transaction() as c:
            c.executemany(f"UPDATE enrichment SET {column} = ? WHERE item_id = ?", rows)
        done += len(rows)
        if progress:
            progress(stage, done, len(ids))
    return done


def texts(archive: Archive, ids: list[int]) -> Iterator[tuple[int, str, str | None]]:
    """(id, title + text, language) for these items, read in batches (bounded memory)."""
    for i in range(0, len(ids), 200):
        chunk = ids[i:i + 200]
        rows = archive.conn.execute(
            "SELECT id, title, text, metadata FROM items "
            f"WHERE id IN ({','.join('?' * len(chunk))})", chunk).fetchall()
        by_id = {r[0]: r for r in rows}
        for item_id in chunk:
            r = by_id.get(item_id)
            if r is None:
                continue
            text = archive.unzip(r[2])[:MAX_CHARS]
            title = r[1] or ""
            body = f"{title}\n\n{text}" if title and not text.startswith(title) else text
            yield item_id, body, _language(r[3])


def _language(meta: str | None) -> str | None:
    try:
        lang = json.loads(meta or "{}").get("language")
    except (ValueError, AttributeError):
        return None
    return lang.lower() if isinstance(lang, str) and lang else None


# -- reading results (here, not in the capability modules, so that show, search and exports
# read them without the optional extra) --------------------------------------------------
def _current(archive: Archive, item_id: int, column: str) -> object | None:
    row = archive.conn.execute(
        f"SELECT e.{column} FROM enrichment e JOIN items i ON i.id = e.item_id "
        "WHERE e.item_id = ? AND e.extracted_at IS i.extracted_at", (item_id,)).fetchone()
    return row[0] if row and row[0] is not None else None


def summary_of(archive: Archive, item_id: int) -> str | None:
    """The stored summary of an item's current text, or None."""
    return _current(archive, item_id, "summary") or None  # type: ignore[return-value]


def keyphrases_of(archive: Archive, item_id: int) -> list[str]:
    """The item's keyphrases, best first."""
    raw = _current(archive, item_id, "keyphrases")
    return [p for p, _ in json.loads(raw)] if isinstance(raw, str) else []


def related_of(archive: Archive, item_id: int) -> list[dict[str, object]]:
    """An item's nearest neighbours, closest first."""
    return [{"id": r[0], "score": round(r[1], 3), "title": r[2], "key": r[3]}
            for r in archive.conn.execute(
                "SELECT r.other_id, r.score, i.title, i.key FROM related r "
                "JOIN items i ON i.id = r.other_id WHERE r.item_id = ? "
                "ORDER BY r.score DESC, r.other_id", (item_id,))]


def topics_of(archive: Archive, item_id: int) -> list[dict[str, object]]:
    """An item's mixture in the active topic model, largest share first."""
    return [{"topic": r[0], "label": r[1], "weight": round(r[2], 3)}
            for r in archive.conn.execute(
                "SELECT it.topic, t.label, it.weight FROM item_topics it "
                "JOIN topic_models m ON m.id = it.model_id AND m.active = 1 "
                "JOIN topics t ON t.model_id = it.model_id AND t.topic = it.topic "
                "WHERE it.item_id = ? ORDER BY it.weight DESC", (item_id,))]


def duplicates_of(archive: Archive, item_id: int) -> list[int]:
    """The other items of the item's near-duplicate group."""
    group = _current(archive, item_id, "dup_group")
    if group is None:
        return []
    return [r[0] for r in archive.conn.execute(
        "SELECT item_id FROM enrichment WHERE dup_group = ? AND item_id != ? ORDER BY item_id",
        (group, item_id))]


def enriched(archive: Archive, item_id: int) -> dict[str, object]:
    """Everything enrichment knows about one item, for show --format json."""
    return {"summary": summary_of(archive, item_id),
            "keyphrases": keyphrases_of(archive, item_id),
            "topics": topics_of(archive, item_id),
            "related": related_of(archive, item_id),
            "duplicates": duplicates_of(archive, item_id)}


@dataclass
class Topic:
    id: int
    label: str
    terms: list[tuple[str, float]]
    coherence: float | None
    size: int = 0
    items: list[dict[str, Any]] = field(default_factory=list)  # the most representative

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.id, "label": self.label, "size": self.size,
                "coherence": None if self.coherence is None else round(self.coherence, 4),
                "terms": [t for t, _ in self.terms], "items": self.items}


def list_topics(archive: Archive, *, items: int = 3) -> list[Topic]:
    """The active model's topics with their size (items whose main topic it is) and their
    most representative items (highest share)."""
    row = archive.conn.execute(
        "SELECT id FROM topic_models WHERE active = 1 ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        return []
    model_id = row[0]
    out = [Topic(t, label, [(a, b) for a, b in json.loads(terms)], coh)
           for t, label, terms, coh in archive.conn.execute(
               "SELECT topic, label, terms, coherence FROM topics WHERE model_id = ? "
               "ORDER BY topic", (model_id,))]
    by_id = {t.id: t for t in out}
    for (topic, size) in archive.conn.execute(
            "SELECT topic, count(*) FROM (SELECT item_id, topic, max(weight) FROM item_topics "
            "WHERE model_id = ? GROUP BY item_id) GROUP BY topic", (model_id,)):
        by_id[topic].size = size
    for t in out:
        t.items = [{"id": r[0], "weight": round(r[1], 3), "title": r[2], "key": r[3]}
                   for r in archive.conn.execute(
                       "SELECT it.item_id, it.weight, i.title, i.key FROM item_topics it "
                       "JOIN items i ON i.id = it.item_id WHERE it.model_id = ? "
                       "AND it.topic = ? ORDER BY it.weight DESC, it.item_id LIMIT ?",
                       (model_id, t.id, items))]
    return out


def topic_months(archive: Archive) -> dict[int, dict[str, int]]:
    """Items per topic per month in the active model: each item counts once, in its main
    topic (largest share), in the month of its date: its published date when the metadata
    has a plausible one (a YYYY-MM from 1990 to now; metadata also holds 1601 and 2099),
    else the day it was added. Dates come from the two date indexes, never from the item
    rows, which hold the texts (a page over 100,000 items would read them all)."""
    c = archive.conn
    row = c.execute(
        "SELECT id FROM topic_models WHERE active = 1 ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        return {}
    now = time.strftime("%Y-%m", time.gmtime())
    month = dict(c.execute("SELECT id, strftime('%Y-%m', first_seen, 'unixepoch') "
                           "FROM items INDEXED BY items_first_seen"))
    month.update(c.execute(
        "SELECT id, substr(published, 1, 7) FROM items INDEXED BY items_published "
        "WHERE published >= '1990-01' AND published < ? "  # an index range: no NULLs
        "AND published GLOB '[12][0-9][0-9][0-9]-[01][0-9]*'", (now + "~",)))
    out: dict[int, dict[str, int]] = {}
    for item_id, topic, _ in c.execute("SELECT item_id, topic, max(weight) FROM item_topics "
                                       "WHERE model_id = ? GROUP BY item_id", (row[0],)):
        m = month.get(item_id)
        if m:
            by = out.setdefault(topic, {})
            by[m] = by.get(m, 0) + 1
    return out
