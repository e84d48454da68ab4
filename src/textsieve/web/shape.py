"""What a line of a page looks like, whatever its language: the sieve's shape evidence.

A topic's words only help on pages in a language it has words for. Some topics also have
a *shape* that shows in any language and script, and a page without a single known word
still shows it:

- ``items``: short lines that mostly start with a quantity (``2 cups``, ``115g``,
  ``1½``, ``½ tasse``, ``2-3``, ``1/2``, ``200 ml``, ``٢ ملاعق``): an ingredient list, a
  parts list, a shopping list, a bill of materials.
- ``steps``: sentences in order, often in a numbered list (``1.``, ``Step 2``, ``3)``),
  often with times and temperatures (``10 min``, ``180 °C``): directions, a how-to,
  assembly or installation instructions.

Reader comments and reviews are never either: a line stamped with a date and a time of
day (``March 5, 2023 at 7:44 am``, ``05.03.2023 19:44``) is ``chatter`` in any language.

Only the standard library; everything is a regular expression over one line, cached
per text (the same line is read for two topics on one page).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# Unicode vulgar fractions and the fraction slash (1⁄2).
VULGAR = "½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅐⅛⅜⅝⅞⅑⅒↉"
_NUM = rf"(?:\d+(?:[.,]\d+)?\s?[{VULGAR}]?|[{VULGAR}])(?:\s?[⁄/]\s?\d+)?"
# A quantity: a number, a fraction or a range of them (2-3, 1 to 2 is left to the words).
_QTY = rf"{_NUM}(?:\s?[-–—]\s?{_NUM})?"
# At the start of a line, after at most a bullet or a checkbox (•, -, *, ▢, ☐).
_QTY_START = re.compile(rf"^[^\w(]{{0,3}}\(?{_QTY}(?!\s?[.)]\s+\w{{4}})", re.UNICODE)
_QTY_ANY = re.compile(rf"(?<![\w.,/]){_QTY}(?![\d])", re.UNICODE)
# A number with a unit glued to it or right after it, in any script: 115g, 240ml, 2 dl,
# 1 EL, 3 c., 200 gr, 2 個 (at most 5 letters, so "2 tomatoes" is not counted as a unit).
_QTY_UNIT = re.compile(rf"{_NUM}\s?[^\W\d_]{{1,5}}\.?(?:\s|$|[,;)])", re.UNICODE)
# "1." "2)" "Step 3:" "Schritt 4" "3 -" at the start: a numbered step.
_STEP_NO = re.compile(r"^\W{0,2}(?:[^\W\d_]{2,12}\s?)?\d{1,2}(?:[.):]\s|\s?[-–—]\s)\s*\S",
                      re.UNICODE)
# A step's number on a line of its own: "3", "Step 3", "Étape 3 /8", "3.", "(3)".
_STEP_MARK = re.compile(r"^\W{0,2}(?:[^\W\d_]{2,12}\s?)?(\d{1,2})\s*(?:/\s*\d{1,2}\s*)?[.):]?\s*$",
                        re.UNICODE)
# ... or a step's title above its text: "Step 2: Brown the meat", "3. Make the sauce".
_STEP_TITLE = re.compile(r"^\W{0,2}(?:[^\W\d_]{2,12}\s?)?(\d{1,2})\s?[.):\-–—]\s*\S",
                         re.UNICODE)
# Times and temperatures: 180 °C, 350°F, 10 min, 1 h (minutes in most languages start so).
_TIME_TEMP = re.compile(r"\d\s?°|°\s?[CF]\b|\b\d+\s?(?:min|h\b|hrs?\b|hours?\b)",
                        re.IGNORECASE)
_LEADING_QTY = re.compile(rf"^[^\w(]{{0,3}}\(?{_QTY}", re.UNICODE)
# A comment's or a review's stamp: a year with a time of day, or a numeric full date.
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_CLOCK = re.compile(r"\b\d{1,2}:\d\d(?:\s?[ap]\.?m\.?)?\b", re.IGNORECASE)
_DATE = re.compile(r"\b(?:\d{1,2}[./-]\d{1,2}[./-](?:19|20)\d\d|(?:19|20)\d\d-\d\d-\d\d)\b")
_WORDISH = re.compile(r"\w+")
# Energy in kcal or kJ, or an amount in milligrams or micrograms: a nutrition table,
# whose other lines look like "Glucides 50,58g". A recipe weighs its food in grams.
_NUTRITION = re.compile(r"\d\s?(?:kcal|kj|cal|mg|µg|μg|mcg)\b", re.IGNORECASE)
# A share at the start ("9% Protein", "81% Water"): a breakdown, not an amount of food.
_PERCENT_START = re.compile(rf"^[^\w(]{{0,3}}{_NUM}\s?%")
# "Prep Time: 15 minutes", "Servings: 4", "Course: Side Dish": a card's facts, no item.
_KEY_VALUE = re.compile(r"^[^\d:]{2,30}:\s*\S")
# Chinese and Japanese write no spaces: a run of their characters counts a word per two.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_CJK_NUMERAL = "一二三四五六七八九十两半"
# A quantity closing a short line: "Mehl 200 g", "Farina 00 200 g", "鸡胸肉 150克",
# "酱油 一勺" (a number, maybe a unit of at most 5 letters, maybe a closing bracket).
_QTY_END = re.compile(rf"(?:[\s(]|^)(?:{_QTY}\s?[^\W\d_]{{1,5}}\.?|[{_CJK_NUMERAL}]{{1,3}}"
                      rf"[^\W\d_]?)\)?\s*$", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?。！？]\s*$|[.!?。！？]\s+\S")


@dataclass(frozen=True, slots=True)
class Line:
    """The shape of one line of text."""

    words: int
    qty_start: bool  # starts with a quantity (or, on a short line, ends with one)
    leading_qty: bool  # starts with a number (a step number too)
    qty: bool  # has a quantity somewhere
    unit: bool  # has a number with a unit (115g, 2 dl)
    step_no: bool  # starts like a numbered step
    time_temp: bool  # names a time or a temperature
    sentence: bool  # ends like a sentence, or holds one
    label: bool  # a short line ending with a colon ("For the filling:")
    key_value: bool  # "Prep time: 15 minutes": a fact of a card
    chatter: bool  # stamped like a comment or a review
    percent: bool  # has a % (nutrition tables, ratings)
    nutrition: bool  # has an amount of kcal, kJ, mg or µg (a nutrition table)
    share: bool  # starts with a percentage ("9% Protein")


@functools.lru_cache(maxsize=1 << 14)
def line(text: str) -> Line:
    t = text.strip()
    n = len(_WORDISH.findall(t))
    cjk = _CJK.findall(t)
    if cjk:
        n += sum(len(run) for run in cjk) // 2
    head = t[:40]
    step_no = bool(_STEP_NO.match(head)) and n >= 5
    qty_start = bool(_QTY_START.match(head)) or (
        2 <= n <= 8 and not step_no and _QTY_END.search(t[-24:]) is not None)
    return Line(
        words=n,
        qty_start=qty_start and not step_no,
        leading_qty=_LEADING_QTY.match(head) is not None,
        qty=qty_start or bool(_QTY_ANY.search(t)),
        unit=bool(_QTY_UNIT.search(t)),
        step_no=step_no,
        time_temp=bool(_TIME_TEMP.search(t)),
        sentence=bool(_SENTENCE_END.search(t)),
        label=n <= 8 and t.endswith(":"),
        key_value=n <= 10 and _KEY_VALUE.match(t) is not None,
        chatter=bool((_YEAR.search(t) and _CLOCK.search(t)) or _DATE.search(t)),
        percent="%" in t,
        nutrition=_NUTRITION.search(t) is not None,
        share=_PERCENT_START.match(head) is not None,
    )


def step_mark(text: str, title: bool = False) -> int | None:
    """The number of a line that is only a step's number ("2", "Step 2", "Etape 2 /8")
    or, with ``title`` (a heading), a numbered step's title ("Step 2: Brown the meat"),
    else None. Some pages set each step's number apart, above its text."""
    t = text.strip()
    m = _STEP_MARK.match(t) if len(t) <= 24 else None
    if m is None and title and len(t) <= 80:
        m = _STEP_TITLE.match(t)
    return int(m.group(1)) if m else None


