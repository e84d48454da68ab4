"""The reading room: server-rendered pages over the archive (search, item, mail, reading
list, problems with retry, overview), as one FastAPI router the service mounts.

Everything shown comes from hostile documents, pages and mails, so: Jinja2 autoescapes
every value, Markdown is sanitised (safehtml.py), every response carries a strict
Content-Security-Policy (scripts and styles from this server only, nothing inline, no
other host), and changes are POSTs with a CSRF token. Who may be answered is the one
request guard's (``server.guard``: loopback names only without a token, the same token
as the API with one, given once in the login form, which leaves a session cookie).

The pages work wherever they are mounted: every link, form, redirect and the stylesheet
are made from the request's root path (``/ui`` under ``textsieve serve``, a proxy's
prefix), never from ``/``.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode, urlsplit

try:
    import jinja2
    from fastapi import APIRouter, FastAPI, Form, HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import (
        FileResponse,
        HTMLResponse,
        JSONResponse,
        RedirectResponse,
        Response,
    )
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ImportError as exc:  # an optional extra: say which, not a bare traceback
    raise ImportError("the reading room needs the server extra: "
                      "pip install 'textsieve[server]'") from exc

from ..archive import browse
from ..archive.labels import labels_by_item, labels_of
from ..archive.search import (
    COUNT_CAP,
    RANK_WINDOW,
    Filters,
    QueryError,
    find,
    ranks_past_window,
)
from ..archive.store import Archive, ArchiveError
from ..enrich.candidates import list_topics, topic_months
from ..options import Options
from ..server.guard import SESSION_COOKIE, Guard, Policy
from . import safehtml as render

logger = logging.getLogger(__name__)

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY",
           "Cross-Origin-Opener-Policy": "same-origin"}
PER_PAGE = 20
STATIC = {"style.css": "text/css; charset=utf-8",
          "search.js": "text/javascript; charset=utf-8", "icon.svg": "image/svg+xml"}
FACETS_TTL = 30.0  # s: the filter lists are a full scan; a minute-old list is fine


@dataclass(frozen=True)
class Settings:
    """What the reading room needs: the archive, who may be answered (the guard's policy:
    the token shared with the REST API, the host names), the options a retry runs with,
    and a CSRF secret per process."""

    archive: Path
    policy: Policy = field(default_factory=Policy)
    options: Options = field(default_factory=Options)
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))


class _Reader(threading.local):
    """One read-only connection per server thread (sqlite3 connections are not for
    sharing), opened without the integrity check: that ran once, when the app was made."""

    archive: Archive | None = None


@dataclass
class _Job:
    id: int
    ids: list[int]
    state: str = "running"  # running | done | failed
    started: float = field(default_factory=time.time)
    result: dict[str, Any] = field(default_factory=dict)
    message: str = ""


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("textsieve.ui", "templates"), autoescape=True,
        trim_blocks=True, lstrip_blocks=True)
    env.filters["when"] = _when
    env.filters["size"] = _size
    env.filters["snippet"] = render.snippet
    env.filters["web"] = _web_link
    return env


def _when(t: float | str | None) -> str:
    if t is None or t == "":
        return "—"
    if isinstance(t, str):
        return t
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _size(n: int | None) -> str:
    if n is None:
        return "—"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


def _web_link(url: str | None) -> str | None:
    """A URL a page may link to: http(s) only (never javascript:, data:, file:)."""
    if url and urlsplit(url).scheme in ("http", "https"):
        return url
    return None


def router(settings: Settings, prefix: str = "") -> APIRouter:
    """The reading room's routes, guarded (token, Host), for the service to include."""
    env = _environment()
    reader = _Reader()
    jobs: dict[int, _Job] = {}
    jobs_lock = threading.Lock()
    facet_cache: list[Any] = [0.0, None]
    csrf = hmac.new(settings.secret, b"csrf", hashlib.sha256).hexdigest()
    with Archive(settings.archive, readonly=True):  # fails early: not there, damaged, old
        pass

    def archive() -> Archive:
        if reader.archive is None:
            reader.archive = Archive(settings.archive, readonly=True, check=False)
        return reader.archive

    r = APIRouter(prefix=prefix)

    def base_of(request: Request) -> str:
        """Where the pages are: the mount's root path (``/ui`` under serve) + prefix."""
        return request.scope.get("root_path", "").rstrip("/") + prefix

    def page(request: Request, name: str, status: int = 200, **ctx: Any) -> Response:
        body = env.get_template(name).render(
            base=base_of(request), csrf=csrf, path=request.url.path,
            signed_in=SESSION_COOKIE in request.cookies, **ctx)
        return HTMLResponse(body, status_code=status, headers=HEADERS)

    def facets() -> dict[str, Any]:
        now = time.monotonic()
        if facet_cache[1] is None or now - facet_cache[0] > FACETS_TTL:
            facet_cache[:] = [now, browse.facets(archive())]
        return facet_cache[1]

    def check_post(request: Request, token: str) -> None:
        # The guard refused a foreign Origin already (Referrer-Policy same-origin: a
        # browser names our own origin on our forms' POSTs); the form's token besides.
        if not hmac.compare_digest(token.encode(), csrf.encode()):
            raise HTTPException(403, "the form has expired; reload the page")

    @r.get("/", include_in_schema=False)
    def home(request: Request) -> Response:
        return RedirectResponse(f"{base_of(request)}/search", status_code=303,
                                headers=HEADERS)

    @r.get("/login", response_class=HTMLResponse)
    def login_page(request: Request, next: str = "") -> Response:
        return page(request, "login.html", next=_local(next, base_of(request)),
                    message="")

    @r.post("/login")
    def login(request: Request, csrf_token: Annotated[str, Form()] = "",
              token: Annotated[str, Form(max_length=4096)] = "",
              next: Annotated[str, Form(max_length=4096)] = "") -> Response:
        check_post(request, csrf_token)
        base = base_of(request)
        target = _local(next, base)
        policy = settings.policy
        if policy.token is None:
            return RedirectResponse(target, status_code=303, headers=HEADERS)
        if not policy.token_matches(token):
            return page(request, "login.html", status=401, next=target,
                        message="That is not the token this server was started with.")
        resp = RedirectResponse(target, status_code=303, headers=HEADERS)
        resp.set_cookie(SESSION_COOKIE, policy.session, httponly=True, samesite="strict",
                        path="/", secure=request.url.scheme == "https")
        return resp

    @r.post("/logout")
    def logout(request: Request, csrf_token: Annotated[str, Form()] = "") -> Response:
        check_post(request, csrf_token)
        resp = RedirectResponse(f"{base_of(request)}/login", status_code=303,
                                headers=HEADERS)
        resp.delete_cookie(SESSION_COOKIE, path="/")
        return resp

    @r.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in STATIC:
            raise HTTPException(404, "no such file")
        data = resources.files("textsieve.ui").joinpath("static", name).read_bytes()
        return Response(data, media_type=STATIC[name],
                        headers={**HEADERS, "Cache-Control": "max-age=300"})

    @r.get("/search", response_class=HTMLResponse)
    def search_page(request: Request, q: str = "", type: str = "", status: str = "",
                    source: str = "", mailbox: str = "", site: str = "", since: str = "",
                    until: str = "", language: str = "", label: str = "",
                    sort: str = "relevance", page_no: int = 1) -> Response:
        filters = Filters(type=type or None, status=status or None, source=source or None,
                          mailbox=mailbox or None, site=site or None,
                          since=_day(since), until=_day(until), language=language or None,
                          label=label or None)
        page_no = max(1, min(page_no, 500))
        error, hits, total = None, [], 0
        try:
            hits, count = find(archive(), q, filters, sort=sort, limit=PER_PAGE,
                               offset=(page_no - 1) * PER_PAGE, count=True,
                               marks=(render.MARK_OPEN, render.MARK_CLOSE))
            total = count or 0
        except QueryError:
            error = ("This query is not valid search syntax. Use words, \"a phrase\", "
                     "OR, NOT, NEAR(a b), prefix*.")
        args = {k: v for k, v in request.query_params.items() if k != "page_no"}
        shown = min(total, RANK_WINDOW if q.strip() and sort == "relevance" else COUNT_CAP)
        pages = max(1, math.ceil(shown / PER_PAGE))
        labels = labels_by_item(archive().conn, [h.id for h in hits])
        return page(request, "search.html", status=400 if error else 200, q=q, hits=hits,
                    labels=labels,
                    total=total, cap=COUNT_CAP, window=RANK_WINDOW, error=error,
                    ranked=ranks_past_window(q),
                    facets=facets(), f=filters, sort=sort, page_no=page_no, pages=pages,
                    qs=lambda n: urlencode({**args, "page_no": n}))

    @r.get("/items/{item_id}.{fmt}")
    def item_as(item_id: int, fmt: str) -> Response:
        a = archive()
        doc = a.document(item_id)
        if doc is None:
            raise HTTPException(404, f"no item {item_id}")
        if fmt == "json":
            lineage = a.lineage(item_id)
            record = {"id": item_id, "path": " › ".join(w for _, w in lineage),
                      **doc.to_dict(), "mails": a.mails_of(lineage[0][0]) if lineage else []}
            return JSONResponse(record, headers=HEADERS)
        if fmt in ("md", "txt"):
            body = doc.full_text() if fmt == "txt" else (doc.markdown or doc.text)
            return Response(body, media_type="text/plain; charset=utf-8", headers=HEADERS)
        raise HTTPException(404, "formats: json, md, txt")

    @r.get("/items/{item_id}/searchable.pdf")
    def searchable_pdf(item_id: int) -> Response:
        doc = archive().document(item_id, children=False)
        path = searchable_copy(doc, settings.options) if doc is not None else None
        if path is None:
            raise HTTPException(404, f"item {item_id} has no searchable PDF here")
        return FileResponse(path, media_type="application/pdf", headers=HEADERS)

    @r.get("/items/{item_id}", response_class=HTMLResponse)
    def item_page(request: Request, item_id: int) -> Response:
        a = archive()
        row = browse.item(a, item_id)
        doc = a.document(item_id, children=False)
        if row is None or doc is None:
            raise HTTPException(404, f"no item {item_id}")
        lineage = a.lineage(item_id)
        top = lineage[0][0] if lineage else item_id
        return page(request, "item.html", item=row, lineage=lineage,
                    labels=labels_of(a.conn, item_id),
                    body=render.markdown(doc.markdown or doc.text),
                    children=browse.children(a, item_id),
                    provenance=browse.provenance(a, top),
                    mails=browse.mails_with_ids(a, top), top=top,
                    searchable=searchable_copy(doc, settings.options) is not None,
                    sieve_plot=render.sieve_plot(doc.metadata.extra))

    @r.get("/mails/{mail_id}", response_class=HTMLResponse)
    def mail_page(request: Request, mail_id: int) -> Response:
        m = browse.mail(archive(), mail_id)
        if m is None:
            raise HTTPException(404, f"no mail {mail_id}")
        return page(request, "mail.html", mail=m)

    @r.get("/reading", response_class=HTMLResponse)
    def reading_page(request: Request, page_no: int = 1) -> Response:
        page_no = max(1, page_no)
        mails, total = browse.reading_list(archive(), limit=50, offset=(page_no - 1) * 50)
        return page(request, "reading.html", mails=mails, total=total, page_no=page_no,
                    pages=max(1, math.ceil(total / 50)))

    @r.get("/problems", response_class=HTMLResponse)
    def problems_page(request: Request) -> Response:
        with jobs_lock:
            recent = sorted(jobs.values(), key=lambda j: -j.id)[:5]
        return page(request, "problems.html", groups=browse.problems(archive()), jobs=recent)

    @r.post("/problems/retry")
    def retry(request: Request, csrf_token: Annotated[str, Form()] = "",
              item: Annotated[list[int] | None, Form()] = None,
              kind: Annotated[str, Form()] = "", site: Annotated[str, Form()] = "",
              group: Annotated[str, Form()] = "") -> Response:
        check_post(request, csrf_token)
        ids = list(item or [])
        if group:
            ids += browse.failed_ids(archive(), kind or None, site or None)
        if not ids:
            raise HTTPException(400, "nothing to retry")
        with jobs_lock:
            job = _Job(id=len(jobs) + 1, ids=sorted(set(ids)))
            jobs[job.id] = job
        threading.Thread(target=_retry, args=(settings, job), daemon=True,
                         name=f"retry-{job.id}").start()
        return RedirectResponse(f"{base_of(request)}/jobs/{job.id}", status_code=303,
                                headers=HEADERS)

    @r.get("/jobs/{job_id}", response_class=HTMLResponse)
    def job_page(request: Request, job_id: int) -> Response:
        job = jobs.get(job_id)
        if job is None:
            raise HTTPException(404, f"no job {job_id}")
        return page(request, "job.html", job=job)

    @r.get("/topics", response_class=HTMLResponse)
    def topics_page(request: Request) -> Response:
        a = archive()
        found = list_topics(a, items=5)
        months = topic_months(a)
        series = [(t.label, months.get(t.id, {})) for t in found]
        span = render.month_span(series)
        return page(request, "topics.html", topics=found, series=series, months=span,
                    chart=render.topic_chart(series, span))

    @r.get("/overview", response_class=HTMLResponse)
    def overview_page(request: Request) -> Response:
        o = browse.overview(archive())
        charts = {name: render.bar_chart(pairs, label=f"items by {name}")
                  for name, pairs in o["by"].items()}
        return page(request, "overview.html", charts=charts, runs=o["runs"])

    def error_page(request: Request, status: int, message: str,
                   login: bool = False) -> Response:
        if login:
            here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return page(request, "login.html", status=status, next=here, message=message)
        return page(request, "error.html", status=status, code=status, message=message)

    def refusal(scope: dict[str, Any], base: str, status: int, message: str,
                login: bool) -> Response:
        """The guard's refusal as a page (its login form for a missing token)."""
        request = Request({**scope, "root_path": base})
        resp = error_page(request, status, message, login)
        if status == 401:
            resp.headers["WWW-Authenticate"] = "Bearer"
        return resp

    r.error_page = error_page  # type: ignore[attr-defined]
    r.refusal = refusal  # type: ignore[attr-defined]
    return r


