"""The one road for a document: what to do with it (typed work items and the steps that
fan a scan's pages out and merge them back) apart from where it runs (an isolation level).

Every entry point ends here: ``textsieve.extract`` (in process, or a pool with
``isolate=True``), ``textsieve extract FILE`` (one forked child, a pool for a long scan),
the events of ``POST /v1/jobs`` and of the serverless handler, the REST service's worker
pool and ``textsieve run``'s executor. Nothing else extracts a document.

- **Work items** say what is asked: ``Extract`` (the whole document), ``Detect`` (its type
  only), ``OcrPage`` (the text of page N, as a Document), ``Searchable`` (a copy of a PDF
  with a text layer), and, inside a flow, ``DocumentPage`` (one pending page of a document
  being extracted). ``perform`` does one in this process and never raises for a bad input.
- **Results** are typed: an ``Extract`` gives ``Extracted``, the Document and the pages it
  left for OCR (never in the user-visible metadata); the caller OCRs them where it is
  (``OCR_FAN_OUT_PAGES``: the one threshold), or spreads them over an executor.
- **Isolation levels** (``Isolation``) say where: in this process, one forked child, a pool
  of worker processes, a Ray cluster. The executors themselves are plugins named in
  ``EXECUTORS`` (``run/pool.py``, ``run/ray_executor.py``), loaded only when a level needs
  them: they implement the ``Executor`` protocol of this module, so nothing here imports
  them (datatrove's pipeline steps and executors, kept apart).

``read_document`` is the in-process reader of one input (detect, dispatch, render,
classify), and it never raises for a bad input: failures become the Document's status and
typed error.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, NamedTuple, Protocol, TypeAlias, cast

from . import detection as d
from .bytesource import Source, os_problem, read_capped
from .extractors import (
    FALLBACK_KINDS as _FALLBACK_KINDS,
)
from .extractors import (
    REGISTRY,
    REGISTRY_TAG,
    UNSUPPORTED,
    Context,
    extractors_for,
)
from .forking import in_worker
from .kernels.language import fill_language
from .model import Document, ErrorInfo, ErrorKind, ExtractionError, Page, Status
from .options import Options
from .render import Builder

if TYPE_CHECKING:
    import io

    from .ocr import PageOcr
    from .ocr.searchable import PageReader

Input = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes] | Source

# A scan with fewer pages to OCR than this is OCRed where it was read (this process, the
# command's one child): starting a pool for one or two pages costs more than it spreads.
# From this many on, its pages spread over the cores of a pool, under the one deadline of
# the document. The only place this is decided.
OCR_FAN_OUT_PAGES = 3


# -- work items and their results --------------------------------------------------------
# Immutable records, not dataclasses: this module is on the path of every
# `textsieve extract FILE`, and a dataclass costs ~0.3 ms to make at import, a record
# ~0.05 ms, a class without fields nothing.


class _Fieldless:
    """A work item that needs no parameter: equal to any other of its kind."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Extract(_Fieldless):
    """The whole document. Its result is ``Extracted``: the pages it needs OCRed are left
    pending, for the caller to read here or to spread over an executor."""

    __slots__ = ()


class Detect(_Fieldless):
    """Only the document's type (a Document with ``mime_type`` and status ``empty``)."""

    __slots__ = ()


class Searchable(_Fieldless):
    """A copy of a PDF with an invisible text layer on the pages that need OCR: a
    ``SearchableCopy`` (or a failed Document)."""

    __slots__ = ()


class OcrPage(NamedTuple):
    """The OCR of page (or frame) ``number`` of a document, as a Document with that page's
    text; a page past the end is an ``out_of_range`` error."""

    number: int


class DocumentPage(NamedTuple):
    """One pending page of a document being extracted (a flow's fan-out unit): an
    ``ocr.PageOcr``, with its text-only PDF page when ``want_pdf`` (a searchable copy)."""

    number: int
    mime: str
    want_pdf: bool = False


Work = Extract | Detect | OcrPage | Searchable | DocumentPage
EXTRACT = Extract()


class Extracted(NamedTuple):
    """An ``Extract``'s result: the Document and the pages it left for OCR (1-based)."""

    document: Document
    pending: tuple[int, ...] = ()


class SearchableCopy(NamedTuple):
    """A ``Searchable``'s result: the PDF's bytes and the report (pages OCRed, kept and
    missing, see ``ocr.searchable.make_searchable``)."""

    pdf: bytes
    report: dict[str, Any]


# What a work item gives: ``Extract`` an ``Extracted``, ``DocumentPage`` an ``ocr.PageOcr``,
# ``Searchable`` a ``SearchableCopy``, the others a Document; a failure is a failed Document
# (a failed ``PageOcr`` for a ``DocumentPage``).
Result: TypeAlias = "Extracted | Document | SearchableCopy | PageOcr"


