"""DOCX/DOCM/DOTX/DOTM: WordprocessingML read straight from the ZIP with lxml.

python-docx is too slow and skips text boxes, fields, tracked changes and notes; walking
the XML ourselves keeps every visible word in reading order and drops what a reader never
sees (deleted revisions, field instructions, the VML fallback copy of a text box).

The OOXML package helpers here (relationships, core/app properties, embedded files) are
shared with the PPTX extractor.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from lxml import etree

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader
from ..kernels.equations import omml_text
from ..kernels.ole import unwrap_package
from ..kernels.xml import (
    local,
    open_zip,
    parse_xml,
    read_member,
    read_xml,
    read_xml_lenient,
)
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder, number_text, render_text
from . import Context, wants_pictures

# Output version (archives re-extract what an older one made): 2 = the pictures of a
# document without text are OCRed (children), or needs_ocr with OCR off.
FORMAT = Format(
    name="docx", version=3,  # 3: list numbers, alt text, charts' data, equations, altChunk
    readers=(Reader(d.DOCX), Reader(d.DOCM), Reader(d.DOTX), Reader(d.DOTM)),
    hints={"docx": d.DOCX, "docm": d.DOCM, "dotx": d.DOTX, "dotm": d.DOTM},
)

# Imported on first use only (rare paths); ``preload`` imports them ahead.
LAZY = ("olefile",)

_REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
_R_IDS = ("{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id",
          "{http://purl.oclc.org/ooxml/officeDocument/relationships}id")
# Style names are English in the XML even when the UI is not, but some writers store the
# localized name; outlineLvl in the style covers the rest.
_HEADING_NAME = re.compile(
    r"^(?:heading|überschrift|titre|titolo|encabezado|título|rubrik|kop|nagłówek|заголовок)"
    r"\s*(\d)$", re.I)
_WP = "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}"
_WP_STRICT = "{http://purl.oclc.org/ooxml/drawingml/wordprocessingDrawing}"
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_M_STRICT = "{http://purl.oclc.org/ooxml/officeDocument/math}"
_C_STRICT = "{http://purl.oclc.org/ooxml/drawingml/chart}"
_FLOAT = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")
_MAX_CHART_POINTS = 10_000  # rows of a chart's data table (a damaged one may claim more)
_LEVEL_REF = re.compile(r"%([1-9])")  # "%2" in a level's text: level 2's number

# -- OOXML package helpers (shared with pptx) ------------------------------------------


def open_package(src: Source, main: str) -> zipfile.ZipFile:
    """Open an OOXML ZIP and check the main part exists (else CORRUPT)."""
    zf = open_zip(src)
    if main not in zf.NameToInfo:
        zf.close()
        raise ExtractionError(ErrorKind.CORRUPT, f"not a complete package: {main} is missing")
    return zf


def rels(zf: zipfile.ZipFile, part: str, ctx: Context) -> dict[str, tuple[str, str]]:
    """Relationship id -> (type suffix, resolved part path) for ``part``."""
    d, base = posixpath.split(part)
    root = read_xml(zf, posixpath.join(d, "_rels", base + ".rels"), ctx)
    out: dict[str, tuple[str, str]] = {}
    if root is None:
        return out
    for rel in root.iter(f"{{{_REL_NS}}}Relationship"):
        rid, target = rel.get("Id"), rel.get("Target")
        if not rid or not target or rel.get("TargetMode") == "External":
            continue
        path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(
            posixpath.join(d, target))
        out[rid] = (rel.get("Type", "").rsplit("/", 1)[-1], path)
    return out


def rid(el: etree._Element, attr: str = "id") -> str | None:
    """An r:id-like attribute in either the transitional or the strict namespace."""
    for ns in _R_IDS:
        v = el.get(ns.replace("}id", "}" + attr))
        if v:
            return v
    return None


def read_properties(zf: zipfile.ZipFile, ctx: Context, doc: Document) -> None:
    """docProps/core.xml and app.xml -> title, author, dates, language, pages."""
    core = read_xml_lenient(zf, "docProps/core.xml", ctx)
    m = doc.metadata
    if core is not None:
        vals: dict[str, str] = {}
        for el in core:
            name = local(el.tag)
            text = (el.text or "").strip()
            if name and text and name not in vals:
                vals[name] = text
        doc.title = doc.title or vals.get("title")
        m.author = m.author or vals.get("creator")
        m.created = m.created or vals.get("created")
        m.modified = m.modified or vals.get("modified")
        m.language = m.language or vals.get("language")
        m.subject = m.subject or vals.get("subject")
        m.keywords = m.keywords or vals.get("keywords")
        for k in ("lastModifiedBy", "description", "category", "revision"):
            if k in vals:
                m.extra[k] = vals[k]
    app = read_xml_lenient(zf, "docProps/app.xml", ctx)
    if app is not None:
        for el in app:
            name, text = local(el.tag), (el.text or "").strip()
            if name in ("Pages", "Slides") and text.isdigit():
                m.page_count = int(text)
            elif name == "Application" and text:
                m.extra["application"] = text


def embedded_children(zf: zipfile.ZipFile, folder: str, ctx: Context, doc: Document) -> None:
    """Every file under ``folder`` (word/embeddings/, ppt/embeddings/) becomes a child."""
    for info in zf.infolist():
        if not info.filename.startswith(folder) or info.is_dir():
            continue
        try:
            data = read_member(zf, info.filename, ctx)
        except ExtractionError as exc:
            if exc.kind is ErrorKind.TOO_LARGE:
                raise
            doc.warnings.append(exc.message)
            continue
        name = posixpath.basename(info.filename)
        data, name = unwrap_package(data, name)
        doc.children.append(ctx.child(data, name))


_RASTER = (".png", ".jpg", ".jpeg", ".jpe", ".gif", ".bmp", ".tif", ".tiff", ".webp")


def pictures_to_children(keys: list[str], read: Callable[[str], bytes], ctx: Context,
                         doc: Document) -> None:
    """Pictures (``read(key)`` gives one's bytes) become children named after their key,
    read like image files (OCR); with OCR off, a document that has only pictures is
    ``needs_ocr``, as a PDF of scans is, and none is read."""
    if not keys:
        return
    if ctx.options.ocr == "never":
        raise ExtractionError(ErrorKind.NEEDS_OCR, f"the document holds no text, only "
                              f"{len(keys)} picture(s): their text needs OCR")
    for key in keys[:ctx.options.max_members]:
        try:
            data = read(key)
        except ExtractionError as exc:
            if exc.kind is ErrorKind.TOO_LARGE:
                raise
            doc.warnings.append(exc.message)
            continue
        doc.children.append(ctx.child(data, posixpath.basename(key)))


def image_children(zf: zipfile.ZipFile, folders: tuple[str, ...], ctx: Context,
                   doc: Document, out: Builder) -> None:
    """The raster pictures under ``folders`` (word/media/, ppt/media/, Pictures/), when
    ``wants_pictures``."""
    if wants_pictures(ctx, out):
        names = [i.filename for i in zf.infolist() if i.filename.startswith(folders)
                 and i.filename.lower().endswith(_RASTER) and not i.is_dir()]
        pictures_to_children(names, lambda name: read_member(zf, name, ctx), ctx, doc)


def chart_content(root: etree._Element) -> tuple[list[str], list[list[str]]]:
    """A chart part's titles and its data as a table (categories down, series across),
    from the values the chart caches in itself (c:strCache, c:numCache): the embedded
    workbook they came from is often missing, and the chart draws from the cache too."""
    titles = []
    for t in root.iter("{*}title"):
        text = "".join(x.text or "" for x in t.iter("{*}t")).strip() or " ".join(
            (v.text or "").strip() for v in t.iter("{*}v")).strip()
        if text:
            titles.append(text)
    series: list[tuple[str, dict[int, str], dict[int, str]]] = []
    for ser in root.iter("{*}ser"):
        parts = {local(c.tag): c for c in ser}
        names = _cached(parts.get("tx"))
        cats = _cached(parts.get("cat", parts.get("xVal")))
        vals = _cached(parts.get("val", parts.get("yVal")))
        series.append((names.get(0, ""), cats, vals))
    if not any(vals for _, _, vals in series):
        return titles, []
    cats = next((c for _, c, _ in series if c), {})
    n = max(max((max(d, default=-1) for _, c, v in series for d in (c, v)), default=-1) + 1,
            len(cats))
    rows = [["", *(name or f"Series {i}" for i, (name, _, _) in enumerate(series, 1))]]
    for i in range(min(n, _MAX_CHART_POINTS)):
        rows.append([cats.get(i, str(i + 1)), *(v.get(i, "") for _, _, v in series)])
    return titles, rows


def _short_number(v: str) -> str:
    """A cached number as Excel shows it: 8.200000000000001 (a binary float written out
    in full) is 8.2; anything else as it is."""
    if len(v) > 15 and _FLOAT.fullmatch(v):
        return format(float(v), ".15g")
    return v


def _cached(el: etree._Element | None) -> dict[int, str]:
    """idx -> value of a series' cached points (the first level of a multi-level one)."""
    if el is None:
        return {}
    lvl = next(el.iter("{*}lvl"), None)
    out: dict[int, str] = {}
    for pt in (lvl if lvl is not None else el).iter("{*}pt"):
        v = pt.find("{*}v")
        idx = _int(pt.get("idx"))
        if v is not None and idx is not None and idx >= 0:
            out[idx] = _short_number((v.text or "").strip())
    if not out:  # a literal name (c:tx/c:v)
        v = next(el.iter("{*}v"), None)
        if v is not None and (v.text or "").strip():
            out[0] = (v.text or "").strip()
    return out


# -- WordprocessingML ------------------------------------------------------------------


@dataclass
class _Style:
    name: str = ""
    based_on: str | None = None
    outline: int | None = None  # 0-based outline level
    num: tuple[str | None, int | None] | None = None  # (numId, ilvl) from the style


@dataclass
class _Para:
    """A paragraph's text plus any text boxes found inside it (emitted after it)."""

    parts: list[str] = field(default_factory=list)
    boxes: list[etree._Element] = field(default_factory=list)
    alts: list[str] = field(default_factory=list)  # pictures' and shapes' alt text
    charts: list[str] = field(default_factory=list)  # relationship ids of chart parts


class _Word:
    """Walks one WordprocessingML part and describes it to the builder."""

    def __init__(self, ns: str, styles: dict[str, _Style], numbering: dict[str, list[_Level]],
                 out: Builder) -> None:
        self.w = "{" + ns + "}"
        self.styles = styles
        self.numbering = numbering
        self.out = out
        self.fields: list[bool] = []  # stack of complex fields: True while in instruction
        self.counters: dict[str, list[int | None]] = {}
        # The chart part a relationship id of the part being walked names (the body only:
        # a header's ids are its own)
        self.read_chart: Callable[[str], etree._Element | None] | None = None
        # (text, markdown) of an altChunk part (HTML, RTF, text, a document) by its id
        self.read_chunk: Callable[[str], tuple[str, str] | None] | None = None
        # What inline() does with each run-level element, by its full tag: one dict lookup
        # per element instead of a chain of comparisons with tags built on the spot.
        w = self.w
        self.inline_chars = {w + "tab": "\t", w + "ptab": "\t", w + "br": "\n",
                             w + "cr": "\n", w + "noBreakHyphen": "-"}
        self.inline_kinds: dict[str, str] = {
            w + "t": "text", w + "r": "run", w + "fldChar": "field", w + "txbxContent": "box",
            w + "p": "para", **dict.fromkeys(self.inline_chars, "char"),
            **{w + name: "skip" for name in (
                "del", "moveFrom", "instrText", "delText", "rPr", "pPr", "delInstrText",
                "footnoteReference", "endnoteReference", "commentReference")},
            **dict.fromkeys((_WP + "docPr", _WP_STRICT + "docPr"), "alt"),
            **dict.fromkeys((_C + "chart", _C_STRICT + "chart"), "chart"),
            **dict.fromkeys((_M + "oMath", _M + "oMathPara", _M_STRICT + "oMath",
                             _M_STRICT + "oMathPara"), "math"),
        }

    # block level ------------------------------------------------------------------
    def blocks(self, parent: etree._Element) -> None:
        w = self.w
        for el in parent:
            tag = el.tag
            if tag == w + "p":
                self.paragraph(el)
            elif tag == w + "tbl":
                self.out.table(self.table(el), header=True)
            elif tag == w + "sdt":
                content = el.find(w + "sdtContent")
                if content is not None:
                    self.blocks(content)
            elif tag in (w + "customXml", w + "ins", w + "moveTo", w + "sdtContent",
                         w + "smartTag"):
                self.blocks(el)
            elif local(tag) == "AlternateContent":
                choice = _first_choice(el)
                if choice is not None:
                    self.blocks(choice)
            elif tag == w + "altChunk":  # a part in another format, shown in its place
                key = rid(el)
                got = self.read_chunk(key) if key and self.read_chunk is not None else None
                if got is not None:
                    self.out.embed(*got)

    def paragraph(self, p: etree._Element) -> None:
        para = _Para()
        self.inline(p, para)
        text = "".join(para.parts)
        if text.strip():
            level, num = self.para_kind(p)
            if level is not None:
                self.out.heading(text, level)
            elif num is not None:
                self.list_item(text, *num)
            else:
                self.out.paragraph(text)
        for box in para.boxes:
            self.blocks(box)
        for key in para.charts:
            self.chart(key)
        for alt in para.alts:
            self.out.image_alt(alt)

    def chart(self, key: str) -> None:
        """A chart's titles and cached data where it is anchored."""
        root = self.read_chart(key) if self.read_chart is not None else None
        if root is None:
            return
        titles, table = chart_content(root)
        for t in titles:
            self.out.paragraph(t)
        if table:
            self.out.table(table, header=True)

    def para_kind(self, p: etree._Element) -> tuple[int | None, tuple[str, int] | None]:
        """(heading level, (numId, ilvl)) from direct formatting and the style chain."""
        w = self.w
        ppr = p.find(w + "pPr")
        outline: int | None = None
        num_id: str | None = None
        ilvl: int | None = None
        style_id = None
        if ppr is not None:
            ps = ppr.find(w + "pStyle")
            style_id = ps.get(w + "val") if ps is not None else None
            ol = ppr.find(w + "outlineLvl")
            if ol is not None:
                outline = _int(ol.get(w + "val"))
            np_ = ppr.find(w + "numPr")
            if np_ is not None:
                ne, le = np_.find(w + "numId"), np_.find(w + "ilvl")
                num_id = ne.get(w + "val") if ne is not None else None
                ilvl = _int(le.get(w + "val")) if le is not None else None
        seen = 0
        while style_id and seen < 20:
            st = self.styles.get(style_id)
            if st is None:
                break
            m = _HEADING_NAME.match(st.name)
            if outline is None and m:
                outline = int(m.group(1)) - 1
            elif outline is None and st.name.lower() == "title":
                outline = 0
            if outline is None and st.outline is not None:
                outline = st.outline
            if st.num is not None:
                num_id = num_id if num_id is not None else st.num[0]
                ilvl = ilvl if ilvl is not None else st.num[1]
            style_id, seen = st.based_on, seen + 1
        level = outline + 1 if outline is not None and 0 <= outline < 9 else None
        if level is not None:
            return level, None
        if num_id and num_id != "0" and num_id in self.numbering:
            return None, (num_id, ilvl or 0)
        return None, None

    def list_item(self, text: str, num_id: str, ilvl: int) -> None:
        """A numbered paragraph, with its number as Word shows it: the level's text with
        each "%n" replaced by level n's running count in that level's format."""
        levels = self.numbering.get(num_id, [])
        ilvl = min(max(ilvl, 0), 8)
        level = levels[ilvl] if ilvl < len(levels) else _BULLET
        counts = self.counters.setdefault(num_id, [None] * 9)  # None: not started
        now = counts[ilvl]
        counts[ilvl] = level.start if now is None else now + 1
        for i in range(ilvl + 1, 9):
            counts[i] = None
        if not level.ordered:
            self.out.list_item(text, ilvl)
            return

        def number(m: re.Match[str]) -> str:
            i = int(m.group(1)) - 1
            lv = levels[i] if i < len(levels) else level
            n = counts[i]
            return number_text(lv.start if n is None else n, lv.fmt)

        label = _LEVEL_REF.sub(number, level.text)
        self.out.list_item(text, ilvl, True, counts[ilvl] or 0, label)

    def table(self, tbl: etree._Element) -> list[list[str]]:
        w = self.w
        rows: list[list[str]] = []
        for tr in _children(tbl, w + "tr", (w + "sdt", w + "sdtContent", w + "customXml")):
            row: list[str] = []
            for tc in _children(tr, w + "tc", (w + "sdt", w + "sdtContent", w + "customXml")):
                tcpr = tc.find(w + "tcPr")
                span, cont = 1, False
                if tcpr is not None:
                    gs, vm = tcpr.find(w + "gridSpan"), tcpr.find(w + "vMerge")
                    span = max(1, min(_int(gs.get(w + "val")) or 1, 64)) if gs is not None else 1
                    cont = vm is not None and vm.get(w + "val") in (None, "continue")
                row.append("" if cont else self.cell_text(tc))
                row.extend([""] * (span - 1))
            rows.append(row)
        return rows

    def cell_text(self, tc: etree._Element) -> str:
        """A cell's paragraphs joined by newlines; a nested table becomes ' | ' lines."""
        sub = Builder()
        saved, self.out = self.out, sub
        try:
            w = self.w
            for el in tc:
                if el.tag == w + "tbl":
                    for r in self.table(el):
                        sub.paragraph(" | ".join(c for c in r if c.strip()))
                elif el.tag != w + "tcPr":
                    self.blocks([el])
        finally:
            self.out = saved
        return sub.text().replace("\n\n", "\n")

    # inline level -----------------------------------------------------------------
    def inline(self, el: etree._Element, para: _Para) -> None:
        kinds = self.inline_kinds
        for ch in el:
            tag = ch.tag
            if not isinstance(tag, str):
                continue
            kind = kinds.get(tag)
            if kind == "text":
                if not self.fields or not any(self.fields):
                    para.parts.append(ch.text or "")
            elif kind == "run":
                self.inline(ch, para)
            elif kind == "char":  # tab, break, non-breaking hyphen
                para.parts.append(self.inline_chars[tag])
            elif kind == "field":
                self.field_char(ch, para)
            elif kind == "skip":
                continue
            elif kind == "box":
                para.boxes.append(ch)
            elif kind == "math":  # an equation, written out linearly: a^2+b^2=c^2
                para.parts.append(omml_text(ch))
            elif kind == "chart":
                key = rid(ch)
                if key:
                    para.charts.append(key)
            elif kind == "alt":  # a drawing's description, else its title
                alt = (ch.get("descr") or "").strip() or (ch.get("title") or "").strip()
                if alt and ch.get("hidden") not in ("1", "true"):
                    para.alts.append(alt)
            elif kind == "para":  # a paragraph inside a run-level container (rare)
                para.parts.append("\n")
                self.inline(ch, para)
            elif local(tag) == "AlternateContent":
                choice = _first_choice(ch)
                if choice is not None:
                    self.inline(choice, para)
            elif local(tag) == "checkbox" and tag != self.w + "checkBox":
                continue  # w14:checkbox: the sdtContent already shows the glyph
            else:  # hyperlink, ins, smartTag, sdt, fldSimple, drawing/textbox wrappers ...
                self.inline(ch, para)

    def field_char(self, ch: etree._Element, para: _Para) -> None:
        kind = ch.get(self.w + "fldCharType")
        if kind == "begin":
            self.fields.append(True)
            box = ch.find(f"{self.w}ffData/{self.w}checkBox")
            if box is not None:
                para.parts.append("☒ " if _checked(box, self.w) else "☐ ")
        elif kind == "separate" and self.fields:
            self.fields[-1] = False
        elif kind == "end" and self.fields:
            self.fields.pop()


def _checked(box: etree._Element, w: str) -> bool:
    for name in ("checked", "default"):
        e = box.find(w + name)
        if e is not None:
            return e.get(w + "val", "1") in ("1", "true", "on")
    return False


def _first_choice(alt: etree._Element) -> etree._Element | None:
    """mc:AlternateContent: the rich Choice; the Fallback repeats the same text."""
    for ch in alt:
        if local(ch.tag) == "Choice":
            return ch
    for ch in alt:
        if local(ch.tag) == "Fallback":
            return ch
    return None


def _children(el: etree._Element, tag: str, wrappers: tuple[str, ...]) -> Iterator[etree._Element]:
    for ch in el:
        if ch.tag == tag:
            yield ch
        elif ch.tag in wrappers:
            yield from _children(ch, tag, wrappers)


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


# The paragraph styles of the last style parts seen, by a hash of their bytes. Documents
# made from one template carry the same styles part, often the biggest part by far (Word's
# default one is 350 KB, most of it latent and table styles): parsed once per worker, a
# document's extraction costs its own text, not its template's (30 ms -> 8 ms for a
# small letter). Keyed by content, so a document gets exactly what parsing it would give.
_STYLE_CACHE: OrderedDict[bytes, dict[str, _Style]] = OrderedDict()
_STYLE_CACHE_SIZE = 16


def _styles(zf: zipfile.ZipFile, ctx: Context, by_kind: dict[str, list[str]],
            w: str) -> dict[str, _Style]:
    """The paragraph styles of the first readable styles part (none: no styles)."""
    for path in by_kind.get("styles", []) or ["word/styles.xml"]:
        if path not in zf.NameToInfo:
            continue
        try:
            data = read_member(zf, path, ctx)
        except ExtractionError as exc:  # damage there must not cost the text
            if exc.kind is not ErrorKind.CORRUPT:
                raise
            continue
        h = hashlib.sha256(w.encode())  # the namespace read with it (SHA-256: the
        # fastest strong hash here, with the CPU's SHA instructions)
        h.update(data)
        key = h.digest()
        styles = _STYLE_CACHE.get(key)
        if styles is None:
            try:
                root = parse_xml(data, recover=True)
            except ExtractionError as exc:
                if exc.kind is not ErrorKind.CORRUPT:
                    raise
                continue
            styles = _load_styles(root, w)
            _STYLE_CACHE[key] = styles
            while len(_STYLE_CACHE) > _STYLE_CACHE_SIZE:
                _STYLE_CACHE.popitem(last=False)
        else:
            _STYLE_CACHE.move_to_end(key)
        return dict(styles)  # read only by the walker; the dict is the document's own
    return {}


def _load_styles(root: etree._Element | None, w: str) -> dict[str, _Style]:
    styles: dict[str, _Style] = {}
    if root is None:
        return styles
    for st in root.iter(w + "style"):
        sid = st.get(w + "styleId")
        if not sid or st.get(w + "type", "paragraph") != "paragraph":
            continue
        s = _Style()
        n, b = st.find(w + "name"), st.find(w + "basedOn")
        s.name = (n.get(w + "val") or "") if n is not None else ""
        s.based_on = b.get(w + "val") if b is not None else None
        ol = st.find(f"{w}pPr/{w}outlineLvl")
        if ol is not None:
            s.outline = _int(ol.get(w + "val"))
        np_ = st.find(f"{w}pPr/{w}numPr")
        if np_ is not None:
            ne, le = np_.find(w + "numId"), np_.find(w + "ilvl")
            s.num = (ne.get(w + "val") if ne is not None else None,
                     _int(le.get(w + "val")) if le is not None else None)
        styles[sid] = s
    return styles


@dataclass(frozen=True)
class _Level:
    """One numbering level: its number format, the text around the numbers ("%1.",
    "(%1)", "%1.%2."), and where it starts counting."""

    fmt: str = "decimal"
    text: str = "%1."
    start: int = 1

    @property
    def ordered(self) -> bool:
        return self.fmt not in ("bullet", "none", "")


_BULLET = _Level("bullet", "", 1)


def _load_numbering(root: etree._Element | None, w: str) -> dict[str, list[_Level]]:
    """numId -> its nine levels (bullet and none are unordered)."""
    if root is None:
        return {}
    abstract: dict[str, list[_Level]] = {}
    for an in root.iter(w + "abstractNum"):
        levels = [_BULLET] * 9
        for lvl in an.iter(w + "lvl"):
            i = _int(lvl.get(w + "ilvl"))
            fmt = lvl.find(w + "numFmt")
            if i is None or not 0 <= i < 9 or fmt is None:
                continue
            text, start = lvl.find(w + "lvlText"), lvl.find(w + "start")
            levels[i] = _Level(fmt.get(w + "val") or "",
                               f"%{i + 1}." if text is None else text.get(w + "val", ""),
                               1 if start is None else _int(start.get(w + "val")) or 0)
        abstract[an.get(w + "abstractNumId", "")] = levels
    out: dict[str, list[_Level]] = {}
    for num in root.iter(w + "num"):
        a = num.find(w + "abstractNumId")
        if a is not None and a.get(w + "val") in abstract:
            out[num.get(w + "numId", "")] = abstract[a.get(w + "val", "")]
    return out


def _main_part(zf: zipfile.ZipFile, ctx: Context) -> str:
    root_rels = rels(zf, "", ctx) if "_rels/.rels" in zf.NameToInfo else {}
    for kind, path in root_rels.values():
        if kind == "officeDocument" and path in zf.NameToInfo:
            return path
    return "word/document.xml"


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    with open_zip(src) as zf:
        main = _main_part(zf, ctx)
        if main not in zf.NameToInfo:
            raise ExtractionError(ErrorKind.CORRUPT, "not a complete DOCX: no document part")
        body_root = read_xml(zf, main, ctx)
        assert body_root is not None
        ns = body_root.tag.partition("}")[0].lstrip("{")
        w = "{" + ns + "}"
        part_rels = rels(zf, main, ctx)
        by_kind: dict[str, list[str]] = {}
        for kind, path in part_rels.values():
            by_kind.setdefault(kind, []).append(path)
        styles = _styles(zf, ctx, by_kind, w)
        numbering = _load_numbering(_first_part(zf, ctx, by_kind, "numbering"), w)
        walker = _Word(ns, styles, numbering, out)
        read_properties(zf, ctx, doc)

        headers = _story_texts(zf, ctx, by_kind.get("header", []), walker)
        footers = _story_texts(zf, ctx, by_kind.get("footer", []), walker)
        for text in headers:
            out.paragraph(text)
        body = body_root.find(w + "body")

        def read_chart(key: str) -> etree._Element | None:
            target = part_rels.get(key)
            if target is None or target[0] != "chart" or target[1] not in zf.NameToInfo:
                return None
            return read_xml_lenient(zf, target[1], ctx)

        def read_chunk(key: str) -> tuple[str, str] | None:
            """An altChunk's part extracted like a file of its own (detected by content),
            its text put where the chunk stands."""
            target = part_rels.get(key)
            if target is None or target[0] != "aFChunk" or target[1] not in zf.NameToInfo:
                return None
            try:
                data = read_member(zf, target[1], ctx)
            except ExtractionError as exc:
                doc.warnings.append(f"imported part {target[1]}: {exc.message}")
                return None
            got = ctx.child(data, posixpath.basename(target[1]))
            if got.error is not None:
                doc.warnings.append(f"imported part {target[1]}: {got.error.message}")
            return (got.text, got.markdown) if got.text.strip() else None

        walker.read_chart, walker.read_chunk = read_chart, read_chunk
        walker.blocks(body if body is not None else body_root)
        walker.read_chart = walker.read_chunk = None
        for text in footers:
            out.paragraph(text)
        _notes(zf, ctx, by_kind, walker, "footnotes", "footnote")
        _notes(zf, ctx, by_kind, walker, "endnotes", "endnote")
        if ctx.options.comments:
            _comments(zf, ctx, by_kind, walker)
        embedded_children(zf, posixpath.dirname(main) + "/embeddings/", ctx, doc)
        image_children(zf, (posixpath.dirname(main) + "/media/",), ctx, doc, out)


def _first_part(zf: zipfile.ZipFile, ctx: Context, by_kind: dict[str, list[str]],
                kind: str) -> etree._Element | None:
    for path in by_kind.get(kind, []) or [f"word/{kind}.xml"]:
        root = read_xml_lenient(zf, path, ctx)
        if root is not None:
            return root
    return None


def _story_texts(zf: zipfile.ZipFile, ctx: Context, paths: list[str], walker: _Word,
                 ) -> list[str]:
    """Each distinct header/footer text once (the same footer repeats per section)."""
    seen: set[str] = set()
    texts: list[str] = []
    for path in sorted(set(paths), key=natural_key):
        root = read_xml_lenient(zf, path, ctx)
        if root is None:
            continue
        text = render_text(walker, root)
        if text and text not in seen:
            seen.add(text)
            texts.append(text)
    return texts


def _notes(zf: zipfile.ZipFile, ctx: Context, by_kind: dict[str, list[str]], walker: _Word,
           kind: str, tag: str) -> None:
    root = _first_part(zf, ctx, by_kind, kind) if by_kind.get(kind) else None
    if root is None:
        return
    w = walker.w
    for note in root.iter(w + tag):
        if note.get(w + "type") in ("separator", "continuationSeparator",
                                    "continuationNotice"):
            continue
        text = render_text(walker, note)
        if text:
            walker.out.paragraph(f"[{note.get(w + 'id', '')}] {text}")


def _comments(zf: zipfile.ZipFile, ctx: Context, by_kind: dict[str, list[str]],
              walker: _Word) -> None:
    root = _first_part(zf, ctx, by_kind, "comments") if by_kind.get("comments") else None
    if root is None:
        return
    w = walker.w
    for c in root.iter(w + "comment"):
        text = render_text(walker, c)
        if text:
            author = c.get(w + "author")
            walker.out.paragraph(f"Comment ({author}): {text}" if author else
                                 f"Comment: {text}")


def natural_key(s: str) -> tuple[str, int]:
    """Sorts part names by their trailing number (``chart10.xml`` after ``chart9.xml``)."""
    m = re.search(r"(\d+)\D*$", s)
    return (re.sub(r"\d+", "", s), int(m.group(1)) if m else 0)
