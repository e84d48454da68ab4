"""Pixels for OCR: PDF pages rendered in-process, image frames decoded, both made upright.

Rendering happens here, not in a ``pdftoppm`` subprocess: pypdfium2 renders a page
straight into memory in grey, at a resolution chosen for the page (300 dpi, less for huge
pages), so nothing is written to disk and nothing is re-decoded.
"""

from __future__ import annotations

import logging
import math
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .. import detection as d
from ..bytesource import Source
from ..model import ErrorKind, ExtractionError
from ..options import Options
from . import engine, reread, textlayer
from .layout import tables as layout_tables
from .result import PageOcr

if TYPE_CHECKING:
    from PIL import Image

# A 300 dpi A3 page. Larger pages are rendered at a lower dpi (their type is large too):
# OCR needs ~12 bytes per pixel in all, so this bounds one page's OCR to ~450 MB where an
# 81-megapixel poster scan took 640 MB. (25 megapixels lost the small print of that poster.)
MAX_PAGE_PIXELS = 36_000_000
# The resolution Tesseract is told for an image page once its text is at the height it
# reads best (prep.TARGET_GLYPH_PX): that of body text scanned at 300 dpi.
HINT_DPI = 300
# The lowest resolution at which a page-size picture is taken for a scan, read at its own
# pixels and scaled for its text as an image file is (a fax, a screenshot or a phone scan
# saved as PDF: 72-150 dpi). Rendered at 300 dpi instead, such a page was blown up three
# or four times, its noise into blots the background check took for a dark page: a 96 dpi
# chart that reads cleanly as a PNG read as garbage, in 25 s instead of 2.
MIN_SCAN_DPI = 50
TRUST_OSD = 5.0  # tesseract's orientation confidence above which we take its word
_WORD = re.compile(r"[^\W\d_]{2,}")
log = logging.getLogger(__name__)


class _PdfPages:
    def __init__(self, src: Source, options: Options) -> None:
        import pypdfium2 as pdfium

        from ..extractors.pdf import open_document

        self._cm = open_document(src, options.password)
        self.pdf: Any = self._cm.__enter__()
        self.dpi = options.ocr_dpi
        self.rendered = True  # the last page was rendered (not a scan's own pixels)
        self.scan = False  # the last page is a scan (rendered at its own resolution or not)
        self._pdfium = pdfium

    def image(self, number: int, dpi: float | None = None) -> tuple[Image.Image, int]:
        """The page in grey: a scan's own pixels, or rendered (at ``dpi``, or at the
        scan's resolution, or at the configured one). ``rendered``: which it was."""
        page = self.pdf[number - 1]
        try:
            w, h = page.get_size()  # points, after /Rotate
            native = _native_scan(page, w, h) if dpi is None else None
            self.rendered = native is None
            if native is not None:
                self.scan = True
                return native
            if dpi is None:
                scan = _scan_dpi(page, w, h)
                self.scan = scan is not None
                dpi = scan or self.dpi
            pixels = (w / 72 * dpi) * (h / 72 * dpi)
            if pixels > MAX_PAGE_PIXELS:
                dpi = int(dpi * math.sqrt(MAX_PAGE_PIXELS / pixels))
            bitmap = page.render(scale=dpi / 72, grayscale=True, draw_annots=True)
            try:
                return bitmap.to_pil().copy(), round(dpi)
            finally:
                bitmap.close()
        finally:
            page.close()

    def close(self) -> None:
        self._cm.__exit__(None, None, None)


