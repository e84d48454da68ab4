"""HTML ("all visible text") and generic XML (feeds, JATS, SpreadsheetML, flat ODF, ...).

``HtmlWalker`` turns an lxml element into Builder blocks (headings, paragraphs, nested
lists, tables, code, quotes); it takes any element, so main-content extraction, EPUB and
mail bodies can hand it just the subtree they chose. Tags are compared by local name, so
the same walker reads XHTML parsed as XML.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import lxml.html
from lxml import etree

from ..extractors import Context
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder, number_text
from ..source import Source
from ..textcodec import bom_encoding, decode, normalize_charset
from .xml import local, parse_xml

# Output version (archives re-extract what an older one made): 2 = list numbers in the
# text, picture alt text; 3 = self-closed scripts, hidden text, main-content choice.
VERSION = 3

# Imported on the first page (hidden-text handling), so preload() loads them up front.
LAZY = ("textsieve.web.region",)

# -- HTML -------------------------------------------------------------------------------
_SKIP = frozenset({"script", "style", "noscript", "template", "head", "iframe", "object",
                   "embed", "canvas", "select", "datalist", "svg", "map", "audio", "video",
                   "source", "track", "param", "input", "button", "textarea", "dialog"})
_BLOCK = frozenset({"p", "div", "section", "article", "header", "footer", "main", "nav",
                    "aside", "address", "figure", "figcaption", "form", "fieldset", "legend",
                    "details", "summary", "center", "dl", "dt", "dd", "hgroup", "caption",
                    "body", "html", "li", "tr", "td", "th", "thead", "tbody", "tfoot",
                    "table", "ul", "ol", "menu", "dir", "pre", "blockquote", "hr",
                    "h1", "h2", "h3", "h4", "h5", "h6", "noframes", "frameset", "search"})
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_LISTS = frozenset({"ul", "ol", "menu", "dir"})
# <ol type=...>: how its numbers show (case matters: "a" and "A" differ).
_OL_TYPES = {"1": "decimal", "a": "lowerLetter", "A": "upperLetter", "i": "lowerRoman",
             "I": "upperRoman"}
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_SPACES = re.compile(r"[ \t\r\n\f]+")
_META_CHARSET = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""")
# A raw-text element written XML-style, "<script .../>": browsers ignore the slash and
# read up to the next </script> as code; libxml2 closes the element at once, so that code
# became page text. The lookahead takes the segment up to the next </script>.
_SELF_CLOSED_RAW = re.compile(
    r"<(script|style)\b([^<>]*?)\s*/>(?=((?:(?!</\1\s*>).){0,200000}?)</\1\s*>)",
    re.I | re.S)
# Markup in that segment means the slash was meant (the page's text follows, a later
# script has its own end tag): then the element stays empty, as libxml2 reads it.
_MARKUP = re.compile(r"<(?:/?[a-z][\w:-]*[\s/>]|!--)", re.I)


def _tag(el: etree._Element) -> str:
    """Lower-case local name ('' for comments and processing instructions)."""
    return local(el.tag).lower()


def _hidden(el: etree._Element) -> bool:
    get = el.get
    if get("hidden") is not None or get("aria-hidden", "").lower() == "true":
        return True
    style = get("style")
    return bool(style) and _HIDDEN_STYLE.search(style) is not None


def _skipped(el: etree._Element, tag: str) -> bool:
    return not tag or tag in _SKIP or _hidden(el)


