"""Shared fixtures: where the dev corpus lives, and a helper to extract in-process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "data" / "dev-corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The shared dev corpus (real documents of every format)."""
    if not CORPUS.is_dir():
        pytest.skip(f"dev corpus not found at {CORPUS}")
    return CORPUS


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true",
                     help="run the tests marked slow too (the dev corpus, the Ray cluster, "
                          "...); CI=true runs them always")


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A local run leaves out the tests marked slow, so it stays a few minutes; CI
    (``CI=true``, set by ``.ci/run``), ``--run-slow`` or a ``-m`` expression of one's own
    runs them, and so does naming a test (``FILE::TEST``)."""
    if _ci() or config.getoption("--run-slow") or config.getoption("-m"):
        return
    named = any("::" in str(a) for a in config.args)
    if named:
        return
    slow = [i for i in items if i.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [i for i in items if i.get_closest_marker("slow") is None]
