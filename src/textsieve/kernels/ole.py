"""A storage inside an OLE2 compound file, written out as a compound file of its own.

Word keeps embedded documents (a workbook, a slide show, another Word file) as storages
under ``ObjectPool``: a tree of streams that is a complete document once it has a
compound file around it. olefile only reads, so this writes the minimal container
(MS-CFB version 3, 512-byte sectors): a header, the FAT (and DIFAT sectors past 109 FAT
sectors), the directory, the mini FAT and mini stream for streams under 4,096 bytes, then
the big streams. Any compound file reader
(olefile, calamine, our own) then takes the embedded document like a file on disk.
"""

from __future__ import annotations

import struct
from typing import Any

_SECTOR = 512
_MINI = 64
_CUTOFF = 4096
_FREE, _END, _FATSECT, _DIFSECT = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFC
_NOSTREAM = 0xFFFFFFFF
_HEADER_FATS = 109  # FAT sector ids the header holds; more go in DIFAT sectors
_PER_SECTOR = _SECTOR // 4
_STORAGE, _STREAM, _ROOT = 1, 2, 5
_RED, _BLACK = 0, 1


class _Entry:
    def __init__(self, name: str, kind: int, data: bytes = b"") -> None:
        self.name, self.kind, self.data = name, kind, data
        self.children: list[_Entry] = []
        self.id = 0
        self.start = _END
        self.left = self.right = _NOSTREAM
        self.child = _NOSTREAM
        self.color = _BLACK


def pack_storage(ole: Any, path: list[str], max_size: int,
                 listing: list[list[str]] | None = None) -> bytes | None:
    """The storage at ``path`` of an open olefile as a standalone compound file; None
    when its streams add up to more than ``max_size`` bytes. ``listing``: the file's
    ``listdir(streams=True, storages=True)`` when the caller has it (olefile walks the
    whole directory for each listing)."""
    tree: dict[tuple[str, ...], bytes | None] = {}
    total = 0
    depth = len(path)
    if listing is None:
        listing = ole.listdir(streams=True, storages=True)
    for entry in listing:
        if entry[:depth] != path or len(entry) == depth:
            continue
        if ole.get_type("/".join(entry)) == 1:  # olefile.STGTY_STORAGE
            tree[tuple(entry[depth:])] = None
        else:
            data = ole.openstream("/".join(entry)).read()
            total += len(data)
            if total > max_size:
                return None
            tree[tuple(entry[depth:])] = data
    return pack(tree)


def pack(tree: dict[tuple[str, ...], bytes | None]) -> bytes:
    """A compound file holding ``tree``: path -> stream bytes, or None for a storage (a
    stream's storages are made as needed)."""
    root = _Entry("Root Entry", _ROOT)
    by_path: dict[tuple[str, ...], _Entry] = {(): root}
    for rel in sorted(tree, key=len):
        parent = root
        for i in range(1, len(rel)):  # storages on the way that were not listed
            node = by_path.get(rel[:i])
            if node is None:
                node = by_path[rel[:i]] = _Entry(rel[i - 1], _STORAGE)
                parent.children.append(node)
            parent = node
        data = tree[rel]
        if rel in by_path:
            continue
        node = by_path[rel] = _Entry(rel[-1], _STORAGE) if data is None else \
            _Entry(rel[-1], _STREAM, data)
        parent.children.append(node)
    return _write(root)