def _native_scan(page: Any, w: float, h: float) -> tuple[Image.Image, int] | None:
    """A scanned page's own pixels, when the page is nothing but one upright image that
    covers it at a sane resolution: decoding it is ~3x cheaper than rendering the page, and
    OCR sees the scanner's pixels instead of a resampled copy. Anything else is rendered."""
    import pypdfium2.raw as c

    if page.get_rotation() != 0:
        return None
    images = []
    for obj in page.get_objects(max_depth=3):
        if obj.type == c.FPDF_PAGEOBJ_IMAGE:
            images.append(obj)
        elif obj.type != c.FPDF_PAGEOBJ_FORM:
            return None  # text, paths or shadings drawn too: render the whole page
    if len(images) != 1:
        return None
    img = images[0]
    m = img.get_matrix()
    if m.b != 0 or m.c != 0 or m.a <= 0 or m.d <= 0:
        return None  # turned or mirrored: rendering applies that for us
    left, bottom, right, top = img.get_bounds()
    if right - left < 0.97 * w or top - bottom < 0.97 * h:
        return None
    px_w, px_h = img.get_px_size()
    dpi = px_w / (w / 72)
    if not MIN_SCAN_DPI <= dpi <= 600 or px_w * px_h > MAX_PAGE_PIXELS:
        return None  # a thumbnail, a 2400 dpi monster or a poster: render at our resolution
    try:
        bitmap = img.get_bitmap(render=False)
        pil = bitmap.to_pil()
    except Exception:  # an image PDFium can only draw, not decode alone
        return None
    grey = _flatten(pil)
    from PIL import ImageStat

    if ImageStat.Stat(grey.reduce(8)).mean[0] < 110:
        return None  # mostly dark: a decode array or mask we did not apply; render instead
    return grey, round(dpi)


def _scan_dpi(page: Any, w: float, h: float) -> float | None:
    """The resolution of the scan on a page that is more than its scan (a Bates stamp, a
    header drawn as text, a scan with margins): the page is rendered at that resolution,
    so PDFium copies the scan's pixels one to one instead of resampling them to 300 dpi.
    Resampling blurs strokes and shifts them by fractions of a pixel; on held-out scans at
    200-600 dpi with a text stamp, rendering at the scan's own resolution cut the character
    error rate from 0.037% to 0.013% (bench/bench_ocr.py --held-out). Not rounded: a scan
    of 3307 px across a 595.28 pt page drawn at 400 dpi (3307.1 px) would be resampled
    all over. None: no large scan."""
    import pypdfium2.raw as c

    best: tuple[float, float] | None = None  # (area covered, dpi) of the largest image
    for obj in page.get_objects(max_depth=3):
        if obj.type != c.FPDF_PAGEOBJ_IMAGE:
            continue
        m = obj.get_matrix()
        placed_w, placed_h = math.hypot(m.a, m.b), math.hypot(m.c, m.d)  # points
        if placed_w <= 0 or placed_h <= 0:
            continue
        px_w, _px_h = obj.get_px_size()
        area = placed_w * placed_h
        if best is None or area > best[0]:
            best = (area, px_w / (placed_w / 72))
    if best is None or best[0] < 0.5 * w * h or not MIN_SCAN_DPI <= best[1] <= 1200:
        return None  # no scan, a small picture, a thumbnail or a 2400 dpi monster
    # Above 400 dpi OCR gains nothing but time: a whole fraction of the scan's resolution
    # (600 -> 300) still maps its pixels evenly, 2x2 to one.
    return best[1] / math.ceil(best[1] / 400)


class _ImagePages:
    def __init__(self, src: Source, options: Options) -> None:
        from PIL import Image

        Image.MAX_IMAGE_PIXELS = options.max_image_pixels
        self._Image = Image
        self.src = src
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                self.im = Image.open(src.open())
                self.im.size  # noqa: B018 - the header must parse now, not later
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise ExtractionError(ErrorKind.TOO_LARGE, f"image too large: {exc}") from exc
        except (OSError, SyntaxError, ValueError) as exc:
            raise ExtractionError(ErrorKind.CORRUPT, f"unreadable image: {exc}") from exc

    def image(self, number: int) -> tuple[Image.Image, int | None]:
        Image = self._Image
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                self.im.seek(number - 1)
                frame = self.im.copy()
        except EOFError as exc:
            raise ExtractionError(ErrorKind.CORRUPT, f"frame {number} missing") from exc
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise ExtractionError(ErrorKind.TOO_LARGE, f"image too large: {exc}") from exc
        except (OSError, SyntaxError, ValueError) as exc:
            raise ExtractionError(ErrorKind.CORRUPT, f"unreadable image: {exc}") from exc
        # No scaling here, whatever the image's resolution tag says (most real page
        # images say 72 or 96 dpi whatever their size): the scale is chosen from the
        # height of the text itself (prep.prepare).
        return _flatten(frame), None

    def close(self) -> None:
        self.im.close()


