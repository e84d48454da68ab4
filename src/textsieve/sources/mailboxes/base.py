"""What every mailbox shares: its protocol, its errors, the provenance of one mail.

A mailbox yields ``RawMail`` (the raw RFC 5322 bytes plus a ``MailRef``); ``mail_ref``
reads the provenance from the headers alone, through the MIME kernel's header parser.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Protocol

from ...errors import ExitCode
from ...kernels.mime import header, iso_date, parse_headers
from ...model import MailRef, RawMail
from ..base import SourceError


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
