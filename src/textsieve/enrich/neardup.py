"""Near-duplicates: the same text reached twice (two URLs, a page and its print version, a
PDF and its HTML), grouped so search can show it once.

Each text gets a MinHash signature of its word 5-gram shingles (datasketch); locality
sensitive hashing finds the items whose estimated Jaccard similarity passes the threshold
without comparing every pair. Signatures are stored, so a new item is only hashed and
looked up. A group is named by its smallest item id; an item alone is its own group.
"""

from __future__ import annotations

import re
from collections.abc import Callable

try:
    import numpy as np
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError("enrichment needs the topics extra: pip install "
                      "'textsieve[topics]'") from exc

from ..archive.store import Archive
from .items import candidate_ids, refresh, texts

THRESHOLD = 0.6  # estimated Jaccard of shingle sets from which two texts are one
PERMUTATIONS = 128
SHINGLE = 5
SCHEME = "affine32"  # datasketch 2's collision-free permutations, stored as uint32
_WORD = re.compile(r"(?u)\w+")

Progress = Callable[[str, int, int], None]


def signature(text: str) -> np.ndarray:
    """MinHash values of the text's word 5-grams (lower case, punctuation ignored)."""
    from datasketch import MinHash

    words = _WORD.findall(text.lower())
    grams = {" ".join(words[i:i + SHINGLE]).encode()
             for i in range(max(1, len(words) - SHINGLE + 1))}
    m = MinHash(num_perm=PERMUTATIONS, seed=1, scheme=SCHEME)
    m.update_batch(list(grams))
    return m.hashvalues.astype(np.uint32)


def update(archive: Archive, *, threshold: float = THRESHOLD,
           progress: Progress | None = None, batch: int = 500) -> int:
    """Hash the items not hashed yet and fold them into the groups; returns how many."""
    from datasketch import MinHash, MinHashLSH

    from . import require

    require()
    refresh(archive)
    todo = candidate_ids(archive, missing="e.minhash IS NULL")
    done = 0
    for i in range(0, len(todo), batch):
        rows = [(signature(t).tobytes(), item_id)
                for item_id, t, _ in texts(archive, todo[i:i + batch])]
        with archive.transaction() as c:
            c.executemany("UPDATE enrichment SET minhash = ? WHERE item_id = ?", rows)
        done += len(rows)
        if progress:
            progress("near-duplicates", done, len(todo))
    if not todo:
        return 0
    lsh = MinHashLSH(threshold=threshold, num_perm=PERMUTATIONS)
    sigs: dict[int, MinHash] = {}
    group: dict[int, int] = {}
    for item_id, blob, gid in archive.conn.execute(
            "SELECT item_id, minhash, dup_group FROM enrichment WHERE minhash IS NOT NULL"):
        m = MinHash(num_perm=PERMUTATIONS, seed=1, scheme=SCHEME,
                    hashvalues=np.frombuffer(blob, dtype=np.uint32))
        sigs[item_id] = m
        lsh.insert(item_id, m, check_duplication=False)
        group[item_id] = gid if gid is not None else item_id
    for item_id in todo:
        m = sigs.get(item_id)
        if m is None:
            continue
        for other in lsh.query(m):
            if other != item_id and m.jaccard(sigs[other]) >= threshold:
                _merge(group, item_id, other)
    with archive.transaction() as c:
        c.executemany("UPDATE enrichment SET dup_group = ? WHERE item_id = ? "
                      "AND dup_group IS NOT ?", [(g, i, g) for i, g in group.items()])
    return done


def _merge(group: dict[int, int], a: int, b: int) -> None:
    """Put a's and b's groups together under the smaller id."""
    ga, gb = group[a], group[b]
    if ga == gb:
        return
    keep, drop = min(ga, gb), max(ga, gb)
    for item_id, g in group.items():
        if g == drop:
            group[item_id] = keep


def groups(archive: Archive) -> list[list[int]]:
    """Every group of two or more items (ids ascending), largest first."""
    out: dict[int, list[int]] = {}
    for item_id, gid in archive.conn.execute(
            "SELECT item_id, dup_group FROM enrichment WHERE dup_group IS NOT NULL "
            "ORDER BY item_id"):
        out.setdefault(gid, []).append(item_id)
    return sorted((g for g in out.values() if len(g) > 1), key=lambda g: (-len(g), g[0]))
