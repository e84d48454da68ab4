"""The ASGI application of ``textsieve serve``: configuration, limits, typed errors,
metrics; the routes live in ``routes`` (the /v1 API), ``tika`` (Tika-compatible) and
``archive_routes``; the reading room is mounted at ``/ui``.

Safety is decided here, once for every route: the request guard (``guard``: Host names,
Origin, the token, for the API, Tika's routes, the docs and the reading room alike), a
body size cap read as the body streams in (a lying or missing Content-Length does not
help), uploads read whole (spooled to disk past ``SPOOL``) under a deadline *before* a
worker slot is taken (a slow client holds a connection, never a worker), a bounded
number of admitted requests (503 + Retry-After beyond it), and every error answered as
``{"error": {"kind", "message"}}`` JSON, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

try:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, RedirectResponse, Response
    from prometheus_client import (
        CONTENT_TYPE_LATEST,
        CollectorRegistry,
        Counter,
        Gauge,
        Histogram,
        generate_latest,
    )
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError(f"textsieve serve needs the server extra: pip install "
                      f"'textsieve[server]' ({exc})") from exc

from .. import __version__
from ..core import EXTRACT, Detect, Result, Work
from ..errors import TextsieveError, UsageError
from ..model import Document, ErrorKind
from ..options import MiB, Options, OptionsError
from ..run.service import Busy, ExtractionService
from .guard import Guard, Policy, check_token, is_loopback

log = logging.getLogger(__name__)

SPOOL = 1 * MiB  # an upload larger than this waits for its worker on disk, not in memory


@dataclass(frozen=True)
class ServerConfig:
    """Settings of the service itself (extraction settings are the ``Options``)."""

    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None  # bearer token; required when host is not loopback
    allowed_hosts: tuple[str, ...] = ()  # Host names answered besides loopback ones
    archive: str | None = None  # the archive of /v1/search, /v1/items, /v1/runs, /v1/stats
    max_upload: int = 100 * MiB  # request bodies above this are refused (413)
    queue: int | None = None  # requests admitted beyond the busy workers (None: 2 per worker)
    recycle_after: int = 200  # a worker is replaced after this many jobs
    recycle_rss: int = 1024 * MiB  # ... or once its resident memory is above this
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
                   headers: dict[str, str] | None = None) -> JSONResponse:
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
    executor's isolated workers behind a thread-safe front), the metrics."""

    def __init__(self, config: ServerConfig, options: Options) -> None:
        self.config, self.options = config, options
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
              registry=self.registry).set_function(lambda: self.extractor.in_flight)
        self.jobs = Jobs(self, limit=64 * self.extractor.size)
        from .archive_routes import Runs

        self.runs = Runs()
        for key in self.extractor.stats:
            Gauge(f"textsieve_pool_{key}", f"worker pool: {key} since start",
                  registry=self.registry).set_function(
                      lambda k=key: self.extractor.stats[k])

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
        """One job of an event (``events.handle``'s runner), from a job thread."""
        result: Result = self.extractor.submit(data, name, options=options,
                                               work=work).result()
        return result

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


