"""textsieve serve over HTTP: the real server (uvicorn on 127.0.0.1) in a subprocess."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from proctree import alive, descendants, wait_until
from server_proc import running_server
from textsieve.core import Detect
from textsieve.model import ErrorKind
from textsieve.options import Options

SAMPLES = Path(__file__).parent.parent / "samples" / "docs"


@pytest.fixture(scope="module")
def server():
    with running_server("-j", "1", "--max-upload", "1") as s:
        yield s


def test_extract_text_markdown_json(server):
    data = (SAMPLES / "letter.docx").read_bytes()
    with server.client() as c:
        text = c.put("/v1/extract", content=data)
        md = c.put("/v1/extract", params={"format": "markdown"}, content=data)
        js = c.put("/v1/extract", params={"format": "json", "name": "letter.docx"},
                   content=data)
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/plain")
    assert md.headers["content-type"].startswith("text/markdown")
    doc = js.json()
    assert doc["status"] == "ok" and doc["name"] == "letter.docx"
    assert doc["mime_type"].endswith("wordprocessingml.document")
    assert doc["text"].split()[:3] == text.text.split()[:3]
    assert md.text.lstrip().startswith("#") or md.text != text.text


def test_detect(server):
    with server.client() as c:
        r = c.put("/v1/detect", content=(SAMPLES / "field-notes.pdf").read_bytes())
    assert r.status_code == 200 and r.json() == {"mime_type": "application/pdf"}


def test_bad_document_is_a_typed_error_not_a_traceback(server):
    with server.client() as c:
        text = c.put("/v1/extract", content=b"%PDF-1.7\n" + b"\x00garbage" * 50)
        js = c.put("/v1/extract", params={"format": "json"},
                   content=b"%PDF-1.7\n" + b"\x00garbage" * 50)
    assert text.status_code == 422
    assert text.json()["error"]["kind"] == "corrupt"
    assert js.status_code == 200 and js.json()["error"]["kind"] == "corrupt"
    assert "Traceback" not in text.text


def test_bad_options_and_routes_are_typed_errors(server):
    with server.client() as c:
        bad = c.put("/v1/extract", params={"ocr": "sometimes"}, content=b"x")
        missing = c.get("/v1/nothing")
    assert bad.status_code == 422 and bad.json()["error"]["kind"] == "invalid_request"
    assert missing.status_code == 404 and missing.json()["error"]["kind"] == "not_found"


def test_body_cap(server):
    with server.client() as c:
        r = c.put("/v1/extract", content=b"a" * (1024 * 1024 + 1))
        chunked = c.put("/v1/extract", content=iter([b"a" * 600_000, b"b" * 600_000]))
    assert r.status_code == 413 and r.json()["error"]["kind"] == "too_large"
    assert chunked.status_code == 413  # no Content-Length to trust: counted as it streams


def test_health_metrics_and_openapi(server):
    with server.client() as c:
        c.put("/v1/extract", content=b"hello")
        health = c.get("/healthz").json()
        metrics = c.get("/metrics").text
        schema = c.get("/openapi.json").json()
    assert health["status"] == "ok"
    assert 'textsieve_requests_total{route="/v1/extract",status="200"}' in metrics
    assert "textsieve_pool_crashes" in metrics
    assert "/v1/extract" in schema["paths"] and "/rmeta/{handler}" in schema["paths"]


def _server_workers(server_pid: int) -> list[int]:
    """The worker processes: grandchildren of the server (children of its forkserver)."""
    def children(pid: int) -> list[int]:
        out = []
        for task in Path(f"/proc/{pid}/task").iterdir():
            text = (task / "children").read_text().split()
            out.extend(int(p) for p in text)
        return out
    return [g for c in children(server_pid) for g in children(c)]


def _wait_dead(pid: int) -> None:
    """Until ``pid`` has exited (gone, or a zombie its parent has not reaped yet)."""
    for _ in range(200):
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return
        except (FileNotFoundError, ProcessLookupError):
            return
        time.sleep(0.01)


def test_a_killed_worker_costs_nothing_but_itself(server):
    with server.client() as c:
        assert c.put("/v1/extract", content=b"first").text == "first"
        workers = _server_workers(server.proc.pid)
        assert workers
        for pid in workers:
            os.kill(pid, 9)
        for pid in workers:  # dead, not merely signalled: its end of the pipe is closed
            _wait_dead(pid)
        after = c.put("/v1/extract", content=b"second")
    assert after.status_code == 200 and after.text == "second"


def _metric(client, name: str) -> float:
    """One of the service's metrics, as /metrics gives it."""
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no {name} metric")


