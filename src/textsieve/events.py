""""Extract this URI to that URI" events, shaped like the lambda-text-extractor's, so the
same event drives ``POST /v1/jobs`` and a serverless function (``textsieve.handler``).

An event::

    {"document_uri": "s3://in/report.pdf",          # required
     "text_uri": "s3://out/report.pdf.txt",          # default <document_uri>.txt
     "temp_uri_prefix": "s3://tmp/report/",          # where page events put their pages
     "disable_ocr": false,
     "create_searchable_pdf": false,
     "searchable_pdf_uri": "...",                    # default <document_uri>.searchable.pdf
     "page": 3,                                      # OCR just this page
     "overwrite": false}                             # replace file:// targets there

A whole-document event writes the text to ``text_uri`` with ``missing_text_pages`` (pages
left without text, a JSON list such as ``[2,5]``) in the object's metadata, and, when
asked, a searchable PDF with ``missing_searchable_pdf_pages``. A ``page`` event OCRs that
one page and writes it to ``<temp_uri_prefix>/page-NNNNN.txt``: a long scan fans out one
event per page, and a ``merge`` event (``"merge": N`` pages) puts them together in
``text_uri``.
The reply gives the status, the timings and the missing pages; a failure is a reply with
a typed error, never an exception.

What an event writes never replaces the document it reads (an event naming it as a target
is a ``bad_event``; a ``file://`` target that is the same file under another name is
refused), and a ``file://`` target that is there already is replaced only with
``"overwrite": true`` (else ``exists``); see ``uris.write`` for how files are written.
A merge lists what the page events left (one listing of the prefix on s3:// and file://)
and reads those pages a few at a time, so 10,000 pages that never came back cost one
listing, not 10,000 requests.

How a document is extracted is the caller's (a ``Runner``, given typed work items of
``core``): the service passes its isolated worker pool, the serverless handler extracts in
an isolated process of its own (``local_runner``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from . import uris
from .core import (
    EXTRACT,
    Extract,
    Isolation,
    OcrPage,
    Result,
    Searchable,
    SearchableCopy,
    Work,
)
from .errors import UsageError
from .model import Document, ErrorKind, Status
from .options import Options

# (data, name, options, work) -> the work item's result: a Document for ``Extract`` (its
# pages OCRed) and ``OcrPage``, a ``SearchableCopy`` (or a failed Document) for
# ``Searchable``.
Runner = Callable[[bytes, str | None, Options, Work], Result]

MAX_PAGES = 10_000
MERGE_READERS = 8  # page texts a merge reads at once
_PAGE_NAME = re.compile(r"page-(\d{5,})\.txt")


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
    overwrite: bool = False  # file:// targets there already are replaced

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
                    page=number("page"), merge=number("merge"),
                    overwrite=flag("overwrite"))
        if (event.page or event.merge) and not event.temp_uri_prefix:
            raise EventError("page and merge events need temp_uri_prefix")
        targets = [event.text_uri]
        if event.create_searchable_pdf:
            targets.append(event.searchable_pdf_uri)
        if event.page:
            targets = [event.page_uri(event.page)]
        if not event.merge and _same(event.document_uri, targets):
            raise EventError("a target URI names the document itself; it is never "
                             "written over")
        return event

    def page_uri(self, number: int) -> str:
        assert self.temp_uri_prefix is not None
        return f"{self.temp_uri_prefix.rstrip('/')}/page-{number:05d}.txt"


def _same(uri: str, others: list[str]) -> bool:
    """Whether one of ``others`` names the same object as ``uri`` (as written, ``..``
    and doubled slashes aside; a file reached by another name is ``uris.write``'s)."""
    import posixpath

    def norm(u: str) -> tuple[str, str, str]:
        p = urlsplit(u)
        return p.scheme.lower(), p.netloc.lower(), posixpath.normpath(p.path or "/")

    mine = norm(uri)
    return any(norm(o) == mine for o in others)


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
            doc = _document(runner(blob.data, name, opts, OcrPage(event.page)))
            timings["extract"] = time.perf_counter() - t
            reply["text_uri"] = uri = event.page_uri(event.page)
            uris.write(uri, doc.text.encode(), opts, roots=roots,
                       overwrite=event.overwrite, protect=blob.identity,
                       content_type="text/plain; charset=utf-8",
                       metadata={"missing_text_pages": _pages(
                           [] if doc.text.strip() else [event.page])})
            reply.update(status=str(doc.status), page=event.page,
                         missing_text_pages=[] if doc.text.strip() else [event.page])
            return reply
        doc = _document(runner(blob.data, name, opts, EXTRACT))
        timings["extract"] = time.perf_counter() - t
        missing = [p.number for p in doc.pages if not p.text.strip()]
        t = time.perf_counter()
        uris.write(event.text_uri, doc.full_text().encode(), opts, roots=roots,
                   overwrite=event.overwrite, protect=blob.identity,
                   content_type="text/plain; charset=utf-8",
                   metadata={"missing_text_pages": _pages(missing)})
        timings["write"] = time.perf_counter() - t
        reply.update(status=str(doc.status), mime_type=doc.mime_type,
                     page_count=doc.metadata.page_count, missing_text_pages=missing)
        if event.create_searchable_pdf and doc.mime_type == "application/pdf":
            t = time.perf_counter()
            made = runner(blob.data, name, opts.with_(ocr="auto"), Searchable())
            _check(made)
            if not isinstance(made, SearchableCopy):
                raise _Failed(ErrorKind.INTERNAL, f"no searchable copy: {type(made).__name__}")
            lost = list(made.report.get("missing_pages", []))
            uris.write(event.searchable_pdf_uri, made.pdf, opts, roots=roots,
                       overwrite=event.overwrite, protect=blob.identity,
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


def _document(result: Result) -> Document:
    """A runner's Document, its failure raised as ``_Failed``."""
    _check(result)
    if not isinstance(result, Document):
        raise _Failed(ErrorKind.INTERNAL, f"not a document: {type(result).__name__}")
    return result


def _merge(event: Event, options: Options, reply: dict[str, Any],
           timings: dict[str, float], roots: tuple[str, ...]) -> dict[str, Any]:
    """Put the page texts of a fanned-out scan back together, in page order."""
    assert event.merge is not None
    t = time.perf_counter()
    there = _pages_there(event, options, roots)
    wanted = [n for n in range(1, event.merge + 1) if there is None or n in there]

    def read(n: int) -> str | None:
        try:
            return uris.read(event.page_uri(n), options, roots=roots).data.decode(
                "utf-8", "replace")
        except uris.UriError as exc:
            if exc.kind is not ErrorKind.NOT_FOUND:
                raise
            return None

    with ThreadPoolExecutor(max_workers=MERGE_READERS,
                            thread_name_prefix="textsieve-merge") as pool:
        got = dict(zip(wanted, pool.map(read, wanted), strict=True))
    texts: list[str] = []
    missing: list[int] = []
    for n in range(1, event.merge + 1):
        text = got.get(n)
        if text is None or not text.strip():
            missing.append(n)
        if text is not None:
            texts.append(text.strip())
    uris.write(event.text_uri, "\n\n".join(t for t in texts if t).encode(), options,
               roots=roots, overwrite=event.overwrite,
               content_type="text/plain; charset=utf-8",
               metadata={"missing_text_pages": _pages(missing)})
    timings["merge"] = time.perf_counter() - t
    reply.update(status="ok" if len(missing) < event.merge else "empty",
                 page_count=event.merge, missing_text_pages=missing)
    return reply


def _pages_there(event: Event, options: Options, roots: tuple[str, ...]) -> set[int] | None:
    """The page numbers whose texts are under ``temp_uri_prefix``, by one listing (s3://,
    file://); None where a store cannot list (http(s)://: each page is asked for)."""
    assert event.temp_uri_prefix is not None
    prefix = event.temp_uri_prefix.rstrip("/") + "/page-"
    scheme = urlsplit(prefix).scheme.lower()
    names: list[str] = []
    if scheme == "s3":
        names = [o.key.rsplit("/", 1)[-1] for o in uris.list_s3(prefix, options)]
    elif scheme == "file":
        import os

        folder = uris.under_roots(prefix.rsplit("/", 1)[0], roots)
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            names = []
        except OSError as exc:
            raise uris.UriError(ErrorKind.NOT_FOUND, f"{event.temp_uri_prefix}: "
                                f"{exc.strerror or exc}") from exc
    else:
        return None
    return {int(m.group(1)) for n in names if (m := _PAGE_NAME.fullmatch(n))}


def local_runner(data: bytes, name: str | None, options: Options, work: Work) -> Result:
    """Run a job in an isolated process of this one (the serverless handler's way: a
    function instance runs one event at a time): a document through the executor that
    ``options.executor`` names (its pages spread over every core), any other work item in
    one forked child with a pool worker's guarantees (or, where threads run, the
    forkserver-started helper)."""
    from .core import extract, perform_at

    if isinstance(work, Extract):
        return extract(data, name, options=options, isolation=Isolation.of(options))
    return perform_at(work, data, name, options, Isolation.CHILD)
