"""A storage inside an OLE2 compound file, written out as a compound file of its own.

Word keeps embedded documents (a workbook, a slide show, another Word file) as storages
under ``ObjectPool``: a tree of streams that is a complete document once it has a
compound file around it. olefile only reads, so this writes the minimal container
(MS-CFB version 3, 512-byte sectors): a header, the FAT, the directory, the mini FAT and
mini stream for streams under 4,096 bytes, then the big streams. Any compound file reader
(olefile, calamine, our own) then takes the embedded document like a file on disk.
"""

from __future__ import annotations

import itertools
import struct
from typing import Any

_SECTOR = 512
_MINI = 64
_CUTOFF = 4096
_FREE, _END, _FATSECT = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD
_NOSTREAM = 0xFFFFFFFF
_MAX_FAT_SECTORS = 109  # all listed in the header: files up to ~7 MB, no DIFAT sectors
_STORAGE, _STREAM, _ROOT = 1, 2, 5


class _Entry:
    def __init__(self, name: str, kind: int, data: bytes = b"") -> None:
        self.name, self.kind, self.data = name, kind, data
        self.children: list[_Entry] = []
        self.id = 0
        self.start = _END
        self.right = _NOSTREAM
        self.child = _NOSTREAM


def pack_storage(ole: Any, path: list[str], max_size: int) -> bytes | None:
    """The storage at ``path`` of an open olefile as a standalone compound file; None
    when its streams add up to more than ``max_size`` bytes or than this writer holds."""
    root = _Entry("Root Entry", _ROOT)
    total = 0
    by_path: dict[tuple[str, ...], _Entry] = {(): root}
    depth = len(path)
    for entry in sorted(ole.listdir(streams=True, storages=True)):
        if entry[:depth] != path or len(entry) == depth:
            continue
        rel = tuple(entry[depth:])
        parent = by_path.get(rel[:-1])
        if parent is None:
            continue
        if ole.get_type("/".join(entry)) == 1:  # olefile.STGTY_STORAGE
            node = _Entry(rel[-1], _STORAGE)
            by_path[rel] = node
        else:
            data = ole.openstream("/".join(entry)).read()
            total += len(data)
            if total > max_size:
                return None
            node = _Entry(rel[-1], _STREAM, data)
        parent.children.append(node)
    return _write(root)


def _write(root: _Entry) -> bytes | None:
    entries = _number(root)
    small = [e for e in entries if e.kind == _STREAM and len(e.data) < _CUTOFF]
    big = [e for e in entries if e.kind == _STREAM and len(e.data) >= _CUTOFF]
    # The mini stream: small streams in 64-byte mini sectors, chained in the mini FAT.
    mini_fat: list[int] = []
    mini = bytearray()
    for e in small:
        n = -(-len(e.data) // _MINI)
        if n == 0:
            continue
        e.start = len(mini_fat)
        mini_fat += [len(mini_fat) + i + 1 for i in range(n - 1)] + [_END]
        mini += e.data.ljust(n * _MINI, b"\0")
    root.data = bytes(mini)
    # Sector counts: the directory (4 entries a sector), the mini FAT, the mini stream, the
    # big streams, then as many FAT sectors as all of them (and the FAT itself) need.
    n_dir = -(-len(entries) // 4)
    n_minifat = -(-len(mini_fat) * 4 // _SECTOR)
    n_ministream = -(-len(mini) // _SECTOR)
    n_big = [-(-len(e.data) // _SECTOR) for e in big]
    content = n_dir + n_minifat + n_ministream + sum(n_big)
    n_fat = 1
    while n_fat * (_SECTOR // 4) < content + n_fat:
        n_fat += 1
    if n_fat > _MAX_FAT_SECTORS:
        return None
    fat: list[int] = [_FATSECT] * n_fat
    body = bytearray()

    def chain(data: bytes, sectors: int) -> int:
        if sectors == 0:
            return _END
        start = len(fat)
        fat.extend(start + i + 1 for i in range(sectors - 1))
        fat.append(_END)
        body.extend(data.ljust(sectors * _SECTOR, b"\0"))
        return start

    root.start = chain(root.data, n_ministream)
    for e, n in zip(big, n_big, strict=True):
        e.start = chain(e.data, n)
    minifat_bytes = struct.pack(f"<{len(mini_fat)}I", *mini_fat)
    minifat_start = chain(minifat_bytes, n_minifat)
    dir_start = len(fat)
    directory = b"".join(_dir_entry(e) for e in entries)
    directory += b"".join(_unused_entry() for _ in range(n_dir * 4 - len(entries)))
    chain(directory, n_dir)
    fat += [_FREE] * (n_fat * (_SECTOR // 4) - len(fat))
    header = struct.pack(
        "<8s16sHHHHH6sIIIIIIIII", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", bytes(16), 0x3E, 3,
        0xFFFE, 9, 6, bytes(6), 0, n_fat, dir_start, 0, _CUTOFF,
        minifat_start if n_minifat else _END, n_minifat, _END, 0)
    header += struct.pack("<109I", *range(n_fat), *([_FREE] * (109 - n_fat)))
    return header + struct.pack(f"<{len(fat)}I", *fat) + bytes(body)


def _number(root: _Entry) -> list[_Entry]:
    """Entries in directory order, each storage's children linked as a right-leaning
    chain sorted the compound file way (shorter names first, then case-insensitively):
    a valid search tree for readers that look names up."""
    order: list[_Entry] = []
    todo = [root]
    while todo:
        node = todo.pop(0)
        node.id = len(order)
        order.append(node)
        node.children.sort(key=lambda c: (len(c.name), c.name.upper()))
        todo.extend(node.children)
    for node in order:
        kids = node.children
        if kids:
            node.child = kids[0].id
            for a, b in itertools.pairwise(kids):
                a.right = b.id
    return order


def _dir_entry(e: _Entry) -> bytes:
    name = e.name.encode("utf-16-le")[:62]
    size = len(e.data) if e.kind in (_STREAM, _ROOT) else 0
    start = e.start if size else (_END if e.kind != _STORAGE else 0)
    return struct.pack("<64sHBBIII16sIQQIQ", name, len(name) + 2, e.kind, 1, _NOSTREAM,
                       e.right, e.child, bytes(16), 0, 0, 0, start, size)


def _unused_entry() -> bytes:
    return struct.pack("<64sHBBIII16sIQQIQ", b"", 0, 0, 0, _NOSTREAM, _NOSTREAM, _NOSTREAM,
                       bytes(16), 0, 0, 0, 0, 0)
