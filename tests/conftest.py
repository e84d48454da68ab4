"""Shared fixtures: where the dev corpus lives, and a helper to extract in-process."""

from __future__ import annotations

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
