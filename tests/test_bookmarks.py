"""`textsieve run bookmarks:FILE`, as users run it: real browser exports
(tests/fixtures/bookmarks, made by Firefox and Chromium), `--fetch never` against a real
HTTP server on 127.0.0.1 that counts requests, a later run that fetches, labels in
`search --label`, and hostile files that become typed records while the run goes on.
"""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from textsieve.archive import Archive

FIXTURES = Path(__file__).parent / "fixtures" / "bookmarks"
FIREFOX_HTML = FIXTURES / "firefox-153.html"
CHROMIUM_JSON = FIXTURES / "chromium-156-Bookmarks"
PLACES_GZ = FIXTURES / "firefox-153-places.sqlite.gz"


class _Pages(BaseHTTPRequestHandler):
    """Every path is an article whose title and text name the path: what a later fetch
    must bring into the archive. Requests are counted (robots.txt apart)."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        server: _Server = self.server  # type: ignore[assignment]
        if self.path != "/robots.txt":
            with server.lock:
                server.paths.append(self.path)
        if self.path == "/robots.txt":
            body, status = b"User-agent: *\nAllow: /\n", 200
        else:
            words = " ".join(re.findall(r"[A-Za-z]+", self.path))
            body = (f"<html><head><title>Page {words}</title></head><body><article>"
                    f"<h1>Page {words}</h1>" + "".join(
                        f"<p>The fetched article about {words} says something worth "
                        f"keeping, paragraph {i}, with enough words to be main content.</p>"
                        for i in range(6)) + "</article></body></html>").encode()
            status = 200
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Pages)
        self.paths: list[str] = []
        self.lock = threading.Lock()


@pytest.fixture
def pages() -> Iterator[_Server]:
    server = _Server()
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True)
    t.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _local(text: str, server: _Server) -> str:
    """The export with its web links pointing at the local server (host kept in the path),
    everything else as the browser wrote it."""
    port = server.server_address[1]
    return re.sub(r'(HREF="|"url": ")https?://', rf"\g<1>http://127.0.0.1:{port}/", text)


def _run(db: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", "run", "--archive", str(db),
                           "--allow-private", "--host-delay", "0", "-j", "1",
                           *map(str, args)],
                          capture_output=True, text=True, timeout=300, check=False)


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", *args, "--archive", str(db)],
                          capture_output=True, text=True, timeout=120, check=False)


def _rows(db: Path) -> dict[str, dict[str, object]]:
    """Each top-level item as `textsieve show ID -f json` gives it, by its URL."""
    with Archive(db, readonly=True) as a:
        ids = [r[0] for r in a.conn.execute("SELECT id FROM items WHERE parent_id IS NULL")]
    out = {}
    for i in ids:
        shown = _cli(db, "show", str(i), "-f", "json")
        assert shown.returncode == 0, shown.stderr
        rec = json.loads(shown.stdout)
        out[rec["path"]] = rec
    return out


def _search_label(db: Path, label: str) -> set[str]:
    got = _cli(db, "search", "--label", label, "-n", "100")
    return set(re.findall(r"^\[\d+\] (\S+)", got.stdout, re.M))


def test_firefox_export_archived_without_fetching_then_fetched(pages: _Server,
                                                               tmp_path: Path) -> None:
    export = tmp_path / "bookmarks.html"
    export.write_text(_local(FIREFOX_HTML.read_text("utf-8"), pages), "utf-8")
    db = tmp_path / "a.db"
    base = f"http://127.0.0.1:{pages.server_address[1]}/"

    first = _run(db, "--fetch", "never", f"bookmarks:{export}")
    assert first.returncode == 0, first.stderr
    assert pages.paths == []  # nothing fetched
    assert re.search(r"status listed +6\n", first.stderr)  # the summary says so
    rows = _rows(db)
    # One item per distinct link: python.org is in the toolbar and in Reading; the
    # bookmarklet and the place: query are not links; the ftp: link is kept as listed.
    assert sorted(rows) == sorted([
        f"{base}en.wikipedia.org/wiki/Heron",
        f"{base}example.org/recipes/soupe-%C3%A0-l'oignon",
        f"{base}example.com/bread/sourdough",
        f"{base}www.python.org/about/",
        f"{base}example.net/no-date",
        "ftp://ftp.example.org/pub/file.txt"])
    assert {r["status"] for r in rows.values()} == {"listed"}
    heron = rows[f"{base}en.wikipedia.org/wiki/Heron"]
    assert heron["title"] == "Heron – Wikipédia"
    assert heron["labels"] == ["birds", "Reading", "wading birds"]
    assert heron["listings"][0]["listed"] == "2023-11-26T12:00:00Z"  # ADD_DATE 1701000000
    bread = rows[f"{base}example.com/bread/sourdough"]
    assert bread["title"] == "Sourdough bread 日本語"
    assert bread["labels"] == ["Baking", "Reading", "Recipes"]  # nested folders
    python = rows[f"{base}www.python.org/about/"]
    # Both places' labels; the toolbar is a container, not a label; the earliest date.
    assert python["labels"] == ["programming", "python", "Reading", "reference"]
    assert python["listings"][0]["listed"] == "2023-11-14T22:15:00Z"
    assert "ftp:" in rows["ftp://ftp.example.org/pub/file.txt"]["warnings"][0]

    assert _search_label(db, "recipes") == {  # any case
        f"{base}example.org/recipes/soupe-%C3%A0-l'oignon", f"{base}example.com/bread/sourdough"}
    assert _search_label(db, "français") == {f"{base}example.org/recipes/soupe-%C3%A0-l'oignon"}
    hit = _cli(db, "search", "Wikipédia")
    assert hit.returncode == 0 and "Heron" in hit.stdout

    again = _run(db, "--fetch", "never", f"bookmarks:{export}")
    assert again.returncode == 0, again.stderr
    assert pages.paths == []
    with Archive(db, readonly=True) as a:
        counts = json.loads(a.conn.execute(
            "SELECT counts FROM runs ORDER BY id DESC LIMIT 1").fetchone()[0])
    assert counts["extracted"] == 0 and counts["skipped"] == 6

    # A run that may fetch fetches each web link once; the listing and labels stay.
    fetched = _run(db, "--ignore-robots", f"bookmarks:{export}")
    assert fetched.returncode == 0, fetched.stderr
    assert sorted(pages.paths) == sorted([  # as bookmarked (keyed without utm_source)
        "/en.wikipedia.org/wiki/Heron", "/example.org/recipes/soupe-%C3%A0-l'oignon"
        "?utm_source=feed",
        "/example.com/bread/sourdough", "/www.python.org/about/", "/example.net/no-date"])
    rows = _rows(db)
    heron = rows[f"{base}en.wikipedia.org/wiki/Heron"]
    assert heron["status"] == "ok"
    assert "The fetched article about en wikipedia org wiki Heron" in heron["text"]
    assert heron["labels"] == ["birds", "Reading", "wading birds"]
    assert heron["listings"][0]["title"] == "Heron – Wikipédia"
    assert heron["listings"][0]["listed"] == "2023-11-26T12:00:00Z"
    assert rows["ftp://ftp.example.org/pub/file.txt"]["status"] == "listed"
    assert _search_label(db, "Baking") == {f"{base}example.com/bread/sourdough"}

    # The user bookmarks one more page and moves another to a new folder: a second run
    # never fetches what it has, fetches the new link only, and relabels the moved one.
    text = export.read_text("utf-8")
    text = text.replace(
        '<DT><A HREF="' + base + 'example.net/no-date"',
        f'<DT><H3>Later</H3>\n    <DL><p>\n    <DT><A HREF="{base}example.net/no-date"', 1)
    text = text.replace('Undated link</A>\n',
                        f'Undated link</A>\n    <DT><A HREF="{base}example.net/new" '
                        'ADD_DATE="1710000000">New one</A>\n    </DL><p>\n', 1)
    export.write_text(text, "utf-8")
    pages.paths.clear()
    second = _run(db, "--ignore-robots", f"bookmarks:{export}")
    assert second.returncode == 0, second.stderr
    new_paths = [p for p in pages.paths if p != "/example.net/new"]
    assert "/example.net/new" in pages.paths
    # What was fetched before is asked again only as a check (conditional), never archived
    # twice: one item per link still.
    rows = _rows(db)
    assert len(rows) == 7
    assert set(new_paths) <= {"/en.wikipedia.org/wiki/Heron",
                              "/example.org/recipes/soupe-%C3%A0-l'oignon"
                              "?utm_source=feed",
                              "/example.com/bread/sourdough", "/www.python.org/about/",
                              "/example.net/no-date"}
    assert rows[f"{base}example.net/new"]["listings"][0]["listed"] == "2024-03-09T16:00:00Z"
    assert _search_label(db, "Later") == {f"{base}example.net/no-date", f"{base}example.net/new"}


def test_buku_export_with_a_note(tmp_path: Path) -> None:
    """buku's Netscape export: tags as labels, its toolbar folder a container, the <DD>
    note as the listed item's text (searchable) and in its listing."""
    db = tmp_path / "a.db"
    res = _run(db, "--fetch", "never", f"bookmarks:{FIXTURES / 'buku-5.1.html'}")
    assert res.returncode == 0, res.stderr
    rows = _rows(db)
    assert len(rows) == 6
    heron = rows["https://en.wikipedia.org/wiki/Heron"]
    assert heron["labels"] == ["birds", "reading", "wading birds"]
    note = "Grey herons stand still for hours; a note kept in buku."
    assert heron["text"] == note and heron["listings"][0]["note"] == note
    assert rows["https://example.com/bread/sourdough"]["labels"] == ["baking"]
    hit = _cli(db, "search", "stand still")
    assert "en.wikipedia.org/wiki/Heron" in hit.stdout


