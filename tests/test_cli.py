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


# -- pipes and devices: read once, by everyone -------------------------------------------------

def _feed_fifo(path: Path, data: bytes) -> None:
    """Write ``data`` into a FIFO from a thread (the reader may stop early: that is fine)."""
    import contextlib
    import threading

    def writer() -> None:
        with contextlib.suppress(BrokenPipeError), open(path, "wb") as f:
            f.write(data)

    threading.Thread(target=writer, daemon=True).start()


def _extract_within(seconds: float, *args: object, **kwargs: object) -> object:
    """``textsieve.extract`` with a watchdog: a reader that blocks on an exhausted pipe
    fails the test instead of hanging the suite."""
    import threading

    import textsieve

    box: list[object] = []
    t = threading.Thread(target=lambda: box.append(textsieve.extract(*args, **kwargs)),
                         daemon=True)
    t.start()
    t.join(seconds)
    assert box, f"extraction still blocked after {seconds} s"
    return box[0]


def test_fifo_path_gives_the_text(corpus: Path, tmp_path: Path) -> None:
    """A FIFO is hashed, detected and extracted from one read (it was 'empty' before)."""
    import os

    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    data = (corpus / "pdf" / "pdfjs__tracemonkey.pdf").read_bytes()
    _feed_fifo(fifo, data)
    doc = _extract_within(60, fifo, ocr="never")
    assert doc.status == "ok", doc.error
    assert "Trace-based Just-in-Time" in doc.text
    assert doc.size == len(data)


def test_fifo_over_the_size_limit_is_too_large(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "big.fifo"
    os.mkfifo(fifo)
    _feed_fifo(fifo, b"x" * 300_000)
    doc = _extract_within(60, fifo, max_file_size=100_000)
    assert doc.error is not None and doc.error.kind == "too_large"


def test_process_substitution_through_the_cli(corpus: Path) -> None:
    """``textsieve extract <(curl ...)``: the worker reads the pipe the shell made."""
    docx = corpus / "docx" / "poi__FieldCodes.docx"
    script = f'"{sys.executable}" -m textsieve.cli extract -f json <(cat "{docx}")'
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                         check=False)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["status"] == "ok" and doc["mime_type"].endswith("wordprocessingml.document")
    assert doc["text"].strip()


def test_run_archives_a_pipe_once(corpus: Path, tmp_path: Path) -> None:
    """``textsieve run <(curl ...)``: the pipe's bytes become one item keyed by their hash
    (it was silently skipped: not a regular file); the same bytes again are unchanged."""
    rtf = corpus / "rtf" / "poi__message.rtf"
    db = tmp_path / "a.db"
    cmd = f'"{sys.executable}" -m textsieve.cli run --archive "{db}" <(cat "{rtf}")'
    first = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120,
                           check=False)
    assert first.returncode == 0, first.stderr
    found = run("search", "Five files from Hell", "--archive", str(db))
    assert found.returncode == 0 and "pipe:" in found.stdout, found.stdout + found.stderr
    again = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120,
                           check=False)
    assert again.returncode == 0, again.stderr
    out = again.stdout + again.stderr
    assert "unchanged (skipped)  1" in out and "extracted            0" in out, out


def test_pipe_item_reads_at_most_one_byte_past_the_limit(tmp_path: Path) -> None:
    """An endless pipe given to ``run`` costs bounded memory, and the byte past the limit
    makes its extraction ``too_large``, as for bytes and file objects of any kind."""
    import os

    import textsieve
    from textsieve import Options
    from textsieve.core import extract_many
    from textsieve.sources.files import FileSource

    fifo = tmp_path / "endless.fifo"
    os.mkfifo(fifo)
    _feed_fifo(fifo, b"a" * 50_000)
    [item] = list(FileSource(str(fifo), max_size=1000).items())
    assert item.size == 1001 and len(item.data or b"") == 1001
    assert item.key.startswith("pipe:")
    [doc] = list(extract_many([item.data], Options(max_file_size=1000, workers=1)))
    assert doc.error is not None and doc.error.kind == "too_large"
    small = textsieve.extract(b"a" * 1000, max_file_size=1000)  # at the limit: fine
    assert small.status == "ok"


def _under_memory_cap(limit: int):  # -> preexec_fn
    """A child's whole address space capped (its workers inherit it): an unbounded read
    ends in MemoryError there instead of growing until the kernel kills something."""
    import resource

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return cap


def test_endless_stdin_is_too_large_not_unbounded() -> None:
    """``textsieve extract - < /dev/zero`` grew until the kernel killed it: stdin is now
    read against --max-file-size, and past it the input gets its typed too_large record."""
    with open("/dev/zero", "rb") as zero:
        r = subprocess.run([sys.executable, "-m", "textsieve", "extract", "-j", "1",
                            "--max-file-size", "8", "-"], stdin=zero, capture_output=True,
                           text=True, timeout=120, check=False,
                           preexec_fn=_under_memory_cap(2 << 30))
    assert r.returncode == 1, r.stderr
    assert "-: too_large: input is more than the limit of 8388608 bytes" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_stdin_under_the_limit_is_extracted_with_others(folder: Path) -> None:
    """A capped stdin next to files: each input keeps its place in the output."""
    r = run("extract", "--max-file-size", "1", str(folder / "a.txt"), "-",
            stdin=b"words from standard input\n")
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert out.index("herons") < out.index("==> - <==") < out.index("standard input")


def test_api_file_objects_are_capped_and_work_isolated(tmp_path: Path) -> None:
    """A file object is read in chunks up to max_file_size (an endless one ends in
    too_large); with isolate=True it used to raise 'cannot pickle BufferedReader'."""
    import textsieve

    with open("/dev/zero", "rb") as zero:
        doc = textsieve.extract(zero, isolate=True, max_file_size=1 << 20, workers=1)
    assert doc.status == "error" and doc.error.kind == "too_large"
    p = tmp_path / "note.txt"
    p.write_text("a note about storks\n")
    with open(p, "rb") as f:
        doc = textsieve.extract(f, isolate=True, workers=1)
    assert doc.status == "ok" and doc.text.strip() == "a note about storks"
    assert doc.name == "note.txt"
