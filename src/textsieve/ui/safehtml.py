"""Turning archived (hostile) content into safe HTML: Markdown rendered then sanitised,
search snippets highlighted, and bar charts drawn as SVG on the server (no build step,
no script, no other host).
"""

from __future__ import annotations

import html
import re
from functools import lru_cache

try:
    import nh3
    from markdown_it import MarkdownIt
    from markupsafe import Markup
except ImportError as exc:  # an optional extra: say which, not a bare traceback
    raise ImportError("the reading room needs the server extra: "
                      "pip install 'textsieve[server]'") from exc

# Past this many characters an item's Markdown is not rendered (it would take seconds):
# its text is shown as preformatted text instead, and the full text is a link away.
MAX_RENDER_CHARS = 400_000
MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"  # private-use: never in a query's highlighting

_TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "dl", "dt", "em", "h1",
         "h2", "h3", "h4", "h5", "h6", "hr", "i", "li", "ol", "p", "pre", "s", "strong", "sub",
         "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"}
_ATTRS = {"a": {"href", "title"}, "td": {"align"}, "th": {"align"}, "ol": {"start"}}


@lru_cache(maxsize=1)
def _md() -> MarkdownIt:
    # Raw HTML in the Markdown is shown as text, never passed on; images are shown as their
    # alt text, since an <img> would make the browser ask another host.
    return MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")


def markdown(text: str) -> Markup:
    """Archived Markdown as sanitised HTML: nh3 keeps only structural tags, http(s) and
    mailto links (with rel=noopener noreferrer nofollow), and no attribute that runs or
    styles anything, whatever markdown-it let through."""
    if len(text) > MAX_RENDER_CHARS:
        return Markup("<pre>") + text[:MAX_RENDER_CHARS] + Markup("</pre>")
    raw = _md().render(text)
    clean = nh3.clean(raw, tags=_TAGS, attributes=_ATTRS, url_schemes={"http", "https", "mailto"},
                      link_rel="noopener noreferrer nofollow")
    return Markup(clean)


_MARKED = re.compile(f"{MARK_OPEN}([^{MARK_OPEN}{MARK_CLOSE}]*){MARK_CLOSE}")


def snippet(text: str) -> Markup:
    """A snippet with the matches wrapped in MARK_OPEN/MARK_CLOSE: escaped first, then the
    (balanced) marks become <mark>; stray marks from the document itself are dropped."""
    escaped = html.escape(text)
    marked = _MARKED.sub(r"<mark>\1</mark>", escaped)
    return Markup(marked.replace(MARK_OPEN, "").replace(MARK_CLOSE, ""))


def bar_chart(pairs: list[tuple[str, int]], *, label: str, width: int = 640) -> Markup:
    """Horizontal bars, one per (name, count), as inline SVG; names are escaped. Sizes are
    SVG attributes, colours come from the stylesheet (classes), so the strict CSP holds."""
    if not pairs:
        return Markup("<p class=muted>nothing yet</p>")
    top = max(n for _, n in pairs) or 1
    row, name_w, num_w = 26, 220, 70
    bar_w = width - name_w - num_w
    parts = [f'<svg class=chart role=img viewBox="0 0 {width} {row * len(pairs) + 4}" '
             f'aria-label="{html.escape(label)}"><title>{html.escape(label)}</title>']
    for i, (name, n) in enumerate(pairs):
        y = i * row + 2
        w = max(1, round(bar_w * n / top))
        short = name if len(name) <= 28 else name[:27] + "…"
        parts.append(
            f'<g><title>{html.escape(name)}: {n:,}</title>'
            f'<text class=label x="{name_w - 6}" y="{y + 18}" text-anchor="end">'
            f'{html.escape(short)}</text>'
            f'<rect class=bar x="{name_w}" y="{y + 3}" width="{w}" height="{row - 6}"/>'
            f'<text class=num x="{name_w + w + 6}" y="{y + 18}">{n:,}</text></g>')
    parts.append("</svg>")
    return Markup("".join(parts))


MAX_MONTHS = 60  # the chart shows at most the last five years of months


