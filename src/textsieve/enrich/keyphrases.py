"""Keyphrases: the few words and short phrases that say what one item is about.

Candidates are runs of one to three content words inside a sentence (stop words and
punctuation end a run); each is scored by how often the item uses it and how rare its words
are across the archive (the idf of the archive's topic model, so no other model or word
list is needed and any language works; English also drops its stop words). A phrase
repeated in the title counts more. Phrases contained in a better one are dropped.
"""

from __future__ import annotations

import json
import math
import re

from ..archive.store import Archive
from .candidates import Progress, refresh, store_in_batches, texts, work_ids

COUNT = 10
_RUN_BREAK = re.compile(r"[.,;:!?()\[\]{}\"“”«»|/\\\n\t–—]+|\s-\s")
_WORD = re.compile(r"(?u)\b[^\W\d_][\w'’-]*[^\W_]\b|\b[^\W\d_]{2}\b")



_CONTRACTION = ("t", "re", "ve", "ll", "d", "m", "s")


def _is_stop(word: str, stop: frozenset[str]) -> bool:
    """A stop word, also when contracted (it's, don't, we're): those carry no subject."""
    if word in stop:
        return True
    base, sep, tail = word.replace("’", "'").partition("'")
    return bool(sep) and (base in stop or (tail in _CONTRACTION and tail != "s"))


def extract(text: str, idf: dict[str, float], *, default_idf: float, title: str = "",
            language: str | None = None, count: int = COUNT) -> list[tuple[str, float]]:
    """The ``count`` best phrases of ``text``, with their scores, best first."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    stop = ENGLISH_STOP_WORDS if (language or "en").startswith("en") else frozenset()
    counts: dict[str, int] = {}
    surface: dict[str, str] = {}  # the first spelling seen of each phrase
    skip: dict[str, bool] = {}  # per word: a stop word or too short (asked once per text)
    for chunk in _RUN_BREAK.split(text):
        run: list[str] = []
        lows: list[str] = []
        for w in [*_WORD.findall(chunk), ""]:
            low = w.lower()
            if low:
                skipped = skip.get(low)
                if skipped is None:
                    skipped = skip[low] = len(low) <= 2 or _is_stop(low, stop)
                if not skipped:
                    run.append(w)
                    lows.append(low)
                    continue
            for n in (1, 2, 3):
                for i in range(len(run) - n + 1):
                    key = " ".join(lows[i:i + n])
                    seen = counts.get(key)
                    if seen is None:
                        counts[key] = 1
                        surface[key] = " ".join(run[i:i + n])
                    else:
                        counts[key] = seen + 1
            run, lows = [], []
    title_low = title.lower()
    scored = []
    for key, tf in counts.items():
        words = key.split(" ")
        if len(words) > 1 and tf < 2:  # a phrase seen once is a chance sequence
            continue
        rarity = sum(idf.get(w, default_idf) for w in words) / len(words)
        score = (1 + math.log(tf)) * rarity * (1 + 0.6 * (len(words) - 1))
        if key in title_low:
            score *= 1.5
        scored.append((score, key))
    scored.sort(key=lambda s: (-s[0], s[1]))
    out: list[tuple[str, float]] = []
    for score, key in scored:
        if any(key in kept.lower() or kept.lower() in key for kept, _ in out):
            continue
        out.append((surface[key], round(score, 3)))
        if len(out) >= count:
            break
    return out


def update(archive: Archive, ids: list[int] | None = None, *, force: bool = False,
           progress: Progress | None = None, batch: int = 200) -> int:
    """Keyphrases for the given items (default: every candidate without them yet)."""
    from . import require, topics

    require()
    model = topics.load_model(archive)
    if model is None:  # the archive's own word statistics come from its topic model
        topics.update(archive, progress=progress)
        model = topics.load_model(archive)
    assert model is not None
    refresh(archive)
    idf_values = model.idf
    idf = {w: float(idf_values[i]) for i, w in enumerate(model.vocabulary)}
    default = math.log((1 + model.n_docs) / 2) + 1.0  # a word in no text or one: rare
    ids = work_ids(archive, ids, "e.keyphrases IS NULL", force)

    def values(chunk: list[int]) -> list[tuple[object, int]]:
        titles = dict(archive.conn.execute(
            f"SELECT id, title FROM items WHERE id IN ({','.join('?' * len(chunk))})", chunk))
        return [(json.dumps(extract(text, idf, default_idf=default, language=lang,
                                    title=titles.get(item_id) or ""), ensure_ascii=False),
                 item_id) for item_id, text, lang in texts(archive, chunk)]

    return store_in_batches(archive, ids, "keyphrases", "keyphrases", values, batch=batch,
                            progress=progress)
