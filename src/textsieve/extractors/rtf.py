"""RTF to text with our own single-pass tokenizer (linear time, never recursive).

One regex walks control words, runs of hex escapes, braces and text runs; the formatting
words we ignore (most of a real file) are consumed in the same call as the token after them.
Text bytes and ``\\'hh`` escapes are collected raw and decoded in the code page in force
(``\\ansicpg``, or the current font's ``\\fcharset``); ``\\uN`` code points are taken as they
are and skip the ``\\ucN`` fallback characters that follow. Destinations that are not
document text (colour tables, style sheets, pictures, object data, ``\\*`` extensions, field
instructions) are passed over by brace depth alone, unread; the font table and ``\\info``
are read, for the code pages and the metadata. Table cells become table rows. Malformed
input (unbalanced braces, truncated files) still yields whatever text it holds.
"""

from __future__ import annotations

import re
import struct
from binascii import unhexlify
from dataclasses import dataclass

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader, Signature
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder
from ..textcodec import normalize_charset
from . import Context

# Output version (archives re-extract what an older one made): 2 = headers and footers;
# 3 = nothing inside an unread destination counts, and data cut short keeps its last table.
FORMAT = Format(
    name="rtf", version=4,  # 4: embedded objects (\\objdata) become children
    readers=(Reader(d.RTF),),
    signatures=(Signature(d.RTF, b"{\\rtf"),),
    hints={"rtf": d.RTF},
)

_TOKEN = re.compile(
    rb"\\([a-zA-Z]{1,32})(-?\d{1,10})? ?"  # 1, 2: control word + parameter
    rb"|((?:\\'[0-9a-fA-F]{2})+)"  # 3: a run of hex bytes (all of a non-Latin text)
    rb"|\\([^a-zA-Z'])"  # 4: control symbol
    rb"|([{}])"  # 5: group
    rb"|([^\\{}\r\n]+)"  # 6: text run
    rb"|[\r\n]+"  # ignored line breaks
    rb"|\\",  # a lone backslash at the end of the data
    re.S,
)

# Destinations whose content is not document text.
_SKIP = frozenset({
    "fonttbl", "colortbl", "stylesheet", "info", "pict", "object", "objdata", "objclass",
    "themedata", "colorschememapping", "datastore", "latentstyles", "listtable",
    "listoverridetable", "rsidtbl", "generator", "xmlnstbl", "mmathPr", "fldinst", "pntext",
    "pntxta", "pntxtb", "listtext", "filetbl", "revtbl", "bkmkstart", "bkmkend", "nonshppict",
    "sp", "sn", "sv", "txfieldtext", "formfield", "ffdeftext", "userprops", "docvar", "template",
    "fchars", "lchars", "wgrffmtfilter", "pgdsctbl", "protusertbl", "operator", "company",
    "category", "comment", "doccomm", "hlinkbase", "passwordhash",
})
# Page headers and footers: kept apart and shown once each, headers before the body and
# footers after it (as for DOCX), not wherever the section put them.
_STORIES = {**dict.fromkeys(("header", "headerl", "headerr", "headerf"), "header"),
            **dict.fromkeys(("footer", "footerl", "footerr", "footerf"), "footer")}
# \* destinations we do read.
_STAR_KEEP = frozenset({"shppict", "shpinst", "shptxt"})
_INFO = {"title": "title", "author": "author", "subject": "subject", "keywords": "keywords"}
_DATES = {"creatim": "created", "revtim": "modified"}