# -- one input, in this process --------------------------------------------------------------

def open_input(obj: Input, name: str | None, options: Options) -> Source:
    """The Source of an input; a file object is read here, at most ``max_file_size``
    bytes (ExtractionError ``too_large`` past it)."""
    if isinstance(obj, Source):
        return obj
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return Source.from_bytes(bytes(obj), name=name, max_size=options.max_file_size)
    if isinstance(obj, (str, os.PathLike)):
        src = Source.from_path(obj, max_size=options.max_file_size)
        if name:
            src.name = name
        return src
    if hasattr(obj, "read"):
        data = read_capped(cast("BinaryIO", obj), options.max_file_size)
        return Source.from_bytes(data, name=name or stream_name(obj),
                                 max_size=options.max_file_size)
    raise TypeError(f"cannot extract from {type(obj).__name__}")


def stream_name(obj: object) -> str | None:
    """The file name of an open file object, as a hint (``open(fd)`` has a number)."""
    name = getattr(obj, "name", None)
    return Path(name).name or None if isinstance(name, str) else None


def display_name(obj: object, name: str | None) -> str | None:
    """The name a failure record of ``obj`` carries: the one given, else a path's base."""
    if name:
        return name
    if isinstance(obj, (str, os.PathLike)):
        return os.path.basename(os.fspath(obj))
    return None


# Exceptions that only damaged input raises (a bad deflate stream, a ZIP that lies about
# itself, a truncated LZMA stream): corrupt, not a bug, even where no parser mapped it.
# zipfile also says NotImplementedError for a directory that asks for "version 15.7";
# textsieve itself never raises it.
# Only the modules a parser already imported are asked: a BadZipFile cannot come from a
# zipfile that was never imported, and importing it (and lzma) just for this ``except``
# would charge every plain text file's command start with them.
_DAMAGE_NAMES = (("zlib", "error"), ("zipfile", "BadZipFile"), ("lzma", "LZMAError"))


def _damage() -> tuple[type[BaseException], ...]:
    return (NotImplementedError, *(getattr(sys.modules[mod], name)
                                   for mod, name in _DAMAGE_NAMES if mod in sys.modules))


# Up to this size CPython's own SHA-256 (~300 MB/s) is done before hashlib could even load
# OpenSSL (~2.5 ms, paid by every `textsieve extract FILE` of a shell loop); above it,
# OpenSSL's (~1.7 GB/s) wins.
BUILTIN_SHA_MAX = 512 * 1024


@functools.cache
def _builtin_sha256() -> Callable[[bytes], Any] | None:
    for module in ("_sha256", "_sha2"):  # _sha2 from Python 3.12 on
        try:
            sha: Callable[[bytes], Any] = importlib.import_module(module).sha256
            return sha
        except (ImportError, AttributeError):
            continue
    return None


def _sha256(src: Source) -> str:
    small = _builtin_sha256() if src.size <= BUILTIN_SHA_MAX else None
    if small is not None:
        return str(small(src.read()).hexdigest())  # read (and kept) by the extractor anyway
    import hashlib

    if src.data_ is not None:
        return hashlib.sha256(src.data_).hexdigest()
    with src.open() as f:  # one reused buffer, no copies
        return hashlib.file_digest(cast("io.BufferedReader", f), "sha256").hexdigest()


def extract_source(src: Source, options: Options, ctx: Context | None = None, *,
                   page_workers: int | None = None) -> Document:
    """Extract one input in this process, its OCR pages read here, one after the other
    (``read_document`` leaves them to the caller)."""
    return read_document(src, options, ctx, page_workers=page_workers).document


