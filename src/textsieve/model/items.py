"""What flows into a run: the items to process and where they came from (mail provenance,
harvested links). ``textsieve.model`` exports these names, loading this module on first
use, so that extracting one file (``textsieve extract FILE``) does not build them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .document import ErrorInfo


@dataclass(frozen=True)
class Item:
    """What to process: where it is, how the archive keys it, and which source named it.

    Sources yield Items; the runner decides from the archive whether each needs work.
    """

    key: str  # normalised identity: absolute path, normalised URL, ...
    original: str  # as the user or the source gave it
    source: str  # the source spec that produced it (provenance)
    path: str | None = None  # a local file to read
    data: bytes | None = None  # or the bytes themselves (mail parts, fetched bodies)
    name: str | None = None
    size: int | None = None
    mtime_ns: int | None = None
    url: str | None = None  # a web resource to fetch
    mails: tuple[MailRef, ...] = ()  # the mails that named it (mail sources)
    remote: str | None = None  # an object-store URI (s3://), read only if it needs work
    # The server's answer that came with ``data`` (a WARC record): archived as a capture
    # of ``key`` at ``response.captured_at``, never fetched.
    response: Response | None = None
    # Re-extract from the archive's kept original with this SHA-256 (``textsieve
    # reextract``): no file, no network.
    stored: str | None = None
    # A path that leads nowhere (a symlink loop, a pipe in a folder...): never read, its
    # typed error is recorded (``source.path_problem``).
    problem: ErrorInfo | None = None
    # Labels the source gives the item (bookmark folders and tags, a feed's name, OPML
    # folders): the archive keeps them per item and source, replacing this source's earlier
    # set each time it lists the item (mail labels travel in ``mails`` instead).
    labels: tuple[str, ...] = ()
    # What a list of links says about it (a bookmark's title, note and date), kept as
    # provenance and shown until the link is fetched.
    listing: Listing | None = None
    # What the source knows of the item beyond its listing (a feed entry's id, whether
    # the feed's own content was kept): kept with its provenance, and added by the archive
    # to the ``metadata.extra`` of every capture of the item (one made later without the
    # source too: a retry, ``reextract``).
    facts: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class Listing:
    """What a list of links (bookmarks, a read-later export, a feed) says about one link:
    the archive keeps it with the item's provenance, so a fetch that follows (which
    replaces the item's text and title with the page's) loses none of it."""

    title: str | None = None
    note: str | None = None  # the user's description (a bookmark's <DD>, an excerpt)
    date: str | None = None  # ISO 8601 (UTC): when it was saved or listed
    # What was wrong with the entry and left out (a date that is not one, replaced bytes):
    # the warnings of the link's record.
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Response:
    """What a server answered with an item's bytes (a fetch, a WARC record): kept with the
    capture, so the bytes can be read again as they were served (type, charset, URL)."""

    url: str  # where the bytes came from, after redirects
    status: int | None = None  # HTTP status
    content_type: str | None = None  # the Content-Type header as served (charset included)
    date: str | None = None  # the Date header
    etag: str | None = None
    last_modified: str | None = None
    captured_at: float | None = None  # when the bytes were received (None: now)
    via: str | None = None  # where a record came from (a WARC file and its record id)


@dataclass(frozen=True)
class MailRef:
    """Where a mail came from: its provenance, kept in the archive for every item it gave."""

    source: str  # the mail source spec (mbox:..., imap://..., gmail:...)
    message_id: str  # the Message-ID header (or a stable stand-in when it has none)
    date: str | None = None  # ISO 8601
    sender: str | None = None
    subject: str | None = None
    labels: tuple[str, ...] = ()  # Gmail labels / IMAP folder
    uid: str | None = None  # the source's own id (IMAP UID, Gmail message id, file name)


@dataclass(frozen=True)
class RawMail:
    """One message as a mail source yields it: the raw RFC 5322 bytes and its reference."""

    raw: bytes
    ref: MailRef


@dataclass(frozen=True)
class Link:
    """A URL harvested from a mail, before fetching."""

    url: str  # as it will be fetched (resolved, tracking parameters stripped)
    original: str  # as it appeared in the mail
    text: str | None = None  # the anchor text, when it came from HTML
    story: bool = False  # the main link of a newsletter / feed-reader share
