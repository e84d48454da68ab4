"""PPTX/PPTM/PPSX/POTX: slides in presentation order, read with lxml from the ZIP.

Each slide is one page: its title as a heading, then the text frames in reading order
(top-to-bottom, left-to-right, using layout positions for placeholders that inherit them),
tables as tables, bullets as list items, SmartArt and chart titles, and the speaker notes.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field

from lxml import etree

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader
from ..kernels.xml import local, open_zip, read_xml_lenient
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder, number_text
from . import Context
from .docx import (
    chart_content,
    embedded_children,
    image_children,
    natural_key,
    read_properties,
    rels,
    rid,
)

# Output version (archives re-extract what an older one made): 2 = the pictures of a
# document without text are OCRed (children), or needs_ocr with OCR off.
FORMAT = Format(
    name="pptx", version=3,  # 3: list numbers, alt text, chart caches, master/footer furniture
    readers=(Reader(d.PPTX), Reader(d.PPTM), Reader(d.PPSX), Reader(d.POTX)),
    hints={"pptx": d.PPTX, "pptm": d.PPTM, "ppsx": d.PPSX, "potx": d.POTX},
)

_TITLES = {"title", "ctrTitle"}
_BODY = {"body", "obj", ""}  # placeholders whose paragraphs are bullets
_SKIP_PH = {"sldImg"}  # the slide picture on a notes page
_FOOTER_PH = {"ftr", "dt", "hdr", "sldNum"}
_SLIDE_NUMBER = "\u2039#\u203a"  # "‹#›": a master's slide-number field, each slide's own
_AUTONUM_STYLES = {"arabic": "decimal", "alphaLc": "lowerLetter", "alphaUc": "upperLetter",
                   "romanLc": "lowerRoman", "romanUc": "upperRoman"}


@dataclass
class _Shape:
    y: int
    x: int
    order: int
    kind: str  # "title" | "text" | "table" | "items" | "alt" | "furniture" (on every slide)
    payload: object


class _Slide:
    """Collects the shapes of one slide (or notes page) with their positions."""

    def __init__(self, zf: zipfile.ZipFile, ctx: Context, part: str,
                 layout_pos: dict[str, tuple[int, int]], *, furniture: bool = False) -> None:
        self.zf, self.ctx, self.part = zf, ctx, part
        self.layout_pos = layout_pos
        # a master or layout: only what it shows on every slide (its placeholders are
        # templates, "Click to edit Master title style")
        self.furniture = furniture
        self.footers: list[int] = []  # shapes that are footer, date or number placeholders
        self.shapes: list[_Shape] = []
        self._rels: dict[str, tuple[str, str]] | None = None

    @property
    def part_rels(self) -> dict[str, tuple[str, str]]:
        if self._rels is None:
            self._rels = rels(self.zf, self.part, self.ctx)
        return self._rels

    def collect(self, tree: etree._Element, off: tuple[int, int] = (0, 0)) -> None:
        for el in tree:
            name = local(el.tag)
            if name == "sp":
                self.text_shape(el)
            elif name == "grpSp":
                self.collect(el)
            elif name == "graphicFrame":
                self.graphic(el)
            elif name == "AlternateContent":
                for ch in el:
                    if local(ch.tag) in ("Choice", "Fallback"):
                        self.collect(ch)
                        break
            if name in ("sp", "pic", "graphicFrame", "cxnSp"):
                self.alt_text(el)

    def _pos(self, el: etree._Element, ph_keys: list[str]) -> tuple[int, int]:
        for x in el.iter("{*}off", "{*}txBody", "{*}graphic"):
            if local(x.tag) == "off":
                return _int(x.get("y")), _int(x.get("x"))
            break
        for key in ph_keys:
            if key in self.layout_pos:
                return self.layout_pos[key]
        return (1 << 40), (1 << 40)  # unknown: after the positioned shapes

    def alt_text(self, el: etree._Element) -> None:
        """A picture's or shape's alt text (cNvPr descr, else title), at its place."""
        nv = next((c for c in el if local(c.tag).startswith("nv")), None)
        pr = next((c for c in nv if local(c.tag) == "cNvPr"), None) if nv is not None else None
        if pr is None or pr.get("hidden") in ("1", "true"):
            return
        alt = (pr.get("descr") or "").strip() or (pr.get("title") or "").strip()
        if alt:
            y, x = self._pos(el, _ph_key(_placeholder(el)))
            self.shapes.append(_Shape(y, x, len(self.shapes), "alt", alt))

    def text_shape(self, sp: etree._Element) -> None:
        ph = _placeholder(sp)
        ph_type = ph[0] if ph else None
        if ph_type in _SKIP_PH or (self.furniture and ph is not None):
            return
        body = next((c for c in sp if local(c.tag) == "txBody"), None)
        if body is None:
            return
        paras = _paragraphs(body, bullets_by_default=ph_type in _BODY)
        if not any(t.strip() for t, *_ in paras):
            return
        y, x = self._pos(sp, _ph_key(ph))
        kind = "title" if ph_type in _TITLES else "text"
        if ph_type in _FOOTER_PH:
            self.footers.append(len(self.shapes))
        self.shapes.append(_Shape(y, x, len(self.shapes), kind, paras))

    def graphic(self, frame: etree._Element) -> None:
        y, x = self._pos(frame, _ph_key(_placeholder(frame)))
        for el in frame.iter("{*}tbl", "{*}chart", "{*}relIds"):
            name = local(el.tag)
            if name == "tbl":
                self.shapes.append(_Shape(y, x, len(self.shapes), "table", _table(el)))
                return
            if name == "chart":
                self.linked_text(el, y, x, chart=True)
                return
            if name == "relIds":
                self.linked_text(el, y, x, chart=False)
                return

    def linked_text(self, el: etree._Element, y: int, x: int, *, chart: bool) -> None:
        """Chart titles/labels or SmartArt node text from the linked part."""
        key = rid(el) if chart else rid(el, "dm")
        target = self.part_rels.get(key or "")
        if target is None:
            return
        root = read_xml_lenient(self.zf, target[1], self.ctx)
        if root is None:
            return
        if chart:
            texts, table = chart_content(root)
            if table:
                self.shapes.append(_Shape(y, x, len(self.shapes), "table", table))
        else:
            texts = ["".join(t.text or "" for t in pt.iter("{*}t"))
                     for pt in root.iter("{*}pt")]
        items = [(t, 0, 0, True, None) for t in texts if t.strip()]
        if items:
            self.shapes.append(_Shape(y, x, len(self.shapes), "text", items))

    def render(self, out: Builder, heading_level: int = 2) -> None:
        titles = [s for s in self.shapes if s.kind == "title"]
        rest = sorted((s for s in self.shapes if s.kind != "title"),
                      key=lambda s: (s.y // 45720, s.x, s.order))  # rows of ~0.05 inch
        for s in titles:
            text = " ".join(t for t, *_ in s.payload if t.strip())  # type: ignore[attr-defined]
            out.heading(text, heading_level)
        for s in rest:
            if s.kind == "table":
                out.table(s.payload, header=True)  # type: ignore[arg-type]
                continue
            if s.kind == "alt":
                out.image_alt(s.payload)  # type: ignore[arg-type]
                continue
            if s.kind == "furniture":
                for text, *_ in s.payload:  # type: ignore[attr-defined]
                    out.furniture(text)
                continue
            for text, level, number, bullet, label in s.payload:  # type: ignore[attr-defined]
                if bullet:
                    out.list_item(text, level, number > 0, number, label)
                else:
                    out.paragraph(text)


def _placeholder(el: etree._Element) -> tuple[str, str | None] | None:
    """(type, idx) of a placeholder shape; a missing type means 'obj' (body content)."""
    for x in el.iter("{*}ph", "{*}txBody", "{*}spPr"):
        name = local(x.tag)
        if name == "ph":
            return x.get("type", ""), x.get("idx")
        if name in ("txBody", "spPr"):
            break
    return None


def _ph_key(ph: tuple[str, str | None] | None) -> list[str]:
    """Lookup keys for a placeholder's inherited position: its idx, then its type."""
    if ph is None:
        return []
    keys = [f"idx:{ph[1]}"] if ph[1] is not None else []
    kind = "title" if ph[0] in _TITLES else "body" if ph[0] in ("", "obj") else ph[0]
    return [*keys, f"type:{ph[0]}", f"type:{kind}"]


