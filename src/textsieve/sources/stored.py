"""The archive's own kept originals as a source: what ``textsieve reextract`` reads.

Each top-level item whose current capture kept its original becomes an Item naming that
original (``Item.stored``); the runner reads the bytes from the archive and extracts them
like the first time (a web page as a web page, with the type and charset it was served
with), so the whole archive can be extracted again with a new textsieve or other options,
offline. The item keeps the provenance it had (the source that named it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from ..archive.store import Archive
from ..errors import UsageError
from ..model import Item

SPEC = "reextract:"


@dataclass(frozen=True)
class Selection:
    """Which items: ids, a MIME type (prefix), first seen since / until (YYYY-MM-DD),
    a label. Empty fields select everything."""

    ids: tuple[int, ...] = ()
    mime: str | None = None
    since: str | None = None
    until: str | None = None
    label: str | None = None

    def where(self) -> tuple[str, list[object]]:
        sql: list[str] = []
        args: list[object] = []
        if self.ids:
            sql.append(f"i.id IN ({','.join('?' * len(self.ids))})")
            args += list(self.ids)
        if self.mime:
            sql.append("i.mime_type LIKE ?")
            args.append(self.mime.rstrip("*") + "%")
        for bound, op in ((self.since, ">="), (self.until, "<")):
            if bound:
                sql.append(f"i.first_seen {op} ?")
                args.append(_epoch(bound, end=op == "<"))
        if self.label:
            from ..archive.labels import LABEL_SQL

            sql.append(LABEL_SQL)  # any source's label: a mail's, a folder, a tag
            args.append(self.label)
        return "".join(f" AND {w}" for w in sql), args


def _epoch(day: str, *, end: bool) -> float:
    try:
        t = time.mktime(time.strptime(day, "%Y-%m-%d"))
    except ValueError:
        raise UsageError(f"{day!r} is not a date like 2024-05-31") from None
    return t + 86400 if end else t


class StoredSource:
    """Top-level items with a kept original, in id order; ``without`` counts the selected
    ones without (their originals were not kept: only their source can give them again)."""

    spec = SPEC

    def __init__(self, archive: Archive, selection: Selection = Selection()) -> None:
        self.archive, self.selection = archive, selection
        where, args = selection.where()
        base = ("FROM items i LEFT JOIN captures c ON c.item_id = i.id AND c.current "
                f"WHERE i.parent_id IS NULL{where}")
        self._ids = [r[0] for r in archive.conn.execute(
            f"SELECT i.id {base} AND c.original IS NOT NULL ORDER BY i.id", args)]
        self.without = archive.conn.execute(
            f"SELECT count(*) {base} AND c.original IS NULL", args).fetchone()[0]

    def count(self) -> int:
        return len(self._ids)

    def items(self) -> Iterator[Item]:
        for start in range(0, len(self._ids), 256):  # rows read a chunk at a time: the
            chunk = self._ids[start:start + 256]  # writer commits between chunks
            rows = self.archive.conn.execute(
                "SELECT i.key, i.original, i.name, c.original, (SELECT s.spec FROM provenance "
                "p JOIN sources s ON s.id = p.source_id WHERE p.item_id = i.id "
                "ORDER BY p.last_run DESC LIMIT 1) FROM items i JOIN captures c "
                "ON c.item_id = i.id AND c.current "
                f"WHERE i.id IN ({','.join('?' * len(chunk))}) ORDER BY i.id",
                chunk).fetchall()
            for key, original, name, sha, spec in rows:
                yield Item(key=key, original=original or key, source=spec or SPEC,
                           name=name, stored=sha)
