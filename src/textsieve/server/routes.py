"""The /v1 API: extract and detect uploaded documents; URI-to-URI jobs (events)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

try:
    from fastapi import APIRouter, Header, Path, Query, Request
    from fastapi.responses import JSONResponse, PlainTextResponse, Response
    from pydantic import BaseModel, ConfigDict, Field
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError(f"textsieve serve needs the server extra: pip install "
                      f"'textsieve[server]' ({exc})") from exc

from ..model import Status
from .app import document_error, service_of

router = APIRouter(prefix="/v1")

# The body of PUT /v1/extract and /v1/detect: the document's bytes, any type.
RAW_BODY: dict[str, Any] = {"requestBody": {"required": True, "content": {
    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}}


@router.put("/extract", openapi_extra=RAW_BODY, tags=["extract"], response_model=None,
            responses={200: {"content": {"text/plain": {}, "text/markdown": {}}}})
async def extract(
    request: Request,
    format: Literal["text", "markdown", "json"] = "text",
    ocr: Literal["auto", "always", "never"] | None = None,
    lang: Annotated[str | None, Query(pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$",
                                      max_length=200)] = None,
    html: Literal["auto", "main", "full", "sieve"] | None = None,
    name: Annotated[str | None, Query(max_length=255)] = None,
    x_textsieve_password: Annotated[str | None, Header()] = None,
) -> Response:
    """Extract the document in the body. ``format=json`` answers the whole Document (a
    failure is its ``status``/``error``, with 200); text and markdown answer the text, or a
    typed error with the status its kind calls for (413, 415, 422, 504)."""
    service = service_of(request)
    options = service.options_for({"ocr": ocr, "ocr_lang": lang, "html": html,
                                   "password": x_textsieve_password})
    async with service.upload(request) as data:
        doc = await service.extract(data, name, options)
    if format == "json":
        return JSONResponse(doc.to_dict())
    if doc.status is Status.ERROR:
        raise document_error(doc)
    if format == "markdown":
        return PlainTextResponse(doc.full_text(markdown=True), media_type="text/markdown")
    return PlainTextResponse(doc.full_text())


@router.put("/detect", openapi_extra=RAW_BODY, tags=["extract"])
async def detect(request: Request,
                 name: Annotated[str | None, Query(max_length=255)] = None) -> dict[str, str]:
    """The MIME type of the body, decided by its content (``name`` is only a hint)."""
    service = service_of(request)
    async with service.upload(request) as data:
        doc = await service.extract(data, name, service.options, detect_only=True)
    if doc.status is Status.ERROR:
        raise document_error(doc)
    return {"mime_type": doc.mime_type}


class EventBody(BaseModel):
    """An "extract this URI to that URI" event (``textsieve.events``). Strict: ``"page":
    "2"`` or ``true`` is a 422, not page 2 or page 1."""

    model_config = ConfigDict(extra="forbid", strict=True)

    document_uri: str = Field(min_length=1, max_length=4096)
    text_uri: str | None = Field(None, max_length=4096)
    temp_uri_prefix: str | None = Field(None, max_length=4096)
    disable_ocr: bool = False
    create_searchable_pdf: bool = False
    searchable_pdf_uri: str | None = Field(None, max_length=4096)
    page: int | None = Field(None, ge=1, le=10_000)
    merge: int | None = Field(None, ge=1, le=10_000)
    overwrite: bool = False  # replace file:// targets that are there already


@router.post("/jobs", tags=["jobs"], status_code=202)
async def submit_job(request: Request, event: EventBody) -> dict[str, Any]:
    """Queue an event; poll ``GET /v1/jobs/{id}`` for its reply."""
    return service_of(request).jobs.submit(event.model_dump(exclude_none=True))


@router.get("/jobs/{job_id}", tags=["jobs"])
async def get_job(request: Request,
                  job_id: Annotated[str, Path(max_length=64)]) -> dict[str, Any]:
    """A job's status (queued, running, done) and, once done, the event's reply."""
    return service_of(request).jobs.get(job_id)
