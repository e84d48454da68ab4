"""Files named after items, written safely under an output folder.

Item names come from hostile places (a web page's URL, a mail attachment, a file name that
is not UTF-8), and an output folder may hold what someone else planted there (a symlink at
the temporary name, a symlinked sub-folder). So every such file is written here, one way:

- each path part is made safe (no ``..``, separators, NUL or control characters; at most
  ``MAX_NAME_BYTES``, a long one cut and kept unique by a hash of the whole);
- folders are opened one part at a time relative to the one above (``O_NOFOLLOW``), so no
  symlink is followed and no path grows past the OS limit, however deep the tree;
- the content goes to a fresh temporary name (``O_CREAT | O_EXCL | O_NOFOLLOW``) in the
  target folder and is renamed over the final name only once complete: a planted file or
  symlink is never opened, and an interrupted write never leaves a truncated file that
  looks complete.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from .filekeys import key_path

# Below the usual 255-byte limit, leaving room for a "~ID" suffix.
MAX_NAME_BYTES = 240
# Characters no portable file name may hold (NUL and controls everywhere, the rest on
# Windows or in shells); each becomes "_".
_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"|?*\\/]')
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


class UnsafePath(OSError):
    """A folder on the way is a symlink: refused, whatever it points to."""


def safe_part(part: str, keep_suffix: str = "") -> str:
    """One path part that is a plain name: nothing that leaves or splits the folder."""
    part = _UNSAFE.sub("_", part)
    if part in ("", ".", ".."):
        part = part.replace(".", "_") or "_"
    return shorten(part, keep_suffix)


def safe_parts(parts: Sequence[str]) -> list[str]:
    """Every non-empty part made safe (``.`` and empty parts dropped, ``..`` renamed)."""
    return [safe_part(p) for p in parts if p not in ("", ".", "/", os.sep)]


def shorten(name: str, keep_suffix: str = "") -> str:
    """Cut a name to ``MAX_NAME_BYTES``, kept unique by a short hash of the whole name.

    Names are measured as the bytes the OS sees (undecodable bytes of a non-UTF-8 name, held
    as surrogates, count as one byte each), and never cut inside a UTF-8 character.
    """
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) <= MAX_NAME_BYTES:
        return name
    tag = "~" + hashlib.sha256(raw).hexdigest()[:10]
    suffix = keep_suffix if keep_suffix and name.endswith(keep_suffix) else ""
    stem = name[: len(name) - len(suffix)]
    budget = MAX_NAME_BYTES - len(tag) - len(suffix.encode("utf-8", "surrogateescape"))
    return _cut(stem, budget) + tag + suffix


def _cut(name: str, nbytes: int) -> str:
    """The longest start of ``name`` that is at most ``nbytes`` bytes, whole characters."""
    raw = name.encode("utf-8", "surrogateescape")
    while 0 < nbytes < len(raw) and (raw[nbytes] & 0xC0) == 0x80:
        nbytes -= 1  # not before a continuation byte: no half character
    return raw[:nbytes].decode("utf-8", "surrogateescape")


def common_root(keys: Iterable[str]) -> str | None:
    """The deepest folder holding every file key (URLs and other keys do not count)."""
    root: str | None = None
    for key in keys:
        path = key_path(key)
        if path is None:
            continue
        folder = os.path.dirname(path)
        root = folder if root is None else os.path.commonpath([root, folder])
    return root


def item_parts(key: str, root: str | None) -> list[str]:
    """Where a file named after an item goes, as safe path parts below an output folder.

    Files mirror their path below ``root`` (a name that is not UTF-8 keeps its bytes), so
    ``a/scan.pdf`` and ``b/scan.pdf`` stay apart; URLs go under ``HOST/PATH`` (``index``
    for a path ending in ``/``); anything else is treated as a relative path. Every part is
    made safe (``safe_parts``), so the result stays inside the folder whatever the key.
    """
    path = key_path(key)
    parts: Sequence[str]
    if path is None and _URL.match(key):
        u = urlsplit(key)
        host = u.hostname or "host"
        if u.port:
            host += f"_{u.port}"
        upath = u.path if not u.path.endswith("/") else u.path + "index"
        if u.query:
            upath += f"?{u.query}"
        parts = [host, *upath.split("/")]
    elif path is not None and root is not None and _inside(path, root):
        parts = Path(os.path.relpath(path, root)).parts
    else:
        path = path or key
        parts = Path(path).parts[1:] if os.path.isabs(path) else Path(path).parts
    return safe_parts(parts) or ["item"]


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives
        return False


def _open_dir(parent_fd: int, name: str, *, create: bool) -> int:
    """Open (making it if asked) the folder ``name`` inside ``parent_fd``, never a symlink."""
    if create:
        with suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=parent_fd)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(parent_fd, name):
            raise UnsafePath(errno.ELOOP, "a symlink, not followed; nothing is written "
                             "through it", name) from exc
        raise


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def write_under(root: str | os.PathLike[str], parts: Sequence[str],
                fill: Callable[[IO[bytes]], Any], *, replace: bool = True,
                check: Callable[[os.stat_result | None], None] | None = None) -> str:
    """Write ``root/parts...`` with ``fill(file)``, safely (see the module); returns the path.

    ``parts`` must already be safe (``safe_parts``); folders are created as needed. Raises
    ``OSError`` (``UnsafePath`` for a symlink or file in the way, ``IsADirectoryError``
    when the final name is a folder): the caller records it and goes on with the next item.
    ``replace=False``: an existing final name is never replaced (``FileExistsError``,
    decided atomically where the file system has hard links); ``check``: called with
    what is at the final name now (``lstat``, None when nothing), before anything is
    written, to refuse it by raising.
    """
    if not parts:
        raise ValueError("no file name")
    for p in parts:
        if p in ("", ".", "..") or "/" in p or "\x00" in p:
            raise ValueError(f"unsafe path part {p!r}")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for folder in parts[:-1]:
            sub = _open_dir(fd, folder, create=True)
            os.close(fd)
            fd = sub
        if check is not None or not replace:
            try:
                there: os.stat_result | None = os.stat(parts[-1], dir_fd=fd,
                                                       follow_symlinks=False)
            except FileNotFoundError:
                there = None
            if check is not None:
                check(there)
            if there is not None and not replace:
                raise FileExistsError(errno.EEXIST, "already there", parts[-1])
        _write_in(fd, parts[-1], fill, replace=replace)
    finally:
        os.close(fd)
    return os.path.join(os.fspath(root), *parts)


def lstat_under(root: str | os.PathLike[str], parts: Sequence[str]) -> os.stat_result | None:
    """What is at ``root/parts...`` (not following a link at any step), or None."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for folder in parts[:-1]:
            try:
                sub = _open_dir(fd, folder, create=False)
            except FileNotFoundError:
                return None
            os.close(fd)
            fd = sub
        try:
            return os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
    finally:
        os.close(fd)


