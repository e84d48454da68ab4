"""What every source shares: the protocol ``textsieve run`` reads them through, and the
error of a source that cannot be read at all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from ..errors import UsageError
from ..model import Item


class SourceError(UsageError):
    """A source that cannot be read at all (missing folder, bad spec): a usage error."""


class ItemSource(Protocol):
    spec: str

    def items(self) -> Iterator[Item]: ...
