"""Files, folders (walked recursively) and globs."""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from ..model import Item
from . import SourceError


class FileSource:
    """A file, a folder or a glob pattern.

    Keys are absolute, normalised paths, so the same file named two ways is one item.
    Hidden files and folders are skipped, and so are ``exclude`` paths (the archive itself
    and its journal must never be archived). Walk order is sorted, for reproducible runs.
    """

    def __init__(self, spec: str, *, exclude: frozenset[str] = frozenset(),
                 max_size: int | None = None) -> None:
        self.raw = spec
        self.exclude = exclude
        self.max_size = max_size  # for a pipe, read whole before anything else
        self._pipe: str | None = None
        if glob.has_magic(spec) and not os.path.exists(spec):
            self.spec = f"glob:{os.path.abspath(spec)}"
            self._paths = lambda: iter(sorted(glob.glob(spec, recursive=True)))
        elif os.path.isdir(spec):
            self.spec = f"dir:{os.path.abspath(spec)}"
            self._paths = lambda: self._walk(spec)
        elif os.path.isfile(spec):
            self.spec = f"file:{os.path.abspath(spec)}"
            self._paths = lambda: iter([spec])
        elif os.path.exists(spec):  # a pipe or device named on the command line
            self.spec = f"pipe:{spec}"
            self._paths = lambda: iter([])
            self._pipe = spec
        else:
            raise SourceError(f"{spec}: no such file, folder or matching glob")

    def _pipe_item(self, spec: str) -> Item:
        """``textsieve run <(curl -s URL)``: a pipe has no stable path, and it can be read
        only once. Its bytes are the item, keyed by their hash (the same content sent again
        is unchanged, not a new item). At most one byte past the size limit is read: the
        extraction then records ``too_large``, as for any file."""
        with open(spec, "rb") as f:
            data = f.read(-1 if self.max_size is None else self.max_size + 1)
        key = "pipe:" + hashlib.sha256(data).hexdigest()
        return Item(key=key, original=spec, source=self.spec, data=data,
                    name=Path(spec).name, size=len(data))

    @staticmethod
    def _walk(root: str) -> Iterator[str]:
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for f in sorted(files):
                if not f.startswith("."):
                    yield os.path.join(dirpath, f)

    def count(self) -> int:
        """About how many items ``items()`` will list, from names alone (no stat, no
        reading): cheap enough to run ahead of the listing, for the progress ETA."""
        return (self._pipe is not None) + sum(
            1 for p in self._paths() if os.path.abspath(p) not in self.exclude)

    def items(self) -> Iterator[Item]:
        if self._pipe is not None:
            yield self._pipe_item(self._pipe)
        for p in self._paths():
            path = os.path.abspath(p)
            if path in self.exclude or not os.path.isfile(path):
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue  # vanished between listing and stat: not an item any more
            yield Item(key=path, original=p, source=self.spec, path=path,
                       name=Path(path).name, size=st.st_size, mtime_ns=st.st_mtime_ns)
