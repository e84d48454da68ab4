"""WARC files as a source: the responses a crawler already received, archived without
fetching (``textsieve run site.warc.gz``, or a folder holding WARC files).

WARC files written by other tools (wget ``--warc-file``, ArchiveBox, Browsertrix, pywb)
are read with warcio. Each ``response`` record (and each ``resource`` record: a file as
archived, no HTTP) becomes an Item keyed by its target URI, carrying the payload and the
server's answer (``Item.response``: status, Content-Type, Date, validators, the record's
WARC-Date as the capture date); a crawler's own records (``metadata://`` logs, ``dns:``)
are skipped. The archive keeps each (URI, date) as a capture of that
URI's item, the newest as the one searched. Redirects, revisits, requests and metadata
records are skipped; a 4xx/5xx answer is a typed failure record (which, like a failed
fetch, never replaces a good capture). A payload past ``max_body`` is ``too_large``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from ..links import strip_userinfo, url_key
from ..model import Item
from ..model.items import Response

logger = logging.getLogger(__name__)

WARC_SUFFIXES = (".warc", ".warc.gz")
_WARC_MAGIC = b"WARC/"


def is_warc(path: str) -> bool:
    """A WARC file (plain, or gzip-compressed per record) by its name and first bytes."""
    if not path.lower().endswith(WARC_SUFFIXES) or not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(5)
    except OSError:
        return False
    if head.startswith(b"\x1f\x8b"):
        import gzip

        try:
            with gzip.open(path, "rb") as g:
                return g.read(5) == _WARC_MAGIC
        except (OSError, EOFError):
            return False
    return head == _WARC_MAGIC


def _epoch(warc_date: str | None) -> float | None:
    if not warc_date:
        return None
    try:
        return datetime.fromisoformat(warc_date.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def records(path: str, spec: str, max_body: int) -> Iterator[Item]:
    """The response and resource records of one WARC file, as Items."""
    from warcio.archiveiterator import ArchiveIterator

    name = os.path.basename(path)
    with open(path, "rb") as f:
        try:
            for rec in ArchiveIterator(f):
                item = _item(rec, name, spec, max_body)
                if item is not None:
                    yield item
        except Exception as exc:  # warcio raises bare exceptions on a damaged file
            logger.warning("%s: the rest of the WARC file cannot be read: %s", path, exc)


def _item(rec: Any, warc_name: str, spec: str, max_body: int) -> Item | None:
    if rec.rec_type not in ("response", "resource"):
        return None
    uri = rec.rec_headers.get_header("WARC-Target-URI")
    if not uri:
        return None
    uri = strip_userinfo(uri.strip("<>"))
    if uri.lower().startswith(("metadata:", "dns:", "urn:")):
        return None  # a crawler's own log, arguments or DNS answers: nothing that was read
    status: int | None = None
    ctype = rec.rec_headers.get_header("Content-Type")
    date = etag = modified = None
    if rec.rec_type == "response":
        http = rec.http_headers
        if http is None:  # a response record of another protocol (dns:...)
            return None
        try:
            status = int(http.get_statuscode())
        except (TypeError, ValueError):
            return None
        if status < 200 or 300 <= status < 400 or status == 204:
            return None  # interim answers, redirects (the target has its own record)
        ctype = http.get_header("Content-Type")
        date = http.get_header("Date")
        etag = http.get_header("ETag")
        modified = http.get_header("Last-Modified")
    data = rec.content_stream().read(max_body + 1)
    captured = _epoch(rec.rec_headers.get_header("WARC-Date"))
    record_id = rec.rec_headers.get_header("WARC-Record-ID") or ""
    from .urls import url_name

    key = url_key(uri) if uri.lower().startswith(("http://", "https://")) else uri
    return Item(key=key, original=uri, source=spec, data=data, name=url_name(uri),
                size=len(data), response=Response(
                    url=uri, status=status, content_type=ctype, date=date, etag=etag,
                    last_modified=modified, captured_at=captured,
                    via=f"{warc_name}#{record_id}"))


class WarcExpander:
    """A file source whose WARC files yield their records instead of themselves: a WARC
    given alone, or WARC files found in a folder beside other documents."""

    def __init__(self, inner: Any, max_body: int) -> None:
        self.inner, self.max_body = inner, max_body
        self.spec: str = inner.spec

    def __getattr__(self, name: str) -> Any:
        """Everything else is the file source's (its root, its count ahead, ...)."""
        if name == "inner":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def items(self) -> Iterator[Item]:
        for item in self.inner.items():
            if item.path is not None and is_warc(item.path):
                yield from records(item.path, self.spec, self.max_body)
            else:
                yield item
