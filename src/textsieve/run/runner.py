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
import logging
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..archive.store import Archive, Entry, Known
from ..extractors import FETCH_TAG, is_current
from ..model import Document, Item, MailRef, Status
from ..options import Options
from ..sources import ItemSource
from .pool import WorkerPool

logger = logging.getLogger(__name__)


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
    # Items the sources will list, counted ahead of the listing (None: not known, or not
    # countable): the listing itself only runs a small window ahead of the extraction.
    expected: int | None = None

    def as_dict(self) -> dict[str, int]:
        return {"total": self.total, "skipped": self.skipped, "extracted": self.done,
                **{f"status_{k}": v for k, v in self.status.items()},
                **{f"error_{k}": v for k, v in self.errors.items()},
                **{f"why_{k}": v for k, v in self.why.items()}}


ProgressFn = Callable[[RunStats, Document | None], None]

# Failures that may not happen again on the same bytes with the same extractor: retried
# on every run. The others (encrypted, corrupt, unsupported, needs_ocr, ...) are retried
# when their extractor gets a new version, or on request (--retry-errors).
TRANSIENT_ERRORS = frozenset({"timeout", "crashed", "internal", "not_found", "missing_tool",
                              "http_5xx", "http_429", "dns", "connection"})

BATCH_ITEMS = 64  # at most this many items per transaction ...
BATCH_SECONDS = 2.0  # ... and at least one commit every this many seconds


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def is_fresh(tag: str | None, options: Options) -> bool:
    """Made by the current extractor version with the same output options?"""
    base, _, fingerprint = (tag or "").partition("#")
    return fingerprint == options.output_fingerprint() and is_current(base)


def stamp(doc: Document, options: Options) -> None:
    """Record with what, and with which output options, a top-level item was made."""
    doc.extractor = f"{doc.extractor or ''}#{options.output_fingerprint()}"


def decide(item: Item, known: Known | None, mode: Mode,
           options: Options) -> tuple[Why | None, str | None]:
    """Why an item needs extracting (None: it does not), and its hash if we computed one."""
    if mode is Mode.FORCE:
        return Why.FORCED, None
    if known is None:
        return (None if mode is Mode.RETRY_ERRORS else Why.NEW), None
    if known.status == Status.ERROR and (mode is Mode.RETRY_ERRORS
                                         or known.error_kind in TRANSIENT_ERRORS
                                         or (known.error_kind == "encrypted"
                                             and options.password)):
        return Why.FAILED, None
    if mode is Mode.RETRY_ERRORS:
        return None, None
    if not is_fresh(known.extractor_version, options):
        return Why.OUTDATED, None  # includes failures a newer extractor may now overcome
    if item.data is not None:  # bytes from a mail (a newsletter's article): the hash decides
        sha = hashlib.sha256(item.data).hexdigest()
        return (None if sha == known.sha256 else Why.CHANGED), sha
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
    for s in sources:  # incremental mail sources resume from the last completed sync
        bind = getattr(s, "bind_state", None)
        if bind is not None:
            bind(archive.source_state(s.spec))
    status = "interrupted"
    _count_ahead(sources, stats)
    try:
        _run(sources, archive, options, mode, stats, run_id, source_ids, progress)
        for s in sources:  # only now: every item of this sync is committed
            new_state = getattr(s, "new_state", None)
            if new_state is not None:
                archive.save_source_state(s.spec, new_state())
        status = "completed"
    finally:
        archive.end_run(run_id, stats.as_dict(), status)
    return stats


def _count_ahead(sources: list[ItemSource], stats: RunStats) -> None:
    """Count the items in a background thread when every source can (files, folders and
    globs: names only), so the progress has a total, and an ETA, from the start."""
    counters = [getattr(s, "count", None) for s in sources]
    if not counters or None in counters:
        return

    def count() -> None:
        try:
            stats.expected = sum(c() for c in counters)  # type: ignore[misc]
        except Exception:  # an estimate only: without it there is no ETA, nothing worse
            logger.debug("counting the items ahead failed", exc_info=True)

    threading.Thread(target=count, name="textsieve-count", daemon=True).start()


