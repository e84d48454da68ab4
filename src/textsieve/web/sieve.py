"""``--html sieve --topic``: keep only the part of a page that is about one topic.

The classic method renders a page to Markdown lines, counts topic words per line, fits
one Gaussian to the density peak and keeps the lines under it. It cuts lists in half,
loses the heading that names the section, and a long story that mentions the topic a
few times can outweigh a short recipe card. Here instead:

1. The page is rendered by the ordinary ``HtmlWalker`` into a recording ``Builder`` so
   every block keeps its kind (heading, paragraph, list item, table, code), the list it
   belongs to, its link density (anchors are marked in the tree before walking) and
   whether it sits in a boilerplate container (nav, footer, aside, comments, related
   posts...). Kept blocks are replayed into the caller's Builder, so text and Markdown
   come out exactly as ``--html full`` would render them.
2. Words are stemmed by a small suffix stripper (no dependency, fast, consistent
   across inflections: bake/baked/baking/bakes -> "bak"); the topic's words, phrases
   and token patterns carry weights.
3. Each block scores topic weight per word, with a length floor so a one-word line
   is not a perfect 1.0, damped by link density and boilerplate containers.
4. The scores are smoothed over neighbouring blocks with a Gaussian kernel; every
   local peak grows into a contiguous region while the smoothed density stays above a
   fraction of its peak; weak edge blocks are trimmed; a region shorter than a minimum
   number of words grows towards its stronger side; lists are kept whole or not at
   all (never cut in the middle); the heading just above a region comes with it.
5. Regions are ranked by mass x sqrt(density) (much topic, concentrated): the best one
   is kept; with ``Topic.max_regions`` > 1 (``@regions N`` in a topic file) also the
   next ones that are about as concentrated (density >= SIMILAR x the best's) and not
   negligible (score >= RELATIVE x the best's): a second recipe on the page, not the
   story that mentions the oven.

A confidence in [0, 1] says how much topic the kept region holds, how concentrated it
is and what share of the page's topic evidence it captured.

Topics that declare a shape (``@shape items|steps``, the recipe presets do) take the
shaped sieve instead (``sieve_shaped``): each block scores the shape of its line in any
language (shape.py: a leading quantity, a numbered step, its length, a comment's date
stamp) plus its topic words; every block adds its score minus a threshold (for steps,
set against the page's own prose), lists count whole, and the region is the run with the
largest sum. A section name of another section ("Instructions" to the ingredients,
"Notes") is a wall no region crosses; steps start at their own section name with the
sub-recipe under it, and steps numbered on lines of their own ("1", "Step 2: ...") count
however short. ``@near`` looks for the region beside another topic's (the directions
beside the ingredients). Either way the per-block scores are kept for ``--explain``
(sieveplot.py).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lxml import etree

from ..kernels.html import (
    BLOCK,
    HtmlWalker,
    decode_html,
    html_metadata,
    parse_html,
    show_hidden,
    tag_name,
)
from ..model import Document
from ..render import Builder
from . import shape as shapes
from . import sieveplot, structured

PRESETS = Path(__file__).with_name("presets")

# Tuning (block units unless said otherwise); chosen on the reasoning in the module doc,
# checked on the recipe fixtures and on pages outside the tests.
FLOOR = 6  # words: a block's density is hits / max(words, FLOOR)
SIGMA = 1.2  # Gaussian smoothing width, in blocks
GROW = 0.4  # a region grows while smoothed density >= GROW * its peak
EDGE = 0.3  # edge blocks whose own density is below EDGE * peak are trimmed
MIN_WORDS = 15  # a region shorter than this grows towards its stronger neighbour
MIN_PEAK = 0.02  # smoothed densities below this are not peaks
MAX_PEAKS = 30  # peaks tried, strongest first (bounds the work on huge pages)
WRAPPER = 0.5  # a boilerplate-looking container with more than this share of the text is not
NOISE_PENALTY = 0.3  # density factor inside nav/footer/aside/comments/related containers
SIBLING = 0.3  # a same-level section next to a region joins it above this share of its density
STUB = 0.15  # share of a region's topic mass under which a part beyond a heading is cut
VARIETY = 6  # distinct topic terms a region needs for full confidence (see _variety)
MIN_CONFIDENCE = 0.1  # below: "no block about this topic" rather than a wrong block
RELATIVE = 0.1  # extra regions (max_regions > 1) must score this share of the best...
SIMILAR = 0.5  # ...and be at least this share of its density (another instance, not a mention)
LIST_KEEP = 0.5  # a list partly in a region is taken whole if its density >= this x peak

# The shaped sieve (topics with ``@shape``): a block adds its shape score minus THRESHOLD,
# and the region is the run of blocks with the largest sum (lists whole).
SHAPES = ("items", "steps")
THRESHOLD = {"items": 0.5, "steps": 0.8}  # a block scoring less counts against its region
STEP_FLOOR = 0.5  # the least a step must score, however low the page's prose
STEP_MARGIN = 0.1  # ...and how much more than the page's PROSE_Q-th prose block
PROSE_Q = 0.9
HEADING_COST = 0.15  # what crossing a heading or a label without topic words costs
HEADING_GAIN = 0.5  # ...and its topic words (weight sum) count this much, capped at 1
NEAR_AFTER = 1.0  # boost of a block right after the @near topic's region (decays)...
NEAR_BEFORE = 0.4  # ...and right before it
COPY = 0.8  # a region of the @near topic scoring this share of the best is a copy of it
COPIES = 3  # copies of the @near topic's region looked at, at most
NEAR_DECAY = 10.0  # blocks over which the boost falls by 1/e
MIN_VALUE = 1.0  # a shaped region must sum to at least this to be kept
ADJACENT = 0.5  # the steps right after the @near region win at this share of the best's...
ADJACENT_BLOCKS = 6  # ...when they start at most this many blocks after it
SIBLING_LIST = 0.5  # a list beside a shaped region joins it at this share of its scores
NUTRITION = 0.2  # factor for the lines of a list that states kcal, kJ, mg or µg
SOFT_NOISE = 0.7  # shaped topics: factor inside a container that only its class calls
#                   boilerplate ("widget", "share"): the recipe card is often a "widget"
SIZE_POWER = 0.75  # a block counts by (its words) ** this: a story paragraph costs more than a line
MARK_GAP = 12  # blocks at most between two step numbers on lines of their own
WALL = -1.0  # a section name whose topic words weigh this or less ends a shaped region
NAMES = 1.0  # ...and one whose topic words weigh this or more names the topic's section
LEAD_LINES = 8  # steps start at their section's name at most this many lines above them
LEAD_WORDS = 20  # ...with no line of more words than this in between (a story, a step)
REPEAT = 0.8  # a kept block whose text other kept blocks hold this share of is a repeat
REPEAT_MIN = 20  # characters: shorter pieces ("Salt", "1 egg") prove no repeat
REPEAT_LONG = 100  # characters: an equal block this long is the same text shown twice
VARIANT = 0.25  # a section with this share of its lines changed is the same list again
VARIANT_PART = 0.75  # ...and a run right after a list, this share of its length, its copy
TAIL_BLOCKS = 4  # paragraphs after a post's last step that still close its method...
TAIL_WORDS = 60  # ...and their words, at most
REPEAT_BLOCKS = 400  # kept blocks above which repeats are not looked for

_WORD = re.compile(r"\w+")
LINK_OPEN, LINK_CLOSE = "\ue000", "\ue001"  # private-use marks around anchor text
_LINK_SPAN = re.compile(f"{LINK_OPEN}([^{LINK_OPEN}{LINK_CLOSE}]*){LINK_CLOSE}")
_UNMARK = str.maketrans("", "", LINK_OPEN + LINK_CLOSE)
_NOISE_TAGS = frozenset({"nav", "footer", "aside"})
_NOISE_ATTR = re.compile(
    r"(?:^|[\s_-])(comments?|commentlist|respond|related|sidebar|widgets?|footer|navbar|"
    r"nav|menu|breadcrumbs?|share|sharing|social|newsletter|subscribe|advert\w*|ads?|"
    r"adsense|sponsored|promo|cookies?|consent|banner|popup|modal|disqus)(?:$|[\s_-])",
    re.I)
# Reader comments and reviews: boilerplate even when they are most of the page.
_COMMENTS_ATTR = re.compile(
    r"(?:^|[\s_-])(?:comments?|commentlist|comment-list|respond|disqus|reviews)(?:$|[\s_-])",
    re.I)
_NO_ATTR_CHECK = frozenset({"html", "body", "main", "article"})
# Elements whose blocks are one box: a post's body, a card's section.
_BOXES = frozenset({"div", "section", "article", "main", "td", "body", "aside"})
_VOWEL = re.compile(r"[aeiouy]")


# -- stemming -----------------------------------------------------------------------------
@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A cheap English suffix stripper: what matters is that the forms of one word meet
    (stir/stirs/stirring/stirred -> "stir", egg/eggs -> "eg", berry/berries -> "berri"),
    not that stems are real words. Words that are not plain ASCII letters pass unchanged,
    so numbers and words of other languages are matched as written."""
    w = word.lower()
    if len(w) <= 2 or not (w.isascii() and w.isalpha()):
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "i"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and len(w) > 3 and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ingly", "edly", "ing", "ed", "ly"):
        if w.endswith(suffix):
            rest = w[: -len(suffix)]
            if len(rest) >= (4 if suffix == "ly" else 3) and _VOWEL.search(rest):
                w = rest
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "aeiouslz":
        w = w[:-1]
    if w.endswith("y") and len(w) > 2:
        w = w[:-1] + "i"
    return w


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@functools.lru_cache(maxsize=32)
def stemmer(language: str | None) -> Callable[[str], str]:
    """The stemmer for a page language ("de", "fr-CA"...): the suffix stripper above
    for English and unknown languages (tuned on English recipe pages), Snowball for the
    others it knows (German Äpfel/Apfel, French pommes/pomme, Spanish huevos/huevo)."""
    lang = primary_language(language)
    name = _SNOWBALL.get(lang or "")
    if not name:
        return stem
    import snowballstemmer

    algo = snowballstemmer.stemmer(name)
    cache: dict[str, str] = {}

    def snowball(word: str) -> str:
        w = word.lower()
        s = cache.get(w)
        if s is None:
            s = algo.stemWord(w) if w.isalpha() else w
            if len(cache) < 1 << 16:
                cache[w] = s
        return s

    return snowball