def _jobs_started(client) -> float:
    """Jobs handed to a worker so far."""
    return _metric(client, "textsieve_pool_jobs")


def test_serve_recycles_workers_and_every_request_is_answered():
    """``--recycle-after 3``: workers are replaced as they go, no request waits for it or
    fails, the worn ones leave (one worker at the end, as ``-j 1`` says)."""
    with running_server("-j", "1", "--recycle-after", "3") as s, s.client() as c:
        first, i, deadline = None, 0, time.monotonic() + 60
        while time.monotonic() < deadline:
            i += 1
            r = c.put("/v1/extract", content=f"doc {i}".encode())
            assert r.status_code == 200 and r.text == f"doc {i}", (i, r.text)
            first = first or _server_workers(s.proc.pid)
            if _metric(c, "textsieve_pool_recycled") >= 3:
                break
        assert _metric(c, "textsieve_pool_recycled") >= 3
        assert wait_until(lambda: not any(alive(p) for p in first), 30), first
        assert wait_until(lambda: len(_server_workers(s.proc.pid)) == 1, 30)


def test_a_worker_killed_mid_request_is_a_typed_crash_and_the_next_request_works():
    """The request's job is surely inside the worker when it dies: the worker is stopped
    (SIGSTOP) before the request comes, and killed once the job was handed to it."""
    with running_server("-j", "1") as s, s.client() as c:
        assert c.put("/v1/extract", content=b"first").text == "first"
        [worker] = _server_workers(s.proc.pid)
        started = _jobs_started(c)
        os.kill(worker, signal.SIGSTOP)
        got: dict[str, object] = {}
        t = threading.Thread(target=lambda: got.update(r=c.put(
            "/v1/extract", params={"format": "json"}, content=b"never read")))
        t.start()
        for _ in range(500):
            if _jobs_started(c) > started:
                break
            time.sleep(0.02)
        os.kill(worker, signal.SIGKILL)
        t.join(60)
        r = got["r"]
        after = c.put("/v1/extract", content=b"second")
    assert r.status_code == 200  # type: ignore[attr-defined]
    error = r.json()["error"]  # type: ignore[attr-defined]
    assert error["kind"] == "crashed" and "SIGKILL" in error["message"]
    assert after.status_code == 200 and after.text == "second"


