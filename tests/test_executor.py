"""The executor seam: the extraction core imports no executor, an executor hands back
results in any order with their key, and a multi-threaded process (the REST service)
submits from many threads and gets one Future per document, isolation included."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from textsieve import Options, Status
from textsieve import detection as d
from textsieve.core import DocumentFlow, Extracted, Task, make_executor
from textsieve.extractors import REGISTRY
from textsieve.model import ErrorKind
from textsieve.run.pool import LocalExecutor
from textsieve.run.service import ExtractionService


def test_the_extraction_core_imports_no_executor() -> None:
    """core, extractors and ocr are what a Ray worker runs: none of them may import the
    run package, not even inside a function (the circle core -> run.pool -> core)."""
    import ast

    import textsieve

    root = Path(textsieve.__file__).parent
    files = [root / "core.py", *(root / "extractors").glob("*.py"), *(root / "ocr").glob("*.py")]
    offenders = []
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [a.name for a in node.names if not node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == "run" or n.startswith(("run.", "textsieve.run")) for n in names):
                offenders.append(f"{f.name}:{node.lineno}")
    assert len(files) > 20 and offenders == []


def test_local_executor_returns_results_as_they_finish(tmp_path: Path, monkeypatch) -> None:
    """A slow task does not hold back the quick ones queued after it."""
    monkeypatch.setitem(REGISTRY, d.TEXT, ["fault_plugins:hang"])
    slow = tmp_path / "slow.xyz"
    slow.write_text("never read")
    quick = tmp_path / "quick.csv"
    quick.write_text("a,b\n1,2\n")
    seen: list[int] = []
    with LocalExecutor(Options(workers=2, timeout=3)) as ex:
        ex.submit([Task(1, str(slow), None), Task(2, str(quick), None),
                   Task(3, str(quick), None)])
        got = {}
        while ex.busy():
            for task, result in ex.wait():
                seen.append(task.key)
                got[task.key] = result
    assert seen[-1] == 1  # the hang finished last, as a timeout
    assert got[1].error.kind is ErrorKind.TIMEOUT  # a failed Document
    # A whole input's result is its Document and the pages it left for OCR (none here).
    assert all(isinstance(got[k], Extracted) and got[k].pending == () for k in (2, 3))
    assert got[2].document.status is Status.OK and got[3].document.status is Status.OK


def test_document_flow_gives_each_document_its_key(tmp_path: Path) -> None:
    paths = []
    for i in range(7):
        p = tmp_path / f"n{i}.txt"
        p.write_text(f"number {i}")
        paths.append(p)
    ex = make_executor(Options(workers=2))
    try:
        flow = DocumentFlow(ex, ex.options)  # type: ignore[attr-defined]
        for i, p in enumerate(paths):
            flow.add(f"key-{i}", str(p), None)
        out = {}
        while flow.in_flight():
            out.update(flow.step())
    finally:
        ex.close()
    assert {k: doc.text for k, doc in out.items()} == {
        f"key-{i}": f"number {i}" for i in range(7)}


def test_service_submits_from_many_threads(tmp_path: Path, monkeypatch) -> None:
    """Threads are running (as in a web server): the workers are still isolated (a hang
    ends as a timeout record, not a stuck request) and every caller gets its document."""
    bad = tmp_path / "bad.xyz"
    bad.write_text("x")
    monkeypatch.setitem(REGISTRY, d.TEXT, ["fault_plugins:hang"])
    csvs = []
    for i in range(12):
        p = tmp_path / f"t{i}.csv"
        p.write_text(f"col\n{i * 7}\n")
        csvs.append(p)
    service = ExtractionService(Options(workers=2, timeout=2), limit=4)
    results: dict[str, object] = {}

    def client(paths: list[Path]) -> None:
        for p in paths:
            results[p.name] = service.submit(str(p)).result(timeout=60)

    threads = [threading.Thread(target=client, args=(csvs[i::3],)) for i in range(3)]
    threads.append(threading.Thread(target=client, args=([bad],)))
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    service.close()
    assert results["bad.xyz"].error.kind is ErrorKind.TIMEOUT  # type: ignore[attr-defined]
    for i, p in enumerate(csvs):
        doc = results[p.name]
        assert doc.status is Status.OK and str(i * 7) in doc.text  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError):
        service.submit(str(csvs[0]))


def test_no_ray_cluster_is_a_one_line_error(tmp_path: Path) -> None:
    """--executor ray --address auto with no cluster running: the run says so in one
    line and exits with the 'unreachable' code, no traceback."""
    import subprocess
    import sys

    from ray._private.services import find_gcs_addresses

    from textsieve.errors import ExitCode

    if find_gcs_addresses():
        pytest.skip("a Ray cluster runs on this machine: `auto` would find it")
    (tmp_path / "a.txt").write_text("hello")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    res = subprocess.run([sys.executable, "-m", "textsieve.cli", "run", "--archive",
                          str(tmp_path / "a.db"), str(tmp_path / "a.txt"), "--executor",
                          "ray", "--address", "auto"], capture_output=True, text=True,
                         timeout=120, env=env, check=False)
    assert res.returncode == ExitCode.UNREACHABLE, res.stderr
    assert "no Ray cluster at auto" in res.stderr and "Traceback" not in res.stderr


def test_a_named_cluster_nobody_answers_at_is_an_error_not_a_hang(tmp_path: Path) -> None:
    """--address HOST:PORT where nothing listens: Ray kept trying for well over ten
    minutes (the run hung). Now one connection attempt says so, with the way out."""
    import socket
    import subprocess
    import sys

    from textsieve.errors import ExitCode

    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "a.txt").write_text("hello")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    res = subprocess.run([sys.executable, "-m", "textsieve", "run", "--archive",
                          str(tmp_path / "a.db"), str(tmp_path / "a.txt"), "--executor",
                          "ray", "--address", f"127.0.0.1:{port}"], capture_output=True,
                         text=True, timeout=120, env=env, check=False)
    assert res.returncode == ExitCode.UNREACHABLE, res.stderr
    assert f"no Ray cluster at 127.0.0.1:{port}" in res.stderr, res.stderr
    assert "--address local" in res.stderr and "Traceback" not in res.stderr
