"""The document steps over an executor: extract -> OCR pages -> merge -> searchable copy.

A whole input is one task; when it comes back with pages to OCR (a scan), each page becomes
a task of its own, queued ahead of the inputs not yet started, so a long scan spreads over
every worker (local processes or a Ray cluster's cores). When its last page is in, the
pages are put back in order and merged, the searchable PDF copy is written (here, in the
driver: one writer), and the document is finished. Nothing here knows how tasks run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue as _queue
import threading
import time
from collections import deque
from collections.abc import Hashable, Iterable, Iterator
from concurrent.futures import Future
from typing import Any

from .. import procs
from ..model import Document, ErrorInfo, ErrorKind, Status
from ..options import Options
from .executor import Executor, Task, make_executor

logger = logging.getLogger(__name__)


class DocumentFlow:
    """Documents through an executor, finished in any order with their key."""

    def __init__(self, executor: Executor, options: Options) -> None:
        self.executor, self.options = executor, options
        self._next = 0
        self._keys: dict[int, Hashable] = {}  # task key -> the caller's key
        self._waiting: dict[int, tuple[Document, set[int], list[Any]]] = {}

    def add(self, key: Hashable, obj: Any, name: str | None,
            out: list[str] | None = None, *, options: Options | None = None,
            mode: str = "extract", deadline: float | None = None) -> None:
        """Queue one input; ``key`` comes back with its Document; ``out``: where its
        searchable copy goes below ``searchable_pdf_dir`` (safe parts), if not by name.
        ``options``: its own (else the flow's); ``mode``: see ``Task.mode``;
        ``deadline``: when its time is up (monotonic), waiting for a worker included."""
        k = self._next
        self._next += 1
        self._keys[k] = key
        self.executor.submit([Task(k, obj, name, out=out, options=options, mode=mode,
                                   deadline=deadline)])

    def in_flight(self) -> int:
        """Inputs added and not yet finished."""
        return len(self._keys)

    def step(self, timeout: float | None = None) -> list[tuple[Hashable, Document]]:
        """Run until some documents finish (or ``timeout``): (key, Document) pairs."""
        out: list[tuple[Hashable, Document]] = []
        for task, result in self.executor.wait(timeout):
            doc = self._finished(task, result)
            if doc is not None:
                out.append((self._keys.pop(task.key), doc))
        return out

    def _finished(self, task: Task, result: Any) -> Document | None:
        options = task.options or self.options
        if task.page is None:
            if task.mode != "extract" or not isinstance(result, Document):
                return result  # type: ignore[no-any-return]  # another mode's result
            doc: Document = result
            pages = doc.metadata.extra.get("ocr_pending") if doc.ok else None
            if not pages:
                return doc
            self._waiting[task.key] = (doc, set(pages), [])
            want_pdf = options.searchable_pdf_dir is not None and \
                doc.mime_type == "application/pdf"
            self.executor.submit([
                Task(task.key, task.obj, task.name, page=p, mime=doc.mime_type,
                     want_pdf=want_pdf, deadline=task.deadline, out=task.out,
                     options=task.options)
                for p in pages], first=True)
            return None
        doc, left, results = self._waiting[task.key]
        results.append(result)
        left.discard(task.page)
        if left:
            return None
        del self._waiting[task.key]
        return finish_pages(doc, task, results, options)


def finish_pages(doc: Document, task: Task, results: list[Any], options: Options) -> Document:
    """Put a document's OCRed pages back in order and merge them; write its searchable
    copy when asked; a document whose pages ran past its deadline is a ``timeout``."""
    from ..core import finish_ocr

    results.sort(key=lambda r: r.number)
    if task.want_pdf:
        searchable_copy(task, doc, results, options)
    finish_ocr(doc, results)
    if task.deadline is not None and time.monotonic() >= task.deadline:
        late = [r.number for r in results if r.error and r.error.startswith("timeout")]
        if late:
            # The pages read in time are kept, the others are in ``missing_pages``.
            doc.status = Status.ERROR
            doc.error = ErrorInfo(ErrorKind.TIMEOUT, (
                f"extraction exceeded {options.timeout:g} s: {len(late)} of "
                f"{len(results)} page(s) to OCR not read in time (missing_pages)"))
    return doc


def searchable_copy(task: Task, doc: Document, results: list[Any], options: Options) -> None:
    """Lay the pages' text-only PDFs over the original: a searchable copy in
    ``searchable_pdf_dir`` at ``task.out``, else named like the input (its path is in the
    metadata), written only through ``outfiles`` (safe names, no symlink followed)."""
    from .. import _source
    from ..ocr.searchable import pdf_parts, write_overlay

    assert options.searchable_pdf_dir is not None
    parts = task.out or pdf_parts([doc.name or task.name or f"document-{task.key}"])
    try:
        report = write_overlay(_source(task.obj, task.name, options), results,
                               (options.searchable_pdf_dir, parts), options)
        doc.metadata.extra["searchable_pdf"] = report["path"]
    except Exception as exc:  # the text is what matters; the copy is a bonus
        doc.warnings.append(f"searchable PDF not written: {type(exc).__name__}: {exc}")
    for r in results:
        r.pdf = None  # the page layers are large: do not keep them


def as_done(executor: Executor, jobs: Iterable[tuple[Hashable, Any, str | None,
                                                      list[str] | None]],
            options: Options, *, tick: float | None = None
            ) -> Iterator[tuple[Hashable, Document] | None]:
    """(key, Document) for each (key, input, name, out) job, as soon as it is finished:
    in completion order, so one slow input (a big scan) never holds back the inputs that
    finished after it (``textsieve run`` commits them at once; a kill loses none of them).

    The jobs are consumed lazily, at most ``executor.window`` in flight, so memory stays
    bounded however long the stream. ``out``: where the input's searchable PDF copy goes
    below ``Options.searchable_pdf_dir`` (safe path parts), None: by name. ``tick``: a
    None is yielded whenever that many seconds pass without a document, so the caller
    can do its timed work (commit what is due) while a long input runs."""
    items = iter(jobs)
    flow = DocumentFlow(executor, options)
    window = executor.window
    exhausted = False
    last = time.monotonic()
    while True:
        while not exhausted and flow.in_flight() < window:
            try:
                key, obj, name, out = next(items)
            except StopIteration:
                exhausted = True
                break
            flow.add(key, obj, name, out=out)
            if tick is not None and time.monotonic() - last >= tick:
                break  # a slow listing (fetches) must not keep finished work waiting
        if exhausted and not flow.in_flight():
            return
        room = not exhausted and flow.in_flight() < window
        done = flow.step(timeout=0.0 if room else tick)
        now = time.monotonic()
        if done:
            last = now
            yield from done
        elif tick is not None and now - last >= tick:
            last = now
            yield None


def extract(executor: Executor, pairs: Iterable[tuple[Any, ...]],
            options: Options) -> Iterator[Document]:
    """One Document per (input, name) pair, in input order (``as_done`` gives them as
    they finish). The pairs are consumed lazily, a bounded window ahead of the results,
    so they may be an endless stream. A third element, when given, is where the input's
    searchable PDF copy goes below ``Options.searchable_pdf_dir`` (safe path parts)."""
    items = iter(pairs)
    flow = DocumentFlow(executor, options)
    order: deque[int] = deque()
    done: dict[Hashable, Document] = {}
    window = executor.window
    exhausted, n = False, 0
    while True:
        while not exhausted and len(order) < window:
            try:
                obj, name, *out = next(items)
            except StopIteration:
                exhausted = True
                break
            order.append(n)
            flow.add(n, obj, name, out=out[0] if out else None)
            n += 1
        while order and order[0] in done:
            yield done.pop(order.popleft())
        if exhausted and not order:
            return
        done.update(flow.step())


def ocr_pages(executor: Executor, obj: Any, name: str | None, mime: str, pages: list[int],
              *, want_pdf: bool = False) -> list[Any]:
    """OCR pages of one PDF or image across the executor; PageOcr per page, in order."""
    executor.submit(Task(0, obj, name, page=p, mime=mime, want_pdf=want_pdf) for p in pages)
    results: dict[int, Any] = {}
    while len(results) < len(pages):
        for task, result in executor.wait():
            results[task.page or 0] = result
    return [results[p] for p in pages]


class Busy(Exception):
    """Every worker is busy and the queue is full: try again in ``retry_after`` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the service is busy; retry in {retry_after} s")
        self.retry_after = retry_after


class ExtractionService:
    """A thread-safe front to an executor, for a multi-threaded process (the REST service):
    ``submit(obj, name)`` from any thread returns a ``Future[Document]``; one driver thread
    owns the executor. Bounded: ``submit`` blocks while ``limit`` inputs are in flight.

        service = ExtractionService(options)       # executor from options.executor
        doc = service.submit(path_or_bytes, name).result()
        service.close()

    For a server: ``queue`` turns on admission (``slot()``: at most ``workers + queue``
    requests at once, the next refused at once with ``Busy``, so an overload queues a
    bounded amount instead of piling up threads and memory); each ``submit`` may carry its
    own options, a mode (``Task.mode``) and a deadline that counts the wait for a worker;
    ``recycle_after`` / ``recycle_rss`` replace a worker after N jobs or once it has grown
    (``LocalExecutor``); ``threads_run``: the process runs threads that may hold locks
    (a web server), so workers come from a forkserver (``procs.start_method``).
    ``stats`` counts jobs, timeouts, crashes, recycled workers and rejected requests;
    ``worker_pids()`` names the live workers.
    """

    def __init__(self, options: Options, executor: Executor | None = None,
                 limit: int | None = None, *, workers: int | None = None,
                 queue: int | None = None, recycle_after: int = 0,
                 recycle_rss: int = 0, threads_run: bool = False) -> None:
        self.options = options
        self.executor = executor
        self._make = lambda: make_executor(options, workers, recycle_after=recycle_after,
                                           recycle_rss=recycle_rss, threads_run=threads_run)
        self.size = executor.size if executor is not None else \
            max(1, workers or options.worker_count)
        self.capacity = self.size + queue if queue is not None else None
        self._admitted = 0
        self._lock = threading.Lock()
        self._rejected = 0
        self._queue: _queue.Queue[tuple[Any, ...] | None] = _queue.Queue()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._slots = threading.BoundedSemaphore(limit) if limit else None
        self._started = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._drive, name="textsieve-executor",
                                        daemon=True)
        self._thread.start()
        self._started.wait()

    # -- admission ---------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Requests holding an admission now."""
        return self._admitted

    def full(self) -> bool:
        """Every admission is taken now (a hint: ``slot`` decides)."""
        return self._closed or (self.capacity is not None
                                and self._admitted >= self.capacity)

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the ``workers + queue`` admissions for a request, or raise ``Busy``
        at once. The service takes it once the body is read (a slow client holds a
        connection, never a worker) and refuses at once when all are taken before."""
        with self._lock:
            if self._closed or (self.capacity is not None
                                and self._admitted >= self.capacity):
                self._rejected += 1
                # A fair hint: one round of the queue at the usual job time, at least 1 s.
                raise Busy(1)
            self._admitted += 1
        try:
            yield
        finally:
            with self._lock:
                self._admitted -= 1

    @property
    def stats(self) -> dict[str, int]:
        """Jobs, timeouts, crashes, recycled workers (the executor's) and rejected
        requests since the start."""
        counts = dict(getattr(self.executor, "stats", None) or
                      {"jobs": 0, "timeouts": 0, "crashes": 0, "recycled": 0})
        counts["rejected"] = self._rejected
        return counts

    def worker_pids(self) -> list[int]:
        """Pids of the live workers (a test kills one to see the service survive)."""
        pids = getattr(self.executor, "worker_pids", None)
        return list(pids()) if pids is not None else []

    # -- work --------------------------------------------------------------------------

    def submit(self, obj: Any, name: str | None = None, *, options: Options | None = None,
               mode: str = "extract", timeout: float | None = None) -> Future[Any]:
        """Queue one input; its Future gets the Document (a timeout or a crash is its
        error), or another ``mode``'s result. ``timeout`` (default the options'): seconds
        from now, the wait for a free worker included."""
        if self._closed:
            raise RuntimeError("the extraction service is closed")
        if self._slots is not None:
            self._slots.acquire()
        limit = (options or self.options).timeout if timeout is None else timeout
        if options is self.options:
            options = None  # the workers have these: nothing to send with the task
        fut: Future[Any] = Future()
        self._queue.put((obj, name, fut, options, mode, time.monotonic() + limit))
        # The driver may be waiting on its workers: wake it, unless every worker is busy
        # (it looks at the queue again when one answers; read after the put, see pool).
        if not getattr(self.executor, "all_busy", False):
            with contextlib.suppress(BlockingIOError, OSError):
                os.write(self._wake_w, b"\0")
        return fut

    def close(self) -> None:
        """Finish what was submitted, then stop the workers."""
        with self._lock:
            self._closed = True
        self._queue.put(None)
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"\0")
        self._thread.join()
        procs.close_fds([self._wake_r, self._wake_w])

    def _release(self) -> None:
        if self._slots is not None:
            self._slots.release()

    def _drain_wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self._wake_r, 4096):
                pass

    def _drive(self) -> None:
        # The executor is made here: local workers are started by the thread that lives
        # as long as they do (a forked one's parent-death signal follows it).
        try:
            executor = self.executor = self.executor or self._make()
        finally:
            self._started.set()
        # A submit from another thread ends the wait for the workers at once (the local
        # executor watches this pipe too); other executors are polled.
        wakes = hasattr(executor, "wakeup")
        if wakes:
            executor.wakeup = self._wake_r  # type: ignore[attr-defined]
        flow = DocumentFlow(executor, self.options)
        futures: dict[int, Future[Any]] = {}
        n, stopping = 0, False
        try:
            while not (stopping and not futures):
                block = not futures and not stopping
                self._drain_wake()  # before the queue: a later put writes a later byte
                while True:
                    try:
                        got = self._queue.get(block=block)
                    except _queue.Empty:
                        break
                    block = False
                    if got is None:
                        stopping = True
                        continue
                    obj, name, fut, options, mode, deadline = got
                    if not fut.set_running_or_notify_cancel():
                        self._release()  # cancelled while queued
                        continue
                    futures[n] = fut
                    flow.add(n, obj, name, options=options, mode=mode, deadline=deadline)
                    n += 1
                if futures:
                    for key, doc in flow.step(timeout=1.0 if wakes else 0.1):
                        futures.pop(key).set_result(doc)  # type: ignore[call-overload]
                        self._release()
        except BaseException as exc:  # no caller may wait for ever
            logger.exception("the extraction service's driver failed")
            for fut in futures.values():
                fut.set_exception(exc)
        finally:
            executor.close()


def extract_here(obj: Any, name: str | None, options: Options) -> Document:
    """Extract one input in this process (``textsieve.extract`` without isolation); a
    long scan's pages still spread over the cores, through a local executor of its own."""
    from .. import _source
    from ..core import extract_source, finish_ocr
    from ..forking import in_worker
    from ..ocr import ocr_pages as ocr_here

    fan_out = options.worker_count > 1 and not in_worker()
    doc = extract_source(_source(obj, name, options), options, defer_ocr=fan_out)
    pages: list[int] = doc.metadata.extra.get("ocr_pending") or [] if fan_out else []
    if not pages or not doc.ok:
        return doc
    assert doc.mime_type is not None
    if len(pages) >= 3:
        from .pool import LocalExecutor

        with LocalExecutor(options, min(options.worker_count, len(pages))) as executor:
            results = ocr_pages(executor, obj, name, doc.mime_type, pages)
    else:
        results = ocr_here(_source(obj, name, options), doc.mime_type, pages, options)
    finish_ocr(doc, results)
    return doc
