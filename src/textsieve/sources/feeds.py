"""Feeds and OPML subscription lists: ``feed:URL``, ``feed:FILE``, ``opml:FILE``.

Each new entry of a feed becomes the item of the article it links to (keyed by the
link's normal form, so an article announced twice, or by two feeds, is one item), with
the entry as its provenance: its id, date, author and title, and as labels the feed's
name and the OPML folders it sits in (kept like a mail's labels: one kind of label for
every source).

Incremental twice over, with the state kept in the archive's source state (saved only
once a run's items are committed): the feed is asked for with its ETag/Last-Modified
(a 304 costs nothing), and of what it serves only entries new or revised (by id, and
by revision: ``feedparse.revised``) become items, a revised one the same item again.
A revision is remembered as seen once listed, whatever its fetch gives: the state is
what the feed said, the archive is what came of it. A revised entry's article that
could not be fetched keeps its good text, and its failed fetch is the item's check in
the archive; the next run of the feed owes it a fetch while the failure may pass (a
503, a timeout: ``run.retry.owed``), and a failure that would repeat (a 404, bytes that
cannot be read) stays a typed record. So nothing flows back from the run into the feed.
A feed that fails is a typed record keyed ``feed:URL`` (the run goes on with the other
feeds) and is asked again later and later (back-off, also across the rounds of
``textsieve watch``).

Whole articles or teasers: many feeds carry the whole article, many only a teaser. For
each feed this is decided by comparing: a few entries' articles are fetched, their main
text is compared with what the feed carries, and if the feed carries (nearly) all of it
the feed's own content is kept for every entry, nothing fetched; otherwise each entry's
article is fetched. The decision is kept (and made again now and then), and every item
says which (``metadata.extra.feed_content``: ``feed`` or ``article``).
"""

from __future__ import annotations

import calendar
import html
import json
import logging
import os
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..links import strip_userinfo, url_key
from ..model import ErrorInfo, ErrorKind, Item
from ..model.items import Listing, Response
from ..options import Options
from .base import SourceError
from .feedparse import Entry, Feed, FeedProblem, parse, revised
from .urls import is_url, url_name

logger = logging.getLogger(__name__)

FEED_PREFIXES = ("feed:", "opml:")
# The whole-article decision: entries compared, how much of the article's words the feed
# must carry, and how long a decision stands.
SAMPLE = 2
FULL_RECALL = 0.8
DECISION_DAYS = 30
# Back-off of a failing feed: the first retry after BACKOFF_START, doubling, at most
# BACKOFF_MAX (a feed down for days is asked about once a day).
BACKOFF_START = 60.0
BACKOFF_MAX = 24 * 3600.0
FETCHERS = 4  # feeds of an OPML fetched at once (a host is still asked one at a time)
MAX_OPML = 16 * 1024 * 1024
# Entries whose dates alone moved to within this many seconds of each other were stamped
# by a generator, not revised (``_DateOnly``).
STAMP_WINDOW = 120


@dataclass
class Subscription:
    """One feed to read: where it is, and the labels its items get."""

    location: str  # a URL or an absolute path
    name: str | None = None  # as the OPML names it
    folders: tuple[str, ...] = ()

    @property
    def is_url(self) -> bool:
        return is_url(self.location)

    @property
    def key(self) -> str:
        return url_key(self.location) if self.is_url else self.location


