"""Mixed dev-corpus benchmark: textsieve against markitdown, kreuzberg and extractous (Tika).

Run by hand, after ``bash bench/peers_setup.sh``::

    bench/.peers/venv/bin/python bench/bench_corpus.py [--corpus DIR] [--tools a,b]
        [--timeout 60] [--formats pdf,docx] [--no-cli] [--repeat 3]
    bench/.peers/venv/bin/python bench/bench_corpus.py --per-file [COMMANDS] [--repeat 3]
        [--baseline SRC]

Every tool runs in its own FRESH worker process, file by file through its plain
single-threaded Python API; each file goes to every tool in turn (never two at once on our
2 cores), so that a shared VM's drifting speed hits every tool alike. The peak RSS of a
row is that tool's alone (``ru_maxrss`` of its worker, import included).
textsieve runs in-process (``textsieve.extract``, no isolation) like the peers; a second
row runs the real CLI (``textsieve extract -j 2``, isolated workers) for the end-to-end
figure. A watchdog in this process kills a worker whose file runs past ``--timeout`` (it
counts as a failure) and starts a new one; a worker that dies counts that file as crashed.
With ``--repeat n`` each file runs n times in a row and its best time counts: on a shared
VM a single pass varies by 30% from run to run.

Success = the tool returned non-empty text without raising (textsieve: status ``ok``).
"Expected words hit" is the fairer quality figure: for files that
``tests/corpus_expectations.tsv`` expects to yield text, did the output contain all the
expected words? Raw per-file results go to ``bench/out/corpus-<date>.jsonl``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import json
import os
import queue
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "dev-corpus"
EXPECTATIONS = ROOT / "tests" / "corpus_expectations.tsv"
OUT = ROOT / "bench" / "out"
PEERS_PY = ROOT / "bench" / ".peers" / "venv" / "bin" / "python"
TOOLS = ("textsieve", "textsieve-no-ocr", "markitdown", "kreuzberg", "extractous")
CLI_ROW = "textsieve CLI -j2"
SPACES = re.compile(r"\s+")

# -- the tools, each behind one call: path -> (text, note) ----------------------------------
# A call raises on failure; ``note`` carries a tool-specific status (textsieve's error kind).

Extract = Callable[[str], tuple[str, str]]


def _textsieve(ocr: str = "auto") -> Extract:
    import textsieve

    # Every parser loaded now, as the peers load theirs at import (kreuzberg's native
    # library, markitdown's converters): start-up counts as import time, not file time.
    textsieve.preload()

    def run(path: str) -> tuple[str, str]:
        doc = textsieve.extract(path, ocr=ocr)
        text = "\n".join(filter(None, (doc.title, doc.full_text())))
        if doc.status != "ok":
            kind = doc.error.kind if doc.error else doc.status
            raise RuntimeError(f"{kind}: {doc.error.message if doc.error else ''}"[:300])
        return text, "ok"
    return run


def _markitdown() -> Extract:
    from markitdown import MarkItDown

    md = MarkItDown(enable_plugins=False)  # no LLM client, no Document Intelligence: offline

    def run(path: str) -> tuple[str, str]:
        return md.convert(path).text_content or "", ""
    return run


def _kreuzberg() -> Extract:
    from kreuzberg import ExtractionConfig, extract_file_sync

    # No cache (every file is parsed for real), OCR off (no tesseract here, no downloads).
    config = ExtractionConfig(use_cache=False, disable_ocr=True)

    def run(path: str) -> tuple[str, str]:
        return extract_file_sync(path, config=config).content or "", ""
    return run


def _extractous() -> Extract:
    from extractous import Extractor, PdfOcrStrategy, PdfParserConfig

    ex = (Extractor()
          .set_extract_string_max_length(100_000_000)  # default 500k chars truncates
          .set_pdf_config(PdfParserConfig().set_ocr_strategy(PdfOcrStrategy.NO_OCR)))

    def run(path: str) -> tuple[str, str]:
        text, _meta = ex.extract_file_to_string(path)
        return text or "", ""
    return run


FACTORIES: dict[str, Callable[[], Extract]] = {
    "textsieve": _textsieve, "markitdown": _markitdown,
    # Like for like with the peers that do no OCR (kreuzberg, markitdown): scans and images
    # give needs_ocr instead of text, in no time.
    "textsieve-no-ocr": lambda: _textsieve("never"),
    "kreuzberg": _kreuzberg, "extractous": _extractous,
}


def _norm(text: str) -> str:
    return SPACES.sub(" ", unicodedata.normalize("NFKC", text)).casefold()


def words_hit(text: str, words: list[str]) -> tuple[bool, list[str]]:
    """All expected words present (NFKC, case-insensitive, any whitespace between words)?

    The same rule as tests/test_corpus.py, applied to a tool's whole output (for textsieve
    the full text incl. attachments/members: peers return one text body too).
    """
    hay = _norm(text)
    missing = [w for w in words if _norm(w) not in hay]
    return not missing, missing


def _peak_rss_kb() -> int:
    """Peak RSS of this worker or any helper program it ran (Linux reports KiB)."""
    return max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
               resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def warm_up(run: Extract) -> None:
    """One tiny extraction before timing: lazy one-time start-up (extractous loads its
    native Tika image on first use) counts as import time, not against the first file."""
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp, "warm-up.txt")
        p.write_text("warm up\n", encoding="utf-8")
        run(str(p))


def worker_main(tool: str) -> None:
    """Serve one tool: read JSON requests on stdin, answer one JSON line per file.

    The protocol gets its own copy of fd 1; fd 1 itself then points at stderr, so
    whatever a library prints (Tika's logging, warnings) cannot corrupt the answers.
    """
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    t0 = time.perf_counter()
    try:
        run = FACTORIES[tool]()
        warm_up(run)
    except Exception as exc:  # the peer is not installed or cannot load
        proto.write(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return
    proto.write(json.dumps({"ready": True, "import_s": time.perf_counter() - t0,
                            "rss_kb": _peak_rss_kb()}) + "\n")
    for line in sys.stdin:
        req = json.loads(line)
        t = time.perf_counter()
        res: dict = {"ok": False, "chars": 0, "error": None, "note": ""}
        try:
            best = float("inf")
            for _ in range(req.get("repeat", 1)):  # the best of n: a VM's noise filtered out
                t = time.perf_counter()
                text, res["note"] = run(req["path"])
                best = min(best, time.perf_counter() - t)
            res["chars"] = len(text.strip())
            res["ok"] = res["chars"] > 0
            if not res["ok"]:
                res["error"] = "empty text"
            if req.get("words"):
                res["words_hit"], res["words_missing"] = words_hit(text, req["words"])
            res["head"] = SPACES.sub(" ", text[:160]).strip()
        except Exception as exc:  # any failure of the tool is a result, not our crash
            res["error"] = f"{type(exc).__name__}: {exc}"[:300]
        res["seconds"] = min(best, time.perf_counter() - t)
        res["rss_kb"] = _peak_rss_kb()
        proto.write(json.dumps(res) + "\n")


# -- the parent: watchdog over one worker process per tool ---------------------------------

@dataclass
class FileResult:
    tool: str
    relpath: str
    format: str
    ok: bool
    chars: int
    seconds: float
    error: str | None = None
    note: str = ""
    expected: bool = False  # tests/corpus_expectations.tsv expects text (and words) here
    no_text: bool = False  # ... says no text can come out (empty, encrypted, corrupt ...)
    words_hit: bool | None = None
    words_missing: list[str] = field(default_factory=list)
    head: str = ""
    peak_mb: float = 0.0  # the worker's peak RSS so far: where it jumps, this file did it


class Worker:
    """One tool's worker subprocess, its answers read by a thread into a queue."""

    def __init__(self, python: str, tool: str, log) -> None:
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker", tool],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
            encoding="utf-8", start_new_session=True, cwd=str(OUT))
        self.answers: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.answers.put(line)
        self.answers.put(None)  # EOF: the worker died

    def ask(self, req: dict, timeout: float) -> dict | None:
        """The answer, or None after ``timeout`` seconds (the caller then kills us)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return {"crashed": True}
        return self.wait(timeout)

    def wait(self, timeout: float) -> dict | None:
        try:
            line = self.answers.get(timeout=timeout)
        except queue.Empty:
            return None
        return json.loads(line) if line else {"crashed": True}

    def rss_kb(self) -> int:
        """Current RSS of the worker and its children (a stand-in when it must be killed)."""
        try:
            import psutil

            p = psutil.Process(self.proc.pid)
            return sum(q.memory_info().rss for q in [p, *p.children(recursive=True)]) // 1024
        except Exception:
            return 0

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (subprocess.TimeoutExpired, BrokenPipeError):
            self.kill()


@dataclass
class ToolRun:
    tool: str
    results: list[FileResult] = field(default_factory=list)
    peak_rss_kb: int = 0
    import_s: float = 0.0
    wall_s: float = 0.0
    restarts: int = 0
    unavailable: str | None = None
    rss_note: str = ""


class ToolRunner:
    """One tool's worker, restarted after a hang or a crash, and its results so far."""

    def __init__(self, python: str, tool: str, expect: Expectations, timeout: float,
                 repeat: int) -> None:
        self.python, self.expect, self.timeout, self.repeat = python, expect, timeout, repeat
        self.tr = ToolRun(tool)
        self.log = (OUT / f"worker-{tool}.log").open("w")
        self.worker: Worker | None = None

    def _start(self) -> Worker | None:
        tr = self.tr
        w = Worker(self.python, tr.tool, self.log)
        hello = w.wait(300)
        if not hello or not hello.get("ready"):
            tr.unavailable = (hello or {}).get("error") or "worker did not start"
            w.kill()
            return None
        tr.import_s = tr.import_s or hello["import_s"]
        tr.peak_rss_kb = max(tr.peak_rss_kb, hello["rss_kb"])
        return w

    def one(self, relpath: str, path: Path) -> None:
        tr, expect = self.tr, self.expect
        if tr.unavailable:
            return
        if self.worker is None:
            self.worker = self._start()
            if self.worker is None:
                return
        fmt = relpath.split("/", 1)[0]
        words = expect.words.get(relpath)
        t = time.perf_counter()
        ans = self.worker.ask({"path": str(path), "words": words, "repeat": self.repeat},
                              self.timeout * self.repeat)
        tr.wall_s += time.perf_counter() - t
        if ans is None or ans.get("crashed"):
            tr.peak_rss_kb = max(tr.peak_rss_kb, self.worker.rss_kb())
            self.worker.kill()
            self.worker, tr.restarts = None, tr.restarts + 1
            err = f"timeout after {self.timeout:g} s" if ans is None else "worker crashed"
            tr.results.append(FileResult(tr.tool, relpath, fmt, False, 0,
                                         time.perf_counter() - t, err,
                                         expected=words is not None,
                                         no_text=relpath in expect.no_text,
                                         words_hit=False if words else None))
            return
        tr.peak_rss_kb = max(tr.peak_rss_kb, ans["rss_kb"])
        tr.results.append(FileResult(
            tr.tool, relpath, fmt, ans["ok"], ans["chars"], ans["seconds"], ans["error"],
            ans.get("note", ""), words is not None, relpath in expect.no_text,
            ans.get("words_hit"), ans.get("words_missing", []), ans.get("head", ""),
            round(ans["rss_kb"] / 1024, 1)))

    def close(self) -> ToolRun:
        if self.worker is not None:
            self.worker.close()
        self.log.close()
        return self.tr


