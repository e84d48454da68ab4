"""Chunks of a document for a language model, each with its provenance.

A model is handed text in pieces of a bounded number of tokens. Cutting at a fixed number
of characters splits a table row from its header, a list item in two, a sentence from its
section; the model then reads numbers without their columns and answers without knowing
where the text came from. So a chunk here follows the structure textsieve already has:

- a **section** (a heading and what follows, up to the next heading of the same or a higher
  level), and within it the blocks the extractor made (paragraphs, list items, tables);
- a **slide** or a **sheet** (a hard boundary: a chunk never spans two), a **page** of a
  paged document (a soft one: a chunk may run on, and lists every page it touches);
- an **item** (a mail, an attachment, an archive member): never two in one chunk.

A block that fits the budget is never cut. A block that does not is split at the largest
unit that fits: a table by rows, its header row repeated at the head of every piece; other
text by lines, then sentences, then words (a word longer than the budget, a base64 blob,
by characters). Every chunk carries its character offsets into the item's text (``text[
start:end]`` is the chunk, but for the repeated header row of a table piece), its heading
path, its page, slide or sheet numbers, and its token count, so a model's answer can point
back to the exact place.

Tokens are counted by an approximation by default (no model files, no downloads; fitted
to GPT's cl100k on the dev corpus, then raised by a quarter so that 9 texts in 10 count at
least what cl100k makes of them; base64, binary junk and some scripts count less), or
exactly by a tokenizer the user names, if it is installed and needs nothing downloaded
(what a hard limit, such as an embedding model's, wants):
``tiktoken:cl100k_base`` (an encoding tiktoken has cached already), ``tokenizers:FILE``
(a Hugging Face ``tokenizer.json``), or any callable ``str -> int``.

This module depends on the data model alone: the library, the archive's export, the
service and the MCP server all chunk through it.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import UsageError
from .model import Document, Status

DEFAULT_MAX_TOKENS = 512
MIN_MAX_TOKENS = 16  # below this even a table's header row leaves no room for a row


class ChunkError(UsageError):
    """Chunking cannot be done as asked: a bad budget, an unknown tokenizer, or one that
    would have to download its model first. ``kind`` is stable: ``bad_budget``,
    ``unknown_tokenizer``, ``missing_tokenizer`` (its package is not installed),
    ``tokenizer_needs_download``, ``bad_tokenizer`` (its file cannot be read)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# -- counting tokens --------------------------------------------------------------------------
# The approximation, fitted to GPT's cl100k tokenizer on the dev corpus (median ratio 1):
# a common English word is one token and a longer one a token per ~5 letters; a word in
# another script (Cyrillic, Greek, Hebrew, accented Latin) about a token per 1.5 letters;
# CJK a token per character; numbers in groups of 3 digits; each punctuation mark, tab,
# line break and run of spaces a token. Counted by C-level regex passes; only long words
# are looped over.
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_ASCII_WORD = re.compile(r"[A-Za-z]+")
_ASCII_LONG = re.compile(r"[A-Za-z]{6,}")
_OTHER_WORD = re.compile(rf"[^\W\d_A-Za-z{_CJK_CHARS}]+")
_CJK = re.compile(f"[{_CJK_CHARS}]")
_DIGITS = re.compile(r"\d+")
_LONG_DIGITS = re.compile(r"\d{4,}")
_MARKS = re.compile(r"[^\w\s]|\t|\n+| {2,}")


# What is counted is then raised by a quarter: a chunk is packed up to its budget, so an
# estimate that is right on average would put half the chunks over it; raised, 9 in 10
# texts of the dev corpus count at least what cl100k makes of them (bench/bench_chunks.py).
SAFETY = 1.25


