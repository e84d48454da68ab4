"""What comes out of an extraction: a Document, its pages and metadata, typed errors.

Errors are data: a file that fails yields a ``Document`` with ``status="error"`` and a
typed ``ErrorKind``, never an exception that ends a run. Extractors signal failure by
raising ``ExtractionError``; the core turns it into the record.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """Outcome of one extraction."""

    OK = "ok"
    EMPTY = "empty"  # the file was read fine and holds no text (a blank page, an empty CSV)
    ERROR = "error"
    # Archived with what its list says (a bookmark's title, note, labels, date), not
    # fetched yet (``run --fetch never``); the next run that may fetch fetches it.
    LISTED = "listed"


class ErrorKind(StrEnum):
    """Why an extraction failed; stable strings, stored in archives and printed in JSON."""

    ENCRYPTED = "encrypted"  # needs a password we were not given (or the wrong one)
    CORRUPT = "corrupt"  # damaged, truncated, or not what it claims to be
    UNSUPPORTED = "unsupported"  # a real format we do not read (WordPerfect, RAR, ...)
    TIMEOUT = "timeout"  # exceeded the per-file deadline
    TOO_LARGE = "too_large"  # size, memory, member count or compression-ratio limits
    NEEDS_OCR = "needs_ocr"  # only pixels: text needs OCR, which is not enabled/available
    CRASHED = "crashed"  # the worker died (a native crash); only this file is lost
    MISSING_TOOL = "missing_tool"  # a required external program is not installed
    NOT_FOUND = "not_found"  # the input path does not exist or cannot be read
    # Paths that lead nowhere (textsieve.bytesource.path_problem): found without reading.
    SYMLINK_LOOP = "symlink_loop"  # symbolic links that never reach a file
    DANGLING_LINK = "dangling_link"  # a symbolic link to something that does not exist
    PERMISSION = "permission"  # a file or folder this user may not read
    NOT_REGULAR = "not_regular"  # a named pipe, device or socket in a folder: never opened
    INTERNAL = "internal"  # a bug in textsieve: reported, never hidden
    # Fetching web resources (textsieve.fetch).
    HTTP_404 = "http_404"  # not found
    HTTP_410 = "http_410"  # gone for good
    HTTP_429 = "http_429"  # still rate-limited after the retries
    HTTP_4XX = "http_4xx"  # any other client error (401, 403, ...)
    HTTP_5XX = "http_5xx"  # server error, still failing after the retries
    DNS = "dns"  # the host name does not resolve
    TLS = "tls"  # TLS handshake or certificate failure
    CONNECTION = "connection"  # refused, reset, closed mid-response
    REDIRECT_LOOP = "redirect_loop"  # a redirect chain came back to a URL already seen
    TOO_MANY_REDIRECTS = "too_many_redirects"  # longer than Options.max_redirects
    BAD_URL = "bad_url"  # a URL that cannot be parsed (port 99999, broken IPv6 literal)
    BLOCKED_ADDRESS = "blocked_address"  # a loopback/private/metadata address (netpolicy)
    ROBOTS_DISALLOWED = "robots_disallowed"  # the site's robots.txt says no
    # Events (extract this URI to that URI: jobs, textsieve.handler).
    OUT_OF_RANGE = "out_of_range"  # a page number past the document's last page
    EXISTS = "exists"  # a file:// target is there already (and overwrite was not asked)


class ExtractionError(Exception):
    """Raised by extractors; becomes ``Document.error``. ``kind`` says what went wrong."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class ErrorInfo:
    kind: ErrorKind
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": str(self.kind), "message": self.message}


@dataclass
class Page:
    """The text of one page (PDF page, slide, sheet) in reading order, numbered from 1."""

    number: int
    text: str
    ocr: bool = False


@dataclass
class Metadata:
    """Descriptive facts about a document; ``None`` means unknown, never a guess."""

    author: str | None = None
    created: str | None = None  # ISO 8601 where the format allows it
    modified: str | None = None
    language: str | None = None
    page_count: int | None = None
    encoding: str | None = None  # the text encoding detected or declared
    subject: str | None = None
    keywords: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # format-specific (mail headers, ...)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in dataclasses.asdict(self).items() if v not in (None, {}, "")}
        return out


@dataclass
class Document:
    """Everything textsieve learned from one input: text, structure, metadata, children."""

    name: str | None = None  # file name, member name in an archive, attachment name
    mime_type: str = "application/octet-stream"
    text: str = ""
    markdown: str = ""
    title: str | None = None
    metadata: Metadata = field(default_factory=Metadata)
    pages: list[Page] = field(default_factory=list)
    children: list[Document] = field(default_factory=list)
    status: Status = Status.OK
    error: ErrorInfo | None = None
    size: int | None = None
    sha256: str | None = None
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    warnings: list[str] = field(default_factory=list)
    extractor: str | None = None  # "module/version" that produced it (archive re-runs)

    @property
    def ok(self) -> bool:
        return self.status is not Status.ERROR

    def walk(self) -> list[Document]:
        """This document and all its descendants, depth first."""
        out = [self]
        for c in self.children:
            out.extend(c.walk())
        return out

    def full_text(self, *, markdown: bool = False) -> str:
        """Own text followed by every child's, each child under a header with its name.

        What a person reading a ZIP or a mail with attachments wants to see in one piece.
        """
        parts = [self.markdown if markdown else self.text]
        for child in self.children:
            body = child.full_text(markdown=markdown)
            if not body.strip():
                continue
            label = child.name or child.mime_type
            header = f"## {label}" if markdown else f"=== {label} ==="
            parts.append(f"{header}\n\n{body}")
        return "\n\n".join(p for p in parts if p.strip())

    def to_dict(self, *, include_markdown: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "mime_type": self.mime_type,
            "status": str(self.status),
            "error": self.error.to_dict() if self.error else None,
            "title": self.title,
            "metadata": self.metadata.to_dict(),
            "text": self.text,
        }
        if include_markdown:
            d["markdown"] = self.markdown
        d["pages"] = [dataclasses.asdict(p) for p in self.pages]
        d["children"] = [c.to_dict(include_markdown=include_markdown) for c in self.children]
        d["size"] = self.size
        d["sha256"] = self.sha256
        d["timings"] = {k: round(v, 6) for k, v in self.timings.items()}
        if self.warnings:
            d["warnings"] = self.warnings
        if self.extractor:
            d["extractor"] = self.extractor
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Document:
        meta = Metadata(**d.get("metadata", {}))
        err = d.get("error")
        return cls(
            name=d.get("name"),
            mime_type=d.get("mime_type", "application/octet-stream"),
            text=d.get("text", ""),
            markdown=d.get("markdown", ""),
            title=d.get("title"),
            metadata=meta,
            pages=[Page(**p) for p in d.get("pages", [])],
            children=[cls.from_dict(c) for c in d.get("children", [])],
            status=Status(d.get("status", "ok")),
            error=ErrorInfo(ErrorKind(err["kind"]), err["message"]) if err else None,
            size=d.get("size"),
            sha256=d.get("sha256"),
            timings=d.get("timings", {}),
            warnings=d.get("warnings", []),
            extractor=d.get("extractor"),
        )

    @classmethod
    def failed(cls, kind: ErrorKind, message: str, *, name: str | None = None) -> Document:
        return cls(name=name, status=Status.ERROR, error=ErrorInfo(kind, message))
