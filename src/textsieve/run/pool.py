"""The local executor: isolated worker processes; a hang or a crash costs one task.

A small pool of long-lived worker processes, started by ``procs`` (forked, so the parsers
imported once stay warm; from a forkserver in a web server). Each worker has an
address-space cap (RLIMIT_AS). The driver hands out one task
at a time per worker and watches a deadline for each; a worker that overruns is killed and
replaced, and its task gets a ``timeout`` result; one that dies gets ``crashed``. What a
task is and what is done with its result are ``core``'s (``Task``, ``perform``, the
document steps). The service uses the same pool (``service.ExtractionService``): tasks then
carry their own options and work items, and workers are recycled after N tasks or on
memory growth.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Self

from .. import procs
from ..core import Task, failed, in_order, late_message, ocr_pages_on, perform
from ..model import Document, ErrorKind
from ..options import Options

logger = logging.getLogger(__name__)

# How often a worker's resident memory is read for ``recycle_rss``: every this many jobs,
# and after any job that took longer than RSS_AFTER seconds (a big document is what grows
# a parser). Reading /proc after every job cost the service's driver thread a tenth of
# its time per small request.
RSS_EVERY, RSS_AFTER = 8, 0.1
SPARE_READY = 60.0  # seconds a worn worker's replacement has to answer its first job


def _worker_main(conn: Any, options: Options) -> None:
    """A worker's loop: one task at a time until its pipe says stop (None) or closes.

    Set up by ``procs`` before this runs: its own process group (killing it kills what it
    started: an external tool spinning on a damaged file, forked page readers), SIGINT
    left to the driver, death with its parent, a group guard, native chatter off
    stderr (a native crash's C traceback too: it is a typed record), the memory cap."""
    while True:
        try:
            task: Task | None = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if task is None:
            return
        try:
            result: Any = perform(task, task.options or options)
        except BaseException as exc:  # a worker answers, whatever happened
            result = failed(task, ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}")
        try:
            conn.send((task.key, task.page, result))
        except MemoryError:
            conn.send((task.key, task.page, failed(task, ErrorKind.TOO_LARGE,
                                                   "result too large")))


@dataclass
class _Worker:
    child: procs.Child
    task: Task | None = None
    deadline: float = 0.0
    started: float = 0.0
    jobs: int = 0
    # Its replacement being started in the background once it is worn (see ``_renew``).
    spare: Future[_Worker] | None = None

    @property
    def conn(self) -> Any:
        return self.child.conn


class LocalExecutor:
    """N isolated worker processes on this machine: the ``local`` executor.

    Workers are started by ``procs``: forked from the main thread or the one long-lived
    forker thread, or from a forkserver when ``threads_run`` (a web server: see
    ``procs.start_method``); either way they die with this process. One task per worker
    at a time; a worker past its task's deadline is killed with its process group and
    replaced, and the task gets a ``timeout`` result; one that dies gets ``crashed``. A
    long-lived user (the service) recycles a worker after ``recycle_after`` tasks or once
    its resident memory is above ``recycle_rss`` bytes (0: never), so a slow leak in a
    parser never accumulates. A worn worker's replacement is started in the background
    and the worn one goes on serving until it is ready (then leaves in the background
    too): starting a worker and seeing the old one out took 10-20 ms, which every request
    queued behind the swap used to wait. ``stats`` counts jobs, timeouts, crashes and
    recycled workers. Driven by one thread (see ``service.ExtractionService`` for more).
    """

    def __init__(self, options: Options, workers: int | None = None, *,
                 recycle_after: int = 0, recycle_rss: int = 0,
                 threads_run: bool = False) -> None:
        self.options = options
        self.start_method = procs.start_method(threads_run)
        self.size = max(1, workers or options.worker_count)
        self.window = self.size * 4
        self.recycle_after, self.recycle_rss = recycle_after, recycle_rss
        self._setup = procs.Setup(memory=max(0, options.memory_limit), guard=True,
                                  quiet=True, worker=True)
        self._workers: list[_Worker] = []
        self._backlog: deque[Task] = deque()
        self._warmed = False
        self._renewer: ThreadPoolExecutor | None = None  # starts spares, retires the worn
        self.wakeup: int | None = None  # a file descriptor whose data ends ``wait`` early
        # True while ``wait`` sleeps with every worker busy: a new task could not start
        # before a worker answers (which ends the sleep anyway), so a submitting thread
        # need not write to ``wakeup`` (ExtractionService: a thread switch saved per
        # request under load).
        self.all_busy = False
        self.stats = {"jobs": 0, "timeouts": 0, "crashes": 0, "recycled": 0}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self) -> _Worker:
        # A worker is given the extraction part of the options alone (Options.for_workers).
        return _Worker(procs.start(_worker_main, self.options.for_workers(),
                                   setup=self._setup, method=self.start_method))

    def worker_pids(self) -> list[int]:
        """Pids of the live workers, busy or idle (tests kill one to see the run or the
        service survive). Safe to call from any thread."""
        return [w.child.pid for w in list(self._workers) if w.child.alive()]

    def close(self) -> None:
        self._backlog.clear()
        workers = list(self._workers)
        for w in self._workers:
            if w.spare is not None:
                with contextlib.suppress(Exception):
                    workers.append(w.spare.result())
        for w in workers:
            with contextlib.suppress(OSError, ValueError):
                w.conn.send(None)
        if self._renewer is not None:
            self._renewer.shutdown(wait=True)  # the worn ones it was seeing out
            self._renewer = None
        for w in workers:
            w.child.retire()
        self._workers.clear()

    def _spare(self) -> _Worker:
        """A new worker that has done one tiny job (run on the renewing thread): a
        child's start (unpickling, its guard, the first extraction's set-up) costs 10 ms,
        which its first real request would otherwise wait for."""
        w = self._spawn()
        try:
            w.conn.send(Task(-1, b"warm", None))
            if not _readable([w.conn], SPARE_READY):
                raise TimeoutError(f"a new worker did not answer in {SPARE_READY:g} s")
            w.conn.recv()
        except BaseException:
            w.child.kill()
            raise
        return w

    def _renew(self, w: _Worker) -> _Worker:
        """The worker to use in ``w``'s place now: ``w`` itself while its spare is still
        starting, else the spare (``w`` is then retired in the background). A spare that
        could not start is forgotten: the next job's end tries again."""
        spare = w.spare
        if spare is None or not spare.done():
            return w
        w.spare = None
        try:
            new = spare.result()
        except Exception as exc:  # no new worker now: the worn one is still a worker
            logger.warning("could not start a worker to replace a worn one: %s", exc)
            return w
        self.stats["recycled"] += 1
        assert self._renewer is not None
        self._renewer.submit(w.child.retire)
        return new

    def _replace(self, w: _Worker) -> _Worker:
        """A new worker for one that was killed: its spare if one was being started."""
        if w.spare is not None:
            with contextlib.suppress(Exception):
                return w.spare.result()
        return self._spawn()

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
        importing them on its first file (~50 ms for PDF). Not when the workers come from
        a forkserver: they would not share this process's imports."""
        from .. import detection
        from ..bytesource import Source
        from ..extractors import preload

        self._warmed = True
        if self.start_method != "fork":
            return
        mimes: set[str] = set()
        for task in list(self._backlog)[: 2 * self.size]:
            # Regular files only: reading the head of a pipe (``<(curl ...)``) here would
            # steal those bytes from the worker.
            if (task.page is None and isinstance(task.obj, (str, os.PathLike))
                    and os.path.isfile(task.obj)):
                # A bad input is the worker's to report.
                with contextlib.suppress(Exception), Source.from_path(task.obj) as src:
                    mimes.add(detection.detect(src).mime)
        from .. import core, ocr  # noqa: F401 (their imports, which every worker needs)

        with contextlib.suppress(Exception):
            preload(mimes)

    def _options(self, task: Task) -> Options:
        return task.options or self.options

    def wait(self, timeout: float | None = None) -> list[tuple[Task, Any]]:
        """Hand out tasks to idle workers, then wait for results or a deadline."""
        out: list[tuple[Task, Any]] = []
        if not self._warmed and self._backlog:
            self._warm()
        if self._backlog:
            while len(self._workers) < self.size:
                self._workers.append(self._spawn())
        for i, w in enumerate(self._workers):
            if w.task is None and w.spare is not None:
                w = self._workers[i] = self._renew(w)
            while w.task is None and self._backlog:
                task = self._backlog.popleft()
                options = self._options(task)
                if task.deadline is not None and time.monotonic() >= task.deadline:
                    # A page of a document out of time, or a request that waited its
                    # whole deadline for a worker: not started at all.
                    self.stats["timeouts"] += 1
                    out.append((task, failed(task, ErrorKind.TIMEOUT,
                                             late_message(task, options))))
                    continue
                if task.page is None:
                    # The last input in sight may use the idle workers' cores for its
                    # pages (one long PDF given to the CLI); otherwise they are needed.
                    idle = sum(1 for x in self._workers if x.task is None and x is not w)
                    task.page_workers = 1 + idle if not self._backlog else 1
                if _readable([w.conn], 0):  # an idle worker has nothing to say: it died
                    w.child.kill()
                    w = self._workers[i] = self._replace(w)
                wire = task if task.options is None else \
                    task.with_options(task.options.for_workers())
                try:
                    w.conn.send(wire)
                except (OSError, ValueError):
                    w.child.kill()
                    w = self._workers[i] = self._replace(w)
                    w.conn.send(wire)
                self.stats["jobs"] += 1
                w.jobs += 1
                w.started = time.monotonic()
                w.task, w.deadline = task, w.started + task.limit(options)
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
        watched: list[Any] = [w.conn for w in busy]
        if self.wakeup is not None:
            watched.append(self.wakeup)
        self.all_busy = len(busy) == self.size
        try:
            ready = _readable(watched, max(0.0, left))
        finally:
            self.all_busy = False
        for i, w in enumerate(self._workers):
            running = w.task
            if running is None:
                continue
            if w.conn in ready:
                try:
                    _key, _page, result = w.conn.recv()
                    w.task = None
                    out.append((running, result))
                    if w.spare is None and self._worn(w):
                        if self._renewer is None:
                            self._renewer = ThreadPoolExecutor(
                                max_workers=1, thread_name_prefix="textsieve-renew")
                        w.spare = self._renewer.submit(self._spare)
                    continue
                except (EOFError, OSError):
                    self.stats["crashes"] += 1
                    out.append((running, failed(running, ErrorKind.CRASHED,
                                                procs.exit_message(w.child.exitcode()))))
            elif time.monotonic() >= w.deadline:
                options = self._options(running)
                self.stats["timeouts"] += 1
                what = "extraction" if running.page is None else f"OCR of page {running.page}"
                message = late_message(running, options) if running.page is not None and \
                    running.deadline is not None and w.deadline >= running.deadline \
                    else f"{what} exceeded {running.limit(options):g} s"
                out.append((running, failed(running, ErrorKind.TIMEOUT, message)))
            else:
                continue
            w.child.kill()
            self._workers[i] = self._replace(w)
        return out

    def _worn(self, w: _Worker) -> bool:
        """Time to replace this worker: it did its share of jobs or grew too big (its
        memory read every ``RSS_EVERY`` jobs and after any long one)."""
        if 0 < self.recycle_after <= w.jobs:
            return True
        if self.recycle_rss <= 0:
            return False
        if w.jobs % RSS_EVERY and time.monotonic() - w.started < RSS_AFTER:
            return False
        return procs.rss(w.child.pid) > self.recycle_rss