def read_document(src: Source, options: Options, ctx: Context | None = None, *,
                  defer_ocr: bool = False, page_workers: int | None = None) -> Extracted:
    """Extract one input in this process. With ``defer_ocr`` the pages to OCR are left
    pending in the result, for the caller to read or to spread out; without, they are read
    here. ``page_workers``: processes a long document may fork to read its pages; default
    all cores, except in a worker process (whose siblings are busy with other inputs)."""
    if ctx is None:
        if page_workers is None:
            page_workers = 1 if in_worker() else options.worker_count
        ctx = Context(options, page_workers=page_workers)
    if ctx.nested is None:
        ctx.nested = _nested
    doc = Document(name=src.name)
    pending: tuple[int, ...] = ()
    t0 = time.perf_counter()
    try:
        src.settle()  # a pipe is read once, here
        doc.size = src.size
        src.check_size()
        doc.sha256 = _sha256(src)
        if doc.sha256 in ctx.ancestors:
            raise ExtractionError(ErrorKind.CORRUPT, "container contains itself")
        ctx.ancestors = (*ctx.ancestors, doc.sha256)
        det = d.detect(src)
        doc.mime_type = det.mime
        doc.metadata.extra["detected_by"] = det.how
        if det.note:
            doc.warnings.append(det.note)
        doc.timings["detect"] = time.perf_counter() - t0
        pending = _dispatch(src, ctx, doc, det)
        if pending and not defer_ocr:
            finish_ocr(doc, _ocr_here(src, doc, pending, options))
            pending = ()
    except ExtractionError as exc:
        doc.status, doc.error = Status.ERROR, ErrorInfo(exc.kind, exc.message)
    except OSError as exc:
        doc.status = Status.ERROR
        if src.path is not None and exc.filename is not None and \
                os.fspath(exc.filename) == os.fspath(src.path):
            doc.error = os_problem(os.fspath(src.path), exc)  # the input itself: typed
        elif isinstance(exc, FileNotFoundError):
            doc.error = ErrorInfo(ErrorKind.NOT_FOUND, str(exc))
        else:  # met inside a parser or a tool: a bug until shown otherwise
            doc.error = ErrorInfo(ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}")
    except MemoryError:
        doc.status = Status.ERROR
        doc.error = ErrorInfo(ErrorKind.TOO_LARGE, "ran out of memory (memory limit)")
    except RecursionError:
        doc.status = Status.ERROR
        doc.error = ErrorInfo(ErrorKind.CORRUPT, "structure nested too deeply to parse")
    except _damage() as exc:  # raised only by damaged data, wherever a parser met it
        doc.status = Status.ERROR
        doc.error = ErrorInfo(ErrorKind.CORRUPT, f"damaged data: {type(exc).__name__}: {exc}")
    except Exception as exc:  # a parser bug or an unexpected library error: record it
        doc.status = Status.ERROR
        doc.error = ErrorInfo(ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}")
        import traceback  # here: only a bug pays for it

        doc.warnings.append(traceback.format_exc(limit=6))
    except BaseException as exc:
        # A Rust parser (calamine) that panics on damaged data raises pyo3's PanicException,
        # a BaseException: the input's damage, and it must not escape to the caller.
        if type(exc).__name__ != "PanicException":
            raise
        doc.status = Status.ERROR
        doc.error = ErrorInfo(ErrorKind.CORRUPT, f"the parser gave up on damaged data: {exc}")
    finally:
        src.close()
    doc.timings["total"] = time.perf_counter() - t0
    return Extracted(doc, pending if doc.status is not Status.ERROR else ())


def _nested(src: Source, ctx: Context) -> Document:
    """A member, attachment or embedded file (``Context.child``): read whole, here."""
    return read_document(src, ctx.options, ctx).document


def _dispatch(src: Source, ctx: Context, doc: Document, det: d.Detection) -> tuple[int, ...]:
    """Run the extractors of the detected type, first success wins; the pages the winner
    left for OCR."""
    if det.mime == d.EMPTY:
        doc.status = Status.EMPTY
        return ()
    if not REGISTRY.get(det.mime):
        doc.extractor = REGISTRY_TAG  # a later textsieve may read this format
        msg = UNSUPPORTED.get(det.mime, f"no extractor for {det.mime}")
        raise ExtractionError(ErrorKind.UNSUPPORTED, f"{msg} ({det.note})" if det.note else msg)
    last: ExtractionError | None = None
    for tag, fn in extractors_for(det.mime):
        doc.extractor = tag  # failures are versioned too: a newer extractor retries them
        out = Builder()
        trial = Document(name=doc.name, mime_type=doc.mime_type, metadata=doc.metadata,
                         warnings=list(doc.warnings))
        ctx.ocr_pending = []
        t = time.perf_counter()
        try:
            fn(src, ctx, trial, out)
        except ExtractionError as exc:
            if exc.kind not in _FALLBACK_KINDS:
                raise
            if last is None or last.kind in (ErrorKind.MISSING_TOOL, ErrorKind.UNSUPPORTED):
                # Keep the most telling error: a parser's over "not installed", and the
                # verdict of a reader that takes this kind of file over "not mine" from
                # one that does not (our Word 97 reader on a damaged Word 95 file).
                last = exc
            continue
        trial.text, trial.markdown, trial.pages = out.build()
        trial.timings.update(doc.timings)
        trial.timings["extract"] = time.perf_counter() - t
        trial.extractor = tag
        doc.__dict__.update({k: v for k, v in trial.__dict__.items()
                             if k not in ("size", "sha256")})
        doc.status = _status(doc)
        if not ctx.ocr_pending:  # else once its pages are read (finish_ocr): a language
            fill_language(doc)  # set from part of the text would stay
        return tuple(ctx.ocr_pending)
    assert last is not None
    raise last


