"""The language of a text, for every item whose format does not say it.

Web pages, DOCX, ODF, EPUB and PDF often declare their language; plain text, mail,
spreadsheets, slides, OCRed scans and most files do not. For those the language is
detected from the text by CLD2 (Chromium's Compact Language Detector 2, through pycld2:
Apache-2.0, its model compiled into the package, nothing loaded or downloaded at run
time; ~0.05 ms for the 3,000 characters looked at, no start-up cost, see
``bench/bench_language.py``). A declared language is kept as declared; a detected one
is an ISO 639-1 code (``zh-Hant`` for traditional Chinese) and says so
(``metadata.extra.language_by = "detected"``). A text too short or too mixed for a
reliable answer gets none: better "?" than a wrong language.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model import Document

SAMPLE = 3000  # characters looked at: the start, and a slice from the middle
MIN_LETTERS = 24  # fewer letters than this (a number table, a title): no answer
# CLD2 still uses some withdrawn ISO 639 codes.
_MODERN = {"iw": "he", "jw": "jv", "in": "id", "mo": "ro", "zh-Hant": "zh-Hant"}
# What CLD2 refuses as input (it wants valid UTF-8 without most control characters).
_BAD = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_LETTER = re.compile(r"[^\W\d_]")


def warm() -> None:
    """Import the detector now (``textsieve.preload``): ~2 ms, not paid by a first file."""
    import pycld2  # noqa: F401


def sample(text: str) -> str:
    """What is looked at: the start and, of a long text, a slice from its middle (a
    long document's cover page or boilerplate is not its language)."""
    if len(text) <= SAMPLE:
        return text
    third = SAMPLE // 3
    mid = len(text) // 2
    return text[:2 * third] + "\n" + text[mid:mid + third]


def detect(text: str) -> str | None:
    """The language of ``text`` (ISO 639-1), or None when it cannot be told reliably."""
    part = _BAD.sub(" ", sample(text))
    # A long sample without words (a table of numbers) CLD2 itself calls unreliable.
    if len(part) < 16 * MIN_LETTERS and len(_LETTER.findall(part)) < MIN_LETTERS:
        return None
    import pycld2

    try:
        reliable, _, found = pycld2.detect(part, bestEffort=False)
    except pycld2.error:  # input CLD2 cannot take, after all: no answer, never a failure
        return None
    code = found[0][1] if found else "un"
    if not reliable or code in ("un", "xx") or code.startswith("xx-"):
        return None
    return _MODERN.get(code, code)


def fill_language(doc: Document) -> None:
    """Give a document without a declared language the one detected from its text."""
    if doc.metadata.language or not doc.text:
        return
    lang = detect(doc.text)
    if lang is not None:
        doc.metadata.language = lang
        doc.metadata.extra["language_by"] = "detected"
