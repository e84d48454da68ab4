"""Resolvers: the real target behind a redirect wrapper, and behind a Hacker News item.

Wrappers (Google's ``/url?q=``, Outlook safelinks, Facebook ``l.php``, Proofpoint
urldefense, Substack redirects, ...) carry their target in the URL itself, so they are
unwrapped offline, repeatedly (a safelink around a Google redirect is common). Shorteners
such as t.co need a request and are left to the fetcher, which follows redirects anyway.

A Hacker News item is the reverse: the link a person mailed is the discussion, but the
thing to archive is the story it points to. ``resolve_hn`` reads a fetched item page and
gives the story URL, with the discussion as plain text to keep as context (an Ask HN has
no story URL: its own text is the thing).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import string
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urljoin, urlsplit

# (host suffix, path prefix, parameter names holding the target), first match wins.
_WRAPPERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("safelinks.protection.outlook.com", "/", ("url",)),
    ("l.facebook.com", "/l.php", ("u",)),
    ("lm.facebook.com", "/l.php", ("u",)),
    ("m.facebook.com", "/l.php", ("u",)),
    ("www.facebook.com", "/l.php", ("u",)),
    ("getpocket.com", "/redirect", ("url",)),
    ("instapaper.com", "/text", ("u",)),
    ("www.youtube.com", "/redirect", ("q",)),
    ("slack-redir.net", "/link", ("url",)),
    ("steamcommunity.com", "/linkfilter/", ("url", "u")),
    ("out.reddit.com", "/", ("url",)),
    ("href.li", "/", ()),  # href.li/?https://target: the whole query is the target
    ("www.inoreader.com", "/redirect", ("url", "u")),
    ("feedly.com", "/i/redirect", ("url", "u")),
    ("newsblur.com", "/rss_feeds/original_text", ("story_url",)),
    ("vk.com", "/away.php", ("to",)),
    ("www.linkedin.com", "/redir/redirect", ("url",)),
    ("click.linksynergy.com", "/", ("murl",)),
)
_GOOGLE_HOST = re.compile(r"^(www\.)?google(\.[a-z]{2,3}){1,2}$")
_MAX_DEPTH = 8


def resolve_wrapper(url: str) -> str:
    """The target of a redirect wrapper, unwrapped until none is left; else ``url``."""
    for _ in range(_MAX_DEPTH):
        inner = _unwrap_once(url)
        if inner is None or inner == url:
            return url
        url = inner
    return url


def _unwrap_once(url: str) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    path = parts.path or "/"
    if not host:
        return None
    query = parse_qs(parts.query, keep_blank_values=True) if parts.query else {}
    if _GOOGLE_HOST.match(host) and path in ("/url", "/imgres", "/interstitial"):
        return _target(query, ("q", "url", "imgrefurl"))
    if host == "urldefense.proofpoint.com" and path.startswith("/v2/url"):
        u = query.get("u", [""])[0]
        return _absolute(unquote(u.replace("_", "/").replace("-", "%"))) if u else None
    if host == "urldefense.com" and path.startswith("/v3/__"):
        return _proofpoint_v3(url)
    if host.endswith("substack.com") and path.startswith("/redirect/"):
        return _substack(path)
    for suffix, prefix, names in _WRAPPERS:
        if (host == suffix or host.endswith("." + suffix)) and path.startswith(prefix):
            if not names:
                return _absolute(unquote(parts.query))
            return _target(query, names)
    return None


def _target(query: dict[str, list[str]], names: tuple[str, ...]) -> str | None:
    for name in names:
        for value in query.get(name, []):
            got = _absolute(value.strip())
            if got:
                return got
    return None


def _absolute(value: str) -> str | None:
    """Only an absolute http(s) URL counts as a target (a relative ``q`` is a search)."""
    low = value[:8].lower()
    return value if low.startswith(("http://", "https://")) else None


_PP_RUNS = {c: i + 2 for i, c in enumerate(string.ascii_uppercase + string.ascii_lowercase
                                           + string.digits + "-_")}
_PP_V3 = re.compile(r"/v3/__(?P<url>.+?)__;(?P<enc>[^!]*)!!")
_PP_STAR = re.compile(r"\*(\*.)?")


def _proofpoint_v3(url: str) -> str | None:
    """Proofpoint v3: the URL sits between ``__`` marks, with ``*`` standing for characters
    kept base64url-encoded after ``__;`` (``**X``: a run, its length coded by X)."""
    m = _PP_V3.search(url)
    if not m:
        return None
    target = m.group("url")
    if "*" in target:
        enc = m.group("enc")
        try:
            chars = base64.urlsafe_b64decode(enc + "=" * (-len(enc) % 4)).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
        pos = 0

        def put(star: re.Match[str]) -> str:
            nonlocal pos
            run = _PP_RUNS.get(star.group(1)[1], 1) if star.group(1) else 1
            out = chars[pos:pos + run]
            pos += run
            return out

        target = _PP_STAR.sub(put, target)
    return _absolute(target)


def _substack(path: str) -> str | None:
    """Substack ``/redirect/2/<token>``: a signed token (``payload.signature``, or a full
    JWT) whose JSON payload names the target in its ``e`` claim."""
    for seg in path.rstrip("/").rsplit("/", 1)[-1].split(".")[:2]:
        try:
            data = json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))
        except (binascii.Error, ValueError, UnicodeDecodeError):
            continue
        target = data.get("e") if isinstance(data, dict) else None
        if isinstance(target, str):
            return _absolute(target)
    return None


# --------------------------------------------------------------------------------------
# Hacker News
# --------------------------------------------------------------------------------------

_HN_HOSTS = ("news.ycombinator.com", "ycombinator.com")


def hn_item_id(url: str, hosts: tuple[str, ...] = _HN_HOSTS) -> str | None:
    """The item id of a Hacker News discussion URL (``news.ycombinator.com/item?id=N``);
    ``hosts`` admits a mirror (or a local stand-in in tests)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if (parts.hostname or "").lower() not in hosts or parts.path.rstrip("/") != "/item":
        return None
    ids = parse_qs(parts.query).get("id", [])
    return ids[0] if ids and ids[0].isdigit() else None