class Jobs:
    """Events run in the background (``POST /v1/jobs``), their replies kept for
    ``GET /v1/jobs/{id}``: at most ``limit`` pending (503 beyond), the last 10 000 kept."""

    KEEP = 10_000

    def __init__(self, service: Service, limit: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.service, self.limit = service, limit
        self._runner = ThreadPoolExecutor(max_workers=service.extractor.size,
                                          thread_name_prefix="textsieve-job")
        self._lock = threading.Lock()
        self._jobs: dict[str, dict[str, Any]] = {}
        self._pending = 0

    def submit(self, event: dict[str, Any]) -> dict[str, Any]:
        from ..events import Event

        Event.parse(event)  # a bad event is a 400 now, not a failed job later
        with self._lock:
            if self._pending >= self.limit:
                raise Busy(5)
            self._pending += 1
            job_id = uuid.uuid4().hex
            job = self._jobs[job_id] = {"id": job_id, "status": "queued",
                                        "created": time.time()}
            while len(self._jobs) > self.KEEP:
                del self._jobs[next(iter(self._jobs))]
        self._runner.submit(self._run, job, event)
        return dict(job)

    def _run(self, job: dict[str, Any], event: dict[str, Any]) -> None:
        from ..events import handle

        service = self.service
        job["status"] = "running"
        try:
            reply = handle(event, service.options, service.run_job,
                           roots=service.config.file_roots)
        except Exception as exc:  # a bug: the job says so, the server goes on
            log.exception("job %s failed", job["id"])
            reply = {"status": "error", "error": {"kind": "internal",
                                                  "message": f"{type(exc).__name__}"}}
        finally:
            with self._lock:
                self._pending -= 1
        job.update(status="done", reply=reply, finished=time.time())

    def get(self, job_id: str) -> dict[str, Any]:
        job = self._jobs.get(job_id)
        if job is None:
            raise ApiError(404, "not_found", f"no job {job_id!r}")
        return dict(job)

    def close(self) -> None:
        self._runner.shutdown(wait=False, cancel_futures=True)


def service_of(request: Request) -> Service:
    return request.app.state.service


def create_app(config: ServerConfig | None = None, options: Options | None = None) -> FastAPI:
    """The application; the worker pool starts with it and stops with it."""
    config = config or ServerConfig()
    options = options or Options()
    config.check()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = Service(config, options)
        app.state.service = service
        try:
            yield
        finally:
            service.jobs.close()
            service.extractor.close()

    app = FastAPI(title="textsieve", version=__version__, lifespan=lifespan,
                  description="Clean, searchable text from documents; Tika-compatible.")
    ui = None
    if config.archive and os.path.exists(config.archive):
        from ..ui import app as reading_room

        ui = reading_room(config.archive, options=options, token=config.token,
                          allowed_hosts=config.allowed_hosts, guarded=False)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.kind, exc.message, exc.headers)

    @app.exception_handler(Busy)
    async def _busy(request: Request, exc: Busy) -> JSONResponse:
        return error_response(503, "busy", str(exc), {"Retry-After": str(exc.retry_after)})

    @app.exception_handler(UsageError)
    async def _usage(request: Request, exc: UsageError) -> JSONResponse:
        return error_response(400, "bad_request", exc.message)

    @app.exception_handler(TextsieveError)
    async def _textsieve(request: Request, exc: TextsieveError) -> JSONResponse:
        return error_response(503, "unavailable", exc.message)  # the archive is unusable

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        where = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}"
                          for e in exc.errors())
        return error_response(422, "invalid_request", where or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, kind, str(exc.detail), exc.headers)

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error on %s", request.url.path)
        return error_response(500, "internal", f"internal error ({type(exc).__name__})")

    @app.get("/", include_in_schema=False)
    async def home(request: Request) -> Response:
        """The reading room when an archive is served, else the API's docs."""
        root = request.scope.get("root_path", "").rstrip("/")
        return RedirectResponse(f"{root}/ui/" if ui is not None else f"{root}/docs",
                                status_code=307)

    @app.get("/healthz", tags=["service"])
    async def healthz() -> dict[str, Any]:
        """Liveness: answers while the event loop runs (no token, no worker needed)."""
        return {"status": "ok", "version": __version__}

    @app.get("/metrics", tags=["service"], response_class=Response)
    async def metrics(request: Request) -> Response:
        """Prometheus metrics: requests by route and status, latency, documents by status,
        admitted requests, worker timeouts, crashes and recycling."""
        return Response(generate_latest(service_of(request).registry),
                        media_type=CONTENT_TYPE_LATEST)

    from . import archive_routes, routes, tika

    app.include_router(routes.router)
    app.include_router(archive_routes.router)
    app.include_router(tika.router)
    app.add_api_route("/version", tika.version, methods=["GET"], tags=["tika"],
                      response_class=Response)
    pages = {}
    if ui is not None:
        # The reading room over the same archive, as a mounted app of its own: its HTML
        # error pages and CSP stay there, the API keeps its typed JSON errors; the guard
        # below is in front of both.
        app.mount("/ui", ui)
        pages["/ui"] = ui.state.refusal
    # The guard before every route; the measure around it, so refusals are counted too.
    app.add_middleware(Guard, policy=config.policy, pages=pages,
                       public=("/", "/healthz", "/ui/login", "/ui/static/*"))
    app.add_middleware(Measure)
    return app


class Measure:
    """Requests by route and status, and their latency (pure ASGI: no task per request,
    unlike ``@app.middleware``)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = [500]
        outer = scope.get("app")  # a mounted app (the reading room) replaces it

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            service = getattr(getattr(outer, "state", None), "service", None)
            if service is not None:
                path = getattr(scope.get("route"), "path", "unmatched")
                if scope.get("app") is not outer:
                    path = "/ui"  # the reading room's pages, as one route
                service.requests.labels(path, str(status[0])).inc()
                service.latency.labels(path).observe(time.perf_counter() - t0)
