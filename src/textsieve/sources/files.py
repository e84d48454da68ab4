"""Files, folders (walked recursively) and globs."""

from __future__ import annotations

import glob
import hashlib
import os
import select
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from ..bytesource import os_problem, path_problem, walk
from ..filekeys import file_key, readable
from ..model import ErrorInfo, ErrorKind, Item
from .base import SourceError


def _fixed_prefix(pattern: str) -> str:
    """The folder part of a glob before its first wildcard: ``/a/b/**/*.pdf`` -> ``/a/b``."""
    fixed: list[str] = []
    for part in Path(pattern).parts[:-1]:
        if glob.has_magic(part):
            break
        fixed.append(part)
    return os.path.join(*fixed) if fixed else os.sep


class FileSource:
    """A file, a folder or a glob pattern.

    Keys are absolute, normalised paths, so the same file named two ways is one item.
    Hidden files and folders are skipped, and so are ``exclude`` paths (the archive itself
    and its journal must never be archived). Walk order is sorted, for reproducible runs.
    """

    def __init__(self, spec: str, *, exclude: frozenset[str] = frozenset(),
                 max_size: int | None = None, wait: float | None = None) -> None:
        self.raw = spec
        self.exclude = exclude
        self.max_size = max_size  # for a pipe, read whole before anything else
        self.wait = wait  # seconds a pipe may stay silent before its first byte
        self._pipe: str | None = None
        # The folder the source's files are named relative to (outputs mirror the tree).
        self.root: str | None = os.path.dirname(os.path.abspath(spec))
        self._paths: Callable[[], Iterator[tuple[str, ErrorInfo | None]]]
        if glob.has_magic(spec) and not os.path.exists(spec):
            self.root = _fixed_prefix(os.path.abspath(spec))
            self.spec = f"glob:{file_key(os.path.abspath(spec))}"
            self._paths = lambda: ((p, None) for p in sorted(glob.glob(spec, recursive=True)))
        elif os.path.isdir(spec):
            self.root = os.path.abspath(spec)
            self.spec = f"dir:{file_key(os.path.abspath(spec))}"
            self._paths = lambda: walk(spec)
        elif os.path.isfile(spec):
            self.spec = f"file:{file_key(os.path.abspath(spec))}"
            self._paths = lambda: iter([(spec, None)])
        elif os.path.exists(spec):  # a pipe or device named on the command line
            self.root = None
            self.spec = f"pipe:{file_key(spec)}"
            self._paths = lambda: iter([])
            self._pipe = spec
        elif os.path.lexists(spec):  # a link that leads nowhere, named: its typed record
            self.spec = f"file:{file_key(os.path.abspath(spec))}"
            self._paths = lambda: iter([(spec, path_problem(spec, named=True))])
        else:
            raise SourceError(f"{spec}: no such file, folder or matching glob")

    def _pipe_item(self, spec: str) -> Item:
        """``textsieve run <(curl -s URL)``: a pipe has no stable path, and it can be read
        only once. Its bytes are the item, keyed by their hash (the same content sent again
        is unchanged, not a new item). At most one byte past the size limit is read: the
        extraction then records ``too_large``, as for any file. A named pipe nobody writes
        to is a ``timeout`` record after ``wait`` seconds, not a run waiting for ever."""
        fd = os.open(spec, os.O_RDONLY | os.O_NONBLOCK)  # opening a FIFO never blocks so
        with open(fd, "rb") as f:
            if not select.select([fd], [], [], self.wait)[0]:
                return Item(key=f"pipe:{file_key(spec)}", original=readable(spec),
                            source=self.spec, name=readable(Path(spec).name),
                            problem=ErrorInfo(ErrorKind.TIMEOUT, (
                                f"nothing was written to the pipe in {self.wait:g} s")))
            os.set_blocking(fd, True)
            data = f.read(-1 if self.max_size is None else self.max_size + 1)
        key = "pipe:" + hashlib.sha256(data).hexdigest()
        return Item(key=key, original=readable(spec), source=self.spec, data=data,
                    name=readable(Path(spec).name), size=len(data))

    def count(self) -> int:
        """About how many items ``items()`` will list, from names alone (no stat, no
        reading): cheap enough to run ahead of the listing, for the progress ETA."""
        return (self._pipe is not None) + sum(
            1 for p, _ in self._paths() if os.path.abspath(p) not in self.exclude)

    def items(self) -> Iterator[Item]:
        if self._pipe is not None:
            yield self._pipe_item(self._pipe)
        for p, problem in self._paths():
            path = os.path.abspath(p)
            if path in self.exclude:
                continue
            try:
                st = os.stat(path)
            except OSError as exc:
                if not os.path.lexists(path):
                    continue  # vanished between listing and stat: not an item any more
                problem = problem or os_problem(path, exc)
            else:
                if stat.S_ISDIR(st.st_mode):
                    if problem is None:
                        continue  # a folder a glob matched: its files are the items
                else:
                    problem = problem or path_problem(path)
            name = readable(Path(path).name)
            if problem is not None:  # never opened: a pipe would wait for ever
                yield Item(key=file_key(path), original=readable(p), source=self.spec,
                           path=path, name=name, problem=problem)
                continue
            yield Item(key=file_key(path), original=readable(p), source=self.spec, path=path,
                       name=name, size=st.st_size, mtime_ns=st.st_mtime_ns)
