"""Forked helpers for work inside one document: ``share_jobs`` spreads independent jobs
(blocks of PDF pages) over the cores; ``call_isolated`` runs risky native calls (a parser
that may allocate gigabytes on damaged data) in a helper process with a memory cap, forked
once and kept for the calls that follow.

Why fork and not the worker pool: a long PDF handed to ``textsieve.extract`` should use
every core, and a fork costs about 2 ms (the parent's parsers and the open document's
bytes are already in memory; nothing is re-imported or pickled on the way in).

Jobs are handed out through a pipe filled with job numbers before the fork: every process,
the parent included, reads one number at a time (a 4-byte read from a pipe is atomic, so
each job goes to exactly one process) until the pipe is empty. A process that is slower
(a child re-parses the fonts its pages need) simply takes fewer jobs, so no process waits
for another with work left. Each child sends its results back through its own pipe and
leaves with ``os._exit`` (no atexit handlers, no flushing of the parent's buffers).

Safety: nothing is forked when this process has other threads (a fork copies a lock held
by another thread in its locked state), when the platform has no ``fork``, or for a single
process: pages are then read here, and ``call_isolated``'s helper comes from the
forkserver. Jobs of a child that fails are redone in the parent, so the result never depends
on the fork; a child still running at the deadline is killed and ``JobsTimeout`` raised
(redoing its jobs would hang the parent too).

Every process here is started through ``procs`` (the one place that forks and sets a child
up), on its raw-fork path: these calls are on the hot paths of reading a PDF and of
``textsieve extract FILE``.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import select
import signal
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import procs
from .procs import can_fork, die_with_parent, in_worker, libc_prctl, quiet_native_chatter

__all__ = ["MAX_JOBS", "CallDied", "JobsTimeout", "call_alone", "call_isolated", "can_fork",
           "die_with_parent", "in_worker", "isolated_document", "libc_prctl",
           "quiet_native_chatter", "share_jobs"]

_TOKEN = struct.Struct("<I")
MAX_JOBS = 8192  # 32 KB of tokens: always fits the pipe buffer, so filling never blocks


class JobsTimeout(Exception):
    """A forked process did not finish its jobs before the deadline."""


@dataclass
class _Kid:
    pid: int
    fd: int  # read end of the pipe the child writes its pickled results to
    done: bool = False


def share_jobs(fn: Callable[[int], Any], n_jobs: int, processes: int, *,
               timeout: float) -> list[Any]:
    """``[fn(j) for j in range(n_jobs)]``, computed by this process and ``processes - 1``
    forked ones. ``fn`` runs in the child that claims a job, so it must open what it needs
    there itself (see the PDF reader)."""
    if processes < 2 or n_jobs < 2 or n_jobs > MAX_JOBS or not can_fork():
        return [fn(j) for j in range(n_jobs)]
    deadline = time.monotonic() + timeout
    queue_r, queue_w = os.pipe()
    try:
        os.write(queue_w, b"".join(_TOKEN.pack(j) for j in range(n_jobs)))
    finally:
        os.close(queue_w)  # an empty queue now reads as end-of-file
    kids: list[_Kid] = []
    try:
        for _ in range(min(processes, n_jobs) - 1):
            kid = _fork(lambda: _work(fn, queue_r), timeout)
            if kid is not None:
                kids.append(kid)
        results = _work(fn, queue_r)
        for kid in kids:
            results.update(_collect(kid, deadline) or {})
        for j in range(n_jobs):  # the jobs of a child that failed
            if j not in results:
                results[j] = fn(j)
        return [results[j] for j in range(n_jobs)]
    finally:
        os.close(queue_r)
        for kid in kids:  # on every exit path: no child left running, none unreaped
            if not kid.done:
                _kill(kid)


def _work(fn: Callable[[int], Any], queue: int) -> dict[int, Any]:
    out: dict[int, Any] = {}
    while token := os.read(queue, _TOKEN.size):
        job = _TOKEN.unpack(token)[0]
        out[job] = fn(job)
    return out


def _close(fds: list[int]) -> None:
    procs.close_fds(fds)


def _fork(work: Callable[[], Any], timeout: float) -> _Kid | None:
    """A child that runs ``work()``, sends its pickled result through a pipe and leaves
    with ``os._exit`` (no parent cleanup runs); None if no child could be made. It stays
    in its parent's process group (a worker killed whole takes its readers along), dies
    with its parent, and by itself at the deadline, even if its parent was killed
    meanwhile (a pool worker past its own deadline): no orphan spins on a hostile page."""
    made = procs.fork(procs.Setup(group=False, ignore_sigint=False, alarm=timeout))
    if made is None:
        return None
    pid, (r, w) = made
    if pid == 0:
        code = 1
        try:
            os.close(r)
            _send(w, pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL))
            code = 0
        except BaseException:  # any failure: the parent sees a child that died
            pass
        finally:
            os._exit(code)
    os.close(w)
    return _Kid(pid, r)


def _collect(kid: _Kid, deadline: float) -> Any:
    """A child's unpickled answer; None if it died or its answer is cut; JobsTimeout past
    the deadline."""
    answer = _receive(kid.fd, deadline)
    _, status = os.waitpid(kid.pid, 0)
    os.close(kid.fd)
    kid.done = True
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return None
    return answer


def _kill(kid: _Kid) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(kid.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(kid.pid, 0)
    os.close(kid.fd)
    kid.done = True


class CallDied(Exception):
    """An isolated call's process died (a native abort, a signal) before answering."""


