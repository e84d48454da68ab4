"""The reading room (web UI) in a real headless Chromium, over an archive made by a real
`textsieve run`: the bundled sample documents, a mailbox of links served from a local web
site, and hostile items (script payloads in titles, texts, URLs, mail subjects, metadata).

The reading room is driven twice: as users run it, `textsieve serve --archive FILE` (a
real process; the pages under /ui, / leading there), and as the standalone app (uvicorn on
`textsieve.ui.app(path)`). A user searches, opens a hit, follows its provenance to the
mail, opens a child, follows every link of the navigation (the stylesheet applied on each
page), sees the problems page and retries one; no payload ever runs (it would set
``window.__pwned``), the browser console has no error (a CSP violation is one), and each
page is screenshot on a desktop and a phone-sized window (under the test's tmp folder, or
$TEXTSIEVE_SHOTS).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("selenium")
import httpx
import uvicorn
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from textsieve.archive import Archive
from textsieve.options import Options
from textsieve.ui import app

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
# Each payload sets a global if it ever runs; some also try the classic routes around
# escaping (attribute break-out, event handlers, javascript: links, raw HTML in Markdown).
P_TAG = "<script>window.__pwned='tag'</script>"
P_IMG = "<img src=x onerror=\"window.__pwned='img'\">"
P_ATTR = "\"'><svg onload=\"window.__pwned='attr'\">"
P_MD_LINK = "[click me](javascript:window.__pwned='mdlink')"

needs_browser = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)),
    reason="Debian's chromium and chromium-driver are not installed (scripts/setup does)")


def waiting(d: webdriver.Chrome, seconds: float) -> WebDriverWait[webdriver.Chrome]:
    """A wait that reads the page again when the element it held was re-rendered under it
    (a live page, a busy machine): only the condition's timing is waited for."""
    return WebDriverWait(d, seconds, ignored_exceptions=(StaleElementReferenceException,))


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


HOSTILE_PAGE = f"""<!doctype html><html><head>
<title>Hostile page {P_TAG}{P_IMG}</title>
<meta name="author" content="{P_ATTR.replace('"', '&quot;')}">
</head><body><article>
<h1>Hostile page {P_TAG.replace('<', '&lt;')}</h1>
<p>The heron text carries payloads as text: {P_IMG.replace('<', '&lt;')} and
{P_ATTR.replace('<', '&lt;')} and a link <a href="javascript:window.__pwned='href'">here</a>.
Herons stand in the shallow water for hours, waiting for a fish to pass close enough.</p>
<p>More words so the page is kept as main content: the grey heron hunts at dawn and dusk,
nests in colonies high in the trees, and returns to the same heronry year after year.</p>
</article></body></html>
"""

MBOX = """From me@example.org Mon Nov  2 08:12:00 2026
From: {P_ATTR} <me@example.org>
To: me@example.org
Subject: hostile subject {P_TAG} {P_IMG}
Date: Mon, 02 Nov 2026 08:12:00 +0000
Message-ID: <hostile-1@example.org>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

Read this: {SITE}/hostile.html?x=%22%3E%3Cscript%3Ewindow.__pwned%3D1%3C/script%3E
and this one is gone: {SITE}/gone.html

"""


