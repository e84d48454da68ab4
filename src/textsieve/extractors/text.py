"""Plain text and CSV/TSV in any encoding."""

from __future__ import annotations

from ..model import Document
from ..render import Builder
from ..source import Source
from ..textcodec import decode
from . import Context


def extract_text(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    text, enc = decode(src.read())
    doc.metadata.encoding = enc
    out.preformatted(text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", ""))


def extract_csv(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    extract_text(src, ctx, doc, out)
