"""``textsieve run``: list -> decide -> fetch -> resolve -> extract -> OCR pages -> write.

Each step is a small function (or object) of its input and the options; this module only
wires them. Listing is the sources' (``sources/``); deciding is the one freshness policy
(``fresh.py``); fetching and resolving are ``_WebStage`` and ``resolve``; extraction and
OCR pages run through the document steps of ``core`` (``as_done``) on an executor (local
processes or a Ray cluster); writing is ``_Writer``, the archive's single writer, here in
the driver, in batches of one transaction each. Documents are written in the order they
finish, and a batch is committed within ``BATCH_SECONDS`` of its first document, so one
slow input (a big scan) never holds back the items finished after it: search sees them
during the run, and a run killed at any moment is resumed by running the same command
again.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..archive.labels import Pending
from ..archive.store import Archive, ArchiveError, Check, Entry, Known, Original
from ..core import Input, as_done, make_executor
from ..extractors import FETCH_TAG
from ..model import Document, ErrorInfo, ErrorKind, Item, MailRef, Status
from ..model.items import Response
from ..options import Options
from ..sources import ItemSource
from .fresh import TRANSIENT_ERRORS, Freshness, Mode, Why

if TYPE_CHECKING:
    from ..bytesource import Source

__all__ = ["TRANSIENT_ERRORS", "Mode", "RunStats", "Why", "run"]

logger = logging.getLogger(__name__)


@dataclass
class RunStats:
    """Counts a run reports as it goes and at the end (also stored in the runs table)."""

    total: int = 0  # items seen in the sources
    skipped: int = 0  # unchanged, nothing to do
    done: int = 0  # extracted and written
    status: Counter[str] = field(default_factory=Counter)  # ok / empty / error
    errors: Counter[str] = field(default_factory=Counter)  # by error kind
    why: Counter[str] = field(default_factory=Counter)  # new / changed / failed ...
    # Sources that failed this run while the item's text was kept from its capture (by kind)
    gone: Counter[str] = field(default_factory=Counter)
    # Items whose kept original is missing or damaged: not read again, their text kept
    # (`textsieve check` names them).
    lost_originals: int = 0
    started: float = field(default_factory=time.monotonic)
    listing_done: bool = False
    # Items the sources will list, counted ahead of the listing (None: not known, or not
    # countable): the listing itself only runs a small window ahead of the extraction.
    expected: int | None = None
    # Paths that led nowhere (a symlink loop, a pipe in a folder), as given, with why:
    # for the progress hook to report (it takes them off as it prints them).
    dead_ends: deque[tuple[str, ErrorInfo]] = field(default_factory=deque)

    def as_dict(self) -> dict[str, int]:
        return {"total": self.total, "skipped": self.skipped, "extracted": self.done,
                **{f"status_{k}": v for k, v in self.status.items()},
                **{f"error_{k}": v for k, v in self.errors.items()},
                **{f"why_{k}": v for k, v in self.why.items()},
                **{f"gone_{k}": v for k, v in self.gone.items()},
                **({"lost_originals": self.lost_originals} if self.lost_originals else {})}


ProgressFn = Callable[[RunStats, Document | None], None]

BATCH_ITEMS = 64  # at most this many items per transaction ...
BATCH_SECONDS = 0.5  # ... and none waits longer than this for its commit
TICK = 0.1  # how often the writer looks at the clock while the executor works
LIST_CHUNK = 256  # items looked up in the archive at once


def run(sources: Sequence[ItemSource], archive: Archive, options: Options, *,
        mode: Mode = Mode.INCREMENTAL, progress: ProgressFn | None = None,
        run_options: dict[str, object] | None = None) -> RunStats:
    """Run ``sources`` into ``archive``: list, decide, fetch, extract, write. An
    incremental run of an incremental source (a feed, a mailbox: one with ``bind_state``,
    which lists only what it has not seen) also lists the items it owes from earlier runs
    (``retry.owed``: their last attempt failed for a reason that passes), so running the
    same command again does what is new, changed, or failed before, as with a folder; with
    ``--retry-errors`` every item of it that failed, and its state stays as it was."""
    stats = RunStats()
    run_id = archive.begin_run([s.spec for s in sources], run_options or {})
    source_ids = {s.spec: archive.source_id(s.spec) for s in sources}
    for s in sources:  # incremental mail sources resume from the last completed sync
        bind = getattr(s, "bind_state", None)
        if bind is not None:
            bind(archive.source_state(s.spec))
    listed = list(sources)
    if mode in (Mode.INCREMENTAL, Mode.RETRY_ERRORS):
        # and what they owe from before: failed, may not again (--retry-errors: every
        # failure of theirs, as a folder's run lists every file and retries the failed)
        from .retry import owed

        listed += owed(archive, [s.spec for s in sources if hasattr(s, "bind_state")],
                       all_failures=mode is Mode.RETRY_ERRORS)
    status = "interrupted"
    _count_ahead(listed, stats)
    try:
        _run(listed, archive, options, mode, stats, run_id, source_ids, progress)
        for s in sources:  # only now: every item of this sync is committed
            new_state = getattr(s, "new_state", None)
            # --retry-errors reads nothing new: what the source lists now and was not
            # read stays to list again, for the next run that reads it.
            if new_state is not None and mode is not Mode.RETRY_ERRORS:
                archive.save_source_state(s.spec, new_state())
        status = "completed"
    finally:
        archive.end_run(run_id, stats.as_dict(), status)
    return stats


def _count_ahead(sources: Sequence[ItemSource], stats: RunStats) -> None:
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
    """An item on its way to the executor, with what fetching it taught us."""

    item: Item
    obj: Input  # a path, or a Source holding fetched bytes and transport hints
    why: Why
    fetched: dict[str, object] | None = None  # url, final_url, http_status, validators...
    response: Response | None = None  # what the server answered with the bytes
    original: Original | None = None  # the bytes as received, when they are kept
    check: Check | None = None  # this run's fetch of it
    stored: str | None = None  # made from this kept original (no file, no network)


@dataclass
class _Checked:
    """A web item asked again and found unchanged (304, the same bytes)."""

    id: int
    check: Check


@dataclass
class _Redo:
    """A web item to extract again from its kept original (outdated or forced), whatever
    its fetch said (``check``: 304, the same bytes, or a failure)."""

    item: Item
    known: Known
    check: Check


class _Writer:
    """The write step: the archive's one writer. Counts each finished item, commits in
    batches (one transaction each, at most ``BATCH_ITEMS``, none older than
    ``BATCH_SECONDS``), touches unchanged items, records mail provenance. Each batch
    also brings the run's record up to date, so a killed run's record says what it did."""

    def __init__(self, archive: Archive, run_id: int, source_ids: dict[str, int],
                 stats: RunStats, policy: Freshness, notify: ProgressFn) -> None:
        self.archive, self.run_id, self.source_ids = archive, run_id, source_ids
        self.stats, self.policy, self.notify = stats, policy, notify
        self.batch: list[Entry] = []
        self.mail_links: list[tuple[str, MailRef]] = []  # (item key, mail) still to record
        self.listings: list[Pending] = []  # labels and listings still to record
        self.oldest = 0.0  # when the first entry of the batch came

    def record(self, entry: Entry) -> None:
        """Count a finished item and commit the batch when it is due."""
        doc = entry.doc
        self.policy.stamp(doc)
        if not self.batch:
            self.oldest = time.monotonic()
        self.batch.append(entry)
        self.stats.done += 1
        self.stats.status[str(doc.status)] += 1
        if doc.error:
            self.stats.errors[str(doc.error.kind)] += 1
        elif entry.check is not None and entry.check.error is not None:
            self.stats.gone[str(entry.check.error.kind)] += 1
        if len(self.batch) >= BATCH_ITEMS:
            self.flush()
        else:
            self.due()
        self.notify(self.stats, doc)

    def due(self) -> None:
        """Commit the batch if its first entry has waited ``BATCH_SECONDS``: called on
        every result and on the executor's ticks, so a commit never waits for the next
        document (which may be an hour of OCR away)."""
        if self.batch and time.monotonic() - self.oldest >= BATCH_SECONDS:
            self.flush()

    def unchanged(self, seen: list[tuple[int, int | None, int | None, str | None]],
                  spec: str, checks: list[tuple[int, Check]] | None = None) -> None:
        self.archive.touch(seen, self.run_id, self.source_ids[spec])
        if checks:
            self.archive.checked(checks)

    def flush(self) -> None:
        self.archive.write(self.batch, self.run_id, self.source_ids,
                           counts=self.stats.as_dict())
        self.batch.clear()
        self.link()

    def link(self) -> None:
        """Mail provenance for the items that exist by now (the rest wait for theirs)."""
        if self.mail_links:
            self.mail_links[:] = self.archive.link_mails(self.mail_links, self.run_id,
                                                         self.source_ids)
        if self.listings:
            self.listings[:] = self.archive.link_listings(self.listings, self.run_id,
                                                          self.source_ids)


def list_items(sources: Sequence[ItemSource]) -> Iterator[tuple[str, list[Item]]]:
    """The list step: each source's items, in chunks (looked up in the archive at once)."""
    for src in sources:
        for chunk in _chunks(src.items(), LIST_CHUNK):
            yield src.spec, chunk


