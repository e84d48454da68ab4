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

Korean (CP949) and GBK share their most common rows: every KS X 1001 Hangul syllable's bytes
are also a common GB2312 Hanzi, so the word score ties and GBK would win. The separating
signal is in the Hangul reading (see ``_reads_as_korean``).
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
# Hangul syllable = initial * 588 + medial * 28 + final (Unicode 3.12). Real Korean words are
# mostly built from plain initials (and kk, ss), vowels other than yae/wae/we, and no final
# or one of g n l m b ng; GB2312 bytes read as CP949 land evenly on the 2350 KS X 1001
# syllables, a third of which have another shape.
_COMMON_INITIALS = frozenset(range(19)) - {4, 8, 13}  # not tt, pp, jj
_COMMON_MEDIALS = frozenset(range(21)) - {3, 10, 15}  # not yae, wae, we
_COMMON_FINALS = frozenset({0, 1, 4, 8, 16, 17, 21})  # none, g n l m b ng
_MIN_SYLLABLES = 6  # fewer is too little evidence to overturn the GBK reading
_KOREAN_SHARE = 0.9


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
    if _reads_as_korean(raws):
        return "cp949"
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


def _reads_as_korean(raws: list[bytes]) -> bool:
    """Every non-ASCII character read as CP949 is a Hangul syllable, there are enough of them,
    and nearly all have the shape of syllables Korean words use.

    A Chinese archive passes only if every one of its characters sits in the 25 GB2312 rows
    that overlap Hangul (about 60% of common Hanzi do) and nearly all read as common-shaped
    syllables (about 70%): for random level-1 Hanzi that is 0.5% of six-character archives
    and 0.05% of eight; names of fewer than six characters keep the GBK reading.
    """
    try:
        texts = [r.decode("cp949") for r in raws]
    except UnicodeDecodeError:
        return False
    syllables = [ord(c) - 0xAC00 for t in texts for c in t if not c.isascii()]
    if len(syllables) < _MIN_SYLLABLES or not all(0 <= s <= 11171 for s in syllables):
        return False
    common = sum(s // 588 in _COMMON_INITIALS and (s % 588) // 28 in _COMMON_MEDIALS
                 and s % 28 in _COMMON_FINALS for s in syllables)
    return common >= _KOREAN_SHARE * len(syllables)


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