class HtmlWalker:
    """Renders an HTML (or XHTML) subtree to a Builder; reusable for any chosen element."""

    def __init__(self, out: Builder, *, alt_text: bool = False) -> None:
        self.out = out
        self.buf: list[str] = []
        # A picture's alt text as its own block: in a whole document (what a screen reader
        # reads out); off for main content, where logos and icons would be boilerplate.
        self.alt_text = alt_text

    def render(self, el: etree._Element) -> None:
        """Render ``el`` and everything inside it (not its tail)."""
        self.node(el)
        self.flush()

    # -- flow ----------------------------------------------------------------------------
    def flush(self) -> None:
        if self.buf:
            text = "".join(self.buf)
            self.buf.clear()
            self.out.paragraph(text)

    def children(self, el: etree._Element) -> None:
        if el.text:
            self.buf.append(_SPACES.sub(" ", el.text))
        for child in el:
            self.node(child)
            if child.tail:
                self.buf.append(_SPACES.sub(" ", child.tail))

    def node(self, el: etree._Element) -> None:
        tag = _tag(el)
        if _skipped(el, tag):
            return
        if tag == "br":
            self.buf.append("\n")
        elif tag == "img":
            alt = (el.get("alt") or "").strip()
            if alt and self.alt_text:
                self.flush()
                self.out.image_alt(alt)
        elif tag in _HEADINGS:
            self.flush()
            self.out.heading(inline_text(el), _HEADINGS[tag])
        elif tag in _LISTS:
            self.flush()
            self.list_(el, 0)
        elif tag == "table":
            self.flush()
            self.table(el)
        elif tag == "pre":
            self.flush()
            self.out.code(_pre_text(el), _code_language(el))
        elif tag == "blockquote":
            self.flush()
            self.out.quote(inline_text(el, block_sep="\n"))
        elif tag == "hr":
            self.flush()
            self.out.rule()
        elif tag in _BLOCK:
            self.flush()
            self.children(el)
            self.flush()
        else:
            self.children(el)

    # -- structures ----------------------------------------------------------------------
    def list_(self, el: etree._Element, level: int) -> None:
        ordered = _tag(el) == "ol"
        number = _int(el.get("start"), 1)
        style = _OL_TYPES.get(el.get("type") or "1", "decimal")
        for li in el:
            tag = _tag(li)
            if _skipped(li, tag):
                continue
            if tag in _LISTS:  # a list directly inside a list (invalid but common)
                self.list_(li, level + 1)
                continue
            nested = [c for c in li.iter() if c is not li and _tag(c) in _LISTS
                      and _outer_list(c, li)]
            text = inline_text(li, exclude=nested)
            if text.strip():
                if ordered:
                    number = _int(li.get("value"), number)  # <li value=7> renumbers
                    self.out.list_item(text, level, True, number,
                                       f"{number_text(number, style)}.")
                else:
                    self.out.list_item(text, level)
                number += 1
            for sub in nested:
                self.list_(sub, level + 1)

    def table(self, el: etree._Element) -> None:
        rows = list(_table_rows(el))
        grid: list[list[str]] = []
        nested = False
        for tr in rows:
            cells = [c for c in tr if _tag(c) in ("td", "th") and not _hidden(c)]
            row: list[str] = []
            for c in cells:
                if not nested and any(_tag(x) in ("table", "pre") for x in c.iter()):
                    nested = True
                row.append(inline_text(c))
                row.extend([""] * (min(_int(c.get("colspan"), 1), 50) - 1))
            grid.append(row)
        width = max((len(r) for r in grid), default=0)
        if nested or width < 2:
            # A layout table (nested tables, one column): its cells are page sections.
            for tr in rows:
                for c in tr:
                    if not _skipped(c, _tag(c)):
                        self.flush()
                        self.children(c)
                        self.flush()
            for cap in el:
                if _tag(cap) == "caption":
                    self.out.paragraph(inline_text(cap))
            return
        for cap in el:
            if _tag(cap) == "caption":
                self.out.paragraph(inline_text(cap))
        # Markdown needs a header row: without <th> the first row serves (as browsers
        # and people read it); an empty one would only add noise.
        self.out.table(grid, header=True)


def _outer_list(lst: etree._Element, li: etree._Element) -> bool:
    """True if ``lst`` is not inside another list that is itself inside ``li``."""
    p = lst.getparent()
    while p is not None and p is not li:
        if _tag(p) in _LISTS:
            return False
        p = p.getparent()
    return True