_SYMBOLS = {
    "par": "\n\n", "sect": "\n\n", "page": "\n\n", "line": "\n", "tab": "\t",
    "emdash": "\u2014", "endash": "\u2013", "emspace": "\u2003", "enspace": "\u2002",
    "qmspace": "\u2005", "bullet": "\u2022", "lquote": "\u2018", "rquote": "\u2019",
    "ldblquote": "\u201c", "rdblquote": "\u201d", "zwj": "\u200d", "zwnj": "\u200c",
    "ltrmark": "", "rtlmark": "", "chftn": "",
}
# Control words word() acts on outside a group start; all others (borders, cell geometry,
# fonts sizes: most of a real RTF file) change nothing we track and are skipped unparsed.
_HANDLED = frozenset(w.encode() for w in (
    *_SYMBOLS, "u", "uc", "cell", "nestcell", "row", "nestrow", "intbl", "pard", "f",
    "fcharset", "ansicpg", "mac", "pc", "pca", "deff", "yr", "mo", "dy", "hr", "min", "plain",
    "bin"))


def _trie(words: frozenset[bytes] | list[bytes]) -> bytes:
    """A regex alternation of ``words`` shared by prefix (``p(?:a(?:ge|rd?)|...)``).

    Python's regex engine tries a flat alternation word by word, and this one runs at every
    control word of the file; by prefix, most words fail on their first letter.
    """
    heads: dict[bytes, list[bytes]] = {}
    for w in sorted(words):
        heads.setdefault(w[:1], []).append(w[1:])
    whole = heads.pop(b"", None) is not None
    alts = [re.escape(h) + _trie(rest) for h, rest in heads.items()]
    if not alts:
        return b""
    body = alts[0] if len(alts) == 1 and not whole else b"(?:" + b"|".join(alts) + b")"
    return body + b"?" if whole else body


# A run of control words none of which is handled (and line breaks).
_IGNORED_RUN = (rb"(?:\\(?!" + _trie(_HANDLED)
                + rb"(?![a-zA-Z]))[a-zA-Z]{1,32}(?:-?\d{1,10})? ?|[\r\n]+)*+")
# Outside a group start, the next token that matters: the ignored words before it go in
# the same regex call, as they are most of the tokens of a real RTF file. Possessive: the
# words are never given back (their delimiting space would become text); ignored words at
# the very end of the data match nothing here and are passed over by _IGNORED.
_BODY_TOKEN = re.compile(_IGNORED_RUN + b"(?:" + _TOKEN.pattern + b")", re.S)
_IGNORED = re.compile(_IGNORED_RUN)  # such a run at the very end of the data, alone
# A skipped group's content up to the next token that matters to its end: a brace (1), an
# escaped brace or backslash (so that ``\\\\{`` is seen as an escape and a real brace), or
# ``\\binN`` (2), whose N raw bytes may hold any brace. Possessive, so it never backtracks.
_SKIP_SCAN = re.compile(
    rb"(?:[^\\{}]++|\\(?![\\{}]|bin-?\d))*+"
    rb"(?:([{}])|\\[\\{}]|\\bin(-?\d{1,10}) ?)")
# Skipped destinations that are still read, for the metadata and the code pages.
_READ_SKIPPED = frozenset({"fonttbl", *_INFO, *_DATES})
_CONTROL_SYMBOLS = {b"~": "\u00a0", b"_": "\u2011", b"-": "", b"\\": "\\", b"{": "{",
                    b"}": "}", b"\t": "\t", b"\n": "\n\n", b"\r": "\n\n"}
_CHARSETS = {
    77: "mac_roman", 128: "cp932", 129: "cp949", 130: "johab", 134: "gb18030", 136: "cp950",
    161: "cp1253", 162: "cp1254", 163: "cp1258", 177: "cp1255", 178: "cp1256",
    186: "cp1257", 204: "cp1251", 222: "cp874", 238: "cp1250", 255: "cp437",
}


@dataclass(slots=True)
class _State:
    skip: bool = False
    uc: int = 1
    codepage: str = "cp1252"
    dest: str = ""  # "fonttbl", an info field, a date field, or ""

    def clone(self) -> _State:
        """A group starts with its parent's state; its changes end with it."""
        return _State(self.skip, self.uc, self.codepage, self.dest)


