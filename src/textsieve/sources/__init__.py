"""Where inputs come from. A source turns what the user named into ``Item``s.

The interface is deliberately small so that URL lists, mailboxes and object stores plug
into ``textsieve run`` the same way: ``open_source(spec)`` returns an object with a
``spec`` string (its identity in the archive's provenance) and an ``items()`` iterator.
"""

from __future__ import annotations

from ..options import Options
from .base import ItemSource, SourceError

__all__ = ["ItemSource", "SourceError", "open_source"]

MAIL_PREFIXES = ("mbox:", "maildir:", "eml:", "imap://", "imaps://", "gmail:")


def open_source(spec: str, *, exclude: frozenset[str] = frozenset(),
                options: Options | None = None) -> ItemSource:
    """The source for a spec as typed on the command line.

    ``https://...`` is a page to fetch; ``urls:FILE`` (or a file whose every line is a URL,
    or a CSV with a ``url`` column) a list of pages; ``mbox:``, ``maildir:``, ``eml:``,
    ``imap://`` and ``gmail:`` mailboxes of links; ``bookmarks:FILE`` the links of a
    bookmark or read-later export (``sources.bookmarks``); ``feed:URL|FILE`` a feed's
    entries and ``opml:FILE`` those of every feed of a subscription list (``sources.feeds``);
    ``s3://bucket/prefix/`` the objects
    under a prefix; anything else a file, folder or glob (a WARC file among them gives
    the responses recorded in it).
    """
    import os

    from .files import FileSource
    from .urls import UrlListSource, UrlSource, is_url, looks_like_url_list

    if spec.startswith(MAIL_PREFIXES):
        from .mailboxes import open_mail_source
        from .maillinks import MailLinkSource

        opts = options or Options()
        try:
            mail_source = open_mail_source(spec, opts)
        except (OSError, ValueError) as exc:
            raise SourceError(f"{spec}: {exc}") from exc
        if mail_source is None:
            raise SourceError(f"{spec}: not a mail source this textsieve knows")
        return MailLinkSource(mail_source, opts)
    if spec.startswith("bookmarks:"):
        from .bookmarks import BookmarkSource

        return BookmarkSource(spec[len("bookmarks:"):], options)
    if spec.startswith(("feed:", "opml:")) and not spec.startswith("feed://"):
        from .feeds import FeedSource

        return FeedSource(spec, options or Options())
    if spec.startswith("s3://"):
        from .s3 import S3Source

        return S3Source(spec, options or Options())
    if is_url(spec):
        return UrlSource(spec)
    if spec.startswith("urls:"):
        return UrlListSource(spec[5:])
    if os.path.isfile(spec) and looks_like_url_list(spec):
        from .bookmarks import BookmarkSource, is_read_later_csv

        if is_read_later_csv(spec):  # Pocket's or Instapaper's: titles, tags, dates too
            return BookmarkSource(spec, options)
        return UrlListSource(spec)
    from .warc import WarcExpander

    opts = options or Options()  # a WARC file (alone or in a folder) gives its responses
    return WarcExpander(FileSource(spec, exclude=exclude, max_size=opts.max_file_size,
                                   wait=opts.timeout), opts.max_body)
