"""`textsieve check --repair` gets back what a damaged archive still holds: a truncated
file, a damaged page in the middle of the items' tree, a checkpoint cut short whose
write-ahead log was then lost. Through the CLI, on archives made by a real `textsieve run`
over 5,000 files; the damage is done to the bytes of the file, as a disk or a copy does.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

# A 5,000-file run and four repairs: about a minute. CI runs it; locally --run-slow.
pytestmark = pytest.mark.slow

N = 5000
PAGE = 4096
Rows = list[tuple[object, ...]]


def textsieve(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def _tree(root: Path, n: int, word: str) -> None:
    root.mkdir()
    rng = random.Random(len(word))
    birds = ["heron", "egret", "stork", "ibis", "crane", "rail", "coot", "grebe"]
    for i in range(n):
        body = " ".join(rng.choice(birds) for _ in range(rng.randint(20, 400)))
        (root / f"{word}{i:04d}.txt").write_text(f"{body} {word}{i}x\n")


def _checkpointed(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(source folder, archive of its N files), the log folded in."""
    base = tmp_path_factory.mktemp("salvage")
    src, db = base / "src", base / "a.db"
    _tree(src, N, "uniq")
    p = textsieve("run", src, "--archive", db, "-q", "-j", "2")
    assert p.returncode == 0, p.stderr
    _checkpointed(db)
    return src, db


def items(db: Path) -> Rows:
    """Every item row as stored (texts compressed): a repair must give them back as
    they were, byte for byte."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, key, sha256, size, mtime_ns, status, text, "
                            "metadata, first_seen, last_seen, extracted_at, text_chars "
                            "FROM items ORDER BY id").fetchall()
    finally:
        conn.close()


def repaired(db: Path) -> str:
    """check finds the damage, --repair fixes it keeping the damaged bytes as the backup,
    and check then finds the archive whole; returns what --repair said."""
    damaged = db.read_bytes()
    p = textsieve("check", "--archive", db)
    assert p.returncode == 1 and "check --repair" in p.stderr, p.stderr[-1000:]
    p = textsieve("check", "--repair", "--archive", db)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "Traceback" not in p.stderr and "repaired" in p.stderr, p.stderr[-2000:]
    assert db.with_name(db.name + ".bak").read_bytes() == damaged
    p2 = textsieve("check", "--archive", db)
    assert p2.returncode == 0 and "whole" in p2.stderr, p2.stderr[-1000:]
    return p.stderr


def _pages(db: Path, table: str, kind: str) -> list[int]:
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY pageno",
            (table, kind))]
    finally:
        conn.close()


def _scramble(db: Path, page: int, seed: int) -> None:
    data = bytearray(db.read_bytes())
    data[(page - 1) * PAGE:page * PAGE] = random.Random(seed).randbytes(PAGE)
    db.write_bytes(bytes(data))


def test_a_4kb_truncation_gets_back_every_readable_row(made: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    _src, orig = made
    db = tmp_path / "t.db"
    shutil.copyfile(orig, db)
    with open(db, "r+b") as f:
        f.truncate(db.stat().st_size - 4096)
    before = items(orig)
    said = repaired(db)
    after = items(db)
    assert len(after) >= 0.99 * N, said
    assert set(after) <= set(before)  # nothing made up, every row kept as it was
    p = textsieve("search", "uniq4321x", "--archive", db)
    assert p.returncode == 0 and "uniq4321.txt" in p.stdout, p.stderr


def test_a_damaged_interior_page_costs_no_item(made: tuple[Path, Path],
                                               tmp_path: Path) -> None:
    """One interior page of the items' tree hides the hundreds of leaves below it from
    SQLite: they are read from the pages, every item comes back as it was."""
    _src, orig = made
    db = tmp_path / "i.db"
    shutil.copyfile(orig, db)
    interior = _pages(db, "items", "internal")
    assert len(interior) >= 2, interior  # a root and children: one of those is damaged
    _scramble(db, interior[-1], seed=1)
    said = repaired(db)
    assert items(db) == items(orig), said
    assert "read from pages" in said


def test_a_damaged_leaf_loses_its_rows_only_and_a_run_brings_them_back(
        made: tuple[Path, Path], tmp_path: Path) -> None:
    src, orig = made
    db = tmp_path / "l.db"
    shutil.copyfile(orig, db)
    leaves = _pages(db, "items", "leaf")
    _scramble(db, leaves[len(leaves) // 2], seed=2)
    repaired(db)
    before, after = items(orig), items(db)
    assert set(after) <= set(before)
    assert len(before) - len(after) <= 10  # a 4 KiB leaf holds a few rows of texts
    p = textsieve("run", src, "--archive", db, "-q", "-j", "2")
    assert p.returncode == 0, p.stderr
    assert {r[1] for r in items(db)} == {r[1] for r in before}


def test_a_checkpoint_cut_short_whose_log_is_lost(made: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    """A second run adds 1,500 items; its checkpoint (pages copied from the log to the
    file in page order) stops half-way and the log is lost: the file mixes pages of two
    states. The repair keeps every item of the first state and what of the second is
    whole; a run of both folders then completes the archive."""
    src, orig = made
    src2 = tmp_path / "src2"
    _tree(src2, 1500, "more")
    later = tmp_path / "later.db"
    shutil.copyfile(orig, later)
    p = textsieve("run", src2, "--archive", later, "-q", "-j", "2")
    assert p.returncode == 0, p.stderr
    _checkpointed(later)
    old, new = orig.read_bytes(), later.read_bytes()
    changed = [i for i in range(len(new) // PAGE)
               if new[i * PAGE:(i + 1) * PAGE] != old[i * PAGE:(i + 1) * PAGE]]
    cut = changed[len(changed) // 2]
    mixed = bytearray(old)
    for i in (i for i in changed if i < cut):
        mixed[i * PAGE:(i + 1) * PAGE] = new[i * PAGE:(i + 1) * PAGE]
    db = tmp_path / "w.db"
    db.write_bytes(bytes(mixed))

    repaired(db)
    kept = {r[1] for r in items(db)}
    first = {r[1] for r in items(orig)}
    assert first <= kept  # every item of the last whole state
    assert set(items(db)) <= set(items(later)) | set(items(orig))  # nothing made up
    p = textsieve("run", src, src2, "--archive", db, "-q", "-j", "2")
    assert p.returncode == 0, p.stderr
    assert {r[1] for r in items(db)} == {r[1] for r in items(later)}
    p = textsieve("check", "--archive", db)
    assert p.returncode == 0, p.stderr
