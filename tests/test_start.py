"""Starting the command: `textsieve extract FILE` run once per file (a shell loop) must not
pay for what it does not use, and its fast path for one small file keeps the pool's
guarantees (a hang, a crash or a memory hog costs that file, typed; nothing lingers).

Each case runs in a fresh interpreter: the command process's imports are what is checked,
and textsieve forks only when no other thread runs (the test session has some).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# Parsers, the network stack and the pool machinery: none is needed to start the command,
# to print its help, or (in the command's own process) to extract one small file.
HEAVY = ("lxml", "pypdfium2", "httpx", "trafilatura", "PIL", "tesserocr", "openpyxl",
         "multiprocessing", "sqlite3", "tomllib", "numpy", "sklearn", "email",
         "charset_normalizer", "olefile", "python_calamine",
         # the standard library's heavier parts: none is needed to read a plain text file
         "zipfile", "lzma", "bz2", "_hashlib", "json", "subprocess", "shutil", "tempfile",
         "glob", "logging")


def _fresh(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``code`` in a new interpreter; it prints the heavy modules it ended up with as the
    last line of stderr (stdout is the command's)."""
    prologue = "import sys\nsys.path.insert(0, sys.argv[1])\n"  # no json: it is checked
    epilogue = (f"\nsys.stderr.write('\\nLOADED ' + repr(sorted({{m.split('.')[0] for m in "
                f"sys.modules}} & set({list(HEAVY)!r}))) + '\\n')\n")
    body = "try:\n" + "".join(f"    {line}\n" for line in code.splitlines()) + \
        "except SystemExit as exc:\n    code = exc.code\n"
    env = {k: v for k, v in os.environ.items() if k != "TEXTSIEVE_DEBUG"}
    return subprocess.run([sys.executable, "-c", prologue + "code = 0\n" + body + epilogue
                           + "sys.exit(code)", str(TESTS), *args],
                          capture_output=True, text=True, timeout=timeout, env=env,
                          check=False)


def _loaded(proc: subprocess.CompletedProcess[str]) -> list[str]:
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("LOADED ")][-1]
    return ast.literal_eval(line.removeprefix("LOADED "))


def test_help_and_import_load_no_parser() -> None:
    proc = _fresh("from textsieve.cli import main\ncode = main(['--help'])")
    assert proc.returncode == 0 and "extract" in proc.stdout, proc.stderr
    assert _loaded(proc) == []
    proc = _fresh("from textsieve.cli import main\ncode = main(['extract', '--help'])")
    assert proc.returncode == 0 and "--ocr" in proc.stdout, proc.stderr
    assert _loaded(proc) == []


def test_one_small_file_starts_no_pool(tmp_path: Path) -> None:
    f = tmp_path / "note.txt"
    f.write_text("grey herons stand in the shallows\n")
    proc = _fresh("from textsieve.cli import main\ncode = main(['extract', sys.argv[2]])",
                  str(f))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "grey herons stand in the shallows\n"
    # The work happened in a forked child: the command process imported no pool, no parser.
    assert _loaded(proc) == []


def test_the_child_of_one_text_file_loads_no_parser(tmp_path: Path) -> None:
    """The forked child that reads the file pays for what the file needs: a plain text
    file needs no XML, PDF or image library, no archive, hash or process module."""
    f = tmp_path / "note.txt"
    f.write_text("grey herons stand in the shallows\n")
    seen = tmp_path / "child-modules.json"
    proc = _fresh("import textsieve.cli as cli, textsieve.core as core\n"
                  "inner = core._child\n"
                  "def spy(path, name, options):\n"
                  "    doc = inner(path, name, options)\n"
                  "    with open(sys.argv[3], 'w') as out:\n"
                  "        out.write(repr(sorted({m.split('.')[0] for m in sys.modules})))\n"
                  "    return doc\n"
                  "core._child = spy\n"
                  "code = cli.main(['extract', sys.argv[2]])", str(f), str(seen))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "grey herons stand in the shallows\n"
    child = set(ast.literal_eval(seen.read_text()))
    assert "textsieve.core" not in _loaded(proc)  # the child read it, not the command
    assert "textsieve" in child and sorted(child & set(HEAVY)) == []