def _readable(watched: list[Any], timeout: float) -> set[Any]:
    """Which of ``watched`` (connections, file descriptors) can be read now or within
    ``timeout`` seconds. One ``poll`` call: ``multiprocessing.connection.wait`` builds a
    selector object and registers each one anew on every call, a tenth of a millisecond
    per request of the service on its driver thread."""
    import select

    poller = select.poll()
    by_fd: dict[int, Any] = {}
    for obj in watched:
        fd = obj if isinstance(obj, int) else obj.fileno()
        by_fd[fd] = obj
        poller.register(fd, select.POLLIN)
    while True:
        try:
            events = poller.poll(timeout * 1000)
            break
        except InterruptedError:  # a signal: poll again (PEP 475 does, this is belt)
            continue
    return {by_fd[fd] for fd, _ in events}


class WorkerPool(LocalExecutor):
    """The local executor with the document steps on top: ``map`` yields one Document per
    input, in input order; ``ocr`` reads pages of one input across all workers (the
    ``PageReader`` of ``textsieve ocr``)."""

    def map(self, inputs: Iterable[Any], names: Iterable[str | None] | None = None,
            ) -> Iterator[Document]:
        """One Document per input (a path, bytes or a file object), in input order."""
        if names is None:
            return self.map_pairs((obj, None) for obj in inputs)
        return self.map_pairs(zip(inputs, names, strict=False))

    def map_pairs(self, pairs: Iterable[tuple[Any, str | None]]) -> Iterator[Document]:
        """Like ``map``, for (input, name) pairs, consumed lazily (see ``core.in_order``)."""
        return in_order(self, pairs, self.options)

    def ocr(self, obj: Any, name: str | None, mime: str, pages: list[int], *,
            want_pdf: bool = False) -> list[Any]:
        """OCR pages of one PDF or image across all workers; PageOcr per page, in order."""
        return ocr_pages_on(self, obj, name, mime, pages, want_pdf=want_pdf)