def test_sigkill_of_serve_leaves_no_workeralive():
    """Killed outright (no cleanup runs): its forkserver, workers and their group guards
    all go within 5 s, a worker that cannot read the end of its pipe included (stopped
    here, as one stuck in a parser would be: only the kernel's parent-death signal, and
    its guard, end it)."""
    with running_server("-j", "2") as s, s.client() as c:
        pdf = (SAMPLES / "field-notes.pdf").read_bytes()
        replies = []
        threads = [threading.Thread(target=lambda: replies.append(
            c.put("/v1/extract", content=pdf).status_code)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert replies == [200, 200]
        below = descendants(s.proc.pid)
        workers = _server_workers(s.proc.pid)
        assert len(workers) == 2 and len(below) >= 3, below  # a forkserver, 2 workers
        os.kill(workers[0], signal.SIGSTOP)
        os.kill(s.proc.pid, signal.SIGKILL)
        s.proc.wait()
        deadline = time.monotonic() + 5
        while any(alive(p) for p in below) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in below if alive(p)]


def _read_reply(sock: socket.socket) -> str:
    """One whole HTTP response from a raw socket (headers, then Content-Length bytes)."""
    sock.settimeout(30)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data.decode()
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return (head + b"\r\n\r\n" + body).decode()


def test_full_service_answers_503_with_retry_after():
    """With -j 1 and no queue, a request that comes while a scan is being read (OCR: a
    second or more) is refused at once with Retry-After; the next one after it works."""
    scan = (SAMPLES / "notice-scan.png").read_bytes()
    with running_server("-j", "1", "--queue", "0") as s, s.client() as c:
        busy = None
        for _ in range(6):  # a fast machine may finish the scan before a request lands
            got: dict[str, object] = {}
            t = threading.Thread(target=lambda got=got: got.update(
                r=c.put("/v1/extract", content=scan)))
            t.start()
            # On a loaded machine the probes could otherwise take the slot before the scan
            # is admitted, every time; the scan's OCR outlasts this pause by far.
            time.sleep(0.2)
            while t.is_alive():
                r = c.put("/v1/extract", content=b"other")
                if r.status_code == 503:
                    busy = r
                    break
            t.join(60)
            # the scan itself may be the one refused, when a small request took the slot
            assert got["r"].status_code in (200, 503)  # type: ignore[attr-defined]
            if busy is not None:
                break
        assert busy is not None
        assert busy.headers["retry-after"] == "1"
        assert busy.json()["error"]["kind"] == "busy"
        assert c.put("/v1/extract", content=b"again").text == "again"


def test_slow_uploads_do_not_starve_the_workers():
    """Clients dripping their bodies hold connections, not workers: with one worker and
    no queue, three slow uploads in progress leave the service answering others, and each
    is answered once its body is in."""
    with running_server("-j", "1", "--queue", "0") as s:
        socks = []
        try:
            for _ in range(3):
                sock = socket.create_connection(("127.0.0.1", s.port))
                sock.sendall(b"PUT /v1/extract HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             b"Content-Length: 10\r\n\r\nhello")
                socks.append(sock)
            time.sleep(0.5)  # the server has their heads and half their bodies
            with s.client() as c:
                for i in range(3):
                    r = c.put("/v1/extract", content=f"normal {i}".encode())
                    assert r.status_code == 200 and r.text == f"normal {i}"
            for sock in socks:  # one at a time: there is one admission and no queue
                sock.sendall(b"world")
                reply = _read_reply(sock)
                assert reply.startswith("HTTP/1.1 200") and reply.endswith("helloworld"), reply
        finally:
            for sock in socks:
                sock.close()


def test_a_trickled_body_times_out_and_frees_its_slot():
    with running_server("-j", "1", "--queue", "0", "--timeout", "1") as s:
        sock = socket.create_connection(("127.0.0.1", s.port))
        try:
            sock.settimeout(30)
            sock.sendall(b"PUT /v1/extract HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Content-Length: 10\r\n\r\nhel")
            reply = _read_reply(sock)  # the server gives up, not the client
        finally:
            sock.close()
        assert reply.startswith("HTTP/1.1 408")
        assert '"kind":"timeout"' in reply
        # The slot is free again: the next request is answered. Under load a worker may
        # take longer than --timeout to come free (503, 504), so ask again for a while; a slot
        # that stayed taken would fail every time.
        with s.client() as c:
            deadline = time.monotonic() + 30
            while True:
                r = c.put("/v1/extract", content=b"next")
                if r.status_code == 200 or time.monotonic() > deadline:
                    break
                assert r.status_code in (503, 504), r.text
                time.sleep(0.5)
            assert r.text == "next"


def test_token_required_and_checked():
    token = "s3cret-s3cret-s3cret"
    with running_server("-j", "1", env={"TEXTSIEVE_TOKEN": token}) as s, s.client() as c:
        none = c.put("/v1/extract", content=b"x")
        wrong = c.put("/v1/extract", content=b"x", headers={"Authorization": "Bearer nope"})
        right = c.put("/v1/extract", content=b"x", headers={"Authorization": f"Bearer {token}"})
        tika = c.put("/tika", content=b"x")
        health = c.get("/healthz")
    assert none.status_code == wrong.status_code == tika.status_code == 401
    assert none.json()["error"]["kind"] == "unauthorized"
    assert right.status_code == 200 and right.text == "x"
    assert health.status_code == 200


def test_non_loopback_without_token_refuses_to_start():
    env = {k: v for k, v in os.environ.items() if k != "TEXTSIEVE_TOKEN"}
    r = subprocess.run([sys.executable, "-m", "textsieve", "serve", "--host", "0.0.0.0",
                        "--port", "1"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "token" in r.stderr and "Traceback" not in r.stderr


# -- the service's extraction front itself (in this process, with workers from a
# forkserver as in the server: its threads run) ---------------------------------------------


def _reader_waiting(fifo: Path) -> int | None:
    """A write end of ``fifo`` once a worker has opened it for reading (it is then inside
    its job, blocked), else None."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return None


def _service(**kw):
    from textsieve.run.service import ExtractionService

    return ExtractionService(Options(), workers=1, threads_run=True, **kw)


def test_service_deadline_and_crash_keep_italive(tmp_path):
    # A named pipe nobody writes to: a job that never finishes on its own, by construction.
    fifo = tmp_path / "stuck"
    os.mkfifo(fifo)
    service = _service(queue=0)
    try:
        late = service.submit(str(fifo), timeout=0.5).result(30)
        assert late.error is not None and late.error.kind is ErrorKind.TIMEOUT
        pending = service.submit(str(fifo))
        fd = None
        for _ in range(1000):
            fd = _reader_waiting(fifo)
            if fd is not None:
                break
            threading.Event().wait(0.02)
        assert fd is not None
        for pid in service.worker_pids():
            os.kill(pid, 9)
        doc = pending.result(60)
        os.close(fd)
        assert doc.error is not None and doc.error.kind is ErrorKind.CRASHED
        assert "SIGKILL" in doc.error.message
        assert service.submit(b"still here").result(30).text == "still here"
        stats = service.stats
        assert stats["timeouts"] == 1 and stats["crashes"] == 1
    finally:
        service.close()


def _served_by(service, stop, seconds: float = 60) -> list[tuple[int, ...]]:
    """The worker pids answering each of one-at-a-time jobs until ``stop(stats)`` (or
    ``seconds``): a worn worker serves on until its spare is up, then is swapped for it
    when the next job is handed out, so the pids seen after a job did it."""
    served = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        i = len(served)
        assert service.submit(f"doc {i}".encode()).result(30).text == f"doc {i}"
        served.append(tuple(service.worker_pids()))
        if stop(service.stats):
            break
    return served


def test_service_recycles_workers_after_n_jobs():
    service = _service(recycle_after=2)
    try:
        served = _served_by(service, lambda stats: stats["recycled"] >= 3)
        assert service.stats["recycled"] >= 3, served
        runs = [(pids, len(list(group))) for pids, group in itertools.groupby(served)]
        assert len(runs) >= 3, runs
        # Each worker did its two jobs, or a few more while its spare was starting
        # (it never waits for one), then left: its process is gone.
        assert all(n >= 2 for _, n in runs[:-1]), runs
        for pids, _ in runs[:-1]:
            assert wait_until(lambda p=pids: not any(alive(x) for x in p), 30), pids
    finally:
        service.close()


def test_service_recycles_a_worker_whose_memory_grew():
    service = _service(recycle_rss=1)  # any worker is "too big"
    try:
        served = _served_by(service, lambda stats: stats["recycled"] >= 2)
        assert service.stats["recycled"] >= 2 and len(set(served)) >= 3, served
        assert service.stats["jobs"] == len(served)
    finally:
        service.close()


def test_service_admission_is_bounded():
    service = _service(queue=1)
    try:
        with service.slot(), service.slot():
            assert service.in_flight == 2
            with pytest.raises(Exception, match="busy") as exc, service.slot():
                pass
            assert exc.value.retry_after >= 1  # type: ignore[attr-defined]
        with service.slot():
            assert service.in_flight == 1
        assert service.stats["rejected"] == 1
    finally:
        service.close()


def test_service_modes_besides_extract():
    service = _service()
    try:
        detected = service.submit((SAMPLES / "field-notes.pdf").read_bytes(), work=Detect())
        assert detected.result(30).mime_type == "application/pdf"
    finally:
        service.close()


def test_json_output_is_the_document(server):
    with server.client() as c:
        r = c.put("/v1/extract", params={"format": "json"}, content=b"plain words")
    assert json.loads(r.text)["text"] == "plain words"
