"""Development pages for OCR: real-world page kinds with known text, made here, seeded.

Run by hand, with the bench-only environment that has augraphy (MIT) and matplotlib:

    bash bench/ocr_devset_setup.sh   # the fonts below, Chromium, the venv (pinned)
    bench/.peers/ocrdev-venv/bin/python bench/ocr_devset.py [--split dev|aside] [--pages N]

Fonts: DejaVu plus, when installed, Debian's fonts-urw-base35 (Times, Helvetica, Courier,
Bookman, Palatino, Century Schoolbook, Gothic clones), fonts-liberation2, fonts-freefont-ttf
and fonts-crosextra-carlito/-caladea. Headless Chromium (``/usr/bin/chromium``) renders
the screenshot pages; without it those pages are skipped.

Each page is a PNG or JPEG under ``bench/out/ocr-dev/<split>/`` (outside git) with its
true text beside it (``.txt``, one line per line of the page, in reading order: columns
one after the other, tables and forms row by row, leaders and rules left out) and a line
in ``index.json`` (kind, the true x-height in pixels, the DPI tag written). The text comes
from the English articles of the shared articles-dev folder (Readability's test pages),
so vocabulary, names and numbers are real. Page kinds: multi-column articles, tables of
contents and price lists with dotted leaders, ruled tables (some with a dark header row),
forms with boxes and underlined fields, charts (matplotlib: dotted legend boxes, dotted
grids), slides (light text on dark textured or gradient backgrounds; dark bands on light
slides), receipts, line-numbered court filings and deposition transcripts, web page
screenshots, letters; some at low resolution (1,000-1,300 px wide). DPI tags are mostly
wrong, as in the wild: 96 or 72 dpi on 2,500-pixel pages, none, or the true one.

Degradations (augraphy, per page, seeded): ink bleed, low ink lines, dirty drum, noise
textures, brightness and lighting gradients, shadows, JPEG; photographed receipts get
lighting and blur. ``--split aside`` uses other seeds: it is scored only at the end.
"""

from __future__ import annotations

import argparse
import html
import io
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
OUT = ROOT / "bench" / "out" / "ocr-dev"
SEEDS = {"dev": 1000, "aside": 77000}

FONT_DIRS = ("/usr/share/fonts/truetype", "/usr/share/fonts/opentype")
SERIF_NAMES = ("DejaVuSerif", "NimbusRoman", "C059", "P052", "URWBookman", "LiberationSerif",
               "FreeSerif", "Caladea")
SANS_NAMES = ("DejaVuSans", "NimbusSans", "LiberationSans", "FreeSans", "Carlito",
              "URWGothic", "NimbusSansNarrow", "DejaVuSansCondensed")
MONO_NAMES = ("DejaVuSansMono", "NimbusMonoPS", "LiberationMono", "FreeMono")


# -- fonts and words --------------------------------------------------------------------

def _font_files() -> dict[str, str]:
    files: dict[str, str] = {}
    for d in FONT_DIRS:
        for p in sorted(Path(d).rglob("*")):
            if p.suffix.lower() in (".ttf", ".otf"):
                files.setdefault(p.stem, str(p))
    return files


FONTS = _font_files()


def _family(names: tuple[str, ...], style: str) -> list[str]:
    """Font files of these families in one style (regular, bold, italic)."""
    suffixes = {"regular": ("", "-Regular", "-Roman", "-Book", "-Light"),
                "bold": ("-Bold", "-Demi"),
                "italic": ("-Italic", "-Oblique", "-BookOblique", "-LightItalic")}[style]
    out = []
    for name in names:
        for suf in suffixes:
            if name + suf in FONTS:
                out.append(FONTS[name + suf])
                break
    return out


def pick_font(rng: random.Random, kind: str, style: str = "regular") -> str:
    names = {"serif": SERIF_NAMES, "sans": SANS_NAMES, "mono": MONO_NAMES}[kind]
    return rng.choice(_family(names, style) or _family(names, "regular"))


def font(path: str, px: float) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(path, max(6, round(px)))


class _Paragraphs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.out: list[str] = []
        self._buf: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "p":
            self._buf = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "p" and self._buf is not None:
            self.out.append(" ".join("".join(self._buf).split()))
            self._buf = None

    def handle_data(self, data: str) -> None:
        if self._buf is not None:
            self._buf.append(data)


_FOLD = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                       "\u2014": "-", "\u2013": "-", "\u2026": "...", "\xa0": " "})


def load_paragraphs() -> list[str]:
    """English paragraphs of real articles (plain ASCII after folding typography)."""
    paras = []
    for page in sorted((SHARED / "articles-dev").glob("*/expected.html")):
        p = _Paragraphs()
        p.feed(page.read_text("utf-8", errors="replace"))
        for text in p.out:
            text = html.unescape(text).translate(_FOLD)
            words = text.split()
            if len(words) < 12 or not text.isascii() or "http" in text:
                continue
            low = f" {text.lower()} "
            if sum(low.count(f" {w} ") for w in ("the", "and", "of", "to", "a")) < 3:
                continue
            paras.append(text)
    return paras


