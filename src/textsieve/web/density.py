"""A text-density / link-density content-region finder over an lxml tree.

Why: a second opinion that does not share trafilatura's blind spots (pages whose content
is not in article-like paragraphs: listings, product pages, docs). Every text block gets a
value (its non-link characters, minus a penalty for link text and a fixed cost per
block, so menus and link lists are negative); the element whose subtree has the largest
total is the content region (a maximum-sum subtree). Boilerplate containers known by
their tag or by class/id words (nav, footer, cookie, comments, ...) are left out first.
One pass over the tree, so it costs a few milliseconds.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

from lxml import etree

_SKIP = frozenset({"script", "style", "noscript", "template", "head", "iframe", "svg",
                   "select", "option", "button", "form", "nav", "footer", "aside",
                   "header", "dialog", "input", "textarea", "canvas", "video", "audio",
                   "object", "embed", "map"})
_BLOCKS = frozenset({"p", "div", "section", "article", "main", "li", "td", "th", "dd",
                     "dt", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote",
                     "figcaption", "caption", "tr", "table", "ul", "ol", "dl", "body",
                     "address", "details", "summary", "center", "span_block"})
_BOILER = re.compile(
    r"(?:^|[\s_-])(?:nav|navbar|navigation|menu|footer|header|masthead|sidebar|"
    r"side-bar|widget|cookies?|consent|gdpr|banner|breadcrumbs?|comments?|"
    r"comment-list|disqus|share|sharing|social|related|recommended|newsletter|"
    r"subscribe|popup|modal|promo|advert|ads?|sponsor|skip|toolbar|pagination|"
    r"author-bio|tags|signup|login)(?:$|[\s_-])", re.I)
_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search",
                    "dialog", "alertdialog", "menu", "menubar"})
_HEAD_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")

BLOCK_COST = 25.0  # characters a block must exceed to count as content
LINK_PENALTY = 2.0  # each link character also removes this many characters of value


@dataclass
class Region:
    elements: list[etree._Element]
    words: int
    link_density: float


def _tag(el: etree._Element) -> str:
    t = el.tag
    return t.lower() if isinstance(t, str) else ""


def _boiler(el: etree._Element, tag: str) -> bool:
    if tag in _SKIP:
        return True
    get = el.get
    if get("hidden") is not None or (get("aria-hidden") or "").lower() == "true":
        return True
    if (get("role") or "").lower() in _ROLES:
        return True
    style = get("style")
    if style and re.search(r"display\s*:\s*none", style, re.I):
        return True
    names = (get("class") or "") + " " + (get("id") or "")
    if names.strip() and tag not in ("body", "html", "main", "article"):
        return _BOILER.search(names) is not None
    return False


def _clen(s: str | None) -> int:
    return len(_SPACE.sub(" ", s).strip()) if s else 0


def best_region(root: etree._Element, link_penalty: float = LINK_PENALTY,
                block_cost: float = BLOCK_COST) -> Region | None:
    """The maximum-value subtree of the page body, or None when no block is content.

    Link text inside a heading counts as text: listings are headline links."""
    body = next((c for c in root if _tag(c) == "body"), root)
    chars: dict[etree._Element, int] = {}
    links: dict[etree._Element, int] = {}
    parent_of: dict[etree._Element, etree._Element | None] = {}

    def walk(el: etree._Element, block: etree._Element, in_link: bool, in_head: bool,
             parent: etree._Element | None) -> None:
        tag = _tag(el)
        if _boiler(el, tag):
            return
        if tag in _BLOCKS or block is None:
            parent_of[el] = parent
            chars.setdefault(el, 0)
            links.setdefault(el, 0)
            parent, block = el, el
        head = in_head or tag in _HEAD_TAGS
        link = (in_link or tag == "a") and not head
        n = _clen(el.text)
        if n:
            chars[block] += n
            if link:
                links[block] += n
        for child in el:
            if isinstance(child.tag, str):
                walk(child, block, link, head, parent)
            n = _clen(child.tail)
            if n:
                chars[block] += n
                if link:
                    links[block] += n

    walk(body, None, False, False, None)  # type: ignore[arg-type]
    total: dict[etree._Element, float] = {}
    words: dict[etree._Element, int] = {}
    linkc: dict[etree._Element, int] = {}
    for blk, c in chars.items():
        if c == 0:
            continue
        lk = links[blk]
        value = (c - lk) - link_penalty * lk - block_cost
        el: etree._Element | None = blk
        while el is not None:
            total[el] = total.get(el, 0.0) + value
            words[el] = words.get(el, 0) + c
            linkc[el] = linkc.get(el, 0) + lk
            el = parent_of.get(el)
    if not total:
        return None
    best = max(total, key=total.__getitem__)
    if total[best] <= 0:
        return None
    chars_best = words[best]
    region = cleaned(best)
    text = " ".join(region.itertext())
    return Region([region], len(_WORD.findall(text)),
                  linkc[best] / chars_best if chars_best else 0.0)


def cleaned(el: etree._Element) -> etree._Element:
    """A copy of ``el`` without the boilerplate containers the scorer left out."""
    el = copy.deepcopy(el)
    drop = [d for d in el.iter() if d is not el and isinstance(d.tag, str) and _boiler(d, _tag(d))]
    for d in drop:
        if d.getparent() is not None:
            d.drop_tree()
    return el


def page_words(root: etree._Element) -> int:
    """Words of the whole body (scripts and styles excluded), the page-size yardstick."""
    body = next((c for c in root if _tag(c) == "body"), root)
    n = 0
    for el in body.iter():
        tag = _tag(el)
        if tag in ("script", "style", "noscript", "template"):
            if el.tail:
                n += len(_WORD.findall(el.tail))
            continue
        if el.text and isinstance(el.tag, str):
            n += len(_WORD.findall(el.text))
        if el.tail:
            n += len(_WORD.findall(el.tail))
    return n


def landmark(root: etree._Element) -> etree._Element:
    """The page's declared main landmark (<main>, role=main) when it holds a fair part of
    the text, else the body: the recall-first candidate, boilerplate containers removed."""
    body = next((c for c in root if _tag(c) == "body"), root)
    found = body.xpath(".//main|.//*[@role='main']")
    if found:
        total = len(_WORD.findall(" ".join(body.itertext()))) or 1
        best = max(found, key=lambda e: len(_WORD.findall(" ".join(e.itertext()))))
        if len(_WORD.findall(" ".join(best.itertext()))) > 0.2 * total:
            return cleaned(best)
    return cleaned(body)
