"""Service benchmark: textsieve serve under load, and under 4x overload.

Run by hand, niced: `nice -n 10 .venv/bin/python bench/bench_server.py [--seconds 8]
[--kreuzberg /path/to/venv/bin/kreuzberg]`.

For 1 and 2 workers, the real server (uvicorn on 127.0.0.1, a subprocess) is sent small
documents from samples/docs (DOCX, RTF, HTML, CSV, a one-page PDF, a text file), each
request a PUT /v1/extract, by closed-loop client threads (each sends its next request
when the last is answered):

- load: as many clients as the service admits (workers + queue): requests/s, p50/p99;
- overload: 4x that many clients: how many are refused (503 + Retry-After), p50/p99 of the
  admitted ones (they should stay near the load figures: refused requests do not queue),
  whether the server is still up, and its memory (RSS of the server and its workers)
  before and after.

With ``--kreuzberg BIN`` the same load goes to kreuzberg's API server (``BIN serve``,
POST /extract, multipart ``files``) in the same run, as a peer. The clients run on the
same 2 cores as the server, so the absolute figures are a floor.
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


def tree_rss(pid: int) -> int:
    """RSS in bytes of a process and all its descendants (Linux /proc)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


@dataclass
class Result:
    ok: list[float] = field(default_factory=list)  # latencies of 200s
    refused: int = 0  # 503
    other: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0

    def line(self, label: str) -> str:
        n = len(self.ok)
        lat = sorted(self.ok)
        p50 = lat[n // 2] * 1000 if n else float("nan")
        p99 = lat[min(n - 1, int(n * 0.99))] * 1000 if n else float("nan")
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


def bench_textsieve(workers: int, seconds: float, bodies: list[bytes]) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "textsieve", "serve", "--port", str(port),
                             "-j", str(workers)], stderr=subprocess.DEVNULL)
    try:
        wait_up(url + "/healthz", proc)
        capacity = 3 * workers  # workers + the default queue of 2 per worker
        local = threading.local()

        def send(i: int) -> int:
            c = getattr(local, "c", None)
            if c is None:
                c = local.c = httpx.Client(base_url=url, timeout=120)
            return c.put("/v1/extract", content=bodies[i % len(bodies)]).status_code

        load(send, workers, 2.0)  # warm-up: workers started, parsers loaded
        rss0 = tree_rss(proc.pid)
        print(load(send, capacity, seconds).line(f"textsieve -j {workers} load x{capacity}"))
        over = load(send, 4 * capacity, seconds)
        print(over.line(f"textsieve -j {workers} overload x{4 * capacity}"))
        alive = proc.poll() is None and httpx.get(url + "/healthz").status_code == 200
        rss1 = tree_rss(proc.pid)
        print(f"{'':<28} server up after overload: {alive}; RSS {rss0 / 2**20:.0f} MiB "
              f"before, {rss1 / 2**20:.0f} MiB after")
    finally:
        stop(proc)


def bench_kreuzberg(binary: str, seconds: float, names: list[str], bodies: list[bytes]
                    ) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([binary, "serve", "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_up(url + "/health", proc)
        local = threading.local()

        def send(i: int) -> int:
            c = getattr(local, "c", None)
            if c is None:
                c = local.c = httpx.Client(base_url=url, timeout=120)
            k = i % len(bodies)
            return c.post("/extract", files={"files": (names[k], bodies[k])}).status_code

        load(send, 1, 2.0)
        for clients in (3, 12):
            print(load(send, clients, seconds).line(f"kreuzberg serve x{clients}"))
        print(f"{'':<28} kreuzberg RSS {tree_rss(proc.pid) / 2**20:.0f} MiB")
    finally:
        stop(proc)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--kreuzberg", help="kreuzberg's CLI (with its API server)")
    args = ap.parse_args()
    bodies = [(ROOT / "samples" / "docs" / n).read_bytes() for n in DOCS]
    print(f"{len(bodies)} small documents ({sum(map(len, bodies)) // len(bodies)} bytes "
          f"average), {args.seconds:g} s per phase, {os.cpu_count()} cores")
    for workers in (1, 2):
        bench_textsieve(workers, args.seconds, bodies)
    if args.kreuzberg:
        bench_kreuzberg(args.kreuzberg, args.seconds, DOCS, bodies)


if __name__ == "__main__":
    main()