PARAS: list[str] = []


def para(rng: random.Random, min_words: int = 25, max_words: int = 90) -> str:
    text = rng.choice(PARAS)
    words = text.split()
    if len(words) > max_words:
        start = rng.randrange(0, len(words) - max_words)
        words = words[start:start + rng.randint(min_words, max_words)]
    return " ".join(words)


def phrase(rng: random.Random, lo: int = 2, hi: int = 6) -> str:
    """A few consecutive words of real text, without sentence punctuation at the ends."""
    words = rng.choice(PARAS).split()
    n = rng.randint(lo, hi)
    i = rng.randrange(0, max(1, len(words) - n))
    out = " ".join(words[i:i + n]).strip(".,;:!?\"'()")
    return out[:1].upper() + out[1:] if out else "Summary"


def wrap(text: str, f: ImageFont.FreeTypeFont, width: float) -> list[str]:
    lines, cur = [], ""
    for w in text.split():
        trial = f"{cur} {w}".strip()
        if cur and f.getlength(trial) > width:
            lines.append(cur)
            cur = w
        else:
            cur = trial
    if cur:
        lines.append(cur)
    return lines


def x_height(f: ImageFont.FreeTypeFont) -> float:
    box = f.getbbox("x", anchor="ls")
    return float(box[3] - box[1])


# -- page kinds: each returns (RGB image, truth lines, x-height of the body text) -------

Page = tuple[Image.Image, list[str], float]


def letter_size(dpi: float) -> tuple[int, int]:
    return round(8.5 * dpi), round(11 * dpi)


def article(rng: random.Random, dpi: float) -> Page:
    w, h = letter_size(dpi)
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    kind = rng.choice(("serif", "sans"))
    body = font(pick_font(rng, kind), rng.uniform(8.5, 11.5) / 72 * dpi)
    head = font(pick_font(rng, rng.choice(("serif", "sans")), "bold"),
                rng.uniform(18, 30) / 72 * dpi)
    margin = round(rng.uniform(0.6, 1.0) * dpi)
    cols = rng.choice((1, 2, 2, 3))
    gap = round(0.3 * dpi)
    col_w = (w - 2 * margin - (cols - 1) * gap) / cols
    truth: list[str] = []
    y = margin
    for line in wrap(phrase(rng, 4, 9), head, w - 2 * margin):
        d.text((margin, y), line, font=head, fill="black")
        truth.append(line)
        y += round(head.size * 1.2)
    y += round(body.size * 1.2)
    step = round(body.size * rng.uniform(1.15, 1.4))
    sub = font(pick_font(rng, kind, "bold"), body.size * 1.15)
    top = y
    for c in range(cols):
        x, y = margin + c * (col_w + gap), top
        while y < h - margin - step * 3:
            if rng.random() < 0.15:
                title = phrase(rng, 2, 4)
                if sub.getlength(title) < col_w:
                    d.text((x, y), title, font=sub, fill="black")
                    truth.append(title)
                    y += round(sub.size * 1.5)
            lines = wrap(para(rng), body, col_w)
            for line in lines:
                if y > h - margin - step:
                    break
                d.text((x, y), line, font=body, fill="black")
                truth.append(line)
                y += step
            y += step // 2
    return img, truth, x_height(body)


def _leader_row(d: ImageDraw.ImageDraw, x0: float, x1: float, y: float, label: str,
                value: str, f: ImageFont.FreeTypeFont, style: str) -> None:
    d.text((x0, y), label, font=f, fill="black")
    vw = f.getlength(value)
    d.text((x1 - vw, y), value, font=f, fill="black")
    start, end = x0 + f.getlength(label) + f.size * 0.4, x1 - vw - f.size * 0.4
    base = y + f.getbbox("x")[3]
    if style == "chars":
        dot_w = f.getlength(". ")
        n = int((end - start) / dot_w)
        d.text((end - n * dot_w, y), ". " * n, font=f, fill="black")
    elif style == "dots":
        r = max(1.0, f.size * 0.06)
        step = f.size * rng_step(f)
        x = start
        while x < end:
            d.ellipse((x - r, base - 2 * r, x + r, base), fill="black")
            x += step
    else:  # underscores / dashes
        dash = f.size * 0.35
        x = start
        while x + dash < end:
            d.line((x, base, x + dash, base), fill="black", width=max(1, round(f.size / 14)))
            x += dash * 1.8


def rng_step(f: ImageFont.FreeTypeFont) -> float:
    return 0.45 + (f.size % 5) * 0.05


