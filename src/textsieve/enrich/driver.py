"""The incremental enrichment pass: every capability, each doing only what is missing.

``textsieve run --enrich`` calls it after the extraction, so an archive that grows by a
few items a day keeps its topics, summaries, keyphrases, neighbours and duplicate groups
current at the cost of those few items. Which capabilities run, the number of topics and
the summary length come from the one ``Options`` object.
"""

from __future__ import annotations

import logging

from ..archive.store import Archive
from ..options import ENRICH_KINDS, Options
from . import NotEnoughText, require
from .candidates import Progress

log = logging.getLogger(__name__)


def enrich(archive: Archive, options: Options, *, kinds: tuple[str, ...] = (),
           progress: Progress | None = None) -> dict[str, int | str]:
    """Run the capabilities named by ``kinds`` (all when empty) in dependency order, with
    ``options.topics_k`` and ``options.summary_sentences``; returns per capability how
    many items it did, or why it was skipped."""
    from . import keyphrases, neardup, related, summary, topics

    require()
    kinds = kinds or ENRICH_KINDS
    done: dict[str, int | str] = {}
    model_ok = True
    if "topics" in kinds or "keyphrases" in kinds or "related" in kinds:
        # keyphrases and related items use the topic model's vocabulary: it comes first
        try:
            report = topics.update(archive, k=options.topics_k or None, progress=progress)
            if "topics" in kinds:
                done["topics"] = report.placed
        except NotEnoughText as exc:  # a young archive: nothing to model yet, not an error
            model_ok = False
            for kind in ("topics", "keyphrases", "related"):
                if kind in kinds:
                    done[kind] = f"skipped ({exc})"
            log.info("enrich: topics skipped: %s", exc)
    if "summaries" in kinds:
        done["summaries"] = summary.update(archive, n=options.summary_sentences,
                                           progress=progress)
    if model_ok and "keyphrases" in kinds:
        done["keyphrases"] = keyphrases.update(archive, progress=progress)
    if model_ok and "related" in kinds:
        done["related"] = related.update(archive, progress=progress)
    if "duplicates" in kinds:
        done["duplicates"] = neardup.update(archive, progress=progress)
    return done