class _Decider:
    """The decide step (and the hand-off to fetching): the jobs to extract, in source
    order; unchanged items and failed fetches go to the writer on the way."""

    def __init__(self, archive: Archive, policy: Freshness, stats: RunStats,
                 writer: _Writer, web: _WebStage) -> None:
        self.archive, self.policy, self.stats = archive, policy, stats
        self.writer, self.web = writer, web
        self.seen: set[str] = set()  # keys listed in this run: a link mailed ten times is one

    def jobs(self, chunks: Iterator[tuple[str, list[Item]]]) -> Iterator[_Job]:
        for spec, chunk in chunks:
            self.stats.total += len(chunk)
            known = self.archive.known(i.key for i in chunk)
            unchanged: list[tuple[int, int | None, int | None, str | None]] = []
            for item in chunk:
                if not self._first_time(item):
                    continue
                k = known.get(item.key)
                if item.stored is not None:  # textsieve reextract: from the kept original
                    job = self._stored(item, k)
                    if job is None:
                        self.stats.skipped += 1
                    else:
                        yield job
                    continue
                if item.url is None and item.listing is not None and item.path is None \
                        and item.data is None and item.problem is None:
                    # A listed link textsieve does not fetch (ftp:, file:): as listed.
                    if k is None or self.policy.mode is Mode.FORCE:
                        self.stats.why[Why.NEW if k is None else Why.FORCED] += 1
                        self.writer.record(Entry(item, listed(item)))
                    else:
                        self.stats.skipped += 1
                        unchanged.append((k.id, None, None, None))
                    continue
                if item.url is not None and self.policy.options.fetch_mode == "never":
                    if k is None:  # archived as listed; a run that may fetch fetches it
                        self.stats.why[Why.NEW] += 1
                        self.writer.record(Entry(item, listed(item)))
                    else:  # what is archived stays: the listing is recorded beside it
                        self.stats.skipped += 1
                        unchanged.append((k.id, None, None, None))
                    continue
                if item.url is not None:
                    if not self.policy.fetch_wanted(k):
                        self.stats.skipped += 1
                        if k is not None:
                            unchanged.append((k.id, None, None, None))
                        continue
                    yield from self._fetched(self.web.submit(item, k))
                    yield from self._followups()
                    continue
                why, sha = self.policy.decide(item, k)
                if why is Why.CHANGED and item.response is not None and k is not None and \
                        sha is not None and self.archive.has_capture(k.id, sha):
                    why = None  # a WARC record read before: an earlier capture already
                if why is None:
                    if k is not None:
                        unchanged.append((k.id, item.size, item.mtime_ns, sha))
                    self.stats.skipped += 1
                    continue
                if item.problem is not None:  # a path that leads nowhere: never opened
                    self.stats.why[why] += 1
                    self.stats.dead_ends.append((item.original, item.problem))
                    self.writer.record(Entry(item, Document.failed(
                        item.problem.kind, item.problem.message, name=item.name)))
                    continue
                if item.path is None and item.data is None and item.remote:
                    # An object-store item is downloaded only now that it needs work.
                    obj = _download(item, self.policy.options)
                    if isinstance(obj, Document):
                        self.writer.record(Entry(item, obj))
                        continue
                    yield _Job(item, obj, why, original=Original.of(obj)
                               if self.policy.keeps(True) else None)
                    continue
                if item.response is not None and (failed := self._recorded_failure(item)):
                    self.writer.record(failed)
                    continue
                yield self._job(item, why)
            self.writer.unchanged(unchanged, spec)
            self.writer.link()
            self.writer.notify(self.stats, None)
        while self.web.busy():
            yield from self._fetched(self.web.drain())
            yield from self._followups()
        self.stats.listing_done = True

    def _job(self, item: Item, why: Why) -> _Job:
        """A file, or bytes that came with the item (a mail's article, a WARC record)."""
        if item.path is not None:
            return _Job(item, item.path, why, original=None if not self.policy.keeps(
                False) else Original("", item.size or 0, path=item.path))
        assert item.data is not None
        original = Original.of(item.data) if self.policy.keeps(True) else None
        if item.response is None:
            return _Job(item, item.data, why, original=original)
        src, info = self.web.source(item, item.data, item.response)
        return _Job(item, src, why, info, response=item.response, original=original)

    def _recorded_failure(self, item: Item) -> Entry | None:
        """A recorded answer that is a failure (a 404 in a WARC), or too large to read:
        its typed record, kept like a failed fetch's (a good capture stays)."""
        from ..fetch import status_error

        r = item.response
        assert r is not None and item.data is not None
        if r.status is not None and r.status >= 400:
            error = status_error(r.status)
        elif len(item.data) > self.policy.options.max_body:
            error = ErrorInfo(ErrorKind.TOO_LARGE, f"the recorded body is above the limit of "
                              f"{self.policy.options.max_body} bytes")
        else:
            return None
        entry = self.web.failed(item, Check(r.captured_at or time.time(), r.status, error,
                                            r.url))
        entry.response = r
        return entry

    def _stored(self, item: Item, known: Known | None) -> _Job | None:
        """``textsieve reextract``: the item from its kept original, when it needs it."""
        if known is None or known.original != item.stored:
            return None
        if self.policy.mode is not Mode.FORCE and self.policy.made_now(
                known.extractor_version):
            return None
        job = self._from_original(item, known, None)
        return job if isinstance(job, _Job) else None

    def _from_original(self, item: Item, known: Known, check: Check | None
                       ) -> _Job | None:
        """The current capture of an item, read again from its kept original."""
        cap = self.archive.current_capture(known.id)
        lost = None  # why a kept original cannot be read again, if it cannot
        try:
            data = self.archive.original_bytes(known.original) if known.original else None
            if data is None and known.original:
                lost = f"its kept original {known.original[:12]} is missing"
        except ArchiveError as exc:
            data, lost = None, str(exc)
        if lost is not None:
            # The item keeps its text, and the run says so instead of passing it over as
            # if nothing needed doing.
            self.stats.lost_originals += 1
            logger.warning("%s: %s", item.key, lost)
        if cap is None or data is None:
            return None
        why = Why.FORCED if self.policy.mode is Mode.FORCE else Why.OUTDATED
        url = cap["url"] or item.url
        if url is None:  # a mail's article, a file
            return _Job(item, data, why, stored=known.original, check=check)
        response = Response(url=url, status=cap["http_status"],
                            content_type=cap["content_type"], date=cap["http_date"],
                            etag=cap["etag"], last_modified=cap["last_modified"],
                            captured_at=cap["captured_at"], via=cap["source"])
        src, info = self.web.source(item, data, response)
        info.update(self.archive.fetch_facts(known.id))  # as it was when fetched
        return _Job(item, src, why, info, response=response, check=check,
                    stored=known.original)

    def _first_time(self, item: Item) -> bool:
        """Its mail provenance is recorded either way; an item named again (another
        mail) is only counted. Records of a WARC are one per capture date."""
        self.writer.mail_links.extend((item.key, ref) for ref in item.mails)
        if item.labels or item.listing is not None or item.facts:
            self.writer.listings.append((item.key, item.source, item.labels, item.listing,
                                         item.facts))
        seen = item.key if item.response is None else \
            f"{item.key} {item.response.captured_at}"
        if seen in self.seen:
            self.stats.skipped += 1
            return False
        self.seen.add(seen)
        return True

    def _fetched(self, jobs: Iterator[tuple[_Job | Entry | _Checked | _Redo, str]]
                 ) -> Iterator[_Job]:
        """Web results: extract the new, record failures, touch what did not change,
        extract again from kept originals what needs it."""
        for out, spec in jobs:
            if isinstance(out, _Job):
                yield out
            elif isinstance(out, Entry):
                self.writer.record(out)
            elif isinstance(out, _Redo):
                job = self._from_original(out.item, out.known, out.check)
                if job is not None:
                    yield job
                elif out.check.error is not None:  # the original is lost: the failure
                    self.writer.record(self.web.failed(out.item, out.check))
                else:
                    self.stats.skipped += 1
                    self.writer.unchanged([(out.known.id, None, None, None)], spec,
                                          [(out.known.id, out.check)])
            else:
                self.stats.skipped += 1
                self.writer.unchanged([(out.id, None, None, None)], spec,
                                      [(out.id, out.check)])

    def _followups(self) -> Iterator[_Job]:
        """Links found by resolvers (a Hacker News item's story) join the run."""
        while self.web.followups:
            item = self.web.followups.popleft()
            self.stats.total += 1
            if not self._first_time(item):
                continue
            k = self.archive.known([item.key]).get(item.key)
            yield from self._fetched(self.web.submit(item, k))