def _ocr_here(src: Source, doc: Document, pages: Sequence[int], options: Options
              ) -> list[PageOcr]:
    """OCR the pending pages of a document extracted in this process, one after the
    other (spreading them over processes is an executor's business)."""
    from .ocr import ocr_pages  # here, as in finish_ocr: most files have no page to OCR

    assert doc.mime_type is not None
    return ocr_pages(src, doc.mime_type, list(pages), options)


def finish_ocr(doc: Document, results: list[PageOcr]) -> None:
    """Merge OCR results into a document and decide its status again."""
    from .ocr import merge

    merge(doc, results)
    failed = [r for r in results if r.error]
    if not doc.text.strip() and failed and len(failed) == len(results):
        first = failed[0].error or "OCR failed"
        kind, _, message = first.partition(": ")
        try:
            error_kind = ErrorKind(kind)
        except ValueError:
            error_kind, message = ErrorKind.INTERNAL, first
        doc.status, doc.error = Status.ERROR, ErrorInfo(error_kind, f"OCR: {message}")
        return
    doc.status = _status(doc)
    fill_language(doc)  # now that the whole text is there


def _status(doc: Document) -> Status:
    if doc.status is Status.ERROR:
        return doc.status
    if doc.text.strip():
        return Status.OK
    if any(c.status is Status.OK for c in doc.children):
        return Status.OK
    return Status.EMPTY


# -- one work item, in this process: what every worker runs ---------------------------------

class Task:
    """One unit of work for an executor: a work item on one input. (A plain class with
    slots, not a dataclass: see the work items.)"""

    __slots__ = ("alone", "deadline", "key", "name", "obj", "options", "out", "page_workers",
                 "work")

    def __init__(self, key: int, obj: Input, name: str | None, work: Work = EXTRACT, *,
                 out: list[str] | None = None, page_workers: int = 1,
                 deadline: float | None = None, alone: bool = False,
                 options: Options | None = None) -> None:
        self.key = key
        self.obj = obj  # a path, bytes, or a Source holding fetched bytes
        self.name = name
        self.work = work
        self.out = out  # where its searchable copy goes (safe parts), if not by name
        self.page_workers = page_workers  # whole inputs: processes it may fork for pages
        # When the document's time is up (``Options.timeout`` from its start): it bounds
        # its OCR pages too, however many there are, not only their extraction. Monotonic
        # clock of the driver; set by the executor when the whole input starts.
        self.deadline = deadline
        self.alone = alone  # never batched with others (it failed in a batch once)
        # Its own options (a service request's choices), else the executor's.
        self.options = options

    def __repr__(self) -> str:
        return f"Task({self.key!r}, {self.name!r}, {self.work!r})"

    def with_options(self, options: Options | None) -> Task:
        """A copy of this task with other ``options``."""
        return Task(self.key, self.obj, self.name, self.work, out=self.out,
                    page_workers=self.page_workers, deadline=self.deadline, alone=self.alone,
                    options=options)

    @property
    def page(self) -> int | None:
        """The page number of a ``DocumentPage`` task; None for whole inputs."""
        return self.work.number if isinstance(self.work, DocumentPage) else None

    def limit(self, options: Options) -> float:
        """Seconds this task may run by itself (before the document's deadline)."""
        return options.timeout if self.page is None else options.ocr_page_timeout


def perform(task: Task, options: Options) -> Result:
    """Do one task's work item in this process, wherever it runs (a pool worker, a Ray
    task, a forked child, the caller): never raises for a bad input."""
    work = task.work
    try:
        if isinstance(work, Extract):
            # Top-level documents leave their OCR pages to the caller, which reads them or
            # spreads them over every worker of an executor.
            return read_document(open_input(task.obj, task.name, options), options,
                                 defer_ocr=True, page_workers=task.page_workers)
        if isinstance(work, DocumentPage):
            from .ocr import ocr_pages

            src = open_input(task.obj, task.name, options)
            return ocr_pages(src, work.mime, [work.number], options,
                             want_pdf=work.want_pdf)[0]
        if isinstance(work, Detect):
            with open_input(task.obj, task.name, options) as src:
                return Document(name=task.name, mime_type=d.detect(src).mime,
                                status=Status.EMPTY)
        if isinstance(work, OcrPage):
            return _page_document(open_input(task.obj, task.name, options), task.name,
                                  options, work.number)
        return _searchable(task.obj, options)
    except ExtractionError as exc:  # a page that cannot start (no language data)
        return failed(task, exc.kind, exc.message)
    except FileNotFoundError as exc:
        return failed(task, ErrorKind.NOT_FOUND, str(exc))
    except MemoryError:  # over the worker's memory cap (a page too big to decode)
        return failed(task, ErrorKind.TOO_LARGE, "ran out of memory (memory limit)")
    except Exception as exc:
        return failed(task, ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}")


