"""Main-content extraction and page metadata (textsieve.web) on hand-written pages.

Each page carries the usual boilerplate (navigation, sidebar, footer, cookie banner,
comments, related links) around content with structure; the tests check that the content
and its structure survive and that the boilerplate does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from textsieve.bytesource import Source
from textsieve.core import extract_source
from textsieve.kernels.html import HtmlWalker, parse_html
from textsieve.model import Document
from textsieve.options import Options
from textsieve.render import Builder
from textsieve.web import extract_main, main_text
from textsieve.web.article import article
from textsieve.web.region import scope

_PARA = ("The harbour authority approved the new breakwater after two years of "
         "surveys, public hearings and a long argument about the cost of stone. ")

_NAV = """
<header class="site-header"><a href="/">Harbour Gazette</a>
  <nav><ul><li><a href="/news">News</a></li><li><a href="/sport">Sport</a></li>
  <li><a href="/weather">Weather</a></li><li><a href="/jobs">Jobs board</a></li></ul></nav>
</header>
<div id="cookie-banner" class="cookie-consent">We use cookies to improve your
  experience. <button>Accept all cookies</button></div>
"""
_FOOTER = """
<footer><p>Copyright 2024 Harbour Gazette Media. All rights reserved.</p>
  <ul><li><a href="/privacy">Privacy policy</a></li><li><a href="/terms">Terms of use</a>
  </li></ul></footer>
"""

ARTICLE = f"""<!DOCTYPE html>
<html lang="en-GB"><head>
<meta charset="utf-8">
<title>Breakwater approved after long debate | Harbour Gazette</title>
<meta property="og:title" content="Breakwater approved after long debate">
<meta property="og:site_name" content="Harbour Gazette">
<meta name="description" content="The harbour gets its breakwater.">
<link rel="canonical" href="https://gazette.example/news/breakwater-approved">
<script type="application/ld+json">
{{"@context": "https://schema.org", "@type": "NewsArticle",
  "headline": "Breakwater approved after long debate",
  "author": {{"@type": "Person", "name": "Mara Lindqvist"}},
  "datePublished": "2024-03-14T09:30:00+01:00"}}
</script>
</head><body>
{_NAV}
<div class="layout">
<main><article>
  <h1>Breakwater approved after long debate</h1>
  <p class="byline">By Mara Lindqvist</p>
  <p>{_PARA}The council voted nine to four in favour of the granite design.</p>
  <h2>What happens next</h2>
  <p>{_PARA}Construction starts in the spring and should take eighteen months.</p>
  <ul><li>Quarry contracts are signed in April.</li>
      <li>Dredging of the outer channel begins in May.</li>
      <li>The fishing fleet moves to the north quay during the works.</li></ul>
  <table><tr><th>Phase</th><th>Cost in millions</th></tr>
         <tr><td>Foundations</td><td>12.5</td></tr>
         <tr><td>Armour stone</td><td>8.25</td></tr></table>
  <p>{_PARA}Opponents say the money would be better spent on the lifeboat station.</p>
</article>
<section id="comments" class="comments-area"><h3>42 comments</h3>
  <div class="comment"><p>Harold99 wrote: totally pointless waste of ratepayer money,
  I will never vote for this council again.</p></div></section>
</main>
<aside class="sidebar"><h3>Most read</h3><ul>
  <li><a href="/a">Lighthouse keeper retires at ninety</a></li>
  <li><a href="/b">Seal pup rescued from marina slipway</a></li></ul>
  <div class="newsletter">Subscribe to our newsletter for daily headlines</div></aside>
</div>
{_FOOTER}
</body></html>"""

DOCS = f"""<!DOCTYPE html>
<html lang="en"><head><title>Configuring the cache - Widgetlib documentation</title>
<meta name="author" content="Widgetlib maintainers"></head><body>
{_NAV}
<div class="wrapper">
<div class="sidebar-nav"><ul>
  <li><a href="/docs/install">Installation</a></li><li><a href="/docs/cache">Cache</a></li>
  <li><a href="/docs/api">API reference</a></li><li><a href="/docs/faq">FAQ</a></li></ul></div>
<div class="document" role="main">
  <h1>Configuring the cache</h1>
  <p>Widgetlib keeps rendered widgets in a cache so that repeated requests are served
  without recomputing the layout. The cache is configured once, at start-up, and every
  worker process shares the same settings file.</p>
  <h2>Enabling the cache</h2>
  <p>Pass a cache directory and a size limit to the constructor. Sizes are in bytes and
  the oldest entries are evicted first when the limit is reached.</p>
  <pre><code class="language-python">from widgetlib import Cache

cache = Cache("/var/cache/widgets", max_bytes=50_000_000)
cache.warm()</code></pre>
  <p>The <code>warm</code> call loads the index into memory; skipping it only makes the
  first requests slower, never wrong.</p>
  <h2>Eviction settings</h2>
  <ol><li>Set <code>max_bytes</code> to bound the disk usage.</li>
      <li>Set <code>max_age</code> to drop entries older than a number of seconds.</li></ol>
