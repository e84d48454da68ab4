"""A thread-safe front to an executor, for a multi-threaded process (the REST service):
``submit`` from any thread returns a ``Future``; one driver thread owns the executor and
runs the document steps (``core.DocumentFlow``) over it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue as _queue
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

from .. import procs
from ..core import EXTRACT, DocumentFlow, Executor, Work, make_executor
from ..options import Options

logger = logging.getLogger(__name__)


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
        mime = service.submit(data, work=Detect()).result().mime_type
        service.close()

    For a server: ``queue`` turns on admission (``slot()``: at most ``workers + queue``
    requests at once, the next refused at once with ``Busy``, so an overload queues a
    bounded amount instead of piling up threads and memory); each ``submit`` may carry its
    own options, a work item (``core.Work``) and a deadline that counts the wait for a
    worker;
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
               work: Work = EXTRACT, timeout: float | None = None) -> Future[Any]:
        """Queue one input; its Future gets the Document of an ``Extract`` (a timeout or a
        crash is its error), or another work item's result (``core.Result``).
        ``timeout`` (default the options'): seconds from now, the wait for a free worker
        included."""
        if self._closed:
            raise RuntimeError("the extraction service is closed")
        if self._slots is not None:
            self._slots.acquire()
        limit = (options or self.options).timeout if timeout is None else timeout
        if options is self.options:
            options = None  # the workers have these: nothing to send with the task
        fut: Future[Any] = Future()
        self._queue.put((obj, name, fut, options, work, time.monotonic() + limit))
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
                    obj, name, fut, options, work, deadline = got
                    if not fut.set_running_or_notify_cancel():
                        self._release()  # cancelled while queued
                        continue
                    futures[n] = fut
                    flow.add(n, obj, name, options=options, work=work, deadline=deadline)
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
