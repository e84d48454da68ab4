"""Bookmarks and read-later exports as a source: ``textsieve run bookmarks:FILE``.

One link is one item, keyed like every URL (``links.url_key``), carrying what the export
says about it (``Item.listing``: title, note, date saved) and its labels (``Item.labels``:
folders and tags). The kind of export is told from the content, never the name alone:

- the Netscape bookmark file (``<!DOCTYPE NETSCAPE-Bookmark-file-1>``) that Firefox,
  Chrome, Edge, Safari, Internet Explorer, Pinboard, Delicious, Raindrop, Shaarli and Pocket
  (its old ``ril_export.html``) write: ``<H3>`` folders and ``TAGS`` become labels,
  ``ADD_DATE`` (or Pocket's ``TIME_ADDED``) the date, ``<DD>`` the note;
- a Firefox profile's ``places.sqlite`` (folders and tags) and Chrome's ``Bookmarks`` JSON
  (folders), each read from a private copy so the browser's own file is never locked;
- Pocket's CSV (``title,url,time_added,tags,status``, tags split by ``|``), Instapaper's
  CSV (``URL,Title,Selection,Folder,Timestamp[,Tags]``), Omnivore's export (a ZIP or JSON
  of ``metadata_*.json``: ``url, title, description, labels, savedAt``) and Pinboard's
  JSON (``href, description, extended, tags, time``); a ZIP holding Pocket's
  ``part_*.csv`` too.

``place:`` and ``javascript:`` entries are skipped (they are views and scripts, not
pages); links of other schemes (``ftp:``, ``file:``, ``chrome:``) are archived as listed
(title, labels, date) with a warning, and never fetched. A link named twice (two
folders) is one item with the labels of both, its earliest date and first title. Damage
is data: a file that cannot be read at all is one typed record (``corrupt``,
``unsupported``, ``too_large``) and the run goes on; a bad date or undecodable bytes in
one entry keep the link and put a warning on its record.
Parsing is streaming and iterative (no recursion: a folder nested 100,000 deep is only a
long list), within ``Options.max_file_size``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
import math
import os
import re
import shutil
import sqlite3
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser

from ..filekeys import file_key
from ..links import strip_userinfo, url_key
from ..model import ErrorInfo, ErrorKind, Item
from ..model.items import Listing
from ..options import Options
from .base import SourceError
from .urls import url_name

logger = logging.getLogger(__name__)

PREFIX = "bookmarks:"
MAX_LABELS = 64  # folders + tags kept per link (the outermost folders first)
MAX_DEPTH = 256  # folder levels followed; deeper ones add a warning, not labels
MAX_LABEL_CHARS = 200
MAX_TITLE_CHARS = 2000
MAX_NOTE_CHARS = 100_000
SKIPPED_SCHEMES = ("place:", "javascript:")
# Browser folders that hold bookmarks without saying anything about them: not labels.
_CONTAINER_ATTRS = ("personal_toolbar_folder", "unfiled_bookmarks_folder")
_FIREFOX_ROOTS = {"root________", "menu________", "toolbar_____", "unfiled_____",
                  "mobile______", "tags________"}
_CHROME_EPOCH = 11_644_473_600  # seconds from 1601-01-01 (WebKit time) to 1970-01-01
_LATEST = 4_102_444_800  # 2100-01-01: a later "date" is a mistake, not a date
# A URL scheme (RFC 3986). Text before a ":" is not one when it holds "/", "?" or "=":
# Shaarli exports its notes as relative links ("?lY47tw"), whose query may hold a ":".
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}:")


class ExportError(Exception):
    """An export that cannot be read at all: its typed record, the run goes on."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


@dataclass
class Mark:
    """One link as an export lists it, before links named twice are merged."""

    url: str
    title: str | None = None
    note: str | None = None
    date: float | None = None  # epoch seconds
    labels: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class BookmarkSource:
    """The links of one bookmark or read-later export (see the module docstring)."""

    def __init__(self, path: str, options: Options | None = None) -> None:
        if not path:
            raise SourceError("bookmarks: needs a file (bookmarks:bookmarks.html)")
        path = os.path.expanduser(path)
        if not os.path.isfile(path):
            raise SourceError(f"{path}: no such bookmark file")
        self.path = os.path.abspath(path)
        self.spec = f"{PREFIX}{self.path}"
        self.max_size = (options or Options()).max_file_size

    def items(self) -> Iterator[Item]:
        try:
            marks = list(read_export(self.path, self.max_size))
        except ExportError as exc:
            yield Item(key=file_key(self.path), original=self.path, source=self.spec,
                       name=os.path.basename(self.path),
                       problem=ErrorInfo(exc.kind, exc.message))
            return
        yield from merge(marks, self.spec)


