"""What a service worker process does with one job (kept apart from ``workers`` so the
forkserver can preload it with the parsers, and nothing of the server is imported there)."""

from __future__ import annotations

from .. import _source
from ..core import extract_source
from ..detection import detect
from ..model import Document, ErrorKind, Status
from ..options import Options


def run_job(obj: bytes | str, name: str | None, options: Options, detect_only: bool) -> Document:
    """Extract (or only detect) one input; never raises for a bad input."""
    try:
        src = _source(obj, name, options)
        if detect_only:
            with src:
                return Document(name=name, mime_type=detect(src).mime, status=Status.EMPTY)
        return extract_source(src, options)
    except FileNotFoundError as exc:
        return Document.failed(ErrorKind.NOT_FOUND, str(exc), name=name)
    except Exception as exc:
        return Document.failed(ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}", name=name)
