"""The archive: one SQLite file holding every item's text, compressed, searchable.

One writer (the driver of a run) writes in batches, one transaction per batch, in WAL
mode: a run killed at any moment leaves every committed batch intact and nothing half
written, and readers (search, show) work while a run writes. A file that is not a
textsieve archive is never modified: it is refused with ``ArchiveError``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

from ..errors import TextsieveError
from ..model import Document, ErrorInfo, ErrorKind, Item, MailRef, Metadata, Page, Status
from ..model.items import Response
from . import labels, schema

# zstd 9: 4.2x on dev-corpus texts (zlib 6: 3.8x, zstd 19: 4.5x at 1/20 the speed), ~0.1 ms
# per item, so never the bottleneck of a run; see bench/bench_archive.py and bench/README.md.
ZSTD_LEVEL = 9
_SQLITE_MAGIC = b"SQLite format 3\x00"
# Archives up to this size (file and write-ahead log) get SQLite's integrity check each time
# they are opened (every page, tree and index entry: ~0.25 s per 100 MB, cached); bigger ones
# only by `textsieve check`. A damaged archive is then refused before anything reads or
# writes it. (The quick check is not enough: an index that lost entries but is well-formed
# passes it, and made `export` write 9 of 110 items with exit 0.)
CHECK_MAX_BYTES = 256 << 20
# Originals whose compressed bytes are above this live as files in a folder beside the
# archive (FILE.originals/ab/abcd...zst), the rest as rows: below 1 MiB SQLite writes
# them faster than synced files (20x at 16 KiB), from 1 MiB up files are 1.6-3.8x faster to
# write and 3-20x faster to read, and SQLite cannot hold a value above 1 GB at all
# (bench/bench_originals.py).
ORIGINAL_INLINE_MAX = 1 << 20
ORIGINAL_LEVEL_LARGE = 3  # zstd level for large originals (mostly compressed formats)
# A fetch whose text is this much shorter than the good capture's, and short, is a page
# that shrank to a cookie wall, a paywall teaser or a parked-domain page: the good text stays.
SHRINK_RATIO = 0.25
SHRINK_CHARS = 2000
logger = logging.getLogger(__name__)
REPAIR_HINT = "`textsieve check --repair` rebuilds it from what is readable, keeping a backup"


class ArchiveError(TextsieveError):
    """The archive file cannot be used (not SQLite, not ours, damaged, too new)."""


@dataclass(frozen=True)
class Known:
    """What the archive remembers about an item, enough to decide whether to redo it."""

    id: int
    sha256: str | None
    size: int | None
    mtime_ns: int | None
    status: str
    extractor_version: str | None
    error_kind: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    original: str | None = None  # SHA-256 of the current capture's kept original
    # Why the last fetch of a good item failed, while its capture stands (``checks``:
    # gone since then): ``--retry-errors`` asks again for one that may pass.
    failing: str | None = None


@dataclass(frozen=True)
class Original:
    """Bytes as received, to keep content-addressed: in memory, or a file to stream."""

    sha256: str
    size: int
    data: bytes | None = None
    path: str | None = None

    @classmethod
    def of(cls, data: bytes) -> Original:
        return cls(hashlib.sha256(data).hexdigest(), len(data), data=data)


@dataclass(frozen=True)
class Check:
    """The outcome of asking an item's source for it this run (a fetch): a failure updates
    the source's state, never a good capture."""

    at: float
    http_status: int | None = None
    error: ErrorInfo | None = None
    url: str | None = None  # the address asked (None: the item's own)


@dataclass
class Entry:
    """One extracted top-level item, ready to be written."""

    item: Item
    doc: Document
    validators: tuple[str | None, str | None] | None = None  # HTTP (etag, last_modified)
    response: Response | None = None  # what the server answered with the bytes
    original: Original | None = None  # the bytes, when they are kept
    check: Check | None = None  # a fetch's outcome (None: not fetched this run)
    stored: str | None = None  # made from this kept original (re-extraction)


