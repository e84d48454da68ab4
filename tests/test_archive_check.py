"""A damaged archive: every command says so in one line, nothing writes to it, and
`textsieve check --repair` rebuilds it from its readable rows, keeping a backup.

The damage is real: bytes flipped, pages overwritten, in a copy of an archive made by a
real `textsieve run` over real files (found in the file by the page SQLite says holds them).
"""

from __future__ import annotations

import hashlib
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

N = 110


def textsieve(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(source folder, archive) after a real run over N text files, WAL folded in."""
    base = tmp_path_factory.mktemp("check")
    src = base / "src"
    src.mkdir()
    rng = random.Random(5)
    words = ["heron", "egret", "stork", "ibis", "crane", "rail", "coot", "grebe", "loon",
             "tern", "gull", "skua"]
    for i in range(N):
        body = " ".join(rng.choice(words) for _ in range(2000))
        (src / f"f{i:03d}.txt").write_text(f"{body} uniqword{i}\n")
    db = base / "a.db"
    p = textsieve("run", src, "--archive", db, "-q", "-j", "1")
    assert p.returncode == 0, p.stderr
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return src, db


def _copy(db: Path, tmp_path: Path) -> Path:
    out = tmp_path / "damaged.db"
    shutil.copyfile(db, out)
    return out


def _pages(db: Path, name: str) -> list[int]:
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ?",
                                           (name,))]
    finally:
        conn.close()


def _overwrite_page(db: Path, page: int, start: int, seed: int) -> None:
    data = bytearray(db.read_bytes())
    off = (page - 1) * 4096
    data[off + start:off + 4096] = random.Random(seed).randbytes(4096 - start)
    db.write_bytes(bytes(data))


def _state(p: Path) -> tuple[str, int]:
    return hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns


def _one_line_error(p: subprocess.CompletedProcess[str], db: Path) -> None:
    assert p.returncode == 1, (p.returncode, p.stderr[-500:])
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.stderr.startswith(f"textsieve: {db}: "), p.stderr


def _repair_and_rerun(src: Path, db: Path, tmp_path: Path) -> None:
    """check finds it, --repair fixes it (backup = the damaged bytes), and a run then
    brings every item back: the archive is whole and complete again."""
    damaged = db.read_bytes()
    p = textsieve("check", "--archive", db)
    _one_line_error(p, db)
    assert "check --repair" in p.stderr
    p = textsieve("check", "--repair", "--archive", db)
    assert p.returncode == 0, p.stderr
    assert "repaired" in p.stderr and "Traceback" not in p.stderr
    backup = db.with_name(db.name + ".bak")
    assert backup.read_bytes() == damaged
    p = textsieve("check", "--archive", db)
    assert p.returncode == 0 and "whole" in p.stderr, p.stderr
    p = textsieve("run", src, "--archive", db, "-q", "-j", "1")
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    p = textsieve("export", "--to", out, "--archive", db)
    assert p.returncode == 0, p.stderr
    assert len(list(out.iterdir())) == N
    for i in (0, N // 2, N - 1):
        p = textsieve("search", f"uniqword{i}", "--archive", db)
        assert p.returncode == 0 and f"f{i:03d}.txt" in p.stdout, p.stderr


def test_flipped_bytes_in_a_stored_text(made: tuple[Path, Path], tmp_path: Path) -> None:
    src, built = made
    db = _copy(built, tmp_path)
    conn = sqlite3.connect(db)
    item_id, blob = conn.execute(
        "SELECT id, text FROM items WHERE key LIKE '%f007.txt'").fetchone()
    conn.close()
    data = bytearray(db.read_bytes())
    at = data.find(blob)
    assert at > 0
    for k in range(8):  # inside the compressed text: pages and trees stay well-formed
        data[at + len(blob) // 2 + k] ^= 0x5A
    db.write_bytes(bytes(data))
    for args in (["show", item_id], ["export", "--to", tmp_path / "x"]):
        p = textsieve(*args, "--archive", db)
        _one_line_error(p, db)
        assert "damaged" in p.stderr and "check --repair" in p.stderr
    _repair_and_rerun(src, db, tmp_path)


def test_a_damaged_index_is_refused_then_rebuilt(made: tuple[Path, Path],
                                                 tmp_path: Path) -> None:
    """Before, export wrote the items the broken index still listed, with exit 0."""
    src, built = made
    db = _copy(built, tmp_path)
    (page,) = _pages(db, "items_parent")
    _overwrite_page(db, page, 2000, seed=1)
    before = _state(db)
    out = tmp_path / "x"
    for args in (["export", "--to", out], ["run", src, "-q"], ["stats"], ["search", "heron"]):
        p = textsieve(*args, "--archive", db)
        _one_line_error(p, db)
        assert "damaged" in p.stderr
    assert not out.exists() or not list(out.iterdir())
    assert _state(db) == before  # refused before anything was written
    _repair_and_rerun(src, db, tmp_path)


def test_a_randomised_meta_page_is_noticed(made: tuple[Path, Path], tmp_path: Path) -> None:
    """Before, `run` did not notice and wrote on."""
    src, built = made
    db = _copy(built, tmp_path)
    (page,) = _pages(db, "meta")
    _overwrite_page(db, page, 0, seed=2)
    before = _state(db)
    p = textsieve("run", src, "-q", "--archive", db)
    _one_line_error(p, db)
    assert "damaged" in p.stderr
    assert _state(db) == before
    _repair_and_rerun(src, db, tmp_path)


@pytest.mark.parametrize("seed", range(6))
def test_random_byte_flips_never_give_a_traceback(made: tuple[Path, Path], tmp_path: Path,
                                                  seed: int) -> None:
    """Flips anywhere past the header: each command works or fails in one line; check
    --repair either gives back a whole archive or says in one line why it cannot."""
    _src, built = made
    db = _copy(built, tmp_path)
    rng = random.Random(seed)
    data = bytearray(db.read_bytes())
    for _ in range(rng.choice([20, 200, 2000])):
        data[rng.randrange(100, len(data))] ^= 1 << rng.randrange(8)
    db.write_bytes(bytes(data))
    for args in (["stats"], ["search", "uniqword5"], ["show", "5"],
                 ["export", "--to", tmp_path / "x"], ["check"], ["check", "--repair"]):
        p = textsieve(*args, "--archive", db)
        assert p.returncode in (0, 1), (args, p.stderr[-2000:])
        assert "Traceback" not in p.stderr, (args, p.stderr[-2000:])
    p = textsieve("check", "--archive", db)
    if p.returncode != 0:  # not repairable (the schema itself was hit): said so, in a line
        assert p.stderr.startswith(f"textsieve: {db}: ") and "Traceback" not in p.stderr


def test_repair_is_refused_while_another_process_writes(made: tuple[Path, Path],
                                                        tmp_path: Path) -> None:
    _src, built = made
    db = _copy(built, tmp_path)
    (page,) = _pages(db, "items_parent")
    _overwrite_page(db, page, 2000, seed=1)
    before = _state(db)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # as a run does while it writes a batch
    try:
        p = textsieve("check", "--repair", "--archive", db)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    _one_line_error(p, db)
    assert "in use by another process" in p.stderr
    assert _state(db) == before
    assert not db.with_name(db.name + ".repair").exists()


def test_an_index_that_lost_entries_loses_no_item(made: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    """The index page of a 9-item archive put in place of the 110-item one's: well-formed
    (SQLite's quick check passes), but 101 items missing from it. Before, export wrote 9
    of 110 items with exit 0. Now the open check refuses it; and export, reading the table
    rather than that index, loses no item even when the open check is skipped."""
    from collections import Counter

    from textsieve.archive import Archive
    from textsieve.archive.export import export

    src, built = made
    small_src, small = tmp_path / "small", tmp_path / "small.db"
    small_src.mkdir()
    for f in sorted(src.iterdir())[:9]:
        shutil.copyfile(f, small_src / f.name)
    assert textsieve("run", small_src, "--archive", small, "-q", "-j", "1").returncode == 0
    conn = sqlite3.connect(small)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    db = _copy(built, tmp_path)
    (page,) = _pages(db, "items_parent")
    assert _pages(small, "items_parent") == [page]
    data = bytearray(db.read_bytes())
    data[(page - 1) * 4096:page * 4096] = small.read_bytes()[(page - 1) * 4096:page * 4096]
    db.write_bytes(bytes(data))
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    conn.close()
    p = textsieve("export", "--to", tmp_path / "x", "--archive", db)
    _one_line_error(p, db)
    assert "missing from index items_parent" in p.stderr
    counts: Counter[str] = Counter()
    with Archive(db, readonly=True, check=False) as a:
        assert export(a, tmp_path / "y", "txt", counts=counts) == N
    assert len(list((tmp_path / "y").iterdir())) == N
    _repair_and_rerun(src, db, tmp_path)
