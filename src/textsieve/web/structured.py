"""A page's own structured data: JSON-LD nodes, Open Graph type, schema.org microdata.

Why: a page often says what it is (``"@type": "NewsArticle"``, ``og:type=product``) and
sometimes gives its content exactly (a ``Recipe``'s ingredients and steps). That is a
better signal than any guess from the layout, so main-content selection and the topic
sieve read it here, in one place. The data is hostile input: size-capped, parsed with
the standard JSON parser, and anything malformed is ignored, never raised.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

log = logging.getLogger(__name__)

MAX_JSON_LD = 2_000_000  # characters of one JSON-LD block; larger ones are not read
MAX_NODES = 5_000  # nodes visited per page (deeply nested or huge graphs stop there)

_LD_SCRIPTS = etree.XPath(
    "//script[translate(@type, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
    " = 'application/ld+json']")
_OG_TYPE = etree.XPath("//meta[@property='og:type']/@content")

_ARTICLE_TYPES = frozenset({"article", "newsarticle", "blogposting", "report", "posting",
                            "socialmediaposting", "reportagenewsarticle",
                            "analysisnewsarticle", "opinionnewsarticle", "reviewnewsarticle",
                            "backgroundnewsarticle", "scholarlyarticle", "liveblogposting"})
_PRODUCT_TYPES = frozenset({"product", "productgroup", "individualproduct", "productmodel",
                            "vehicle", "car"})


def json_ld(root: etree._Element) -> list[dict[str, Any]]:
    """Every JSON-LD object of the page, ``@graph`` members and nested objects included,
    in document order (bounded by ``MAX_NODES``)."""
    nodes: list[dict[str, Any]] = []
    for script in _LD_SCRIPTS(root):
        text = script.text or ""
        if not text.strip() or len(text) > MAX_JSON_LD:
            continue
        import json  # here: most pages carry no JSON-LD, and a command start pays for it

        try:
            data = json.loads(text.strip().rstrip(";"))
        except (ValueError, RecursionError):
            log.debug("unreadable JSON-LD block skipped")
            continue
        for node in _walk(data):
            nodes.append(node)
            if len(nodes) >= MAX_NODES:
                return nodes
    return nodes


def _walk(data: Any) -> Iterator[dict[str, Any]]:
    stack = [data]
    seen = 0
    while stack and seen < MAX_NODES:
        item = stack.pop()
        seen += 1
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            yield item
            stack.extend(reversed([v for v in item.values() if isinstance(v, dict | list)]))


def types_of(node: dict[str, Any]) -> set[str]:
    """The node's ``@type`` values, lower-case, without a schema.org prefix."""
    raw = node.get("@type")
    values = raw if isinstance(raw, list) else [raw]
    return {v.rsplit("/", 1)[-1].lower() for v in values if isinstance(v, str)}


def page_kind(root: etree._Element, nodes: list[dict[str, Any]] | None = None) -> str | None:
    """"article", "product" or None, as the page declares itself (JSON-LD types first,
    then og:type). A page that declares both (an article with product cards) is taken
    for what its Open Graph type says, else for an article."""
    types: set[str] = set()
    for node in json_ld(root) if nodes is None else nodes:
        types |= types_of(node)
    og = " ".join(_OG_TYPE(root)).strip().lower()
    article = bool(types & _ARTICLE_TYPES)
    product = bool(types & _PRODUCT_TYPES)
    if og.startswith("product") or (product and not article):
        return "product"
    if article or og == "article":
        return "article"
    return None


# -- recipes ---------------------------------------------------------------------------
@dataclass
class Recipe:
    """A recipe as the page states it: the exact ingredient lines and steps."""

    name: str = ""
    ingredients: list[str] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)

    def part(self, name: str) -> list[str]:
        return self.ingredients if name == "ingredients" else self.instructions


_SPACES = re.compile(r"\s+")
_LETTER = re.compile(r"[^\W\d_]")  # a step without one is broken markup ('content="[{"')
_TAGS = re.compile(r"<[^>]{0,2000}>")
_MICRO_RECIPE = etree.XPath(
    "//*[@itemtype and contains(translate(@itemtype, 'R', 'r'), 'schema.org/recipe')]")


