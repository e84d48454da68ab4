"""Keyphrases and related items on real web pages (WCXB dev ground truth)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from textsieve.archive.store import Archive
from textsieve.cli import main
from textsieve.enrich import candidates, keyphrases, related, topics
from wcxb_archive import pages, write_pages


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return pages(300)


@pytest.fixture(scope="module")
def built(tmp_path_factory, records) -> Path:
    path = tmp_path_factory.mktemp("rel") / "a.db"
    with Archive(path) as a:
        write_pages(a, records)
        topics.update(a, k=10)
        assert keyphrases.update(a) == 300
        assert related.update(a) == 300
    return path


def _words(s: str) -> set[str]:
    return {w for w in re.findall(r"[^\W\d_]{4,}", s.lower())}


def test_keyphrases_name_what_the_title_names_far_more_than_random_words(built, records):
    """Titles say what a page is about: the top keyphrases share a word with the title
    far more often than words drawn at random from the same page."""
    rng = random.Random(0)
    hits = chance = n = 0
    with Archive(built) as a:
        for item_id, title, in a.conn.execute("SELECT id, title FROM items"):
            if not title:
                continue
            top = candidates.keyphrases_of(a, item_id)[:3]
            text = a.unzip(a.conn.execute("SELECT text FROM items WHERE id = ?",
                                          (item_id,)).fetchone()[0])
            pool = sorted(_words(text))
            n += 1
            hits += bool(_words(" ".join(top)) & _words(title))
            chance += bool(set(rng.sample(pool, min(3, len(pool)))) & _words(title))
    print(f"top-3 keyphrases share a word with the title: {hits}/{n} (random words {chance})")
    assert hits / n > 0.75 and hits > 2.5 * chance


def test_neighbours_share_a_topic_and_a_copy_is_the_closest(built, records) -> None:
    with Archive(built) as a:
        main_topic = {i: (candidates.topics_of(a, i) or [{"topic": -1}])[0]["topic"]
                      for (i,) in a.conn.execute("SELECT id FROM items")}
        pairs = [(i, r["id"]) for i in main_topic for r in candidates.related_of(a, i)[:1]]
        same = sum(main_topic[x] == main_topic[y] for x, y in pairs) / len(pairs)
        rng = random.Random(0)
        ids = list(main_topic)
        chance = sum(main_topic[x] == main_topic[y] for x, y in
                     (rng.sample(ids, 2) for _ in range(3000))) / 3000
        print(f"nearest neighbour in the same main topic: {same:.2f} (random pairs "
              f"{chance:.2f})")
        assert same > 0.6 and same > 3 * chance
        # Incremental: a copy of page 7 under another URL is added; only it is computed,
        # and it enters page 7's list at the top.
        write_pages(a, [records[6]], key=lambda r: r["url"] + "#copy")
        copy_id = a.conn.execute("SELECT max(id) FROM items").fetchone()[0]
        assert related.update(a) == 1
        assert candidates.related_of(a, 7)[0]["id"] == copy_id
        assert candidates.related_of(a, copy_id)[0]["id"] == 7
        assert len(candidates.related_of(a, 7)) == related.COUNT


def test_cli_keyphrases_related_and_show_json(tmp_path: Path, records, capsys) -> None:
    path = tmp_path / "c.db"
    with Archive(path) as a:
        write_pages(a, records[:60])
    assert main(["keyphrases", "--archive", str(path), "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("[1] ") and "Nutrition" in out
    assert main(["related", "--archive", str(path), "1"]) == 0
    assert "60 item(s) given neighbours" in capsys.readouterr().err
    assert main(["show", "--archive", str(path), "1", "-f", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert "Nutrition" in shown["keyphrases"] and shown["related"] and shown["topics"]
    assert main(["related", "--archive", str(path)]) == 2  # ids or --all


def _lists(a: Archive) -> dict[int, list[tuple[int, float]]]:
    out: dict[int, list[tuple[int, float]]] = {}
    for item_id, other, score in a.conn.execute(
            "SELECT item_id, other_id, score FROM related ORDER BY item_id, score DESC, "
            "other_id"):
        out.setdefault(item_id, []).append((other, round(score, 5)))
    return out


def test_adding_items_vectorises_only_them_and_matches_a_full_recompute(
        tmp_path: Path, records) -> None:
    """An archive that grows by a few items must not be read and vectorised again: the
    new items alone are vectorised, and every list (old items' too) is what computing
    everything from scratch gives."""
    with Archive(tmp_path / "inc.db") as a:
        write_pages(a, records[:240])
        topics.update(a, k=8)  # placing the items vectorises them, once
        first: list[tuple[str, int, int]] = []
        assert related.update(a, progress=lambda *p: first.append(p)) == 240
        assert not [p for p in first if p[0] == "related vectors"]
        write_pages(a, records[240:260])
        seen: list[tuple[str, int, int]] = []
        assert related.update(a, progress=lambda *p: seen.append(p)) == 20
        assert [p for p in seen if p[0] == "related vectors"][-1][1:] == (20, 20)
        # a copy of an old page, through `run --enrich`'s order: topics place (and
        # vectorise) only it, and it enters that page's list, at the top
        write_pages(a, [records[10]], key=lambda r: r["url"] + "#again")
        assert topics.update(a).placed == 21  # the 20 above were not placed yet
        seen.clear()
        assert related.update(a, progress=lambda *p: seen.append(p)) == 1
        assert not [p for p in seen if p[0] == "related vectors"]
        copy_id = a.conn.execute("SELECT max(id) FROM items").fetchone()[0]
        assert candidates.related_of(a, 11)[0]["id"] == copy_id
        incremental = _lists(a)
        # the same archive, every vector and list computed again from nothing
        with a.transaction() as c:
            c.execute("UPDATE enrichment SET vector = NULL, vector_model = NULL, "
                      "related_done = 0")
            c.execute("DELETE FROM related")
        assert related.update(a) == 261
        assert _lists(a) == incremental


def test_a_refit_recomputes_every_neighbour_list(tmp_path: Path, records) -> None:
    """Vectors use the model's vocabulary: after a refit none of the old ones is mixed
    with new ones."""
    with Archive(tmp_path / "refit.db") as a:
        write_pages(a, records[:120])
        topics.update(a, k=6)
        related.update(a)
        model = topics.update(a, k=5).model_id  # another k: a new model
        assert related.update(a) == 120
        assert {r[0] for r in a.conn.execute(
            "SELECT DISTINCT vector_model FROM enrichment")} == {model}
