"""The page's content scope and its boilerplate containers.

Why: every reading of a page (main content, the topic sieve, the full text) first needs
what a reader can see (``drop_hidden``, in ``kernels.html``) and where the content is
(``scope``: the declared main landmark, or the body); the main-content extractor
(``article``) then removes the boilerplate containers, recognised generically: by tag
(nav, header, footer, aside, forms), ARIA role, hidden state, class/id words (cookie,
consent, sidebar, menu, share, related, newsletter, comments, paywall, ...) and link
rails.

Selection runs as XPath in libxml2 and a regular expression over the distinct class/id
strings, not as Python per element: element proxies make a Python walk over a big page
costly.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lxml import etree

from ..kernels.html import HIDDEN_STYLE, text_length

_SKIP_TAGS = ("script", "style", "noscript", "template", "iframe", "svg", "select",
              "button", "form", "nav", "footer", "aside", "header", "dialog", "input",
              "textarea", "canvas", "video", "audio", "object", "embed", "map")
_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search", "dialog",
          "alertdialog", "menu", "menubar")
# Words in class/id that mark boilerplate, as whole '-'/'_'-separated parts.
_BOILER_WORDS = (
    "nav|navbar|navigation|menu|footer|header|masthead|sidebar|side-bar|cookies?|"
    "consent|gdpr|breadcrumbs?|comments?|comment-list|disqus|share|sharing|social|"
    "related|recommended|newsletter|subscribe|popup|modal|promo|advert|ads?|sponsor|skip|"
    "toolbar|pagination|author-bio|tags|signup|login|testimonials?|paywall|regwall")
# Words that page builders also give to content: every Elementor or HubSpot module is a
# "widget", a hero with the page's intro a "banner", a column a "rail". A caller may keep
# such a container when its text is prose (``boilerplate``'s ``keep_weak``).
_WEAK_WORDS = "widget|widgets|banner|rail"
# An id with this many hyphens is an anchor made from a heading, not a component's name.
SLUG_HYPHENS = 3
_BOILER_RE = re.compile(rf"(?:^|[\s_-])(?:{_BOILER_WORDS})(?:$|[\s_-])", re.I)
_WEAK_RE = re.compile(rf"(?:^|[\s_-])(?:{_WEAK_WORDS})(?:$|[\s_-])", re.I)
STRONG, WEAK = 1, 2
_TAGS = etree.XPath("|".join(f".//{t}" for t in _SKIP_TAGS))
# Attribute values come back as strings (no element proxy per element); the marks of the
# few distinct values are computed once, and the element is fetched only when its value
# is marked: a Python pass over every attribute of a big page cost a third of the region.
_CLASSES = etree.XPath(".//@class")
_IDS = etree.XPath(".//@id")
# Roles and what is still hidden (drop_hidden keeps tabs and the like): few elements.
_MARKED = etree.XPath(".//*[@role or @hidden or @aria-hidden or contains(@style, 'none')"
                     " or contains(@style, 'hidden')]")
_KEEP = frozenset({"main", "article", "body"})  # containers a class word never removes
# Frame tags that some pages wrap around everything (see ``boilerplate``'s ``keep_frame``).
_FRAMES = frozenset({"nav", "footer", "aside", "header", "form", "dialog"})


def _word_mark(value: str) -> int:
    """0, ``STRONG`` or ``WEAK``: the boilerplate words in a class or id value."""
    return STRONG if _BOILER_RE.search(value) else WEAK if _WEAK_RE.search(value) else 0


def _marked_by_words(el: etree._Element) -> tuple[list[etree._Element], list[etree._Element]]:
    """The elements under ``el`` whose class or id carries a strong word, and those whose
    carry a weak word only."""
    strong: dict[etree._Element, None] = {}
    weak: dict[etree._Element, None] = {}
    for attr, values in (("class", _CLASSES(el)), ("id", _IDS(el))):
        marks = {}
        for value in set(values):
            if attr == "id" and value.count("-") >= SLUG_HYPHENS:
                continue  # a heading's anchor ("sharing-with-a-single-developer")
            mark = _word_mark(value)
            if mark:
                marks[value] = mark
        if not marks:
            continue
        for value in values:
            marked = marks.get(value)
            if marked:
                (strong if marked == STRONG else weak)[value.getparent()] = None
    return list(strong), [d for d in weak if d not in strong]


def _role_marked(d: etree._Element) -> bool:
    return (d.get("role") or "").strip().lower() in _ROLES


def _still_hidden(d: etree._Element) -> bool:
    """Hidden by attribute, aria-hidden or style (what drop_hidden left: tabs and such)."""
    if d.get("hidden") is not None or (d.get("aria-hidden") or "").strip().lower() == "true":
        return True
    return bool(HIDDEN_STYLE.search(d.get("style") or ""))


MAIN = etree.XPath(".//main|.//*[@role='main']")


# A list whose text is at least this share link text, with RAIL_LINKS links or more, is a
# rail (related items, more-from-us, tag clouds, a menu without nav markup)...
RAIL_LINK_SHARE = 0.8
RAIL_LINKS = 3
# ...unless the rails together hold more than this share of the region: then the links
# are the content (an archive, a sitemap, a listing of titles).
RAIL_MAX_SHARE = 0.5
_LISTS = etree.XPath(".//ul|.//ol")
_LINK_TEXT = etree.XPath(".//a")


def rails(el: etree._Element, total: float) -> list[etree._Element]:
    """The link rails inside ``el`` (see RAIL_*), each with its heading-only wrapper."""
    rails: list[etree._Element] = []
    size = 0.0
    for lst in _LISTS(el):
        links = _LINK_TEXT(lst)
        if len(links) < RAIL_LINKS:
            continue
        length = text_length(lst)
        if not length or sum(text_length(a) for a in links) < RAIL_LINK_SHARE * length:
            continue
        if any(r in lst.iterancestors() for r in rails):
            continue
        size += length
        parent = lst.getparent()
        # "More from us" + the list: the heading goes with it.
        if (parent is not None and parent is not el and parent.tag not in _KEEP
                and text_length(parent) - length < 60):
            lst = parent
        rails.append(lst)
    return rails if size <= RAIL_MAX_SHARE * total else []


def boilerplate(el: etree._Element, keep: Callable[[etree._Element], bool],
                keep_weak: Callable[[etree._Element], bool] | None = None,
                keep_frame: Callable[[etree._Element], bool] | None = None,
                ) -> list[etree._Element]:
    """The boilerplate containers inside ``el``: page frames and controls by tag, ARIA
    roles, class/id words. ``keep`` spares a marked container that is in fact the page;
    ``keep_frame`` (default ``keep``) a frame tag (it is not asked about scripts, styles
    and controls); ``keep_weak`` one marked by a weak word only (``_WEAK_WORDS``)."""
    keep_frame = keep_frame or keep
    drop = [d for d in _TAGS(el) if d.tag not in _FRAMES or not keep_frame(d)]
    strong, weak = _marked_by_words(el)
    drop += [d for d in strong if d.tag not in _KEEP and not keep(d)]
    drop += [d for d in weak if d.tag not in _KEEP and not keep(d)
             and not (keep_weak is not None and keep_weak(d))]
    for d in _MARKED(el):
        if _still_hidden(d) or (_role_marked(d) and d.tag not in _KEEP and not keep(d)):
            drop.append(d)
    return [d for d in drop if d is not el]


def scope(root: etree._Element) -> etree._Element:
    """Where the content is: the declared main landmark (<main>, role=main) when it holds
    a fair part of the text, else the body."""
    body = next((c for c in root if c.tag == "body"), root)
    found = MAIN(body)
    if found:
        best = max(found, key=text_length)
        if text_length(best) > 0.2 * text_length(body):
            return best
    return body
