"""ZIP, TAR and single-file GZ/BZ2/XZ: every member becomes a child Document.

Archives are where bombs live, so nothing here trusts a declared size. Each member is read
with a streaming, capped read that stops as soon as it passes the unpacked-size budget
left for the whole tree (``Options.unpack_budget``) or its compression ratio passes
``Options.max_ratio``. Members already extracted are kept when a limit ends the archive;
the archive itself then carries ``too_large`` with a message saying what was skipped.
Identical members inside one archive are extracted once (a 42.zip stops being
exponential), and the member count is limited per archive and for the whole tree.
Nothing is ever written to disk, so absolute or ``../`` names are just names.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import shutil
import stat
import struct
import subprocess
import tarfile
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from functools import partial
from typing import IO, cast

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader, Signature
from ..model import Document, ErrorInfo, ErrorKind, ExtractionError, Status
from ..render import Builder
from ..textcodec import decode
from . import Context
from .zipnames import legacy_code_page, member_name

# Output version (archives re-extract what an older one made): 2 = member names in a
# legacy code page (GBK, Shift-JIS, CP866) decoded as such, not as CP437; 3 = Korean
# (CP949) names no longer read as GBK.
FORMAT = Format(
    name="containers", version=3, former_names=("archive",),
    readers=(Reader(d.ZIP, "extract_zip"), Reader(d.TAR, "extract_tar"),
             Reader(d.GZIP, "extract_compressed"), Reader(d.BZIP2, "extract_compressed"),
             Reader(d.XZ, "extract_compressed")),
    signatures=(Signature(d.ZIP, b"PK\x03\x04"), Signature(d.ZIP, b"PK\x05\x06"),
                Signature(d.ZIP, b"PK\x07\x08"), Signature(d.GZIP, b"\x1f\x8b"),
                *(Signature(d.BZIP2, b"BZh%d" % n) for n in range(10)),
                Signature(d.XZ, b"\xfd7zXZ\x00"),
                # "ustar" in a tar header, past a name field any other file may fill:
                # tried after every signature at the start of a file.
                Signature(d.TAR, b"ustar", offset=257, min_size=263, priority=1)),
    hints={"zip": d.ZIP},
)

_CHUNK = 1 << 20
_SEVERITY = [ErrorKind.CORRUPT, ErrorKind.ENCRYPTED, ErrorKind.TOO_LARGE, ErrorKind.NEEDS_OCR,
             ErrorKind.UNSUPPORTED, ErrorKind.MISSING_TOOL, ErrorKind.TIMEOUT,
             ErrorKind.CRASHED, ErrorKind.NOT_FOUND, ErrorKind.INTERNAL]
RATIO_FLOOR = 1 << 20  # below 1 MiB unpacked, a high ratio (a file of spaces) is harmless

# ZIP compression methods by number (APPNOTE 4.4.5); zipfile reads 0, 8, 12 and 14.
_ZIP_METHODS = {
    1: "shrink", 2: "reduce", 3: "reduce", 4: "reduce", 5: "reduce", 6: "implode",
    7: "tokenize", 9: "deflate64", 10: "PKWARE implode (TERSE)", 18: "IBM TERSE",
    19: "IBM LZ77", 20: "zstd (old id)", 93: "zstd", 94: "MP3", 95: "xz", 96: "JPEG",
    97: "WavPack", 98: "PPMd", 99: "WinZip AES encryption",
}
_ZIP_READABLE = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                 zipfile.ZIP_LZMA}
# Legacy methods Info-ZIP's unzip still reads (shrink, reduce, implode, deflate64).
_UNZIP_METHODS = {1, 2, 3, 4, 5, 6, 9}
_MAC_JUNK = "__MACOSX/"  # AppleDouble resource forks Finder adds: never user content

# Library errors that mean "the bytes are damaged", for members and whole streams.
_DATA_ERRORS = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError,
                tarfile.TarError, ValueError)


class _Overflow(Exception):
    """A member passed a limit while being read; ``budget`` tells which one."""

    def __init__(self, budget: bool, read: int) -> None:
        super().__init__()
        self.budget = budget
        self.read = read


class _Damaged(Exception):
    """The stream broke mid-member; ``data`` is what decompressed before the damage."""

    def __init__(self, data: bytes, cause: Exception) -> None:
        super().__init__(str(cause))
        self.data = data


@dataclass
class _Run:
    """Bookkeeping of one archive: what was extracted, skipped, or failed."""

    ctx: Context
    doc: Document
    what: str
    seen: dict[str, Document] = field(default_factory=dict)  # sha256 -> first child
    members: int = 0
    stopped: str | None = None  # why the rest of the archive was not read

    @property
    def room(self) -> int:
        return max(self.ctx.options.unpack_budget - self.ctx.budget.unpacked, 0)

    def fail(self, name: str, kind: ErrorKind, message: str) -> None:
        self.members += 1
        self.doc.children.append(Document.failed(kind, message, name=name))

    def count(self) -> bool:
        """Count one more member; False (and the archive stops) past a member limit."""
        opts = self.ctx.options
        if self.members >= opts.max_members:
            self.stopped = f"more than {opts.max_members} members"
        elif self.ctx.budget.members >= opts.max_members:
            self.stopped = f"more than {opts.max_members} members in the whole tree"
        return self.stopped is None

    def too_big(self, name: str, exc: _Overflow | None, size: int) -> None:
        """A member over a limit: its own error, and the archive stops on the budget."""
        opts = self.ctx.options
        if exc is None or not exc.budget:
            self.fail(name, ErrorKind.TOO_LARGE,
                      f"compression ratio above {opts.max_ratio:g} (a decompression bomb?)")
            return
        self.fail(name, ErrorKind.TOO_LARGE,
                  f"unpacks to more than the {self.room} bytes left of the "
                  f"{opts.unpack_budget}-byte budget (declared {size} bytes)")
        self.stopped = f"the unpacked-size budget of {opts.unpack_budget} bytes is spent"

    def add(self, name: str, data: bytes) -> None:
        """Charge the budget and extract one member (once per distinct content)."""
        self.members += 1
        try:
            self.ctx.account(len(data), self.what)
        except ExtractionError as exc:
            self.doc.children.append(Document.failed(exc.kind, exc.message, name=name))
            self.stopped = exc.message
            return
        digest = hashlib.sha256(data).hexdigest()
        first = self.seen.get(digest)
        if first is not None:
            # Same bytes as an earlier member: reuse its text, not its subtree (42.zip).
            dup = replace(first, name=name, children=[], pages=list(first.pages),
                          warnings=[f"identical to {first.name}; nested members listed "
                                    "there"] if first.children else [])
            self.doc.children.append(dup)
            return
        child = self.ctx.child(data, name)
        self.seen[digest] = child
        self.doc.children.append(child)

    def finish(self, total: int | None = None) -> None:
        """Set the archive's own status from its members (children are always kept)."""
        doc = self.doc
        failed = [c for c in doc.children if c.status is Status.ERROR and c.error]
        if self.stopped:
            left = f"{total - self.members} of {total}" if total is not None else "the rest of"
            self.error(ErrorKind.TOO_LARGE,
                        f"{self.stopped}: {left} members not extracted"
                        f" ({self.members - len(failed)} extracted)")
            return
        if not failed:
            return
        kinds = sorted({str(c.error.kind) for c in failed if c.error})
        msg = f"{len(failed)} of {len(doc.children)} members could not be read ({', '.join(kinds)})"
        if any(c.status is Status.OK for c in doc.children):
            doc.warnings.append(msg)
        else:
            # The most telling kind: damage and passwords concern the archive itself; a
            # member's parser bug must not make the archive look like one.
            kind = min((c.error.kind for c in failed if c.error), key=_SEVERITY.index)
            self.error(kind, msg)

    def error(self, kind: ErrorKind, message: str) -> None:
        self.doc.status, self.doc.error = Status.ERROR, ErrorInfo(kind, message)


