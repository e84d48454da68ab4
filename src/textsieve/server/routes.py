"""The /v1 API: extract and detect uploaded documents; URI-to-URI jobs (events)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

try:
    from fastapi import APIRouter, Path, Request
    from fastapi.responses import JSONResponse, PlainTextResponse, Response
    from pydantic import BaseModel, ConfigDict, Field
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError(f"textsieve serve needs the server extra: pip install "
                      f"'textsieve[server]' ({exc})") from exc

from ..model import Status
from ..options import KNOBS, flag_of
from .runs import JOB
from .service import ApiError, document_error, service_of

router = APIRouter(prefix="/v1")

# The body of PUT /v1/extract and /v1/detect: the document's bytes, any type.
RAW_BODY: dict[str, Any] = {"requestBody": {"required": True, "content": {
    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}}


@dataclass(frozen=True)
class Param:
    """A query or header parameter of an upload route, checked by hand: FastAPI's own
    parameter machinery cost a third of the server's CPU per request (it re-inspects
    every declared parameter's type on each call), on the service's hottest route."""

    name: str
    where: str = "query"  # or "header"
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    max_length: int = 4096
    default: str | None = None
    option: str = ""  # the Options field it sets (``of``)

    @classmethod
    def of(cls, option: str, name: str = "", where: str = "query") -> Param:
        """The parameter that sets the Options field ``option``, made from its knob (the
        same allowed values as its flag and its config key): named like its flag unless
        ``name`` is given."""
        knob = KNOBS[option]
        return cls(name or flag_of(option).lstrip("-"), where, choices=knob.choices,
                   pattern=knob.pattern or None, max_length=knob.max_length or 4096,
                   option=option)

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string", "maxLength": self.max_length}
        if self.choices:
            out = {"type": "string", "enum": list(self.choices)}
        if self.pattern:
            out["pattern"] = self.pattern
        if self.default is not None:
            out["default"] = self.default
        return {"name": self.name, "in": self.where, "required": False, "schema": out}

    def get(self, request: Request) -> str | None:
        source = request.query_params if self.where == "query" else request.headers
        value = source.get(self.name)
        if value is None:
            return self.default
        where = f"{self.where}.{self.name}"
        if self.choices and value not in self.choices:
            raise ApiError(422, "invalid_request",
                           f"{where}: one of {', '.join(self.choices)}")
        if len(value) > self.max_length:
            raise ApiError(422, "invalid_request",
                           f"{where}: at most {self.max_length} characters")
        if self.pattern and not re.fullmatch(self.pattern, value):
            raise ApiError(422, "invalid_request", f"{where}: does not match {self.pattern}")
        return value


def params(*declared: Param) -> dict[str, Any]:
    """``openapi_extra`` for a raw-body route with these parameters."""
    return {**RAW_BODY, "parameters": [p.schema() for p in declared]}


FORMAT = Param("format", choices=("text", "markdown", "json"), default="text")
NAME = Param("name", max_length=255)
# What a request may choose of the extraction options: from their knobs.
OCR, LANG, HTML = Param.of("ocr"), Param.of("ocr_lang"), Param.of("html")
PASSWORD = Param.of("password", "x-textsieve-password", where="header")
CHOICES = (OCR, LANG, HTML, PASSWORD)


def chosen(request: Request, declared: tuple[Param, ...] = CHOICES) -> dict[str, str | None]:
    """The Options fields a request sets with the parameters ``declared``."""
    return {p.option: p.get(request) for p in declared}


@router.put("/extract", tags=["extract"], response_model=None,
            openapi_extra=params(FORMAT, OCR, LANG, HTML, NAME, PASSWORD),
            responses={200: {"content": {"text/plain": {}, "text/markdown": {}}}})
async def extract(request: Request) -> Response:
    """Extract the document in the body. ``format=json`` answers the whole Document (a
    failure is its ``status``/``error``, with 200); text and markdown answer the text, or a
    typed error with the status its kind calls for (413, 415, 422, 504)."""
    service = service_of(request)
    format, name = FORMAT.get(request), NAME.get(request)
    options = service.options_for(chosen(request))
    async with service.upload(request) as data:
        doc = await service.extract(data, name, options)
    if format == "json":
        return JSONResponse(doc.to_dict())
    if doc.status is Status.ERROR:
        raise document_error(doc)
    if format == "markdown":
        return PlainTextResponse(doc.full_text(markdown=True), media_type="text/markdown")
    return PlainTextResponse(doc.full_text())


@router.put("/detect", openapi_extra=params(NAME), tags=["extract"])
async def detect(request: Request) -> dict[str, str]:
    """The MIME type of the body, decided by its content (``name`` is only a hint)."""
    service = service_of(request)
    name = NAME.get(request)
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
    return service_of(request).submit_job(event.model_dump(exclude_none=True))


@router.get("/jobs/{job_id}", tags=["jobs"])
async def get_job(request: Request,
                  job_id: Annotated[str, Path(max_length=64)]) -> dict[str, Any]:
    """A job's status (queued, running, done) and, once done, the event's reply."""
    return service_of(request).runs.get(JOB, job_id)
