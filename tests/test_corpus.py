"""Dev-corpus acceptance test: every file of the shared dev corpus, one test each.

The truth table is tests/corpus_expectations.tsv, built from independent tools (pdftotext,
antiword/catdoc, unzip + lxml, Python's email package, olefile, calamine/xlrd, ...; see
tests/README.md), never from textsieve's own output. Each row says what a person should get:

* ``ok``: status ok, non-empty full text, and every expected word present (case-insensitive,
  NFKC- and whitespace-normalised) in the document's own text (``where=self``) or in its full
  text including children such as attachments and archive members (``where=any``);
* ``empty``: the file genuinely holds no text;
* ``error:<kind>``: a typed error (encrypted, corrupt, unsupported, needs_ocr, too_large).

A few rows allow alternatives (``error:corrupt|ok``) where the truth is genuinely two-sided,
e.g. a zip without central directory whose entries a recovering reader can still inflate;
the words then apply if the outcome is ``ok``. Whatever the row says, the outcome is never
``internal``, ``crashed`` or ``timeout``.

Extraction runs once for the whole corpus in isolated worker processes, so a hang or a native
crash fails only that file's test.
"""

from __future__ import annotations

import csv
import re
import sys
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from textsieve.core import extract_many
from textsieve.model import Document, ErrorKind, Status
from textsieve.options import Options

# Every file of the dev corpus, OCR included: minutes. CI runs it; locally --run-slow.
pytestmark = pytest.mark.slow

EXPECTATIONS = Path(__file__).with_name("corpus_expectations.tsv")
COLUMNS = ["relpath", "expect", "words", "where", "tags", "source", "note"]
KINDS = {"encrypted", "corrupt", "unsupported", "needs_ocr", "too_large"}
NEVER = {ErrorKind.INTERNAL, ErrorKind.CRASHED, ErrorKind.TIMEOUT}
BOMB_TEXT_LIMIT = 1_000_000  # chars: a refused entity/zip bomb must not come back expanded


@dataclass(frozen=True)
class Expectation:
    relpath: str
    outcomes: frozenset[str]  # "ok", "empty", "error:<kind>"
    words: tuple[str, ...]
    where: str
    tags: frozenset[str]
    note: str


def _parse_outcomes(expect: str) -> frozenset[str]:
    """``error:corrupt|ok`` -> {"error:corrupt", "ok"}; a bare kind after ``|`` keeps ``error:``."""
    out: set[str] = set()
    for part in expect.split("|"):
        part = part.strip()
        if part in ("ok", "empty"):
            out.add(part)
        else:
            kind = part.removeprefix("error:")
            if kind not in KINDS:
                raise ValueError(f"bad outcome {part!r} in {expect!r}")
            out.add(f"error:{kind}")
    return frozenset(out)


def load_expectations() -> dict[str, Expectation]:
    rows: dict[str, Expectation] = {}
    with EXPECTATIONS.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader)
        assert header == COLUMNS, f"unexpected header {header}"
        for line, row in enumerate(reader, start=2):
            assert len(row) == len(COLUMNS), f"line {line}: {len(row)} fields"
            relpath, expect, words, where, tags, _source, note = row
            assert relpath not in rows, f"line {line}: duplicate row {relpath}"
            assert where in ("self", "any"), f"line {line}: where={where!r}"
            exp = Expectation(
                relpath=relpath,
                outcomes=_parse_outcomes(expect),
                words=tuple(w.strip() for w in words.split(" | ") if w.strip()),
                where=where,
                tags=frozenset(t.strip() for t in tags.split(";") if t.strip()),
                note=note,
            )
            # ok-or-error must prove the recovery with words; ok|empty (an image without
            # readable text, where OCR may find stray letters) has none to prove.
            if "ok" in exp.outcomes and any(o.startswith("error:") for o in exp.outcomes):
                assert exp.words, f"line {line}: an ok-or-error alternative needs words"
            rows[relpath] = exp
    return rows


EXPECTED = load_expectations()


def corpus_files(root: Path) -> list[str]:
    """Every document of the corpus (README/MANIFEST excluded), as relpaths."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.parent != root
    )


def normalise(text: str) -> str:
    """What a person compares: NFKC (ligatures, presentation forms), casefold, one space."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).casefold().strip()


def outcome_of(doc: Document) -> str:
    if doc.status is Status.ERROR:
        return f"error:{doc.error.kind}" if doc.error else "error:?"
    return str(doc.status)


@pytest.fixture(scope="module")
def results(corpus: Path) -> dict[str, Document]:
    """Extract the whole corpus once, isolated (timeout per file), keyed by relpath."""
    rels = [r for r in corpus_files(corpus) if r in EXPECTED]
    paths = [str(corpus / r) for r in rels]
    # The deadline covers a document's OCR pages too: the longest scan here (TAMReview, 21
    # pages, ~130 s of OCR on a busy 2-core machine) must fit it with room to spare.
    docs = extract_many(paths, Options(timeout=300))
    out = dict(zip(rels, docs, strict=True))
    counts = Counter(outcome_of(d) for d in out.values())
    print("\ndev-corpus outcomes: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())),
          file=sys.stderr)
    return out


def test_every_corpus_file_has_an_expectation(corpus: Path) -> None:
    missing = [r for r in corpus_files(corpus) if r not in EXPECTED]
    assert not missing, f"corpus files without a row in {EXPECTATIONS.name}: {missing}"


def test_every_expectation_names_a_corpus_file(corpus: Path) -> None:
    stale = [r for r in EXPECTED if not (corpus / r).is_file()]
    assert not stale, f"rows in {EXPECTATIONS.name} naming missing files: {stale}"


def test_whole_walk_finishes(results: dict[str, Document]) -> None:
    """All files came back (the pool turned any hang or crash into a record)."""
    assert len(results) == len(EXPECTED)
    counts = Counter(outcome_of(d) for d in results.values())
    wanted = Counter("|".join(sorted(e.outcomes)) for e in EXPECTED.values())
    print("\nexpected:", dict(sorted(wanted.items())))
    print("got:     ", dict(sorted(counts.items())))


@pytest.mark.parametrize("relpath", sorted(EXPECTED), ids=str)
def test_corpus_file(relpath: str, results: dict[str, Document]) -> None:
    exp = EXPECTED[relpath]
    doc = results[relpath]
    got = outcome_of(doc)
    detail = f"{got}: {doc.error.message}" if doc.error else got
    assert not (doc.error and doc.error.kind in NEVER), f"{relpath}: {detail}"
    assert got in exp.outcomes, (
        f"{relpath}: expected {'|'.join(sorted(exp.outcomes))}, got {detail}"
        + (f" ({exp.note})" if exp.note else ""))
    if "bomb" in exp.tags:
        assert len(doc.full_text()) < BOMB_TEXT_LIMIT, f"{relpath}: bomb came back expanded"
    if got != "ok":
        return
    text = doc.full_text() if exp.where == "any" else doc.text
    assert text.strip(), f"{relpath}: status ok but no text ({exp.where})"
    hay = normalise(text)
    missing = [w for w in exp.words if normalise(w) not in hay]
    assert not missing, (
        f"{relpath}: words not found in {'full text' if exp.where == 'any' else 'text'}: "
        f"{missing}; text starts {text[:200]!r}")
