"""Finished work is committed promptly, in completion order: a slow item (a big scan read by
tesseract) never holds back the items that finished after it. Search sees them during the
run, and a kill -9 at that moment loses none of them; the same command then resumes.

Real parts: the `textsieve run` command in its own process group, real tesseract on a
3000x4000 scan, a second SQLite connection (and `textsieve search`) reading the archive.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
SCAN = "0000-scan.png"  # sorted first: the folder is listed in name order
N_SMALL = 1500


def make_tree(root: Path, small: int = N_SMALL) -> None:
    """A 3000x4000 scan of dense text first, then ``small`` small text files."""
    root.mkdir(parents=True)
    rng = random.Random(7)
    words = ["archive", "keeps", "what", "it", "read", "so", "that", "outlives", "the",
             "web", "every", "page", "scan", "line", "tesseract", "reads", "slowly"]
    img = Image.new("L", (3000, 4000), 255)
    draw, font, y = ImageDraw.Draw(img), ImageFont.truetype(FONT, 30), 120
    while y < 3880:
        draw.text((120, y), " ".join(rng.choice(words) for _ in range(20)), font=font,
                  fill=0)
        y += 44
    img.save(root / SCAN)
    for i in range(small):
        (root / f"f{i:04d}.txt").write_text(f"small file {i} tern{i}x heron\n")


def run_cmd(src: Path, db: Path) -> list[str]:
    return [sys.executable, "-m", "textsieve", "run", str(src), "--archive", str(db),
            "-j", "2", "-q"]


def seen(db: Path) -> tuple[int, bool]:
    """(small files committed, the scan committed), read as another process would."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            small, scan = conn.execute(
                "SELECT count(*) FILTER (WHERE name != ?), count(*) FILTER (WHERE name = ?) "
                "FROM items WHERE parent_id IS NULL", (SCAN, SCAN)).fetchone()
            return small, bool(scan)
        finally:
            conn.close()
    except sqlite3.OperationalError:  # not created yet
        return 0, False


def runs(db: Path) -> list[tuple[str, dict[str, int]]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [(s, json.loads(c)) for s, c in
                conn.execute("SELECT status, counts FROM runs ORDER BY id")]
    finally:
        conn.close()


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("commits") / "tree"
    make_tree(root)
    return root


def test_small_files_are_searchable_while_the_scan_runs_and_survive_kill_9(
        tree: Path, tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    proc = subprocess.Popen(run_cmd(tree, db), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while True:
            small, scan = seen(db)
            assert not scan, f"the scan was committed before the small files ({small} " \
                "of them): they waited for it"
            if small >= 300:
                break
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
            assert time.monotonic() < deadline, f"only {small} small files committed"
            time.sleep(0.01)
        # What a user does meanwhile: search finds a file that finished after the scan
        # started, while the scan is still being read.
        hit = subprocess.run([sys.executable, "-m", "textsieve", "search", "tern5x",
                              "--archive", str(db)], capture_output=True, text=True,
                             timeout=60)
        assert hit.returncode == 0 and "f0005.txt" in hit.stdout, hit.stderr
        small, scan = seen(db)
        assert not scan and proc.poll() is None, "the scan finished too soon for this test"
        kill_group(proc)
    finally:
        if proc.poll() is None:
            kill_group(proc)

    # Nothing committed was lost; the scan (unfinished) is not there.
    after, scan = seen(db)
    assert after >= small and not scan
    (status, counts), = runs(db)
    assert status == "running"  # killed: marked interrupted when the next run begins
    # The killed run's record says what it had committed by then.
    assert counts["extracted"] >= small and counts.get("status_ok", 0) >= small

    # The same command resumes: only what was not committed is extracted.
    done = subprocess.run(run_cmd(tree, db), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert seen(db) == (N_SMALL, True)
    (first, _), (second, last) = runs(db)
    assert (first, second) == ("interrupted", "completed")
    assert last["extracted"] == N_SMALL + 1 - after and last["skipped"] == after
    assert last.get("status_error", 0) == 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT count(*) FROM items WHERE status != 'ok'").fetchone() \
            == (0,)
        text = conn.execute("SELECT count(*) FROM items_fts WHERE items_fts MATCH "
                            "'tesseract'").fetchone()[0]
        assert text == 1  # the scan was read, by OCR
    finally:
        conn.close()