def leaders(rng: random.Random, dpi: float) -> Page:
    w, h = letter_size(dpi)
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    kind = rng.choice(("serif", "sans"))
    body = font(pick_font(rng, kind), rng.uniform(9, 12) / 72 * dpi)
    head = font(pick_font(rng, kind, "bold"), rng.uniform(16, 22) / 72 * dpi)
    margin = round(rng.uniform(0.8, 1.2) * dpi)
    title = rng.choice(("Contents", "Table of Contents", "Price List", "Schedule of Fees",
                        "Index of Exhibits", "Menu"))
    d.text((margin, margin), title, font=head, fill="black")
    truth = [title]
    y = margin + round(head.size * 2)
    style = rng.choice(("chars", "dots", "dots", "dashes"))
    what = rng.choice(("page", "price", "time"))
    page_no = rng.randint(1, 9)
    step = round(body.size * rng.uniform(1.5, 2.2))
    while y < h - margin - step:
        label = phrase(rng, 2, 6)
        if rng.random() < 0.2:
            label = f"{rng.randint(1, 12)}. {label}"
        if what == "page":
            page_no += rng.randint(1, 14)
            value = str(page_no)
        elif what == "price":
            value = f"${rng.randint(2, 480)}.{rng.randint(0, 99):02d}"
        else:
            value = f"{rng.randint(7, 18)}:{rng.choice(('00', '15', '30', '45'))}"
        if body.getlength(label) > (w - 2 * margin) * 0.7:
            continue
        _leader_row(d, margin, w - margin, y, label, value, body, style)
        truth.append(f"{label} {value}")
        y += step
    return img, truth, x_height(body)


def table(rng: random.Random, dpi: float) -> Page:
    w, h = letter_size(dpi)
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    kind = rng.choice(("serif", "sans"))
    body = font(pick_font(rng, kind), rng.uniform(8.5, 11) / 72 * dpi)
    bold = font(pick_font(rng, kind, "bold"), body.size)
    margin = round(rng.uniform(0.7, 1.0) * dpi)
    truth: list[str] = []
    y = margin
    for line in wrap(para(rng, 15, 40), body, w - 2 * margin):
        d.text((margin, y), line, font=body, fill="black")
        truth.append(line)
        y += round(body.size * 1.3)
    y += body.size
    ncols = rng.randint(3, 5)
    col_w = (w - 2 * margin) / ncols
    header = [phrase(rng, 1, 2).split()[0].capitalize() for _ in range(ncols)]
    rule = rng.choice(("grid", "rows", "dotted", "none"))
    dark_header = rng.random() < 0.4
    row_h = round(body.size * rng.uniform(1.6, 2.2))
    rows = rng.randint(10, 26)
    lw = max(1, round(dpi / 150))
    for r in range(rows + 1):
        if y > h - margin - row_h:
            break
        cells = header if r == 0 else [
            (phrase(rng, 1, 3) if c == 0 else rng.choice((
                f"{rng.randint(1, 9999):,}", f"{rng.uniform(0, 100):.1f}%",
                f"${rng.randint(1, 900)}.{rng.randint(0, 99):02d}", phrase(rng, 1, 2))))
            for c in range(ncols)]
        cells = [c if body.getlength(c) < col_w * 0.9 else c.split()[0] for c in cells]
        fill = "black"
        if r == 0 and dark_header:
            d.rectangle((margin, y, w - margin, y + row_h), fill=rng.choice(
                ("#1f3a5f", "#333333", "#5a1a1a", "#0b4d2c")))
            fill = "white"
        for c, cell in enumerate(cells):
            f = bold if r == 0 else body
            d.text((margin + c * col_w + body.size * 0.3, y + (row_h - body.size) / 2), cell,
                   font=f, fill=fill)
        truth.append(" ".join(cells))
        if rule in ("grid", "rows"):
            d.line((margin, y + row_h, w - margin, y + row_h), fill="black", width=lw)
        elif rule == "dotted":
            x = margin
            while x < w - margin:
                d.ellipse((x, y + row_h - lw, x + 2 * lw, y + row_h + lw), fill="black")
                x += 5 * lw
        y += row_h
    if rule == "grid":
        for c in range(ncols + 1):
            x = margin + c * col_w
            d.line((x, margin + len(truth) * 0, x, y), fill="black", width=lw)
    return img, truth, x_height(body)


