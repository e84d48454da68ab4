"""`textsieve export`: the archive written out as text files, JSON Lines, Parquet, or the
kept originals as WARC (``archive/warc.py``).

Every format streams: top-level items are read one at a time (with their descendants), so
an archive of any size exports in bounded memory. Files are written through
``textsieve.outfiles``: under a fresh temporary name, renamed into place, never through a
symlink and never outside the target folder, so an interrupted export never leaves a
truncated file that looks complete, and a hostile name or a planted link cannot redirect it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from operator import methodcaller
from pathlib import Path
from typing import IO, Any

from ..errors import TextsieveError
from ..filekeys import readable
from ..outfiles import common_root, item_parts, shorten, write_file, write_under
from .labels import LABEL_SQL
from .store import Archive

log = logging.getLogger(__name__)

FORMATS = ("txt", "jsonl", "parquet", "warc")
ROW_GROUP_ROWS = 1000  # parquet rows per row group ...
ROW_GROUP_BYTES = 64 << 20  # ... or fewer when their texts add up to this many bytes


class ExportError(TextsieveError):
    """The export cannot be done (unwritable target, missing pyarrow, unknown format)."""


# One row per item, the same columns in JSONL and Parquet.
COLUMNS = ("id", "parent_id", "root_id", "key", "original", "name", "mime_type", "status",
           "error_kind", "error_message", "title", "metadata", "text", "markdown", "sha256",
           "size", "text_chars", "warnings", "first_seen", "last_seen", "extracted_at",
           "extractor_version", "sources", "mails", "summary", "labels", "listings",
           "language")

_SELECT = ("SELECT id, parent_id, key, original, name, mime_type, status, error_kind, "
           "error_message, title, metadata, text, markdown, sha256, size, text_chars, "
           "warnings, first_seen, last_seen, extracted_at, extractor_version, "
           # the summary of the item's current text (textsieve summarize), if any
           "(SELECT e.summary FROM enrichment e WHERE e.item_id = items.id "
           "AND e.extracted_at IS items.extracted_at) FROM items ")


def export(archive: Archive, to: str | os.PathLike[str], fmt: str = "txt", *,
           counts: Counter[str] | None = None,
           on_error: Callable[[str], None] | None = None, label: str | None = None) -> int:
    """Write the archive to ``to`` in ``fmt``; returns how many top-level items were written.

    ``counts`` (optional) receives the details: ``items``, ``children`` (child rows, JSONL
    and Parquet), ``skipped error`` / ``skipped empty`` (txt: items without text),
    ``renamed`` (txt: names that clashed and got an ``~ID`` suffix) and ``failed`` (txt:
    files that could not be written; each is passed to ``on_error`` as one line, logged
    by default, and the export goes on: one bad item never costs the others).
    ``label``: only the items with that label (any source, any case) and their parts.
    """
    counts = Counter() if counts is None else counts
    if label and fmt == "warc":
        raise ExportError("--label selects items for txt, jsonl and parquet; a WARC holds "
                          "every kept original")
    if fmt == "txt":
        _export_txt(archive, Path(to), counts, on_error or log.warning, label)
    elif fmt == "jsonl":
        _export_jsonl(archive, str(to), counts, label)
    elif fmt == "parquet":
        _export_parquet(archive, Path(to), counts, label)
    elif fmt == "warc":
        _export_warc(archive, str(to), counts, on_error or log.warning)
    else:
        raise ExportError(f"unknown export format {fmt!r} (choose from {', '.join(FORMATS)})")
    return counts["items"]


def _top_level(archive: Archive, label: str | None = None
               ) -> Iterator[tuple[int, str, str | None]]:
    """(id, key, status) of every top-level item (with ``label``: those with it), in
    archive order, from one cursor.

    Read from the table itself, not through an index: an index that silently lost entries
    (damage only an integrity check sees) must not make items vanish from an export.
    """
    if label:
        yield from archive.conn.execute(
            "SELECT id, key, status FROM items i NOT INDEXED WHERE parent_id IS NULL AND "
            f"{LABEL_SQL} ORDER BY id", (label,))
        return
    yield from archive.conn.execute(
        "SELECT id, key, status FROM items NOT INDEXED WHERE parent_id IS NULL ORDER BY id")


# -- txt: a mirrored tree of NAME.txt files ---------------------------------------------------
def _export_txt(archive: Archive, out: Path, counts: Counter[str],
                on_error: Callable[[str], None], label: str | None = None) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"cannot create folder {out}: {exc.strerror or exc}") from exc
    if not os.access(out, os.W_OK | os.X_OK):
        raise ExportError(f"cannot write into folder {out}: permission denied")
    root = common_root(key for _, key, _ in _top_level(archive, label))
    used: set[int] = set()  # hashes of the names written, to catch clashes cheaply
    for item_id, key, _status in _top_level(archive, label):
        doc = archive.document(item_id)
        if doc is None:  # deleted by a concurrent run since the listing
            continue
        text = doc.full_text()
        if not text.strip():
            counts["skipped error" if doc.error else "skipped empty"] += 1
            continue
        parts = txt_parts(key, root)
        if hash(tuple(parts)) in used:
            counts["renamed"] += 1
            parts[-1] = _with_id(parts[-1], item_id)
        used.add(hash(tuple(parts)))
        body = (text.rstrip("\n") + "\n").encode("utf-8", "surrogatepass")
        try:
            try:
                write_under(out, parts, methodcaller("write", body))
            except (IsADirectoryError, NotADirectoryError):
                # a file and a folder of the same name (e.g. "a.txt" the file and "a.txt/"
                # the folder): keep both, the later one beside the tree's root with its id
                counts["renamed"] += 1
                write_under(out, [_with_id(parts[-1], item_id)], methodcaller("write", body))
        except OSError as exc:  # this item only: the export goes on with the next one
            counts["failed"] += 1
            where = readable(os.path.join(os.fspath(out), *parts))
            on_error(f"{where}: not written: {exc.strerror or exc}")
            continue
        counts["items"] += 1


def _with_id(name: str, item_id: int) -> str:
    """``x.pdf.txt`` -> ``x.pdf~ID.txt`` (within the name length limit)."""
    return shorten(f"{name[:-4]}~{item_id}.txt", keep_suffix=f"~{item_id}.txt")


def txt_relpath(key: str, root: str | None) -> str:
    """Where an item's text goes, relative to the export folder: ``a/example.pdf.txt``."""
    return os.path.join(*txt_parts(key, root))


