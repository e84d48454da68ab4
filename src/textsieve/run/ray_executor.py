"""The ``ray`` executor: tasks on a Ray cluster (``pip install 'textsieve[ray]'``).

The same tasks as the local executor, run by the same ``core.perform`` in Ray worker
processes, so a cluster gives the documents a laptop gives. Units of work are whole inputs
and the pages of scans (``core.DocumentFlow`` fans them out, puts them back in order), so a
500-page scan spreads over the cluster's cores. At most ``size`` tasks (the cluster's CPUs)
are in flight: results stream back to the driver, where the archive's one writer is, and
its memory stays flat however many items there are.

Inputs travel by reference where they can: a path goes as a path (every node must see the
same files, a shared mount, as with any cluster); bytes (fetched pages, mail parts) are
put in the object store once and shared by all the pages of their document.

Faults: a worker or node lost mid-task is retried by Ray (``RETRIES`` times), then the
task is ``crashed``; a task past its deadline is cancelled (its worker process killed) and
is a ``timeout``, as locally. ``--memory-limit`` holds too, for the duration of each task:
a Ray worker is a long-lived process that has already mapped gigabytes of its own (the
object store, gRPC's threads), so its RLIMIT_AS cannot be the local workers' absolute cap.
It is set, while the task runs, to what the worker has mapped when the task starts plus
the limit, and put back afterwards: a bomb gets ``MemoryError`` (``too_large``), and if an
allocation fails where nothing catches it the worker dies, is retried, and the task ends
as ``crashed``; the run goes on either way. Beyond that, Ray's memory monitor kills a
worker that takes the node's memory, and the task ends as ``too_large``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from typing import Any, Self

from ..core import Task, failed, late_message, perform
from ..errors import UnreachableError, UsageError
from ..model import ErrorKind
from ..options import Options

logger = logging.getLogger(__name__)

RETRIES = 3  # a task whose worker or node died is run again at most this many times
LOCAL_OBJECT_STORE = 256 * 1024 * 1024  # --address local: the cluster this run starts
INLINE_BYTES = 64 * 1024  # smaller inputs travel inside the task; larger ones by reference
CONNECT_PROBE_SECONDS = 10.0  # a named cluster that does not take a connection by then
SMALL_FILE = 256 * 1024  # files under this are batched (Options.batch per Ray task)


class RayMissing(UsageError):
    """``--executor ray`` without Ray installed."""


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RayMissing("the ray executor needs Ray: pip install 'textsieve[ray]'") from exc
    return ray


def _mapped_bytes() -> int:
    """This process's address space now (what RLIMIT_AS counts), from /proc."""
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def memory_cap(limit: int) -> Iterator[None]:
    """``limit`` more bytes of address space for what runs inside, then the old cap back.

    Only the soft limit moves, so it can be raised again; a cap already lower stays.
    Where RLIMIT_AS or /proc is missing (not Linux) the task runs uncapped.
    """
    if limit <= 0:
        yield
        return
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = _mapped_bytes() + limit
        for old in (soft, hard):
            if old != resource.RLIM_INFINITY:
                cap = min(cap, old)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, ValueError):
        logger.debug("no memory cap for this Ray task", exc_info=True)
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _warm() -> None:
    """Import what every task runs before the first cap is set: a fresh worker's imports
    map libraries that are the worker's, not the input's, and must not eat its budget."""
    from .. import core, ocr  # noqa: F401


def _run_on_worker(task: Task, obj: Any, options: Options) -> Any:
    """The Ray task: ``obj`` comes as its own argument, so Ray resolves a reference to
    the object store before the call (fields of ``task`` would not be)."""
    task.obj = obj
    _warm()
    with memory_cap(options.memory_limit):
        return perform(task, options)


def _run_batch(tasks: list[Task], options: Options) -> list[Any]:
    """A batch of small inputs as one Ray task: Ray's per-task cost paid once; the memory
    cap is per input, as for a task of its own."""
    out = []
    _warm()
    for task in tasks:
        with memory_cap(options.memory_limit):
            out.append(perform(task, options))
    return out


def _small(task: Task) -> bool:
    """Worth batching: a whole input small enough to be read in a few ms."""
    if task.page is not None:
        return False
    obj = task.obj
    if isinstance(obj, (str, os.PathLike)):
        try:
            return os.path.getsize(obj) < SMALL_FILE
        except OSError:
            return True  # not found: a quick error record
    data = getattr(obj, "data_", obj)
    return isinstance(data, (bytes, bytearray)) and len(data) < INLINE_BYTES