_SNOWBALL = {"de": "german", "fr": "french", "es": "spanish", "it": "italian",
             "pt": "portuguese", "nl": "dutch", "sv": "swedish", "da": "danish",
             "no": "norwegian", "nb": "norwegian", "fi": "finnish", "ru": "russian",
             "pl": "polish", "cs": "czech", "hu": "hungarian", "tr": "turkish"}


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Frequent function words of the preset languages: enough to tell them apart on a page
# that does not declare its language (or declares it wrongly).
STOP_WORDS = {
    "en": _set("the and of to a in is it you that with for on are this be as your "
                    "or at from have was i"),
    "de": _set("der die und in den von zu das mit sich des auf für ist im dem nicht "
                    "ein eine als auch es an werden aus er hat dass sie nach wird bei "
                    "einer um am sind noch wie einem über einen so zum war haben nur oder "
                    "aber vor zur bis mehr durch man"),
    "fr": _set("le la les de des et à un une du en est que pour dans qui sur au "
                    "pas par plus avec ce il se ne sont ou mais vous nous elle cette ces "
                    "aux été leur"),
    "es": _set("el la de que y en los del se las por un para con no una su al lo "
                    "como más pero sus le ya o este sí porque esta entre cuando muy sin "
                    "sobre también hasta hay donde"),
    "nl": _set("het een van dat zijn voor niet aan ook bij uit maar naar door wordt deze "
               "nog wel dan je we ze hij zij geen worden moet kunnen heeft"),
    "it": _set("il lo gli di che è per non sono della delle degli nel nella alla anche più "
               "questo questa come ma essere ha fare dei molto"),
    "pt": _set("os do da dos das em não uma para com por mais você ao foi são seu sua "
               "também muito quando está isso pelo pela"),
    "sv": _set("och är att som av för med till inte har ett jag men var så från kan eller "
               "vi sig också när mycket om"),
    "da": _set("og er at som af for med til ikke har et jeg men var så fra kan eller vi sig "
               "også når meget om"),
    "pl": _set("i w na z do że się nie to jest jak po przez od za ale czy dla tak jej już "
               "tylko oraz przy może są być"),
}


def primary_language(tag: str | None) -> str | None:
    """ "de-AT" -> "de"; None for a missing or odd tag."""
    if not tag:
        return None
    lang = re.split(r"[-_\s]", tag.strip().lower(), maxsplit=1)[0]
    return lang if lang.isalpha() and 2 <= len(lang) <= 3 else None


def guess_language(text: str) -> str | None:
    """The preset language whose stop words are most frequent in ``text`` (None when
    there are too few to tell)."""
    counts = dict.fromkeys(STOP_WORDS, 0)
    for w in words(text[:200_000]):
        for lang, stops in STOP_WORDS.items():
            if w in stops:
                counts[lang] += 1
    best = max(counts, key=counts.__getitem__)
    return best if counts[best] >= 5 else None


_UNSEEN = frozenset({"script", "style", "noscript", "template", ""})


def visible_text(root: etree._Element) -> str:
    """The text a reader sees under ``root``: no scripts, styles or comments. A page
    built by a script framework carries its data as a large JSON in a ``<script>``,
    whose keys ("at", "for", "om", "var") would outvote the page's own words."""
    parts: list[str] = []
    for el in root.iter():
        if el.text and tag_name(el) not in _UNSEEN:
            parts.append(el.text)
        if el.tail and el is not root:
            parts.append(el.tail)
    return " ".join(parts)


# -- topics --------------------------------------------------------------------------------
@dataclass
class Topic:
    """Weighted stems, phrases (sequences of stems) and whole-token patterns."""

    name: str
    terms: dict[str, float] = field(default_factory=dict)
    phrases: dict[str, list[tuple[tuple[str, ...], float]]] = field(default_factory=dict)
    patterns: list[tuple[re.Pattern[str], float]] = field(default_factory=list)
    max_regions: int = 1
    language: str | None = None  # stems are made for this language (None: English)
    recipe: str | None = None  # "ingredients" | "instructions": a Recipe's part answers
    shape: str | None = None  # "items" | "steps": language-free evidence (see shape.py)
    near: str | None = None  # another topic whose region this one is looked for beside
    source: Path | None = None  # the topic file it was read from (None: a preset, words)
    _cache: dict[str, tuple[float, str]] = field(default_factory=dict, repr=False)

    @property
    def stem(self) -> Callable[[str], str]:
        return stemmer(self.language)

    def add(self, text: str, weight: float = 1.0) -> None:
        stem = self.stem
        stems = tuple(stem(w) for w in words(text))
        if len(stems) == 1:
            old = self.terms.get(stems[0])
            self.terms[stems[0]] = weight if old is None else max(old, weight)
        elif stems:
            self.phrases.setdefault(stems[0], []).append((stems, weight))

    def weight(self, token: str) -> float:
        """Weight of one (lower-case) token; cached, tokens repeat a lot on a page."""
        return self.token(token)[0]

    def token(self, token: str) -> tuple[float, str]:
        """(weight, stem) of one lower-case token, cached: tokens repeat a lot on a page
        and across pages (presets are loaded once, see load_topic)."""
        found = self._cache.get(token)
        if found is None:
            stem = self.stem(token)
            w = self.terms.get(stem, 0.0)
            if not w:
                w = next((pw for rx, pw in self.patterns if rx.fullmatch(token)), 0.0)
            found = self._cache[token] = (w, stem)
        return found

    def empty(self) -> bool:
        return not (self.terms or self.phrases or self.patterns or self.shape)


def presets() -> list[str]:
    """Preset names; each has an English file NAME.txt and may have NAME.LANG.txt
    translations (German, French, Spanish for the recipe presets)."""
    return sorted(p.stem for p in PRESETS.glob("*.txt") if "." not in p.stem)


def load_topic(spec: str, language: str | None = None) -> Topic:
    """A preset name ("recipe-directions"), a file of words/phrases one a line with
    optional weights ("preheat the oven 2"), or words: "a, b c" (comma-separated
    phrases) or "a b c" (space-separated words). Raises ValueError when empty.

    ``language`` is the page's: a preset comes in that language when it has a
    translation NAME.LANG.txt (else in English), and words are stemmed for it. A topic
    file FILE.txt works the same way: FILE.LANG.txt beside it, when there is one, is
    used for pages in LANG. Files are read once (a copy of the parsed topic is
    returned, so its word cache warms up over the pages of a run)."""
    spec = spec.strip()
    lang = primary_language(language)
    preset = PRESETS / f"{spec}.txt"
    if spec and "/" not in spec and "." not in spec and preset.is_file():
        local = PRESETS / f"{spec}.{lang}.txt"
        if lang and local.is_file():
            topic = _cached_file(str(local), local.stat().st_mtime_ns, spec, lang)
        else:
            topic = _cached_file(str(preset), preset.stat().st_mtime_ns, spec, None)
    elif spec and Path(spec).is_file():
        path = Path(spec)
        local = path.with_name(f"{path.stem}.{lang}{path.suffix}") if lang else path
        chosen = local if local.is_file() else path
        topic = _cached_file(str(chosen), chosen.stat().st_mtime_ns, path.name, lang)
        topic.source = path
    else:
        topic = Topic(name=spec, language=lang)
        items = spec.split(",") if "," in spec else spec.split()
        for item in items:
            topic.add(item)
    if topic.empty():
        raise ValueError(f"topic {spec!r} has no words (presets: {', '.join(presets())})")
    return topic