def test_chromium_bookmarks_json(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    res = _run(db, "--fetch", "never", f"bookmarks:{CHROMIUM_JSON}")
    assert res.returncode == 0, res.stderr
    rows = _rows(db)
    assert len(rows) == 6  # the bookmarklet left out, the doubled python.org once
    soup = rows["https://example.org/recipes/soupe-%C3%A0-l'oignon"]
    assert soup["title"] == "Soupe à l’oignon"
    assert soup["labels"] == ["Reading", "Recipes"]  # "Other bookmarks" is a root
    # Chromium's microseconds since 1601, as written on the day the fixture was made.
    assert soup["listings"][0]["listed"].startswith("2026-11-27T13:51:14")
    assert rows["https://www.python.org/about/"]["labels"] == ["Reading"]


def test_firefox_places_read_while_the_browser_holds_it(tmp_path: Path) -> None:
    """Firefox keeps places.sqlite locked (exclusive locking mode) while it runs: the
    source reads a copy, neither waiting for nor taking the lock."""
    profile = tmp_path / "profile"
    profile.mkdir()
    places = profile / "places.sqlite"
    places.write_bytes(gzip.decompress(PLACES_GZ.read_bytes()))
    holder = sqlite3.connect(places, timeout=0)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("UPDATE moz_bookmarks SET title = title")
    try:
        db = tmp_path / "a.db"
        res = _run(db, "--fetch", "never", f"bookmarks:{places}")
        assert res.returncode == 0, res.stderr
        rows = _rows(db)
    finally:
        holder.rollback()
        holder.close()
    assert len(rows) == 6
    heron = rows["https://en.wikipedia.org/wiki/Heron"]
    assert heron["labels"] == ["birds", "Reading", "wading birds"]  # folder and tags
    assert heron["listings"][0]["listed"] == "2023-11-26T12:00:00Z"
    assert rows["https://www.python.org/about/"]["labels"] == [
        "programming", "python", "Reading", "reference"]
    assert not list(profile.glob("places.sqlite-*"))  # nothing written beside it


NETSCAPE_HEAD = ('<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<META HTTP-EQUIV="Content-Type" '
                 'CONTENT="text/html; charset=UTF-8">\n<TITLE>Bookmarks</TITLE>\n'
                 '<H1>Bookmarks</H1>\n<DL><p>\n')


def test_hostile_exports_are_typed_records(tmp_path: Path) -> None:
    """Bad dates, bad bytes, absurd nesting and damaged files: each a warning or a typed
    record, and the run goes on to the next source."""
    bad_dates = tmp_path / "dates.html"
    bad_dates.write_bytes((
        NETSCAPE_HEAD
        + '<DT><A HREF="https://a.example/1" ADD_DATE="yesterday">One</A>\n'
        + '<DD>A note\nover two lines\n'
        + '<DT><A HREF="https://a.example/2" ADD_DATE="99999999999999999999999">Two</A>\n'
        + '<DT><A HREF="https://a.example/3" ADD_DATE="1600000000000">Three ms</A>\n'
        + '</DL><p>\n').encode() + b'<DT><A HREF="https://a.example/4">Caf\xe9 latin-1</A>\n')
    deep = tmp_path / "deep.html"
    depth = 20_000
    deep.write_text(NETSCAPE_HEAD + "".join(f"<DT><H3>f{i}</H3>\n<DL><p>\n"
                                            for i in range(depth))
                    + '<DT><A HREF="https://deep.example/x">Deep</A>\n'
                    + "</DL><p>\n" * depth + '<DT><A HREF="https://deep.example/y">Top</A>\n'
                    + "</DL>\n", "utf-8")
    truncated = tmp_path / "Bookmarks"
    truncated.write_bytes(CHROMIUM_JSON.read_bytes()[:2000])
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 10)
    # Internet Explorer writes the system code page and declares nothing.
    ie = tmp_path / "ie.htm"
    ie.write_bytes(b"<!DOCTYPE NETSCAPE-Bookmark-file-1>\r\n<TITLE>Bookmarks</TITLE>\r\n"
                   b"<DL><p>\r\n<DT><H3 FOLDED>Liens fran\xe7ais</H3>\r\n<DL><p>\r\n"
                   b'<DT><A HREF="https://ie.example/caf%C3%A9" ADD_DATE="1401000000">'
                   b"Caf\xe9 cr\xe8me \x96 \x93menu\x94</A>\r\n</DL><p>\r\n</DL><p>\r\n")
    huge = tmp_path / "huge.html"
    huge.write_text(NETSCAPE_HEAD + "".join(
        f'<DT><A HREF="https://big.example/{i}">Link {i}</A>\n' for i in range(40_000)),
        "utf-8")
    cut_places = tmp_path / "places.sqlite"  # a copy cut short, as a full disk leaves it
    cut_places.write_bytes(gzip.decompress(PLACES_GZ.read_bytes())[:40_000])
    db = tmp_path / "a.db"
    res = _run(db, "--fetch", "never", "--max-file-size", "1", f"bookmarks:{bad_dates}",
               f"bookmarks:{deep}", f"bookmarks:{truncated}", f"bookmarks:{junk}",
               f"bookmarks:{ie}", f"bookmarks:{huge}", f"bookmarks:{cut_places}")
    assert res.returncode == 1  # three files failed; the rest is archived
    assert f"{truncated}: corrupt: damaged JSON" in res.stderr
    assert f"{junk}: unsupported:" in res.stderr
    assert f"{huge}: too_large:" in res.stderr  # past --max-file-size (1 MiB)
    assert f"{cut_places}: corrupt:" in res.stderr
    assert "Traceback" not in res.stderr
    rows = _rows(db)
    one = rows["https://a.example/1"]
    assert one["status"] == "listed" and one["listings"][0]["listed"] is None
    assert one["warnings"] == ["date 'yesterday' is not a date"]
    assert one["text"] == "A note\nover two lines"  # the <DD>, searchable
    assert rows["https://a.example/2"]["warnings"][0].startswith("date '9999")
    assert rows["https://a.example/3"]["listings"][0]["listed"] == "2020-09-13T12:26:40Z"
    # Declared UTF-8, one Latin-1 byte: the link is kept, the byte replaced, and said so.
    four = rows["https://a.example/4"]
    assert four["title"] == "Caf\ufffd latin-1" and "UTF-8" in four["warnings"][0]
    deep_x = rows["https://deep.example/x"]
    assert len(deep_x["labels"]) == 64 and "folder levels" in deep_x["warnings"][0]
    assert rows["https://deep.example/y"]["labels"] == []  # the stack came back up
    assert rows[str(truncated)]["error"]["kind"] == "corrupt"
    cafe = rows["https://ie.example/caf%C3%A9"]
    assert cafe["title"] == "Café crème – “menu”" and cafe["labels"] == ["Liens français"]
    assert not cafe.get("warnings")


