"""EPUB 2/3: the OPF package's spine gives the reading order of the XHTML chapters.

Chapters are parsed with the safe XML parser (entities never expanded; HTML named
entities such as &nbsp; are turned into character references first, since no DTD is ever
loaded) and walked for visible structure: headings, paragraphs, lists, tables, quotes,
preformatted text. Damaged books still give what can be read: a missing container.xml
falls back to any .opf, a missing mimetype is ignored, XML 1.1 parts are read as 1.0.
"""

from __future__ import annotations

import html.entities
import posixpath
import re
import zipfile
from urllib.parse import unquote

from lxml import etree

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader
from ..kernels.xml import local, open_zip, parse_xml, read_member, read_xml
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder
from . import Context

# Output version (archives re-extract what an older one made): 2 = list numbers in the text.
FORMAT = Format(name="epub", version=2, readers=(Reader(d.EPUB),), hints={"epub": d.EPUB})

_SPACE = re.compile(r"[ \t\r\n\f]+")
_DC = "{http://purl.org/dc/elements/1.1/}"
_XML_ENTITIES = {"amp", "lt", "gt", "quot", "apos"}
_ENTITY = re.compile(rb"&([A-Za-z][A-Za-z0-9]{1,31});")
_HTML_TYPES = {"application/xhtml+xml", "text/html", "application/xml", "text/xml",
               "application/x-dtbook+xml"}
_SKIP = {"script", "style", "head", "noscript", "template", "title", "object", "iframe"}
_BLOCKS = {"p", "div", "section", "article", "aside", "header", "footer", "nav", "main",
           "figure", "figcaption", "body", "blockquote", "pre", "ul", "ol", "dl", "table",
           "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "dt", "dd", "address", "center",
           "hgroup", "details", "summary", "form", "fieldset", "caption", "tr", "td", "th"}
_FONT_OBFUSCATION = ("http://www.idpf.org/2008/embedding",
                     "http://ns.adobe.com/pdf/enc#RC")


def _entity_ref(m: re.Match[bytes]) -> bytes:
    name = m.group(1).decode("ascii")
    if name in _XML_ENTITIES:
        return m.group(0)
    cp = html.entities.name2codepoint.get(name)
    return b"&#%d;" % cp if cp is not None else b""


def parse_xhtml(data: bytes) -> etree._Element:
    """An (X)HTML chapter with HTML named entities resolved to characters."""
    return parse_xml(_ENTITY.sub(_entity_ref, data), recover=True)


class _Html:
    """Describes an XHTML body to the builder."""

    def __init__(self, out: Builder) -> None:
        self.out = out

    def blocks(self, el: etree._Element, list_level: int = -1) -> None:
        buf: list[str] = [el.text or ""]
        for ch in el:
            name = local(ch.tag).lower()
            if name in _BLOCKS:
                self._flush(buf)
                self.block(ch, name, list_level)
                buf = []
            elif name and name not in _SKIP:
                buf.append(self.inline(ch))
            buf.append(ch.tail or "")
        self._flush(buf)

    def _flush(self, buf: list[str]) -> None:
        text = "".join(buf)
        if text.strip():
            self.out.paragraph(text)

    def block(self, el: etree._Element, name: str, list_level: int) -> None:
        if name[0] == "h" and name[1:].isdigit():
            self.out.heading(self.inline(el), int(name[1:]))
        elif name in ("ul", "ol"):
            self.list_(el, list_level + 1, name == "ol")
        elif name == "table":
            self.out.table(self.table(el))
        elif name == "pre":
            self.out.code(self.inline(el, keep_space=True))
        elif name == "blockquote":
            sub = Builder()
            _Html(sub).blocks(el)
            self.out.quote(sub.text())
        elif name == "hr":
            return
        elif self._has_blocks(el):
            self.blocks(el, list_level)
        else:
            self.out.paragraph(self.inline(el))

    def _has_blocks(self, el: etree._Element) -> bool:
        return any(local(ch.tag).lower() in _BLOCKS for ch in el)

    def list_(self, el: etree._Element, level: int, ordered: bool) -> None:
        n = 0
        for li in el:
            if local(li.tag).lower() != "li":
                continue
            n += 1
            parts: list[str] = [li.text or ""]
            nested: list[etree._Element] = []
            for ch in li:
                name = local(ch.tag).lower()
                if name in ("ul", "ol"):
                    nested.append(ch)
                elif name and name not in _SKIP:
                    parts.append(self.inline(ch))
                parts.append(ch.tail or "")
            self.out.list_item("".join(parts), level, ordered, n)
            for sub in nested:
                self.list_(sub, level + 1, local(sub.tag).lower() == "ol")

    def table(self, el: etree._Element) -> list[list[str]]:
        rows = []
        for tr in el.iter():
            if local(tr.tag).lower() != "tr":
                continue
            rows.append([self.inline(td).replace("\n", " ") for td in tr
                         if local(td.tag).lower() in ("td", "th")])
        return rows

    def inline(self, el: etree._Element, keep_space: bool = False) -> str:
        parts: list[str] = []
        self._inline(el, parts)
        text = "".join(parts)
        if not keep_space:  # source line breaks are not visible; <br> (\x00) is
            text = _SPACE.sub(" ", text)
        return text.replace("\x00", "\n")

    def _inline(self, el: etree._Element, parts: list[str]) -> None:
        if el.text:
            parts.append(el.text)
        for ch in el:
            name = local(ch.tag).lower()
            if name == "br":
                parts.append("\x00")
            elif name and name not in _SKIP:
                if name in _BLOCKS and parts:
                    parts.append(" ")
                self._inline(ch, parts)
            if ch.tail:
                parts.append(ch.tail)


