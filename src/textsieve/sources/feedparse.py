"""One feed document -> its channel and its entries, whatever the format.

RSS 0.9x/1.0/2.0 and Atom are read by feedparser (it copes with the encodings, dates and
namespaces real feeds use, sanitises entry HTML, and keeps only harmless entity
declarations, so a billion-laughs DOCTYPE expands nothing). JSON Feed (1.0 and 1.1),
which feedparser does not read, is read by its specification (https://jsonfeed.org)
with the json module, or above ``STREAM_ABOVE`` item by item with ijson.

A very large RSS/Atom document is never handed to feedparser whole: its entries are
streamed by lxml (entities off) and given to feedparser in slices of ``SLICE`` entries,
each wrapped in the document's own head, so memory stays flat however many entries a
feed carries. What lxml cannot stream (a malformed document) falls back to feedparser on
the whole document, which is capped by the size limit of the fetch.

Everything here is a pure function of the bytes: nothing is fetched, nothing raises for
bad input. A document that is not a feed at all, or is too broken to give a single
entry, is a ``FeedProblem`` with a typed kind.
"""

from __future__ import annotations

import calendar
import hashlib
import io
import json
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..model import ErrorKind

logger = logging.getLogger(__name__)

# Above this size an XML feed is streamed in slices (see the module doc).
STREAM_ABOVE = 2 * 1024 * 1024
SLICE = 500


@dataclass(frozen=True)
class Entry:
    """One entry of a feed, as every format gives it."""

    id: str  # the entry's own id (guid, atom:id, JSON id), else its link, else a hash
    link: str | None  # the article it announces (absolute, when the feed says)
    title: str | None = None
    date: str | None = None  # ISO 8601 UTC (published, else updated)
    # ISO 8601 UTC: when the feed says the entry last changed (Atom <updated>, an RSS
    # item's dcterms:modified or atom:updated, JSON Feed date_modified); not a mere
    # publication date. What tells a revised entry apart where the feed gives it.
    updated: str | None = None
    author: str | None = None
    content: str | None = None  # HTML: the longest body the feed carries (content, summary)
    language: str | None = None
    problems: tuple[str, ...] = ()  # what was wrong with it (an unreadable date...)

    def fingerprint(self) -> str:
        """A short stable hash of the entry's id: what tells a new entry from one seen
        (its revision is told apart by ``revision``)."""
        return hashlib.blake2b(self.id.encode(), digest_size=8).hexdigest()

    def revision(self) -> str:
        """What a later run compares to tell whether the entry was revised (see
        ``revised``): its modification date, its publication date and a hash of what it
        says (title, link, content), ``|``-separated. Compact: one is kept per entry."""
        said = "\x00".join((self.title or "", self.link or "", self.content or ""))
        digest = hashlib.blake2b(said.encode(), digest_size=6).hexdigest()
        return f"{_compact(self.updated)}|{_compact(self.date)}|{digest}"


def revised(old: str, new: str) -> tuple[bool, str | None]:
    """Whether an entry whose ``revision`` was ``old`` and is ``new`` is a revision, and
    if only a date moved (the text, title and link as they were), that date.

    The feed's own modification date decides where it gives one before and now: newer is
    revised, the same or older is not (a text that varies under the same date, a comment
    count say, is not read again). Else a changed text, title or link is a revision, and
    so is a newer publication date (an RSS item re-dated under the same guid).

    A date that alone moved is the caller's to judge over the whole document: a
    generator that stamps every entry with the time the feed was made moves every
    entry's date at once, to one value, on every run; a real revision moves one.
    """
    try:
        ou, op, od = old.split("|", 3)[:3]  # (a caller may keep more after them)
        nu, np_, nd = new.split("|", 3)[:3]
    except ValueError:  # an entry remembered without its revision: seen, not revised
        return False, None
    if ou and nu:
        if nu <= ou:
            return False, None
        return (True, None) if nd != od else (True, nu)
    if nd != od:
        return True, None
    if op and np_ and np_ > op:
        return True, np_
    return False, None


def _compact(iso: str | None) -> str:
    """``2026-03-02T10:00:00Z`` as ``20260302100000`` (same order as strings)."""
    return re.sub(r"\D", "", iso) if iso else ""


@dataclass
class Feed:
    """A feed's channel and (lazily) its entries."""

    format: str  # rss20, rss10, rss091u, atom10, json11, ...
    title: str | None = None
    link: str | None = None
    description: str | None = None
    language: str | None = None
    entries: Iterator[Entry] = field(default_factory=lambda: iter(()))
    problems: list[str] = field(default_factory=list)  # channel-level warnings