@dataclass
class _FeedState:
    """What is remembered of one feed between runs (JSON in the archive's source state)."""

    etag: str | None = None
    last_modified: str | None = None
    # Each entry of the last document: its fingerprint (its id) -> its revision, and
    # for an entry whose id is not its link, ``|`` and the key of the item it made (a
    # revision that moves it to another link stays that item). One string an entry:
    # a feed of 100,000 entries keeps them all.
    revisions: dict[str, str] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)  # ids only, as older versions kept them
    mode: str | None = None  # feed | article: whether the feed carries whole articles
    decided: float = 0.0
    failures: int = 0
    next_try: float = 0.0
    error: str | None = None
    title: str | None = None

    @classmethod
    def load(cls, text: str | None) -> _FeedState:
        try:
            raw = json.loads(text) if text else {}
        except ValueError:
            raw = {}
        known = {k: v for k, v in raw.items() if k in cls.__dataclass_fields__} \
            if isinstance(raw, dict) else {}
        try:
            return cls(**known)
        except TypeError:
            return cls()

    def dump(self) -> str:
        return json.dumps(self.__dict__, separators=(",", ":"))

    def known(self) -> dict[str, str]:
        """The entries seen, with their revisions ("" for an entry remembered by an older
        version without one: seen, and its revision is taken as it is now)."""
        return {**dict.fromkeys(self.seen, ""), **self.revisions}


