"""The registry: which function reads a MIME type, which bytes and names say what a file
is, and the version tag of what each format made; built-in formats and plugins alike.

A format is one module with a ``FORMAT`` (``textsieve.formats``): the built-in ones are the
modules of this package, a plugin's come from the entry point group ``textsieve.formats``.
For a MIME type with several readers (DOC: our Word reader, then antiword, catdoc,
LibreOffice) the first that succeeds wins; a later one is tried only after a failure that
another parser might overcome (``FALLBACK_KINDS``), never after ``encrypted`` or
``too_large``.

Every file is detected before textsieve knows which format module to import, and importing
them all would cost every ``textsieve extract FILE`` ~0.1 s of parsers. So what detection
and dispatch need from the built-in formats (signatures, name hints, readers, names) is
kept in ``_index.py``, written from the modules' declarations by
``python scripts/format_index.py`` and checked against them by ``tests/test_formats.py``;
a module is imported when its turn to read a file comes, and its version read from it
then. Plugins are read from their packages' metadata the first time they can matter (see
``textsieve.formats``), once per process.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..formats import GROUP, Format, Signature
from ..model import ErrorKind
from . import _index

# A reader: extract(src, ctx, doc, out) -> None (see textsieve.formats).
Extractor = Callable[..., None]

CORE_VERSION = "1"  # detection / rendering / model changes that alter every output
REGISTRY_VERSION = 2  # bump when a format gains an extractor (retries its "unsupported")
REGISTRY_TAG = f"{CORE_VERSION}:registry/{REGISTRY_VERSION}"
FETCH_VERSION = 1  # bump when fetching changes in a way that should retry fetch failures
FETCH_TAG = f"{CORE_VERSION}:fetch/{FETCH_VERSION}"
# A link archived as its list describes it, not fetched (``run --fetch never``): never
# current, so the next run that may fetch fetches it.
LISTED_TAG = f"{CORE_VERSION}:listed/1"
_RESERVED = ("registry", "fetch", "listed")  # tag names that are not formats

# Failures another reader of the same MIME type may overcome.
FALLBACK_KINDS = frozenset({ErrorKind.CORRUPT, ErrorKind.UNSUPPORTED, ErrorKind.MISSING_TOOL})

# MIME type -> its readers ("module:function"), in the order they are tried. A plugin's
# come after the built-in ones once it is loaded.
REGISTRY: dict[str, list[str]] = {mime: list(specs) for mime, specs in _index.READERS.items()}
# Formats recognised and deliberately not read: a typed answer, not a guess.
UNSUPPORTED: dict[str, str] = dict(_index.UNSUPPORTED)
# A file name's extension -> the MIME type it suggests (the built-in formats' hints).
HINTS: dict[str, str] = dict(_index.HINTS)
# The built-in formats' signatures, in the order they are tried.
SIGNATURES: tuple[Signature, ...] = tuple(
    Signature(mime, magic, offset, within, also, min_size)
    for mime, magic, offset, within, also, min_size in _index.SIGNATURES)
# Format name (and former names) -> its module, for the built-in formats.
_MODULES: dict[str, str] = dict(_index.MODULES)


def extractors_for(mime: str) -> Iterator[tuple[str, Extractor]]:
    """(version tag, function) for each reader of ``mime``, in order of preference, each
    module imported only when its turn comes: the fallbacks of a format (antiword, catdoc,
    LibreOffice after our Word reader) are not loaded for the files the first one reads
    (tempfile and shutil were half of a DOC's imports). When every built-in reader has
    failed, the plugins' readers of ``mime`` (if any) get their turn."""
    done = 0
    while True:
        for spec in REGISTRY.get(mime, [])[done:]:
            done += 1
            yield version_of(spec), _load(spec)
        if _plugins is not None:
            return
        plugins()


def version_of(spec: str) -> str:
    """The tag of what a reader makes, ``"1:<format>/<version>"``: raise a format's
    ``version`` when its output changes, and archives re-extract exactly the items it
    produced (core changes bump CORE_VERSION). A module without a ``FORMAT`` (a test's
    stand-in reader) is tagged by its name and its ``VERSION``."""
    mod = spec.partition(":")[0]
    module = importlib.import_module(mod)
    fmt = getattr(module, "FORMAT", None)
    if isinstance(fmt, Format):
        return f"{CORE_VERSION}:{fmt.name}/{fmt.version}"
    return f"{CORE_VERSION}:{mod.rsplit('.', 1)[-1]}/{getattr(module, 'VERSION', 1)}"


def is_current(tag: str | None) -> bool:
    """Whether an archived item's extractor tag is what this textsieve would use now: the
    same core and the same version of the same format (under its name then or now)."""
    if not tag or ":" not in tag or "/" not in tag:
        return False
    if tag in (REGISTRY_TAG, FETCH_TAG):
        return True
    core, _, rest = tag.partition(":")
    name, _, version = rest.partition("/")
    if core != CORE_VERSION or name in _RESERVED:
        return False
    fmt = format_named(name)
    return fmt is not None and version == str(fmt.version)


def format_named(name: str) -> Format | None:
    """The format called ``name`` now or formerly: a built-in one, else a plugin's."""
    module = _MODULES.get(name)
    if module is not None:
        try:
            fmt = getattr(importlib.import_module(module), "FORMAT", None)
        except ImportError:  # an optional parser that is not installed
            return None
        return fmt if isinstance(fmt, Format) else None
    return next((f for _, f in plugins() if name == f.name or name in f.former_names), None)


_cache: dict[str, Extractor] = {}


def _load(spec: str) -> Extractor:
    fn = _cache.get(spec)
    if fn is None:
        mod, _, attr = spec.partition(":")
        fn = getattr(importlib.import_module(mod), attr)
        _cache[spec] = fn
    return fn


def preload(mimes: Iterable[str] | None = None) -> None:
    """Pay the one-time start-up of the readers of ``mimes`` (all, plugins' too, when None)
    now: the modules, the libraries they import only on first use (a module's ``LAZY``
    names) and, for all formats, the code pages charset detection tries. ``import
    textsieve`` stays light so that a one-file CLI call does not load every parser; a
    long-lived caller (a service, the pool before it forks its workers, a benchmark) wants
    the ~0.2 s paid once, up front, and not by the first file of each format. (The core
    and OCR, which every worker needs too, are the caller's to import: they sit above.)"""
    from .. import textcodec
    from ..kernels import language

    if mimes is None:
        plugins()
    wanted = REGISTRY.keys() if mimes is None else [m for m in mimes if m in REGISTRY]
    for spec in {s for m in wanted for s in REGISTRY[m]}:
        try:
            _load(spec)
        except ImportError:  # an optional parser that is not installed
            continue
        for lib in getattr(importlib.import_module(spec.partition(":")[0]), "LAZY", ()):
            with contextlib.suppress(ImportError):
                importlib.import_module(lib)
    language.warm()  # every document with text is asked its language
    if mimes is None:  # a CLI call on a few PDFs need not look up 99 code pages
        textcodec.warm()


# -- plugins ---------------------------------------------------------------------------------

_plugins: list[tuple[str, Format]] | None = None  # (module, format), once loaded
_plugin_signatures: list[Signature] = []
_plugin_hints: dict[str, str] = {}


def plugins() -> list[tuple[str, Format]]:
    """Every plugin format as (module, Format), by priority, loaded on the first call:
    their readers join ``REGISTRY`` after the built-in ones, what they recognise but do
    not read joins ``UNSUPPORTED``. A plugin that cannot be loaded, declares no
    ``Format`` or takes a format name already in use is left out with a warning: a broken
    package must not break the extraction of every file."""
    global _plugins
    if _plugins is not None:
        return _plugins
    found: list[tuple[str, Format]] = []
    if not _declared():
        _plugins = found
        return found
    import logging  # here, as importlib.metadata (~30 ms): only when a plugin is installed
    from importlib.metadata import entry_points

    log = logging.getLogger(__name__)

    taken = {*_MODULES, *_RESERVED}
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        try:
            obj: Any = ep.load()
        except Exception as exc:  # whatever a third-party import raises
            log.warning("format plugin %s (%s) cannot be loaded: %s: %s", ep.name, ep.value,
                        type(exc).__name__, exc)
            continue
        fmt = obj if isinstance(obj, Format) else getattr(obj, "FORMAT", None)
        if not isinstance(fmt, Format):
            log.warning("format plugin %s (%s) declares no textsieve.formats.Format",
                        ep.name, ep.value)
            continue
        names = {fmt.name, *fmt.former_names}
        if names & taken:
            log.warning("format plugin %s (%s) left out: the name %s is taken", ep.name,
                        ep.value, ", ".join(sorted(names & taken)))
            continue
        taken |= names
        found.append((ep.module, fmt))
    found.sort(key=lambda p: p[1].priority)  # stable: ties keep the entry points' order
    readers = sorted(((r.priority, f"{module}:{r.function}", r.mime)
                      for module, fmt in found for r in fmt.readers), key=lambda r: r[0])
    for _, spec, mime in readers:
        REGISTRY.setdefault(mime, []).append(spec)
    for _, fmt in found:
        for mime, why in fmt.unsupported.items():
            UNSUPPORTED.setdefault(mime, why)
        for ext, mime in fmt.hints.items():
            _plugin_hints.setdefault(ext.lower(), mime)
    _plugin_signatures.extend(sig for _, sig in sorted(
        ((fmt.priority if s.priority is None else s.priority, s)
         for _, fmt in found for s in fmt.signatures), key=lambda p: p[0]))
    _plugins = found
    return found


def _declared() -> bool:
    """Whether any package installed on ``sys.path`` declares an entry point of the group.

    A look at each distribution's ``entry_points.txt`` for the group's name (~1 ms), so
    that finding no plugin does not cost importing ``importlib.metadata`` (~30 ms, email
    and zipfile with it) in a command that reads one file; when one names the group,
    ``importlib.metadata`` reads them all, properly."""
    import os

    needle = GROUP.encode()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # not a folder (a zip), or gone
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(entry or ".", name, "entry_points.txt"), "rb") as f:
                        if needle in f.read():
                            return True
                except OSError:
                    continue
    return False


