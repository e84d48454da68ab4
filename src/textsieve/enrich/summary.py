"""Extractive summaries: the few sentences of a text that best stand for it.

LexRank (Erkan & Radev 2004) over the text's own sentences: a sentence is central when it
is similar to many other central sentences. Being extractive, a summary is always in the
item's own language and never says anything the text does not. Writers of articles and
pages put what matters first (the lead), so a summary opens with the lead sentence and
LexRank picks the rest. A long text with headings is summarised section by section: the
lead, then one sentence for each of its largest sections, in reading order.
"""

from __future__ import annotations

import re
from typing import Any

try:
    import numpy as np
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError("enrichment needs the topics extra: pip install "
                      "'textsieve[topics]'") from exc

from ..archive.store import Archive
from .candidates import (  # noqa: F401 (summary_of: re-exported)
    Progress,
    refresh,
    store_in_batches,
    summary_of,
    texts,
    work_ids,
)

SENTENCES = 3  # sentences in a summary
LONG = 60  # sentences above which a text with sections is summarised by section
MAX_SECTIONS = 6
_SPLIT = re.compile(r"(?<=[.!?…。！？])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[^\W_a-z])", re.UNICODE)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_END = re.compile(r"[.!?…。！？:;][\"'”’)\]]*$")
_BULLET = re.compile(r"^\s*(?:[-*•·–]|\d{1,3}[.)])\s+")
_WORD = re.compile(r"(?u)\b[^\W\d_]{2,}\b")



def sentences(paragraph: str) -> list[str]:
    """Sentences of one paragraph: split after . ! ? when a capital or digit follows."""
    return [s.strip() for s in _SPLIT.split(" ".join(paragraph.split())) if s.strip()]


def _units(text: str) -> list[tuple[str | None, list[str]]]:
    """(heading, sentences) sections of a text. A Markdown heading, or a short line with no
    closing punctuation, starts a section; sentences need closing punctuation and 4+ words
    (menus, captions and headings are not sentences a summary could use)."""
    out: list[tuple[str | None, list[str]]] = [(None, [])]
    for para in re.split(r"\n\s*\n|\n(?=\s{0,3}#)", text):
        para = para.strip()
        if not para:
            continue
        first, _, rest = para.partition("\n")
        head = _HEADING.match(first)
        if head:
            out.append((head.group(1), []))
            para = rest
        elif not rest and not _END.search(first) and len(first.split()) < 15:
            out.append((first, []))
            continue
        for line in para.split("\n"):  # list items and lines stand alone, bullets off
            for s in sentences(_BULLET.sub("", line)):
                if len(_WORD.findall(s)) >= 4 and _END.search(s):
                    out[-1][1].append(s)
    return [(h, s) for h, s in out if s]


def lexrank(sents: list[str], n: int, *, language: str | None = None,
            lead: float = 1.0) -> list[int]:
    """Indices of the ``n`` most central sentences, in text order. ``lead`` weighs the
    restart towards early sentences (0: plain LexRank)."""
    if len(sents) <= n:
        return list(range(len(sents)))
    x = _tfidf(sents, english=(language or "en").startswith("en"))
    if x is None:  # no words at all after stop words: keep the first sentences
        return list(range(n))
    sim = (x @ x.T).toarray()
    np.fill_diagonal(sim, 0.0)
    adj = (sim > 0.1).astype(np.float64) * sim
    rows = adj.sum(axis=1, keepdims=True)
    m = len(sents)
    trans = np.divide(adj, rows, out=np.full_like(adj, 1.0 / m), where=rows > 0)
    restart = 1.0 / (1.0 + np.arange(m)) ** lead
    restart /= restart.sum()
    score = np.full(m, 1.0 / m)
    for _ in range(100):  # power iteration of a PageRank with damping 0.85
        new = 0.15 * restart + 0.85 * trans.T @ score
        if np.abs(new - score).sum() < 1e-8:
            score = new
            break
        score = new
    return sorted(np.argsort(-score, kind="stable")[:n].tolist())