def test_read_later_exports_by_their_documented_formats(tmp_path: Path) -> None:
    """Pocket's CSV, Instapaper's CSV, Omnivore's ZIP of metadata JSON and Pinboard's JSON,
    each in the columns and fields their services document."""
    pocket = tmp_path / "part_000000.csv"
    pocket.write_text(
        "title,url,time_added,tags,status\n"
        "Heron facts,https://p.example/heron,1700000000,birds|nature,unread\n"
        '"Soup, French",https://p.example/soup,1700000100,,archive\n', "utf-8")
    instapaper = tmp_path / "instapaper-export.csv"
    instapaper.write_text(
        "URL,Title,Selection,Folder,Timestamp,Tags\n"
        'https://i.example/a,Article A,A quoted passage,Unread,1690000000,"[""longread""]"\n'
        "https://i.example/b,Article B,,Science,1690000100,[]\n", "utf-8")
    omnivore = tmp_path / "omnivore.zip"
    with zipfile.ZipFile(omnivore, "w") as z:
        z.writestr("metadata_0_to_2.json", json.dumps([
            {"id": "1", "slug": "x", "title": "Omni one", "description": "Its excerpt",
             "author": "A", "url": "https://o.example/1", "state": "Archived",
             "labels": ["Newsletter", "AI"], "savedAt": "2024-01-02T03:04:05.000Z"},
            {"id": "2", "title": "Omni two", "url": "https://o.example/2", "labels": [],
             "savedAt": "not a date"}]))
        z.writestr("content/x.html", "<html>saved article</html>")
    pocket_zip = tmp_path / "pocket.zip"
    with zipfile.ZipFile(pocket_zip, "w") as z:
        z.writestr("part_000000.csv", "title,url,time_added,tags,status\n"
                   "Zipped,https://p.example/zipped,1700000200,later,unread\n")
    ril = tmp_path / "ril_export.html"
    ril.write_text(
        '<!DOCTYPE html>\n<html><head><meta http-equiv="Content-Type" content="text/html; '
        'charset=UTF-8"><title>Pocket Export</title></head><body>\n<h1>Unread</h1>\n<ul>\n'
        '<li><a href="https://p.example/ril" time_added="1500000000" tags="old,web">'
        "Old Pocket</a></li>\n</ul>\n<h1>Read Archive</h1>\n<ul>\n</ul>\n</body></html>",
        "utf-8")
    pinboard = tmp_path / "pinboard_export.json"
    pinboard.write_text(json.dumps([
        {"href": "https://pb.example/a", "description": "Pin A", "extended": "why I kept it",
         "meta": "m", "hash": "h", "time": "2011-08-08T19:51:42Z", "shared": "yes",
         "toread": "no", "tags": "python web"}]), "utf-8")
    db = tmp_path / "a.db"
    res = _run(db, "--fetch", "never", *(f"bookmarks:{p}" for p in
                                         (pocket, instapaper, omnivore, pinboard,
                                          pocket_zip, ril)))
    assert res.returncode == 0, res.stderr
    rows = _rows(db)
    assert len(rows) == 9
    assert rows["https://p.example/zipped"]["labels"] == ["later"]
    ril_row = rows["https://p.example/ril"]
    assert ril_row["title"] == "Old Pocket" and ril_row["labels"] == ["old", "web"]
    assert ril_row["listings"][0]["listed"] == "2017-07-14T02:40:00Z"
    assert rows["https://p.example/heron"]["labels"] == ["birds", "nature"]
    assert rows["https://p.example/heron"]["listings"][0]["listed"] == "2023-11-14T22:13:20Z"
    assert rows["https://p.example/soup"]["title"] == "Soup, French"
    a = rows["https://i.example/a"]
    assert a["labels"] == ["longread", "Unread"] and a["text"] == "A quoted passage"
    assert rows["https://i.example/b"]["labels"] == ["Science"]
    one = rows["https://o.example/1"]
    assert one["labels"] == ["AI", "Newsletter"] and one["text"] == "Its excerpt"
    assert one["listings"][0]["listed"] == "2024-01-02T03:04:05Z"
    assert rows["https://o.example/2"]["warnings"] == ["date 'not a date' is not a date"]
    # Named without bookmarks:, Pocket's and Instapaper's CSVs are still read as exports.
    bare = tmp_path / "bare.db"
    res = _run(bare, "--fetch", "never", pocket, instapaper)
    assert res.returncode == 0, res.stderr
    bare_rows = _rows(bare)
    assert bare_rows["https://p.example/heron"]["labels"] == ["birds", "nature"]
    assert bare_rows["https://i.example/a"]["title"] == "Article A"
    pin = rows["https://pb.example/a"]
    assert pin["title"] == "Pin A" and pin["text"] == "why I kept it"
    assert pin["labels"] == ["python", "web"]


