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

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Protocol

from ...errors import ExitCode
from ...kernels.mime import header, iso_date, parse_headers
from ...model import MailRef, RawMail
from ...options import Options
from .. import SourceError


class MailSourceError(SourceError):
    """A mail source that cannot be read: bad spec, unreachable server, missing folder."""


class MailAuthError(MailSourceError):
    """The server refused our credentials, or none could be found (no prompt possible)."""

    exit_code = ExitCode.AUTH


class MailConnectionError(MailSourceError):
    """The mail server or API could not be reached or answered with an error: not a usage
    error (the spec was fine), so its own exit code."""

    exit_code = ExitCode.UNREACHABLE


class MailSource(Protocol):
    spec: str  # "mbox:/abs/path", "imap://user@host:port/Folder", "gmail:Links", ...

    def mails(self, state: dict[str, str]) -> Iterator[RawMail]: ...

    def new_state(self) -> dict[str, str]: ...


def mail_ref(raw: bytes, source: str, *, labels: tuple[str, ...] = (), uid: str | None = None,
             fallback_date: str | None = None) -> MailRef:
    """The provenance of one raw mail from its headers (encoded words decoded).

    A mail without a Message-ID gets a stable stand-in, the SHA-1 of its bytes, so the same
    mail seen again (another run, another source) is still recognised as the same.
    """
    msg = parse_headers(raw)
    mid = header(msg, "Message-ID")
    if not mid or not mid.strip("<> "):
        mid = "sha1:" + hashlib.sha1(raw).hexdigest()
    return MailRef(
        source=source,
        message_id=mid.strip(),
        date=iso_date(header(msg, "Date")) or fallback_date,
        sender=header(msg, "From") or None,
        subject=header(msg, "Subject") or None,
        labels=labels,
        uid=uid,
    )


def iso_from_epoch_ms(ms: str | int | None) -> str | None:
    """Gmail's ``internalDate`` (epoch milliseconds) as ISO 8601 UTC."""
    try:
        return datetime.fromtimestamp(int(ms) / 1000, UTC).isoformat()  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError):
        return None


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
        cls = {"mbox": MboxSource, "maildir": MaildirSource, "eml": EmlFolderSource}
        return cls[kind.lower()](path)
    if low.startswith(("imap://", "imaps://")):
        from .imap import ImapSource

        return ImapSource(spec, options)
    if low.startswith("gmail:"):
        from .gmail import GmailSource

        return GmailSource(spec[6:], options)
    return None


__all__ = ["MailAuthError", "MailConnectionError", "MailSource", "MailSourceError", "mail_ref",
           "open_mail_source"]