_LENGTH = struct.Struct("<Q")


@dataclass
class _Helper:
    """The process behind ``call_isolated``: forked once, then fed calls through a pipe."""

    pid: int
    requests: int  # write end: length-prefixed pickled (fn, args)
    answers: int  # read end: length-prefixed pickled (ok, value, retiring)
    memory: int
    proc: Any = None  # started by the forkserver: not our child, its status comes from it


_helper: _Helper | None = None
_helper_lock = threading.Lock()


def call_isolated(fn: Callable[..., Any], *args: Any, timeout: float, memory: int) -> Any:
    """``fn(*args)`` in a helper process whose address space may grow by ``memory`` bytes
    at most: for native parsers that trust a damaged size field and allocate gigabytes (the
    kernel's OOM killer would take the whole caller down). Returns fn's result or raises
    its exception; ``CallDied`` if the helper died, ``JobsTimeout`` past the deadline.

    ``fn`` must be a module-level function and ``args`` and the result picklable: the
    helper is forked once and kept for later calls (a fork per call cost ~5 ms, more than
    reading a typical workbook). It is replaced after it dies, times out, or keeps more
    than half its memory allowance after a call. With other threads running (a web
    server, a Ray worker) the helper is not forked from this process (a lock another
    thread holds would stay locked in it) but started by multiprocessing's forkserver,
    a clean single-threaded process: isolation is never silently off. Only a platform
    with neither runs ``fn(*args)`` here, and says so in the log."""
    global _helper
    with _helper_lock:
        helper = _helper
        if helper is not None and helper.memory != memory:
            _retire(helper)
            helper = None
        if helper is None:
            helper = _helper = _start_helper(memory) if can_fork() \
                else _start_clean_helper(memory)
        if helper is None:
            import logging  # only here: ~3 ms of every `textsieve extract` start

            logging.getLogger(__name__).warning(
                "no process for an isolated call: %s runs unisolated",
                getattr(fn, "__name__", fn))
            return fn(*args)
        try:
            _send(helper.requests, pickle.dumps((fn, args, timeout),
                                                protocol=pickle.HIGHEST_PROTOCOL))
            got = _receive(helper.answers, time.monotonic() + timeout)
        except JobsTimeout:
            _retire(helper, kill=True)
            raise
        except OSError:  # the pipe broke: the helper is gone
            got = None
        if got is None:
            status = _retire(helper, kill=True)
            if status is not None and os.WIFSIGNALED(status) \
                    and os.WTERMSIG(status) == signal.SIGALRM:
                # Its own deadline (the alarm) ended it a moment before ours: a timeout,
                # not a crash of the parser.
                raise JobsTimeout("the isolated call did not finish in time")
            raise CallDied("the isolated parser process died")
        ok, value, retiring = got
        if retiring:
            _retire(helper)
    if ok:
        return value
    raise value