def test_gmail_labels_are_labels_like_folders(tmp_path: Path) -> None:
    """A mailed link carries its mail's Gmail labels; `search --label` finds it by them as
    it finds bookmarks by folder, in one archive, and `export --label` keeps only them."""
    from gmail_fake import serve_fake_gmail
    from test_gmail import mail, write_token

    export = tmp_path / "bookmarks.html"
    export.write_text(FIREFOX_HTML.read_text("utf-8"), "utf-8")
    db = tmp_path / "a.db"
    with serve_fake_gmail() as fake:
        token = tmp_path / "token.json"
        write_token(token, fake)
        fake.add(mail(1), labels=("INBOX", "Label_7"))  # Label_7 is named "Links"
        res = _run(db, "--fetch", "never", "--gmail-api-base", fake.url,
                   "--gmail-token-url", fake.url + "/token", "--gmail-token-file", str(token),
                   "gmail:Links", f"bookmarks:{export}")
    assert res.returncode == 0, res.stderr
    assert _search_label(db, "links") == {"https://example.org/1"}
    assert _search_label(db, "INBOX") == {"https://example.org/1"}
    assert _search_label(db, "Reading") >= {"https://en.wikipedia.org/wiki/Heron"}
    assert "https://example.org/1" not in _search_label(db, "Reading")
    out = tmp_path / "links.jsonl"
    done = _cli(db, "export", "--format", "jsonl", "--to", str(out), "--label", "Recipes")
    assert done.returncode == 0, done.stderr
    got = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert sorted(r["original"] for r in got) == [
        "https://example.com/bread/sourdough",
        "https://example.org/recipes/soupe-%C3%A0-l'oignon?utm_source=feed"]
    assert all("Recipes" in r["labels"] for r in got)
    assert {r["listings"][0]["title"] for r in got} == {"Sourdough bread 日本語",
                                                         "Soupe à l’oignon"}


