"""OpenDocument text, presentation, drawing, master, web and template files.

content.xml is walked once in document order: headings with their outline level, lists
with nesting and ordered/bullet from the list style, tables, frames and text boxes,
one page per presentation/drawing page with its notes, footnotes after the body, comments
only on request. Deleted tracked changes live in text:tracked-changes and are skipped.
"""

from __future__ import annotations

import posixpath
import re
import zipfile

from lxml import etree

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader
from ..kernels.equations import mathml_text
from ..kernels.xml import local, open_zip, read_xml, read_xml_lenient
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder, number_text, render_text
from . import Context
from .docx import image_children
from .odfcrypt import open_plain

# Output version (archives re-extract what an older one made): 2 = the pictures of a
# document without text are OCRed (children), or needs_ocr with OCR off.
FORMAT = Format(
    name="odf", version=4,  # 3: list numbers, alt text, master-page furniture, formulas in
    # the text; 4: a formula anchored as a character stays in its sentence
    # Every OpenDocument type (text, presentation, drawing, master, web, and templates);
    # spreadsheets are read by ``sheets``.
    readers=tuple(Reader(d.ODF_PREFIX + kind) for kind in (
        "text", "presentation", "graphics", "text-master", "text-web", "chart", "formula",
        "text-template", "presentation-template", "graphics-template", "text-master-template")),
    hints={"odt": d.ODT, "odp": d.ODP},
)

_NS = {
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
    "xlink": "http://www.w3.org/1999/xlink",
    "svg": "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0",
}
T, TB, D, OF, PR, ST, XL, SVG = ("{%s}" % _NS[k] for k in (  # noqa: UP031 - Clark prefixes
    "text", "table", "draw", "office", "presentation", "style", "xlink", "svg"))

# Containers whose children are blocks (paragraphs, lists, tables, frames ...).
_BLOCK_CONTAINERS = {
    T + "section", T + "index-body", T + "index-title", T + "table-of-content",
    T + "alphabetical-index", T + "illustration-index", T + "table-index", T + "object-index",
    T + "user-index", T + "bibliography", D + "text-box", D + "frame", D + "g", D + "a",
    D + "custom-shape", D + "rect", D + "ellipse", D + "polygon", D + "polyline",
    D + "path", D + "circle", D + "line", D + "connector", D + "caption", D + "measure",
    D + "regular-polygon", OF + "text", OF + "drawing", OF + "presentation", OF + "chart",
    T + "deletion-free", TB + "table-cell", OF + "annotation-body",
    ST + "region-left", ST + "region-center", ST + "region-right",  # a sheet's header/footer
}
_SKIP = {T + "tracked-changes", T + "sequence-decls", T + "variable-decls",
         T + "user-field-decls", T + "table-of-content-source", T + "alphabetical-index-source",
         T + "illustration-index-source", T + "table-index-source", T + "object-index-source",
         T + "user-index-source", T + "bibliography-source", OF + "forms",
         TB + "named-expressions", TB + "calculation-settings", D + "image",
         OF + "annotation", OF + "annotation-end", T + "soft-page-break",
         PR + "notes", OF + "event-listeners", TB + "content-validations"}
_SKIP_FRAME_CLASSES = {"page-number", "footer", "header", "date-time", "page"}
_MAX_REPEAT = 64
# Fields a header or footer repeats on every page (their text is the printing's, not the
# author's): a header/footer made only of them is furniture, not text.
_WORD = re.compile(r"\w+")
_PAGE_FIELDS = {T + "page-number", T + "page-count", T + "sheet-name", T + "date", T + "time",
                T + "file-name", T + "page-continuation", T + "chapter", T + "title"}
_CHART = "{urn:oasis:names:tc:opendocument:xmlns:chart:1.0}"
_MATHML = "{http://www.w3.org/1998/Math/MathML}"
_NUM_FORMATS = {"1": "decimal", "a": "lowerLetter", "A": "upperLetter", "i": "lowerRoman",
                "I": "upperRoman"}  # style:num-format