@dataclass(frozen=True)
class HnResolution:
    """What an HN item page says: the story it links (None: Ask HN/text post) and talk."""

    item_id: str | None
    story_url: str | None
    title: str | None
    text: str  # the post's own text (Ask HN) then the comments, "user: comment" blocks
    comments: int


def resolve_hn(html: bytes, url: str) -> HnResolution:
    """Read a fetched HN item page: story URL (absolute), title and discussion text."""
    import lxml.html

    parser = lxml.html.HTMLParser(encoding="utf-8", no_network=True, remove_comments=True)
    try:
        root = lxml.html.document_fromstring(html or b"<html></html>", parser=parser)
    except Exception:  # an empty or hopeless page: nothing to resolve
        return HnResolution(hn_item_id(url), None, None, "", 0)
    anchors = root.xpath("//span[contains(concat(' ', normalize-space(@class), ' '), "
                         "' titleline ')]/a[1] | //a[contains(concat(' ', @class, ' '), "
                         "' storylink ')]")
    title = story = None
    if anchors:
        a = anchors[0]
        title = " ".join(a.text_content().split()) or None
        href = (a.get("href") or "").strip()
        if href:
            target = urljoin(url, href)
            # Ask HN / Show HN without URL: the title links back to the item itself.
            if hn_item_id(target) is None and target.lower().startswith(("http:", "https:")):
                story = target
    blocks: list[str] = []
    for top in root.xpath("//div[contains(concat(' ', @class, ' '), ' toptext ')]"):
        text = _rich_text(top)
        if text:
            blocks.append(text)
    count = 0
    for c in root.xpath("//*[contains(concat(' ', @class, ' '), ' commtext ')]"):
        text = _rich_text(c)
        if not text:
            continue
        count += 1
        row = c.xpath("ancestor::tr[contains(concat(' ', @class, ' '), ' comtr ')][1]"
                      "//a[contains(concat(' ', @class, ' '), ' hnuser ')]")
        user = row[0].text_content().strip() if row else ""
        blocks.append(f"{user}: {text}" if user else text)
    return HnResolution(hn_item_id(url), story, title, "\n\n".join(blocks), count)


def _rich_text(el: object) -> str:
    """An HN text block as plain text: paragraphs (<p>) kept apart, reply links dropped."""
    import lxml.html

    assert isinstance(el, lxml.html.HtmlElement)
    for junk in el.xpath(".//div[contains(concat(' ', @class, ' '), ' reply ')]"):
        junk.drop_tree()
    for p in el.xpath(".//p"):
        p.text = "\n\n" + (p.text or "")
    for br in el.xpath(".//br"):
        br.tail = "\n" + (br.tail or "")
    text = el.text_content()
    paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paras if p)
