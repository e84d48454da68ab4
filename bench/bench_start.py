"""What starting `textsieve extract FILE` costs: the command on a one-line text file against
the interpreter's own start (the floor every Python contender pays), ``import textsieve``,
``textsieve --help`` and kreuzberg's one-file script, plus where the imports' time goes.

Run by hand, after ``bash bench/peers_setup.sh`` (kreuzberg's row is skipped without it)::

    bench/.peers/venv/bin/python bench/bench_start.py [--runs 21] [--top 25]

Every command runs ``--runs`` times, the commands interleaved run by run (a shared VM's
drift hits all alike); wall and CPU (user + sys of the process and its children, from
``wait4``) are reported as the minimum and the median: the minimum is the cost itself, the
median what a loaded machine adds. Then ``python -X importtime`` of the command, each
module's own time as the minimum over ``--import-runs`` runs, the largest first.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEERS_PY = ROOT / "bench" / ".peers" / "venv" / "bin" / "python"
KREUZBERG_ONE = ("import sys\nfrom kreuzberg import ExtractionConfig, extract_file_sync\n"
                 "sys.stdout.write(extract_file_sync(sys.argv[1], config=ExtractionConfig("
                 "use_cache=False, disable_ocr=True)).content or '')\n")
IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")


def measure(commands: dict[str, list[str]], runs: int, env: dict[str, str]
            ) -> dict[str, list[tuple[float, float]]]:
    """(wall s, CPU s) of every run of every command, the commands interleaved."""
    out: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    env=env)
            _, status, usage = os.wait4(proc.pid, 0)
            took = time.perf_counter() - t0
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"{name} failed: {' '.join(cmd)}")
            out[name].append((took, usage.ru_utime + usage.ru_stime))
    return out


def import_times(cmd: list[str], runs: int, env: dict[str, str]) -> list[tuple[int, int, str]]:
    """(own us, cumulative us, module) from ``-X importtime``, minimum of ``runs`` runs."""
    own: dict[str, list[int]] = defaultdict(list)
    cum: dict[str, list[int]] = defaultdict(list)
    for _ in range(runs):
        proc = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], capture_output=True,
                              text=True, env=env, check=True)
        for line in proc.stderr.splitlines():
            m = IMPORT_LINE.match(line)
            if m:
                own[m.group(4)].append(int(m.group(1)))
                cum[m.group(4)].append(int(m.group(2)))
    rows = [(min(own[m]), min(cum[m]), m) for m in own if len(own[m]) == runs]
    return sorted(rows, reverse=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=str(PEERS_PY if PEERS_PY.exists() else sys.executable))
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--import-runs", type=int, default=7)
    ap.add_argument("--top", type=int, default=25)
    ns = ap.parse_args()
    py = ns.python
    script = str(Path(py).parent / "textsieve")
    # Compiled bytecode is what a user runs: never measure a start that compiles.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        note = Path(tmp, "note.txt")
        note.write_text("grey herons stand in the shallows\n", encoding="utf-8")
        commands = {
            "python -c pass (floor)": [py, "-c", "pass"],
            "python -c 'import textsieve'": [py, "-c", "import textsieve"],
            "textsieve --help": [script, "--help"],
            "textsieve extract note.txt": [script, "extract", str(note)],
        }
        has_kreuzberg = subprocess.run([py, "-c", "import kreuzberg"], capture_output=True,
                                       env=env, check=False).returncode == 0
        if has_kreuzberg:
            commands["kreuzberg note.txt (python -c)"] = [py, "-c", KREUZBERG_ONE, str(note)]
        for cmd in commands.values():  # bytecode written, caches warm
            subprocess.run(cmd, capture_output=True, env=env, check=False)
        results = measure(commands, ns.runs, env)
        print(f"{ns.runs} runs each, interleaved; python {py}")
        print(f"{'command':34s} | wall min | wall med | CPU min | CPU med  (ms)")
        for name, rows in results.items():
            wall, cpu = [w for w, _ in rows], [c for _, c in rows]
            print(f"{name:34s} | {1000 * min(wall):8.1f} | {1000 * statistics.median(wall):8.1f}"
                  f" | {1000 * min(cpu):7.1f} | {1000 * statistics.median(cpu):7.1f}")
        # TEXTSIEVE_DEBUG: the forked child keeps its stderr, where its imports are listed.
        rows = import_times([py, "-m", "textsieve", "extract", str(note)], ns.import_runs,
                            {**env, "TEXTSIEVE_DEBUG": "1"})
    total = sum(own for own, _, _ in rows)
    print(f"\n-X importtime of `textsieve extract note.txt` (command and forked child): "
          f"{total / 1000:.1f} ms in all, own time (minimum of {ns.import_runs} runs):")
    for own, cum, name in rows[:ns.top]:
        print(f"  {own / 1000:6.2f} ms own {cum / 1000:7.2f} ms with its imports  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
