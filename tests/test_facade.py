"""One road for a document (``textsieve.core``): every isolation level gives the same
document, work items are typed, and the pages left for OCR travel in the typed result,
never in the metadata a user sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_ocr import long_scan
from textsieve import Options, Status
from textsieve.core import (
    EXTRACT,
    Detect,
    Extracted,
    Isolation,
    OcrPage,
    Task,
    extract,
    perform,
    perform_at,
)
from textsieve.model import ErrorKind


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three image-only pages: as many as a pool spreads (core.OCR_FAN_OUT_PAGES)."""
    path = tmp_path_factory.mktemp("scan") / "scan.pdf"
    path.write_bytes(long_scan(3))
    return path


def test_every_isolation_level_gives_the_same_document(scan: Path) -> None:
    options = Options(workers=2)
    docs = {level: extract(str(scan), options=options, isolation=level)
            for level in (Isolation.IN_PROCESS, Isolation.CHILD, Isolation.POOL)}
    for level, doc in docs.items():
        assert doc.status is Status.OK, (level, doc.error)
        assert doc.metadata.extra["ocr_pages"] == [1, 2, 3], level
        assert "ocr_pending" not in doc.metadata.extra, level
        assert "Heron page 3" in doc.text, (level, doc.text)
    assert len({doc.text for doc in docs.values()}) == 1


def test_pages_left_for_ocr_are_in_the_typed_result(scan: Path) -> None:
    got = perform(Task(0, str(scan), None, EXTRACT), Options())
    assert isinstance(got, Extracted) and got.pending == (1, 2, 3)
    assert got.document.status is Status.EMPTY  # nothing read yet: the OCR is the caller's
    assert "ocr_pending" not in got.document.metadata.extra


def test_typed_work_items_in_a_child(scan: Path) -> None:
    options = Options()
    detected = perform_at(Detect(), str(scan), "scan.pdf", options)
    assert detected.mime_type == "application/pdf"  # type: ignore[union-attr]
    page = perform_at(OcrPage(2), scan.read_bytes(), "scan.pdf", options)
    assert "Heron page 2" in page.text and page.pages[0].ocr  # type: ignore[union-attr]
    past = perform_at(OcrPage(9), scan.read_bytes(), "scan.pdf", options)
    assert past.error.kind is ErrorKind.OUT_OF_RANGE  # type: ignore[union-attr]
