"""Page-parallel reading: forked processes share a long document's pages.

Real forks, real PDFs (reportlab): the parallel result must equal the one-process result
page for page, a failing child must cost nothing, and nothing may hang or leak a process.

textsieve never forks while other threads run, and the test session has some (the local
HTTP server of other tests), so the cases that need a fork run in a fresh interpreter:
each ``_case_*`` function is called there by its ``test_*`` twin through ``_fresh``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import textsieve
import textsieve.forking as forking
from textsieve.bytesource import Source
from textsieve.core import extract_source
from textsieve.options import Options

canvas = pytest.importorskip("reportlab.pdfgen.canvas")


def _children() -> set[int]:
    """PIDs of this process's live children (zombies included)."""
    me = str(os.getpid())
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me:
                out.add(int(entry.name))
    return out


def _fresh(case: str, *args: str) -> None:
    """Run ``case(*args)`` of this file in a new, single-threaded interpreter. The file is
    imported as a module, so its functions can be sent to the isolated helper by name."""
    code = ("import importlib, sys; sys.path.insert(0, sys.argv[1]); "
            "getattr(importlib.import_module('test_forking'), sys.argv[2])(*sys.argv[3:])")
    res = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), case, *args],
                         capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stdout + res.stderr


# -- share_jobs ------------------------------------------------------------------------------

def test_jobs_are_shared_between_processes_and_come_back_in_order() -> None:
    _fresh("_case_shared")


def _case_shared() -> None:
    before = _children()

    def job(j: int) -> tuple[int, int]:
        time.sleep(0.005)  # long enough that the child gets some of the jobs
        return j * j, os.getpid()

    assert forking.can_fork()
    out = forking.share_jobs(job, 40, 2, timeout=30)
    assert [r[0] for r in out] == [j * j for j in range(40)]
    pids = {r[1] for r in out}
    assert os.getpid() in pids and len(pids) == 2, "both processes should take jobs"
    assert _children() <= before, "every child is reaped"


def test_a_failing_child_costs_nothing() -> None:
    _fresh("_case_failing_child")


def _case_failing_child() -> None:
    parent = os.getpid()

    def job(j: int) -> int:
        if os.getpid() != parent:
            os._exit(3)  # the child dies mid-way (like a native crash)
        return j + 1

    assert forking.can_fork()
    assert forking.share_jobs(job, 20, 2, timeout=30) == list(range(1, 21))


def test_a_child_past_the_deadline_is_killed() -> None:
    _fresh("_case_deadline")


def _case_deadline() -> None:
    assert forking.can_fork()
    parent = os.getpid()
    before = _children()

    def job(j: int) -> int:
        time.sleep(60 if os.getpid() != parent else 0.05)  # the child surely claims one
        return j

    t = time.monotonic()
    with pytest.raises(forking.JobsTimeout):
        forking.share_jobs(job, 10, 2, timeout=1.0)
    assert time.monotonic() - t < 10
    assert _children() <= before, "the stuck child is killed and reaped"


def test_no_fork_while_other_threads_run() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not forking.can_fork()
        pids = forking.share_jobs(lambda j: os.getpid(), 10, 2, timeout=30)
        assert set(pids) == {os.getpid()}
    finally:
        stop.set()
        other.join()


# -- call_isolated: one helper process, kept between calls ----------------------------------

_kept: list[bytearray] = []


def _hold(n: int) -> int:
    """Keep ``n`` bytes alive in the helper (a parser that leaks) and say who we are."""
    _kept.append(bytearray(n))
    return os.getpid()


def _fail() -> None:
    raise ValueError("the parser's own error")


def test_isolated_calls_share_one_helper_and_errors_come_back() -> None:
    _fresh("_case_helper_kept")


def _case_helper_kept() -> None:
    call = forking.call_isolated
    first = call(os.getpid, timeout=10, memory=1 << 30)
    assert first != os.getpid(), "the call runs in another process"
    assert call(os.getpid, timeout=10, memory=1 << 30) == first, "the helper is kept"
    assert call(len, b"four", timeout=10, memory=1 << 30) == 4
    with pytest.raises(ValueError, match="the parser's own error"):
        call(_fail, timeout=10, memory=1 << 30)
    assert call(os.getpid, timeout=10, memory=1 << 30) == first, "an error is no reason to go"
    with pytest.raises(MemoryError):  # the cap holds: 2 GB asked, 256 MB allowed
        call(bytearray, 2 << 30, timeout=10, memory=256 << 20)
    assert call(os.getpid, timeout=10, memory=1 << 30) != first, "a new cap, a new helper"


def test_a_dead_or_stuck_helper_is_replaced() -> None:
    _fresh("_case_helper_replaced")


