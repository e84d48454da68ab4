"""`textsieve export`: the archive written out as text files, JSON Lines or Parquet.

Every format streams: top-level items are read one at a time (with their descendants), so
an archive of any size exports in bounded memory. Files are written under a temporary
name and renamed into place, so an interrupted export never leaves a truncated file that
looks complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from .store import Archive

FORMATS = ("txt", "jsonl", "parquet")
ROW_GROUP_ROWS = 1000  # parquet rows per row group ...
ROW_GROUP_BYTES = 64 << 20  # ... or fewer when their texts add up to this many bytes
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# Characters no portable file name may hold (NUL and controls everywhere, the rest on
# Windows or in shells); each becomes "_".
_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"|?*\\/]')
_MAX_NAME_BYTES = 240  # below the usual 255-byte limit, leaving room for ".txt" and "~ID"


class ExportError(Exception):
    """The export cannot be done (unwritable target, missing pyarrow, unknown format)."""


# One row per item, the same columns in JSONL and Parquet.
COLUMNS = ("id", "parent_id", "root_id", "key", "original", "name", "mime_type", "status",
           "error_kind", "error_message", "title", "metadata", "text", "markdown", "sha256",
           "size", "text_chars", "warnings", "first_seen", "last_seen", "extracted_at",
           "extractor_version", "sources", "mails", "summary")

_SELECT = ("SELECT id, parent_id, key, original, name, mime_type, status, error_kind, "
           "error_message, title, metadata, text, markdown, sha256, size, text_chars, "
           "warnings, first_seen, last_seen, extracted_at, extractor_version, "
           # the summary of the item's current text (textsieve summarize), if any
           "(SELECT e.summary FROM enrichment e WHERE e.item_id = items.id "
           "AND e.extracted_at IS items.extracted_at) FROM items ")


def export(archive: Archive, to: str | os.PathLike[str], fmt: str = "txt", *,
           counts: Counter[str] | None = None) -> int:
    """Write the archive to ``to`` in ``fmt``; returns how many top-level items were written.

    ``counts`` (optional) receives the details: ``items``, ``children`` (child rows, JSONL
    and Parquet), ``skipped error`` / ``skipped empty`` (txt: items without text) and
    ``renamed`` (txt: names that clashed and got an ``~ID`` suffix).
    """
    counts = Counter() if counts is None else counts
    if fmt == "txt":
        _export_txt(archive, Path(to), counts)
    elif fmt == "jsonl":
        _export_jsonl(archive, str(to), counts)
    elif fmt == "parquet":
        _export_parquet(archive, Path(to), counts)
    else:
        raise ExportError(f"unknown export format {fmt!r} (choose from {', '.join(FORMATS)})")
    return counts["items"]


def _top_level(archive: Archive) -> Iterator[tuple[int, str, str | None]]:
    """(id, key, status) of every top-level item, in archive order, from one cursor."""
    yield from archive.conn.execute(
        "SELECT id, key, status FROM items WHERE parent_id IS NULL ORDER BY id")


# -- txt: a mirrored tree of NAME.txt files ---------------------------------------------------
def _export_txt(archive: Archive, out: Path, counts: Counter[str]) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"cannot create folder {out}: {exc.strerror or exc}") from exc
    if not os.access(out, os.W_OK | os.X_OK):
        raise ExportError(f"cannot write into folder {out}: permission denied")
    real_out = os.path.realpath(out)
    root = _common_root(key for _, key, _ in _top_level(archive))
    used: set[int] = set()  # hashes of the names written, to catch clashes cheaply
    for item_id, key, _status in _top_level(archive):
        doc = archive.document(item_id)
        if doc is None:  # deleted by a concurrent run since the listing
            continue
        text = doc.full_text()
        if not text.strip():
            counts["skipped error" if doc.error else "skipped empty"] += 1
            continue
        rel = txt_relpath(key, root)
        if hash(rel) in used:
            counts["renamed"] += 1
            rel = f"{rel[:-4]}~{item_id}.txt"
        used.add(hash(rel))
        target = os.path.join(real_out, rel)
        try:
            parent = os.path.dirname(target)
            os.makedirs(parent, exist_ok=True)
            if not _inside(os.path.realpath(parent), real_out):  # a symlink in the tree
                raise ExportError(f"{parent}: leads outside {out} (symlink); not written")
            with _atomic(target, "w") as f:
                f.write(text.rstrip("\n") + "\n")
        except (IsADirectoryError, NotADirectoryError, FileExistsError):
            # a file and a folder of the same name (e.g. "a.txt" the file and "a.txt/" the
            # folder): keep both, the later one beside the tree's root with its id
            counts["renamed"] += 1
            alt = os.path.join(real_out, f"{os.path.basename(rel)[:-4]}~{item_id}.txt")
            with _atomic(alt, "w") as f:
                f.write(text.rstrip("\n") + "\n")
        except OSError as exc:
            raise ExportError(f"cannot write {target}: {exc.strerror or exc}") from exc
        counts["items"] += 1


def _common_root(keys: Iterator[str]) -> str | None:
    """The deepest folder holding every file key (URLs and other keys do not count)."""
    root: str | None = None
    for key in keys:
        if _URL.match(key) or not os.path.isabs(key):
            continue
        folder = os.path.dirname(key)
        root = folder if root is None else os.path.commonpath([root, folder])
    return root


def txt_relpath(key: str, root: str | None) -> str:
    """Where an item's text goes, relative to the export folder: ``a/example.pdf.txt``.

    Files mirror their path below ``root``; URLs go under ``HOST/PATH`` (``index`` for a
    path ending in ``/``); anything else is treated as a relative path. Every part is made
    safe: no empty, ``.`` or ``..`` parts, no separators or control characters inside a
    part, no over-long names, so the result always stays inside the export folder.
    """
    if _URL.match(key):
        u = urlsplit(key)
        host = u.hostname or "host"
        if u.port:
            host += f"_{u.port}"
        path = u.path if not u.path.endswith("/") else u.path + "index"
        if u.query:
            path += f"?{u.query}"
        parts = [host, *path.split("/")]
    elif root is not None and os.path.isabs(key) and _inside(key, root):
        parts = Path(os.path.relpath(key, root)).parts
    else:
        parts = Path(key).parts[1:] if os.path.isabs(key) else Path(key).parts
    safe = [_safe(p) for p in parts if p not in ("", ".", os.sep, "/")]
    if not safe:
        safe = ["item"]
    safe[-1] = _shorten(safe[-1] + ".txt", keep_suffix=".txt")
    return os.path.join(*safe)


def _safe(part: str) -> str:
    part = _UNSAFE.sub("_", part)
    if part in ("..", "."):
        part = part.replace(".", "_")
    return _shorten(part)


def _shorten(name: str, keep_suffix: str = "") -> str:
    """Cut a name to the byte limit, keeping it unique with a short hash of the whole."""
    if len(name.encode("utf-8")) <= _MAX_NAME_BYTES:
        return name
    tag = "~" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]
    stem = name[: len(name) - len(keep_suffix)] if keep_suffix else name
    budget = _MAX_NAME_BYTES - len(tag) - len(keep_suffix.encode())
    stem = stem.encode("utf-8")[:budget].decode("utf-8", "ignore")
    return stem + tag + keep_suffix


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives
        return False


@contextmanager
def _atomic(path: str | Path, mode: str) -> Iterator[IO[Any]]:
    """Write to ``path.partial`` and rename over ``path`` only once complete."""
    tmp = f"{path}.partial"
    try:
        with open(tmp, mode, encoding=None if "b" in mode else "utf-8",
                  newline=None if "b" in mode else "\n") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


# -- rows: JSONL and Parquet -----------------------------------------------------------------
def rows(archive: Archive, counts: Counter[str] | None = None) -> Iterator[dict[str, Any]]:
    """Every item as a flat row, each top-level item followed by its descendants.

    Children carry the provenance of their top-level item: the source specs (sources
    name files, and a member came from wherever its container came from) and the mails
    whose links or attachments it was (message id, date, sender, subject, labels).
    """
    counts = Counter() if counts is None else counts
    c = archive.conn
    for root_id, _key, _status in _top_level(archive):
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
            yield {
                "id": iid, "parent_id": parent, "root_id": root_id, "key": key,
                "original": original, "name": name, "mime_type": mime, "status": status,
                "error_kind": ekind, "error_message": emsg, "title": title,
                "metadata": json.loads(meta) if meta else {},
                "text": text_s, "markdown": archive.unzip(md) if md else text_s,
                "sha256": sha, "size": size, "text_chars": chars,
                "warnings": json.loads(warnings) if warnings else [],
                "first_seen": first, "last_seen": last, "extracted_at": extracted,
                "extractor_version": version, "sources": sources, "mails": mails,
                "summary": summary,
            }
            counts["children" if parent is not None else "items"] += 1


def _export_jsonl(archive: Archive, to: str, counts: Counter[str]) -> None:
    if to == "-":
        out = sys.stdout
        for row in rows(archive, counts):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        out.flush()
        return
    try:
        with _atomic(to, "w") as f:
            for row in rows(archive, counts):
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise ExportError(f"cannot write {to}: {exc.strerror or exc}") from exc


def _export_parquet(archive: Archive, to: Path, counts: Counter[str]) -> None:
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
        ("summary", s),
    ])
    assert tuple(schema.names) == COLUMNS

    def flush(writer: Any, batch: list[dict[str, Any]]) -> None:
        cols = {n: [r[n] for r in batch] for n in COLUMNS}
        cols["metadata"] = [json.dumps(m, ensure_ascii=False, default=str)
                            for m in cols["metadata"]]
        writer.write_table(pa.table(cols, schema=schema))
        batch.clear()

    try:
        with _atomic(to, "wb") as fh, pq.ParquetWriter(fh, schema,
                                                       compression="zstd") as writer:
            batch: list[dict[str, Any]] = []
            size = 0
            for row in rows(archive, counts):
                batch.append(row)
                size += len(row["text"]) + len(row["markdown"])
                if len(batch) >= ROW_GROUP_ROWS or size >= ROW_GROUP_BYTES:
                    flush(writer, batch)
                    size = 0
            if batch:
                flush(writer, batch)
    except OSError as exc:
        raise ExportError(f"cannot write {to}: {exc.strerror or exc}") from exc
