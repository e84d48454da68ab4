"""The words Tesseract read, put in reading order.

Tesseract's automatic page segmentation cuts a page into blocks and reads them one after
the other. On an article that is right: each column is a block. On a table, a form, a
receipt or a line-numbered court filing it is wrong: the labels come out as one block and
the values as another, the line numbers apart from their lines, and a reader (or a search
for "Total 194.92") gets the words in an order that no longer says anything. Segmenting
such pages as one block instead (``--psm 4/6``) reads them in rows but runs columns of an
article together; and which kind of page it is, is known only after the layout is found.

So the page is read once, with automatic segmentation, and its words are ordered here:
blocks that sit side by side on the same rows, where at least one of them is narrow (a
column of cells, labels, prices, line numbers: lines of a few words), are read together,
row by row; every other block keeps Tesseract's order. Columns of an article (wide lines
on both sides) are never merged.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Word:
    text: str
    conf: float  # 0-100
    box: tuple[int, int, int, int]  # left, top, right, bottom (pixels)


@dataclass
class Line:
    words: list[Word]
    block: int
    para: int

    @property
    def box(self) -> tuple[int, int, int, int]:
        return (min(w.box[0] for w in self.words), min(w.box[1] for w in self.words),
                max(w.box[2] for w in self.words), max(w.box[3] for w in self.words))

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def conf(self) -> float:
        """Mean word confidence, weighted by word length."""
        n = sum(len(w.text) for w in self.words)
        return sum(w.conf * len(w.text) for w in self.words) / n if n else 0.0


@dataclass
class _Block:
    index: int
    lines: list[Line] = field(default_factory=list)

    @property
    def box(self) -> tuple[int, int, int, int]:
        boxes = [ln.box for ln in self.lines]
        return (min(b[0] for b in boxes), min(b[1] for b in boxes),
                max(b[2] for b in boxes), max(b[3] for b in boxes))


NARROW_WORDS = 3  # a block whose lines have at most this many words (median) is a column
ROWS_SHARED = 2  # lines on the same rows that tie two blocks into one table


def text_of(lines: list[Line]) -> str:
    """The page's text: lines in reading order, a blank line between paragraphs."""
    if not lines:
        return ""
    blocks: dict[int, _Block] = {}
    for ln in lines:
        blocks.setdefault(ln.block, _Block(ln.block)).lines.append(ln)
    groups = _tables(list(blocks.values()))
    out: list[str] = []
    for group in groups:
        if len(group) == 1:
            prev_para = None
            for ln in group[0].lines:
                if prev_para is not None and ln.para != prev_para:
                    out.append("")
                out.append(ln.text)
                prev_para = ln.para
        else:
            out += [" ".join(w.text for w in row) for row in _rows(
                [ln for b in group for ln in b.lines])]
        out.append("")
    return "\n".join(out).strip("\n") + "\n"


def tables(lines: list[Line]) -> list[tuple[tuple[int, int, int, int], list[int]]]:
    """The regions of a page that are tables (blocks side by side on common rows, one of
    them narrow): each its box and the indices in ``lines`` of the lines it holds."""
    blocks: dict[int, _Block] = {}
    for ln in lines:
        blocks.setdefault(ln.block, _Block(ln.block)).lines.append(ln)
    out = []
    for group in _tables(list(blocks.values())):
        if len(group) < 2:
            continue
        ids = {b.index for b in group}
        boxes = [b.box for b in group]
        box = (min(b[0] for b in boxes), min(b[1] for b in boxes),
               max(b[2] for b in boxes), max(b[3] for b in boxes))
        out.append((box, [i for i, ln in enumerate(lines) if ln.block in ids]))
    return out