def form(rng: random.Random, dpi: float) -> Page:
    w, h = letter_size(dpi)
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    kind = rng.choice(("serif", "sans"))
    body = font(pick_font(rng, kind), rng.uniform(9, 11.5) / 72 * dpi)
    bold = font(pick_font(rng, kind, "bold"), body.size * rng.uniform(1.0, 1.4))
    filled = font(pick_font(rng, rng.choice(("mono", "sans"))), body.size)
    margin = round(rng.uniform(0.6, 0.9) * dpi)
    lw = max(1, round(dpi / 120))
    title = rng.choice(("Application Form", "Change of Address", "Claim Form",
                        "Registration", "Request for Records", "Employee Details"))
    tf = font(pick_font(rng, kind, "bold"), rng.uniform(16, 22) / 72 * dpi)
    d.text((margin, margin), title, font=tf, fill="black")
    truth = [title]
    y = margin + round(tf.size * 2)
    dotted_boxes = rng.random() < 0.5
    while y < h - margin - 6 * body.size:
        section = phrase(rng, 1, 3)
        n_fields = rng.randint(2, 5)
        box_h = round(body.size * (2.2 + 2.2 * n_fields))
        if y + box_h > h - margin:
            break
        _box(d, (margin, y, w - margin, y + box_h), lw, dotted_boxes and rng.random() < 0.7)
        d.text((margin + body.size, y + body.size * 0.5), section, font=bold, fill="black")
        truth.append(section)
        fy = y + body.size * 2.4
        for _ in range(n_fields):
            label = phrase(rng, 1, 3) + ":"
            value = rng.choice((phrase(rng, 1, 4), str(rng.randint(10, 99999)),
                                f"{rng.randint(1, 28)}/{rng.randint(1, 12)}/"
                                f"{rng.randint(1950, 2024)}"))
            x = margin + body.size
            d.text((x, fy), label, font=body, fill="black")
            vx = x + body.getlength(label) + body.size * 0.6
            end = w - margin - body.size
            if rng.random() < 0.3:  # a checkbox row instead
                for opt in ("Yes", "No"):
                    s = body.size * 0.8
                    d.rectangle((vx, fy + body.size * 0.15, vx + s, fy + body.size * 0.15 + s),
                                outline="black", width=lw)
                    if opt == "Yes" and rng.random() < 0.5:
                        d.line((vx, fy + body.size * 0.15, vx + s, fy + body.size * 0.15 + s),
                               fill="black", width=lw)
                    d.text((vx + s * 1.4, fy), opt, font=body, fill="black")
                    vx += s * 1.4 + body.getlength(opt) + body.size
                truth.append(f"{label} Yes No")
            else:
                d.text((vx + body.size * 0.3, fy - body.size * 0.1), value, font=filled,
                       fill=rng.choice(("black", "#1a237e")))
                base = fy + body.size * 1.1
                if rng.random() < 0.5:
                    d.line((vx, base, end, base), fill="black", width=lw)
                else:
                    x2 = vx
                    while x2 < end:
                        d.line((x2, base, x2 + lw, base), fill="black", width=lw)
                        x2 += 4 * lw
                truth.append(f"{label} {value}")
            fy += body.size * 2.2
        y += box_h + body.size
    return img, truth, x_height(body)


def _box(d: ImageDraw.ImageDraw, box: tuple, lw: int, dotted: bool) -> None:
    x0, y0, x1, y1 = box
    if not dotted:
        d.rectangle(box, outline="black", width=lw)
        return
    step = 4 * lw
    for x in range(int(x0), int(x1), step):
        d.rectangle((x, y0, x + lw, y0 + lw), fill="black")
        d.rectangle((x, y1, x + lw, y1 + lw), fill="black")
    for y in range(int(y0), int(y1), step):
        d.rectangle((x0, y, x0 + lw, y + lw), fill="black")
        d.rectangle((x1, y, x1 + lw, y + lw), fill="black")


def chart(rng: random.Random, dpi: float) -> Page:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    w_in, h_in = 8.5, 11
    fig = plt.figure(figsize=(w_in, h_in), dpi=dpi)
    path = pick_font(rng, rng.choice(("sans", "serif")))
    font_manager.fontManager.addfont(path)
    fam = font_manager.FontProperties(fname=path).get_name()
    plt.rcParams["font.family"] = fam
    size = rng.uniform(9, 12)
    ax = fig.add_axes((0.14, 0.45, 0.78, 0.4))
    n = rng.randint(4, 7)
    cats = [phrase(rng, 1, 1).split()[0].capitalize()[:10] for _ in range(n)]
    series = [phrase(rng, 1, 2) for _ in range(rng.randint(1, 3))]
    width = 0.8 / len(series)
    for i, s in enumerate(series):
        vals = [rng.randint(5, 95) for _ in range(n)]
        if rng.random() < 0.5:
            ax.bar([j + i * width for j in range(n)], vals, width, label=s)
        else:
            ax.plot(range(n), vals, marker="o", label=s)
    ax.set_xticks(range(n))
    ax.set_xticklabels(cats, fontsize=size)
    ax.tick_params(labelsize=size)
    title = phrase(rng, 3, 7)
    ax.set_title(title, fontsize=size * 1.5)
    ax.set_ylabel(phrase(rng, 1, 3), fontsize=size)
    ax.grid(True, linestyle=rng.choice((":", "--")), alpha=0.7)
    leg = ax.legend(fontsize=size, loc="upper right", frameon=True)
    leg.get_frame().set_linestyle(rng.choice((":", "--", "-")))
    leg.get_frame().set_edgecolor("black")
    caption_w = 0.78 * w_in * dpi
    cap_font = font(path, size / 72 * dpi)
    caption = wrap(para(rng, 30, 70), cap_font, caption_w)
    fig.text(0.14, 0.38, "\n".join(caption), fontsize=size, va="top", linespacing=1.4)
    head = phrase(rng, 3, 6)
    fig.text(0.14, 0.92, head, fontsize=size * 2, weight="bold")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    items = []
    for t in fig.findobj(matplotlib.text.Text):
        s = t.get_text().strip()
        if not s or not t.get_visible():
            continue
        bb = t.get_window_extent(renderer)
        if bb.width <= 0:
            continue
        if "\n" in s:
            for k, line in enumerate(s.split("\n")):
                items.append((fig.bbox.height - bb.y1 + k * bb.height / len(s.split("\n")),
                              bb.x0, line))
        else:
            items.append((fig.bbox.height - bb.y1, bb.x0, s))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    img = Image.open(buf).convert("RGB")
    truth = _rows(items, size / 72 * dpi)
    return img, truth, x_height(cap_font)