def failed(task: Task, kind: ErrorKind, message: str) -> Result:
    """The result of a task that did not finish: a failed page, else a failed Document."""
    if task.page is not None:
        from .ocr import PageOcr

        return PageOcr(task.page, error=f"{kind}: {message}")
    return Document.failed(kind, message, name=display_name(task.obj, task.name))


def late_message(task: Task, options: Options) -> str:
    """Why a task that never started is a timeout."""
    if task.page is None:  # a request that waited its whole deadline in the queue
        return f"no worker was free within {options.timeout:g} s"
    return (f"the document's {options.timeout:g} s were over before page {task.page} "
            "was read")


def _page_document(src: Source, name: str | None, options: Options, number: int) -> Document:
    from .ocr import ocr_pages

    with src:
        mime = d.detect(src).mime
        count = _page_count(src, mime, options)
        if count is not None and number > count:
            return Document.failed(ErrorKind.OUT_OF_RANGE, f"page {number} is past the end: "
                                   f"the document has {count} page(s)", name=name)
        result = ocr_pages(src, mime, [number], options)[0]
    if result.error:
        return Document.failed(ErrorKind.CORRUPT, f"page {number}: {result.error}", name=name)
    doc = Document(name=name, mime_type=mime, text=result.text,
                   pages=[Page(number, result.text, ocr=True)])
    doc.status = Status.OK if result.text.strip() else Status.EMPTY
    return doc


def _page_count(src: Source, mime: str, options: Options) -> int | None:
    """How many pages (or frames) the OCR would see; None when it cannot tell (then the
    OCR of the page says what is wrong)."""
    from .ocr import raster

    try:
        with raster.open_pages(src, mime, options) as pager:
            pdf = getattr(pager, "pdf", None)
            if pdf is not None:
                return len(pdf)
            return int(getattr(getattr(pager, "im", None), "n_frames", 1))
    except Exception:
        return None


def make_searchable(src_path: str | os.PathLike[str], out_path: str | os.PathLike[str],
                    options: Options, pool: PageReader | None = None) -> dict[str, Any]:
    """``ocr.searchable.make_searchable`` with the extraction's own decision of which
    pages need OCR; ``pool`` (a ``run.pool.WorkerPool``) spreads them over its workers."""
    from .ocr.searchable import make_searchable as overlay

    def plan(src: Source) -> tuple[Document, tuple[int, ...]]:
        got = read_document(src, options, defer_ocr=True)
        return got.document, got.pending

    return overlay(src_path, out_path, options, plan, pool=pool)


def _searchable(obj: Input, options: Options) -> SearchableCopy:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="textsieve-") as tmp:
        src = Path(tmp) / "in.pdf"
        if isinstance(obj, (bytes, bytearray, memoryview)):
            src.write_bytes(obj)
        elif isinstance(obj, (str, os.PathLike)):
            src = Path(obj)
        else:
            src.write_bytes(open_input(obj, None, options).read())
        out = Path(tmp) / "out.pdf"
        report = make_searchable(src, out, options)
        return SearchableCopy(out.read_bytes(), report)


# -- executors: where tasks run (plugins; the steps below need only the protocol) -----------

class Executor(Protocol):
    """Runs tasks in isolation, each under its deadline; results come back in any order."""

    size: int  # tasks it runs at once
    window: int  # inputs worth keeping queued ahead (enough to keep ``size`` busy)

    def submit(self, tasks: Iterable[Task], *, first: bool = False) -> None:
        """Queue tasks (no waiting). ``first``: ahead of what is queued (the pages of a
        document already started, so it finishes and leaves memory)."""

    def wait(self, timeout: float | None = None) -> list[tuple[Task, Result]]:
        """Run what is queued; return the tasks finished by now, at least one unless
        ``timeout`` passes or nothing is queued or running. Each result is ``perform``'s
        (or ``failed``'s, for a task past its deadline or whose worker died)."""

    def busy(self) -> bool:
        """Tasks are queued or running."""

    def close(self) -> None:
        """Stop every worker; queued tasks are dropped."""


class Isolation(StrEnum):
    """Where a document is extracted: a hang or a crash costs what it runs in."""

    IN_PROCESS = "in-process"  # the caller's process (a long scan's pages still spread)
    CHILD = "child"  # one forked child with a pool worker's guarantees (deadline, memory cap)
    POOL = "pool"  # the local executor: isolated worker processes (run/pool.py)
    RAY = "ray"  # tasks on a Ray cluster (run/ray_executor.py)

    @classmethod
    def of(cls, options: Options) -> Isolation:
        """The executor level ``options.executor`` names: ``local`` a pool, ``ray`` Ray."""
        return cls.RAY if options.executor == "ray" else cls.POOL