def _flatten(img: Image.Image) -> Image.Image:
    """Grey on white: transparency over white (a WebP/PNG with alpha), palettes resolved."""
    from PIL import Image

    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        bg = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        img = Image.alpha_composite(bg, rgba)
    if img.mode == "1":
        return img.convert("L")
    return img.convert("L") if img.mode != "L" else img


@contextmanager
def open_pages(src: Source, mime: str, options: Options) -> Iterator[_PdfPages | _ImagePages]:
    if mime != d.PDF:
        from ..extractors.image import pillow_plugin

        pillow_plugin(mime)
    pager: _PdfPages | _ImagePages = _PdfPages(src, options) if mime == d.PDF else \
        _ImagePages(src, options)
    try:
        yield pager
    finally:
        pager.close()


def read_page(pager: _PdfPages | _ImagePages, number: int, lang: str, *,
              want_pdf: bool = False) -> PageOcr:
    """Read one page: its pixels made ready (``prep.prepare``: scale from the height of
    its text, background evened, clutter erased), then recognised the right way up."""
    from . import prep

    img, dpi = pager.image(number)
    ready = prep.prepare(img)
    if isinstance(pager, _PdfPages) and dpi is not None and pager.scan and ready.scale < 1:
        # A scan read much smaller: at a whole fraction of its resolution (600 -> 300
        # dpi), so its pixels are averaged evenly; a little smaller (300 dpi body text),
        # as prepared (averaged by a box filter).
        whole = 1 / max(1, round(1 / ready.scale))
        if whole < 1:
            img, dpi = pager.image(number, dpi=dpi * whole)
            ready = prep.prepare(img, scale=1.0)
    if isinstance(pager, _PdfPages) and dpi is not None and pager.rendered and ready.scale > 1:
        # Small print on a rendered page: rendered again at the resolution its text asks
        # for, which draws vector text sharper than enlarging the bitmap would.
        img, dpi = pager.image(number, dpi=dpi * ready.scale)
        ready = prep.prepare(img, scale=1.0)
    # An image is read at its own pixels whatever its resolution tag says, a PDF page at
    # the resolution it was rendered at, each then scaled for its text.
    hint = HINT_DPI if dpi is None else max(50, round(dpi * ready.scale))
    log.debug("page %s: glyphs %s px, scale %.3f, inverted %s, flattened %s, erased %s",
              number, ready.glyph_px, ready.scale, ready.inverted, ready.flattened,
              ready.erased)
    result = read_upright(ready.image, lang, hint, want_pdf=want_pdf, glyphs=ready.glyphs)
    if dpi is None:
        result.scale = ready.scale
    else:
        result.dpi = hint
        result.scale = hint / 72
    return result