@pytest.fixture(scope="module")
def archive_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An archive made by a real `textsieve run`: sample documents, the sample mailbox and
    a hostile one served from 127.0.0.1, hostile files, and a corrupt PDF (a problem)."""
    tmp = tmp_path_factory.mktemp("ui")
    site = tmp / "site"
    shutil.copytree(SAMPLES / "site", site)
    (site / "hostile.html").write_text(HOSTILE_PAGE, encoding="utf-8")
    docs = tmp / "docs"
    shutil.copytree(SAMPLES / "docs", docs)
    (docs / f"notes {P_IMG[:20]}.md").write_text(
        f"# Notes {P_TAG}\n\nRaw HTML in Markdown: {P_IMG}\n\n{P_MD_LINK}\n\n"
        "| heron | count |\n|---|---|\n| grey | 12 |\n", encoding="utf-8")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<< garbage >>\n" + bytes(200))
    port = _port()
    httpd = ThreadingHTTPServer(("127.0.0.1", port),
                                functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    mail = tmp / "mail"
    mail.mkdir()
    template = (SAMPLES / "mail" / "links.mbox.in").read_text(encoding="utf-8")
    (mail / "links.mbox").write_text(
        template.replace("{SITE}", url) + "\n"
        + MBOX.format(P_ATTR=P_ATTR, P_TAG=P_TAG, P_IMG=P_IMG, SITE=url), encoding="utf-8")
    db = tmp / "archive.db"
    try:
        p = subprocess.run(
            [sys.executable, "-m", "textsieve", "run", str(docs), f"mbox:{mail / 'links.mbox'}",
             "--archive", str(db), "--host-delay", "0", "--allow-cidr", "127.0.0.1/32", "-q"],
            capture_output=True, text=True, timeout=300, check=False)
    finally:
        httpd.shutdown()
    assert p.returncode == 1, p.stderr  # the corrupt PDF and the vanished page failed
    assert "Traceback" not in p.stderr
    yield db


class Room(str):
    """The reading room's base URL (``/ui`` under serve), with the archive it serves."""

    db: Path
    root: str  # the server's own root URL


@pytest.fixture(scope="module", params=["serve", "standalone"])
def server(request: pytest.FixtureRequest, archive_path: Path) -> Iterator[Room]:
    """The reading room on 127.0.0.1 over its own copy of the archive (a retry changes
    it): ``textsieve serve --archive FILE`` as the README gives it, or the standalone app
    served by uvicorn in this process."""
    from server_proc import running_server

    db = archive_path.with_name(f"{request.param}.db")
    shutil.copyfile(archive_path, db)
    if request.param == "serve":
        with running_server("--archive", str(db), "--allow-cidr", "127.0.0.1/32",
                            "-j", "1") as s:
            room = Room(s.url + "/ui")
            room.db, room.root = db, s.url
            yield room
    else:
        with _serving(db, Options(allow_cidrs=("127.0.0.1/32",))) as url:
            room = Room(url)
            room.db, room.root = db, url
            yield room


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,1000",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(DRIVER))
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("TEXTSIEVE_SHOTS")
    out = Path(where) if where else tmp_path_factory.mktemp("screenshots")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _check(driver: webdriver.Chrome, shots: Path, name: str) -> None:
    """The page's invariants: no payload ran, no console error; and its screenshots."""
    assert driver.execute_script("return window.__pwned") is None, name
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, (name, errors)
    driver.set_window_size(1280, 1000)
    driver.save_screenshot(str(shots / f"{name}-desktop.png"))
    driver.set_window_size(390, 844)
    driver.save_screenshot(str(shots / f"{name}-phone.png"))
    driver.set_window_size(1280, 1000)


def _ids(db: Path, sql: str, *args: object) -> list[int]:
    with Archive(db, readonly=True) as a:
        return [r[0] for r in a.conn.execute(sql, args)]


@needs_browser
def _styled(d: webdriver.Chrome) -> bool:
    """The page's stylesheet is loaded and applied (the header's background is ours)."""
    return d.execute_script(
        "return getComputedStyle(document.querySelector('header')).backgroundColor"
    ) == "rgb(243, 245, 247)"


NAV = [("Search", "/search", "#search-form"), ("Reading list", "/reading", "h1"),
       ("Problems", "/problems", "h1"), ("Topics", "/topics", "h1"),
       ("Overview", "/overview", "svg.chart")]


