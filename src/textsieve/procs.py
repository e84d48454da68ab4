"""Every child process textsieve starts is started here, and set up the same way.

Four users, one mechanism: the local executor's long-lived workers (``run/pool.py``, also
the service's), the forked page readers of a long PDF (``forking.share_jobs``), the helper
of a risky parser call (``forking.call_isolated``) and the lone child of ``textsieve extract
FILE`` (``forking.call_alone``). No other module calls ``os.fork``, makes a
``multiprocessing`` process or picks a start method (a test checks), so the rules below
hold for every child:

- **How it starts** is decided by ``start_method`` and ``can_fork``: a plain fork (warm
  parsers, ~2 ms), from the main thread or the one long-lived forker thread, never from a
  short-lived one (the kernel's parent-death signal follows the forking *thread*); a
  ``forkserver``, a clean single-threaded process that forks for us, where other threads
  run code that may hold a lock (a fork copies it locked): a web server, a Ray worker.
- **In the child** (``Setup``): its own process group (killing it kills the programs it
  started), death with its parent (PR_SET_PDEATHSIG, and end of file on its pipe), a group
  guard that ends the group when the child dies any other way or when the process it
  works for dies (a forkserver's child: the forkserver outlives that process), an address-space cap
  (RLIMIT_AS), SIGINT left to the parent, native chatter off stderr, a deadline of its own
  (SIGALRM) for children that must not outlive one call.
- **In the parent** (``Child``): send, wait with a deadline, kill the whole group, retire
  (end of file, then a kill), and an exit status told as a typed message ("killed by
  SIGSEGV").

Two start paths, for speed: ``fork`` (raw ``os.fork`` and pipes: ~2 ms, nothing imported,
for the hot paths of PDF reading and of one small file) and ``start`` (a ``multiprocessing``
process with a duplex pipe, fork or forkserver, for long-lived workers). Both run the same
child set-up. ``multiprocessing`` is imported only by ``start``: ``textsieve extract FILE``
must not pay for it.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import signal
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor
    from multiprocessing.context import ForkContext, ForkServerContext

_PR_SET_PDEATHSIG = 1  # prctl(2), linux/prctl.h

# Modules the forkserver imports once, before it forks any worker (parsers stay warm;
# run.warm loads every parser and what they import on first use).
FORKSERVER_PRELOAD = ["textsieve", "textsieve.core", "textsieve.run.pool",
                      "textsieve.run.warm"]


@dataclass(frozen=True)
class Setup:
    """What a child does to itself first. The defaults are a pool worker's guarantees;
    a page reader (``share_jobs``) stays in its worker's group and needs no guard."""

    memory: int = 0  # RLIMIT_AS in bytes (0: none)
    group: bool = True  # its own process group (killed whole)
    guard: bool = False  # a guard process that kills the group when the child dies
    die_with_parent: bool = True  # PR_SET_PDEATHSIG (Linux)
    ignore_sigint: bool = True  # Ctrl-C is the parent's to handle
    quiet: bool = False  # native chatter off stderr (TEXTSIEVE_DEBUG=1 keeps it)
    alarm: float = 0.0  # seconds before the child ends itself (SIGALRM); 0: never
    worker: bool = False  # a pool worker: ``in_worker()`` is true in it


# -- the child side -------------------------------------------------------------------------

_in_worker = False


def in_worker() -> bool:
    """In a pool worker: its siblings use the other cores, and its own memory cap and
    deadline already contain a runaway parser."""
    return _in_worker


def become(setup: Setup, parent: int | None, owner: int | None = None) -> None:
    """Apply ``setup`` in a freshly started child. ``parent``: the pid that forked it (None:
    whoever its parent is now, as for a forkserver's child); ``owner``: the process it
    works for (its parent, or the one that asked the forkserver for it)."""
    global _in_worker
    _in_worker = _in_worker or setup.worker
    if setup.group:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
    if setup.ignore_sigint:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the driver's clean-stop handler
    if setup.die_with_parent:
        die_with_parent(os.getppid() if parent is None else parent)
    if setup.alarm > 0:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(max(1, math.ceil(setup.alarm)))
    if setup.guard and setup.group:  # a guard kills its group: never one not the child's
        _guard_group(owner if owner is not None else parent)
    if setup.quiet:
        quiet_native_chatter()
        import faulthandler

        faulthandler.disable()  # under TEXTSIEVE_DEBUG too: the record says it crashed
    if setup.memory > 0:
        cap_memory(setup.memory)


