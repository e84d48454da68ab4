"""Related items: each item's nearest neighbours by TF-IDF cosine similarity.

Vectors use the vocabulary and idf of the archive's topic model, so they do not change as
items are added and an item's neighbours are computed once: a new item is compared with
every item, and enters the lists of the items it is closer to than their current last
neighbour. Sparse products in blocks keep memory bounded by one block of scores.
"""

from __future__ import annotations

from collections.abc import Callable

try:
    import numpy as np
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError("enrichment needs the topics extra: pip install "
                      "'textsieve[topics]'") from exc

from ..archive.store import Archive
from .items import candidate_ids, refresh, texts

COUNT = 5  # neighbours kept per item
MIN_SCORE = 0.1  # below this two texts share little more than common words
BLOCK = 256

Progress = Callable[[str, int, int], None]


def update(archive: Archive, *, count: int = COUNT, progress: Progress | None = None) -> int:
    """Neighbours for every candidate without them yet; returns how many were done."""
    from scipy import sparse

    from . import require, topics

    require()
    model = topics.load_model(archive)
    if model is None:
        topics.update(archive, progress=progress)
        model = topics.load_model(archive)
    assert model is not None
    refresh(archive)
    todo = candidate_ids(archive, missing="e.related_done = 0")
    if not todo:
        return 0
    all_ids = candidate_ids(archive)
    blocks = []
    for i in range(0, len(all_ids), 1000):
        got = list(texts(archive, all_ids[i:i + 1000]))
        blocks.append(model.tfidf([t for _, t, _ in got]))
    x = sparse.vstack(blocks).tocsr()
    pos = {item_id: n for n, item_id in enumerate(all_ids)}
    xt = x.T.tocsc()
    touched: set[int] = set()
    done = 0
    for i in range(0, len(todo), BLOCK):
        chunk = todo[i:i + BLOCK]
        sims = (x[[pos[t] for t in chunk]] @ xt).toarray()
        rows = []
        for r, item_id in enumerate(chunk):
            sims[r, pos[item_id]] = 0.0
            best = np.argsort(-sims[r], kind="stable")[:count]
            for b in best:
                if sims[r, b] >= MIN_SCORE:
                    other = all_ids[b]
                    rows.append((item_id, other, float(sims[r, b])))
                    rows.append((other, item_id, float(sims[r, b])))
                    touched.add(other)
        with archive.transaction() as c:
            c.executemany("INSERT OR REPLACE INTO related VALUES (?, ?, ?)", rows)
            c.executemany("UPDATE enrichment SET related_done = 1 WHERE item_id = ?",
                          [(t,) for t in chunk])
        touched.update(chunk)
        done += len(chunk)
        if progress:
            progress("related", done, len(todo))
    _prune(archive, sorted(touched), count)
    return done


def _prune(archive: Archive, ids: list[int], count: int) -> None:
    """Keep the ``count`` best neighbours of each of these items."""
    with archive.transaction() as c:
        for item_id in ids:
            c.execute("DELETE FROM related WHERE item_id = ? AND other_id NOT IN (SELECT "
                      "other_id FROM related WHERE item_id = ? ORDER BY score DESC, other_id "
                      "LIMIT ?)", (item_id, item_id, count))
