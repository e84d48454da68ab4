"""Local mail stores: an mbox file, a Maildir, a folder of ``.eml`` files.

Order is reproducible (file order for mbox, sorted names otherwise) so two runs over the
same store yield the same sequence. There is no incremental state: the archive already
knows which items it holds, and re-reading local files is cheap.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from pathlib import Path

from ..extractors.mail import _ESCAPED_FROM, _message_spans
from ..model import RawMail
from . import MailSourceError, mail_ref


def _abs(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


class MboxSource:
    """An mbox file, streamed: the file is memory-mapped and split on From_ lines by the
    mbox extractor's splitter (which tells a real separator from a body line starting with
    "From " and honours Content-Length), so a multi-gigabyte mbox is never read into memory
    at once. ``>From `` escapes are undone, as mbox readers must."""

    def __init__(self, path: str) -> None:
        self.path = _abs(path)
        self.spec = f"mbox:{self.path}"

    def mails(self, state: dict[str, str] | None = None) -> Iterator[RawMail]:
        if not os.path.isfile(self.path):
            raise MailSourceError(f"{self.path}: no such mbox file")
        with open(self.path, "rb") as f:
            try:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file cannot be mapped: no mail
                return
            try:
                start = 3 if mm[:3] == b"\xef\xbb\xbf" else 0
                # A BOM before the first From_ (rare): the splitter needs offsets from 0.
                view = mm if start == 0 else mm[start:]
                for s, e in _message_spans(view):
                    raw = _ESCAPED_FROM.sub(rb"\1", bytes(view[s:e]).rstrip(b"\r\n") + b"\n")
                    # The offset of the message in the file: stable while mail is appended.
                    yield RawMail(raw, mail_ref(raw, self.spec, uid=str(s + start)))
            finally:
                mm.close()

    def new_state(self) -> dict[str, str]:
        return {}


def _read_files(spec: str, files: list[tuple[str, Path]]) -> Iterator[RawMail]:
    for uid, path in files:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:  # moved by a mail client while we were reading: gone
            continue
        yield RawMail(raw, mail_ref(raw, spec, uid=uid))


class MaildirSource:
    """A Maildir: messages in ``cur/`` and ``new/`` (``tmp/`` holds deliveries in progress).

    Sorted by the unique part of the file name (before ``:2,flags``), which starts with the
    delivery time, so a message keeps its place and its uid when a client reads it (moves it
    from new/ to cur/ and appends flags)."""

    def __init__(self, path: str) -> None:
        self.path = _abs(path)
        self.spec = f"maildir:{self.path}"

    def mails(self, state: dict[str, str] | None = None) -> Iterator[RawMail]:
        root = Path(self.path)
        if not (root / "cur").is_dir() and not (root / "new").is_dir():
            raise MailSourceError(f"{self.path}: not a Maildir (no cur/ or new/ folder)")
        files: list[tuple[str, Path]] = []
        for sub in ("cur", "new"):
            d = root / sub
            if d.is_dir():
                files.extend((p.name.split(":", 1)[0], p) for p in d.iterdir()
                             if p.is_file() and not p.name.startswith("."))
        files.sort(key=lambda f: f[0])
        yield from _read_files(self.spec, files)

    def new_state(self) -> dict[str, str]:
        return {}


class EmlFolderSource:
    """A folder (searched recursively) of ``.eml`` files, in sorted relative-path order.

    Only with the explicit ``eml:`` prefix: a plain folder belongs to the file source, which
    extracts .eml files as documents rather than harvesting their links."""

    def __init__(self, path: str) -> None:
        self.path = _abs(path)
        self.spec = f"eml:{self.path}"

    def mails(self, state: dict[str, str] | None = None) -> Iterator[RawMail]:
        root = Path(self.path)
        if not root.is_dir():
            raise MailSourceError(f"{self.path}: no such folder")
        files = sorted((str(p.relative_to(root)), p) for p in root.rglob("*")
                       if p.suffix.lower() == ".eml" and p.is_file())
        yield from _read_files(self.spec, [(str(p), p) for _, p in files])

    def new_state(self) -> dict[str, str]:
        return {}
