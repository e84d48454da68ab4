"""Topics: an NMF topic model over TF-IDF, fitted on the archive, kept in the archive.

NMF over TF-IDF gives sharper, more readable topics than LDA on short-to-medium web texts
and is deterministic with a fixed seed. The number of topics is chosen by the NPMI
coherence of each topic's top terms measured on the archive itself (unless ``k`` is
given). The model is stored as plain arrays (vocabulary, document frequencies, the topic x
term matrix), never pickled, so an archive stays data; new items are placed in the
existing topics by solving for their mixture with the topic matrix held fixed, which costs
one small least-squares problem per item instead of a refit.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

try:
    import numpy as np
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError("enrichment needs the topics extra: pip install "
                      "'textsieve[topics]'") from exc

from ..archive.store import Archive
from . import NotEnoughText, require
from .candidates import (
    Progress,
    Selection,
    Topic,
    candidate_ids,
    list_topics,
    refresh,
    texts,
)
from .vectors import encode, from_tfidf

log = logging.getLogger(__name__)

__all__ = ["Topic", "TopicModel", "TopicsReport", "fit", "list_topics", "load_model",
           "npmi", "save_model", "update"]

TOKEN_PATTERN = r"(?u)\b[^\W\d_]{3,}\b"  # words of 3+ letters: no numbers, ids or hashes
MAX_DF = 0.5  # terms in more than half the texts carry no topic (boilerplate, stop words)
TOP_TERMS = 10  # terms shown per topic, and scored for coherence
MIN_WEIGHT = 0.05  # mixture shares below this are not stored
K_CANDIDATES = (5, 10, 15, 20, 25, 30)
K_SAMPLE = 3000  # k is chosen on at most this many texts; the chosen k is fitted on all
FIT_SAMPLE = 10_000  # a larger selection is fitted on a seeded sample of this many texts,
# then every item is placed in the fixed topics: the topics of 10,000 texts are those of
# 100,000 like them, and the fit stays minutes, not hours



@dataclass
class TopicModel:
    """The stored model: enough to vectorise any new text and place it in the topics."""

    vocabulary: list[str]
    df: np.ndarray  # document frequency of each term in the fitting corpus
    n_docs: int
    components: np.ndarray  # k x terms, zero on the columns of too-common terms
    params: dict[str, Any] = field(default_factory=dict)
    id: int | None = None

    @property
    def k(self) -> int:
        return int(self.components.shape[0])

    @property
    def idf(self) -> np.ndarray:
        """Smoothed idf, as scikit-learn computes it."""
        return np.log((1 + self.n_docs) / (1 + self.df)) + 1.0

    @property
    def topical(self) -> np.ndarray:
        """Mask of the terms that may carry a topic (not in most texts)."""
        return self.df <= MAX_DF * self.n_docs

    def tfidf(self, docs: Sequence[str]) -> Any:
        """L2-normalised sublinear TF-IDF rows over the model's vocabulary (all terms)."""
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.preprocessing import normalize

        counts = CountVectorizer(vocabulary=self.vocabulary, token_pattern=TOKEN_PATTERN,
                                 dtype=np.float32).transform(docs)
        counts.data = 1.0 + np.log(counts.data)
        return normalize(counts.multiply(self.idf.astype(np.float32)).tocsr())

    def place(self, docs: Sequence[str]) -> np.ndarray:
        """Topic mixtures (rows summing to 1, or all zero) of new texts, model unchanged."""
        return self.place_rows(self.tfidf(docs))

    def place_rows(self, tfidf: Any) -> np.ndarray:
        """``place`` for texts already vectorised by ``tfidf``."""
        from sklearn.decomposition import non_negative_factorization
        from sklearn.preprocessing import normalize

        x = normalize(tfidf[:, np.flatnonzero(self.topical)])
        h = self.components[:, self.topical].astype(np.float64)
        w, _, _ = non_negative_factorization(x.astype(np.float64), H=h, n_components=self.k,
                                             update_H=False, init="custom", max_iter=400,
                                             random_state=0)
        return _mixtures(w)


@dataclass
class TopicsReport:
    """What one ``textsieve topics`` pass did."""

    model_id: int
    refitted: bool
    k: int
    placed: int
    coherence_by_k: dict[int, float] = field(default_factory=dict)


def _mixtures(w: np.ndarray) -> np.ndarray:
    sums = w.sum(axis=1, keepdims=True)
    return np.divide(w, sums, out=np.zeros_like(w), where=sums > 0)


def _vectorizer(n_docs: int) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(token_pattern=TOKEN_PATTERN, stop_words="english",
                           min_df=2 if n_docs >= 20 else 1, max_features=50_000,
                           sublinear_tf=True, dtype=np.float32)


