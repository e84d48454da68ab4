"""Archives built from the WCXB dev pages (real web pages with hand-made ground truth).

The ground-truth main text, title and URL of each page go into a real archive through the
archive's own writer, as `textsieve run` would store them: no extraction, so building a few
hundred items takes well under a second and tests do not depend on the HTML extractor.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from textsieve.archive.store import Archive, Entry
from textsieve.model import Document, Item, Metadata

WCXB = Path(__file__).resolve().parents[2] / "shared" / "data" / "wcxb" / "dev"
if not WCXB.is_dir():  # a worktree next to /work/main, or the main checkout itself
    WCXB = Path("/work/shared/data/wcxb/dev")


def pages(n: int | None = None, *, min_chars: int = 400) -> list[dict[str, Any]]:
    """Ground-truth records (url, title, text, page_type, file_id), in file order."""
    if not WCXB.is_dir():
        pytest.skip(f"WCXB dev pages not found at {WCXB}")
    out = []
    for f in sorted((WCXB / "ground-truth").glob("*.json")):
        d = json.loads(f.read_text())
        gt = d.get("ground_truth", {})
        text = gt.get("main_content") or ""
        if len(text) < min_chars:
            continue
        fid = d.get("file_id") or f.name.split(".")[0]
        out.append({"url": d.get("url") or f"https://wcxb.invalid/{fid}",
                    "title": gt.get("title"), "text": text, "file_id": fid,
                    "page_type": d.get("_internal", {}).get("page_type", {}).get("primary")})
        if n and len(out) >= n:
            break
    return out


def html_of(file_id: str) -> str:
    """The raw page of a record, for tests that extract it themselves."""
    with gzip.open(WCXB / "html" / f"{file_id}.html.gz", "rt", encoding="utf-8",
                   errors="replace") as f:
        return f.read()


def write_pages(archive: Archive, records: list[dict[str, Any]],
                text: Callable[[dict[str, Any]], str] | None = None,
                key: Callable[[dict[str, Any]], str] | None = None) -> None:
    """Write records as archived web pages (one run, one source)."""
    run = archive.begin_run(["wcxb"], {})
    sid = archive.source_id("wcxb")
    entries = []
    for r in records:
        body = text(r) if text else r["text"]
        k = key(r) if key else r["url"]
        doc = Document(name=k, mime_type="text/html", text=body, markdown=body,
                       title=r.get("title"), metadata=Metadata(language="en"))
        entries.append(Entry(Item(key=k, original=k, source="wcxb"), doc))
    for i in range(0, len(entries), 200):
        archive.write(entries[i:i + 200], run, {"wcxb": sid})
    archive.end_run(run, {"ok": len(entries)})