def call_alone(fn: Callable[..., Any], *args: Any, timeout: float, memory: int) -> Any:
    """``fn(*args)`` once, in a forked child with the guarantees of a pool worker: its own
    process group (killed whole, with any program it started), an address-space cap of
    ``memory`` bytes (0: none), SIGINT left to the parent, a deadline it also enforces on
    itself. Returns fn's result or raises its exception; ``JobsTimeout`` past the deadline,
    ``CallDied`` if the child died or could not be made.

    Why not the worker pool: for the one small file of ``textsieve extract FILE`` the pool
    (multiprocessing, a worker, its pipes) costs more than the extraction; a fork costs
    ~2 ms, and nothing is imported or pickled on the way in."""
    # No parent-death signal: looking prctl up would cost the command ~3 ms (ctypes);
    # the child's own alarm bounds its life instead.
    made = procs.fork(procs.Setup(memory=memory, alarm=timeout, die_with_parent=False))
    if made is None:
        raise CallDied("no process could be started")
    pid, (r, w) = made
    if pid == 0:
        code = 1
        try:
            os.close(r)
            try:
                answer: tuple[bool, Any] = (True, fn(*args))
            except Exception as exc:  # raised again in the parent
                answer = (False, exc)
            try:
                payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # an unpicklable result or exception
                payload = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
            _send(w, payload)
            code = 0
        except BaseException:  # the parent sees a child that died
            pass
        finally:
            os._exit(code)
    os.close(w)
    status: int | None = None
    try:
        got = _receive(r, time.monotonic() + timeout)
        if got is None:  # died before answering: how?
            status = procs.wait_status(pid)
    finally:
        procs.kill_group(pid)  # whatever it started, and itself if still there
        if status is None:
            procs.wait_status(pid)
        os.close(r)
    if got is None:
        if status is not None and os.WIFSIGNALED(status) \
                and os.WTERMSIG(status) == signal.SIGALRM:
            raise JobsTimeout("the call did not finish in time")
        raise CallDied(_death(status))
    ok, value = got
    if ok:
        return value
    raise value


_death = procs.death


def isolated_document(fn: Callable[..., Any], *args: Any, name: str | None,
                      timeout: float, memory: int) -> Any:
    """``fn(*args)`` (a document's work, see ``core``) in one isolated process, as a pool
    worker would run it: ``call_alone`` where this process may fork, else
    ``call_isolated``. A deadline passed, a death or a bug in the child is the document's
    typed error (a failed Document)."""
    from .model import Document, ErrorKind

    call = call_alone if can_fork() else call_isolated
    try:
        return call(fn, *args, timeout=timeout, memory=memory)
    except JobsTimeout:
        return Document.failed(ErrorKind.TIMEOUT, f"extraction exceeded {timeout:g} s",
                               name=name)
    except CallDied as exc:
        return Document.failed(ErrorKind.CRASHED, f"the extractor process died ({exc})",
                               name=name)
    except Exception as exc:  # a bug in the child, as the pool reports it
        return Document.failed(ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}", name=name)


def _start_helper(memory: int) -> _Helper | None:
    """Fork the helper; None if no process could be made. The request pipe's end of file
    ends it too, but only once every process holding its write end is gone (children
    forked later by the parent inherit that end): it also dies with its parent."""
    made = procs.fork(procs.Setup(group=False), 2)
    if made is None:
        return None
    pid, (req_r, req_w, ans_r, ans_w) = made
    if pid == 0:
        try:
            os.close(req_w)
            os.close(ans_r)
            _serve(req_r, ans_w, memory)
        finally:
            os._exit(0)
    os.close(req_r)
    os.close(ans_w)
    return _Helper(pid, req_w, ans_r, memory)