def _tfidf(sents: list[str], *, english: bool) -> Any:
    """Sentences x words TF-IDF rows, as scikit-learn's TfidfVectorizer makes them
    (lower case, sublinear tf, smoothed idf, unit length), or None when no word is left.
    Computed directly: the vectoriser's input checks cost more than the maths on a few
    dozen sentences, and this runs once per item."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    stop = ENGLISH_STOP_WORDS if english else frozenset()
    vocab: dict[str, int] = {}
    rows: list[dict[int, int]] = []
    for s in sents:
        counts: dict[int, int] = {}
        for w in _WORD.findall(s.lower()):
            if w in stop:
                continue
            j = vocab.setdefault(w, len(vocab))
            counts[j] = counts.get(j, 0) + 1
        rows.append(counts)
    if not vocab:
        return None
    from scipy import sparse

    indptr = np.cumsum([0] + [len(c) for c in rows])
    indices = np.fromiter((j for c in rows for j in c), dtype=np.int64, count=indptr[-1])
    tf = np.fromiter((v for c in rows for v in c.values()), dtype=np.float64,
                     count=indptr[-1])
    df = np.bincount(indices, minlength=len(vocab))
    data = (1.0 + np.log(tf)) * (np.log((1 + len(sents)) / (1 + df)) + 1.0)[indices]
    x = sparse.csr_matrix((data, indices, indptr), shape=(len(sents), len(vocab)))
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sparse.diags(scale) @ x


def summarize(text: str, *, language: str | None = None, n: int = SENTENCES) -> str:
    """The summary of one text: ``n`` sentences, or one per main section when the text is
    long and has headings ("Heading: sentence" lines)."""
    units = _units(text)
    flat = [s for _, ss in units for s in ss]
    if not flat:
        return ""
    sectioned = [u for u in units if u[0]]
    if len(flat) > LONG and len(sectioned) >= 2:
        # The opening section's best sentences first (the lead), then one line for each of
        # the largest other sections, in reading order.
        head0, lead = units[0]
        lines = [" ".join(lead[i] for i in _lead_and_central(lead, min(n, 2), language))]
        rest = sorted(sorted(range(1, len(units)), key=lambda i: -len(units[i][1]))
                      [:MAX_SECTIONS - 1])
        for i in rest:
            head, ss = units[i]
            best = ss[lexrank(ss, 1, language=language)[0]]
            lines.append(f"{head}: {best}" if head else best)
        if head0:
            lines[0] = f"{head0}: {lines[0]}"
        return "\n".join(lines)
    return " ".join(flat[i] for i in _lead_and_central(flat, n, language))


def _lead_and_central(sents: list[str], n: int, language: str | None) -> list[int]:
    """The opening sentence, then the most central of the others: the lead of a page says
    what it is about far more often than any other sentence (Lead-3 is the baseline
    extractive summarisers of news struggle to beat), centrality picks the rest."""
    if n <= 1 or len(sents) <= n:
        return list(range(min(n, len(sents))))
    return [0, *(i + 1 for i in lexrank(sents[1:], n - 1, language=language))]


def update(archive: Archive, ids: list[int] | None = None, *, n: int = SENTENCES,
           force: bool = False, progress: Progress | None = None, batch: int = 200) -> int:
    """Summarise the given items (default: every candidate without a summary); returns how
    many were written. Items without enough text are skipped, not failed."""
    from . import require

    require()
    refresh(archive)
    ids = work_ids(archive, ids, "e.summary IS NULL", force)

    def values(chunk: list[int]) -> list[tuple[object, int]]:
        return [(summarize(text, language=lang, n=n), item_id)
                for item_id, text, lang in texts(archive, chunk)]

    return store_in_batches(archive, ids, "summary", "summaries", values, batch=batch,
                            progress=progress)