def _rows(items: list[tuple[float, float, str]], line_px: float) -> list[str]:
    """Text items in reading order: rows top to bottom (items whose tops are within half a
    line), each left to right."""
    items = sorted(items)
    rows: list[list[tuple[float, float, str]]] = []
    for it in items:
        if rows and abs(it[0] - rows[-1][0][0]) < line_px * 0.5:
            rows[-1].append(it)
        else:
            rows.append([it])
    return [" ".join(s for _, _, s in sorted(r, key=lambda t: t[1])) for r in rows]


def slide(rng: random.Random, _dpi: float) -> Page:
    w, h = rng.choice(((1920, 1080), (2560, 1440), (1600, 900), (3000, 1688), (2000, 1125)))
    theme = rng.choice(("dark", "dark", "band", "colour"))
    img = Image.new("RGB", (w, h))
    arr = np.zeros((h, w, 3), np.float32)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r = np.random.default_rng(rng.randrange(1 << 30))
    if theme in ("dark", "band"):
        c0 = np.array([rng.randint(5, 50), rng.randint(10, 60), rng.randint(30, 90)], np.float32)
        c1 = c0 * rng.uniform(0.3, 0.8)
    else:
        c0 = np.array([rng.randint(150, 255) for _ in range(3)], np.float32)
        c1 = c0 * rng.uniform(0.7, 0.95)
    t = (xx / w * rng.uniform(0.3, 1) + yy / h * rng.uniform(0.3, 1)) / 2
    arr[:] = c0 * (1 - t[..., None]) + c1 * t[..., None]
    texture = rng.choice(("noise", "blotches", "stripes", "none"))
    if texture == "noise":
        arr += r.normal(0, rng.uniform(6, 18), (h, w, 1))
    elif texture == "blotches":
        small = r.normal(0, 1, (h // 40 + 1, w // 40 + 1)).astype(np.float32)
        big = np.array(Image.fromarray(small).resize((w, h), Image.Resampling.BICUBIC))
        arr += big[..., None] * rng.uniform(8, 20)
    elif texture == "stripes":
        arr += (np.sin((xx + yy) / rng.uniform(6, 20)) * rng.uniform(5, 14))[..., None]
    img = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(img)
    light = theme in ("dark", "band") or c0.mean() < 140
    kind = rng.choice(("sans", "sans", "serif"))
    scale = h / 1080
    tf = font(pick_font(rng, kind, "bold"), rng.uniform(48, 72) * scale)
    bf = font(pick_font(rng, kind), rng.uniform(26, 40) * scale)
    margin = round(w * rng.uniform(0.05, 0.09))
    y = round(h * 0.08)
    title = phrase(rng, 3, 7)
    title_fill = rng.choice(("white", "#ffd54f", "#e0f7fa")) if light else "#102030"
    if theme == "band":  # a light slide with a dark title band
        img.paste((245, 245, 240), (0, 0, w, h))
        band_h = round(tf.size * 2.2)
        d.rectangle((0, y - tf.size * 0.5, w, y - tf.size * 0.5 + band_h),
                    fill=tuple(int(v) for v in c0))
        title_fill = "white"
    truth = []
    for line in wrap(title, tf, w - 2 * margin):
        d.text((margin, y), line, font=tf, fill=title_fill)
        truth.append(line)
        y += round(tf.size * 1.2)
    y += round(tf.size * 0.8)
    body_fill = ("#dddddd" if theme == "dark" else "white") if light and theme != "band" \
        else "#222222"
    for _ in range(rng.randint(3, 6)):
        item = phrase(rng, 4, 12)
        lines = wrap(item, bf, w - 2 * margin - bf.size * 1.5)
        if y + len(lines) * bf.size * 1.3 > h * 0.9:
            break
        d.ellipse((margin, y + bf.size * 0.35, margin + bf.size * 0.35, y + bf.size * 0.7),
                  fill=body_fill)
        for line in lines:
            d.text((margin + bf.size * 1.2, y), line, font=bf, fill=body_fill)
            truth.append(line)
            y += round(bf.size * 1.3)
        y += round(bf.size * 0.5)
    if rng.random() < 0.5:
        ff = font(pick_font(rng, kind), 18 * scale)
        foot = f"{phrase(rng, 1, 3)} {rng.randint(2, 40)}"
        d.text((margin, h - margin // 2 - ff.size), foot, font=ff, fill=body_fill)
        truth.append(foot)
    return img, truth, x_height(bf)


def receipt(rng: random.Random, _dpi: float) -> Page:
    w = rng.choice((576, 640, 800, 1000))
    mono = font(pick_font(rng, "mono"), w / rng.uniform(30, 42) / 0.6)
    cols = int((w * 0.92) / mono.getlength("M"))
    lines = [phrase(rng, 1, 3).upper()[:cols], f"{rng.randint(1, 999)} {phrase(rng, 1, 2)} St",
             f"Tel {rng.randint(200, 999)}-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}",
             "-" * cols,
             f"{rng.randint(1, 12):02d}/{rng.randint(1, 28):02d}/2024 "
             f"{rng.randint(8, 21):02d}:{rng.randint(0, 59):02d}"]
    total = 0.0
    for _ in range(rng.randint(5, 16)):
        name = phrase(rng, 1, 3)[: cols - 10]
        price = rng.randint(50, 4999) / 100
        total += price
        p = f"{price:.2f}"
        lines.append(name + " " * max(1, cols - len(name) - len(p)) + p)
    tax = round(total * 0.08, 2)
    lines += ["-" * cols]
    for label, v in (("SUBTOTAL", total), ("TAX", tax), ("TOTAL", total + tax)):
        p = f"{v:.2f}"
        lines.append(label + " " * max(1, cols - len(label) - len(p)) + p)
    lines += ["", "THANK YOU FOR SHOPPING".center(cols).rstrip()]
    step = round(mono.size * 1.35)
    h = step * (len(lines) + 4)
    img = Image.new("RGB", (w, h), (250, 248, 240))
    d = ImageDraw.Draw(img)
    x0 = round(w * 0.04)
    for i, line in enumerate(lines):
        d.text((x0, step * 2 + i * step), line, font=mono, fill=(40, 40, 50))
    truth = [" ".join(ln.split()) for ln in lines if ln.strip() and set(ln.strip()) != {"-"}]
    return img, truth, x_height(mono)


def court(rng: random.Random, dpi: float) -> Page:
    w, h = letter_size(dpi)
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    deposition = rng.random() < 0.5
    kind = "mono" if deposition else rng.choice(("serif", "serif", "mono"))
    body = font(pick_font(rng, kind), 12 / 72 * dpi)
    num = font(pick_font(rng, kind), 11 / 72 * dpi)
    lw = max(1, round(dpi / 150))
    left, right = round(1.45 * dpi), w - round(0.6 * dpi)
    top = round(1.0 * dpi)
    step = (h - top - round(0.9 * dpi)) / 28
    if not deposition:  # pleading paper: double rule on the left, single on the right
        d.line((left - 0.12 * dpi, 0, left - 0.12 * dpi, h), fill="black", width=lw)
        d.line((left - 0.16 * dpi, 0, left - 0.16 * dpi, h), fill="black", width=lw)
        d.line((right, 0, right, h), fill="black", width=lw)
    truth = []
    if deposition:
        head = f"Page {rng.randint(2, 240)}"
        hf = font(pick_font(rng, kind), 12 / 72 * dpi)
        d.text((right - hf.getlength(head), round(0.6 * dpi)), head, font=hf, fill="black")
        truth.append(head)
    text_lines: list[str] = []
    while len(text_lines) < 28:
        p = para(rng, 20, 60)
        if deposition:
            p = rng.choice(("Q. ", "A. ")) + p
        lines = wrap(p, body, right - left - 0.2 * dpi)
        if not deposition:
            lines[0] = "    " + lines[0]
        text_lines += lines
    for i in range(28):
        y = top + i * step
        n = str(i + 1)
        d.text((left - 0.3 * dpi - num.getlength(n), y), n, font=num, fill="black")
        line = text_lines[i]
        d.text((left, y), line, font=body, fill="black")
        truth.append(f"{n} {line.strip()}")
    if rng.random() < 0.6:
        foot = f"{phrase(rng, 2, 4).upper()} - {rng.randint(1, 30)}"
        ff = font(pick_font(rng, kind), 9 / 72 * dpi)
        d.line((left, h - 0.7 * dpi, right, h - 0.7 * dpi), fill="black", width=lw)
        d.text((w / 2 - ff.getlength(foot) / 2, h - 0.6 * dpi), foot, font=ff, fill="black")
        truth.append(foot)
    return img, truth, x_height(body)


def letter(rng: random.Random, dpi: float) -> Page:
    """A plain letter, sometimes with a shaded box or a dark band of white text."""
    w, h = letter_size(dpi)
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    kind = rng.choice(("serif", "sans"))
    body = font(pick_font(rng, kind), rng.uniform(9.5, 12) / 72 * dpi)
    margin = round(rng.uniform(0.9, 1.2) * dpi)
    step = round(body.size * rng.uniform(1.2, 1.5))
    truth: list[str] = []
    y = margin
    band = rng.random() < 0.5
    if band:
        bf = font(pick_font(rng, kind, "bold"), body.size * 1.6)
        d.rectangle((0, y - bf.size * 0.5, w, y + bf.size * 1.6),
                    fill=rng.choice(("#203040", "#444444", "#7a1f1f", "#1b5e20")))
        head = phrase(rng, 2, 5)
        d.text((margin, y), head, font=bf, fill="white")
        truth.append(head)
        y += round(bf.size * 3)
    for _ in range(3):
        line = phrase(rng, 2, 5)
        d.text((margin, y), line, font=body, fill="black")
        truth.append(line)
        y += step
    y += step
    shade = rng.random() < 0.5
    while y < h - margin - step * 4:
        lines = wrap(para(rng), body, w - 2 * margin)
        if shade and rng.random() < 0.3:
            d.rectangle((margin - body.size * 0.5, y - body.size * 0.3, w - margin + body.size
                         * 0.5, y + len(lines) * step), fill=rng.choice(("#d8d8d8", "#e3ecf7",
                                                                         "#fbe9c8")))
        for line in lines:
            if y > h - margin - step:
                break
            d.text((margin, y), line, font=body, fill="black")
            truth.append(line)
            y += step
        y += step // 2
    return img, truth, x_height(body)


SCREEN_CSS = """body{margin:0;font-family:%s;font-size:%dpx;color:#222;background:%s}
nav{background:%s;padding:14px 24px}nav a{color:#fff;margin-right:22px;text-decoration:none}
main{max-width:%dpx;margin:24px auto;padding:0 20px}h1{font-size:1.9em}
.note{background:#263238;color:#eceff1;padding:12px 18px;border-radius:6px}
footer{background:#eee;color:#555;padding:14px 24px;font-size:.85em}"""


def screenshot(rng: random.Random, _dpi: float) -> Page | None:
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chrome:
        return None
    fam = rng.choice(("DejaVu Sans", "Liberation Sans", "Nimbus Sans", "Liberation Serif",
                      "Carlito", "FreeSerif"))
    size = rng.choice((14, 15, 16, 17, 18))
    scale = rng.choice((1, 1, 1.5, 2))
    width = rng.choice((1100, 1280, 1440))
    nav = [phrase(rng, 1, 1).split()[0].capitalize() for _ in range(rng.randint(3, 6))]
    title = phrase(rng, 3, 8)
    paras = [para(rng, 25, 70) for _ in range(rng.randint(3, 6))]
    note = phrase(rng, 5, 12) if rng.random() < 0.5 else None
    foot = f"{phrase(rng, 2, 4)} 2024"
    body = [f"<nav>{''.join(f'<a href=#>{n}</a>' for n in nav)}</nav>", "<main>",
            f"<h1>{html.escape(title)}</h1>"]
    for i, p in enumerate(paras):
        body.append(f"<p>{html.escape(p)}</p>")
        if i == 0 and note:
            body.append(f"<p class=note>{html.escape(note)}</p>")
    body += ["</main>", f"<footer>{html.escape(foot)}</footer>"]
    css = SCREEN_CSS % (f"'{fam}'", size, rng.choice(("#fff", "#fafafa", "#fffdf5")),
                        rng.choice(("#1a237e", "#263238", "#b71c1c", "#004d40")),
                        rng.choice((720, 800, 900)))
    page = f"<!doctype html><meta charset=utf-8><style>{css}</style>{''.join(body)}"
    with tempfile.TemporaryDirectory(prefix="ocrdev-") as tmp:
        src, out = Path(tmp, "p.html"), Path(tmp, "shot.png")
        src.write_text(page)
        height = 900 + 60 * len(paras) * size // 14 + (400 if scale == 1 else 0)
        subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--force-device-scale-factor={scale}",
                        f"--window-size={width},{height}", f"--screenshot={out}",
                        src.as_uri()], capture_output=True, timeout=60, check=False)
        if not out.exists():
            return None
        img = Image.open(out).convert("RGB")
    truth = [" ".join(nav), title]
    for i, p in enumerate(paras):
        truth.append(p)
        if i == 0 and note:
            truth.append(note)
    truth.append(foot)
    return img, truth, size * scale * 0.53


KINDS: dict[str, Callable[[random.Random, float], Page | None]] = {
    "article": article, "leaders": leaders, "table": table, "form": form, "chart": chart,
    "slide": slide, "receipt": receipt, "court": court, "letter": letter,
    "screenshot": screenshot,
}
PAPER = ("article", "leaders", "table", "form", "chart", "court", "letter")


# -- degradation -------------------------------------------------------------------------

def degrade(img: Image.Image, kind: str, rng: random.Random, seed: int) -> Image.Image:
    """Scanner and photocopier wear (augraphy), or camera light for receipts."""
    import augraphy as A

    arr = np.array(img)[:, :, ::-1].copy()  # augraphy works in OpenCV's BGR
    level = rng.choice(("clean", "light", "light", "heavy"))
    if kind in ("slide", "screenshot"):
        if rng.random() < 0.5:
            arr = A.Jpeg(quality_range=(40, 85), p=1)(arr)
        return Image.fromarray(np.ascontiguousarray(arr[:, :, ::-1]))
    ink, paper, post = [], [], []
    if kind == "receipt":
        post = [A.LightingGradient(p=1, max_brightness=255, min_brightness=rng.randint(60, 150)),
                A.Jpeg(quality_range=(50, 90), p=1)]
        if level == "heavy":
            post.insert(0, A.ShadowCast(p=1))
    elif level != "clean":
        ink = [A.InkBleed(intensity_range=(0.1, 0.3), p=0.5),
               A.LowInkRandomLines(count_range=(3, 10), p=0.3)]
        paper = [A.NoiseTexturize(sigma_range=(2, 6), turbulence_range=(2, 4), p=0.6)]
        post = [A.Brightness(brightness_range=(0.85, 1.1), p=0.5),
                A.SubtleNoise(subtle_range=10, p=0.7),
                A.Jpeg(quality_range=(45, 90), p=0.7)]
        if level == "heavy":
            post[:0] = [A.DirtyDrum(p=0.5), A.LightingGradient(p=0.5)]
    if ink or paper or post:
        pipe = A.AugraphyPipeline(ink_phase=ink, paper_phase=paper, post_phase=post,
                                  random_seed=seed)
        out = pipe(arr)
        arr = out if isinstance(out, np.ndarray) else out["output"]
    if arr.ndim == 2:
        arr = np.stack([arr] * 3, axis=-1)
    out_img = Image.fromarray(np.ascontiguousarray(arr[:, :, ::-1]))
    angle = rng.uniform(-1.2, 1.2) if kind != "receipt" else rng.uniform(-3, 3)
    out_img = out_img.rotate(angle, resample=Image.Resampling.BICUBIC, expand=False,
                             fillcolor=(255, 255, 255))
    if rng.random() < 0.4:
        out_img = out_img.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.0)))
    return out_img