def _opf_path(zf: zipfile.ZipFile, ctx: Context) -> str:
    try:
        container = read_xml(zf, "META-INF/container.xml", ctx)
    except ExtractionError as exc:
        if exc.kind is not ErrorKind.CORRUPT:
            raise
        container = None
    if container is not None:
        for rf in container.iter():
            path = rf.get("full-path") if local(rf.tag) == "rootfile" else None
            if path and path in zf.NameToInfo:
                return path
    opfs = sorted(n for n in zf.NameToInfo if n.lower().endswith(".opf"))
    if not opfs:
        raise ExtractionError(ErrorKind.CORRUPT, "EPUB without a package (.opf) document")
    return opfs[0]


def _metadata(opf: etree._Element, doc: Document) -> None:
    meta = next((e for e in opf if local(e.tag) == "metadata"), None)
    if meta is None:
        return
    vals: dict[str, list[str]] = {}
    for el in meta.iter():
        if not isinstance(el.tag, str):
            continue
        text = " ".join("".join(el.itertext()).split())
        if el.tag.startswith(_DC) and text:
            vals.setdefault(el.tag[len(_DC):], []).append(text)
        elif local(el.tag) == "meta" and el.get("property") == "dcterms:modified" and text:
            doc.metadata.modified = text
    m = doc.metadata
    doc.title = _first(vals, "title")
    if vals.get("creator"):
        m.author = "; ".join(vals["creator"])
    m.language = _first(vals, "language")
    m.created = _first(vals, "date")
    if vals.get("subject"):
        m.subject = "; ".join(vals["subject"])
    for k in ("publisher", "description", "identifier", "rights"):
        if vals.get(k):
            m.extra[k] = vals[k][0]


def _first(vals: dict[str, list[str]], key: str) -> str | None:
    got = vals.get(key)
    return got[0] if got else None


def _spine(opf: etree._Element, base: str) -> list[str]:
    items: dict[str, tuple[str, str]] = {}
    for el in opf.iter():
        if local(el.tag) == "item" and el.get("id") and el.get("href"):
            path = posixpath.normpath(posixpath.join(base, unquote(el.get("href", ""))))
            items[el.get("id", "")] = (path.split("#")[0], el.get("media-type", ""))
    order = [el.get("idref", "") for el in opf.iter() if local(el.tag) == "itemref"]
    return [items[i][0] for i in order
            if i in items and (items[i][1] in _HTML_TYPES or not items[i][1])]


def _check_drm(zf: zipfile.ZipFile, ctx: Context, chapters: list[str]) -> None:
    """Encrypted chapters (DRM) cannot be read; obfuscated fonts are harmless."""
    if "META-INF/encryption.xml" not in zf.NameToInfo:
        return
    root = read_xml(zf, "META-INF/encryption.xml", ctx)
    if root is None:
        return
    wanted = set(chapters)
    for data in root.iter():
        if local(data.tag) != "EncryptedData":
            continue
        algo = next((e.get("Algorithm", "") for e in data.iter()
                     if local(e.tag) == "EncryptionMethod"), "")
        uri = next((e.get("URI", "") for e in data.iter() if local(e.tag) == "CipherReference"),
                   "")
        if algo not in _FONT_OBFUSCATION and unquote(uri) in wanted:
            raise ExtractionError(ErrorKind.ENCRYPTED, "EPUB chapters are DRM-encrypted")


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    with open_zip(src) as zf:
        opf_path = _opf_path(zf, ctx)
        opf = read_xml(zf, opf_path, ctx)
        assert opf is not None
        _metadata(opf, doc)
        chapters = [c for c in _spine(opf, posixpath.dirname(opf_path))
                    if c in zf.NameToInfo]
        _check_drm(zf, ctx, chapters)
        walker = _Html(out)
        seen: set[str] = set()
        for path in chapters:
            if path in seen:
                continue
            seen.add(path)
            try:
                root = parse_xhtml(read_member(zf, path, ctx))
            except ExtractionError as exc:
                if exc.kind is not ErrorKind.CORRUPT:
                    raise
                doc.warnings.append(f"{path}: {exc.message}")
                continue
            body = next((e for e in root.iter() if local(e.tag).lower() == "body"), root)
            walker.blocks(body)
        doc.metadata.page_count = None
        if not chapters and doc.title:
            out.heading(doc.title, 1)  # a book with no readable chapter: its title at least
            if doc.metadata.author:
                out.paragraph(doc.metadata.author)
