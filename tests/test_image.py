"""Images: needs_ocr, with width/height/format read from the header (no pixel decoding)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import textsieve
from textsieve.extractors.image import _header_info
from textsieve.model import ErrorKind, Status

Image = pytest.importorskip("PIL.Image")


def _img(fmt: str, size: tuple[int, int] = (123, 45), **kw: object) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(buf, fmt, **kw)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "BMP", "TIFF", "WEBP"])
def test_image_is_needs_ocr_with_dimensions(fmt: str) -> None:
    """With OCR off an image is needs_ocr (never an empty success), with its header facts."""
    doc = textsieve.extract(_img(fmt), name=f"pic.{fmt.lower()}", ocr="never")
    assert doc.status is Status.ERROR and doc.error is not None
    assert doc.error.kind is ErrorKind.NEEDS_OCR
    extra = doc.metadata.extra
    assert (extra["width"], extra["height"], extra["image_format"]) == (123, 45, fmt)


@pytest.mark.parametrize("fmt,kw", [("PNG", {}), ("JPEG", {"progressive": True}),
                                    ("GIF", {}), ("BMP", {}), ("WEBP", {"lossless": True}),
                                    ("WEBP", {"quality": 50})])
def test_header_fallback_without_pillow(fmt: str, kw: dict[str, object]) -> None:
    info = _header_info(_img(fmt, (321, 77), **kw))
    assert info == {"width": 321, "height": 77, "image_format": fmt}


def test_multipage_tiff_frames() -> None:
    buf = io.BytesIO()
    pages = [Image.new("L", (50, 60), v) for v in (0, 128, 255)]
    pages[0].save(buf, "TIFF", save_all=True, append_images=pages[1:], dpi=(300, 300))
    doc = textsieve.extract(buf.getvalue(), name="scan.tiff")
    assert doc.metadata.extra["frames"] == 3 and doc.metadata.page_count == 3
    assert doc.metadata.extra["dpi"] == [300.0, 300.0]


def test_corpus_images(corpus: Path) -> None:
    files = [p for d in ("png", "jpg", "tiff") for p in sorted((corpus / d).iterdir())]
    assert files
    for p in files:
        doc = textsieve.extract(p, ocr="never")  # OCR of these: test_corpus, test_ocr
        if doc.mime_type.startswith("image/"):
            assert doc.error is not None, p
            assert doc.error.kind in (ErrorKind.NEEDS_OCR, ErrorKind.CORRUPT), (p, doc.error)