def _case_helper_replaced() -> None:
    call = forking.call_isolated
    before = _children()
    first = call(os.getpid, timeout=10, memory=1 << 30)
    with pytest.raises(forking.CallDied):
        call(os.abort, timeout=10, memory=1 << 30)  # a native crash
    second = call(os.getpid, timeout=10, memory=1 << 30)
    assert second not in (first, os.getpid())
    t = time.monotonic()
    with pytest.raises(forking.JobsTimeout):
        call(time.sleep, 60, timeout=1, memory=1 << 30)
    assert time.monotonic() - t < 10
    assert call(os.getpid, timeout=10, memory=1 << 30) not in (second, os.getpid())
    assert len(_children() - before) == 1, "the dead and the stuck helper are reaped"


def test_a_helper_that_keeps_memory_is_retired() -> None:
    """A parser that leaks would shrink the next file's allowance: after a call that
    leaves over half of it in use, the helper leaves and the next call gets a fresh one."""
    _fresh("_case_helper_retired")


def _case_helper_retired() -> None:
    call = forking.call_isolated
    first = call(_hold, 1 << 20, timeout=10, memory=256 << 20)
    assert call(_hold, 1 << 20, timeout=10, memory=256 << 20) == first
    assert call(_hold, 200 << 20, timeout=10, memory=256 << 20) == first  # answered, then gone
    assert call(_hold, 1 << 20, timeout=10, memory=256 << 20) != first


def test_a_forked_child_does_not_talk_to_its_parents_helper() -> None:
    _fresh("_case_helper_after_fork")


def _case_helper_after_fork() -> None:
    call = forking.call_isolated
    helper = call(os.getpid, timeout=10, memory=1 << 30)
    pid = os.fork()
    if pid == 0:  # the child starts its own helper; the parent's pipe is not shared
        os._exit(0 if call(os.getpid, timeout=10, memory=1 << 30) not in (helper, 0) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert call(os.getpid, timeout=10, memory=1 << 30) == helper, "the parent's is intact"


@pytest.mark.parametrize("refuse", ["second pipe", "fork"])
def test_a_refused_pipe_or_fork_leaves_nothing_open(monkeypatch: pytest.MonkeyPatch,
                                                    refuse: str) -> None:
    """Out of file descriptors or processes: no helper, and the pipes made so far are
    closed again (the helper needs two; a leak per call would exhaust the process)."""
    real_pipe, made = os.pipe, []

    def pipe() -> tuple[int, int]:
        if refuse == "second pipe" and made:
            raise OSError(24, "Too many open files")
        fds = real_pipe()
        made.append(fds)
        return fds

    def no_fork() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "pipe", pipe)
    monkeypatch.setattr(os, "fork", no_fork)
    assert forking._start_helper(1 << 30) is None
    assert made, "the first pipe was made"
    for r, w in made:
        for fd in (r, w):
            with pytest.raises(OSError):
                os.fstat(fd)  # closed


def test_isolated_call_with_threads_running_is_still_isolated() -> None:
    """A web server or a Ray worker runs threads: no fork from here, but the helper comes
    from the forkserver, and its memory cap and deadline hold (isolation is never off)."""
    # An earlier test may have started a helper while this process had one thread: set it
    # aside, so that the call must decide afresh, with a thread running.
    if forking._helper is not None:
        forking._retire(forking._helper)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    call = forking.call_isolated
    try:
        helper = call(os.getpid, timeout=30, memory=1 << 30)
        assert helper != os.getpid(), "the call runs in another process"
        assert forking._helper is not None and forking._helper.proc is not None
        assert call(os.getpid, timeout=30, memory=1 << 30) == helper, "the helper is kept"
        with pytest.raises(MemoryError):  # the cap holds: 2 GB asked, 256 MB allowed
            call(bytearray, 2 << 30, timeout=30, memory=256 << 20)
        with pytest.raises(forking.JobsTimeout):
            call(time.sleep, 60, timeout=1, memory=256 << 20)
        with pytest.raises(forking.CallDied):
            call(os.abort, timeout=30, memory=256 << 20)
    finally:
        if forking._helper is not None:
            forking._retire(forking._helper, kill=True)
        stop.set()
        other.join()


# -- long PDFs -------------------------------------------------------------------------------

def _long_pdf(path: Path, pages: int) -> Path:
    c = canvas.Canvas(str(path))
    for p in range(1, pages + 1):
        y = 800
        for line in range(40):
            c.drawString(50, y, f"page {p} line {line} marker{p}x{line} quarterly revenue")
            y -= 18
        c.showPage()
    c.save()
    return path


@pytest.fixture(scope="module")
def long_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _long_pdf(tmp_path_factory.mktemp("long") / "long.pdf", 400)


def test_parallel_pdf_equals_one_process(long_pdf: Path) -> None:
    _fresh("_case_parallel_pdf", str(long_pdf))