def _write(root: _Entry) -> bytes:
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
    mini_fat += [_FREE] * (-len(mini_fat) % _PER_SECTOR)  # unused slots are free
    # Sector counts: the directory (4 entries a sector), the mini FAT, the mini stream, the
    # big streams, then as many FAT sectors as all of them (and the FAT itself) need.
    n_dir = -(-len(entries) // 4)
    n_minifat = -(-len(mini_fat) * 4 // _SECTOR)
    n_ministream = -(-len(mini) // _SECTOR)
    n_big = [-(-len(e.data) // _SECTOR) for e in big]
    content = n_dir + n_minifat + n_ministream + sum(n_big)
    n_fat, n_difat = 1, 0
    while True:  # the FAT covers every sector, its own and the DIFAT's included
        n_difat = max(0, -(-(n_fat - _HEADER_FATS) // (_PER_SECTOR - 1)))
        if n_fat * _PER_SECTOR >= content + n_fat + n_difat:
            break
        n_fat += 1
    fat: list[int] = [_FATSECT] * n_fat + [_DIFSECT] * n_difat
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
    fat += [_FREE] * (n_fat * _PER_SECTOR - len(fat))
    header = struct.pack(
        "<8s16sHHHHH6sIIIIIIIII", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", bytes(16), 0x3E, 3,
        0xFFFE, 9, 6, bytes(6), 0, n_fat, dir_start, 0, _CUTOFF,
        minifat_start if n_minifat else _END, n_minifat, n_fat if n_difat else _END, n_difat)
    in_header = list(range(min(n_fat, _HEADER_FATS)))
    header += struct.pack("<109I", *in_header, *([_FREE] * (_HEADER_FATS - len(in_header))))
    # DIFAT sectors (after the FAT sectors): the other FAT sector ids, 127 a sector, each
    # sector ending with the id of the next one.
    rest = list(range(_HEADER_FATS, n_fat))
    difat = bytearray()
    for i in range(n_difat):
        ids = rest[i * (_PER_SECTOR - 1):(i + 1) * (_PER_SECTOR - 1)]
        ids += [_FREE] * (_PER_SECTOR - 1 - len(ids))
        ids.append(n_fat + i + 1 if i + 1 < n_difat else _END)
        difat += struct.pack(f"<{_PER_SECTOR}I", *ids)
    return header + struct.pack(f"<{len(fat)}I", *fat) + bytes(difat) + bytes(body)


def _number(root: _Entry) -> list[_Entry]:
    """Entries in directory order; each storage's children in a red-black tree sorted the
    compound file way (shorter names first, then case-insensitively), for readers that
    look names up."""
    order: list[_Entry] = []
    todo = [root]
    while todo:
        node = todo.pop(0)
        node.id = len(order)
        order.append(node)
        node.children.sort(key=lambda c: (len(c.name), c.name.upper()))
        todo.extend(node.children)
    for node in order:
        if node.children:
            depths: dict[int, int] = {}
            node.child = _balanced(node.children, 0, depths)
            deepest = max(depths.values())
            if len(set(depths.values())) > 1:  # not a perfect tree: the deepest level red,
                for kid in node.children:      # so every path holds as many black nodes
                    if depths[kid.id] == deepest:
                        kid.color = _RED
    return order


def _balanced(kids: list[_Entry], depth: int, depths: dict[int, int]) -> int:
    """A balanced search tree over sorted siblings (left and right links); its root id.
    A chain of thousands of siblings would be a valid tree too, but olefile walks the
    siblings recursively and a deep chain overflows its stack."""
    if not kids:
        return _NOSTREAM
    mid = len(kids) // 2
    node = kids[mid]
    depths[node.id] = depth
    node.left = _balanced(kids[:mid], depth + 1, depths)
    node.right = _balanced(kids[mid + 1:], depth + 1, depths)
    return node.id


def _dir_entry(e: _Entry) -> bytes:
    name = e.name.encode("utf-16-le")[:62]
    size = len(e.data) if e.kind in (_STREAM, _ROOT) else 0
    start = e.start if size else (_END if e.kind != _STORAGE else 0)
    return struct.pack("<64sHBBIII16sIQQIQ", name, len(name) + 2, e.kind, e.color, e.left,
                       e.right, e.child, bytes(16), 0, 0, 0, start, size)


def _unused_entry() -> bytes:
    return struct.pack("<64sHBBIII16sIQQIQ", b"", 0, 0, 0, _NOSTREAM, _NOSTREAM, _NOSTREAM,
                       bytes(16), 0, 0, 0, 0, 0)