class _Converter:
    """The tokenizer loop and its output: paragraphs, tables and metadata."""

    def __init__(self) -> None:
        self.state = _State()
        self.stack: list[_State] = []
        self.pending = bytearray()
        self.pieces: list[str] = []  # current paragraph / cell
        self.cells: list[str] = []
        self.rows: list[list[str]] = []
        self.intbl = False
        self.blocks: list[tuple[str, object]] = []  # ("p", text) | ("t", rows)
        self.ansi = "cp1252"
        self.fonts: dict[int, str] = {}
        self.font_no = -1
        self.default_font = -1
        self.info: dict[str, list[str]] = {}
        self.dates: dict[str, dict[str, int]] = {}
        self.skip_chars = 0
        self.stories: dict[str, list[str]] = {"header": [], "footer": []}
        self.outer_pieces: list[list[str]] = []  # the body paragraph a story interrupted

    # -- text ---------------------------------------------------------------------------
    def flush_bytes(self) -> None:
        if self.pending:
            self.emit(self.pending.decode(self.state.codepage, "replace"))
            self.pending.clear()

    def emit(self, text: str) -> None:
        st = self.state
        if "\x00" in text:
            text = text.replace("\x00", "")
        if st.dest in _INFO:
            self.info.setdefault(st.dest, []).append(text)
        elif not st.skip:
            self.pieces.append(text)

    def add_bytes(self, raw: bytes) -> None:
        if self.skip_chars:
            n = min(self.skip_chars, len(raw))
            self.skip_chars -= n
            raw = raw[n:]
        if raw and (not self.state.skip or self.state.dest in _INFO):
            self.pending += raw

    def end_paragraph(self) -> None:
        text = "".join(self.pieces)
        self.pieces.clear()
        story = self.stories.get(self.state.dest)
        if story is not None:  # a header/footer paragraph (its tables read as lines)
            if text.strip():
                story.append(text.replace("\t", " "))
            return
        if self.intbl:
            self.pieces.append(text + "\n")
            return
        self.flush_table()
        if text.strip():
            self.blocks.append(("p", text))

    def end_cell(self) -> None:
        if self.state.dest in self.stories:  # a table in a header: its cells on one line
            self.pieces.append(" ")
            return
        self.cells.append("".join(self.pieces).strip())
        self.pieces.clear()

    def end_row(self) -> None:
        if self.state.dest in self.stories:
            self.end_paragraph()
            return
        if self.pieces and "".join(self.pieces).strip():
            self.end_cell()
        self.pieces.clear()
        self.rows.append(self.cells)
        self.cells = []
        self.intbl = False

    def flush_table(self) -> None:
        if self.cells:
            self.rows.append(self.cells)
            self.cells = []
        if self.rows:
            self.blocks.append(("t", self.rows))
            self.rows = []

    def end_story(self, kind: str) -> None:
        """A header/footer group closed: its last paragraph, then back to the body."""
        text = "".join(self.pieces)
        if text.strip():
            self.stories[kind].append(text.replace("\t", " "))
        self.pieces = self.outer_pieces.pop() if self.outer_pieces else []

    # -- control words ------------------------------------------------------------------
    def word(self, name: str, arg: int | None, group_start: bool, star: bool) -> None:
        st = self.state
        if group_start:
            if name == "fonttbl":
                st.skip, st.dest = True, "fonttbl"
                return
            if name in _INFO and st.dest != "fonttbl":
                st.skip, st.dest = True, name
                return
            if name in _DATES:
                st.skip, st.dest = True, name
                self.dates[name] = {}
                return
            if name in _SKIP or (star and name not in _STAR_KEEP):
                st.skip = True
                return
            if name in _STORIES and not st.skip and st.dest not in _STORIES:
                self.flush_bytes()
                self.outer_pieces.append(self.pieces)
                self.pieces = []
                st.dest = _STORIES[name]
                return
        if self.skip_chars and name not in ("u", "par", "cell", "row"):
            self.skip_chars -= 1
            return
        if name == "u" and arg is not None:
            self.flush_bytes()
            self.emit(chr(arg + 65536 if arg < 0 else arg) if -32768 <= arg < 65536 else "")
            self.skip_chars = st.uc
            return
        self.skip_chars = 0
        if name in _SYMBOLS:
            self.flush_bytes()
            if name in ("par", "sect", "page") and not st.skip:
                self.end_paragraph()
            else:
                self.emit(_SYMBOLS[name])
        elif name == "uc" and arg is not None:
            st.uc = max(0, min(arg, 10))
        elif name in ("cell", "nestcell"):
            self.flush_bytes()
            if not st.skip:
                if name == "nestcell":
                    self.emit("\t")
                else:
                    self.end_cell()
        elif name in ("row", "nestrow"):
            self.flush_bytes()
            if not st.skip:
                if name == "nestrow":
                    self.emit("\n")
                else:
                    self.end_row()
        elif name == "intbl":
            self.intbl = True
        elif name == "pard":
            self.flush_bytes()
            self.intbl = False
        elif name == "f" and arg is not None:
            self.flush_bytes()
            if st.dest == "fonttbl":
                self.font_no = arg
            else:
                st.codepage = self.fonts.get(arg, self.ansi)
        elif name == "fcharset" and arg is not None and st.dest == "fonttbl":
            cp = _CHARSETS.get(arg)
            if cp:
                self.fonts[self.font_no] = cp
        elif name == "ansicpg" and arg is not None:
            self.ansi = normalize_charset(f"cp{arg}") or self.ansi
            st.codepage = self.ansi
        elif name in ("mac", "pc", "pca"):
            self.ansi = {"mac": "mac_roman", "pc": "cp437", "pca": "cp850"}[name]
            st.codepage = self.ansi
        elif name == "deff" and arg is not None:
            self.default_font = arg
        elif name in ("yr", "mo", "dy", "hr", "min") and st.dest in _DATES and arg is not None:
            self.dates[st.dest][name] = arg
        elif name == "plain" and st.dest != "fonttbl" and self.default_font in self.fonts:
            st.codepage = self.fonts[self.default_font]

    def close_group(self) -> None:
        """A ``}``: the group's state changes end with it (and a header or footer)."""
        self.skip_chars = 0
        if self.stack:
            closing = self.state.dest
            self.state = self.stack.pop()
            if closing in _STORIES.values() and self.state.dest != closing:
                self.end_story(closing)

    # -- the loop -----------------------------------------------------------------------
    def run(self, data: bytes) -> None:
        pos, end = 0, len(data)
        match, body_match = _TOKEN.match, _BODY_TOKEN.match
        group_start = star = False
        while pos < end:
            if group_start or self.skip_chars:
                m = match(data, pos)
            elif (m := body_match(data, pos)) is None:
                # Only ignored words are left (a file cut short): pass them all at once;
                # one by one, each step would scan the rest again (quadratic).
                skipped = _IGNORED.match(data, pos).end()  # type: ignore[union-attr]
                if skipped > pos:
                    pos = skipped
                    continue
                m = match(data, pos)
            if m is None:  # cannot happen with the catch-all alternatives; be safe
                pos += 1
                continue
            pos = m.end()
            kind = m.lastindex
            if kind == 6:
                if group_start and m.group(6) == b"*":
                    star = True  # "{*\\dest" written without its backslash
                    continue
                self.add_bytes(m.group(6))
                group_start = False
            elif kind in (1, 2):
                name = m.group(1).decode("ascii")
                arg = int(m.group(2)) if m.group(2) else None
                if name == "bin" and arg:
                    pos += max(arg, 0)  # raw binary data: skip it unread
                    continue
                if name not in ("u",):
                    self.flush_bytes()
                self.word(name, arg, group_start, star)
                if group_start and self.state.skip and name != "info" \
                        and self.state.dest not in _READ_SKIPPED:
                    # A destination we do not read (style sheet, list table, picture, ...):
                    # to its closing brace without tokenizing it, which is most of the
                    # tokens of a Word-made RTF.
                    pos = _group_end(data, pos)
                    self.close_group()
                group_start = star = False
            elif kind == 3:
                run = m.group(3)  # \'hh\'hh...: 4 bytes per escape
                if self.skip_chars:  # the \uN fallback: one escape is one character
                    n = min(self.skip_chars, len(run) // 4)
                    self.skip_chars -= n
                    run = run[4 * n:]
                if run and (not self.state.skip or self.state.dest in _INFO):
                    self.pending += unhexlify(run.replace(b"\\'", b""))
                group_start = False
            elif kind == 4:
                sym = m.group(4)
                if sym == b"*":
                    star = True
                    continue
                self.flush_bytes()
                if sym in (b"\n", b"\r") and not self.state.skip:
                    self.end_paragraph()
                elif self.skip_chars:
                    self.skip_chars -= 1
                else:
                    self.emit(_CONTROL_SYMBOLS.get(sym, ""))
                group_start = False
            elif kind == 5:
                self.flush_bytes()
                self.skip_chars = 0
                if m.group(5) == b"{":
                    self.stack.append(self.state)
                    self.state = self.state.clone()
                    group_start, star = True, False
                else:
                    self.close_group()
                    group_start = star = False
        self.flush_bytes()
        while self.stack:  # truncated data: its open groups end here (a header's too)
            self.close_group()
        self.end_paragraph()
        self.intbl = False
        self.end_paragraph()


def _group_end(data: bytes, pos: int) -> int:
    """Where the group open at ``pos`` ends: after its closing brace, or at the end."""
    depth, match = 1, _SKIP_SCAN.match
    while m := match(data, pos):
        pos = m.end()
        brace = m.group(1)
        if brace == b"{":
            depth += 1
        elif brace == b"}":
            depth -= 1
            if not depth:
                return pos
        elif m.group(2):
            pos += max(int(m.group(2)), 0)
    return len(data)


def _iso_date(parts: dict[str, int]) -> str | None:
    try:
        y, mo, d = parts["yr"], parts.get("mo", 1), parts.get("dy", 1)
        if not (1900 < y < 3000 and 1 <= mo <= 12 and 1 <= d <= 31):
            return None
        return f"{y:04d}-{mo:02d}-{d:02d}T{parts.get('hr', 0):02d}:{parts.get('min', 0):02d}:00"
    except KeyError:
        return None


_SURROGATES = re.compile("[\ud800-\udfff]")


def _fix_surrogates(text: str) -> str:
    """``\\u-10179\\u-8704`` style pairs become one astral character."""
    if not _SURROGATES.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


_BARE_HEX = re.compile(rb"(?<=[A-Za-z0-9])'([0-9a-f]{2})(?=[A-Za-z'\s.,;:])")


def convert(data: bytes) -> tuple[list[tuple[str, object]], dict[str, str]]:
    """RTF bytes -> (blocks, metadata); blocks are ("p", text) or ("t", rows)."""
    if b"\\'" not in data and _BARE_HEX.search(data):
        # Some generators drop the backslash of every hex escape ("T'd3RAX"): restore it.
        data = _BARE_HEX.sub(rb"\\'\1", data)
    conv = _Converter()
    conv.run(data)
    # Each distinct header/footer text once: every section repeats them.
    head = [("p", t) for t in dict.fromkeys(x.strip() for x in conv.stories["header"])]
    foot = [("p", t) for t in dict.fromkeys(x.strip() for x in conv.stories["footer"])]
    blocks = head + conv.blocks + foot
    meta = {k: _fix_surrogates("".join(v)).strip() for k, v in conv.info.items()}
    for name, parts in conv.dates.items():
        if iso := _iso_date(parts):
            meta[_DATES[name]] = iso
    return blocks, {k: v for k, v in meta.items() if v}


def rtf_to_text(data: bytes) -> str:
    """Plain text of an RTF document (used by MSG bodies and tests)."""
    blocks, _ = convert(data)
    out: list[str] = []
    for kind, value in blocks:
        if kind == "p":
            out.append(_fix_surrogates(str(value)).strip())
        else:
            out.append("\n".join("\t".join(r) for r in value))  # type: ignore[attr-defined]
    return "\n\n".join(b for b in out if b)


_OBJDATA = re.compile(rb"\\objdata\b ?")
_NOT_HEX = re.compile(rb"[^0-9A-Fa-f]+")
_OLE1_EMBEDDED = 2  # FormatID of an embedded (not linked) OLE1 object
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def objects(data: bytes, limit: int) -> list[tuple[str, bytes]]:
    """The objects embedded in an RTF (``{\\object ... {\\*\\objdata hex}}``), at most
    ``limit``: (class name, native data). The hex is an OLE1 object (MS-OLEDS 2.2.4: version,
    format, class, topic and item names, then the native data): an Office document's
    compound file, a PDF's, or a Packager file."""
    found: list[tuple[str, bytes]] = []
    for m in _OBJDATA.finditer(data):
        if len(found) >= limit:
            break
        raw = _NOT_HEX.sub(b"", data[m.end():_group_end(data, m.end())])
        try:
            obj = unhexlify(raw[:len(raw) // 2 * 2])
            fmt = struct.unpack_from("<I", obj, 4)[0]
            pos, names = 8, []
            for _ in range(3):  # class name, topic name, item name: length-prefixed ANSI
                n = struct.unpack_from("<I", obj, pos)[0]
                names.append(obj[pos + 4:pos + 4 + n].rstrip(b"\0").decode("latin-1"))
                pos += 4 + n
            size = struct.unpack_from("<I", obj, pos)[0]
        except (struct.error, ValueError):  # cut short or not hex: not an object we can read
            continue
        native = obj[pos + 4:pos + 4 + size]
        if fmt == _OLE1_EMBEDDED and native:
            found.append((names[0], native))
    return found


def _children(data: bytes, ctx: Context, doc: Document) -> None:
    """Embedded objects become children: an Office document or a PDF unwrapped from its
    OLE storage, a packaged file from its Packager wrapper."""
    from ..kernels.ole import ole10native, unwrap_package

    limit = ctx.options.max_members
    got = objects(data, limit + 1)
    if len(got) > limit:
        doc.warnings.append(f"more than {limit} embedded objects: the rest are not read")
        got = got[:limit]
    for i, (cls, native) in enumerate(got, 1):
        name = f"object{i}"
        if cls.lower().startswith("package") and not native.startswith(_OLE_MAGIC):
            payload, name = ole10native(len(native).to_bytes(4, "little") + native, name)
        else:
            payload, name = unwrap_package(native, name)
        try:
            ctx.account(len(payload), "embedded objects")
        except ExtractionError as exc:  # the budget is spent: say so once, keep the text
            doc.children.append(Document.failed(exc.kind, exc.message, name=name))
            return
        doc.children.append(ctx.child(payload, name))


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    data = src.read()
    if not data.lstrip()[:5] == b"{\\rtf":
        raise ExtractionError(ErrorKind.CORRUPT, "not an RTF document")
    blocks, meta = convert(data)
    doc.title = meta.get("title")
    m = doc.metadata
    m.author, m.subject, m.keywords = meta.get("author"), meta.get("subject"), \
        meta.get("keywords")
    m.created, m.modified = meta.get("created"), meta.get("modified")
    for kind, value in blocks:
        if kind == "p":
            out.paragraph(_fix_surrogates(str(value)))
        else:
            rows = [[_fix_surrogates(c) for c in r] for r in value]  # type: ignore[attr-defined]
            out.table(rows, header=False)
    if b"\\objdata" in data:
        _children(data, ctx, doc)
