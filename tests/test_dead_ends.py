"""Paths that lead nowhere: symbolic links in a loop, links to nothing, files and folders
this user may not read, a named pipe or a device in a folder. Each is a typed record with
a clear kind (never ``internal``, "a bug"), for `textsieve extract` and `textsieve run`
alike: a line on stderr, the exit code, the JSON record, the archive's row. A pipe is
never opened, so it never holds a command up. Real files, links and pipes; the CLI in a
subprocess (run as an unprivileged user for the permission cases: root reads anything).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

NOBODY = 65534


def textsieve(*args: object, user: int | None = None,
              timeout: float = 120) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "textsieve", *map(str, args)]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    """ok.txt, then every kind of dead end (a socket stands for a device: anyone can
    make one; a real device too when root)."""
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "ok.txt").write_text("a file that reads\n")
    (d / "sub" / "deep.txt").write_text("below the dead ends\n")
    os.symlink("loop-b", d / "loop-a")
    os.symlink("loop-a", d / "loop-b")
    os.symlink("missing.txt", d / "dangling.txt")
    os.mkfifo(d / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(d / "sock"))
    if os.geteuid() == 0:
        os.mknod(d / "zero", 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero: endless
    yield d
    sock.close()


EXPECTED = {"loop-a": "symlink_loop", "loop-b": "symlink_loop",
            "dangling.txt": "dangling_link", "pipe": "not_regular", "sock": "not_regular",
            "zero": "not_regular"}


def _expected(d: Path) -> dict[str, str]:
    return {k: v for k, v in EXPECTED.items() if os.path.lexists(d / k)}


def test_extract_gives_each_dead_end_its_kind_and_never_opens_a_pipe(tree: Path) -> None:
    # A long deadline: a pipe opened would wait for its writer far past this test's limit.
    p = textsieve("extract", tree, "-f", "json", "--timeout", "600", timeout=60)
    assert p.returncode == 1, p.stderr
    records = {Path(r["path"]).name: r for r in map(json.loads, p.stdout.splitlines())}
    kinds = {name: (r["error"] or {}).get("kind") for name, r in records.items()}
    assert kinds == {**_expected(tree), "ok.txt": None, "deep.txt": None}, kinds
    for name, kind in _expected(tree).items():
        assert f"textsieve: {tree / name}: {kind}: " in p.stderr, p.stderr
    assert "loop-a -> loop-b -> loop-a" in records["loop-a"]["error"]["message"]
    assert "missing.txt" in records["dangling.txt"]["error"]["message"]
    assert "named pipe" in records["pipe"]["error"]["message"]
    assert "internal" not in p.stderr and "Traceback" not in p.stderr

    # Named one by one, the links are the same typed records (not "a bug").
    p = textsieve("extract", tree / "loop-a", "-f", "json", timeout=60)
    assert p.returncode == 1 and json.loads(p.stdout)["error"]["kind"] == "symlink_loop"
    p = textsieve("extract", tree / "dangling.txt", "-f", "json", timeout=60)
    assert p.returncode == 1 and json.loads(p.stdout)["error"]["kind"] == "dangling_link"
    p = textsieve("detect", tree, timeout=60)
    assert p.returncode == 1 and f"{tree / 'pipe'}: not_regular" in p.stderr, p.stderr


def _rows(db: Path) -> dict[str, tuple[str, str | None]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {Path(k).name: (s, e) for k, s, e in
                conn.execute("SELECT key, status, error_kind FROM items")}
    finally:
        conn.close()


def test_run_records_and_reports_each_dead_end_once(tree: Path, tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    p = textsieve("run", tree, "--archive", db, "-q", "--timeout", "600", timeout=60)
    assert p.returncode == 1, p.stderr
    rows = _rows(db)
    assert rows == {**{n: ("error", k) for n, k in _expected(tree).items()},
                    "ok.txt": ("ok", None), "deep.txt": ("ok", None)}, rows
    lines = p.stderr.splitlines()
    for name, kind in _expected(tree).items():
        assert any(ln.startswith(f"textsieve: {tree / name}: {kind}: ") for ln in lines), lines

    # The same dead ends again: nothing new to say, nothing failed in this run.
    p = textsieve("run", tree, "--archive", db, "-q", timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    # Mended (the link's target appears): read at once, on a plain re-run.
    (tree / "missing.txt").write_text("the target is here now\n")
    p = textsieve("run", tree, "--archive", db, "-q", timeout=60)
    assert p.returncode == 0, p.stderr
    assert _rows(db)["dangling.txt"] == ("ok", None)
    p = textsieve("search", "target", "--archive", db)
    assert "dangling.txt" in p.stdout, p.stdout


def test_a_named_pipe_nobody_writes_to_does_not_hold_a_run(tmp_path: Path) -> None:
    fifo = tmp_path / "silent"
    os.mkfifo(fifo)
    db = tmp_path / "a.db"
    p = textsieve("run", fifo, "--archive", db, "-q", "--timeout", "1", timeout=60)
    assert p.returncode == 1, p.stderr
    assert f"textsieve: {fifo}: timeout: nothing was written to the pipe" in p.stderr


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder another user can work in (pytest's own temporary folders are private)."""
    d = Path(tempfile.mkdtemp(prefix="textsieve-perm-"))
    d.chmod(0o777)
    yield d
    for p in d.rglob("*"):
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)
    shutil.rmtree(d)


def test_what_this_user_may_not_read_is_a_permission_record(shared_dir: Path) -> None:
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root reads anything, and setpriv is not there to drop that")
        user: int | None = NOBODY
    else:
        user = None
    d = shared_dir / "d"
    (d / "locked").mkdir(parents=True)
    (d / "ok.txt").write_text("a file that reads\n")
    (d / "locked" / "inside.txt").write_text("never seen\n")
    (d / "secret.txt").write_text("not yours\n")
    for p in (d, d / "ok.txt"):
        p.chmod(0o755)
    (d / "locked").chmod(0o000)
    (d / "secret.txt").chmod(0o000)
    db = shared_dir / "a.db"
    p = textsieve("run", d, "--archive", db, "-q", user=user, timeout=60)
    assert p.returncode == 1, p.stderr
    assert _rows(db) == {"ok.txt": ("ok", None), "secret.txt": ("error", "permission"),
                         "locked": ("error", "permission")}
    assert f"textsieve: {d / 'locked'}: permission: permission denied: this user may not " \
        "list the folder" in p.stderr, p.stderr
    assert f"textsieve: {d / 'secret.txt'}: permission: " in p.stderr

    p = textsieve("extract", d / "secret.txt", "-f", "json", user=user, timeout=60)
    assert p.returncode == 1 and json.loads(p.stdout)["error"]["kind"] == "permission", \
        p.stdout + p.stderr
