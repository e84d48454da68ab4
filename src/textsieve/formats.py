"""What a format declares: the MIME types it reads, how its files are recognised, its
priority and its version.

A format of textsieve is one module holding a ``FORMAT`` (a ``Format``) and the functions
that read it. textsieve finds the built-in ones in ``textsieve/extractors/``, and a
plugin's through the entry point group ``textsieve.formats`` of the package that brings it
(``[project.entry-points."textsieve.formats"] myformat = "mypackage.myformat"``). Each
reader is a function ``extract(src, ctx, doc, out) -> None``: it reads ``src`` (a
``bytesource.Source``), fills ``doc`` (title, metadata, children) and describes the content
to ``out`` (a ``render.Builder``); it raises ``ExtractionError`` with a kind when it cannot.

How a file is recognised: by its content first (``Signature``: bytes at an offset), its
name's extension only as a hint. Priorities order what is tried, lowest first: the
signatures of all formats, and the readers of one MIME type (a DOC goes to our own Word
reader, then antiword, catdoc and LibreOffice; a later one is tried only after a failure
another parser might overcome).

A plugin is loaded only when textsieve's own formats have nothing specific to say: a file
they take for plain text, XML, a bare ZIP or OLE2 container or unknown bytes, or one of a
format they recognise but do not read (7-Zip, RAR...); a MIME type with no built-in reader;
a reader of a MIME type after every built-in one failed; an archived item made by a
plugin's format. So a plugin adds formats and fallbacks and never slows down or displaces
what textsieve reads itself, and starting the command does not read every installed
package's entry points. The format's ``version`` goes into every item it made
(``extractor_version``, ``"1:name/version"``): raising it re-extracts exactly those items.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

GROUP = "textsieve.formats"  # the entry point group of plugin formats
_NONE: Mapping[str, str] = MappingProxyType({})


class _Declared:
    """Plain classes with ``__slots__``, not dataclasses or named tuples: every format
    module builds its declaration when it is imported, and making a frozen dataclass class
    costs ~0.5 ms, the first named tuple ~0.3 ms, paid by every ``textsieve extract
    FILE``. Declarations are made once and not changed."""

    __slots__: tuple[str, ...] = ()

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(repr(getattr(self, k)) for k in self.__slots__))


class Signature(_Declared):
    """Bytes that say a file is of type ``mime``: ``magic`` at ``offset`` (or anywhere in
    the first ``within`` bytes), and every ``also`` pair (offset, bytes) too, in a head of
    at least ``min_size`` bytes. ``priority``: None for the format's."""

    __slots__ = ("also", "magic", "mime", "min_size", "offset", "priority", "within")

    def __init__(self, mime: str, magic: bytes, offset: int = 0, within: int = 0,
                 also: tuple[tuple[int, bytes], ...] = (), min_size: int = 0,
                 priority: float | None = None) -> None:
        self.mime, self.magic, self.offset, self.within = mime, magic, offset, within
        self.also, self.min_size, self.priority = also, min_size, priority

    def matches(self, head: bytes) -> bool:
        if len(head) < self.min_size:
            return False
        if self.within:
            found = self.magic in head[:self.within]
        else:
            found = head.startswith(self.magic, self.offset)
        return found and all(head.startswith(b, o) for o, b in self.also)


class Reader(_Declared):
    """``function`` of the format's module reads ``mime``; the lowest ``priority`` among a
    MIME type's readers is tried first."""

    __slots__ = ("function", "mime", "priority")

    def __init__(self, mime: str, function: str = "extract", priority: float = 0.0) -> None:
        self.mime, self.function, self.priority = mime, function, priority


class Format(_Declared):
    """One format module's declaration (its ``FORMAT``).

    ``name`` and ``version`` make the tag of what it extracts (``"1:pdf/5"``); a format
    that was renamed lists its old names in ``former_names``, so items tagged with them
    stay current. ``hints`` maps a file name's extension (lower case, no dot) to a MIME
    type; ``unsupported`` names MIME types it recognises and deliberately does not read,
    with the reason a user is told. ``priority`` orders its signatures among all formats'.
    """

    __slots__ = (
        "former_names",
        "hints",
        "name",
        "priority",
        "readers",
        "signatures",
        "unsupported",
        "version",
    )

    def __init__(self, name: str, version: int, readers: tuple[Reader, ...] = (),
                 signatures: tuple[Signature, ...] = (), hints: Mapping[str, str] = _NONE,
                 priority: float = 0.0, unsupported: Mapping[str, str] = _NONE,
                 former_names: tuple[str, ...] = ()) -> None:
        self.name, self.version, self.readers, self.signatures = (name, version,
                                                                  tuple(readers),
                                                                  tuple(signatures))
        self.hints, self.priority = MappingProxyType(dict(hints)), priority
        self.unsupported = MappingProxyType(dict(unsupported))
        self.former_names = tuple(former_names)

    @property
    def mime_types(self) -> tuple[str, ...]:
        """Every MIME type it reads or recognises, in declaration order."""
        seen: dict[str, Any] = dict.fromkeys(
            [r.mime for r in self.readers] + [s.mime for s in self.signatures]
            + list(self.unsupported))
        return tuple(seen)
