"""The progress display of `textsieve run`: a live line on a real pseudo-terminal, plain
lines into a pipe, and the summary table at the end of both."""

from __future__ import annotations

import fcntl
import io
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from textsieve.run.progress import Progress
from textsieve.run.runner import RunStats

LIVE = re.compile(r"\r([^\r\n]*)\x1b\[K")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("progress") / "src"
    for i in range(40):
        sub = root / f"d{i % 4}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i:02d}.txt").write_text(f"file {i} says hello\n", encoding="utf-8")
    # one slower item in the middle (~0.3 s), so a terminal sees more than one redraw
    (root / "d1" / "f21.txt").write_text("".join(f"line {j} of a longer file\n"
                                                 for j in range(100_000)), encoding="utf-8")
    return root


def _env() -> dict[str, str]:
    return {**os.environ, "TERM": "xterm", "PYTHONUNBUFFERED": "1"}


def _run_in_pty(args: list[str], columns: int) -> tuple[int, str]:
    """Run textsieve with stdin/stdout/stderr on a pseudo-terminal; all it wrote, decoded."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "textsieve", *args], stdin=slave,
                            stdout=slave, stderr=slave, env=_env(), close_fds=True)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child side closed
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    return proc.wait(timeout=30), out.decode("utf-8", "replace")


def test_live_line_on_a_terminal(folder: Path, tmp_path: Path) -> None:
    rc, out = _run_in_pty(["run", str(folder), "--archive", str(tmp_path / "t.db"),
                           "-j", "1"], columns=120)
    assert rc == 0, out
    live = LIVE.findall(out)
    assert live[-1] == "", out  # the last thing drawn is the clear before the table
    live = live[:-1]
    assert len(live) >= 2, out  # redrawn in place as the run goes
    done = [int(re.search(r"([\d,]+)/[\d,]+\+? items", line)[1]) for line in live]
    assert done == sorted(done) and done[-1] > done[0], live
    for line in live:
        assert re.search(r" · ok \d+ · error \d+ · skipped \d+ · [\d.]+/s", line), line
        assert len(line) < 120, line  # fits: a wrapped line cannot be redrawn
        assert not line.startswith("[") or re.match(r"\[[#.]{20}\] ", line), line
    summary = out[out.rindex("\x1b[K") + 3:]  # the live line is cleared before the table
    assert "\x1b" not in summary
    assert re.search(r"items seen\s+40", summary), summary
    assert re.search(r"status ok\s+40", summary)
    assert re.search(r"archive\s+40 items", summary)


def test_narrow_terminal_keeps_the_line_on_one_row(folder: Path, tmp_path: Path) -> None:
    rc, out = _run_in_pty(["run", str(folder), "--archive", str(tmp_path / "t.db"),
                           "-j", "1"], columns=50)
    assert rc == 0, out
    live = [line for line in LIVE.findall(out) if line]
    assert live and all(len(line) <= 49 for line in live), live
    assert all("items" in line for line in live)


def test_plain_lines_into_a_pipe(folder: Path, tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    args = [sys.executable, "-m", "textsieve", "run", str(folder), "--archive", str(db),
            "-j", "1"]
    proc = subprocess.run(args, capture_output=True, text=True, env=_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "\x1b" not in proc.stderr
    assert proc.stdout == ""  # stdout stays clean for pipes
    lines = proc.stderr.splitlines()
    assert re.fullmatch(r"\d+/\d+\+? items · ok \d+ · error \d+ · skipped \d+ · [\d.]+/s.*",
                        lines[0]), lines[0]
    assert re.search(r"extracted\s+40", proc.stderr)
    # a re-run skips everything, and says so
    again = subprocess.run(args, capture_output=True, text=True, env=_env(), timeout=60)
    assert re.search(r"unchanged \(skipped\)\s+40", again.stderr)
    assert re.search(r"extracted\s+0\n", again.stderr)
    quiet = subprocess.run([*args, "-q"], capture_output=True, text=True, env=_env(),
                           timeout=60)
    assert quiet.stderr == ""


def test_line_fits_and_eta_counts_only_the_work_left() -> None:
    st = RunStats(total=1000, skipped=400, done=100, listing_done=True)
    st.status.update(ok=90, error=10)
    st.started -= 10.0  # 100 extracted in 10 s: 10/s, 500 left to extract -> 50 s
    p = Progress(io.StringIO(), tty=True, width=200)
    line = p.line(st)
    assert line.startswith("[##########..........] 500/1,000 items")
    assert "error 10" in line and "skipped 400" in line and "ETA 50s" in line
    for width in (30, 60, 90):
        assert len(Progress(io.StringIO(), tty=True, width=width).line(st)) < width
    assert "[" not in Progress(io.StringIO(), tty=False).line(st)


def test_interrupted_run_clears_the_line_and_still_summarises() -> None:
    out = io.StringIO()
    st = RunStats(total=10, done=3)
    st.status.update(ok=3)
    with pytest.raises(KeyboardInterrupt), Progress(out, tty=True, width=100) as p:
        p(st, None)
        raise KeyboardInterrupt
    text = out.getvalue()
    assert text.startswith("\r3/10+ items") and "\r\x1b[K" in text
    tail = text[text.rindex("\x1b[K") + 3:]
    assert tail.startswith("run interrupted") and re.search(r"extracted\s+3", tail)


def test_eta_before_the_listing_ends_comes_from_the_count_ahead() -> None:
    """The listing runs only a few items ahead of the extraction, so it ended just before
    the run did and big runs never showed an ETA; the count made ahead gives one."""
    st = RunStats(total=300, skipped=100, done=100, expected=1000)
    st.status.update(ok=100)
    st.started -= 10.0  # 10/s; 100 listed still to do, and 700 unlisted of which 2/3 new
    line = Progress(io.StringIO(), tty=True, width=200).line(st)
    assert line.startswith("[####................] 200/1,000 items"), line
    assert "ETA 56s" in line  # (100 + 700 * 2/3) / 10 per second
    st.expected = None  # not countable (a mailbox): no total, no ETA, as before
    line = Progress(io.StringIO(), tty=True, width=200).line(st)
    assert "200/300+ items" in line and "ETA" not in line


def test_folder_count_matches_what_is_listed(tmp_path: Path) -> None:
    from textsieve.sources.files import FileSource

    for name in ("a.txt", "b/c.txt", "b/d/e.txt", ".hidden", "b/.git/config"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("words")
    src = FileSource(str(tmp_path))
    assert src.count() == len(list(src.items())) == 3


def test_terminal_shows_an_eta_while_the_listing_is_still_going(folder: Path,
                                                                tmp_path: Path) -> None:
    rc, out = _run_in_pty(["run", str(folder), "--archive", str(tmp_path / "t.db"),
                           "-j", "1"], columns=160)
    assert rc == 0, out
    live = [line for line in LIVE.findall(out) if line]
    early = [line for line in live
             if int(re.search(r"([\d,]+)/[\d,]+\+? items", line)[1]) <= 30]
    assert early and any("/40 items" in line and "ETA" in line for line in early), live
