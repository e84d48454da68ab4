""""Extract this URI to that URI" events, shaped like the lambda-text-extractor's, so the
same event drives ``POST /v1/jobs`` and a serverless function (``textsieve.handler``).

An event::

    {"document_uri": "s3://in/report.pdf",          # required
     "text_uri": "s3://out/report.pdf.txt",          # default <document_uri>.txt
     "temp_uri_prefix": "s3://tmp/report/",          # where page events put their pages
     "disable_ocr": false,
     "create_searchable_pdf": false,
     "searchable_pdf_uri": "...",                    # default <document_uri>.searchable.pdf
     "page": 3}                                      # OCR just this page

A whole-document event writes the text to ``text_uri`` with ``missing_text_pages`` (pages
left without text, a JSON list such as ``[2,5]``) in the object's metadata, and, when
asked, a searchable PDF with ``missing_searchable_pdf_pages``. A ``page`` event OCRs that
one page and writes it to ``<temp_uri_prefix>/page-NNNNN.txt``: a long scan fans out one
event per page, and a ``merge`` event (``"merge": N`` pages) puts them together in
``text_uri``.
The reply gives the status, the timings and the missing pages; a failure is a reply with
a typed error, never an exception.

How a document is extracted is the caller's: the service passes its isolated worker pool,
the serverless handler extracts in an isolated process of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from . import uris
from .errors import UsageError
from .model import Document, ErrorKind, Status
from .options import Options

# (data, name, options, mode) -> a Document, or for mode "searchable" (pdf, report)
Runner = Callable[[bytes, str | None, Options, str], Any]

MAX_PAGES = 10_000


class EventError(UsageError):
    """An event that is not one: a missing or mistyped field."""


@dataclass(frozen=True)
class Event:
    document_uri: str
    text_uri: str
    searchable_pdf_uri: str
    temp_uri_prefix: str | None = None
    disable_ocr: bool = False
    create_searchable_pdf: bool = False
    page: int | None = None
    merge: int | None = None  # merge this many page texts from temp_uri_prefix

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Event:
        """Check an event's fields and fill in the defaults; raises ``EventError``."""
        if not isinstance(raw, Mapping):
            raise EventError("an event is a JSON object")
        doc = raw.get("document_uri")
        if not isinstance(doc, str) or not doc:
            raise EventError("document_uri is required (a string)")

        def text(key: str, default: str | None) -> str | None:
            value = raw.get(key, default)
            if value is not None and not isinstance(value, str):
                raise EventError(f"{key} must be a string")
            return value

        def flag(key: str) -> bool:
            value = raw.get(key, False)
            if not isinstance(value, bool):
                raise EventError(f"{key} must be true or false")
            return value

        def number(key: str) -> int | None:
            value = raw.get(key)
            if value is None:
                return None
            if not isinstance(value, int) or isinstance(value, bool) or \
                    not 1 <= value <= MAX_PAGES:
                raise EventError(f"{key} must be a page number from 1 to {MAX_PAGES}")
            return value

        event = cls(document_uri=doc, text_uri=text("text_uri", doc + ".txt") or doc + ".txt",
                    searchable_pdf_uri=text("searchable_pdf_uri", doc + ".searchable.pdf")
                    or doc + ".searchable.pdf",
                    temp_uri_prefix=text("temp_uri_prefix", None),
                    disable_ocr=flag("disable_ocr"),
                    create_searchable_pdf=flag("create_searchable_pdf"),
                    page=number("page"), merge=number("merge"))
        if (event.page or event.merge) and not event.temp_uri_prefix:
            raise EventError("page and merge events need temp_uri_prefix")
        return event

    def page_uri(self, number: int) -> str:
        assert self.temp_uri_prefix is not None
        return f"{self.temp_uri_prefix.rstrip('/')}/page-{number:05d}.txt"


def _name(uri: str) -> str | None:
    return PurePosixPath(urlsplit(uri).path).name or None


def _pages(numbers: list[int]) -> str:
    """Page numbers as object metadata: a JSON list ("[]" when none: some stores, SeaweedFS
    among them, drop a metadata key whose value is empty)."""
    return "[" + ",".join(str(n) for n in numbers) + "]"


