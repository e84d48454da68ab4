"""Office files under Information Rights Management (IRM / Azure Information Protection).

They are not password-encrypted, so no ``--password`` opens them: the content is
encrypted for the users a rights server licenses. What any reader can see is the
placeholder Office writes next to it ("This document is protected with Information Rights
Management..."); returning that as the document's text would be an ``ok`` that lies, so
the verdict is ``encrypted`` with a message that says why.
"""

from __future__ import annotations

from ..model import Document, ErrorKind, ExtractionError
from ..render import Builder
from ..source import Source
from . import Context
from .legacy import ole_metadata

VERSION = 1


def extract(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """``encrypted``, with the file's (unprotected) summary metadata kept."""
    try:
        ole_metadata(src.ole(), doc)
    except Exception:  # metadata is a bonus; the verdict does not depend on it
        doc.warnings.append("summary properties could not be read")
    raise ExtractionError(ErrorKind.ENCRYPTED, "protected with Information Rights Management "
                          "(IRM): the content is encrypted for licensed users; the readable "
                          "text is only the application's placeholder")