class _Odf:
    """Walks ODF body XML and describes it to a builder."""

    def __init__(self, out: Builder, zf: zipfile.ZipFile, ctx: Context,
                 comments: bool) -> None:
        self.out = out
        self.zf, self.ctx = zf, ctx
        self.comments = comments
        # list style name -> {level: (format, prefix, suffix, levels shown)} of numbered
        # levels; a bullet level is absent
        self.list_styles: dict[str, dict[int, tuple[str, str, str, int]]] = {}
        self.notes: list[str] = []
        self.comment_texts: list[str] = []
        self.depth = 0

    # styles ---------------------------------------------------------------------------
    def add_list_styles(self, root: etree._Element | None) -> None:
        """The numbered levels of each list style (automatic and common styles), with how
        their numbers show: "1." / "a)" / "(iv)" / "2.1." (text:display-levels)."""
        if root is None:
            return
        for ls in root.iter(T + "list-style"):
            name = ls.get(ST + "name")
            if not name:
                continue
            levels: dict[int, tuple[str, str, str, int]] = {}
            for lvl in ls:
                fmt = lvl.get(ST + "num-format", "1")
                if local(lvl.tag) == "list-level-style-number" and fmt:
                    levels[_int(lvl.get(T + "level"), 1) - 1] = (
                        _NUM_FORMATS.get(fmt, "decimal"), lvl.get(ST + "num-prefix", ""),
                        lvl.get(ST + "num-suffix", ""), _int(lvl.get(T + "display-levels"), 1))
            self.list_styles[name] = levels

    # blocks ---------------------------------------------------------------------------
    def blocks(self, parent: etree._Element) -> None:
        for el in parent:
            tag = el.tag
            if not isinstance(tag, str) or tag in _SKIP:
                if tag == OF + "annotation":
                    self.annotation(el)
                continue
            if tag == T + "p":
                self.paragraph(el)
            elif tag == T + "h":
                self.paragraph(el, heading=_int(el.get(T + "outline-level"), 1))
            elif tag == T + "list":
                self.list_(el, 0, el.get(T + "style-name"), [0] * 10)
            elif tag == T + "numbered-paragraph":
                lvl = _int(el.get(T + "level"), 1) - 1
                for p in el:
                    if p.tag in (T + "p", T + "h"):
                        self.out.list_item(self.inline_text(p), lvl, True,
                                           _int(p.get(T + "start-value"), 1))
            elif tag == TB + "table":
                self.out.table(self.table(el), header=True)
            elif tag == D + "object":
                self.embedded_object(el)
            elif tag == _MATHML + "math":  # a formula stored in the object itself
                self.out.paragraph(mathml_text(el))
            elif tag in (SVG + "title", SVG + "desc"):  # a frame's or shape's alt text
                self.out.image_alt("".join(el.itertext()))
            elif tag in _BLOCK_CONTAINERS:
                if tag == D + "frame" and el.get(PR + "class") in _SKIP_FRAME_CLASSES:
                    continue
                self.blocks(el)

    def paragraph(self, p: etree._Element, heading: int | None = None) -> None:
        frames: list[etree._Element] = []
        text = self.inline_text(p, frames)
        if heading is not None:
            self.out.heading(text, heading)
        else:
            self.out.paragraph(text)
        for f in frames:
            self.blocks([f])

    def list_(self, lst: etree._Element, level: int, style: str | None,
              counters: list[int]) -> None:
        style = lst.get(T + "style-name") or style
        number = self.list_styles.get(style or "", {}).get(level)
        lvl = min(level, 9)
        if lst.get(T + "continue-numbering") != "true" and level == 0:
            counters[:] = [0] * 10
        for item in lst:
            if item.tag not in (T + "list-item", T + "list-header"):
                continue
            start = item.get(T + "start-value")
            if start is not None:
                counters[lvl] = _int(start, 1) - 1
            texts: list[str] = []
            for ch in item:
                if ch.tag in (T + "p", T + "h"):
                    texts.append(self.inline_text(ch))
                elif ch.tag == T + "list":
                    self._flush_item(texts, lvl, number, counters, item)
                    texts = []
                    self.list_(ch, level + 1, style, counters)
                elif ch.tag == TB + "table":
                    self._flush_item(texts, lvl, number, counters, item)
                    texts = []
                    self.out.table(self.table(ch))
            self._flush_item(texts, lvl, number, counters, item)

    def _flush_item(self, texts: list[str], lvl: int,
                    number: tuple[str, str, str, int] | None, counters: list[int],
                    item: etree._Element) -> None:
        text = " ".join(t.strip() for t in texts if t.strip())
        if not text:
            return
        if item.tag == T + "list-header":
            self.out.paragraph(text)
            return
        counters[lvl] += 1
        for i in range(lvl + 1, 10):
            counters[i] = 0
        if number is None:
            self.out.list_item(text, lvl)
            return
        fmt, prefix, suffix, shown = number
        # upper levels shown ("2.1.") in their own count, this level in its format
        upper = [str(max(c, 1)) for c in counters[max(lvl - shown + 1, 0):lvl]]
        label = ".".join([*upper, number_text(counters[lvl], fmt)])
        self.out.list_item(text, lvl, True, counters[lvl], f"{prefix}{label}{suffix}")

    def table(self, tbl: etree._Element) -> list[list[str]]:
        rows: list[list[str]] = []
        for tr in _rows(tbl):
            row: list[str] = []
            for tc in tr:
                if tc.tag not in (TB + "table-cell", TB + "covered-table-cell"):
                    continue
                text = self.cell_text(tc) if tc.tag == TB + "table-cell" else ""
                rep = _int(tc.get(TB + "number-columns-repeated"), 1)
                row.extend([text] * (min(rep, _MAX_REPEAT) if text else min(rep, 1)))
            while row and not row[-1].strip():
                row.pop()
            reps = _int(tr.get(TB + "number-rows-repeated"), 1)
            rows.extend([row] * (min(reps, _MAX_REPEAT) if row else 1))
        return rows

    def cell_text(self, tc: etree._Element) -> str:
        sub = Builder()
        saved, self.out = self.out, sub
        try:
            for el in tc:
                if el.tag == TB + "table":
                    for r in self.table(el):
                        sub.paragraph(" | ".join(c for c in r if c.strip()))
                else:
                    self.blocks([el])
        finally:
            self.out = saved
        return sub.text().replace("\n\n", "\n")

    def embedded_object(self, obj: etree._Element) -> None:
        """A chart or document embedded as a sub-package ('./Object 1/content.xml')."""
        href = (obj.get(XL + "href") or "").removeprefix("./").strip("/")
        part = posixpath.join(href, "content.xml")
        if not href or self.depth > 3 or part not in self.zf.NameToInfo:
            self.blocks(obj)  # inline objects carry their body directly
            return
        try:
            root = read_xml(self.zf, part, self.ctx)
        except ExtractionError as exc:
            if exc.kind is not ErrorKind.CORRUPT:
                raise
            return
        if root is None:
            return
        if root.tag == _MATHML + "math":  # a formula object: its equation, written out
            self.out.paragraph(mathml_text(root))
            return
        self.depth += 1
        try:
            self.add_list_styles(root)
            body = root.find(OF + "body")
            if body is not None:
                for kind in body:
                    if kind.tag in (OF + "spreadsheet", OF + "chart"):
                        self.data_tables(kind)
                    else:
                        self.blocks(kind)
        finally:
            self.depth -= 1

    def data_tables(self, kind: etree._Element) -> None:
        """Charts and sheets: their titles and data tables (no nested walk needed)."""
        for el in kind.iter(_CHART + "title", _CHART + "subtitle", TB + "table"):
            if el.tag == TB + "table":
                self.out.table(self.table(el))
            else:
                self.out.paragraph(self.inline_text(el.find(T + "p")) if el.find(
                    T + "p") is not None else "")

    # inline ---------------------------------------------------------------------------
    def inline_text(self, el: etree._Element, frames: list[etree._Element] | None = None,
                    ) -> str:
        parts: list[str] = []
        self._inline(el, parts, frames if frames is not None else [])
        return "".join(parts)

    def _inline(self, el: etree._Element, parts: list[str], frames: list[etree._Element],
                ) -> None:
        if el.text:
            parts.append(el.text)
        for ch in el:
            tag = ch.tag
            if not isinstance(tag, str):
                pass
            elif tag == T + "s":
                parts.append(" " * min(_int(ch.get(T + "c"), 1), 100))
            elif tag == T + "tab":
                parts.append("\t")
            elif tag == T + "line-break":
                parts.append("\n")
            elif tag == T + "note":
                self.note(ch)
            elif tag == OF + "annotation":
                self.annotation(ch)
            elif tag in (D + "frame", D + "custom-shape", D + "rect", D + "ellipse", D + "g",
                         D + "a", D + "text-box"):
                formula = self.inline_formula(ch) if tag == D + "frame" else None
                if formula is not None:
                    parts.append(formula)
                else:
                    frames.append(ch)
            elif tag in (T + "ruby-text", T + "tracked-changes", OF + "annotation-end",
                         T + "bookmark", T + "bookmark-start", T + "bookmark-end",
                         T + "reference-mark", T + "change", D + "image"):
                pass
            else:  # span, a, ruby, fields (date, page-number, sequence ...), meta, ...
                self._inline(ch, parts, frames)
            if ch.tail:
                parts.append(ch.tail)

    def inline_formula(self, frame: etree._Element) -> str | None:
        """The linear text of a formula anchored as a character, else None.

        "Einstein wrote E = m c^2 in 1905." is one sentence: an as-char formula is part of
        its line, so it goes where it stands, not after the paragraph as other frames do.
        """
        if frame.get(T + "anchor-type") != "as-char":
            return None
        obj = frame.find(D + "object")
        if obj is None:
            return None
        inline = obj.find(_MATHML + "math")
        if inline is not None:
            return mathml_text(inline)
        href = (obj.get(XL + "href") or "").removeprefix("./").strip("/")
        part = posixpath.join(href, "content.xml")
        if not href or part not in self.zf.NameToInfo:
            return None
        try:
            root = read_xml(self.zf, part, self.ctx)
        except ExtractionError as exc:
            if exc.kind is not ErrorKind.CORRUPT:
                raise
            return None
        if root is None or root.tag != _MATHML + "math":
            return None
        return mathml_text(root)

    def note(self, note: etree._Element) -> None:
        cit = note.find(T + "note-citation")
        body = note.find(T + "note-body")
        if body is None:
            return
        text = render_text(self, body)
        if text:
            label = (cit.text or "").strip() if cit is not None else ""
            self.notes.append(f"[{label}] {text}" if label else text)

    def annotation(self, ann: etree._Element) -> None:
        if not self.comments:
            return
        text = render_text(self, ann)
        if text:
            author = ann.findtext("{http://purl.org/dc/elements/1.1/}creator")
            self.comment_texts.append(f"Comment ({author}): {text}" if author else
                                      f"Comment: {text}")