def merge(marks: Iterable[Mark], spec: str) -> Iterator[Item]:
    """One item per distinct link, in the export's order: labels of every mention, the
    earliest date, the first title, the notes each once."""
    by_key: dict[str, tuple[str, Mark]] = {}
    odd: list[Item] = []
    for m in marks:
        url = strip_userinfo(m.url.strip())
        low = url[:12].lower()
        if low.startswith(SKIPPED_SCHEMES):
            continue
        if not low.startswith(("http://", "https://")):
            scheme = _SCHEME.match(url)
            warn = (f"a {scheme.group(0)} link: kept as listed, never fetched (http and https "
                    "are)" if scheme else "a link without a scheme (relative to the site that "
                    "exported it): kept as listed, never fetched")
            odd.append(Item(key=url, original=url, source=spec, name=m.title or url,
                            labels=_labels(m.labels), listing=Listing(
                                m.title, m.note, _iso(m.date), (*m.warnings, warn))))
            continue
        key = url_key(url)
        got = by_key.get(key)
        if got is None:
            by_key[key] = (url, m)
            continue
        first = got[1]
        first.title = first.title or m.title
        if m.note and m.note != first.note:
            first.note = f"{first.note}\n\n{m.note}" if first.note else m.note
        if m.date is not None and (first.date is None or m.date < first.date):
            first.date = m.date
        first.labels.extend(m.labels)
        first.warnings.extend(m.warnings)
    for key, (url, m) in by_key.items():
        note = m.note[:MAX_NOTE_CHARS] if m.note else None
        listing = Listing(m.title, note, _iso(m.date), tuple(dict.fromkeys(m.warnings)))
        yield Item(key=key, original=url, source=spec, url=url, name=url_name(url),
                   labels=_labels(m.labels), listing=listing)
    yield from odd


def _labels(names: list[str]) -> tuple[str, ...]:
    out = dict.fromkeys(n for n in (" ".join(x.split())[:MAX_LABEL_CHARS] for x in names) if n)
    return tuple(out)[:MAX_LABELS]


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def parse_date(value: object) -> tuple[float | None, str | None]:
    """An export's date as epoch seconds, and a warning when it is there but not a date.
    Numbers are seconds, milliseconds or microseconds by their size (exporters differ);
    0 and empty mean "no date"; text is ISO 8601."""
    if value is None or value == "" or value == 0 or value == "0":
        return None, None
    try:
        if isinstance(value, int | float) or re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", str(value)):
            n = float(value)  # type: ignore[arg-type]
            for scale in (1, 1e3, 1e6, 1e9):
                if abs(n) / scale < _LATEST:
                    n /= scale
                    break
            if not math.isfinite(n) or n <= 0 or n >= _LATEST:
                raise ValueError
            return n, None
        text = str(value).strip()
        dt = datetime.fromisoformat(text.replace("Z", "+00:00").replace(" UTC", "+00:00"))
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        n = dt.timestamp()
        if not 0 < n < _LATEST:
            raise ValueError
        return n, None
    except (ValueError, OverflowError, OSError):
        return None, f"date {str(value)[:40]!r} is not a date"


# -- telling the kind of export -----------------------------------------------------------

def sniff(head: bytes) -> str:
    """The kind of export, from its first bytes (and, for ZIPs, their members later)."""
    if head.startswith(b"SQLite format 3\x00"):
        return "sqlite"
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text[:1] in (b"{", b"["):
        return "json"
    if b"netscape-bookmark-file" in text or (text.startswith(b"<") and (
            b"<dt>" in text or b"<a " in text or b"<dl" in text or b"<ul" in text)):
        return "html"
    if b"\x00" in head[:4096]:
        return "binary"
    return "csv"


