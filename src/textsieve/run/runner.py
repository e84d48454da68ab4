"""``textsieve run``: sources -> decide what is new -> isolated extraction -> archive.

Like a build system, the archive is the state: an item is extracted only when it is new,
its content changed (size or mtime moved and the content hash differs), it failed in a way
that may not repeat (timeout, crash, missing tool), or the extractor that made it (or
failed on it) has a newer version. Results are written by this process
alone, in batches of one transaction each, so a run killed at any moment is resumed by
running the same command again.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from ..archive.store import Archive, Entry, Known
from ..extractors import is_current
from ..model import Document, Item, Status
from ..options import Options
from ..sources import ItemSource
from .pool import WorkerPool


class Mode(StrEnum):
    INCREMENTAL = "incremental"  # new, changed, failed, outdated
    FORCE = "force"  # everything again
    RETRY_ERRORS = "retry-errors"  # only items that failed before


class Why(StrEnum):
    NEW = "new"
    CHANGED = "changed"
    FAILED = "failed"
    OUTDATED = "outdated"
    FORCED = "forced"


@dataclass
class RunStats:
    """Counts a run reports as it goes and at the end (also stored in the runs table)."""

    total: int = 0  # items seen in the sources
    skipped: int = 0  # unchanged, nothing to do
    done: int = 0  # extracted and written
    status: Counter[str] = field(default_factory=Counter)  # ok / empty / error
    errors: Counter[str] = field(default_factory=Counter)  # by error kind
    why: Counter[str] = field(default_factory=Counter)  # new / changed / failed ...
    started: float = field(default_factory=time.monotonic)
    listing_done: bool = False

    def as_dict(self) -> dict[str, int]:
        return {"total": self.total, "skipped": self.skipped, "extracted": self.done,
                **{f"status_{k}": v for k, v in self.status.items()},
                **{f"error_{k}": v for k, v in self.errors.items()},
                **{f"why_{k}": v for k, v in self.why.items()}}


ProgressFn = Callable[[RunStats, Document | None], None]

# Failures that may not happen again on the same bytes with the same extractor: retried
# on every run. The others (encrypted, corrupt, unsupported, needs_ocr, ...) are retried
# when their extractor gets a new version, or on request (--retry-errors).
TRANSIENT_ERRORS = frozenset({"timeout", "crashed", "internal", "not_found", "missing_tool"})

BATCH_ITEMS = 64  # at most this many items per transaction ...
BATCH_SECONDS = 2.0  # ... and at least one commit every this many seconds


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def decide(item: Item, known: Known | None, mode: Mode) -> tuple[Why | None, str | None]:
    """Why an item needs extracting (None: it does not), and its hash if we computed one."""
    if mode is Mode.FORCE:
        return Why.FORCED, None
    if known is None:
        return (None if mode is Mode.RETRY_ERRORS else Why.NEW), None
    if known.status == Status.ERROR and (mode is Mode.RETRY_ERRORS
                                         or known.error_kind in TRANSIENT_ERRORS):
        return Why.FAILED, None
    if mode is Mode.RETRY_ERRORS:
        return None, None
    if not is_current(known.extractor_version):
        return Why.OUTDATED, None  # includes failures a newer extractor may now overcome
    if item.size == known.size and item.mtime_ns == known.mtime_ns:
        return None, None
    if item.path is None:
        return Why.CHANGED, None
    sha = _sha256(item.path)  # touched but maybe not changed: the content decides
    return (None if sha == known.sha256 else Why.CHANGED), sha


def run(sources: list[ItemSource], archive: Archive, options: Options, *,
        mode: Mode = Mode.INCREMENTAL, progress: ProgressFn | None = None,
        run_options: dict[str, object] | None = None) -> RunStats:
    stats = RunStats()
    run_id = archive.begin_run([s.spec for s in sources], run_options or {})
    source_ids = {s.spec: archive.source_id(s.spec) for s in sources}
    status = "interrupted"
    try:
        _run(sources, archive, options, mode, stats, run_id, source_ids, progress)
        status = "completed"
    finally:
        archive.end_run(run_id, stats.as_dict(), status)
    return stats


def _run(sources: list[ItemSource], archive: Archive, options: Options, mode: Mode,
         stats: RunStats, run_id: int, source_ids: dict[str, int],
         progress: ProgressFn | None) -> None:
    pending: deque[Item] = deque()
    batch: list[Entry] = []
    last_commit = time.monotonic()
    notify = progress or (lambda s, d: None)

    def todo() -> Iterator[Item]:
        """Items that need work, in source order; unchanged ones are recorded on the way."""
        for src in sources:
            for chunk in _chunks(src.items(), 256):
                stats.total += len(chunk)
                known = archive.known(i.key for i in chunk)
                unchanged: list[tuple[int, int, int | None, str | None]] = []
                for item in chunk:
                    k = known.get(item.key)
                    why, sha = decide(item, k, mode)
                    if why is None:
                        if k is not None:
                            unchanged.append((k.id, item.size or 0, item.mtime_ns, sha))
                        stats.skipped += 1
                        continue
                    stats.why[why] += 1
                    pending.append(item)
                    yield item
                archive.touch(unchanged, run_id, source_ids[src.spec])
                notify(stats, None)
        stats.listing_done = True

    def flush() -> None:
        nonlocal last_commit
        archive.write(batch, run_id, source_ids)
        batch.clear()
        last_commit = time.monotonic()

    try:
        with WorkerPool(options) as pool:
            pairs = ((item.path if item.path is not None else item.data, item.name)
                     for item in todo())
            for doc in pool.map_pairs(pairs):
                item = pending.popleft()
                if doc.name is None:
                    doc.name = item.name
                batch.append(Entry(item, doc))
                stats.done += 1
                stats.status[str(doc.status)] += 1
                if doc.error:
                    stats.errors[str(doc.error.kind)] += 1
                if len(batch) >= BATCH_ITEMS or time.monotonic() - last_commit > BATCH_SECONDS:
                    flush()
                notify(stats, doc)
    except KeyboardInterrupt:
        flush()  # Ctrl-C: keep what is already extracted; the re-run does the rest
        raise
    flush()
    stats.listing_done = True
    notify(stats, None)


def _chunks(it: Iterator[Item], n: int) -> Iterator[list[Item]]:
    chunk: list[Item] = []
    for x in it:
        chunk.append(x)
        if len(chunk) >= n:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