def test_the_command_ends_without_tearing_the_interpreter_down(tmp_path: Path) -> None:
    """`textsieve extract` ends as soon as its output is out (the interpreter's teardown
    of every module was ~10 ms of a ~60 ms command): all of it is out, through a pipe,
    the exit status is kept, atexit callbacks still run; module teardown does not."""
    big = tmp_path / "big.txt"
    big.write_text("".join(f"line {i}\n" for i in range(200_000)))
    missing = tmp_path / "missing.txt"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    # sitecustomize runs in every interpreter started with it on the path: an atexit
    # callback (coverage, logging rely on them) and an object torn down with its module.
    (hooks / "sitecustomize.py").write_text(
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('atexit ran\\n'))\n"
        "class _Torn:\n"
        "    def __del__(self):\n"
        "        sys.stderr.write('torn down\\n')\n"
        "KEEP = _Torn()\n")
    env = {**{k: v for k, v in os.environ.items() if k != "TEXTSIEVE_DEBUG"},
           "PYTHONPATH": os.pathsep.join([str(hooks), *filter(None, [
               os.environ.get("PYTHONPATH")])])}
    for args, status in (([str(big)], 0), ([str(big), str(missing)], 1)):
        proc = subprocess.run([sys.executable, "-m", "textsieve", "extract", *args],
                              capture_output=True, text=True, timeout=120, env=env,
                              check=False)
        assert proc.returncode == status, proc.stderr
        assert proc.stdout.count("\n") >= 200_000 and "line 199999\n" in proc.stdout
        assert "atexit ran" in proc.stderr
        assert "torn down" not in proc.stderr
    # Commands that keep an archive or a server open still end the ordinary way.
    proc = subprocess.run([sys.executable, "-m", "textsieve", "stats", "--archive",
                           str(tmp_path / "none.db")], capture_output=True, text=True,
                          timeout=120, env=env, check=False)
    assert proc.returncode == 1 and "torn down" in proc.stderr, proc.stderr


def test_a_one_page_scan_is_read_without_starting_the_pool(tmp_path: Path) -> None:
    """A photographed label (one page to OCR) is read by the one forked child, real
    Tesseract and all: the worker pool only starts for scans whose pages it can spread."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("L", (1800, 300), 255)
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 48)
    ImageDraw.Draw(img).text((60, 100), "Parcel 7731 leaves the depot at noon.", font=font,
                             fill=0)
    scan = tmp_path / "label.png"
    img.save(scan, dpi=(300, 300))
    proc = _fresh("from textsieve.cli import main\ncode = main(['extract', sys.argv[2]])",
                  str(scan))
    assert proc.returncode == 0, proc.stderr
    assert "Parcel 7731 leaves the depot" in proc.stdout
    assert "multiprocessing" not in _loaded(proc)


def test_config_file_is_still_read(tmp_path: Path) -> None:
    """tomllib is imported only when a config file is there: and then it is used."""
    f = tmp_path / "note.txt"
    f.write_text("herons\n")
    (tmp_path / "textsieve.toml").write_text('ocr = "sometimes"\n')
    proc = subprocess.run([sys.executable, "-m", "textsieve", "extract", str(f)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          check=False)
    assert proc.returncode == 2 and "ocr" in proc.stderr and "Traceback" not in proc.stderr


def _faulty(fault: str) -> str:
    """A command run whose plain-text extractor misbehaves on purpose (tests/fault_plugins)."""
    return ("from textsieve import detection as d\n"
            "from textsieve.extractors import REGISTRY\n"
            f"REGISTRY[d.TEXT] = ['fault_plugins:{fault}']\n"
            "from textsieve.cli import main\n"
            "code = main(['extract', '--timeout', '3', '--memory-limit', '512', "
            "'-f', 'json', sys.argv[2]])")


@pytest.mark.parametrize(("fault", "kind"), [
    ("hang", "timeout"), ("crash", "crashed"), ("hog", "too_large")])
def test_one_file_alone_keeps_the_pools_guarantees(tmp_path: Path, fault: str,
                                                   kind: str) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("faulty one")
    t0 = time.monotonic()
    proc = _fresh(_faulty(fault), str(bad))
    assert time.monotonic() - t0 < 30
    assert proc.returncode == 1, proc.stderr
    record = json.loads(proc.stdout)
    assert record["status"] == "error" and record["error"]["kind"] == kind, record
    assert f"bad.txt: {kind}:" in proc.stderr and "Traceback" not in proc.stderr
    assert "multiprocessing" not in _loaded(proc)  # it was the fast path that held


def test_a_hung_file_alone_takes_its_helper_programs_along(tmp_path: Path) -> None:
    """Past the deadline the child is killed with its process group: a program it started
    (a converter spinning on a damaged file) does not live on."""
    pid_file = tmp_path / "helper.pid"
    bad = tmp_path / "bad.txt"
    bad.write_text(str(pid_file))
    proc = _fresh(_faulty("hang_in_tool"), str(bad))
    assert json.loads(proc.stdout)["error"]["kind"] == "timeout", proc.stderr
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    gone = False
    while time.monotonic() < deadline and not gone:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                gone = stat.read().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            gone = True
        time.sleep(0.1)
    if not gone:
        os.kill(pid, 9)
    assert gone, "the helper program outlived the command"
