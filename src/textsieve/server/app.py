"""The ASGI application of ``textsieve serve``: the routes (``routes``: the /v1 API,
``tika``: Tika-compatible, ``archive_routes``), the reading room mounted at ``/ui``, the
exception handlers, the guard and the metrics around them. What the routes share is
``service`` (the routes never import this module).

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
import importlib.util
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

try:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, RedirectResponse, Response
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.routing import Route, Router
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError(f"textsieve serve needs the server extra: pip install "
                      f"'textsieve[server]' ({exc})") from exc

from .. import __version__
from ..errors import TextsieveError, UsageError
from ..model import Document
from ..options import Options
from . import archive_routes, routes, tika
from .guard import Guard
from .runs import NotFound, RunService
from .service import ApiError, Busy, ServerConfig, Service, error_response, service_of

__all__ = ["ServerConfig", "create_app"]

log = logging.getLogger(__name__)


def create_app(config: ServerConfig | None = None, options: Options | None = None) -> FastAPI:
    """The application; the worker pool starts with it and stops with it."""
    config = config or ServerConfig()
    options = options or Options()
    config.check()
    # One run service for the API's runs and jobs and the reading room's retries.
    runs = RunService(config.archive, options, workers=options.worker_count,
                      limit=64 * max(1, options.worker_count))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = Service(config, options, runs)
        app.state.service = service
        try:
            if mcp is not None:
                async with mcp.running():
                    yield
            else:
                yield
        finally:
            runs.close()
            service.extractor.close()

    app = FastAPI(title="textsieve", version=__version__, lifespan=lifespan,
                  description="Clean, searchable text from documents; Tika-compatible.")
    ui = None
    if config.archive and os.path.exists(config.archive):
        from ..ui import app as reading_room

        ui = reading_room(config.archive, options=options, token=config.token,
                          allowed_hosts=config.allowed_hosts, guarded=False, runs=runs)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.kind, exc.message, exc.headers)

    @app.exception_handler(NotFound)
    async def _not_found(request: Request, exc: NotFound) -> JSONResponse:
        return error_response(404, "not_found", exc.message)

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

    app.include_router(routes.router)
    app.include_router(archive_routes.router)
    app.include_router(tika.router)
    app.add_api_route("/version", tika.version, methods=["GET"], tags=["tika"],
                      response_class=Response)
    mcp = _mcp(app, config, options)  # the lifespan above enters it
    if mcp is not None:
        app.router.routes.append(Route("/mcp", endpoint=mcp))
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


def _mcp(app: FastAPI, config: ServerConfig, options: Options) -> LazyMcp | None:
    """The MCP server at ``/mcp`` (streamable HTTP), when the mcp extra is installed: the
    same tools as ``textsieve mcp``, its documents extracted by the service's workers."""
    if importlib.util.find_spec("mcp") is None:
        log.info("no /mcp: the mcp extra is not installed")
        return None

    def make() -> tuple[list[Any], Callable[[], Any]]:
        from ..core import EXTRACT
        from .mcp_server import Backend, http_routes

        def extract(data: bytes, name: str | None, opts: Options) -> Document:
            service: Service = app.state.service
            doc: Document = service.extractor.submit(data, name, options=opts,
                                                     work=EXTRACT).result()
            return doc

        return http_routes(Backend(config.archive, options, config.file_roots, extract))

    return LazyMcp(make)


class LazyMcp:
    """``/mcp``, made and started on its first request rather than with the service:
    importing the MCP SDK cost every ``textsieve serve`` a second or more of start-up
    and ~28 MB of memory, most often for a route nobody calls. The first request waits
    for it (once); its session manager runs from then on in a task of the service's
    lifespan (``running``), which ends it with the service."""

    def __init__(self, make: Callable[[], tuple[list[Any], Callable[[], Any]]]) -> None:
        self._make = make
        self._app: Any = None
        self._failed: str | None = None
        self._wanted: asyncio.Event | None = None
        self._ready: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Entered in the service's lifespan: the task that starts the MCP server once it
        is wanted and keeps its session manager running until the service stops."""
        self._wanted, self._ready, self._stop = (asyncio.Event(), asyncio.Event(),
                                                 asyncio.Event())
        task = asyncio.create_task(self._serve())
        try:
            yield
        finally:
            self._stop.set()
            if not self._wanted.is_set():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _serve(self) -> None:
        assert self._wanted and self._ready and self._stop
        await self._wanted.wait()
        try:
            # Imported off the event loop: the service answers meanwhile.
            routes, run = await asyncio.to_thread(self._make)
            async with run():
                self._app = Router(routes=routes)
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:  # the service goes on; /mcp answers what went wrong
            log.exception("the MCP server could not start")
            self._failed = f"the MCP server could not start: {exc}"
        finally:
            self._ready.set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self._app is None and self._wanted is not None and self._ready is not None:
            self._wanted.set()
            await self._ready.wait()
        if self._app is None:
            response = error_response(503, "unavailable", self._failed or
                                      "the MCP server is not running")
            await response(scope, receive, send)
            return
        await self._app(scope, receive, send)


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
