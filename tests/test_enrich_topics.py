"""Topics over real web pages (WCXB dev ground truth): coherent, stored, incremental."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from textsieve.archive.store import Archive
from textsieve.cli import main
from textsieve.enrich import topics
from textsieve.enrich.candidates import candidate_ids
from wcxb_archive import pages, write_pages


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return pages(600)


@pytest.fixture()
def archive(tmp_path: Path, records: list[dict]) -> Archive:
    a = Archive(tmp_path / "a.db")
    write_pages(a, records[:400])
    yield a
    a.close()


def _baseline(binary, vocab_size: int, n_sets: int, seed: int = 0) -> float:
    """Mean NPMI of random term sets of the same size: what incoherent topics score."""
    rng = random.Random(seed)
    sets = [rng.sample(range(vocab_size), topics.TOP_TERMS) for _ in range(n_sets)]
    return float(np.mean(topics.npmi(binary, sets)))


def test_topics_are_coherent_against_random_words(archive: Archive, records) -> None:
    report = topics.update(archive, k=12)
    assert report.refitted and report.k == 12 and report.placed == 400
    found = topics.list_topics(archive)
    model = topics.load_model(archive)
    ids = candidate_ids(archive)
    docs = [r["text"] for r in records[:400]]
    binary = (model.tfidf(docs) > 0).astype(np.float32).tocsc()
    topical = np.flatnonzero(model.topical)
    coherence = float(np.mean([t.coherence for t in found]))
    rng = random.Random(1)
    sets = [[int(topical[i]) for i in rng.sample(range(len(topical)), topics.TOP_TERMS)]
            for _ in range(50)]
    baseline = float(np.mean(topics.npmi(binary, sets)))
    print(f"NPMI top-{topics.TOP_TERMS} terms: topics {coherence:.3f}, random words "
          f"{baseline:.3f} (400 WCXB pages, k=12)")
    assert coherence > baseline + 0.25
    assert len(ids) == 400
    # Every topic has a label, terms and representative items, all placed items counted.
    assert all(t.label and len(t.terms) == topics.TOP_TERMS and t.items for t in found)
    assert sum(t.size for t in found) == 400


def test_new_items_are_placed_without_refit_and_refit_starts_over(archive: Archive,
                                                                   records) -> None:
    first = topics.update(archive, k=8)
    write_pages(archive, records[400:450])
    # A copy of an archived page under a new URL lands in that page's main topic.
    write_pages(archive, records[:1], key=lambda r: r["url"] + "?copy=1")
    second = topics.update(archive)
    assert not second.refitted and second.model_id == first.model_id
    assert second.placed == 51 and second.k == 8
    placed = archive.conn.execute(
        "SELECT count(DISTINCT item_id) FROM item_topics WHERE model_id = ?",
        (first.model_id,)).fetchone()[0]
    assert placed == 451

    def main_of(key: str) -> int:
        return archive.conn.execute(
            "SELECT it.topic FROM item_topics it JOIN items i ON i.id = it.item_id "
            "WHERE i.key = ? ORDER BY it.weight DESC LIMIT 1", (key,)).fetchone()[0]
    assert main_of(records[0]["url"] + "?copy=1") == main_of(records[0]["url"])
    assert topics.update(archive).placed == 0  # nothing new: nothing done

    third = topics.update(archive, refit=True)
    assert third.refitted and third.model_id != first.model_id and third.placed == 451
    assert archive.conn.execute("SELECT count(*) FROM item_topics WHERE model_id != ?",
                                (third.model_id,)).fetchone()[0] == 0


def test_a_re_extracted_item_is_placed_again(archive: Archive, records) -> None:
    topics.update(archive, k=6)
    write_pages(archive, records[3:4], text=lambda r: r["text"] + "\n\nUpdated.")
    assert topics.update(archive).placed == 1


def test_cli_topics_json_and_table(tmp_path: Path, records, capsys) -> None:
    path = tmp_path / "c.db"
    with Archive(path) as a:
        write_pages(a, records[:200])
    assert main(["topics", "--archive", str(path), "-k", "5", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out) == 5
    assert all(len(t["terms"]) == topics.TOP_TERMS and t["label"] and t["items"] for t in out)
    assert sum(t["size"] for t in out) == 200
    assert main(["topics", "--archive", str(path)]) == 0  # same model, a table
    captured = capsys.readouterr()
    assert out[0]["label"] in captured.out and "0 item(s) placed" in captured.err


def test_cli_topics_of_a_type_subset(tmp_path: Path, records, capsys) -> None:
    path = tmp_path / "s.db"
    with Archive(path) as a:
        write_pages(a, records[:120])
        a.conn.execute("UPDATE items SET mime_type = 'application/pdf' WHERE id <= 40")
    assert main(["topics", "--archive", str(path), "-k", "3", "--type", "application/pdf",
                 "--format", "json"]) == 0
    assert sum(t["size"] for t in json.loads(capsys.readouterr().out)) == 40
    with Archive(path) as a:  # run --enrich keeps the subset: no refit over everything
        report = topics.update(a)
        assert not report.refitted and report.placed == 0


def test_missing_extra_is_one_line_naming_it(tmp_path: Path, records) -> None:
    path = tmp_path / "m.db"
    with Archive(path) as a:
        write_pages(a, records[:5])
    code = ("import sys; sys.modules['sklearn'] = None; from textsieve.cli import main; "
            f"sys.exit(main(['topics', '--archive', {str(path)!r}]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1
    assert "textsieve[topics]" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_number_of_topics_is_chosen_by_coherence(tmp_path: Path, records) -> None:
    with Archive(tmp_path / "k.db") as a:
        write_pages(a, records)
        report = topics.update(a)
        assert len(report.coherence_by_k) > 2
        assert report.k == max(report.coherence_by_k, key=report.coherence_by_k.get)
