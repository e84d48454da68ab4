"""OLE2 compound files (MS-CFB): the container of DOC, XLS, PPT, MSG and their kin.

Reading goes through olefile, opened once per input (``Source.ole``); here is what the
formats share on top of it: the container opened so that its damage reads as the file's
(``opened``), the summary properties every Office file carries (``summary_metadata``, by
``property_set``, a bounded reader), the first bytes of a stream without reading all of it
(``stream_head``), and the real file inside an embedded object's wrapper
(``unwrap_package``, ``ole10native``).

Writing: a storage inside a compound file, written out as a compound file of its own.
Word keeps embedded documents (a workbook, a slide show, another Word file) as storages
under ``ObjectPool``: a tree of streams that is a complete document once it has a
compound file around it. olefile only reads, so ``pack_storage`` writes the minimal
container (MS-CFB version 3, 512-byte sectors): a header, the FAT (and DIFAT sectors past
109 FAT sectors), the directory, the mini FAT and mini stream for streams under 4,096
bytes, then the big streams. Any compound file reader (olefile, calamine, our own) then
takes the embedded document like a file on disk.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..model import Document, ErrorKind, ExtractionError
from ..textcodec import normalize_charset

if TYPE_CHECKING:
    from ..bytesource import Source

# -- reading ---------------------------------------------------------------------------


@contextlib.contextmanager
def opened(src: Source, what: str) -> Iterator[Any]:
    """The file's OLE2 container for the with-block (parsed once per source, by detection
    already); any parser error in the block is the file's damage (``corrupt``), not a bug."""
    try:
        ole = src.ole()
    except Exception as exc:  # olefile raises many error types on damaged files
        raise ExtractionError(ErrorKind.CORRUPT, f"damaged OLE2 container: {exc}") from exc
    try:
        yield ole
    except ExtractionError:
        raise
    except Exception as exc:
        raise ExtractionError(ErrorKind.CORRUPT, f"damaged {what} file: {exc}") from exc


def _iso(value: Any) -> str | None:
    if isinstance(value, datetime) and value.year > 1601:
        return value.replace(microsecond=0).isoformat()
    return None


def _meta_str(value: Any, codepage: Any = None) -> str | None:
    """A property string; 8-bit ones are in the property set's code page (cp1251, cp932)."""
    if isinstance(value, bytes):
        enc = normalize_charset(f"cp{codepage}" if isinstance(codepage, int) else None)
        value = value.decode(enc or "cp1252", "replace")
    if isinstance(value, str):
        value = value.replace("\x00", "").strip()
        return value or None
    return None


# SummaryInformation property ids (MS-OLEPS): code page, title, subject, author, keywords,
# created, last saved, pages; DocumentSummaryInformation: slides.
_PID_CODEPAGE, _PID_TITLE, _PID_SUBJECT, _PID_AUTHOR, _PID_KEYWORDS = 1, 2, 3, 4, 5
_PID_CREATED, _PID_SAVED, _PID_PAGES, _PID_SLIDES = 12, 13, 14, 7
_VT_I2, _VT_I4, _VT_LPSTR, _VT_LPWSTR, _VT_FILETIME = 2, 3, 0x1E, 0x1F, 0x40


def summary_metadata(ole: Any, doc: Document, *, pages_attr: str = "num_pages") -> None:
    """Title, author, dates and page/slide count from SummaryInformation (cheap, reliable).

    Read by ``property_set``, not olefile's ``get_metadata``: that one trusts the element
    counts of vector properties, and a damaged count sent it round a Python loop four
    billion times.
    """
    summary = property_set(_stream(ole, "\x05SummaryInformation"))
    extra = property_set(_stream(ole, "\x05DocumentSummaryInformation"))
    cp = summary.get(_PID_CODEPAGE)
    doc.title = doc.title or _meta_str(summary.get(_PID_TITLE), cp)
    m = doc.metadata
    m.author = m.author or _meta_str(summary.get(_PID_AUTHOR), cp)
    m.subject = m.subject or _meta_str(summary.get(_PID_SUBJECT), cp)
    m.keywords = m.keywords or _meta_str(summary.get(_PID_KEYWORDS), cp)
    m.created = m.created or _iso(summary.get(_PID_CREATED))
    m.modified = m.modified or _iso(summary.get(_PID_SAVED))
    count = extra.get(_PID_SLIDES) if pages_attr == "slides" else summary.get(_PID_PAGES)
    if isinstance(count, int) and 0 < count < 1_000_000:
        m.page_count = count


