"""WordPerfect documents (4.2 to X9, plain or inside an OLE2 container) via libwpd.

libwpd is the reader LibreOffice uses for WordPerfect; Debian ships its ``wpd2text``
command (libwpd-tools), which prints the document's text with paragraphs on their own
lines. Its error lines are stable strings, so a password-protected file becomes
``encrypted`` and anything else it refuses becomes ``corrupt``, never a stack trace.
"""

from __future__ import annotations

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader, Signature
from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder
from . import Context
from .legacy import run_text_tool, tool_path

FORMAT = Format(
    name="wordperfect", version=1,
    readers=(Reader(d.WORDPERFECT),),
    signatures=(Signature(d.WORDPERFECT, b"\xffWPC"),),
    hints={"wpd": d.WORDPERFECT, "wp": d.WORDPERFECT, "wp5": d.WORDPERFECT,
           "wp6": d.WORDPERFECT},
)

_TOOL = "wpd2text"


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """The text of a WordPerfect document; ``--password`` opens a protected one."""
    args = [_TOOL]
    if ctx.options.password:
        args += ["--password", ctx.options.password]
    with tool_path(src) as path:
        try:
            proc = run_text_tool(ctx, [*args, path], src.size)
        except ExtractionError as exc:
            if exc.kind is ErrorKind.MISSING_TOOL:
                raise ExtractionError(ErrorKind.MISSING_TOOL, "WordPerfect documents need "
                                      f"{_TOOL} (Debian package libwpd-tools)") from exc
            raise
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0:
        why = next((ln.removeprefix("ERROR: ").strip() for ln in err.splitlines()
                    if ln.startswith("ERROR:")), f"exit status {proc.returncode}")
        if "password" in why.lower():
            raise ExtractionError(ErrorKind.ENCRYPTED, f"WordPerfect document: {why}")
        raise ExtractionError(ErrorKind.CORRUPT, f"WordPerfect document could not be read: "
                              f"{why}")
    # One line per paragraph (wpd2text ends each with a newline; soft breaks are spaces).
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        out.paragraph(line)
