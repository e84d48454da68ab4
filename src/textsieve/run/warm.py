"""Imported by the forkserver once, before it forks any worker (``procs``): every parser
and the libraries they load on first use (``extractors.preload``), so each worker starts
warm, a new one after each recycling (``--recycle-after``) included. Without it, every
worker of ``textsieve serve`` paid ~0.2 s of imports on its first documents: under load,
with a worker recycled every 200 jobs, about a millisecond of CPU per request."""

from .. import core, ocr  # noqa: F401  what every worker runs (core.perform), and its OCR
from ..extractors import preload

preload()
