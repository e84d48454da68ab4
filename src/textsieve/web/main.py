"""Main content of a web page: the article, post, product or listing, without navigation,
ads, cookie banners, comments and footers; plus the page's metadata.

The page is parsed once. What a browser hides is removed first, so no count includes it.
Then textsieve's own extractor (``article``: the container of the page's prose, cleaned of
the chrome articles carry) runs on a copy of the content scope. When it is confident (one
container with the page's prose, few links, not emptied by its cleaning, not a product
page), its article is the answer. Otherwise trafilatura gives a second opinion: its main
extractor without the readability/jusText fallbacks (``fast``), on the same parsed tree,
and its body is taken unless it is short next to ours (``SHORT_RATIO``), where it missed
content (a listing, a product grid, a service page) or kept too little of a long page.
When both are much shorter than the content scope without its boilerplate, both missed
the page's content (``REGION_RATIO``: a listing's cards) and that pruned scope is taken.
The chosen candidate is rendered on trial: if it renders to much less than it counted,
the next is taken. Either is rendered by ``HtmlWalker`` into the ``Builder``, so
headings, lists, tables and code keep their structure.
"""

from __future__ import annotations

import copy
import functools
import logging
import re
from collections.abc import Callable
from typing import Any

import lxml.html
from lxml import etree

from ..kernels.html import HtmlWalker, decode_html, drop_hidden, html_metadata, parse_html
from ..model import Document
from ..render import Builder
from . import region as content_region
from .article import Article, article, confident, prune
from .structured import page_kind

_WORD = re.compile(r"\w+")
_log = logging.getLogger(__name__)

# trafilatura's output dialect -> HTML, so HtmlWalker renders it like any page.
_TO_HTML = {"list": "ul", "item": "li", "row": "tr", "cell": "td", "quote": "blockquote",
            "lb": "br", "hi": "span", "ref": "a", "del": "s", "graphic": "img",
            "div": "div", "doc": "div", "main": "div", "comments": "div"}


# When trafilatura's text has fewer words than this share of our article (and of the
# page), it missed content: ours is taken. Tuned on the tune sites of both dev sets
# (bench/bench_web.py), checked on the held-out sites.
SHORT_RATIO = 0.3
# When both are much shorter than the page's pruned content scope (``article.prune``:
# the scope without its boilerplate containers and rails), both missed content: a
# listing's cards, a category grid, a thread's posts. The scope is then taken. On a page
# that declares itself a product (``structured.page_kind``) the scope's extra words are
# mostly specifications and reviews: it must be longer still. Tuned on the tune sites of
# WCXB dev (bench/bench_web.py), checked on its holdout sites and articles-dev: higher
# shares gain recall on listings but take the boxes around short articles.
REGION_RATIO = 0.2
REGION_RATIO_PRODUCT = 0.1


def _trafilatura_body(tree: etree._Element, url: str | None) -> etree._Element | None:
    """trafilatura's main-content tree for ``tree``, through its public API.

    Its main extractor with its recall retry, without the readability and jusText
    comparison (``fast``): it is asked only where our extractor is unsure, and there our
    article is the recall candidate the fallbacks would have been. ``bare_extraction``
    works on a copy, so ``tree`` is left whole, and an upgrade of trafilatura cannot
    change a private call's contract.
    """
    import trafilatura

    try:
        doc = trafilatura.bare_extraction(tree, url=url, fast=True, include_comments=False,
                                          include_tables=True, include_formatting=False,
                                          output_format="txt", with_metadata=False)
    except Exception:  # trafilatura raises on odd trees; our article still answers
        return None
    return getattr(doc, "body", None) if doc is not None else None


def _as_html(body: etree._Element) -> etree._Element:
    """trafilatura's output dialect renamed to HTML, so HtmlWalker renders it."""
    for el in body.iter():
        tag = el.tag
        if not isinstance(tag, str):
            continue
        if tag == "head":
            rend = el.get("rend") or "h2"
            el.tag = rend if re.fullmatch(r"h[1-6]", rend) else "h2"
        elif tag == "list":
            el.tag = "ol" if (el.get("rend") or "").startswith("o") else "ul"
        elif tag == "cell":
            el.tag = "th" if el.get("role") == "head" else "td"
        elif tag == "code":
            parent = el.getparent()
            if parent is not None and parent.tag in ("p", "cell", "item", "head"):
                continue  # inline code stays inline
            el.tag = "pre"
        else:
            el.tag = _TO_HTML.get(tag, tag)
    # Its first heading is the page's headline when it is an h1: the title is metadata.
    first = body[0] if len(body) else None
    if first is not None and first.tag == "h1" and not (body.text or "").strip():
        body.text = (body.text or "") + (first.tail or "")
        body.remove(first)
    # trafilatura builds plain etree elements; HtmlWalker expects lxml.html ones.
    body.tag = "div"
    return lxml.html.fragment_fromstring(etree.tostring(body, encoding="unicode"))


def _words(el: etree._Element | None) -> int:
    return len(_WORD.findall(" ".join(el.itertext()))) if el is not None else 0


