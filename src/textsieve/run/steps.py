"""The document steps over an executor: extract -> OCR pages -> merge -> searchable copy.

A whole input is one task; when it comes back with pages to OCR (a scan), each page becomes
a task of its own, queued ahead of the inputs not yet started, so a long scan spreads over
every worker (local processes or a Ray cluster's cores). When its last page is in, the
pages are put back in order and merged, the searchable PDF copy is written (here, in the
driver: one writer), and the document is finished. Nothing here knows how tasks run.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Hashable, Iterable, Iterator
from concurrent.futures import Future
from typing import Any

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
            out: list[str] | None = None) -> None:
        """Queue one input; ``key`` comes back with its Document; ``out``: where its
        searchable copy goes below ``searchable_pdf_dir`` (safe parts), if not by name."""
        k = self._next
        self._next += 1
        self._keys[k] = key
        self.executor.submit([Task(k, obj, name, out=out)])

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
        if task.page is None:
            doc: Document = result
            pages = doc.metadata.extra.get("ocr_pending") if doc.ok else None
            if not pages:
                return doc
            self._waiting[task.key] = (doc, set(pages), [])
            want_pdf = self.options.searchable_pdf_dir is not None and \
                doc.mime_type == "application/pdf"
            self.executor.submit([
                Task(task.key, task.obj, task.name, page=p, mime=doc.mime_type,
                     want_pdf=want_pdf, deadline=task.deadline, out=task.out)
                for p in pages], first=True)
            return None
        doc, left, results = self._waiting[task.key]
        results.append(result)
        left.discard(task.page)
        if left:
            return None
        del self._waiting[task.key]
        return finish_pages(doc, task, results, self.options)


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


def extract(executor: Executor, pairs: Iterable[tuple[Any, ...]],
            options: Options) -> Iterator[Document]:
    """One Document per (input, name) pair, in input order. The pairs are consumed
    lazily, a bounded window ahead of the results, so they may be an endless stream. A
    third element, when given, is where the input's searchable PDF copy goes below
    ``Options.searchable_pdf_dir`` (safe path parts; ``textsieve run`` mirrors the tree)."""
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


class ExtractionService:
    """A thread-safe front to an executor, for a multi-threaded process (the REST service):
    ``submit(obj, name)`` from any thread returns a ``Future[Document]``; one driver thread
    owns the executor. Bounded: ``submit`` blocks while ``limit`` inputs are in flight.

        service = ExtractionService(options)       # executor from options.executor
        doc = service.submit(path_or_bytes, name).result()
        service.close()
    """

    def __init__(self, options: Options, executor: Executor | None = None,
                 limit: int | None = None) -> None:
        self.options = options
        self._executor = executor
        self._queue: queue.Queue[tuple[Any, str | None, Future[Document]] | None] = \
            queue.Queue()
        self._slots = threading.BoundedSemaphore(limit) if limit else None
        self._started = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._drive, name="textsieve-executor",
                                        daemon=True)
        self._thread.start()
        self._started.wait()

    def submit(self, obj: Any, name: str | None = None) -> Future[Document]:
        if self._closed:
            raise RuntimeError("the extraction service is closed")
        if self._slots is not None:
            self._slots.acquire()
        fut: Future[Document] = Future()
        self._queue.put((obj, name, fut))
        return fut

    def close(self) -> None:
        """Finish what was submitted, then stop the workers."""
        self._closed = True
        self._queue.put(None)
        self._thread.join()

    def _release(self) -> None:
        if self._slots is not None:
            self._slots.release()

    def _drive(self) -> None:
        # The executor is made here: local workers are forked by the thread that lives
        # as long as they do (their parent-death signal follows it).
        executor = self._executor or make_executor(self.options)
        self._started.set()
        flow = DocumentFlow(executor, self.options)
        futures: dict[int, Future[Document]] = {}
        n, stopping = 0, False
        try:
            while not (stopping and not futures):
                block = not futures and not stopping
                while True:
                    try:
                        got = self._queue.get(block=block)
                    except queue.Empty:
                        break
                    block = False
                    if got is None:
                        stopping = True
                        continue
                    obj, name, fut = got
                    if not fut.set_running_or_notify_cancel():
                        self._release()  # cancelled while queued
                        continue
                    futures[n] = fut
                    flow.add(n, obj, name)
                    n += 1
                if futures:
                    for key, doc in flow.step(timeout=0.1):
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
