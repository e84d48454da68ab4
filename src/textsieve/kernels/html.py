"""The HTML tree: decoding and parsing a page, what a browser hides, and the walk that
turns a tree into text blocks.

Every reading of HTML starts here: the HTML extractor ("all visible text"), main-content
extraction and the topic sieve (``web``), XHTML inside feeds and EPUB. ``parse_html``
reads a page the way a browser would (a ``<script/>`` followed by code is an open script);
``hidden`` and ``skipped`` say which elements a reader never sees; ``HtmlWalker`` turns an
lxml element into Builder blocks (headings, paragraphs, nested lists, tables, code,
quotes) and takes any element, so a caller can hand it just the subtree it chose. Tags are
compared by local name (``tag``), so the same walker reads XHTML parsed as XML.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import lxml.html
from lxml import etree

from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder, number_text
from ..textcodec import bom_encoding, decode, normalize_charset
from .xml import local

logger = logging.getLogger(__name__)

# -- HTML -------------------------------------------------------------------------------
SKIP = frozenset({"script", "style", "noscript", "template", "head", "iframe", "object",
                   "embed", "canvas", "select", "datalist", "svg", "map", "audio", "video",
                   "source", "track", "param", "input", "button", "textarea", "dialog"})
BLOCK = frozenset({"p", "div", "section", "article", "header", "footer", "main", "nav",
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
HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
SPACES = re.compile(r"[ \t\r\n\f]+")
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


def tag_name(el: etree._Element) -> str:
    """Lower-case local name ('' for comments and processing instructions)."""
    return local(el.tag).lower()


def hidden(el: etree._Element) -> bool:
    get = el.get
    if get("hidden") is not None or get("aria-hidden", "").lower() == "true":
        return True
    style = get("style")
    return bool(style) and HIDDEN_STYLE.search(style) is not None


def skipped(el: etree._Element, tag: str) -> bool:
    return not tag or tag in SKIP or hidden(el)


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
            self.buf.append(SPACES.sub(" ", el.text))
        for child in el:
            self.node(child)
            if child.tail:
                self.buf.append(SPACES.sub(" ", child.tail))

    def node(self, el: etree._Element) -> None:
        tag = tag_name(el)
        if skipped(el, tag):
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
        elif tag in BLOCK:
            self.flush()
            self.children(el)
            self.flush()
        else:
            self.children(el)

    # -- structures ----------------------------------------------------------------------
    def list_(self, el: etree._Element, level: int) -> None:
        ordered = tag_name(el) == "ol"
        number = positive_int(el.get("start"), 1)
        style = _OL_TYPES.get(el.get("type") or "1", "decimal")
        for li in el:
            tag = tag_name(li)
            if skipped(li, tag):
                continue
            if tag in _LISTS:  # a list directly inside a list (invalid but common)
                self.list_(li, level + 1)
                continue
            nested = [c for c in li.iter() if c is not li and tag_name(c) in _LISTS
                      and _outer_list(c, li)]
            text = inline_text(li, exclude=nested)
            if text.strip():
                if ordered:
                    number = positive_int(li.get("value"), number)  # <li value=7> renumbers
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
            cells = [c for c in tr if tag_name(c) in ("td", "th") and not hidden(c)]
            row: list[str] = []
            for c in cells:
                if not nested and any(tag_name(x) in ("table", "pre") for x in c.iter()):
                    nested = True
                row.append(inline_text(c))
                row.extend([""] * (min(positive_int(c.get("colspan"), 1), 50) - 1))
            grid.append(row)
        width = max((len(r) for r in grid), default=0)
        if nested or width < 2:
            # A layout table (nested tables, one column): its cells are page sections.
            for tr in rows:
                for c in tr:
                    if not skipped(c, tag_name(c)):
                        self.flush()
                        self.children(c)
                        self.flush()
            for cap in el:
                if tag_name(cap) == "caption":
                    self.out.paragraph(inline_text(cap))
            return
        for cap in el:
            if tag_name(cap) == "caption":
                self.out.paragraph(inline_text(cap))
        # Markdown needs a header row: without <th> the first row serves (as browsers
        # and people read it); an empty one would only add noise.
        self.out.table(grid, header=True)


def _outer_list(lst: etree._Element, li: etree._Element) -> bool:
    """True if ``lst`` is not inside another list that is itself inside ``li``."""
    p = lst.getparent()
    while p is not None and p is not li:
        if tag_name(p) in _LISTS:
            return False
        p = p.getparent()
    return True


def _table_rows(table: etree._Element) -> Iterator[etree._Element]:
    for child in table:
        tag = tag_name(child)
        if tag == "tr" and not hidden(child):
            yield child
        elif tag in ("thead", "tbody", "tfoot") and not hidden(child):
            yield from (tr for tr in child if tag_name(tr) == "tr" and not hidden(tr))


def inline_text(el: etree._Element, *, block_sep: str = " ",
                exclude: list[etree._Element] | None = None) -> str:
    """Visible text of a subtree as one run: <br> is a line break, blocks are separated
    by ``block_sep`` (a space in headings and cells, a line break in quotes)."""
    parts: list[str] = []
    skip = set(exclude or ())

    def walk(e: etree._Element) -> None:
        if e.text:
            parts.append(SPACES.sub(" ", e.text))
        for c in e:
            tag = tag_name(c)
            if c not in skip and not skipped(c, tag):
                if tag == "br":
                    parts.append("\n")
                elif tag in BLOCK:
                    parts.append(block_sep)
                    walk(c)
                    parts.append(block_sep)
                else:
                    walk(c)
            if c.tail:
                parts.append(SPACES.sub(" ", c.tail))

    walk(el)
    text = "".join(parts)
    if block_sep == "\n":
        text = re.sub(r" *\n[\n ]*", "\n", text)
    return text.strip()


def _pre_text(el: etree._Element) -> str:
    parts: list[str] = []
    for node in el.iter():
        tag = tag_name(node)
        if node is not el and skipped(node, tag):
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


def positive_int(v: str | None, default: int) -> int:
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


# Stray characters before the doctype or <html> (a quote a template left, a BOM read as
# text): a browser keeps the <html> element's attributes and the head after them, but
# libxml2 then starts the body at once, so the page's language, title and meta tags were
# lost. A short run of punctuation there is dropped; anything with a letter or digit is
# text the page shows, and stays.
_STRAY_LEAD = re.compile(r"[^<\w]{1,64}(?=\s*<(?:!doctype|html)[\s>])", re.IGNORECASE)


# Elements whose content no reader sees (controls, inert templates, fallbacks) and parts
# of a page's own content: one inside the other means the parser mis-nested the page.
_SWALLOWERS = frozenset({"button", "select", "textarea", "template", "noscript", "dialog",
                         "datalist", "object", "canvas", "map", "audio", "video"})
_PAGE_PARTS = ("main", "article", "h1")


def _misnested(root: etree._Element) -> bool:
    """Whether libxml2 left the page inside an element no reader renders. libxml2 lets an
    end tag close only what its "priority" may close: ``<button><div></button>`` leaves
    the button open, and the rest of the page (its <main>, its <h1>) inside a button,
    which we, trafilatura and every reader skip. A browser's HTML5 parser closes it
    there. One pass over a few tags; true for one web page in a few hundred."""
    return any(a.tag in _SWALLOWERS for el in root.iter(*_PAGE_PARTS)
               for a in el.iterancestors())


def _parse_lxml(text: str) -> etree._Element:
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


# Void elements libxml2 does not know as such: Lexbor writes them as ``<embed src=x>``,
# which libxml2 keeps open, swallowing the paragraph after it.
_VOID_UNKNOWN = re.compile(r"<(embed|source|track|wbr|keygen|bgsound)\b((?:\"[^\"]*\"|[^>\"])*)>",
                           re.IGNORECASE)
# <noscript> as a browser that runs scripts reads it: raw text, which written out is
# markup again. Its content may be the page for readers without scripts (a forum's
# posts), so it stays, but an <iframe> left open in it (a tag manager's) is closed:
# libxml2 would take the rest of the page as the iframe's text.
_NOSCRIPT = re.compile(r"<noscript\b[^>]*>.*?</noscript\s*>", re.IGNORECASE | re.DOTALL)
_OPEN_IFRAME = re.compile(r"(<iframe\b(?:\"[^\"]*\"|'[^']*'|[^>\"'])*>)(?!\s*</iframe)",
                          re.IGNORECASE)


def _close_iframes(m: re.Match[str]) -> str:
    return _OPEN_IFRAME.sub(r"\1</iframe>", m.group(0))
# Markup after the first </html> (a template that closed the page early, the article
# after it): browsers put it in the body, libxml2 drops it. Scripts and tracking pixels
# there are common and carry no text, so they do not count.
_HTML_END = re.compile(r"</html\s*>", re.IGNORECASE)
_AFTER_END = re.compile(r"<(?!(?:script|style|noscript|link|meta|iframe|img)\b)[a-z]",
                        re.IGNORECASE)


def _after_end(text: str) -> bool:
    end = _HTML_END.search(text)
    return end is not None and _AFTER_END.search(text, end.end()) is not None


def _html5(text: str) -> str | None:
    """The page as a browser's HTML5 parser (Lexbor) builds it, written out with every
    element closed where it ends, so libxml2 reads the same tree; None if Lexbor cannot
    read it (the libxml2 tree is kept then). As a browser that runs scripts: <noscript>
    is raw text (parsed as markup, a tag manager's ``<iframe>`` in it opens and takes the
    rest of the page as its text), written out with its iframes closed; the void elements
    libxml2 does not know are written self-closed."""
    from selectolax.lexbor import LexborHTMLParser  # only for the rare mis-nested page

    try:
        # A str: the page was decoded once (decode_html); bytes Lexbor would sniff again.
        clean = text.encode("utf-8", "replace").decode("utf-8")  # no lone surrogates
        out = LexborHTMLParser(clean, scripting=True).html
    except Exception:  # a second opinion: its failure changes nothing
        logger.debug("lexbor could not parse the page", exc_info=True)
        return None
    if not out:
        return None
    out = _NOSCRIPT.sub(_close_iframes, out)  # its raw text is markup to libxml2
    return _VOID_UNKNOWN.sub(lambda m: f"<{m.group(1)}{m.group(2).rstrip('/')}/>", out)


def parse_html(text: str) -> etree._Element:
    """The page's tree: libxml2's (fast, hardened), or, where libxml2 would lose part of
    the page (left inside an element no reader renders, or after an early </html>), the
    tree a browser's HTML5 parser builds."""
    if text[:1] != "<":
        lead = text.lstrip()
        stray = _STRAY_LEAD.match(lead)
        if stray is not None:
            text = lead[stray.end():]
    if "/>" in text:
        text = _SELF_CLOSED_RAW.sub(_open_self_closed, text)
    root = _parse_lxml(text)
    if _misnested(root) or _after_end(text):
        fixed = _html5(text)
        if fixed is not None:
            try:
                return _parse_lxml(fixed)
            except ExtractionError:
                pass
    return root


