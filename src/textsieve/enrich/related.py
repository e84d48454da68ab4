"""Related items: each item's nearest neighbours by TF-IDF cosine similarity.

Vectors use the vocabulary and idf of the archive's topic model, so they do not change as
items are added. Each item's vector is computed once and stored (``enrichment.vector``),
usually by the topics pass that places the item (same TF-IDF rows): adding items
vectorises only them, and a refit starts the vectors and lists over. A new item is
compared with every stored vector, gets its own nearest neighbours, and enters the list of
every older item it is closer to than that item's current last neighbour; the result is
the same as recomputing everything.

A vector keeps only the item's ``vectors.TERMS`` strongest topical terms (too-common terms carry
no likeness, and the long tail of weak terms barely moves a cosine): that bounds the
storage per item and makes the all-pairs products sparse enough for 100,000 items.
Scores are computed a block of rows at a time, so memory is bounded by one block.
"""

from __future__ import annotations

import logging
from typing import Any

try:
    import numpy as np
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError("enrichment needs the topics extra: pip install "
                      "'textsieve[topics]'") from exc

from ..archive.store import Archive
from .candidates import Progress, candidate_ids, refresh, texts
from .vectors import decode, encode, vectorise

log = logging.getLogger(__name__)

COUNT = 5  # neighbours kept per item
MIN_SCORE = 0.1  # below this two texts share little more than common words
BLOCK = 128  # rows scored at once: BLOCK x items float32 scores in memory
VECTOR_BATCH = 1000



def _store_vectors(archive: Archive, model: Any, ids: list[int],
                   progress: Progress | None) -> int:
    """Vectorise the items that have no vector of this model yet; returns how many."""
    done = 0
    for i in range(0, len(ids), VECTOR_BATCH):
        got = list(texts(archive, ids[i:i + VECTOR_BATCH]))
        x = vectorise(model, [t for _, t, _ in got])
        with archive.transaction() as c:
            c.executemany("UPDATE enrichment SET vector = ?, vector_model = ? WHERE item_id = ?",
                          [(encode(x[r]), model.id, item_id)
                           for r, (item_id, _, _) in enumerate(got)])
        done += len(got)
        if progress:
            progress("related vectors", done, len(ids))
    return done


def _best(sims: np.ndarray, count: int) -> list[list[int]]:
    """Per row, the columns of the ``count`` highest scores of at least MIN_SCORE, best
    first, ties to the lower column (the lower item id)."""
    out = []
    k = min(count, sims.shape[1])
    if k == 0:
        return [[] for _ in range(sims.shape[0])]
    part = (np.argpartition(-sims, k - 1, axis=1)[:, :k] if sims.shape[1] > k
            else np.tile(np.arange(sims.shape[1]), (sims.shape[0], 1)))
    for r in range(sims.shape[0]):
        floor = sims[r, part[r]].min()
        # every column tying the lowest kept score competes, so ties break by id
        cols = np.flatnonzero(sims[r] >= max(floor, MIN_SCORE))
        cols = cols[np.lexsort((cols, -sims[r, cols]))][:count]
        out.append(cols.tolist())
    return out


def update(archive: Archive, *, count: int = COUNT, progress: Progress | None = None) -> int:
    """Neighbours for every candidate without them yet; returns how many were done. Only
    those items (and any without a stored vector) are vectorised."""
    from . import require, topics

    require()
    model = topics.load_model(archive)
    if model is None:
        topics.update(archive, progress=progress)
        model = topics.load_model(archive)
    assert model is not None and model.id is not None
    refresh(archive)
    with archive.transaction() as c:  # vectors of an older model: neighbours start over
        # (a refit already cleared them; this holds for archives changed by other means)
        if c.execute("SELECT 1 FROM enrichment WHERE vector_model IS NOT NULL "
                     "AND vector_model != ? LIMIT 1", (model.id,)).fetchone():
            log.info("related: the topic model changed; recomputing every neighbour list")
            c.execute("UPDATE enrichment SET vector = NULL, vector_model = NULL "
                      "WHERE vector_model != ?", (model.id,))
            c.execute("UPDATE enrichment SET related_done = 0")
            c.execute("DELETE FROM related")
    todo = candidate_ids(archive, missing="e.related_done = 0")
    if not todo:
        return 0
    vectorised = _store_vectors(
        archive, model, candidate_ids(archive, missing="e.vector IS NULL"), progress)
    all_ids, blobs = [], []
    for item_id, blob in archive.conn.execute(
            "SELECT item_id, vector FROM enrichment "
            "WHERE vector IS NOT NULL AND vector_model = ? ORDER BY item_id",
            (model.id,)):
        all_ids.append(item_id)
        blobs.append(blob)
    candidates = set(candidate_ids(archive))
    keep = [n for n, i in enumerate(all_ids) if i in candidates]
    all_ids = [all_ids[n] for n in keep]
    x = decode([blobs[n] for n in keep], len(model.vocabulary))
    del blobs
    pos = {item_id: n for n, item_id in enumerate(all_ids)}
    todo = [t for t in todo if t in pos]
    new = np.zeros(len(all_ids), dtype=bool)
    new[[pos[t] for t in todo]] = True
    # An older item takes a new one when it beats its current last neighbour (any score
    # of MIN_SCORE or more while its list is not full).
    floor = np.full(len(all_ids), MIN_SCORE, dtype=np.float32)
    for item_id, n, low in archive.conn.execute(
            "SELECT item_id, count(*), min(score) FROM related GROUP BY item_id"):
        if item_id in pos and n >= count:
            floor[pos[item_id]] = max(MIN_SCORE, low)
    floor[new] = np.inf  # new items get their own full list below
    xt = x.T.tocsr()
    touched: set[int] = set()
    done = 0
    for i in range(0, len(todo), BLOCK):
        chunk = todo[i:i + BLOCK]
        sims = (x[[pos[t] for t in chunk]] @ xt).toarray()
        for r, item_id in enumerate(chunk):
            sims[r, pos[item_id]] = -1.0
        rows = []
        for r, cols in enumerate(_best(sims, count)):
            rows += [(chunk[r], all_ids[b], float(sims[r, b])) for b in cols]
        hit_r, hit_c = np.nonzero(sims >= floor[None, :])
        for r, b in zip(hit_r.tolist(), hit_c.tolist(), strict=True):
            rows.append((all_ids[b], chunk[r], float(sims[r, b])))
            touched.add(all_ids[b])
        with archive.transaction() as c:
            c.executemany("DELETE FROM related WHERE item_id = ?", [(t,) for t in chunk])
            c.executemany("INSERT OR REPLACE INTO related VALUES (?, ?, ?)", rows)
            c.executemany("UPDATE enrichment SET related_done = 1 WHERE item_id = ?",
                          [(t,) for t in chunk])
        done += len(chunk)
        if progress:
            progress("related", done, len(todo))
    _prune(archive, sorted(touched), count)
    log.info("related: %d item(s) vectorised, %d given neighbours, %d older lists updated",
             vectorised, done, len(touched))
    return done


def _prune(archive: Archive, ids: list[int], count: int) -> None:
    """Keep the ``count`` best neighbours of each of these items."""
    with archive.transaction() as c:
        for item_id in ids:
            c.execute("DELETE FROM related WHERE item_id = ? AND other_id NOT IN (SELECT "
                      "other_id FROM related WHERE item_id = ? ORDER BY score DESC, other_id "
                      "LIMIT ?)", (item_id, item_id, count))