def _start_clean_helper(memory: int) -> _Helper | None:
    """The helper, started by the forkserver (for a process with threads); None if the
    platform has no forkserver or no process could be made."""
    try:
        child = procs.start(_serve_clean, memory, setup=procs.Setup(group=False),
                            method=procs.start_method(threads_run=True))
    except (ValueError, OSError):
        return None
    try:
        # Raw descriptors of our own, like the forked helper's: the Connection object
        # would close its own behind our back.
        # Two of them (one duplex socket): each end closes on its own.
        requests = os.dup(child.conn.fileno())
        try:
            answers = os.dup(child.conn.fileno())
        except OSError:
            os.close(requests)
            raise
    except OSError:
        child.kill()
        return None
    finally:
        child.conn.close()
    return _Helper(child.pid, requests, answers, memory, child.proc)


def _serve_clean(conn: Any, memory: int) -> None:
    """The forkserver-started helper (it dies with the forkserver, which leaves when the
    process that started it dies): requests and answers on one duplex pipe."""
    _serve(conn.fileno(), conn.fileno(), memory)


def _serve(requests: int, answers: int, memory: int) -> None:
    """The helper's loop: one call per request until its parent closes the pipe. Ctrl-C
    is the parent's to handle (it reaches the whole process group); a call still running
    at its deadline ends the helper (SIGALRM), even if the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    base = _address_space()
    if memory > 0:  # 0: no cap (Options.memory_limit)
        with contextlib.suppress(ValueError, OSError):
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (base + memory, base + memory))
    while True:
        try:
            request = _receive(requests, None)
        except OSError:
            return
        if request is None:
            return
        fn, args, timeout = request
        signal.alarm(max(1, math.ceil(timeout)))
        try:
            answer: tuple[bool, Any] = (True, fn(*args))
        except Exception as exc:  # raised again in the caller
            answer = (False, exc)
        signal.alarm(0)
        retiring = memory > 0 and _address_space() > base + memory // 2
        try:
            payload = pickle.dumps((*answer, retiring), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an unpicklable result or exception
            payload = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}"),
                                    retiring))
        _send(answers, payload)
        if retiring:
            return


def _send(fd: int, payload: bytes) -> None:
    view = memoryview(_LENGTH.pack(len(payload)) + payload)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd: int, deadline: float | None) -> Any:
    """One length-prefixed pickled message (``_send``'s); None at end of file or on a cut
    message; JobsTimeout past the deadline (None: wait for ever)."""
    want, parts, header = _LENGTH.size, [], True
    while want:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise JobsTimeout("a forked process did not answer in time")
        data = os.read(fd, min(want, 1 << 20))
        if not data:
            return None
        parts.append(data)
        want -= len(data)
        if not want and header:
            want, parts, header = _LENGTH.unpack(b"".join(parts))[0], [], False
    try:
        return pickle.loads(b"".join(parts))
    except Exception:  # a damaged message: as if the other side had died
        return None


def _retire(helper: _Helper, *, kill: bool = False) -> int | None:
    """Close the helper's pipes (it leaves at end of file) and reap it; its wait status
    (how it ended: a helper already dead keeps its own, the kill does not replace it)."""
    global _helper
    if _helper is helper:
        _helper = None
    if kill:
        with contextlib.suppress(ProcessLookupError):
            os.kill(helper.pid, signal.SIGKILL)
    _close([helper.requests, helper.answers])
    if helper.proc is not None:
        helper.proc.join(5)
        code = helper.proc.exitcode
        if code is None:
            return None
        return -code if code < 0 else code << 8  # as a wait status
    try:
        return os.waitpid(helper.pid, 0)[1]
    except ChildProcessError:
        return None


def _forget_helper() -> None:
    """In a forked child: the parent's helper is not ours to talk to (our answers would
    mix with the parent's), and a lock held by another thread at fork time stays held."""
    global _helper, _helper_lock
    if _helper is not None:
        _close([_helper.requests, _helper.answers])
        _helper = None
    _helper_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helper)


def _address_space() -> int:
    """This process's current virtual size in bytes (the child's starting point)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