# -- main --------------------------------------------------------------------------------

def make(split: str, pages: int) -> Path:
    global PARAS
    PARAS = load_paragraphs()
    out = OUT / split
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    os.chdir(OUT)  # augraphy leaves a cache folder in the working directory
    index = []
    base = SEEDS[split]
    order = list(KINDS)
    for i in range(pages):
        seed = base + i
        rng = random.Random(seed)
        np.random.seed(seed % (1 << 32))
        random.seed(seed)
        kind = order[i % len(order)]
        low_res = kind in PAPER and rng.random() < 0.25
        dpi = rng.uniform(100, 140) if low_res else rng.uniform(230, 390)
        made = KINDS[kind](rng, dpi)
        if made is None:
            continue
        img, truth, xh = made
        if kind == "receipt" and rng.random() < 0.5:  # a phone photo: bigger than printed
            f = rng.uniform(1.5, 2.5)
            img = img.resize((round(img.width * f), round(img.height * f)),
                             Image.Resampling.BICUBIC)
            xh *= f
        img = degrade(img, kind, rng, seed)
        tag = rng.choice((96, 96, 96, 72, None, "true")) if kind in PAPER else \
            rng.choice((96, 72, None))
        tag_dpi = round(dpi) if tag == "true" else tag
        name = f"{i:03d}-{kind}{'-lowres' if low_res else ''}"
        fmt = "JPEG" if rng.random() < 0.4 else "PNG"
        path = out / f"{name}.{'jpg' if fmt == 'JPEG' else 'png'}"
        params = {"dpi": (tag_dpi, tag_dpi)} if tag_dpi else {}
        if fmt == "JPEG":
            params["quality"] = rng.randint(70, 92)
        img.save(path, fmt, **params)
        truth_text = "\n".join(re.sub(r"\s+", " ", t).strip() for t in truth if t.strip())
        path.with_suffix(".txt").write_text(truth_text + "\n")
        index.append({"file": path.name, "kind": kind, "low_res": low_res,
                      "size": list(img.size), "x_height_px": round(xh, 1),
                      "dpi_tag": tag_dpi, "true_dpi": round(dpi) if kind in PAPER else None})
        (out / "index.json").write_text(json.dumps(index, indent=1))
        print(f"{path.name:32s} {img.width}x{img.height} x-height {xh:5.1f}px "
              f"tag {tag_dpi}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", choices=sorted(SEEDS), default="dev")
    ap.add_argument("--pages", type=int, default=40)
    args = ap.parse_args()
    print(make(args.split, args.pages))


if __name__ == "__main__":
    main()
