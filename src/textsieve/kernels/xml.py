"""Safe XML parsing and guarded ZIP member reads for the zip-based office formats.

Every XML part of a DOCX/PPTX/ODF/EPUB is attacker-controlled: entities are never
resolved (billion laughs, external SYSTEM entities), no DTD or network is ever loaded and
libxml2's size limits stay on. ZIP members are read with a size cap and a compression-ratio
check charged to the shared unpack budget, so a zip bomb inside a document stops typed.
"""

from __future__ import annotations

import copy
import re
import zipfile
import zlib
from typing import TYPE_CHECKING, Protocol

from lxml import etree

from ..model import ErrorKind, ExtractionError

if TYPE_CHECKING:
    from ..bytesource import Source
    from ..options import Options


class Context(Protocol):
    """What a member read is charged to: an extractor's ``Context`` (the caps of its
    options, the unpack budget of the whole document tree), seen from below."""

    @property
    def options(self) -> Options: ...

    def account(self, nbytes: int, what: str = ...) -> None: ...

_OPTS = dict(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
             remove_comments=True, remove_pis=True, dtd_validation=False)
_STRICT = etree.XMLParser(**_OPTS)
_RECOVER = etree.XMLParser(recover=True, **_OPTS)
# lxml refuses `<?xml version="1.1"?>`; the 1.0 grammar reads such files fine in practice.
_XML11 = re.compile(rb"^(\xef\xbb\xbf)?(\s*<\?xml\s+version\s*=\s*[\"'])1\.1([\"'])")
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
               KeyError, RuntimeError, NotImplementedError, IndexError, zlib.error)


def parse_xml(data: bytes, *, recover: bool = False) -> etree._Element:
    """Parse XML bytes safely; malformed XML raises ExtractionError(CORRUPT).

    With ``recover`` libxml2 repairs what it can (truncated or sloppy parts still give
    text) and only an input with no element at all is an error.
    """
    if data[:64].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<?xml") and b"1.1" in data[:64]:
        data = _XML11.sub(rb"\1\g<2>1.0\3", data, count=1)
    try:
        root = etree.fromstring(data, _RECOVER if recover else _STRICT)
    except etree.XMLSyntaxError as exc:
        raise ExtractionError(ErrorKind.CORRUPT, f"malformed XML: {exc}") from exc
    except (ValueError, etree.LxmlError) as exc:
        raise ExtractionError(ErrorKind.CORRUPT, f"unreadable XML: {exc}") from exc
    if root is None:
        raise ExtractionError(ErrorKind.CORRUPT, "XML part holds no element")
    return root


def open_zip(src: Source) -> zipfile.ZipFile:
    """Open the package; a damaged or non-ZIP input is CORRUPT."""
    try:
        return zipfile.ZipFile(src.path if src.path is not None else src.open())
    except _ZIP_ERRORS as exc:
        raise ExtractionError(ErrorKind.CORRUPT, f"damaged ZIP package: {exc}") from exc


def read_member(zf: zipfile.ZipFile, name: str, ctx: Context, *,
                limit: int | None = None) -> bytes:
    """Read one member, charged to the unpack budget and checked for bomb ratios.

    Raises CORRUPT when the member cannot be read (missing, bad CRC, truncated).
    """
    try:
        info = zf.getinfo(name)
    except KeyError as exc:
        raise ExtractionError(ErrorKind.CORRUPT, f"package part {name} is missing") from exc
    opts = ctx.options
    cap = min(limit or opts.max_unpacked, opts.max_unpacked)
    if info.file_size > cap:
        raise ExtractionError(ErrorKind.TOO_LARGE,
                              f"part {name} unpacks to {info.file_size} bytes")
    if info.file_size > (1 << 20) and info.file_size > opts.max_ratio * max(
            info.compress_size, 1):
        raise ExtractionError(ErrorKind.TOO_LARGE,
                              f"part {name} has a zip-bomb compression ratio")
    try:
        with zf.open(info) as f:
            data = f.read(cap + 1)
    except _ZIP_ERRORS as exc:
        shifted = _reread_shifted(zf, info)
        if shifted is None:
            raise ExtractionError(ErrorKind.CORRUPT, f"cannot read part {name}: {exc}") from exc
        data = shifted
    if len(data) > cap:
        raise ExtractionError(ErrorKind.TOO_LARGE, f"part {name} is larger than declared")
    ctx.account(len(data), "document package")
    return data


def _reread_shifted(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes | None:
    """Some writers store local-header offsets that are off by a few bytes; find the
    real header nearby so the part is still read (CRC-checked by zipfile)."""
    fp = zf.fp
    if fp is None:
        return None
    try:
        fp.seek(max(info.header_offset - 64, 0))
        window = fp.read(128 + len(info.filename))
    except OSError:
        return None
    base = max(info.header_offset - 64, 0)
    for m in re.finditer(rb"PK\x03\x04", window):
        off = base + m.start()
        if off == info.header_offset:
            continue
        fixed = copy.copy(info)
        fixed.header_offset = off
        try:
            with zf.open(fixed) as f:
                return f.read(info.file_size + 1)
        except _ZIP_ERRORS:
            continue
    return None


def read_xml(zf: zipfile.ZipFile, name: str, ctx: Context, *,
             recover: bool = True) -> etree._Element | None:
    """An optional XML part: None when absent; CORRUPT only when present but unusable."""
    if name not in zf.NameToInfo:
        return None
    return parse_xml(read_member(zf, name, ctx), recover=recover)


def read_xml_lenient(zf: zipfile.ZipFile, name: str, ctx: Context) -> etree._Element | None:
    """A secondary part (properties, styles, notes): damage there must not cost the
    document's text, so a corrupt part reads as absent; other errors still propagate."""
    try:
        return read_xml(zf, name, ctx)
    except ExtractionError as exc:
        if exc.kind is not ErrorKind.CORRUPT:
            raise
        return None


def local(tag: object) -> str:
    """Local name of an element tag ('' for comments, entities, PIs)."""
    if not isinstance(tag, str):
        return ""
    return tag.rpartition("}")[2]