class FeedSource:
    """The items of one feed (``feed:URL|FILE``) or of every feed of an OPML file."""

    def __init__(self, spec: str, options: Options) -> None:
        self.options = options
        kind, _, where = spec.partition(":")
        where = os.path.expanduser(where.strip())
        if kind == "feed":
            if is_url(where):
                where = strip_userinfo(where)
                self.spec = f"feed:{url_key(where)}"
            else:
                if not os.path.isfile(where):
                    raise SourceError(f"{spec}: no such feed file or URL")
                where = os.path.abspath(where)
                self.spec = f"feed:{where}"
            self.subscriptions = [Subscription(where)]
        else:
            if not os.path.isfile(where):
                raise SourceError(f"{spec}: no such OPML file")
            where = os.path.abspath(where)
            self.spec = f"opml:{where}"
            try:
                self.subscriptions = read_opml(_read_capped(where, MAX_OPML))
            except (OSError, ValueError, FeedProblem) as exc:
                raise SourceError(f"{spec}: {exc}") from exc
        self._state: dict[str, str] = {}
        self._new: dict[str, str] = {}
        self.now = time.time
        self._asked: set[str] = set()  # feeds whose whole-article question was asked
        self._fetched: dict[str, Any] = {}  # articles fetched to ask it: not fetched twice
        self.backoff = False  # skip failing feeds until their next try (``watch`` sets it)
        # --fetch never: entries are archived as listed, no article is fetched, and the
        # feed's entries and validators are not remembered, so a run that may fetch lists
        # them again and fetches them.
        self.never = options.fetch_mode == "never"

    # -- the source protocol -----------------------------------------------------------------

    def bind_state(self, state: dict[str, str]) -> None:
        self._state = dict(state)

    def new_state(self) -> dict[str, str]:
        """Each feed's state after this run; feeds no longer subscribed are forgotten."""
        keep = {f"feed {s.key}" for s in self.subscriptions}
        return {k: v for k, v in {**self._state, **self._new}.items() if k in keep}

    def items(self) -> Iterator[Item]:
        from ..fetch import Fetcher

        with Fetcher(self.options) as fetcher, ThreadPoolExecutor(
                FETCHERS, thread_name_prefix="textsieve-feed") as pool:
            due = [s for s in self.subscriptions if self._due(s)]
            # A window of FETCHERS feeds in flight: bodies are not all held at once.
            pending = [pool.submit(self._load, s, fetcher) for s in due[:FETCHERS]]
            for i, s in enumerate(due):
                loaded = pending[i].result()
                if i + FETCHERS < len(due):
                    pending.append(pool.submit(self._load, due[i + FETCHERS], fetcher))
                pending[i] = None  # type: ignore[call-overload]
                yield from self._items_of(s, loaded, fetcher)

    # -- one feed ----------------------------------------------------------------------------

    def _stored(self, s: Subscription) -> _FeedState:
        return _FeedState.load(self._state.get(f"feed {s.key}"))

    def _save(self, s: Subscription, st: _FeedState) -> None:
        self._new[f"feed {s.key}"] = st.dump()

    def _due(self, s: Subscription) -> bool:
        """Not while a failing feed's back-off lasts, when backing off (``watch``): a
        plain ``run`` is asked by a person, and asks the feed again."""
        return not self.backoff or self._stored(s).next_try <= self.now()

    def _load(self, s: Subscription, fetcher: Any) -> _Loaded:
        """The feed's bytes (or a 304, or a typed failure); runs in a fetch thread."""
        st = self._stored(s)
        if not s.is_url:
            try:
                return _Loaded(data=_read_capped(s.location, self.options.max_body))
            except FeedProblem as exc:
                return _Loaded(error=ErrorInfo(exc.kind, exc.message))
            except OSError as exc:
                return _Loaded(error=ErrorInfo(ErrorKind.NOT_FOUND, str(exc)))
        r = fetcher.fetch(s.location, etag=st.etag, last_modified=st.last_modified)
        if r.error is not None:
            return _Loaded(error=r.error)
        if r.not_modified:
            return _Loaded(not_modified=True)
        ctype = f"{r.content_type}; charset={r.charset}" if r.charset else r.content_type
        return _Loaded(data=r.content, url=r.final_url, content_type=ctype, etag=r.etag,
                       last_modified=r.last_modified)

    def _items_of(self, s: Subscription, loaded: _Loaded, fetcher: Any) -> Iterator[Item]:
        st = self._stored(s)
        now = self.now()
        if loaded.error is not None:
            yield self._failed(s, st, loaded.error, now)
            return
        if loaded.not_modified:
            st.failures, st.next_try, st.error = 0, 0.0, None
            self._save(s, st)
            return
        assert loaded.data is not None
        try:
            feed = parse(loaded.data, url=loaded.url or (s.location if s.is_url else None),
                         content_type=loaded.content_type)
        except FeedProblem as exc:
            yield self._failed(s, st, ErrorInfo(exc.kind, exc.message), now)
            return
        name = s.name or feed.title or st.title or s.location
        labels = tuple(dict.fromkeys((*s.folders, name)))
        yield self._channel(s, feed, labels)
        known = st.known()
        fresh: list[tuple[Entry, str]] = []  # entries to read, each with its item's key
        kept: dict[str, str] = {}
        dated = _DateOnly()  # entries whose only change is a date: judged at the end
        for e in feed.entries:
            fp = e.fingerprint()
            if fp in kept:
                continue
            rev = e.revision()
            # The item it made stays its item (kept when its id is not its link, so
            # a revision that moves it to another link is found); a link's key is
            # computed only when needed (it is not cheap, and most entries are seen).
            stored = known.get(fp)
            parts = stored.split("|", 3) if stored else []
            before = parts[3] if len(parts) == 4 and parts[3] else None
            movable = e.id != e.link and bool(e.link) and is_url(e.link or "")
            if stored is None:
                key = self._key(s, e)
                fresh.append((e, key))
            else:
                again, moved = revised(stored, rev)
                need = again or (movable and not before)
                key = (before or self._key(s, e)) if need else ""
                if again and moved is None:
                    fresh.append((e, key))
                elif again and moved is not None:
                    dated.add(moved, (e, key))
            kept[fp] = f"{rev}|{before or key}" if movable else rev
            if len(fresh) >= 256:  # a huge feed: entries flow on in batches
                yield from self._entries(s, feed, fresh, st, labels, fetcher)
                fresh = []
        fresh.extend(dated.revisions())
        yield from self._entries(s, feed, fresh, st, labels, fetcher)
        for problem in feed.problems:  # in each item's facts too; here for --debug
            logger.info("%s: %s", s.location, problem)
        if not self.never:
            st.revisions, st.seen = kept, []
            st.etag, st.last_modified = loaded.etag, loaded.last_modified
        st.failures, st.next_try, st.error = 0, 0.0, None
        st.title = feed.title
        self._save(s, st)

    def _channel(self, s: Subscription, feed: Feed, labels: tuple[str, ...]) -> Item:
        """The feed's own item (keyed ``feed:URL``): its title, site and description, so
        the subscription is in the archive and searchable, and a feed that failed (its
        typed record under the same key) is seen to answer again."""
        esc = html.escape
        page = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>'
                f"{esc(feed.title or s.name or s.location)}</title></head><body>"
                f"<h1>{esc(feed.title or s.name or s.location)}</h1>"
                f"<p>{esc(feed.description or '')}</p>"
                f"<p>{esc(feed.link or '')}</p><p>{esc(s.location)}</p></body></html>")
        return Item(key=feed_key(s.key), original=s.location, source=f"feed:{s.key}",
                    data=page.encode(), name=f"{_safe_name(feed.title or 'feed')}.html",
                    labels=labels, facts=(("feed", s.key), ("feed_format", feed.format)))

    def _failed(self, s: Subscription, st: _FeedState, error: ErrorInfo, now: float) -> Item:
        """The feed's typed record; the next try later and later."""
        st.failures += 1
        st.next_try = now + min(BACKOFF_MAX, BACKOFF_START * 2 ** (st.failures - 1))
        st.error = f"{error.kind}: {error.message}"
        self._save(s, st)
        return Item(key=feed_key(s.key), original=s.location, source=f"feed:{s.key}",
                    name=url_name(s.location) if s.is_url else Path(s.location).name,
                    problem=error)

    def _entries(self, s: Subscription, feed: Feed, fresh: list[tuple[Entry, str]],
                 st: _FeedState, labels: tuple[str, ...], fetcher: Any) -> Iterator[Item]:
        if not fresh:
            return
        stale = st.mode is None or self.now() - st.decided > DECISION_DAYS * 86400
        if stale and s.key not in self._asked and not self.never:
            self._asked.add(s.key)  # once a run: a huge feed comes in batches
            mode, self._fetched = decide_mode([e for e, _ in fresh], fetcher)
            if mode is not None:
                st.mode, st.decided = mode, self.now()
        # One item per link: an article announced twice (a re-post) is listed with its
        # first announcement.
        first: dict[str, Entry] = {}
        for e, k in fresh:
            if k not in first or (e.date or "~") < (first[k].date or "~"):
                first[k] = e
        for k, e in first.items():
            yield self._item(s, feed, e, st.mode, labels, k)
        self._fetched = {}

    def _key(self, s: Subscription, e: Entry) -> str:
        """The archive key of an entry's item: its link's, else the feed's and its id."""
        if e.link and is_url(e.link):
            return url_key(strip_userinfo(e.link))
        return f"{feed_key(s.key)}#{e.id}"

    def _item(self, s: Subscription, feed: Feed, e: Entry, mode: str | None,
              labels: tuple[str, ...], key: str) -> Item:
        """The entry's item: provenance is the feed (``feed:URL``, also inside an OPML
        list), its labels the feed's name and folders, its listing the entry's title,
        teaser and date. ``key``: its item's (``_key``, or the item it made before a
        revision moved it to another link: it stays that item, read from the new link)."""
        spec = f"feed:{s.key}"
        listing = Listing(title=e.title, note=teaser(e.content), date=e.date,
                          warnings=e.problems)
        facts: dict[str, Any] = {"feed": s.key, "feed_entry": e.id}
        if e.problems or feed.problems:
            facts["feed_problems"] = [*e.problems, *feed.problems]
        link = strip_userinfo(e.link) if e.link and is_url(e.link) else None
        own = e.content is not None and (link is None or mode == "feed")
        common: dict[str, Any] = {"source": spec, "labels": labels, "listing": listing}
        if link is not None and not own:
            facts["feed_content"] = "article"
            got = self._fetched.get(link)
            if got is not None:  # fetched to compare: archived as that capture
                r, at = got
                ctype = f"{r.content_type}; charset={r.charset}" if r.charset else \
                    r.content_type
                response = Response(url=r.final_url, status=r.status, content_type=ctype,
                                    date=r.date, etag=r.etag, last_modified=r.last_modified,
                                    captured_at=at)
                return Item(key=key, original=link, data=r.content,
                            response=response, name=url_name(link),
                            facts=tuple(facts.items()), **common)
            return Item(key=key, original=link, url=link, name=url_name(link),
                        facts=tuple(facts.items()), **common)
        facts["feed_content"] = "feed"
        return Item(key=key, original=link or key, data=entry_page(e, feed),
                    name=f"{_safe_name(e.title or 'entry')}.html",
                    facts=tuple(facts.items()), **common)


