"""Extractors: one module per format family, and the context they run in.

Each format module declares what it reads in its ``FORMAT`` (``textsieve.formats``) and
reads it with functions ``extract(src, ctx, doc, out) -> None``: read ``src``, fill ``doc``
(title, metadata, children), describe the content to ``out`` (a ``Builder``), raise
``ExtractionError`` with a kind when it cannot. ``registry`` knows which module reads a
MIME type and imports it on first use, so ``textsieve --help`` does not load pypdfium2;
its names are re-exported here. What an extractor gets besides its input is ``Context``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..model import Document, ErrorKind, ExtractionError
from ..options import Options
from .registry import (
    CORE_VERSION,
    FALLBACK_KINDS,
    FETCH_TAG,
    LISTED_TAG,
    REGISTRY,
    REGISTRY_TAG,
    UNSUPPORTED,
    Extractor,
    extractors_for,
    is_current,
    preload,
    version_of,
)

if TYPE_CHECKING:
    import subprocess

    from ..render import Builder

__all__ = ["CORE_VERSION", "FALLBACK_KINDS", "FETCH_TAG", "LISTED_TAG", "REGISTRY", "REGISTRY_TAG",
           "UNSUPPORTED", "Budget", "Context", "Extractor", "extractors_for", "is_current",
           "preload", "version_of", "wants_pictures"]


def wants_pictures(ctx: Context, out: Builder) -> bool:
    """Whether a document's pictures are read: always with ``ocr="always"``; otherwise
    only when the document holds no text (a scan pasted into Word, photographed slides),
    which must not come out as an empty success."""
    return ctx.options.ocr == "always" or not out.has_text()


@dataclass
class Budget:
    """Shared by a top-level file and everything unpacked from it (bomb protection)."""

    unpacked: int = 0
    members: int = 0


@dataclass
class Context:
    """What an extractor may use besides its input: options, limits, nested extraction."""

    options: Options
    depth: int = 0
    budget: Budget = field(default_factory=Budget)
    ancestors: tuple[str, ...] = ()  # sha256 of the containers we are inside (loops)
    defer_ocr: bool = False  # the worker pool OCRs this document's pages in parallel
    # Processes a long paged document may use to read its pages (forked, see forking.py):
    # all cores for a document handed to the API, 1 for members and inside busy workers.
    page_workers: int = 1

    def child(self, data: bytes, name: str | None) -> Document:
        """Extract a member/attachment/embedded file as a child Document.

        Depth and the unpacked-size budget are shared with the whole tree, so a zip of zips
        (or a zip that contains itself) stops with a typed error instead of running away.
        """
        from ..bytesource import Source
        from ..core import extract_source

        if self.depth + 1 > self.options.max_depth:
            return Document.failed(ErrorKind.TOO_LARGE,
                                   f"nesting deeper than {self.options.max_depth} levels",
                                   name=name)
        return extract_source(Source.from_bytes(data, name=name), self.options,
                              ctx=Context(self.options, self.depth + 1, self.budget,
                                          self.ancestors))

    def account(self, nbytes: int, what: str = "archive") -> None:
        """Charge unpacked bytes to the budget; raises too_large when it is spent."""
        self.budget.unpacked += nbytes
        self.budget.members += 1
        if self.budget.unpacked > self.options.unpack_budget:
            raise ExtractionError(
                ErrorKind.TOO_LARGE,
                f"{what} unpacks to more than {self.options.unpack_budget} bytes in total",
            )

    def run_tool(self, args: Sequence[str], *, input: bytes | None = None,
                 timeout: float | None = None, env: dict[str, str] | None = None,
                 ) -> subprocess.CompletedProcess[bytes]:
        """Run an external program with a deadline; missing program -> missing_tool."""
        import shutil  # here: most formats run no program, and a command start pays
        import subprocess

        exe = shutil.which(args[0])
        if exe is None:
            raise ExtractionError(ErrorKind.MISSING_TOOL, f"{args[0]} is not installed")
        try:
            return subprocess.run([exe, *args[1:]], input=input, capture_output=True,
                                  timeout=timeout or self.options.tool_timeout, env=env,
                                  check=False)
        except subprocess.TimeoutExpired as exc:
            raise ExtractionError(ErrorKind.TIMEOUT,
                                  f"{args[0]} did not finish in {exc.timeout:.0f} s") from exc