@functools.lru_cache(maxsize=64)
def _parsed_file(path: str, mtime: int, name: str, language: str | None) -> Topic:
    return _parse_topic_file(name, Path(path).read_text("utf-8"), language)


def _cached_file(path: str, mtime: int, name: str, language: str | None) -> Topic:
    """A fresh copy of the parsed topic file (its word tables and cache shared)."""
    return dataclasses.replace(_parsed_file(path, mtime, name, language))


def near_topic(topic: Topic) -> Topic | None:
    """The topic named by ``@near``: a file NAME.txt beside the topic's own file, else a
    preset; None when it is not a shaped topic of its own (no chains of @near)."""
    if not topic.near:
        return None
    spec = topic.near
    if topic.source is not None:
        beside = topic.source.with_name(f"{spec}.txt")
        if beside.is_file():
            spec = str(beside)
    try:
        other = load_topic(spec, topic.language)
    except (ValueError, OSError):
        return None
    return other if other.shape and not other.near else None


def _parse_topic_file(name: str, text: str, language: str | None = None) -> Topic:
    """Lines: ``word [weight]``, ``a phrase [weight]``, ``/regex/ [weight]`` (matches
    whole lower-case tokens), ``@regions N`` (keep up to N regions), ``@recipe PART``
    (a page's Recipe data answers with its ingredients or instructions), ``@shape
    items|steps`` (what the topic's lines look like in any language, see shape.py),
    ``@near TOPIC`` (look for it beside that topic's region), ``# comment``. A negative
    weight marks a word that ends a region ("notes -2")."""
    topic = Topic(name=name, language=language)
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("@"):
            key, _, value = line[1:].partition(" ")
            if key.lower() == "regions":
                value = value.strip().lower()
                topic.max_regions = 1_000_000 if value == "all" else max(int(value), 1)
                continue
            if key.lower() == "recipe" and value.strip() in ("ingredients", "instructions"):
                topic.recipe = value.strip()
                continue
            if key.lower() == "shape" and value.strip() in SHAPES:
                topic.shape = value.strip()
                continue
            if key.lower() == "near" and value.strip():
                topic.near = value.strip()
                continue
            raise ValueError(f"{name}: unknown directive {line!r}")
        body, weight = line, 1.0
        head, _, last = line.rpartition(" ")
        if head:
            try:
                weight = float(last)
                body = head.strip()
            except ValueError:
                pass
        if len(body) > 2 and body.startswith("/") and body.endswith("/"):
            try:
                topic.patterns.append((re.compile(body[1:-1]), weight))
            except re.error as exc:
                raise ValueError(f"{name}: bad pattern {body!r}: {exc}") from exc
        else:
            topic.add(body, weight)
    return topic


# -- blocks ----------------------------------------------------------------------------
@dataclass(slots=True)
class Block:
    kind: str  # heading | paragraph | list_item | table | code | quote | preformatted | rule
    args: tuple[Any, ...]  # the Builder call's arguments, link marks removed
    text: str
    group: int  # list number for list items (a whole list is kept or dropped), else 0
    noisy: bool  # inside nav/footer/aside/comments/related... (see _unwrap)
    link: float  # share of the text inside links
    words: int = 0
    hits: float = 0.0
    density: float = 0.0
    containers: tuple[int, ...] = ()  # the boilerplate-looking containers it sits in
    kinds: tuple[str, ...] = ()  # ...and the word that made each look so ("widget", "nav")
    boxes: tuple[int, ...] = ()  # the boxes (div, section...) it sits in, innermost last
    hard: bool = False  # one of them is a nav or footer element or comments, not a class name
    part: int = 0  # for list items: the innermost list (<ul>/<ol>) it is an item of


class _Recorder(Builder):
    """A Builder that records blocks instead of rendering them."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[Block] = []
        self.noise: list[int] = []  # open boilerplate-looking containers
        self.comments: set[int] = set()  # those of them that hold comments or reviews
        self.hard: set[int] = set()  # those that are nav or footer elements or comments
        self.containers = 0
        self.kinds: dict[int, str] = {}  # container: what made it look like boilerplate
        self.boxes = 0  # boxes (div, section, article...) seen
        self.box: list[int] = []  # the boxes open, innermost last
        self.list_id = 0
        self.parts = 0  # lists seen, at any depth
        self.part = 0  # the list being read

    def _rec(self, kind: str, raw: str, rest: tuple[Any, ...] = (), group: int = 0,
             args: tuple[Any, ...] | None = None, part: int = 0) -> None:
        """Record a block; ``raw`` is its text with link marks, ``args`` the Builder call's
        arguments when they are not (text, *rest)."""
        text = raw.translate(_UNMARK)
        if not text.strip():
            return
        linked = sum(len(m.strip()) for m in _LINK_SPAN.findall(raw)) if LINK_OPEN in raw else 0
        self.blocks.append(Block(kind, args or (text, *rest), text, group, bool(self.noise),
                                 min(1.0, linked / len(text.strip())),
                                 containers=tuple(self.noise), part=part,
                                 kinds=tuple(self.kinds[c] for c in self.noise),
                                 boxes=tuple(self.box)))

    def heading(self, text: str, level: int = 1) -> None:
        self._rec("heading", text, (level,))

    def paragraph(self, text: str) -> None:
        self._rec("paragraph", text)

    def preformatted(self, text: str, md: str | None = None) -> None:
        self._rec("preformatted", text)  # its Markdown is made again when replayed

    def code(self, text: str, language: str = "") -> None:
        self._rec("code", text, (language,))

    def list_item(self, text: str, level: int = 0, ordered: bool = False,
                  number: int = 1, label: str | None = None) -> None:
        self._rec("list_item", text, (level, ordered, number, label), group=self.list_id,
                  part=self.part)

    def quote(self, text: str) -> None:
        self._rec("quote", text)

    def table(self, rows: Sequence[Sequence[str | None]], header: bool = True) -> None:
        raw = "\n".join("\t".join("" if c is None else str(c) for c in r) for r in rows)
        clean = [["" if c is None else str(c).translate(_UNMARK) for c in r] for r in rows]
        self._rec("table", raw, args=(clean, header))

    def embed(self, text: str, markdown: str) -> None:
        self._rec("paragraph", text)

    def rule(self) -> None:
        pass  # a rule carries no words; regions never need it


class _Walker(HtmlWalker):
    """HtmlWalker that tells the recorder about boilerplate containers and list bounds."""

    out: _Recorder

    def node(self, el: etree._Element) -> None:
        tag = tag_name(el)
        if tag not in _BOXES:
            self._node(el, tag)
            return
        self.flush()  # what came before belongs to the outer box
        self.out.boxes += 1
        self.out.box.append(self.out.boxes)
        try:
            self._node(el, tag)
            self.flush()
        finally:
            self.out.box.pop()

    def _node(self, el: etree._Element, tag: str) -> None:
        match = None
        if tag in BLOCK and tag not in _NO_ATTR_CHECK and tag not in _NOISE_TAGS:
            match = _NOISE_ATTR.search(f"{el.get('class') or ''} {el.get('id') or ''}")
            if match is not None and _holds_page(el):
                match = None
        if tag not in _NOISE_TAGS and match is None:
            super().node(el)
            return
        self.flush()
        self.out.containers += 1
        self.out.noise.append(self.out.containers)
        self.out.kinds[self.out.containers] = (
            tag if match is None else match.group(1).lower())
        if tag in _NOISE_TAGS and tag != "aside":  # an <aside> may hold the recipe card
            self.out.hard.add(self.out.containers)
        elif _COMMENTS_ATTR.search(f"{el.get('class') or ''} {el.get('id') or ''}"):
            self.out.comments.add(self.out.containers)
            self.out.hard.add(self.out.containers)
        try:
            super().node(el)
            self.flush()
        finally:
            self.out.noise.pop()

    def list_(self, el: etree._Element, level: int) -> None:
        if level == 0:
            self.out.list_id += 1
        self.out.parts += 1
        outer, self.out.part = self.out.part, self.out.parts
        try:
            super().list_(el, level)
        finally:
            self.out.part = outer


def _holds_page(el: etree._Element) -> bool:
    """Whether a container holds the page's own content (its ``<main>`` or its ``<h1>``):
    then a class that sounds like boilerplate ("wrapper-with-sticky-ad", "has-sidebar")
    describes the layout around it, not the container. Ads, menus and related posts do
    not hold the page's main element or its title."""
    return next(el.iterdescendants("main", "h1"), None) is not None


