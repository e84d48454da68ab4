"""Work budgets for the tests that show a bomb or a hostile input is cut short.

Those tests used wall-clock bounds (``< 5 s``, ``< 20 s``), which flake on a loaded machine:
time spent waiting for a core counts as the input's. Here the work is measured as CPU time
of this process (every thread of it, none of the waiting), and the bound is relative to a
peer measured in the same test, on the same machine, at the same moment: the least work a
naive reader would do with what the bomb describes (inflating its bytes), or the same call
on a smaller or healthy input. A slower machine moves both sides; a regression that does
the naive work still fails.
"""

from __future__ import annotations

import math
import resource
import time
import zlib
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
MiB = 1 << 20
_ZEROS = zlib.compress(bytes(MiB), 9)  # 1 MiB of zeros, deflated (about 1 KB)


def cpu(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()``'s result and the CPU seconds this process spent on it."""
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def cpu_with_children(fn: Callable[[], T]) -> tuple[T, float]:
    """Like ``cpu``, plus the CPU of the child processes ``fn`` started and reaped (helper
    programs such as catdoc)."""
    def children() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime
    c0 = children()
    out, own = cpu(fn)
    return out, own + children() - c0


def inflate_cpu(mib: int) -> float:
    """CPU seconds to inflate ``mib`` MiB of zeros here and now, 1 MiB at a time: less
    than any reader spends that unpacks that much (best of three runs)."""
    best = math.inf
    for _ in range(3):
        t = time.process_time()
        for _ in range(mib):
            zlib.decompress(_ZEROS)
        best = min(best, time.process_time() - t)
    return best


def wall(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()``'s result and the wall seconds it took (for work done in other processes:
    compare it with a peer timed the same way, side by side)."""
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t