def _layout_positions(root: etree._Element | None,
                      inherited: dict[str, tuple[int, int]] | None = None,
                      ) -> dict[str, tuple[int, int]]:
    """Placeholder positions on a layout (or master), keyed by idx and by type; a layout
    placeholder without its own offset takes the master's for its type."""
    out: dict[str, tuple[int, int]] = {}
    if root is None:
        return out
    inherited = inherited or {}
    for sp in root.iter("{*}sp", "{*}graphicFrame"):
        ph = _placeholder(sp)
        if ph is None:
            continue
        kind = "title" if ph[0] in _TITLES else "body" if ph[0] in ("", "obj") else ph[0]
        off = next(sp.iter("{*}off"), None)
        pos = (_int(off.get("y")), _int(off.get("x"))) if off is not None else \
            inherited.get(f"type:{kind}")
        if pos is None:
            continue
        if ph[1] is not None:
            out.setdefault(f"idx:{ph[1]}", pos)
        out.setdefault(f"type:{ph[0]}", pos)
        out.setdefault(f"type:{kind}", pos)
    return out


def _paragraphs(body: etree._Element, *, bullets_by_default: bool,
                ) -> list[tuple[str, int, int, bool, str | None]]:
    """(text, level, number (0: a bullet), is_bullet, number as shown) for each a:p of a
    text body. PowerPoint numbers auto-numbered paragraphs itself: a level counts on
    until a paragraph at that level or above is not numbered, or its scheme changes."""
    out = []
    counts: dict[int, int] = {}
    schemes: dict[int, tuple[str, int]] = {}
    for p in body:
        if local(p.tag) != "p":
            continue
        level, auto, bullet = 0, None, bullets_by_default
        ppr = next((c for c in p if local(c.tag) == "pPr"), None)
        if ppr is not None:
            level = min(_int(ppr.get("lvl")), 8)
            for c in ppr:
                name = local(c.tag)
                if name == "buNone":
                    bullet = False
                elif name in ("buChar", "buBlip"):
                    bullet = True
                elif name == "buAutoNum":
                    bullet, auto = True, c
        text = _run_text(p)
        if not text.strip():
            continue
        for deeper in [k for k in counts if k > level or (k == level and auto is None)]:
            del counts[deeper]
        number, label = 0, None
        if auto is not None:
            scheme, start = auto.get("type", ""), max(_int(auto.get("startAt")), 1)
            if schemes.get(level) != (scheme, start):  # another scheme: a new sequence
                schemes[level] = (scheme, start)
                counts.pop(level, None)
            number = counts[level] = counts.get(level, start - 1) + 1
            label = _auto_number(number, scheme)
        out.append((text, level, number, bullet, label))
    return out