@needs_browser
def test_every_page_is_styled_and_every_nav_link_works(server: Room,
                                                        browser: webdriver.Chrome,
                                                        shots: Path) -> None:
    """Where the room is mounted (/ui under serve) its links, forms and stylesheet must
    follow: root-relative ones were 404s and an unstyled page."""
    d = browser
    d.get_log("browser")  # what earlier tests left in the log is theirs
    d.get(server.root + "/")  # the server's root leads to the reading room
    waiting(d, 10).until(lambda _: d.current_url.startswith(f"{server}/search"))
    assert _styled(d)
    for label, path, marker in NAV:
        d.find_element(By.LINK_TEXT, label).click()
        waiting(d, 10).until(lambda _, p=path: d.current_url.split("?")[0]
                                   == f"{server}{p}")
        assert d.find_elements(By.CSS_SELECTOR, marker), label
        assert "404" not in d.title and _styled(d), label
        current = d.find_element(By.CSS_SELECTOR, "nav a[aria-current=page]").text
        assert current == label
    d.find_element(By.CSS_SELECTOR, "nav a.brand").click()
    waiting(d, 10).until(lambda _: d.current_url == f"{server}/search")
    _check(d, shots, f"nav-{server.db.stem}")
    # errors are pages of the room, styled, with its navigation
    for bad in ("/items/999999", "/items/not-a-number", "/no-such-page"):
        d.get(server + bad)
        assert d.find_element(By.TAG_NAME, "h1").text in ("404", "422"), bad
        assert _styled(d) and d.find_elements(By.LINK_TEXT, "Search"), bad
    d.get_log("browser")  # the errors' statuses are logged: they are meant


@needs_browser
def test_reading_room_in_chromium(archive_path: Path, server: Room, browser: webdriver.Chrome,
                                  shots: Path) -> None:
    d = browser
    # search as you type: the results follow the box without a submit
    d.get(f"{server}/search")
    _check(d, shots, "search-empty")
    box = d.find_element(By.ID, "q")
    box.send_keys("herons")
    waiting(d, 10).until(lambda _: "q=herons" in d.current_url)
    waiting(d, 10).until(lambda _: d.find_elements(By.CSS_SELECTOR, "#results .hit"))
    marks = d.find_elements(By.CSS_SELECTOR, "#results .snippet mark")
    assert marks and all(m.text.lower().startswith("heron") for m in marks)
    count = d.find_element(By.CSS_SELECTOR, "#results .count").text
    assert int(count.split()[0]) >= 3
    _check(d, shots, "search")
    # open the heron article the mails linked; its provenance leads to the mails
    hit = next(h for h in d.find_elements(By.CSS_SELECTOR, "#results .hit")
               if "heron-migration.html" in h.find_element(By.CLASS_NAME, "where").text)
    hit.find_element(By.CSS_SELECTOR, "a.title").click()
    waiting(d, 10).until(lambda _: d.current_url.startswith(f"{server}/items/"))
    assert _styled(d)
    assert "most grey herons hardly migrate" in d.find_element(By.CSS_SELECTOR, ".text").text
    subjects = [a.text for a in d.find_elements(By.CSS_SELECTOR, ".provenance .mail a")]
    assert "read later: herons in winter" in subjects and len(subjects) == 3
    _check(d, shots, "item-web")
    d.find_element(By.LINK_TEXT, "read later: herons in winter").click()
    waiting(d, 10).until(lambda _: d.current_url.startswith(f"{server}/mails/"))
    assert d.find_element(By.ID, "subject").text == "read later: herons in winter"
    named = [a.text for a in d.find_elements(By.CSS_SELECTOR, ".named a")]
    assert len(named) == 2  # the heron page and the ringing report
    _check(d, shots, "mail")
    # a ZIP and its members: the tree of children, a member opens with its parent above
    d.get(f"{server}/search?q=&type=application%2Fzip")
    d.find_element(By.CSS_SELECTOR, "#results .hit a.title").click()
    members = d.find_elements(By.CSS_SELECTOR, ".children .tree a")
    assert len(members) >= 2
    _check(d, shots, "item-zip")
    name = members[0].text
    members[0].click()
    waiting(d, 10).until(lambda _: d.find_element(By.CSS_SELECTOR, ".crumbs span").text
                               == name)
    assert "trip.zip" in d.find_element(By.CSS_SELECTOR, ".crumbs a").text
    _check(d, shots, "item-child")
    # the Markdown of a document renders as structure (headings, lists, a table)
    (letter,) = _ids(archive_path, "SELECT id FROM items WHERE key LIKE '%letter.docx'")
    d.get(f"{server}/items/{letter}")
    assert d.find_elements(By.CSS_SELECTOR, ".text table td")
    assert d.find_elements(By.CSS_SELECTOR, ".text h1, .text h2")
    _check(d, shots, "item-docx")
    # raw HTML and javascript: links in a document's text stay text
    (notes,) = _ids(archive_path, "SELECT id FROM items WHERE key LIKE '%notes%.md'")
    d.get(f"{server}/items/{notes}")
    assert P_TAG in d.find_element(By.CSS_SELECTOR, ".text").text
    assert not d.find_elements(By.CSS_SELECTOR, ".text img, .text script, .text svg")
    assert not d.find_elements(By.CSS_SELECTOR, "a[href^='javascript']")
    _check(d, shots, "item-markdown")
    d.get(f"{server}/reading")
    subjects = [a.text for a in d.find_elements(By.CSS_SELECTOR, ".mailhead a")]
    assert subjects[0].startswith("hostile subject <script>")  # newest first, as text
    assert "read later: herons in winter" in subjects
    failed = d.find_elements(By.CSS_SELECTOR, ".reading li.error")
    assert failed and "gone.html" in failed[0].text
    _check(d, shots, "reading")
    d.get(f"{server}/overview")
    assert len(d.find_elements(By.CSS_SELECTOR, "svg.chart")) == 5
    assert d.find_elements(By.CSS_SELECTOR, "table.runs tbody tr")
    _check(d, shots, "overview")