def listed(item: Item) -> Document:
    """A link archived with what its list says of it (``--fetch never``): its title, its
    note as the text (so search finds it), nothing fetched."""
    from ..extractors import LISTED_TAG

    lst = item.listing
    title = (lst.title if lst else None) or item.original
    note = (lst.note if lst else None) or ""
    doc = Document(name=item.name, mime_type="text/uri-list", status=Status.LISTED,
                   title=title, text=note,
                   markdown=f"[{_md_escape(title)}](<{item.original}>)\n\n{note}".strip())
    doc.extractor = LISTED_TAG
    if lst is not None:
        doc.warnings.extend(lst.warnings)
    return doc


def _md_escape(text: str) -> str:
    return "".join(f"\\{ch}" if ch in "\\[]*_`<>" else ch for ch in text)


def _finished(job: _Job, doc: Document) -> Entry:
    """An extracted document as the archive entry of its item."""
    if doc.name is None:
        doc.name = job.item.name
    if job.fetched:
        doc.metadata.extra.update({k: v for k, v in job.fetched.items()
                                   if k not in ("etag", "last_modified")})
    original = job.original
    if original is not None and original.path is not None:  # a file: its hash is known now
        original = Original(doc.sha256, original.size, path=original.path) \
            if doc.sha256 else None
    return Entry(job.item, doc, validators=_validators(job.fetched), response=job.response,
                 original=original, check=job.check, stored=job.stored)


