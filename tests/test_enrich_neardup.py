"""Near-duplicates among real web pages (WCXB dev) with injected boilerplate changes."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from textsieve.archive.store import Archive
from textsieve.cli import main
from textsieve.enrich import candidates, neardup
from wcxb_archive import pages, write_pages

NAV = ["Home", "About us", "Blog", "Contact", "Shop", "Log in", "Subscribe", "Menu"]
BANNERS = ["We use cookies to improve your experience. By continuing to browse you accept "
           "our use of cookies.", "Sign up for our newsletter and get 10% off your first "
           "order!", "Share this: Facebook Twitter LinkedIn Email Print"]
FOOTER = "© 2025 All rights reserved. Privacy policy · Terms of use · Sitemap"


def variant(text: str, rng: random.Random) -> str:
    """The page as reached through another URL or template: other navigation, a banner,
    a footer, a share bar in the middle, one paragraph dropped."""
    paras = text.split("\n\n")
    if len(paras) > 4:
        del paras[rng.randrange(1, len(paras))]
    paras.insert(len(paras) // 2, rng.choice(BANNERS))
    nav = " | ".join(rng.sample(NAV, 5))
    return "\n\n".join([nav, rng.choice(BANNERS), *paras, FOOTER])


def _jaccard(a: str, b: str) -> float:
    def grams(t: str) -> set[str]:
        w = re.findall(r"\w+", t.lower())
        return {" ".join(w[i:i + neardup.SHINGLE]) for i in range(max(1, len(w) - 4))}
    ga, gb = grams(a), grams(b)
    return len(ga & gb) / len(ga | gb)


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return pages(250, min_chars=1500)


def test_pages_with_other_boilerplate_are_grouped_and_nothing_else(tmp_path: Path,
                                                                    records) -> None:
    rng = random.Random(7)
    copies = records[:40]
    with Archive(tmp_path / "d.db") as a:
        write_pages(a, records)
        write_pages(a, copies, text=lambda r: variant(r["text"], rng),
                    key=lambda r: r["url"] + "?utm_source=mail")
        assert neardup.update(a) == len(records) + len(copies)
        ids = dict(a.conn.execute("SELECT key, id FROM items"))
        text = {i: a.unzip(t) for i, t in a.conn.execute("SELECT id, text FROM items")}
        found = neardup.groups(a)
        grouped = {frozenset(g) for g in found}
        recall = sum(any({ids[r["url"]], ids[r["url"] + "?utm_source=mail"]} <= g
                         for g in grouped) for r in copies)
        # Any other pair grouped must really be near-identical text (WCXB has a few
        # pages twice, e.g. one product under two URLs), never two different pages.
        wrong = [(x, y) for g in found for x in g for y in g if x < y
                 and _jaccard(text[x], text[y]) < 0.4]
        print(f"near-duplicates: {recall}/{len(copies)} boilerplate variants grouped with "
              f"their page, {len(found)} groups, {len(wrong)} wrong pairs")
        assert recall >= 0.95 * len(copies)
        assert not wrong
        # Incremental: one more variant joins its page's group; nothing else is hashed.
        write_pages(a, copies[:1], text=lambda r: variant(r["text"], rng),
                    key=lambda r: r["url"] + "?ref=feed")
        assert neardup.update(a) == 1
        first = ids[copies[0]["url"]]
        assert set(candidates.duplicates_of(a, first)) >= {
            ids[copies[0]["url"] + "?utm_source=mail"],
            a.conn.execute("SELECT id FROM items WHERE key LIKE '%?ref=feed'").fetchone()[0]}


def test_search_shows_a_group_once(tmp_path: Path, records, capsys) -> None:
    path = tmp_path / "s.db"
    rng = random.Random(3)
    with Archive(path) as a:
        write_pages(a, records[:20])
        write_pages(a, records[:1], text=lambda r: variant(r["text"], rng),
                    key=lambda r: r["url"] + "#again")
    assert main(["duplicates", "--archive", str(path), "--format", "json"]) == 0
    assert [[g["id"] for g in grp] for grp in json.loads(capsys.readouterr().out)] == [[1, 21]]
    phrase = " ".join(records[0]["text"].split()[5:10])
    assert main(["search", "--archive", str(path), f'"{phrase}"']) == 0
    out = capsys.readouterr().out
    assert out.count("\n[") + out.startswith("[") == 1 and "+ near-duplicates: [21]" in out
    assert main(["search", "--archive", str(path), "--all-duplicates", f'"{phrase}"']) == 0
    assert "[21]" in capsys.readouterr().out.split("\n", 2)[-1]


def test_signatures_from_before_the_bands_table_are_indexed(tmp_path: Path, records) -> None:
    """An archive enriched before schema step 7 has signatures but no stored bands: its
    items must still be found as duplicates of new ones, without hashing them again."""
    rng = random.Random(11)
    with Archive(tmp_path / "old.db") as a:
        write_pages(a, records[:30])
        assert neardup.update(a) == 30
        with a.transaction() as c:
            c.execute("DELETE FROM minhash_bands")
        write_pages(a, records[4:5], text=lambda r: variant(r["text"], rng),
                    key=lambda r: r["url"] + "?from=old")
        assert neardup.update(a) == 1  # only the new item is hashed
        assert a.conn.execute("SELECT count(DISTINCT item_id) FROM minhash_bands"
                              ).fetchone()[0] == 31
        assert candidates.duplicates_of(a, 5) == [31]