def _approx_raw(text: str) -> int:
    """The approximation before SAFETY; additive over whitespace (no token spans it)."""
    if text == " ":  # the gap between two words or sentences: the common call
        return 0
    n = len(_ASCII_WORD.findall(text)) + len(_DIGITS.findall(text)) + len(
        _MARKS.findall(text))
    n += sum((len(w) - 1) // 5 for w in _ASCII_LONG.findall(text))
    n += sum((len(d) - 1) // 3 for d in _LONG_DIGITS.findall(text))
    if not text.isascii():
        n += sum((2 * len(w) + 2) // 3 for w in _OTHER_WORD.findall(text))
        n += len(_CJK.findall(text))
    return n


def approx_tokens(text: str) -> int:
    """An estimate, on the safe side, of the tokens a BPE tokenizer makes of ``text``
    (see above)."""
    return -(-_approx_raw(text) * 5 // 4)  # SAFETY, in integers: ceil(n * 1.25)


@dataclass(frozen=True)
class Tokenizer:
    """How tokens are counted: ``name`` (reported with the chunks) and ``count``.

    ``raw``: a count that is additive (the count of texts joined by whitespace is the sum
    of theirs and their gaps'), which packing adds up instead of counting every candidate
    chunk, with ``ratio`` (num, den): ``count`` is ``ceil(raw * num / den)``. Without it,
    a packed chunk is counted whole as it grows (an exact tokenizer)."""

    name: str
    count: Callable[[str], int]
    raw: Callable[[str], int] | None = None
    ratio: tuple[int, int] = (1, 1)

    @property
    def additive(self) -> bool:
        return self.raw is not None

    def packing(self, tokens: int) -> int:
        """A budget in ``count``'s tokens as one in ``raw``'s (what packing adds up)."""
        num, den = self.ratio
        return tokens * den // num if self.raw is not None else tokens


APPROX = Tokenizer("approx", approx_tokens, raw=_approx_raw, ratio=(5, 4))


def _tiktoken_cached(encoding: str) -> bool:
    """Whether tiktoken has the files of ``encoding`` on disk already, so loading it reads
    them instead of downloading. tiktoken keeps a download under its cache folder named by
    the SHA-1 of the file's URL; the URLs are the ones its registered constructor names."""
    try:
        import tiktoken_ext.openai_public as public  # the registry tiktoken itself uses
    except ImportError:
        return False
    ctor = getattr(public, "ENCODING_CONSTRUCTORS", {}).get(encoding)
    if ctor is None:
        return False
    import inspect

    urls = re.findall(r"https://[^\"'\s]+", inspect.getsource(ctor))
    cache = (os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
             or os.path.join(tempfile.gettempdir(), "data-gym-cache"))
    return bool(urls) and all(
        os.path.exists(os.path.join(cache, hashlib.sha1(u.encode()).hexdigest()))
        for u in urls)


def get_tokenizer(spec: str | Callable[[str], int] | Tokenizer | None) -> Tokenizer:
    """The tokenizer a user named: None or ``approx`` (the default), ``tiktoken:ENCODING``,
    ``tokenizers:FILE`` (tokenizer.json), a callable ``str -> int`` or a ``Tokenizer``.

    Nothing is ever downloaded: a tiktoken encoding that is not in tiktoken's cache is a
    ``ChunkError`` of kind ``tokenizer_needs_download``, never a network request in the
    middle of a run."""
    if spec is None or spec == "approx":
        return APPROX
    if isinstance(spec, Tokenizer):
        return spec
    if callable(spec):
        return Tokenizer(getattr(spec, "__name__", "custom"), spec)
    kind, _, arg = str(spec).partition(":")
    if kind == "tiktoken" and arg:
        try:
            import tiktoken
        except ImportError:
            raise ChunkError("missing_tokenizer", "the tokenizer tiktoken is not installed: "
                             "pip install tiktoken") from None
        try:
            cached = _tiktoken_cached(arg)
        except (ImportError, OSError, TypeError):
            cached = False
        if not cached:
            raise ChunkError("tokenizer_needs_download", f"tiktoken's encoding {arg!r} is not "
                             "on this machine and would have to be downloaded; textsieve "
                             "never downloads at run time (load it once with tiktoken "
                             "yourself, or set TIKTOKEN_CACHE_DIR to where it is)")
        try:
            enc = tiktoken.get_encoding(arg)
        except Exception as exc:
            raise ChunkError("bad_tokenizer", f"tiktoken cannot load {arg!r}: {exc}") from None
        return Tokenizer(f"tiktoken:{arg}",
                         lambda t: len(enc.encode(t, disallowed_special=())))
    if kind == "tokenizers" and arg:
        try:
            from tokenizers import Tokenizer as HFTokenizer
        except ImportError:
            raise ChunkError("missing_tokenizer", "the tokenizer library is not installed: "
                             "pip install tokenizers") from None
        if not os.path.isfile(arg):
            raise ChunkError("bad_tokenizer", f"{arg}: no such tokenizer file (a local "
                             "tokenizer.json; nothing is downloaded)")
        try:
            tok = HFTokenizer.from_file(arg)
        except Exception as exc:
            raise ChunkError("bad_tokenizer", f"{arg}: not a tokenizer file ({exc})") from None
        return Tokenizer(f"tokenizers:{os.path.basename(arg)}",
                         lambda t: len(tok.encode(t, add_special_tokens=False).ids))
    raise ChunkError("unknown_tokenizer", f"unknown tokenizer {spec!r} (approx, "
                     "tiktoken:ENCODING or tokenizers:FILE)")


# -- chunks -----------------------------------------------------------------------------------
@dataclass
class Chunk:
    """One piece of one item's text, and where it comes from.

    ``text`` is ``item text[start:end]``, except for a piece of a table split by rows,
    whose header row is repeated in front (``header_repeated``)."""

    index: int  # 0, 1, ... within its item
    text: str
    start: int  # character offsets into the item's text
    end: int
    tokens: int
    heading_path: list[str] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)  # page, slide or sheet numbers
    page_kind: str | None = None  # "page", "slide" or "sheet" (what ``pages`` number)
    item: dict[str, Any] = field(default_factory=dict)  # id, key, url or path, name, title
    header_repeated: bool = False

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"item": self.item, "index": self.index,
                             "heading_path": self.heading_path}
        if self.pages:
            d[f"{self.page_kind or 'page'}s"] = self.pages
        d.update({"start": self.start, "end": self.end, "tokens": self.tokens,
                  "text": self.text})
        if self.header_repeated:
            d["header_repeated"] = True
        return d


@dataclass(frozen=True)
class _Block:
    """A block of the item's text: the extractor's paragraph, list item, table, heading."""

    start: int
    end: int
    heading: int = 0  # its level if a heading
    table: bool = False


_BLANK = re.compile(r"\n[ \t]*\n\s*")
_MD_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
_FENCE = re.compile(r"^(```|~~~)", re.M)
_SENTENCE = re.compile(r"(?<=[.!?。！？])[\"')\]]*\s+")
_SPACE = re.compile(r"\s+")


def _md_headings(markdown: str) -> list[tuple[int, str]]:
    """(level, text) of the Markdown's headings in order, outside code fences."""
    if "#" not in markdown:
        return []
    fences = [m.start() for m in _FENCE.finditer(markdown)]
    out = []
    for m in _MD_HEADING.finditer(markdown):
        if bisect.bisect_right(fences, m.start()) % 2:  # inside a fence
            continue
        text = re.sub(r"\\(.)", r"\1", m.group(2)).strip()
        if text:
            out.append((len(m.group(1)), text))
    return out


def _blocks(doc: Document) -> list[_Block]:
    """The item's text cut into its blocks (textsieve joins blocks with a blank line), each
    marked a heading (matched in order against the Markdown's headings) or a table (every
    line has tab-separated cells)."""
    text = doc.text
    headings = _md_headings(doc.markdown) if doc.markdown and doc.markdown != text else []
    hi = 0
    out: list[_Block] = []
    pos = 0
    spans = []
    for m in _BLANK.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    for a, b in spans:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a >= b:
            continue
        body = text[a:b]
        level = 0
        if hi < len(headings) and "\n" not in body:
            # The next heading, or one a few further on (a heading the text spells
            # differently is skipped, not waited for forever).
            for j in range(hi, min(hi + 4, len(headings))):
                if headings[j][1] == body:
                    level, hi = headings[j][0], j + 1
                    break
        lines = body.count("\n") + 1
        table = not level and lines > 1 and "\t" in body and all(
            "\t" in ln for ln in body.split("\n"))
        out.append(_Block(a, b, level, table))
    return out


def _page_kind(doc: Document) -> str:
    mime = doc.mime_type or ""
    if "presentation" in mime or "powerpoint" in mime:
        return "slide"
    if "spreadsheet" in mime or "excel" in mime or mime in ("text/csv",
                                                            "text/tab-separated-values"):
        return "sheet"
    return "page"


class _Packer:
    """Packs the units of one section into chunks within the budget, with overlap.

    ``total`` is the open chunk's count: its units' tokens and the whitespace between them
    (a line break is a token). For the approximation that is exact, as no token spans a
    gap; an exact tokenizer's count of the whole is checked as units are added."""

    def __init__(self, text: str, tok: Tokenizer, max_tokens: int, overlap: int,
                 emit: Callable[[int, int, int, str | None], None]) -> None:
        self.text, self.tok, self.emit = text, tok, emit
        self.max, self.overlap = tok.packing(max_tokens), tok.packing(overlap)
        self.counter = tok.raw or tok.count
        self.units: list[tuple[int, int, int]] = []  # (start, end, tokens) of the open chunk
        self.total = 0

    def count(self, a: int, b: int) -> int:
        return self.counter(self.text[a:b])

    def gap(self, a: int) -> int:
        """The tokens of the whitespace between the open chunk's end and ``a``."""
        return self.count(self.units[-1][1], a) if self.units else 0

    def fits(self, a: int, tokens: int) -> bool:
        return self.total + self.gap(a) + tokens <= self.max

    def recount(self) -> None:
        u = self.units
        self.total = sum(x[2] for x in u) + sum(
            self.count(u[i][1], u[i + 1][0]) for i in range(len(u) - 1))

    def add(self, a: int, b: int, tokens: int) -> None:
        """Add a unit that fits an empty chunk; flush first if it does not fit this one."""
        if self.units and not self.fits(a, tokens):
            self.flush(keep_overlap=True)
            while self.units and not self.fits(a, tokens):  # the overlap leaves too little
                self.units.pop(0)
                self.recount()
        self.total += self.gap(a) + tokens
        self.units.append((a, b, tokens))
        if not self.tok.additive and len(self.units) > 1:
            real = self.count(self.units[0][0], b)
            if real > self.max:  # the exact count of the whole is more than the parts'
                self.units.pop()
                self.recount()
                self.flush(keep_overlap=False)
                self.units, self.total = [(a, b, tokens)], tokens
            else:
                self.total = real

    def flush(self, *, keep_overlap: bool = False) -> None:
        if not self.units:
            return
        self.emit(self.units[0][0], self.units[-1][1], self.total, None)
        kept: list[tuple[int, int, int]] = []
        if keep_overlap and self.overlap:
            room = self.overlap
            for u in reversed(self.units):
                if u[2] > room:
                    break
                kept.insert(0, u)
                room -= u[2]
            if len(kept) == len(self.units):
                kept = kept[1:]  # always move on
        self.units = kept
        self.recount()


def _pieces(text: str, a: int, b: int, pattern: re.Pattern[str] | None) -> Iterator[
        tuple[int, int]]:
    """The spans of text[a:b] between the separators ``pattern`` matches (None: cut into
    single characters' worth, used for one unbreakable word)."""
    pos = a
    if pattern is None:
        yield a, b
        return
    for m in pattern.finditer(text, a, b):
        if m.start() > pos:
            yield pos, m.start()
        pos = m.end()
    if pos < b:
        yield pos, b


_NEWLINE = re.compile(r"\n")
_SPLITTERS: tuple[re.Pattern[str], ...] = (_NEWLINE, _SENTENCE, _SPACE)


def _split_text(p: _Packer, a: int, b: int, level: int = 0) -> None:
    """Add text[a:b], too big for one chunk, as the largest units that fit: lines, then
    sentences, then words, then runs of characters."""
    if level >= len(_SPLITTERS):
        _split_chars(p, a, b)
        return
    for x, y in _pieces(p.text, a, b, _SPLITTERS[level]):
        t = p.count(x, y)
        if t <= p.max:
            p.add(x, y, t)
        else:
            _split_text(p, x, y, level + 1)


def _split_chars(p: _Packer, a: int, b: int) -> None:
    """One 'word' longer than the budget (a base64 blob, a URL of a kilobyte): runs of
    characters, each within the budget."""
    pos = a
    while pos < b:
        # The longest run from pos that fits, looked for within 16 characters a token
        # (more than any tokenizer packs): a run of 100 kB is not counted whole 17 times.
        lo, hi = pos + 1, min(b, pos + 16 * p.max)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if p.count(pos, mid) <= p.max:
                lo = mid
            else:
                hi = mid - 1
        p.add(pos, lo, p.count(pos, lo))
        pos = lo


def chunk(document: Document, max_tokens: int = DEFAULT_MAX_TOKENS, overlap: int = 0, *,
          tokenizer: str | Callable[[str], int] | Tokenizer | None = None,
          item: dict[str, Any] | None = None, children: bool = True) -> list[Chunk]:
    """The chunks of ``document`` (and, with ``children``, of its attachments and members,
    each an item of its own), each within ``max_tokens``; ``overlap`` tokens of whole units
    (lines, sentences, list items) from the end of a chunk start the next one of the same
    section. ``item``: what the document is in an archive (id, key, url or path), carried by
    every chunk. Raises ``ChunkError`` for a bad budget or tokenizer."""
    tok = get_tokenizer(tokenizer)
    if not isinstance(max_tokens, int) or max_tokens < MIN_MAX_TOKENS:
        raise ChunkError("bad_budget", f"max_tokens must be at least {MIN_MAX_TOKENS}")
    if not isinstance(overlap, int) or overlap < 0 or overlap * 2 > max_tokens:
        raise ChunkError("bad_budget", "overlap must be between 0 and half of max_tokens")
    ref = dict(item) if item else {}
    if not ref:
        ref = {"name": document.name}
    out = list(_chunk_one(document, tok, max_tokens, overlap, ref))
    if children:
        for i, child in enumerate(document.children):
            cref = {"parent": ref, "child": i, "name": child.name}
            out.extend(chunk(child, max_tokens, overlap, tokenizer=tok, item=cref))
    return out


def _chunk_one(doc: Document, tok: Tokenizer, max_tokens: int, overlap: int,
               item: dict[str, Any]) -> Iterator[Chunk]:
    """The chunks of one item's own text (no children)."""
    text = doc.text
    if doc.status is Status.ERROR or not text.strip():
        return
    page_kind = _page_kind(doc) if doc.pages else None
    hard_pages = page_kind in ("slide", "sheet")
    # The pages' spans in the text (their texts are slices of it, in order).
    page_starts: list[int] = []
    page_numbers: list[int] = []
    pos = 0
    for pg in doc.pages:
        at = text.find(pg.text, pos) if pg.text else -1
        if at < 0:
            continue
        page_starts.append(at)
        page_numbers.append(pg.number)
        pos = at + len(pg.text)

    def page_at(offset: int) -> int:
        """The index (in ``page_numbers``) of the page holding ``offset``."""
        return max(bisect.bisect_right(page_starts, offset) - 1, 0)

    chunks: list[Chunk] = []
    path: list[tuple[int, str]] = []  # (level, heading) from the top
    section_path: list[str] = []

    def emit(a: int, b: int, tokens: int, header: str | None) -> None:
        pages: list[int] = []
        if page_starts:
            pages = page_numbers[page_at(a):page_at(max(a, b - 1)) + 1]
        body = text[a:b] if header is None else f"{header}\n{text[a:b]}"
        tokens = tok.count(body)  # what the model will be given, counted as a whole
        chunks.append(Chunk(len(chunks), body, a, b, tokens, list(section_path), pages,
                            page_kind if pages else None, item, header is not None))

    packer = _Packer(text, tok, max_tokens, overlap, emit)
    current_page: int | None = None
    pending_heading = False  # the open chunk holds nothing but headings so far
    for blk in _blocks(doc):
        here = page_at(blk.start) if page_starts else None
        new_page = hard_pages and here != current_page and current_page is not None
        current_page = here
        if blk.heading or new_page:
            if not (blk.heading and pending_heading and packer.units):
                packer.flush()
            if blk.heading:
                while path and path[-1][0] >= blk.heading:
                    path.pop()
                path.append((blk.heading, text[blk.start:blk.end]))
            section_path[:] = [h for _, h in path]
        if new_page and not blk.heading:
            pending_heading = False
        t = packer.count(blk.start, blk.end)
        if t <= packer.max:
            packer.add(blk.start, blk.end, t)
        elif blk.table:
            # Headings waiting for their content lead the table's first piece.
            lead = (packer.units[0][0], packer.units[-1][1], packer.total) \
                if pending_heading and packer.units else None
            if lead is None:
                packer.flush()
            packer.units, packer.total = [], 0
            _split_table(packer, blk, emit, lead)
        else:
            if not pending_heading:  # else the headings lead the first lines
                packer.flush()
            _split_text(packer, blk.start, blk.end)
        pending_heading = bool(blk.heading) and (pending_heading or len(packer.units) == 1)
    packer.flush()
    yield from chunks


def _split_table(p: _Packer, blk: _Block,
                 emit: Callable[[int, int, int, str | None], None],
                 lead: tuple[int, int, int] | None = None) -> None:
    """A table too big for one chunk, split by rows; each piece after the first starts
    with the header row again, so its numbers keep their column names. A row too big for
    a piece with the header is a piece of its own, cut by words. ``lead``: (start, end,
    tokens) of headings that lead the first piece."""
    text = p.text
    nl = text.index("\n", blk.start)
    header = text[blk.start:nl]
    h = p.count(blk.start, nl) + p.count(nl, nl + 1)  # the header row and its line break
    lead_start, lead_end, lead_tokens = lead or (blk.start, blk.start, 0)
    first_h = lead_tokens + p.count(lead_end, blk.start) + h
    if h * 2 > p.max or first_h > p.max:  # too little room for rows: lines as text
        if lead:
            p.units, p.total = [(lead_start, lead_end, lead_tokens)], lead_tokens
        _split_text(p, blk.start, blk.end)
        return
    # The first piece holds the header in place (and the headings leading it).
    start: int | None = lead_start
    end, total, first = nl + 1, first_h, True
    for a, b in _pieces(text, nl + 1, blk.end, _NEWLINE):
        t = p.count(a, b)
        if h + t > p.max:
            if start is not None and end > nl + 1:
                emit(start, end, total, None if first else header)
            elif start is not None:  # headings and a header row alone: not worth a chunk
                p.units, p.total = [(start, nl, first_h - 1)], first_h - 1
            _split_text(p, a, b, 1)
            p.flush()
            start, first = None, False
            continue
        if start is None:
            start, end, total = a, b, h + t
            continue
        g = p.count(end, a)
        over = total + g + t > p.max or (not p.tok.additive and p.tok.count(
            ("" if first else header + "\n") + text[start:b]) > p.max)
        if over:
            emit(start, end, total, None if first else header)
            start, end, total, first = a, b, h + t, False
        else:
            end, total = b, total + g + t
    if start is not None:
        emit(start, end, total, None if first else header)