def render_html_document(root: etree._Element, doc: Document, out: Builder) -> None:
    """Metadata from <head>, text from <body> (or the whole tree for a fragment)."""
    html_metadata(root, doc)
    body = next((c for c in root if tag_name(c) == "body"), None)
    walker = HtmlWalker(out, alt_text=True)
    if body is not None:
        walker.render(body)
    else:
        for child in root:
            if tag_name(child) != "head":
                walker.node(child)
        walker.flush()


def html_metadata(root: etree._Element, doc: Document) -> None:
    body = next((c for c in root if tag_name(c) == "body"), None)
    lang = (root.get("lang") or root.get("{http://www.w3.org/XML/1998/namespace}lang")
            or root.get("xml:lang")
            or (body.get("lang") if body is not None else None))
    if lang and lang.strip():
        doc.metadata.language = lang.strip()
    head = next((c for c in root if tag_name(c) == "head"), None)
    if head is None:
        return
    metas: dict[str, str] = {}
    for el in head.iter():
        tag = tag_name(el)
        if tag == "title" and doc.title is None:
            title = SPACES.sub(" ", "".join(el.itertext())).strip()
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


# -- what a browser hides, in a whole tree ----------------------------------------------
text_length = etree.XPath("string-length(normalize-space(.))")
# Elements a browser does not show, as HtmlWalker judges them (hidden attribute,
# aria-hidden, display:none, visibility:hidden); the XPath preselects cheaply.
_MAYBE_HIDDEN = etree.XPath(
    ".//*[@hidden or @aria-hidden or contains(@style, 'none') or contains(@style, 'hidden')]")


