"""What the routes of ``textsieve serve`` share: its settings (``ServerConfig``), typed
error answers (``ApiError``), and the ``Service`` behind every request: the options, the
extraction service (the local executor's isolated workers behind a thread-safe front),
the run service (runs and jobs, shared with the reading room), uploads, metrics. The app
(``app.py``) is made of the routes; the routes import this module, never the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

try:
    from fastapi import Request
    from fastapi.responses import JSONResponse
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError(f"textsieve serve needs the server extra: pip install "
                      f"'textsieve[server]' ({exc})") from exc

from ..core import EXTRACT, Detect, Result, Work
from ..errors import UsageError
from ..model import Document, ErrorKind
from ..options import MiB, Options, OptionsError
from ..run.service import Busy, ExtractionService
from .guard import Policy, check_token, is_loopback
from .runs import RunService

__all__ = [
    "SPOOL",
    "ApiError",
    "Busy",
    "ServerConfig",
    "Service",
    "Upload",
    "document_error",
    "error_response",
    "service_of",
]

SPOOL = 1 * MiB  # an upload larger than this waits for its worker on disk, not in memory


@dataclass(frozen=True)
class ServerConfig:
    """Settings of the service itself (extraction settings are the ``Options``)."""

    host: str = "127.0.0.1"
    port: int = 8000
    # Bearer token; required when host is not loopback. A secret: never in its repr.
    token: str | None = field(default=None, repr=False)
    allowed_hosts: tuple[str, ...] = ()  # Host names answered besides loopback ones
    archive: str | None = None  # the archive of /v1/search, /v1/items, /v1/runs, /v1/stats
    max_upload: int = 100 * MiB  # request bodies above this are refused (413)
    queue: int | None = None  # requests admitted beyond the busy workers (None: 2 per worker)
    # A worker is replaced after this many jobs, or once its resident memory is above
    # recycle_rss. Not much sooner: a new worker's first documents run without the
    # caches its predecessor had built (a template's styles, first-use set-up), which at
    # 200 jobs cost a fifth of the service's CPU on small documents; a leak that grows
    # memory is caught by the memory check whatever the count.
    recycle_after: int = 1000
    recycle_rss: int = 1024 * MiB
    file_roots: tuple[str, ...] = ()  # file:// URIs of jobs are allowed only under these

    def check(self) -> None:
        """Refuse to start an open service (beyond loopback, a token is required) or one
        guarded by a weak token (``guard.check_token``)."""
        check_token(self.token, "the token (TEXTSIEVE_TOKEN or --token-file)")
        if not self.token and not is_loopback(self.host):
            raise UsageError(f"serve: --host {self.host} is reachable from other machines: "
                             "set a bearer token (TEXTSIEVE_TOKEN or --token-file)")

    @property
    def policy(self) -> Policy:
        return Policy(token=self.token, allowed_hosts=frozenset(self.allowed_hosts))


class ApiError(Exception):
    """A typed error answer: HTTP status, a stable kind, a message, extra headers."""

    def __init__(self, status: int, kind: str, message: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message
        self.headers = headers or {}


def error_response(status: int, kind: str, message: str,
                   headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"kind": kind, "message": message}}, status_code=status,
                        headers=headers)


# A failed document's kind -> the HTTP status that tells a client what to do about it.
_DOC_STATUS = {ErrorKind.TOO_LARGE: 413, ErrorKind.TIMEOUT: 504, ErrorKind.UNSUPPORTED: 415,
               ErrorKind.BLOCKED_ADDRESS: 403, ErrorKind.NOT_FOUND: 404}


def document_error(doc: Document) -> ApiError:
    """The typed error answer for a document that failed (only where the client asked for
    text, not for the Document itself, which carries its error as data)."""
    assert doc.error is not None
    return ApiError(_DOC_STATUS.get(doc.error.kind, 422), str(doc.error.kind),
                    doc.error.message)


class Service:
    """What the routes share: config, base options, the extraction service (the local
    executor's isolated workers behind a thread-safe front), the run service, the
    metrics."""

    def __init__(self, config: ServerConfig, options: Options, runs: RunService) -> None:
        self.config, self.options, self.runs = config, options, runs
        workers = options.worker_count
        self.extractor = ExtractionService(
            options, workers=workers,
            queue=2 * workers if config.queue is None else config.queue,
            recycle_after=config.recycle_after, recycle_rss=config.recycle_rss,
            threads_run=True)  # uvicorn's loop and request threads: a forkserver
        self.registry = CollectorRegistry()
        self.requests = Counter("textsieve_requests", "HTTP requests answered",
                                ["route", "status"], registry=self.registry)
        self.latency = Histogram("textsieve_request_seconds", "request latency",
                                 ["route"], registry=self.registry)
        self.documents = Counter("textsieve_documents", "documents extracted, by status",
                                 ["status"], registry=self.registry)
        Gauge("textsieve_in_flight", "requests admitted now",
              registry=self.registry).set_function(lambda: float(self.extractor.in_flight))
        for key in self.extractor.stats:
            Gauge(f"textsieve_pool_{key}", f"worker pool: {key} since start",
                  registry=self.registry).set_function(functools.partial(self._stat, key))

    def _stat(self, key: str) -> float:
        return float(self.extractor.stats[key])

    def options_for(self, values: dict[str, Any]) -> Options:
        """The server's options with a request's choices; a bad value is a 400. A request
        that chooses nothing gets the server's own object (the workers hold it already:
        nothing of it travels with the job)."""
        chosen = {k: v for k, v in values.items() if v is not None}
        if not chosen:
            return self.options
        try:
            return Options.from_mapping(chosen, base=self.options, origin="query")
        except OptionsError as exc:
            raise ApiError(400, "bad_option", str(exc)) from exc

    async def extract(self, upload: Upload, name: str | None, options: Options, *,
                      detect_only: bool = False) -> Document:
        """Extract an upload in a worker, from the event loop (no thread held while it
        runs), once it holds an admission (503 when there is none). The request's
        deadline (``options.timeout``) counts its wait for a free worker."""
        with self.admit():
            fut = self.extractor.submit(upload.input, name, options=options,
                                        work=Detect() if detect_only else EXTRACT)
            doc: Document = await asyncio.wrap_future(fut)
        if upload.path is not None and name is None:
            doc.name = None  # the spooled file's name is nobody's business
        self.documents.labels(str(doc.status)).inc()
        return doc

    def run_job(self, data: bytes, name: str | None, options: Options, work: Work) -> Result:
        """One work item of an event (``events.handle``'s runner), from a job thread."""
        result: Result = self.extractor.submit(data, name, options=options,
                                               work=work).result()
        return result

    def submit_job(self, event: dict[str, Any]) -> dict[str, Any]:
        """An event for the run service, its documents extracted by this service's pool."""
        return self.runs.submit_job(event, self.run_job, self.config.file_roots)

    def admit(self) -> Any:
        """A context manager holding one admission; ``Busy`` becomes 503 + Retry-After."""
        return self.extractor.slot()

    def refuse_if_full(self) -> None:
        """503 at once when every admission is taken, before a body is read (a refused
        request then costs nothing); the admission itself is taken once it is read."""
        if self.extractor.full():
            raise Busy(1)

    @asynccontextmanager
    async def upload(self, request: Request) -> AsyncIterator[Upload]:
        """The request body, read whole before the request takes a worker slot: refused
        with 413 as soon as it passes ``max_upload``, with 408 when it has not all arrived
        by the request's deadline (``Options.timeout``). Up to ``SPOOL`` bytes it is kept
        in memory, beyond it in a file of its own (removed when the request ends)."""
        self.refuse_if_full()
        cap = self.config.max_upload
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > cap:
            raise ApiError(413, "too_large", f"body larger than {cap} bytes")
        upload = Upload()
        chunks: list[bytes] = []
        size = 0
        limit = self.options.timeout  # a slow client holds a connection, not a worker
        try:
            try:
                async with asyncio.timeout(limit):
                    async for chunk in request.stream():
                        size += len(chunk)
                        if size > cap:
                            raise ApiError(413, "too_large", f"body larger than {cap} bytes")
                        if upload.file is None and size > SPOOL:
                            upload.spill(chunks)
                            chunks = []
                        if upload.file is not None:
                            upload.file.write(chunk)
                        else:
                            chunks.append(chunk)
            except TimeoutError:
                raise ApiError(408, "timeout", f"the body did not arrive within "
                               f"{limit:g} s") from None
            upload.finish(chunks)
            yield upload
        finally:
            upload.close()


class Upload:
    """A request's body: bytes in memory, or a spooled file (``path``) for big ones."""

    def __init__(self) -> None:
        self.data: bytes = b""
        self.file: Any = None
        self.path: str | None = None

    def spill(self, chunks: list[bytes]) -> None:
        self.file = tempfile.NamedTemporaryFile(prefix="textsieve-upload-", delete=False)  # noqa: SIM115
        self.path = self.file.name
        for c in chunks:
            self.file.write(c)

    def finish(self, chunks: list[bytes]) -> None:
        if self.file is not None:
            self.file.close()
        else:
            self.data = b"".join(chunks)

    @property
    def input(self) -> bytes | str:
        """What a worker reads: the bytes, or the spooled file's path."""
        return self.path if self.path is not None else self.data

    def close(self) -> None:
        if self.file is not None:
            with contextlib.suppress(OSError):
                self.file.close()
            with contextlib.suppress(OSError):
                os.unlink(self.file.name)


def service_of(request: Request) -> Service:
    return request.app.state.service
