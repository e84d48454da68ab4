"""The 2015 method, the bar the topic sieve must beat (bench/bench_sieve.py runs both).

The founding write-up's "simple internet content sieve", written again here from its
description: render the page to Markdown lines, count the topic's words on each line
(only on lines of a plausible length: 3 to 14 words for ingredients, 7 or more for
directions; a list line counts double for ingredients), sum the counts over windows of 5
lines, fit one Gaussian to the peak, and keep the lines within two sigma of its centre
that pass the line rules (no heading, more than 2 words and fewer than 15 for
ingredients, more than 3 for directions). Only the first two thirds of a page of more
than 100 lines are looked at.

Word lists: the words and phrases of textsieve's preset for the page's language (as
textsieve chooses it), matched as textsieve stems them, each occurrence counting 1 as in
the original (which counted substrings of its own lists); words with a negative weight
count -1 (the original's "bad context words").

Rendering: textsieve's own ``--html full`` Markdown (the original used html2text, which
is GPL-3.0; set SIEVE2015_HTML2TEXT=1 with html2text installed to use it instead).
Needs numpy and scipy (``pip install -e '.[bench]'``).

    func(html: str, topic: str) -> str   # recipe_score.py --callable bench.sieve2015:sieve
"""

from __future__ import annotations

import functools
import os
import re
import warnings

import numpy as np
from scipy.optimize import OptimizeWarning, curve_fit

import textsieve
from textsieve.web.sieve import (
    STOP_WORDS,
    Topic,
    guess_language,
    load_topic,
    primary_language,
    words,
)

RULES = {  # count a line with more than lo and fewer than hi words; keep likewise
    "recipe-ingredients": {"count": (2, 15), "keep": (2, 15), "list_bonus": True},
    "recipe-directions": {"count": (6, 500), "keep": (3, 30000), "list_bonus": False},
}
WINDOW = 5
TOP_SHARE = 0.66
_LANG = re.compile(r'<html[^>]*\slang="([^"]+)"', re.I)
_LIST = re.compile(r"^\s*(?:[-*+]|\d+\.)\s")


@functools.lru_cache(maxsize=64)
def _topic(topic: str, lang: str | None) -> Topic:
    return load_topic(topic, lang)


def _count(line: str, topic: Topic) -> int:
    """Occurrences of the topic's words (as textsieve stems them) and phrases on a line:
    +1 each, -1 for a word of negative weight."""
    stems = [topic.token(t)[1] for t in words(line)]
    n = 0
    for i, s in enumerate(stems):
        w = topic.terms.get(s)
        if w:
            n += 1 if w > 0 else -1
        for seq, pw in topic.phrases.get(s, ()):
            if tuple(stems[i:i + len(seq)]) == seq:
                n += 1 if pw > 0 else -1
    return n


def _markdown(html: str) -> str:
    if os.environ.get("SIEVE2015_HTML2TEXT"):
        import html2text

        h = html2text.HTML2Text()
        h.ignore_links = h.ignore_images = True
        h.body_width = 10000
        return h.handle(html)
    doc = textsieve.extract(html.encode("utf-8"), name="page.html", html="full")
    return doc.markdown or doc.text or ""


def _gauss(x: np.ndarray, a: float, x0: float, sigma: float) -> np.ndarray:
    return a * np.exp(-((x - x0) ** 2) / (2 * sigma ** 2))


def sieve(html: str, topic: str) -> str:
    m = _LANG.search(html[:5000])
    lang = primary_language(m.group(1) if m else None)
    text = _markdown(html)
    if lang not in STOP_WORDS:
        lang = guess_language(text) or lang
    words_of = _topic(topic, lang)
    rules = RULES[topic]
    lines = [x.strip() for x in text.splitlines()]
    if len(lines) > 100:
        lines = lines[:int(len(lines) * TOP_SHARE)]
    counts = np.zeros(len(lines) + 1)
    for n, line in enumerate(lines, 1):
        low = line.lower()
        words = len(low.split())
        lo, hi = rules["count"]
        if not lo < words < hi:
            continue
        c = _count(low, words_of)
        if c > 0 and rules["list_bonus"] and _LIST.match(line):
            c *= 2
        counts[n] = c
    if len(counts) <= WINDOW + 1 or counts.max() <= 0:
        return ""
    xs = np.arange(1, len(counts) - WINDOW, dtype=float) + 2
    ys = np.array([counts[i:i + WINDOW].sum() for i in range(1, len(counts) - WINDOW)])
    if not len(ys) or ys.max() <= 0:
        return ""
    peak = xs[int(np.argmax(ys))]
    best, area = None, 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizeWarning)
        for start in np.arange(peak - 3, peak + 3):
            try:
                popt, _ = curve_fit(_gauss, xs, ys, p0=[ys.max(), start, 1.0], maxfev=2000)
            except (RuntimeError, ValueError):
                continue
            if popt[0] * 0.5 * abs(popt[2]) > area and abs(popt[2]) < 15:
                best, area = popt, popt[0] * 0.5 * abs(popt[2])
    if best is None:
        return ""
    centre, spread = best[1], round(2 * abs(best[2]))
    lo, hi = rules["keep"]
    kept = [line for n, line in enumerate(lines, 1)
            if centre - spread <= n <= centre + spread and len(line) > 1 and "##" not in line
            and lo < len(line.split()) < hi]
    return "\n".join(kept)
