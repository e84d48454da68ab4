"""Without the tesserocr binding, OCR falls back to the real tesseract command line:
recognition and orientation detection both still work (slower, same answers)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from PIL import Image, ImageDraw, ImageFont

from textsieve.ocr import engine, raster

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
LINES = ["Council minutes were read and approved without changes.",
         "The clerk reported that the bridge repairs are finished.",
         "Members thanked the volunteers who cleared the river path."]


@pytest.fixture
def no_binding() -> Iterator[None]:
    if shutil.which("tesseract") is None:
        pytest.skip("the tesseract command is not installed")
    saved = engine._binding_mod, engine._binding_checked
    engine._binding_mod, engine._binding_checked = None, True  # as if tesserocr were absent
    try:
        yield
    finally:
        engine._binding_mod, engine._binding_checked = saved


def _page() -> Image.Image:
    img = Image.new("L", (2480, 900), 255)
    draw, font = ImageDraw.Draw(img), ImageFont.truetype(FONT, 46)
    for i, line in enumerate(LINES):
        draw.text((120, 120 + i * 110), line, font=font, fill=0)
    return img


@pytest.mark.parametrize("angle", [0, 180])
def test_cli_fallback_reads_and_turns_pages(no_binding: None, angle: int) -> None:
    img = _page().rotate(angle, expand=True) if angle else _page()
    result = raster.read_upright(img, "eng", 300)
    text = " ".join(result.text.split())
    for line in LINES:
        assert line in text
    assert result.rotation == angle
