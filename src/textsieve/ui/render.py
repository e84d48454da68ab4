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