# A candidate that renders to fewer words than this share of what it was counted with
# lost its content somewhere between the count and the renderer: the next one is taken.
RENDERED_SHARE = 0.5


def _render(els: list[etree._Element], out: Builder) -> None:
    walker = HtmlWalker(out)
    for el in els:
        walker.render(el)


def _render_best(candidates: list[Callable[[], etree._Element | None]], out: Builder) -> None:
    """Render the first candidate that renders to about what it was counted with; none
    does: the one that rendered most. Never empty while any candidate has text.
    Candidates are built on demand: the second one is rarely needed."""
    best: Builder | None = None
    best_words = -1
    for make in candidates:
        el = make()
        if el is None:
            continue
        trial = Builder()
        _render([el], trial)
        got = len(_WORD.findall(trial.text()))
        if got and got >= RENDERED_SHARE * _words(el):
            best = trial
            break
        if got > best_words:
            best, best_words = trial, got
    if best is not None:
        out.extend(best)


# All the text of the page: only scripts and styles, which no candidate renders, are left
# out (a forum may sit whole in <noscript>, which both candidates keep).
# Script and style text is only ever a direct child (the HTML parser reads it raw), so
# ``parent::`` is enough, and plain strings spare a proxy object per text node.
_PAGE_TEXT = etree.XPath("//body//text()[not(parent::script or parent::style)]",
                         smart_strings=False)
# Code no candidate renders: scripts but JSON data (JSON-LD is read by trafilatura's
# fallbacks and forum test) and styles. Emptied before trafilatura, which copies the
# tree four times and measures text several times: a framework's page bundle can outweigh
# the page's text many times over, and every copy and count carried it.
_CODE_TEXT = etree.XPath(
    "//script[not(contains(translate(@type, 'JSON', 'json'), 'json'))][text()]|//style[text()]")


def _empty_code(root: etree._Element) -> None:
    """Drop the text of scripts and styles (see ``_CODE_TEXT``); the elements stay, so
    trafilatura sees the same tree shape, tails included."""
    for el in _CODE_TEXT(root):
        el.text = None


def _select(root: etree._Element, url: str | None,
            ) -> list[Callable[[], etree._Element | None]]:
    """The candidates, best first (see the module docstring).

    Our extractor prunes in place, so it works on a copy of the content scope (made in
    libxml2, far cheaper than a parse); the tree stays whole for trafilatura, which
    copies it once more itself."""
    kind = page_kind(root)
    _empty_code(root)
    drop_hidden(root)
    try:
        art: Article | None = article(copy.deepcopy(content_region.scope(root)))
    except Exception:  # a bug on one odd page must not lose it: trafilatura still answers
        _log.warning("own main-content extraction failed; trafilatura alone", exc_info=True)
        art = None

    def ours() -> etree._Element | None:
        return art.element if art is not None else None

    if art is not None and confident(art, kind):
        return [ours, functools.cache(lambda: _html_body(_trafilatura_body(root, url)))]
    traf = _trafilatura_body(root, url)
    if traf is None:
        return [ours]
    words = _words(traf)
    body = functools.cache(lambda: _as_html(traf))
    texts = _PAGE_TEXT(root)
    page_words = len(_WORD.findall(" ".join(texts)))
    if page_words and words >= SHORT_RATIO * page_words:
        return [body, ours]
    own = _words(art.element) if art is not None else 0
    # The pruned scope's words, from its characters (counted by ``article``) at the
    # page's characters per word: the scope is built only when it is taken.
    page_chars = sum(len(t.strip()) for t in texts)
    scope_words = (art.scope_chars * page_words / page_chars
                   if art is not None and page_chars else 0)
    ratio = REGION_RATIO_PRODUCT if kind == "product" else REGION_RATIO
    if max(words, own) < ratio * scope_words:
        return [lambda: _pruned_scope(root), body, ours]
    if words < SHORT_RATIO * own:
        return [ours, body]
    return [body, ours]


def _pruned_scope(root: etree._Element) -> etree._Element:
    """A copy of the page's content scope without its boilerplate (``article.prune``)."""
    scope = copy.deepcopy(content_region.scope(root))
    try:
        prune(scope)
    except Exception:  # the unpruned scope is still a candidate
        _log.warning("pruning the content scope failed", exc_info=True)
    return scope


def _html_body(body: etree._Element | None) -> etree._Element | None:
    return _as_html(body) if body is not None else None


def _tree(html: str | bytes) -> etree._Element:
    if isinstance(html, bytes):
        html, _enc = decode_html(html)
    return parse_html(html.replace("\x00", ""))


def main_text(html: str, url: str | None = None) -> str:
    """The plain text of the page's main content (the callable web_score.py measures)."""
    if not html or not html.strip():
        return ""
    out = Builder()
    _render_best(_select(_tree(html), url), out)
    return out.text()


