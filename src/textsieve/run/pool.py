"""Isolated, parallel extraction: a hang or a native crash costs one file, not the run.

A small pool of long-lived worker processes (forked, so the parsers imported once stay
warm). Each worker has an address-space cap (RLIMIT_AS). The parent hands out one input
at a time per worker and watches a deadline for each; a worker that overruns is killed and
replaced, and its file gets a ``timeout`` record; one that dies gets ``crashed``. Results
come back in input order through a bounded window, so memory stays flat however many
inputs there are.
"""

from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing as mp
import os
import resource
import signal
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from ..forking import die_with_parent, libc_prctl
from ..model import Document, ErrorInfo, ErrorKind, ExtractionError, Status
from ..options import Options


@dataclass
class _Task:
    """One unit of work for a worker: a whole input, or one page of it to OCR."""

    key: int
    obj: Any
    name: str | None
    page: int | None = None  # set: OCR this page (1-based) of ``obj`` (a PDF or an image)
    mime: str | None = None
    want_pdf: bool = False  # OCR pages: also return tesseract's text-only PDF page
    out: list[str] | None = None  # where its searchable copy goes (safe parts), if not by name
    page_workers: int = 1  # whole inputs: processes it may fork for its pages (idle cores)
    # When the document's time is up (``Options.timeout`` from its start): it bounds its
    # OCR pages too, however many there are, not only their extraction.
    deadline: float | None = None


def _worker_main(conn: Connection, options: Options, parent: int) -> None:
    # Its own process group: killing a worker kills what it started too (an external tool
    # spinning on a damaged file, forked page readers), not only the worker.
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    # The parent handles Ctrl-C; a worker must not die mid-file on the same signal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the driver's clean-stop handler
    # A parent killed outright (SIGKILL, SIGTERM) runs no cleanup: the kernel ends the
    # worker, and the group's guard then ends what the worker started.
    die_with_parent(parent)
    _guard_group()
    if not os.environ.get("TEXTSIEVE_DEBUG"):
        _quiet()
    # A native crash is reported as a typed record; a C traceback on stderr is noise.
    faulthandler.disable()
    if options.memory_limit > 0:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (options.memory_limit, options.memory_limit))
    from .. import _source
    from ..core import extract_source
    from ..ocr import PageOcr, ocr_pages

    while True:
        try:
            task: _Task | None = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if task is None:
            return
        result: Document | PageOcr
        try:
            src = _source(task.obj, task.name, options)
            if task.page is None:
                # Top-level documents leave their OCR pages to the pool, which spreads
                # them over every worker.
                result = extract_source(src, options, defer_ocr=True,
                                        page_workers=task.page_workers)
            else:
                assert task.mime is not None
                result = ocr_pages(src, task.mime, [task.page], options,
                                   want_pdf=task.want_pdf)[0]
        except ExtractionError as exc:  # a page task that cannot start (no language data)
            result = PageOcr(task.page or 0, error=f"{exc.kind}: {exc.message}")
        except BaseException as exc:
            msg = f"{type(exc).__name__}: {exc}"
            result = (Document.failed(ErrorKind.INTERNAL, msg, name=task.name)
                      if task.page is None else PageOcr(task.page, error=f"internal: {msg}"))
        try:
            conn.send((task.key, task.page, result))
        except MemoryError:
            conn.send((task.key, task.page, Document.failed(
                ErrorKind.TOO_LARGE, "result too large", name=task.name)))


def _guard_group() -> None:
    """Fork the worker's group guard: a tiny process that waits for the worker to die
    (end of file on a pipe only the worker holds) and then SIGKILLs the whole group.

    The helper programs a worker starts (antiword, the tesseract command, LibreOffice)
    are in its group but are not its forked copies, so they cannot ask the kernel to end
    them with it; the guard does, however the worker died (killed with its parent, a
    native crash). When the pool kills the group itself, the guard goes with it."""
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to spare: the worker still dies with its parent
        _close_fds([r, w])
        return
    if pid:
        os.close(r)
        return  # ``w`` stays open for the worker's whole life, on purpose
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # never hold the run's stdout (``| head``) or stdin
            os.dup2(devnull, fd)
        os.closerange(3, r)  # nor the worker's socket: the parent must see it die
        os.closerange(r + 1, os.sysconf("SC_OPEN_MAX"))
        while os.read(r, 1):
            pass
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(0)