def _run(sources: Sequence[ItemSource], archive: Archive, options: Options, mode: Mode,
         stats: RunStats, run_id: int, source_ids: dict[str, int],
         progress: ProgressFn | None) -> None:
    """Wire the steps: list -> decide -> fetch -> resolve -> extract/OCR -> write."""
    policy = Freshness(options, mode)
    writer = _Writer(archive, run_id, source_ids, stats, policy,
                     progress or (lambda s, d: None))
    pending: dict[int, _Job] = {}  # extracting now, by sequence number
    with _WebStage(options, policy) as web:
        decider = _Decider(archive, policy, stats, writer, web)

        copies_root = _copies_root(sources) if options.searchable_pdf_dir else None
        if options.searchable_pdf_dir is not None:
            from ..ocr.searchable import searchable_parts

        def queued() -> Iterator[tuple[int, Input, str | None, list[str] | None]]:
            for n, job in enumerate(decider.jobs(list_items(sources))):
                stats.why[job.why] += 1
                pending[n] = job
                # Where its searchable copy would go: the tree mirrored, never by name.
                out = None if options.searchable_pdf_dir is None else \
                    searchable_parts(job.item.key, copies_root)
                yield n, job.obj, job.item.name, out

        executor = make_executor(options)
        try:
            # In the order they finish: nothing waits behind a slow input.
            for got in as_done(executor, queued(), options, tick=TICK):
                if got is None:
                    writer.due()
                    continue
                n, doc = got
                writer.record(_finished(pending.pop(n), doc))  # type: ignore[call-overload]
        except KeyboardInterrupt:
            writer.flush()  # Ctrl-C: keep what is already extracted; the re-run does the rest
            raise
        finally:
            executor.close()
    writer.flush()
    stats.listing_done = True
    writer.notify(stats, None)


