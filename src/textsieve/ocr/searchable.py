"""Searchable PDFs: the original pages, untouched, with an invisible OCR text layer on top.

Nothing of the original is re-encoded: each OCRed page keeps its content stream and images,
and tesseract's own text-only PDF of the page (glyphless font, text render mode 3, so it
draws no pixel) is laid over it as a form XObject. The text layer is placed by mapping the
corners of the OCR page onto the page's visible box, undoing both turns the pixels went
through on the way to tesseract: the page's ``/Rotate`` (rendering applies it) and the turn
``read_upright`` gave a sideways scan. Pages with a good text layer are not OCRed at all
(the same decision as extraction: its pending pages), so their text stays exactly as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import detection as d
from ..bytesource import Source
from ..model import Document, ErrorKind, ExtractionError, Status
from ..options import Options
from ..outfiles import item_parts, safe_parts, shorten, write_under
from . import PageOcr, ocr_pages

if TYPE_CHECKING:
    import pypdfium2 as pdfium


class PageReader(Protocol):
    """What OCRs many pages at once (``run.pool.WorkerPool``: over an executor's workers).
    A protocol, so the OCR code imports no executor."""

    def ocr(self, obj: Any, name: str | None, mime: str, pages: list[int], *,
            want_pdf: bool = False) -> list[PageOcr]: ...


# Reads a document the way extraction does, its pages to OCR left pending: given by the
# caller (``core.make_searchable``), so this package never imports the layer above it.
Plan = Callable[[Source], tuple[Document, Sequence[int]]]


def make_searchable(src_path: str | os.PathLike[str], out_path: str | os.PathLike[str],
                    options: Options, plan: Plan, pool: PageReader | None = None
                    ) -> dict[str, Any]:
    """Write ``out_path``: ``src_path`` with an invisible text layer on the pages that need
    OCR (all pages with ``options.ocr == "always"``), as ``plan`` decides them.

    The input is never modified and ``out_path`` appears whole or not at all (written to a
    temporary file beside it, then renamed). Pages whose OCR fails keep their original
    content and are listed in ``missing_pages`` (reasons in ``errors``). With ``pool`` the
    pages are OCRed across its workers; without, one after the other in this process.
    Raises ``ExtractionError`` when the file cannot be made searchable at all (not a PDF,
    damaged, encrypted without the password, tesseract missing).
    """
    t0 = time.perf_counter()
    src, out = Path(src_path), Path(out_path)
    if out.exists() and src.exists() and os.path.samefile(src, out):
        raise ExtractionError(ErrorKind.UNSUPPORTED,
                              "the output must be a different file: the input is never "
                              "modified")
    if not out.parent.is_dir():
        raise ExtractionError(ErrorKind.NOT_FOUND, f"output folder {out.parent} does not exist")
    # The same decision as extraction: which pages lack a usable text layer.
    doc, pending_pages = plan(Source.from_path(src, max_size=options.max_file_size))
    if doc.status is Status.ERROR:
        assert doc.error is not None
        raise ExtractionError(doc.error.kind, doc.error.message)
    if doc.mime_type != d.PDF:
        raise ExtractionError(ErrorKind.UNSUPPORTED,
                              f"not a PDF ({doc.mime_type}): only PDFs can be made searchable")
    page_count = doc.metadata.page_count or 0
    pending = list(pending_pages)
    report: dict[str, Any] = {
        "pages": page_count, "ocr_pages": [], "kept_pages": [
            n for n in range(1, page_count + 1) if n not in set(pending)],
        "missing_pages": [], "errors": {}, "rotated": {}, "ocr_seconds": 0.0}
    if not pending:  # nothing to add: the output is the input, byte for byte
        _write_atomically(out, lambda tmp: shutil.copyfile(src, tmp))
        report["path"] = str(out)
        report["seconds"] = round(time.perf_counter() - t0, 3)
        return report

    from . import engine

    engine.check_languages(options.ocr_lang)  # once, clearly, rather than once per page
    if pool is not None:
        results: list[PageOcr] = pool.ocr(str(src), src.name, d.PDF, pending, want_pdf=True)
    else:
        results = ocr_pages(Source.from_path(src, max_size=options.max_file_size), d.PDF,
                            pending, options, want_pdf=True)
    report["ocr_seconds"] = round(sum(r.seconds for r in results), 3)

    report.update(write_overlay(Source.from_path(src), results, out, options))
    report["seconds"] = round(time.perf_counter() - t0, 3)
    return report


def pdf_parts(parts: list[str]) -> list[str]:
    """Safe path parts for an item's searchable copy: the item's own, ending in ``.pdf``."""
    safe = safe_parts(parts) or ["document"]
    last = safe[-1] if safe[-1].lower().endswith(".pdf") else f"{safe[-1]}.pdf"
    safe[-1] = shorten(last, keep_suffix=last[-4:])
    return safe


def searchable_parts(key: str, root: str | None) -> list[str]:
    """Where ``textsieve run --searchable-pdf DIR`` puts an item's copy below DIR: its path
    below ``root`` mirrored (``a/scan.pdf`` and ``b/scan.pdf`` stay two files), a URL under
    ``HOST/PATH``; always inside DIR, whatever the key."""
    return pdf_parts(item_parts(key, root))


def write_overlay(source: Source, results: list[PageOcr], out: Path | tuple[str, list[str]],
                  options: Options) -> dict[str, Any]:
    """Write ``source`` to ``out`` with each OCRed page's text-only PDF laid over it.

    ``out`` is a path the user chose, or (folder, safe parts) for a file named after an
    item, written through ``outfiles.write_under`` (no symlink followed, nothing outside
    the folder). The report's ``path`` is the file written. Also used by ``textsieve run
    --searchable-pdf``, where the worker pool has already OCRed the pages (with their
    text-only PDFs) while extracting the text: nothing is OCRed twice.
    """
    from ..extractors.pdf import open_document

    report: dict[str, Any] = {"ocr_pages": [], "missing_pages": [], "errors": {},
                              "rotated": {}}
    with open_document(source, options.password) as pdf:
        for r in results:
            error = r.error or (None if r.pdf else "tesseract returned no PDF page")
            if error is None:
                try:
                    _overlay(pdf, r)
                except Exception as exc:  # a page we cannot write keeps its original look
                    error = f"internal: overlay failed: {type(exc).__name__}: {exc}"
            if error is not None:
                report["missing_pages"].append(r.number)
                report["errors"][r.number] = error
                continue
            report["ocr_pages"].append(r.number)
            if r.rotation:
                report["rotated"][r.number] = r.rotation
        if isinstance(out, tuple):
            report["path"] = write_under(out[0], out[1], pdf.save)
        else:
            _write_atomically(out, pdf.save)
            report["path"] = str(out)
    return report


def _overlay(pdf: pdfium.PdfDocument, result: PageOcr) -> None:
    """Lay tesseract's text-only page for ``result.number`` over that page of ``pdf``."""
    import pypdfium2 as pdfium

    assert result.pdf is not None
    layer = pdfium.PdfDocument(result.pdf)
    page = pdf[result.number - 1]
    try:
        layer_page = layer[0]
        layer_box = layer_page.get_bbox()
        layer_page.close()
        xobject = layer.page_as_xobject(0, pdf)  # imports the layer's objects into ``pdf``
        form = xobject.as_pageobject()
        form.set_matrix(placement(layer_box, result.rotation, page.get_bbox(),
                                  page.get_rotation()))
        page.insert_obj(form)
        page.gen_content()
        xobject.close()
    finally:
        page.close()
        layer.close()


def placement(layer_box: tuple[float, float, float, float], ocr_rotation: int,
              page_box: tuple[float, float, float, float],
              page_rotation: int) -> pdfium.PdfMatrix:
    """The matrix that puts the OCR page onto the page's visible box, in page space.

    The OCR page is the rendered page (``/Rotate`` applied: the page turned clockwise)
    turned a further ``ocr_rotation`` degrees counter-clockwise to read it. So: turn it
    back clockwise by ``ocr_rotation``, then counter-clockwise by ``page_rotation``, then
    stretch it over the box (its size is pixels/dpi*72, equal to the page's up to rounding).
    """
    import pypdfium2 as pdfium

    left, bottom, right, top = layer_box
    m = pdfium.PdfMatrix(1, 0, 0, 1, -left, -bottom)
    w, h = right - left, top - bottom
    m, w, h = _turn(m, w, h, -ocr_rotation)
    m, w, h = _turn(m, w, h, page_rotation)
    p_left, p_bottom, p_right, p_top = page_box
    return m.multiply(pdfium.PdfMatrix((p_right - p_left) / w, 0, 0, (p_top - p_bottom) / h,
                                       p_left, p_bottom))


def _turn(m: pdfium.PdfMatrix, w: float, h: float,
          ccw: int) -> tuple[pdfium.PdfMatrix, float, float]:
    """Turn the box [0,w]x[0,h] (and ``m``, which maps into it) by a multiple of 90 degrees
    counter-clockwise, keeping it in the positive quadrant; returns the new width, height."""
    import pypdfium2 as pdfium

    ccw %= 360
    if ccw == 90:
        return m.multiply(pdfium.PdfMatrix(0, 1, -1, 0, h, 0)), h, w
    if ccw == 180:
        return m.multiply(pdfium.PdfMatrix(-1, 0, 0, -1, w, h)), w, h
    if ccw == 270:
        return m.multiply(pdfium.PdfMatrix(0, -1, 1, 0, 0, w)), h, w
    return m, w, h


def _write_atomically(out: Path, write: Any) -> None:
    """``write(temp_path)`` beside ``out``, then rename: no half-written output, ever."""
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
