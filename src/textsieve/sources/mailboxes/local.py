"""Local mail stores: an mbox file, a Maildir, a folder of ``.eml`` files.

Order is reproducible (file order for mbox, sorted names otherwise) so two runs over the
same store yield the same sequence. There is no incremental state: the archive already
knows which items it holds, and re-reading local files is cheap.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ...kernels.mime import mbox_message, message_spans
from ...model import RawMail
from .base import MailSourceError, mail_ref


def _abs(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


class MboxSource:
    """An mbox file, streamed in windows: each window (``WINDOW`` bytes, grown for a single
    larger message) is split on From_ lines by the MIME kernel's splitter, which tells a
    real separator from a body line starting with "From " and honours Content-Length; the
    last, possibly cut, message of a window is read again at the start of the next. Memory
    stays flat however large the mbox is (a memory map would not: every page it touched
    counts in the process's resident set). ``>From `` escapes are undone, as mbox readers
    must."""

    WINDOW = 32 * 1024 * 1024

    def __init__(self, path: str) -> None:
        self.path = _abs(path)
        self.spec = f"mbox:{self.path}"

    def mails(self, state: dict[str, str] | None = None) -> Iterator[RawMail]:
        if not os.path.isfile(self.path):
            raise MailSourceError(f"{self.path}: no such mbox file")
        with open(self.path, "rb") as f:
            pos = 3 if f.read(3) == b"\xef\xbb\xbf" else 0  # a BOM before the first From_
            window = self.WINDOW
            while True:
                f.seek(pos)
                buf = f.read(window)
                at_end = len(buf) < window or not f.peek(1)
                spans = list(message_spans(buf))
                if not at_end:
                    if len(spans) < 2:  # one message larger than the window: widen it
                        window *= 2
                        continue
                    last_from = buf.rfind(b"\n", 0, spans[-1][0] - 1) + 1
                    spans.pop()  # may be cut short: read again in the next window
                for s, e in spans:
                    raw = mbox_message(buf, s, e)
                    # The offset of the message in the file: stable while mail is appended.
                    yield RawMail(raw, mail_ref(raw, self.spec, uid=str(pos + s)))
                if at_end:
                    return
                pos += last_from
                window = self.WINDOW

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