def length_fit(words: int, low: int, high: int, tail: int) -> float:
    """1 between ``low`` and ``high`` words, ramping up from 0 below and down to 0 at
    ``high + tail`` above."""
    if words < low:
        return max(0.0, words / low)
    if words <= high:
        return 1.0
    return max(0.0, 1.0 - (words - high) / tail)


def item_score(s: Line, topic: float) -> float:
    """How much a line looks like an item of a list of things with quantities, in
    [0, ~2]; ``topic`` is the line's topic-word density (0 for an unknown language)."""
    if s.chatter or s.words == 0:
        return 0.0
    fit = length_fit(s.words, 1, 14, 16)
    if s.sentence and s.words > 12:
        fit *= 0.5
    if s.key_value:
        shape = 0.45 if s.qty else 0.1  # "Flour: 200 g" or "Prep time: 15 min"
    elif s.time_temp and not s.leading_qty:
        shape = 0.2  # "Prep Time 20 minutes", "Freezing Time 6 hours"
    elif s.qty_start:
        shape = 1.0 if s.unit or s.words >= 2 else 0.7
    elif s.sentence:
        shape = 0.1  # "Add the pepper and remove from the heat."
    elif s.qty:
        shape = 0.45 if s.words <= 8 else 0.25
    else:
        shape = 0.25
    if s.percent and (s.share or not s.qty_start):
        shape *= 0.4  # a nutrition table's "Total Fat 36g 46%", "9% Protein"
    return fit * (shape + min(0.8, 2.0 * topic))


def step_score(s: Line, topic: float, ordered: bool) -> float:
    """How much a line looks like a step of instructions, in [0, ~2]."""
    if s.chatter or s.words == 0:
        return 0.0
    fit = length_fit(s.words, 6, 150, 200)
    if s.qty_start and s.words <= 12 and not s.sentence:
        fit *= 0.2  # an item of a list of things, not a step
    shape = 0.35
    if ordered or s.step_no:
        shape += 0.3
    if s.sentence:
        shape += 0.1
    if s.time_temp:
        shape += 0.15
    return fit * (shape + min(0.8, 2.5 * topic))
