"""The items a "retry these" re-runs, as sources the runner takes: each failed item is
listed again under the source spec it came from (so its provenance stays), without
re-reading the whole folder or mailbox. Also what an incremental run of a feed or a
mailbox owes from before (``owed``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..archive import browse
from ..archive.store import Archive
from ..filekeys import key_path, readable
from ..model import Item
from ..sources.urls import is_url, url_item


@dataclass
class RetrySource:
    """A few items of one source, listed for a re-run."""

    spec: str
    listed: list[Item] = field(default_factory=list)

    def items(self) -> Iterator[Item]:
        yield from self.listed


def sources_for(archive: Archive, ids: list[int]) -> tuple[list[RetrySource], int]:
    """Sources listing these failed items again, and how many cannot be (a file that is
    gone, a mail's own article: its mailbox has to be run again)."""
    by_spec: dict[str, RetrySource] = {}
    for spec, key, original in browse.retry_targets(archive, ids):
        item = _item(spec, key, original)
        if item is not None:
            by_spec.setdefault(spec, RetrySource(spec)).listed.append(item)
    listed = sum(len(s.listed) for s in by_spec.values())
    return list(by_spec.values()), len(ids) - listed


# Items of an incremental source whose last attempt failed for a passing reason, listed
# again per run (those tried longest ago first): a dead site's many links cost a run (a
# round of ``watch``) this many fetches at most.
OWED_PER_RUN = 50


def owed(archive: Archive, specs: list[str], *, all_failures: bool = False
         ) -> list[RetrySource]:
    """The items these incremental sources (a feed, a mailbox's links, a bookmark file)
    owe from earlier runs: those whose last attempt failed for a reason that passes (a
    server error, a timeout, a refused connection, ``TRANSIENT_ERRORS``), listed again.
    Such a source never lists an entry it has seen again, so an article whose site was
    down when its entry came, or when a revision of the entry came (the item keeps its
    good text, its fetch is recorded as failed), would otherwise wait for someone to press
    "retry", or for the entry to change again. The archive holds what is owed (the failed
    item, or the failed check of a good one), so the source only says what it listed and
    nothing flows back into it; a failure that would repeat (a 404, bytes that cannot be
    read) is not listed again: it is a typed record where failures are listed.

    ``all_failures`` (``run --retry-errors``, which such a source would otherwise give
    nothing to: it lists only what is new): every item of theirs that failed, for any
    reason, and the good ones whose last fetch failed for a reason that passes, all of
    them."""
    from .fresh import TRANSIENT_ERRORS

    out = []
    for spec in dict.fromkeys(specs):  # listed under the source that owes them
        src = RetrySource(spec, [item for key, original in browse.passing_failures(
            archive, spec, TRANSIENT_ERRORS, None if all_failures else OWED_PER_RUN,
            any_error=all_failures)
            if (item := _item(spec, key, original)) is not None])
        if src.listed:
            out.append(src)
    return out


def _item(spec: str, key: str, original: str | None) -> Item | None:
    """The item to list again, under its own key: a URL item is fetched from ``original``,
    which may be another address than its key's (a feed entry whose revision moved it to
    another link stays its item, ``sources.feeds``)."""
    if original and is_url(original):
        return dataclasses.replace(url_item(original, spec), key=key)
    path = key_path(key)
    if path is None or not os.path.isfile(path):
        return None
    st = os.stat(path)
    return Item(key=key, original=original or readable(path), source=spec, path=path,
                name=readable(Path(path).name), size=st.st_size, mtime_ns=st.st_mtime_ns)