def plugin_claim(head: bytes, extension: str) -> tuple[str, str] | None:
    """A plugin format's answer for a file the built-in formats had nothing specific to
    say about: (MIME type, ``"magic"`` or ``"extension"``), or None. Plugins are loaded
    here the first time."""
    plugins()
    for sig in _plugin_signatures:
        if sig.matches(head):
            return sig.mime, "magic"
    mime = _plugin_hints.get(extension)
    return (mime, "extension") if mime else None


# -- the index of the built-in formats ---------------------------------------------------------

def builtin_formats() -> list[tuple[str, Format]]:
    """(module, Format) of every built-in format, by module name: each module of this
    package with a ``FORMAT`` (the others are helpers). Imports them all: for writing and
    checking the index, not for extracting."""
    found = []
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.stem in ("__init__", "registry", "_index"):
            continue
        module = importlib.import_module(f"{__package__}.{path.stem}")
        fmt = getattr(module, "FORMAT", None)
        if isinstance(fmt, Format):
            found.append((module.__name__, fmt))
    return found


def index_source() -> str:
    """The text of ``_index.py`` for the built-in formats as they are declared now.
    Ties of priority go by module name, then declaration order."""
    formats = builtin_formats()
    modules: dict[str, str] = {}
    hints: dict[str, str] = {}
    unsupported: dict[str, str] = {}
    signatures: list[tuple[float, int, int, Signature]] = []
    readers: list[tuple[float, int, int, str, str]] = []
    for n, (module, fmt) in enumerate(formats):
        for name in (fmt.name, *fmt.former_names):
            if name in modules or name in _RESERVED:
                raise ValueError(f"format name {name!r} of {module} is taken")
            modules[name] = module
        for ext, mime in fmt.hints.items():
            if hints.setdefault(ext, mime) != mime:
                raise ValueError(f"extension {ext!r} hints at two types: {module}")
        for mime, why in fmt.unsupported.items():
            unsupported.setdefault(mime, why)
        signatures += [(fmt.priority if s.priority is None else s.priority, n, i, s)
                       for i, s in enumerate(fmt.signatures)]
        readers += [(r.priority, n, i, r.mime, f"{module}:{r.function}")
                    for i, r in enumerate(fmt.readers)]
    by_mime: dict[str, list[str]] = {}
    for *_, mime, spec in sorted(readers):
        by_mime.setdefault(mime, []).append(spec)
    lines = ['"""The built-in formats, as detection and dispatch need them before any format',
             "module is imported. Written by `python scripts/format_index.py` from each",
             "module's FORMAT; tests/test_formats.py checks it. Do not edit.",
             '"""',
             "# ruff: noqa: E501", "",
             "# format name (and former names) -> module",
             "MODULES = {", *(f"    {k!r}: {v!r}," for k, v in modules.items()), "}", "",
             "# (mime, magic, offset, within, also, min_size), in the order they are tried",
             "SIGNATURES = (",
             *(f"    ({s.mime!r}, {s.magic!r}, {s.offset}, {s.within}, {s.also!r}, "
               f"{s.min_size})," for *_, s in sorted(signatures, key=lambda t: t[:3])),
             ")", "",
             "# extension -> MIME type",
             "HINTS = {", *(f"    {k!r}: {v!r}," for k, v in sorted(hints.items())), "}", "",
             "# MIME type -> readers, in the order they are tried",
             "READERS = {", *(f"    {k!r}: {tuple(v)!r}," for k, v in by_mime.items()), "}", "",
             "# MIME type -> why it is not read",
             "UNSUPPORTED = {", *(f"    {k!r}: {v!r}," for k, v in unsupported.items()), "}",
             ""]
    return "\n".join(lines)


def index_path() -> Path:
    return Path(__file__).with_name("_index.py")
