"""The ray executor on a REAL local Ray cluster: two nodes of one CPU each.

A run over a dev-corpus subset (a long scan's OCR pages included) gives the same archive
as the local executor, and a Ray worker killed mid-run costs no item.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
import ray  # textsieve[dev] includes textsieve[ray]: these run in CI, never skipped
from ray.cluster_utils import Cluster

from test_archive_run import snapshot
from test_ocr import PAGES, pdf_of, scan
from textsieve import Options
from textsieve.archive.store import Archive
from textsieve.run.runner import RunStats, run
from textsieve.sources import open_source

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
MB = 1024 * 1024


@pytest.fixture(scope="module")
def cluster():
    """Two nodes of one CPU each, small object stores, no dashboard; this process is the
    driver connected to it (the executor uses the connection it finds)."""
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": 100 * MB, "include_dashboard": False})
    c.add_node(num_cpus=1, object_store_memory=100 * MB)
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    try:
        yield c
    finally:
        ray.shutdown()
        c.shutdown()


@pytest.fixture(scope="module")
def subset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smallest file of each format of the dev corpus (when present), the sample
    documents, and a five-page scan whose pages are OCRed as tasks of their own."""
    root = tmp_path_factory.mktemp("subset")
    corpus = ROOT.parent / "shared" / "data" / "dev-corpus"
    if corpus.is_dir():
        for d in sorted(p for p in corpus.iterdir() if p.is_dir()):
            files = sorted((f for f in d.iterdir() if f.is_file()), key=lambda f: f.stat().st_size)
            if files and files[0].stat().st_size < 2 * MB:
                shutil.copy(files[0], root / f"{d.name}-{files[0].name}")
    for f in (ROOT / "samples" / "docs").iterdir():
        shutil.copy(f, root / f"sample-{f.name}")
    pages = [scan(lines, seed=i) for i, lines in enumerate(PAGES)]
    (root / "long-scan.pdf").write_bytes(pdf_of([*pages, pages[0]]))
    return root


def _run(src: Path, db: Path, options: Options) -> RunStats:
    with Archive(db) as archive:
        return run([open_source(str(src))], archive, options)


OPTS = dict(workers=2, timeout=120, ocr_page_timeout=60)


def test_ray_run_gives_the_archive_a_local_run_gives(cluster, subset: Path,
                                                       tmp_path: Path) -> None:
    local = _run(subset, tmp_path / "local.db", Options(**OPTS))
    on_ray = _run(subset, tmp_path / "ray.db", Options(executor="ray", **OPTS))
    assert on_ray.done == local.done == len(list(subset.iterdir())) > 10
    a, b = snapshot(tmp_path / "local.db"), snapshot(tmp_path / "ray.db")
    assert a == b
    scan_text = a[str(subset / "long-scan.pdf")][5]
    assert all(word in scan_text for word in PAGES[1][0].split()[:2])


