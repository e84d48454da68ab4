"""ZIP member names as their authors wrote them.

A ZIP name is bytes. APPNOTE says: UTF-8 when general-purpose flag bit 11 is set,
otherwise IBM code page 437; ``zipfile`` follows it to the letter. In practice the tools
that do not set the flag write the OEM code page of the machine that made the archive
(Windows Explorer and 7-Zip in China write GBK, in Japan Shift-JIS, in Russia CP866),
or UTF-8 without saying so, or add the UTF-8 name in an Info-ZIP Unicode Path extra field
(0x7075). Read as CP437 every one of those is mojibake ("▒¿╕µ.txt" for "报告.txt").

Order of trust: the flag; the Unicode Path field; UTF-8 that decodes; then the code page
that makes the archive's names (all of them together: one short name is too little
evidence) most plausible as words in one script. General charset detectors are tuned for
running text and a Western default, and pick Big5 or CP949 for two-character GBK names.
"""

from __future__ import annotations

import re
import unicodedata
import zipfile
from collections.abc import Iterable

_UNICODE_PATH = 0x7075

# Code pages a ZIP tool may have used, in the order that wins a tie: DOS's own first
# (correct by the specification), then by how common the archives are.
_CANDIDATES = ("cp437", "cp866", "gb18030", "cp932", "cp850", "cp852", "big5", "cp949")
_WORD = re.compile(r"[^\W\d_]+")


def raw_name(info: zipfile.ZipInfo) -> bytes:
    """The name's bytes as stored (``zipfile`` decoded them as CP437, a bijection)."""
    try:
        return info.filename.encode("cp437")
    except UnicodeEncodeError:  # decoded as UTF-8 already (the flag, or a recovered member)
        return info.filename.encode("utf-8")


def _unicode_path(info: zipfile.ZipInfo) -> str | None:
    """The Info-ZIP Unicode Path extra field (version 1): a CRC of the plain name, then
    the name in UTF-8."""
    extra = info.extra
    i = 0
    while i + 4 <= len(extra):
        tag = int.from_bytes(extra[i:i + 2], "little")
        size = int.from_bytes(extra[i + 2:i + 4], "little")
        if tag == _UNICODE_PATH and size > 5 and extra[i + 4] == 1:
            try:
                return extra[i + 9:i + 4 + size].decode("utf-8")
            except UnicodeDecodeError:
                return None
        i += 4 + size
    return None


def _needs_code_page(info: zipfile.ZipInfo) -> bytes | None:
    """The raw name when only a code page can say what it is, else None."""
    if info.flag_bits & 0x800 or _unicode_path(info) is not None:
        return None
    raw = raw_name(info)
    if raw.isascii():
        return None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
    return None


def legacy_code_page(infos: Iterable[zipfile.ZipInfo]) -> str:
    """The code page of the archive's names that are neither flagged nor valid UTF-8."""
    raws = [r for r in map(_needs_code_page, infos) if r is not None]
    if not raws:
        return "cp437"
    best, best_score = "cp437", -1.0
    for enc in _CANDIDATES:
        try:
            texts = [r.decode(enc) for r in raws]
        except UnicodeDecodeError:
            continue
        score = _plausibility(texts, enc)
        if score > best_score:
            best, best_score = enc, score
    return best


def member_name(info: zipfile.ZipInfo, code_page: str = "cp437") -> str:
    """The member's name; ``code_page`` from ``legacy_code_page`` over the same archive."""
    if info.flag_bits & 0x800:
        return info.filename
    unicode_path = _unicode_path(info)
    if unicode_path is not None:
        return unicode_path
    raw = raw_name(info)
    if raw.isascii():
        return info.filename
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode(code_page, "replace")


def _plausibility(texts: list[str], enc: str) -> float:
    """How much the non-ASCII characters look like words: weight per character (1 = a
    letter of a common kind in a coherent word), times its bytes, over all non-ASCII bytes."""
    total = weight = 0.0
    for text in texts:
        for word in _WORD.findall(text):
            scripts = {_script(c) for c in word if not c.isascii()}
            ascii_letters = sum(c.isascii() for c in word)
            for c in word:
                if c.isascii():
                    continue
                size = len(c.encode(enc))
                total += size
                weight += size * _letter_weight(c, enc, word, scripts, ascii_letters)
        for c in text:
            if not c.isascii() and not _WORD.fullmatch(c):
                total += len(c.encode(enc))  # a symbol or box-drawing character: weight 0
    return weight / total if total else 0.0


def _script(c: str) -> str:
    name = unicodedata.name(c, "")
    return name.split(" ", 1)[0] if name else "?"


def _letter_weight(c: str, enc: str, word: str, scripts: set[str], ascii_letters: int) -> float:
    o = ord(c)
    if 0x4E00 <= o <= 0x9FFF:  # a Han character: common in the code page's own ranking?
        code = c.encode(enc)
        lead = code[0]
        if enc == "gb18030":  # GB2312 level 1 (the 3755 commonest)
            return 1.0 if 0xB0 <= lead <= 0xD7 and code[1] >= 0xA1 else 0.3
        if enc == "cp932":
            return 1.0 if 0x88 <= lead <= 0x98 else 0.3  # JIS level 1
        if enc == "big5":
            return 0.9 if 0xA4 <= lead <= 0xC6 else 0.3  # Big5 "frequently used"
        return 0.2  # Hanja in a Korean file name: rare
    if 0x3040 <= o <= 0x30FF:  # kana
        return 1.0 if enc == "cp932" else 0.2
    if 0xFF61 <= o <= 0xFF9F:  # half-width katakana
        return 0.3
    if 0xAC00 <= o <= 0xD7A3:  # Hangul syllables
        return 0.95
    if len(scripts) > 1:
        return 0.2  # a word mixing Latin, Greek and Cyrillic letters is mojibake
    if "LATIN" in scripts:
        # Accented letters sit among plain ones in real words ("Grüße"); a word of
        # accented letters only is another script read through a Latin code page.
        return 1.0 if ascii_letters >= len(word) - ascii_letters else 0.3
    if ascii_letters:
        return 0.2  # Cyrillic or Greek glued to Latin letters
    return 1.0
