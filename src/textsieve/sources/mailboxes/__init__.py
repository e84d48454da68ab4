"""Mail sources: where mailed links come from (mbox, Maildir, .eml folders, IMAP, Gmail).

Every source yields ``RawMail`` (the raw RFC 5322 bytes plus a ``MailRef``) so that one
mail parser (the harvester) serves all of them; Gmail is read with ``format=raw`` for the
same reason. Sources only read headers, cheaply, for the provenance; bodies are left to
the harvester.

Incremental sync: ``mails(state)`` takes what ``new_state()`` returned after the last
successful run (the runner keeps it in the archive, keyed by the spec) and yields only what
is new; ``new_state()`` is asked after the run's items are committed, so a crash never
advances the mark past mail that was not archived.
"""

from __future__ import annotations

from collections.abc import Callable

from ...options import Options
from .base import (
    MailAuthError,
    MailConnectionError,
    MailSource,
    MailSourceError,
    iso_from_epoch_ms,
    mail_ref,
)


def open_mail_source(spec: str, options: Options | None = None) -> MailSource | None:
    """The mail source for a spec as typed on the command line, or None when the spec is
    not a mail source (a file, a folder, a URL: other sources handle those).

    ``mbox:PATH``, ``maildir:PATH``, ``eml:DIR``, ``imap://user@host[:port]/Folder``
    (``imaps://`` for implicit TLS), ``gmail:LABEL``.
    """
    options = options or Options()
    low = spec.lower()
    if low.startswith(("mbox:", "maildir:", "eml:")):
        from .local import EmlFolderSource, MaildirSource, MboxSource

        kind, _, path = spec.partition(":")
        cls: dict[str, Callable[[str], MailSource]] = {
            "mbox": MboxSource, "maildir": MaildirSource, "eml": EmlFolderSource}
        return cls[kind.lower()](path)
    if low.startswith(("imap://", "imaps://")):
        from .imap import ImapSource

        return ImapSource(spec, options)
    if low.startswith("gmail:"):
        from .gmail import GmailSource

        return GmailSource(spec[6:], options)
    return None


__all__ = ["MailAuthError", "MailConnectionError", "MailSource", "MailSourceError",
           "iso_from_epoch_ms", "mail_ref", "open_mail_source"]