def extract_main(html: bytes | str, url: str | None, out: Builder, doc: Document) -> None:
    """Render the main content into ``out`` and fill ``doc.title`` and ``doc.metadata``."""
    if isinstance(html, bytes):
        text, enc = decode_html(html)
        doc.metadata.encoding = enc
    else:
        text = html
    if not text.strip():
        return
    render_main(_tree(text), url, doc, out)


def render_main(root: etree._Element, url: str | None, doc: Document, out: Builder) -> None:
    """``extract_main`` on an already parsed page (the HTML extractor's entry point)."""
    page_metadata(root, url, doc)
    _render_best(_select(root, url), out)


def page_metadata(root: etree._Element, url: str | None, doc: Document) -> None:
    """Title, author, publish date, site name, canonical URL, description, language.

    The plain <head> reader first (language, canonical link, description), then
    trafilatura's reader (JSON-LD, OpenGraph, meta tags, the h1; htmldate for the date)
    wins where it found something. htmldate runs without its extensive search: guessing
    from URLs, copyright lines and stray dates finds a date on pages that show none (on
    the odd WCXB pages date accuracy goes from 0.46 to 0.70 without it)."""
    html_metadata(root, doc)
    md = doc.metadata
    canonical = md.extra.pop("canonical", None)
    if canonical:
        md.extra["canonical_url"] = canonical
    info: Any = None
    try:
        from trafilatura.metadata import extract_metadata

        info = extract_metadata(root, default_url=url, extensive=False)
    except Exception:  # a metadata failure must not lose the page's text
        info = None
    if info is None:
        return
    doc.title = info.title or doc.title
    md.author = info.author or md.author
    md.created = info.date or md.created
    for key, value in (("sitename", info.sitename), ("canonical_url", info.url),
                       ("description", info.description)):
        if value:
            md.extra[key] = value
    if doc.title:
        doc.title = strip_site_name(doc.title, md.extra.get("sitename"))
    next_page = _next_page(root, url, md.extra.get("canonical_url"))
    if next_page:
        md.extra["next_page"] = next_page


# A multi-page article (or thread) names its next page: <link rel="next"> in the head, or
# the pager's <a rel="next">. Kept as metadata (the fetcher may follow it); the pager
# itself is chrome. Blogs put rel="next" on the link to the next *post* as well, so a
# link counts only when it differs from the page's own URL by a page number alone.
_NEXT = etree.XPath("//link[contains(concat(' ', normalize-space(@rel), ' '), ' next ')]/@href"
                    "|//a[contains(concat(' ', normalize-space(@rel), ' '), ' next ')]/@href",
                    smart_strings=False)
# The page number of a URL: "?page=2", "&p=2", "/page/2/", "/page-2", "/2/" at the end.
_PAGE_PART = re.compile(
    r"(?:(?<=[?&;])(?:page|paged|p|pg|pn|pagina|seite|sayfa|strona|start|offset)=\d{1,5}[&;]?"
    r"|/(?:page|pages|seite|pagina|strona)?[/_-]?\d{1,4}/?$"
    r"|[_-](?:page|seite|pagina)?-?\d{1,3}(?=\.html?$))", re.I)


def _without_page(url: str) -> str:
    """``url`` without its page number, scheme, "www." and trailing "?", "&" or "/"."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.netloc.lower().removeprefix("www.")
    rest = parts.path + (f"?{parts.query}" if parts.query else "")
    return host + _PAGE_PART.sub("", rest).rstrip("/?&;")


def _next_page(root: etree._Element, base: str | None,
               canonical: str | None = None) -> str | None:
    """The URL of the document's next page, absolute when the page's URL is known: a
    rel="next" link to the same URL but for the page number (see ``_NEXT``)."""
    from urllib.parse import urljoin

    own = {_without_page(u) for u in (base, canonical) if u}
    for href in _NEXT(root):
        href = href.strip()
        if not href or href.startswith(("#", "javascript:")):
            continue
        target = urljoin(base or canonical or "", href)
        if not _PAGE_PART.search(target.split("#")[0]):
            continue  # the next post, not the next page
        if own and "//" in target and _without_page(target) not in own:
            continue
        return target
    return None


_TITLE_SEP = re.compile(r"\s+[|\-\u2013\u2014\u00b7\u2022\u00bb]\s+")


def strip_site_name(title: str, sitename: str | None) -> str:
    """"Headline | Site" -> "Headline": the headline is what a reader calls the title.

    A trailing part after a separator goes when it names the site or is short (four words
    at most); a leading part goes when it is the site name. Colons are not separators
    ("Python: a guide" is one title)."""
    parts = _TITLE_SEP.split(title)
    if len(parts) < 2:
        return title
    site = (sitename or "").strip().casefold()
    if site and parts[0].strip().casefold() == site:
        return title[_TITLE_SEP.search(title).end():].strip()  # type: ignore[union-attr]
    last = parts[-1].strip()
    if len(last.split()) <= 4 or (site and site in last.casefold()):
        seps = list(_TITLE_SEP.finditer(title))
        head = title[: seps[-1].start()].strip()
        if head:
            return head
    return title