# Hidden until a click: tab panels, accordions, "read more" boxes. A reader gets there,
# and people who judge main content count it (product descriptions and specifications
# sit in such tabs), so these are shown rather than dropped; so is aria-hidden alone,
# which hides from screen readers only (a browser shows it).
_REVEALABLE = re.compile(
    r"(?:^|[\s_-])(?:tabs?|tab-?pane|tab-?panel|tab-?content|panel|accordion|collapse|"
    r"collapsible|expand|expandable|toggle|read-?more|more)(?:$|[\s_-])", re.I)

# A hidden element with less than this share of its text outside it is the whole page
# behind a loading guard, not hidden content.
GUARD_OUTSIDE = 0.05
# React's streamed server rendering sends the page's content in <div hidden id="S:0">
# blocks that its script moves into place: the content a reader sees.
_STREAMED = re.compile(r"S:(\d+)$")


def _move_to_placeholder(root: etree._Element, el: etree._Element, number: str) -> None:
    """Put a streamed block where React would: in place of its <template id="B:N">."""
    slot = next((t for t in root.iter("template") if t.get("id") == f"B:{number}"), None)
    parent, host = el.getparent(), slot.getparent() if slot is not None else None
    if slot is None or host is None or parent is None:
        return
    if el.tail:  # the text after the block stays where it was
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    el.tail = slot.tail
    host.replace(slot, el)