@dataclass
class _Job:
    """An item on its way to a worker, with what fetching it taught us."""

    item: Item
    obj: object  # a path, or a Source holding fetched bytes and transport hints
    why: Why
    fetched: dict[str, object] | None = None  # url, final_url, http_status, validators...


def _run(sources: list[ItemSource], archive: Archive, options: Options, mode: Mode,
         stats: RunStats, run_id: int, source_ids: dict[str, int],
         progress: ProgressFn | None) -> None:
    pending: deque[_Job] = deque()
    batch: list[Entry] = []
    seen: set[str] = set()  # keys listed in this run: a link mailed ten times is one item
    mail_links: list[tuple[str, MailRef]] = []  # (item key, mail) still to record
    last_commit = time.monotonic()
    notify = progress or (lambda s, d: None)
    web = _WebStage(options, mode)

    def record(entry: Entry) -> None:
        """Count a finished item and commit the batch when it is due."""
        nonlocal last_commit
        doc = entry.doc
        stamp(doc, options)
        batch.append(entry)
        stats.done += 1
        stats.status[str(doc.status)] += 1
        if doc.error:
            stats.errors[str(doc.error.kind)] += 1
        if len(batch) >= BATCH_ITEMS or time.monotonic() - last_commit > BATCH_SECONDS:
            flush()
        notify(stats, doc)

    def flush() -> None:
        nonlocal last_commit
        archive.write(batch, run_id, source_ids)
        batch.clear()
        link()
        last_commit = time.monotonic()

    def link() -> None:
        """Mail provenance for the items that exist by now (the rest wait for theirs)."""
        if mail_links:
            mail_links[:] = archive.link_mails(mail_links, run_id, source_ids)

    def fetched(jobs: Iterator[tuple[_Job | Entry | int, str]]) -> Iterator[_Job]:
        """Web results: extract the new, record failures, touch what did not change."""
        for out, spec in jobs:
            if isinstance(out, _Job):
                yield out
            elif isinstance(out, Entry):
                record(out)
            else:
                stats.skipped += 1
                archive.touch([(out, None, None, None)], run_id, source_ids[spec])

    def todo() -> Iterator[_Job]:
        """Jobs for the workers, in source order; unchanged items are recorded on the way."""
        for src in sources:
            for chunk in _chunks(src.items(), 256):
                stats.total += len(chunk)
                known = archive.known(i.key for i in chunk)
                unchanged: list[tuple[int, int | None, int | None, str | None]] = []
                for item in chunk:
                    mail_links.extend((item.key, ref) for ref in item.mails)
                    if item.key in seen:
                        stats.skipped += 1  # named again (another mail): provenance only
                        continue
                    seen.add(item.key)
                    k = known.get(item.key)
                    if item.url is not None:
                        if ((mode is Mode.RETRY_ERRORS and (k is None or k.status != Status.ERROR))
                                or _settled_failure(k, mode, options)):
                            stats.skipped += 1
                            if k is not None:
                                unchanged.append((k.id, None, None, None))
                            continue
                        yield from fetched(web.submit(item, k))
                        yield from followups()
                        continue
                    why, sha = decide(item, k, mode, options)
                    if why is None:
                        if k is not None:
                            unchanged.append((k.id, item.size, item.mtime_ns, sha))
                        stats.skipped += 1
                        continue
                    yield _Job(item, item.path if item.path is not None else item.data, why)
                archive.touch(unchanged, run_id, source_ids[src.spec])
                link()
                notify(stats, None)
        while web.busy():
            yield from fetched(web.drain())
            yield from followups()
        stats.listing_done = True

    def followups() -> Iterator[_Job]:
        """Links found by resolvers (a Hacker News item's story) join the run."""
        while web.followups:
            item = web.followups.popleft()
            stats.total += 1
            mail_links.extend((item.key, ref) for ref in item.mails)
            if item.key in seen:
                stats.skipped += 1
                continue
            seen.add(item.key)
            k = archive.known([item.key]).get(item.key)
            yield from fetched(web.submit(item, k))

    copies_root = _copies_root(sources) if options.searchable_pdf_dir else None
    if options.searchable_pdf_dir is not None:
        from ..ocr.searchable import searchable_parts

    def queued() -> Iterator[tuple[object, ...]]:
        for job in todo():
            stats.why[job.why] += 1
            pending.append(job)
            if options.searchable_pdf_dir is None:
                yield job.obj, job.item.name
            else:  # where its searchable copy would go: the tree mirrored, never by name
                yield job.obj, job.item.name, searchable_parts(job.item.key, copies_root)

    try:
        with WorkerPool(options) as pool, web:
            for doc in pool.map_pairs(queued()):
                job = pending.popleft()
                if doc.name is None:
                    doc.name = job.item.name
                if job.fetched:
                    doc.metadata.extra.update({k: v for k, v in job.fetched.items()
                                               if k not in ("etag", "last_modified")})
                record(Entry(job.item, doc, validators=_validators(job.fetched)))
    except KeyboardInterrupt:
        flush()  # Ctrl-C: keep what is already extracted; the re-run does the rest
        raise
    flush()
    link()
    stats.listing_done = True
    notify(stats, None)


