"""No process outlives the run that started it: workers, the helper programs they run and
the forked page readers and parser helpers all end when their parent is killed (SIGKILL,
SIGTERM), and SIGTERM stops ``textsieve run`` as cleanly as Ctrl-C.

The runs are real ``textsieve`` processes; a misbehaving extractor (tests/fault_plugins.py)
is installed by a small launcher before the CLI's main, as the pool tests do in-process.
"""

from __future__ import annotations

import os
import select
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from proctree import alive, descendants, reap, wait_until
from textsieve import Options, Status
from textsieve.run.pool import WorkerPool

TESTS = Path(__file__).resolve().parent
LAUNCHER = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from textsieve import detection as d
from textsieve.extractors import REGISTRY
REGISTRY[d.TEXT] = ["fault_plugins:wait_in_tool"]
from textsieve.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def stuck_run(tmp_path: Path):
    """A ``textsieve run -j 2`` whose two workers each wait on a helper program, after
    three ordinary files; yields (process, pids of the helpers, archive)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("a.csv", "b.csv", "c.csv"):
        (tree / name).write_text(f"file,word\n{name},heron\n")
    pid_files = [tmp_path / "h1.pid", tmp_path / "h2.pid"]
    for i, pid_file in enumerate(pid_files, 1):
        (tree / f"h{i}.txt").write_text(str(pid_file))
    launcher = tmp_path / "launch.py"
    launcher.write_text(LAUNCHER)
    db = tmp_path / "a.db"
    proc = subprocess.Popen([sys.executable, str(launcher), "run", "--archive", str(db),
                             "-j", "2", "--timeout", "300", str(tree)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: list[int] = []
    try:
        assert wait_until(lambda: all(p.exists() and p.read_text() for p in pid_files)
                          or proc.poll() is not None, 60), "the helpers did not start"
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        seen = descendants(proc.pid)
        helpers = [int(p.read_text()) for p in pid_files]
        assert set(helpers) <= set(seen)
        yield proc, seen, db
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        reap(seen)


def test_sigkill_of_run_takes_workers_and_their_helpers_along(stuck_run) -> None:
    proc, below, _ = stuck_run
    assert len(below) >= 4  # two workers, two helper programs (and the workers' guards)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert wait_until(lambda: not any(alive(p) for p in below), 5), \
        [p for p in below if alive(p)]
    # Nobody holds the run's stdout any more: `textsieve run ... | head` ends.
    assert select.select([proc.stdout], [], [], 5)[0] and proc.stdout.read() == b""


def test_sigterm_stops_run_cleanly_keeping_what_was_done(stuck_run) -> None:
    proc, below, db = stuck_run
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("SIGTERM did not end the run")
    err = proc.stderr.read().decode()
    assert rc == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    assert "textsieve: terminated (SIGTERM): what was committed is kept" in err
    assert wait_until(lambda: not any(alive(p) for p in below), 5), \
        [p for p in below if alive(p)]
    with sqlite3.connect(db) as conn:
        done = {k.rsplit("/", 1)[1] for (k,) in conn.execute(
            "SELECT key FROM items WHERE parent_id IS NULL")}
        status = conn.execute("SELECT status FROM runs ORDER BY id DESC").fetchone()[0]
    assert done == {"a.csv", "b.csv", "c.csv"}  # extracted before the stop: kept
    assert status == "interrupted"


FORKER = """
import os, sys, time
from textsieve import forking

out = sys.argv[1]

def job(j):
    open(os.path.join(out, str(os.getpid())), "w").close()
    time.sleep(100)
    return j

def nap(x):
    open(os.path.join(out, str(os.getpid())), "w").close()
    time.sleep(100)

if sys.argv[2] == "share":
    forking.share_jobs(job, 4, 3, timeout=300)
else:
    forking.call_isolated(nap, 1, timeout=300, memory=0)
"""


@pytest.mark.parametrize(("how", "kids"), [("share", 2), ("isolated", 1)])
def test_forked_readers_and_parser_helpers_die_with_their_parent(tmp_path: Path, how: str,
                                                                 kids: int) -> None:
    """share_jobs' page readers and call_isolated's helper each had a deadline of their
    own (the whole timeout) but lived on until it when their parent was killed."""
    script = tmp_path / "forker.py"
    script.write_text(FORKER)
    out = tmp_path / "pids"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, str(script), str(out), how])
    pids: list[int] = []

    def children() -> list[int]:  # in share_jobs the parent takes jobs too
        return [int(p.name) for p in out.iterdir() if int(p.name) != proc.pid]

    try:
        assert wait_until(lambda: len(children()) >= kids, 60)
        pids = children()
        assert len(pids) == kids and all(alive(p) for p in pids)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert wait_until(lambda: not any(alive(p) for p in pids), 5), \
            [p for p in pids if alive(p)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reap(pids)


def test_a_pool_made_in_a_short_lived_thread_keeps_its_workers(tmp_path: Path) -> None:
    """Workers die with the thread that forked them (the kernel's parent-death signal
    follows threads): a pool first used in a thread that has ended must still work."""
    note = tmp_path / "note.txt"
    note.write_text("egrets and herons")
    with WorkerPool(Options(workers=1)) as pool:
        got: list[object] = []
        t = threading.Thread(target=lambda: got.extend(pool.map([note])))
        t.start()
        t.join()
        assert [d.status for d in got] == [Status.OK]  # type: ignore[attr-defined]
        [doc] = list(pool.map([note]))
        assert doc.status is Status.OK, doc.error
        assert doc.text == "egrets and herons"
