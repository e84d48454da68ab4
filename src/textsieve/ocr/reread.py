"""A second look at the lines Tesseract read with low confidence, as Scribe.js does with its
two engines: each such line is read again another way and the reading Tesseract is more
confident of is kept.

Debian's language data (tesseract-ocr-eng, the "fast" LSTM models) carries no legacy
engine, so the other way is not another engine but other pixels: the line at the scale
its own text asks for (a heading or a footnote is not the size of the body text the page
was scaled for; a line the page's scale already suits is tried larger), and the line
binarised by Sauvola's local threshold instead of Otsu's global one (stains, shadows,
text on a tinted box). Tesseract's fast models misread some lines at one scale and not
at another (a page number "31" read "ot" with 62% confidence reads "31" with 96% at
0.6x): the line is tried smaller and larger, and the search ends at the first confident
reading. Only the weak lines are looked at again, at most a share of the
page, so a page that reads well costs nothing more and a bad one at most a fraction more.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from . import engine
from .layout import Line, Word, text_of

if TYPE_CHECKING:
    from PIL import Image

log = logging.getLogger(__name__)

LOW_CONF = 80.0  # lines read with less confidence than this get a second look
LOW_WORD = 75.0  # ... or with a word read with less than this (a number among words)
MAX_SHARE = 0.25  # at most this share of a page's lines (the weakest first)
MIN_LINES = 4  # ... but always this many, on pages of few lines
BETTER = 5.0  # a second reading must be this much more confident to replace the first
LINE_PX = 40.0  # line height (ascenders to descenders) at the scale prep.py aims at
GOOD = 90.0  # a second reading this confident ends the search


def second_look(img: Image.Image, rec: engine.Recognized, lang: str, dpi: int
                ) -> tuple[engine.Recognized, int]:
    """``rec`` with its weak lines replaced by better second readings; how many were."""
    lines = rec.lines
    if not lines:
        return rec, 0
    weak = sorted((ln.conf, i) for i, ln in enumerate(lines)
                  if (ln.conf < LOW_CONF or min(w.conf for w in ln.words) < LOW_WORD)
                  and any(ch.isalnum() for ch in ln.text) and not _upright(ln))
    cap = max(MIN_LINES, int(MAX_SHARE * len(lines)))
    replaced = 0
    for _, i in weak[:cap]:
        better = _reread(img, lines[i], lang, dpi)
        if better is not None:
            lines[i] = better
            replaced += 1
    if replaced:
        rec.lines = lines
        rec.text = text_of(lines)
    return rec, replaced


def _upright(line: Line) -> bool:
    """A "line" standing up: taller than wide with more than a character or two (a lone
    page number may be). It is a column of cells or axis values Tesseract took for
    vertical text; read again as one line of text, its box and the margin around it take
    in whatever label lies near, which then replaced the column (a chart's eight axis
    values became "January" four times). Left as it was read."""
    x0, y0, x1, y1 = line.box
    return y1 - y0 > x1 - x0 and len(line.text.replace(" ", "")) > 2


def _reread(img: Image.Image, line: Line, lang: str, dpi: int) -> Line | None:
    from PIL import Image

    x0, y0, x1, y1 = line.box
    h = max(1, y1 - y0)
    box = (max(0, x0 - round(0.6 * h)), max(0, y0 - round(0.35 * h)),
           min(img.width, x1 + round(0.6 * h)), min(img.height, y1 + round(0.35 * h)))
    crop = img.crop(box)
    own = LINE_PX / h
    first = min(3.0, max(0.3, own)) if not 0.8 <= own <= 1.25 else 0.6
    tries = [(first, 0), (1.5 if first < 1 else 0.6, 0), (1.0, engine.SAUVOLA)]
    best: tuple[float, list[Word], float] | None = None
    for s, threshold in tries:
        if best is not None and best[0] >= GOOD:  # confident throughout: good enough
            break
        pic = crop if s == 1.0 else crop.resize(
            (max(1, round(crop.width * s)), max(1, round(crop.height * s))),
            Image.Resampling.LANCZOS)
        words = engine.read_line(pic, lang, dpi=dpi, threshold=threshold)
        if not words:
            continue
        conf = _strength(Line(words, 0, 0))
        if best is None or conf > best[0]:
            best = (conf, words, s)
    if best is None or best[0] < _strength(line) + BETTER:
        return None
    conf, words, s = best
    if Line(words, 0, 0).conf < line.conf:
        # Surer of its weakest word but less sure overall: a line of good words with one
        # unreadable mark, read again as a few confident-looking scraps ("have been
        # caught ... about" as "= Sane ee 7 :"), would lose its words.
        return None
    placed = [Word(w.text, w.conf, (box[0] + round(w.box[0] / s), box[1] + round(w.box[1] / s),
                                    box[0] + round(w.box[2] / s), box[1] + round(w.box[3] / s)))
              for w in words]
    log.debug("second look: %r (%.0f) -> %r (%.0f)", line.text, line.conf,
              " ".join(w.text for w in placed), conf)
    return Line(placed, line.block, line.para)


def _strength(line: Line) -> float:
    """How sure a reading of a line is: the confidence of its weakest word, or of the
    whole line if that is lower (one misread number among sure words is what a second
    look is for, and the line's mean hardly shows it)."""
    return min(line.conf, min(w.conf for w in line.words))