def _copies_root(sources: Sequence[ItemSource]) -> str | None:
    """The folder the searchable copies mirror: the deepest one holding every file source's
    root, so files of one run never share a copy (``a/scan.pdf``, ``b/scan.pdf``)."""
    roots = [r for r in (getattr(s, "root", None) for s in sources) if r]
    return os.path.commonpath(roots) if roots else None


def _download(item: Item, options: Options) -> bytes | Document:
    """The bytes of an object-store item, or a failed Document saying why not."""
    from ..uris import UriError, read

    assert item.remote is not None
    try:
        return read(item.remote, options).data
    except UriError as exc:
        return Document.failed(exc.kind, exc.message, name=item.name)


def _validators(fetched: dict[str, object] | None) -> tuple[str | None, str | None] | None:
    if not fetched:
        return None
    etag, modified = fetched.get("etag"), fetched.get("last_modified")
    return (etag if isinstance(etag, str) else None,
            modified if isinstance(modified, str) else None)


def resolve(item: Item, final_url: str, content: bytes, options: Options
            ) -> tuple[Item | None, bytes, str, str] | None:
    """The resolve step: a resolver page (a Hacker News item) is archived as its context
    (the discussion as text), and the link it resolves to (the story) becomes a new item.
    None: not a resolver page."""
    from ..links.resolve import hn_item_id, resolve_hn
    from ..sources.urls import url_item

    if hn_item_id(final_url, options.hn_hosts) is None:
        return None
    hn = resolve_hn(content, final_url)
    parts = [p for p in (hn.title, hn.story_url, hn.text) if p]
    if not parts:
        return None
    story = None
    if hn.story_url:
        story = url_item(hn.story_url, item.source)
        story = Item(key=story.key, original=story.original, source=item.source,
                     url=story.url, name=story.name, mails=item.mails)
    return story, "\n\n".join(parts).encode("utf-8"), "discussion.txt", "text/plain"