def _mark_links(root: etree._Element) -> None:
    """Wrap each anchor's text in private-use marks, so the recorded blocks tell how much
    of their text is link text (related-post lists, menus) without a second walk."""
    for a in root.iter("a", "{http://www.w3.org/1999/xhtml}a"):
        if (a.text or "").startswith(LINK_OPEN):  # marked by an earlier look
            continue
        a.text = LINK_OPEN + (a.text or "")
        if len(a):
            a[-1].tail = (a[-1].tail or "") + LINK_CLOSE
        else:
            a.text += LINK_CLOSE


def blocks_of(root: etree._Element) -> list[Block]:
    """The visible blocks of a page (its <body>, or the element itself)."""
    _mark_links(root)
    body = (next((c for c in root if tag_name(c) == "body"), None)
            if tag_name(root) == "html" else None)
    rec = _Recorder()
    walker = _Walker(rec)
    if body is not None:
        walker.render(body)
    else:
        for child in (root if tag_name(root) == "html" else [root]):
            if tag_name(child) != "head":
                walker.node(child)
        walker.flush()
    _unwrap(rec.blocks, rec.comments, rec.hard)
    return rec.blocks


def _unwrap(blocks: list[Block], comments: frozenset[int] | set[int] = frozenset(),
            hard: frozenset[int] | set[int] = frozenset()) -> None:
    """A "boilerplate" container that holds most of the page is a layout wrapper
    (``<div class="content-sidebar-wrap">``), not boilerplate: it stops counting. Not so
    the ``comments`` containers: 900 comments under a short recipe are still comments."""
    total = sum(len(b.text) for b in blocks) or 1
    size: dict[int, int] = {}
    for b in blocks:
        for c in b.containers:
            size[c] = size.get(c, 0) + len(b.text)
    wrappers = {c for c, n in size.items() if n > WRAPPER * total and c not in comments}
    for b in blocks:
        if b.containers:
            b.noisy = any(c not in wrappers for c in b.containers)
            b.hard = any(c in hard and c not in wrappers for c in b.containers)


# -- scoring and regions ------------------------------------------------------------------
@dataclass
class Region:
    start: int
    end: int  # inclusive
    peak: int
    mass: float = 0.0
    density: float = 0.0  # topic weight per word
    score: float = 0.0


@dataclass
class SieveResult:
    """What was kept: block indices in page order, the regions, and a confidence."""

    topic: str
    blocks: int  # blocks on the page
    kept: list[int]
    regions: list[Region]
    confidence: float
    words: int = 0  # words kept
    found: bool = True  # False: "no block about this topic" (confidence < MIN_CONFIDENCE)
    source: str = "blocks"  # "blocks": the density sieve; "recipe": the page's Recipe data
    items: int = 0  # lines given by the Recipe data
    profile: list[float] = field(default_factory=list)  # per block: the score it was chosen by
    threshold: float | None = None  # what a block had to score (shaped sieve)
    heads: list[tuple[int, str]] = field(default_factory=list)  # headings: (block, text)


def topic_hits(text: str, topic: Topic) -> tuple[int, float]:
    """(words, summed topic weight) of one text."""
    toks = words(text)
    hits = 0.0
    info = topic.token
    phrases = topic.phrases
    if not phrases:
        for t in toks:
            hits += info(t)[0]
        return len(toks), hits
    stems = []
    for t in toks:
        w, s = info(t)
        hits += w
        stems.append(s)
    for i, s in enumerate(stems):
        if s in phrases:
            for seq, w in phrases[s]:
                if tuple(stems[i:i + len(seq)]) == seq:
                    hits += w
    return len(toks), hits


def score_blocks(blocks: list[Block], topic: Topic) -> None:
    for b in blocks:
        b.words, hits = topic_hits(b.text, topic)
        penalty = (1.0 - b.link) ** 2 * (NOISE_PENALTY if b.noisy else 1.0)
        b.hits = hits * penalty
        b.density = b.hits / max(b.words, FLOOR)


def smooth(values: list[float], sigma: float = SIGMA) -> list[float]:
    """Gaussian kernel smoothing, renormalised at the ends (no fade at page edges)."""
    radius = max(1, int(3 * sigma))
    kernel = [math.exp(-(k * k) / (2 * sigma * sigma)) for k in range(-radius, radius + 1)]
    n = len(values)
    out = [0.0] * n
    nonzero = [i for i, v in enumerate(values) if v]
    acc = [0.0] * n
    norm = [0.0] * n
    for i in range(n):  # norms first: cheap, and exact at the edges
        lo, hi = max(0, i - radius), min(n - 1, i + radius)
        norm[i] = sum(kernel[j - i + radius] for j in range(lo, hi + 1))
    for j in nonzero:  # then spread only the blocks that have topic words
        v = values[j]
        for i in range(max(0, j - radius), min(n - 1, j + radius) + 1):
            acc[i] += v * kernel[j - i + radius]
    for i in range(n):
        out[i] = acc[i] / norm[i] if norm[i] else 0.0
    return out


def _peaks(smoothed: list[float], raw: list[float]) -> list[int]:
    n = len(smoothed)
    peaks = [i for i in range(n)
             if smoothed[i] >= MIN_PEAK and raw[i] > 0
             and (i == 0 or smoothed[i] >= smoothed[i - 1])
             and (i == n - 1 or smoothed[i] > smoothed[i + 1])]
    peaks.sort(key=lambda i: -smoothed[i])
    return peaks[:MAX_PEAKS]


def _list_spans(blocks: list[Block]) -> dict[int, tuple[int, int]]:
    spans: dict[int, tuple[int, int]] = {}
    for i, b in enumerate(blocks):
        if b.group:
            first, _ = spans.get(b.group, (i, i))
            spans[b.group] = (first, i)
    return spans


def _density(blocks: list[Block]) -> float:
    return sum(b.hits for b in blocks) / (sum(max(b.words, 1) for b in blocks) or 1)


def _sibling_sections(lo: int, hi: int, blocks: list[Block], taken: list[bool],
                      background: float) -> tuple[int, int]:
    """Steps split under sub-headings ("Levain", "Autolyse", "Bake") are one text: a
    region that starts at a heading takes in the neighbouring sections under headings of
    the same level while they are on topic (density >= SIBLING x the region's and the
    the page's)."""
    if blocks[lo].kind != "heading":
        return lo, hi
    level = blocks[lo].args[1]
    need = max(SIBLING * _density(blocks[lo:hi + 1]), background)
    while lo > 0:  # backwards: the previous section must start at a same-level heading
        j = lo - 1
        while j >= 0 and blocks[j].kind != "heading":
            j -= 1
        if (j < 0 or blocks[j].args[1] != level or any(taken[j:lo])
                or _density(blocks[j:lo]) < need):
            break
        lo = j
    n = len(blocks)
    while hi + 1 < n and blocks[hi + 1].kind == "heading" and blocks[hi + 1].args[1] == level:
        k = hi + 2
        while k < n and blocks[k].kind != "heading":
            k += 1
        if any(taken[hi + 1:k]) or _density(blocks[hi + 1:k]) < need:
            break
        hi = k - 1
    return lo, hi