</div></div>
{_FOOTER}
</body></html>"""

_ITEMS = [("Cedar garden bench", "Weatherproof cedar bench seating three adults, "
           "oiled finish, assembly in twenty minutes with the included tools."),
          ("Oak potting table", "Solid oak potting table with a zinc top, two shelves "
           "and hooks for hand tools along the front rail."),
          ("Teak folding chair", "Folding teak chair with brass hinges that stores flat "
           "against a shed wall over the winter months."),
          ("Larch raised bed", "Raised larch bed kit, one metre by two, with corner posts "
           "that slot together without screws or nails.")]

LISTING = f"""<!DOCTYPE html>
<html lang="en"><head><title>Garden furniture - Greenshed Store</title></head><body>
{_NAV}
<div class="page">
<div class="filters"><h4>Filter</h4><ul><li><a href="?c=wood">Wood</a></li>
  <li><a href="?c=metal">Metal</a></li><li><a href="?c=plastic">Plastic</a></li></ul></div>
<div class="content"><h1>Garden furniture</h1>
<p>Hand-finished outdoor furniture made from sustainably grown timber.</p>
<ul class="products">
{"".join(f'<li class="product"><h2><a href="/p/{i}">{t}</a></h2><p>{d}</p>'
         f'<span class="price">{20 + i * 15} EUR</span></li>' for i, (t, d) in enumerate(_ITEMS))}
