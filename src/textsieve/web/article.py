"""textsieve's own main-content extractor: the container of the page's prose, cleaned of
the chrome that articles carry inside it.

Why: trafilatura's cascade (its extractor, then readability and jusText, then a recall
retry) costs several passes over several copies of the tree, and on most article pages a
single measure finds the same text. We measure once, on the tree the HTML extractor parsed:

1. Every text node is credited to its *block* (the nearest ancestor that is not an inline
   tag), as plain characters, link characters and punctuation. A block is *prose* when it
   has some length, few links and sentences (``PROSE_*``). The counts are summed up the
   ancestor chain, so every element knows its own; what is removed later is subtracted.
2. The boilerplate containers go (``region.boilerplate``: frames, roles, class/id words,
   link rails), unless one holds most of the page (an unclosed <header>) or, named only
   by a word page builders give to content ("widget"), is prose.
3. The *container* is the deepest element holding ``CONTAINER_SHARE`` of the page's prose,
   never a table or a list alone, with a standfirst beside it; so an unmarked ticker,
   "watch live" bar or category menu outside the article is left out.
4. Inside it, what a reader skips goes: the headline and the byline/dateline (the title
   and date are metadata), credits, boxes that are mostly links (related stories, tag
   clouds, "more from"), teaser cards (repeated siblings, each a linked headline and a
   line), gallery counters, short blocks of boilerplate vocabulary in several languages
   (share, advertisement, newsletter, paywall, "read more", "live") and the box such a
   heading announces, a comment thread under its heading.

``confident`` says whether the page is what this extractor is made for (prose in one
container, few links, not mostly teasers, not a product page); ``main.py`` asks
trafilatura only when it is not. The measures are XPath in libxml2 and one pass over the
text nodes; no element is visited twice in Python.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from lxml import etree

from ..kernels.html import text_length
from . import region

# Tags that do not start a block: text inside them belongs to the enclosing block.
_INLINE = frozenset((
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn",
    "em", "font", "i", "ins", "kbd", "label", "mark", "nobr", "q", "s", "samp", "small",
    "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr"))
# Where text can sit: the body's text nodes, no script or style (already emptied, but a
# page may carry them where the emptying did not reach: inside <noscript> text).
_IN_LINK = etree.XPath(".//a//*")
_TEXTS = etree.XPath(".//text()[normalize-space()][not(parent::script or parent::style)]")

# A block is prose when it has at least PROSE_CHARS characters and at most PROSE_LINKS of
# them are link text (a teaser headline, a menu entry, a tag are links).
PROSE_CHARS = 25
PROSE_LINKS = 0.34
# ...and has sentences: a punctuation mark per PROSE_PUNCT characters at least (a block of
# place names or keywords for search engines has none).
PROSE_PUNCT = 150
_NO_PUNCT = str.maketrans("", "", ".,;:!?\u3002\uff0c\u3001\uff01\uff1f\u061f\u060c\u0964\u2026")
# The container: the deepest element with at least this share of the page's prose.
CONTAINER_SHARE = 0.7
# A box inside the container that is at least LINK_BOX of link text, with at least
# LINK_BOX_BLOCKS blocks, and under LINK_BOX_MAX of the container's characters, is a
# related-stories box, a tag cloud or a "more from" list.
LINK_BOX = 0.5
LINK_BOX_BLOCKS = 2
LINK_BOX_MAX = 0.3
# A sibling paragraph of the container joins it with at least this much prose.
LEDE_CHARS = 50
# Teaser cards (``_teasers``): at least TEASERS siblings of at most TEASER_CHARS each,
# at least TEASER_LINKS of it link text.
TEASERS = 3
TEASER_CHARS = 800
TEASER_LINKS = 0.1
TEASERS_MAX = 0.5
_DIGITS = re.compile(r"\d+")
_CARDS = frozenset(("div", "article", "section", "li"))
# A boilerplate-marked container with more than this share of the page's text, or a
# frame tag with more than this share of its prose, is kept.
KEEP_SHARE = 0.5
FRAME_LINKS = 0.3
# A container marked by a weak word only is kept when this share of its text is prose.
WEAK_PROSE = 0.5

# Class/id words of the parts of an article's frame a reader does not read as text: the
# byline, the dateline, the article's meta line, tags and categories, image credits.
_FRAME_WORDS = re.compile(
    r"(?:^|[\s_-])(?:by-?line|bylines|dateline|author|authors|author-name|timestamp|"
    r"published|pubdate|posted-on|post-meta|entry-meta|article-meta|meta|date|time|"
    r"tags?|categories|category|kicker|eyebrow|credits?|print|rating)(?:$|[\s_-])", re.I)
FRAME_MAX_CHARS = 160

# Short blocks a reader skips, in several languages: calls to share, follow, subscribe or
# sign up; advertising labels; "read more"/"related" pointers; copyright lines.
_BOILER_PHRASES = re.compile(
    r"^\W*(?:"
    r"advertisements?|sponsored(?: content)?|anzeige|werbung|publicit[ée]|publicidad|"
    r"pubblicit[àa]|reclame|advertentie|reklama|annons|mainos|"
    r"share(?: this| on| via| the)?\b.*|tweet\b.*|pin it|email this|print this|"
    r"follow us\b.*|subscribe\b.*|sign up\b.*|newsletter\b.*|get the .{0,40}newsletter.*|"
    r"read more\b.*|see more\b.*|show more|load more|more stories|more from\b.*|"
    r"related(?: stories| articles| posts| content| coverage| reading| links)?\b.*|"
    r"recommended(?: for you| stories| articles)?|you may also like.*|"
    r"you might also like.*|most (?:read|popular|viewed)\b.*|trending\b.*|"
    r"also read\b.*|see also|watch(?: live)?\b.{0,30}|live(?: updates?| now| blog)?|"
    r"breaking(?: news)?|latest(?: news| stories| headlines)?|top stories|just in|"
    r"(?:en )?direct|dernières? (?:infos?|minute|nouvelles)|à la une|"
    r"(?:en |ao )?vivo|últimas? (?:noticias|notícias)|ultime notizie|"
    r"(?:news|live)-?ticker|eilmeldung|neueste artikel|das könnte sie auch interessieren.*|"
    r"teilen|mehr zum thema.*|lesen sie auch.*|auch interessant.*|weitere artikel.*|"
    r"partager.*|lire aussi.*|à lire aussi.*|sur le même sujet.*|"
    r"compartir.*|lee también.*|leer más.*|te puede interesar.*|noticias relacionadas.*|"
    r"condividi.*|leggi anche.*|compartilhe.*|leia também.*|leia mais.*|"
    r"deel dit.*|lees ook.*|lees meer.*|lire\s*:.*|"
    r"(?:©|copyright|\(c\)).{0,120}|all rights reserved.*|"
    r"(?:\d+\s+)?(?:comments?|responses?|replies|kommentare?|commentaires?|comentarios?|"
    r"commenti|reacties)|leave a (?:reply|comment).*|post a comment|add (?:a )?comment|"
    r"(?:jetzt |bereits )?abonn(?:ieren|ent).*|weiterlesen mit.*|abonnez-vous.*|"
    r"suscr[ií]bete.*|assine.*|abbonati.*|continue reading with.*|"
    r"subscribe to (?:continue|read).*|already a subscriber.*"
    r")\W*$", re.I)
BOILER_MAX_CHARS = 90
# A label that says its box is paid for: the box it opens goes with it (an ad slot, a
# sponsor's pitch inside the article).
_PAID_LABEL = re.compile(
    r"^\W*(?:advertisements?|advertising|sponsored(?: content| by\b.*)?|brought to you by\b.*|"
    r"presented by\b.*|paid (?:content|post|partnership)|partner content|promoted(?: content)?|"
    r"anzeige|werbung|publicit[ée]|publicidad|pubblicit[àa]|advertentie|reklama|annons|"
    r"mainos)(?:\W.{0,40})?$", re.I)
# A pull quote repeats a sentence of the article: a quote (<blockquote>, <aside>, <q>, or
# named a quote) of at least QUOTE_WORDS words whose words stand inside a longer block
# of the container is read once, there.
QUOTE_WORDS = 8
_QUOTE_TAGS = frozenset(("blockquote", "aside", "figure", "q"))
_QUOTE_NAMES = re.compile(r"quote|pull|callout", re.I)
QUOTE_MAX_CHARS = 400
_TOKENS = re.compile(r"\w+")
# A newsletter box's pitch and its small print, up to SIGNUP_MAX_CHARS.
_SIGNUP = re.compile(
    r"^\W*(?:(?:subscribe|sign up|join|get)\b.{0,120}\b(?:newsletters?|inbox)\b|"
    r"by (?:subscribing|signing up)\b|abonnieren sie\b.{0,120}\bnewsletter|"
    r"inscrivez-vous\b.{0,120}\bnewsletter|suscr[ií]bete\b.{0,120}\bbolet[ií]n)", re.I)
SIGNUP_MAX_CHARS = 300
# The box under a boilerplate heading goes when at least this share of it is links.
ANNOUNCED_LINKS = 0.15
COMMENTS_MAX = 0.6
# Headings over a comment thread or its form.
_COMMENTS = re.compile(
    r"^\W*(?:\d+\s+)?(?:comments?|responses?|replies|reactions|kommentare?|commentaires?|"
    r"comentarios?|comentários?|commenti|reacties|leave a (?:reply|comment)|"
    r"post a comment|add (?:a )?comment|join the (?:discussion|conversation)|"
    r"schreibe einen kommentar|laisser un commentaire|deja un comentario)\b.{0,40}$", re.I)
# Slide counters of a gallery ("3 / 12", "3 of 12").
_COUNTER = re.compile(r"^\s*\d+\s*(?:/|of|von|de|di|sur|van|z)\s*\d+\s*$", re.I)

_HEADING = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
# Blocks that are structure, not chrome: a table's cells or a list's items with links are
# a reference list or a data table when the container is mostly them.
_TABLE_PARTS = frozenset(("tr", "td", "th", "tbody", "thead", "tfoot", "li", "dt", "dd"))
# A table or a list is one unit of content: the container is never one, nor inside one.
_UNITS = frozenset(("table", "ul", "ol", "dl", "pre", "blockquote"))
_TIME = etree.XPath(".//time")
_H1 = etree.XPath(".//h1")


@dataclass
class Measures:
    """Characters per element, summed up the ancestor chain (see the module docstring)."""

    chars: dict[etree._Element, int] = field(default_factory=dict)
    links: dict[etree._Element, int] = field(default_factory=dict)
    prose: dict[etree._Element, int] = field(default_factory=dict)
    blocks: dict[etree._Element, int] = field(default_factory=dict)  # blocks inside


def _block_of(el: etree._Element,
              in_link: frozenset[etree._Element] = frozenset()) -> tuple[etree._Element, bool]:
    """The block that holds ``el``'s text and whether that text is link text (inside an
    <a>, or in a block inside one: a teaser card is often one link)."""
    link = el in in_link
    while el.tag in _INLINE:
        if el.tag == "a":
            link = True
        parent = el.getparent()
        if parent is None:
            break
        el = parent
    return el, link


def measure(top: etree._Element) -> Measures:
    """Credit every text node under ``top`` to its block, then sum up to ``top``."""
    own: dict[etree._Element, list[int]] = {}  # block -> [chars, link chars, punctuation]
    in_link = frozenset(_IN_LINK(top))
    owners: dict[etree._Element, tuple[etree._Element, bool]] = {}
    for text in _TEXTS(top):
        owner = text.getparent()
        if text.is_tail:
            owner = owner.getparent()
            if owner is None:
                continue
        found = owners.get(owner)
        if found is None:
            found = owners[owner] = _block_of(owner, in_link)
        block, link = found
        stripped = text.strip()
        n = len(stripped)
        counts = own.get(block)
        if counts is None:
            counts = own[block] = [0, 0, 0]
        counts[0] += n
        if link:
            counts[1] += n
        else:
            counts[2] += n - len(stripped.translate(_NO_PUNCT))
    m = Measures()
    chars, links, prose, blocks = m.chars, m.links, m.prose, m.blocks
    for block, (c, k, punct) in own.items():
        good = (c - k if c >= PROSE_CHARS and k <= PROSE_LINKS * c
                and punct * PROSE_PUNCT >= c - k else 0)
        el: etree._Element | None = block
        while el is not None:
            chars[el] = chars.get(el, 0) + c
            links[el] = links.get(el, 0) + k
            blocks[el] = blocks.get(el, 0) + 1
            if good:
                prose[el] = prose.get(el, 0) + good
            if el is top:
                break
            el = el.getparent()
    return m


def container(top: etree._Element, m: Measures) -> etree._Element:
    """The deepest element with ``CONTAINER_SHARE`` of the prose under ``top``."""
    total = m.prose.get(top, 0)
    if not total:
        return top
    el = top
    while True:
        best = None
        for child in el:
            if m.prose.get(child, 0) >= CONTAINER_SHARE * total:
                best = child
                break
        if best is not None and best.tag in _UNITS:
            return el  # the table or list with the prose, and what frames it
        if best is None:
            return el
        el = best


def _words(el: etree._Element) -> str:
    return " ".join(" ".join(el.itertext()).split())


def _announced(heading: etree._Element, m: Measures, total: int,
               comments: bool = False) -> etree._Element | None:
    """The box a boilerplate heading ("Related", "More from us") announces: the heading's
    parent when the heading opens it, else the heading's next sibling; only a box with
    links (teasers link their headlines) and under ``LINK_BOX_MAX`` of the container.
    Under a comments heading ("4 Responses") the box need not have links and may be up
    to ``COMMENTS_MAX`` of the container: the thread is often as long as the post."""
    most = COMMENTS_MAX if comments else LINK_BOX_MAX
    share = 0.0 if comments else ANNOUNCED_LINKS

    def fits(box: etree._Element) -> bool:
        return (m.chars.get(box, 0) < most * total
                and m.links.get(box, 0) >= share * m.chars.get(box, 1))

    parent = heading.getparent()
    if (parent is not None and parent.index(heading) == 0 and not (parent.text or "").strip()
            and fits(parent)):
        return parent
    nxt = heading.getnext()
    return nxt if nxt is not None and fits(nxt) else None


def _labelled(label: etree._Element, m: Measures, total: int) -> etree._Element | None:
    """The box a paid-for label opens: the label's parent when the label is its first
    element and the parent is small next to the container (an ad slot, a sponsor's box)."""
    parent = label.getparent()
    if (parent is None or parent.index(label) != 0 or (parent.text or "").strip()
            or m.chars.get(parent, 0) >= LINK_BOX_MAX * total):
        return None
    return parent


def _quote(el: etree._Element) -> bool:
    """Whether ``el`` is set apart as a quote: by its tag, a <q> inside, or its name or
    its parent's."""
    if el.tag in _QUOTE_TAGS or next(el.iter("q"), None) is not None:
        return True
    for e in (el, el.getparent()):
        if e is not None and _QUOTE_NAMES.search(f"{e.get('class') or ''} {e.get('id') or ''}"):
            return True
    return False


def _repeated(box: etree._Element, m: Measures) -> list[etree._Element]:
    """Pull quotes: quotes whose words stand inside a longer block of ``box`` (see
    ``QUOTE_WORDS``). A block repeated whole elsewhere (the same line twice) stays."""
    leaves: Counter[str] = Counter()
    quotes: dict[str, list[etree._Element]] = {}
    for el in box.iter():
        if not isinstance(el.tag, str) or m.blocks.get(el, 0) != 1 or el.tag in _TABLE_PARTS:
            continue
        leaf = not any(m.blocks.get(c, 0) for c in el)
        quote = (el.tag not in _HEADING and m.chars.get(el, 0) <= QUOTE_MAX_CHARS
                 and _quote(el))
        if not (leaf or quote):
            continue
        words = " ".join(_TOKENS.findall(" ".join(el.itertext()).lower()))
        if leaf:
            leaves[words] += 1
        if quote and words.count(" ") + 1 >= QUOTE_WORDS:
            quotes.setdefault(words, []).append(el)
    if not quotes:
        return []
    whole = f" {' | '.join(leaves.elements())} "
    found: list[etree._Element] = []
    for words, els in quotes.items():
        if whole.count(f" {words} ") > leaves[words]:  # also inside a longer block
            found.extend(els)
    return found


def _teasers(parent: etree._Element, m: Measures, total: int) -> list[etree._Element]:
    """Cards that point to other pages: ``TEASERS`` or more siblings of one tag and class,
    each a linked headline and a line or two (two blocks or more, some link text), together
    under ``TEASERS_MAX`` of the container. An article's paragraphs are single blocks."""
    groups: dict[tuple[str, str], list[etree._Element]] = {}
    for child in parent:
        if child.tag in _CARDS and m.chars.get(child, 0):
            key = (child.tag, _DIGITS.sub("", child.get("class") or ""))  # "post_3"
            groups.setdefault(key, []).append(child)
    found: list[etree._Element] = []
    for members in groups.values():
        if len(members) < TEASERS:
            continue
        size = 0
        for card in members:
            c = m.chars.get(card, 0)
            if (m.blocks.get(card, 0) < 2 or c > TEASER_CHARS
                    or m.links.get(card, 0) < TEASER_LINKS * c):
                break
            size += c
        else:
            if size < TEASERS_MAX * total:
                found.extend(members)
    return found


def clean(box: etree._Element, m: Measures,
          ) -> tuple[list[etree._Element], list[etree._Element]]:
    """The article's frame and the chrome inside ``box`` (see the module docstring), and
    apart the boxes of links and teaser cards among them (what says a page is a listing)."""
    total = m.chars.get(box, 0) or 1
    drop: list[etree._Element] = []
    listing: list[etree._Element] = []
    for el in box.iter():
        if el is box or not isinstance(el.tag, str):
            continue
        c = m.chars.get(el, 0)
        if not c:  # inline: only its class can say it is a credit or a byline
            if (el.get("class") and _FRAME_WORDS.search(el.get("class") or "")
                    and text_length(el) <= FRAME_MAX_CHARS):
                drop.append(el)
            continue
        tag = el.tag
        # Boxes of links: related stories, tag clouds, "more from" lists. A table's
        # parts are judged as the whole table: a linked title is a data cell.
        if (tag not in _TABLE_PARTS and m.links.get(el, 0) >= LINK_BOX * c
                and c < LINK_BOX_MAX * total
                and (m.blocks.get(el, 0) >= LINK_BOX_BLOCKS or (c < 40 and tag not in _HEADING))):
            listing.append(el)
            continue
        if c <= 12 and tag not in _TABLE_PARTS and _COUNTER.match(_words(el)):
            drop.append(el)  # "3 / 12" of a gallery
            continue
        if len(el) >= TEASERS:
            listing.extend(_teasers(el, m, total))
        if c <= FRAME_MAX_CHARS:
            names = f"{el.get('class') or ''} {el.get('id') or ''}"
            if names.strip() and _FRAME_WORDS.search(names):
                drop.append(el)
                continue
        if c <= SIGNUP_MAX_CHARS and m.blocks.get(el, 0) == 1 and _SIGNUP.match(_words(el)):
            drop.append(el)  # "Subscribe to our free daily newsletter, ..."
            continue
        if (c <= BOILER_MAX_CHARS and (tag in _HEADING or m.blocks.get(el, 0) == 1)
                and (_BOILER_PHRASES.match(words := _words(el)) or _PAID_LABEL.match(words))):
            drop.append(el)
            if tag in _HEADING:  # "Related stories" + the box it announces
                announced = _announced(el, m, total, _COMMENTS.match(words) is not None)
                if announced is not None:
                    drop.append(announced)
            elif _PAID_LABEL.match(words):  # "Advertisement", "Brought to you by" + its box
                box_ = _labelled(el, m, total)
                if box_ is not None:
                    drop.append(box_)
    drop.extend(_repeated(box, m))
    for el in _TIME(box):  # a dateline: the date is metadata
        block, _link = _block_of(el)
        if block is not box and m.chars.get(block, 0) <= FRAME_MAX_CHARS:
            drop.append(block)
    for el in _H1(box):  # the headline: the title is metadata
        if m.chars.get(el, 0) <= 300:
            drop.append(el)
    return drop, listing


@dataclass
class Article:
    """The cleaned container and the measures that say whether to trust it."""

    element: etree._Element
    prose_share: float  # of the page's prose inside the container
    link_share: float  # link characters of the container's characters
    prose_chars: int  # prose characters in the container
    kept: float  # share of the container's prose left by the link boxes and teasers
    scope_chars: int = 0  # characters of the pruned content scope (``prune``)


# ``confident``: an article of at least CONFIDENT_PROSE characters of prose, with at least
# CONFIDENT_SHARE of the page's prose and at most CONFIDENT_LINKS link text. Pages that
# declare themselves products are never taken alone: their specifications, variants and
# reviews are not prose, and trafilatura's rules for them are better than ours.
CONFIDENT_PROSE = 400
CONFIDENT_SHARE = 0.8
CONFIDENT_LINKS = 0.2
# ...and cleaning removed little of it: a page whose prose sits in teaser cards is a
# listing, and the cards are its content.
CONFIDENT_KEPT = 0.7


def confident(art: Article, kind: str | None) -> bool:
    """Whether ``art`` is the page's main content with no second opinion needed."""
    return (kind != "product" and art.prose_chars >= CONFIDENT_PROSE
            and art.kept >= CONFIDENT_KEPT
            and art.prose_share >= CONFIDENT_SHARE and art.link_share <= CONFIDENT_LINKS)


def _with_lede(box: etree._Element, m: Measures) -> etree._Element:
    """``box``, with the sibling paragraphs of prose just around it (a standfirst above a
    live blog's entries, a closing line below a story's body): single blocks of prose with
    no link. They are moved into a new <div> with ``box``; its measures are the sums."""
    parent = box.getparent()
    if parent is None:
        return box

    def lede(el: etree._Element) -> bool:
        return (m.blocks.get(el, 0) == 1 and not m.links.get(el, 0)
                and m.prose.get(el, 0) >= LEDE_CHARS)

    before: list[etree._Element] = []
    for el in box.itersiblings(preceding=True):
        if not lede(el):
            break
        before.append(el)
    after: list[etree._Element] = []
    for el in box.itersiblings():
        if not lede(el):
            break
        after.append(el)
    if not before and not after:
        return box
    wrapper = parent.makeelement("div", {})
    box.addprevious(wrapper)
    for el in [*reversed(before), box, *after]:
        wrapper.append(el)  # the tail moves with it
        for measure in (m.chars, m.links, m.prose, m.blocks):
            measure[wrapper] = measure.get(wrapper, 0) + measure.get(el, 0)
    return wrapper


def _subtract(m: Measures, top: etree._Element, drops: list[etree._Element]) -> None:
    """Drop ``drops`` from the tree and their counts from their ancestors' (up to ``top``),
    so the measures stay those of what is left; one inside another counts once."""
    gone = set(drops)
    for d in drops:
        chain = []
        el = d.getparent()
        while el is not None:
            if el in gone:
                break
            chain.append(el)
            if el is top:
                break
            el = el.getparent()
        else:
            continue  # not under top any more
        if el is not top:
            continue  # inside another dropped one, or detached
        c, k, p, b = (m.chars.get(d, 0), m.links.get(d, 0), m.prose.get(d, 0),
                      m.blocks.get(d, 0))
        if c or b:
            for a in chain:
                m.chars[a] = m.chars.get(a, 0) - c
                m.links[a] = m.links.get(a, 0) - k
                m.prose[a] = m.prose.get(a, 0) - p
                m.blocks[a] = m.blocks.get(a, 0) - b
        d.drop_tree()


def prune(body: etree._Element) -> Measures:
    """Remove the boilerplate containers and link rails under ``body`` (step 2 of the
    module docstring) and return the measures of what is left. Modifies the tree."""
    m = measure(body)
    page_prose = m.prose.get(body, 0)
    # A container marked by a word is kept when it holds half the page's text; one named
    # only by a word page builders give to content too ("widget") when its text is prose.
    # A frame with half the page's prose and few links is the page: an unclosed <header>
    # (a sidebar of teasers with summaries has prose too, and links).
    page_chars = m.chars.get(body, 0)
    _subtract(m, body, region.boilerplate(
        body, lambda d: m.chars.get(d, 0) > KEEP_SHARE * page_chars,
        keep_weak=lambda d: m.prose.get(d, 0) >= WEAK_PROSE * m.chars.get(d, 1),
        keep_frame=lambda d: (m.prose.get(d, 0) > KEEP_SHARE * page_prose
                              and m.links.get(d, 0) < FRAME_LINKS * m.chars.get(d, 1))))
    _subtract(m, body, region.rails(body, m.chars.get(body, 0)))
    return m


def article(body: etree._Element) -> Article:
    """The page's article (see the module docstring). Modifies the tree under ``body``."""
    m = prune(body)
    scope_chars = m.chars.get(body, 0)
    box = _with_lede(container(body, m), m)
    total = m.prose.get(body, 0) or 1
    prose = m.prose.get(box, 0)
    link_share = m.links.get(box, 0) / (m.chars.get(box, 0) or 1)
    drop, listing = clean(box, m)
    _subtract(m, box, listing)
    kept = m.prose.get(box, 0) / (prose or 1)
    _subtract(m, box, drop)
    return Article(box, prose / total, link_share, prose, kept, scope_chars)
