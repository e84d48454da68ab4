"""Chunks of archived items, each carrying where it comes from in the archive.

The chunking itself is ``textsieve.chunking`` (the same for a document just extracted);
this adds what only the archive knows: the item's id and key, the file path or URL it was
read from, its parent when it is an attachment or a member, and its title. Used by
``textsieve export --format chunks``, ``GET /v1/items/{id}/chunks`` and the MCP server.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import IO, Any

from ..chunking import Chunk, chunk
from ..filekeys import key_path
from ..outfiles import write_file
from .export import ExportError
from .store import Archive


def item_ref(archive: Archive, item_id: int) -> dict[str, Any] | None:
    """What a chunk says of its item: id, key, ``path`` (a file) or ``url``, name, title,
    and for a child its ``parent_id`` and ``root`` (the top-level item's path or URL)."""
    row = archive.conn.execute(
        "SELECT key, parent_id, name, title FROM items WHERE id = ?",
        (item_id,)).fetchone()
    if row is None:
        return None
    key, parent, name, title = row
    ref: dict[str, Any] = {"id": item_id, "key": key}
    if parent is None:
        _locate(ref, key)
    else:
        ref["parent_id"] = parent
        top = archive.lineage(item_id)[0]
        root: dict[str, Any] = {}
        _locate(root, top[1])
        ref["root"] = root.get("path") or root.get("url") or top[1]
    if name:
        ref["name"] = name
    if title:
        ref["title"] = title
    return ref


def _locate(ref: dict[str, Any], key: str) -> None:
    if key.startswith(("http://", "https://")):
        ref["url"] = key
        return
    path = key_path(key)
    if path is not None:
        ref["path"] = path


def item_chunks(archive: Archive, item_id: int, max_tokens: int, overlap: int = 0, *,
                tokenizer: Any = None) -> list[Chunk] | None:
    """The chunks of one archived item's own text (its children are items of their own),
    or None if there is no such item."""
    doc = archive.document(item_id, children=False)
    ref = item_ref(archive, item_id)
    if doc is None or ref is None:
        return None
    return chunk(doc, max_tokens, overlap, tokenizer=tokenizer, item=ref, children=False)


def all_chunks(archive: Archive, max_tokens: int, overlap: int = 0, *,
               tokenizer: Any = None, counts: Counter[str] | None = None,
               label: str | None = None) -> Iterator[Chunk]:
    """The chunks of every item with text, one item at a time (bounded memory), in
    archive order: each top-level item followed by its attachments and members.
    ``label``: only the items with that label and their parts."""
    from ..chunking import get_tokenizer
    from .labels import LABEL_SQL

    tok = get_tokenizer(tokenizer)  # once, and a bad one before anything is written
    counts = Counter() if counts is None else counts
    where, args = (f" AND {LABEL_SQL}", (label,)) if label else ("", ())
    ids = [i for (i,) in archive.conn.execute(
        "SELECT id FROM items i NOT INDEXED WHERE status != 'error' AND text_chars > 0"
        f"{where} ORDER BY id", args)]
    for iid in ids:
        chunks = item_chunks(archive, iid, max_tokens, overlap, tokenizer=tok)
        if not chunks:
            continue
        counts["items"] += 1
        counts["chunks"] += len(chunks)
        yield from chunks


def export_chunks(archive: Archive, to: str, max_tokens: int, overlap: int = 0, *,
                  tokenizer: Any = None, counts: Counter[str] | None = None,
                  label: str | None = None) -> int:
    """``textsieve export --format chunks``: JSON Lines, one chunk a line (``-``: stdout).
    Returns how many items were chunked."""
    counts = Counter() if counts is None else counts
    it = all_chunks(archive, max_tokens, overlap, tokenizer=tokenizer, counts=counts,
                    label=label)

    def lines() -> Iterator[str]:
        for c in it:
            yield json.dumps(c.to_dict(), ensure_ascii=False) + "\n"

    if to == "-":
        import sys

        for line in lines():
            sys.stdout.write(line)
        sys.stdout.flush()
        return counts["items"]

    def fill(f: IO[bytes]) -> None:
        for line in lines():
            f.write(line.encode("utf-8"))

    try:
        write_file(to, fill)
    except OSError as exc:
        raise ExportError(f"cannot write {to}: {exc.strerror or exc}") from exc
    return counts["items"]