class Archive:
    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False,
                 check: bool = True) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._check = check  # integrity check on open (small archives)
        check_file(self.path)
        if readonly:
            uri = f"file:{self.path}?mode=ro"
            self.conn = sqlite3.connect(uri, uri=True, isolation_level=None,
                                        check_same_thread=False)
        else:
            self.conn = sqlite3.connect(self.path, isolation_level=None,
                                        check_same_thread=False)
        self._zc = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
        self._zd = zstandard.ZstdDecompressor()
        self.conn.create_function("ts_unzstd", 1, self._unzstd_sql, deterministic=True)
        try:
            self._setup()
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            if "locked" in str(exc) or "busy" in str(exc):
                raise ArchiveError(f"{self.path}: in use by another process ({exc})") from exc
            raise ArchiveError(f"{self.path}: damaged ({exc}); {REPAIR_HINT}") from exc

    # -- opening ----------------------------------------------------------------------------
    def _setup(self) -> None:
        c = self.conn
        c.execute("PRAGMA busy_timeout = 30000")
        app_id = c.execute("PRAGMA application_id").fetchone()[0]
        version = c.execute("PRAGMA user_version").fetchone()[0]
        tables = c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id != schema.APPLICATION_ID and (tables or version):
            raise ArchiveError(f"{self.path}: an SQLite database, but not a textsieve archive")
        if version > schema.VERSION:
            raise ArchiveError(f"{self.path}: made by a newer textsieve (schema {version}, "
                               f"this one knows up to {schema.VERSION})")
        if self._check and version and _size(self.path) <= CHECK_MAX_BYTES:
            problems = integrity_problems(c)
            if problems:  # before anything is read or written: nothing builds on damage
                raise ArchiveError(f"{self.path}: damaged ({problems[0]}); {REPAIR_HINT}")
        if self.readonly:
            if version < schema.VERSION:
                raise ArchiveError(f"{self.path}: schema {version} needs migrating; "
                                   "open it once for writing (textsieve run) first")
            return
        c.execute("PRAGMA journal_mode = WAL")
        c.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable at checkpoints,
        c.execute("PRAGMA foreign_keys = ON")  # never corrupt on a crash
        if version < schema.VERSION:
            schema.migrate(c)
        if not version:
            with self.transaction():
                c.execute("INSERT OR IGNORE INTO meta VALUES ('created', ?)",
                          (time.strftime("%Y-%m-%dT%H:%M:%S"),))

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- compression ------------------------------------------------------------------------
    def _zip(self, text: str | None) -> bytes | None:
        return self._zc.compress(text.encode("utf-8")) if text else None

    def unzip(self, blob: bytes | None) -> str:
        """A stored text; a blob damaged on disk is an ``ArchiveError``, not a traceback."""
        if not blob:
            return ""
        try:
            return self._zd.decompress(blob).decode("utf-8")
        except (zstandard.ZstdError, UnicodeDecodeError) as exc:
            raise ArchiveError(f"{self.path}: damaged: a stored text cannot be read "
                               f"({exc}); {REPAIR_HINT}") from exc

    def _unzstd_sql(self, blob: bytes | None) -> str:
        return self.unzip(blob)

    # -- runs -------------------------------------------------------------------------------
    def begin_run(self, sources: list[str], options: dict[str, Any]) -> int:
        with self.transaction() as c:
            # A run still 'running' was killed: record that, its committed work stays.
            c.execute("UPDATE runs SET status = 'interrupted' WHERE status = 'running'")
            cur = c.execute("INSERT INTO runs (started, options, sources) VALUES (?, ?, ?)",
                            (time.time(), json.dumps(options, default=str),
                             json.dumps(sources)))
            return int(cur.lastrowid or 0)

    def end_run(self, run_id: int, counts: dict[str, int], status: str = "completed") -> None:
        with self.transaction() as c:
            c.execute("UPDATE runs SET ended = ?, status = ?, counts = ? WHERE id = ?",
                      (time.time(), status, json.dumps(counts), run_id))

    def source_id(self, spec: str) -> int:
        row = self.conn.execute("SELECT id FROM sources WHERE spec = ?", (spec,)).fetchone()
        if row:
            return int(row[0])
        with self.transaction() as c:
            c.execute("INSERT OR IGNORE INTO sources (spec) VALUES (?)", (spec,))
            return int(c.execute("SELECT id FROM sources WHERE spec = ?", (spec,)).fetchone()[0])

    # -- incremental decisions --------------------------------------------------------------
    def known(self, keys: Iterable[str]) -> dict[str, Known]:
        """What the archive knows about these top-level keys (missing ones are new)."""
        out: dict[str, Known] = {}
        keys = list(keys)
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            q = ("SELECT key, i.id, i.sha256, size, mtime_ns, i.status, i.extractor_version, "
                 "i.error_kind, i.etag, i.last_modified, c.original, "
                 "CASE WHEN k.gone_since IS NOT NULL THEN k.error_kind END FROM items i "
                 "LEFT JOIN captures c ON c.item_id = i.id AND c.current "
                 "LEFT JOIN checks k ON k.item_id = i.id "
                 f"WHERE key IN ({','.join('?' * len(chunk))})")
            for row in self.conn.execute(q, chunk):
                out[row[0]] = Known(*row[1:])
        return out

    def touch(self, seen: list[tuple[int, int | None, int | None, str | None]], run_id: int,
              source_id: int) -> None:
        """Unchanged items: (id, size, mtime_ns, sha256) -> last_seen, provenance (a None
        leaves the stored value: a web page has no mtime)."""
        if not seen:
            return
        now = time.time()
        with self.transaction() as c:
            c.executemany("UPDATE items SET last_seen = ?, size = COALESCE(?, size), "
                          "mtime_ns = COALESCE(?, mtime_ns), sha256 = COALESCE(?, sha256) "
                          "WHERE id = ?",
                          [(now, size, mtime, sha, i) for i, size, mtime, sha in seen])
            self._provenance(c, [i for i, *_ in seen], source_id, run_id)

    # -- writing ----------------------------------------------------------------------------
    def write(self, entries: list[Entry], run_id: int, source_ids: dict[str, int], *,
              counts: dict[str, int] | None = None) -> None:
        """Write a batch of extracted items (and their children) in one transaction.
        ``counts``: the run's counts so far, stored in the same transaction, so a run
        killed meanwhile (kill -9, power cut) keeps a true record of what it wrote.

        Each entry is a capture of its item: new bytes become the current capture (the
        earlier one keeps its text in its own row), the same bytes read again replace the
        current capture's text, older bytes (an older WARC record) join as an earlier
        capture. A failed or worse fetch of an item with a good capture leaves that capture
        in place and only updates the source's state (``checks``)."""
        if not entries:
            return
        with self.transaction() as c:
            if counts is not None:
                c.execute("UPDATE runs SET counts = ? WHERE id = ?",
                          (json.dumps(counts), run_id))
            for e in entries:
                self._write_one(c, e, run_id, source_ids)

    def _write_one(self, c: sqlite3.Connection, e: Entry, run_id: int,
                   source_ids: dict[str, int]) -> None:
        now = time.time()
        doc = e.doc
        old = c.execute("SELECT id, first_seen, status, text_chars FROM items WHERE key = ?",
                        (e.item.key,)).fetchone()
        sid = source_ids.get(e.item.source) or self._source_id_in(c, e.item.source)
        cur = c.execute("SELECT id, sha256, captured_at FROM captures WHERE item_id = ? "
                        "AND current", (old[0],)).fetchone() if old else None
        kept = self._keep_original(c, e.original) if e.original is not None else e.stored
        at = (e.response.captured_at if e.response and e.response.captured_at else None) \
            or (e.check.at if e.check else now)
        same = cur is not None and doc.sha256 is not None and cur[1] == doc.sha256
        if old is not None and old[2] == Status.OK and self._worse(e, old[3], same):
            if doc.status != Status.ERROR:  # what it shrank to is kept, not shown
                self._capture(c, old[0], e, kept, at, current=False, kind="degraded")
            c.execute("UPDATE items SET last_seen = ? WHERE id = ?", (now, old[0]))
            self._provenance(c, [old[0]], sid, run_id)
            self._checked(c, old[0], e.check, failed=True, error=doc.error)
            return
        if old is not None and cur is not None and not same and at < cur[2] \
                and doc.status != Status.ERROR and e.response is not None:
            # Older bytes than the current capture (an older WARC record): an earlier capture.
            if not c.execute("SELECT 1 FROM captures WHERE item_id = ? AND sha256 = ?",
                             (old[0], doc.sha256)).fetchone():
                self._capture(c, old[0], e, kept, at, current=False)
            self._provenance(c, [old[0]], sid, run_id)
            return
        if old is not None:
            self._drop_children(c, old[0])
            self._unindex(c, [old[0]])
            if cur is not None and not same:  # the current capture becomes an earlier one
                c.execute("UPDATE captures SET current = 0, "
                          "text = (SELECT text FROM items WHERE id = ?), "
                          "markdown = (SELECT markdown FROM items WHERE id = ?) WHERE id = ?",
                          (old[0], old[0], cur[0]))
        # What the source told of the item (a feed entry's id, its feed): from the item
        # as listed now, else as its provenance keeps it (a retry, ``reextract``), so no
        # capture of the item loses it.
        facts = dict(e.item.facts) or (labels.source_facts(c, old[0], sid) if old else {})
        doc.metadata.extra.update(facts)
        item_id = self._put(c, e.item.key, e.item.original, None, doc, e.item, now, old)
        if e.validators is not None:
            c.execute("UPDATE items SET etag = ?, last_modified = ? WHERE id = ?",
                      (*e.validators, item_id))
        if same and cur is not None:
            self._update_capture(c, cur[0], e, kept, now)
        elif doc.status not in (Status.ERROR, Status.LISTED):  # a listing is no capture
            self._capture(c, item_id, e, kept, at, current=True)
        self._children(c, e.item.key, item_id, doc, now)
        self._provenance(c, [item_id], sid, run_id)
        self._checked(c, item_id, e.check, failed=doc.status == Status.ERROR,
                      error=doc.error)

    @staticmethod
    def _worse(e: Entry, good_chars: int, same: bool) -> bool:
        """A fetch (or a server's recorded answer, or a re-extraction) that would destroy a
        good capture: a failure, or new bytes that shrank to a fraction of the text (a
        cookie wall, a parked domain). Files are not fetches: a file that changed is what
        it is now."""
        if e.check is None and e.response is None:
            return False
        if e.doc.status == Status.ERROR:
            return True
        if same:
            return False
        n = len(e.doc.text)
        return n < good_chars * SHRINK_RATIO and n < SHRINK_CHARS

    def _capture(self, c: sqlite3.Connection, item_id: int, e: Entry, original: str | None,
                 at: float, *, current: bool, kind: str = "capture") -> None:
        doc, r = e.doc, e.response
        text = None if current else self._zip(doc.text)
        markdown = None if current or doc.markdown == doc.text else self._zip(doc.markdown)
        c.execute(
            "INSERT INTO captures (item_id, current, kind, captured_at, sha256, original, url, "
            "http_status, content_type, http_date, etag, last_modified, source, title, "
            "status, text_chars, extractor_version, extracted_at, text, markdown) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (item_id, int(current), kind, at, doc.sha256,
             original, r.url if r else None, r.status if r else None,
             r.content_type if r else None, r.date if r else None, r.etag if r else None,
             r.last_modified if r else None, r.via if r else None, doc.title,
             str(doc.status), len(doc.text), doc.extractor, time.time(), text, markdown))

    def _update_capture(self, c: sqlite3.Connection, capture_id: int, e: Entry,
                        original: str | None, now: float) -> None:
        """The same bytes read again (a new extractor, other options): the capture's text
        is the new one; an original kept now is linked, one kept before stays."""
        c.execute("UPDATE captures SET title = ?, status = ?, text_chars = ?, "
                  "extractor_version = ?, extracted_at = ?, "
                  "original = coalesce(?, original) WHERE id = ?",
                  (e.doc.title, str(e.doc.status), len(e.doc.text), e.doc.extractor, now,
                   original, capture_id))

    @staticmethod
    def _checked(c: sqlite3.Connection, item_id: int, check: Check | None, *,
                 failed: bool, error: ErrorInfo | None = None) -> None:
        """The source's state after this run's fetch (nothing when it was not fetched).
        ``error``: why what was fetched failed when the fetch itself did not (bytes that
        cannot be read): kept with its kind, so that a run owing the item a fetch
        (``retry.owed``) tells a passing failure from one that would repeat."""
        if check is None:
            return
        failed = failed or check.error is not None
        err = check.error or error
        c.execute(
            "INSERT INTO checks (item_id, checked_at, http_status, error_kind, error_message, "
            "gone_since, alive_at, url) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (item_id) "
            "DO UPDATE SET checked_at = excluded.checked_at, url = excluded.url, "
            "http_status = excluded.http_status, "
            "error_kind = excluded.error_kind, error_message = excluded.error_message, "
            "gone_since = CASE WHEN excluded.gone_since IS NULL THEN NULL "
            "ELSE coalesce(checks.gone_since, excluded.gone_since) END, "
            "alive_at = coalesce(excluded.alive_at, checks.alive_at)",
            (item_id, check.at, check.http_status,
             str(err.kind) if err else ("degraded" if failed else None),
             err.message if err else ("the page shrank to a fraction of its text"
                                      if failed else None),
             check.at if failed else None, None if failed else check.at, check.url))

    def checked(self, checks: list[tuple[int, Check]]) -> None:
        """Sources asked and found unchanged (304, the same bytes): their state only."""
        if not checks:
            return
        with self.transaction() as c:
            for item_id, check in checks:
                self._checked(c, item_id, check, failed=check.error is not None)

    # -- originals --------------------------------------------------------------------------
    @property
    def originals_dir(self) -> Path:
        """The folder beside the archive holding its large originals."""
        return self.path.with_name(self.path.name + ".originals")

    def original_path(self, sha256: str) -> Path:
        return self.originals_dir / sha256[:2] / f"{sha256}.zst"

    def _keep_original(self, c: sqlite3.Connection, orig: Original) -> str | None:
        """Store bytes as received, once per content (SHA-256), compressed: small ones as a
        row, large ones as a file beside the archive, written (and synced) before the row
        that names it is committed. Returns the SHA-256 kept (None: a file that changed
        since it was read, whose bytes no longer match)."""
        if c.execute("SELECT 1 FROM originals WHERE sha256 = ?", (orig.sha256,)).fetchone():
            return orig.sha256
        data = orig.data
        if data is None and orig.size <= 4 * ORIGINAL_INLINE_MAX:
            assert orig.path is not None
            try:
                with open(orig.path, "rb") as f:
                    data = f.read(4 * ORIGINAL_INLINE_MAX + 1)
            except OSError:
                return None
            if hashlib.sha256(data).hexdigest() != orig.sha256:
                return None
        if data is not None and len(data) <= 4 * ORIGINAL_INLINE_MAX:
            blob = self._zc.compress(data)
            if len(blob) <= ORIGINAL_INLINE_MAX:
                c.execute("INSERT INTO originals (sha256, size, stored, data, created) "
                          "VALUES (?, ?, ?, ?, ?)",
                          (orig.sha256, len(data), len(blob), blob, time.time()))
                return orig.sha256
        stored = self._write_original_file(orig, data)
        if stored is None:
            return None
        c.execute("INSERT INTO originals (sha256, size, stored, data, created) "
                  "VALUES (?, ?, ?, NULL, ?)", (orig.sha256, orig.size, stored, time.time()))
        return orig.sha256

    def _write_original_file(self, orig: Original, data: bytes | None) -> int | None:
        target = self.original_path(orig.sha256)
        if target.exists():
            return target.stat().st_size
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        zc = zstandard.ZstdCompressor(level=ORIGINAL_LEVEL_LARGE)
        digest = hashlib.sha256()
        try:
            with open(tmp, "wb") as out:
                with zc.stream_writer(out, closefd=False) as w:
                    if data is not None:
                        digest.update(data)
                        w.write(data)
                    else:
                        assert orig.path is not None
                        with open(orig.path, "rb") as f:
                            while chunk := f.read(1 << 20):
                                digest.update(chunk)
                                w.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            if digest.hexdigest() != orig.sha256:  # a file changed since it was read
                return None
            os.replace(tmp, target)
        except OSError as exc:
            logger.warning("%s: the original %s is not kept: %s", self.path,
                           orig.sha256[:12], exc)
            return None
        finally:
            tmp.unlink(missing_ok=True)
        return target.stat().st_size

    def original_bytes(self, sha256: str) -> bytes | None:
        """A kept original's bytes, checked against their SHA-256 (None: not kept, or lost);
        damage is an ``ArchiveError``."""
        row = self.conn.execute("SELECT data FROM originals WHERE sha256 = ?",
                                (sha256,)).fetchone()
        if row is None:
            return None
        try:
            if row[0] is not None:
                data = self._zd.decompress(row[0])
            else:
                path = self.original_path(sha256)
                if not path.exists():
                    return None
                with open(path, "rb") as f, self._zd.stream_reader(f) as r:
                    data = r.read()
        except (zstandard.ZstdError, OSError) as exc:
            raise ArchiveError(f"{self.path}: the original {sha256[:12]} cannot be read "
                               f"({exc}); `textsieve check` tells what is damaged") from exc
        if hashlib.sha256(data).hexdigest() != sha256:
            raise ArchiveError(f"{self.path}: the original {sha256[:12]} is damaged "
                               "(its bytes no longer match their SHA-256)")
        return data

    def current_capture(self, item_id: int) -> dict[str, Any] | None:
        row = self.conn.execute(
            f"SELECT {_CAPTURE_COLS} FROM captures WHERE item_id = ? AND current",
            (item_id,)).fetchone()
        return dict(zip(_CAPTURE_KEYS, row, strict=True)) if row else None

    def captures(self, item_id: int) -> list[dict[str, Any]]:
        """Every capture of an item, oldest first (``current``: the one its row shows)."""
        return [dict(zip(_CAPTURE_KEYS, r, strict=True)) for r in self.conn.execute(
            f"SELECT {_CAPTURE_COLS} FROM captures WHERE item_id = ? "
            "ORDER BY captured_at, id", (item_id,))]

    def capture_text(self, capture_id: int) -> str:
        """A capture's text (the current one's is its item's)."""
        row = self.conn.execute(
            "SELECT coalesce(c.text, CASE WHEN c.current THEN i.text END) FROM captures c "
            "JOIN items i ON i.id = c.item_id WHERE c.id = ?", (capture_id,)).fetchone()
        return self.unzip(row[0]) if row else ""

    def has_capture(self, item_id: int, sha256: str) -> bool:
        return self.conn.execute("SELECT 1 FROM captures WHERE item_id = ? AND sha256 = ?",
                                 (item_id, sha256)).fetchone() is not None

    def fetch_facts(self, item_id: int) -> dict[str, Any]:
        """What the fetch of an item's current capture put in its metadata (the URL asked,
        redirects...): a re-extraction from the kept original says the same."""
        row = self.conn.execute("SELECT metadata FROM items WHERE id = ?",
                                (item_id,)).fetchone()
        try:
            extra = json.loads(row[0]).get("extra", {}) if row and row[0] else {}
        except ValueError:
            return {}
        return {k: v for k, v in extra.items()
                if k in ("url", "final_url", "http_status", "content_type", "redirects")}

    def check_of(self, item_id: int) -> dict[str, Any] | None:
        """The state of an item's source: last checked, its outcome, gone since when."""
        row = self.conn.execute(
            "SELECT checked_at, http_status, error_kind, error_message, gone_since, alive_at, "
            "url FROM checks WHERE item_id = ?", (item_id,)).fetchone()
        if row is None:
            return None
        return dict(zip(("checked_at", "http_status", "error_kind", "error_message",
                         "gone_since", "alive_at", "url"), row, strict=True))

    def _put(self, c: sqlite3.Connection, key: str, original: str | None,
             parent: int | None, doc: Document, item: Item | None, now: float,
             old: tuple[int, float] | None) -> int:
        pages = None
        if doc.pages:
            offsets, pos = [], 0
            for p in doc.pages:  # page texts are slices of the text: store offsets only
                start = doc.text.find(p.text, pos) if p.text else pos
                start = pos if start < 0 else start
                offsets.append([p.number, start, start + len(p.text), int(p.ocr)])
                pos = start + len(p.text)
            pages = self._zip(json.dumps(offsets))
        values = {
            "key": key, "original": original, "parent_id": parent, "name": doc.name,
            "sha256": doc.sha256, "size": doc.size if doc.size is not None else (
                item.size if item else None),
            "mtime_ns": item.mtime_ns if item else None, "mime_type": doc.mime_type,
            "title": doc.title, "metadata": json.dumps(doc.metadata.to_dict(), default=str),
            "status": str(doc.status),
            "error_kind": str(doc.error.kind) if doc.error else None,
            "error_message": doc.error.message if doc.error else None,
            "text": self._zip(doc.text), "markdown": self._zip(
                doc.markdown if doc.markdown != doc.text else None),
            "pages": pages, "text_chars": len(doc.text),
            "warnings": json.dumps(doc.warnings) if doc.warnings else None,
            "extractor_version": doc.extractor, "last_seen": now, "extracted_at": now,
        }
        if old is not None:
            sets = ", ".join(f"{k} = :{k}" for k in values)
            c.execute(f"UPDATE items SET {sets} WHERE id = :id", {**values, "id": old[0]})
            item_id = old[0]
        else:
            cols = ", ".join(values)
            c.execute(f"INSERT INTO items ({cols}, first_seen) VALUES "
                      f"({', '.join(':' + k for k in values)}, :first_seen)",
                      {**values, "first_seen": now})
            item_id = int(c.execute("SELECT last_insert_rowid()").fetchone()[0])
        if doc.text or doc.title:
            c.execute("INSERT INTO items_fts (rowid, title, text) VALUES (?, ?, ?)",
                      (item_id, doc.title or "", doc.text))
        return item_id

    def _children(self, c: sqlite3.Connection, key: str, parent_id: int, doc: Document,
                  now: float) -> None:
        used: dict[str, int] = {}
        for i, child in enumerate(doc.children):
            name = child.name or f"#{i + 1}"
            n = used[name] = used.get(name, 0) + 1
            child_key = f"{key}//{name}" + (f"#{n}" if n > 1 else "")
            cid = self._put(c, child_key, None, parent_id, child, None, now, None)
            self._children(c, child_key, cid, child, now)

    def _descendants(self, c: sqlite3.Connection, item_id: int) -> list[int]:
        rows = c.execute(
            "WITH RECURSIVE d(id) AS (SELECT id FROM items WHERE parent_id = ? "
            "UNION ALL SELECT i.id FROM items i JOIN d ON i.parent_id = d.id) SELECT id FROM d",
            (item_id,)).fetchall()
        return [r[0] for r in rows]

    def _drop_children(self, c: sqlite3.Connection, item_id: int) -> None:
        ids = self._descendants(c, item_id)
        if ids:
            self._unindex(c, ids)
            c.execute(f"DELETE FROM items WHERE id IN ({','.join('?' * len(ids))})", ids)

    def _unindex(self, c: sqlite3.Connection, ids: list[int]) -> None:
        """Remove rows from the full-text index (it needs the indexed values to do so)."""
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            c.execute("INSERT INTO items_fts (items_fts, rowid, title, text) "
                      "SELECT 'delete', id, COALESCE(title, ''), ts_unzstd(text) FROM items "
                      f"WHERE id IN ({','.join('?' * len(chunk))}) "
                      "AND (text IS NOT NULL OR title IS NOT NULL)", chunk)

    @staticmethod
    def _provenance(c: sqlite3.Connection, ids: list[int], source_id: int, run_id: int) -> None:
        c.executemany(
            "INSERT INTO provenance (item_id, source_id, first_run, last_run) VALUES (?,?,?,?) "
            "ON CONFLICT (item_id, source_id) DO UPDATE SET last_run = excluded.last_run",
            [(i, source_id, run_id, run_id) for i in ids])

    # -- mail provenance and source state ---------------------------------------------------
    def link_mails(self, pairs: list[tuple[str, MailRef]], run_id: int,
                   source_ids: dict[str, int]) -> list[tuple[str, MailRef]]:
        """Record that these mails named these items (by item key); returns the pairs
        whose item is not written yet, to try again later."""
        later: list[tuple[str, MailRef]] = []
        if not pairs:
            return later
        with self.transaction() as c:
            for key, ref in pairs:
                row = c.execute("SELECT id FROM items WHERE key = ?", (key,)).fetchone()
                if row is None:
                    later.append((key, ref))
                    continue
                sid = source_ids.get(ref.source)
                if sid is None:
                    sid = self._source_id_in(c, ref.source)
                c.execute("INSERT OR IGNORE INTO mails (source_id, message_id, date, sender, "
                          "subject, labels, uid, first_run) VALUES (?,?,?,?,?,?,?,?)",
                          (sid, ref.message_id, ref.date, ref.sender, ref.subject,
                           json.dumps(list(ref.labels)), ref.uid, run_id))
                mid = c.execute("SELECT id FROM mails WHERE source_id = ? AND message_id = ?",
                                (sid, ref.message_id)).fetchone()[0]
                c.execute("INSERT OR IGNORE INTO item_mails VALUES (?, ?)", (row[0], mid))
                labels.add_mail_labels(c, row[0], sid, ref.labels)
        return later

    def link_listings(self, pending: list[labels.Pending], run_id: int,
                      source_ids: dict[str, int]) -> list[labels.Pending]:
        """Record what list sources said of items (labels, title, note, date): see
        ``archive.labels``; returns those whose item is not written yet."""
        if not pending:
            return []
        with self.transaction() as c:
            return labels.record(c, pending, run_id, source_ids, self._source_id_in)

    @staticmethod
    def _source_id_in(c: sqlite3.Connection, spec: str) -> int:
        c.execute("INSERT OR IGNORE INTO sources (spec) VALUES (?)", (spec,))
        return int(c.execute("SELECT id FROM sources WHERE spec = ?", (spec,)).fetchone()[0])

    def mails_of(self, item_id: int) -> list[dict[str, Any]]:
        """The mails that named an item (provenance), oldest first."""
        rows = self.conn.execute(
            "SELECT m.message_id, m.date, m.sender, m.subject, m.labels, s.spec FROM mails m "
            "JOIN item_mails im ON im.mail_id = m.id JOIN sources s ON s.id = m.source_id "
            "WHERE im.item_id = ? ORDER BY m.date", (item_id,)).fetchall()
        return [{"message_id": r[0], "date": r[1], "from": r[2], "subject": r[3],
                 "labels": json.loads(r[4] or "[]"), "source": r[5]} for r in rows]

    def source_state(self, spec: str) -> dict[str, str]:
        return dict(self.conn.execute(
            "SELECT st.key, st.value FROM source_state st JOIN sources s ON s.id = st.source_id "
            "WHERE s.spec = ?", (spec,)).fetchall())

    def save_source_state(self, spec: str, state: dict[str, str]) -> None:
        """Store a source's sync state; only called once its items are committed."""
        with self.transaction() as c:
            sid = self._source_id_in(c, spec)
            c.execute("DELETE FROM source_state WHERE source_id = ?", (sid,))
            c.executemany("INSERT INTO source_state VALUES (?, ?, ?)",
                          [(sid, k, str(v)) for k, v in state.items()])

    # -- reading ----------------------------------------------------------------------------
    def document(self, item_id: int, *, children: bool = True) -> Document | None:
        """An archived item as a Document (with its children, recursively)."""
        row = self.conn.execute(
            "SELECT id, name, mime_type, title, metadata, status, error_kind, error_message, "
            "text, markdown, pages, size, sha256, warnings, extractor_version "
            "FROM items WHERE id = ?", (item_id,)).fetchone()
        if row is None:
            return None
        (iid, name, mime, title, meta, status, ekind, emsg, text, md, pages, size, sha,
         warnings, version) = row
        text_s = self.unzip(text)
        try:
            doc = Document(
                name=name, mime_type=mime or "application/octet-stream", text=text_s,
                markdown=self.unzip(md) if md else text_s, title=title,
                metadata=Metadata(**json.loads(meta)) if meta else Metadata(),
                status=Status(status), error=ErrorInfo(ErrorKind(ekind), emsg or "")
                if ekind else None, size=size, sha256=sha,
                warnings=json.loads(warnings) if warnings else [], extractor=version)
            if pages:
                doc.pages = [Page(n, text_s[a:b], bool(o)) for n, a, b, o in
                             json.loads(self.unzip(pages))]
        except (ValueError, TypeError) as exc:  # JSON, an enum, a field: changed on disk
            raise ArchiveError(f"{self.path}: damaged: item {iid} cannot be read ({exc}); "
                               f"{REPAIR_HINT}") from exc
        if children:
            for (cid,) in self.conn.execute(
                    "SELECT id FROM items WHERE parent_id = ? ORDER BY id", (iid,)):
                child = self.document(cid)
                if child is not None:
                    doc.children.append(child)
        return doc

    def lineage(self, item_id: int) -> list[tuple[int, str]]:
        """(id, key or name) from the top-level item down to this one: where it came from."""
        out: list[tuple[int, str]] = []
        cur: int | None = item_id
        while cur is not None:
            row = self.conn.execute("SELECT parent_id, key, name FROM items WHERE id = ?",
                                    (cur,)).fetchone()
            if row is None:
                break
            out.append((cur, row[1] if row[0] is None else row[2] or row[1]))
            cur = row[0]
        return out[::-1]


