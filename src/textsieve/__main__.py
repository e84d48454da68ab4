"""``python -m textsieve`` is the ``textsieve`` command."""

import sys

from .cli import main

sys.exit(main())
