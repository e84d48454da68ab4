"""Images: pixels only. Until OCR is enabled they are reported as ``needs_ocr``.

Never an empty success: a user must be able to tell "no text" from "text not read yet".
"""

from __future__ import annotations

from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder
from ..source import Source
from . import Context


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    raise ExtractionError(ErrorKind.NEEDS_OCR,
                          f"{doc.mime_type} holds only pixels; its text needs OCR")