def npmi(binary: Any, topics: Sequence[Sequence[int]]) -> list[float]:
    """Mean normalised PMI of each term list, from document co-occurrence in ``binary``
    (a 0/1 documents x terms sparse matrix). +1: the terms always occur together; 0:
    independent; -1: never together. The usual automatic measure of how coherent a topic
    reads to people (Bouma 2009; Lau et al. 2014)."""
    n = binary.shape[0]
    out: list[float] = []
    for terms in topics:
        idx = list(terms)
        sub = binary[:, idx]
        co = (sub.T @ sub).toarray().astype(np.float64) / n
        p = np.diag(co)
        scores = []
        for a in range(len(idx)):
            for b in range(a + 1, len(idx)):
                pab = co[a, b]
                if pab <= 0:
                    scores.append(-1.0)
                elif pab >= 1:
                    scores.append(1.0)
                else:
                    scores.append(math.log(pab / (p[a] * p[b])) / -math.log(pab))
        out.append(float(np.mean(scores)) if scores else 0.0)
    return out


def _nmf(x: Any, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One NMF fit: (document x topic, topic x term). A loose tolerance: the topics' top
    terms settle long before the objective stops moving."""
    import warnings

    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning

    nmf = NMF(n_components=k, init="nndsvda", random_state=seed, max_iter=200, tol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        w = nmf.fit_transform(x)
    return w, nmf.components_


def fit(docs: Sequence[str], k: int | None = None, *, seed: int = 0
        ) -> tuple[TopicModel, np.ndarray, dict[int, float]]:
    """Fit a model on ``docs``; returns it, the docs' mixtures and the mean coherence of
    every k tried (only ``k`` when given)."""
    from sklearn.preprocessing import normalize

    n = len(docs)
    if n < 2:
        raise NotEnoughText(f"{n} text(s) with enough words: too few to find topics in")
    vec = _vectorizer(n)
    try:
        full = vec.fit_transform(docs)
    except ValueError:  # only stop words, numbers or one-letter tokens
        raise NotEnoughText("the texts have no words to model topics with") from None
    vocabulary = [str(t) for t in vec.get_feature_names_out()]
    binary = (full > 0).astype(np.float32).tocsc()
    df = np.asarray(binary.sum(axis=0)).ravel()
    topical = df <= MAX_DF * n
    if topical.sum() < 2:
        raise NotEnoughText("the texts share too few distinctive words to find topics in")
    x = normalize(full[:, np.flatnonzero(topical)])
    bin_topical = binary[:, np.flatnonzero(topical)]
    limit = max(2, min(n // 5, int(topical.sum()) // 2, max(K_CANDIDATES)))
    ks = [k] if k else [c for c in K_CANDIDATES if c <= limit] or [min(limit, 2)]
    scores: dict[int, float] = {}
    rows = np.arange(n)
    if len(ks) > 1 and n > K_SAMPLE:  # choosing k on a sample bounds the cost of the search
        rows = np.random.default_rng(seed).choice(n, K_SAMPLE, replace=False)
    best: tuple[float, int, np.ndarray, np.ndarray] | None = None
    for kk in ks:
        kk = max(1, min(kk, n, x.shape[1]))
        w, h = _nmf(x[rows], kk, seed)
        tops = [list(np.argsort(-row)[:TOP_TERMS]) for row in h]
        score = float(np.mean(npmi(bin_topical[rows], tops)))
        scores[kk] = round(score, 4)
        log.info("topics: k=%d coherence %.4f", kk, score)
        if best is None or score > best[0]:
            best = (score, kk, w, h)
    assert best is not None
    _, kk, w, h = best
    if len(rows) < n:
        w, h = _nmf(x, kk, seed)
    components = np.zeros((kk, len(vocabulary)), dtype=np.float32)
    components[:, topical] = h
    model = TopicModel(vocabulary, df.astype(np.int64), n, components,
                       params={"k": kk, "chosen": k is None, "coherence_by_k": scores})
    return model, _mixtures(w), scores


# -- the archive side ------------------------------------------------------------------------
def _zip(archive: Archive, data: bytes) -> bytes:
    return archive._zc.compress(data)


def save_model(archive: Archive, model: TopicModel, binary_top: list[float]) -> int:
    """Store ``model`` as the active one (older models stay, inactive, until removed)."""
    with archive.transaction() as c:
        c.execute("UPDATE topic_models SET active = 0")
        cur = c.execute(
            "INSERT INTO topic_models (created, active, k, params, vocabulary, idf, components) "
            "VALUES (?, 1, ?, ?, ?, ?, ?)",
            (time.time(), model.k, json.dumps({**model.params, "n_docs": model.n_docs}),
             _zip(archive, json.dumps(model.vocabulary).encode()),
             _zip(archive, model.df.astype(np.int64).tobytes()),
             _zip(archive, model.components.astype(np.float32).tobytes())))
        model.id = int(cur.lastrowid or 0)
        for t, row in enumerate(model.components):
            top = np.argsort(-row)[:TOP_TERMS]
            terms = [[model.vocabulary[i], round(float(row[i]), 4)] for i in top if row[i] > 0]
            label = " · ".join(term for term, _ in terms[:3]) or f"topic {t}"
            c.execute("INSERT INTO topics VALUES (?, ?, ?, ?, ?)",
                      (model.id, t, label, json.dumps(terms), binary_top[t]))
        # Old models' placements are dropped: every item is placed again in the new one.
        c.execute("DELETE FROM item_topics WHERE model_id != ?", (model.id,))
        c.execute("UPDATE enrichment SET topic_model = NULL")
        # Related items use the model's vocabulary: their vectors and lists start over.
        c.execute("UPDATE enrichment SET vector = NULL, vector_model = NULL, "
                  "related_done = 0")
        c.execute("DELETE FROM related")
    return model.id


def load_model(archive: Archive) -> TopicModel | None:
    """The active model, or None when topics were never fitted."""
    row = archive.conn.execute(
        "SELECT id, params, vocabulary, idf, components, k FROM topic_models "
        "WHERE active = 1 ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        return None
    zd = archive._zd
    params = json.loads(row[1])
    vocabulary = json.loads(zd.decompress(row[2]))
    df = np.frombuffer(zd.decompress(row[3]), dtype=np.int64)
    comps = np.frombuffer(zd.decompress(row[4]), dtype=np.float32).reshape(row[5], -1)
    return TopicModel(vocabulary, df, int(params.get("n_docs", 0)), comps, params, row[0])


def _store_mixtures(archive: Archive, model_id: int, ids: Sequence[int],
                    mixtures: np.ndarray, vectors: Sequence[bytes] | None = None) -> None:
    rows = [(item_id, model_id, int(t), float(m[t]))
            for item_id, m in zip(ids, mixtures, strict=True)
            for t in np.flatnonzero(m >= MIN_WEIGHT)]
    with archive.transaction() as c:
        if vectors is not None:  # the related-items vectors, from the same TF-IDF rows
            c.executemany("UPDATE enrichment SET vector = ?, vector_model = ? "
                          "WHERE item_id = ?", [(v, model_id, i) for i, v in
                                                zip(ids, vectors, strict=True)])
        c.executemany("DELETE FROM item_topics WHERE item_id = ? AND model_id = ?",
                      [(i, model_id) for i in ids])
        c.executemany("INSERT INTO item_topics VALUES (?, ?, ?, ?)", rows)
        c.executemany("UPDATE enrichment SET topic_model = ? WHERE item_id = ?",
                      [(model_id, i) for i in ids])


def update(archive: Archive, *, k: int | None = None, refit: bool = False,
           selection: Selection | None = None, progress: Progress | None = None,
           batch: int = 500) -> TopicsReport:
    """Fit a model when there is none (or on ``refit``, or when ``k`` or a given selection
    differ from the stored model's), else place only the items not placed yet. No
    ``selection`` means the stored model's own."""
    require()
    refresh(archive)
    model = load_model(archive)
    if selection is None:  # run --enrich: keep the subset the user fitted the model on
        stored = model.params.get("selection", {}) if model is not None else {}
        selection = Selection(**stored)
    if model is not None and ((k and k != model.k)
                              or model.params.get("selection", {}) != selection.to_dict()):
        refit = True
    if model is None or refit:
        ids = candidate_ids(archive, selection)
        if progress:
            progress("topics", 0, len(ids))
        sample = ids
        if len(ids) > FIT_SAMPLE:
            rng = np.random.default_rng(0)
            sample = sorted(int(i) for i in rng.choice(ids, FIT_SAMPLE, replace=False))
        got = [t for _, t, _ in texts(archive, sample)]
        model, _, scores = fit(got, k)
        model.params["selection"] = selection.to_dict()
        model.params["fitted_on"] = len(got)
        tops = [list(np.argsort(-row)[:TOP_TERMS]) for row in model.components]
        binary = (model.tfidf(got) > 0).astype(np.float32).tocsc()
        del got
        model_id = save_model(archive, model, npmi(binary, tops))
        # Every item, fitted or not, is then placed exactly as later ones will be (topics
        # held fixed), so a text gets the same mixture whether it came before or after the
        # fit; a batch at a time, so memory does not grow with the archive.
        placed = _place(archive, model, ids, batch, progress)
        return TopicsReport(model_id, True, model.k, placed, scores)
    assert model.id is not None
    todo = candidate_ids(archive, selection, f"e.topic_model IS NOT {int(model.id)}")
    placed = _place(archive, model, todo, batch, progress)
    return TopicsReport(model.id, False, model.k, placed,
                        {int(a): b for a, b in model.params.get("coherence_by_k", {}).items()})


def _place(archive: Archive, model: TopicModel, ids: list[int], batch: int,
           progress: Progress | None) -> int:
    """Place these items in the model's topics and store their mixtures; returns how many.
    Each text is vectorised once: the same rows give the related-items vectors, stored
    with the mixtures, so related items do not read and vectorise the texts again."""
    assert model.id is not None
    placed = 0
    for i in range(0, len(ids), batch):
        chunk = list(texts(archive, ids[i:i + batch]))
        if chunk:
            x = model.tfidf([c[1] for c in chunk])
            vectors = from_tfidf(model, x)
            _store_mixtures(archive, model.id, [c[0] for c in chunk], model.place_rows(x),
                            [encode(vectors[r]) for r in range(len(chunk))])
        placed += len(chunk)
        if progress:
            progress("topics", placed, len(ids))
    return placed
