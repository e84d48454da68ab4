"""`textsieve stats`: what the archive holds, by status, type and error kind."""

from __future__ import annotations

import os
from typing import Any

from . import originals
from .store import Archive


def file_bytes(archive: Archive) -> int:
    """The archive's size on disk, its write-ahead log included (not yet checkpointed)."""
    paths = (archive.path, archive.path.with_name(archive.path.name + "-wal"))
    return sum(os.path.getsize(p) for p in paths if p.exists())


def totals(archive: Archive) -> dict[str, Any]:
    """The headline numbers, cheap enough to print after every run."""
    top, children, errors = archive.conn.execute(
        "SELECT sum(parent_id IS NULL), sum(parent_id IS NOT NULL), "
        "sum(status = 'error' AND parent_id IS NULL) FROM items").fetchone()
    return {"file": str(archive.path), "file_bytes": file_bytes(archive),
            "items": top or 0, "children": children or 0, "errors": errors or 0}


def stats(archive: Archive) -> dict[str, Any]:
    c = archive.conn
    chars, stored = c.execute("SELECT coalesce(sum(text_chars), 0), "
                              "coalesce(sum(length(text)), 0) FROM items").fetchone()
    return {
        **totals(archive),
        "text_chars": chars,
        "text_bytes_compressed": stored,
        "by_status": dict(c.execute(
            "SELECT status, count(*) FROM items GROUP BY status ORDER BY 2 DESC")),
        "by_error": dict(c.execute(
            "SELECT error_kind, count(*) FROM items WHERE error_kind IS NOT NULL "
            "GROUP BY error_kind ORDER BY 2 DESC")),
        "by_type": dict(c.execute(
            "SELECT mime_type, count(*) FROM items GROUP BY mime_type ORDER BY 2 DESC")),
        "originals": originals.usage(c).to_dict(),
        "sources": _source_states(c),
        "runs": [dict(zip(("id", "started", "ended", "status"), r, strict=True))
                 for r in c.execute("SELECT id, datetime(started, 'unixepoch'), "
                                    "datetime(ended, 'unixepoch'), status FROM runs "
                                    "ORDER BY id DESC LIMIT 5")],
    }


def _source_states(c: Any) -> dict[str, int]:
    """Items whose source was checked (fetched), and of those how many failed last time
    (gone, their text from an earlier capture); captures kept in all."""
    checked, gone = c.execute("SELECT count(*), coalesce(sum(gone_since IS NOT NULL), 0) "
                              "FROM checks").fetchone()
    captures, earlier = c.execute("SELECT count(*), coalesce(sum(NOT current), 0) "
                                  "FROM captures").fetchone()
    return {"checked": checked, "gone": gone, "alive": checked - gone,
            "captures": captures, "earlier_captures": earlier}


def format_stats(s: dict[str, Any]) -> str:
    o, src = s["originals"], s["sources"]
    lines = [f"archive      {s['file']} ({s['file_bytes'] / 1e6:.1f} MB)",
             f"items        {s['items']:,} (+{s['children']:,} members/attachments)",
             f"text         {s['text_chars']:,} chars, "
             f"{s['text_bytes_compressed'] / 1e6:.1f} MB compressed",
             f"originals    {o['count']:,} kept, {o['size'] / 1e6:.1f} MB as received, "
             f"{(o['stored_rows'] + o['stored_files']) / 1e6:.1f} MB stored "
             f"({o['stored_files'] / 1e6:.1f} MB in {o['files']:,} file(s) beside the "
             f"archive); {o['unused']:,} unused (textsieve gc)",
             f"captures     {src['captures']:,} ({src['earlier_captures']:,} earlier ones "
             f"kept)",
             f"sources      {src['checked']:,} checked: {src['alive']:,} alive, "
             f"{src['gone']:,} gone (their text from an earlier capture)"]
    for title, key in (("by status", "by_status"), ("by error", "by_error"),
                       ("by type", "by_type")):
        if s[key]:
            lines.append(f"\n{title}:")
            width = max(len(str(k)) for k in s[key])
            lines += [f"  {k!s:<{width}}  {v:>8,}" for k, v in s[key].items()]
    if s["runs"]:
        lines.append("\nlast runs:")
        lines += [f"  #{r['id']}  {r['started']} -> {r['ended'] or '…'}  {r['status']}"
                  for r in s["runs"]]
    return "\n".join(lines)
