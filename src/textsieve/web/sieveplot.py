"""Why the sieve kept what it kept: the page's topic score along its blocks, as SVG.

``--html sieve`` stores a small profile in the document's metadata (``sieve_profile``:
the score of every block, pooled to at most MAX_POINTS points, the kept spans, the
threshold a block had to reach, the headings), so the picture can be drawn later from
the archive as well as right after an extraction: ``textsieve extract --html sieve
--topic T --explain PAGE`` prints it, and the reading room shows it on a sieved item's
page.

The SVG is safe to embed in a page: it is built here from numbers (every one checked to
be a finite number) and escaped text, with presentation attributes only (no script, no
style element or attribute, no link), so a hostile page cannot put markup in it and the
reading room's strict Content-Security-Policy holds.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

MAX_POINTS = 400  # a profile longer than this is pooled (the maximum of each bin)
MAX_HEADS = 40  # headings kept in a profile, to mark along the axis
WIDTH, HEIGHT = 760, 240
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 34, 44  # plot margins


def profile_record(scores: Sequence[float], spans: Sequence[tuple[int, int]],
                   threshold: float | None, heads: Sequence[tuple[int, str]]) -> dict[str, Any]:
    """The compact, JSON-ready profile of one sieved page: ``scores`` per block, the kept
    ``spans`` (first, last block), the ``threshold`` a block had to reach (None for the
    density sieve, which has none) and ``heads`` (block, heading text)."""
    n = len(scores)
    size = max(1, math.ceil(n / MAX_POINTS))
    pooled = [round(max(scores[i:i + size]), 3) for i in range(0, n, size)]
    return {"blocks": n, "bin": size, "scores": pooled,
            "spans": [[int(a), int(b)] for a, b in spans],
            "threshold": None if threshold is None else round(threshold, 3),
            "heads": [[int(i), text[:60]] for i, text in heads[:MAX_HEADS]]}


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _checked(record: Any) -> dict[str, Any] | None:
    """The record with every field of the right type, or None: it comes back from the
    archive, where anything may have been written."""
    if not isinstance(record, Mapping):
        return None
    n, size = record.get("blocks"), record.get("bin")
    raw = record.get("scores")
    if not (isinstance(n, int) and isinstance(size, int) and size >= 1
            and isinstance(raw, list) and raw):
        return None
    scores = [_num(v) for v in raw[:MAX_POINTS * 2]]
    if any(v is None for v in scores):
        return None
    spans = []
    for span in record.get("spans") or []:
        if (isinstance(span, list) and len(span) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in span)):
            spans.append((span[0], span[1]))
    heads = []
    for head in record.get("heads") or []:
        if (isinstance(head, list) and len(head) == 2 and isinstance(head[0], int)
                and isinstance(head[1], str)):
            heads.append((head[0], head[1]))
    return {"blocks": n, "bin": size, "scores": scores, "spans": spans,
            "threshold": _num(record.get("threshold")), "heads": heads[:MAX_HEADS]}


def svg(record: Any, *, topic: str, source: str = "blocks", lines: int = 0) -> str:
    """The picture of a profile (see profile_record) as a standalone SVG document
    fragment. A page answered from its own Recipe data (``source`` "recipe") or a
    missing or malformed profile gets a one-line picture that says so."""
    title = f"Topic sieve: {topic}"
    data = _checked(record) if source != "recipe" else None
    if data is None:
        say = (f"Answered from the page's own Recipe data ({lines} lines): no block was "
               "scored." if source == "recipe" else "No profile was recorded for this page.")
        return _frame(title, say, [f'<text x="{LEFT}" y="{TOP + 24}" font-size="14" '
                                   f'fill="#333">{html.escape(say)}</text>'], height=70)
    scores, size, n = data["scores"], data["bin"], data["blocks"]
    top = max(max(scores), data["threshold"] or 0.0, 1e-9)
    low = min(0.0, min(scores))
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = w / max(1, len(scores) - 1) if len(scores) > 1 else 0.0

    def x(point: float) -> float:
        return LEFT + point * step

    def y(v: float) -> float:
        return TOP + h - (v - low) / (top - low) * h

    parts: list[str] = []
    kept = 0
    for a, b in data["spans"]:
        a, b = max(0, a), min(n - 1, b)
        if a > b:
            continue
        kept += b - a + 1
        x0, x1 = x(a / size) - step / 2, x(b / size) + step / 2
        x0, x1 = max(LEFT, x0), min(WIDTH - RIGHT, x1)
        parts.append(f'<rect class="span" x="{x0:.1f}" y="{TOP}" width="{max(1.0, x1 - x0):.1f}" '
                     f'height="{h}" fill="#cde8c8"><title>kept: blocks {a + 1} to {b + 1}'
                     '</title></rect>')
    parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(0):.1f}" y2="{y(0):.1f}" '
                 'stroke="#999" stroke-width="1"/>')
    if data["threshold"] is not None:
        ty = y(data["threshold"])
        parts.append(f'<line class="threshold" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{ty:.1f}" '
                     f'y2="{ty:.1f}" stroke="#c0392b" stroke-width="1" stroke-dasharray="4 3">'
                     f'<title>threshold {data["threshold"]:.2f}</title></line>')
    points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(scores))
    if len(scores) == 1:
        points += f" {x(0) + 1:.1f},{y(scores[0]):.1f}"
    parts.append(f'<polyline class="score" points="{points}" fill="none" stroke="#1f5f99" '
                 'stroke-width="1.5" stroke-linejoin="round"/>')
    for i, text in data["heads"]:
        if 0 <= i < n:
            hx = x(i / size)
            parts.append(f'<line class="head" x1="{hx:.1f}" x2="{hx:.1f}" y1="{TOP + h}" '
                         f'y2="{TOP + h + 6}" stroke="#555" stroke-width="1">'
                         f'<title>heading: {html.escape(text)}</title></line>')
    parts.append(f'<text x="{LEFT}" y="{HEIGHT - 10}" font-size="12" fill="#333">block 1'
                 '</text>')
    parts.append(f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 10}" font-size="12" fill="#333" '
                 f'text-anchor="end">block {n}</text>')
    parts.append(f'<text x="{LEFT - 6}" y="{y(top) + 4:.1f}" font-size="11" fill="#333" '
                 f'text-anchor="end">{top:.1f}</text>')
    parts.append(f'<text x="{LEFT - 6}" y="{y(low) + 4:.1f}" font-size="11" fill="#333" '
                 f'text-anchor="end">{low:.1f}</text>')
    desc = (f"Score of each of the page's {n} blocks"
            + (f" (the highest of every {size})" if size > 1 else "")
            + (f"; kept: {kept} blocks, shaded" if kept else "; nothing kept")
            + (f"; a block had to reach {data['threshold']:.2f} (dashed)"
               if data["threshold"] is not None else "") + ".")
    parts.insert(0, f'<text x="{LEFT}" y="20" font-size="13" fill="#333">'
                    f'{html.escape(desc)}</text>')
    return _frame(title, desc, parts)


def _frame(title: str, desc: str, parts: list[str], height: int = HEIGHT) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="sieve-plot" role="img" '
            f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
            'aria-labelledby="sieve-title sieve-desc" font-family="sans-serif">'
            f'<title id="sieve-title">{html.escape(title)}</title>'
            f'<desc id="sieve-desc">{html.escape(desc)}</desc>'
            f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#fff"/>'
            + "".join(parts) + "</svg>")


def for_metadata(extra: Mapping[str, Any]) -> str | None:
    """The picture for a document's metadata ``extra``, or None when it was not sieved."""
    topic = extra.get("sieve_topic")
    if not isinstance(topic, str):
        return None
    source = extra.get("sieve_source")
    lines = extra.get("sieve_blocks")
    return svg(extra.get("sieve_profile"), topic=topic,
               source=source if isinstance(source, str) else "blocks",
               lines=lines if isinstance(lines, int) else 0)