def _nobody_at(address: str) -> str | None:
    """Why nothing can answer at an explicit ``HOST:PORT`` (or ``ray://HOST:PORT``), or
    None. Ray itself keeps trying to reach a named address that nothing listens on for
    many minutes; one connection attempt tells at once. ``auto`` is Ray's to resolve."""
    import socket
    from urllib.parse import urlsplit

    if address == "auto" or not address:
        return None
    parts = urlsplit(address if "://" in address else f"gcs://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number: Ray's own error says it
        return None
    if not host or port is None:
        return None
    try:
        with socket.create_connection((host, port), timeout=CONNECT_PROBE_SECONDS):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


class RayExecutor:
    """Runs tasks on the Ray cluster at ``options.address``; see the module docstring."""

    def __init__(self, options: Options, workers: int | None = None) -> None:
        ray = self._ray = _ray()
        self.options = options
        self._owned = False
        if not ray.is_initialized():
            address = options.address
            kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING,
                                      "include_dashboard": False}
            if address == "local":  # a cluster of this machine alone, for this run
                if options.workers:
                    kwargs["num_cpus"] = options.workers
                # Results stream back as they finish: a small object store is enough.
                ray.init(object_store_memory=LOCAL_OBJECT_STORE, **kwargs)
            else:
                kwargs.pop("include_dashboard")  # the cluster's, not ours to decide
                hint = ("; to run on this machine alone, --address local starts a "
                        "one-machine cluster for the run")
                why = _nobody_at(address)
                if why is not None:
                    raise UnreachableError(f"no Ray cluster at {address}: {why}{hint}")
                try:
                    ray.init(address=address, **kwargs)
                except ConnectionError as exc:  # nobody there, or not answering
                    raise UnreachableError(f"no Ray cluster at {address}: "
                                           f"{_first_line(exc)}{hint}") from exc
                except (ValueError, RuntimeError) as exc:  # a malformed address
                    raise UsageError(f"cannot use the Ray cluster at {address}: "
                                     f"{_first_line(exc)}") from exc
            self._owned = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.size = max(1, workers or cpus)
        # Enough queued that each free CPU can take a whole batch of small files.
        self.window = self.size * max(4, 2 * options.batch)
        self._remote = ray.remote(_run_on_worker).options(
            num_cpus=1, max_retries=RETRIES, retry_exceptions=False)
        self._remote_batch = ray.remote(_run_batch).options(
            num_cpus=1, max_retries=RETRIES, retry_exceptions=False)
        self._options_ref = ray.put(options.for_workers())  # the extraction part alone
        self._backlog: deque[Task] = deque()
        # ObjectRef -> (the task, or a batch of them; deadline)
        self._running: dict[Any, tuple[Task | list[Task], float]] = {}
        # Inputs put in the object store, by task key: the pages of a document share it.
        self._refs: OrderedDict[int, tuple[Any, Any]] = OrderedDict()
        self.ray_tasks = 0  # Ray tasks started (a batch is one): for stats and tests

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(self, tasks: Iterable[Task], *, first: bool = False) -> None:
        if first:
            self._backlog.extendleft(reversed(list(tasks)))
        else:
            self._backlog.extend(tasks)

    def busy(self) -> bool:
        return bool(self._backlog or self._running)

    def close(self) -> None:
        for ref in list(self._running):
            self._cancel(ref)
        self._running.clear()
        self._backlog.clear()
        self._refs.clear()
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
            self._owned = False

    def _wire(self, task: Task) -> Any:
        """What travels for ``task.obj``: a path as it is, big bytes by reference."""
        from ..bytesource import Source

        obj = task.obj
        data = obj.data_ if isinstance(obj, Source) else obj
        if not isinstance(data, (bytes, bytearray, memoryview)) or len(data) <= INLINE_BYTES:
            return obj
        cached = self._refs.get(task.key)
        if cached is not None and cached[0] is obj:
            ref = cached[1]
        else:
            ref = self._ray.put(obj)
            self._refs[task.key] = (obj, ref)
            while len(self._refs) > 4 * self.size:  # documents long finished
                self._refs.popitem(last=False)
        return ref

    def _cancel(self, ref: Any) -> None:
        try:
            self._ray.cancel(ref, force=True)
        except Exception:  # already finished or gone: nothing left to stop
            logger.debug("cancelling a Ray task failed", exc_info=True)

    def wait(self, timeout: float | None = None) -> list[tuple[Task, Any]]:
        ray = self._ray
        out: list[tuple[Task, Any]] = []
        while self._backlog and len(self._running) < self.size:
            task = self._backlog.popleft()
            now = time.monotonic()
            if task.deadline is not None and now >= task.deadline:
                out.append((task, failed(task, ErrorKind.TIMEOUT,
                                         late_message(task, self.options))))
                continue
            if self.options.batch > 1 and not task.alone and _small(task):
                self._start_batch(task, now)
                continue
            deadline = now + task.limit(self.options)
            if task.deadline is not None:
                deadline = min(deadline, task.deadline)
            elif task.page is None:
                task.deadline = deadline  # its pages inherit it
            wire = Task(task.key, b"", task.name, task.work)  # its input goes apart
            ref = self._remote.remote(wire, self._wire(task), self._options_ref)
            self._running[ref] = (task, deadline)
            self.ray_tasks += 1
        if out or not self._running:
            return out
        left = min(d for _, d in self._running.values()) - time.monotonic()
        if timeout is not None:
            left = min(left, timeout)
        refs = list(self._running)
        ready, _ = ray.wait(refs, num_returns=1, timeout=max(0.0, left))
        if ready:  # and whatever else is done by now
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in ready:
            done, _deadline = self._running.pop(ref)
            if isinstance(done, list):
                out.extend(self._batch_result(ref, done))
            else:
                out.append((done, self._result(ref, done)))
        now = time.monotonic()
        for ref, (late, deadline) in list(self._running.items()):
            if now < deadline:
                continue
            del self._running[ref]
            self._cancel(ref)
            if isinstance(late, list):
                self._unbatch(late)
                continue
            task = late
            what = "extraction" if task.page is None else f"OCR of page {task.page}"
            message = late_message(task, self.options) if task.page is not None and \
                task.deadline is not None and deadline >= task.deadline \
                else f"{what} exceeded {task.limit(self.options):g} s"
            out.append((task, failed(task, ErrorKind.TIMEOUT, message)))
        return out

    def _start_batch(self, first: Task, now: float) -> None:
        """``first`` and the small inputs queued right behind it, as one Ray task. Its
        deadline is one input's: a batch that overruns or dies is not judged as a whole,
        its inputs are run again one by one, each under its own deadline."""
        batch = [first]
        while self._backlog and len(batch) < self.options.batch:
            nxt = self._backlog[0]
            if nxt.alone or not _small(nxt):
                break
            batch.append(self._backlog.popleft())
        if len(batch) == 1:
            first.alone = True
            self._backlog.appendleft(first)
            return
        ref = self._remote_batch.remote(batch, self._options_ref)
        self._running[ref] = (batch, now + self.options.timeout)
        self.ray_tasks += 1

    def _unbatch(self, batch: list[Task]) -> None:
        for task in batch:
            task.alone = True
        self.submit(batch, first=True)

    def _batch_result(self, ref: Any, batch: list[Task]) -> list[tuple[Task, Any]]:
        try:
            results = self._ray.get(ref)
        except self._ray.exceptions.RayError:  # lost after its retries: one by one
            self._unbatch(batch)
            return []
        now = time.monotonic()
        for task in batch:  # their OCR pages (a small image) get a deadline from now
            task.deadline = now + self.options.timeout
        return list(zip(batch, results, strict=True))

    def _result(self, ref: Any, task: Task) -> Any:
        """The task's result; a Ray failure (after its retries) as a typed failure."""
        exc_mod = self._ray.exceptions
        try:
            return self._ray.get(ref)
        except exc_mod.TaskCancelledError:
            return failed(task, ErrorKind.TIMEOUT,
                          f"exceeded {task.limit(self.options):g} s")
        except exc_mod.OutOfMemoryError as exc:
            return failed(task, ErrorKind.TOO_LARGE, f"the Ray worker ran out of memory: "
                          f"{_first_line(exc)}")
        except exc_mod.RayError as exc:  # worker or node died RETRIES + 1 times, lost object
            return failed(task, ErrorKind.CRASHED, f"the Ray task failed "
                          f"({type(exc).__name__}): {_first_line(exc)}")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300]
