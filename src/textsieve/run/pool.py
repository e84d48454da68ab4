"""The local executor: isolated worker processes; a hang or a crash costs one task.

A small pool of long-lived worker processes (forked, so the parsers imported once stay
warm). Each worker has an address-space cap (RLIMIT_AS). The driver hands out one task
at a time per worker and watches a deadline for each; a worker that overruns is killed and
replaced, and its task gets a ``timeout`` result; one that dies gets ``crashed``. What a
task is and what is done with its result are ``executor.py``'s and ``steps.py``'s.
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

from ..forking import die_with_parent, libc_prctl, quiet_native_chatter
from ..model import Document, ErrorKind
from ..options import Options
from .executor import Task, failed, late_message, run_task


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
    quiet_native_chatter()  # also a native crash's C traceback: it is a typed record
    faulthandler.disable()  # under TEXTSIEVE_DEBUG too: the record says it crashed
    if options.memory_limit > 0:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (options.memory_limit, options.memory_limit))
    while True:
        try:
            task: Task | None = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if task is None:
            return
        try:
            result = run_task(task, options)
        except BaseException as exc:  # a worker answers, whatever happened
            result = failed(task, ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}")
        try:
            conn.send((task.key, task.page, result))
        except MemoryError:
            conn.send((task.key, task.page, failed(task, ErrorKind.TOO_LARGE,
                                                   "result too large")))


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


@dataclass
class _Worker:
    proc: Any
    conn: Connection
    task: Task | None = None
    deadline: float = 0.0


class LocalExecutor:
    """N isolated worker processes on this machine: the ``local`` executor.

    Workers are forked (the parsers imported once stay warm), from the main thread or the
    one long-lived forker thread, so they die with this process (PR_SET_PDEATHSIG). One
    task per worker at a time; a worker past its task's deadline is killed with its
    process group and replaced, and the task gets a ``timeout`` result; one that dies
    gets ``crashed``. Driven by one thread (see ``steps.ExtractionService`` for more).
    """

    def __init__(self, options: Options, workers: int | None = None) -> None:
        self.options = options
        self.size = max(1, workers or options.worker_count)
        self.window = self.size * 4
        self._ctx = mp.get_context("fork")
        self._workers: list[_Worker] = []
        self._backlog: deque[Task] = deque()
        self._warmed = False

    def __enter__(self) -> LocalExecutor:
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
        self._backlog.clear()
        for w in self._workers:
            with contextlib.suppress(OSError, ValueError):
                w.conn.send(None)
        for w in self._workers:
            w.proc.join(1)
            if w.proc.is_alive():
                self._kill(w)
            w.conn.close()
        self._workers.clear()

    def submit(self, tasks: Iterable[Task], *, first: bool = False) -> None:
        if first:
            self._backlog.extendleft(reversed(list(tasks)))
        else:
            self._backlog.extend(tasks)

    def busy(self) -> bool:
        return bool(self._backlog) or any(w.task is not None for w in self._workers)

    def _warm(self) -> None:
        """Before the first fork: import the parsers the first inputs need, so the workers
        start with them loaded (imported once, pages shared copy-on-write) instead of each
        importing them on its first file (~50 ms for PDF)."""
        from .. import detection
        from ..extractors import preload
        from ..source import Source

        self._warmed = True
        mimes: set[str] = set()
        for task in list(self._backlog)[: 2 * self.size]:
            # Regular files only: reading the head of a pipe (``<(curl ...)``) here would
            # steal those bytes from the worker.
            if (task.page is None and isinstance(task.obj, (str, os.PathLike))
                    and os.path.isfile(task.obj)):
                # A bad input is the worker's to report.
                with contextlib.suppress(Exception), Source.from_path(task.obj) as src:
                    mimes.add(detection.detect(src).mime)
        with contextlib.suppress(Exception):
            preload(mimes)

    def wait(self, timeout: float | None = None) -> list[tuple[Task, Any]]:
        """Hand out tasks to idle workers, then wait for results or a deadline."""
        out: list[tuple[Task, Any]] = []
        if not self._warmed and self._backlog:
            self._warm()
        while len(self._workers) < self.size:
            self._workers.append(self._spawn())
        for i, w in enumerate(self._workers):
            while w.task is None and self._backlog:
                task = self._backlog.popleft()
                if task.deadline is not None and time.monotonic() >= task.deadline:
                    # A page of a document out of time: not started at all.
                    out.append((task, failed(task, ErrorKind.TIMEOUT,
                                             late_message(task, self.options))))
                    continue
                if task.page is None:
                    # The last input in sight may use the idle workers' cores for its
                    # pages (one long PDF given to the CLI); otherwise they are needed.
                    idle = sum(1 for x in self._workers if x.task is None and x is not w)
                    task.page_workers = 1 + idle if not self._backlog else 1
                try:
                    w.conn.send(task)
                except (OSError, ValueError):
                    self._kill(w)
                    w = self._workers[i] = self._spawn()
                    w.conn.send(task)
                w.task, w.deadline = task, time.monotonic() + task.limit(self.options)
                if task.deadline is not None:
                    w.deadline = min(w.deadline, task.deadline)
                elif task.page is None:
                    task.deadline = w.deadline  # its pages inherit it
        busy = [w for w in self._workers if w.task is not None]
        if out or not busy:
            return out
        left = min(w.deadline for w in busy) - time.monotonic()
        if timeout is not None:
            left = min(left, timeout)
        ready = wait([w.conn for w in busy], timeout=max(0.0, left))
        for i, w in enumerate(self._workers):
            task = w.task
            if task is None:
                continue
            if w.conn in ready:
                try:
                    _key, _page, result = w.conn.recv()
                    w.task = None
                    out.append((task, result))
                    continue
                except (EOFError, OSError):
                    code = w.proc.exitcode if not w.proc.is_alive() else None
                    w.proc.join(1)
                    code = w.proc.exitcode if code is None else code
                    out.append((task, failed(task, ErrorKind.CRASHED, _how(code))))
            elif time.monotonic() >= w.deadline:
                what = "extraction" if task.page is None else f"OCR of page {task.page}"
                message = late_message(task, self.options) if task.page is not None and \
                    task.deadline is not None and w.deadline >= task.deadline \
                    else f"{what} exceeded {task.limit(self.options):g} s"
                out.append((task, failed(task, ErrorKind.TIMEOUT, message)))
            else:
                continue
            self._kill(w)
            self._workers[i] = self._spawn()
        return out


class WorkerPool(LocalExecutor):
    """The local executor with the document steps on top (the API the CLI, the library and
    the service used before the executor seam): ``map`` yields one Document per input, in
    input order; ``ocr`` reads pages of one input across all workers."""

    def map(self, inputs: Iterable[Any], names: Iterable[str | None] | None = None,
            ) -> Iterator[Document]:
        """One Document per input (a path, bytes or a file object), in input order."""
        if names is None:
            return self.map_pairs((obj, None) for obj in inputs)
        return self.map_pairs(zip(inputs, names, strict=False))

    def map_pairs(self, pairs: Iterable[tuple[Any, str | None]]) -> Iterator[Document]:
        """Like ``map``, for (input, name) pairs, consumed lazily (see steps.extract)."""
        from .steps import extract

        return extract(self, pairs, self.options)

    def ocr(self, obj: Any, name: str | None, mime: str, pages: list[int], *,
            want_pdf: bool = False) -> list[Any]:
        """OCR pages of one PDF or image across all workers; PageOcr per page, in order."""
        from .steps import ocr_pages

        return ocr_pages(self, obj, name, mime, pages, want_pdf=want_pdf)


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
    from .executor import make_executor
    from .steps import extract

    pairs = ((obj, None) for obj in inputs) if names is None else \
        zip(inputs, names, strict=False)
    executor = make_executor(options, workers)
    try:
        yield from extract(executor, pairs, options)
    finally:
        executor.close()
