"""The one freshness policy: does an archived item need extracting (or fetching) again?

Like a build system, the archive is the state: an item is extracted only when it is new,
its content changed (size or mtime moved and the content hash differs), it failed in a way
that may not repeat (timeout, crash, missing tool), or the extractor that made it (or
failed on it) has a newer version or other output options. Every step that asks the
question (listing files, fetching URLs conditionally, comparing fetched bytes) asks this
object, so the rule is written once.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum

from ..archive.store import Known
from ..bytesource import PATH_PROBLEMS
from ..extractors import is_current
from ..model import Document, Item, Status
from ..options import Options


class Mode(StrEnum):
    INCREMENTAL = "incremental"  # new, changed, failed, outdated
    FORCE = "force"  # everything again
    # only items that failed before: failed items, and good items whose last fetch failed
    # for a reason that passes (their text stands, their source was down)
    RETRY_ERRORS = "retry-errors"


class Why(StrEnum):
    NEW = "new"
    CHANGED = "changed"
    FAILED = "failed"
    OUTDATED = "outdated"
    FORCED = "forced"


# Failures that may not happen again on the same bytes with the same extractor: retried
# on every run. The others (encrypted, corrupt, unsupported, needs_ocr, ...) are retried
# when their extractor gets a new version, or on request (--retry-errors).
# A path that led nowhere (a link, a permission, a pipe in a folder) is looked at again
# on every run, for nothing: it is recorded again only when its problem changed.
TRANSIENT_ERRORS = frozenset({"timeout", "crashed", "internal", "not_found", "missing_tool",
                              "http_5xx", "http_429", "dns", "connection", *PATH_PROBLEMS})


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class Freshness:
    """The policy of one run: its mode and the options its outputs depend on."""

    def __init__(self, options: Options, mode: Mode = Mode.INCREMENTAL) -> None:
        self.options, self.mode = options, mode
        self._fingerprint = options.output_fingerprint()

    def made_now(self, tag: str | None) -> bool:
        """Made by the current extractor version with the same output options?"""
        base, _, fingerprint = (tag or "").partition("#")
        return fingerprint == self._fingerprint and is_current(base)

    def stamp(self, doc: Document) -> None:
        """Record with what, and with which output options, a top-level item was made."""
        doc.extractor = f"{doc.extractor or ''}#{self._fingerprint}"

    def _retry_failure(self, known: Known) -> bool:
        return known.status == Status.ERROR and (
            self.mode is Mode.RETRY_ERRORS or known.error_kind in TRANSIENT_ERRORS
            or (known.error_kind == "encrypted" and bool(self.options.password)))

    def decide(self, item: Item, known: Known | None) -> tuple[Why | None, str | None]:
        """Why a file or a mailed item needs extracting (None: it does not), and its hash
        if it was computed on the way."""
        if self.mode is Mode.FORCE:
            return Why.FORCED, None
        if known is None:
            return (None if self.mode is Mode.RETRY_ERRORS else Why.NEW), None
        if item.problem is not None and self.mode is Mode.INCREMENTAL and \
                known.status == Status.ERROR and known.error_kind == item.problem.kind:
            return None, None  # the same dead end as last time: reported then
        if self._retry_failure(known):
            return Why.FAILED, None
        if self.mode is Mode.RETRY_ERRORS:
            return None, None
        if not self.made_now(known.extractor_version):
            return Why.OUTDATED, None  # includes failures a newer extractor may overcome
        if item.data is not None:  # bytes from a mail (a newsletter's article): hash decides
            sha = hashlib.sha256(item.data).hexdigest()
            return (None if sha == known.sha256 else Why.CHANGED), sha
        if item.size == known.size and item.mtime_ns == known.mtime_ns:
            return None, None
        if item.path is None:
            return Why.CHANGED, None
        sha = _sha256(item.path)  # touched but maybe not changed: the content decides
        return (None if sha == known.sha256 else Why.CHANGED), sha

    def fetch_wanted(self, known: Known | None) -> bool:
        """A URL item is fetched at all? Not with --retry-errors unless it failed (or its
        good text stands while its last fetch failed for a reason that passes: a site that
        was down), nor for a failure that would repeat (a 404, a redirect loop) on a plain
        re-run, like a corrupt file: --retry-errors or a new extractor version retries
        that."""
        if self.mode is Mode.RETRY_ERRORS:
            return known is not None and (known.status == Status.ERROR
                                          or known.failing in TRANSIENT_ERRORS)
        settled = known is not None and self.mode is Mode.INCREMENTAL and \
            known.status == Status.ERROR and known.error_kind not in TRANSIENT_ERRORS and \
            self.made_now(known.extractor_version)
        return not settled

    def still_good(self, known: Known | None) -> bool:
        """The archived result stands as long as the bytes are the same: a fetch may ask
        the server with its validators, and the same bytes served again are not
        extracted again."""
        return known is not None and self.mode is Mode.INCREMENTAL and \
            known.status != Status.ERROR and self.made_now(known.extractor_version)

    def conditional(self, known: Known | None) -> bool:
        """A fetch may send the stored validators (and the same bytes need no extraction
        from the network's copy): the current capture stands, or can be made again from
        its kept original."""
        return known is not None and self.mode is Mode.INCREMENTAL and \
            known.status != Status.ERROR and (self.made_now(known.extractor_version)
                                              or known.original is not None)

    def redo_from_original(self, known: Known | None) -> bool:
        """The current capture must be extracted again (a newer extractor, other options,
        --force) and its original is kept: it is, from those bytes, whatever a fetch says."""
        return known is not None and known.original is not None and \
            known.status != Status.ERROR and (self.mode is Mode.FORCE
                                              or not self.made_now(known.extractor_version))

    def keeps(self, fetched: bool) -> bool:
        """Whether the original of an item is kept: fetched bytes (a page, a mail's
        article, a WARC record, an object) unless ``none``; files only with ``all``."""
        keep = self.options.keep_originals
        return keep == "all" or (fetched and keep == "fetched")

    def why_again(self, known: Known | None) -> Why:
        """Why a fetched URL item, with new bytes, is extracted."""
        if known is None:
            return Why.NEW
        if self.mode is Mode.FORCE:
            return Why.FORCED
        if known.status == Status.ERROR:
            return Why.FAILED
        return Why.CHANGED if self.made_now(known.extractor_version) else Why.OUTDATED
