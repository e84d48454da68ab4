"""What an extractor reads: one input's bytes, a file path or bytes behind one small
interface (``Source``). Where inputs come from (folders, URL lists, mailboxes) is
``sources/``; this is the byte source of one of them.

Paths stay paths as long as possible (pypdfium2 and zipfile read from disk without loading
the whole file); bytes are read at most once, with a size cap.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from .model import ErrorInfo, ErrorKind, ExtractionError

_CHUNK = 1 << 20


def read_capped(stream: BinaryIO, limit: int | None) -> bytes:
    """All of a stream (stdin, a pipe, a caller's file object), read in chunks and never
    more than ``limit`` bytes: ``too_large`` as soon as it has more. Chunks, because one
    ``read(limit + 1)`` makes Python allocate the whole limit (2 GiB by default) up front,
    and an endless stream (``< /dev/zero``) must cost no more than the limit it passes."""
    buf = io.BytesIO()  # its getvalue() hands over the buffer: no second copy at the end
    while chunk := stream.read(_CHUNK if limit is None else min(_CHUNK, limit + 1 - buf.tell())):
        buf.write(chunk)
        if limit is not None and buf.tell() > limit:
            raise ExtractionError(ErrorKind.TOO_LARGE,
                                  f"input is more than the limit of {limit} bytes")
    return buf.getvalue()


# The kinds ``path_problem`` gives: a path that leads nowhere, known before reading it.
PATH_PROBLEMS = frozenset({ErrorKind.SYMLINK_LOOP, ErrorKind.DANGLING_LINK,
                           ErrorKind.PERMISSION, ErrorKind.NOT_REGULAR})

_SPECIAL = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def path_problem(path: str | os.PathLike[str], *, named: bool = False) -> ErrorInfo | None:
    """Why ``path`` cannot be read as a file, found without opening it (opening a named
    pipe would wait for a writer for ever); None: a regular file to read, or a folder.
    ``named``: given by the user (not found in a folder or by a glob), where a pipe or a
    device is read on purpose (``textsieve run <(curl ...)``, ``/dev/stdin``)."""
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except OSError as exc:
        return os_problem(p, exc)
    if stat.S_ISREG(st.st_mode):
        if not os.access(p, os.R_OK):
            return ErrorInfo(ErrorKind.PERMISSION, "permission denied: this user may not "
                             "read the file")
        return None
    if stat.S_ISDIR(st.st_mode) or named:
        return None
    what = next((w for test, w in _SPECIAL if test(st.st_mode)), "not a regular file")
    return ErrorInfo(ErrorKind.NOT_REGULAR, f"{what}, not a regular file: not read")


def os_problem(path: str, exc: OSError) -> ErrorInfo:
    """The typed error of an ``OSError`` met opening ``path`` (never ``internal``)."""
    if exc.errno == errno.ELOOP:
        return ErrorInfo(ErrorKind.SYMLINK_LOOP, "symbolic links in a loop: they never "
                         f"reach a file ({_chain(path)})")
    if exc.errno in (errno.EACCES, errno.EPERM):
        what = "list the folder" if os.path.isdir(path) else "reach or read it"
        return ErrorInfo(ErrorKind.PERMISSION, f"permission denied: this user may not {what}")
    if exc.errno == errno.ENOENT and os.path.islink(path):
        return ErrorInfo(ErrorKind.DANGLING_LINK, "a symbolic link to something that does "
                         f"not exist ({_chain(path)})")
    return ErrorInfo(ErrorKind.NOT_FOUND, exc.strerror or str(exc))


def walk(root: str) -> Iterator[tuple[str, ErrorInfo | None]]:
    """Every file below the folder ``root`` (sorted; hidden entries skipped; folders
    linked to are not entered, so no loop is followed), each with the reason it cannot be
    read (``path_problem``: a link that leads nowhere, a pipe, a device) or None; and a
    folder that cannot be listed, with its ``permission`` (or other) error. The one walk
    of ``textsieve extract DIR`` and ``textsieve run DIR``."""
    try:
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        yield root, os_problem(root, exc)
        return
    folders = []
    for e in entries:
        if e.name.startswith("."):
            continue
        try:
            if e.is_dir():  # a link to a folder too: listed, not entered (os.walk's way)
                if not e.is_symlink():
                    folders.append(e.path)
                continue
        except OSError:
            pass  # a link that leads nowhere: a file to report
        yield e.path, path_problem(e.path)
    for f in folders:
        yield from walk(f)


def _chain(path: str, limit: int = 8) -> str:
    """``a -> b -> c``: where a symbolic link leads, as far as ``limit`` steps."""
    steps, p = [os.path.basename(path) or path], path
    seen = {os.path.abspath(p)}
    for _ in range(limit):
        try:
            target = os.readlink(p)
        except OSError:
            break
        steps.append(target)
        p = os.path.join(os.path.dirname(p), target)
        if os.path.abspath(p) in seen:
            break  # round once: the loop is shown
        seen.add(os.path.abspath(p))
    return " -> ".join(steps)


@dataclass
class Source:
    name: str | None = None  # a file name hint (extension used only as a hint)
    path: Path | None = None
    data_: bytes | None = field(default=None, repr=False)
    max_size: int | None = None
    # What the transport said, for fetched web resources (hints, like the name).
    url: str | None = None  # final URL after redirects
    charset: str | None = None  # from the Content-Type header
    content_type: str | None = None  # media type from the Content-Type header
    _ole: Any = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], max_size: int | None = None) -> Source:
        p = Path(path)
        return cls(name=p.name, path=p, max_size=max_size)

    @classmethod
    def from_bytes(cls, data: bytes, name: str | None = None,
                   max_size: int | None = None) -> Source:
        return cls(name=name, data_=data, max_size=max_size)

    def settle(self) -> None:
        """Read a pipe or device path (``<(curl ...)``, a FIFO, /dev/stdin) into memory now,
        once, bounded by ``max_size``: it can be read only once, and hashing, detection and
        the extractor must all see the same bytes (else the second reader sees nothing)."""
        if self.data_ is not None or self.path is None:
            return
        try:
            mode = self.path.stat().st_mode
        except OSError:
            return  # missing or unreadable: reported by whoever opens it
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            return
        with open(self.path, "rb") as f:
            data = read_capped(f, self.max_size)
        self.data_, self.path = data, None  # from now on a bytes source: nobody reopens it

    @property
    def size(self) -> int:
        if self.data_ is not None:
            return len(self.data_)
        assert self.path is not None
        return self.path.stat().st_size

    def check_size(self) -> None:
        if self.max_size is not None and self.size > self.max_size:
            raise ExtractionError(
                ErrorKind.TOO_LARGE,
                f"input is {self.size} bytes, above the limit of {self.max_size}",
            )

    def read(self) -> bytes:
        """All bytes (cached). Callers that can stream should prefer ``open()``/``path``."""
        if self.data_ is None:
            self.check_size()
            assert self.path is not None
            self.data_ = self.path.read_bytes()
        return self.data_

    def head(self, n: int = 65536) -> bytes:
        if self.data_ is not None:
            return self.data_[:n]
        assert self.path is not None
        with open(self.path, "rb") as f:
            return f.read(n)

    def open(self) -> BinaryIO:
        if self.data_ is not None:
            return io.BytesIO(self.data_)
        assert self.path is not None
        return open(self.path, "rb")

    def ole(self) -> Any:
        """This input's OLE2 container (``olefile.OleFileIO``), parsed once: detection and
        then the extractor both need it, and olefile's parse is most of the cost of a
        small DOC, XLS, PPT or MSG. Raises what olefile raises on a damaged container.
        ``close()`` (at the end of ``extract_source``) releases it."""
        if self._ole is None:
            import olefile

            self._ole = olefile.OleFileIO(str(self.path) if self.data_ is None else self.data_)
        return self._ole

    def close(self) -> None:
        """Release what was opened for the extraction (the OLE container's file)."""
        if self._ole is not None:
            ole, self._ole = self._ole, None
            ole.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def extension(self) -> str:
        if not self.name or "." not in self.name:
            return ""
        return self.name.rsplit(".", 1)[1].lower()
