"""Near-duplicates: the same text reached twice (two URLs, a page and its print version, a
PDF and its HTML), grouped so search can show it once.

Each text gets a MinHash signature of its word 5-gram shingles (datasketch); locality
sensitive hashing finds the items whose estimated Jaccard similarity passes the threshold
without comparing every pair. Signatures and their LSH bands are stored (the bands as an
indexed table), so a new item is only hashed and looked up, whatever the archive's
size. A group is named by its smallest item id; an item alone is its own group.
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any

try:
    import numpy as np
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError("enrichment needs the topics extra: pip install "
                      "'textsieve[topics]'") from exc

from ..archive.store import Archive
from .candidates import Progress, candidate_ids, refresh, texts

THRESHOLD = 0.6  # estimated Jaccard of shingle sets from which two texts are one
PERMUTATIONS = 128
SHINGLE = 5
SCHEME = "affine32"  # datasketch 2's collision-free permutations, stored as uint32
# LSH banding: 18 bands of 7 values, what datasketch's MinHashLSH chooses for a threshold
# of 0.6 over 128 permutations (equal weights on false positives and negatives).
BANDS, ROWS = 18, 7
_WORD = re.compile(r"(?u)\w+")



@functools.lru_cache(maxsize=1)
def _permutations() -> Any:
    """The seed's permutations, made once: drawing them again for every text cost a tenth
    of the hashing at 10,000 items."""
    from datasketch import MinHash

    return MinHash(num_perm=PERMUTATIONS, seed=1, scheme=SCHEME).permutations


def signature(text: str) -> np.ndarray:
    """MinHash values of the text's word 5-grams (lower case, punctuation ignored)."""
    from datasketch import MinHash

    words = _WORD.findall(text.lower())
    grams = {" ".join(words[i:i + SHINGLE]).encode()
             for i in range(max(1, len(words) - SHINGLE + 1))}
    m = MinHash(num_perm=PERMUTATIONS, seed=1, scheme=SCHEME, permutations=_permutations())
    m.update_batch(list(grams))
    return m.hashvalues.astype(np.uint32)


def _buckets(sig: np.ndarray) -> list[tuple[int, int]]:
    """(band, bucket) keys of a signature: a 63-bit hash of each band of ROWS values."""
    out = []
    for band in range(BANDS):
        chunk = sig[band * ROWS:(band + 1) * ROWS].astype("<u4").tobytes()
        h = int.from_bytes(hashlib.blake2b(chunk, digest_size=8).digest(), "little")
        out.append((band, h >> 1))
    return out


def update(archive: Archive, *, threshold: float = THRESHOLD,
           progress: Progress | None = None, batch: int = 500) -> int:
    """Hash the items not hashed yet and fold them into the groups; returns how many. The
    stored bands find a new item's candidates by index lookups, so the cost is that of the
    new items (and of the groups they join), not of the archive."""
    from . import require

    require()
    refresh(archive)
    todo = candidate_ids(archive, missing="e.minhash IS NULL")
    done = 0
    for i in range(0, len(todo), batch):
        sigs = [(item_id, signature(t)) for item_id, t, _ in texts(archive, todo[i:i + batch])]
        with archive.transaction() as c:
            c.executemany("UPDATE enrichment SET minhash = ? WHERE item_id = ?",
                          [(s.tobytes(), item_id) for item_id, s in sigs])
            c.executemany("DELETE FROM minhash_bands WHERE item_id = ?",
                          [(item_id,) for item_id, _ in sigs])
            c.executemany("INSERT OR IGNORE INTO minhash_bands VALUES (?, ?, ?)",
                          [(band, bucket, item_id) for item_id, s in sigs
                           for band, bucket in _buckets(s)])
        done += len(sigs)
        if progress:
            progress("near-duplicates", done, len(todo))
    _index_older(archive)
    if not todo:
        return 0
    _group(archive, todo, threshold)
    return done


def _index_older(archive: Archive) -> None:
    """Bands of signatures stored before the bands table existed (schema 7)."""
    rows = archive.conn.execute(
        "SELECT e.item_id, e.minhash FROM enrichment e WHERE e.minhash IS NOT NULL AND "
        "NOT EXISTS (SELECT 1 FROM minhash_bands b WHERE b.item_id = e.item_id)").fetchall()
    if rows:
        with archive.transaction() as c:
            c.executemany("INSERT OR IGNORE INTO minhash_bands VALUES (?, ?, ?)",
                          [(band, bucket, item_id) for item_id, blob in rows
                           for band, bucket in _buckets(np.frombuffer(blob, np.uint32))])


def _group(archive: Archive, todo: list[int], threshold: float) -> None:
    """Verify the new items' bucket mates by their signatures and merge the groups of the
    pairs that pass; a group keeps the smallest id of its members."""
    c = archive.conn
    pairs: list[tuple[int, int]] = []
    for i in range(0, len(todo), 500):
        chunk = todo[i:i + 500]
        marks = ",".join("?" * len(chunk))
        found = c.execute(
            "SELECT DISTINCT a.item_id, b.item_id FROM minhash_bands a "
            "JOIN minhash_bands b ON b.band = a.band AND b.bucket = a.bucket "
            f"AND b.item_id != a.item_id WHERE a.item_id IN ({marks})", chunk).fetchall()
        mine = set(chunk)
        pairs += [(a, b) for a, b in found if a < b or b not in mine]
    if not pairs:
        with archive.transaction() as t:
            t.executemany("UPDATE enrichment SET dup_group = item_id WHERE item_id = ? "
                          "AND dup_group IS NULL", [(i,) for i in todo])
        return
    involved = sorted({x for p in pairs for x in p})
    sig: dict[int, np.ndarray] = {}
    label: dict[int, int] = {}
    for i in range(0, len(involved), 500):
        chunk = involved[i:i + 500]
        for item_id, blob, gid in c.execute(
                "SELECT item_id, minhash, dup_group FROM enrichment WHERE item_id IN "
                f"({','.join('?' * len(chunk))})", chunk):
            sig[item_id] = np.frombuffer(blob, dtype=np.uint32)
            label[item_id] = gid if gid is not None else item_id
    parent: dict[int, int] = {}

    def root(g: int) -> int:
        while parent.get(g, g) != g:
            parent[g] = parent.get(parent[g], parent[g])
            g = parent[g]
        return g

    for a, b in pairs:
        if a in sig and b in sig and float(np.mean(sig[a] == sig[b])) >= threshold:
            ra, rb = root(label[a]), root(label[b])
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    with archive.transaction() as t:
        moved = [(root(g), g) for g in parent if root(g) != g]
        t.executemany("UPDATE enrichment SET dup_group = ? WHERE dup_group = ?", moved)
        t.executemany("UPDATE enrichment SET dup_group = ? WHERE item_id = ?",
                      [(root(label.get(i, i)), i) for i in todo])


def groups(archive: Archive) -> list[list[int]]:
    """Every group of two or more items (ids ascending), largest first."""
    out: dict[int, list[int]] = {}
    for item_id, gid in archive.conn.execute(
            "SELECT item_id, dup_group FROM enrichment WHERE dup_group IS NOT NULL "
            "ORDER BY item_id"):
        out.setdefault(gid, []).append(item_id)
    return sorted((g for g in out.values() if len(g) > 1), key=lambda g: (-len(g), g[0]))
