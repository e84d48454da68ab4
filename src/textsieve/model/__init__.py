"""The data that flows through textsieve: what comes out of an extraction
(``document``: Document, Page, Metadata, Status, ErrorKind, ErrorInfo, ExtractionError)
and what flows into a run (``items``: Item, Link, MailRef, RawMail). Import them from
here: ``from textsieve.model import Document, Item``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .document import (
    Document,
    ErrorInfo,
    ErrorKind,
    ExtractionError,
    Metadata,
    Page,
    Status,
)

if TYPE_CHECKING:
    from .items import Item as Item
    from .items import Link as Link
    from .items import Listing as Listing
    from .items import MailRef as MailRef
    from .items import RawMail as RawMail

__all__ = ["Document", "ErrorInfo", "ErrorKind", "ExtractionError", "Item", "Link",
           "Listing", "MailRef", "Metadata", "Page", "RawMail", "Status"]

# What flows into a run (Item and the mail provenance it carries; Link) is loaded on first
# use: four frozen dataclasses are ~2.5 ms of generated code, paid by every
# `textsieve extract FILE`, which makes none of them.
_ITEMS = frozenset({"Item", "Link", "Listing", "MailRef", "RawMail"})


def __getattr__(name: str) -> Any:
    if name in _ITEMS:
        from . import items

        return getattr(items, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
