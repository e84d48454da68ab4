"""Tables rendered by the Builder: the whole-table fast paths must give exactly what the
cell-by-cell definition gives (text: cells stripped, tab-separated; Markdown: cells
escaped, pipes between), whatever the cells hold."""

from __future__ import annotations

import random

import pytest

from textsieve.render import Builder


def _by_cell(rows: list[list[str]], header: bool) -> tuple[str, str]:
    """The definition, one cell at a time."""
    grid = [r for r in rows if "".join(r).strip()]
    width = max(map(len, grid))
    grid = [r + [""] * (width - len(r)) for r in grid]
    text = "\n".join("\t".join(c.replace("\n", " ").strip() for c in r).rstrip() for r in grid)
    md_rows = [[c.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>").strip()
                for c in r] for r in grid]
    if not header:
        md_rows.insert(0, [""] * width)
    lines = ["| " + " | ".join(md_rows[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(r) + " |" for r in md_rows[1:]]
    return text, "\n".join(lines)


_PIECES = ["a", "Total", "12.5", " ", "  padded ", "x|y", "back\\slash", "two\nlines", "",
           "\u00a0nbsp", "tab\tin", "é", "- item", "# not a heading", "mid\u00a0space",
           "em end\u2003", "cr\r", "\u3000wide"]


@pytest.mark.parametrize("seed", range(200))
def test_table_paths_match_the_cell_by_cell_definition(seed: int) -> None:
    rnd = random.Random(seed)
    # Mostly tame cells (the fast paths' case) with now and then an awkward one.
    pool = _PIECES[:6] + _PIECES[-4:] if seed % 3 else _PIECES
    rows = [[rnd.choice(pool) for _ in range(rnd.randint(1, 5))]
            for _ in range(rnd.randint(1, 8))]
    if not any("".join(r).strip() for r in rows):
        rows.append(["a"])
    header = bool(seed % 2)
    out = Builder()
    out.table(rows, header=header)
    text, md, _ = out.build()
    assert (text, md) == _by_cell(rows, header)


def test_list_numbers_in_every_style() -> None:
    from textsieve.render import number_text

    assert [number_text(n, "lowerLetter") for n in (1, 26, 27, 52)] == ["a", "z", "aa", "az"]
    assert [number_text(n, "upperRoman") for n in (4, 9, 14, 1994)] == \
        ["IV", "IX", "XIV", "MCMXCIV"]
    assert number_text(3, "lowerRoman") == "iii" and number_text(0, "lowerRoman") == "0"
    assert number_text(42) == "42" and number_text(7, "ordinal-unknown") == "7"
