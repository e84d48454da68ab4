"""Links: one URL normaliser for every entry point (harvesting from mail comes later)."""

from .normalize import normalize_url

__all__ = ["normalize_url"]