@needs_browser
def test_problems_page_retries_a_fixed_file(archive_path: Path, server: Room,
                                            browser: webdriver.Chrome, shots: Path) -> None:
    """The corrupt PDF fails; mended on disk, "retry" on the problems page runs it again in
    the background and the page reports it ok."""
    d = browser
    (broken,) = _ids(archive_path, "SELECT id FROM items WHERE key LIKE '%broken.pdf'")
    d.get(f"{server}/problems")
    groups = [g.text for g in d.find_elements(By.CSS_SELECTOR, ".group h2")]
    assert any("files" in g for g in groups) and any("127.0.0.1" in g for g in groups)
    _check(d, shots, "problems")
    path = _key_path(archive_path, broken)
    shutil.copyfile(SAMPLES / "docs" / "field-notes.pdf", path)
    form = d.find_element(By.CSS_SELECTOR, f"form.inline input[name=item][value='{broken}']")
    form.find_element(By.XPATH, "..").find_element(By.TAG_NAME, "button").click()
    waiting(d, 10).until(lambda _: d.current_url.startswith(f"{server}/jobs/"))
    state = waiting(d, 60).until(lambda _: d.find_element(By.ID, "state").text
                                 if d.find_element(By.ID, "state").text.startswith(
                                     ("done", "failed")) else None)
    assert state == "done"
    facts = d.find_element(By.CSS_SELECTOR, ".facts").text
    assert "ok\n1" in facts, facts
    _check(d, shots, "retry")
    d.get(f"{server}/items/{broken}")
    assert d.find_element(By.CSS_SELECTOR, "dd.status").text == "ok"


def _key_path(db: Path, item_id: int) -> str:
    from textsieve.filekeys import key_path

    with Archive(db, readonly=True) as a:
        key = a.conn.execute("SELECT key FROM items WHERE id = ?", (item_id,)).fetchone()[0]
    path = key_path(key)
    assert path is not None
    return path