def _table_rows(table: etree._Element) -> Iterator[etree._Element]:
    for child in table:
        tag = _tag(child)
        if tag == "tr" and not _hidden(child):
            yield child
        elif tag in ("thead", "tbody", "tfoot") and not _hidden(child):
            yield from (tr for tr in child if _tag(tr) == "tr" and not _hidden(tr))


def inline_text(el: etree._Element, *, block_sep: str = " ",
                exclude: list[etree._Element] | None = None) -> str:
    """Visible text of a subtree as one run: <br> is a line break, blocks are separated
    by ``block_sep`` (a space in headings and cells, a line break in quotes)."""
    parts: list[str] = []
    skip = set(exclude or ())

    def walk(e: etree._Element) -> None:
        if e.text:
            parts.append(_SPACES.sub(" ", e.text))
        for c in e:
            tag = _tag(c)
            if c not in skip and not _skipped(c, tag):
                if tag == "br":
                    parts.append("\n")
                elif tag in _BLOCK:
                    parts.append(block_sep)
                    walk(c)
                    parts.append(block_sep)
                else:
                    walk(c)
            if c.tail:
                parts.append(_SPACES.sub(" ", c.tail))

    walk(el)
    text = "".join(parts)
    if block_sep == "\n":
        text = re.sub(r" *\n[\n ]*", "\n", text)
    return text.strip()


def _pre_text(el: etree._Element) -> str:
    parts: list[str] = []
    for node in el.iter():
        tag = _tag(node)
        if node is not el and _skipped(node, tag):
            continue
        if tag == "br":
            parts.append("\n")
    # text_content keeps the whitespace that matters in <pre>; <br> inside pre is rare.
    return el.text_content() if not parts else "".join(el.itertext())


def _code_language(el: etree._Element) -> str:
    for node in el.iter():
        m = re.search(r"\b(?:language|lang)-([\w+#-]+)", node.get("class") or "")
        if m:
            return m.group(1)
    return ""


def _int(v: str | None, default: int) -> int:
    try:
        return max(int((v or "").strip()), 1)
    except ValueError:
        return default


# -- decoding and parsing ------------------------------------------------------------------
def declared_charset(data: bytes) -> str | None:
    """The charset a page declares in its first bytes (<meta charset>, http-equiv, or an
    XML declaration)."""
    head = data[:8192]
    m = _META_CHARSET.search(head) or _XML_ENCODING.search(head)
    return m.group(1).decode("ascii", "replace") if m else None


def decode_html(data: bytes, http_charset: str | None = None) -> tuple[str, str]:
    """BOM, then strict UTF-8 (it beats a wrong declaration: qq.com says gb2312 and sends
    UTF-8), then the charset of the HTTP header, then the page's own declaration, each only
    if it decodes the bytes cleanly, then detection."""
    if bom_encoding(data):
        return decode(data)
    if http_charset and normalize_charset(http_charset) not in (None, "utf-8"):
        text, enc = decode(data, http_charset)
        if enc == normalize_charset(http_charset):
            return text, enc
    declared = declared_charset(data)
    text, enc = decode(data, declared)
    if enc == "utf-8" and declared and data.isascii():
        enc = normalize_charset(declared) or enc  # ASCII is valid in what the page says
    return text, enc


def _open_self_closed(m: re.Match[str]) -> str:
    """``<script/>`` followed by bare code up to ``</script>``: an open script (the code
    is its content); followed by markup: an empty one (the text after it is page text)."""
    if _MARKUP.search(m.group(3)):
        return m.group(0)
    return f"<{m.group(1)}{m.group(2)}>"


_LOOKUP = etree.ElementDefaultClassLookup(
    element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment,
    pi=lxml.html.HtmlProcessingInstruction, entity=lxml.html.HtmlEntity)


