"""Keyphrases and related items on real web pages (WCXB dev ground truth)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from textsieve.archive.store import Archive
from textsieve.cli import main
from textsieve.enrich import items, keyphrases, related, topics
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
            top = items.keyphrases_of(a, item_id)[:3]
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
        main_topic = {i: (items.topics_of(a, i) or [{"topic": -1}])[0]["topic"]
                      for (i,) in a.conn.execute("SELECT id FROM items")}
        pairs = [(i, r["id"]) for i in main_topic for r in items.related_of(a, i)[:1]]
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
        assert items.related_of(a, 7)[0]["id"] == copy_id
        assert items.related_of(a, copy_id)[0]["id"] == 7
        assert len(items.related_of(a, 7)) == related.COUNT


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
