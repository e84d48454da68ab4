"""What a run shows while it works: a live bar on a terminal, plain lines otherwise,
and a summary table at the end. Writes to stderr so stdout stays clean for pipes."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from ..model import Document
from .runner import RunStats


def _fmt_secs(s: float) -> str:
    s = int(max(s, 0))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Progress:
    """Callable as the runner's progress hook."""

    def __init__(self, stream: TextIO | None = None, *, tty: bool | None = None,
                 interval: float | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval = interval if interval is not None else (0.1 if self.tty else 10.0)
        self.quiet = quiet
        self._last = 0.0
        self._width = 0

    def line(self, st: RunStats) -> str:
        elapsed = time.monotonic() - st.started
        handled = st.done + st.skipped
        rate = st.done / elapsed if elapsed > 0 else 0.0
        total = f"{st.total:,}" if st.listing_done else f"{st.total:,}+"
        parts = [f"{handled:,}/{total} items",
                 f"ok {st.status.get('ok', 0):,}",
                 f"empty {st.status.get('empty', 0):,}",
                 f"error {st.status.get('error', 0):,}",
                 f"skipped {st.skipped:,}",
                 f"{rate:.1f}/s"]
        left = st.total - handled
        if st.listing_done and rate > 0 and left > 0:
            parts.append(f"ETA {_fmt_secs(left / rate)}")
        text = " · ".join(parts)
        if self.tty and st.total:
            frac = handled / st.total
            filled = int(frac * 24)
            text = f"[{'#' * filled}{'.' * (24 - filled)}] {text}"
        return text

    def __call__(self, st: RunStats, doc: Document | None) -> None:
        if self.quiet:
            return
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        self._last = now
        text = self.line(st)
        if self.tty:
            pad = max(self._width - len(text), 0)
            self.stream.write(f"\r{text}{' ' * pad}")
            self._width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self, st: RunStats) -> None:
        if self.quiet:
            return
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
        self.stream.write(summary(st) + "\n")
        self.stream.flush()


def summary(st: RunStats) -> str:
    """The table printed at the end of a run."""
    elapsed = time.monotonic() - st.started
    rows = [("items seen", st.total), ("unchanged (skipped)", st.skipped),
            ("extracted", st.done)]
    rows += [(f"  {why}", n) for why, n in sorted(st.why.items())]
    rows += [(f"status {k}", v) for k, v in sorted(st.status.items())]
    rows += [(f"  error: {k}", v) for k, v in sorted(st.errors.items(), key=lambda x: -x[1])]
    width = max(len(r[0]) for r in rows)
    lines = [f"{name:<{width}}  {n:>8,}" for name, n in rows]
    rate = st.done / elapsed if elapsed > 0 else 0.0
    lines.append(f"{'time':<{width}}  {elapsed:>7.1f}s  ({rate:.1f} items/s)")
    return "\n".join(lines)
