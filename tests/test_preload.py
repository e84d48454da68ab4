"""``textsieve.preload``: a long-lived caller pays the start-up once, not per format.

Checked in a fresh interpreter over the whole dev corpus: after ``preload()`` no file
imports anything more (code pages excepted: looking one up is cheap), so the first file of
each format costs what the next one does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_PROBE = """
import sys, textsieve
from pathlib import Path
textsieve.preload()
before = set(sys.modules)
for path in sorted(p for p in Path(sys.argv[1]).rglob("*") if p.is_file()):
    textsieve.extract(path, ocr="never", timeout=60)
late = sorted(m for m in set(sys.modules) - before if not m.startswith("encodings."))
print(" ".join(late))
"""


def test_nothing_left_to_import_after_preload(corpus: Path) -> None:
    res = subprocess.run([sys.executable, "-c", _PROBE, str(corpus)], capture_output=True,
                         text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == [], f"imported on first use: {res.stdout}"


def test_preload_of_some_formats_loads_only_those() -> None:
    """The pool preloads what its first inputs need: a PDF run need not load mail."""
    code = ("import sys, textsieve; textsieve.preload(['application/pdf']); "
            "print('textsieve.extractors.pdf' in sys.modules, "
            "'textsieve.extractors.mail' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["True", "False"]