</ul></div></div>
{_FOOTER}
</body></html>"""


def _main(html: str, url: str | None = "https://gazette.example/news/breakwater-approved"):
    out, doc = Builder(), Document()
    extract_main(html, url, out, doc)
    text, md, _ = out.build()
    return text, md, doc


def test_article_keeps_content_drops_boilerplate() -> None:
    text = main_text(ARTICLE)
    for kept in ("council voted nine to four", "Construction starts in the spring",
                 "Dredging of the outer channel", "Armour stone", "lifeboat station"):
        assert kept in text, kept
    for dropped in ("We use cookies", "Jobs board", "Harold99", "Lighthouse keeper",
                    "Subscribe to our newsletter", "All rights reserved", "Privacy policy"):
        assert dropped not in text, dropped


def test_article_markdown_structure_and_metadata() -> None:
    _text, md, doc = _main(ARTICLE)
    assert "## What happens next" in md
    assert "- Dredging of the outer channel begins in May." in md
    assert "| Phase | Cost in millions |" in md and "| Foundations | 12.5 |" in md
    assert doc.title == "Breakwater approved after long debate"
    md_ = doc.metadata
    assert md_.author == "Mara Lindqvist"
    assert md_.created is not None and md_.created.startswith("2024-03-14")
    assert md_.language == "en-GB"
    assert md_.extra["canonical_url"] == "https://gazette.example/news/breakwater-approved"
    assert md_.extra["sitename"] == "Harbour Gazette"
    assert md_.extra["description"] == "The harbour gets its breakwater."


def test_documentation_code_blocks() -> None:
    text, md, doc = _main(DOCS, "https://widgetlib.example/docs/cache")
    assert '```python\nfrom widgetlib import Cache\n\ncache = Cache(' in md
    assert "## Enabling the cache" in md
    assert "1. Set max_bytes to bound the disk usage." in md
    assert "oldest entries are evicted first" in text
    for dropped in ("API reference", "Accept all cookies", "Privacy policy"):
        assert dropped not in text, dropped
    assert doc.metadata.author == "Widgetlib maintainers"
    assert doc.title and doc.title.startswith("Configuring the cache")


def test_listing_keeps_every_item() -> None:
    text = main_text(LISTING, "https://greenshed.example/garden-furniture")
    for title, desc in _ITEMS:
        assert title in text, title
        assert desc in text, desc
    for dropped in ("Plastic", "Jobs board", "Accept all cookies", "Terms of use"):
        assert dropped not in text, dropped


def test_empty_and_textless_pages() -> None:
    assert main_text("") == ""
    assert main_text("<html><body><nav><a href='/'>Home</a></nav></body></html>").strip() \
        in ("", "Home")


def test_html_extractor_modes(tmp_path: Path) -> None:
    """--html main through the normal extractor; full keeps the boilerplate."""
    page = tmp_path / "article.html"
    page.write_text(ARTICLE, encoding="utf-8")
    main = extract_source(Source.from_path(page), Options(html="main"))
    full = extract_source(Source.from_path(page), Options(html="full"))
    auto = extract_source(Source.from_path(page), Options())  # a local file: full text
    assert "council voted nine to four" in main.text and "We use cookies" not in main.text
    assert "We use cookies" in full.text and "We use cookies" in auto.text
    assert main.metadata.author == "Mara Lindqvist"


def test_auto_mode_is_main_for_fetched_pages() -> None:
    src = Source.from_bytes(ARTICLE.encode("utf-8"), "breakwater-approved")
    src.url = "https://gazette.example/news/breakwater-approved"
    doc = extract_source(src, Options())
    assert "council voted nine to four" in doc.text
    assert "Jobs board" not in doc.text and "We use cookies" not in doc.text
    assert doc.metadata.extra["canonical_url"].endswith("/breakwater-approved")


def test_wrapper_named_like_boilerplate_is_not_dropped() -> None:
    """A class word (sidebar) on the wrapper of the whole content must not empty the page."""
    page = (ARTICLE.replace('<div class="layout">', '<div class="layout with-sidebar">')
            .replace("<main>", "<div>").replace("</main>", "</div>"))
    text = main_text(page)
    assert "council voted nine to four" in text and "lifeboat station" in text
    region = " ".join(article(scope(parse_html(page))).element.itertext())  # ours alone
    assert "council voted nine to four" in region and "lifeboat station" in region
    assert "Jobs board" not in region and "We use cookies" not in region


def test_listing_without_landmark_on_grid_of_cards() -> None:
    """Cards in divs (no list markup, no <main>): every card is kept, filters are not."""
    cards = "".join(f'<div class="card"><h3><a href="/p/{i}">{t}</a></h3><div>{d}</div></div>'
                    for i, (t, d) in enumerate(_ITEMS))
    page = LISTING.replace('<ul class="products">', f'<div class="grid">{cards}</div><ul>')
    text = main_text(page)
    for title, desc in _ITEMS:
        assert title in text and desc in text
    assert "Plastic" not in text


def test_title_site_name_stripped() -> None:
    from textsieve.web.main import strip_site_name

    assert strip_site_name("Breakwater approved | Harbour Gazette", None) == "Breakwater approved"
    assert strip_site_name("Harbour Gazette - Breakwater approved after a long debate today",
                           "Harbour Gazette") == "Breakwater approved after a long debate today"
    assert strip_site_name("Python: a practical guide", None) == "Python: a practical guide"
    long_title = "Cats – the complete illustrated guide to feline care and feeding"
    assert strip_site_name(long_title, None) == long_title


# -- hidden content ----------------------------------------------------------------------
_STORY = ("The lifeboat crew launched twice on Sunday, first to a yacht that had lost its "
          "rudder off the point and then to a swimmer caught by the ebb near the pier. ")
_PARA2 = ("Volunteers train every Tuesday evening in the bay, and the station is raising "
          "money for a new tractor to haul the boat across the shingle at low water. ")

HIDDEN_WRAPPER = f"""<!DOCTYPE html>
<html lang="en"><head><title>Two rescues in one day | Coast News</title></head><body>
<header><nav><a href="/">Home</a> <a href="/local">Local</a> <a href="/sport">Sport</a></nav>
</header>
<div class="layout">
 <article class="story">
  <h1>Two rescues in one day for the lifeboat crew</h1>
  <p>{_STORY}</p>
  <p>{_PARA2}</p>
 </article>
 <div class="paywall-full" style="display: none">
  <h2>Premium archive</h2>
  {''.join(f'<p>Archive story number {i}: {_STORY * 2}</p>' for i in range(12))}
 </div>
 <div class="offer" hidden>
  {''.join(f'<p>Subscriber extra {i}. {_PARA2 * 2}</p>' for i in range(8))}</div>
 <div class="overlay" style="visibility: hidden"><p>Overlay copy. {_PARA2 * 10}</p></div>
</div>
<footer><p>Coast News, 12 Quay Street. All rights reserved.</p></footer>
</body></html>"""

HIDDEN_MAIN = f"""<!DOCTYPE html>
<html lang="en"><head><title>Two rescues in one day</title></head><body>
<div class="site">
 <main style="visibility:hidden"><h1>Loading the app</h1>
   {''.join(f'<p>Template card {i}. {_STORY * 2}</p>' for i in range(10))}</main>
 <div class="content"><article><h1>Two rescues in one day for the lifeboat crew</h1>
  <p>{_STORY}</p><p>{_PARA2}</p></article></div>
