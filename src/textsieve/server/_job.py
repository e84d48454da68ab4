"""What a service worker process does with one job (kept apart from ``workers`` so the
forkserver can preload it with the parsers, and nothing of the server is imported there)."""

from __future__ import annotations

from typing import Any

from .. import _source
from ..core import extract_source
from ..detection import detect
from ..model import Document, ErrorKind, ExtractionError, Status
from ..options import Options


def run_job(obj: bytes | str, name: str | None, options: Options, mode: str) -> Any:
    """One job; never raises for a bad input. ``mode``: ``extract`` (a Document),
    ``detect`` (a Document with only its type), ``page:N`` (the OCR of page N, as a
    Document with that page's text), ``searchable`` (a PDF with a text layer:
    ``(pdf_bytes, report)``, or a failed Document)."""
    try:
        if mode == "searchable":
            return _searchable(obj, options)
        src = _source(obj, name, options)
        if mode == "detect":
            with src:
                return Document(name=name, mime_type=detect(src).mime, status=Status.EMPTY)
        if mode.startswith("page:"):
            return _page(src, name, options, int(mode[5:]))
        return extract_source(src, options)
    except ExtractionError as exc:
        return Document.failed(exc.kind, exc.message, name=name)
    except FileNotFoundError as exc:
        return Document.failed(ErrorKind.NOT_FOUND, str(exc), name=name)
    except Exception as exc:
        return Document.failed(ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}", name=name)


def _page(src: Any, name: str | None, options: Options, number: int) -> Document:
    from ..model import Page
    from ..ocr import ocr_pages

    with src:
        mime = detect(src).mime
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


def _page_count(src: Any, mime: str, options: Options) -> int | None:
    """How many pages (or frames) the OCR would see; None when it cannot tell (then the
    OCR of the page says what is wrong)."""
    from ..ocr import raster

    try:
        with raster.open_pages(src, mime, options) as pager:
            pdf = getattr(pager, "pdf", None)
            if pdf is not None:
                return len(pdf)
            return int(getattr(getattr(pager, "im", None), "n_frames", 1))
    except Exception:
        return None


def _searchable(obj: bytes | str, options: Options) -> Any:
    import tempfile
    from pathlib import Path

    from ..ocr.searchable import make_searchable

    with tempfile.TemporaryDirectory(prefix="textsieve-") as tmp:
        src = Path(tmp) / "in.pdf"
        if isinstance(obj, bytes):
            src.write_bytes(obj)
        else:
            src = Path(obj)
        out = Path(tmp) / "out.pdf"
        report = make_searchable(src, out, options)
        return out.read_bytes(), report
