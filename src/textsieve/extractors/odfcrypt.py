"""Password-protected OpenDocument files (ODF 1.2+ as LibreOffice writes them).

Each encrypted member is described in META-INF/manifest.xml: the start key is SHA-256 (or
SHA-1 in old files) of the UTF-8 password, the key is PBKDF2-HMAC-SHA1 of that with the
member's salt and iteration count, the cipher AES-256-CBC (or Blowfish-CFB in files from
OpenOffice.org 3.3 and older), and the plain member is raw-deflated. The checksum of the
first kilobyte tells a wrong password from a damaged file.

``decrypt_odf`` returns an ordinary ODF package (members decrypted and inflated, manifest
without encryption data), so every ODF reader (ours for ODT/ODP, calamine for ODS) reads
it unchanged. Keys are derived once per distinct (salt, iterations) pair: LibreOffice
gives every member its own salt, so a 100,000-iteration derivation per member is the cost
of opening a protected file (about 25 ms each with OpenSSL).
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
import zlib
from typing import Any

from lxml import etree

from ..bytesource import Source
from ..kernels.xml import open_zip, read_member
from ..model import Document, ErrorKind, ExtractionError
from . import Context

_M = "{urn:oasis:names:tc:opendocument:xmlns:manifest:1.0}"
_AES_CBC = "http://www.w3.org/2001/04/xmlenc#aes256-cbc"
_BLOWFISH = ("blowfish cfb", "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#blowfish")
_SHA256 = ("http://www.w3.org/2000/09/xmldsig#sha256",
           "http://www.w3.org/2001/04/xmlenc#sha256")
_CHECKSUMS = {"sha1/1k": "sha1", "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#sha1-1k":
              "sha1", "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#sha256-1k": "sha256"}
_MAX_MEMBERS = 10_000


def open_plain(src: Source, ctx: Context, doc: Document) -> zipfile.ZipFile:
    """The package to read: as it is, or decrypted when its manifest says it is
    password-protected (then ``metadata.extra["encrypted"]`` is set)."""
    zf = open_zip(src)
    try:
        plain = _decrypted(zf, ctx)
    except BaseException:
        zf.close()
        raise
    if plain is None:
        return zf
    zf.close()
    doc.metadata.extra["encrypted"] = True
    return open_zip(Source.from_bytes(plain, name=src.name))


def plain_source(src: Source, ctx: Context, doc: Document) -> Source:
    """Like ``open_plain``, for readers that take a Source (calamine for ODS)."""
    with open_zip(src) as zf:
        plain = _decrypted(zf, ctx)
    if plain is None:
        return src
    doc.metadata.extra["encrypted"] = True
    return Source.from_bytes(plain, name=src.name)


def _decrypted(zf: zipfile.ZipFile, ctx: Context) -> bytes | None:
    if "META-INF/manifest.xml" not in zf.NameToInfo:
        return None
    if b"encryption-data" not in read_member(zf, "META-INF/manifest.xml", ctx,
                                             limit=8 << 20):
        return None
    return decrypt_odf(zf, ctx)


def decrypt_odf(zf: zipfile.ZipFile, ctx: Context) -> bytes:
    """The package with every encrypted member decrypted; ``encrypted`` without the right
    password or with a scheme this module does not know (it names the scheme)."""
    password = ctx.options.password
    if password is None:
        raise ExtractionError(ErrorKind.ENCRYPTED, "password-protected OpenDocument file")
    manifest = read_member(zf, "META-INF/manifest.xml", ctx, limit=8 << 20)
    try:
        root = etree.fromstring(manifest, etree.XMLParser(resolve_entities=False,
                                                          no_network=True))
    except etree.XMLSyntaxError as exc:
        raise ExtractionError(ErrorKind.CORRUPT, f"damaged ODF manifest: {exc}") from exc
    entries = {fe.get(_M + "full-path"): fe for fe in root.iter(_M + "file-entry")
               if fe.find(_M + "encryption-data") is not None}
    if len(entries) > _MAX_MEMBERS:
        raise ExtractionError(ErrorKind.TOO_LARGE, "too many encrypted members")
    keys: dict[tuple[bytes, int, str, int], bytes] = {}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as new:
        for info in zf.infolist():
            name = info.filename
            if name == "META-INF/manifest.xml":
                continue
            entry = entries.get(name)
            data = read_member(zf, name, ctx)
            if entry is not None:
                data = _decrypt_member(name, data, entry, password, keys, ctx)
            new.writestr(name, data)
        for ed in root.iter(_M + "encryption-data"):
            ed.getparent().remove(ed)
        new.writestr("META-INF/manifest.xml", etree.tostring(root, xml_declaration=True,
                                                             encoding="UTF-8"))
    return out.getvalue()


def _decrypt_member(name: str, data: bytes, entry: Any, password: str,
                    keys: dict[tuple[bytes, int, str, int], bytes], ctx: Context) -> bytes:
    ed = entry.find(_M + "encryption-data")
    alg = ed.find(_M + "algorithm")
    kd = ed.find(_M + "key-derivation")
    start = ed.find(_M + "start-key-generation")
    if alg is None or kd is None:
        raise ExtractionError(ErrorKind.CORRUPT, f"ODF manifest: {name} lacks its cipher")
    algorithm = (alg.get(_M + "algorithm-name") or "").strip()
    derivation = (kd.get(_M + "key-derivation-name") or "").strip()
    if derivation.upper() != "PBKDF2":
        raise ExtractionError(ErrorKind.ENCRYPTED,
                              f"OpenDocument encrypted with {derivation or 'an unknown'} key "
                              "derivation, which textsieve cannot decrypt")
    try:
        iv = base64.b64decode(alg.get(_M + "initialisation-vector") or "")
        salt = base64.b64decode(kd.get(_M + "salt") or "")
        rounds = int(kd.get(_M + "iteration-count") or "1024")
        size = int(kd.get(_M + "key-size") or "16")
        checksum = base64.b64decode(ed.get(_M + "checksum") or "")
    except ValueError as exc:
        raise ExtractionError(ErrorKind.CORRUPT, f"ODF manifest: bad value for {name}") from exc
    if not 0 < rounds <= 10_000_000 or size not in (16, 24, 32):
        raise ExtractionError(ErrorKind.CORRUPT, f"ODF manifest: odd key setup for {name}")
    start_name = (start.get(_M + "start-key-generation-name") if start is not None else "") or ""
    start_hash = "sha256" if start_name in _SHA256 else "sha1"
    cache_key = (salt, rounds, start_hash, size)
    key = keys.get(cache_key)
    if key is None:
        first = hashlib.new(start_hash, password.encode("utf-8")).digest()
        key = keys[cache_key] = hashlib.pbkdf2_hmac("sha1", first, salt, rounds, size)
    plain = _cipher(algorithm, key, iv, data, name)
    check = _CHECKSUMS.get((ed.get(_M + "checksum-type") or "").lower())
    if check and checksum and hashlib.new(check, plain[:1024]).digest() != checksum:
        raise ExtractionError(ErrorKind.ENCRYPTED,
                              "password-protected OpenDocument file (wrong password)")
    if algorithm == _AES_CBC and plain:
        pad = plain[-1]  # ISO 10126 / W3C padding: the last byte says how many to drop
        if 1 <= pad <= 16:
            plain = plain[:-pad]
    return _inflate(plain, entry, name, ctx)


def _cipher(algorithm: str, key: bytes, iv: bytes, data: bytes, name: str) -> bytes:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    if algorithm == _AES_CBC:
        if len(data) % 16 or len(iv) != 16:
            raise ExtractionError(ErrorKind.CORRUPT, f"encrypted member {name} is truncated")
        dec = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
        return dec.update(data) + dec.finalize()
    if algorithm.lower() in _BLOWFISH:
        try:  # moved out of the main namespace in cryptography 43
            from cryptography.hazmat.decrepit.ciphers.algorithms import Blowfish
        except ImportError:  # pragma: no cover - older cryptography
            Blowfish = algorithms.Blowfish  # type: ignore[misc]
        try:
            from cryptography.hazmat.decrepit.ciphers.modes import CFB
        except ImportError:
            CFB = modes.CFB  # type: ignore[misc]
        dec = Cipher(Blowfish(key), CFB(iv)).decryptor()
        return dec.update(data) + dec.finalize()
    raise ExtractionError(ErrorKind.ENCRYPTED,
                          f"OpenDocument encrypted with {algorithm or 'an unknown cipher'}, "
                          "which textsieve cannot decrypt")


def _inflate(plain: bytes, entry: Any, name: str, ctx: Context) -> bytes:
    """Members are deflated before encryption; the manifest's size bounds the output."""
    try:
        declared = int(entry.get(_M + "size") or "0")
    except ValueError:
        declared = 0
    cap = min(ctx.options.max_unpacked, declared or ctx.options.max_unpacked)
    inflater = zlib.decompressobj(-15)
    try:
        data = inflater.decompress(plain, cap + 1)
    except zlib.error:
        return plain  # stored without compression (some writers do this for images)
    if len(data) > cap:
        raise ExtractionError(ErrorKind.TOO_LARGE, f"encrypted member {name} unpacks too far")
    ctx.account(len(data), "decrypted OpenDocument")
    return data