def _rows(tbl: etree._Element) -> list[etree._Element]:
    out: list[etree._Element] = []
    for el in tbl:
        if el.tag == TB + "table-row":
            out.append(el)
        elif el.tag in (TB + "table-header-rows", TB + "table-rows", TB + "table-row-group"):
            out.extend(_rows(el))
    return out


def _int(v: str | None, default: int) -> int:
    try:
        return int(v) if v is not None else default
    except ValueError:
        return default


# -- package --------------------------------------------------------------------------


def _meta(zf: zipfile.ZipFile, ctx: Context, doc: Document) -> None:
    try:
        root = read_xml(zf, "meta.xml", ctx)
    except ExtractionError as exc:
        if exc.kind is not ErrorKind.CORRUPT:
            raise
        return
    meta = root.find(OF + "meta") if root is not None else None
    if meta is None:
        return
    vals: dict[str, list[str]] = {}
    for el in meta:
        name = local(el.tag)
        if name == "document-statistic":
            for k in ("page-count", "object-count"):
                n = el.get("{urn:oasis:names:tc:opendocument:xmlns:meta:1.0}" + k)
                if n and n.isdigit() and k == "page-count":
                    doc.metadata.page_count = int(n)
        elif name and (el.text or "").strip():
            vals.setdefault(name, []).append(el.text.strip())
    m = doc.metadata
    first = {k: v[0] for k, v in vals.items()}
    doc.title = first.get("title")
    m.author = first.get("initial-creator") or first.get("creator")
    m.created = first.get("creation-date")
    m.modified = first.get("date")
    m.language = first.get("language")
    m.subject = first.get("subject")
    if vals.get("keyword"):
        m.keywords = ", ".join(vals["keyword"])
    if first.get("creator"):
        m.extra["lastModifiedBy"] = first["creator"]
    for k in ("description", "generator"):
        if k in first:
            m.extra[k] = first[k]


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    with open_plain(src, ctx, doc) as zf:  # decrypted first if password-protected
        if "content.xml" not in zf.NameToInfo:
            raise ExtractionError(ErrorKind.CORRUPT, "not a complete OpenDocument: no content.xml")
        root = read_xml(zf, "content.xml", ctx)
        assert root is not None
        _meta(zf, ctx, doc)
        styles = read_xml_lenient(zf, "styles.xml", ctx)
        walker = _Odf(out, zf, ctx, ctx.options.comments)
        walker.add_list_styles(styles)
        walker.add_list_styles(root)
        body = root.find(OF + "body")
        if body is None:
            raise ExtractionError(ErrorKind.CORRUPT, "content.xml has no office:body")
        headers, footers = _page_styles(walker, styles)
        for text in headers:
            out.paragraph(text)
        for kind in body:
            if kind.tag in (OF + "presentation", OF + "drawing"):
                _pages(walker, kind, out, doc, _master_pages(styles))
            elif kind.tag in (OF + "spreadsheet", OF + "chart"):
                walker.data_tables(kind)
            else:
                walker.blocks(kind)
        for text in footers:
            out.paragraph(text)
        for text in walker.notes:
            out.paragraph(text)
        for text in walker.comment_texts:
            out.paragraph(text)
        if not any(kind.tag in (OF + "spreadsheet", OF + "chart") for kind in body):
            image_children(zf, ("Pictures/",), ctx, doc, out)


