"""Apache Tika server's endpoints, so clients written for Tika work unchanged.

``PUT /tika`` (text, or XHTML when the client accepts text/html), ``PUT /meta`` (metadata as
JSON), ``PUT /rmeta`` and ``/rmeta/{text,xml,html,ignore}`` (a JSON list: the container
first, then every embedded document, content under ``X-TIKA:content``), ``PUT
/detect/stream`` and ``GET /version``. Metadata keys are Tika's where Tika has one
(``dc:title``, ``dc:creator``, ``dcterms:created``, ``xmpTPg:NPages``...). The file name a
client sends in Content-Disposition (as tika-python does) is used as a hint, as Tika does;
the password comes in Tika's ``Password`` header.
"""

from __future__ import annotations

import html
import re
from typing import Any

try:
    from fastapi import APIRouter, Request
    from fastapi.responses import JSONResponse, PlainTextResponse, Response
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError(f"textsieve serve needs the server extra: pip install "
                      f"'textsieve[server]' ({exc})") from exc

from .. import __version__
from ..model import Document, Status
from .routes import Param, chosen, params
from .service import document_error, service_of

ACCEPT = Param("accept", where="header")
PASSWORD = Param.of("password", "password", where="header")

router = APIRouter(tags=["tika"])

_FILENAME = re.compile(r"""filename\*?=(?:UTF-8'')?"?([^";]+)"?""", re.IGNORECASE)


def _filename(disposition: str | None) -> str | None:
    """The file name of a Content-Disposition header (a hint for detection), or None."""
    if not disposition:
        return None
    from urllib.parse import unquote

    m = _FILENAME.search(disposition)
    if not m:
        return None
    name = unquote(m.group(1)).strip()
    # tika-python without rfc6266 formats bytes into the header: filename=b'report.pdf'.
    if len(name) > 3 and name[:2] in ("b'", 'b"') and name[-1] == name[1]:
        name = name[2:-1]
    return name.replace("\\", "/").rsplit("/", 1)[-1][:255] or None


def tika_metadata(doc: Document, path: str | None = None) -> dict[str, Any]:
    """One document's metadata under Tika's key names."""
    m = doc.metadata
    out: dict[str, Any] = {"Content-Type": doc.mime_type}
    if doc.name:
        out["resourceName"] = doc.name
    if doc.size is not None:
        out["Content-Length"] = str(doc.size)
    pairs = {"dc:title": doc.title, "dc:creator": m.author, "dcterms:created": m.created,
             "dcterms:modified": m.modified, "dc:language": m.language,
             "xmpTPg:NPages": None if m.page_count is None else str(m.page_count),
             "dc:subject": m.subject, "meta:keyword": m.keywords,
             "Content-Encoding": m.encoding}
    out.update({k: v for k, v in pairs.items() if v})
    if doc.extractor:
        out["X-TIKA:Parsed-By"] = ["textsieve", doc.extractor]
    if doc.timings.get("total") is not None:
        out["X-TIKA:parse_time_millis"] = str(int(doc.timings["total"] * 1000))
    if doc.status is Status.ERROR and doc.error is not None:
        out["X-TIKA:EXCEPTION:runtime"] = f"{doc.error.kind}: {doc.error.message}"
    if path is not None:
        out["X-TIKA:embedded_resource_path"] = path
    return out


def xhtml(doc: Document, text: str) -> str:
    """Tika's XHTML answer: metadata as <meta>, the text as paragraphs, all escaped."""
    metas = "".join(
        f'<meta name="{html.escape(k)}" content="{html.escape(str(v))}"/>'
        for k, v in tika_metadata(doc).items() if not isinstance(v, list))
    title = f"<title>{html.escape(doc.title)}</title>" if doc.title else "<title/>"
    paras = "".join(f"<p>{html.escape(p.strip())}</p>\n"
                    for p in re.split(r"\n\s*\n", text) if p.strip())
    return ('<html xmlns="http://www.w3.org/1999/xhtml">\n<head>'
            f"{metas}{title}</head>\n<body>{paras}</body></html>")


async def _extract(request: Request) -> Document:
    service = service_of(request)
    options = service.options_for(chosen(request, (PASSWORD,)))
    name = _filename(request.headers.get("content-disposition"))
    async with service.upload(request) as data:
        return await service.extract(data, name, options)


@router.put("/tika", openapi_extra=params(ACCEPT, PASSWORD),
            response_class=PlainTextResponse,
            responses={200: {"content": {"text/plain": {}, "text/html": {}}}})
async def tika(request: Request) -> Response:
    """The text (with every embedded document's), or XHTML when ``Accept: text/html``."""
    accept = ACCEPT.get(request)
    doc = await _extract(request)
    if doc.status is Status.ERROR:
        raise document_error(doc)
    text = doc.full_text()
    if accept and ("html" in accept or "xml" in accept):
        return Response(xhtml(doc, text), media_type="text/html; charset=utf-8")
    return PlainTextResponse(text)


@router.put("/meta", openapi_extra=params(PASSWORD))
async def meta(request: Request) -> dict[str, Any]:
    """The document's metadata under Tika's key names."""
    doc = await _extract(request)
    if doc.status is Status.ERROR:
        raise document_error(doc)
    return tika_metadata(doc)


async def _rmeta(request: Request, handler: str) -> Response:
    doc = await _extract(request)
    out: list[dict[str, Any]] = []

    def add(d: Document, path: str | None) -> None:
        entry = tika_metadata(d, path)
        if handler == "text":
            # Each text ends with its line break, as Tika's: clients join them as they are.
            entry["X-TIKA:content"] = d.text if not d.text or d.text.endswith("\n") \
                else d.text + "\n"
        elif handler != "ignore":
            entry["X-TIKA:content"] = xhtml(d, d.text)
        out.append(entry)
        for i, child in enumerate(d.children):
            add(child, f"{path or ''}/{child.name or f'embedded-{i}'}")

    add(doc, None)
    return JSONResponse(out)


@router.put("/rmeta", openapi_extra=params(PASSWORD))
async def rmeta(request: Request) -> Response:
    """The container first, then each embedded document: metadata and XHTML content."""
    return await _rmeta(request, "xml")


@router.put("/rmeta/{handler}", openapi_extra=params(PASSWORD))
async def rmeta_handler(request: Request, handler: str) -> Response:
    """Like /rmeta; ``text`` gives plain text content, ``ignore`` none, ``xml``/``html``
    XHTML."""
    if handler not in ("text", "xml", "html", "ignore"):
        return JSONResponse({"error": {"kind": "not_found",
                                       "message": f"no content handler {handler!r}"}},
                            status_code=404)
    return await _rmeta(request, handler)


@router.put("/detect/stream", openapi_extra=params(), response_class=PlainTextResponse)
async def detect_stream(request: Request) -> Response:
    """The MIME type, as text/plain."""
    service = service_of(request)
    name = _filename(request.headers.get("content-disposition"))
    async with service.upload(request) as data:
        doc = await service.extract(data, name, service.options, detect_only=True)
    if doc.status is Status.ERROR:
        raise document_error(doc)
    return PlainTextResponse(doc.mime_type)


async def version() -> Response:
    """What Tika's /version answers, naming what really answers."""
    return PlainTextResponse(f"textsieve {__version__} (Apache Tika compatible)")