def _local(target: str, base: str) -> str:
    """Where a login may send the browser next: a path of the reading room, never another
    site (``//evil.example``, ``https://...``, a backslash trick)."""
    if target.startswith(base + "/") and not target.startswith("//") \
            and "\\" not in target and not urlsplit(target).netloc:
        return target
    return f"{base}/search"


def _day(value: str) -> str | None:
    """A YYYY-MM-DD date from a form, or None (anything else is ignored, not an error)."""
    try:
        return datetime.strptime(value, "%Y-%m-%d").strftime("%Y-%m-%d") if value else None
    except ValueError:
        return None


def _retry(settings: Settings, job: _Job) -> None:
    """Run the failed items of a job again (the runner's retry-errors mode), each in the
    source it came from, in this background thread with its own writing connection."""
    from ..run.runner import Mode, run
    from .retry import sources_for

    try:
        with Archive(settings.archive) as a:
            sources, skipped = sources_for(a, job.ids)
            stats = run(sources, a, settings.options, mode=Mode.RETRY_ERRORS,
                        run_options={"mode": "retry-errors", "from": "reading room"})
        job.result = {"retried": stats.done, "ok": stats.status.get("ok", 0),
                      "empty": stats.status.get("empty", 0),
                      "error": stats.status.get("error", 0), "not retryable": skipped}
        job.state = "done"
    except (ArchiveError, OSError, ValueError) as exc:
        logger.warning("retry job %d failed: %s", job.id, exc)
        job.state, job.message = "failed", str(exc)
    except Exception as exc:  # a background thread: its failure is shown, never lost
        logger.exception("retry job %d crashed", job.id)
        job.state, job.message = "failed", f"internal error: {type(exc).__name__}"