def run_tools(python: str, tools: list[str], files: list[tuple[str, Path]],
              expect: Expectations, timeout: float, repeat: int = 1) -> list[ToolRun]:
    """Every file through every tool, one tool after the other on each file: the tools
    share the machine's good and bad moments alike (a shared VM's speed drifts by tens of
    percent over minutes, so running one tool's whole pass after another's skews ratios).
    One request at a time: never two tools busy at once on our 2 cores."""
    runners = [ToolRunner(python, tool, expect, timeout, repeat) for tool in tools]
    for relpath, path in files:
        for runner in runners:
            runner.one(relpath, path)
    return [runner.close() for runner in runners]


def run_cli(python: str, files: list[tuple[str, Path]], expect: Expectations,
            timeout: float, jobs: int) -> ToolRun:
    """The real CLI over the whole corpus: isolated workers, ``-j jobs``, JSON Lines out.

    Peak RSS here is the SUM over the CLI and its worker processes, sampled every 50 ms
    (the memory a user actually pays for a parallel run), not a single process's peak.
    """
    import psutil

    from textsieve.model import Document

    tr = ToolRun(CLI_ROW, rss_note="sum of processes, sampled")
    cmd = [python, "-m", "textsieve.cli", "extract", "-f", "json", "-j", str(jobs),
           "--timeout", str(timeout), *[str(p) for _, p in files]]
    out_path = OUT / "cli-out.jsonl"
    t0 = time.perf_counter()
    with out_path.open("w") as out, (OUT / "cli.log").open("w") as log:
        proc = subprocess.Popen(cmd, stdout=out, stderr=log, cwd=str(OUT))
        ps = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                rss = sum(q.memory_info().rss for q in [ps, *ps.children(recursive=True)])
                tr.peak_rss_kb = max(tr.peak_rss_kb, rss // 1024)
            except psutil.Error:
                pass
            time.sleep(0.05)
    tr.wall_s = time.perf_counter() - t0
    by_path = {}
    # split on "\n" only: str.splitlines() would also cut at U+2028 etc. inside the JSON.
    for line in filter(None, out_path.read_text(encoding="utf-8").split("\n")):
        rec = json.loads(line)
        by_path[rec.pop("path")] = Document.from_dict(rec)
    for relpath, path in files:
        fmt = relpath.split("/", 1)[0]
        words = expect.words.get(relpath)
        doc = by_path.get(str(path))
        if doc is None:
            tr.results.append(FileResult(CLI_ROW, relpath, fmt, False, 0, 0.0, "no record"))
            continue
        text = "\n".join(filter(None, (doc.title, doc.full_text())))
        ok = doc.status == "ok" and bool(text.strip())
        err = None if ok else (f"{doc.error.kind}: {doc.error.message}"[:300] if doc.error
                               else f"status {doc.status}")
        hit, missing = words_hit(text, words) if words else (None, [])
        tr.results.append(FileResult(CLI_ROW, relpath, fmt, ok, len(text.strip()),
                                     doc.timings.get("total", 0.0), err, str(doc.status),
                                     words is not None, relpath in expect.no_text, hit, missing,
                                     SPACES.sub(" ", text[:160]).strip()))
    return tr


# -- one process per file, as a shell loop runs it ----------------------------------------------

# kreuzberg's PyPI package has no working CLI (its ``kreuzberg`` script asks for a separate
# binary from GitHub), so its per-file process is the interpreter with its Python API: the
# same call as the in-process row, its import included, as a one-line script would do.
# markitdown and extractous are started the same way (``python -c``) when asked for.
_KREUZBERG = ("import sys\n"
              "from kreuzberg import ExtractionConfig, OcrConfig, TesseractConfig, "
              "extract_file_sync\n"
              "sys.stdout.write(extract_file_sync(sys.argv[1], config=ExtractionConfig("
              "use_cache=False, {ocr})).content or '')\n")
KREUZBERG_ONE = _KREUZBERG.format(ocr="disable_ocr=True")
# OCR on, like textsieve's default: the system tesseract's eng model (no download; its OCR
# result cache off too, or a second pass would read the first one's answers).
KREUZBERG_OCR_ONE = _KREUZBERG.format(
    ocr="ocr=OcrConfig(backend='tesseract', language='eng', "
        "tesseract_config=TesseractConfig(use_cache=False))")
MARKITDOWN_ONE = ("import sys\nfrom markitdown import MarkItDown\n"
                  "sys.stdout.write(MarkItDown(enable_plugins=False).convert(sys.argv[1])"
                  ".text_content or '')\n")
EXTRACTOUS_ONE = ("import sys\nfrom extractous import Extractor, PdfOcrStrategy, PdfParserConfig\n"
                  "ex = Extractor().set_extract_string_max_length(100_000_000).set_pdf_config("
                  "PdfParserConfig().set_ocr_strategy(PdfOcrStrategy.NO_OCR))\n"
                  "sys.stdout.write(ex.extract_file_to_string(sys.argv[1])[0] or '')\n")
FLOOR = "python -c pass (floor)"
TS_NO_OCR, TS_OCR = "textsieve extract --ocr never", "textsieve extract"
KB_NO_OCR, KB_OCR = "kreuzberg (python -c)", "kreuzberg OCR (python -c)"
# --baseline SRC: the same two textsieve commands from another source tree (`git archive
# main src | tar -x -C /tmp/base`), run side by side with this one: before/after, same load.
BASE = "textsieve@baseline"
BASE_NO_OCR, BASE_OCR = f"{BASE} extract --ocr never", f"{BASE} extract"
# Started like its console script would be (`sys.exit(main())`), from SRC first on the path.
_BASE_RUNNER = ("import sys\nsys.path.insert(0, sys.argv.pop(1))\n"
                "from textsieve.cli import main\nsys.exit(main())\n")
# Which contenders OCR scans and images: a pair is like for like when both agree.
OCR_ON = {TS_OCR, KB_OCR, BASE_OCR}
PER_FILE_DEFAULT = ",".join([TS_NO_OCR, KB_NO_OCR, TS_OCR, KB_OCR, FLOOR])


def per_file_commands(python: str, baseline: str | None = None
                      ) -> dict[str, Callable[[str], list[str]]]:
    """How each contender is started on one file: textsieve's real command (the console
    script of ``python``'s environment), the peers as one-line scripts; and the floor,
    the interpreter started and stopped with nothing to do. ``baseline``: a textsieve
    source tree whose two commands run too."""
    script = str(Path(python).parent / "textsieve")
    base: dict[str, Callable[[str], list[str]]] = {} if baseline is None else {
        BASE_NO_OCR: lambda p: [python, "-c", _BASE_RUNNER, baseline, "extract", "--ocr",
                                "never", p],
        BASE_OCR: lambda p: [python, "-c", _BASE_RUNNER, baseline, "extract", p],
    }
    return {**base,
        TS_NO_OCR: lambda p: [script, "extract", "--ocr", "never", p],
        TS_OCR: lambda p: [script, "extract", p],
        KB_NO_OCR: lambda p: [python, "-c", KREUZBERG_ONE, p],
        KB_OCR: lambda p: [python, "-c", KREUZBERG_OCR_ONE, p],
        "markitdown (python -c)": lambda p: [python, "-c", MARKITDOWN_ONE, p],
        "extractous (python -c)": lambda p: [python, "-c", EXTRACTOUS_ONE, p],
        FLOOR: lambda p: [python, "-c", "pass"],
    }


@dataclass
class PerFile:
    """One contender's per-file loop: best seconds per file, CPU, the files read ok."""

    name: str
    best: dict[str, float] = field(default_factory=dict)
    cpu: float = 0.0  # user + sys of its processes, all passes
    ok: set[str] = field(default_factory=set)

    def total(self, rels: Iterable[str] | None = None) -> float:
        return sum(self.best.values()) if rels is None else sum(self.best[r] for r in rels)


def run_per_file(python: str, files: list[tuple[str, Path]], timeout: float,
                 repeat: int, names: list[str], baseline: str | None = None) -> str:
    """Every file in a fresh process per contender, contenders alternating file by file
    (a shared VM's drift hits all alike); each file's best of ``repeat`` counts. ok = exit
    status 0 and some text on stdout. The cost of starting the command is the point here:
    a user's ``for f in *; do textsieve extract "$f"; done``."""
    commands = per_file_commands(python, baseline)
    unknown = [n for n in names if n not in commands]
    if unknown:
        raise SystemExit(f"--per-file: unknown {unknown}; known: {list(commands)}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for make in commands.values():  # compile every module once, before the clock runs
        subprocess.run(make(str(files[0][1])), capture_output=True, env=env, check=False,
                       timeout=timeout)
    runs = {n: PerFile(n) for n in names}
    for _ in range(repeat):
        for rel, path in files:
            for name in names:
                run = runs[name]
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                try:
                    proc = subprocess.run(commands[name](str(path)), capture_output=True,
                                          env=env, check=False, timeout=timeout)
                    good = proc.returncode == 0 and bool(proc.stdout.strip())
                except subprocess.TimeoutExpired:
                    good = False
                took = time.perf_counter() - t0
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                run.cpu += (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
                run.best[rel] = min(run.best.get(rel, float("inf")), took)
                if good:
                    run.ok.add(rel)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    raw = OUT / f"perfile-{stamp}.jsonl"
    with raw.open("w", encoding="utf-8") as f:
        for run in runs.values():
            f.write(json.dumps({"command": run.name, "cpu_s": run.cpu / repeat,
                                "best_s": run.best, "ok": sorted(run.ok)}) + "\n")
    return per_file_report(list(runs.values()), len(files), repeat) + f"\n\nraw: {raw}"


def _ratio(peer: float, ours: float) -> str:
    return f"{peer / ours:.2f}x" if ours else "-"


def per_file_report(runs: list[PerFile], n_files: int, repeat: int) -> str:
    """Totals per contender on (a) all files and (b) the files every contender read; then
    each textsieve command against each peer on all files and on the files both read, the
    like-for-like pairs (OCR on for both, OCR off for both) marked; the interpreter's own
    start as the floor; seconds by format; the files that cost textsieve most."""
    contenders = [r for r in runs if r.name != FLOOR]
    floor = next((r for r in runs if r.name == FLOOR), None)
    every = set.intersection(*(r.ok for r in contenders)) if contenders else set()
    lines = [f"one process per file, {n_files} files, best of {repeat}",
             f"{'command':38s} |  ok | all files s | median ms | CPU s/pass | "
             f"{len(every)} all-ok s"]
    for r in runs:
        times = sorted(r.best.values())
        lines.append(f"{r.name:38s} | {len(r.ok):3d} | {r.total():11.2f} | "
                     f"{1000 * times[len(times) // 2]:9.1f} | {r.cpu / repeat:10.2f} | "
                     f"{r.total(every):8.2f}")
    ours = [r for r in contenders if r.name.startswith("textsieve")
            and not r.name.startswith(BASE)]
    peers = [r for r in contenders if not r.name.startswith("textsieve")]
    by_name = {r.name: r for r in runs}
    for now, before in ((TS_NO_OCR, BASE_NO_OCR), (TS_OCR, BASE_OCR)):
        if now in by_name and before in by_name:
            a, b = by_name[now], by_name[before]
            lines.append(f"before/after: {before} / {now}: all files {b.total():.2f} / "
                         f"{a.total():.2f} s = {_ratio(b.total(), a.total())} "
                         f"({_ratio(b.cpu, a.cpu)} CPU)")
    lines.append("\npeer time / textsieve time (above 1: textsieve faster; CPU in brackets)")
    verdicts = []
    for mine in ours:
        for peer in peers:
            like = (mine.name in OCR_ON) == (peer.name in OCR_ON)
            both = mine.ok & peer.ok
            tag = (f"like for like, OCR {'on' if mine.name in OCR_ON else 'off'} for both"
                   if like else "NOT like for like (OCR differs)")
            lines.append(
                f"  {mine.name} vs {peer.name} [{tag}]: all files "
                f"{peer.total():.2f} / {mine.total():.2f} s = "
                f"{_ratio(peer.total(), mine.total())} "
                f"({_ratio(peer.cpu, mine.cpu)} CPU); {len(both)} both ok "
                f"{peer.total(both):.2f} / {mine.total(both):.2f} s = "
                f"{_ratio(peer.total(both), mine.total(both))}")
            if like and peer.name.startswith("kreuzberg"):
                verdicts.append(f"{mine.name} at or below {peer.name}: all files "
                                f"{'yes' if mine.total() <= peer.total() else 'NO'}, "
                                f"both-ok files "
                                f"{'yes' if mine.total(both) <= peer.total(both) else 'NO'}")
    lines += ["", "must-hold (issue 18): " + ("; ".join(verdicts) or "no like-for-like pair run")]
    if floor is not None:
        per = 1000 * floor.total() / max(1, len(floor.best))
        lines.append(f"floor: the interpreter alone (python -c pass) {floor.total():.2f} s "
                     f"({per:.1f} ms a file): every contender above pays it")
    formats = sorted({rel.split("/", 1)[0] for r in runs for rel in r.best})
    lines.append("\nseconds by format (" + " / ".join(r.name for r in runs) + ")")
    for fmt in formats:
        lines.append(f"  {fmt:6s} " + " / ".join(
            f"{sum(t for rel, t in r.best.items() if rel.startswith(fmt + '/')):.2f}"
            for r in runs))
    if ours and peers:  # where textsieve loses most against the first peer
        mine, peer = ours[0], peers[0]
        worst = sorted(mine.best, key=lambda rel: peer.best.get(rel, 0) - mine.best[rel])[:10]
        lines.append(f"\nfiles costing {mine.name} most against {peer.name} (ms)")
        lines += [f"  {rel}: {1000 * mine.best[rel]:.0f} vs {1000 * peer.best.get(rel, 0):.0f}"
                  for rel in worst]
    return "\n".join(lines)


# -- inputs ------------------------------------------------------------------------------------

def corpus_files(corpus: Path, formats: set[str] | None) -> list[tuple[str, Path]]:
    """Every document under the corpus's format folders (MANIFEST/README at the top skipped)."""
    files = []
    for p in sorted(corpus.rglob("*")):
        rel = p.relative_to(corpus).as_posix()
        if not p.is_file() or "/" not in rel or any(s.startswith(".") for s in rel.split("/")):
            continue
        if formats and rel.split("/", 1)[0] not in formats:
            continue
        files.append((rel, p))
    return files


@dataclass
class Expectations:
    """From tests/corpus_expectations.tsv (relpath, expect, words, where, ...)."""

    words: dict[str, list[str]] = field(default_factory=dict)  # expect is exactly "ok"
    no_text: set[str] = field(default_factory=set)  # "ok" is not among the outcomes


def load_expectations(path: Path) -> Expectations:
    """Only rows whose ``expect`` is exactly ``ok`` carry words here: two-sided rows
    (``error:corrupt|ok``) say text may legitimately be absent, so they would blur the
    figure. Rows that allow no ``ok`` at all (``empty``, ``error:encrypted`` ...) are
    where a tool's non-empty "success" is garbage or a wrong password bypass."""
    exp = Expectations()
    if not path.is_file():
        return exp
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            rel = (row.get("relpath") or "").strip()
            outcomes = {o.strip() for o in (row.get("expect") or "").split("|")}
            words = [w.strip() for w in (row.get("words") or "").split("|") if w.strip()]
            if outcomes == {"ok"} and words:
                exp.words[rel] = words
            elif "ok" not in outcomes:
                exp.no_text.add(rel)
    return exp


# -- the report --------------------------------------------------------------------------------

def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "-"


def summarise(tr: ToolRun, base_fps: float | None) -> dict:
    n = len(tr.results)
    ok = sum(r.ok for r in tr.results)
    exp = [r for r in tr.results if r.expected]
    hit = sum(bool(r.words_hit) for r in exp)
    no_text = [r for r in tr.results if r.no_text]
    secs = tr.wall_s if tr.tool == CLI_ROW else sum(r.seconds for r in tr.results)
    fps = n / secs if secs else 0.0
    return {
        "tool": tr.tool, "files": n, "ok": ok, "ok%": _pct(ok, n),
        "words": f"{hit}/{len(exp)}" if exp else "-",
        "ok on no-text": f"{sum(r.ok for r in no_text)}/{len(no_text)}" if no_text else "-",
        "total s": f"{secs:.1f}", "files/s": f"{fps:.1f}",
        "peak RSS MB": f"{tr.peak_rss_kb / 1024:.0f}" + ("*" if tr.rss_note else ""),
        "vs textsieve": f"{fps / base_fps:.2f}x" if base_fps else "-",
        "timeouts": sum(1 for r in tr.results if (r.error or "").startswith("timeout")),
        "crashes": sum(1 for r in tr.results if r.error == "worker crashed"),
        "start s": f"{tr.import_s:.1f}",
        "_fps": fps,
    }


def table(rows: list[dict], cols: list[str]) -> str:
    width = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    line = " | ".join(c.ljust(width[c]) for c in cols)
    sep = "-+-".join("-" * width[c] for c in cols)
    body = [" | ".join(str(r.get(c, "")).ljust(width[c]) for c in cols) for r in rows]
    return "\n".join([line, sep, *body])


def report(runs: list[ToolRun]) -> str:
    done = [r for r in runs if not r.unavailable]
    base = next((summarise(r, None)["_fps"] for r in done if r.tool == "textsieve"), None)
    rows = [summarise(r, base) for r in done]
    cols = ["tool", "files", "ok", "ok%", "words", "ok on no-text", "total s", "files/s",
            "peak RSS MB", "vs textsieve", "timeouts", "crashes", "start s"]
    parts = ["## Overall (files/s = files / sum of per-file seconds; 'start s' = import + "
             "warm-up, not counted; 'words' = files expected to hold text whose output has "
             "all the expected words; 'ok on no-text' = text returned for files expected "
             "empty/encrypted/corrupt/needs-OCR: garbage or a legitimate recovery)",
             table(rows, cols)]
    if any(r.rss_note for r in done):
        parts.append("* CLI row: wall time incl. start-up; RSS = sum over its processes.")
    for r in runs:
        if r.unavailable:
            parts.append(f"!! {r.tool}: unavailable: {r.unavailable}")
    parts += head_to_head(done)
    fmts = sorted({res.format for r in done for res in r.results})
    fmt_rows = []
    for f in fmts:
        row: dict = {"format": f}
        for r in done:
            sel = [x for x in r.results if x.format == f]
            hits = sum(bool(x.words_hit) for x in sel)
            row[r.tool] = f"{sum(x.ok for x in sel)}/{len(sel)} w{hits}"
        fmt_rows.append(row)
    parts += ["## per format: ok/files, w = files with all expected words",
              table(fmt_rows, ["format", *[r.tool for r in done]])]
    return "\n\n".join(parts)


def head_to_head(done: list[ToolRun]) -> list[str]:
    """Speed on the files both tools read: the overall files/s also counts what each tool
    does with files only one of them reads (a default password tried, OCR, a fast refusal),
    so this is the like-for-like figure."""
    ours = [r for r in done if r.tool in ("textsieve", "textsieve-no-ocr")]
    peers = [r for r in done if r.tool not in ("textsieve", "textsieve-no-ocr", CLI_ROW)]
    rows = []
    for mine in ours:
        by_path = {x.relpath: x for x in mine.results if x.ok}
        for peer in peers:
            both = [(by_path[x.relpath], x) for x in peer.results
                    if x.ok and x.relpath in by_path]
            a, b = sum(m.seconds for m, _ in both), sum(p.seconds for _, p in both)
            rows.append({"textsieve row": mine.tool, "peer": peer.tool, "files both ok": len(both),
                         "textsieve s": f"{a:.2f}", "peer s": f"{b:.2f}",
                         "peer time / textsieve time": f"{b / a:.2f}x" if a else "-"})
    if not rows:
        return []
    return ["## head to head, on the files both read (above 1 = textsieve faster)",
            table(rows, list(rows[0]))]


def write_jsonl(runs: Iterable[ToolRun], stamp: str) -> Path:
    path = OUT / f"corpus-{stamp}.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for tr in runs:
            summary = {k: v for k, v in asdict(tr).items() if k != "results"}
            f.write(json.dumps({"summary": summary}, ensure_ascii=False) + "\n")
            for r in tr.results:
                f.write(json.dumps(asdict(r), ensure_ascii=False) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset")
    ap.add_argument("--formats", help="only these format folders (comma-separated)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per file (60)")
    ap.add_argument("--python", default=str(PEERS_PY if PEERS_PY.exists() else sys.executable),
                    help="interpreter that can import the tools (bench/.peers/venv)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run each file n times and keep its best time (1)")
    ap.add_argument("--no-cli", action="store_true", help="skip the textsieve CLI row")
    ap.add_argument("--jobs", type=int, default=2, help="-j for the CLI row (2)")
    ap.add_argument("--baseline", metavar="SRC",
                    help="--per-file: also run textsieve from this source tree (before/after)")
    ap.add_argument("--per-file", metavar="COMMANDS", nargs="?",
                    const=PER_FILE_DEFAULT,
                    help="only the one-process-per-file loop, for these commands "
                         f"(comma-separated; of: {', '.join(per_file_commands('python'))})")
    ns = ap.parse_args(argv)
    if ns.worker:
        worker_main(ns.worker)
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    files = corpus_files(ns.corpus, set(ns.formats.split(",")) if ns.formats else None)
    if ns.per_file:
        names = ns.per_file.split(",")
        if ns.baseline:
            ns.baseline = str(Path(ns.baseline).resolve())
            names += [n for n in (BASE_NO_OCR, BASE_OCR) if n.replace(BASE, "textsieve") in names]
        print(run_per_file(ns.python, files, ns.timeout, ns.repeat, names, ns.baseline))
        return 0
    expect = load_expectations(EXPECTATIONS)
    rels = {rel for rel, _ in files}
    expect.words = {k: v for k, v in expect.words.items() if k in rels}
    expect.no_text &= rels
    print(f"{len(files)} files from {ns.corpus}; {len(expect.words)} with expected words, "
          f"{len(expect.no_text)} expected to give no text ({EXPECTATIONS.name}); "
          f"python {ns.python}",
          flush=True)
    tools = ns.tools.split(",")
    t = time.perf_counter()
    runs = run_tools(ns.python, tools, files, expect, ns.timeout, ns.repeat)
    print(f"  {', '.join(tools)}: {time.perf_counter() - t:.1f} s", flush=True)
    if not ns.no_cli and "textsieve" in ns.tools.split(","):
        t = time.perf_counter()
        runs.append(run_cli(ns.python, files, expect, ns.timeout, ns.jobs))
        print(f"  {CLI_ROW}: {time.perf_counter() - t:.1f} s", flush=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    print("\n" + report(runs))
    print(f"\nraw results: {write_jsonl(runs, stamp)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
