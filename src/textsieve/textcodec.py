"""Bytes to str for text of unknown encoding: one place, used by every text-ish format.

Order of trust: a byte-order mark; strict UTF-8; UTF-16/32 without BOM recognised by the
pattern of NUL bytes; a declared charset when it decodes cleanly; then statistical
detection (charset-normalizer) for legacy code pages.
"""

from __future__ import annotations

import codecs
import contextlib

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Names people and mail clients write that Python does not know or that mean a superset.
_ALIASES = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "iso-8859-1": "cp1252",  # browsers decode latin-1 labels as windows-1252
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "ks_c_5601-1987": "cp949",
    "euc-kr": "cp949",
    "shift_jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "windows-31j": "cp932",
    "tis-620": "cp874",
    "x-mac-cyrillic": "mac_cyrillic",
    "utf8": "utf-8",
    "unicode-1-1-utf-7": "utf-7",
}


def normalize_charset(name: str | None) -> str | None:
    """A Python codec name for a declared charset, or None if unknown/unusable."""
    if not name:
        return None
    n = name.strip().strip("\"'").lower()
    n = _ALIASES.get(n, n)
    try:
        return codecs.lookup(n).name
    except LookupError:
        return None


def bom_encoding(data: bytes) -> str | None:
    for bom, enc in _BOMS:
        if data.startswith(bom):
            return enc
    return None


def _utf16_without_bom(data: bytes) -> str | None:
    sample = data[:4096]
    if len(sample) < 4:
        return None
    even = sample[0::2]
    odd = sample[1::2]
    zeros_even = even.count(0) / len(even)
    zeros_odd = odd.count(0) / len(odd)
    if zeros_odd > 0.4 and zeros_even < 0.05:
        return "utf-16-le"
    if zeros_even > 0.4 and zeros_odd < 0.05:
        return "utf-16-be"
    return None


def decode(data: bytes, declared: str | None = None) -> tuple[str, str]:
    """Decode ``data``; returns (text, encoding name). Never raises on bad bytes."""
    enc = bom_encoding(data)
    if enc:
        text = data.decode(enc, errors="replace")
        return text.lstrip("\ufeff"), enc.replace("-sig", "")
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        # Truncated at the very end (a cut multi-byte sequence) is still UTF-8.
        if exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            return data.decode("utf-8", errors="replace"), "utf-8"
    enc = _utf16_without_bom(data)
    if enc:
        return data.decode(enc, errors="replace"), enc
    decl = normalize_charset(declared)
    if decl and decl not in ("utf-8",):
        try:
            return data.decode(decl), decl
        except UnicodeDecodeError:
            pass
    try:
        from charset_normalizer import from_bytes

        results = from_bytes(data[:200_000])
        best = results.best()
        if best is not None and best.encoding not in ("cp1252", "latin_1"):
            # Western single-byte code pages tie often (é, ü, ç exist in most of them) and
            # the detector's pick among near-equals is arbitrary: the commonest one wins a
            # near-tie (a Baltic cp1257 reading of a French page is a plausible-looking lie).
            common = next((m for m in results if m.encoding == "cp1252"), None)
            if common is not None and common.chaos <= best.chaos + 0.05 and \
                    common.coherence >= best.coherence - 0.05:
                best = common
    except Exception:  # a detector failure must not lose the text
        best = None
    if best is not None and best.encoding and best.coherence == 0.0 and best.chaos == 0.0:
        # No language evidence (a few stray bytes, like one '©' in a small CSV): every
        # code page ties and the detector's pick is arbitrary; the common one is likelier.
        try:
            return data.decode("cp1252"), "cp1252"
        except UnicodeDecodeError:
            pass
    if best is not None and best.encoding:
        enc = normalize_charset(best.encoding) or "cp1252"
        return data.decode(enc, errors="replace"), enc
    return data.decode("cp1252", errors="replace"), "cp1252"


def warm() -> None:
    """Look up every code page charset detection may try: its first non-UTF-8 input would
    otherwise import ~80 codec modules (~20 ms) on the way (see ``extractors.preload``)."""
    try:
        from charset_normalizer.constant import IANA_SUPPORTED
    except ImportError:
        return
    for name in IANA_SUPPORTED:
        with contextlib.suppress(LookupError):
            codecs.lookup(name)


_HIGH_BYTES = bytes(range(128, 256))
_SUSPICIOUS_CONTROLS = bytes(b for b in range(32) if b not in (0, 8, 9, 10, 11, 12, 13, 26, 27))


def looks_binary(sample: bytes) -> bool:
    """True when a byte sample is not text in any common encoding."""
    if not sample:
        return False
    if bom_encoding(sample) or _utf16_without_bom(sample):
        return False
    # Text never holds C0 controls beyond whitespace, ESC (ISO-2022), backspace (nroff
    # overstrike), VT and SUB; more than a trace of them means binary.
    ctrl = len(sample) - len(sample.translate(None, _SUSPICIOUS_CONTROLS))
    if ctrl > max(2, len(sample) // 200):
        return True
    nul = sample.count(0)
    if nul <= max(2, len(sample) // 100):
        return False
    # More NULs than a trace: binary, unless they are strays in otherwise clean text (a
    # page saved by a buggy CMS, a log with a zeroed block after a crash). Binary formats
    # hold NULs with bytes that are neither text nor UTF-8; text around strays is both.
    if nul > len(sample) // 10:
        return True
    rest = sample.replace(b"\x00", b"")
    high = len(rest) - len(rest.translate(None, _HIGH_BYTES))
    return not (_utf8_text(rest) or high <= len(rest) // 4)


def _utf8_text(data: bytes) -> bool:
    """Whether bytes are UTF-8 (a sequence cut at the end of a sample allowed)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(data) - 3 and exc.reason == "unexpected end of data"
    return True