def _close_fds(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _quiet() -> None:
    """Damaged files make native libraries talk on stderr (leptonica's "Error in
    boxClipToRectangle", libtiff's "Fax4Decode: Bad code word", Rust panic backtraces,
    PIL warnings): a worker reports every problem as the document's typed error, so that
    chatter only buries the run's own output. TEXTSIEVE_DEBUG=1 keeps it."""
    import warnings

    warnings.simplefilter("ignore")
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)


@dataclass
class _Worker:
    proc: Any
    conn: Connection
    task: _Task | None = None
    deadline: float = 0.0


class WorkerPool:
    """N isolated workers; ``map`` yields one Document per input, in input order."""

    def __init__(self, options: Options, workers: int | None = None) -> None:
        self.options = options
        self.size = max(1, workers or options.worker_count)
        self._ctx = mp.get_context("fork")
        self._workers: list[_Worker] = []
        self._warmed = False

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe(duplex=True)
        _PARENT_ENDS.add(parent)  # closed in every child, this worker's own included
        libc_prctl()  # looked up here, once, not in every child
        proc = self._ctx.Process(target=_worker_main, args=(child, self.options, os.getpid()),
                                 daemon=True)
        try:
            _in_long_lived_thread(proc.start)
        finally:
            child.close()
        return _Worker(proc, parent)

    def _kill(self, w: _Worker) -> None:
        try:
            _kill_group(w.proc)
            w.proc.join(5)
        finally:
            w.conn.close()

    def close(self) -> None:
        for w in self._workers:
            with contextlib.suppress(OSError, ValueError):
                w.conn.send(None)
        for w in self._workers:
            w.proc.join(1)
            if w.proc.is_alive():
                self._kill(w)
            w.conn.close()
        self._workers.clear()

    def map(self, inputs: Iterable[Any], names: Iterable[str | None] | None = None,
            ) -> Iterator[Document]:
        """One Document per input (a path, bytes or a file object), in input order."""
        if names is None:
            return self.map_pairs((obj, None) for obj in inputs)
        return self.map_pairs(zip(inputs, names, strict=False))

    def map_pairs(self, pairs: Iterable[tuple[Any, ...]]) -> Iterator[Document]:
        """Like ``map``, for (input, name) pairs; the iterable is consumed lazily, a
        bounded window ahead of the results, so it may be an endless stream. A third
        element, when given, is where the input's searchable PDF copy goes below
        ``Options.searchable_pdf_dir`` (safe path parts; ``textsieve run`` mirrors the tree).

        A document that comes back with pages to OCR is not finished: its pages go to the
        front of the queue as one task each, so a long scan keeps every worker busy, and
        the document is merged and yielded when its last page is in.
        """
        from ..core import finish_ocr
        from ..ocr import PageOcr

        items = iter(pairs)
        order: deque[int] = deque()  # keys in input order
        done: dict[int, Document] = {}
        waiting: dict[int, tuple[Document, set[int], list[PageOcr]]] = {}
        backlog: deque[_Task] = deque()
        window = self.size * 4
        state = {"next": 0, "exhausted": False}

        def refill() -> None:
            while not state["exhausted"] and len(order) < window:
                try:
                    obj, name, *out = next(items)
                except StopIteration:
                    state["exhausted"] = True
                    return
                key = state["next"]
                state["next"] += 1
                order.append(key)
                backlog.append(_Task(key, obj, name, out=out[0] if out else None))

        def finished(task: _Task, result: Any) -> None:
            if task.page is None:
                doc: Document = result
                pages = doc.metadata.extra.get("ocr_pending") if doc.ok else None
                if not pages:
                    done[task.key] = doc
                    return
                waiting[task.key] = (doc, set(pages), [])
                want_pdf = self.options.searchable_pdf_dir is not None and \
                    doc.mime_type == "application/pdf"
                backlog.extendleft(reversed([
                    _Task(task.key, task.obj, task.name, page=p, mime=doc.mime_type,
                          want_pdf=want_pdf, deadline=task.deadline, out=task.out)
                    for p in pages]))
                return
            doc, left, results = waiting[task.key]
            results.append(result)
            left.discard(task.page)
            if not left:
                del waiting[task.key]
                results.sort(key=lambda r: r.number)
                if task.want_pdf:
                    self._searchable_copy(task, doc, results)
                finish_ocr(doc, results)
                self._overran(task, doc, results)
                done[task.key] = doc

        def failed(task: _Task, kind: ErrorKind, message: str) -> Any:
            if task.page is not None:
                return PageOcr(task.page, error=f"{kind}: {message}")
            return _failed(task.obj, task.name, kind, message)

        while True:
            refill()
            while order and order[0] in done:
                yield done.pop(order.popleft())
            if state["exhausted"] and not order:
                return
            self._step(backlog, finished, failed)

    def _overran(self, task: _Task, doc: Document, results: list[Any]) -> None:
        """A document whose pages ran past its deadline is a ``timeout``: the pages read in
        time are kept, the others are in ``missing_pages``."""
        if task.deadline is None or time.monotonic() < task.deadline:
            return
        late = [r.number for r in results if r.error and r.error.startswith("timeout")]
        if late:
            doc.status = Status.ERROR
            doc.error = ErrorInfo(ErrorKind.TIMEOUT, (
                f"extraction exceeded {self.options.timeout:g} s: {len(late)} of "
                f"{len(results)} page(s) to OCR not read in time (missing_pages)"))

    def _searchable_copy(self, task: _Task, doc: Document, results: list[Any]) -> None:
        """Lay the pages' text-only PDFs over the original: a searchable copy in
        ``searchable_pdf_dir`` at ``task.out``, else named like the input (its path is in
        the metadata), written only through ``outfiles`` (safe names, no symlink followed)."""
        from .. import _source
        from ..ocr.searchable import pdf_parts, write_overlay

        assert self.options.searchable_pdf_dir is not None
        parts = task.out or pdf_parts([doc.name or task.name or f"document-{task.key}"])
        try:
            report = write_overlay(_source(task.obj, task.name, self.options), results,
                                   (self.options.searchable_pdf_dir, parts), self.options)
            doc.metadata.extra["searchable_pdf"] = report["path"]
        except Exception as exc:  # the text is what matters; the copy is a bonus
            doc.warnings.append(f"searchable PDF not written: {type(exc).__name__}: {exc}")
        for r in results:
            r.pdf = None  # the page layers are large: do not keep them

    def _warm(self, backlog: deque[_Task]) -> None:
        """Before the first fork: import the parsers the first inputs need, so the workers
        start with them loaded (imported once, pages shared copy-on-write) instead of each
        importing them on its first file (~50 ms for PDF)."""
        from .. import detection
        from ..extractors import preload
        from ..source import Source

        self._warmed = True
        mimes: set[str] = set()
        for task in list(backlog)[: 2 * self.size]:
            # Regular files only: reading the head of a pipe (``<(curl ...)``) here would
            # steal those bytes from the worker.
            if (task.page is None and isinstance(task.obj, (str, os.PathLike))
                    and os.path.isfile(task.obj)):
                # A bad input is the worker's to report.
                with contextlib.suppress(Exception), Source.from_path(task.obj) as src:
                    mimes.add(detection.detect(src).mime)
        with contextlib.suppress(Exception):
            preload(mimes)

    def _step(self, backlog: deque[_Task], finished: Any, failed: Any) -> None:
        """Hand out tasks to idle workers, then wait for one result or deadline."""
        if not self._warmed:
            self._warm(backlog)
        while len(self._workers) < self.size:
            self._workers.append(self._spawn())
        for i, w in enumerate(self._workers):
            while w.task is None and backlog:
                task = backlog.popleft()
                if task.deadline is not None and time.monotonic() >= task.deadline:
                    # A page of a document out of time: not started at all.
                    finished(task, failed(task, ErrorKind.TIMEOUT, self._late(task)))
                    continue
                if task.page is None:
                    # The last input in sight may use the idle workers' cores for its
                    # pages (one long PDF given to the CLI); otherwise they are needed.
                    idle = sum(1 for x in self._workers if x.task is None and x is not w)
                    task.page_workers = 1 + idle if not backlog else 1
                try:
                    w.conn.send(task)
                except (OSError, ValueError):
                    self._kill(w)
                    w = self._workers[i] = self._spawn()
                    w.conn.send(task)
                limit = self.options.timeout if task.page is None else \
                    self.options.ocr_page_timeout
                w.task, w.deadline = task, time.monotonic() + limit
                if task.deadline is not None:
                    w.deadline = min(w.deadline, task.deadline)
                elif task.page is None:
                    task.deadline = w.deadline  # its pages inherit it
        busy = [w for w in self._workers if w.task is not None]
        if not busy:
            return
        timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
        ready = wait([w.conn for w in busy], timeout=timeout)
        for i, w in enumerate(self._workers):
            task = w.task
            if task is None:
                continue
            if w.conn in ready:
                try:
                    _key, _page, result = w.conn.recv()
                    w.task = None
                    finished(task, result)
                    continue
                except (EOFError, OSError):
                    code = w.proc.exitcode if not w.proc.is_alive() else None
                    w.proc.join(1)
                    code = w.proc.exitcode if code is None else code
                    finished(task, failed(task, ErrorKind.CRASHED, _how(code)))
            elif time.monotonic() >= w.deadline:
                what = "extraction" if task.page is None else f"OCR of page {task.page}"
                limit = self.options.timeout if task.page is None else \
                    self.options.ocr_page_timeout
                message = self._late(task) if task.page is not None and \
                    task.deadline is not None and w.deadline >= task.deadline \
                    else f"{what} exceeded {limit:g} s"
                finished(task, failed(task, ErrorKind.TIMEOUT, message))
            else:
                continue
            self._kill(w)
            self._workers[i] = self._spawn()

    def _late(self, task: _Task) -> str:
        return f"the document's {self.options.timeout:g} s were over before page " \
               f"{task.page} was read"

    def ocr(self, obj: Any, name: str | None, mime: str, pages: list[int], *,
            want_pdf: bool = False) -> list[Any]:
        """OCR pages of one PDF or image across all workers; PageOcr per page, in order."""
        from ..ocr import PageOcr

        backlog = deque(_Task(0, obj, name, page=p, mime=mime, want_pdf=want_pdf)
                        for p in pages)
        results: dict[int, PageOcr] = {}

        def finished(task: _Task, result: PageOcr) -> None:
            results[task.page or 0] = result

        def failed(task: _Task, kind: ErrorKind, message: str) -> PageOcr:
            return PageOcr(task.page or 0, error=f"{kind}: {message}")

        while len(results) < len(pages):
            self._step(backlog, finished, failed)
        return [results[p] for p in pages]


