"""The items a "retry these" re-runs, as sources the runner takes: each failed item is
listed again under the source spec it came from (so its provenance stays), without
re-reading the whole folder or mailbox."""

from __future__ import annotations

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


def _item(spec: str, key: str, original: str | None) -> Item | None:
    if original and is_url(original):
        item = url_item(original, spec)
        return item if item.key == key else None
    path = key_path(key)
    if path is None or not os.path.isfile(path):
        return None
    st = os.stat(path)
    return Item(key=key, original=original or readable(path), source=spec, path=path,
                name=readable(Path(path).name), size=st.st_size, mtime_ns=st.st_mtime_ns)