def _task_workers() -> list[int]:
    """Ray worker processes running our task right now (Ray titles them by the task)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if cmd.startswith((b"ray::_run_on_worker", b"ray::_run_batch")):
            pids.append(int(entry))
    return pids


def test_a_killed_ray_worker_loses_no_item(cluster, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    pages = [scan(lines, seed=i) for i, lines in enumerate(PAGES)]
    for i in range(3):
        (src / f"scan{i}.pdf").write_bytes(pdf_of(pages))
        (src / f"note{i}.txt").write_text(f"note number {i}")
    result: dict[str, RunStats] = {}
    t = threading.Thread(target=lambda: result.update(
        stats=_run(src, tmp_path / "a.db", Options(executor="ray", **OPTS))))
    t.start()
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and t.is_alive() and time.monotonic() < deadline:
        for pid in _task_workers():
            try:
                os.kill(pid, signal.SIGKILL)
                killed = pid
                break
            except ProcessLookupError:
                continue
        time.sleep(0.05)
    t.join(300)
    assert killed is not None, "no Ray worker was seen running a task"
    stats = result["stats"]
    assert stats.done == 6 and stats.status.get("ok") == 6, (stats.status, stats.errors)
    snap = snapshot(tmp_path / "a.db")
    for i in range(3):
        assert snap[str(src / f"note{i}.txt")][5] == f"note number {i}"
        text = snap[str(src / f"scan{i}.pdf")][5]
        assert all(w in text for w in PAGES[-1][0].split()[:2])


def small_scan(path: Path, note: str) -> None:
    """A small file (batched: under ``SMALL_FILE``) that takes tesseract seconds: a
    300-dpi page of 30 lines, one bit per pixel (~60 KB), its last line ``note``."""
    from PIL import Image

    from test_ocr import A4, draw_lines

    lines = [line for page in PAGES for line in page] * 3
    page = Image.new("L", A4, 255)
    draw_lines(page, [*lines[:30], note], size=40, at=(150, 150))
    page.convert("1").save(path)


def test_deadlines_hold_on_ray_batches_included(cluster, tmp_path: Path) -> None:
    """Every small file is batched; a batch past its deadline is not a verdict on its
    files: each runs again alone under its own deadline. Here no file can make it (each
    needs seconds of OCR, it is given 0.05 s; a busy machine that stalls the driver for a
    moment cannot change that): every one ends as a timeout record, none is lost, nothing
    hangs."""
    src = tmp_path / "in"
    src.mkdir()
    for i in range(8):
        small_scan(src / f"n{i}.png", f"Note number {i} of the archive")
    from textsieve.run.ray_executor import SMALL_FILE

    assert all(p.stat().st_size < SMALL_FILE for p in src.iterdir())
    stats = _run(src, tmp_path / "a.db", Options(executor="ray", workers=2, timeout=0.05,
                                                  batch=3))
    assert stats.done == 8 and stats.errors.get("timeout") == 8, stats.errors
    ok = _run(src, tmp_path / "a.db", Options(executor="ray", workers=2, batch=3))
    assert ok.done == 8 and ok.status.get("ok") == 8  # retried: timeouts are transient
    snap = snapshot(tmp_path / "a.db")
    for i in range(8):
        assert f"Note number {i} of the archive" in snap[str(src / f"n{i}.png")][5]


def test_small_files_share_ray_tasks(cluster, tmp_path: Path) -> None:
    """Ray costs a few ms per task: small files go in batches (each CPU takes a whole
    one), and the documents still come back in input order, each its own."""
    from textsieve.core import in_order as extract
    from textsieve.run.ray_executor import RayExecutor

    paths = []
    for i in range(40):
        p = tmp_path / f"s{i}.txt"
        p.write_text(f"small file {i}")
        paths.append(str(p))
    opts = Options(executor="ray", workers=2, batch=20)
    ex = RayExecutor(opts)
    try:
        docs = list(extract(ex, ((p, None) for p in paths), opts))
    finally:
        ex.close()
    assert [d.text for d in docs] == [f"small file {i}" for i in range(40)]
    assert ex.ray_tasks <= 3, ex.ray_tasks


def test_a_killed_ray_driver_resumes_like_a_local_run(cluster, tmp_path: Path) -> None:
    """SIGKILL `textsieve run --executor ray` part way; the same command again finishes
    the job (nothing committed is redone), and the archive equals a local run's."""
    import subprocess

    from test_archive_run import make_mixed_tree, run_cmd, runs, top_level_count, wait_for

    n = 384  # several 64-item commits: the kill lands between two
    tree = tmp_path / "tree"
    make_mixed_tree(tree, n, pdf_pages=3)
    a, b = tmp_path / "ray.db", tmp_path / "local.db"
    on_ray = ("--executor", "ray", "--address", cluster.address, "--batch", "4")
    proc = subprocess.Popen(run_cmd(tree, a, "-q", *on_ray), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: (top_level_count(a) or 0) >= 1, proc, "an item was committed")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    first = top_level_count(a)
    assert first is not None and 1 <= first < n, first
    done = subprocess.run(run_cmd(tree, a, "-q", *on_ray), capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    clean = subprocess.run(run_cmd(tree, b, "-q"), capture_output=True, text=True,
                           timeout=300, check=False)
    assert clean.returncode == 0, clean.stderr
    assert snapshot(a) == snapshot(b)
    statuses = runs(a)
    assert [s for s, _ in statuses] == ["interrupted", "completed"]
    assert statuses[-1][1]["extracted"] == n - first and statuses[-1][1]["skipped"] == first


def png_bomb(path: Path, width: int = 16000, height: int = 15000) -> None:
    """A 3 MB PNG that decodes to 720 MB (RGB), under the pixel cap: a memory bomb that
    only a memory limit stops (uncapped, its OCR runs into the deadline instead)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data))

    z = zlib.compressobj(1)
    rows = b"\0" * (1 + 3 * width) * 100  # filter byte + black pixels, 100 rows a call
    idat = b"".join([*(z.compress(rows) for _ in range(height // 100)), z.flush()])
    path.write_bytes(b"\x89PNG\r\n\x1a\n"
                     + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", idat) + chunk(b"IEND", b""))


def test_memory_limit_holds_in_ray_tasks(cluster, tmp_path: Path) -> None:
    """--memory-limit caps each Ray task: the bomb is a too_large record and the run goes
    on; the cap is lifted after each task, so the workers extract the other inputs."""
    src = tmp_path / "in"
    src.mkdir()
    png_bomb(src / "bomb.png")
    for i in range(4):
        (src / f"note{i}.txt").write_text(f"note number {i}")
    stats = _run(src, tmp_path / "a.db", Options(executor="ray", workers=2, batch=1,
                                                  memory_limit=512 * MB, timeout=60))
    assert stats.done == 5 and stats.status.get("ok") == 4, (stats.status, stats.errors)
    snap = snapshot(tmp_path / "a.db")
    bomb = snap[str(src / "bomb.png")]
    assert bomb[1:3] == ("error", "too_large"), bomb
    assert {snap[str(src / f"note{i}.txt")][5] for i in range(4)} == {
        f"note number {i}" for i in range(4)}


def test_items_finished_behind_a_slow_scan_are_committed_at_once_on_ray(
        cluster, tmp_path: Path) -> None:
    """As with local workers: a big scan first does not hold back the commits of the
    small files finished on the other node while it is read (search sees them)."""
    from test_run_commits import SCAN, make_tree, seen

    tree, db = tmp_path / "tree", tmp_path / "a.db"
    make_tree(tree, small=300)
    result: dict[str, RunStats] = {}
    t = threading.Thread(target=lambda: result.update(
        stats=_run(tree, db, Options(executor="ray", workers=2, batch=8))))
    t.start()
    try:
        deadline = time.monotonic() + 240
        while True:
            small, scan = seen(db)
            assert not scan, f"{SCAN} was committed before the small files ({small})"
            if small == 300:
                break
            assert t.is_alive() and time.monotonic() < deadline, small
            time.sleep(0.01)
    finally:
        t.join(300)
    assert result["stats"].status.get("ok") == 301, result["stats"].errors
    assert seen(db) == (300, True)