def read_export(path: str, max_size: int) -> Iterator[Mark]:
    """Every link an export file lists (see the module docstring for the kinds)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        raise ExportError(ErrorKind.NOT_FOUND, f"cannot read the file: {exc.strerror}") from exc
    if size > max_size:
        raise ExportError(ErrorKind.TOO_LARGE, f"{size} bytes, above --max-file-size")
    kind = sniff(head)
    if kind == "sqlite":
        yield from read_places(path)
        return
    if kind == "binary":
        raise ExportError(ErrorKind.UNSUPPORTED, "not a bookmark or read-later export")
    if kind == "zip":
        yield from _read_zip(path, max_size)
        return
    with open(path, "rb") as f:
        data = f.read()
    yield from read_bytes(data, kind, os.path.basename(path))


def read_bytes(data: bytes, kind: str, name: str) -> Iterator[Mark]:
    if kind == "json":
        yield from read_json(data)
    elif kind == "html":
        yield from read_html(data)
    else:
        yield from read_csv(data, name)


def _read_zip(path: str, max_size: int) -> Iterator[Mark]:
    """Omnivore's export (``metadata_*.json``) or Pocket's (``part_*.csv``), capped."""
    try:
        with zipfile.ZipFile(path) as z:
            members = [i for i in z.infolist() if not i.is_dir() and
                       i.filename.lower().endswith((".json", ".csv", ".html", ".htm"))
                       and "/content/" not in f"/{i.filename}"]
            if not members:
                raise ExportError(ErrorKind.UNSUPPORTED,
                                  "a ZIP without a bookmark list (metadata_*.json, *.csv)")
            budget = max_size
            for info in members:
                if info.file_size > budget:
                    raise ExportError(ErrorKind.TOO_LARGE, f"{info.filename}: too large")
                budget -= info.file_size
                with z.open(info) as f:
                    data = f.read(info.file_size + 1)
                low = info.filename.lower()
                kind = "json" if low.endswith(".json") else "csv" if low.endswith(".csv") \
                    else "html"
                try:
                    yield from read_bytes(data, kind, info.filename)
                except ExportError as exc:
                    if low.endswith(".json") and "metadata" not in low:
                        continue  # Omnivore's highlights and the like: not a list of links
                    raise ExportError(exc.kind, f"{info.filename}: {exc.message}") from exc
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ExportError(ErrorKind.CORRUPT, f"a damaged ZIP: {exc}") from exc


# -- Netscape bookmark file (and Pocket's HTML export) ------------------------------------

def _decode(data: bytes) -> tuple[str, bool]:
    """The text of an HTML or CSV export, and whether bytes had to be replaced: the
    BOM, then the declared charset, then UTF-8, then the legacy code page it looks like."""
    from ..textcodec import bom_encoding, decode, normalize_charset

    enc = bom_encoding(data)
    if enc is None:
        m = re.search(rb"charset\s*=\s*[\"']?([\w.:-]+)", data[:4096], re.I)
        enc = normalize_charset(m.group(1).decode("ascii")) if m else None
    if enc is not None:
        try:
            return data.decode(enc), False
        except UnicodeDecodeError:
            if enc.replace("-", "").lower().startswith("utf8"):
                return data.decode(enc, "replace"), True  # UTF-8 with a few bad bytes
        except LookupError:
            pass
    return decode(data)[0], False


class _NetscapeParser(HTMLParser):
    """The bookmark file as a stream of tags: a stack of folder names (``<DL>`` opens the
    folder named by the ``<H3>`` before it, ``</DL>`` closes it), each ``<A>`` a link,
    the ``<DD>`` after it its note. Unclosed tags (the format closes none of ``<DT>``,
    ``<DD>``, ``<p>``) are what this expects; nothing recurses."""

    def __init__(self, replaced: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.replaced = replaced
        self.out: list[Mark] = []
        self.folders: list[str | None] = []  # None: a container that is not a label
        self.pending: str | None = None  # the last <H3>, until its <DL>
        self.pending_container = False
        self.text: list[str] | None = None  # collecting <A>, <H3> or <DD> text
        self.into: str | None = None
        self.mark: Mark | None = None  # the <A> being read, or the last one (its <DD>)
        self.deep = 0  # folders past MAX_LABELS levels

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("a", "h3", "dd", "dt", "dl", "h1") or tag == "li":
            self._end_text()
        if tag == "a":
            a = {k.lower(): v or "" for k, v in attrs}
            href = a.get("href", "").strip()
            if not href:
                self.mark = None
                return
            m = Mark(href)
            date, warn = parse_date(a.get("add_date") or a.get("time_added") or None)
            m.date = date
            if warn:
                m.warnings.append(warn)
            m.labels = [f for f in self.folders if f]
            if self.deep:
                m.warnings.append(f"{self.deep} folder levels past {MAX_DEPTH} left out")
            tags = a.get("tags", "")
            if tags:
                m.labels.extend(t for t in _split_tags(tags) if t.lower() != "toread")
            self.mark = m
            self.out.append(m)
            self._start_text("a")
        elif tag == "h3":
            a = {k.lower(): (v or "") for k, v in attrs}
            self.pending_container = any(a.get(k, "").lower() == "true"
                                         for k in _CONTAINER_ATTRS)
            self._start_text("h3")
        elif tag == "dd":
            if self.mark is not None:
                self._start_text("dd")
        elif tag == "dl":
            name = None if self.pending_container else self.pending
            if len(self.folders) >= MAX_DEPTH:
                self.deep += 1
            else:
                self.folders.append(name)
            self.pending, self.pending_container = None, False
        elif tag == "dt":
            self.mark = None if self.into != "a" else self.mark

    def handle_endtag(self, tag: str) -> None:
        if tag in ("a", "h3", "dl", "h1", "ul", "li"):
            self._end_text()
        if tag == "dl":
            if self.deep:
                self.deep -= 1
            elif self.folders:
                self.folders.pop()
            self.mark = None

    def handle_data(self, data: str) -> None:
        if self.text is not None:
            self.text.append(data)

    def _start_text(self, into: str) -> None:
        self.text, self.into = [], into

    def _end_text(self) -> None:
        if self.text is None:
            return
        text = " ".join("".join(self.text).split()) if self.into != "dd" else \
            "\n".join(ln.strip() for ln in "".join(self.text).strip().splitlines())
        into, self.text, self.into = self.into, None, None
        if into == "h3":
            self.pending = text[:MAX_LABEL_CHARS] or None
        elif into == "a" and self.mark is not None:
            self.mark.title = text[:MAX_TITLE_CHARS] or None
            if self.replaced and "\ufffd" in text:
                self.mark.warnings.append("title: bytes that are not valid UTF-8 replaced")
        elif into == "dd" and self.mark is not None and text:
            self.mark.note = text[:MAX_NOTE_CHARS]
            self.mark = None


def read_html(data: bytes) -> Iterator[Mark]:
    text, replaced = _decode(data)
    p = _NetscapeParser(replaced)
    step = 1 << 20
    for i in range(0, len(text), step):  # fed in pieces: links come out as they are read
        p.feed(text[i:i + step])
        yield from p.out
        p.out.clear()
    p.close()
    p._end_text()
    yield from p.out


def _split_tags(value: str) -> list[str]:
    """Tags as exports write them: a JSON list (Instapaper), ``a|b`` (Pocket's CSV) or
    ``a,b`` (Netscape ``TAGS``); a tag may hold spaces ("wading birds")."""
    value = value.strip()
    if value.startswith("["):
        with contextlib.suppress(ValueError):
            got = json.loads(value)
            if isinstance(got, list):
                return [str(t) for t in got if t]
    sep = "|" if "|" in value else ","
    return [t.strip() for t in value.split(sep) if t.strip()]


# -- CSV: Pocket, Instapaper, and any list with a url column ------------------------------

# The header rows of the read-later exports a bare CSV is recognised by (``textsieve run
# pocket.csv``, without ``bookmarks:``): read as exports, not as plain URL lists.
_READ_LATER_HEADERS = ({"title", "url", "time_added", "tags"},  # Pocket
                       {"url", "title", "selection", "folder", "timestamp"})  # Instapaper


def is_read_later_csv(path: str) -> bool:
    """A CSV file whose header is Pocket's or Instapaper's export header."""
    try:
        with open(path, "rb") as f:
            first = f.readline(4096).decode("utf-8-sig", "replace")
    except OSError:
        return False
    names = {c.strip().strip('"').lower() for c in first.split(",")}
    return any(h <= names for h in _READ_LATER_HEADERS)

_CSV_COLUMNS = {
    "url": ("url", "href", "link"),
    "title": ("title", "name", "description"),
    "note": ("selection", "note", "excerpt", "extended", "notes"),
    "folder": ("folder",),
    "tags": ("tags", "labels"),
    "date": ("time_added", "timestamp", "created", "saved", "savedat", "date", "time",
             "added"),
}


def read_csv(data: bytes, name: str) -> Iterator[Mark]:
    """Pocket's ``title,url,time_added,tags,status``, Instapaper's
    ``URL,Title,Selection,Folder,Timestamp[,Tags]``, and other CSVs with a url column."""
    text, replaced = _decode(data)
    csv.field_size_limit(max(MAX_NOTE_CHARS * 4, 1 << 20))
    try:
        rows = csv.reader(io.StringIO(text, newline=""))
        header = next(rows, None)
        if header is None:
            raise ExportError(ErrorKind.CORRUPT, "an empty CSV file")
        names = [h.strip().lower().replace(" ", "_") for h in header]
        col = {what: next((names.index(c) for c in cands if c in names), None)
               for what, cands in _CSV_COLUMNS.items()}
        if col["url"] is None:
            raise ExportError(ErrorKind.UNSUPPORTED,
                              f"{name}: a CSV without a URL column (columns: "
                              f"{', '.join(header[:8])})")
        for row in rows:
            def cell(what: str, row: list[str] = row) -> str:
                i = col[what]
                return row[i].strip() if i is not None and i < len(row) else ""

            url = cell("url")
            if not url:
                continue
            m = Mark(url, title=cell("title")[:MAX_TITLE_CHARS] or None,
                     note=cell("note") or None)
            date, warn = parse_date(cell("date") or None)
            m.date = date
            if warn:
                m.warnings.append(warn)
            folder = cell("folder")
            if folder:
                m.labels.append(folder)
            m.labels.extend(_split_tags(cell("tags")))
            if replaced and "\ufffd" in "".join(row):
                m.warnings.append("bytes that are not valid UTF-8 replaced")
            yield m
    except csv.Error as exc:
        raise ExportError(ErrorKind.CORRUPT, f"{name}: a damaged CSV: {exc}") from exc


# -- JSON: Chrome's Bookmarks, Pinboard, Omnivore -----------------------------------------

def read_json(data: bytes) -> Iterator[Mark]:
    try:
        doc = json.loads(_decode(data)[0])
    except RecursionError as exc:
        raise ExportError(ErrorKind.CORRUPT, "JSON nested too deep to be an export") from exc
    except ValueError as exc:
        raise ExportError(ErrorKind.CORRUPT, f"damaged JSON: {exc}") from exc
    if isinstance(doc, dict) and isinstance(doc.get("roots"), dict):
        yield from _chrome(doc["roots"])
        return
    if isinstance(doc, dict):  # some tools wrap the list: {"bookmarks": [...]}
        doc = next((v for v in doc.values() if isinstance(v, list)), None)
    if not isinstance(doc, list):
        raise ExportError(ErrorKind.UNSUPPORTED, "JSON that is not a list of links")
    for entry in doc:
        if not isinstance(entry, dict):
            continue
        if "href" in entry:  # Pinboard: description is the title, extended the note
            m = Mark(str(entry.get("href") or ""), _str(entry.get("description")),
                     _str(entry.get("extended")))
            tags = entry.get("tags") or ""
            m.labels = [t for t in (tags if isinstance(tags, list) else
                                    str(tags).split()) if str(t).lower() != "toread"]
            when = entry.get("time")
        elif "url" in entry:  # Omnivore (and lists like it)
            m = Mark(str(entry.get("url") or ""), _str(entry.get("title")),
                     _str(entry.get("description") or entry.get("excerpt")
                          or entry.get("note")))
            labels = entry.get("labels") or entry.get("tags") or []
            m.labels = [str(x.get("name") if isinstance(x, dict) else x) for x in
                        (labels if isinstance(labels, list) else _split_tags(str(labels)))]
            when = entry.get("savedAt") or entry.get("time_added") or entry.get("created")
        else:
            continue
        m.date, warn = parse_date(when)
        if warn:
            m.warnings.append(warn)
        if m.url:
            yield m


def _str(v: object) -> str | None:
    return str(v).strip()[:MAX_TITLE_CHARS] or None if v not in (None, "") else None


def _chrome(roots: dict[str, object]) -> Iterator[Mark]:
    """Chrome's (Edge's, Brave's) ``Bookmarks``: roots (bar, other, mobile) whose folders
    nest; dates in microseconds since 1601. Walked with a stack, not recursion."""
    stack: list[tuple[object, list[str]]] = [(r, []) for r in reversed(list(roots.values()))
                                             if isinstance(r, dict)]
    root_ids = {id(r) for r, _ in stack}
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        if node.get("type") == "url":
            m = Mark(str(node.get("url") or ""), _str(node.get("name")))
            m.labels = path[:MAX_LABELS]
            raw = node.get("date_added")
            with contextlib.suppress(ValueError, TypeError):
                raw = int(str(raw)) / 1e6 - _CHROME_EPOCH if raw not in (None, "", "0") \
                    else None
            m.date, warn = parse_date(raw)
            if warn:
                m.warnings.append(warn)
            if m.url:
                yield m
            continue
        children = node.get("children")
        if isinstance(children, list):
            name = str(node.get("name") or "").strip()
            sub = path if id(node) in root_ids or not name else [*path, name]
            stack.extend((c, sub) for c in reversed(children))


# -- Firefox places.sqlite ----------------------------------------------------------------

def read_places(path: str) -> Iterator[Mark]:
    """A Firefox profile's bookmarks (``moz_bookmarks``): folders and tags as labels.
    Read from a copy of the file (and its ``-wal``, which holds the latest changes), so
    the running browser's locks are neither waited for nor taken."""
    with tempfile.TemporaryDirectory(prefix="textsieve-places-") as tmp:
        copy = os.path.join(tmp, "places.sqlite")
        try:
            shutil.copyfile(path, copy)
            if os.path.isfile(f"{path}-wal"):
                shutil.copyfile(f"{path}-wal", f"{copy}-wal")
        except OSError as exc:
            raise ExportError(ErrorKind.NOT_FOUND, f"cannot copy the file: {exc}") from exc
        try:
            conn = sqlite3.connect(copy)
        except sqlite3.Error as exc:
            raise ExportError(ErrorKind.CORRUPT, f"not a readable SQLite file: {exc}") from exc
        try:
            yield from _places(conn)
        except sqlite3.DatabaseError as exc:
            if "no such table" in str(exc):
                raise ExportError(ErrorKind.UNSUPPORTED, "an SQLite file that is not a "
                                  "Firefox places.sqlite") from exc
            raise ExportError(ErrorKind.CORRUPT, f"a damaged places.sqlite: {exc}") from exc
        finally:
            conn.close()


def _places(conn: sqlite3.Connection) -> Iterator[Mark]:
    folders: dict[int, tuple[int, str, str]] = {
        i: (parent, title or "", guid or "") for i, parent, title, guid in conn.execute(
            "SELECT id, parent, title, guid FROM moz_bookmarks WHERE type = 2")}
    tags_root = next((i for i, (_, _, g) in folders.items() if g == "tags________"), None)
    notes: dict[int, str] = {}
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'moz_items_annos'").fetchone():
        notes = dict(conn.execute(  # Firefox before 62 kept descriptions here
            "SELECT a.item_id, a.content FROM moz_items_annos a JOIN moz_anno_attributes n "
            "ON n.id = a.anno_attribute_id WHERE n.name = 'bookmarkProperties/description'"))
    tags: dict[str, list[str]] = {}
    marks: list[Mark] = []
    paths: dict[int, list[str]] = {}
    for bid, parent, title, url, added in conn.execute(
            "SELECT b.id, b.parent, b.title, p.url, b.dateAdded FROM moz_bookmarks b "
            "JOIN moz_places p ON p.id = b.fk WHERE b.type = 1 ORDER BY b.parent, b.position"):
        if url is None:
            continue
        if tags_root is not None and folders.get(parent, (None,))[0] == tags_root:
            tags.setdefault(url, []).append(folders[parent][1])
            continue
        m = Mark(url, (title or "").strip()[:MAX_TITLE_CHARS] or None, notes.get(bid))
        m.date, warn = parse_date(added)
        if warn:
            m.warnings.append(warn)
        m.labels = list(_folder_path(parent, folders, paths))
        marks.append(m)
    for m in marks:
        m.labels.extend(tags.get(m.url, ()))
        yield m


def _folder_path(fid: int, folders: dict[int, tuple[int, str, str]],
                 memo: dict[int, list[str]]) -> list[str]:
    """The names of a folder and those above it, outermost first, browser roots left out;
    iterative, and safe from a damaged file's cycles."""
    if fid in memo:
        return memo[fid]
    chain: list[str] = []
    seen: set[int] = set()
    cur: int | None = fid
    while cur is not None and cur in folders and cur not in seen and len(seen) < 10_000:
        seen.add(cur)
        parent, title, guid = folders[cur]
        if guid not in _FIREFOX_ROOTS and title:
            chain.append(title)
        cur = parent if parent != cur else None
    memo[fid] = chain[::-1][:MAX_LABELS]
    return memo[fid]
