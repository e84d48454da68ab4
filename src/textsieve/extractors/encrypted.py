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

import hashlib
import io
import struct
import zipfile
from collections.abc import Callable
from typing import Any

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder
from . import Context

# Imported on first use only (rare paths); ``preload`` imports them ahead.
# CPython's own SHA modules by algorithm (``_sha2`` from Python 3.12 on), see _builtin_hash.
_BUILTIN_SHA = {"sha1": ("_sha1",), "sha256": ("_sha256", "_sha2"),
                "sha384": ("_sha512", "_sha2"), "sha512": ("_sha512", "_sha2")}
LAZY = ("msoffcrypto", "msoffcrypto.exceptions", "msoffcrypto.format.ooxml",
        "cryptography.hazmat.backends.openssl.backend",
        "cryptography.hazmat.primitives.serialization", "xml.dom.expatbuilder",
        *sorted({m for names in _BUILTIN_SHA.values() for m in names}))

DEFAULT_PASSWORD = "VelvetSweatshop"

# Output version (archives re-extract what an older one made): 2 = agile files whose hash
# is shorter than their key (SHA-1 with AES-256) open.
FORMAT = Format(name="encrypted", version=2, readers=(Reader(d.OOXML_ENCRYPTED),))


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


def _builtin_hash(name: str) -> Callable[[bytes], Any]:
    """CPython's own SHA code for ``name``: for the 100,000 hashes of 70 bytes of a key
    derivation it is twice as fast as hashlib's OpenSSL objects (~45 ms, not ~90 ms, for
    SHA-512), which cost more to set up than to run. hashlib's when it is not there."""
    import importlib

    algo = name.replace("-", "").lower()
    for module in _BUILTIN_SHA[algo]:
        try:
            return getattr(importlib.import_module(module), algo)
        except (ImportError, AttributeError):
            continue
    return getattr(hashlib, algo)


_ITERATOR = struct.Struct("<I")
_KEY_VALUE_BLOCK = bytes.fromhex("146e0be7abacd0d6")  # MS-OFFCRYPTO 2.3.4.13


def _agile_key(info: dict[str, Any], password: str) -> bytes | None:
    """The intermediate key of agile encryption (MS-OFFCRYPTO 2.3.4.11 and 2.3.4.13);
    None when the parameters are not the usual AES ones (msoffcrypto then derives it).

    Our own derivation, not msoffcrypto's: it hashes twice as fast (see ``_builtin_hash``),
    and it pads a hash shorter than the key with 0x36 bytes as the specification says
    (msoffcrypto truncates only, so a SHA-1 file with a 256-bit key could not be opened)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    salt, bits = info.get("passwordSalt", b""), info.get("passwordKeyBits", 0)
    value, spin = info.get("encryptedKeyValue", b""), info.get("spinValue", 0)
    try:
        new = _builtin_hash(str(info.get("passwordHashAlgorithm", "")))
    except KeyError:
        return None
    if len(salt) != 16 or bits not in (128, 192, 256) or not value or len(value) % 16:
        return None
    h = new(salt + password.encode("utf-16-le")).digest()
    pack = _ITERATOR.pack
    for i in range(spin):
        h = new(pack(i) + h).digest()
    key = new(h + _KEY_VALUE_BLOCK).digest()
    size = bits // 8
    key = key[:size] if len(key) >= size else key + b"\x36" * (size - len(key))
    decryptor = Cipher(algorithms.AES(key), modes.CBC(salt)).decryptor()
    return decryptor.update(value) + decryptor.finalize()


def _try(data: bytes, password: str) -> bytes | None:
    """Decrypted bytes, or None when ``password`` is not the right one."""
    from msoffcrypto import exceptions as mx

    office = _open(data)
    try:
        # verify_password is unreliable for agile encryption; decrypt() verifies itself.
        key = _agile_key(office.info, password) if getattr(office, "type", "") == "agile" \
            else None
        if key is not None:
            office.load_key(secret_key=key)
        else:
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