</div></body></html>"""



@pytest.mark.parametrize("page", [
    HIDDEN_WRAPPER,
    HIDDEN_MAIN,
    HIDDEN_MAIN.replace('<main style="visibility:hidden">', '<main style="display:none">'),
    HIDDEN_MAIN.replace('<main style="visibility:hidden">', '<div style="display: none"><main>')
    .replace("</main>", "</main></div>"),
], ids=["hidden-wrappers", "hidden-main", "display-none-main", "main-in-hidden-div"])
def test_hidden_text_neither_wins_nor_shows(page: str) -> None:
    """Text a browser does not show (a paywall's display:none copy, a hidden template)
    is in no candidate's count and not in the output; the visible story is, never empty."""
    text = main_text(page)
    assert "The lifeboat crew launched twice on Sunday" in text
    assert "Volunteers train every Tuesday evening" in text
    for hidden in ("Archive story", "Subscriber extra", "Template card", "Loading the app",
                   "Overlay copy"):
        assert hidden not in text
    assert text.count("Volunteers train") == 1


def test_candidate_that_renders_to_nothing_gives_way() -> None:
    """Never empty: a candidate counted with words the renderer does not show (options
    of a datalist, a town picker) gives way to the next candidate."""
    from textsieve.web.main import _render_best

    picker = parse_html("<html><body><main><datalist id='towns'>"
                        + "".join(f"<option>Town number {i}</option>" for i in range(200))
                        + "</datalist></main></body></html>").find(".//main")
    story = parse_html(f"<html><body><article><p>{_STORY}</p></article></body></html>")
    out = Builder()
    _render_best([lambda: picker, lambda: story.find(".//article")], out)
    assert out.text().startswith("The lifeboat crew launched twice")


_SPEC = ("Frame of 6061 aluminium with internal cable routing, 1x12 drivetrain, hydraulic "
         "disc brakes front and rear, and tubeless-ready wheels on 29 inch rims. ")


def test_content_behind_a_tab_or_in_a_streamed_block_is_kept() -> None:
    """Hidden until a click (a product's tab panels) or until a script moves it (React's
    streamed <div hidden id="S:0">) is content a reader sees: it is kept, and counted."""
    page = f"""<!DOCTYPE html><html lang="en"><head><title>Trail bike T2</title></head><body>
<header><nav><a href="/">Shop</a> <a href="/bikes">Bikes</a></nav></header>
<main><h1>Trail bike T2</h1><p class="price">1,499 pounds</p>
<ul class="tabs"><li><a href="#d">Description</a></li>
<li><a href="#s">Specification</a></li></ul>
<div id="d" class="tab-pane active"><p>A light trail bike for long days. {_SPEC}</p></div>
<div id="s" class="tab-pane" style="display:none"><p>Specification in full. {_SPEC * 3}</p>
</div>
<div role="tabpanel" hidden><p>Delivery and returns: free delivery in five working days,
and thirty days to change your mind.</p></div>
<h2>Reviews</h2><template id="B:0"></template>
</main>
<div hidden id="S:0"><p>Riders' verdict. {_SPEC * 2}</p></div>
<footer><p>Trail Shop Ltd. All rights reserved.</p></footer></body></html>"""
    text = main_text(page)
    for kept in ("A light trail bike for long days", "Specification in full",
                 "free delivery in five", "Riders' verdict"):
        assert kept in text, kept
    assert "All rights reserved" not in text


# -- a <main> that wraps the whole page ---------------------------------------------------
_ARTICLE = f"""<article class="post">
   <h1>Why the harbour wall needs new stone</h1>
   <p class="dek">An engineer explains what the winter storms did to the granite.</p>
   {''.join(f'<p>{s}</p>' for s in [
     "The harbour wall was built in 1887 from granite quarried two miles inland, and for "
     "most of its life it needed little more than new mortar every thirty years.",
     "Three storms last winter changed that: waves lifted the capping stones on the "
     "seaward side and opened a crack that now runs forty metres along the parapet.",
     "Engineers surveyed the wall in March with a drone and divers, and found that the "
     "footings had been scoured by the tide where the old sand bar used to protect them.",
     "The repair plan replaces the capping with heavier blocks, pins them with stainless "
     "steel dowels, and places rock armour along the foot of the wall to break the waves.",
     "Work can only happen between April and September, when the weather is calm enough "
     "for the crane barge to stay on station through a full tide.",
   ])}
  </article>"""

WHOLE_MAIN = f"""<!DOCTYPE html>
<html lang="en"><head><title>Why the harbour wall needs new stone</title></head>
<body><main id="app" class="page">
 <div class="topbar"><a href="/">Quay Works</a>
  <ul class="links"><li><a href="/projects">Projects</a></li><li><a href="/about">About us</a></li>
  <li><a href="/careers">Careers</a></li><li><a href="/contact">Contact</a></li></ul></div>
 <div class="hero"><p>Engineering for the coast since 1952</p></div>
 {_ARTICLE}
 <div class="rail">
  <h3>More from Quay Works</h3>
  <ul>{''.join(f'<li><a href="/p/{i}">{t}</a></li>' for i, t in enumerate([
    "Dredging the inner basin without closing the port",
    "How we rebuilt the ferry ramp in six weeks",
    "Choosing timber for a pier that lasts a century",
    "A new slipway for the fishing fleet",
    "Monitoring scour with sonar",
    "The lighthouse restoration, step by step"]))}</ul>
 </div>
 <div class="box-signup"><h3>Get our quarterly letter</h3>
  <p>Project news and engineering notes, four times a year. No spam.</p>
  <p><a href="/letter">Sign me up</a></p></div>
 <div class="testimonials"><h3>What our clients say</h3>
  <blockquote>"Quay Works delivered the breakwater on time and on budget." Port of Ness</blockquote>
  <blockquote>"Their divers found problems nobody else had seen." Harbour Trust</blockquote></div>
 <div class="bottom"><p>Quay Works Ltd, Unit 4, Dock Road. Registered in Scotland.</p>
  <ul class="links"><li><a href="/privacy">Privacy</a></li><li><a href="/terms">Terms</a></li>
  <li><a href="/cookies">Cookies</a></li></ul></div>
</main></body></html>"""

_CARDS = "".join(
    f'<div class="card"><h2><a href="/boats/{i}">{name}</a></h2><p>{desc}</p>'
    f'<p class="price">{price} pounds</p></div>'
    for i, (name, desc, price) in enumerate([
        ("Harbour skiff, 4.2 m",
         "Clinker-built larch on oak, with oars and a small sail rig.", 3200),
        ("Crabbing dinghy, 3.6 m",
         "Glass fibre hull, stable for children, with a road trailer.", 950),
        ("Day sailer, 5.5 m",
         "Gaff rig, tan sails, outboard well and a cuddy for two.", 11500),
        ("Fishing launch, 6.1 m",
         "Inboard diesel, wheelhouse, echo sounder and two pot haulers.", 18400),
        ("Rowing gig, 9.8 m",
         "Six oars, cox seat, built to the Cornish pilot gig pattern.", 21000),
        ("Canoe, 4.8 m",
         "Cedar strip with epoxy, two paddles and a spray deck.", 2100),
    ]))
WHOLE_MAIN_LISTING = f"""<!DOCTYPE html>
<html lang="en"><head><title>Boats for sale | Quay Works</title></head>
<body><main id="app" class="page">
 <div class="topbar"><a href="/">Quay Works</a>
  <ul class="links"><li><a href="/projects">Projects</a></li><li><a href="/about">About us</a></li>
  <li><a href="/careers">Careers</a></li><li><a href="/contact">Contact</a></li>
  <li><a href="/yard">The boatyard</a></li>
  <li><a href="/moorings">Moorings and storage</a></li></ul></div>
 <h1>Boats for sale</h1>
 <div class="grid">{_CARDS}</div>
 <div class="rail">
  <h3>More from Quay Works</h3>
  <ul>{''.join(f'<li><a href="/p/{i}">{t}</a></li>' for i, t in enumerate([
    "Dredging the inner basin without closing the port",
    "How we rebuilt the ferry ramp in six weeks",
    "Choosing timber for a pier that lasts a century",
    "A new slipway for the fishing fleet",
    "Monitoring scour with sonar",
    "The lighthouse restoration, step by step"]))}</ul>
 </div>
 <div class="box-signup"><h3>Get our quarterly letter</h3>
  <p>Project news and engineering notes, four times a year. No spam.</p>
  <p><a href="/letter">Sign me up</a></p></div>
 <div class="testimonials"><h3>What our clients say</h3>
  <blockquote>"Quay Works delivered the breakwater on time and on budget." Port of Ness</blockquote>
  <blockquote>"Their divers found problems nobody else had seen." Harbour Trust</blockquote></div>
 <div class="bottom"><p>Quay Works Ltd, Unit 4, Dock Road. Registered in Scotland.</p>
  <ul class="links"><li><a href="/privacy">Privacy</a></li><li><a href="/terms">Terms</a></li>
  <li><a href="/cookies">Cookies</a></li></ul></div>
</main></body></html>"""


_CHROME = ("Careers", "Dredging the inner basin", "lighthouse restoration", "quarterly letter",
           "Sign me up", "on time and on budget", "What our clients say",
           "Registered in Scotland", "Privacy")


@pytest.mark.parametrize("page", [WHOLE_MAIN, WHOLE_MAIN_LISTING], ids=["article", "listing"])
def test_article_of_a_main_that_is_the_whole_page_is_pruned(page: str) -> None:
    """A <main> around the whole page says nothing: our article must shed the top bar, the
    more-from-us rail, the sign-up box, testimonials and the legal line."""
    out = Builder()
    HtmlWalker(out).render(article(scope(parse_html(page))).element)
    text = out.text()
    for chrome in _CHROME:
        assert chrome not in text, chrome
    for content in ("Work can only happen between April", "Harbour skiff, 4.2 m",
                    "Clinker-built larch on oak", "11500 pounds"):
        assert content in text or content not in page


def test_main_text_of_a_whole_page_main_article() -> None:
    text = main_text(WHOLE_MAIN)
    assert "The harbour wall was built in 1887" in text
    assert "Work can only happen between April" in text
    for chrome in _CHROME:
        assert chrome not in text, chrome


def test_page_behind_a_loading_guard_is_not_empty() -> None:
    """Next.js and other apps hide the whole page (visibility:hidden) until their styles
    load; a browser shows it a moment later, so its text is the page's, not hidden."""
    page = f"""<!DOCTYPE html><html lang="en"><head><title>Tides</title>
<script>window.__NEXT_DATA__ = {{"props": {{"page": "tides"}}}};</script></head>
<body><div id="__next"><div style="visibility:hidden;min-height:100vh">
<header><nav><a href="/">Home</a> <a href="/tides">Tides</a></nav></header>
<main><article><h1>Two rescues in one day</h1><p>{_STORY}</p><p>{_PARA2}</p></article></main>
<footer><p>Coast News</p></footer></div></div>
<script>self.__next_f.push([1, "hydrate"]);</script></body></html>"""
    text = main_text(page)
    assert "The lifeboat crew launched twice on Sunday" in text
    assert "Volunteers train every Tuesday evening" in text


def test_code_is_emptied_before_trafilatura_but_json_ld_and_tails_stay() -> None:
    """Script and style text is emptied before the candidates are built (speed: every
    trafilatura copy carried it); JSON-LD, which trafilatura's fallbacks read, and the
    text after a script, which a reader sees, must survive."""
    from textsieve.web.main import _empty_code

    root = parse_html(
        "<html><head><style>p{color:red}</style>"
        '<script type="application/LD+JSON">{"@type": "NewsArticle"}</script></head>'
        "<body><p>Before <script>var bundle = 'x'.repeat(9);</script>after the script.</p>"
        '<script type="module">import "./app.js";</script>'
        '<script type="application/json" id="__DATA__">{"a": 1}</script></body></html>')
    _empty_code(root)
    scripts = {s.get("type"): s.text for s in root.iter("script")}
    assert scripts[None] is None and scripts["module"] is None
    assert scripts["application/LD+JSON"] == '{"@type": "NewsArticle"}'
    assert scripts["application/json"] == '{"a": 1}'
    assert next(root.iter("style")).text is None
    assert "".join(root.find("body").itertext()).strip().startswith("Before after the script.")


# -- article conventions (tests/fixtures/web; README.md there says where each page is from) -

WEB = Path(__file__).parent / "fixtures" / "web"

# Real pages, cut small from the development sets (real_*.html): per page the URL it was
# saved from, what a reader reads (kept, in reading order) and what the page's frame and
# chrome say (dropped).
REAL: dict[str, tuple[str, list[str], list[str]]] = {
    # A blog post: a share box and a "Related" box of three teasers inside the body, a
    # comment thread and its form under it, the next post's link marked rel="next".
    "real_wptavern.html": (
        "https://wptavern.com/stack-overflow-jobs-data-shows-reactjs-skills-in-high-demand"
        "-wordpress-market-oversaturated-with-developers",
        ["Stack Overflow published its analysis of 2017 hiring trends",
         "I wonder how many of these skills are no longer listed",  # a quoted comment
         "These are both highly portable skills that are in demand on the web."],
        ["Stack Overflow Jobs Data Shows ReactJS",  # the headline: metadata
         "Sarah Gooding", "March 9, 2017",  # byline and dateline: metadata
         "Share this", "Click to email this",  # the share box
         "Related", "Stack Overflow Documentation is Now in Beta",  # the related box
         "There are 13 comments", "One nuance of over saturation",  # the thread
         "Your email address will not be published", "Notify me of follow-up comments",
         "Next Post", "WeFoster", "Posted in News", "Secondary Menu", "Currently On Tap"]),
    # A news story: video and photo captions inside the body, the dateline and comment
    # count under the headline, the share bar, "More on this story", the promo column.
    "real_bbc.html": (
        "http://www.bbc.com/news/world-us-canada-33647706",
        ["Mr Obama told the BBC that gun control was his biggest frustration",  # caption
         "President Barack Obama has admitted that his failure to pass",
         "Kenya is getting ready to welcome the US president",  # a photo's caption
         "Kenya trip",  # a crosshead
         "the first US president to address the African Union"],
        ["Obama admits US gun laws are his 'biggest frustration'",  # the headline
         "24 July 2015", "From the section", "941 comments",
         "Share this story", "More on this story", "Top Stories", "Features & Analysis",
         "Hulk Hogan", "Entertainment & Arts"]),
    # A French news story: the cookie notice, the subscription offer, the signature line
    # (byline and dateline), "Lire aussi :" and "Lire :" pointers inside the body, the
    # author's box under it.
    "real_lemonde.html": (
        "http://www.lemonde.fr/pixels/article/2015/05/04/que-contient-la-loi-sur-le-"
        "renseignement_4627068_4408996.html",
        ["Les députés ont, sans surprise, adopté à une large majorité",
         "Une des dispositions les plus contestées de ce projet de loi",
         "De nouveaux outils et méthodes de collecte",
         "dont les données pourront être conservées pendant vingt ans"],
        ["Le projet de loi sur le renseignement massivement approuvé",  # the headline
         "En poursuivant votre navigation", "cookies", "S'abonner au Monde",
         "04.05.2015", "Mis à jour", "Martin Untersinger",
         "Lire aussi", "Les critiques de la CNIL contre le projet de loi",
         "Que sont les IMSI-catchers", "Journaliste au Monde", "Suivre ce journaliste"]),
    # A guide: a pull quote repeating a later paragraph's sentence, a sponsor's box and a
    # newsletter box at the end of the body, a cookie bar, "For more finance tips" cards.
    "real_uschamber.html": (
        "https://www.uschamber.com/co/run/finance/free-accounting-tools-for-small-businesses",
        ["As a small business owner, you know how quickly expenses can add up",
         "Wave: best free accounting software for invoicing and estimates",
         "Brightbook is a free online accounting system",
         "Popular accounting tools with free trials",
         "If free software for small business accounting",
         "FreshBooks: Automate time tracking"],
        ["Brought to you by", "Payments for Modern Businesses", "Coinbase Business",
         "Subscribe to our newsletter", "By signing up you agree",
         "By continuing on our website", "I Agree",
         "For more finance tips", "What Are FIFO and LIFO?",
         "Skip to main content", "Coming Soon: Free AI Training"]),
    # A community's front page: a feed of post cards (title, author, tags, reactions)
    # between two sidebars; neither trafilatura nor the article extractor reads the feed.
    "real_devto.html": (
        "https://dev.to/",
        ["3 words worth a billion dollars: Drift to Determinism",
         "Join the 2026 WeCoded Challenge", "The Women Who Helped Me Grow as a Developer",
         "I overpowered AI by inventing", "The Micro-Coercion of Speed"],
        ["Log in", "Create account", "Popular Tags", "Diamond Sponsors",
         "A space to discuss and keep up software development"]),
    # Page 1 of a forum thread of two pages: the pager ("Pages: 1 2 Next") above and
    # below the posts names page 2 (rel="next").
    "real_archforum.html": (
        "https://bbs.archlinux.org/viewtopic.php?id=298271",
        ["This I think is my favorite forum I visit",
         "No just 'responsive' as website dev speak",
         "Phpbb is still maintained?"],
        ["Pages: 1 2 Next", "You are not logged in", "Jump to", "Newbie Corner",
         "Atom topic feed", "Powered by FluxBB"]),
}

# Pages written for the tests, in the shape of real markup, for what the development sets
# have no real page of (a live blog, a gallery with slide counters, a paywall, a ticker).
CONVENTIONS: dict[str, tuple[list[str], list[str]]] = {
    "news_article.html": (
        ["The current diesel ferry leaving the north quay at dawn",  # caption
         "battery-electric vessels", "technical director, Ingrid Sol",
         "forty million euros each"],
        ["Ferry operator orders two electric vessels",  # the headline: metadata
         "Anna Berg", "07:45",  # byline and dateline: metadata
         "Photo: Lars Holm",  # the photo credit
         "Harbour crane fails inspection", "Breaking",  # the ticker
         "Watch live", "Culture",  # the live bar, the category menu
         "How the island route became", "Read more",  # the related box in the body
         "morning briefing", "Your email",  # the newsletter box in the body
         "Topics", "Islands",  # the tag cloud
         "Lighthouse keeper retires", "More from",  # the teaser cards
         "Nils_K", "All rights reserved"]),
    "live_blog.html": (
        ["Follow the count in all twelve wards", "Turnout reaches record high",
         "71 percent of registered voters", "the river ward re-elects",
         "Counting has started in the sports hall", "Polls are now closed"],
        ["Election night live", "Latest news", "Bridge repairs", "Contact the newsroom"]),
    "gallery.html": (
        ["Forty sailing ships left the harbour", "The Norwegian full-rigger leads",
         "Cadets climb the rigging", "Spectators packed the old fort walls",
         "The last ship clears the harbour mouth", "The festival returns in three years"],
        ["1 / 4", "4 / 4", "Previous", "Share on Facebook", "Privacy"]),
    "overlays.html": (
        ["drei neue Radwege anzulegen", "Kreuzungen am Marktplatz",
         "Händler in der Fußgängerzone"],
        ["Neue Radwege für die Altstadt",  # the headline: metadata
         "Cookies", "Alle akzeptieren", "Weiterlesen", "Kontingent", "abonnieren",
         "Anmelden", "Impressum"]),
}


def _check_convention(name: str, text: str) -> None:
    keep, drop = REAL[name][1:] if name in REAL else CONVENTIONS[name]
    for phrase in keep:
        assert phrase in text, (name, phrase)
    # in reading order (a live blog's standfirst before its newest entry), each once (a
    # pull quote repeats a sentence a reader reads once)
    assert [text.index(p) for p in keep] == sorted(text.index(p) for p in keep), name
    for phrase in keep:
        assert text.count(phrase) == 1, (name, phrase)
    for phrase in drop:
        assert phrase not in text, (name, phrase)


def _extract_cli(paths: list[Path]) -> dict[str, dict]:
    import json
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "textsieve", "extract", "--html", "main",
                          "-f", "json", *map(str, paths)],
                         capture_output=True, text=True, timeout=180, check=True)
    return {Path(d["path"]).name: d for d in map(json.loads, res.stdout.splitlines())}


