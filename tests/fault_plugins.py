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
