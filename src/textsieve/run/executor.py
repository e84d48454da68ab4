"""The executor seam: where units of work run, apart from what they are.

A unit of work is a ``Task``: one whole input (extracted with its OCR pages left pending),
or one page of an input to OCR. An executor runs tasks in isolation (a hang or a crash costs
that task only, as a typed error result), each under a deadline, with a bounded number in
flight, and hands results back in whatever order they finish. What to do with them (fan a
scan's pages out, put them back in order, write the searchable copy) is the business of
the steps in ``run/steps.py``, the same for every executor.

Two implementations: ``local`` (forked worker processes on this machine, ``run/pool.py``)
and ``ray`` (tasks on a Ray cluster, ``run/ray_executor.py``). Both run a task with
``run_task``, so a cluster gives the same documents as a laptop.

The protocol is driven by one thread (the run's driver). A multi-threaded process (the REST
service) uses ``ExtractionService`` in ``run/steps.py``: a thread-safe ``submit`` that
returns a ``Future`` per document.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from ..model import Document, ErrorInfo, ErrorKind, ExtractionError, Status
from ..options import EXECUTORS, Options

__all__ = ["EXECUTORS", "Executor", "Task", "failed", "make_executor", "run_task"]


@dataclass
class Task:
    """One unit of work: a whole input, or one page of it to OCR."""

    key: int
    obj: Any  # a path, bytes, or a Source holding fetched bytes
    name: str | None
    page: int | None = None  # set: OCR this page (1-based) of ``obj`` (a PDF or an image)
    mime: str | None = None
    want_pdf: bool = False  # OCR pages: also return tesseract's text-only PDF page
    out: list[str] | None = None  # where its searchable copy goes (safe parts), if not by name
    page_workers: int = 1  # whole inputs: processes it may fork for its pages (idle cores)
    # When the document's time is up (``Options.timeout`` from its start): it bounds its
    # OCR pages too, however many there are, not only their extraction. Monotonic clock
    # of the driver; set by the executor when the whole input starts.
    deadline: float | None = None
    alone: bool = False  # never batched with others (it failed in a batch once)
    # Its own options (a service request's choices), else the executor's.
    options: Options | None = None
    # What to do with a whole input: ``extract`` (a Document, OCR pages left to the
    # steps) or one of the service's modes (``detect``, ``page:N``, ``searchable``: see
    # ``server._job.run_job``), whose result goes back as it is.
    mode: str = "extract"

    def limit(self, options: Options) -> float:
        """Seconds this task may run by itself (before the document's deadline)."""
        return options.timeout if self.page is None else options.ocr_page_timeout


class Executor(Protocol):
    """Runs tasks in isolation, each under its deadline; results come back in any order."""

    size: int  # tasks it runs at once
    window: int  # inputs worth keeping queued ahead (enough to keep ``size`` busy)

    def submit(self, tasks: Iterable[Task], *, first: bool = False) -> None:
        """Queue tasks (no waiting). ``first``: ahead of what is queued (the pages of a
        document already started, so it finishes and leaves memory)."""

    def wait(self, timeout: float | None = None) -> list[tuple[Task, Any]]:
        """Run what is queued; return the tasks finished by now, at least one unless
        ``timeout`` passes or nothing is queued or running. The result of a whole input
        is a ``Document``, of a page an ``ocr.PageOcr``; failures are results too."""

    def busy(self) -> bool:
        """Tasks are queued or running."""

    def close(self) -> None:
        """Stop every worker; queued tasks are dropped."""


def run_task(task: Task, options: Options) -> Any:
    """What a worker does with a task, wherever it runs: never raises for bad input."""
    from .. import _source
    from ..core import extract_source
    from ..ocr import PageOcr, ocr_pages

    if task.mode != "extract" and task.page is None:
        from ..server._job import run_job

        return run_job(task.obj, task.name, options, task.mode)
    try:
        src = _source(task.obj, task.name, options)
        if task.page is None:
            # Top-level documents leave their OCR pages to the steps, which spread them
            # over every worker of the executor.
            return extract_source(src, options, defer_ocr=True,
                                  page_workers=task.page_workers)
        assert task.mime is not None
        return ocr_pages(src, task.mime, [task.page], options, want_pdf=task.want_pdf)[0]
    except ExtractionError as exc:  # a page task that cannot start (no language data)
        return PageOcr(task.page or 0, error=f"{exc.kind}: {exc.message}")
    except MemoryError:  # over the worker's memory cap (a page too big to decode)
        return failed(task, ErrorKind.TOO_LARGE, "ran out of memory (memory limit)")
    except Exception as exc:
        return failed(task, ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}")


def failed(task: Task, kind: ErrorKind, message: str) -> Any:
    """The result of a task that did not finish: a failed Document, or a failed page."""
    from ..ocr import PageOcr

    if task.page is not None:
        return PageOcr(task.page, error=f"{kind}: {message}")
    return Document(name=display_name(task.obj, task.name), status=Status.ERROR,
                    error=ErrorInfo(kind, message))


def display_name(obj: Any, name: str | None) -> str | None:
    if name:
        return name
    if isinstance(obj, (str, os.PathLike)):
        return os.path.basename(os.fspath(obj))
    return None


def late_message(task: Task, options: Options) -> str:
    if task.page is None:  # a request that waited its whole deadline in the queue
        return f"no worker was free within {options.timeout:g} s"
    return (f"the document's {options.timeout:g} s were over before page {task.page} "
            "was read")


def make_executor(options: Options, workers: int | None = None, *, recycle_after: int = 0,
                  recycle_rss: int = 0, threads_run: bool = False) -> Executor:
    """The executor ``options.executor`` names (``local`` by default). ``recycle_*``: a
    local worker is replaced after that many tasks or once its memory is above that many
    bytes (a long-lived service; 0: never). ``threads_run``: this process runs threads
    that may hold locks (a web server): local workers come from a forkserver."""
    if options.executor == "ray":
        from .ray_executor import RayExecutor

        return RayExecutor(options, workers)
    from .pool import LocalExecutor

    return LocalExecutor(options, workers, recycle_after=recycle_after,
                         recycle_rss=recycle_rss, threads_run=threads_run)
