"""The words Tesseract read, put in reading order.

Tesseract's automatic page segmentation cuts a page into blocks and reads them one after
the other. On an article that is right: each column is a block. On a table, a form, a
receipt or a line-numbered court filing it is wrong: the labels come out as one block and
the values as another, the line numbers apart from their lines, and a reader (or a search
for "Total 194.92") gets the words in an order that no longer says anything. Segmenting
such pages as one block instead (``--psm 6``) reads them in rows but runs the columns of
an article together; and which kind of page it is, is known only once its layout is.

So the page is read with automatic segmentation and its words are kept with their boxes.
When many of its lines are rows of cells (a short line beside a line of another block on
the same row: a label and its value, an item and its price, a number and its line), the
blocks holding them are read together, row by row; every other block keeps Tesseract's
order. Two columns of an article (long lines on both sides) are never merged.
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


NARROW_WORDS = 3  # a line of at most this many words beside another is a row of cells


def text_of(lines: list[Line]) -> str:
    """The page's text: lines in reading order, a blank line between paragraphs."""
    if not lines:
        return ""
    text = "\n".join(" ".join(w.text for w in row) for row in reading_rows(lines))
    return text.strip("\n") + "\n"


def reading_rows(lines: list[Line]) -> list[list[Word]]:
    """The page's words as the rows of its text, in reading order; an empty row between
    paragraphs and blocks. One order for the text and the searchable PDF's text layer
    (``textlayer``), so the two read alike."""
    blocks: dict[int, _Block] = {}
    for ln in lines:
        blocks.setdefault(ln.block, _Block(ln.block)).lines.append(ln)
    groups = _groups(list(blocks.values()), _table_blocks(lines))
    out: list[list[Word]] = []
    for group in groups:
        if len(group) == 1:
            prev_para = None
            for ln in group[0].lines:
                if prev_para is not None and ln.para != prev_para:
                    out.append([])
                out.append(ln.words)
                prev_para = ln.para
        else:
            out += _rows([ln for b in group for ln in b.lines])
        out.append([])
    return out


def tables(lines: list[Line]) -> list[tuple[tuple[int, int, int, int], list[int]]]:
    """The table of a page, if it has one: its box and the indices in ``lines`` of the
    lines it holds (every line of the blocks that hold its cells)."""
    blocks = _table_blocks(lines)
    if not blocks:
        return []
    ids = [i for i, ln in enumerate(lines) if ln.block in blocks]
    boxes = [lines[i].box for i in ids]
    box = (min(b[0] for b in boxes), min(b[1] for b in boxes),
           max(b[2] for b in boxes), max(b[3] for b in boxes))
    return [(box, ids)]


def _table_blocks(lines: list[Line]) -> set[int]:
    """The blocks that hold a table's cells: a line is a row of cells when a line of
    another block stands beside it on the same row and one of the two is short (a label
    and its value, an item and its price, a line number and its line, a title and its
    page number). Two columns of an article stand side by side too, but with long lines
    on both sides; a heading beside a column is one row among many. A page is a table
    (in part) when at least ``TABLE_SHARE`` of its lines are such rows."""
    cells: set[int] = set()
    blocks: set[int] = set()
    per_block: dict[int, list[int]] = {}
    for ln in lines:
        per_block.setdefault(ln.block, []).append(len(ln.words))
    # A block of cells: most of its lines short. (The narrow columns of an article have
    # short lines too, at the ends of paragraphs, but most of theirs are longer.)
    narrow = {b for b, counts in per_block.items()
              if sorted(counts)[len(counts) // 2] <= NARROW_WORDS}
    order = sorted(range(len(lines)), key=lambda i: lines[i].box[1])
    for pos, i in enumerate(order):
        a = lines[i]
        ay0, ay1 = a.box[1], a.box[3]
        for j in order[pos + 1:]:
            b = lines[j]
            by0, by1 = b.box[1], b.box[3]
            if by0 >= ay1:
                break
            if a.block == b.block or (a.box[0] < b.box[2] and b.box[0] < a.box[2]):
                continue
            if min(ay1, by1) - max(ay0, by0) <= 0.5 * min(ay1 - ay0, by1 - by0):
                continue
            if (a.block in narrow or b.block in narrow) and \
                    min(len(a.words), len(b.words)) <= NARROW_WORDS:
                cells.update((i, j))
                blocks.update((a.block, b.block))
    if len(cells) < max(3, TABLE_SHARE * len(lines)):
        return set()
    return blocks


TABLE_SHARE = 0.4


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


def _groups(blocks: list[_Block], table: set[int]) -> list[list[_Block]]:
    """The blocks in reading order: the table's blocks together (where its first block
    was), every other block alone."""
    groups: list[list[_Block]] = []
    together: list[_Block] = []
    for b in blocks:
        if b.index in table:
            if not together:
                groups.append(together)
            together.append(b)
        else:
            groups.append([b])
    return groups


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
