"""One mechanism starts processes: ``textsieve.procs``. Every other module goes through it
(the executor's workers, the service, page readers, isolated calls, a run's process), so
the guarantees of a child (own group, death with its parent, guard, memory cap, SIGINT
left to the parent) cannot be forgotten by a new caller."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "textsieve"

# Calls that make a process (or choose how one is made), whatever module they come from.
STARTERS = {"fork", "forkpty", "fork_exec", "Process", "Pool", "get_context",
            "set_start_method", "set_forkserver_preload", "spawnv_passfds"}


def _starts(tree: ast.AST) -> list[int]:
    """Lines that fork or make a ``multiprocessing`` process (``os.fork()``, ``ctx.Process``,
    ``from multiprocessing import Process``, ``mp.get_context(...)``...)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else \
                f.id if isinstance(f, ast.Name) else None
            through_procs = isinstance(f, ast.Attribute) and \
                isinstance(f.value, ast.Name) and f.value.id == "procs"
            if name in STARTERS and not through_procs:
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                ("multiprocessing", "concurrent.futures")):
            if any(a.name in STARTERS | {"ProcessPoolExecutor"} for a in node.names):
                lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "ProcessPoolExecutor":
            lines.append(node.lineno)
    return lines


def test_only_procs_starts_processes() -> None:
    files = sorted(SRC.rglob("*.py"))
    offenders = [f"{f.relative_to(SRC)}:{line}" for f in files if f.name != "procs.py"
                 for line in _starts(ast.parse(f.read_text(), str(f)))]
    assert len(files) > 50 and offenders == [], offenders
    assert _starts(ast.parse((SRC / "procs.py").read_text())), "procs.py starts them"


def test_the_check_sees_every_way_to_start_one() -> None:
    samples = ["import os\nos.fork()", "import multiprocessing as mp\nmp.Process(target=f)",
               "from multiprocessing import Process", "ctx = mp.get_context('spawn')",
               "with mp.Pool(2) as p: pass",
               "from concurrent.futures import ProcessPoolExecutor",
               "import concurrent.futures as cf\ncf.ProcessPoolExecutor()"]
    assert all(_starts(ast.parse(code)) for code in samples)
    assert not _starts(ast.parse("import subprocess\nsubprocess.run(['tesseract'])"))
    assert not _starts(ast.parse("from . import procs\nprocs.fork(procs.Setup())"))