def _write_in(dir_fd: int, name: str, fill: Callable[[IO[bytes]], Any], *,
              replace: bool = True) -> None:
    """Fill a fresh temporary file in ``dir_fd``, then rename it to ``name`` (or, when it
    must not replace anything, link it there: that fails if ``name`` appeared meanwhile)."""
    stem = _cut(name, 60)  # the temporary name must fit the limit too
    for _ in range(20):
        tmp = f".{stem}.{secrets.token_hex(6)}.partial"
        try:
            tfd = os.open(tmp, _NEW_FILE, 0o666, dir_fd=dir_fd)
            break
        except FileExistsError:  # taken (or planted): another random name
            continue
    else:
        raise FileExistsError(f"no free temporary name beside {name}")
    try:
        with os.fdopen(tfd, "wb") as f:
            fill(f)
        if replace:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            try:
                os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd,
                        follow_symlinks=False)
            except OSError as exc:  # no hard links here: checked just before, renamed
                if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV):
                    raise
                os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            else:
                os.unlink(tmp, dir_fd=dir_fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def write_file(path: str | os.PathLike[str], fill: Callable[[IO[bytes]], Any]) -> None:
    """Write one file the user named (``--to all.jsonl``) the same safe way: a fresh
    temporary beside it, renamed into place when complete."""
    folder, name = os.path.split(os.path.abspath(path))
    if not name:
        raise IsADirectoryError(21, "a folder, not a file", os.fspath(path))
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _write_in(fd, name, fill)
    finally:
        os.close(fd)