def _page_styles(walker: _Odf, styles: etree._Element | None) -> tuple[list[str], list[str]]:
    """Distinct header and footer texts of the master pages (text documents and sheets),
    minus hidden ones and those that are only page furniture fields ("Page 1", a sheet's
    name), which every LibreOffice sheet has by default."""
    heads: list[str] = []
    foots: list[str] = []
    if styles is None:
        return heads, foots
    for mp in styles.iter(ST + "master-page"):
        for el in mp:
            name = local(el.tag)
            target = heads if name.startswith("header") else foots if name.startswith(
                "footer") else None
            if target is None or el.get(ST + "display") == "false" or _only_fields(el):
                continue
            text = render_text(walker, el)
            if text and text not in heads and text not in foots:
                target.append(text)
    return heads, foots


def master_page_texts(src: Source, ctx: Context) -> tuple[list[str], list[str]]:
    """The header and footer texts of a (decrypted) OpenDocument's master pages, for a
    spreadsheet whose cells another reader takes; none from a damaged styles part."""
    try:
        with open_zip(src) as zf:
            walker = _Odf(Builder(), zf, ctx, False)
            return _page_styles(walker, read_xml_lenient(zf, "styles.xml", ctx))
    except ExtractionError as exc:
        if exc.kind is not ErrorKind.CORRUPT:
            raise
        return [], []


