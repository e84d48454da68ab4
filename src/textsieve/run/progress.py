"""What a run shows while it works: a live bar on a terminal, plain lines otherwise,
and a summary table at the end. Writes to stderr so stdout stays clean for pipes.

On a terminal the status line is redrawn in place (carriage return, then erase to the end
of the line) at most ten times a second, and always fits the terminal's width: a line that
wrapped could not be redrawn and would leave junk behind. Elsewhere (CI logs, files) a
plain line is printed at start and then every ``interval`` seconds, never a ``\\r``.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from types import TracebackType
from typing import Any, TextIO

from ..model import Document
from ..terminal import for_terminal
from .runner import RunStats

TTY_INTERVAL = 0.1  # redraws per second on a terminal: smooth, and cheap
PLAIN_INTERVAL = 10.0  # a line every 10 s: a log a person can still read
RATE_WINDOW = 30.0  # the rate (and ETA) is over the last 30 s: runs speed up and slow down
_BAR = 20
_ERASE = "\x1b[K"  # erase to the end of the line (every terminal since the VT100)


def _fmt_secs(s: float) -> str:
    s = int(max(s, 0))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class Progress:
    """The runner's progress hook (call it with the stats), and the end-of-run summary.

    Use it as a context manager around the run: if the run ends with an exception (Ctrl-C)
    the live line is cleared and the summary of what was done is still printed.
    """

    def __init__(self, stream: TextIO | None = None, *, tty: bool | None = None,
                 interval: float | None = None, quiet: bool = False,
                 width: int | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = _is_terminal(self.stream) if tty is None else tty
        self.interval = interval if interval is not None else (
            TTY_INTERVAL if self.tty else PLAIN_INTERVAL)
        self.quiet = quiet
        self._width = width
        self._last = float("-inf")
        self._drawn = False  # a live line is on screen and must be cleared before output
        self._finished = False
        self._stats: RunStats | None = None
        self._samples: deque[tuple[float, int]] = deque()

    # -- the live line ------------------------------------------------------------------------
    def columns(self) -> int:
        if self._width:
            return self._width
        try:
            cols = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            cols = 0
        return cols if cols > 0 else 80  # a fresh pseudo-terminal reports 0 x 0

    def rate(self, st: RunStats, now: float | None = None) -> float:
        """Items extracted per second over the last ``RATE_WINDOW`` seconds."""
        now = time.monotonic() if now is None else now
        samples = self._samples
        if not samples or samples[-1][1] != st.done:
            samples.append((now, st.done))
        while len(samples) > 2 and now - samples[1][0] > RATE_WINDOW:
            samples.popleft()
        t0, d0 = samples[0] if len(samples) > 1 else (st.started, 0)
        return (st.done - d0) / (now - t0) if now > t0 else 0.0

    @staticmethod
    def outlook(st: RunStats) -> tuple[int | None, float]:
        """(the run's total if known, items left to extract): exact once the listing is
        done; before, from the count made ahead, assuming the items not listed yet are
        unchanged (skipped) as often as those listed so far."""
        left = st.total - st.skipped - st.done
        if st.listing_done:
            return st.total, left
        if st.expected is None or st.expected < st.total:
            return None, left
        fresh = 1 - st.skipped / st.total if st.total else 1.0
        return st.expected, left + (st.expected - st.total) * fresh

    def line(self, st: RunStats, width: int | None = None) -> str:
        """The status line, fitted to ``width`` columns (least useful parts dropped first)."""
        handled = st.done + st.skipped
        rate = self.rate(st)
        known, left = self.outlook(st)
        total = f"{st.total:,}+" if known is None else f"{known:,}"
        parts = [f"{handled:,}/{total} items", f"ok {st.status.get('ok', 0):,}"]
        if st.status.get("empty"):
            parts.append(f"empty {st.status['empty']:,}")
        if st.status.get("listed"):  # --fetch never: archived as listed, not fetched
            parts.append(f"listed {st.status['listed']:,}")
        parts += [f"error {st.status.get('error', 0):,}", f"skipped {st.skipped:,}",
                  f"{rate:.1f}/s"]
        if known is not None and left > 0 and rate > 0:
            parts.append(f"ETA {_fmt_secs(left / rate)}")
        text = " · ".join(parts)
        if not self.tty:
            return text
        width = (width or self.columns()) - 1  # never the last column: some terminals wrap
        if known:
            filled = min(int(handled / known * _BAR), _BAR)
            bar = f"[{'#' * filled}{'.' * (_BAR - filled)}] "
            if len(bar) + len(text) <= width:
                return bar + text
        if len(text) > width:
            text = " ".join(parts)
        return text[:width]

    def __call__(self, st: RunStats, doc: Document | None) -> None:
        self._stats = st
        while st.dead_ends:  # each on a line of its own, -q or not: the user's to fix
            path, error = st.dead_ends.popleft()
            self._line(f"textsieve: {for_terminal(path, one_line=True)}: {error.kind}: "
                       f"{for_terminal(error.message, one_line=True)}")
        if self.quiet:
            return
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        self._last = now
        text = self.line(st)
        try:
            if self.tty:
                self.stream.write(f"\r{text}{_ERASE}")
                self._drawn = True
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: the run goes on
            self.quiet = True

    def _line(self, text: str) -> None:
        """A line of its own above the live line (which is redrawn at the next update)."""
        try:
            self.clear()
            self.stream.write(text + "\n")
            self.stream.flush()
            self._last = float("-inf")
        except (OSError, ValueError):  # the terminal went away: the run goes on
            self.quiet = True

    # -- the end ------------------------------------------------------------------------------
    def clear(self) -> None:
        """Remove the live line, leaving the cursor at the start of an empty line."""
        if self._drawn:
            self.stream.write(f"\r{_ERASE}")
            self._drawn = False

    def finish(self, st: RunStats, totals: dict[str, Any] | None = None, *,
               interrupted: bool = False) -> None:
        """Print the summary table (and the archive's totals, when given)."""
        self._finished = True
        if self.quiet:
            return
        try:
            self.clear()
            self.stream.write(summary(st, totals, interrupted=interrupted) + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._finished:
            return
        if self._stats is not None and exc_type is not None:
            self.finish(self._stats, interrupted=True)
        else:
            self.clear()


def summary(st: RunStats, totals: dict[str, Any] | None = None, *,
            interrupted: bool = False) -> str:
    """The table printed at the end of a run."""
    elapsed = time.monotonic() - st.started
    rows: list[tuple[str, str]] = [("items seen", f"{st.total:,}"),
                                   ("unchanged (skipped)", f"{st.skipped:,}"),
                                   ("extracted", f"{st.done:,}")]
    rows += [(f"  {why}", f"{n:,}") for why, n in sorted(st.why.items())]
    rows += [(f"status {k}", f"{v:,}") for k, v in sorted(st.status.items())]
    rows += [(f"  error: {k}", f"{v:,}")
             for k, v in sorted(st.errors.items(), key=lambda x: -x[1])]
    rows += [(f"  source failed, text kept: {k}", f"{v:,}")
             for k, v in sorted(st.gone.items(), key=lambda x: -x[1])]
    rate = st.done / elapsed if elapsed > 0 else 0.0
    rows.append(("time", f"{elapsed:.1f}s ({rate:.1f} items/s)"))
    if totals:
        rows.append(("archive", f"{totals['items']:,} items "
                                f"(+{totals['children']:,} members/attachments), "
                                f"{totals['errors']:,} with errors, "
                                f"{totals['file_bytes'] / 1e6:.1f} MB"))
    width = max(len(name) for name, _ in rows)
    num = max(len(v) for name, v in rows if name not in ("time", "archive"))
    lines = [f"{name:<{width}}  {v:>{num}}" if name not in ("time", "archive") else
             f"{name:<{width}}  {v}" for name, v in rows]
    if interrupted:
        lines.insert(0, "run interrupted: what was committed is kept; run again to resume")
    return "\n".join(lines)
