"""Write src/textsieve/extractors/_index.py from the built-in formats' declarations.

Run after adding a format module or changing a format's signatures, name hints, readers,
priorities or names (not its version: that is read from the module itself)::

    .venv/bin/python scripts/format_index.py
"""

from __future__ import annotations

from textsieve.extractors.registry import index_path, index_source

if __name__ == "__main__":
    path = index_path()
    text = index_source()
    changed = not path.exists() or path.read_text(encoding="utf-8") != text
    if changed:
        path.write_text(text, encoding="utf-8")
    print(f"{path}: {'written' if changed else 'unchanged'}")