def _auto_number(n: int, scheme: str) -> str:
    """A buAutoNum number as shown: "arabicPeriod" 3 -> "3.", "alphaLcParenR" -> "c)",
    "romanUcParenBoth" -> "(III)" (ST_TextAutonumberScheme: a style, then the marks)."""
    prefix = next((p for p in _AUTONUM_STYLES if scheme.startswith(p)), "")
    style = _AUTONUM_STYLES.get(prefix, "decimal")
    marks = scheme[len(prefix):] if prefix else "Period"
    num = number_text(n, style)
    if marks.startswith("ParenBoth"):
        return f"({num})"
    if marks.startswith("ParenR"):
        return f"{num})"
    if marks.startswith("Plain"):
        return num
    if marks.startswith("Minus"):
        return f"- {num} -"
    return f"{num}."


def _run_text(el: etree._Element) -> str:
    parts: list[str] = []
    for x in el.iter("{*}t", "{*}br", "{*}p"):
        name = local(x.tag)
        if name == "t":
            parts.append(x.text or "")
        elif name == "br" or (name == "p" and parts and x is not el):
            parts.append("\n")
    return "".join(parts)


def _table(tbl: etree._Element) -> list[list[str]]:
    rows: list[list[str]] = []
    for tr in tbl:
        if local(tr.tag) != "tr":
            continue
        row = []
        for tc in tr:
            if local(tc.tag) != "tc":
                continue
            merged = tc.get("hMerge") in ("1", "true") or tc.get("vMerge") in ("1", "true")
            body = next((c for c in tc if local(c.tag) == "txBody"), None)
            text = "" if merged or body is None else "\n".join(
                t for t, *_ in _paragraphs(body, bullets_by_default=False))
            row.append(text)
        rows.append(row)
    return rows


def _int(v: str | None) -> int:
    try:
        return int(v) if v else 0
    except ValueError:
        return 0


def _slide_parts(zf: zipfile.ZipFile, ctx: Context, main: str) -> list[str]:
    """Slides in presentation order; falls back to the file names when the list is bad."""
    pres = read_xml_lenient(zf, main, ctx)
    pres_rels = rels(zf, main, ctx)
    parts: list[str] = []
    if pres is not None:
        for sld in pres.iter():
            if local(sld.tag) == "sldId":
                target = pres_rels.get(rid(sld) or "")
                if target and target[1] in zf.NameToInfo and target[1] not in parts:
                    parts.append(target[1])
    if not parts:
        parts = sorted((n for n in zf.NameToInfo
                        if n.startswith("ppt/slides/slide") and n.endswith(".xml")),
                       key=natural_key)
    return parts


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    with open_zip(src) as zf:
        main = "ppt/presentation.xml"
        if main not in zf.NameToInfo:
            raise ExtractionError(ErrorKind.CORRUPT, "not a complete PPTX: no presentation part")
        read_properties(zf, ctx, doc)
        layouts: dict[str, dict[str, tuple[int, int]]] = {}
        hidden: list[int] = []
        furniture = _Furniture()
        slides = _slide_parts(zf, ctx, main)
        for n, part in enumerate(slides, 1):
            out.start_page(n)
            _one_slide(zf, ctx, part, n, layouts, hidden, furniture, out)
        doc.metadata.page_count = len(slides)
        if hidden:
            doc.metadata.extra["hidden_slides"] = hidden
        embedded_children(zf, "ppt/embeddings/", ctx, doc)
        image_children(zf, ("ppt/media/",), ctx, doc, out)