# The executors, by level: "module:factory", imported on first use (like the extractors'
# registry), each ``factory(options, workers, **settings) -> Executor``.
EXECUTORS: dict[Isolation, str] = {
    Isolation.POOL: "textsieve.run.pool:LocalExecutor",
    Isolation.RAY: "textsieve.run.ray_executor:RayExecutor",
}


def make_executor(options: Options, workers: int | None = None, *,
                  isolation: Isolation | None = None, recycle_after: int = 0,
                  recycle_rss: int = 0, threads_run: bool = False) -> Executor:
    """The executor of ``isolation`` (default: the one ``options.executor`` names).
    ``recycle_*``: a local worker is replaced after that many tasks or once its memory is
    above that many bytes (a long-lived service; 0: never). ``threads_run``: this process
    runs threads that may hold locks (a web server): local workers come from a
    forkserver."""
    level = isolation or Isolation.of(options)
    if level not in EXECUTORS:
        raise ValueError(f"no executor runs at the level {level}")
    module, _, attr = EXECUTORS[level].partition(":")
    factory = getattr(importlib.import_module(module), attr)
    if level is Isolation.POOL:
        executor: Executor = factory(options, workers, recycle_after=recycle_after,
                                     recycle_rss=recycle_rss, threads_run=threads_run)
    else:
        executor = factory(options, workers)
    return executor


# -- the steps: documents over an executor ---------------------------------------------------

class DocumentFlow:
    """Documents through an executor, finished in any order with their key: a whole input
    is one task; when it comes back with pages to OCR (a scan), each page becomes a task of
    its own, queued ahead of the inputs not yet started, so a long scan spreads over every
    worker. When its last page is in, the pages are put back in order and merged, the
    searchable PDF copy is written (here, in the driver: one writer), and the document is
    finished. Nothing here knows how tasks run."""

    def __init__(self, executor: Executor, options: Options) -> None:
        self.executor, self.options = executor, options
        self._next = 0
        self._keys: dict[int, Hashable] = {}  # task key -> the caller's key
        self._waiting: dict[int, tuple[Document, set[int], list[PageOcr]]] = {}

    def add(self, key: Hashable, obj: Input, name: str | None,
            out: list[str] | None = None, *, options: Options | None = None,
            work: Work = EXTRACT, deadline: float | None = None) -> None:
        """Queue one input; ``key`` comes back with its result (for ``Extract`` the
        finished Document); ``out``: where its searchable copy goes below
        ``searchable_pdf_dir`` (safe parts), if not by name. ``options``: its own (else the
        flow's); ``deadline``: when its time is up (monotonic), waiting for a worker
        included."""
        k = self._next
        self._next += 1
        self._keys[k] = key
        self.executor.submit([Task(k, obj, name, work, out=out, options=options,
                                   deadline=deadline)])

    def in_flight(self) -> int:
        """Inputs added and not yet finished."""
        return len(self._keys)

    def step(self, timeout: float | None = None) -> list[tuple[Hashable, Result]]:
        """Run until some inputs finish (or ``timeout``): (key, result) pairs."""
        out: list[tuple[Hashable, Result]] = []
        for task, result in self.executor.wait(timeout):
            done = self._finished(task, result)
            if done is not None:
                out.append((self._keys.pop(task.key), done))
        return out

    def _finished(self, task: Task, result: Result) -> Result | None:
        options = task.options or self.options
        if isinstance(task.work, Extract):
            if isinstance(result, Extracted):
                doc, pages = result.document, result.pending
            else:  # a worker that died or ran out of time: a failed Document
                doc, pages = _document(result), ()
            if not pages or not doc.ok:
                return doc
            self._waiting[task.key] = (doc, set(pages), [])
            want_pdf = options.searchable_pdf_dir is not None and \
                doc.mime_type == "application/pdf"
            assert doc.mime_type is not None
            self.executor.submit([
                Task(task.key, task.obj, task.name, DocumentPage(p, doc.mime_type, want_pdf),
                     deadline=task.deadline, out=task.out, options=task.options)
                for p in pages], first=True)
            return None
        if not isinstance(task.work, DocumentPage):
            return result  # another work item's result goes back as it is
        doc, left, results = self._waiting[task.key]
        results.append(cast("PageOcr", result))
        left.discard(task.work.number)
        if left:
            return None
        del self._waiting[task.key]
        return finish_pages(doc, task, results, options)


def _document(result: Result) -> Document:
    """The result of an ``Extract`` a flow finished: its Document."""
    assert isinstance(result, Document), type(result)
    return result


