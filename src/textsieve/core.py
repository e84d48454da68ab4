"""Extract one input, in this process: detect, dispatch, render, classify.

This is the function every entry point ends in (the isolated worker pool, the API, nested
members of archives). It never raises for a bad input: failures become the Document's
status and typed error.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import detection as d
from .bytesource import Source, os_problem
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
from .model import Document, ErrorInfo, ErrorKind, ExtractionError, Status
from .options import Options
from .render import Builder

if TYPE_CHECKING:
    from .ocr import PageOcr

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
            return importlib.import_module(module).sha256  # type: ignore[no-any-return]
        except (ImportError, AttributeError):
            continue
    return None


def _sha256(src: Source) -> str:
    small = _builtin_sha256() if src.size <= BUILTIN_SHA_MAX else None
    if small is not None:
        return small(src.read()).hexdigest()  # read (and kept) by the extractor anyway
    import hashlib

    if src.data_ is not None:
        return hashlib.sha256(src.data_).hexdigest()
    with src.open() as f:
        return hashlib.file_digest(f, "sha256").hexdigest()  # one reused buffer, no copies


def extract_source(src: Source, options: Options, ctx: Context | None = None, *,
                   defer_ocr: bool = False, page_workers: int | None = None) -> Document:
    """Extract one input. With ``defer_ocr`` the pages to OCR are left listed in
    ``metadata.extra["ocr_pending"]`` for the caller (the run's steps) to spread out.
    ``page_workers``: processes a long document may fork to read its pages; default all
    cores, except in a worker process (whose siblings are busy with other inputs)."""
    if ctx is None:
        if page_workers is None:
            page_workers = 1 if in_worker() else options.worker_count
        ctx = Context(options, defer_ocr=defer_ocr, page_workers=page_workers)
    doc = Document(name=src.name)
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
        _dispatch(src, ctx, doc, det)
        if doc.metadata.extra.get("ocr_pending") and not ctx.defer_ocr:
            finish_ocr(doc, _ocr_here(src, doc, options, ctx))
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
    return doc


def _dispatch(src: Source, ctx: Context, doc: Document, det: d.Detection) -> None:
    if det.mime == d.EMPTY:
        doc.status = Status.EMPTY
        return
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
        fill_language(doc)
        return
    assert last is not None
    raise last


def _ocr_here(src: Source, doc: Document, options: Options, ctx: Context) -> list[PageOcr]:
    """OCR the pending pages of a document extracted in this process, one after the
    other. Spreading a long scan over processes is the executor's business
    (``run/steps.py``): a caller that wants it asks for ``defer_ocr``."""
    from .ocr import ocr_pages  # here, as in finish_ocr: most files have no page to OCR

    return ocr_pages(src, doc.mime_type, doc.metadata.extra["ocr_pending"], options)


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
    fill_language(doc)  # the OCRed text is the document's only text


def _status(doc: Document) -> Status:
    if doc.status is Status.ERROR:
        return doc.status
    if doc.text.strip():
        return Status.OK
    if any(c.status is Status.OK for c in doc.children):
        return Status.OK
    return Status.EMPTY