def _one_slide(zf: zipfile.ZipFile, ctx: Context, part: str, n: int,
               layouts: dict[str, dict[str, tuple[int, int]]], hidden: list[int],
               furniture: _Furniture, out: Builder) -> None:
    root = read_xml_lenient(zf, part, ctx)
    if root is None:
        out.paragraph(f"[slide {n} could not be read]")
        return
    if root.get("show") in ("0", "false"):
        hidden.append(n)
    part_rels = rels(zf, part, ctx)
    layout_part = next((p for k, p in part_rels.values() if k == "slideLayout"), None)
    if layout_part is not None and layout_part not in layouts:
        master = next((p for k, p in rels(zf, layout_part, ctx).values()
                       if k == "slideMaster"), None)
        if master is not None and master not in layouts:
            layouts[master] = _layout_positions(read_xml_lenient(zf, master, ctx))
        layouts[layout_part] = _layout_positions(read_xml_lenient(zf, layout_part, ctx),
                                                 layouts.get(master or ""))
    slide = _Slide(zf, ctx, part, layouts.get(layout_part or "", {}))
    slide._rels = part_rels
    tree = next(root.iter("{*}spTree"), None)
    if tree is not None:
        slide.collect(tree)
    for i in slide.footers:  # the same footer on every slide: given once
        key = "\n".join(t for t, *_ in slide.shapes[i].payload)  # type: ignore[attr-defined]
        slide.shapes[i].kind = "repeat" if key in furniture.seen else "furniture"
        furniture.seen.add(key)
    slide.shapes = [s for s in slide.shapes if s.kind != "repeat"]
    if root.get("showMasterSp") not in ("0", "false") and layout_part is not None:
        _furniture(zf, ctx, layout_part, n, slide, furniture)
    slide.render(out)
    notes_part = next((p for k, p in part_rels.values() if k == "notesSlide"), None)
    if notes_part is not None:
        _notes(zf, ctx, notes_part, out)


@dataclass
class _Furniture:
    """The text that masters and layouts put on every slide (a footer or a logo typed
    into a text box, "Page ‹#›"), read once per part; each distinct text is given once, on
    the first slide that shows it, except that a slide number is each slide's own."""

    shapes: dict[str, tuple[list[_Shape], str | None, bool]] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)

    def read(self, zf: zipfile.ZipFile, ctx: Context, part: str
             ) -> tuple[list[_Shape], str | None, bool]:
        """(its shapes, its master if a layout, whether it shows its master's shapes)."""
        if part not in self.shapes:
            root = read_xml_lenient(zf, part, ctx)
            got = _Slide(zf, ctx, part, {}, furniture=True)
            tree = next(root.iter("{*}spTree"), None) if root is not None else None
            if tree is not None:
                got.collect(tree)
            master = next((p for k, p in rels(zf, part, ctx).values() if k == "slideMaster"),
                          None)
            shows = root is None or root.get("showMasterSp") not in ("0", "false")
            self.shapes[part] = (got.shapes, master, shows)
        return self.shapes[part]


def _furniture(zf: zipfile.ZipFile, ctx: Context, layout: str, n: int, slide: _Slide,
               furniture: _Furniture) -> None:
    """Add the layout's and its master's non-placeholder text to ``slide``."""
    shapes, master, shows = furniture.read(zf, ctx, layout)
    if master is not None and shows:
        shapes = shapes + furniture.read(zf, ctx, master)[0]
    for s in shapes:
        if s.kind == "alt":
            key = payload = s.payload
        elif s.kind == "text":
            payload = [(t.replace(_SLIDE_NUMBER, str(n)), *rest)
                       for t, *rest in s.payload]  # type: ignore[attr-defined]
            key = "\n".join(t for t, *_ in payload)
        else:
            continue
        if key in furniture.seen:
            continue
        furniture.seen.add(key)  # type: ignore[arg-type]
        slide.shapes.append(_Shape(s.y, s.x, len(slide.shapes),
                                   "furniture" if s.kind == "text" else s.kind, payload))


def _notes(zf: zipfile.ZipFile, ctx: Context, part: str, out: Builder) -> None:
    root = read_xml_lenient(zf, part, ctx)
    if root is None:
        return
    texts: list[str] = []
    for sp in root.iter("{*}sp"):
        ph = _placeholder(sp)
        if ph is None or ph[0] != "body":
            continue
        body = next((c for c in sp if local(c.tag) == "txBody"), None)
        if body is not None:
            texts += [t for t, *_ in _paragraphs(body, bullets_by_default=False)]
    if texts:
        out.paragraph("Notes:")
        for t in texts:
            out.paragraph(t)