_CAPTURE_KEYS = ("id", "current", "kind", "captured_at", "sha256", "original", "url",
                 "http_status", "content_type", "http_date", "etag", "last_modified",
                 "source", "title", "status", "text_chars", "extractor_version",
                 "extracted_at")
_CAPTURE_COLS = ", ".join(_CAPTURE_KEYS)


def integrity_problems(conn: sqlite3.Connection, limit: int = 20) -> list[str]:
    """SQLite's integrity check (every page and b-tree, every index entry against its row):
    the problems, one a line, [] when whole."""
    try:
        rows = conn.execute(f"PRAGMA integrity_check({int(limit)})").fetchall()
    except sqlite3.DatabaseError as exc:
        return [str(exc)]
    lines = [ln for (r,) in rows for ln in str(r).splitlines()]
    return [] if lines == ["ok"] else [ln for ln in lines if ln and not ln.startswith("***")]


def _size(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return sum(p.stat().st_size for p in (path, wal) if p.exists())


def check_file(path: Path) -> None:
    """Refuse, without touching it, a file that is not SQLite at all (or is empty)."""
    if not path.exists():
        return
    if path.is_dir():
        raise ArchiveError(f"{path}: is a folder, not an archive file")
    with open(path, "rb") as f:
        head = f.read(16)
    if not head:  # SQLite would silently make it a new database: not ours to take over
        raise ArchiveError(f"{path}: an empty file, not a textsieve archive "
                           "(remove it to start a new archive there)")
    if head != _SQLITE_MAGIC:
        raise ArchiveError(f"{path}: not a textsieve archive (not an SQLite file)")