def test_article_conventions_of_real_pages_through_the_cli() -> None:
    """`textsieve extract --html main` on real pages cut small: the reader's text stays
    once, in order; the frame (headline, byline, dateline) and the chrome inside and
    around the body (share, related, sponsor and newsletter boxes, pull quotes' repeats,
    comments, cookie notices, pagers) go; title, author and date are metadata; a
    thread's next page is metadata, a blog's link to its next post is not."""
    pages = sorted(REAL)
    docs = _extract_cli([WEB / p for p in pages])
    assert sorted(docs) == pages
    for name in pages:
        assert docs[name]["status"] == "ok", docs[name]
        _check_convention(name, docs[name]["text"])
    meta = {name: (docs[name]["title"], docs[name]["metadata"].get("author"),
                   (docs[name]["metadata"].get("created") or "")[:10]) for name in pages}
    assert meta["real_wptavern.html"] == (
        "Stack Overflow Jobs Data Shows ReactJS Skills in High Demand, WordPress Market "
        "Oversaturated with Developers", "Sarah Gooding", "2017-03-09")
    assert meta["real_bbc.html"] == (
        "Obama admits US gun laws are his 'biggest frustration'", None, "2015-07-24")
    assert meta["real_lemonde.html"] == (
        "Le projet de loi sur le renseignement massivement approuvé à l'Assemblée",
        "Martin Untersinger", "2015-05-04")
    assert meta["real_uschamber.html"][:2] == (
        "10 Free Accounting Tools for Small Businesses", "Jessica Elliott")
    extra = {name: docs[name]["metadata"].get("extra", {}) for name in pages}
    # no page URL on the command line: the pager's link as the page has it
    assert extra["real_archforum.html"]["next_page"] == "viewtopic.php?id=298271&p=2"
    assert "next_page" not in extra["real_wptavern.html"]  # the next post


