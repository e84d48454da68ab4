"""The /v1 routes over an archive (``textsieve serve --archive FILE``): search, items,
stats, and runs of sources into it.

Reads open the archive read-only per request (SQLite in WAL mode lets them go on while a
run writes). A run goes through the run service (``runs.RunService``, shared with the
reading room's retries): a process of its own, one run at a time; its counts are kept for
``GET /v1/runs/{id}``. Sources are restricted to what a remote caller may name:
http(s) URLs (under the address policy) and paths under ``--file-root``.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

try:
    from fastapi import APIRouter, Path, Query, Request
    from fastapi.responses import PlainTextResponse
    from pydantic import BaseModel, ConfigDict, Field
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError(f"textsieve serve needs the server extra: pip install "
                      f"'textsieve[server]' ({exc})") from exc

from ..archive import Archive
from ..run.fresh import Mode
from .runs import RUN, RunRequest
from .service import ApiError, service_of

router = APIRouter(prefix="/v1", tags=["archive"])

SQLITE_MAX = 2**63 - 1


def _archive(request: Request, *, readonly: bool = True) -> Archive:
    path = service_of(request).config.archive
    if not path:
        raise ApiError(404, "no_archive", "this server has no archive (serve --archive FILE)")
    if readonly and not os.path.exists(path):
        raise ApiError(404, "no_archive", "the archive is empty: POST /v1/runs fills it")
    return Archive(path, readonly=readonly)


@router.get("/search")
def search(request: Request, q: Annotated[str, Query(max_length=1000)] = "",
           limit: Annotated[int, Query(ge=1, le=200)] = 20,
           offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
           label: Annotated[str | None, Query(min_length=1, max_length=1000)] = None
           ) -> list[dict[str, Any]]:
    """Ranked hits with snippets, where each came from and its labels (as ``textsieve
    search``); ``label`` keeps the items with that label (alone: all of them)."""
    from ..archive.labels import labels_by_item
    from ..archive.search import search as find

    if not q.strip() and not label:
        raise ApiError(422, "invalid_request", "search needs q (words), or label")
    with _archive(request) as archive:
        hits = find(archive, q, limit=limit, offset=offset, label=label)
        labels = labels_by_item(archive.conn, [h.id for h in hits])
        return [{"id": h.id, "where": h.where, "title": h.title, "mime_type": h.mime_type,
                 "snippet": h.snippet, "rank": h.rank, "labels": labels.get(h.id, [])}
                for h in hits]


def _item(request: Request, item_id: int) -> Any:
    with _archive(request) as archive:
        doc = archive.document(item_id)
    if doc is None:
        raise ApiError(404, "not_found", f"no item {item_id}")
    return doc


ItemId = Annotated[int, Path(ge=1, le=SQLITE_MAX)]


@router.get("/items/{item_id}")
def item(request: Request, item_id: ItemId) -> dict[str, Any]:
    """An archived item as a Document (its children included)."""
    return _item(request, item_id).to_dict()


@router.get("/items/{item_id}/text", response_class=PlainTextResponse)
def item_text(request: Request, item_id: ItemId) -> PlainTextResponse:
    return PlainTextResponse(_item(request, item_id).full_text())


@router.get("/items/{item_id}/markdown", response_class=PlainTextResponse)
def item_markdown(request: Request, item_id: ItemId) -> PlainTextResponse:
    return PlainTextResponse(_item(request, item_id).full_text(markdown=True),
                             media_type="text/markdown")


@router.get("/items/{item_id}/chunks")
def item_chunks(request: Request, item_id: ItemId,
                max_tokens: Annotated[int, Query(ge=16, le=1_000_000)] = 512,
                overlap: Annotated[int, Query(ge=0, le=500_000)] = 0,
                tokenizer: Annotated[str, Query(pattern=r"^(approx|tiktoken:[\w.-]+)$",
                                                max_length=100)] = "approx",
                ) -> dict[str, Any]:
    """The item's own text in chunks for a language model, each within ``max_tokens``
    (counted approximately, or by an installed tiktoken encoding), with its heading path,
    page or slide numbers, offsets into the item's text and token count (as ``textsieve
    export --format chunks``). Its attachments and members are items of their own."""
    from ..archive.chunks import item_chunks as chunks_of

    with _archive(request) as archive:
        chunks = chunks_of(archive, item_id, max_tokens, overlap, tokenizer=tokenizer)
    if chunks is None:
        raise ApiError(404, "not_found", f"no item {item_id}")
    return {"item_id": item_id, "max_tokens": max_tokens, "overlap": overlap,
            "tokenizer": tokenizer, "chunks": [c.to_dict() for c in chunks]}


@router.get("/stats")
def stats(request: Request) -> dict[str, Any]:
    """Counts by status, type and error kind, and the last runs."""
    from ..archive.stats import stats as archive_stats

    with _archive(request) as archive:
        return archive_stats(archive)


class RunBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    sources: list[Annotated[str, Field(min_length=1, max_length=4096)]] = Field(
        min_length=1, max_length=100)
    force: bool = False


def _allowed(spec: str, roots: tuple[str, ...]) -> str:
    """A source a remote caller may name: an http(s) URL, or a path under a file root (a
    bookmark export too: ``bookmarks:PATH``); a feed by URL (``feed:https://...``) or a
    feed or OPML file under a file root (``feed:PATH``, ``opml:PATH``)."""
    from ..uris import UriError, under_roots

    if spec.startswith(("http://", "https://")):
        return spec
    if spec.startswith("bookmarks:") and "://" not in spec:
        return "bookmarks:" + _allowed(spec[len("bookmarks:"):], roots)
    if spec.startswith("feed:") and spec[5:].startswith(("http://", "https://")):
        return spec  # fetched under the address policy, like any URL
    for prefix in ("feed:", "opml:"):  # a feed or OPML file (its feeds are URLs)
        if spec.startswith(prefix) and "://" not in spec:
            return prefix + _allowed(spec[len(prefix):], roots)
    if "://" in spec or ":" in spec.split("/", 1)[0]:
        raise ApiError(400, "bad_source", f"{spec!r}: only http(s) URLs and paths under "
                       "--file-root can be run from the API")
    try:
        return str(under_roots("file://" + os.path.abspath(spec), roots))
    except UriError as exc:
        raise ApiError(403, "blocked_address", str(exc)) from exc


@router.post("/runs", status_code=202)
def start_run(request: Request, body: RunBody) -> dict[str, Any]:
    """Run sources into the archive (incremental; ``force`` re-extracts everything)."""
    service = service_of(request)
    specs = [_allowed(s, service.config.file_roots) for s in body.sources]
    path = service.config.archive
    if not path:
        raise ApiError(404, "no_archive", "this server has no archive (serve --archive FILE)")
    run = RunRequest(tuple(specs), Mode.FORCE if body.force else Mode.INCREMENTAL)
    return service.runs.start_run(run, sources=specs)


@router.get("/runs/{run_id}")
def get_run(request: Request, run_id: Annotated[str, Path(max_length=64)]) -> dict[str, Any]:
    """A run's status (running, done, error) and, once done, its counts."""
    return service_of(request).runs.get(RUN, run_id)