def teaser(content: str | None, limit: int = 600) -> str | None:
    """The first words of an entry's content as plain text: the listing's note."""
    if not content:
        return None
    from lxml import html as lhtml

    try:
        text = lhtml.fromstring(content).text_content()
    except (ValueError, TypeError, lhtml.etree.LxmlError):
        text = re.sub(r"<[^>]*>", " ", content)
    text = re.sub(r"\s+", " ", text).strip()
    return (text[:limit].rsplit(" ", 1)[0] + " …" if len(text) > limit else text) or None


class _DateOnly:
    """Entries of one document whose only change since the last run is a date: a
    revision each, unless several moved to about the same time (within STAMP_WINDOW of
    each other): then that is a generator stamping every entry with the time it made the
    feed (some do it on every build), and none of them is read again. Holds at most one
    entry per window, so a huge stamped feed costs no memory."""

    def __init__(self) -> None:
        self.held: dict[int, tuple[Entry, str]] = {}  # window -> the one entry moved to it
        self.stamped: set[int] = set()

    def add(self, when: str, entry: tuple[Entry, str]) -> None:
        try:
            at = calendar.timegm(time.strptime(when, "%Y%m%d%H%M%S"))
        except ValueError:
            return
        b = at // STAMP_WINDOW
        near = (b - 1, b, b + 1)  # dates within a window of each other
        if any(n in self.stamped for n in near):
            self.stamped.add(b)
            return
        hit = [n for n in near if n in self.held]
        if hit:
            for n in hit:
                del self.held[n]
            self.stamped.update((*hit, b))
            return
        self.held[b] = entry

    def revisions(self) -> list[tuple[Entry, str]]:
        return list(self.held.values())


