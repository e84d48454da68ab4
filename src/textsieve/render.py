"""One place where structure becomes plain text and Markdown.

Extractors describe what they find (headings, paragraphs, list items, tables, pages) to a
``Builder``; the builder renders both outputs in one pass, so every format gets the same
conventions: plain text is the words with blank lines between blocks and tab-separated
table rows; Markdown keeps headings, lists and tables.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from .model import Page

# Line starts Markdown would read as markup. Each pattern begins with a literal "\n" (the
# text gets one in front): re then jumps from newline to newline (a memchr) instead of
# trying "^" at every character, 5x faster on long pages.
_MD_BULLET_START = re.compile(r"(\n[ \t]*)([#>+\-*])(?=\s|$)")
_MD_NUMBER_START = re.compile(r"(\n[ \t]*)(\d+)([.)])(?=\s|$)")
_MD_ANY_START = re.compile(r"\n[ \t]*(?:[#>+\-*]|\d+[.)])(?=\s|$)")
_WS = re.compile(r"[ \t\u00a0]+")
# Alt text that is only the picture's file name or path (Office 2007 stored the inserted
# file's path as its description): nothing a reader was meant to hear.
_FILE_NAME = re.compile(
    r"^(?:[A-Za-z]:\\|\\\\|/)\S|\.(?:jpe?g|png|gif|bmp|wmf|emf|tiff?|svg|webp)$", re.I)
# Whitespace other than space/tab/newline (NBSP, CR, em space ...) at a cell's edge: next
# to a separator or at either end of the table string.
_ODD_EDGE = re.compile(r"(?:^|[\t\n])[^\S \t\n]|[^\S \t\n](?:[\t\n]|\Z)")


def _edge_space(s: str) -> bool:
    """True if some tab/newline-separated cell of ``s`` starts or ends with whitespace
    (an NBSP inside a cell does not count: stripping would not touch it)."""
    return (" \t" in s or "\t " in s or " \n" in s or "\n " in s or s[:1] == " "
            or s[-1:] == " " or _ODD_EDGE.search(s) is not None)


def clean_inline(text: str) -> str:
    """Collapse runs of spaces and strip; keeps line breaks inside the text."""
    if "\n" not in text and "\r" not in text:  # the common case: one line, one regex pass
        return _WS.sub(" ", text).strip()
    lines = [_WS.sub(" ", ln).strip() for ln in text.replace("\r\n", "\n").split("\n")]
    return "\n".join(ln for ln in lines if ln)


def md_escape(text: str) -> str:
    """Escape line starts that Markdown would read as a heading, quote or list marker.

    One multi-line regex pass per block (in C), not a Python call per line: PDF pages and
    text files are thousands of lines.
    """
    lined = "\n" + text  # the first line starts after a newline too
    if not _MD_ANY_START.search(lined):  # the common case: one scan, nothing to escape
        return text
    lined = _MD_BULLET_START.sub(r"\1\\\2", lined)
    return _MD_NUMBER_START.sub(r"\1\2\\\3", lined)[1:]


def _roman(n: int) -> str:
    out = []
    for value, digits in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"),
                          (90, "xc"), (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"),
                          (4, "iv"), (1, "i")):
        count, n = divmod(n, value)
        out.append(digits * count)
    return "".join(out)


def _letters(n: int) -> str:
    """1 -> a, 26 -> z, 27 -> aa (as Word and LibreOffice count on past z)."""
    out = ""
    while n > 0:
        n, rest = divmod(n - 1, 26)
        out = chr(ord("a") + rest) + out
    return out


def number_text(n: int, style: str = "decimal") -> str:
    """A list number as a document shows it. ``style``: decimal, lowerLetter,
    upperLetter, lowerRoman, upperRoman (the OOXML names; DOC, ODF, PPTX and HTML map
    theirs onto these), anything else decimal. One place, so "iv" is "iv" in every
    format."""
    if n > 0 and style in ("lowerRoman", "upperRoman") and n < 4000:
        r = _roman(n)
        return r if style == "lowerRoman" else r.upper()
    if n > 0 and style in ("lowerLetter", "upperLetter"):
        a = _letters(n)
        return a if style == "lowerLetter" else a.upper()
    return str(n)


def _md_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>").strip()


class Builder:
    """Collects blocks; ``build()`` returns (text, markdown, pages)."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._md: list[str] = []
        self._pages: list[tuple[int, int, int]] = []  # (number, start block, end block)
        self._page_start: int | None = None
        self._page_no = 0
        self._list_open = False
        # alt text and page furniture: words on the page that are not its own text
        self._asides = 0

    # -- blocks -------------------------------------------------------------------------
    def _add(self, text: str, md: str, *, is_list: bool = False) -> None:
        if not text.strip():
            return
        if self._list_open and not is_list:
            self._list_open = False
        self._text.append(text)
        self._md.append(md)
        self._list_open = is_list

    def heading(self, text: str, level: int = 1) -> None:
        text = clean_inline(text).replace("\n", " ")
        level = min(max(level, 1), 6)
        self._add(text, f"{'#' * level} {text}")

    def paragraph(self, text: str) -> None:
        text = clean_inline(text)
        md = md_escape(text)
        self._add(text, md)

    def preformatted(self, text: str, md: str | None = None) -> None:
        """Text whose line layout matters (plain text files, code, PDF pages). ``md``: its
        ``md_escape``, when a page reader computed it already (in a forked process)."""
        text = text.strip("\n")
        if not text.strip():
            return
        self._add(text, md_escape(text) if md is None else md.strip("\n"))

    def code(self, text: str, language: str = "") -> None:
        text = text.strip("\n")
        fence = "````" if "```" in text else "```"
        self._add(text, f"{fence}{language}\n{text}\n{fence}")

    def list_item(self, text: str, level: int = 0, ordered: bool = False, number: int = 1,
                  label: str | None = None) -> None:
        """A list item. An ordered one keeps its number in the plain text too ("42.", or
        ``label`` as the document shows it: "a)", "iv.", "2.1."): a reader quotes "step 3"
        and the number is the document's text, not markup. Markdown numbers it ``N.``."""
        text = clean_inline(text).replace("\n", " ")
        indent = "  " * max(level, 0)
        if not ordered:
            self._add(f"{indent}{text}", f"{indent}- {text}", is_list=True)
            return
        shown = clean_inline(label) if label is not None else f"{number}."
        plain = f"{indent}{shown} {text}" if shown else f"{indent}{text}"
        self._add(plain, f"{indent}{number}. {text}", is_list=True)

    def image_alt(self, text: str) -> None:
        """The alternative text of a picture, shape or chart (what a screen reader reads
        out): in the plain text as it is, in Markdown as an image (``![alt]()``) so a
        reader can tell it from the document's own sentences."""
        text = clean_inline(text).replace("\n", " ")
        if not text or _FILE_NAME.search(text):
            return
        alt = text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
        self._add(text, f"![{alt}]()")
        self._asides += 1

    def furniture(self, text: str) -> None:
        """A paragraph every page repeats (a master slide's footer, a slide number): text,
        but not what makes a page of pictures a page with text (``has_text``)."""
        before = len(self._text)
        self.paragraph(text)
        self._asides += len(self._text) - before

    def quote(self, text: str) -> None:
        text = clean_inline(text)
        self._add(text, "\n".join(f"> {ln}" for ln in text.split("\n")))

    def table(self, rows: Sequence[Sequence[str | None]], header: bool = True) -> None:
        """A table; the first row is the header in Markdown (an empty one if not ``header``)."""
        grid = [list(map(str, r)) if None not in r else [("" if c is None else str(c)) for c in r]
                for r in rows]
        grid = [r for r in grid if "".join(r).strip()]
        if not grid:
            return
        width = max(map(len, grid))
        grid = [r if len(r) == width else r + [""] * (width - len(r)) for r in grid]
        if self._plain_table(grid, width, header):
            return
        # Cells with edge spaces (a sheet's padded labels) are the common reason to miss
        # the fast path: stripped, the table usually takes it after all.
        if self._plain_table([[c.strip() for c in r] for r in grid], width, header):
            return
        text = "\n".join("\t".join(c.replace("\n", " ").strip() for c in r).rstrip() for r in grid)
        md_rows = [[_md_cell(c) for c in r] for r in grid]
        if not header:
            md_rows.insert(0, [""] * width)
        lines = ["| " + " | ".join(md_rows[0]) + " |", "|" + "---|" * width]
        lines += ["| " + " | ".join(r) + " |" for r in md_rows[1:]]
        self._add(text, "\n".join(lines))

    def _plain_table(self, grid: list[list[str]], width: int, header: bool) -> bool:
        """Fast path for big tables (a 100,000-row sheet): when no cell needs escaping or
        stripping, render whole-table strings with C-level joins instead of per cell."""
        lines = ["\t".join(r) for r in grid]
        joined = "\n".join(lines)
        if (joined.count("\t") != len(grid) * (width - 1) or joined.count("\n") != len(grid) - 1
                or _edge_space(joined)):
            return False
        md = joined.replace("\\", "\\\\").replace("|", "\\|")  # as _md_cell, in one pass
        md = "| " + md.replace("\t", " | ").replace("\n", " |\n| ") + " |"
        sep = "|" + "---|" * width
        if header:
            first, _, rest = md.partition("\n")
            md = f"{first}\n{sep}\n{rest}" if rest else f"{first}\n{sep}"
        else:
            md = "| " + " | ".join([""] * width) + " |\n" + sep + "\n" + md
        self._add("\n".join(ln.rstrip("\t") for ln in lines), md)
        return True

    def embed(self, text: str, markdown: str) -> None:
        """Content another extraction already rendered (a decrypted package), kept as is."""
        self._add(text, markdown or text)

    def extend(self, other: Builder) -> None:
        """Append the blocks of ``other`` (a trial rendering that was kept)."""
        for text, md in zip(other._text, other._md, strict=True):
            self._text.append(text)
            self._md.append(md)
        self._list_open = other._list_open

    def rule(self) -> None:
        self._text.append("")
        self._md.append("---")

    # -- pages --------------------------------------------------------------------------
    def start_page(self, number: int | None = None) -> None:
        """Blocks added from here on belong to a new page (PDF page, slide, sheet)."""
        self.end_page()
        self._page_no = number if number is not None else self._page_no + 1
        self._page_start = len(self._text)

    def end_page(self) -> None:
        if self._page_start is not None:
            self._pages.append((self._page_no, self._page_start, len(self._text)))
            self._page_start = None

    # -- output -------------------------------------------------------------------------
    def text(self) -> str:
        """The plain text alone (a table cell, a header): no Markdown or pages made."""
        return _join(self._text)

    def has_text(self) -> bool:
        """Whether any block holds text (``_add`` keeps only blocks that do; a rule is an
        empty one). Alt text and furniture do not count: "Scanned page" on a pasted scan, or
        a slide number on a photographed slide, must not stop its pictures being read."""
        if not self._asides:
            return any(self._text)
        return sum(1 for t in self._text if t) > self._asides

    def build(self) -> tuple[str, str, list[Page]]:
        self.end_page()
        pages = [
            Page(number=n, text=_join(self._text[a:b])) for n, a, b in self._pages
        ]
        return _join(self._text), _join_md(self._md), pages


def render_text(walker: Any, el: Any) -> str:
    """Plain text of one subtree, rendered by a walker (an object with ``out: Builder``
    and ``blocks(el)``) into a Builder of its own: a header, a footnote, a text box."""
    sub = Builder()
    saved, walker.out = walker.out, sub
    try:
        walker.blocks(el)
    finally:
        walker.out = saved
    return sub.text().strip()


def _join(blocks: Iterable[str]) -> str:
    return "\n\n".join(b for b in blocks if b.strip())


def _join_md(blocks: list[str]) -> str:
    out: list[str] = []
    prev_list = False
    for b in blocks:
        if not b.strip():
            continue
        is_list = bool(re.match(r"^\s*(-|\d+\.) ", b)) and "\n" not in b
        if out:
            out.append("\n" if (is_list and prev_list) else "\n\n")
        out.append(b)
        prev_list = is_list
    return "".join(out)