def _case_parallel_pdf(path: str) -> None:
    long_pdf = Path(path)
    options = Options(ocr="never")
    serial = extract_source(Source.from_path(long_pdf), options, page_workers=1)
    forks = []
    real = forking._fork
    forking._fork = lambda *a: forks.append(1) or real(*a)  # type: ignore[assignment]
    parallel = extract_source(Source.from_path(long_pdf), options, page_workers=2)
    assert forks, "a 400-page PDF should be read by two processes"
    assert parallel.status == "ok"
    assert parallel.text == serial.text and parallel.markdown == serial.markdown
    assert [(p.number, p.text) for p in parallel.pages] == \
        [(p.number, p.text) for p in serial.pages]
    assert len(parallel.pages) == 400
    assert "marker400x39" in parallel.pages[-1].text and "marker1x0" in parallel.pages[0].text


def test_parallel_pdf_from_bytes(long_pdf: Path) -> None:
    """Bytes handed to the API are in the children's memory too: no path needed."""
    _fresh("_case_bytes", str(long_pdf))


def _case_bytes(path: str) -> None:
    long_pdf = Path(path)
    forks = []
    real = forking._fork
    forking._fork = lambda *a: forks.append(1) or real(*a)  # type: ignore[assignment]
    doc = textsieve.extract(long_pdf.read_bytes(), ocr="never", workers=2)
    assert doc.status == "ok" and doc.metadata.page_count == 400
    assert forks, "the API should spread a 400-page PDF over the cores"
    assert all(f"marker{n}x0" in doc.pages[n - 1].text for n in (1, 200, 400))


def _page_clock(monkeypatch: pytest.MonkeyPatch, per_page: float) -> None:
    """The PDF reader's clock advances ``per_page`` seconds per page read: the decision to
    fork is then the same on an idle machine and on a loaded one."""
    import itertools

    import textsieve.extractors.pdf as pdf

    ticks = itertools.count()
    monkeypatch.setattr(pdf, "_clock", lambda: next(ticks) * per_page)


def test_short_pdf_stays_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    """The decision is checked where it is made (the PDF reader does not ask for readers
    at all), so this holds whether or not this process could fork; its clock is a fixed
    1 ms a page (12 pages: far below the cost of a fork), not the machine's."""
    import textsieve.extractors.pdf as pdf

    _page_clock(monkeypatch, 0.001)
    path = _long_pdf(tmp_path / "short.pdf", 12)
    monkeypatch.setattr(pdf, "share_jobs", lambda *a, **k: pytest.fail("forked for 12 pages"))
    doc = extract_source(Source.from_path(path), Options(ocr="never"), page_workers=2)
    assert doc.status == "ok" and len(doc.pages) == 12


def test_long_pdf_asks_for_readers_at_the_same_rate(long_pdf: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The other side of the same decision, at the same 1 ms a page: 400 pages are worth
    more processes (the jobs are done here, serially, to see only the decision)."""
    import textsieve.extractors.pdf as pdf

    _page_clock(monkeypatch, 0.001)
    asked: list[int] = []

    def serially(fn, n_jobs: int, processes: int, *, timeout: float) -> list[object]:
        asked.append(processes)
        return [fn(j) for j in range(n_jobs)]

    monkeypatch.setattr(pdf, "share_jobs", serially)
    doc = extract_source(Source.from_path(long_pdf), Options(ocr="never"), page_workers=2)
    assert asked == [2] and doc.status == "ok" and len(doc.pages) == 400


def test_cli_on_one_long_pdf_gives_every_page(long_pdf: Path) -> None:
    """One input to the CLI: its worker may fork into the idle workers' cores."""
    import json

    res = subprocess.run([sys.executable, "-m", "textsieve.cli", "extract", "-f", "json",
                          "-j", "2", "--ocr", "never", str(long_pdf)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    serial = extract_source(Source.from_path(long_pdf), Options(ocr="never"), page_workers=1)
    assert doc["text"] == serial.text


def test_a_process_that_isolated_a_call_with_threads_exits(tmp_path: Path) -> None:
    """The forkserver-started helper (isolation while threads run) must not hold the
    process at exit: multiprocessing joins its non-daemon children before our end of the
    helper's pipe closes, and a whole pytest run hung there after printing its result."""
    script = tmp_path / "isolate_then_exit.py"
    script.write_text(
        "import threading, time\n"
        "from textsieve.forking import call_isolated\n"
        "if __name__ == '__main__':\n"
        "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "    print(call_isolated(sum, [1, 2, 3], timeout=10, memory=0))\n")
    try:
        res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             timeout=30, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("the process did not exit: its isolated-call helper held it")
    assert res.returncode == 0 and res.stdout.strip() == "6", res.stderr
