"""The compound file writer (embedded Word objects are written out with it): what it writes,
olefile reads back, stream for stream, at the sizes where the format changes shape."""

from __future__ import annotations

import os
import struct

import olefile

from textsieve.kernels.ole import pack


def _read_back(data: bytes) -> dict[str, bytes]:
    with olefile.OleFileIO(data) as ole:
        return {"/".join(e): ole.openstream(e).read() for e in ole.listdir()}


def test_thousands_of_siblings_and_nested_storages() -> None:
    # One storage's children form a search tree; as a chain, olefile's recursive walk
    # overflowed its stack past ~1,000 siblings.
    tree: dict[tuple[str, ...], bytes | None] = {
        (f"s{i:04d}",): f"stream {i}".encode() for i in range(1100)}
    tree[("deep", "deeper", "leaf")] = b"x" * 5000
    tree[("empty storage",)] = None
    tree[("empty stream",)] = b""
    got = _read_back(pack(tree))
    want = {"/".join(k): v for k, v in tree.items() if v is not None}
    assert got == want
    with olefile.OleFileIO(pack(tree)) as ole:
        assert ole.exists("s0777") and ole.exists("deep/deeper/leaf")
        assert ole.get_type("empty storage") == olefile.STGTY_STORAGE


def test_a_stream_past_the_header_fat_list_needs_difat_sectors() -> None:
    # 109 FAT sectors (in the header) cover ~7 MB; beyond, DIFAT sectors list the rest.
    big = os.urandom(9 << 20)
    tree: dict[tuple[str, ...], bytes | None] = {("Big",): big, ("small",): b"tiny"}
    data = pack(tree)
    n_fat, _, _, _, _, _, first_difat, n_difat = struct.unpack_from("<8I", data, 0x2C)
    assert n_fat > 109 and n_difat >= 1 and first_difat != 0xFFFFFFFE
    assert _read_back(data) == {"Big": big, "small": b"tiny"}


def test_unused_mini_fat_slots_are_free() -> None:
    data = pack({("a",): b"1" * 100, ("b",): b"2" * 70})  # 2 + 2 mini sectors
    first_minifat, n_minifat = struct.unpack_from("<2I", data, 0x3C)
    assert n_minifat == 1
    entries = struct.unpack_from("<128I", data, 512 * (first_minifat + 1))
    assert entries[:4] == (1, 0xFFFFFFFE, 3, 0xFFFFFFFE)
    assert set(entries[4:]) == {0xFFFFFFFF}
    assert _read_back(data) == {"a": b"1" * 100, "b": b"2" * 70}