@needs_browser
def test_hostile_items_stay_inert(archive_path: Path, server: Room, browser: webdriver.Chrome,
                                  shots: Path) -> None:
    """Payloads in a web page's title, text, author and URL, in a mail's subject and
    sender, and in a file name stay text on every page that shows them."""
    d = browser
    hostile = _ids(archive_path, "SELECT id FROM items WHERE key LIKE '%hostile.html%'")
    assert hostile
    d.get(f"{server}/items/{hostile[0]}")
    title = d.find_element(By.ID, "title").text
    assert "<script>" in title or "Hostile page" in title
    assert "onerror" in d.find_element(By.CSS_SELECTOR, ".text").text
    _check(d, shots, "item-hostile")
    for q in ("hostile", "herons shallow", "notes", "subject"):
        d.get(f"{server}/search?q={quote(q)}")
        _check(d, shots, f"search-{q.replace(' ', '-')}")
    (mail,) = _ids(archive_path, "SELECT id FROM mails WHERE message_id LIKE '%hostile-1%'")
    d.get(f"{server}/mails/{mail}")
    assert d.find_element(By.ID, "subject").text.startswith("hostile subject <script>")
    _check(d, shots, "mail-hostile")
    for page in ("/reading", "/problems", "/overview", f"/search?q={quote(P_ATTR)}",
                 f"/search?q=heron&type={quote(P_ATTR)}&site={quote(P_TAG)}"):
        d.get(server + page)
        assert d.execute_script("return window.__pwned") is None, page


def test_headers_csrf_and_token(archive_path: Path, server: Room) -> None:
    """Every page carries the strict CSP; a POST without the form's token, or from another
    origin, changes nothing; with a token set, nothing is served without it."""
    r = httpx.get(f"{server}/search?q=heron")
    assert r.status_code == 200
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp and "<script>" not in r.text.split("</head>")[1]
    (broken,) = _ids(archive_path, "SELECT id FROM items WHERE key LIKE '%gone.html%'")
    runs = _ids(server.db, "SELECT count(*) FROM runs")
    assert httpx.post(f"{server}/problems/retry", data={"item": broken}).status_code == 403
    assert httpx.post(f"{server}/problems/retry", data={"item": broken, "csrf_token": "x"}
                      ).status_code == 403
    page = httpx.get(f"{server}/problems").text
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    assert httpx.post(f"{server}/problems/retry", data={"item": broken, "csrf_token": token},
                      headers={"Origin": "http://evil.example"}).status_code == 403
    assert _ids(server.db, "SELECT count(*) FROM runs") == runs
    # a DNS-rebound name is refused when no token guards the server
    assert httpx.get(f"{server}/search", headers={"Host": "evil.example"}).status_code == 403
    # a bad query is a message, not a crash
    r = httpx.get(f"{server}/search", params={"q": 'heron "unclosed'})
    assert r.status_code == 400 and "not valid search syntax" in r.text
    assert httpx.get(f"{server}/items/999999").status_code == 404
    # errors are pages here, never the API's JSON
    for bad, status in (("/items/999999", 404), ("/items/x", 422), ("/nowhere", 404),
                        ("/search?page_no=zz", 422)):
        r = httpx.get(server + bad)
        assert r.status_code == status and r.headers["content-type"].startswith(
            "text/html"), (bad, r.status_code, r.headers["content-type"])
        assert f'href="{urlsplit(server).path}/static/style.css"' in r.text, bad


