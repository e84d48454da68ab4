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
from dataclasses import dataclass, field

GROUP = "textsieve.formats"  # the entry point group of plugin formats


@dataclass(frozen=True)
class Signature:
    """Bytes that say a file is of type ``mime``: ``magic`` at ``offset`` (or anywhere in
    the first ``within`` bytes), and every ``also`` pair (offset, bytes) too, in a head of
    at least ``min_size`` bytes."""

    mime: str
    magic: bytes
    offset: int = 0
    within: int = 0
    also: tuple[tuple[int, bytes], ...] = ()
    min_size: int = 0
    priority: float | None = None  # None: the format's

    def matches(self, head: bytes) -> bool:
        if len(head) < self.min_size:
            return False
        if self.within:
            found = self.magic in head[:self.within]
        else:
            found = head.startswith(self.magic, self.offset)
        return found and all(head.startswith(b, o) for o, b in self.also)


@dataclass(frozen=True)
class Reader:
    """``function`` of the format's module reads ``mime``; the lowest ``priority`` among a
    MIME type's readers is tried first."""

    mime: str
    function: str = "extract"
    priority: float = 0.0


@dataclass(frozen=True)
class Format:
    """One format module's declaration (its ``FORMAT``).

    ``name`` and ``version`` make the tag of what it extracts (``"1:pdf/5"``); a format
    that was renamed lists its old names in ``former_names``, so items tagged with them
    stay current. ``hints`` maps a file name's extension (lower case, no dot) to a MIME
    type; ``unsupported`` names MIME types it recognises and deliberately does not read,
    with the reason a user is told.
    """

    name: str
    version: int
    readers: tuple[Reader, ...] = ()
    signatures: tuple[Signature, ...] = ()
    hints: Mapping[str, str] = field(default_factory=dict)
    priority: float = 0.0
    unsupported: Mapping[str, str] = field(default_factory=dict)
    former_names: tuple[str, ...] = ()

    @property
    def mime_types(self) -> tuple[str, ...]:
        """Every MIME type it reads or recognises, in declaration order."""
        seen = dict.fromkeys([r.mime for r in self.readers] + [s.mime for s in self.signatures]
                             + list(self.unsupported))
        return tuple(seen)
