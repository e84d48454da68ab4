"""OCR of pages (PDF pages, image frames): render, orient, recognise, merge back.

Extractors decide *which* pages need OCR; this package does it. ``ocr_pages`` works on
one document in the calling process; the worker pool spreads the pages of a long scan over
all its workers (one page per task) and merges the results with ``merge``.
"""

from __future__ import annotations

import time

from ..bytesource import Source
from ..model import Document, ErrorKind, ExtractionError
from ..options import Options
from ..render import Builder
from .result import PageOcr

__all__ = ["PageOcr", "merge", "ocr_pages"]


def ocr_pages(src: Source, mime: str, pages: list[int], options: Options, *,
              want_pdf: bool = False) -> list[PageOcr]:
    """OCR the given pages of a PDF or an image, one after the other, in this process."""
    from . import engine, raster

    engine.check_languages(options.ocr_lang)
    out: list[PageOcr] = []
    with raster.open_pages(src, mime, options) as pager:
        for number in pages:
            t0 = time.perf_counter()
            try:
                result = raster.read_page(pager, number, options.ocr_lang, want_pdf=want_pdf)
                result.number = number
            except ExtractionError as exc:
                if exc.kind in (ErrorKind.MISSING_TOOL, ErrorKind.TOO_LARGE) and len(pages) == 1:
                    raise
                result = PageOcr(number, error=f"{exc.kind}: {exc.message}")
            except MemoryError:  # decoding it went over the worker's memory cap
                result = PageOcr(number, error=f"{ErrorKind.TOO_LARGE}: page image too "
                                 "large for the memory limit")
            except Exception as exc:  # one bad page must not cost the document
                result = PageOcr(number, error=f"{type(exc).__name__}: {exc}")
            result.seconds = time.perf_counter() - t0
            out.append(result)
    return out


def merge(doc: Document, results: list[PageOcr]) -> None:
    """Put OCR text into a paged document and render its text and Markdown again.

    Pages without a result keep what they had; pages whose OCR failed are listed in
    ``metadata.extra["missing_pages"]``; the pages that were OCRed in ``ocr_pages``.
    """
    by_page = {r.number: r for r in results}
    pages = list(doc.pages)
    known = {p.number for p in pages}
    for r in results:  # an image document has no pages before its OCR
        if r.number not in known:
            from ..model import Page

            pages.append(Page(r.number, ""))
    pages.sort(key=lambda p: p.number)
    out = Builder()
    ocred, missing = [], []
    for p in pages:
        out.start_page(p.number)
        got = by_page.get(p.number)
        text = p.text
        if got is not None:
            if got.error is None:
                text = _tidy(got.text)
                ocred.append(p.number)
            else:
                missing.append(p.number)
        out.preformatted(text)
    doc.text, doc.markdown, doc.pages = out.build()
    for page in doc.pages:
        page.ocr = page.number in ocred
    extra = doc.metadata.extra
    if ocred:
        extra["ocr_pages"] = ocred
        extra["ocr_seconds"] = round(sum(r.seconds for r in results), 3)
        conf = [r.confidence for r in results if r.error is None and r.confidence >= 0]
        if conf:
            extra["ocr_confidence"] = round(sum(conf) / len(conf), 1)
        rotated = {r.number: r.rotation for r in results if r.rotation}
        if rotated:
            extra["ocr_rotated"] = rotated
        # The scale each page was read at, chosen from the height of its text: image
        # pages as a factor over their pixels, PDF pages as a resolution.
        good = [r for r in results if r.error is None]
        scales = {r.number: r.scale for r in good if r.dpi is None}
        if scales:
            extra["ocr_scale"] = scales
        dpis = {r.number: r.dpi for r in good if r.dpi is not None}
        if dpis:
            extra["ocr_dpi"] = dpis
    if missing:
        extra["missing_pages"] = missing
        reasons = {r.number: r.error for r in results if r.error}
        doc.warnings.append("OCR failed on page(s) " + ", ".join(
            f"{n} ({reasons[n]})" for n in missing[:10]))
    extra.pop("pages_needing_ocr", None)


def _tidy(text: str) -> str:
    """Tesseract ends pages with a form feed and pads lines; keep paragraphs."""
    lines = [ln.rstrip() for ln in text.replace("\x0c", "").splitlines()]
    return "\n".join(lines).strip("\n")