# -- exports from other tools, kept in a bookmark parser's test suite ---------------------
# (tests/fixtures/bookmarks/README.md says where each file comes from and its license)

def _hrefs(export: Path) -> set[str]:
    """The links the export names, read straight from its HREF attributes (not through
    textsieve's parser): what one item per distinct link is counted against."""
    import html

    return {html.unescape(h) for h in re.findall(r'<A HREF="([^"]*)"',
                                                  export.read_text("utf-8"), re.I)}


def _real_export(tmp_path: Path, name: str) -> tuple[dict[str, dict[str, Any]], Path]:
    """`textsieve run --fetch never bookmarks:FILE` on the export as its tool wrote it; each
    item by the link as the export gives it (its Markdown link), after checking that
    there is one item per distinct link, nothing fetched and nothing that crashed."""
    export = FIXTURES / name
    db = tmp_path / "a.db"
    res = _run(db, "--fetch", "never", f"bookmarks:{export}")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    assert re.search(r"\b0 with errors\b", res.stderr), res.stderr
    by_link: dict[str, dict[str, Any]] = {}
    for rec in _rows(db).values():
        m = re.match(r"\[[^\n]*?\]\(<([^>\n]*)>\)", str(rec["markdown"]))
        assert m, rec["markdown"]
        by_link[m.group(1)] = rec
        # Listed only: never fetched (a fetch here, offline, would be an error or a page).
        assert rec["status"] == "listed" and not rec["captures"], rec
    assert set(by_link) == _hrefs(export)
    return by_link, db


