"""Office files and PFILEs under Information Rights Management (IRM / Azure Information
Protection).

They are not password-encrypted, so no ``--password`` opens them: the content is
encrypted for the users a rights server licenses. What any reader can see is the
placeholder Office writes next to it ("This document is protected with Information Rights
Management..."); returning that as the document's text would be an ``ok`` that lies, so
the verdict is ``encrypted`` with a message that says why.

A PFILE (``.pfile``, ``.ppdf``, ``.ptxt``, ...) is how RMS protects any other file: a
".pfile" preamble, a cleartext placeholder, the publishing licence and the encrypted file.
"""

from __future__ import annotations

import struct

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader, Signature
from ..kernels.ole import summary_metadata
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder
from . import Context

FORMAT = Format(
    name="protected", version=2,  # 2: PFILEs
    readers=(Reader(d.IRM_PROTECTED),),
    # Microsoft RMS "protected file" (.pfile, .ppdf, .ptxt...)
    signatures=(Signature(d.IRM_PROTECTED, b".pfile"),),
)


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """``encrypted``, with the file's (unprotected) summary metadata kept."""
    head = src.head(4096)
    if head.startswith(b".pfile"):
        original = _pfile_extension(src)
        what = f"the original {original} file" if original else "the original file"
        raise ExtractionError(ErrorKind.ENCRYPTED, "protected with Microsoft Rights "
                              f"Management (PFILE): {what} is encrypted for licensed users; "
                              "the readable text is only the placeholder")
    try:
        summary_metadata(src.ole(), doc)
    except Exception:  # metadata is a bonus; the verdict does not depend on it
        doc.warnings.append("summary properties could not be read")
    raise ExtractionError(ErrorKind.ENCRYPTED, "protected with Information Rights Management "
                          "(IRM): the content is encrypted for licensed users; the readable "
                          "text is only the application's placeholder")


def _pfile_extension(src: Source) -> str | None:
    """The protected file's extension (".pdf"), from the PFILE header, for the message.

    Layout (RMS SDK's PFile reader): ".pfile", major and minor version, a length-prefixed
    cleartext redirection header, then the header size and the extension's offset and
    length, all little-endian 32-bit. Anything odd gives None: the verdict stands anyway.
    """
    head = src.head(65536)
    try:
        (redirect,) = struct.unpack_from("<I", head, 14)
        _size, offset, length = struct.unpack_from("<III", head, 18 + redirect)
    except struct.error:
        return None
    raw = head[offset:offset + length] if 0 < length <= 64 else b""
    ext = raw.replace(b"\0", b"").decode("ascii", "replace").strip()
    return ext if ext.startswith(".") and ext[1:].isalnum() else None
