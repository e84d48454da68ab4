"""`textsieve export --format warc`: every kept original as a WARC/1.1 record.

A capture whose bytes came over HTTP(S) is a ``response`` record (the status line and the
headers that were kept: Content-Type, Date, ETag, Last-Modified), any other (a file, a
mail's article) a ``resource`` record; each is followed by a ``metadata`` record that
refers to it and says what textsieve knows: the item, its title, the capture's date and
kind, whether it is the current one, the sources and mails that named it. Written with
warcio, gzip-compressed per record, so any WARC tool (pywb, replayweb.page, warcio
itself, ``textsieve run FILE.warc.gz``) reads it back; payload digests are computed over
the bytes as they were received.
"""

from __future__ import annotations

import io
import json
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from http.client import responses
from typing import IO

from .store import Archive, ArchiveError


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="microseconds").replace(
        "+00:00", "Z")


def write_warc(archive: Archive, fh: IO[bytes], counts: Counter[str],
               on_error: Callable[[str], None]) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    writer = WARCWriter(fh, gzip=True, warc_version="1.1")
    info = writer.create_warcinfo_record("textsieve-export.warc.gz", {
        "software": "textsieve", "format": "WARC File Format 1.1",
        "description": "originals kept by textsieve, with provenance in metadata records",
        "isPartOf": str(archive.path.name)})
    writer.write_record(info)
    c = archive.conn
    rows = c.execute(
        "SELECT c.id, c.item_id, i.key, i.title, c.current, c.kind, c.captured_at, "
        "c.original, c.url, c.http_status, c.content_type, c.http_date, c.etag, "
        "c.last_modified, c.status, c.text_chars, c.extractor_version, c.source "
        "FROM captures c JOIN items i ON i.id = c.item_id WHERE c.original IS NOT NULL "
        "ORDER BY c.item_id, c.captured_at, c.id").fetchall()
    for (cid, item_id, key, title, current, kind, captured, sha, url, status, ctype, date,
         etag, modified, cstatus, chars, version, via) in rows:
        try:
            data = archive.original_bytes(sha)
        except ArchiveError as exc:
            on_error(f"{key}: capture {cid}: {exc}")
            counts["failed"] += 1
            continue
        if data is None:
            on_error(f"{key}: capture {cid}: its original {sha[:12]} is not in the archive")
            counts["failed"] += 1
            continue
        target = url or key
        when = _iso(captured or time.time())
        if target.lower().startswith(("http://", "https://")):
            code = status or 200
            headers = [("Content-Type", ctype or "application/octet-stream"),
                       ("Content-Length", str(len(data)))]
            headers += [(h, v) for h, v in (("Date", date), ("ETag", etag),
                                             ("Last-Modified", modified)) if v]
            http = StatusAndHeaders(f"{code} {responses.get(code, '')}".strip(), headers,
                                    protocol="HTTP/1.1")
            record = writer.create_warc_record(
                target, "response", payload=io.BytesIO(data), length=len(data),
                http_headers=http, warc_headers_dict={"WARC-Date": when})
        else:
            record = writer.create_warc_record(
                target, "resource", payload=io.BytesIO(data), length=len(data),
                warc_content_type=ctype or "application/octet-stream",
                warc_headers_dict={"WARC-Date": when})
        writer.write_record(record)
        counts["records"] += 1
        provenance = c.execute(
            "SELECT s.spec, p.facts FROM provenance p JOIN sources s ON s.id = p.source_id "
            "WHERE p.item_id = ? ORDER BY s.id", (item_id,)).fetchall()
        fields = [("textsieve-item", str(item_id)), ("textsieve-key", key),
                  ("textsieve-capture", str(cid)), ("capture-kind", kind),
                  ("current", "yes" if current else "no"), ("original-sha256", sha),
                  ("text-status", cstatus), ("text-chars", str(chars)),
                  ("extractor", version or "")]
        fields += [("title", title)] if title else []
        fields += [("recorded-in", via)] if via else []
        for spec, facts in provenance:  # each source, and what it told of the item
            fields.append(("source", spec))
            fields += _facts_fields(facts)
        fields += [("mail", f"{m['message_id']} {m['date'] or ''} {m['subject'] or ''}")
                   for m in archive.mails_of(item_id)]
        payload = "".join(f"{k}: {' '.join(str(v).split())}\r\n" for k, v in fields)
        meta = writer.create_warc_record(
            target, "metadata", payload=io.BytesIO(payload.encode("utf-8")),
            warc_content_type="application/warc-fields",
            warc_headers_dict={"WARC-Date": when, "WARC-Refers-To":
                               record.rec_headers.get_header("WARC-Record-ID")})
        writer.write_record(meta)
        if current:
            counts["items"] += 1


def _facts_fields(facts: str | None) -> list[tuple[str, str]]:
    """A source's facts about an item (a feed entry's id, its feed: ``Item.facts``, kept
    with its provenance) as WARC fields, ``feed_entry`` as ``feed-entry``: whichever
    capture a record holds, it says where the item came from."""
    try:
        got = json.loads(facts) if facts else {}
    except ValueError:
        return []
    if not isinstance(got, dict):
        return []
    return [(k.replace("_", "-"), v if isinstance(v, str) else json.dumps(v))
            for k, v in got.items()]
