"""The isolated pool: a hang, a native crash or a memory hog costs one file only."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from textsieve import Options, Status, extract
from textsieve import detection as d
from textsieve.core import extract_many
from textsieve.extractors import REGISTRY
from textsieve.model import ErrorKind


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in {"good1.csv": "x,y\n7,8\n9,10\n", "bad.xyz": "faulty one",
                       "good2.csv": "a,b\n1,2\n3,4\n5,6\n"}.items():
        p = tmp_path / name
        p.write_text(text)
        out[name] = p
    return out


@pytest.fixture
def faulty_text(monkeypatch: pytest.MonkeyPatch):
    """Send plain text (here only 'bad.xyz'; the others are CSV) to a faulty plugin."""

    def install(fault: str) -> None:
        monkeypatch.setitem(REGISTRY, d.TEXT, [f"fault_plugins:{fault}"])

    return install


@pytest.mark.parametrize(("fault", "kind"), [
    ("hang", ErrorKind.TIMEOUT),
    ("crash", ErrorKind.CRASHED),
    ("hog", ErrorKind.TOO_LARGE),
])
def test_one_bad_file_does_not_stop_the_others(files, faulty_text, fault, kind) -> None:
    faulty_text(fault)
    opts = Options(timeout=3, memory_limit=512 * 1024 * 1024, workers=2)
    paths = [files["good1.csv"], files["bad.xyz"], files["good2.csv"]]
    t0 = time.monotonic()
    docs = list(extract_many(paths, opts))
    assert time.monotonic() - t0 < 30
    assert [doc.name for doc in docs] == [p.name for p in paths]  # input order kept
    by_name = {doc.name: doc for doc in docs}
    assert by_name["bad.xyz"].status is Status.ERROR
    assert by_name["bad.xyz"].error.kind is kind
    for good in ("good1.csv", "good2.csv"):
        assert by_name[good].status is Status.OK, by_name[good].error
    assert "5" in by_name["good2.csv"].text and "9" in by_name["good1.csv"].text


def test_isolated_api_call_times_out(files, faulty_text) -> None:
    faulty_text("hang")
    doc = extract(files["bad.xyz"], isolate=True, timeout=1)
    assert doc.error is not None and doc.error.kind is ErrorKind.TIMEOUT


def test_many_inputs_flow_through_a_small_pool(tmp_path: Path) -> None:
    paths = []
    for i in range(60):
        p = tmp_path / f"f{i}.txt"
        p.write_text(f"document number {i}")
        paths.append(p)
    docs = list(extract_many(paths, Options(workers=2)))
    assert [doc.text for doc in docs] == [f"document number {i}" for i in range(60)]


def test_missing_file_is_a_typed_error(tmp_path: Path) -> None:
    doc = extract(tmp_path / "nope.pdf")
    assert doc.status is Status.ERROR and doc.error.kind is ErrorKind.NOT_FOUND
    [doc] = list(extract_many([tmp_path / "nope.pdf"], Options(workers=1)))
    assert doc.error.kind is ErrorKind.NOT_FOUND


def test_a_killed_worker_takes_its_helper_programs_along(tmp_path: Path, faulty_text) -> None:
    """A worker past its deadline is killed with its whole process group: a helper it
    started (an external converter spinning on a damaged file) must not live on as an
    orphan eating a core."""
    import os

    faulty_text("hang_in_tool")
    pid_file = tmp_path / "helper.pid"
    bad = tmp_path / "bad.xyz"
    bad.write_text(str(pid_file))
    [doc] = list(extract_many([bad], Options(timeout=2, workers=1)))
    assert doc.error is not None and doc.error.kind is ErrorKind.TIMEOUT
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        # a zombie is gone in every way that matters (no CPU); its parent was killed
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        raise AssertionError("the helper program outlived its killed worker")