def _copies_root(sources: list[ItemSource]) -> str | None:
    """The folder the searchable copies mirror: the deepest one holding every file source's
    root, so files of one run never share a copy (``a/scan.pdf``, ``b/scan.pdf``)."""
    roots = [r for r in (getattr(s, "root", None) for s in sources) if r]
    return os.path.commonpath(roots) if roots else None


def _validators(fetched: dict[str, object] | None) -> tuple[str | None, str | None] | None:
    if not fetched:
        return None
    etag, modified = fetched.get("etag"), fetched.get("last_modified")
    return (etag if isinstance(etag, str) else None,
            modified if isinstance(modified, str) else None)


def _hn_resolution(item: Item, final_url: str, content: bytes,
                   hosts: tuple[str, ...]) -> tuple[Item | None, bytes]:
    """A Hacker News item page: (its story as a new item, the discussion as text)."""
    from ..links.resolve import hn_item_id, resolve_hn
    from ..sources.urls import url_item

    if hn_item_id(final_url, hosts) is None:
        return None, b""
    hn = resolve_hn(content, final_url)
    parts = [p for p in (hn.title, hn.story_url, hn.text) if p]
    story = None
    if hn.story_url:
        story = url_item(hn.story_url, item.source)
        story = Item(key=story.key, original=story.original, source=item.source,
                     url=story.url, name=story.name, mails=item.mails)
    return story, "\n\n".join(parts).encode("utf-8")


def _settled_failure(known: Known | None, mode: Mode, options: Options) -> bool:
    """A failure that would repeat (a 404, a redirect loop): not fetched again on a plain
    re-run, like a corrupt file; --retry-errors or a new extractor version retries it."""
    return known is not None and mode is Mode.INCREMENTAL and known.status == Status.ERROR \
        and known.error_kind not in TRANSIENT_ERRORS and is_fresh(known.extractor_version,
                                                                  options)


def _why_again(known: Known | None, mode: Mode, options: Options) -> Why:
    if known is None:
        return Why.NEW
    if mode is Mode.FORCE:
        return Why.FORCED
    if known.status == Status.ERROR:
        return Why.FAILED
    return Why.CHANGED if is_fresh(known.extractor_version, options) else Why.OUTDATED