def _grow(p: int, blocks: list[Block], sm: list[float], taken: list[bool],
          spans: dict[int, tuple[int, int]], background: float = 0.0) -> Region | None:
    n = len(blocks)
    floor_ = GROW * sm[p]
    lo = hi = p
    while lo > 0 and not taken[lo - 1] and sm[lo - 1] >= floor_:
        lo -= 1
    while hi < n - 1 and not taken[hi + 1] and sm[hi + 1] >= floor_:
        hi += 1
    edge = EDGE * sm[p]
    while lo < hi and blocks[lo].density < edge:
        lo += 1
    while hi > lo and blocks[hi].density < edge:
        hi -= 1
    # A minimum size: a lone short line comes with its stronger neighbours.
    size = sum(blocks[i].words for i in range(lo, hi + 1))
    while size < MIN_WORDS:
        left = sm[lo - 1] if lo > 0 and not taken[lo - 1] else 0.0
        right = sm[hi + 1] if hi < n - 1 and not taken[hi + 1] else 0.0
        if left <= 0 and right <= 0:
            break
        if left >= right:
            lo -= 1
            size += blocks[lo].words
        else:
            hi += 1
            size += blocks[hi].words
    # Lists are kept whole or not at all.
    for _ in range(4):  # closing one list can reach into another; a few rounds settle it
        changed = False
        for group in {blocks[i].group for i in (lo, hi) if blocks[i].group}:
            first, last = spans[group]
            if first >= lo and last <= hi:
                continue
            a, b = max(first, lo), min(last, hi)
            covered = b - a + 1
            items = blocks[first:last + 1]
            list_density = sum(x.hits for x in items) / sum(max(x.words, FLOOR) for x in items)
            if (covered * 2 >= last - first + 1 or list_density >= LIST_KEEP * sm[p]) \
                    and not any(taken[first:last + 1]):
                lo, hi = min(lo, first), max(hi, last)
            elif first <= lo and last >= hi:
                return None  # the region is a sliver of a list that is not about the topic
            elif first < lo:
                lo = last + 1
            else:
                hi = first - 1
            changed = True
            if lo > hi:
                return None
        if not changed:
            break
    # Regions follow sections: a weak stub before the first inner heading (the recipe
    # card's "Prep time 15 mins" above "Ingredients") or after the last one goes.
    mass = sum(b.hits for b in blocks[lo:hi + 1])
    heads = [i for i in range(lo + 1, hi + 1) if blocks[i].kind == "heading"]
    if heads and sum(b.hits for b in blocks[lo:heads[0]]) < STUB * mass:
        lo = heads[0]
    if heads and heads[-1] > lo and sum(b.hits for b in blocks[heads[-1]:hi + 1]) < STUB * mass:
        hi = heads[-1] - 1
    lo, hi = _sibling_sections(lo, hi, blocks, taken, background)
    # The heading just above (maybe past one short lead-in line) names the section.
    if lo > 0 and blocks[lo - 1].kind == "heading" and not taken[lo - 1]:
        lo -= 1
    elif (lo > 1 and blocks[lo - 2].kind == "heading" and blocks[lo - 1].kind == "paragraph"
          and blocks[lo - 1].words <= 12 and not taken[lo - 1] and not taken[lo - 2]):
        lo -= 2
    # ... and so does a parent heading right above it ("Instructions" over "Levain").
    while (lo > 0 and blocks[lo].kind == "heading" and blocks[lo - 1].kind == "heading"
           and blocks[lo - 1].args[1] < blocks[lo].args[1] and not taken[lo - 1]):
        lo -= 1
    mass = sum(b.hits for b in blocks[lo:hi + 1])
    if mass <= 0:
        return None
    nwords = sum(max(b.words, 1) for b in blocks[lo:hi + 1])
    density = mass / nwords
    return Region(lo, hi, p, mass, density, mass * math.sqrt(density))


def _transparent(blocks: list[Block]) -> list[bool]:
    """Blocks the sieve looks through: boilerplate or link-only blocks without topic
    words (an "Advertisement" label or a share bar between two story paragraphs, the
    jump-to-recipe button). They neither separate the blocks around them nor get kept.
    A list is transparent only as a whole, so none is ever cut."""
    own = [b.hits == 0 and (b.noisy or b.link >= 0.5) for b in blocks]
    groups: dict[int, bool] = {}
    for b, t in zip(blocks, own, strict=True):
        if b.group:
            groups[b.group] = groups.get(b.group, True) and t
    return [groups[b.group] if b.group else t for b, t in zip(blocks, own, strict=True)]


def _variety(blocks: list[Block], topic: Topic) -> float:
    """How many different topic words the region uses, against what a real instance
    shows (VARIETY distinct terms, fewer for a topic of few words), in [0, 1]. An
    ingredient list names flour, butter, eggs, grams and spoons; a car review that only
    hits numbers and litres is dense in the topic's weight but not about it."""
    stem = topic.stem
    seen = {s for b in blocks for s in map(stem, words(b.text)) if s in topic.terms}
    need = min(VARIETY, max(1.0, len(topic.terms) / 2))
    return min(1.0, len(seen) / need) ** 2  # squared: one or two terms are no evidence


def sieve_blocks(blocks: list[Block], topic: Topic) -> SieveResult:
    """Choose the blocks to keep (see the module doc)."""
    score_blocks(blocks, topic)
    index = [i for i, t in enumerate(_transparent(blocks)) if not t]
    act = [blocks[i] for i in index]  # regions are found on this sequence
    raw = [b.density for b in act]
    sm = smooth(raw) if act else []
    spans = _list_spans(act)
    background = _density(act)
    taken = [False] * len(act)
    regions: list[Region] = []
    for p in _peaks(sm, raw):
        if taken[p]:
            continue
        region = _grow(p, act, sm, taken, spans, background)
        if region is None:
            continue
        regions.append(region)
        for i in range(region.start, region.end + 1):
            taken[i] = True
    regions.sort(key=lambda r: -r.score)
    chosen = regions[:1] + [r for r in regions[1:] if r.score >= RELATIVE * regions[0].score
                            and r.density >= SIMILAR * regions[0].density][:topic.max_regions - 1]
    chosen.sort(key=lambda r: r.start)
    kept = [index[j] for r in chosen for j in range(r.start, r.end + 1)]
    total = sum(b.hits for b in act)
    confidence = 0.0
    if chosen:
        best = max(chosen, key=lambda r: r.score)
        share = sum(r.mass for r in chosen) / total if total else 0.0
        # A topic of a few words cannot reach the mass and density of a 50-word preset:
        # the references shrink with its size.
        size = min(1.0, (len(topic.terms) + len(topic.phrases) + len(topic.patterns)) / 20)
        confidence = ((1 - math.exp(-best.mass / (6 * size)))
                      * min(1.0, best.density / (0.15 * size))
                      * (0.3 + 0.7 * share)
                      * _variety(act[best.start:best.end + 1], topic))
    for r in chosen:  # report page block numbers
        r.start, r.end, r.peak = index[r.start], index[r.end], index[r.peak]
    profile = [0.0] * len(blocks)
    for j, i in enumerate(index):
        profile[i] = round(sm[j], 3)
    return SieveResult(topic.name, len(blocks), kept, chosen, round(confidence, 3),
                       sum(blocks[i].words for i in kept), profile=profile)


# -- the shaped sieve (topics with @shape) --------------------------------------------------
def split_lines(blocks: list[Block]) -> list[Block]:
    """Paragraphs of several lines and tables broken into one block per line: to the
    shaped sieve a ``<p>`` of ``<br>``-separated ingredients, or a table of them, is a
    list like any other, and its first line ("Ingredients:") a heading."""
    out: list[Block] = []
    for b in blocks:
        lines: list[str] = []
        if b.kind == "table":
            lines = [" ".join(str(c) for c in row if c).strip() for row in b.args[0]]
        elif b.kind == "paragraph" and "\n" in b.text:
            lines = b.text.split("\n")
        lines = [x.strip() for x in lines if x.strip()]
        if len(lines) < 2:
            out.append(b)
            continue
        out.extend(Block("paragraph", (x,), x, 0, b.noisy, b.link, containers=b.containers,
                         kinds=b.kinds, boxes=b.boxes)
                   for x in lines)
    return out


def step_marks(blocks: list[Block]) -> dict[int, int]:
    """Steps numbered on lines of their own ("1", "Step 2", "Étape 3 /8" above each
    step's text): {marker block: its step block}. Only runs of consecutive numbers
    count (a lone "88" is a comment count); the step is the next block of some words."""
    found: dict[int, int] = {}
    last: tuple[int, int] | None = None  # (number, block) of the previous marker
    for i, b in enumerate(blocks):
        n = shapes.step_mark(b.text, b.kind == "heading")
        if n is None:
            continue
        if last is not None and n == last[0] + 1 and i - last[1] <= MARK_GAP:
            for j in (last[1], i):
                if j not in found and j + 1 < len(blocks) and blocks[j + 1].words >= 2 \
                        and blocks[j + 1].kind != "heading" \
                        and shapes.step_mark(blocks[j + 1].text) is None:
                    found[j] = j + 1
        last = (n, i)
    return found


def shape_scores(blocks: list[Block], topic: Topic,
                 card: frozenset[str] = frozenset()) -> list[float]:
    """Each block's evidence for a shaped topic: its shape (shape.py) plus its topic
    words, damped by links and boilerplate containers. Headings and labels ("For the
    sauce:") score by their topic words alone: "Ingredients" pulls a region in, "Notes"
    (a negative weight) stops it, any other costs a little to cross. ``card``: the kinds
    of box the @near topic's region sits in (``_card_kinds``), not damped as boilerplate
    on this page."""
    out: list[float] = []
    items = topic.shape == "items"
    heading = THRESHOLD[topic.shape or "items"] - HEADING_COST
    numbered = set() if items else set(step_marks(blocks).values())
    for n, b in enumerate(blocks):
        b.words, hits = topic_hits(b.text, topic)
        b.hits, b.density = hits, hits / max(b.words, FLOOR)
        line = shapes.line(b.text)
        if b.kind == "heading" or line.label:
            score = heading + max(-2.0, min(1.0, HEADING_GAIN * hits))
        elif items:
            score = shapes.item_score(line, b.density)
        else:
            ordered = (b.kind == "list_item" and bool(b.args[2])) or n in numbered
            score = shapes.step_score(line, b.density, ordered)
        # A link is a menu or a related post, unless the line starts with a quantity
        # (the ingredient is a link to a shop or a glossary, the quantity is not).
        link = 1.0 - 0.5 * b.link if line.qty_start else (1.0 - b.link) ** 2
        soft = b.noisy and not (b.kinds and set(b.kinds) <= card)
        noise = NOISE_PENALTY if b.hard else SOFT_NOISE if soft else 1.0
        out.append(score * link * noise)
    return out