def txt_parts(key: str, root: str | None) -> list[str]:
    """The path parts of an item's text file below the export folder: the item's own
    (``outfiles.item_parts``: safe, inside the folder whatever the key) plus ``.txt``."""
    parts = item_parts(key, root)
    parts[-1] = shorten(parts[-1] + ".txt", keep_suffix=".txt")
    return parts


# -- rows: JSONL and Parquet -----------------------------------------------------------------
def rows(archive: Archive, counts: Counter[str] | None = None, label: str | None = None
         ) -> Iterator[dict[str, Any]]:
    """Every item as a flat row, each top-level item followed by its descendants.

    Children carry the provenance of their top-level item: the source specs (sources
    name files, and a member came from wherever its container came from) and the mails
    whose links or attachments it was (message id, date, sender, subject, labels), its
    labels from every source, and what lists said of it (``listings``: title, note, date).
    """
    from .labels import labels_of, listings_of

    counts = Counter() if counts is None else counts
    c = archive.conn
    for root_id, _key, _status in _top_level(archive, label):
        labels = labels_of(c, root_id)
        listings = listings_of(c, root_id)
        sources = [s for (s,) in c.execute(
            "SELECT s.spec FROM provenance p JOIN sources s ON s.id = p.source_id "
            "WHERE p.item_id = ? ORDER BY s.id", (root_id,))]
        mails = archive.mails_of(root_id)
        cur = c.execute(
            _SELECT + "WHERE id = ?1 OR id IN (WITH RECURSIVE d(id) AS ("
            "SELECT id FROM items WHERE parent_id = ?1 UNION ALL "
            "SELECT i.id FROM items i JOIN d ON i.parent_id = d.id) SELECT id FROM d) "
            "ORDER BY id", (root_id,))  # ids are assigned depth first: parents come first
        for r in cur:
            (iid, parent, key, original, name, mime, status, ekind, emsg, title, meta, text,
             md, sha, size, chars, warnings, first, last, extracted, version, summary) = r
            text_s = archive.unzip(text)
            meta_d = json.loads(meta) if meta else {}
            yield {
                "id": iid, "parent_id": parent, "root_id": root_id, "key": key,
                "original": original, "name": name, "mime_type": mime, "status": status,
                "error_kind": ekind, "error_message": emsg, "title": title,
                "metadata": meta_d,
                "text": text_s, "markdown": archive.unzip(md) if md else text_s,
                "sha256": sha, "size": size, "text_chars": chars,
                "warnings": json.loads(warnings) if warnings else [],
                "first_seen": first, "last_seen": last, "extracted_at": extracted,
                "extractor_version": version, "sources": sources, "mails": mails,
                "summary": summary, "labels": labels, "listings": listings,
                "language": meta_d.get("language"),
            }
            counts["children" if parent is not None else "items"] += 1