def parse_html(text: str) -> etree._Element:
    if "/>" in text:
        text = _SELF_CLOSED_RAW.sub(_open_self_closed, text)
    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True,
                                  no_network=True)
    # Every element is an HtmlElement (trafilatura needs one, and drop_tree), chosen in
    # C: lxml.html's own lookup is a Python call per element proxy, which made every walk
    # over the tree (ours and trafilatura's) twice as slow. Its form-element classes are
    # used nowhere here.
    parser.set_element_class_lookup(_LOOKUP)
    try:
        root = lxml.html.document_fromstring(text.encode("utf-8", "surrogatepass"),
                                             parser=parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        raise ExtractionError(ErrorKind.CORRUPT, f"unparseable HTML: {exc}") from exc
    if root is None:
        raise ExtractionError(ErrorKind.CORRUPT, "HTML holds no element")
    return root


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
    from ..web.region import drop_hidden  # lazily: web.region imports this module

    drop_hidden(root, aria_shown=False)
    if ctx.options.html == "sieve" and ctx.options.topic:
        from ..web.sieve import sieve_document  # lazily: web.sieve imports this module

        sieve_document(root, doc, out, ctx.options.topic)
        return
    if ctx.options.html == "main" or (ctx.options.html == "auto" and src.url):
        from ..web.main import render_main  # lazily: web.main imports this module

        render_main(root, src.url, doc, out)
        return
    render_html_document(root, doc, out)


def render_html_document(root: etree._Element, doc: Document, out: Builder) -> None:
    """Metadata from <head>, text from <body> (or the whole tree for a fragment)."""
    html_metadata(root, doc)
    body = next((c for c in root if _tag(c) == "body"), None)
    walker = HtmlWalker(out, alt_text=True)
    if body is not None:
        walker.render(body)
    else:
        for child in root:
            if _tag(child) != "head":
                walker.node(child)
        walker.flush()


def html_metadata(root: etree._Element, doc: Document) -> None:
    body = next((c for c in root if _tag(c) == "body"), None)
    lang = (root.get("lang") or root.get("{http://www.w3.org/XML/1998/namespace}lang")
            or root.get("xml:lang")
            or (body.get("lang") if body is not None else None))
    if lang and lang.strip():
        doc.metadata.language = lang.strip()
    head = next((c for c in root if _tag(c) == "head"), None)
    if head is None:
        return
    metas: dict[str, str] = {}
    for el in head.iter():
        tag = _tag(el)
        if tag == "title" and doc.title is None:
            title = _SPACES.sub(" ", "".join(el.itertext())).strip()
            doc.title = title or None
        elif tag == "meta":
            key = (el.get("name") or el.get("property") or "").strip().lower()
            value = (el.get("content") or "").strip()
            if key and value:
                metas.setdefault(key, value)
        elif (tag == "link" and "canonical" in (el.get("rel") or "").lower().split()
              and el.get("href")):
            doc.metadata.extra["canonical"] = el.get("href").strip()
    md = doc.metadata
    md.author = md.author or metas.get("author") or metas.get("dc.creator")
    md.keywords = md.keywords or metas.get("keywords")
    description = metas.get("description") or metas.get("og:description")
    if description:
        md.extra["description"] = description
    created = (metas.get("article:published_time") or metas.get("dc.date")
               or metas.get("date"))
    if created and re.match(r"\d{4}-\d{2}", created):
        md.created = created
    modified = metas.get("article:modified_time")
    if modified and re.match(r"\d{4}-\d{2}", modified):
        md.modified = modified
    if doc.title is None:
        doc.title = metas.get("og:title")
    if not md.language and metas.get("content-language"):
        md.language = metas["content-language"]


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
        out.paragraph(_SPACES.sub(" ", "".join(_xml_text(el))))
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
            title = _SPACES.sub(" ", "".join(el.itertext())).strip()
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
            out.heading(_SPACES.sub(" ", _html_to_plain(title)), 2)
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
                    index = _int(cell.get(f"{ss}Index"), 0)
                    if index > len(cells) + 1:
                        cells.extend([""] * (min(index, 16384) - 1 - len(cells)))
                    data = next((d for d in cell if local(d.tag) == "Data"), None)
                    cells.append("" if data is None else "".join(data.itertext()).strip())
                rows.append(cells)
            out.table(rows)
    doc.metadata.page_count = len(names)
    doc.metadata.extra["sheets"] = names
