"""``python -m textsieve`` is the ``textsieve`` command."""

from .cli import entry

entry()
