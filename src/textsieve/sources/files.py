"""Files, folders (walked recursively) and globs."""

from __future__ import annotations

import glob
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

    def __init__(self, spec: str, *, exclude: frozenset[str] = frozenset()) -> None:
        self.raw = spec
        self.exclude = exclude
        if glob.has_magic(spec) and not os.path.exists(spec):
            self.spec = f"glob:{os.path.abspath(spec)}"
            self._paths = lambda: iter(sorted(glob.glob(spec, recursive=True)))
        elif os.path.isdir(spec):
            self.spec = f"dir:{os.path.abspath(spec)}"
            self._paths = lambda: self._walk(spec)
        elif os.path.exists(spec):
            self.spec = f"file:{os.path.abspath(spec)}"
            self._paths = lambda: iter([spec])
        else:
            raise SourceError(f"{spec}: no such file, folder or matching glob")

    @staticmethod
    def _walk(root: str) -> Iterator[str]:
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for f in sorted(files):
                if not f.startswith("."):
                    yield os.path.join(dirpath, f)

    def items(self) -> Iterator[Item]:
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
