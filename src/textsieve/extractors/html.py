"""HTML ("all visible text") and generic XML (feeds, JATS, SpreadsheetML, flat ODF, ...).

A page is decoded, parsed and walked by the HTML kernel (``kernels.html``); what a reader
asked for decides what is walked: the whole page, its main content (``web.main``) or the
part about one topic (``web.sieve``). XML is read by the safe XML parser: XHTML goes to the
HTML walker, feeds give their items, SpreadsheetML its tables, anything else its text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import lxml.html
from lxml import etree

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader
from ..kernels.html import (
    SPACES,
    HtmlWalker,
    decode_html,
    drop_hidden,
    parse_html,
    positive_int,
    render_html_document,
)
from ..kernels.xml import local, parse_xml
from ..model import Document, ExtractionError
from ..render import Builder
from . import Context

# Output version (archives re-extract what an older one made): 2 = list numbers in the
# text, picture alt text; 3 = self-closed scripts, hidden text, main-content choice.
FORMAT = Format(
    name="html", version=3,
    readers=(Reader(d.HTML, "extract_html"), Reader(d.XML, "extract_xml")),
    hints={"html": d.HTML, "htm": d.HTML, "xhtml": d.HTML, "xml": d.XML},
)

# Imported by the first page read for its main content or a topic (web.main, web.sieve),
# so preload() loads it up front.
LAZY = ("textsieve.web.region",)


def extract_html(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """All visible text of a page, with its structure, plus head metadata."""
    data = src.read()
    text, enc = decode_html(data, src.charset)
    doc.metadata.encoding = enc
    if "\x00" in text:
        text = text.replace("\x00", "")
    if not text.strip():
        return
    root = parse_html(text)
    # What a browser shows after a click or once its scripts run (tab panels, a page
    # behind a loading guard, React's streamed blocks) is text; other hidden parts go.
    topic = ctx.options.topic if ctx.options.html == "sieve" else None
    drop_hidden(root, aria_shown=False, drop=not topic)  # the sieve may look again
    if topic:
        from ..web.sieve import sieve_document  # here: the sieve is asked for rarely

        sieve_document(root, doc, out, topic)
        return
    if ctx.options.html == "main" or (ctx.options.html == "auto" and src.url):
        from ..web.main import render_main  # here: a local file is read whole

        render_main(root, src.url, doc, out)
        return
    render_html_document(root, doc, out)



# -- XML ---------------------------------------------------------------------------------
_XML_SKIP = frozenset({"binary-data", "styles", "automatic-styles", "font-face-decls",
                       "settings", "scripts", "master-styles", "meta", "stylesheet",
                       "DocumentProperties", "OfficeDocumentSettings", "ExcelWorkbook",
                       "Styles", "WorksheetOptions"})
_FEED_ITEMS = frozenset({"item", "entry"})
_FEED_TEXT = ("encoded", "content", "description", "summary")  # fullest first


def extract_xml(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """XHTML goes to the HTML walker, feeds give item titles and texts, SpreadsheetML
    gives tables; anything else gives its text nodes with block breaks."""
    data = src.read()
    try:
        root = parse_xml(data)
    except ExtractionError as exc:
        root = parse_xml(data, recover=True)  # raises CORRUPT when nothing is left
        doc.warnings.append(f"malformed XML, recovered what could be read: {exc.message}")
    enc = root.getroottree().docinfo.encoding
    doc.metadata.encoding = (enc or "utf-8").lower()
    name = local(root.tag)
    if name.lower() == "html":
        render_html_document(root, doc, out)
    elif name in ("rss", "RDF", "feed"):
        _feed(root, doc, out)
    elif name == "Workbook" and "spreadsheet" in (etree.QName(root).namespace or ""):
        _spreadsheetml(root, doc, out)
    else:
        doc.title = _xml_title(root)
        _xml_blocks(root, out)


def _direct_text(el: etree._Element) -> bool:
    if el.text and el.text.strip():
        return True
    return any(c.tail and c.tail.strip() for c in el)


def _xml_blocks(el: etree._Element, out: Builder) -> None:
    """An element holding text directly is one block (mixed content like JATS <p> with
    <italic>); elements that only hold elements are walked into."""
    if not isinstance(el.tag, str) or local(el.tag) in _XML_SKIP:
        return
    if _direct_text(el):
        out.paragraph(SPACES.sub(" ", "".join(_xml_text(el))))
        return
    for child in el:
        _xml_blocks(child, out)


def _xml_text(el: etree._Element) -> Iterator[str]:
    if el.text:
        yield el.text
    for c in el:
        if isinstance(c.tag, str) and local(c.tag) not in _XML_SKIP:
            yield from _xml_text(c)
        if c.tail:
            yield c.tail


def _xml_title(root: etree._Element) -> str | None:
    for path in (".//{*}article-meta//{*}article-title", "./{*}title", "./{*}head/{*}title",
                 ".//{http://purl.org/dc/elements/1.1/}title", ".//{*}title-stmt/{*}title",
                 ".//{*}titleStmt/{*}title"):
        el = root.find(path)
        if el is not None:
            title = SPACES.sub(" ", "".join(el.itertext())).strip()
            if title:
                return title
    return None


def _child_text(el: etree._Element, name: str) -> str:
    for c in el:
        if local(c.tag) == name:
            return "".join(c.itertext()).strip()
    return ""


def _feed(root: etree._Element, doc: Document, out: Builder) -> None:
    channel = next((c for c in root if local(c.tag) == "channel"), root)
    doc.title = _child_text(channel, "title") or None
    if doc.title:
        out.heading(doc.title, 1)
    desc = _child_text(channel, "description") or _child_text(channel, "subtitle")
    if desc and desc != doc.title:
        _markup(desc, out)
    for item in root.iter():
        if local(item.tag) not in _FEED_ITEMS:
            continue
        title = _child_text(item, "title")
        if title:
            out.heading(SPACES.sub(" ", _html_to_plain(title)), 2)
        texts = {local(c.tag): "".join(c.itertext()).strip() for c in item
                 if local(c.tag) in _FEED_TEXT}
        body = next((texts[k] for k in _FEED_TEXT if texts.get(k)), "")
        if body:
            _markup(body, out)


def _markup(text: str, out: Builder) -> None:
    """Feed texts are often escaped HTML: render them through the HTML walker."""
    if "<" not in text and "&" not in text:
        out.paragraph(text)
        return
    try:
        frag = lxml.html.fragment_fromstring(text, create_parent="div")
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        out.paragraph(re.sub(r"<[^>]*>", " ", text))
        return
    HtmlWalker(out).render(frag)


def _html_to_plain(text: str) -> str:
    if "<" not in text and "&" not in text:
        return text
    try:
        return lxml.html.fragment_fromstring(text, create_parent="div").text_content()
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return text


def _spreadsheetml(root: etree._Element, doc: Document, out: Builder) -> None:
    """Excel 2003 XML: Worksheet/Table/Row/Cell/Data, with ss:Index for skipped cells."""
    ss = "{urn:schemas-microsoft-com:office:spreadsheet}"
    names: list[str] = []
    for n, ws in enumerate((w for w in root if local(w.tag) == "Worksheet"), 1):
        name = ws.get(f"{ss}Name") or f"Sheet{n}"
        names.append(name)
        out.start_page(n)
        out.heading(name, 2)
        for table in (t for t in ws if local(t.tag) == "Table"):
            rows: list[list[str]] = []
            for row in (r for r in table if local(r.tag) == "Row"):
                cells: list[str] = []
                for cell in (c for c in row if local(c.tag) == "Cell"):
                    index = positive_int(cell.get(f"{ss}Index"), 0)
                    if index > len(cells) + 1:
                        cells.extend([""] * (min(index, 16384) - 1 - len(cells)))
                    data = next((d for d in cell if local(d.tag) == "Data"), None)
                    cells.append("" if data is None else "".join(data.itertext()).strip())
                rows.append(cells)
            out.table(rows)
    doc.metadata.page_count = len(names)
    doc.metadata.extra["sheets"] = names