def drop_hidden(root: etree._Element, aria_shown: bool = True, drop: bool = True) -> None:
    """Remove what the renderer would not show (tails are kept), before any candidate is
    counted: a paywall's display:none copy of the story must not win on word count and
    then render to nothing, nor reach trafilatura, whose output loses the style. Content
    behind a tab or an accordion is made visible instead, so every count still matches
    what is rendered. ``aria_shown`` False leaves aria-hidden alone to the renderer,
    which skips it (``--html full`` and the sieve keep their icon-free text). ``drop``
    False leaves the other hidden parts in the tree, still hidden (the renderer skips
    them): the sieve may look at them again (``show_hidden``)."""
    page = None
    for el in _MAYBE_HIDDEN(root):
        if el.getparent() is None or el.tag in ("html", "body") or not hidden(el):
            continue
        if page is None:
            page = _visible_length(root)
        # string-length counts scripts too: an upper bound, checked first (cheap)
        if (page and text_length(el) >= 0.5 * page
                and page - (inside := _visible_length(el)) < GUARD_OUTSIDE * inside):
            # The whole page hidden until its styles load (Next.js and others): a
            # browser shows it a moment later.
            _unhide(el)
            continue
        aria_only = el.get("hidden") is None and not HIDDEN_STYLE.search(el.get("style") or "")
        if aria_only and not aria_shown:
            continue
        streamed = _STREAMED.match(el.get("id") or "")
        if streamed:
            _move_to_placeholder(root, el, streamed.group(1))
        if (aria_only or streamed or el.get("role") == "tabpanel"
                or _REVEALABLE.search(f"{el.get('class') or ''} {el.get('id') or ''}")):
            _unhide(el)
        elif drop:
            el.drop_tree()


_CODE = etree.XPath(".//script|.//style")


def _visible_length(el: etree._Element) -> int:
    """About the characters of text under ``el``, scripts and styles left out (they can
    outweigh the text: a framework's page data); XPath sums, no walk in Python."""
    return int(text_length(el)) - sum(int(text_length(c)) for c in _CODE(el))


def show_hidden(root: etree._Element) -> bool:
    """Show what the page hides with the ``hidden`` attribute or a display:none /
    visibility:hidden style (aria-hidden stays: icons and decoration); whether there
    was any. For a second look when the visible page holds nothing of what is sought."""
    shown = False
    for el in _MAYBE_HIDDEN(root):
        if el.get("hidden") is not None or HIDDEN_STYLE.search(el.get("style") or ""):
            el.attrib.pop("hidden", None)
            el.attrib.pop("style", None)
            shown = True
    return shown


def _unhide(el: etree._Element) -> None:
    for attr in ("hidden", "aria-hidden", "style"):
        el.attrib.pop(attr, None)
