"""Every extraction the service does goes through ``ExtractPool``: submit bytes or a path
with their Options, get a Document back by a deadline.

Why its own small pool and not ``run.pool.WorkerPool``: a server is multi-threaded (uvicorn,
the thread pool that runs blocking calls), and ``WorkerPool`` forks from the calling
process, which is only safe with one thread; it also serves one Options for all inputs and
returns results in input order, while every request here has its own Options and waits
only for its own document. So the workers are started by a ``forkserver`` (a clean,
single-threaded process that forks them, parsers preloaded), and each request thread
borrows an idle worker, hands it one job, and waits on its pipe until the deadline. A
worker that overruns is killed (its whole process group) and replaced; one that dies
costs that one request a ``crashed`` record; each is recycled after ``recycle_after``
jobs or when its memory has grown past ``recycle_rss``, so a slow leak in a parser never
accumulates.

Admission is separate from work: at most ``workers + queue`` requests are admitted; the
next one is refused at once with ``Busy`` (the service answers 503 + Retry-After), so an
overload queues a bounded amount instead of piling up threads and memory.

This is deliberately small: it is the seam the executor of issue 12 replaces.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import queue
import resource
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from ..forking import quiet_native_chatter
from ..model import Document, ErrorKind
from ..options import Options
from ..run.pool import _how, _kill_group

log = logging.getLogger(__name__)

_PRELOAD = ["textsieve", "textsieve.core", "textsieve.server._job"]


class Busy(Exception):
    """Every worker is busy and the queue is full: try again in ``retry_after`` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the service is busy; retry in {retry_after} s")
        self.retry_after = retry_after


def _worker_main(conn: Connection, memory_limit: int) -> None:
    """A worker's loop: one (input, name, options, mode) job at a time."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # killing it kills the helpers it started too
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quiet_native_chatter()
    if memory_limit > 0:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    from ._job import run_job

    while True:
        try:
            job = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if job is None:
            return
        conn.send(run_job(*job))


@dataclass
class _Worker:
    proc: Any
    conn: Connection
    jobs: int = 0
    born: float = field(default_factory=time.monotonic)


class ExtractPool:
    """``workers`` isolated processes shared by the request threads of a server."""

    def __init__(self, options: Options, *, workers: int | None = None, queue_size: int = 0,
                 recycle_after: int = 200, recycle_rss: int = 1024 * 1024 * 1024) -> None:
        self.options = options
        self.size = max(1, workers or options.worker_count)
        self.capacity = self.size + max(0, queue_size)
        self.recycle_after = recycle_after
        self.recycle_rss = recycle_rss
        self._ctx = mp.get_context("forkserver")
        self._ctx.set_forkserver_preload(_PRELOAD)
        self._idle: queue.Queue[_Worker | None] = queue.Queue()
        self._lock = threading.Lock()
        self._admitted = 0
        self._closed = False
        self._procs: list[Any] = []
        self.stats = {"jobs": 0, "timeouts": 0, "crashes": 0, "recycled": 0, "rejected": 0}
        for _ in range(self.size):
            self._idle.put(None)  # a slot: a worker is started on first use

    # -- admission -------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return self._admitted

    def _admit(self) -> None:
        with self._lock:
            if self._closed or self._admitted >= self.capacity:
                self.stats["rejected"] += 1
                # A fair hint: one round of the queue at the usual job time, at least 1 s.
                raise Busy(1)
            self._admitted += 1

    def _count(self, key: str) -> None:
        with self._lock:  # request threads count at once; the metrics must add up
            self.stats[key] += 1

    def _leave(self) -> None:
        with self._lock:
            self._admitted -= 1

    # -- work ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the ``workers + queue`` admissions for a request, or raise ``Busy``
        at once. Taken before the body is read, so a refused request costs nothing."""
        self._admit()
        try:
            yield
        finally:
            self._leave()

    def extract(self, obj: bytes | str, name: str | None, options: Options, *,
                detect_only: bool = False, mode: str = "extract",
                deadline: float | None = None) -> Any:
        """Extract ``obj`` (bytes, or a path the worker can read) in a worker, within
        ``deadline`` seconds from now (default ``options.timeout``), waiting for a free
        worker included. Returns a Document (a timeout or crash is its error); other
        ``mode``s (see ``_job.run_job``) may return their own result."""
        if detect_only:
            mode = "detect"
        limit = options.timeout if deadline is None else deadline
        end = time.monotonic() + limit
        try:
            w = self._idle.get(timeout=limit)
        except queue.Empty:
            self._count("timeouts")
            return Document.failed(ErrorKind.TIMEOUT, f"no worker free within {limit:g} s",
                                   name=name)
        try:
            w = w if w is not None and w.proc.is_alive() else self._spawn(w)
            doc, w = self._run(w, (obj, name, options, mode), end, limit, name)
        except BaseException:
            self._idle.put(None)
            raise
        self._idle.put(w)
        return doc

    def _run(self, w: _Worker, job: tuple[Any, ...], end: float, limit: float,
             name: str | None) -> tuple[Any, _Worker | None]:
        self._count("jobs")
        if w.conn.poll(0):  # an idle worker has nothing to say: this is EOF, it is dead
            self._kill(w)
            w = self._spawn(None)
        try:
            w.conn.send(job)
        except (OSError, ValueError):  # it died between jobs: a fresh one takes the job
            self._kill(w)
            w = self._spawn(None)
            w.conn.send(job)
        w.jobs += 1
        if not w.conn.poll(max(0.0, end - time.monotonic())):
            self._count("timeouts")
            self._kill(w)
            return Document.failed(ErrorKind.TIMEOUT, f"extraction exceeded {limit:g} s",
                                   name=name), None
        try:
            doc = w.conn.recv()
        except (EOFError, OSError):
            self._count("crashes")
            w.proc.join(1)
            code = w.proc.exitcode
            self._kill(w)
            return Document.failed(ErrorKind.CRASHED, _how(code), name=name), None
        if w.jobs >= self.recycle_after or _rss(w.proc.pid) > self.recycle_rss:
            self._count("recycled")
            self._retire(w)
            return doc, None
        return doc, w

    def _spawn(self, old: _Worker | None) -> _Worker:
        if old is not None:
            self._kill(old)
        parent, child = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(target=_worker_main,
                                 args=(child, self.options.memory_limit), daemon=True)
        proc.start()
        child.close()
        self._procs = [p for p in self._procs if p.is_alive()] + [proc]
        return _Worker(proc, parent)

    def _retire(self, w: _Worker) -> None:
        with contextlib.suppress(OSError, ValueError):
            w.conn.send(None)
        w.proc.join(2)
        self._kill(w)

    def _kill(self, w: _Worker) -> None:
        if w.proc.is_alive():
            _kill_group(w.proc)
        w.proc.join(5)
        w.conn.close()

    def worker_pids(self) -> list[int]:
        """Pids of the live workers, busy or idle (tests kill one to see the service
        survive)."""
        return [p.pid for p in list(self._procs) if p.is_alive()]

    def close(self) -> None:
        with self._lock:
            self._closed = True
        while True:
            try:
                w = self._idle.get_nowait()
            except queue.Empty:
                return
            if w is not None:
                self._retire(w)


def _rss(pid: int) -> int:
    """Resident memory of a process in bytes (Linux), 0 when unknown."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