def test_internet_explorer_11_nested_favorites(tmp_path: Path) -> None:
    """IE 11's export: folders three deep written as indented <H3>/<DL>, an empty
    folder, links at the top level, LAST_VISIT/ICON_URI attributes that are not dates of
    saving."""
    rows, db = _real_export(tmp_path, "ie11-nested.htm")
    assert len(rows) == 27
    php = rows["http://phpsadness.com/"]
    assert php["title"] == "PHP Sadness" and php["labels"] == ["Dev", "PHP"]
    assert php["listings"][0]["listed"] == "2016-06-18T17:06:55Z"  # ADD_DATE 1466269615
    store = rows["http://go.microsoft.com/fwlink/?linkid=140813"]
    assert store["title"] == "Microsoft Store" and store["labels"] == ["Microsoft Websites"]
    # ADD_DATE, not the later LAST_VISIT (1387129534), is when it was saved.
    assert store["listings"][0]["listed"] == "2013-03-11T21:39:26Z"
    top = rows["http://lmgtfy.com/"]
    assert top["title"] == "Let me google that for you" and top["labels"] == []
    assert rows["https://coderwall.com/p/euwpig/a-better-git-log"]["title"] == \
        "A better git log (Example) Coderwall"
    # A folder's links after a closed subfolder are in the folder, not the subfolder.
    assert rows["http://hginit.com/"]["labels"] == ["Dev", "SCM"]
    assert rows["http://developerexcuses.com/"]["labels"] == ["Dev"]
    assert len(_search_label(db, "SCM")) == 3
    assert _search_label(db, "Links") == set()  # an empty folder names nothing


