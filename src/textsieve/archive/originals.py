"""The kept originals: how much room they take, whether they are whole, and dropping the
ones no capture uses any more (``textsieve gc``).

Originals are stored by the archive's writer (``Archive._keep_original``): content-
addressed by SHA-256, zstd-compressed, small ones as rows of ``originals``, large ones as
files in the folder beside the archive (``FILE.originals/ab/<sha256>.zst``). A row whose
``data`` is NULL names a file there. Nothing here writes an original; ``gc`` only removes.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import zstandard

from .store import Archive

_MAX_PROBLEMS = 20


def folder_of(path: Path) -> Path:
    return path.with_name(path.name + ".originals")


@dataclass
class Usage:
    count: int = 0  # originals kept
    size: int = 0  # their bytes as received
    stored_rows: int = 0  # compressed bytes kept in the archive file
    stored_files: int = 0  # compressed bytes kept in the folder beside it
    files: int = 0  # originals in the folder
    unused: int = 0  # originals no capture uses (textsieve gc drops them)

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def usage(conn: sqlite3.Connection) -> Usage:
    """What the originals take, from the rows alone (no file is opened)."""
    try:
        row = conn.execute(
            "SELECT count(*), coalesce(sum(size), 0), "
            "coalesce(sum(CASE WHEN data IS NOT NULL THEN stored END), 0), "
            "coalesce(sum(CASE WHEN data IS NULL THEN stored END), 0), "
            "coalesce(sum(data IS NULL), 0) FROM originals").fetchone()
        unused = conn.execute(
            "SELECT count(*) FROM originals o WHERE NOT EXISTS "
            "(SELECT 1 FROM captures c WHERE c.original = o.sha256)").fetchone()[0]
    except sqlite3.OperationalError:  # an archive older than originals
        return Usage()
    count, size, stored_rows, stored_files, files = row
    return Usage(count, size, stored_rows, stored_files, files, unused)


def problems(conn: sqlite3.Connection, archive_path: Path) -> list[str]:
    """Every kept original read back and hashed (rows and files), and every capture's
    original present: one line per problem."""
    out: list[str] = []
    zd = zstandard.ZstdDecompressor()
    folder = folder_of(archive_path)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM originals ORDER BY id")]
    except sqlite3.OperationalError:
        return out
    for oid in ids:
        sha, data = conn.execute("SELECT sha256, data FROM originals WHERE id = ?",
                                 (oid,)).fetchone()
        why = _damage(sha, data, folder, zd)
        if why and len(out) < _MAX_PROBLEMS:
            out.append(f"original {str(sha)[:16]}: {why}")
    missing = conn.execute(
        "SELECT count(*) FROM captures c WHERE c.original IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM originals o WHERE o.sha256 = c.original)").fetchone()[0]
    if missing:
        out.append(f"originals: {missing} capture(s) name an original that is not kept")
    return out


def _damage(sha: str, data: bytes | None, folder: Path,
            zd: zstandard.ZstdDecompressor) -> str | None:
    digest = hashlib.sha256()
    try:
        if data is not None:
            digest.update(zd.decompress(data))
        else:
            path = folder / sha[:2] / f"{sha}.zst"
            if not path.exists():
                return f"its file {path} is missing"
            with open(path, "rb") as f, zd.stream_reader(f) as r:
                while chunk := r.read(1 << 20):
                    digest.update(chunk)
    except (zstandard.ZstdError, OSError) as exc:
        return f"cannot be read ({exc})"
    if digest.hexdigest() != sha:
        return "its bytes no longer match their SHA-256"
    return None


@dataclass
class Collected:
    rows: int = 0  # originals dropped
    files: int = 0  # files removed from the folder (their rows' and strays)
    bytes: int = 0  # compressed bytes freed


def collect(archive: Archive) -> Collected:
    """Drop the originals no capture uses, and the files of the folder no row names (left
    by a run killed between writing a file and committing its row). The archive file
    keeps its size until SQLite reuses the freed pages (or a VACUUM)."""
    done = Collected()
    with archive.transaction() as c:
        rows = c.execute(
            "SELECT id, sha256, stored, data IS NULL FROM originals o WHERE NOT EXISTS "
            "(SELECT 1 FROM captures c WHERE c.original = o.sha256)").fetchall()
        c.executemany("DELETE FROM originals WHERE id = ?", [(r[0],) for r in rows])
        done.rows = len(rows)
        done.bytes = sum(r[2] for r in rows if not r[3])
        named = {r[0] for r in c.execute("SELECT sha256 FROM originals WHERE data IS NULL")}
        # Under the write lock: no writer is between writing a file and committing its row.
        folder = archive.originals_dir
        for sub in sorted(folder.iterdir()) if folder.is_dir() else ():
            if not sub.is_dir():
                continue
            for f in sorted(sub.iterdir()):
                if f.name.removesuffix(".zst") in named:
                    continue
                done.bytes += f.stat().st_size
                f.unlink()
                done.files += 1
            if not any(sub.iterdir()):
                os.rmdir(sub)
    return done
