"""Pixels made ready for tesseract: dark text on white, at the scale the text asks for.

Real page images lie about their size: most carry a 96 or 72 dpi tag whatever their
pixels, so a resolution tag says nothing about how large the type is. What Tesseract's
recogniser cares about is the height of the glyphs in pixels; this module measures it on
the page itself (the connected components of a binarised copy: most of them are letters)
and scales the page so that its body text has the height Tesseract reads best at. The
same pass finds what Tesseract reads as letters though they are none (dotted leaders,
dotted and dashed box edges, ruled lines) and erases it, and evens out pages that are not
black on white: light-on-dark regions are inverted, and tinted, textured or unevenly lit
backgrounds are divided out, region by region, so Tesseract's global threshold sees one
white paper everywhere.

All of it is numpy and scipy.ndimage on the page's own pixels, a few tenths of a second
for a 3,000-pixel page: far less than what reading a page at the wrong scale costs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

log = logging.getLogger(__name__)

# Median height of the glyph components (about the x-height) Tesseract reads best at, in
# pixels: its LSTM lines are scaled to a fixed height anyway, so larger glyphs buy no
# accuracy, only time in layout analysis; smaller ones lose strokes. On 20 pages of
# bench/ocr_devset.py (``bench_ocr.py --only real --target N --limit 20``), 18, 22 and 26
# px gave 95.6%, 96.4% and 96.3% word accuracy at 1.7, 2.2 and 2.4 s of CPU a page.
TARGET_GLYPH_PX = 22.0
MIN_SCALE, MAX_SCALE = 0.25, 4.0
# Scales in this range are not worth resampling the page for. Upwards the range is wide:
# glyphs of 12 pixels read as well as larger ones, and resampling a scan by an uneven
# factor blurs and shifts its strokes (more character errors on 200-dpi scans). Downwards
# it is narrow: averaging pixels (a box filter) loses nothing Tesseract needs, and its
# page layout analysis costs by the pixel. Body text scanned at 300 dpi (glyphs of ~25
# px) read at 0.88x cost 9% less CPU and read as well (``bench_ocr.py --only synthetic``:
# CER 0.024% against 0.028% at 1x; 0.8x: 0.041%).
KEEP = (0.95, 1.8)
MAX_PIXELS = 36_000_000  # never make a page larger than this (memory, see raster.py)
DARK_BACKGROUND = 105  # a region whose paper is darker than this holds light text
CELL = 16  # background cells, in pixels of the input


@dataclass
class Prepared:
    """A page ready to read, and what was measured and done to get it."""

    image: Image.Image  # grey, dark text on white
    scale: float  # pixels of ``image`` per pixel of the input
    glyph_px: float | None  # median glyph height measured in the input, None: no text
    inverted: bool = False  # light-on-dark regions were inverted
    flattened: bool = False  # the background was divided out
    erased: int = 0  # leader dots, dotted or dashed edges, rules, grids taken out
    # Boxes (left, top, right, bottom, in ``image``'s pixels) of the glyph-like ink: what
    # the reading should account for (raster.py looks again where it did not).
    glyphs: np.ndarray | None = None


def prepare(img: Image.Image, *, scale: float | None = None) -> Prepared:
    """``img`` (grey) made ready for Tesseract; ``scale`` forces the scale (a PDF page
    already rendered at the resolution its text asks for), otherwise it is chosen from
    the text."""
    import numpy as np
    from PIL import Image

    a = np.asarray(img.convert("L") if img.mode != "L" else img)
    flat, inverted, flattened = _even_background(a)
    glyph_px, erase, glyphs = _measure(flat)
    if scale is None:
        scale = choose_scale(glyph_px, a.shape[1], a.shape[0])
    erased = 0
    if erase:
        flat = flat.copy() if flat is a else flat
        erased = len(erase)
        for box, mask in erase:
            if mask is None:
                flat[box] = 255
            else:
                flat[box][mask] = 255
    out = Image.fromarray(flat) if (flat is not a) else img.convert("L")
    if abs(scale - 1.0) > 1e-3:
        size = (max(1, round(out.width * scale)), max(1, round(out.height * scale)))
        out = out.resize(size, Image.Resampling.LANCZOS if scale > 1 else
                         Image.Resampling.BOX, reducing_gap=None if scale > 1 else 2.0)
    if glyphs is not None and abs(scale - 1.0) > 1e-3:
        glyphs = np.round(glyphs * scale).astype(np.int32)
    return Prepared(out, scale, glyph_px, inverted, flattened, erased, glyphs)


def _measure(flat: np.ndarray) -> tuple[float | None, list[Patch], np.ndarray | None]:
    """``_components`` of the page's ink.

    Labelling the components of a large page costs a tenth of its reading, so a large
    page is looked at on a half-size copy first (a quarter of the pixels): its glyphs are
    measured there, and only if that copy shows clutter too (leaders, dotted or dashed
    lines, rules, frames) is the page measured again at full size, where the clutter is
    found to erase (half size loses the dots of dotted rules, which then come out in
    pieces Tesseract reads as letters). A page of plain text, the common case, is
    labelled once, at a quarter of the cost."""
    import numpy as np
    from PIL import Image

    h, w = flat.shape
    if h * w >= HALF_SIZE_PIXELS:
        half = np.asarray(Image.fromarray(flat).reduce(2))
        glyph_px, erase, glyphs = _components(half < _threshold(half))
        if glyph_px is not None and glyph_px >= HALF_SIZE_MIN_GLYPH and not erase:
            # A glyph of h pixels covers about h/2 + 1/2 pixels of the half-size copy.
            return 2 * glyph_px - 1, [], None if glyphs is None else glyphs * 2
    return _components(flat < _threshold(flat))


HALF_SIZE_PIXELS = 4_000_000  # pages this large are measured on a half-size copy first
HALF_SIZE_MIN_GLYPH = 8  # ... if their glyphs are this tall there (smaller: full size)


def choose_scale(glyph_px: float | None, width: int, height: int) -> float:
    """The scale that brings the measured glyphs to ``TARGET_GLYPH_PX``: 1 when close
    enough (or nothing was measured), bounded, and never above ``MAX_PIXELS``."""
    if not glyph_px:
        return 1.0
    s = TARGET_GLYPH_PX / glyph_px
    if KEEP[0] <= s <= KEEP[1]:
        return 1.0
    if s > 1:  # enlarged by a whole factor: each pixel becomes an even block of pixels
        s = float(min(MAX_SCALE, round(s)))
        while s > 1 and s * s * width * height > MAX_PIXELS:
            s -= 1
        return max(1.0, s)
    return round(max(MIN_SCALE, s), 3)


# -- background --------------------------------------------------------------------------

def _even_background(a: np.ndarray) -> tuple[np.ndarray, bool, bool]:
    """The page with its paper made white and its text dark: (pixels, inverted anything,
    divided the background out). A page that is already dark text on even white paper is
    returned as it is (the common case costs one coarse look).

    Regions are the parts of the page whose paper has one shade (a slide's background, a
    table's dark header row, a shaded box): on a coarse copy of the page, the median of a
    few cells is the paper (text is the minority), and neighbouring cells of a similar
    paper make a region. Each region votes: if what departs from its paper is mostly
    lighter than it, its text is light and the region is turned over. Then the paper is
    estimated again (a local maximum: the lightest the page gets nearby) and divided out,
    which whitens tints, gradients, uneven light and most of a texture."""
    import numpy as np
    from PIL import Image
    from scipy import ndimage

    h, w = a.shape
    red = max(2, min(h, w) // 320)
    if min(h, w) < 8 * red:
        return a, False, False
    small = np.asarray(Image.fromarray(a).reduce(red)).astype(np.int16)
    # Separable 9x9 median (rows, then columns): far cheaper than the square one and as
    # good at telling paper from the text on it, for text lines up to ~4 cells tall.
    paper = ndimage.median_filter(ndimage.median_filter(small, size=(1, 9), mode="nearest"),
                                  size=(9, 1), mode="nearest")
    # White, evenly lit paper (a few cells of dense text aside): Tesseract needs no help.
    low, high = np.percentile(paper, (0.5, 99.5))
    if low >= 185 and high - low <= 45:
        return a, False, False
    levels = paper // 48
    invert = np.zeros(small.shape, bool)
    regions = np.zeros(small.shape, np.int32)
    n = 0
    for lev in np.unique(levels):  # one region per shade of paper and place
        lab, k = ndimage.label(levels == lev)
        regions[lab > 0] = lab[lab > 0] + n
        n += k
    dev = small - paper
    lighter = ndimage.sum_labels(np.maximum(dev - 8, 0), regions, np.arange(1, n + 1))
    darker = ndimage.sum_labels(np.maximum(-dev - 8, 0), regions, np.arange(1, n + 1))
    size = ndimage.sum_labels(np.ones_like(dev), regions, np.arange(1, n + 1))
    # Only regions large enough to hold a line of text vote, and only those with text
    # on them decide: light text (turn over) or dark text (keep). A smaller region is the
    # inside of a bold letter, the paper between the letters of a large line, a speck of
    # a picture; an undecided one is empty paper. Both go with the nearest region that
    # decided (the slide or band around them, the same slide past its gradient), so one
    # paper is never turned over in one place and not in the next.
    large = size >= max(150, 0.002 * small.size)
    light, dark = _votes(small, regions, large, lighter, darker, size)
    decided = np.concatenate(([False], light | dark))
    flip = np.concatenate(([False], light))
    if flip.any():
        known = decided[regions]
        if known.all():
            invert = flip[regions]
        else:
            iy, ix = ndimage.distance_transform_edt(~known, return_distances=False,
                                                    return_indices=True)
            invert = flip[regions[iy, ix]]
    fixed_small = np.where(invert, 255 - small, small).astype(np.uint8)
    lightest = ndimage.maximum_filter(fixed_small, size=5, mode="nearest")
    lightest = ndimage.uniform_filter(lightest, size=5, mode="nearest")
    # Paper still dark here was not turned over (a band too thin to be found, a photo):
    # dividing by it would whiten the gaps between its letters and not the letters'
    # surroundings, so it is left as it is, and Tesseract tries such lines inverted.
    # Unless its text was found darker than it: a shadow across a photographed receipt
    # or a page, whose dark letters dividing brings out.
    shadow = np.concatenate(([False], dark))[regions] & ~invert
    # On a page that is mostly white paper, inside a bold or large letter the 5-cell
    # maximum above finds only ink, and dividing by it would whiten the letter: there a
    # shadow is only where no paper is found within the median's 9 cells either (a wide
    # band). A photographed page under a shadow has little white paper left at all.
    if (paper >= 200).mean() > 0.5:
        shadow &= ndimage.maximum_filter(fixed_small, size=9, mode="nearest") < 128
    lightest[(lightest < 128) & ~shadow] = 255
    np.maximum(lightest, 16, out=lightest)  # never divide by nothing
    big_paper = np.asarray(Image.fromarray(lightest).resize(
        (w, h), Image.Resampling.BILINEAR))
    x = a
    if invert.any():
        big_inv = np.asarray(Image.fromarray(invert.astype(np.uint8) * 255).resize(
            (w, h), Image.Resampling.NEAREST)) > 127
        x = np.where(big_inv, 255 - a, a)
    out = np.minimum(x.astype(np.uint16) * 255 // big_paper, 255).astype(np.uint8)
    return out, bool(invert.any()), True


def _votes(small: np.ndarray, regions: np.ndarray, large: np.ndarray, lighter: np.ndarray,
           darker: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which large regions hold light text, which dark text (neither: no text on them).

    First by the spread of the region's shades: text is the tail on one side of the
    paper (a dark band's bold white letters pull its local median up, so the spread says
    more than the departures from that median). Where the tail is too thin to show (a
    few words on a whole slide), by the departures from the local paper: ten times as
    much on one side, and more than the grain of the paper."""
    import numpy as np

    light = np.zeros(len(size), bool)
    dark = np.zeros(len(size), bool)
    for i in np.flatnonzero(large):
        p2, p50, p98 = np.percentile(small[regions == i + 1], (2, 50, 98))
        up, down = p98 - p50, p50 - p2
        if up > 2 * down and up > 25:
            light[i] = True
        elif down > 2 * up and down > 25:
            dark[i] = True
        elif max(lighter[i], darker[i]) >= 0.2 * size[i]:
            light[i] = lighter[i] > 10 * darker[i]
            dark[i] = darker[i] > 10 * lighter[i]
    return light, dark


def _threshold(a: np.ndarray) -> int:
    """The ink threshold for measuring: Otsu's (on a subsample: the histogram is all it
    needs), but never above half way from the darkest ink to the paper, which on a
    grainy or textured page would split the grain instead of finding the letters."""
    import numpy as np

    sample = a[::4, ::4]
    ink, paper = np.percentile(sample, (0.5, 50))
    return min(_otsu(sample), max(1, int((ink + paper) / 2)))


def _otsu(sample: np.ndarray) -> int:
    import numpy as np

    hist = np.bincount(sample.ravel(), minlength=256).astype(np.float64)
    total = hist.sum()
    if total == 0:
        return 128
    levels = np.arange(256)
    w0 = np.cumsum(hist)
    m0 = np.cumsum(hist * levels)
    w1 = total - w0
    mean_all = m0[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (mean_all * w0 / total - m0) ** 2 / (w0 * w1)
    between[~np.isfinite(between)] = 0
    t = int(np.argmax(between))
    return max(t, 1)


# -- components ---------------------------------------------------------------------------

def _components(ink: np.ndarray, want_erase: bool = True
                ) -> tuple[float | None, list[Patch], np.ndarray | None]:
    """Median glyph height, and the pixels to erase (leaders, dotted/dashed lines, rules).

    Glyphs: components neither tiny (specks) nor huge (pictures, frames), not much wider
    than tall, with some ink in their box, and not part of a run of dots (a dotted table
    has thousands of them, and they would drag the median down to their size). The
    median height of the glyphs sits near the x-height of the body text (a little
    above), whatever the typeface."""
    import numpy as np
    from scipy import ndimage

    labels, n = ndimage.label(ink, structure=np.ones((3, 3), bool))
    if n == 0:
        return None, [], None
    boxes = ndimage.find_objects(labels)
    hs = np.fromiter((s[0].stop - s[0].start for s in boxes), np.int32, n)
    ws = np.fromiter((s[1].stop - s[1].start for s in boxes), np.int32, n)
    ys = np.fromiter((s[0].start + s[0].stop for s in boxes), np.float32, n) / 2
    xs = np.fromiter((s[1].start + s[1].stop for s in boxes), np.float32, n) / 2
    area = np.bincount(labels[ink], minlength=n + 1)[1:]  # ink only: a tenth of the page
    fill = area / (hs * ws)
    comps = _Comps(hs, ws, ys, xs, fill)
    # Solid dots and dashes in even runs, whatever the text size (a gap of up to six
    # times their own size): leaders, dotted rules, dotted boxes.
    solid = np.flatnonzero((fill >= 0.45) & (hs <= 2.2 * ws) & (hs <= 48) & (area >= 2))
    dots = np.zeros(n, bool)
    if len(solid) >= RUN:
        gap = 6.0 * np.maximum(hs, ws)
        dots[_runs(comps, solid, gap, across_y=True)] = True
        dots[_runs(comps, solid, gap, across_y=False)] = True
    page_h = ink.shape[0]
    glyph = (hs >= 5) & (hs <= page_h / 6) & (ws <= 3 * hs) & (ws >= 2) & (fill >= 0.12) \
        & ~dots
    glyph_px = None if glyph.sum() < 20 else float(np.median(hs[glyph]))
    if not want_erase or glyph_px is None:
        return glyph_px, [], None
    pick = np.flatnonzero(glyph)
    glyphs = np.stack([xs[pick] - ws[pick] / 2, ys[pick] - hs[pick] / 2,
                       xs[pick] + ws[pick] / 2, ys[pick] + hs[pick] / 2], axis=1)
    return glyph_px, _clutter(labels, boxes, comps, area, dots, glyph_px), \
        glyphs.astype(np.int32)


@dataclass
class _Comps:
    """The connected components of a page: box heights and widths, centres, ink fill."""

    hs: np.ndarray
    ws: np.ndarray
    ys: np.ndarray
    xs: np.ndarray
    fill: np.ndarray


def _clutter(labels: np.ndarray, boxes: list, c: _Comps, area: np.ndarray,
             dots: np.ndarray, glyph_px: float) -> list[Patch]:
    """What Tesseract would read as letters though it is none: runs of dots or dashes
    (leaders, dotted or dashed rules and box edges), long thin rules and the lines of
    table grids and frames.

    A dot or dash: a small, solid component well below the glyph height. It is clutter
    when at least ``RUN`` of the same size sit evenly spaced in a row or a column: a
    period, an ``i``'s dot or the letters of small print never do (their sizes and
    spacing vary, and letters are not solid). A rule: a component far longer than a glyph
    and a stroke or two thick. A frame: a large, mostly empty component; only its long
    straight runs are erased, so text that touches a grid line keeps its letters."""
    import numpy as np

    hs, ws = c.hs, c.ws
    erase_ids: list[int] = []
    small = np.flatnonzero(dots & (hs <= 0.45 * glyph_px) & (ws <= 1.6 * glyph_px))
    if len(small) >= RUN:
        erase_ids += _runs(c, small, np.full(len(hs), 1.6 * glyph_px), across_y=True)
        erase_ids += _runs(c, small, np.full(len(hs), 1.0 * glyph_px), across_y=False)
    thin = max(2.0, 0.3 * glyph_px)
    long_ = 6 * glyph_px
    erase_ids += np.flatnonzero(((ws >= long_) & (hs <= thin))
                                | ((hs >= long_) & (ws <= thin))).tolist()
    from scipy import ndimage

    h, w = labels.shape
    pad = 2  # the grey fringe around each dot and rule: left behind, it reads as specks
    out: list[Patch] = []
    for i in sorted(set(erase_ids)):
        sl = boxes[i]
        out.append(((slice(max(0, sl[0].start - pad), min(h, sl[0].stop + pad)),
                     slice(max(0, sl[1].start - pad), min(w, sl[1].stop + pad))), None))
    frames = np.flatnonzero((ws >= long_) & (hs >= long_) & (c.fill < 0.08))
    for i in frames.tolist():
        sl = boxes[i]
        comp = labels[sl] == i + 1
        lines = np.zeros_like(comp)
        lines[comp.sum(axis=1) >= 0.5 * comp.shape[1], :] = True
        lines[:, comp.sum(axis=0) >= 0.5 * comp.shape[0]] = True
        lines &= comp
        if lines.any():
            out.append((sl, ndimage.binary_dilation(lines, iterations=pad)))
    return out


# A box of the page to make white: all of it, or where the mask says.
Patch = tuple[tuple[slice, slice], "np.ndarray | None"]


RUN = 5  # dots or dashes in a row that make a leader or a dotted line


def _runs(c: _Comps, idx: np.ndarray, max_gap: np.ndarray, *, across_y: bool) -> list[int]:
    """The components of ``idx`` that form runs of ``RUN`` or more along a row
    (``across_y``: centres at one height) or a column: neighbours alike in size (within
    30%), on one line (centres within half their size), no gap above ``max_gap`` of the
    first of the two, and evenly spaced (each gap within a quarter of the one before).
    Vectorised: a dotted page has thousands of dots."""
    import numpy as np

    if len(idx) < RUN:
        return []
    across, along = (c.ys, c.xs) if across_y else (c.xs, c.ys)
    # Bands as wide as a dot, twice, the second shifted by half a band: a row of dots
    # whose centres straddle a band's edge is whole in one of the two.
    q = max(2.0, float(np.median((c.hs if across_y else c.ws)[idx])))
    out: set[int] = set()
    for shift in (0.0, 0.5):
        out.update(_runs_in(c, idx, max_gap, across, along, across_y,
                            np.floor(across[idx] / q + shift)))
    return sorted(out)


def _runs_in(c: _Comps, idx: np.ndarray, max_gap: np.ndarray, across: np.ndarray,
             along: np.ndarray, across_y: bool, band: np.ndarray) -> list[int]:
    import numpy as np

    size_across, size_along = (c.hs, c.ws) if across_y else (c.ws, c.hs)
    order = idx[np.lexsort((along[idx], band))]
    a0, a1 = order[:-1], order[1:]
    sa0, sa1 = size_across[a0].astype(np.float32), size_across[a1].astype(np.float32)
    sl0, sl1 = size_along[a0].astype(np.float32), size_along[a1].astype(np.float32)
    gap = along[a1] - along[a0]
    link = ((np.abs(across[a1] - across[a0]) <= np.maximum(1.5, 0.5 * sa0))
            & (np.abs(sa1 - sa0) <= np.maximum(2, 0.3 * sa0))
            & (np.abs(sl1 - sl0) <= np.maximum(2, 0.3 * sl0))
            & (gap > 0) & (gap <= max_gap[a0]))
    # Evenness: a link counts when its gap matches the gap of the link before or after.
    prev_even = np.zeros_like(link)
    prev_even[1:] = link[1:] & link[:-1] & (np.abs(gap[1:] - gap[:-1]) <= 0.25 * gap[:-1] + 1)
    next_even = np.zeros_like(link)
    next_even[:-1] = prev_even[1:]
    good = link & (prev_even | next_even)
    # Runs: maximal stretches of good links; a stretch of k links holds k + 1 components.
    out: list[int] = []
    padded = np.concatenate(([False], good, [False])).astype(np.int8)
    starts = np.flatnonzero(np.diff(padded) == 1)
    ends = np.flatnonzero(np.diff(padded) == -1)
    for s0, e0 in zip(starts.tolist(), ends.tolist(), strict=True):
        if e0 - s0 + 1 >= RUN:
            out += order[s0:e0 + 1].tolist()
    return out