def _only_fields(el: etree._Element) -> bool:
    """Whether a header or footer holds fields and at most one word of its own (besides
    punctuation: "??? (???)" or "Page 1 / 99" is LibreOffice's default, not the author's)."""
    own: list[str] = []
    fields = 0
    for node in el.iter():
        if node is not el and node.tag in _PAGE_FIELDS:
            fields += 1
        elif node.text and node.getparent() is not None and node.tag not in _PAGE_FIELDS:
            own.append(node.text)
        if node is not el and node.tail and node.getparent() is not None:
            own.append(node.tail)
    return fields > 0 and len(_WORD.findall(" ".join(own))) <= 1


_DEFAULT_PAGE_NAME = re.compile(r"^(page|slide|seite|diapo\w*|folie)\s*\d+$", re.I)


def _master_pages(styles: etree._Element | None) -> dict[str, etree._Element]:
    """The master pages of a presentation or drawing, by name."""
    if styles is None:
        return {}
    return {mp.get(ST + "name", ""): mp for mp in styles.iter(ST + "master-page")}


def _slide_furniture(walker: _Odf, page: etree._Element, n: int,
                     masters: dict[str, etree._Element], decls: dict[str, str],
                     seen: set[str]) -> list[str]:
    """What a slide's master shows on it besides its placeholders (text boxes, shapes),
    and the footer and date texts the slide uses (presentation:footer-decl). Each
    distinct text once, on the first slide that shows it."""
    texts: list[str] = []
    master = masters.get(page.get(D + "master-page-name") or "")
    if master is not None:
        for f in master:
            if f.tag in (PR + "notes", OF + "forms") or f.get(PR + "class"):
                continue  # a placeholder (title, outline, footer ...): the slide's own
            text = render_text(walker, f)
            if text:  # a page-number field on a master shows "<number>": this slide's
                texts.append(text.replace("<number>", str(n)))
    for attr in ("use-header-name", "use-footer-name", "use-date-time-name"):
        name = page.get(PR + attr)
        if name and decls.get(name):
            texts.append(decls[name])
    out = [t for t in texts if t not in seen]
    seen.update(out)
    return out