def cap_memory(limit: int) -> None:
    """RLIMIT_AS of ``limit`` bytes on this process; a platform that refuses keeps none."""
    with contextlib.suppress(ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def die_with_parent(parent: int) -> None:
    """Be SIGKILLed by the kernel when ``parent`` dies.

    Without it a child outlives a parent killed by SIGKILL or SIGTERM (no cleanup code
    runs there), spinning on a hostile page and holding the parent's pipes, stdout (``|
    head`` never ends) and files open. The parent may already have died between the fork
    and the prctl (the signal is then never sent): ``getppid()`` tells, and the child
    leaves. Linux only; elsewhere nothing."""
    prctl = libc_prctl()
    if prctl is None:
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


@functools.cache
def libc_prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, None without one (not Linux). Looked up once, in the parent before
    it forks (so no child loads ctypes itself)."""
    try:
        import ctypes

        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
        return prctl
    except (OSError, AttributeError):
        return None


def quiet_native_chatter() -> None:
    """In a child that reports every problem as a typed record: damaged files make native
    libraries talk on stderr (leptonica, libtiff, Rust panics, PIL warnings), which only
    buries the run's own output. TEXTSIEVE_DEBUG=1 keeps it."""
    if os.environ.get("TEXTSIEVE_DEBUG"):
        return
    import faulthandler
    import warnings

    warnings.simplefilter("ignore")
    faulthandler.disable()  # a native crash is reported as a typed record
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)


def _guard_group(owner: int | None) -> None:
    """Fork the child's group guard: a tiny process that SIGKILLs the whole group when
    the child dies (end of file on a pipe only the child holds) or when ``owner`` (the
    process the child works for) does.

    The helper programs a worker starts (antiword, the tesseract command, LibreOffice)
    are in its group but are not its forked copies, so they cannot ask the kernel to end
    them with it; the guard does, however the worker died (killed with its parent, a
    native crash). A forkserver's child has the forkserver for a parent, which lives as
    long as any of its children (each holds its "alive" pipe): the parent-death signal
    alone would never come, so the guard watches the owner itself. When the parent kills
    the group, the guard goes with it."""
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to spare: the worker still dies with its parent
        close_fds([r, w])
        return
    if pid:
        os.close(r)
        return  # ``w`` stays open for the worker's whole life, on purpose
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # never hold the run's stdout (``| head``) or stdin
            os.dup2(devnull, fd)
        os.closerange(3, r)  # nor the worker's socket: the parent must see it die
        os.closerange(r + 1, os.sysconf("SC_OPEN_MAX"))
        _watch(r, owner)
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(0)


def _watch(pipe: int, owner: int | None) -> None:
    """Return once ``pipe`` is at end of file or ``owner`` has ended (a pidfd where the
    kernel has them, else a look once a second)."""
    import select

    pidfd = None
    if owner is not None:
        try:
            pidfd = os.pidfd_open(owner)
        except ProcessLookupError:
            return  # gone already
        except (AttributeError, OSError):
            pidfd = None
    watched = [pipe] if pidfd is None else [pipe, pidfd]
    while True:
        ready = select.select(watched, [], [], None if pidfd is not None or owner is None
                              else 1.0)[0]
        if pidfd is not None and pidfd in ready:
            return
        if pipe in ready and not os.read(pipe, 1):
            return
        if owner is not None and pidfd is None:
            try:
                os.kill(owner, 0)
            except ProcessLookupError:
                return
            except PermissionError:
                pass


