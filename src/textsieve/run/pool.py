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
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from ..model import Document, ErrorInfo, ErrorKind, Status
from ..options import Options


def _worker_main(conn: Connection, options: Options) -> None:
    # The parent handles Ctrl-C; a worker must not die mid-file on the same signal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A native crash is reported as a typed record; a C traceback on stderr is noise.
    faulthandler.disable()
    if options.memory_limit > 0:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (options.memory_limit, options.memory_limit))
    from .. import _source
    from ..core import extract_source

    while True:
        try:
            task = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if task is None:
            return
        key, obj, name = task
        try:
            doc = extract_source(_source(obj, name, options), options)
        except BaseException as exc:
            doc = Document.failed(ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}", name=name)
        try:
            conn.send((key, doc))
        except MemoryError:
            conn.send((key, Document.failed(ErrorKind.TOO_LARGE, "result too large",
                                            name=name)))


@dataclass
class _Worker:
    proc: Any
    conn: Connection
    task: tuple[int, Any, str | None] | None = None
    deadline: float = 0.0


class WorkerPool:
    """N isolated workers; ``map`` yields one Document per input, in input order."""

    def __init__(self, options: Options, workers: int | None = None) -> None:
        self.options = options
        self.size = max(1, workers or options.worker_count)
        self._ctx = mp.get_context("fork")
        self._workers: list[_Worker] = []

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(target=_worker_main, args=(child, self.options), daemon=True)
        proc.start()
        child.close()
        return _Worker(proc, parent)

    def _kill(self, w: _Worker) -> None:
        try:
            w.proc.kill()
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
        self._workers.clear()

    def map(self, inputs: Iterable[Any], names: Iterable[str | None] | None = None,
            ) -> Iterator[Document]:
        """One Document per input (a path, bytes or a file object), in input order."""
        if names is None:
            return self.map_pairs((obj, None) for obj in inputs)
        return self.map_pairs(zip(inputs, names, strict=False))

    def map_pairs(self, pairs: Iterable[tuple[Any, str | None]]) -> Iterator[Document]:
        """Like ``map``, for (input, name) pairs; the iterable is consumed lazily, a
        bounded window ahead of the results, so it may be an endless stream."""
        items = iter(pairs)
        pending: deque[int] = deque()  # keys in input order
        done: dict[int, Document] = {}
        window = self.size * 4
        next_key = 0
        exhausted = False
        while len(self._workers) < self.size:
            self._workers.append(self._spawn())
        backlog: deque[tuple[int, Any, str | None]] = deque()

        def refill() -> None:
            nonlocal next_key, exhausted
            while not exhausted and len(pending) < window:
                try:
                    obj, name = next(items)
                except StopIteration:
                    exhausted = True
                    return
                pending.append(next_key)
                backlog.append((next_key, obj, name))
                next_key += 1

        while True:
            refill()
            for i, w in enumerate(self._workers):
                if w.task is None and backlog:
                    task = backlog.popleft()
                    try:
                        w.conn.send(task)
                    except (OSError, ValueError):
                        self._kill(w)
                        w = self._workers[i] = self._spawn()
                        w.conn.send(task)
                    w.task, w.deadline = task, time.monotonic() + self.options.timeout
            while pending and pending[0] in done:
                yield done.pop(pending.popleft())
            busy = [w for w in self._workers if w.task is not None]
            if not busy:
                if exhausted and not backlog and not pending:
                    return
                continue
            now = time.monotonic()
            timeout = max(0.0, min(w.deadline for w in busy) - now)
            ready = wait([w.conn for w in busy], timeout=timeout)
            for i, w in enumerate(self._workers):
                if w.task is None:
                    continue
                key, obj, name = w.task
                if w.conn in ready:
                    try:
                        rkey, doc = w.conn.recv()
                        assert rkey == key
                        done[key] = doc
                        w.task = None
                        continue
                    except (EOFError, OSError):
                        code = w.proc.exitcode if not w.proc.is_alive() else None
                        w.proc.join(1)
                        code = w.proc.exitcode if code is None else code
                        done[key] = _crashed(obj, name, code)
                elif time.monotonic() >= w.deadline:
                    done[key] = _failed(obj, name, ErrorKind.TIMEOUT,
                                        f"extraction exceeded {self.options.timeout:g} s")
                else:
                    continue
                self._kill(w)
                self._workers[i] = self._spawn()


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


def _crashed(obj: Any, name: str | None, exitcode: int | None) -> Document:
    if exitcode is not None and exitcode < 0:
        try:
            how = f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            how = f"killed by signal {-exitcode}"
    else:
        how = f"exited with status {exitcode}"
    return _failed(obj, name, ErrorKind.CRASHED, f"the extractor process died ({how})")


def extract_many(inputs: Iterable[Any], options: Options, *,
                 names: Iterable[str | None] | None = None,
                 workers: int | None = None) -> Iterator[Document]:
    """Extract every input in isolated worker processes; yields in input order."""
    with WorkerPool(options, workers) as pool:
        yield from pool.map(inputs, names)
