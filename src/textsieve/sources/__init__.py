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
    """The source for a spec as typed on the command line.

    ``https://...`` is a page to fetch; ``urls:FILE`` (or a file whose every line is a URL,
    or a CSV with a ``url`` column) a list of pages; anything else a file, folder or glob.
    """
    import os

    from .files import FileSource
    from .urls import UrlListSource, UrlSource, is_url, looks_like_url_list

    if is_url(spec):
        return UrlSource(spec)
    if spec.startswith("urls:"):
        return UrlListSource(spec[5:])
    if os.path.isfile(spec) and looks_like_url_list(spec):
        return UrlListSource(spec)
    return FileSource(spec, exclude=exclude)