def handle(raw: Mapping[str, Any], options: Options, runner: Runner, *,
           roots: tuple[str, ...] = ()) -> dict[str, Any]:
    """Do what one event asks; the reply says how it went (``status`` ok, empty or error,
    with a typed ``error``)."""
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    reply: dict[str, Any] = {"status": "error"}
    try:
        event = Event.parse(raw)
        reply.update(document_uri=event.document_uri, text_uri=event.text_uri)
        opts = options.with_(ocr="never") if event.disable_ocr else options
        if event.merge:
            return _merge(event, opts, reply, timings, roots)
        t = time.perf_counter()
        blob = uris.read(event.document_uri, opts, roots=roots)
        timings["read"] = time.perf_counter() - t
        name = _name(event.document_uri)
        t = time.perf_counter()
        if event.page:
            doc = runner(blob.data, name, opts, f"page:{event.page}")
            timings["extract"] = time.perf_counter() - t
            _check(doc)
            reply["text_uri"] = uri = event.page_uri(event.page)
            uris.write(uri, doc.text.encode(), opts, roots=roots,
                       content_type="text/plain; charset=utf-8",
                       metadata={"missing_text_pages": _pages(
                           [] if doc.text.strip() else [event.page])})
            reply.update(status=str(doc.status), page=event.page,
                         missing_text_pages=[] if doc.text.strip() else [event.page])
            return reply
        doc = runner(blob.data, name, opts, "extract")
        timings["extract"] = time.perf_counter() - t
        _check(doc)
        missing = [p.number for p in doc.pages if not p.text.strip()]
        t = time.perf_counter()
        uris.write(event.text_uri, doc.full_text().encode(), opts, roots=roots,
                   content_type="text/plain; charset=utf-8",
                   metadata={"missing_text_pages": _pages(missing)})
        timings["write"] = time.perf_counter() - t
        reply.update(status=str(doc.status), mime_type=doc.mime_type,
                     page_count=doc.metadata.page_count, missing_text_pages=missing)
        if event.create_searchable_pdf and doc.mime_type == "application/pdf":
            t = time.perf_counter()
            made = runner(blob.data, name, opts.with_(ocr="auto"), "searchable")
            _check(made)
            pdf, report = made
            lost = list(report.get("missing_pages", []))
            uris.write(event.searchable_pdf_uri, pdf, opts, roots=roots,
                       content_type="application/pdf",
                       metadata={"missing_searchable_pdf_pages": _pages(lost)})
            timings["searchable_pdf"] = time.perf_counter() - t
            reply.update(searchable_pdf_uri=event.searchable_pdf_uri,
                         missing_searchable_pdf_pages=lost)
        return reply
    except (uris.UriError, _Failed) as exc:
        reply["error"] = {"kind": str(exc.kind), "message": str(exc)}
        return reply
    except EventError as exc:
        reply["error"] = {"kind": "bad_event", "message": exc.message}
        return reply
    finally:
        timings["total"] = time.perf_counter() - t0
        reply["timings"] = {k: round(v, 4) for k, v in timings.items()}


class _Failed(Exception):
    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _check(result: Any) -> None:
    if isinstance(result, Document) and result.status is Status.ERROR:
        assert result.error is not None
        raise _Failed(result.error.kind, result.error.message)


def _merge(event: Event, options: Options, reply: dict[str, Any],
           timings: dict[str, float], roots: tuple[str, ...]) -> dict[str, Any]:
    """Put the page texts of a fanned-out scan back together, in page order."""
    assert event.merge is not None
    t = time.perf_counter()
    texts: list[str] = []
    missing: list[int] = []
    for n in range(1, event.merge + 1):
        try:
            blob = uris.read(event.page_uri(n), options, roots=roots)
        except uris.UriError as exc:
            if exc.kind is not ErrorKind.NOT_FOUND:
                raise
            missing.append(n)
            continue
        text = blob.data.decode("utf-8", "replace")
        if not text.strip():
            missing.append(n)
        texts.append(text.strip())
    uris.write(event.text_uri, "\n\n".join(t for t in texts if t).encode(), options,
               roots=roots, content_type="text/plain; charset=utf-8",
               metadata={"missing_text_pages": _pages(missing)})
    timings["merge"] = time.perf_counter() - t
    reply.update(status="ok" if len(missing) < event.merge else "empty",
                 page_count=event.merge, missing_text_pages=missing)
    return reply


def local_runner(data: bytes, name: str | None, options: Options, mode: str) -> Any:
    """Run a job in an isolated process of this one (the serverless handler's way: a
    function instance runs one event at a time): one forked child with a pool worker's
    guarantees, or, where threads run, the forkserver-started helper."""
    from .forking import isolated_document
    from .server._job import run_job

    if mode == "extract":
        import textsieve

        return textsieve.extract(data, name=name, options=options, isolate=True)
    return isolated_document(run_job, data, name, options, mode, name=name,
                             timeout=options.timeout, memory=options.memory_limit)