# The driver's ends of its workers' sockets. A forked child (a worker, a page reader) must
# not keep them: a worker holding its own socket's other end never sees end of file when
# the driver dies, and one holding a sibling's keeps that sibling waiting.
_PARENT_ENDS: weakref.WeakSet[Connection] = weakref.WeakSet()


def _close_parent_ends() -> None:
    for conn in list(_PARENT_ENDS):
        with contextlib.suppress(OSError):
            conn.close()
    _PARENT_ENDS.clear()


_forker: ThreadPoolExecutor | None = None
_forker_lock = threading.Lock()


def _in_long_lived_thread(fn: Callable[[], None]) -> None:
    """Run ``fn`` (a fork) in the main thread or in one thread kept for the process's life.

    The kernel's parent-death signal follows the forking *thread*: a worker forked by a
    short-lived thread (a request handler that made a pool another thread uses) would be
    killed when that thread ends, mid-run."""
    global _forker
    if threading.current_thread() is threading.main_thread():
        fn()
        return
    with _forker_lock:
        if _forker is None:
            _forker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="textsieve-fork")
        forker = _forker
    forker.submit(fn).result()


def _after_fork_in_child() -> None:
    """A forked child has neither the parent's sockets nor its (copied, dead) threads."""
    global _forker, _forker_lock
    _close_parent_ends()
    _forker, _forker_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _kill_group(proc: Any) -> None:
    """SIGKILL a worker and its process group (the helpers it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(proc.pid, signal.SIGKILL)  # the worker leads its own group
    with contextlib.suppress(ProcessLookupError, OSError):
        proc.kill()  # in case setpgid failed and it is not a group leader


def _display_name(obj: Any, name: str | None) -> str | None:
    if name:
        return name
    if isinstance(obj, (str, os.PathLike)):
        return os.path.basename(os.fspath(obj))
    return None


def _failed(obj: Any, name: str | None, kind: ErrorKind, message: str) -> Document:
    doc = Document(name=_display_name(obj, name), status=Status.ERROR,
                   error=ErrorInfo(kind, message))
    return doc


def _how(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            how = f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            how = f"killed by signal {-exitcode}"
    else:
        how = f"exited with status {exitcode}"
    return f"the extractor process died ({how})"


def extract_many(inputs: Iterable[Any], options: Options, *,
                 names: Iterable[str | None] | None = None,
                 workers: int | None = None) -> Iterator[Document]:
    """Extract every input in isolated worker processes; yields in input order."""
    with WorkerPool(options, workers) as pool:
        yield from pool.map(inputs, names)
