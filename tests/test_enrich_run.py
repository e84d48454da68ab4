"""`textsieve run --enrich`: enrichment kept up to date by the run, incrementally."""

from __future__ import annotations

from pathlib import Path

import pytest

from textsieve.archive.store import Archive
from textsieve.cli import main
from textsieve.enrich import candidates
from textsieve.enrich.driver import enrich
from textsieve.options import Options
from wcxb_archive import pages


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return pages(80)


def _write(folder: Path, recs: list[dict], start: int = 0) -> None:
    folder.mkdir(exist_ok=True)
    for n, r in enumerate(recs, start):
        (folder / f"page{n:03}.txt").write_text(r["text"], encoding="utf-8")


def test_run_enrich_does_everything_then_only_the_new_files(tmp_path: Path, records,
                                                            capsys) -> None:
    docs, db = tmp_path / "docs", str(tmp_path / "a.db")
    _write(docs, records[:60])
    (docs / "dup.txt").write_text(records[0]["text"] + "\n\nShared on my blog.\n",
                                  encoding="utf-8")
    assert main(["run", str(docs), "--archive", db, "-j", "1", "--enrich"]) == 0
    err = capsys.readouterr().err
    assert ("enriched: topics 61, summaries 61, keyphrases 61, related 61, "
            "duplicates 61") in err
    with Archive(db) as a:
        first = a.conn.execute("SELECT id FROM items WHERE key LIKE '%page000.txt'"
                               ).fetchone()[0]
        info = candidates.enriched(a, first)
        assert info["summary"] and info["keyphrases"] and info["topics"] and info["related"]
        dup = a.conn.execute("SELECT id FROM items WHERE key LIKE '%dup.txt'").fetchone()[0]
        assert info["duplicates"] == [dup]
    _write(docs, records[60:63], start=60)
    assert main(["run", str(docs), "--archive", db, "-j", "1", "--enrich",
                 "summaries,duplicates"]) == 0
    err = capsys.readouterr().err
    assert "enriched: summaries 3, duplicates 3" in err
    assert main(["run", str(docs), "--archive", db, "-j", "1", "--enrich"]) == 0
    assert "enriched: topics 3, summaries 0, keyphrases 3, related 3, duplicates 0" in (
        capsys.readouterr().err)


def test_a_young_archive_skips_topics_without_failing(tmp_path: Path, records) -> None:
    with Archive(tmp_path / "y.db") as a:
        from wcxb_archive import write_pages

        write_pages(a, records[:1])
        done = enrich(a, Options())
        assert str(done["topics"]).startswith("skipped") and done["summaries"] == 1
        assert done["duplicates"] == 1


def test_unknown_enrich_kind_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["run", str(tmp_path), "--archive", str(tmp_path / "x.db"),
                 "--enrich", "topicz"]) == 2
    assert "topicz" in capsys.readouterr().err
