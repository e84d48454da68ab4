"""textsieve: clean, searchable text from any pile of documents.

>>> import textsieve
>>> doc = textsieve.extract("report.pdf")
>>> doc.status, doc.text[:80]
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from typing import IO, Any

from .model import Document, ErrorInfo, ErrorKind, ExtractionError, Metadata, Page, Status
from .options import Options, OptionsError

__version__ = "0.1.0"

__all__ = [
    "Document",
    "ErrorInfo",
    "ErrorKind",
    "ExtractionError",
    "Metadata",
    "Options",
    "OptionsError",
    "Page",
    "Status",
    "__version__",
    "detect",
    "extract",
    "handler",
    "preload",
]

Input = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes]


_DEFAULTS = Options()


def _options(base: Options, changes: dict[str, Any]) -> Options:
    """``base`` with keyword changes; made once per distinct set (a call per file with the
    same ``ocr=...`` would otherwise build and check a new Options every time)."""
    if not changes:
        return base
    try:
        return _derived(base, tuple(sorted(changes.items())))
    except TypeError:  # an unhashable value (a list of hosts): made every time
        return base.with_(**changes)


@functools.lru_cache(maxsize=64)
def _derived(base: Options, changes: tuple[tuple[str, Any], ...]) -> Options:
    return base.with_(**dict(changes))


def extract(source: Input, *, name: str | None = None, options: Options | None = None,
            isolate: bool = False, **option_values: Any) -> Document:
    """Extract text, structure and metadata from a path, bytes or a binary file object.

    Keyword options are the fields of :class:`Options` (``password=``, ``timeout=``, ...).
    With ``isolate=True`` the work runs in a separate process under the timeout and memory
    limit, so a hang or a native crash in a parser becomes an error record instead of
    taking the caller down. Bad input never raises: look at ``Document.status``.
    """
    from . import core

    opts = _options(options or _DEFAULTS, option_values)
    if hasattr(source, "read"):
        # Read here, capped, before anything else: a file object cannot be handed to a
        # worker process, and an endless stream must end in too_large, not in the OOM killer.
        from .bytesource import read_capped

        name = name or core.stream_name(source)
        try:
            source = read_capped(source, opts.max_file_size)  # type: ignore[arg-type]
        except ExtractionError as exc:
            return Document.failed(exc.kind, exc.message, name=name)
    if isolate:
        # The executor ``opts.executor`` names: worker processes here, or a Ray cluster.
        return core.extract(source, name, options=opts, isolation=core.Isolation.of(opts))
    return core.extract(source, name, options=opts)


def preload(mime_types: Iterable[str] | None = None) -> None:
    """Load the parsers for ``mime_types`` (every format when None) now, not on the first
    file of each format: for a long-lived process (a service, a batch job) that wants
    steady per-file times. ``import textsieve`` itself stays light (~50 ms)."""
    from . import core  # noqa: F401  every extraction goes through it
    from .extractors import preload as _preload

    _preload(mime_types)


def detect(source: Input, *, name: str | None = None) -> str:
    """The MIME type of an input, decided by its content (the name is only a hint)."""
    from .core import open_input
    from .detection import detect as _detect

    with open_input(source, name, Options()) as src:
        return _detect(src).mime


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """A serverless function's entry point (AWS Lambda's ``handler(event, context)``): the
    same "extract this URI to that URI" event as ``POST /v1/jobs`` (see
    ``textsieve.events``), extracted in an isolated process. s3:// endpoint and credentials
    come from the usual AWS environment variables; file:// URIs are refused."""
    from .events import handle, local_runner

    return handle(event, _DEFAULTS, local_runner)
