"""Start the real ``textsieve serve`` (uvicorn on 127.0.0.1, a free port) in a subprocess,
for tests that talk to it over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], port: int) -> None:
        self.proc, self.port = proc, port
        self.url = f"http://127.0.0.1:{port}"

    def client(self, **kw: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, **kw)  # type: ignore[arg-type]


@contextmanager
def running_server(*args: str, env: dict[str, str] | None = None) -> Iterator[Server]:
    """``textsieve serve ARGS`` until the block ends; waits for /healthz."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "textsieve", "serve", "--port", str(port), *args],
        env={**os.environ, **(env or {})}, stderr=subprocess.PIPE)
    server = Server(proc, port)
    try:
        for _ in range(300):
            if proc.poll() is not None:
                raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(server.url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
