"""Links: one URL normaliser for every entry point (harvesting from mail comes later)."""

from .normalize import BadUrl, normalize_url, strip_userinfo, url_key

__all__ = ["BadUrl", "normalize_url", "strip_userinfo", "url_key"]
