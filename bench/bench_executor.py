"""Executors side by side: throughput of the local pool and of Ray, at 1 and 2 CPUs.

Run by hand (niced; it starts Ray clusters): ``nice -n 10 .venv/bin/python
bench/bench_executor.py [--small 400] [--pages 8]``.

Two workloads, each through ``core.in_order`` (what ``textsieve run`` and ``extract -j``
use), end to end from the first task submitted to the last document back, after a warm-up
round (worker start, imports) that is not timed:

- small files: ``--small`` short text files, where per-task overhead dominates;
- OCR pages: one scanned PDF of ``--pages`` pages, each page a task of its own.

For Ray, a local cluster of N CPUs (``ray.init(num_cpus=N)``, object store 256 MB) is
started per N; its start-up is reported apart. Ray's overhead per item is
(Ray time - local time) / items at the same N: what each item costs beyond the local pool;
small files are measured with ``--batch`` files per Ray task (Options.batch, default 32)
and with 1 (every file its own Ray task).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

from textsieve import Options
from textsieve.core import Executor
from textsieve.core import in_order as extract
from textsieve.run.pool import LocalExecutor


def small_files(root: Path, n: int) -> list[str]:
    paths = []
    for i in range(n):
        p = root / f"small{i:05d}.txt"
        p.write_text(f"item {i}: a short note about the reed beds, with a number {i * 7}.\n")
        paths.append(str(p))
    return paths


def scanned_pdf(root: Path, pages: int) -> str:
    """A scan of ``pages`` pages of prose (300 dpi, greyscale), no text layer."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf", 44)
    images = []
    for n in range(pages):
        img = Image.new("L", (2480, 3508), 255)
        draw = ImageDraw.Draw(img)
        for line in range(20):
            draw.text((200, 250 + line * 70), f"Page {n + 1}, line {line + 1}: the survey "
                      f"counted {n * 31 + line} birds near the north fence.", font=font)
        images.append(img)
    buf = io.BytesIO()
    images[0].save(buf, "PDF", resolution=300, save_all=True, append_images=images[1:])
    path = root / "scan.pdf"
    path.write_bytes(buf.getvalue())
    return str(path)


def timed(executor: Executor, inputs: list[str], options: Options) -> tuple[float, int]:
    t0 = time.perf_counter()
    docs = list(extract(executor, ((p, None) for p in inputs), options))
    seconds = time.perf_counter() - t0
    bad = [d for d in docs if not d.ok]
    if bad:
        print(f"  ! {len(bad)} failed: {bad[0].error}", file=sys.stderr)
    return seconds, len(docs)


def run_local(cpus: int, small: list[str], scan: str, pages: int) -> dict[str, float]:
    opts = Options(workers=cpus, timeout=600, ocr_page_timeout=300)
    with LocalExecutor(opts) as ex:
        timed(ex, small[:20], opts)  # warm-up: workers forked, parsers imported
        s_small, _ = timed(ex, small, opts)
        s_scan, _ = timed(ex, [scan], opts)
    return {"small": s_small, "scan": s_scan, "start": 0.0}


def run_ray(cpus: int, small: list[str], scan: str, pages: int, batch: int
            ) -> dict[str, float]:
    import logging

    import ray

    from textsieve.run.ray_executor import LOCAL_OBJECT_STORE, RayExecutor

    t0 = time.perf_counter()
    ray.init(num_cpus=cpus, object_store_memory=LOCAL_OBJECT_STORE, include_dashboard=False,
             log_to_driver=False, logging_level=logging.WARNING)
    opts = Options(workers=cpus, timeout=600, ocr_page_timeout=300, executor="ray",
                   batch=batch)
    single = Options(workers=cpus, timeout=600, ocr_page_timeout=300, executor="ray",
                     batch=1)
    try:
        ex = RayExecutor(opts)
        timed(ex, small[:20], opts)  # warm-up: Ray workers started, textsieve imported
        start = time.perf_counter() - t0
        s_small, _ = timed(ex, small, opts)
        s_scan, _ = timed(ex, [scan], opts)
        ex.close()
        ex = RayExecutor(single)
        s_single, _ = timed(ex, small, single)
        ex.close()
    finally:
        ray.shutdown()
    return {"small": s_small, "scan": s_scan, "start": start, "single": s_single}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=400, help="small text files")
    ap.add_argument("--pages", type=int, default=8, help="pages of the scanned PDF")
    ap.add_argument("--batch", type=int, default=Options().batch,
                    help="small files per Ray task")
    ap.add_argument("--local-only", action="store_true",
                    help="the local pool only (no Ray clusters): before/after a pool change")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-executor-") as tmp:
        root = Path(tmp)
        small = small_files(root, args.small)
        scan = scanned_pdf(root, args.pages)
        print(f"{args.small} small files, one {args.pages}-page scan; "
              f"{os.cpu_count()} cores on this machine")
        rows = {}
        for cpus in (1, 2):
            rows[("local", cpus)] = run_local(cpus, small, scan, args.pages)
            if not args.local_only:
                rows[("ray", cpus)] = run_ray(cpus, small, scan, args.pages, args.batch)
        print(f"{'executor':<8} {'cpus':>4} {'small/s':>9} {'pages/s':>9} {'warm-up s':>10}")
        for (name, cpus), r in rows.items():
            print(f"{name:<8} {cpus:>4} {args.small / r['small']:>9.1f} "
                  f"{args.pages / r['scan']:>9.2f} {r['start']:>10.1f}")
        for cpus in (1, 2) if not args.local_only else ():
            loc, ray_ = rows[("local", cpus)], rows[("ray", cpus)]
            per_small = (ray_["small"] - loc["small"]) / args.small * 1000
            per_page = (ray_["scan"] - loc["scan"]) / args.pages * 1000
            per_single = (ray_["single"] - loc["small"]) / args.small * 1000
            print(f"Ray overhead at {cpus} CPU(s): {per_small:+.2f} ms per small file in "
                  f"batches of {args.batch}, {per_single:+.2f} ms one per task "
                  f"({loc['small'] / args.small * 1000:.2f} ms locally); {per_page:+.0f} ms "
                  f"per OCR page ({loc['scan'] / args.pages * 1000:.0f} ms locally)")


if __name__ == "__main__":
    main()
