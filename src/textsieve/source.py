"""What an extractor reads: a file path or bytes, behind one small interface.

Paths stay paths as long as possible (pypdfium2 and zipfile read from disk without loading
the whole file); bytes are read at most once, with a size cap.
"""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from .model import ErrorKind, ExtractionError

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