@pytest.mark.parametrize("name", sorted(REAL))
def test_article_conventions_of_real_pages_through_the_library(name: str) -> None:
    """The same pages through ``main_text`` and ``extract_main`` with the URL each was
    saved from (a fetched page's road): the next page is then absolute."""
    url = REAL[name][0]
    html = (WEB / name).read_text(encoding="utf-8")
    _check_convention(name, main_text(html, url))
    doc, out = Document(), Builder()
    extract_main(html.encode("utf-8"), url, out, doc)
    _check_convention(name, out.text())
    if name == "real_archforum.html":
        assert doc.metadata.extra["next_page"] == (
            "https://bbs.archlinux.org/viewtopic.php?id=298271&p=2")
    else:
        assert "next_page" not in doc.metadata.extra


def test_article_conventions_through_the_cli() -> None:
    """`textsieve extract --html main` on the written pages: the ticker, the live bar,
    the tag cloud and teasers, a live blog's entries, a gallery's counters and a paywall
    go; title, author and date are metadata."""
    pages = sorted(CONVENTIONS)
    docs = _extract_cli([WEB / p for p in pages])
    assert sorted(docs) == pages
    for name in pages:
        assert docs[name]["status"] == "ok", docs[name]
        _check_convention(name, docs[name]["text"])
    news = docs["news_article.html"]
    assert news["title"] == "Ferry operator orders two electric vessels for the island route"
    assert news["metadata"]["author"] == "Anna Berg"
    assert news["metadata"]["created"].startswith("2025-05-06")
    live = docs["live_blog.html"]
    assert live["metadata"]["author"] == "Tomas Reed"
    assert live["metadata"]["created"].startswith("2025-09-14")


@pytest.mark.parametrize("name", sorted(CONVENTIONS))
def test_article_conventions_through_the_library(name: str) -> None:
    """The same pages through ``main_text`` and ``extract_main`` (a fetched page's road)."""
    html = (WEB / name).read_text(encoding="utf-8")
    url = f"https://news.example/{name.removesuffix('.html')}"
    _check_convention(name, main_text(html, url))
    doc, out = Document(), Builder()
    extract_main(html.encode("utf-8"), url, out, doc)
    _check_convention(name, out.text())
