"""Service benchmark: textsieve serve under load, and under 4x overload.

Run by hand, niced: `nice -n 10 .venv/bin/python bench/bench_server.py [--seconds 8]
[--kreuzberg PYTHON | --no-peer]` after `bash bench/peers_service_setup.sh`.

For 1 and 2 workers, the real server (uvicorn on 127.0.0.1, a subprocess) is sent small
documents from samples/docs (DOCX, RTF, HTML, CSV, a one-page PDF, a text file), each
request a PUT /v1/extract, by closed-loop client threads (each sends its next request
when the last is answered):

- load: as many clients as the service admits (workers + queue): requests/s, p50/p99,
  and the server's CPU time per answered request (all its processes: on a shared
  machine the steadier figure, as latency follows the CPU the server is given);
- overload: 4x that many clients: how many are refused (503 + Retry-After), p50/p99 of the
  admitted ones (they should stay near the load figures: refused requests do not queue),
  whether the server is still up, and its memory (PSS of the server and its workers)
  before and after.

Side by side in the same run, the same load goes to a peer with the same number of
workers: kreuzberg's REST API server (kreuzberg 3.x ``[api]``, from the venv
bench/.peers/kreuzberg3; kreuzberg 4.x on PyPI ships no server, see
peers_service_setup.sh), POST /extract with multipart ``files``, and a line of ratios
per worker count. The clients run on the same 2 cores as the servers, so the absolute
figures are a floor.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["letter.docx", "memo.rtf", "article.html", "sightings.csv", "field-notes.pdf",
        "tagebuch-latin1.txt"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and all its descendants, the children it
    has reaped included (Linux /proc): what serving cost, whatever else the machine ran."""
    total, todo, tick = 0.0, [pid], os.sysconf("SC_CLK_TCK")
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15]) / tick
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def tree_memory(pid: int) -> int:
    """Memory in bytes of a process and all its descendants (Linux /proc): the sum of
    their PSS (proportional set size), so a page that forked workers share with the
    process they came from counts once, split among them, instead of once per process as
    a sum of RSS counts it (which over-stated a forking server by half)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next(int(line.split()[1]) * 1024 for line in f
                              if line.startswith("Pss:"))
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError, StopIteration):
            continue
    return total


@dataclass
class Result:
    ok: list[float] = field(default_factory=list)  # latencies of 200s
    refused: int = 0  # 503
    other: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0

    def pct(self, q: int) -> float:
        """The q-th percentile latency of the admitted (200) requests, in ms."""
        n = len(self.ok)
        lat = sorted(self.ok)
        return lat[min(n - 1, n * q // 100)] * 1000 if n else float("nan")

    def line(self, label: str) -> str:
        n = len(self.ok)
        p50, p99 = self.pct(50), self.pct(99)
        total = n + self.refused + sum(self.other.values())
        return (f"{label:<28} {n / self.seconds:8.1f} ok/s  p50 {p50:7.1f} ms  "
                f"p99 {p99:7.1f} ms  refused {self.refused:5d}/{total:<5d}"
                + (f"  other {self.other}" if self.other else ""))


def load(send, clients: int, seconds: float) -> Result:
    """``clients`` threads calling ``send(i)`` (returns a status) for ``seconds``."""
    res = Result()
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(k: int) -> None:
        i = k
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            try:
                status = send(i)
            except httpx.HTTPError:
                status = -1
            dt = time.perf_counter() - t0
            with lock:
                if status == 200:
                    res.ok.append(dt)
                elif status == 503:
                    res.refused += 1
                else:
                    res.other[status] = res.other.get(status, 0) + 1
            if status == 503:
                time.sleep(0.05)  # a polite client backs off a little
            i += clients
    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    res.seconds = time.monotonic() - t0
    return res


def wait_up(url: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit(f"server exited ({proc.returncode})")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not come up")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


MIME = {".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ".rtf": "application/rtf", ".html": "text/html", ".csv": "text/csv",
        ".pdf": "application/pdf", ".txt": "text/plain"}


@dataclass
class Service:
    """One server under test: how to start it with N workers and send it a document."""

    name: str
    argv: list[str]  # {port} and {workers} are filled in
    health: str
    send: Callable[[httpx.Client, int], int]  # (client, i) -> a status, 200 = extracted
    env: dict[str, str] | None = None
    cwd: str | None = None


def textsieve_service(bodies: list[bytes]) -> Service:
    def send(c: httpx.Client, i: int) -> int:
        return c.put("/v1/extract", content=bodies[i % len(bodies)]).status_code

    return Service("textsieve", [sys.executable, "-m", "textsieve", "serve", "--port",
                                 "{port}", "-j", "{workers}"], "/healthz", send)


def kreuzberg_service(python: str, names: list[str], bodies: list[bytes]) -> Service:
    """kreuzberg 3's REST API (its `api` extra: a Litestar app, POST /extract with
    multipart ``files``), run by uvicorn with N worker processes, as its docs deploy it.
    It answers 201 even when extraction failed (the error is the text, "Error: ..."), so
    such a reply counts as an error here, not as extracted. Its result cache is turned
    off per request (``use_cache: false``): every request is really extracted, as by
    textsieve, which has no such cache."""

    def send(c: httpx.Client, i: int) -> int:
        k = i % len(bodies)
        r = c.post("/extract", files={"files": (names[k], bodies[k],
                                                MIME[Path(names[k]).suffix])},
                   headers={"X-Extraction-Config": '{"use_cache": false}'})
        if r.status_code == 201:
            return 200 if not r.json()[0]["content"].startswith("Error:") else 422
        return r.status_code

    # Its own folder as cwd: kreuzberg 3 looks for a kreuzberg.toml / pyproject.toml
    # config in the working directory, and textsieve's pyproject must not be read as one.
    return Service("kreuzberg", [python, "-m", "uvicorn", "kreuzberg._api.main:app",
                                 "--host", "127.0.0.1", "--port", "{port}", "--workers",
                                 "{workers}", "--no-access-log"], "/health", send,
                   cwd=str(Path(python).resolve().parents[1]))


@dataclass
class Run:
    load: Result
    over: Result
    alive: bool
    rss0: int
    rss1: int
    cpu_ms: float  # server CPU (all its processes) per answered request, load phase


def bench_service(svc: Service, workers: int, seconds: float) -> Run:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [a.format(port=port, workers=workers) for a in svc.argv]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=svc.cwd, env=svc.env)
    try:
        wait_up(url + svc.health, proc)
        capacity = 3 * workers  # textsieve: workers + its default queue of 2 per worker
        local = threading.local()

        def send(i: int) -> int:
            c = getattr(local, "c", None)
            if c is None:
                c = local.c = httpx.Client(base_url=url, timeout=120)
            return svc.send(c, i)

        load(send, 2 * workers, 2.0)  # warm-up: workers started, parsers loaded
        rss0 = tree_memory(proc.pid)
        cpu0 = tree_cpu(proc.pid)
        res = load(send, capacity, seconds)
        cpu_ms = (tree_cpu(proc.pid) - cpu0) * 1000 / max(1, len(res.ok))
        print(res.line(f"{svc.name} -j {workers} load x{capacity}")
              + f"  CPU {cpu_ms:.2f} ms/req", flush=True)
        over = load(send, 4 * capacity, seconds)
        print(over.line(f"{svc.name} -j {workers} overload x{4 * capacity}"), flush=True)
        try:
            alive = proc.poll() is None and httpx.get(url + svc.health).status_code == 200
        except httpx.HTTPError:
            alive = False
        rss1 = tree_memory(proc.pid)
        print(f"{'':<28} server up after overload: {alive}; PSS {rss0 / 2**20:.0f} MiB "
              f"before, {rss1 / 2**20:.0f} MiB after", flush=True)
        return Run(res, over, alive, rss0, rss1, cpu_ms)
    finally:
        stop(proc)


def ratios(workers: int, ts: Run, peer: Run, name: str) -> None:
    """textsieve against the peer at one worker count (above 1 = textsieve better)."""
    def rate(r: Result) -> float:
        return len(r.ok) / r.seconds

    print(f"  -j {workers}, textsieve vs {name} (above 1 = textsieve better): "
          f"load ok/s {rate(ts.load) / rate(peer.load):.2f}x, "
          f"p50 {peer.load.pct(50) / ts.load.pct(50):.2f}x, "
          f"p99 {peer.load.pct(99) / ts.load.pct(99):.2f}x, "
          f"server CPU/request {peer.cpu_ms / ts.cpu_ms:.2f}x; "
          f"overload ok/s {rate(ts.over) / rate(peer.over):.2f}x, "
          f"admitted p50 {peer.over.pct(50) / ts.over.pct(50):.2f}x, "
          f"p99 {peer.over.pct(99) / ts.over.pct(99):.2f}x; "
          f"PSS after {peer.rss1 / ts.rss1:.2f}x")


def default_kreuzberg() -> str | None:
    here = ROOT / "bench" / ".peers" / "kreuzberg3" / "bin" / "python"
    return str(here) if here.exists() else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--kreuzberg", default=default_kreuzberg(),
                    help="python of a venv with kreuzberg[api] 3.x (default: "
                         "bench/.peers/kreuzberg3, made by bench/peers_service_setup.sh)")
    ap.add_argument("--no-peer", action="store_true", help="textsieve alone")
    args = ap.parse_args()
    bodies = [(ROOT / "samples" / "docs" / n).read_bytes() for n in DOCS]
    print(f"{len(bodies)} small documents ({sum(map(len, bodies)) // len(bodies)} bytes "
          f"average), {args.seconds:g} s per phase, {os.cpu_count()} cores")
    peer = None
    if args.kreuzberg and not args.no_peer:
        peer = kreuzberg_service(args.kreuzberg, DOCS, bodies)
        version = subprocess.run([args.kreuzberg, "-c", "import importlib.metadata as m; "
                                  "print(m.version('kreuzberg'))"],
                                 capture_output=True, text=True).stdout.strip()
        print(f"peer: kreuzberg {version} API server (uvicorn --workers N), same documents")
    elif not args.no_peer:
        print("no peer: run bash bench/peers_service_setup.sh (or pass --kreuzberg)")
    for workers in (1, 2):
        ts = bench_service(textsieve_service(bodies), workers, args.seconds)
        if peer is not None:
            ratios(workers, ts, bench_service(peer, workers, args.seconds), peer.name)


if __name__ == "__main__":
    main()