def read_upright(img: Image.Image, lang: str, dpi: int, *, want_pdf: bool = False,
                 glyphs: Any = None) -> PageOcr:
    """Recognise a page whatever way up it was scanned, paying for orientation only when
    the page does not read well as it lies.

    Most pages are upright: they are read once, and if that reads well we are done. Only
    otherwise is Tesseract's orientation detector asked; when it is sure, its angle is
    tried; when it is not (common on real scans, where the usual tools then read the page
    as it lies and return garbage), each orientation is tried on a small, cheap sample and
    the one that reads best wins. The best full reading is kept either way.
    """
    first = engine.recognize(img, lang, dpi=dpi, want_pdf=want_pdf)
    if not _WORD.search(first.text):
        # Page segmentation found no text block: a label, a logo, a few scattered words.
        sparse = engine.recognize(img, lang, dpi=dpi, want_pdf=want_pdf, psm=engine.PSM_SPARSE)
        if _score(sparse) > _score(first):
            first = sparse
    best, best_angle, best_img = first, 0, img
    if not _reads_well(first):
        angle = _orientation(img, lang, dpi)
        if angle:
            turned_img = img.rotate(angle, expand=True)
            turned = engine.recognize(turned_img, lang, dpi=dpi, want_pdf=want_pdf)
            if _score(turned) > _score(first):
                best, best_angle, best_img = turned, angle, turned_img
    as_read = best.text  # Tesseract's reading, which its own text-only page holds
    try:
        if best_angle == 0:
            best = _read_missed(best_img, best, lang, dpi, glyphs)
        best = _tables_as_blocks(best_img, best, lang, dpi,
                                 glyphs if best_angle == 0 else None)
        best, _ = reread.second_look(best_img, best, lang, dpi)
    except Exception:  # a second look only ever improves a reading: never lose the first
        log.warning("second look at weak lines failed", exc_info=True)
    pdf = best.pdf
    if want_pdf and best.lines and best.text != as_read:
        # The searchable page holds the words as finally read, not Tesseract's first go.
        pdf = textlayer.page_pdf(best.lines, best_img.size, dpi) or pdf
    return PageOcr(0, text=best.text, confidence=best.confidence, rotation=best_angle,
                   pdf=pdf)