@needs_browser
def test_one_login_for_pages_and_api_in_chromium(archive_path: Path,
                                                 browser: webdriver.Chrome) -> None:
    """With a token, `textsieve serve --archive FILE` shows its login form for any page;
    the token typed once opens the page asked for, every other page, and the API's docs
    (one auth for all); signing out closes them again."""
    from server_proc import running_server

    token = "reading-room-token-0123"
    db = archive_path.with_name("login.db")
    shutil.copyfile(archive_path, db)
    d = browser
    with running_server("--archive", str(db), "-j", "1",
                        env={"TEXTSIEVE_TOKEN": token}) as s:
        d.get(f"{s.url}/ui/search?q=herons")
        assert d.find_element(By.TAG_NAME, "h1").text == "Sign in" and _styled(d)
        d.find_element(By.ID, "token").send_keys("not-the-token-at-all")
        d.find_element(By.CSS_SELECTOR, "form.login button").click()
        waiting(d, 10).until(
            lambda _: "not the token" in d.find_element(By.ID, "login-message").text)
        d.find_element(By.ID, "token").send_keys(token)
        d.find_element(By.CSS_SELECTOR, "form.login button").click()
        waiting(d, 10).until(lambda _: d.current_url == f"{s.url}/ui/search?q=herons")
        assert d.find_elements(By.CSS_SELECTOR, "#results .hit")
        d.find_element(By.LINK_TEXT, "Overview").click()
        waiting(d, 10).until(lambda _: d.find_elements(By.CSS_SELECTOR, "svg.chart"))
        d.get(f"{s.url}/openapi.json")
        assert "/v1/extract" in d.find_element(By.TAG_NAME, "body").text
        d.get(f"{s.url}/ui/search")
        d.find_element(By.CSS_SELECTOR, "form.logout button").click()
        waiting(d, 10).until(lambda _: d.find_elements(By.ID, "token"))
        d.get(f"{s.url}/ui/overview")
        assert d.find_element(By.TAG_NAME, "h1").text == "Sign in"
    d.get_log("browser")  # the 401s of the login pages are logged: they are meant


