"""Which processes live below a process, and whether one still runs: what the orphan tests
(tests/test_orphans.py, tests/test_server.py) look at after killing a parent."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path


def descendants(root: int) -> list[int]:
    """Every living process below ``root`` (children, their children ...)."""
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            kids.setdefault(int(fields[1]), []).append(int(d.name))
    out, todo = [], [root]
    while todo:
        for kid in kids.get(todo.pop(), []):
            out.append(kid)
            todo.append(kid)
    return out


def alive(pid: int) -> bool:
    """Running (a zombie is gone in every way that matters: no CPU, no open files)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rpartition(")")[2].split()[0] \
            != "Z"
    except OSError:
        return False


def wait_until(pred: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def reap(pids: list[int]) -> None:
    """Clean up after a failed check: no test leaves processes behind."""
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