def _near_boost(blocks: list[Block], scores: list[float],
                near: tuple[int, int]) -> list[float]:
    """Scores beside the @near topic's region (blocks ``near``) raised, decaying with the
    distance (the region itself is a wall, see sieve_shaped): the directions follow the
    ingredients, they are not them. Headings keep their score: "Rate this recipe" right
    under the steps is no step. When a list of steps (ordered, or of sentences) starts
    within NEAR_DECAY blocks after the region, the boost ends with that list: a story
    paragraph after the card's steps is not lifted with them."""
    lo, hi = near
    def steps_item(i: int) -> bool:
        b = blocks[i]
        return b.kind == "list_item" and (b.args[2] or shapes.line(b.text).sentence)

    end = len(blocks)
    # Where the page names the section ("Instructions") soon after the region, the
    # steps start at that name: what lies between (a "Why this recipe works" story, a
    # shopping tip) is not lifted by the nearness of the ingredients.
    named = next((i for i in range(hi + 1, min(len(blocks), hi + 1 + int(NEAR_DECAY)))
                  if _names_section(blocks[i])), None)
    for i in range(hi + 1, min(len(blocks), hi + 1 + int(NEAR_DECAY))):
        if steps_item(i):  # the end of this list and of lists of steps right after it
            end = i
            while end + 1 < len(blocks) and (blocks[end + 1].part == blocks[end].part
                                             or steps_item(end + 1)):
                end += 1
            break
    out = []
    for i, v in enumerate(scores):
        if _is_heading(blocks[i]) or i > end:
            out.append(v)
        elif lo <= i <= hi:
            out.append(0.0)
        elif i > hi and named is not None and i < named:
            out.append(v)
        elif i > hi:
            out.append(v * (1.0 + NEAR_AFTER * math.exp(-(i - hi - 1) / NEAR_DECAY)))
        else:
            out.append(v * (1.0 + NEAR_BEFORE * math.exp(-(lo - i - 1) / NEAR_DECAY)))
    return out


def _best_run(values: list[float], free: list[bool]) -> tuple[int, int, float]:
    """The run of free units with the largest sum (Kadane): (first, last, sum)."""
    best = (-1, -1, 0.0)
    start, acc = 0, 0.0
    for i, v in enumerate(values):
        if not free[i]:
            start, acc = i + 1, 0.0
            continue
        if acc <= 0:
            start, acc = i, 0.0
        acc += v
        if acc > best[2]:
            best = (start, i, acc)
    return best


def _best_run_from(values: list[float], free: list[bool],
                   starts: list[int]) -> tuple[int, int, float]:
    """The run of free units with the largest sum that starts at one of ``starts``."""
    best = (-1, -1, 0.0)
    for s in starts:
        acc = 0.0
        for i in range(s, len(values)):
            if not free[i]:
                break
            acc += values[i]
            if acc > best[2]:
                best = (s, i, acc)
    return best


def _units_after(end: int, units: list[tuple[int, int]], index: list[int],
                 free: list[bool]) -> list[int]:
    """The units that start within ADJACENT_BLOCKS blocks after block ``end``, up to a
    wall ("Notes", "Tips")."""
    out = []
    for u, (a, _) in enumerate(units):
        if index[a] > end + ADJACENT_BLOCKS or (index[a] > end and not free[u]):
            break
        if index[a] > end:
            out.append(u)
    return out


def _is_heading(b: Block) -> bool:
    return b.kind == "heading" or shapes.line(b.text).label


def _section_name(b: Block) -> bool:
    """A heading, a label, or a line of at most three words without a quantity: what a
    page names its sections with, whatever the markup ("Preparation." in a paragraph of
    its own between the ingredients and the steps)."""
    if b.kind == "list_item":
        return False
    s = shapes.line(b.text)
    return b.kind == "heading" or s.label or (s.words <= 3 and not s.qty)


def _wall(b: Block) -> bool:
    """A section name that names another section ("Instructions" to the ingredients,
    "Notes", "Comments"): a shaped region never runs across it, however good the lines
    beyond (the second list under "Preparation" is a sub-recipe of the steps)."""
    return b.hits <= WALL and _section_name(b)


def _threshold(blocks: list[Block], scores: list[float], topic: Topic) -> float:
    """The score a block needs to count for its region. Steps: what the page's ordinary
    prose scores (its 90th percentile block of 8 words or more) plus STEP_MARGIN, within
    STEP_FLOOR..THRESHOLD. A story full of the topic's words ("butter", "oven") scores
    high, and in a language the topic has no words for everything scores low: the
    steps must stand out from the prose of their own page."""
    top = THRESHOLD[topic.shape or "items"]
    if topic.shape != "steps":
        return top
    prose = sorted(v for b, v in zip(blocks, scores, strict=True)
                   if b.words >= 8 and not _is_heading(b)
                   and not (b.kind == "list_item" and b.args[2]))
    if not prose:
        return top
    return max(STEP_FLOOR, min(top, prose[int(len(prose) * PROSE_Q)] + STEP_MARGIN))


def _sibling_lists(first: int, last: int, units: list[tuple[int, int]], index: list[int],
                   blocks: list[Block], scores: list[float], free: list[bool],
                   threshold: float) -> tuple[int, int]:
    """The repeated shape of a card: lists beside the region, each after at most one
    heading or label that is not a wall ("2. Make the sauce:", "For the filling:"), join
    it when their lines score at least SIBLING_LIST of the region's own (a card's later steps
    name fewer topic words than its first, and lie further from the ingredients)."""
    own = [scores[index[x]] for u in range(first, last + 1)
           for x in range(units[u][0], units[u][1] + 1) if not _is_heading(blocks[index[x]])]
    if not own:
        return first, last
    need = SIBLING_LIST * sum(own) / len(own)

    def heading(u: int) -> bool:
        a, b = units[u]
        return (a == b and _is_heading(blocks[index[a]])
                and scores[index[a]] >= threshold - HEADING_COST - 1e-9)

    def good_list(u: int) -> bool:
        a, b = units[u]
        if blocks[index[a]].kind != "list_item":
            return False
        mean = sum(scores[index[x]] for x in range(a, b + 1)) / (b - a + 1)
        return mean >= need

    for step in (1, -1):
        edge = last if step == 1 else first
        while True:
            u = edge + step
            if 0 <= u < len(units) and free[u] and heading(u):
                u += step
            if not (0 <= u < len(units) and free[u] and good_list(u)):
                break
            edge = u
        if step == 1:
            last = edge
        else:
            first = edge
    return first, last


def _names_section(b: Block) -> bool:
    """A section name made of the topic's own words ("Preparation", "Method:")."""
    return b.hits >= NAMES and _section_name(b)


def _section_start(first: int, units: list[tuple[int, int]], index: list[int],
                   blocks: list[Block], free: list[bool]) -> int:
    """Steps start at the name of their section: a region of steps that begins under
    "Preparation" and a sub-recipe ("For the stock:" and its items, which the steps go
    on to use) starts at that name, the sub-recipe with it: it belongs to the steps, not
    to the ingredients above the section name. Only labels and item lines may lie
    between (at most LEAD_LINES), and nothing is taken across a wall or a region."""
    u, lines, label = first - 1, 0, False
    while u >= 0 and free[u] and lines <= LEAD_LINES:
        a, b = units[u]
        block = blocks[index[a]]
        if a == b and _names_section(block):
            return u if label else first
        for x in range(a, b + 1):
            s = shapes.line(blocks[index[x]].text)
            if s.label:
                label = True
            elif not s.qty_start or s.percent or s.nutrition or s.words > LEAD_WORDS:
                return first
        lines += b - a + 1
        u -= 1
    return first


