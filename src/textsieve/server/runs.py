"""The one run service of ``textsieve serve`` and of the reading room: runs into the
archive (``POST /v1/runs``, the reading room's "retry these") and extraction jobs
(``POST /v1/jobs``, events), with one registry of their records.

A run goes through the run pipeline (``run.runner.run``) in a process of its own, started
by ``procs`` from a forkserver: the runner's worker pool forks, which is only safe from a
single-threaded process, and a server never is. One run at a time (the archive has one
writer); a second is refused with ``Busy`` while one is going. A job (an event) runs in a
job thread of this process, its documents extracted by the caller's runner (the service's
worker pool); at most ``limit`` wait or run at once. The last ``KEEP`` records are kept for
``get``, whatever their kind.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from ..options import Options
from ..run.fresh import Mode
from ..run.service import Busy

log = logging.getLogger(__name__)

RUN, JOB = "run", "job"


@dataclass(frozen=True)
class RunRequest:
    """What a run does, sent to its process: sources by spec, or (a retry) the failed
    items ``retry`` listed again under the sources they came from."""

    sources: tuple[str, ...] = ()
    mode: Mode = Mode.INCREMENTAL
    retry: tuple[int, ...] = ()
    # What the archive's run record says about it (never a secret: see Options.record).
    record: Mapping[str, object] = field(default_factory=dict)


class NotFound(UsageError):
    """No record of that kind under that id."""


class RunService:
    """Runs and jobs, one registry; see the module docstring."""

    KEEP = 10_000

    def __init__(self, archive: str | None, options: Options, *, workers: int = 1,
                 limit: int = 64) -> None:
        self.archive, self.options, self.limit = archive, options, limit
        self._threads = max(1, workers)
        self._lock = threading.Lock()
        self._records: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._running_run = False
        self._pending_jobs = 0
        self._runner: ThreadPoolExecutor | None = None

    # -- the registry --------------------------------------------------------------------

    def _add(self, kind: str, record: dict[str, Any]) -> dict[str, Any]:
        record_id = uuid.uuid4().hex
        record.update(id=record_id, kind=kind)
        self._records[record_id] = record
        while len(self._records) > self.KEEP:
            self._records.popitem(last=False)
        return record

    def get(self, kind: str, record_id: str) -> dict[str, Any]:
        """A copy of the record (its ``kind`` left out); ``NotFound`` for another kind's."""
        record = self._records.get(record_id)
        if record is None or record["kind"] != kind:
            raise NotFound(f"no {kind} {record_id!r}")
        return {k: v for k, v in record.items() if k != "kind"}

    def recent(self, kind: str, n: int) -> list[dict[str, Any]]:
        """The last ``n`` records of ``kind``, newest first."""
        with self._lock:
            found = [r for r in reversed(self._records.values()) if r["kind"] == kind]
        return [{k: v for k, v in r.items() if k != "kind"} for r in found[:n]]

    # -- runs: a process each, one at a time -------------------------------------------

    def start_run(self, request: RunRequest, **shown: Any) -> dict[str, Any]:
        """Start a run in its own process; its record (``status`` running, then done or
        error with ``counts``). ``shown``: fields of the record besides the status
        (``sources`` for the API, the item ids of a retry). ``Busy`` while one runs."""
        if self.archive is None:
            raise UsageError("this server has no archive (serve --archive FILE)")
        with self._lock:
            if self._running_run:
                raise Busy(10)
            self._running_run = True
            record = self._add(RUN, {"status": "running", **shown, "started": time.time()})
        threading.Thread(target=self._watch, args=(record, request), daemon=True,
                         name="textsieve-run").start()
        return {k: v for k, v in record.items() if k != "kind"}

    def _watch(self, record: dict[str, Any], request: RunRequest) -> None:
        from .. import procs

        child = None
        try:
            # Not forked from here (a server runs threads): from the forkserver.
            child = procs.start(run_process, request, self.archive, self.options,
                                duplex=False, daemon=False, setup=procs.Setup(guard=True),
                                method=procs.start_method(threads_run=True))
            result = child.conn.recv() if child.conn.poll(None) else None
        except (EOFError, OSError):
            result = None
        finally:
            code = child.exitcode(None) if child is not None else None
            if child is not None:
                child.conn.close()
            with self._lock:
                self._running_run = False
        record.update(result or {"status": "error", "error": {
            "kind": "crashed", "message": f"the run process died (exit {code})"}})
        record["ended"] = time.time()

    # -- jobs: events, in job threads --------------------------------------------------

    def submit_job(self, event: dict[str, Any], runner: Any, roots: tuple[str, ...]
                   ) -> dict[str, Any]:
        """Queue an event (``events.handle`` with ``runner``); its record says queued,
        running, then done with the event's ``reply``. ``Busy`` past ``limit`` pending."""
        from ..events import Event

        Event.parse(event)  # a bad event is a 400 now, not a failed job later
        with self._lock:
            if self._pending_jobs >= self.limit:
                raise Busy(5)
            self._pending_jobs += 1
            record = self._add(JOB, {"status": "queued", "created": time.time()})
            if self._runner is None:
                self._runner = ThreadPoolExecutor(max_workers=self._threads,
                                                  thread_name_prefix="textsieve-job")
            pool = self._runner
        pool.submit(self._run_job, record, event, runner, roots)
        return {k: v for k, v in record.items() if k != "kind"}

    def _run_job(self, record: dict[str, Any], event: dict[str, Any], runner: Any,
                 roots: tuple[str, ...]) -> None:
        from ..events import handle

        record["status"] = "running"
        try:
            reply = handle(event, self.options, runner, roots=roots)
        except Exception as exc:  # a bug: the job says so, the server goes on
            log.exception("job %s failed", record["id"])
            reply = {"status": "error", "error": {"kind": "internal",
                                                  "message": f"{type(exc).__name__}"}}
        finally:
            with self._lock:
                self._pending_jobs -= 1
        record.update(status="done", reply=reply, finished=time.time())

    def close(self) -> None:
        if self._runner is not None:
            self._runner.shutdown(wait=False, cancel_futures=True)


def run_process(conn: Any, request: RunRequest, path: str, options: Options) -> None:
    """In the run's own process: the run pipeline, its counts sent back (and, for a retry,
    how its items came out)."""
    from ..archive import Archive
    from ..errors import TextsieveError
    from ..run.runner import run

    try:
        if request.retry:
            from ..run.retry import sources_for

            with Archive(path) as archive:
                sources, skipped = sources_for(archive, list(request.retry))
                stats = run(sources, archive, options, mode=request.mode,
                            run_options=dict(request.record))
            conn.send({"status": "done", "counts": stats.as_dict(), "result": {
                "retried": stats.done, "ok": stats.status.get("ok", 0),
                "empty": stats.status.get("empty", 0),
                "error": stats.status.get("error", 0), "not retryable": skipped}})
            return
        from ..sources import open_source

        listed = [open_source(s, options=options) for s in request.sources]
        with Archive(path) as archive:
            counts = run(listed, archive, options, mode=request.mode,
                         run_options=dict(request.record) or None).as_dict()
        conn.send({"status": "done", "counts": counts})
    except TextsieveError as exc:
        conn.send({"status": "error", "error": {"kind": "bad_source", "message": exc.message}})
    except Exception as exc:
        conn.send({"status": "error",
                   "error": {"kind": "internal", "message": type(exc).__name__}})