class _WebStage:
    """Fetches URL items on a few threads while files are being extracted.

    Results come back as the fetches finish (at most ``WINDOW`` in flight: a slow server
    holds back nothing fetched after it), as a ``_Job`` to extract, an ``Entry`` for a
    failed fetch (typed error, nothing to extract; the writer keeps a good capture), a
    ``_Checked`` item that did not change (304, or the same bytes as last time), or a
    ``_Redo`` from the kept original (outdated or forced).
    """

    WINDOW = 32

    def __init__(self, options: Options, policy: Freshness) -> None:
        self.options, self.policy = options, policy
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
               ) -> Iterator[tuple[_Job | Entry | _Checked | _Redo, str]]:
        if self._pool is None:
            self._start()
        assert self._pool is not None and item.url is not None
        conditional = self.policy.conditional(known)
        fut = self._pool.submit(
            self._fetcher.fetch, item.url,  # type: ignore[union-attr]
            etag=known.etag if conditional and known else None,
            last_modified=known.last_modified if conditional and known else None)
        self._queue.append((item, known, fut))
        yield from self._done(block=len(self._queue) > self.WINDOW)

    def drain(self) -> Iterator[tuple[_Job | Entry | _Checked | _Redo, str]]:
        while self._queue:
            yield from self._done(block=True)

    def _done(self, *, block: bool
              ) -> Iterator[tuple[_Job | Entry | _Checked | _Redo, str]]:
        """The fetches finished by now, whatever their place in the queue; ``block``: at
        least one (waiting for the first to finish, whichever it is)."""
        if block:
            wait([f for _, _, f in self._queue], return_when=FIRST_COMPLETED)
        done = [q for q in self._queue if q[2].done()]
        if done:
            taken = {id(q) for q in done}
            self._queue = deque(q for q in self._queue if id(q) not in taken)
            for q in done:
                yield self._result(*q)

    def _resolve(self, item: Item, final_url: str, content: bytes, follow: bool = True
                 ) -> tuple[bytes, str, str] | None:
        """Resolver pages are archived as their context (an HN discussion), and the link
        they resolve to is fetched too (``follow``: not when reading kept or recorded
        bytes, which never fetch)."""
        try:
            resolved = resolve(item, final_url, content, self.options)
        except ImportError:
            return None
        if resolved is None:
            return None
        story, text, name, ctype = resolved
        if story is not None and follow:
            self.followups.append(story)
        return text, name, ctype

    def busy(self) -> bool:
        return bool(self._queue or self.followups)

    def _result(self, item: Item, known: Known | None, fut: Future[object]
                ) -> tuple[_Job | Entry | _Checked | _Redo, str]:
        res: Any = fut.result()
        info: dict[str, object] = {"url": item.url, "final_url": res.final_url,
                                   "http_status": res.status,
                                   "content_type": res.content_type,
                                   "etag": res.etag, "last_modified": res.last_modified}
        if res.redirects:
            info["redirects"] = list(res.redirects)
        check = Check(time.time(), res.status or None, res.error, item.url)
        redo = self.policy.redo_from_original(known)
        if res.error is not None:
            if redo and known is not None:  # the kept bytes, since the server fails
                return _Redo(item, known, check), item.source
            return self.failed(item, check, info), item.source
        if res.not_modified and known is not None:
            if redo:
                return _Redo(item, known, check), item.source
            return _Checked(known.id, check), item.source
        content: bytes = res.content or b""
        sha = hashlib.sha256(content).hexdigest()
        if known is not None and sha == known.sha256 and self.policy.still_good(known):
            return _Checked(known.id, check), item.source  # served again, byte for byte
        if known is not None and sha == known.original and redo:
            return _Redo(item, known, check), item.source  # the same bytes: kept already
        response = Response(url=res.final_url, status=res.status,
                            content_type=_content_type(res.content_type, res.charset),
                            date=res.date, etag=res.etag, last_modified=res.last_modified,
                            captured_at=check.at)
        src, _ = self.source(item, content, response, follow=True)
        original = Original(sha, len(content), data=content) if self.policy.keeps(True) \
            else None
        return _Job(item, src, self.policy.why_again(known), info, response=response,
                    original=original, check=check), item.source

    def failed(self, item: Item, check: Check, info: dict[str, object] | None = None
               ) -> Entry:
        """A failed fetch as its typed record (the writer keeps a good capture)."""
        assert check.error is not None
        doc = Document.failed(check.error.kind, check.error.message, name=item.name)
        doc.extractor = FETCH_TAG
        doc.metadata.extra.update({k: v for k, v in (info or {}).items() if v is not None})
        return Entry(item, doc, check=check)

    def source(self, item: Item, content: bytes, response: Response, *, follow: bool = False
               ) -> tuple[Source, dict[str, object]]:
        """Bytes a server sent (now, or kept, or in a WARC) as the input to extract, with
        the facts a fetch puts in the metadata. Resolver pages become their context."""
        from ..bytesource import Source
        from ..fetch import parse_content_type

        ctype, charset = parse_content_type(response.content_type)
        # The validators too: a later fetch of the item asks with them (a 304 costs
        # nothing), as it does after an ordinary fetch.
        info: dict[str, object] = {"url": item.url or response.url,
                                   "final_url": response.url,
                                   "http_status": response.status, "content_type": ctype,
                                   "etag": response.etag,
                                   "last_modified": response.last_modified}
        resolved = self._resolve(item, response.url, content, follow)
        name: str | None = item.name
        if resolved is not None:
            content, name, ctype = resolved
        return Source(name=name, data_=content, max_size=self.options.max_file_size,
                      url=response.url, charset=charset, content_type=ctype), \
            {k: v for k, v in info.items() if v is not None}


def _content_type(media: str | None, charset: str | None) -> str | None:
    """The Content-Type header again, from what the fetcher parsed of it."""
    if media is None:
        return None
    return f"{media}; charset={charset}" if charset else media


def _chunks(it: Iterator[Item], n: int) -> Iterator[list[Item]]:
    chunk: list[Item] = []
    for x in it:
        chunk.append(x)
        if len(chunk) >= n:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