def _clean(value: Any) -> str:
    """A JSON-LD string as text: markup some sites put in it removed, entities decoded."""
    if not isinstance(value, str):
        return ""
    text = _TAGS.sub(" ", value) if "<" in value else value
    return _SPACES.sub(" ", html.unescape(text)).strip()


def _steps(value: Any, depth: int = 0) -> list[str]:
    """recipeInstructions: a string, a list of strings, HowToStep objects (text or name),
    HowToSection objects holding steps (itemListElement)."""
    if depth > 4:
        return []
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        import json  # some sites encode the steps twice: a JSON list inside a string

        try:
            return _steps(json.loads(value), depth + 1)
        except (ValueError, RecursionError):
            pass
    if isinstance(value, str):
        text = _clean(value)
        lines = [s.strip() for s in re.split(r"\n+|(?<=\.)\s{2,}", value) if s.strip()]
        return [_clean(s) for s in lines] if len(lines) > 1 else ([text] if text else [])
    if isinstance(value, list):
        return [s for item in value for s in _steps(item, depth + 1)]
    if isinstance(value, dict):
        if "itemListElement" in value:
            return _steps(value["itemListElement"], depth + 1)
        text = _clean(value.get("text")) or _clean(value.get("name"))
        return [text] if text else []
    return []


def recipe(root: etree._Element, nodes: list[dict[str, Any]] | None = None) -> Recipe | None:
    """The page's first recipe with ingredients or steps: JSON-LD ``Recipe`` first, then
    schema.org microdata (``itemprop=recipeIngredient`` / ``recipeInstructions``)."""
    for node in json_ld(root) if nodes is None else nodes:
        if "recipe" not in types_of(node):
            continue
        raw = node.get("recipeIngredient") or node.get("ingredients") or []
        found = Recipe(_clean(node.get("name")),
                       [t for t in (_clean(i) for i in (raw if isinstance(raw, list)
                                                        else [raw])) if t],
                       [t for t in _steps(node.get("recipeInstructions")) if _LETTER.search(t)])
        if found.ingredients or found.instructions:
            return found
    for scope in _MICRO_RECIPE(root):
        found = Recipe(_micro_name(scope), _micro(scope, ("recipeIngredient", "ingredients")),
                       [t for t in _micro_steps(scope) if _LETTER.search(t)])
        if found.ingredients or found.instructions:
            return found
    return None


def _props(scope: etree._Element, names: tuple[str, ...]) -> list[etree._Element]:
    """The elements of ``scope`` with one of the item properties ``names``; one that
    holds others of them is their wrapper, not one more value (a list marked
    ``recipeIngredient`` around items marked the same would repeat every line)."""
    found = [el for el in scope.iter() if isinstance(el.tag, str)
             and set((el.get("itemprop") or "").split()) & set(names)]
    inner = {a for el in found for a in el.iterancestors()}
    return [el for el in found if el not in inner]


def _text(el: etree._Element) -> str:
    return _SPACES.sub(" ", el.get("content") or " ".join(el.itertext())).strip()


def _micro(scope: etree._Element, names: tuple[str, ...]) -> list[str]:
    return [t for t in (_text(el) for el in _props(scope, names)) if t]


def _micro_name(scope: etree._Element) -> str:
    names = _micro(scope, ("name",))
    return names[0] if names else ""


def _micro_steps(scope: etree._Element) -> list[str]:
    """One ``recipeInstructions`` element holding a list gives one step per item."""
    steps: list[str] = []
    for el in _props(scope, ("recipeInstructions",)):
        items = [li for li in el.iter("li")] if el.tag != "li" else []
        if items:
            steps.extend(t for t in (_text(li) for li in items) if t)
        else:
            text = _text(el)
            if text.startswith(("[", "{")):  # a JSON list of HowToSteps in a content=""
                steps.extend(_steps(text))
            elif text:
                steps.append(text)
    return steps
