"""Web pages: main-content extraction and metadata (``main_text``, ``extract_main``)."""

from __future__ import annotations

from .main import extract_main, main_text, page_metadata

__all__ = ["extract_main", "main_text", "page_metadata"]