def stream_head(ole: Any, name: str, size: int) -> bytes:
    """The first ``size`` bytes of a stream (a FIB, a workbook's first records): olefile's
    ``openstream`` reads all of a stream, sector by sector, to give any of it."""
    entry = ole.direntries[ole._find(name)]
    size = max(size, ole.minisectorcutoff)  # below the cutoff a stream is a mini stream
    if entry.size <= size:
        return ole.openstream(name).read()
    return ole._open(entry.isectStart, size).read()  # a FAT stream: only its first sectors


def _stream(ole: Any, name: str) -> bytes:
    try:
        return ole.openstream(name).read(1 << 20) if ole.exists(name) else b""
    except Exception:  # a broken property set must not lose the text
        return b""


def property_set(data: bytes) -> dict[int, Any]:
    """The scalar properties of the first property set in an OLE property set stream
    (MS-OLEPS 2.21): every offset and length is checked against the data, so damage
    costs at most one pass over a bounded number of entries."""
    if len(data) < 48:
        return {}
    start = struct.unpack_from("<I", data, 44)[0]
    if start + 8 > len(data):
        return {}
    count = min(struct.unpack_from("<I", data, start + 4)[0], 4096,
                (len(data) - start - 8) // 8)
    out: dict[int, Any] = {}
    for i in range(count):
        pid, rel = struct.unpack_from("<II", data, start + 8 + 8 * i)
        pos = start + rel
        if pos + 8 > len(data):
            continue
        vtype = struct.unpack_from("<H", data, pos)[0]
        body = pos + 4
        if vtype == _VT_I2:
            value: Any = struct.unpack_from("<h", data, body)[0]
            if pid == _PID_CODEPAGE:
                value &= 0xFFFF  # 65001 (UTF-8) is stored as -535
        elif vtype == _VT_I4:
            value = struct.unpack_from("<i", data, body)[0]
        elif vtype == _VT_LPSTR:
            n = struct.unpack_from("<I", data, body)[0]
            value = data[body + 4:body + 4 + min(n, 1 << 16)].split(b"\x00", 1)[0]
        elif vtype == _VT_LPWSTR:
            n = struct.unpack_from("<I", data, body)[0]
            raw = data[body + 4:body + 4 + 2 * min(n, 1 << 15)]
            value = raw.decode("utf-16-le", "replace").split("\x00", 1)[0]
        elif vtype == _VT_FILETIME and body + 8 <= len(data):
            ticks = struct.unpack_from("<Q", data, body)[0]  # 100 ns since 1601-01-01
            try:
                value = datetime(1601, 1, 1) + timedelta(microseconds=ticks // 10)
            except OverflowError:
                continue
        else:
            continue
        out[pid] = value
    return out


def unwrap_package(data: bytes, name: str) -> tuple[bytes, str]:
    """An oleObject*.bin usually wraps the real file (Ole10Native 'Package', an OOXML
    'Package' stream or a PDF 'CONTENTS'): hand the inner file on, not the wrapper."""
    if not data.startswith(b"\xd0\xcf\x11\xe0"):
        return data, name
    try:
        import olefile

        with olefile.OleFileIO(data) as ole:
            if ole.exists("\x01Ole10Native"):
                return ole10native(ole.openstream("\x01Ole10Native").read(), name)
            for stream in ("Package", "CONTENTS"):
                if ole.exists(stream):
                    return ole.openstream(stream).read(), name
    except Exception:  # a damaged wrapper: pass the bytes on as they are
        pass
    return data, name


def ole10native(raw: bytes, name: str) -> tuple[bytes, str]:
    """The file inside an Ole10Native stream (an OLE "Package": a label, the original
    path, then the file's bytes), with its label as its name; the stream less its size
    field when it is not laid out that way."""
    try:
        pos = 6
        label_end = raw.index(b"\0", pos)
        label = raw[pos:label_end].decode("latin-1")
        pos = raw.index(b"\0", label_end + 1) + 1 + 4  # original path, then 4 flag bytes
        tlen = int.from_bytes(raw[pos:pos + 4], "little")
        pos += 4 + tlen
        size = int.from_bytes(raw[pos:pos + 4], "little")
        payload = raw[pos + 4:pos + 4 + size]
        if len(payload) == size and size:
            return payload, label or name
    except ValueError:
        pass
    return raw[4:], name


# -- writing ---------------------------------------------------------------------------
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