def _tables_as_blocks(img: Image.Image, rec: engine.Recognized, lang: str, dpi: int,
                      glyphs: Any = None) -> engine.Recognized:
    """Tables read in rows, each row again where the first reading fell short.

    Automatic page segmentation cuts a table into columns and drops what falls between
    them (a lone page number, the first digit of right-aligned prices), or reads a column
    of digits as vertical text. Where it found a table (``layout.tables``), the table's
    words are put in rows, and a row with ink no word covers (``glyphs``, from
    prep.prepare) or a word read with little confidence is read again as one line across
    the whole table (``--psm 7``). The two readings of the row are merged word by word
    (``layout.fuse``): where they overlap the more confident word is kept, where only one
    read something its word is taken. Rows that read well cost nothing more."""
    from .layout import Line, fuse, text_of

    if not rec.lines:
        return rec
    lines = list(rec.lines)
    changed = False
    # Last table first, so that the line indices of the others still hold.
    for box, ids in sorted(layout_tables(lines), key=lambda t: -min(t[1])):
        block = lines[ids[0]].block
        rows: list[Line] = []
        for row in fuse([lines[i] for i in ids], [], (0, 0), block):
            _x0, y0, _x1, y1 = row.box
            band = (box[0], y0, box[2], y1)
            weak = min(w.conf for w in row.words) < SURE or glyphs is None or \
                _missed(glyphs, [row], band) > 0
            if weak:
                h = max(1, y1 - y0)
                crop = (max(0, box[0] - h), max(0, y0 - h // 2), min(img.width, box[2] + h),
                        min(img.height, y1 + h // 2))
                words = engine.read_line(img.crop(crop), lang, dpi=dpi)
                if words:
                    rows += fuse([row], [Line(words, block, -1)], crop[:2], block)
                    continue
            rows.append(row)
        keep = [ln for i, ln in enumerate(lines) if i not in set(ids)]
        at = min(ids)
        lines = keep[:at] + rows + keep[at:]
        changed = True
    if changed:
        rec.lines = lines
        rec.text = text_of(lines)
    return rec


SURE = 70.0  # a word read with this confidence needs no second reading of its table


def _read_missed(img: Image.Image, rec: engine.Recognized, lang: str, dpi: int,
                 glyphs: Any) -> engine.Recognized:
    """Text the page segmentation left out, read where it lies.

    Tesseract's page segmentation drops whole groups of letters it takes for a picture
    or for noise: the column of prices or times at the far end of a table's leaders,
    the labels of a chart, a stamp in a margin. prep.prepare found every glyph-like
    component of the page (``glyphs``); those of the body text's height that no word
    covers, in clusters of at least ``MISSED_MIN`` (a line's worth: not a speck or a
    stray dot), are read again, each cluster cropped and read as one block of text
    (``--psm 6``), and its confident words join the page as a block of their own, where
    the cluster begins (beside a table's rows, ``layout`` then puts them in their rows).
    A page whose words cover its ink, the common case, costs one pass over the glyph
    boxes."""
    import numpy as np
    from scipy import ndimage

    from .layout import Line, text_of

    if glyphs is None or len(glyphs) < MISSED_MIN or not rec.lines:
        return rec
    hs = glyphs[:, 3] - glyphs[:, 1]
    g = float(np.median(hs))
    cell = max(4, int(g))
    covered = np.zeros((img.height // cell + 2, img.width // cell + 2), bool)
    for ln in rec.lines:
        for w in ln.words:
            x0, y0, x1, y1 = w.box
            covered[max(0, y0) // cell:y1 // cell + 1, max(0, x0) // cell:x1 // cell + 1] = True
    cx = np.clip((glyphs[:, 0] + glyphs[:, 2]) // 2 // cell, 0, covered.shape[1] - 1)
    cy = np.clip((glyphs[:, 1] + glyphs[:, 3]) // 2 // cell, 0, covered.shape[0] - 1)
    missed = (hs >= 0.6 * g) & (hs <= 2.5 * g) & ~covered[cy, cx]
    if missed.sum() < MISSED_MIN:
        return rec
    grid = np.zeros_like(covered)
    grid[cy[missed], cx[missed]] = True
    # Letters of a word and words of a line join across two cells; lines across one.
    lab, n = ndimage.label(ndimage.binary_dilation(grid, structure=np.ones((3, 5), bool)))
    counts = np.bincount(lab[cy[missed], cx[missed]], minlength=n + 1)
    lines = list(rec.lines)
    block = max(ln.block for ln in lines)
    budget = MISSED_AREA * img.width * img.height
    reads: list = []  # (top, left, lines) of each crop that gave words
    for (r0, c0, r1, c1), count in _columns(ndimage.find_objects(lab), counts[1:], covered):
        if count < MISSED_MIN:
            continue
        crop = (max(0, (c0 - 1) * cell), max(0, (r0 - 1) * cell),
                min(img.width, (c1 + 1) * cell), min(img.height, (r1 + 1) * cell))
        area = (crop[2] - crop[0]) * (crop[3] - crop[1])
        if area > budget:
            continue
        budget -= area
        sub = engine.read_block(img.crop(crop), lang, dpi=dpi)
        if sub is None:  # no in-process engine: not worth a process a part
            break
        block += 1
        found = []
        for ln in sub:
            words = [_placed(w, crop) for w in ln.words
                     if w.conf >= MISSED_CONF and any(ch.isalnum() for ch in w.text)]
            words = [w for w in words if not covered[
                min(covered.shape[0] - 1, (w.box[1] + w.box[3]) // 2 // cell),
                min(covered.shape[1] - 1, (w.box[0] + w.box[2]) // 2 // cell)]]
            if words:
                found.append(Line(words, block, block * 10_000))
        if found:
            reads.append((crop[1], crop[0], found))
    for top, _left, found in sorted(reads, key=lambda r: (r[0] // (2 * cell), r[1])):
        at = next((i for i, ln in enumerate(lines) if ln.box[1] > top), len(lines))
        lines[at:at] = found
        log.debug("read where nothing was: %s", " / ".join(ln.text for ln in found))
    if len(lines) != len(rec.lines):
        rec.lines = lines
        rec.text = text_of(lines)
    return rec


def _columns(boxes: list, counts: Any, covered: Any) -> list:
    """Clusters of missed glyphs (grid boxes) joined: those one above the other (a column
    of prices, one a row) or side by side (the labels under a chart) make one crop, read
    in one call, when the box they make holds little that was read; the largest first,
    at most ``MISSED_REGIONS``. Each: ((top, left, bottom, right), glyphs)."""
    items = sorted(((sl[0].start, sl[1].start, sl[0].stop, sl[1].stop), int(c))
                   for sl, c in zip(boxes, counts, strict=True) if sl is not None and c)
    out: list = []
    for box, count in items:
        for k, (other, n) in enumerate(out):
            # One above the other (a column) or side by side (a row of labels).
            if (box[1] < other[3] and other[1] < box[3]) or \
                    (box[0] < other[2] and other[0] < box[2]):
                joined = (min(box[0], other[0]), min(box[1], other[1]),
                          max(box[2], other[2]), max(box[3], other[3]))
                inside = covered[joined[0]:joined[2], joined[1]:joined[3]]
                if inside.mean() <= 0.2:
                    out[k] = (joined, n + count)
                    break
        else:
            out.append((box, count))
    return sorted(out, key=lambda t: -t[1])[:MISSED_REGIONS]


def _placed(w: Any, crop: tuple[int, int, int, int]) -> Any:
    from .layout import Word

    return Word(w.text, w.conf, (w.box[0] + crop[0], w.box[1] + crop[1],
                                 w.box[2] + crop[0], w.box[3] + crop[1]))


MISSED_MIN = 4  # uncovered glyphs that make a cluster worth reading again
MISSED_REGIONS = 8  # at most this many clusters a page (the largest first)
MISSED_AREA = 0.35  # ... covering at most this share of the page in all
MISSED_CONF = 60.0  # words read there with less confidence are noise read as letters


def _missed(glyphs: Any, lines: list, box: tuple[int, int, int, int]) -> int:
    """How many of the glyphs inside ``box`` no word of ``lines`` covers (what the
    reading dropped: a lone page number, a price's first digit)."""
    import numpy as np

    cx = (glyphs[:, 0] + glyphs[:, 2]) // 2
    cy = (glyphs[:, 1] + glyphs[:, 3]) // 2
    inside = (cx >= box[0]) & (cx < box[2]) & (cy >= box[1]) & (cy < box[3])
    if not inside.any():
        return 0
    cx, cy = cx[inside] - box[0], cy[inside] - box[1]
    grid = np.zeros(((box[3] - box[1]) // 4 + 2, (box[2] - box[0]) // 4 + 2), bool)
    for ln in lines:
        for w in ln.words:
            x0, y0, x1, y1 = w.box
            grid[max(0, y0 - box[1] - 3) // 4:(y1 - box[1] + 3) // 4 + 1,
                 max(0, x0 - box[0] - 3) // 4:(x1 - box[0] + 3) // 4 + 1] = True
    return int((~grid[cy // 4, cx // 4]).sum())


def _reads_well(rec: engine.Recognized) -> bool:
    return rec.confidence >= 70 and len(_WORD.findall(rec.text)) >= 5


def _score(rec: engine.Recognized) -> float:
    """How well a reading reads: confident and made of words (garbage is neither)."""
    return max(rec.confidence, 0) * min(len(_WORD.findall(rec.text)), 40)


def _orientation(img: Image.Image, lang: str, dpi: int) -> int:
    """Degrees (counter-clockwise) that make the page upright, 0 if it already is."""
    small, small_dpi = _sample(img, dpi)
    guess = engine.orientation(small)
    if guess is not None and guess[1] >= TRUST_OSD:
        return guess[0] % 360
    candidates = [0, 180, 90, 270]
    if guess is not None and guess[0] in candidates:  # try the detector's guess first
        candidates.remove(guess[0])
        candidates.insert(0, guess[0])
    best, best_score = 0, -1.0
    for angle in candidates:
        probe = small.rotate(angle, expand=True) if angle else small
        score = _score(engine.recognize(probe, lang, dpi=small_dpi))
        if score > best_score:
            best, best_score = angle, score
    return best


def _sample(img: Image.Image, dpi: int) -> tuple[Image.Image, int]:
    """The page at 150 dpi: enough to judge orientation, several times cheaper."""
    from PIL import Image

    if dpi <= 200:
        return img, dpi
    factor = 150 / dpi
    size = (max(1, round(img.width * factor)), max(1, round(img.height * factor)))
    return img.resize(size, Image.Resampling.BILINEAR), 150