def _after_stub(first: int, last: int, units: list[tuple[int, int]], index: list[int],
                blocks: list[Block], values: list[float], names: bool = False) -> int:
    """A region that runs into a heading starts at the first such heading when what comes
    before it adds less than STUB of the region's value: a recipe card's "Prep time 20
    minutes", "Servings 4" above its "Ingredients" are not ingredients. With ``names``,
    a section name made of the topic's words ("Instructions") is such a heading too, and
    goes first: "Before you begin" and its tip above "Instructions" are no step."""
    total = sum(values[first:last + 1])

    def cut_at(stop: Callable[[Block], bool]) -> int | None:
        """The first unit past ``first`` that ``stop`` takes, if little comes before it."""
        before = 0.0
        for u in range(first + 1, last + 1):
            before += values[u - 1]
            a, b = units[u]
            if a == b and stop(blocks[index[a]]):
                return u if before < STUB * total else None
        return None

    named = cut_at(_names_section) if names else None
    if named is not None:
        return named
    cut = cut_at(lambda b: b.kind == "heading" or (names and _names_section(b)))
    return first if cut is None else cut


def _post_tail(blocks: list[Block], hi: int, own: list[bool]) -> int:
    """Steps written as a post's paragraphs (not a list) run to the end of their box when
    what is left of it is a short closing (TAIL_BLOCKS paragraphs, TAIL_WORDS words at
    most, no heading, no links): "Let it rest five minutes." and the author's "Enjoy!"
    close the method the post is. A list's steps end with the list."""
    last = blocks[hi]
    if last.kind != "paragraph" or not last.boxes or _is_heading(last):
        return hi
    box = last.boxes[-1]
    j, words = hi + 1, 0
    while j < len(blocks) and box in blocks[j].boxes:
        b = blocks[j]
        if (b.boxes[-1] != box or b.kind != "paragraph" or _is_heading(b) or b.link >= 0.5
                or b.noisy or own[j] or j - hi > TAIL_BLOCKS):
            return hi  # a nested box, a list, a heading, a link: more than a closing
        words += b.words
        j += 1
    return hi if j == hi + 1 or words > TAIL_WORDS else j - 1


def _counters(blocks: list[Block], own: list[bool]) -> None:
    """A bare number between two links the sieve looks through is one of those links'
    counters (comments, ratings, a rank in "most read"), looked through with them. Not a
    number beside a line of text: "250" above "g flour" is the quantity of its item."""
    for i in range(1, len(blocks) - 1):
        if (not own[i] and own[i - 1] and own[i + 1] and blocks[i].words <= 1
                and blocks[i - 1].link >= 0.5 and blocks[i + 1].link >= 0.5
                and shapes.line(blocks[i].text).leading_qty):
            own[i] = True


def _card_kinds(blocks: list[Block], near: tuple[int, int] | None) -> frozenset[str]:
    """The @near topic's region may sit in boxes whose class only sounds like
    boilerplate ("recipe-widget"): on this page that kind of box is the card, so blocks
    in boxes of no other kind are not damped as boilerplate (the steps' own "widget"
    beside the ingredients'). Hard boilerplate (nav, footer, comments) stays damped."""
    if near is None:
        return frozenset()
    return frozenset(k for b in blocks[near[0]:near[1] + 1] if b.noisy and not b.hard
                     for k in b.kinds)


def sieve_shaped(blocks: list[Block], topic: Topic,
                 near: tuple[int, int] | None = None) -> SieveResult:
    """The shaped sieve: every block adds its score minus THRESHOLD, lists count as one
    unit (kept whole or not at all), blocks the sieve looks through (see _transparent)
    are skipped, and the region is the run of units with the largest sum. Sub-headings
    and short labels between two good lists cost little, so a list split under "For the
    dough:" / "For the filling:" comes whole; a story paragraph, a step among
    ingredients or an ingredient line among steps costs a lot, so the region ends there.
    ``near``: the page blocks of the @near topic's region."""
    scores = shape_scores(blocks, topic, _card_kinds(blocks, near))
    threshold = _threshold(blocks, scores, topic)
    shift = threshold - THRESHOLD[topic.shape or "items"]
    if shift:  # headings cost the same to cross whatever the threshold
        scores = [v + shift if _is_heading(b) else v for b, v in zip(blocks, scores, strict=True)]
    marks = step_marks(blocks) if topic.shape == "steps" else {}
    for j in marks.values():  # a numbered step counts however short
        scores[j] = max(scores[j], threshold + STEP_MARGIN)
    plain = scores  # before the @near boost: how good a line is on its own
    if near is not None:
        scores = _near_boost(blocks, scores, near)
    # Blocks looked through: links and boilerplate without topic words; never a wall,
    # nor the @near topic's region (looked through, they would no longer stop a region).
    lo_near, hi_near = near if near is not None else (-1, -2)
    own = [((b.hits <= 0 and (b.noisy or b.link >= 0.5) and s < THRESHOLD["items"])
            or i in marks) and not _wall(b) and not lo_near <= i <= hi_near
           for i, (b, s) in enumerate(zip(blocks, scores, strict=True))]
    _counters(blocks, own)
    index = [i for i, t in enumerate(own) if not t]
    units: list[tuple[int, int]] = []  # positions in ``index``
    k = 0
    while k < len(index):
        j = k
        part = blocks[index[k]].part
        while part and j + 1 < len(index) and blocks[index[j + 1]].part == part:
            j += 1
        units.append((k, j))
        k = j + 1
    for a, b in units:  # a list that states energy or milligrams is a nutrition table
        if b > a and any(shapes.line(blocks[index[x]].text).nutrition
                         for x in range(a, b + 1)):
            for x in range(a, b + 1):
                scores[index[x]] *= NUTRITION
                if plain is not scores:
                    plain[index[x]] *= NUTRITION
    weight = [max(b.words, 1) ** SIZE_POWER for b in blocks]
    values = [sum((scores[i] - threshold) * weight[i] for i in (index[x] for x in range(a, b + 1)))
              for a, b in units]
    free = [not (a == b and _wall(blocks[index[a]])) for a, b in units]
    if near is not None:  # the other topic's region is a wall
        free = [f and not (near[0] <= index[b] and index[a] <= near[1])
                for f, (a, b) in zip(free, units, strict=True)]
    chosen: list[Region] = []
    while len(chosen) < topic.max_regions:
        first, last, value = _best_run(values, free)
        if near is not None and not chosen:
            run = _best_run_from(values, free, _units_after(near[1], units, index, free))
            if run[0] >= 0 and run[2] >= ADJACENT * value:
                first, last, value = run
        if first < 0 or value < MIN_VALUE or (chosen and value < RELATIVE * chosen[0].score):
            break
        first = _after_stub(first, last, units, index, blocks, values, True)
        if topic.shape == "steps":
            first = _section_start(first, units, index, blocks, free)
        first, last = _sibling_lists(first, last, units, index, blocks, plain, free,
                                     threshold)
        lo, hi = index[units[first][0]], index[units[last][1]]
        # A parent heading right above names it ("Roast potatoes" over "Directions").
        while (lo > 0 and blocks[lo].kind == "heading" and blocks[lo - 1].kind == "heading"
               and blocks[lo - 1].args[1] < blocks[lo].args[1] and not own[lo - 1]
               and scores[lo - 1] >= 0):
            lo -= 1
        if topic.shape == "steps":
            hi = _post_tail(blocks, hi, own)
        mass = sum(max(scores[i], 0.0) for i in range(lo, hi + 1) if not own[i])
        nwords = sum(max(blocks[i].words, 1) for i in range(lo, hi + 1)) or 1
        chosen.append(Region(lo, hi, lo, mass, mass / nwords, value))
        for u in range(first, last + 1):
            free[u] = False
    chosen.sort(key=lambda r: r.start)
    kept = [i for r in chosen for i in range(r.start, r.end + 1) if not own[i]]
    best = max((r.score for r in chosen), default=0.0)
    confidence = 1.0 - math.exp(-best / 3.0) if chosen else 0.0
    return SieveResult(topic.name, len(blocks), kept, chosen, round(confidence, 3),
                       sum(blocks[i].words for i in kept), found=bool(chosen),
                       profile=[0.0 if t else round(v, 3) for v, t in zip(scores, own,
                                                                          strict=True)],
                       threshold=threshold)


def replay(blocks: list[Block], kept: list[int], out: Builder) -> None:
    for i in kept:
        b = blocks[i]
        getattr(out, b.kind)(*b.args)


def _from_recipe(lines: list[str], topic: Topic, out: Builder) -> SieveResult:
    ordered = topic.recipe == "instructions"
    for n, line in enumerate(lines, 1):
        out.list_item(line, 0, ordered, n)
    return SieveResult(topic.name, 0, [], [], 1.0, sum(len(words(x)) for x in lines),
                       source="recipe", items=len(lines))


def _needs_page(lines: list[str], topic: Topic) -> bool:
    """An item list in the Recipe data without a single quantity ("Sugar", "Flour")
    where the page may show the amounts: the page's own list is looked at too."""
    return topic.shape == "items" and not any(shapes.line(x).qty for x in lines)