@dataclass
class _Loaded:
    data: bytes | None = None
    url: str | None = None
    content_type: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    not_modified: bool = False
    error: ErrorInfo | None = None


def feed_key(key: str) -> str:
    """The archive key of a feed's own record (its failures)."""
    return f"feed:{key}"


def entry_page(e: Entry, feed: Feed) -> bytes:
    """The entry's own content as an HTML page: its title, author, date and language in
    the head, where the HTML reader takes them from."""
    esc = html.escape
    head = [f"<title>{esc(e.title or '')}</title>"]
    if e.author:
        head.append(f'<meta name="author" content="{esc(e.author)}">')
    if e.date:
        head.append(f'<meta property="article:published_time" content="{esc(e.date)}">')
    if e.link:
        head.append(f'<link rel="canonical" href="{esc(e.link)}">')
    if feed.title:
        head.append(f'<meta property="og:site_name" content="{esc(feed.title)}">')
    lang = f' lang="{esc(e.language)}"' if e.language else ""
    title = f"<h1>{esc(e.title)}</h1>" if e.title else ""
    return (f'<!DOCTYPE html><html{lang}><head><meta charset="utf-8">{"".join(head)}</head>'
            f"<body><article>{title}{e.content or ''}</article></body></html>").encode()


def decide_mode(entries: list[Entry], fetcher: Any) -> tuple[str | None, dict[str, Any]]:
    """``feed`` if the feed carries whole articles, ``article`` if they must be fetched,
    None if it cannot be told now (no entry with both a link and content, or no article
    could be fetched); and the articles fetched to tell, by link (each with when it
    was received), so that none is fetched twice. Compares the main text of up to
    SAMPLE fetched articles with what the feed carries for them."""
    from ..web.main import main_text

    sample = [e for e in entries if e.link and e.content and is_url(e.link)][:SAMPLE]
    if not sample:
        return ("article" if any(e.link and not e.content for e in entries) else None), {}
    verdicts, fetched = [], {}
    for e in sample:
        assert e.link is not None and e.content is not None
        r = fetcher.fetch(e.link)
        at = time.time()
        if r.error is not None or not r.content or r.content_type not in (
                "text/html", "application/xhtml+xml"):
            continue
        fetched[e.link] = (r, at)
        page = main_text(r.content.decode(r.charset or "utf-8", "replace"), r.final_url)
        carried = main_text(f"<html><body><article>{e.content}</article></body></html>")
        verdicts.append(covers(carried, page))
    if not verdicts:
        return None, {}
    return ("feed" if all(verdicts) else "article"), fetched