def _pages(walker: _Odf, kind: etree._Element, out: Builder, doc: Document,
           masters: dict[str, etree._Element]) -> None:
    decls = {d.get(PR + "name", ""): "".join(d.itertext()).strip() for d in kind
             if d.tag in (PR + "header-decl", PR + "footer-decl", PR + "date-time-decl")}
    seen: set[str] = set()
    n = 0
    for page in kind:
        if page.tag != D + "page":
            continue
        n += 1
        out.start_page(n)
        titles = [f for f in page if f.get(PR + "class") == "title"]
        for f in titles:
            out.heading(render_text(walker, f).replace("\n", " "), 2)
        name = page.get(D + "name") or ""
        if not titles and name and not _DEFAULT_PAGE_NAME.match(name):
            out.heading(name, 2)
        walker.blocks([f for f in page if f.get(PR + "class") != "title"])
        for text in _slide_furniture(walker, page, n, masters, decls, seen):
            out.furniture(text)
        notes = page.find(PR + "notes")
        if notes is not None:
            frames = [f for f in notes if f.get(PR + "class") == "notes"]
            text = "\n\n".join(t for t in (render_text(walker, f) for f in frames) if t)
            if text:
                out.paragraph("Notes:")
                for para in text.split("\n\n"):
                    out.paragraph(para)
    if n:
        doc.metadata.page_count = n