def _shows(blocks: list[Block], result: SieveResult, lines: list[str]) -> bool:
    """Whether the sieved region holds most of the Recipe data's lines (then it is the
    same list, as the page shows it)."""
    if not result.kept or result.confidence < MIN_CONFIDENCE:
        return False
    text = " ".join(blocks[i].text for i in result.kept).casefold()
    return sum(x.casefold() in text for x in lines) >= 0.6 * len(lines)


def _sieve_near(blocks: list[Block], topic: Topic) -> SieveResult:
    """The shaped sieve beside the @near topic's region. A page may show that region
    twice (the write-up's list, then the card's; the mobile and the desktop layout):
    each copy (a region scoring COPY of the best) is tried, and the pair of it and the
    region found beside it that scores most wins (the card's list comes with its
    steps), the later on a tie."""
    other = near_topic(topic)
    if other is None:
        return sieve_shaped(blocks, topic)
    found = sieve_shaped(blocks, dataclasses.replace(other, max_regions=COPIES))
    if not found.regions:
        return sieve_shaped(blocks, topic)
    top = max(r.score for r in found.regions)
    best: tuple[float, SieveResult] | None = None
    for r in found.regions:
        if r.score >= COPY * top:
            result = sieve_shaped(blocks, topic, (r.start, r.end))
            value = r.score + max((x.score for x in result.regions), default=0.0)
            if best is None or value >= best[0]:
                best = (value, result)
    assert best is not None
    return best[1]


def _drop_repeats(blocks: list[Block], kept: list[int]) -> list[int]:
    """The kept blocks without the page's second showing of the same text: all of a
    recipe's steps in one paragraph and then each on its own (a layout for each screen
    size, one hidden by a style sheet we do not read). The finer cut stays: a block
    whose text other kept blocks hold (REPEAT of it, in two or more pieces of REPEAT_MIN
    characters or more) goes, and so does a later copy of a long one. Equal short lines
    stay: two versions of a recipe share "1 egg, beaten"; but a whole section (the
    blocks from one heading to the next) equal to an earlier one, the list shown again
    for another screen, goes with its heading."""
    if len(kept) > REPEAT_BLOCKS:  # quadratic; a region this large is no card
        return kept
    text = {i: " ".join(blocks[i].text.split()).casefold() for i in kept}
    kept = _drop_repeated_sections(blocks, kept, text)
    out = []
    for i in kept:
        t = text[i]
        if len(t) < 2 * REPEAT_MIN:
            out.append(i)
            continue
        pieces = {text[j] for j in kept if j != i and REPEAT_MIN <= len(text[j]) < len(t)
                  and text[j] in t}
        if (len(pieces) >= 2 and sum(map(len, pieces)) >= REPEAT * len(t)) or (
                len(t) >= REPEAT_LONG and any(text[j] == t for j in out)):
            continue
        out.append(i)
    return out


def _drop_repeated_sections(blocks: list[Block], kept: list[int],
                            text: dict[int, str]) -> list[int]:
    """``kept`` without a section whose lines (two or more, in order, word for word)
    repeat an earlier section's; a section starts at a heading or a label."""
    sections: list[list[int]] = []
    for i in kept:
        if not sections or _is_heading(blocks[i]):
            sections.append([])
        sections[-1].append(i)
    seen: list[tuple[str, ...]] = []
    out: list[int] = []
    for sec in sections:
        # by their words: the card's copy drops the write-up's commas and brackets
        lines = tuple(" ".join(_WORD.findall(text[i])) for i in sec
                      if not _is_heading(blocks[i]))
        if len(lines) >= 2 and any(_variant(lines, old) for old in seen):
            continue
        seen.append(lines)
        out.extend(sec)
    return _drop_second_copy(blocks, out, text)


def _drop_second_copy(blocks: list[Block], kept: list[int],
                      text: dict[int, str]) -> list[int]:
    """``kept`` without a run of lines that follows a run of the same lines (a
    ``_variant`` of it, three lines or more) with no heading between: the list in both
    unit systems, one after the other, where a toggle shows one."""
    lines = [i for i in kept if not _is_heading(blocks[i])]
    words = [" ".join(_WORD.findall(text[i])) for i in lines]
    n = len(words)
    for start in range(n):
        for p in range(3, n - start):
            if words[start] != words[start + p]:
                continue
            second = words[start + p:start + 2 * p]  # may end early (the kept region did)
            if len(second) >= 3 and len(second) >= VARIANT_PART * p and _variant(
                    tuple(second), tuple(words[start:start + len(second)])):
                drop = set(lines[start + p:start + p + len(second)])
                return [i for i in kept if i not in drop]
    return kept


def _variant(lines: tuple[str, ...], old: tuple[str, ...]) -> bool:
    """The same section again: word for word, or (three lines or more) the same number of
    lines, in order, all but VARIANT of them equal: the list in the other units
    ("250g plain flour" / "8.8oz plain flour") a toggle switches to."""
    if lines == old:
        return True
    if len(lines) < 3 or len(lines) != len(old):
        return False
    differ = sum(a != b for a, b in zip(lines, old, strict=True))
    return differ <= VARIANT * len(lines)


def _sieve_page(root: etree._Element, topic: Topic) -> tuple[list[Block], SieveResult]:
    blocks = blocks_of(root)
    if topic.shape:
        blocks = split_lines(blocks)
        return blocks, _sieve_near(blocks, topic)
    return blocks, sieve_blocks(blocks, topic)


def _confident(result: SieveResult) -> bool:
    return bool(result.kept) and result.confidence >= MIN_CONFIDENCE


def sieve_element(root: etree._Element, topic: Topic, out: Builder) -> SieveResult:
    """Sieve a parsed page (the tree is modified: anchors get marks).

    A topic tied to a recipe part (``@recipe``) is answered from the page's own Recipe
    data when it has that part: the author's exact list, not a guess from the layout.
    Otherwise the density sieve; a region kept with a confidence under MIN_CONFIDENCE
    is not rendered (``found`` is False): no block is better than a wrong one."""
    lines: list[str] = []
    if topic.recipe:
        found = structured.recipe(root)
        lines = found.part(topic.recipe) if found else []
        if lines and not _needs_page(lines, topic):
            return _from_recipe(lines, topic, out)
    blocks, result = _sieve_page(root, topic)
    if not _confident(result) and show_hidden(root):
        # Nothing about the topic in what a reader sees: the recipe card may be the
        # part the page hides until a script picks its layout (style="display: none").
        again, second = _sieve_page(root, topic)
        if _confident(second):
            blocks, result = again, second
    if lines and not _shows(blocks, result, lines):
        return _from_recipe(lines, topic, out)
    result.kept = _drop_repeats(blocks, result.kept)
    result.heads = [(i, b.text.strip()) for i, b in enumerate(blocks) if b.kind == "heading"]
    if result.kept and result.confidence < MIN_CONFIDENCE:
        result.found, result.kept, result.words = False, [], 0
    elif not result.kept:
        result.found = False
    replay(blocks, result.kept, out)
    return result


def sieve(html: str | bytes, topic: Topic, out: Builder) -> SieveResult:
    """Render into ``out`` only the region of ``html`` densest in ``topic``."""
    text = decode_html(html)[0] if isinstance(html, bytes) else html
    return sieve_element(parse_html(text.replace("\x00", "")), topic, out)


def sieve_document(root: etree._Element, doc: Document, out: Builder, spec: str) -> None:
    """The ``--html sieve`` path of the HTML extractor: head metadata, then the sieve;
    the topic, confidence and kept block count go to ``doc.metadata.extra``."""
    html_metadata(root, doc)
    language = primary_language(doc.metadata.language)
    if language not in STOP_WORDS:  # undeclared, or one without presets: guess
        body = next((c for c in root if tag_name(c) == "body"), root)
        language = guess_language(visible_text(body)) or language
    topic = load_topic(spec, language)
    result = sieve_element(root, topic, out)
    doc.metadata.extra.update(sieve_topic=topic.name, sieve_confidence=result.confidence,
                              sieve_blocks=result.items or len(result.kept),
                              sieve_found=result.found, sieve_source=result.source)
    if topic.language:
        doc.metadata.extra["sieve_language"] = topic.language
    if result.profile:  # what `--explain` and the reading room draw (web/sieveplot.py)
        spans = [(r.start, r.end) for r in result.regions] if result.found else []
        doc.metadata.extra["sieve_profile"] = sieveplot.profile_record(
            result.profile, spans, result.threshold, result.heads)
    if not result.found:
        doc.warnings.append(f"no block about this topic ({topic.name}); best confidence "
                            f"{result.confidence} < {MIN_CONFIDENCE}")