def close_fds(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


# -- the start method -----------------------------------------------------------------------

_forker: ThreadPoolExecutor | None = None
_forker_thread: threading.Thread | None = None
_forker_lock = threading.Lock()


def can_fork() -> bool:
    """A plain fork is safe here: the platform has it and no thread runs but the main one
    and the forker thread (which holds no lock while it waits for work)."""
    if not hasattr(os, "fork"):
        return False
    if threading.active_count() == 1:
        return True
    main, forker = threading.main_thread(), _forker_thread
    return all(t is main or t is forker for t in threading.enumerate())


def start_method(threads_run: bool = False) -> str:
    """How a long-lived child starts: the one place this is decided.

    ``fork`` (the parsers imported here stay warm in the child, ~2 ms a start), always
    from the main thread or the one long-lived forker thread (``start`` sees to it); a
    run's driver, the CLI and the library start their workers so. ``forkserver`` where
    other threads run code that may hold a lock at any moment (``threads_run``: a web
    server's event loop and request threads; a fork would copy such a lock locked), or
    the platform has no fork. The raw forks of the hot paths (``fork``) are stricter: they
    happen in the calling thread, so only while ``can_fork()``."""
    return "forkserver" if threads_run or not hasattr(os, "fork") else "fork"


def in_long_lived_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` (a fork) in the main thread or in one thread kept for the process's life.

    The kernel's parent-death signal follows the forking *thread*: a worker forked by a
    short-lived thread (a request handler that made a pool another thread uses) would be
    killed when that thread ends, mid-run."""
    global _forker
    current = threading.current_thread()
    if current is threading.main_thread() or current is _forker_thread:
        return fn()
    with _forker_lock:
        if _forker is None:
            from concurrent.futures import ThreadPoolExecutor

            _forker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="textsieve-fork")
            _forker.submit(_remember_forker).result()
        forker = _forker
    return forker.submit(fn).result()


def _remember_forker() -> None:
    global _forker_thread
    _forker_thread = threading.current_thread()


# -- raw forks: the hot paths ---------------------------------------------------------------

def fork(setup: Setup, n_pipes: int = 1) -> tuple[int, list[int]] | None:
    """``n_pipes`` pipes (fds as [r0, w0, r1, w1, ...]), then a fork whose child has applied
    ``setup``: (pid, fds), pid 0 in the child, which must leave with ``os._exit``. None,
    with nothing left open, if the system refuses either. The caller checked ``can_fork``."""
    parent, _ = os.getpid(), libc_prctl()  # prctl looked up here, not in every child
    fds: list[int] = []
    try:
        for _ in range(n_pipes):
            fds.extend(os.pipe())
        pid = os.fork()
    except OSError:
        close_fds(fds)
        return None
    if pid == 0:
        try:
            become(setup, parent)
        except BaseException:
            os._exit(1)
    return pid, fds


def wait_status(pid: int) -> int | None:
    """Reap ``pid``: its wait status, None if it is not (or no longer) our child."""
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return None


def kill_group(pid: int) -> None:
    """SIGKILL ``pid``'s process group (it leads its own) and ``pid`` itself."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.kill(pid, signal.SIGKILL)  # in case setpgid failed and it leads no group


def death(status: int | None) -> str:
    """How a child ended, for a person: "killed by SIGSEGV", "exited with status 1"."""
    if status is not None and os.WIFSIGNALED(status):
        return _signal_name(os.WTERMSIG(status))
    code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
    return f"exited with status {code}"


def exit_message(exitcode: int | None) -> str:
    """A ``multiprocessing`` exit code as the message of a ``crashed`` record."""
    how = _signal_name(-exitcode) if exitcode is not None and exitcode < 0 \
        else f"exited with status {exitcode}"
    return f"the extractor process died ({how})"


def _signal_name(number: int) -> str:
    try:
        return f"killed by {signal.Signals(number).name}"
    except ValueError:
        return f"killed by signal {number}"


def rss(pid: int) -> int:
    """Resident memory of a process in bytes (Linux), 0 when unknown."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


# -- long-lived children: multiprocessing, fork or forkserver --------------------------------

# The parent's ends of its children's pipes. A forked child (a worker, a page reader) must
# not keep them: a worker holding its own pipe's other end never sees end of file when the
# parent dies, and one holding a sibling's keeps that sibling waiting.
_PARENT_ENDS: weakref.WeakSet[Any] = weakref.WeakSet()


class Child:
    """One supervised child process and the parent's end of its duplex pipe."""

    def __init__(self, proc: Any, conn: Any) -> None:
        self.proc, self.conn = proc, conn

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    def alive(self) -> bool:
        return bool(self.proc.is_alive())

    def exitcode(self, wait: float | None = 1.0) -> int | None:
        """Its exit code once it has ended (waiting up to ``wait`` s; None: until it
        ends), else None."""
        self.proc.join(wait)
        code: int | None = self.proc.exitcode
        return code

    def kill(self) -> None:
        """SIGKILL it with its whole group (the programs it started) and reap it."""
        try:
            if self.proc.exitcode is None:
                kill_group(self.pid)
            self.proc.join(5)
        finally:
            self.conn.close()

    def retire(self, wait: float = 1.0) -> None:
        """Ask it to leave (``None`` down its pipe), then kill what is left of it."""
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(None)
        self.proc.join(wait)
        self.kill()


def start(target: Callable[..., Any], *args: Any, setup: Setup, method: str = "fork",
          duplex: bool = True, daemon: bool = True) -> Child:
    """Start ``target(conn, *args)`` in a child set up by ``setup``; ``conn`` is the
    child's end of a pipe (duplex, or the write end), the parent keeps the other.
    ``method``: ``fork`` or ``forkserver`` (see ``start_method``). With a
    forkserver, ``target`` and ``args`` must pickle. ``daemon``: terminated, rather than
    joined, by ``multiprocessing`` at exit; a daemon may start no process of its own
    through ``start`` (a run's process, which starts a pool, is not one)."""
    import multiprocessing as mp

    ctx = cast("ForkContext | ForkServerContext", mp.get_context(method))
    if method == "forkserver":
        ctx.set_forkserver_preload(FORKSERVER_PRELOAD)
    if duplex:
        parent_end, child_end = ctx.Pipe(duplex=True)
    else:
        parent_end, child_end = ctx.Pipe(duplex=False)
    _PARENT_ENDS.add(parent_end)  # closed in every forked child, this one's own included
    owner = os.getpid()
    parent = owner if method == "fork" else None
    libc_prctl()
    proc = ctx.Process(target=_bootstrap,
                       args=(setup, parent, owner, target, child_end, args),
                       daemon=daemon)
    try:
        if method == "fork":
            in_long_lived_thread(proc.start)
        else:
            proc.start()
    finally:
        child_end.close()
    return Child(proc, parent_end)


def _bootstrap(setup: Setup, parent: int | None, owner: int, target: Callable[..., Any],
               conn: Any, args: tuple[Any, ...]) -> None:
    become(setup, parent, owner)
    target(conn, *args)


def _after_fork_in_child() -> None:
    """A forked child has neither the parent's pipes nor its (copied, dead) threads."""
    global _forker, _forker_thread, _forker_lock
    for conn in list(_PARENT_ENDS):
        with contextlib.suppress(OSError):
            conn.close()
    _PARENT_ENDS.clear()
    _forker, _forker_thread, _forker_lock = None, None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
