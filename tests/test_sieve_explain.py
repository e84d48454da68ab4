"""Why the sieve kept what it kept: ``textsieve extract --html sieve --topic T --explain
PAGE`` prints an SVG of the page's topic score along its blocks with the kept span
shaded, and the reading room shows the same picture on a sieved item's page (in real
headless Chromium, over an archive made by a real ``textsieve run --html sieve``).

The picture must be safe to embed: a page whose headings carry script payloads yields an
SVG with the payloads as escaped text, no script, no event handler, no style; in the
browser nothing runs and the strict CSP reports nothing.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from textsieve.web.sieveplot import for_metadata, svg

FIXTURE = Path(__file__).parent / "fixtures" / "recipe_noisy.html"
SVG_NS = "{http://www.w3.org/2000/svg}"
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
P_TAG = "<script>window.__pwned='tag'</script>"
P_ATTR = "\"'><svg onload=\"window.__pwned='attr'\">"

HOSTILE = f"""<!doctype html><html lang="en"><head><title>Hostile soup</title></head><body>
<h1>Soup {P_TAG.replace('<', '&lt;')}</h1>
<p>We made this soup on a cold evening and it was very good indeed, said everyone.</p>
<h2>Ingredients {P_ATTR.replace('<', '&lt;').replace('"', '&quot;')}</h2>
<ul><li>2 onions, chopped</li><li>1 tablespoon butter</li><li>500 g potatoes, diced</li>
<li>1 litre vegetable stock</li><li>salt and pepper to taste</li></ul>
<h2>Instructions</h2>
<ol><li>Melt the butter in a large pot over medium heat and cook the onions for 5 minutes.</li>
<li>Add the potatoes and the stock, bring to a boil and simmer for 20 minutes.</li>
<li>Blend until smooth, season with salt and pepper and serve hot.</li></ol>
<h3>Comments {P_TAG.replace('<', '&lt;')}</h3>
<p>Lovely soup, I added a carrot and it was even better the next day.</p>
</body></html>"""


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", *args], capture_output=True,
                          text=True, timeout=120, check=False, cwd=cwd)


def _inert(root: etree._Element) -> None:
    """No element or attribute of the SVG can run anything or load anything."""
    for el in root.iter():
        assert isinstance(el.tag, str) and el.tag.startswith(SVG_NS), el.tag
        assert el.tag[len(SVG_NS):] in {"svg", "title", "desc", "rect", "line", "polyline",
                                        "text"}, el.tag
        for name in el.attrib:
            assert not name.lower().startswith("on") and name not in ("style", "href"), name


def test_explain_draws_scores_and_the_kept_span() -> None:
    r = _cli("extract", "--html", "sieve", "--topic", "recipe-directions", "--explain",
             str(FIXTURE))
    assert r.returncode == 0, r.stderr
    root = etree.fromstring(r.stdout.strip().encode("utf-8"))
    _inert(root)
    assert root.tag == f"{SVG_NS}svg" and root.get("role") == "img"
    line = root.find(f"{SVG_NS}polyline")
    points = line.get("points").split()
    kept = root.findall(f"{SVG_NS}rect[@class='span']")
    assert len(kept) == 1
    assert kept[0].findtext(f"{SVG_NS}title").startswith("kept: blocks ")
    desc = root.findtext(f"{SVG_NS}desc")
    blocks = int(desc.split("page's ")[1].split()[0])
    assert len(points) == blocks  # one point per block on a page this size
    assert "kept: 8 blocks" in desc  # the heading and the seven steps
    assert root.find(f"{SVG_NS}line[@class='threshold']") is not None
    # The plot is the run's: the text of the same run names the same kept blocks.
    r = _cli("extract", "-f", "json", "--topic", "recipe-directions", str(FIXTURE))
    assert '"sieve_blocks": 8' in r.stdout


def test_explain_escapes_what_the_page_says(tmp_path: Path) -> None:
    page = tmp_path / "hostile.html"
    page.write_text(HOSTILE, "utf-8")
    r = _cli("extract", "--html", "sieve", "--topic", "recipe-ingredients", "--explain",
             str(page))
    assert r.returncode == 0, r.stderr
    assert "<script" not in r.stdout and "<svg onload" not in r.stdout
    root = etree.fromstring(r.stdout.strip().encode("utf-8"))
    _inert(root)
    heads = [t.text for t in root.iter(f"{SVG_NS}title") if (t.text or "").startswith("head")]
    assert any(P_TAG in h for h in heads)  # the payload is there, as text


def test_explain_needs_the_sieve_and_one_page(tmp_path: Path) -> None:
    r = _cli("extract", "--explain", str(FIXTURE))
    assert r.returncode == 2 and "--explain" in r.stderr and "Traceback" not in r.stderr
    r = _cli("extract", "--topic", "recipe-directions", "--explain", str(FIXTURE),
             str(FIXTURE))
    assert r.returncode == 2 and "one page" in r.stderr


def test_recipe_data_and_broken_profiles_say_so() -> None:
    """A page answered from its own Recipe data has no scores to draw, and a profile
    that comes back from the archive malformed (or written by someone else) draws no
    numbers it did not check."""
    drawn = for_metadata({"sieve_topic": "recipe-ingredients", "sieve_source": "recipe",
                          "sieve_blocks": 7})
    assert "own Recipe data (7 lines)" in drawn
    for bad in ({"blocks": 3, "bin": 1, "scores": [1, "2\"/><script>x</script>", 3]},
                {"blocks": "3", "bin": 1, "scores": [1.0]}, [1, 2], None,
                {"blocks": 3, "bin": 1, "scores": [1.0, float("nan"), 2.0]}):
        out = svg(bad, topic="<b>t</b>")
        assert "No profile was recorded" in out and "<script" not in out
        _inert(etree.fromstring(out.encode("utf-8")))
        assert "&lt;b&gt;t&lt;/b&gt;" in out


# -- the reading room ----------------------------------------------------------------------
needs_browser = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)),
    reason="Debian's chromium and chromium-driver are not installed (scripts/setup does)")


def _port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _serving(db: Path) -> Iterator[str]:
    import uvicorn

    from textsieve.ui import app

    port = _port()
    srv = uvicorn.Server(uvicorn.Config(app(db), host="127.0.0.1", port=port,
                                        log_level="warning"))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.monotonic() + 20
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.started
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        t.join(10)


@needs_browser
def test_item_page_shows_why_in_chromium(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("selenium")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    from textsieve.archive import Archive

    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "banana-bread.html").write_bytes(FIXTURE.read_bytes())
    (pages / "hostile-soup.html").write_text(HOSTILE, "utf-8")
    db = tmp_path / "archive.db"
    r = _cli("run", str(pages), "--archive", str(db), "--html", "sieve", "--topic",
             "recipe-directions", "-q")
    assert r.returncode == 0, r.stderr
    with Archive(db, readonly=True) as a:
        ids = dict(a.conn.execute("SELECT name, id FROM items"))
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage", "--window-size=1280,1000",
                 f"--user-data-dir={tmp_path / 'chromium'}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=opts, service=Service(DRIVER))
    try:
        d.set_page_load_timeout(30)
        with _serving(db) as server:
            for name in ("banana-bread.html", "hostile-soup.html"):
                d.get(f"{server}/items/{ids[name]}")
                fig = d.find_element(By.CSS_SELECTOR, "figure.sieve-explain")
                plot = fig.find_element(By.CSS_SELECTOR, "svg.sieve-plot")
                assert plot.size["width"] > 300 and plot.size["height"] > 100
                assert plot.get_attribute("role") == "img"
                spans = plot.find_elements(By.CSS_SELECTOR, "rect.span")
                assert len(spans) == 1 and spans[0].size["width"] > 0
                assert plot.find_elements(By.CSS_SELECTOR, "polyline.score")
                assert "kept" in d.find_element(By.ID, "sieve-desc").get_attribute(
                    "textContent")
                assert d.execute_script("return window.__pwned") is None, name
                errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
                assert not errors, (name, errors)  # a CSP violation would be one
                d.save_screenshot(str(tmp_path / f"{name}.png"))
            heads = [t.get_attribute("textContent") for t in
                     d.find_elements(By.CSS_SELECTOR, "svg.sieve-plot line.head title")]
            assert any(P_TAG in h for h in heads)  # shown as text, never run
            # An item that was not sieved has no such figure.
            d.get(f"{server}/")
            assert not d.find_elements(By.CSS_SELECTOR, "figure.sieve-explain")
    finally:
        d.quit()
