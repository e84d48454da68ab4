"""The SQLite archive: schema and migrations, the writer, search, exports."""

from .store import Archive, ArchiveError, Entry, Known

__all__ = ["Archive", "ArchiveError", "Entry", "Known"]