def finish_pages(doc: Document, task: Task, results: list[PageOcr], options: Options
                 ) -> Document:
    """Put a document's OCRed pages back in order and merge them; write its searchable
    copy when asked; a document whose pages ran past its deadline is a ``timeout``."""
    results.sort(key=lambda r: r.number)
    if isinstance(task.work, DocumentPage) and task.work.want_pdf:
        _write_copy(task, doc, results, options)
    finish_ocr(doc, results)
    if task.deadline is not None and time.monotonic() >= task.deadline:
        late = [r.number for r in results if r.error and r.error.startswith("timeout")]
        if late:
            # The pages read in time are kept, the others are in ``missing_pages``.
            doc.status = Status.ERROR
            doc.error = ErrorInfo(ErrorKind.TIMEOUT, (
                f"extraction exceeded {options.timeout:g} s: {len(late)} of "
                f"{len(results)} page(s) to OCR not read in time (missing_pages)"))
    return doc


def _write_copy(task: Task, doc: Document, results: list[PageOcr], options: Options) -> None:
    """Lay the pages' text-only PDFs over the original: a searchable copy in
    ``searchable_pdf_dir`` at ``task.out``, else named like the input (its path is in the
    metadata), written only through ``outfiles`` (safe names, no symlink followed)."""
    from .ocr.searchable import pdf_parts, write_overlay

    assert options.searchable_pdf_dir is not None
    parts = task.out or pdf_parts([doc.name or task.name or f"document-{task.key}"])
    try:
        report = write_overlay(open_input(task.obj, task.name, options), results,
                               (options.searchable_pdf_dir, parts), options)
        doc.metadata.extra["searchable_pdf"] = report["path"]
    except Exception as exc:  # the text is what matters; the copy is a bonus
        doc.warnings.append(f"searchable PDF not written: {type(exc).__name__}: {exc}")
    for r in results:
        r.pdf = None  # the page layers are large: do not keep them


def as_done(executor: Executor, jobs: Iterable[tuple[Hashable, Input, str | None,
                                                      list[str] | None]],
            options: Options, *, tick: float | None = None
            ) -> Iterator[tuple[Hashable, Document] | None]:
    """(key, Document) for each (key, input, name, out) job, as soon as it is finished:
    in completion order, so one slow input (a big scan) never holds back the inputs that
    finished after it (``textsieve run`` commits them at once; a kill loses none of them).

    The jobs are consumed lazily, at most ``executor.window`` in flight, so memory stays
    bounded however long the stream. ``out``: where the input's searchable PDF copy goes
    below ``Options.searchable_pdf_dir`` (safe path parts), None: by name. ``tick``: a
    None is yielded whenever that many seconds pass without a document, so the caller
    can do its timed work (commit what is due) while a long input runs."""
    items = iter(jobs)
    flow = DocumentFlow(executor, options)
    window = executor.window
    exhausted = False
    last = time.monotonic()
    while True:
        while not exhausted and flow.in_flight() < window:
            try:
                key, obj, name, out = next(items)
            except StopIteration:
                exhausted = True
                break
            flow.add(key, obj, name, out=out)
            if tick is not None and time.monotonic() - last >= tick:
                break  # a slow listing (fetches) must not keep finished work waiting
        if exhausted and not flow.in_flight():
            return
        room = not exhausted and flow.in_flight() < window
        done = flow.step(timeout=0.0 if room else tick)
        now = time.monotonic()
        if done:
            last = now
            yield from ((key, _document(result)) for key, result in done)
        elif tick is not None and now - last >= tick:
            last = now
            yield None


def in_order(executor: Executor, pairs: Iterable[tuple[Any, ...]],
             options: Options) -> Iterator[Document]:
    """One Document per (input, name) pair, in input order (``as_done`` gives them as
    they finish). The pairs are consumed lazily, a bounded window ahead of the results,
    so they may be an endless stream. A third element, when given, is where the input's
    searchable PDF copy goes below ``Options.searchable_pdf_dir`` (safe path parts)."""
    items = iter(pairs)
    flow = DocumentFlow(executor, options)
    order: deque[int] = deque()
    done: dict[Hashable, Document] = {}
    window = executor.window
    exhausted, n = False, 0
    while True:
        while not exhausted and len(order) < window:
            try:
                obj, name, *out = next(items)
            except StopIteration:
                exhausted = True
                break
            order.append(n)
            flow.add(n, obj, name, out=out[0] if out else None)
            n += 1
        while order and order[0] in done:
            yield done.pop(order.popleft())
        if exhausted and not order:
            return
        done.update((key, _document(result)) for key, result in flow.step())


def ocr_pages_on(executor: Executor, obj: Input, name: str | None, mime: str,
                 pages: Sequence[int], *, want_pdf: bool = False) -> list[PageOcr]:
    """OCR pages of one PDF or image across an executor; PageOcr per page, in order."""
    executor.submit(Task(0, obj, name, DocumentPage(p, mime, want_pdf)) for p in pages)
    results: dict[int, PageOcr] = {}
    while len(results) < len(pages):
        for task, result in executor.wait():
            results[task.page or 0] = cast("PageOcr", result)
    return [results[p] for p in pages]