class _WebStage:
    """Fetches URL items on a few threads while files are being extracted.

    Results come back in submission order (a bounded window ahead), as a ``_Job`` to
    extract, an ``Entry`` for a failed fetch (typed error, nothing to extract), or the id of
    an archived item that did not change (304, or the same bytes as last time).
    """

    WINDOW = 32

    def __init__(self, options: Options, mode: Mode) -> None:
        self.options, self.mode = options, mode
        self._fetcher: object | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._queue: deque[tuple[Item, Known | None, Future[object]]] = deque()
        self.followups: deque[Item] = deque()  # found by resolvers, to fetch as well

    def __enter__(self) -> _WebStage:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self._fetcher is not None:
            self._fetcher.close()  # type: ignore[attr-defined]

    def _start(self) -> None:
        from ..fetch import Fetcher

        self._fetcher = Fetcher(self.options)
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="fetch")

    def submit(self, item: Item, known: Known | None
               ) -> Iterator[tuple[_Job | Entry | int, str]]:
        if self._pool is None:
            self._start()
        assert self._pool is not None and item.url is not None
        conditional = known is not None and self.mode is Mode.INCREMENTAL and \
            known.status != Status.ERROR and is_fresh(known.extractor_version, self.options)
        fut = self._pool.submit(
            self._fetcher.fetch, item.url,  # type: ignore[union-attr]
            etag=known.etag if conditional and known else None,
            last_modified=known.last_modified if conditional and known else None)
        self._queue.append((item, known, fut))
        while self._queue and (len(self._queue) > self.WINDOW or self._queue[0][2].done()):
            yield self._result(*self._queue.popleft())

    def drain(self) -> Iterator[tuple[_Job | Entry | int, str]]:
        while self._queue:
            yield self._result(*self._queue.popleft())

    def _resolve(self, item: Item, final_url: str, content: bytes
                 ) -> tuple[bytes, str, str] | None:
        """Resolver pages are archived as their context (an HN discussion), and the link
        they resolve to is fetched too."""
        try:
            story, text = _hn_resolution(item, final_url, content, self.options.hn_hosts)
        except ImportError:
            return None
        if not text:
            return None
        if story is not None:
            self.followups.append(story)
        return text, "discussion.txt", "text/plain"

    def busy(self) -> bool:
        return bool(self._queue or self.followups)

    def _result(self, item: Item, known: Known | None, fut: Future[object]
                ) -> tuple[_Job | Entry | int, str]:
        from ..source import Source

        res: Any = fut.result()
        info: dict[str, object] = {"url": item.url, "final_url": res.final_url,
                                   "http_status": res.status,
                                   "content_type": res.content_type,
                                   "etag": res.etag, "last_modified": res.last_modified}
        if res.redirects:
            info["redirects"] = list(res.redirects)
        if res.error is not None:
            doc = Document.failed(res.error.kind, res.error.message, name=item.name)
            doc.extractor = FETCH_TAG
            doc.metadata.extra.update({k: v for k, v in info.items() if v is not None})
            return Entry(item, doc), item.source
        if res.not_modified and known is not None:
            return known.id, item.source
        content: bytes = res.content or b""
        if known is not None and self.mode is Mode.INCREMENTAL and \
                known.status != Status.ERROR and \
                is_fresh(known.extractor_version, self.options) and \
                hashlib.sha256(content).hexdigest() == known.sha256:
            return known.id, item.source  # served again, byte for byte the same
        resolved = self._resolve(item, res.final_url, content)
        if resolved is not None:
            content, name, ctype = resolved
        else:
            name, ctype = item.name, res.content_type
        src = Source(name=name, data_=content, max_size=self.options.max_file_size,
                     url=res.final_url, charset=res.charset, content_type=ctype)
        return _Job(item, src, _why_again(known, self.mode, self.options), info), item.source


def _chunks(it: Iterator[Item], n: int) -> Iterator[list[Item]]:
    chunk: list[Item] = []
    for x in it:
        chunk.append(x)
        if len(chunk) >= n:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