class FeedProblem(Exception):
    """A document that gives no feed: not a feed, or too broken to read."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


def parse(data: bytes, *, url: str | None = None, content_type: str | None = None) -> Feed:
    """The feed in ``data`` (``url``: where it came from, to resolve relative links)."""
    head = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"{") or (content_type or "").endswith("json"):
        return _json_feed(data, url)
    if len(data) > STREAM_ABOVE:
        try:
            return _streamed(data, url, content_type)
        except _CannotStream as exc:
            logger.debug("%s: streaming the feed failed (%s); reading it whole", url, exc)
    return _feedparser_whole(data, url, content_type)


# -- RSS and Atom through feedparser ---------------------------------------------------------


def _fp_parse(data: bytes, url: str | None, content_type: str | None) -> Any:
    import feedparser

    headers = {"content-location": url} if url else {}
    if content_type:
        headers["content-type"] = content_type
    return feedparser.parse(io.BytesIO(data), response_headers=headers,
                            resolve_relative_uris=True, sanitize_html=True)


def _feedparser_whole(data: bytes, url: str | None, content_type: str | None) -> Feed:
    parsed = _fp_parse(data, url, content_type)
    entries = parsed.entries
    if not parsed.version and not entries:
        exc = parsed.get("bozo_exception")
        start = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
        if start.startswith((b"<!doctype html", b"<html")) or not start.startswith(b"<"):
            raise FeedProblem(ErrorKind.UNSUPPORTED, "not a feed (RSS, Atom or JSON Feed)")
        raise FeedProblem(ErrorKind.CORRUPT, "not a readable feed" + (
            f": {_short(exc)}" if exc is not None else ""))
    feed = _channel(parsed)
    feed.entries = (e for e in (_fp_entry(x, feed) for x in entries) if e is not None)
    return feed


def _channel(parsed: Any) -> Feed:
    ch = parsed.feed
    feed = Feed(format=parsed.version or "unknown", title=_clean(ch.get("title")),
                link=ch.get("link"), language=ch.get("language"),
                description=_clean(_plain(ch.get("subtitle") or ch.get("description"))))
    exc = parsed.get("bozo_exception")
    if parsed.get("bozo") and exc is not None:
        feed.problems.append(f"{type(exc).__name__}: {_short(exc)}")
    return feed


def _fp_entry(x: Any, feed: Feed) -> Entry | None:
    link = x.get("link") or None
    bodies = [c.get("value") or "" for c in x.get("content") or []]
    bodies.append(x.get("summary") or "")
    content = max(bodies, key=len) or None
    problems: list[str] = []
    date = None
    for field_ in ("published", "updated", "created"):
        raw = x.get(field_)
        if not raw:
            continue
        when = x.get(f"{field_}_parsed")
        if when is None:
            problems.append(f"unreadable date {raw[:60]!r}")
            continue
        date = _iso(calendar.timegm(when))
        if date is not None:
            break
    title = _clean(x.get("title"))
    ident = x.get("id") or link or _hash(title, content)
    if not ident:
        return None
    lang = None
    for c in x.get("content") or []:
        lang = lang or c.get("language")
    return Entry(id=str(ident)[:2000], link=link, title=title, date=date,
                 updated=_fp_date(x, "updated"), author=_clean(x.get("author")),
                 content=content, language=lang or feed.language, problems=tuple(problems))


def _fp_date(x: Any, field_: str) -> str | None:
    """A date feedparser read, only if the feed has it: its dict answers ``updated``
    with ``published`` (a compatibility mapping), which is no modification date."""
    when = dict.get(x, f"{field_}_parsed") if dict.get(x, field_) else None
    return _iso(calendar.timegm(when)) if when is not None else None


# -- streaming a large XML feed -------------------------------------------------------------


class _CannotStream(Exception):
    pass


_ENTRY_TAGS = {"item", "entry"}


def _streamed(data: bytes, url: str | None, content_type: str | None) -> Feed:
    """Entries of a large RSS/Atom document in slices (see the module doc)."""
    from lxml import etree

    slices = _slices(data)
    try:
        first = next(slices)
    except StopIteration:
        raise _CannotStream("no entries") from None
    except etree.LxmlError as exc:
        raise _CannotStream(str(exc)) from exc
    parsed = _fp_parse(first, url, content_type)
    if not parsed.version:
        raise _CannotStream("feedparser does not see a feed in the first slice")
    feed = _channel(parsed)

    def entries() -> Iterator[Entry]:
        for x in parsed.entries:
            if (e := _fp_entry(x, feed)) is not None:
                yield e
        try:
            for chunk in slices:
                for x in _fp_parse(chunk, url, content_type).entries:
                    if (e := _fp_entry(x, feed)) is not None:
                        yield e
        except etree.LxmlError as exc:  # broken late in the document: what came is kept
            feed.problems.append(f"the feed breaks off: {_short(exc)}")

    feed.entries = entries()
    return feed


def _slices(data: bytes) -> Iterator[bytes]:
    """The document as small documents: its head (everything up to the first entry,
    entries removed) around ``SLICE`` entries at a time."""
    from lxml import etree

    events = etree.iterparse(io.BytesIO(data), events=("start", "end"), resolve_entities=False,
                             no_network=True, load_dtd=False, huge_tree=False,
                             remove_comments=True)
    depth = 0
    entry_depth: int | None = None
    wrapper: tuple[bytes, bytes] | None = None
    batch: list[bytes] = []
    for ev, el in events:
        if ev == "start":
            depth += 1
            continue
        depth -= 1
        name = etree.QName(el).localname if isinstance(el.tag, str) else ""
        if name in _ENTRY_TAGS and (entry_depth is None or depth == entry_depth):
            if wrapper is None:
                entry_depth = depth
                wrapper = _wrapper(el)
            batch.append(etree.tostring(el))
            parent = el.getparent()
            if parent is not None:
                parent.remove(el)
            if len(batch) >= SLICE:
                yield wrapper[0] + b"".join(batch) + wrapper[1]
                batch = []
    if wrapper is not None and batch:
        yield wrapper[0] + b"".join(batch) + wrapper[1]


def _wrapper(entry: Any) -> tuple[bytes, bytes]:
    """What goes around a slice of entries: the ancestors of the first entry with the
    children they have so far (the channel's title, link...), as open and close tags."""
    from lxml import etree

    marker = "textsieve-slice-marker"
    steps: list[int] = []  # the first entry's parent, as child indexes from the root
    node = entry.getparent()
    while node.getparent() is not None:
        steps.append(node.getparent().index(node))
        node = node.getparent()
    copy = etree.fromstring(etree.tostring(node))  # the tree so far; later entries unread
    target = copy
    for i in reversed(steps):
        target = target[i]
    for child in list(target):
        if isinstance(child.tag, str) and etree.QName(child).localname in _ENTRY_TAGS:
            target.remove(child)
    target.append(etree.Comment(marker))
    text = etree.tostring(copy)
    before, _, after = text.partition(f"<!--{marker}-->".encode())
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + before, after


# -- JSON Feed -------------------------------------------------------------------------------


def _json_feed(data: bytes, url: str | None) -> Feed:
    if len(data) > STREAM_ABOVE:
        return _json_streamed(data, url)
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise FeedProblem(ErrorKind.CORRUPT, f"a JSON Feed that is not UTF-8: {exc}") from exc
    except (ValueError, RecursionError) as exc:
        # Broken off (a truncated download, say): the items before the break, as a
        # large feed keeps them, if the feed is told before it.
        try:
            return _json_streamed(data, url)
        except FeedProblem:
            raise FeedProblem(ErrorKind.CORRUPT, f"not valid JSON: {_short(exc)}") from exc
    if not isinstance(doc, dict):
        raise FeedProblem(ErrorKind.UNSUPPORTED, "JSON that is not a JSON Feed")
    feed = _json_head(doc)
    items = doc.get("items")
    if not isinstance(items, list):
        raise FeedProblem(ErrorKind.CORRUPT, "a JSON Feed without an items list")

    def entries() -> Iterator[Entry]:
        for raw in items:
            if isinstance(raw, dict) and (e := _json_entry(raw, feed, url)) is not None:
                yield e

    feed.entries = entries()
    return feed


def _json_head(doc: dict[str, Any]) -> Feed:
    """The feed of a JSON Feed's top-level members (its items aside)."""
    if not str(doc.get("version", "")).startswith("https://jsonfeed.org/version/"):
        raise FeedProblem(ErrorKind.UNSUPPORTED, "JSON that is not a JSON Feed")
    version = str(doc["version"]).rsplit("/", 1)[-1]
    return Feed(format=f"json{version.replace('.', '')}", title=_text(doc.get("title")),
                link=_text(doc.get("home_page_url")), language=_text(doc.get("language")),
                description=_text(doc.get("description")))


_JSON_HEAD = frozenset({"version", "title", "home_page_url", "language", "description"})


def _json_streamed(data: bytes, url: str | None) -> Feed:
    """A large JSON Feed item by item (ijson, on yajl): the parsed document is never
    held whole, only one item at a time. Two passes over the bytes: the top-level
    members first (JSON has no order, and the title may follow the items), then the
    items. A document that breaks off inside its items keeps the items before."""
    import ijson

    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    head: dict[str, Any] = {}
    items = broken = None
    try:
        events = ijson.parse(body, use_float=True)
        prefix, event, _ = next(events)
        if event != "start_map":
            raise FeedProblem(ErrorKind.UNSUPPORTED, "JSON that is not a JSON Feed")
        for prefix, event, value in events:
            if prefix in _JSON_HEAD and event in ("string", "number", "boolean", "null"):
                head[prefix] = value
            elif prefix == "items" and items is None:
                items = event
    except (ijson.JSONError, UnicodeDecodeError, ValueError, StopIteration) as exc:
        if items is None or "version" not in head:
            raise FeedProblem(ErrorKind.CORRUPT, f"not valid JSON: {_short(exc)}") from exc
        broken = exc
    feed = _json_head(head)
    if items != "start_array":
        raise FeedProblem(ErrorKind.CORRUPT, "a JSON Feed without an items list")

    def entries() -> Iterator[Entry]:
        try:
            for raw in ijson.items(body, "items.item", use_float=True):
                if isinstance(raw, dict) and (e := _json_entry(raw, feed, url)) is not None:
                    yield e
        except (ijson.JSONError, UnicodeDecodeError, ValueError) as exc:
            feed.problems.append(f"the feed breaks off: {_short(exc)}")
        else:
            if broken is not None:
                feed.problems.append(f"the feed breaks off: {_short(broken)}")

    feed.entries = entries()
    return feed


def _json_entry(raw: dict[str, Any], feed: Feed, base: str | None) -> Entry | None:
    from urllib.parse import urljoin

    link = _text(raw.get("url")) or _text(raw.get("external_url"))
    if link and base:
        link = urljoin(base, link)
    html = _text(raw.get("content_html"))
    plain = _text(raw.get("content_text"))
    summary = _text(raw.get("summary"))
    content = html or (_plain_html(plain) if plain else None) or \
        (_plain_html(summary) if summary else None)
    problems: list[str] = []
    date = None
    for key in ("date_published", "date_modified"):
        value = raw.get(key)
        if value is None:
            continue
        date = _rfc3339(value)
        if date is None:
            problems.append(f"unreadable date {str(value)[:60]!r}")
        else:
            break
    listed, one = raw.get("authors"), raw.get("author")  # 1.1: authors; 1.0: author
    authors: list[Any] = listed if isinstance(listed, list) else \
        [one] if isinstance(one, dict) else []
    names = [_text(a.get("name")) for a in authors if isinstance(a, dict)]
    title = _text(raw.get("title"))
    ident = raw.get("id")
    ident = str(ident) if isinstance(ident, (str, int, float)) and str(ident) else \
        link or _hash(title, content)
    if not ident:
        return None
    return Entry(id=ident[:2000], link=link, title=title, date=date,
                 updated=_rfc3339(raw.get("date_modified")),
                 author=", ".join(n for n in names if n) or None, content=content,
                 language=_text(raw.get("language")) or feed.language,
                 problems=tuple(problems))


def _plain_html(text: str) -> str:
    from html import escape

    return "".join(f"<p>{escape(p)}</p>" for p in re.split(r"\n\s*\n", text) if p.strip())


def _rfc3339(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return _iso(when.timestamp())


# -- helpers ---------------------------------------------------------------------------------


def _iso(ts: float) -> str | None:
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
    except (OverflowError, OSError, ValueError):
        return None


def _text(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _clean(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    return re.sub(r"\s+", " ", value).strip() or None


def _plain(value: object) -> str | None:
    """A channel description as text (feeds put HTML in it)."""
    if not isinstance(value, str):
        return None
    return re.sub(r"<[^>]*>", " ", value)


def _hash(*parts: str | None) -> str | None:
    if not any(parts):
        return None
    return "sha1:" + hashlib.sha1("\x00".join(p or "" for p in parts).encode(),
                                  usedforsecurity=False).hexdigest()


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
