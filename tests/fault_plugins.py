"""Extractors that misbehave on purpose, to prove the worker pool contains them.

Installed into the registry by tests (the pool forks, so workers inherit the change),
like OCRmyPDF's tests swap in a crashing tesseract.
"""

from __future__ import annotations

import os
import signal
import time


def hang(src, ctx, doc, out) -> None:
    while True:
        time.sleep(1)


def crash(src, ctx, doc, out) -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def hog(src, ctx, doc, out) -> None:
    blocks = []
    while True:  # under the worker's RLIMIT_AS this ends in MemoryError
        blocks.append(bytearray(64 * 1024 * 1024))


def hang_in_tool(src, ctx, doc, out) -> None:
    """Like a helper program (catdoc) stuck in a loop: the worker waits on it forever.
    The child's pid goes to a file named by the input's text, for the test to check."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    with open(src.read().decode().strip(), "w") as f:
        f.write(str(proc.pid))
    proc.wait()


def wait_in_tool(src, ctx, doc, out) -> None:
    """Like ``hang_in_tool`` with a helper that sleeps instead of spinning (cheap to keep
    around while a test kills the run); its pid goes to the file the input names."""
    import subprocess

    proc = subprocess.Popen(["sleep", "600"])
    with open(src.read().decode().strip(), "w") as f:
        f.write(str(proc.pid))
    proc.wait()


def tell_options(src, ctx, doc, out) -> None:
    """Not a fault: says which options the worker was given (a mail password must not
    reach it, nor any fetching setting)."""
    o = ctx.options
    out.paragraph(f"imap={o.imap_password} retries={o.retries} ocr={o.ocr} password={o.password}")