_WORD = re.compile(r"\w+")


def covers(carried: str, page: str) -> bool:
    """Whether the text a feed carries holds (nearly) all the words of the page's main
    text: the share of the page's words (counted with repeats) found in the feed's."""
    from collections import Counter

    want = Counter(w.lower() for w in _WORD.findall(page))
    have = Counter(w.lower() for w in _WORD.findall(carried))
    total = sum(want.values())
    if total == 0:
        return bool(have)
    found = sum(min(n, have[w]) for w, n in want.items())
    return found / total >= FULL_RECALL


def read_opml(data: bytes) -> list[Subscription]:
    """Every feed of an OPML subscription list, with the folders (outlines without a
    feed URL) it sits in. Parsed with entities and network off: a billion-laughs
    DOCTYPE expands nothing."""
    from ..kernels.xml import local, parse_xml
    from ..model import ExtractionError

    try:  # strict first: libxml2 names what is wrong (an entity bomb, say)
        root = parse_xml(data)
        strict_error = None
    except ExtractionError as exc:
        strict_error = exc.message
        try:  # a sloppy file exported by some reader: what can be repaired is read
            root = parse_xml(data, recover=True)
        except ExtractionError:
            raise ValueError(f"not a readable OPML file ({strict_error})") from exc
    if local(root.tag) != "opml":
        raise ValueError("not an OPML file")
    body = next((c for c in root if local(c.tag) == "body"), None)
    subs: list[Subscription] = []
    seen: set[str] = set()

    def walk(node: Any, folders: tuple[str, ...], depth: int) -> None:
        if depth > 64:
            return
        for child in node:
            if not isinstance(child.tag, str) or local(child.tag) != "outline":
                continue
            url = (child.get("xmlUrl") or child.get("xmlurl") or "").strip()
            name = (child.get("title") or child.get("text") or "").strip() or None
            if url:
                if url.startswith("feed:") and not url.startswith("feed://"):
                    url = url[5:]
                url = url.replace("feed://", "http://", 1) if url.startswith("feed://") \
                    else url
                if is_url(url) and url_key(url) not in seen:
                    seen.add(url_key(url))
                    subs.append(Subscription(strip_userinfo(url), name, folders))
            else:
                walk(child, (*folders, name) if name else folders, depth + 1)

    if body is not None:
        walk(body, (), 0)
    if not subs and strict_error:
        raise ValueError(f"not a readable OPML file ({strict_error})")
    return subs


def _read_capped(path: str, cap: int) -> bytes:
    with open(path, "rb") as f:
        data = f.read(cap + 1)
    if len(data) > cap:
        raise FeedProblem(ErrorKind.TOO_LARGE, f"larger than the limit of {cap} bytes")
    return data


def _safe_name(title: str) -> str:
    return re.sub(r"[\\/\x00-\x1f]+", " ", title)[:80].strip() or "entry"