def searchable_copy(doc: Any, options: Options) -> str | None:
    """The searchable PDF `run --searchable-pdf` wrote for ``doc``, if it is a file inside
    the configured folder. The path comes from the archive, whose metadata also holds what
    hostile documents put there: nothing outside that folder is ever served."""
    folder = options.searchable_pdf_dir
    path = doc.metadata.extra.get("searchable_pdf")
    if not folder or not isinstance(path, str) or not path:
        return None
    real, root = os.path.realpath(path), os.path.realpath(folder)
    if os.path.commonpath([real, root]) != root or not os.path.isfile(real):
        return None
    return real


def app(archive_path: str | os.PathLike[str], *, token: str | None = None,
        options: Options | None = None, allowed_hosts: tuple[str, ...] = (),
        guarded: bool = True) -> FastAPI:
    """The reading room as an app of its own: served alone (``uvicorn`` on
    ``textsieve.ui.app(path)``), or mounted by ``textsieve serve`` at ``/ui`` (then
    ``guarded=False``: the service's guard is in front of it already). ``token``: the
    same rules as the service's (16+ visible characters); without one only loopback
    names (and ``allowed_hosts``) are answered."""
    policy = Policy(token=token, allowed_hosts=frozenset(allowed_hosts))
    settings = Settings(Path(archive_path), policy=policy, options=options or Options())
    application = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    rt = router(settings)
    application.include_router(rt)
    install_error_pages(application, rt)
    application.state.refusal = rt.refusal  # type: ignore[attr-defined]
    if guarded:
        application.add_middleware(Guard, policy=policy, public=PUBLIC,
                                   pages={"": rt.refusal})  # type: ignore[attr-defined]
    return application


# What the reading room shows without the token: the login form and its stylesheet.
PUBLIC = ("/login", "/static/*")


def install_error_pages(application: FastAPI, rt: APIRouter) -> None:
    """HTTP errors as small pages with the same headers; an archive error as a message,
    never a traceback."""

    @application.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        resp = rt.error_page(request, exc.status_code, str(exc.detail))  # type: ignore
        if exc.status_code == 401:
            resp.headers["WWW-Authenticate"] = "Bearer"
        return resp

    @application.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        where = "; ".join(f"{e.get('loc', ('?',))[-1]}: {e.get('msg')}"
                          for e in exc.errors())
        return rt.error_page(request, 422,  # type: ignore[attr-defined]
                             f"This address asks for something that is not there "
                             f"({where or 'invalid request'}).")

    @application.exception_handler(ArchiveError)
    async def archive_error(request: Request, exc: ArchiveError) -> Response:
        return rt.error_page(request, 500, str(exc))  # type: ignore[attr-defined]

    @application.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> Response:
        logger.exception("internal error on %s", request.url.path)
        return rt.error_page(request, 500,  # type: ignore[attr-defined]
                             f"internal error ({type(exc).__name__}); please report it")

