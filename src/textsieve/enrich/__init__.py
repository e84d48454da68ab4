"""Enrichment of the archive: topics, summaries, keyphrases, related items, near-duplicates.

Each capability is one module and runs incrementally over the archive: it only computes
what is missing or stale (an item re-extracted since), so ``textsieve run --enrich`` stays
cheap on an archive that grows by a few items a day. Everything is offline: the models are
fitted on the archive itself, nothing is downloaded.

The heavy parts (scikit-learn, datasketch) are the optional extra ``textsieve[topics]``;
``require()`` turns their absence into one clear line instead of an ImportError.
"""

from __future__ import annotations

from ..errors import TextsieveError

EXTRA_HINT = "pip install 'textsieve[topics]'"


class EnrichError(TextsieveError):
    """An enrichment cannot run (missing extra, nothing to work on, bad filter): one line
    for the user, never a traceback."""


class NotEnoughText(EnrichError):
    """Too few texts (or words) to fit a model on: a young archive, not a failure."""


def require() -> None:
    """Fail with a one-line message naming the extra when its libraries are missing."""
    try:
        import datasketch  # noqa: F401
        import sklearn  # noqa: F401
    except ImportError as exc:
        raise EnrichError(f"topics, summaries, keyphrases, related items and near-duplicates "
                          f"need the optional extra: {EXTRA_HINT} ({exc.name} is missing)"
                          ) from None
