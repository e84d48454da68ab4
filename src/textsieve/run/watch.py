"""``textsieve watch SOURCES --every 30m``: the incremental run, again and again.

Each round is one ordinary incremental run over the sources that are due (what is new
in a mailbox, a feed, a folder), recorded in the archive like any run; the items of an
incremental source whose last attempt failed for a passing reason (a server error, a
timeout), also the revised feed entry whose article could not be fetched again, are
listed again with it (the run does that: ``retry.owed``). A source that
fails as a whole (a mail server down, credentials refused, a folder gone) is skipped by
the next rounds for longer and longer (doubling from one interval up to ``MAX_BACKOFF``)
while the others go on; the feeds of a feed or OPML source back off one by one (a
feed that fails is asked again later and later, across rounds, kept in the archive's
source state).

Stopping: SIGINT or SIGTERM during a round stops it the way they stop ``run`` (the batch
in hand committed, the run marked interrupted); between rounds they end the wait at
once. Either way the archive is consistent and the next ``watch`` or ``run`` resumes.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import TextsieveError, UsageError
from ..model import Item
from ..options import Options

logger = logging.getLogger(__name__)

MAX_BACKOFF = 24 * 3600.0  # a source down for days is tried once a day
_EVERY = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)", re.I)
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_every(text: str) -> float:
    """``30m``, ``1h``, ``90s``, ``1h30m``, ``2d`` or plain seconds -> seconds (at least
    one second)."""
    s = text.strip().lower()
    pos, total = 0, 0.0
    for m in _EVERY.finditer(s):
        if m.start() != pos or (not m.group(2) and m.end() != len(s)):
            break
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if not s or pos != len(s) or total < 1:
        raise UsageError(f"--every {text!r}: give an interval such as 30m, 1h, 90s or 1h30m "
                         "(at least 1s)")
    return total


@dataclass
class _Health:
    failures: int = 0
    next_try: float = 0.0
    error: str | None = None


@dataclass
class Round:
    """What one round did."""

    number: int
    started: float
    counts: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # sources backing off this round
    failed: dict[str, str] = field(default_factory=dict)  # source -> why, this round


class _Guarded:
    """A source whose failure as a whole ends only its own part of the round: it is
    noted (for the back-off) and its sync state is not advanced."""

    def __init__(self, source: Any, failed: Callable[[str, str], None]) -> None:
        self.source, self.spec, self._failed = source, source.spec, failed
        self.broken = False
        if hasattr(source, "bind_state"):
            self.bind_state = self._bind
        if hasattr(source, "new_state"):
            self.new_state = self._new_state
        self._bound: dict[str, str] = {}

    def _bind(self, state: dict[str, str]) -> None:
        self._bound = dict(state)
        self.source.bind_state(state)

    def _new_state(self) -> dict[str, str]:
        return self._bound if self.broken else self.source.new_state()

    def items(self) -> Iterator[Item]:
        try:
            yield from self.source.items()
        except TextsieveError as exc:
            self.broken = True
            self._failed(self.spec, exc.message)
        except OSError as exc:
            self.broken = True
            self._failed(self.spec, f"{type(exc).__name__}: {exc}")


class Watcher:
    """Runs ``specs`` into ``archive`` every ``every`` seconds until stopped."""

    def __init__(self, specs: list[str], archive: Any, options: Options, every: float, *,
                 exclude: frozenset[str] = frozenset(),
                 report: Callable[[Round], None] | None = None,
                 progress: Callable[..., None] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.specs, self.archive, self.options, self.every = specs, archive, options, every
        self.exclude = exclude
        self.report = report or (lambda r: None)
        self.progress = progress  # a run's progress callback (failures printed as they come)
        self.clock = clock
        self.health: dict[str, _Health] = {s: _Health() for s in specs}
        self.rounds = 0

    def _fail(self, spec: str, why: str, now: float) -> None:
        h = self.health[spec]
        h.failures += 1
        h.error = why
        h.next_try = now + min(MAX_BACKOFF, self.every * 2 ** (h.failures - 1))
        logger.debug("%s: %s (next try in %.0fs)", spec, why, h.next_try - now)

    def round(self) -> Round:
        """One incremental run over the sources that are due."""
        from ..run.runner import run
        from ..sources import open_source

        self.rounds += 1
        now = self.clock()
        r = Round(self.rounds, now)
        sources: list[Any] = []  # guarded sources (ItemSource by protocol)
        for spec in self.specs:
            h = self.health[spec]
            if h.next_try > now:
                r.skipped.append(spec)
                continue
            try:
                src = open_source(spec, exclude=self.exclude, options=self.options)
            except TextsieveError as exc:
                r.failed[spec] = exc.message
                self._fail(spec, exc.message, now)
                continue
            if hasattr(src, "backoff"):
                src.backoff = True  # a feed source: each failing feed waits its turn
            sources.append(_Guarded(src, lambda s, why: r.failed.__setitem__(s, why)))
        if sources:  # the run lists what they owe from before too (``retry.owed``)
            stats = run(sources, self.archive, self.options, progress=self.progress,
                        run_options={"mode": "watch", "round": self.rounds})
            r.counts = stats.as_dict()
        for spec in self.specs:
            if spec in r.failed:
                if self.health[spec].next_try <= now:  # failed while listing
                    self._fail(spec, r.failed[spec], now)
            elif spec not in r.skipped:
                self.health[spec] = _Health()
        self.report(r)
        return r

    def loop(self, wait: Callable[[float], bool], rounds: int | None = None) -> int:
        """Rounds until ``wait(seconds)`` says stop (returns True) or ``rounds`` are done;
        the number of rounds run. A round starts ``every`` seconds after the last one
        started (at once if it took longer)."""
        while True:
            started = self.clock()
            self.round()
            if rounds is not None and self.rounds >= rounds:
                return self.rounds
            if wait(max(0.0, started + self.every - self.clock())):
                return self.rounds


def describe(r: Round) -> str:
    """A round as the one line ``watch`` prints."""
    c = r.counts
    errors = sum(v for k, v in c.items() if k.startswith("status_error"))
    new, changed = c.get("why_new", 0), c.get("why_changed", 0)
    done = ", ".join(f"{n} {what}" for n, what in (
        (new, "new"), (changed, "changed"),
        (c.get("extracted", 0) - new - changed, "extracted again"),
        (c.get("skipped", 0), "unchanged"), (errors, "failed")) if n) or "nothing new"
    waits = f"; backing off: {', '.join(r.skipped)}" if r.skipped else ""
    return f"textsieve watch: round {r.number}: {done}{waits}"


def watch_process(conn: Any, specs: list[str], path: str, options: Options,
                  every: float) -> None:
    """``serve --watch``: the watch in a process of its own (a run's worker pool forks,
    which a threaded server must not), until the server closes its pipe or sends
    anything; SIGTERM stops a round in progress the way it stops ``run``."""
    import signal
    import sys

    from ..archive import Archive
    from ..terminal import for_terminal

    def stop(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise KeyboardInterrupt

    def report(r: Round) -> None:
        lines = [describe(r)] + [f"textsieve: {s}: {why}" for s, why in r.failed.items()]
        for line in lines:
            print(for_terminal(line, one_line=True), file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, stop)
    try:
        with Archive(path) as archive:
            Watcher(specs, archive, options, every, report=report).loop(conn.poll)
    except KeyboardInterrupt:
        pass
    except TextsieveError as exc:
        print(f"textsieve watch: {for_terminal(exc.message, one_line=True)}", file=sys.stderr)
