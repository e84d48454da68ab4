"""Password-protected Office files: OOXML (DOCX/XLSX/PPTX inside an OLE2
EncryptedPackage) and the 97-2003 binaries (DOC, XLS, PPT: RC4, RC4 CryptoAPI, XOR).

Excel "protects" many files with the built-in password ``VelvetSweatshop`` (write
protection only), so it is always tried when the user gave no password (or a wrong one).
The decrypted OOXML package is extracted by the normal OOXML extractors through
``ctx.child`` and its text, Markdown and metadata become this document's own: a user who
asked for the text of ``report.xlsx`` gets the text, not a wrapper with one child. The
legacy binaries are decrypted in place (``decrypt_legacy``) and read on by their own
extractor, which found the encryption flag.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder
from ..source import Source
from . import Context

DEFAULT_PASSWORD = "VelvetSweatshop"


def _candidates(password: str | None) -> list[str]:
    out = [password] if password else []
    if DEFAULT_PASSWORD not in out:
        out.append(DEFAULT_PASSWORD)
    return out


def _open(data: bytes) -> Any:
    import msoffcrypto

    try:
        return msoffcrypto.OfficeFile(io.BytesIO(data))
    except Exception as exc:  # msoffcrypto raises its own and plain parser errors
        raise ExtractionError(ErrorKind.CORRUPT, f"unreadable encrypted container: {exc}"
                              ) from exc


def _try(data: bytes, password: str) -> bytes | None:
    """Decrypted bytes, or None when ``password`` is not the right one."""
    from msoffcrypto import exceptions as mx

    office = _open(data)
    try:
        # verify_password is unreliable for agile encryption; decrypt() verifies itself.
        office.load_key(password=password)
        buf = io.BytesIO()
        office.decrypt(buf)
    except (mx.InvalidKeyError, mx.DecryptionError):
        return None
    except (mx.FileFormatError, mx.ParseError) as exc:
        raise ExtractionError(ErrorKind.CORRUPT, f"damaged encrypted package: {exc}") from exc
    except Exception as exc:  # unusual key sizes/algorithms surface as ValueError etc.
        raise ExtractionError(
            ErrorKind.ENCRYPTED,
            f"encrypted with a scheme textsieve cannot decrypt ({type(exc).__name__}: {exc})",
        ) from exc
    return buf.getvalue()


def _plausible(result: bytes, ooxml: bool) -> bool:
    """Standard encryption decrypts with any key: garbage out means a wrong password."""
    if not ooxml:
        return bool(result)
    try:
        with zipfile.ZipFile(io.BytesIO(result)) as z:
            return "[Content_Types].xml" in z.namelist()
    except Exception:  # not a readable ZIP in any way ("zip file version 15.7" too)
        return False


def decrypt(data: bytes, password: str | None, *, ooxml: bool = True,
            what: str = "document") -> bytes:
    """The plain document; ``encrypted`` when neither the given nor the default key opens
    it, saying which (``what``) and whether the given password was wrong."""
    for candidate in _candidates(password):
        result = _try(data, candidate)
        if result is not None and _plausible(result, ooxml):
            return result
    raise ExtractionError(ErrorKind.ENCRYPTED, f"{what} is password-protected"
                          + (" (wrong password)" if password else ""))


def decrypt_legacy(src: Source, ctx: Context, doc: Document, what: str) -> Source:
    """The decrypted copy of an encrypted Word/Excel/PowerPoint 97-2003 file, for its
    extractor to read on; ``encrypted`` when neither the given nor the default password
    opens it. RC4 key checks are cheap (no spin count), so trying costs ~1 ms."""
    plain = decrypt(src.read(), ctx.options.password, ooxml=False, what=what)
    ctx.account(len(plain), "decrypted file")
    doc.metadata.extra["encrypted"] = True
    return Source.from_bytes(plain, name=src.name)


_EXT = {"docx", "docm", "dotx", "xlsx", "xlsm", "xlsb", "pptx", "pptm", "ppsx", "potx"}


def _inner_name(src: Source) -> str:
    ext = src.extension
    return src.name if src.name and ext in _EXT else f"{src.name or 'document'}.zip"


def _adopt(child: Document, doc: Document, out: Builder) -> None:
    """Make the decrypted child's results this document's own."""
    if child.error is not None:
        raise ExtractionError(child.error.kind,
                              f"decrypted package: {child.error.message}")
    doc.title = doc.title or child.title
    m, c = doc.metadata, child.metadata
    for key in ("author", "created", "modified", "language", "page_count", "subject",
                "keywords"):
        if getattr(m, key) is None:
            setattr(m, key, getattr(c, key))
    m.extra.update({k: v for k, v in c.extra.items() if k != "detected_by"})
    m.extra["decrypted_as"] = child.mime_type
    doc.children.extend(child.children)
    doc.warnings.extend(child.warnings)
    out.embed(child.text, child.markdown)


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    data = src.read()
    plain = decrypt(data, ctx.options.password)
    ctx.account(len(plain), "decrypted package")
    doc.metadata.extra["encrypted"] = True
    _adopt(ctx.child(plain, _inner_name(src)), doc, out)