def fuse(first: list[Line], second: list[Line], offset: tuple[int, int], block: int
         ) -> list[Line]:
    """Two readings of one region merged word by word, as rows of one block.

    ``second``'s boxes are relative to ``offset``. A word of ``second`` that overlaps
    words of ``first`` (a third of its box or more) replaces them only if it is more
    confident than each by ``BETTER``; one that overlaps none is added (``first`` missed
    it). Words of ``first`` that nothing overlaps stay."""
    dx, dy = offset
    kept = [w for ln in first for w in ln.words]
    if kept:  # a word far taller than the others is a column of cells read as vertical text
        heights = sorted(w.box[3] - w.box[1] for w in kept)
        tall = 2.5 * heights[len(heights) // 2]
        kept = [w for w in kept if w.box[3] - w.box[1] <= tall]
    for ln in second:
        for w in ln.words:
            box = (w.box[0] + dx, w.box[1] + dy, w.box[2] + dx, w.box[3] + dy)
            new = Word(w.text, w.conf, box)
            hits = [k for k in kept if _overlap(box, k.box) >= 0.33 * _area(box)
                    or _overlap(box, k.box) >= 0.33 * _area(k.box)]
            if not hits:
                kept.append(new)
            elif all(new.conf > k.conf + BETTER for k in hits):
                kept = [k for k in kept if k not in hits] + [new]
    return [Line(row, block, -1) for row in _rows([Line([w], block, -1) for w in kept])]


BETTER = 10.0  # confidence by which a word of the second reading must beat the first


def _area(b: tuple[int, int, int, int]) -> int:
    return max(1, (b[2] - b[0]) * (b[3] - b[1]))


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> int:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0


def _tables(blocks: list[_Block]) -> list[list[_Block]]:
    """Blocks grouped: those that share rows with a narrow neighbour go together (in
    the order of the first of them), every other block alone."""
    parent = list(range(len(blocks)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    narrow = [_narrow(b) for b in blocks]
    for i in range(len(blocks)):
        for j in range(i + 1, len(blocks)):
            if (narrow[i] or narrow[j]) and _side_by_side(blocks[i], blocks[j]):
                parent[find(j)] = find(i)
    groups: dict[int, list[_Block]] = {}
    for i, b in enumerate(blocks):
        groups.setdefault(find(i), []).append(b)
    return sorted(groups.values(), key=lambda g: min(b.index for b in g))


def _narrow(b: _Block) -> bool:
    counts = sorted(len(ln.words) for ln in b.lines)
    return counts[len(counts) // 2] <= NARROW_WORDS


def _side_by_side(a: _Block, b: _Block) -> bool:
    """Two blocks apart horizontally with at least ``ROWS_SHARED`` lines on common rows
    (or all their lines, for a block of one)."""
    ab, bb = a.box, b.box
    if ab[0] < bb[2] and bb[0] < ab[2]:  # they overlap horizontally: one above the other
        return False
    need = min(ROWS_SHARED, len(a.lines), len(b.lines))
    shared = 0
    for la in a.lines:
        ya0, ya1 = la.box[1], la.box[3]
        for lb in b.lines:
            yb0, yb1 = lb.box[1], lb.box[3]
            overlap = min(ya1, yb1) - max(ya0, yb0)
            if overlap > 0.5 * min(ya1 - ya0, yb1 - yb0):
                shared += 1
                break
        if shared >= need:
            return True
    return False


def _rows(lines: list[Line]) -> list[list[Word]]:
    """The words of ``lines`` in rows, top to bottom, each left to right: a line joins a
    row when it overlaps the row's height by half of the smaller of the two."""
    rows: list[tuple[int, int, list[Word]]] = []  # top, bottom, words
    for ln in sorted(lines, key=lambda ln: (ln.box[1] + ln.box[3]) / 2):
        top, bottom = ln.box[1], ln.box[3]
        for k, (rt, rb, words) in enumerate(rows):
            if min(rb, bottom) - max(rt, top) > 0.5 * min(rb - rt, bottom - top):
                rows[k] = (min(rt, top), max(rb, bottom), words + ln.words)
                break
        else:
            rows.append((top, bottom, list(ln.words)))
    rows.sort(key=lambda r: (r[0] + r[1]) / 2)
    return [sorted(words, key=lambda w: w.box[0]) for _, _, words in rows]