# -- the façade: one document (or many) at an isolation level --------------------------------

def extract(source: Input, name: str | None = None, *, options: Options,
            isolation: Isolation = Isolation.IN_PROCESS) -> Document:
    """Extract one input at an isolation level; never raises for a bad input.

    ``IN_PROCESS``: read here; a scan's pages are OCRed here too, unless it has at least
    ``OCR_FAN_OUT_PAGES`` of them and cores to spare (then a pool of its own reads them).
    ``CHILD``: in one forked child under the deadline and the memory cap (a hang or a
    native crash is this input's typed error); a scan with ``OCR_FAN_OUT_PAGES`` pages or
    more goes to a pool, which spreads them over every core under one deadline.
    ``POOL``/``RAY``: through that executor, its pages spread over its workers."""
    if isolation is Isolation.IN_PROCESS:
        return _extract_here(source, name, options)
    if isolation is Isolation.CHILD:
        doc = _extract_in_child(source, name, options)
        if doc is not None:
            return doc
        isolation = Isolation.of(options)
    return next(iter(extract_many([source], options, names=[name], isolation=isolation,
                                  workers=options.worker_count)))


def extract_many(inputs: Iterable[Input], options: Options, *,
                 names: Iterable[str | None] | None = None,
                 isolation: Isolation | None = None,
                 workers: int | None = None) -> Iterator[Document]:
    """Extract every input through an executor (``isolation``: ``POOL`` or ``RAY``,
    default the one ``options.executor`` names), in isolated workers; yields in input
    order, consuming ``inputs`` lazily."""
    pairs = ((obj, None) for obj in inputs) if names is None else \
        zip(inputs, names, strict=False)
    executor = make_executor(options, workers, isolation=isolation)
    try:
        yield from in_order(executor, pairs, options)
    finally:
        executor.close()


def perform_at(work: Work, source: Input, name: str | None, options: Options,
               isolation: Isolation = Isolation.CHILD) -> Result:
    """One work item on one input at ``IN_PROCESS`` or ``CHILD`` (an ``Extract`` there
    gives its ``Extracted``, pages pending; ``extract`` finishes them)."""
    task = Task(0, source, name, work, page_workers=options.worker_count)
    if isolation is Isolation.IN_PROCESS:
        return perform(task, options)
    if isolation is not Isolation.CHILD:
        raise ValueError(f"one work item runs in process or in a child, not at {isolation}")
    from .forking import isolated_document

    result: Result = isolated_document(perform, task, options, name=display_name(source, name),
                                       timeout=options.timeout, memory=options.memory_limit)
    return result


def _extract_here(obj: Input, name: str | None, options: Options) -> Document:
    """``IN_PROCESS``: a long scan's pages still spread over the cores, through a pool of
    its own (not inside a pool worker, whose siblings use the other cores)."""
    fan_out = options.worker_count > 1 and not in_worker()
    got = read_document(open_input(obj, name, options), options, defer_ocr=fan_out)
    doc, pages = got.document, got.pending
    if not pages:
        return doc
    assert doc.mime_type is not None
    if len(pages) >= OCR_FAN_OUT_PAGES:
        executor = make_executor(options, min(options.worker_count, len(pages)),
                                 isolation=Isolation.POOL)
        try:
            results = ocr_pages_on(executor, obj, name, doc.mime_type, pages)
        finally:
            executor.close()
    else:
        results = _ocr_here(open_input(obj, name, options), doc, pages, options)
    finish_ocr(doc, results)
    return doc


def _extract_in_child(obj: Input, name: str | None, options: Options) -> Document | None:
    """``CHILD``: the input in one forked child; None when it has as many pages to OCR as
    a pool should spread (the child read the rest of it; re-reading its text is cheap)."""
    from .forking import isolated_document

    got = isolated_document(_child, obj, name, options, name=display_name(obj, name),
                            timeout=options.timeout, memory=options.memory_limit)
    if isinstance(got, Extracted):
        return None if got.pending else got.document
    doc: Document = got  # the child's typed failure
    return doc


def _child(obj: Input, name: str | None, options: Options) -> Extracted:
    """In the child: read the input with every core for its pages; OCR a short scan's
    pages here, leave a long one's pending for a pool."""
    from .forking import quiet_native_chatter

    quiet_native_chatter()
    got = read_document(open_input(obj, name, options), options, defer_ocr=True,
                        page_workers=options.worker_count)
    if got.pending and len(got.pending) < OCR_FAN_OUT_PAGES:
        doc = got.document
        finish_ocr(doc, _ocr_here(open_input(obj, name, options), doc, got.pending, options))
        return Extracted(doc)
    return got
