"""Mailboxes of links: every mail of a mail source becomes the items it points to.

The mailbox (``sources.mailboxes``: mbox, Maildir, .eml folders, IMAP, Gmail) yields raw
mails with their provenance; the harvester (``textsieve.links.harvest``) turns each into
links (URLs, already unwrapped, cleaned and normalised) and, for a newsletter or a
feed-reader share, the mail's own article. Each becomes an Item carrying the mail it came
from, so the archive links every item to every mail that named it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..links import strip_userinfo
from ..model import Item
from ..options import Options


class MailLinkSource:
    def __init__(self, mail_source: Any, options: Options) -> None:
        from ..links.rules import Rules

        self.mail_source = mail_source
        self.spec: str = mail_source.spec
        self.rules = Rules()
        self.options = options
        self._state: dict[str, str] = {}
        self.mails_seen = 0

    def bind_state(self, state: dict[str, str]) -> None:
        """The sync state saved by the last completed run (incremental IMAP / Gmail)."""
        self._state = dict(state)

    def new_state(self) -> dict[str, str]:
        return dict(self.mail_source.new_state())

    def items(self) -> Iterator[Item]:
        from ..links.harvest import harvest
        from .urls import url_item

        for mail in self.mail_source.mails(self._state):
            self.mails_seen += 1
            ref = mail.ref
            found = harvest(mail.raw, self.rules)
            if found.article is not None:
                title, html = found.article
                yield Item(key=f"mail:{ref.message_id}#article", original=ref.uid or
                           ref.message_id, source=self.spec, data=html,
                           name=f"{(title or ref.subject or 'article')[:80]}.html",
                           mails=(ref,))
            for link in found.links:
                item = url_item(link.url, self.spec)  # a malformed link: a bad_url record
                yield Item(key=item.key, original=strip_userinfo(link.original),
                           source=self.spec, url=item.url, name=item.name, mails=(ref,))