def test_delicious_export_tags_and_notes(tmp_path: Path) -> None:
    """Delicious: a flat list, TAGS as labels, <DD> notes, PRIVATE flags, a query string
    with a bare "&"."""
    rows, db = _real_export(tmp_path, "delicious.htm")
    assert len(rows) == 5
    fmt = rows["https://msdn.microsoft.com/en-us/library/aa753582%28v=vs.85%29.aspx"]
    assert fmt["title"] == "Netscape Bookmark File Format"
    assert fmt["labels"] == ["bookmark", "format", "netscape", "xml"]
    assert fmt["listings"][0]["listed"] == "2010-03-17T23:00:00Z"  # ADD_DATE 1268866800
    assert fmt["listings"][0]["note"] == "Windows Internet Explorer Favorites file format"
    private = rows["https://sebastian-bergmann.de/archives/881-Testing-Your-Privates.html"]
    assert private["labels"] == ["php", "private", "test"]
    assert private["listings"][0]["note"] is None  # no <DD>: the next link's is not its
    turtle = rows["http://storml.deviantart.com/art/Mine-Turtle-Instructions-302477240"
                  "?q=in%3Ascraps%20sort%3Atime%20gallery%3Astorml&qo=1"]
    assert turtle["title"] == "Paper craft Mine Turtle" and turtle["text"] == '"Hello!"'
    assert rows["http://fontfamily.io/"]["labels"] == ["@font-face", "os", "typography"]
    assert "fontfamily.io" in _cli(db, "search", "default local fonts").stdout


def test_shaarli_export_notes_and_relative_note_link(tmp_path: Path) -> None:
    """Shaarli: entity-escaped HREFs and notes over several paragraphs, a title with a
    leading space, and a note-only bookmark exported as a relative link ("?lY47tw"),
    which is kept as listed with a warning that says why it is not fetched."""
    rows, db = _real_export(tmp_path, "shaarli.htm")
    assert len(rows) == 6
    wiki = rows["https://github.com/shaarli/Shaarli/wiki"]
    assert wiki["title"] == \
        "Shaarli: the personal, minimalist, super-fast, no-database delicious clone"
    assert wiki["labels"] == ["opensource", "software"]
    assert wiki["listings"][0]["listed"] == "2016-03-30T20:49:33Z"  # ADD_DATE 1459370973
    assert wiki["text"].startswith("Welcome to Shaarli! This is your first public bookmark.")
    assert '\n\nTo learn how to use Shaarli, consult the link "Help/documentation"' in \
        wiki["text"]
    # &amp; in the HREF is an "&" in the link.
    assert "http://storml.deviantart.com/art/Mine-Turtle-Instructions-302477240?q=in%3A" \
        "scraps%20sort%3Atime%20gallery%3Astorml&qo=1" in rows
    note = rows["?lY47tw"]
    assert note["title"] == "Kouign'amann recipes"
    assert note["labels"] == ["amann", "breton", "butter", "caramel", "kouign", "recipe",
                              "traditional"]
    assert note["listings"][0]["listed"] == "2016-03-30T20:56:37Z"
    assert note["text"].startswith('"Is there anything more fabulous')
    assert note["warnings"] == ["a link without a scheme (relative to the site that "
                                "exported it): kept as listed, never fetched"]
    assert "?lY47tw" in _cli(db, "search", "caramelization").stdout
