"""What OCR makes of one page: a module of its own, below both the package's ``ocr_pages``
and the page reading it calls (``raster``), so that neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PageOcr:
    """The OCR result of one page (or the reason it has none)."""

    number: int  # 1-based page / frame number
    text: str = ""
    confidence: float = 0.0
    rotation: int = 0  # degrees (counter-clockwise) the page was turned to read it
    scale: float = 1.0  # image pages: pixels read per pixel of the image
    dpi: int | None = None  # PDF pages: the resolution the page was read at
    pdf: bytes | None = None  # text-only PDF page, for searchable PDFs
    seconds: float = 0.0
    error: str | None = None  # why this page has no text (it is then a "missing page")
