"""Where inputs come from. A source turns what the user named into ``Item``s.

The interface is deliberately small so that URL lists, mailboxes and object stores plug
into ``textsieve run`` the same way: ``open_source(spec)`` returns an object with a
``spec`` string (its identity in the archive's provenance) and an ``items()`` iterator.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from ..model import Item


class SourceError(Exception):
    """A source that cannot be read at all (missing folder, bad spec): a usage error."""


class ItemSource(Protocol):
    spec: str

    def items(self) -> Iterator[Item]: ...


def open_source(spec: str, *, exclude: frozenset[str] = frozenset()) -> ItemSource:
    """The source for a spec as typed on the command line (a path, folder or glob)."""
    from .files import FileSource

    return FileSource(spec, exclude=exclude)