def test_token_guards_every_page(archive_path: Path) -> None:
    from fastapi.testclient import TestClient  # in-process: only the guard is under test

    token = "s3cret-s3cret-s3cret"
    client = TestClient(app(archive_path, token=token), base_url="http://0.0.0.0")
    assert client.get("/search").status_code == 401
    assert client.get("/items/1.json").status_code == 401
    assert client.get("/search", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert client.get("/search", headers={"Authorization": f"Bearer {token}"}
                      ).status_code == 200
    assert client.get("/search?token=" + token).status_code == 401  # no tokens in URLs
    # the login form: a wrong token is refused, the right one leaves a session cookie
    form = client.get("/search?q=heron")
    assert form.status_code == 401 and 'action="/login"' in form.text
    csrf = form.text.split('name="csrf_token" value="')[1].split('"')[0]
    origin = {"Origin": "http://0.0.0.0"}
    bad = client.post("/login", data={"token": "wrong", "csrf_token": csrf}, headers=origin)
    assert bad.status_code == 401 and "not the token" in bad.text
    ok = client.post("/login", data={"token": token, "csrf_token": csrf,
                                     "next": "/search?q=heron"},
                     headers=origin, follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"] == "/search?q=heron"
    assert token not in ok.headers["set-cookie"]  # a session derived from it, not it
    assert client.get("/overview").status_code == 200
    # a login never sends the browser to another site
    away = client.post("/login", data={"token": token, "csrf_token": csrf,
                                       "next": "//evil.example/x"},
                       headers=origin, follow_redirects=False)
    assert away.headers["location"] == "/search"


def test_search_filters_sort_and_count(archive_path: Path) -> None:
    """The filters keep only what they name; date read is newest first; the count is of
    all hits, not of the page."""
    from textsieve.archive.search import Filters, find

    with Archive(archive_path, readonly=True) as a:
        web = {r[0] for r in a.conn.execute(
            "SELECT id FROM items WHERE key LIKE 'http://127.0.0.1:%'")}
        site = a.conn.execute("SELECT site FROM items WHERE id = ?", (min(web),)).fetchone()[0]
        hits, n = find(a, "", Filters(site=site), limit=100, count=True)
        assert {h.id for h in hits} == web and n == len(web)
        (mbox,) = [r[0] for r in a.conn.execute("SELECT spec FROM sources WHERE spec "
                                                "LIKE 'mbox:%'")]
        mailed = {r[0] for r in a.conn.execute("SELECT item_id FROM item_mails")}
        hits, _ = find(a, "", Filters(mailbox=mbox), limit=100)
        assert {h.id for h in hits} == mailed
        hits, n = find(a, "herons", Filters(type="text/html"), count=True)
        assert hits and all(h.mime_type == "text/html" for h in hits) and n == len(hits)
        hits, n = find(a, "herons", sort="read", limit=2, count=True, marks=("<<", ">>"))
        assert len(hits) == 2 and n is not None and n > 2  # the count is not the page's
        assert hits[0].id > hits[1].id and "<<" in hits[0].snippet
        hits, _ = find(a, "herons", Filters(status="error"))
        assert hits == []
        today = time.strftime("%Y-%m-%d", time.gmtime())
        assert find(a, "herons", Filters(since=today), count=True)[1] == \
            find(a, "herons", count=True)[1]
        assert find(a, "herons", Filters(until="2001-01-01"))[0] == []


def test_a_common_word_ranks_its_newest_hits(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Past RANK_WINDOW matches only the newest are ranked (a word in every document would
    cost seconds on a big archive), yet the count is of all of them; a rarer word is
    ranked over all its matches."""
    from textsieve.archive import search as search_mod
    from textsieve.archive.store import Entry
    from textsieve.model import Document, Item

    with Archive(tmp_path / "a.db") as a:
        run = a.begin_run(["dir:x"], {})
        sid = {"dir:x": a.source_id("dir:x")}
        # the oldest item is the best match for "heron" (said most often, shortest)
        texts = ["heron heron heron heron"] + [f"heron and {n} other words of filler text"
                                               for n in range(29)]
        a.write([Entry(Item(key=f"/x/{n}", original=f"/x/{n}", source="dir:x"),
                       Document(name=str(n), text=t, markdown=t))
                 for n, t in enumerate(texts)], run, sid)
        first = a.conn.execute("SELECT min(id) FROM items").fetchone()[0]
        hits, n = search_mod.find(a, "heron", count=True)
        assert hits[0].id == first and n == 30
        monkeypatch.setattr(search_mod, "RANK_WINDOW", 10)
        hits, n = search_mod.find(a, "heron", count=True, limit=50)
        assert n == 30 and len(hits) == 10 and first not in {h.id for h in hits}
        assert min(h.id for h in hits) == first + 20  # the ten newest
        # a phrase that common is not ranked at all (bm25 would read all its positions)
        hits, n = search_mod.find(a, '"heron and"', count=True, limit=5)
        assert n == 29 and [h.id for h in hits] == list(range(first + 29, first + 24, -1))
        assert search_mod.ranks_past_window("heron winter")
        assert not search_mod.ranks_past_window('"grey heron"')


def test_item_links_its_searchable_pdf_and_serves_nothing_outside(tmp_path: Path) -> None:
    """An OCRed PDF's page links the copy `run --searchable-pdf` wrote, served from that
    folder only: a path planted in an item's metadata (hostile content) is never read."""
    from fastapi.testclient import TestClient  # in-process: the route and its check

    from test_searchable import _marked_scan, run_cli

    docs, out = tmp_path / "docs", tmp_path / "searchable"
    _marked_scan(docs / "scan.pdf", "reading room marker")
    out.mkdir()
    db = tmp_path / "a.db"
    made = run_cli("run", str(docs), "--archive", str(db), "--searchable-pdf", str(out),
                   "-j", "2")
    assert made.returncode == 0, made.stderr
    with Archive(db) as a:
        (scan_id,) = a.conn.execute("SELECT id FROM items WHERE parent_id IS NULL").fetchone()
    client = TestClient(app(db, options=Options(searchable_pdf_dir=str(out))),
                        base_url="http://127.0.0.1")
    page = client.get(f"/items/{scan_id}")
    assert f"/items/{scan_id}/searchable.pdf" in page.text
    pdf = client.get(f"/items/{scan_id}/searchable.pdf")
    assert pdf.status_code == 200 and pdf.content == (out / "scan.pdf").read_bytes()
    # Served from the configured folder only, whatever the metadata says.
    other = TestClient(app(db, options=Options(searchable_pdf_dir=str(tmp_path / "elsewhere"))),
                       base_url="http://127.0.0.1")
    assert other.get(f"/items/{scan_id}/searchable.pdf").status_code == 404
    assert "searchable.pdf" not in other.get(f"/items/{scan_id}").text


@contextlib.contextmanager
def _serving(db: Path, options: Options | None = None) -> Iterator[str]:
    """The reading room over ``db`` on 127.0.0.1, served by uvicorn in this process."""
    port = _port()
    srv = uvicorn.Server(uvicorn.Config(app(db, options=options), host="127.0.0.1",
                                        port=port, log_level="warning"))
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
def test_topics_page_charts_topic_sizes_per_month(tmp_path: Path, browser: webdriver.Chrome,
                                                  shots: Path) -> None:
    """Real pages in five topics, dated by their published date (or, when it is missing
    or absurd, the day they were added): the topics page draws items per topic per month
    as an SVG with a title and a description, and a table with the same figures."""
    from textsieve.enrich import candidates as enriched
    from textsieve.enrich import topics
    from wcxb_archive import pages, write_pages

    db = tmp_path / "topics.db"
    added = 1_752_141_600  # 2025-07-10 10:00 UTC
    with Archive(db) as a:
        write_pages(a, pages(150))
        with a.transaction() as c:
            c.execute("UPDATE items SET first_seen = ?", (added,))
            c.execute("UPDATE items SET metadata = json_set(metadata, '$.created', "
                      "printf('2025-%02d-15T10:00:00', id % 5 + 1)) WHERE id % 3 != 0")
            c.execute("UPDATE items SET metadata = json_set(metadata, '$.created', "
                      "'2099-01-01') WHERE id = 3")  # not a date it was published
        topics.update(a, k=5)
        expected: dict[str, dict[str, int]] = {}
        labels = {t.id: t.label for t in topics.list_topics(a)}
        for (item_id,) in a.conn.execute("SELECT id FROM items"):
            main = enriched.topics_of(a, item_id)[0]["topic"]
            month = f"2025-{item_id % 5 + 1:02d}" if item_id % 3 else "2025-07"
            by = expected.setdefault(labels[main], {})
            by[month] = by.get(month, 0) + 1
    d = browser
    d.get_log("browser")  # what earlier tests left in the log is theirs
    with _serving(db) as server:
        d.get(f"{server}/topics")
        svg = d.find_element(By.CSS_SELECTOR, "figure.topic-timeline svg.timeline")
        assert svg.get_attribute("role") == "img" and svg.size["width"] > 300
        named = svg.get_attribute("aria-labelledby").split()
        assert [d.find_element(By.ID, n).tag_name for n in named] == ["title", "desc"]
        desc = d.find_element(By.ID, "timeline-desc").get_attribute("textContent")
        assert "2025-01 to 2025-07" in desc
        assert len(svg.find_elements(By.CSS_SELECTOR, "g.topic")) == 5
        bars = {b.get_attribute("textContent") for b in
                svg.find_elements(By.CSS_SELECTOR, "rect.bar title")}
        assert bars == {f"{label}, {m}: {n:,} items" for label, by in expected.items()
                        for m, n in by.items()}
        d.find_element(By.CSS_SELECTOR, "details summary").click()
        table = d.find_element(By.CSS_SELECTOR, "table.timeline-data")
        months = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")][1:]
        assert months == [f"2025-{m:02d}" for m in range(1, 8)]  # June: none, shown
        shown = {}
        for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr"):
            label = tr.find_element(By.TAG_NAME, "th").text
            cells = [int(td.text) for td in tr.find_elements(By.TAG_NAME, "td")]
            shown[label] = {m: n for m, n in zip(months, cells, strict=True) if n}
        assert shown == expected and sum(sum(v.values()) for v in shown.values()) == 150
        # each topic is listed with its terms and links to its most representative items
        assert len(d.find_elements(By.CSS_SELECTOR, ".topics-list > li")) == 5
        d.find_element(By.CSS_SELECTOR, ".topics-list li a").click()
        waiting(d, 10).until(lambda _: "/items/" in d.current_url)
        d.get(f"{server}/topics")
        _check(d, shots, "topics")
