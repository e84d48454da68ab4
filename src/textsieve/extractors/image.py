"""Images: pixels only, so every frame is marked for OCR (``ctx.ocr_pending``); with OCR off
they are reported ``needs_ocr``, never an empty success.
What we can learn cheaply is still recorded (size, format, frames, DPI) from the header
alone: Pillow reads only the header on ``open`` when it is installed; otherwise a few lines
of header parsing cover PNG, GIF, BMP, JPEG and WebP. Pixels are never decoded here.
"""

from __future__ import annotations

import contextlib
import numbers
import struct
import warnings
from typing import Any

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader, Signature
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder
from . import Context

# Imported on first use only (rare paths); ``preload`` imports them ahead.
LAZY = ("PIL.ImageOps", "PIL.TiffImagePlugin", "PIL.BmpImagePlugin", "PIL.GifImagePlugin",
        "PIL.JpegImagePlugin", "PIL.PngImagePlugin", "PIL.PpmImagePlugin", "PIL.ImageChops",
        "PIL.ImageSequence", "numpy", "scipy.ndimage", "textsieve.ocr.prep")

# Output version (archives re-extract items made by an older one): 2 = OCR of pages/images.
FORMAT = Format(
    name="image", version=2,
    readers=tuple(Reader(m) for m in (d.PNG, d.JPEG, d.GIF, d.TIFF, d.BMP, d.WEBP, d.JP2)),
    signatures=(Signature(d.PNG, b"\x89PNG\r\n\x1a\n"), Signature(d.JPEG, b"\xff\xd8\xff"),
                Signature(d.GIF, b"GIF87a"), Signature(d.GIF, b"GIF89a"),
                *(Signature(d.TIFF, m) for m in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")),
                Signature(d.BMP, b"BM", also=((6, b"\x00\x00\x00\x00"),), min_size=15),
                Signature(d.WEBP, b"RIFF", also=((8, b"WEBP"),)),
                Signature(d.JP2, b"\x00\x00\x00\x0cjP  \r\n\x87\n"),
                Signature(d.JP2, b"\xff\x4f\xff\x51")),
)


# Pillow's plugin for the formats it does not load up front (BMP, GIF, JPEG, PPM, PNG): opening
# one of these without its plugin imported makes Pillow import all of its ~40 plugins
# (Image.init), ~25 ms of a `textsieve extract scan.tif`.
_PILLOW_PLUGINS = {"image/tiff": "TiffImagePlugin", "image/webp": "WebPImagePlugin",
                   "image/jp2": "Jpeg2KImagePlugin", "image/vnd.microsoft.icon": "IcoImagePlugin"}


def pillow_plugin(mime: str | None) -> None:
    """Import the Pillow plugin that opens ``mime`` before ``Image.open`` is asked to."""
    plugin = _PILLOW_PLUGINS.get(mime or "")
    if plugin:
        import importlib

        with contextlib.suppress(ImportError):
            importlib.import_module(f"PIL.{plugin}")


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    # metadata is shared with the final record, so it survives the needs_ocr error.
    pillow_plugin(doc.mime_type)
    info = _pillow_info(src) or _header_info(src.head(1 << 16))
    if info:
        doc.metadata.extra.update(info)
        if info.get("frames", 1) > 1:
            doc.metadata.page_count = info["frames"]
    if ctx.options.ocr == "never":
        raise ExtractionError(ErrorKind.NEEDS_OCR,
                              f"{doc.mime_type} holds only pixels; its text needs OCR")
    pixels = (info or {}).get("width", 0) * (info or {}).get("height", 0)
    if pixels > ctx.options.max_image_pixels:
        raise ExtractionError(ErrorKind.TOO_LARGE,
                              f"image of {pixels:,} pixels is above the limit of "
                              f"{ctx.options.max_image_pixels:,} (a decompression bomb?)")
    frames = int((info or {}).get("frames", 1))
    ctx.ocr_pending = list(range(1, frames + 1))


def _pillow_info(src: Source) -> dict[str, Any] | None:
    try:
        from PIL import Image
    except ImportError:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DecompressionBombWarning: we decode nothing
            with src.open() as f, Image.open(f) as im:
                info: dict[str, Any] = {"width": im.width, "height": im.height,
                                        "image_format": im.format, "color_mode": im.mode}
                frames = getattr(im, "n_frames", 1)
                if frames > 1:
                    info["frames"] = frames
                dpi = im.info.get("dpi")  # TIFF gives IFDRational values, not floats
                if dpi and all(isinstance(v, numbers.Real) for v in dpi):
                    info["dpi"] = [round(float(v), 2) for v in dpi]
                return info
    except Exception:  # Pillow raises many types on odd headers; the fallback decides
        return None


def _header_info(h: bytes) -> dict[str, Any] | None:
    """Width/height from the header bytes of the commonest formats (no Pillow)."""
    try:
        if h.startswith(b"\x89PNG\r\n\x1a\n") and h[12:16] == b"IHDR":
            w, ht = struct.unpack(">II", h[16:24])
            return {"width": w, "height": ht, "image_format": "PNG"}
        if h[:6] in (b"GIF87a", b"GIF89a"):
            w, ht = struct.unpack("<HH", h[6:10])
            return {"width": w, "height": ht, "image_format": "GIF"}
        if h.startswith(b"BM"):
            w, ht = struct.unpack("<ii", h[18:26])
            return {"width": w, "height": abs(ht), "image_format": "BMP"}
        if h[:4] == b"RIFF" and h[8:12] == b"WEBP":
            return _webp(h)
        if h.startswith(b"\xff\xd8"):
            return _jpeg(h)
    except struct.error:
        return None
    return None


def _webp(h: bytes) -> dict[str, Any] | None:
    chunk = h[12:16]
    if chunk == b"VP8X":
        w = int.from_bytes(h[24:27], "little") + 1
        ht = int.from_bytes(h[27:30], "little") + 1
    elif chunk == b"VP8 ":
        w, ht = (v & 0x3FFF for v in struct.unpack("<HH", h[26:30]))
    elif chunk == b"VP8L":
        bits = int.from_bytes(h[21:25], "little")
        w, ht = (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    else:
        return None
    return {"width": w, "height": ht, "image_format": "WEBP"}


def _jpeg(h: bytes) -> dict[str, Any] | None:
    """Walk the JPEG segments to the first start-of-frame marker."""
    i = 2
    while i + 9 < len(h):
        if h[i] != 0xFF:
            return None
        marker = h[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            ht, w = struct.unpack(">HH", h[i + 5:i + 9])
            return {"width": w, "height": ht, "image_format": "JPEG"}
        i += 2 + int.from_bytes(h[i + 2:i + 4], "big")
    return None
