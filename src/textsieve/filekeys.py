"""The archive key of a file, and its path again from the key.

A file is keyed by its absolute path; a name that is not UTF-8 by a ``file://`` URI of it
(the path's undecodable bytes percent-encoded), which SQLite, JSON and a terminal all
take. Every part that turns a key back into a file (exports, retries, output names) and
every part that makes one (the file source) goes through these functions.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote_to_bytes

# A file key that is not a plain path: ``file://`` and the path, its undecodable bytes (and
# "%", so that decoding is exact) percent-encoded.
FILE_URI = "file://"
_ESCAPE = re.compile(r"[%\udc80-\udcff]")


def file_key(path: str) -> str:
    """The archive key of a file: its absolute path, or, when its name is not UTF-8, a
    ``file://`` URI of it.

    Python hands such a name over with its raw bytes as lone surrogates (``surrogateescape``),
    which SQLite, JSON and a terminal all refuse. Percent-encoding only those bytes (and
    "%") keeps the key lossless (``key_path`` gives the exact bytes back), unique (no plain
    key starts with ``file://``) and readable (``/docs/caf%E9.txt``); UTF-8 names keep the
    plain path, so existing archives keep their keys.
    """
    if not _has_surrogates(path):
        return path
    return FILE_URI + _ESCAPE.sub(lambda m: f"%{_byte(m.group())[0]:02X}", path)


def key_path(key: str) -> str | None:
    """The file path of a file key (a ``str`` that ``open`` takes, undecodable bytes as
    surrogates), or None for keys that are not files (URLs, children, pipes)."""
    if key.startswith(FILE_URI):
        return os.fsdecode(unquote_to_bytes(key[len(FILE_URI):]))
    return key if os.path.isabs(key) else None


def readable(name: str) -> str:
    """A name that prints and stores anywhere: undecodable bytes shown as ``\\xE9``."""
    if not _has_surrogates(name):
        return name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _has_surrogates(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _byte(ch: str) -> bytes:
    return ch.encode("utf-8", "surrogateescape")