def month_span(series: list[tuple[str, dict[str, int]]]) -> list[str]:
    """Every month (YYYY-MM) from the first to the last one with items, gaps included, at
    most the last MAX_MONTHS of them."""
    seen = sorted({m for _, counts in series for m in counts})
    if not seen:
        return []
    y, mo = int(seen[0][:4]), int(seen[0][5:7])
    end = seen[-1]
    out = []
    while True:
        month = f"{y:04d}-{mo:02d}"
        out.append(month)
        if month >= end:
            break
        y, mo = (y + 1, 1) if mo == 12 else (y, mo + 1)
    return out[-MAX_MONTHS:]


def topic_chart(series: list[tuple[str, dict[str, int]]], months: list[str], *,
                width: int = 760) -> Markup:
    """Topic sizes over time as inline SVG: one row per topic (its label on the left), one
    bar per month, heights on one scale for all rows so rows compare. A title and a desc
    say what it shows for screen readers (the page also gives the figures as a table);
    each bar's own title gives its figure on hover. Colours come from the stylesheet."""
    if not series or not months:
        return Markup("<p class=muted>nothing yet</p>")
    top = max((counts.get(m, 0) for _, counts in series for m in months), default=0) or 1
    row, name_w, axis_h = 34, 210, 22
    slot = (width - name_w - 10) / len(months)
    height = row * len(series) + axis_h
    busiest = max(((counts.get(m, 0), label, m) for label, counts in series for m in months))
    title = "Topic sizes over time: items per topic per month"
    desc = (f"One row per topic, one bar per month from {months[0]} to {months[-1]}; an "
            f"item counts in its main topic, in the month it was published (or added). "
            f"The largest bar is {busiest[1]} in {busiest[2]} with {busiest[0]:,} items. "
            "The table after the chart gives every figure.")
    parts = [f'<svg class="chart timeline" role="img" viewBox="0 0 {width} {height}" '
             'aria-labelledby="timeline-title timeline-desc">'
             f'<title id="timeline-title">{html.escape(title)}</title>'
             f'<desc id="timeline-desc">{html.escape(desc)}</desc>']
    for i, (label, counts) in enumerate(series):
        y0 = i * row
        short = label if len(label) <= 30 else label[:29] + "…"
        parts.append(f'<g class="topic"><text class=label x="{name_w - 8}" y="{y0 + row - 12}" '
                     f'text-anchor="end">{html.escape(short)}</text>'
                     f'<line class=base x1="{name_w}" x2="{width - 10}" y1="{y0 + row - 4}" '
                     f'y2="{y0 + row - 4}"/>')
        for j, m in enumerate(months):
            n = counts.get(m, 0)
            if not n:
                continue
            h = max(1.0, (row - 8) * n / top)
            x = name_w + j * slot
            parts.append(f'<rect class=bar x="{x + 0.5:.1f}" y="{y0 + row - 4 - h:.1f}" '
                         f'width="{max(1.0, slot - 1):.1f}" height="{h:.1f}">'
                         f'<title>{html.escape(label)}, {m}: {n:,} items</title></rect>')
        parts.append("</g>")
    ticks = [j for j, m in enumerate(months) if m.endswith("-01")] or [0]
    if len(ticks) > 12:
        ticks = ticks[::-(-len(ticks) // 12)]
    for j in sorted({0, *ticks}):
        if j and (len(months) - j) * slot < 60:
            continue  # would run into the last month's label
        x = name_w + j * slot
        parts.append(f'<text class=axis x="{x:.1f}" y="{height - 6}">{months[j]}</text>')
    if len(months) > 1:
        parts.append(f'<text class=axis x="{width - 10}" y="{height - 6}" '
                     f'text-anchor="end">{months[-1]}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def sieve_plot(extra: object) -> Markup | None:
    """Why a sieved page kept what it kept (web/sieveplot.py), for its item page: an
    inline SVG built from checked numbers and escaped text only, so it is safe to embed
    as it is; None for an item that was not sieved."""
    from ..web.sieveplot import for_metadata

    drawn = for_metadata(extra) if isinstance(extra, dict) else None
    return Markup(drawn) if drawn else None
