"""Items as vectors: their strongest topical terms, stored compactly.

An item's vector is its TF-IDF row over the vocabulary of the archive's topic model, cut
to its ``TERMS`` strongest topical terms and unit length. The topics pass makes it while
it places an item (the same rows), related items compare them; both import it from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

try:
    import numpy as np
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError("enrichment needs the topics extra: pip install "
                      "'textsieve[topics]'") from exc

TERMS = 100  # strongest terms kept in an item's vector


def vectorise(model: Any, docs: Sequence[str], terms: int = TERMS) -> Any:
    """Unit-length TF-IDF rows of ``docs`` over the model's topical terms, each pruned to
    its ``terms`` largest weights (CSR, float32)."""
    return from_tfidf(model, model.tfidf(docs), terms)


def from_tfidf(model: Any, tfidf: Any, terms: int = TERMS) -> Any:
    """``vectorise`` for rows the model's ``tfidf`` already made (topics placement makes
    them too: one vectorising per text serves both)."""
    from scipy import sparse
    from sklearn.preprocessing import normalize

    x = tfidf @ sparse.diags(model.topical.astype(np.float32))  # drop too-common terms
    x = x.tocsr()
    x.eliminate_zeros()
    indptr, indices, data = x.indptr, x.indices, x.data
    keep = np.ones(len(data), dtype=bool)
    for r in range(x.shape[0]):
        a, b = indptr[r], indptr[r + 1]
        if b - a > terms:
            weak = np.argpartition(-data[a:b], terms)[terms:]
            keep[a + weak] = False
    rows = np.repeat(np.arange(x.shape[0]), np.diff(indptr))[keep]
    pruned = sparse.csr_matrix((data[keep], (rows, indices[keep])), shape=x.shape,
                               dtype=np.float32)
    return normalize(pruned).astype(np.float32)


def encode(row: Any) -> bytes:
    """One row as stored: sorted uint32 term ids, then their float32 weights."""
    order = np.argsort(row.indices)
    return (row.indices[order].astype("<u4").tobytes()
            + row.data[order].astype("<f4").tobytes())


def decode(blobs: Sequence[bytes], n_terms: int) -> Any:
    """Stored vectors as one CSR matrix, one row per blob, in order."""
    from scipy import sparse

    sizes = np.fromiter((len(b) // 8 for b in blobs), dtype=np.int64, count=len(blobs))
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    data = np.empty(int(indptr[-1]), dtype=np.float32)
    for r, blob in enumerate(blobs):
        a, b = indptr[r], indptr[r + 1]
        k = b - a
        indices[a:b] = np.frombuffer(blob, dtype="<u4", count=k)
        data[a:b] = np.frombuffer(blob, dtype="<f4", offset=4 * k, count=k)
    return sparse.csr_matrix((data, indices, indptr), shape=(len(blobs), n_terms))
