"""The command line as a user drives it: outputs, stdin, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", *args], input=stdin,
                          capture_output=True, timeout=120, check=False,
                          text=stdin is None)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("first file speaks of herons\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.csv").write_text("name,bird\nann,heron\nbob,egret\ncid,stork\n")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj garbage")
    return tmp_path


def test_text_of_one_file(folder: Path) -> None:
    r = run("extract", str(folder / "a.txt"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "first file speaks of herons"


def test_folder_walk_json_lines_and_exit_code(folder: Path) -> None:
    r = run("extract", "--format", "json", str(folder))
    assert r.returncode == 1  # one input failed
    records = [json.loads(line) for line in r.stdout.splitlines()]
    by_name = {Path(rec["path"]).name: rec for rec in records}
    assert set(by_name) == {"a.txt", "b.csv", "broken.pdf"}
    assert by_name["a.txt"]["status"] == "ok"
    assert "egret" in by_name["b.csv"]["text"]
    assert by_name["broken.pdf"]["status"] == "error"
    assert by_name["broken.pdf"]["error"]["kind"] == "corrupt"
    assert "broken.pdf" in r.stderr and "corrupt" in r.stderr


def test_markdown_table_for_csv(folder: Path) -> None:
    r = run("extract", "-f", "markdown", str(folder / "sub" / "b.csv"))
    assert r.returncode == 0, r.stderr
    assert "| name | bird |" in r.stdout
    assert "| bob | egret |" in r.stdout


def test_stdin_is_read_and_detected_by_content() -> None:
    r = run("extract", "-f", "json", "-", stdin=b"Subject: hi\nFrom: a@b.c\n\nbody words\n"
)
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["mime_type"] == "message/rfc822"
    assert "body words" in rec["text"]


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run("extract").returncode == 2
    assert run("frobnicate").returncode == 2
    assert run("extract", "--jobs", "-3", "x").returncode == 2


def test_missing_file_fails_with_1(tmp_path: Path) -> None:
    r = run("extract", str(tmp_path / "nope.docx"))
    assert r.returncode == 1
    assert "not_found" in r.stderr


def test_detect_command(folder: Path) -> None:
    r = run("detect", str(folder / "sub" / "b.csv"), str(folder / "broken.pdf"))
    assert r.returncode == 0
    assert "text/csv" in r.stdout and "application/pdf" in r.stdout