def _export_jsonl(archive: Archive, to: str, counts: Counter[str],
                  label: str | None = None) -> None:
    if to == "-":
        out = sys.stdout
        for row in rows(archive, counts, label):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        out.flush()
        return
    def fill(f: IO[bytes]) -> None:
        for row in rows(archive, counts, label):
            f.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))

    try:
        write_file(to, fill)
    except OSError as exc:
        raise ExportError(f"cannot write {to}: {exc.strerror or exc}") from exc


def _export_warc(archive: Archive, to: str, counts: Counter[str],
                 on_error: Callable[[str], None]) -> None:
    """Every kept original (wherever it lives: a row or the folder beside the archive) as
    a WARC/1.1 record with its provenance (``archive.warc``)."""
    from .warc import write_warc

    try:
        write_file(to, lambda f: write_warc(archive, f, counts, on_error))
    except OSError as exc:
        raise ExportError(f"cannot write {to}: {exc.strerror or exc}") from exc


def _export_parquet(archive: Archive, to: Path, counts: Counter[str],
                    label: str | None = None) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ExportError("Parquet export needs pyarrow: pip install 'textsieve[parquet]'"
                          ) from exc
    s, i, f = pa.string(), pa.int64(), pa.float64()
    schema = pa.schema([
        ("id", i), ("parent_id", i), ("root_id", i), ("key", s), ("original", s),
        ("name", s), ("mime_type", s), ("status", s), ("error_kind", s),
        ("error_message", s), ("title", s), ("metadata", s), ("text", s), ("markdown", s),
        ("sha256", s), ("size", i), ("text_chars", i), ("warnings", pa.list_(s)),
        ("first_seen", f), ("last_seen", f), ("extracted_at", f),
        ("extractor_version", s), ("sources", pa.list_(s)),
        ("mails", pa.list_(pa.struct([
            ("message_id", s), ("date", s), ("from", s), ("subject", s),
            ("labels", pa.list_(s)), ("source", s)]))),
        ("summary", s), ("labels", pa.list_(s)),
        ("listings", pa.list_(pa.struct([("source", s), ("title", s), ("note", s),
                                         ("listed", s)]))),
        ("language", s),  # declared by the document, or detected from its text
    ])
    assert tuple(schema.names) == COLUMNS

    def flush(writer: Any, batch: list[dict[str, Any]]) -> None:
        cols = {n: [r[n] for r in batch] for n in COLUMNS}
        cols["metadata"] = [json.dumps(m, ensure_ascii=False, default=str)
                            for m in cols["metadata"]]
        writer.write_table(pa.table(cols, schema=schema))
        batch.clear()

    def fill(fh: IO[bytes]) -> None:
        with pq.ParquetWriter(fh, schema, compression="zstd") as writer:
            batch: list[dict[str, Any]] = []
            size = 0
            for row in rows(archive, counts, label):
                batch.append(row)
                size += len(row["text"]) + len(row["markdown"])
                if len(batch) >= ROW_GROUP_ROWS or size >= ROW_GROUP_BYTES:
                    flush(writer, batch)
                    size = 0
            if batch:
                flush(writer, batch)

    try:
        write_file(to, fill)
    except OSError as exc:
        raise ExportError(f"cannot write {to}: {exc.strerror or exc}") from exc