def _read_capped(f: IO[bytes], room: int, max_ratio: float,
                 packed: Callable[[], int]) -> bytes:
    """Read a stream to its end, never past ``room`` bytes nor past the ratio limit.

    ``packed()`` is how many compressed bytes were consumed so far; the ratio is only
    judged above ``RATIO_FLOOR`` so small, very compressible files pass.
    """
    chunks: list[bytes] = []
    total = 0
    read1 = getattr(f, "read1", f.read)
    try:
        while chunk := read1(_CHUNK):
            total += len(chunk)
            if total > room:
                raise _Overflow(True, total)
            if total > RATIO_FLOOR and total > max_ratio * max(packed(), 1):
                raise _Overflow(False, total)
            chunks.append(chunk)
    except _DATA_ERRORS as exc:
        raise _Damaged(b"".join(chunks), exc) from exc
    return b"".join(chunks)


# -- ZIP ----------------------------------------------------------------------------------
_Opener = Callable[[zipfile.ZipInfo, "bytes | None"], IO[bytes]]


def extract_zip(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    with ExitStack() as stack:
        f = stack.enter_context(src.open())
        try:
            zf = stack.enter_context(zipfile.ZipFile(f))
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
            # No usable central directory (cut short, or damaged into nonsense such as
            # "zip file version 16.2"): the members may still be read from local headers.
            if not _recover(src, ctx, doc):
                raise ExtractionError(ErrorKind.CORRUPT,
                                      f"not a readable ZIP archive: {exc}") from exc
            return
        if zf.comment:
            doc.metadata.extra["comment"] = decode(zf.comment)[0].strip()
        _zip_members(zf.infolist(), lambda i, pwd: zf.open(i, pwd=pwd), ctx, doc,
                     legacy=_UnzipTool(src, ctx, stack))


class _UnzipTool:
    """Reads members in legacy methods (deflate64, implode, ...) with Info-ZIP's unzip.

    zipfile cannot decompress them; unzip can, and streaming its stdout through the same
    capped reader keeps every bomb limit. The archive must be a file: bytes are spilled to
    a temporary file once, on first use.
    """

    def __init__(self, src: Source, ctx: Context, stack: ExitStack) -> None:
        self.src, self.ctx, self.stack = src, ctx, stack
        self.exe = shutil.which("unzip")
        self._path: str | None = str(src.path) if src.path is not None else None

    def can_read(self, info: zipfile.ZipInfo) -> bool:
        return self.exe is not None and info.compress_type in _UNZIP_METHODS

    def open(self, info: zipfile.ZipInfo, pwd: bytes | None) -> IO[bytes]:
        assert self.exe is not None
        if self._path is None:
            tmp = self.stack.enter_context(tempfile.NamedTemporaryFile(suffix=".zip"))  # noqa: SIM115
            tmp.write(self.src.read())
            tmp.flush()
            self._path = tmp.name
        # unzip matches member names as wildcards: bracket the special characters.
        pattern = "".join(f"[{c}]" if c in "*?[" else c for c in info.filename)
        proc = subprocess.Popen([self.exe, "-p", "-qq", self._path, pattern],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        # A raw stream read like any member's (read, close): what _read_capped needs.
        return cast("IO[bytes]", _ToolStream(proc, self.ctx.options.tool_timeout))


class _ToolStream(io.RawIOBase):
    """A child process's stdout as a stream with a deadline (a timer kills the process).

    Closing reaps the process; a failing exit status becomes a data error, so the member
    is reported ``corrupt`` like any other damaged stream.
    """

    def __init__(self, proc: subprocess.Popen[bytes], timeout: float) -> None:
        self.proc = proc
        self.timer = threading.Timer(timeout, proc.kill)
        self.timer.daemon = True
        self.timer.start()

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        data = self.read1(len(b))
        b[:len(data)] = data
        return len(data)

    def read1(self, n: int = -1) -> bytes:
        assert self.proc.stdout is not None  # a pipe: Popen's buffered reader
        return cast(io.BufferedReader, self.proc.stdout).read1(n if n > 0 else _CHUNK)

    def close(self) -> None:
        if self.closed:
            return
        super().close()
        finished = self.proc.poll() is not None
        if not finished:
            self.proc.kill()  # stopped early (a limit was hit) or the timer is due
        code = self.proc.wait()
        self.timer.cancel()
        if self.proc.stdout:
            self.proc.stdout.close()
        if code < 0 and not finished:
            return  # we ended it ourselves; the reader already knows why
        if code not in (0, 1):  # 1: warnings only
            raise zlib.error(f"unzip could not decompress the member (exit status {code})")


def _zip_members(infos: list[zipfile.ZipInfo], opener: _Opener, ctx: Context,
                 doc: Document, legacy: _UnzipTool | None = None) -> None:
    if len(infos) > ctx.options.max_members:
        raise ExtractionError(ErrorKind.TOO_LARGE,
                              f"ZIP has {len(infos)} members, more than the limit "
                              f"of {ctx.options.max_members}")
    run = _Run(ctx, doc, "ZIP")
    total = 0
    code_page = legacy_code_page(infos)
    for info in infos:
        if _zip_skip(info):
            continue
        total += 1
        if run.stopped is None and run.count():
            use_tool = legacy is not None and legacy.can_read(info)
            _zip_member(legacy.open if use_tool else opener, info, run,  # type: ignore[union-attr]
                        external=use_tool, code_page=code_page)
    doc.metadata.extra["members"] = total
    run.finish(total)


_LOCAL = struct.Struct("<4sHHHHHIIIHH")  # a ZIP local file header (APPNOTE 4.3.7)


def _recover(src: Source, ctx: Context, doc: Document) -> bool:
    """Members of a ZIP without a (readable) central directory, from its local headers.

    A download cut short loses the directory at the end but keeps every complete member
    before the cut; the last, truncated one becomes a ``corrupt`` child.
    """
    head = src.head(4)
    if head != b"PK\x03\x04":
        return False
    data = src.read()
    infos: list[zipfile.ZipInfo] = []
    cut: set[int] = set()  # members whose data the cut went through
    pos = 0
    while (pos := data.find(b"PK\x03\x04", pos)) >= 0 and len(infos) <= ctx.options.max_members:
        if pos + _LOCAL.size > len(data):
            break
        _, _, flags, method, mtime, _, crc, csize, usize, nlen, elen = _LOCAL.unpack_from(
            data, pos)
        raw_name = data[pos + 30:pos + 30 + nlen]
        info = zipfile.ZipInfo(raw_name.decode("utf-8" if flags & 0x800 else "cp437",
                                               "replace"))
        if not info.filename:  # no name, or one that starts with NUL (ZipInfo cuts there)
            info.filename = info.orig_filename = f"member-{len(infos) + 1}"
        info.flag_bits, info.compress_type, info.extra = flags, method, data[
            pos + 30 + nlen:pos + 30 + nlen + elen]
        info.header_offset = pos + 30 + nlen + elen  # here: where the data starts
        info._raw_time = mtime  # type: ignore[attr-defined]  # ZipCrypto check byte
        left = len(data) - info.header_offset
        if flags & 0x8 or csize == 0xFFFFFFFF:  # sizes follow the data: read to stream end
            # No CRC to check (None is what zipfile takes for that).
            info.compress_size, info.file_size, info.CRC = left, 1 << 62, None  # type: ignore[assignment]
        else:
            info.compress_size, info.file_size, info.CRC = min(csize, left), usize, crc
            if csize > left:
                cut.add(len(infos))
        infos.append(info)
        pos = info.header_offset + (0 if flags & 0x8 else min(csize, left))
        pos = max(pos, infos[-1].header_offset)
    if not infos:
        return False
    buf = io.BytesIO(data)

    def opener(info: zipfile.ZipInfo, pwd: bytes | None) -> IO[bytes]:
        if cut and infos.index(info) in cut:
            raise zipfile.BadZipFile("member truncated (the archive is cut short)")
        buf.seek(info.header_offset)
        return cast("IO[bytes]", zipfile.ZipExtFile(buf, "r", info, pwd))

    doc.warnings.append(f"no readable central directory: {len(infos)} members recovered "
                        "from local headers")
    _zip_members(infos, opener, ctx, doc)
    return True


def _zip_skip(info: zipfile.ZipInfo) -> bool:
    """Directories, symlinks, devices and macOS resource forks carry no document."""
    if not info.filename or info.is_dir() or info.filename.startswith(_MAC_JUNK):
        return True
    mode = info.external_attr >> 16
    return info.create_system == 3 and stat.S_IFMT(mode) not in (0, stat.S_IFREG)


def _zip_member(opener: _Opener, info: zipfile.ZipInfo, run: _Run,
                external: bool = False, code_page: str = "cp437") -> None:
    name = member_name(info, code_page)
    opts = run.ctx.options
    method = info.compress_type
    encrypted = bool(info.flag_bits & 0x1)
    if method == 99:
        run.fail(name, ErrorKind.ENCRYPTED, "WinZip AES-encrypted member (not supported)")
        return
    if method not in _ZIP_READABLE and not external:
        label = _ZIP_METHODS.get(method, "unknown")
        run.fail(name, ErrorKind.UNSUPPORTED,
                 f"ZIP compression method {method} ({label}) is not supported")
        return
    if encrypted and not opts.password:
        run.fail(name, ErrorKind.ENCRYPTED, "encrypted member: a password is needed")
        return
    known = info.CRC is not None  # None: a recovered member whose sizes follow its data
    if known and info.file_size > run.room:
        run.too_big(name, _Overflow(True, info.file_size), info.file_size)
        return
    if known and info.file_size > RATIO_FLOOR and info.file_size > opts.max_ratio * max(
            info.compress_size, 1):
        run.too_big(name, None, info.file_size)
        return
    pwd = opts.password.encode("utf-8") if encrypted and opts.password else None
    try:
        with opener(info, pwd) as f:
            data = _read_capped(f, run.room, opts.max_ratio, lambda: info.compress_size)
    except _Overflow as exc:
        run.too_big(name, exc, info.file_size)
        return
    except RuntimeError as exc:  # zipfile: "Bad password for file"
        run.fail(name, ErrorKind.ENCRYPTED, f"wrong password ({exc})")
        return
    except NotImplementedError as exc:
        run.fail(name, ErrorKind.UNSUPPORTED, f"cannot decompress: {exc}")
        return
    except (_Damaged, *_DATA_ERRORS) as exc:
        if encrypted:  # a wrong password passes the 1-byte check 1 time in 256
            run.fail(name, ErrorKind.ENCRYPTED, f"wrong password (data did not decrypt: {exc})")
        else:
            run.fail(name, ErrorKind.CORRUPT, f"damaged member: {exc}")
        return
    run.add(name, data)


# -- TAR ----------------------------------------------------------------------------------
def extract_tar(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    with src.open() as raw:
        _tar(raw, ctx, doc, "TAR")


def _tar(raw: IO[bytes], ctx: Context, doc: Document, what: str,
         tar: IO[bytes] | None = None) -> None:
    """Stream a tar: mode 'r|*' never seeks, so it reads pipes too. ``tar``: the tar's
    bytes when ``raw`` is compressed (the ratio is judged on ``raw``, what the input
    holds). Decompressed here, not by tarfile's own stream: that one joins and slices
    its whole buffer on every 10 KB read, and one gzip block of zeros inflates to
    megabytes, so skipping a 64 MiB member of zeros cost seconds of copying."""
    run = _Run(ctx, doc, what)
    total = 0
    try:
        with tarfile.open(fileobj=tar or raw, mode="r|*") as tf:
            for member in _tar_iter(tf):
                if not member.isfile() or member.name.startswith(_MAC_JUNK):
                    continue
                total += 1
                if run.stopped is not None or not run.count():
                    break
                name = _tar_name(member.name)
                if member.size > run.room:
                    run.too_big(name, _Overflow(True, member.size), member.size)
                    break
                start = raw.tell()
                f = tf.extractfile(member)
                if f is None:
                    continue
                try:
                    data = _read_capped(f, run.room, ctx.options.max_ratio,
                                        partial(_read_since, raw, start))
                except _Overflow as exc:
                    run.too_big(name, exc, member.size)
                    continue
                run.add(name, data)
    except (_Damaged, *_DATA_ERRORS) as exc:
        if not doc.children:
            raise ExtractionError(ErrorKind.CORRUPT,
                                  f"not a readable {what} archive: {exc}") from exc
        doc.warnings.append(f"archive damaged after {len(doc.children)} members: {exc}")
        run.finish()
        if doc.status is not Status.ERROR:
            run.error(ErrorKind.CORRUPT, f"{what} archive damaged after "
                       f"{len(doc.children)} members: {exc}")
        return
    doc.metadata.extra["members"] = total
    run.finish(None if run.stopped else total)


def _read_since(raw: IO[bytes], start: int) -> int:
    """Bytes of ``raw`` read since ``start``: what a member has taken of the archive."""
    return raw.tell() - start


def _tar_iter(tf: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    """Members in stream order, without keeping them all in ``tf.members``."""
    while (member := tf.next()) is not None:
        tf.members.clear()  # type: ignore[attr-defined]  # kept by tarfile, not in its stubs
        yield member


def _tar_name(name: str) -> str:
    """tarfile keeps undecodable bytes as surrogates; show them as legacy (cp1252) text."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return decode(name.encode("utf-8", "surrogateescape"))[0]


# -- GZ / BZ2 / XZ ------------------------------------------------------------------------
_KINDS = {b"\x1f\x8b": "gzip", b"BZ": "bzip2", b"\xfd7": "xz"}
_SUFFIXES = {".gz": "", ".tgz": ".tar", ".taz": ".tar", ".bz2": "", ".tbz2": ".tar",
             ".tbz": ".tar", ".xz": "", ".txz": ".tar", ".z": ""}


def extract_compressed(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """One compressed file: a tar inside is read as the archive; else one child."""
    kind = _KINDS.get(src.head(2))
    if kind is None:
        raise ExtractionError(ErrorKind.CORRUPT, "not a gzip, bzip2 or xz stream")
    with src.open() as raw:
        try:
            with _decompressor(kind, raw) as f:
                block = f.read(512)
        except _DATA_ERRORS:
            block = b""  # damaged early: _single reports it and keeps what it can
        if _is_tar(block):
            raw.seek(0)
            with _decompressor(kind, raw) as f:
                _tar(raw, ctx, doc, f"{kind}-compressed TAR", f)
            return
        raw.seek(0)
        with _decompressor(kind, raw) as f:
            _single(raw, f, src, ctx, doc, kind)


def _decompressor(kind: str, raw: IO[bytes]) -> IO[bytes]:
    if kind == "gzip":
        return cast("IO[bytes]", gzip.GzipFile(fileobj=raw, mode="rb"))
    return cast("IO[bytes]", bz2.BZ2File(raw) if kind == "bzip2" else lzma.LZMAFile(raw))


def _single(raw: IO[bytes], f: IO[bytes], src: Source, ctx: Context, doc: Document,
            kind: str) -> None:
    name = (_gzip_name(src.head(4096)) if kind == "gzip" else None) or _strip_suffix(src.name)
    room = max(ctx.options.unpack_budget - ctx.budget.unpacked, 0)
    damage = None
    try:
        data = _read_capped(f, room, ctx.options.max_ratio, raw.tell)
    except _Overflow as exc:
        why = (f"unpacks to more than the {room} bytes left of the unpacked-size budget"
               if exc.budget else
               f"compression ratio above {ctx.options.max_ratio:g} (a decompression bomb?)")
        raise ExtractionError(ErrorKind.TOO_LARGE, f"{kind} stream {why}") from None
    except _Damaged as exc:
        # Keep what decompressed before the damage (a truncated log is still worth reading).
        damage, data = f"damaged {kind} stream: {exc}", exc.data
        if not data:
            raise ExtractionError(ErrorKind.CORRUPT, damage) from exc
    run = _Run(ctx, doc, kind)
    run.add(name, data)
    if damage:
        run.error(ErrorKind.CORRUPT, f"{damage} ({len(data)} bytes recovered)")
    elif run.stopped:
        run.error(ErrorKind.TOO_LARGE, run.stopped)


def _is_tar(block: bytes) -> bool:
    if len(block) < 512 or not block.strip(b"\x00"):
        return False
    if block[257:262] == b"ustar":
        return True
    try:
        tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
    except tarfile.HeaderError:
        return False
    return True


def _gzip_name(head: bytes) -> str | None:
    """The original file name stored in the gzip header (FNAME), if any."""
    if len(head) < 10 or not head[3] & 0x08:
        return None
    i = 10
    if head[3] & 0x04:  # FEXTRA
        i += 2 + int.from_bytes(head[10:12], "little")
    end = head.find(b"\x00", i)
    if end <= i:
        return None
    return head[i:end].decode("latin-1").replace("\\", "/").rsplit("/", 1)[-1] or None


def _strip_suffix(name: str | None) -> str:
    if not name:
        return "data"
    base = name.rsplit("/", 1)[-1]
    lower = base.lower()
    for suffix, repl in _SUFFIXES.items():
        if lower.endswith(suffix) and len(base) > len(suffix):
            return base[: -len(suffix)] + repl
    return base
