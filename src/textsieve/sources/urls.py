"""Web sources: one URL, a file of URLs (one per line), or a CSV with a ``url`` column.

Every URL is keyed by its normal form (``links.normalize_url``), so the same page named
with different tracking parameters or letter case is one item. A URL that cannot be parsed
(``http://host:99999/``) still becomes an item, keyed by what was given: the fetcher
refuses it with a typed ``bad_url`` record, so one bad line never stops a run. Credentials
in a URL (``user:secret@``) are dropped from the key, the original and the URL fetched.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..links import strip_userinfo, url_key
from ..model import Item
from ..textcodec import decode
from .base import SourceError

URL_RE = re.compile(r"^https?://[^\s<>\"]+$", re.I)


def is_url(spec: str) -> bool:
    return bool(URL_RE.match(spec.strip()))


def url_name(url: str) -> str:
    """A file-like name for display and as a (weak) type hint: the last path segment."""
    try:
        tail = urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]
    except ValueError:  # a malformed URL: it will become a bad_url record
        return "index.html"
    return unquote(tail) if tail and "." in tail else "index.html"


def url_item(url: str, source: str) -> Item:
    """The item for one URL; never raises, whatever the URL (see the module doc)."""
    clean = strip_userinfo(url)
    return Item(key=url_key(clean), original=clean, source=source, url=clean,
                name=url_name(clean))


class UrlSource:
    """A single URL given on the command line."""

    def __init__(self, url: str) -> None:
        self.url = strip_userinfo(url)
        self.spec = f"url:{url_key(self.url)}"

    def items(self) -> Iterator[Item]:
        yield url_item(self.url, self.spec)


class UrlListSource:
    """URLs from a text file (one per line; blank lines and # comments skipped) or from a
    CSV/TSV file with a column named ``url`` (any case)."""

    def __init__(self, path: str) -> None:
        if not os.path.isfile(path):
            raise SourceError(f"{path}: no such URL list")
        self.path = os.path.abspath(path)
        self.spec = f"urls:{self.path}"

    def items(self) -> Iterator[Item]:
        seen: set[str] = set()
        for url in read_url_list(Path(self.path).read_bytes()):
            item = url_item(url, self.spec)
            if item.key not in seen:  # a list naming a page twice still yields it once
                seen.add(item.key)
                yield item


def read_url_list(data: bytes) -> Iterator[str]:
    text = decode(data)[0]
    first = text.lstrip().split("\n", 1)[0]
    if not is_url(first.strip()) and re.search(r"(^|[,;\t])\s*\"?url\"?\s*([,;\t]|$)", first,
                                                re.I):
        dialect = csv.Sniffer().sniff(first, delimiters=",;\t") if any(
            d in first for d in ",;\t") else csv.excel
        rows = csv.DictReader(io.StringIO(text), dialect=dialect)
        col = next((f for f in rows.fieldnames or [] if f and f.strip().lower() == "url"), None)
        for row in rows:
            value = (row.get(col) or "").strip() if col else ""
            if is_url(value):
                yield value
        return
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and is_url(line):
            yield line


def looks_like_url_list(path: str) -> bool:
    """A small text file whose every meaningful line is a URL, or a CSV with a url column:
    what a person means by ``textsieve run links.txt``."""
    try:
        if os.path.getsize(path) > 50 * 1024 * 1024:
            return False
        with open(path, "rb") as f:
            head = f.read(65536)
    except OSError:
        return False
    if b"\x00" in head:
        return False
    text = decode(head)[0]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not
             ln.strip().startswith("#")]
    if not lines:
        return False
    if re.search(r"(^|[,;\t])\s*\"?url\"?\s*([,;\t]|$)", lines[0], re.I):
        return True
    complete = lines if len(head) < 65536 else lines[:-1]  # the last may be cut
    return bool(complete) and all(is_url(ln) for ln in complete)
