"""Archives made by older textsieves are migrated in place; newer ones are refused untouched.

The version-1 archive here is built with the real version-1 migration (``schema.migrate(conn,
target=1)``) and an item written with the same SQL the store uses, on a plain ``sqlite3``
connection: no code of the current writer is involved in making the old file.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zstandard

from textsieve.archive import Archive, ArchiveError, schema
from textsieve.archive.search import search

OLD_TEXT = "An archived heron note, written by textsieve with schema one."


def _connect(path: Path) -> sqlite3.Connection:
    """A bare connection with the one SQL function the schema's view needs."""
    conn = sqlite3.connect(path, isolation_level=None)
    zd = zstandard.ZstdDecompressor()
    conn.create_function("ts_unzstd", 1,
                         lambda b: zd.decompress(b).decode("utf-8") if b else "",
                         deterministic=True)
    return conn


def make_v1_archive(path: Path) -> None:
    conn = _connect(path)
    assert schema.migrate(conn, target=1) == 0
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    now = time.time()
    text = zstandard.ZstdCompressor(level=9).compress(OLD_TEXT.encode("utf-8"))
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO meta VALUES ('created', '2020-01-01T00:00:00')")
    conn.execute("INSERT INTO runs (started, ended, status) VALUES (?, ?, 'completed')",
                 (now, now))
    conn.execute("INSERT INTO sources (spec) VALUES ('dir:/old')")
    conn.execute(
        "INSERT INTO items (key, original, name, sha256, size, mtime_ns, mime_type, title, "
        "metadata, status, text, text_chars, extractor_version, first_seen, last_seen, "
        "extracted_at) VALUES ('/old/note.txt', '/old/note.txt', 'note.txt', ?, ?, 1, "
        "'text/plain', 'Old note', '{}', 'ok', ?, ?, '1:text/1', ?, ?, ?)",
        (hashlib.sha256(OLD_TEXT.encode()).hexdigest(), len(OLD_TEXT), text, len(OLD_TEXT),
         now, now, now))
    item_id = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
    conn.execute("INSERT INTO items_fts (rowid, title, text) VALUES (?, ?, ?)",
                 (item_id, "Old note", OLD_TEXT))
    conn.execute("INSERT INTO provenance VALUES (?, 1, 1, 1)", (item_id,))
    conn.execute("COMMIT")
    conn.close()


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def state(p: Path) -> tuple[str, int]:
    return hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns


def test_a_version_1_archive_is_migrated_and_keeps_its_items(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    make_v1_archive(db)
    assert schema.VERSION > 1

    # Readers do not migrate: a clear error, and the file is left as it was.
    before = state(db)
    with pytest.raises(ArchiveError, match="needs migrating"):
        Archive(db, readonly=True)
    p = subprocess.run([sys.executable, "-m", "textsieve", "search", "heron",
                        "--archive", str(db)], capture_output=True, text=True)
    assert p.returncode == 1 and "needs migrating" in p.stderr and "Traceback" not in p.stderr
    assert state(db) == before

    with Archive(db) as a:
        c = a.conn
        assert c.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION
        assert c.execute("PRAGMA application_id").fetchone()[0] == schema.APPLICATION_ID
        assert {"etag", "last_modified"} <= columns(c, "items")
        assert c.execute("SELECT value FROM meta WHERE key = 'created'").fetchone()[0] == \
            "2020-01-01T00:00:00"
        (item_id,) = c.execute("SELECT id FROM items WHERE key = '/old/note.txt'").fetchone()
        doc = a.document(item_id)
        assert doc is not None and doc.text == OLD_TEXT and doc.title == "Old note"
        assert doc.extractor == "1:text/1"
        hits = search(a, "heron")
        assert [(h.id, h.where) for h in hits] == [(item_id, ["/old/note.txt"])]

    # Opening again is a no-op, and a run adds to the migrated archive.
    src = tmp_path / "src"
    src.mkdir()
    (src / "new.txt").write_text("a new heron note\n", encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "textsieve", "run", str(src), "--archive",
                        str(db), "-q", "-j", "1"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    with Archive(db, readonly=True) as a:
        assert a.conn.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION
        assert sorted(h.where[0] for h in search(a, "heron")) == \
            sorted(["/old/note.txt", str(src / "new.txt")])
        extracted = [json.loads(c)["extracted"] if c != "{}" else None for (c,) in
                    a.conn.execute("SELECT counts FROM runs ORDER BY id")]
        assert extracted == [None, 1]  # the old run, then ours: only the new file


def test_a_failed_migration_step_leaves_the_previous_version(tmp_path: Path) -> None:
    """Each step is one transaction: a step that fails half-way leaves nothing behind."""
    db = tmp_path / "odd.db"
    make_v1_archive(db)
    conn = _connect(db)
    conn.execute("ALTER TABLE items ADD COLUMN last_modified TEXT")  # v2's second statement
    conn.close()                                                   # will now fail
    with pytest.raises(ArchiveError, match="duplicate column"):
        Archive(db)
    conn = _connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert "etag" not in columns(conn, "items")  # v2's first statement was rolled back
    conn.close()


def test_an_archive_from_a_newer_textsieve_is_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / "future.db"
    with Archive(db):
        pass
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {schema.VERSION + 1}")
    conn.close()
    before = state(db)
    for readonly in (False, True):
        with pytest.raises(ArchiveError, match="newer textsieve"):
            Archive(db, readonly=readonly)
    p = subprocess.run([sys.executable, "-m", "textsieve", "run", str(tmp_path), "--archive",
                        str(db), "-q"], capture_output=True, text=True)
    assert p.returncode == 1 and "newer textsieve" in p.stderr and "Traceback" not in p.stderr
    assert state(db) == before
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION + 1
    conn.close()


def _zst(text: str) -> bytes:
    return zstandard.ZstdCompressor(level=9).compress(text.encode("utf-8"))


def make_v5_archive_with_credentials(path: Path) -> dict[str, int]:
    """An archive as textsieve wrote it before the credential fix (schema 5), keys kept
    ``user:secret@``: a page fetched with a password, a ZIP with a member, the same page
    named by two users (one row each then), and a clean twin fetched after the fix."""
    conn = _connect(path)
    schema.migrate(conn, target=5)
    now = time.time()
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO runs (started, ended, status, sources, options) "
                 "VALUES (?, ?, 'completed', ?, ?)",
                 (now, now, json.dumps(["url:https://alice:hunter2@example.com/page",
                                        "urls:/lists/l.txt"]),
                  json.dumps({"proxy": "http://bob:sw0rdfish@proxy.example:3128/"})))
    conn.execute("INSERT INTO sources (spec) VALUES "
                 "('url:https://alice:hunter2@example.com/page'), ('urls:/lists/l.txt'), "
                 "('url:https://example.com/page')")
    ids: dict[str, int] = {}

    def item(name: str, key: str, original: str | None, title: str, text: str, source: int,
             parent: int | None = None, status: str = "ok", at: float = now,
             meta: dict[str, object] | None = None, error: str | None = None) -> None:
        conn.execute(
            "INSERT INTO items (key, original, parent_id, name, status, error_message, title, "
            "metadata, text, text_chars, first_seen, last_seen, extracted_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key, original, parent, name, status, error, title, json.dumps(meta or {}),
             _zst(text), len(text), at, at, at))
        ids[name] = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
        conn.execute("INSERT INTO items_fts (rowid, title, text) VALUES (?, ?, ?)",
                     (ids[name], title, text))
        if parent is None:
            conn.execute("INSERT INTO provenance VALUES (?, ?, 1, 1)", (ids[name], source))

    item("page", "https://alice:hunter2@example.com/page",
         "https://alice:hunter2@example.com/page?utm_source=x",
         "Moved from https://alice:hunter2@example.com/page", "a kingfisher page", 2,
         at=now - 100, meta={"extra": {"url": "https://alice:hunter2@example.com/page",
                                       "redirects": ["http://alice:hunter2@example.com/p"]}})
    item("twin", "https://example.com/page", "https://example.com/page", "Twin",
         "a newer kingfisher page", 3)
    item("zip", "http://carol:opensesame@files.example/a.zip",
         "http://carol:opensesame@files.example/a.zip", "a.zip", "zip of notes", 2)
    item("member", "http://carol:opensesame@files.example/a.zip//notes.txt", None, "notes",
         "a grebe member note", 2, parent=ids["zip"])
    item("dave", "http://dave:pw1@other.example/x", "http://dave:pw1@other.example/x", "x",
         "", 2, status="error", error="HTTP 404 for http://dave:pw1@other.example/x")
    item("erin", "http://erin:pw2@other.example/x", "http://erin:pw2@other.example/x", "x",
         "an egret page", 2)
    item("file", "/home/u/mail@home.txt", "/home/u/mail@home.txt", "mail", "a file", 2)
    item("handle", "http://example.org/@heron?b=2&a=1", None, "@heron", "", 2)
    conn.execute("COMMIT")
    conn.close()
    return ids


SECRETS = ("hunter2", "sw0rdfish", "opensesame", "pw1", "pw2", "alice:", "carol:", "dave:",
           "erin:", "bob:")


def test_credentials_from_before_the_fix_are_scrubbed_on_open(tmp_path: Path) -> None:
    db = tmp_path / "creds.db"
    ids = make_v5_archive_with_credentials(db)
    raw = db.read_bytes()
    assert all(s.encode() in raw for s in ("hunter2", "opensesame", "pw1"))  # the premise

    with Archive(db) as a:
        c = a.conn
        keys = dict(c.execute("SELECT key, id FROM items"))
        # The page and its clean twin are one row now; the twin is newer, so it survives
        # with its text, and the older row's provenance (the URL list) comes along.
        assert keys["https://example.com/page"] == ids["twin"]
        assert {r[0] for r in c.execute("SELECT source_id FROM provenance WHERE item_id = ?",
                                        (ids["twin"],))} == {2, 3}
        # The ZIP and its member are re-keyed, the member under its parent's new key.
        assert keys["http://files.example/a.zip"] == ids["zip"]
        assert keys["http://files.example/a.zip//notes.txt"] == ids["member"]
        # dave's 404 and erin's page were two rows of one URL: the ok one survives.
        assert keys["http://other.example/x"] == ids["erin"]
        assert keys["/home/u/mail@home.txt"] == ids["file"]  # a path, not a URL: untouched
        # An '@' in a path is no credential: that key is left exactly as it was.
        assert keys["http://example.org/@heron?b=2&a=1"] == ids["handle"]
        assert len(keys) == 6
        specs = [r[0] for r in c.execute("SELECT spec FROM sources ORDER BY id")]
        assert specs == ["urls:/lists/l.txt", "url:https://example.com/page"]
        (original,) = c.execute("SELECT original FROM items WHERE id = ?",
                                (ids["zip"],)).fetchone()
        assert original == "http://files.example/a.zip"
        (run_sources, run_options) = c.execute("SELECT sources, options FROM runs").fetchone()
        assert json.loads(run_sources)[0] == "url:https://example.com/page"
        assert json.loads(run_options) == {"proxy": "http://proxy.example:3128/"}
        for kind in ("row", "instance"):
            c.execute(f"CREATE VIRTUAL TABLE temp.v_{kind} USING fts5vocab("
                      f"'main', 'items_fts', '{kind}')")
        terms = {r[0] for r in c.execute("SELECT term FROM temp.v_row")}
        assert {"kingfisher", "grebe", "egret"} <= terms
        assert not terms & {"hunter2", "alice", "carol", "opensesame", "pw1", "pw2"}
        assert [h.id for h in search(a, "grebe")] == [ids["member"]]
        assert [h.id for h in search(a, "egret")] == [ids["erin"]]
        assert [h.id for h in search(a, "newer kingfisher")] == [ids["twin"]]
        assert not search(a, "hunter2")
        assert a.document(ids["member"]).text == "a grebe member note"  # type: ignore[union-attr]
        dump = "\n".join(c.iterdump())
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    for secret in SECRETS:
        assert secret not in dump
    raw = db.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("creds.db-*"))
    for secret in SECRETS:
        assert secret.encode() not in raw, secret


def test_a_version_7_archive_gets_captures_and_keeps_its_text_through_link_rot(
        tmp_path: Path) -> None:
    """Version 8 splits what was read (captures) from the source's state: an item of an
    older archive becomes its own first capture, and a fetch that fails afterwards (a 404)
    leaves its text in place, as for items archived by this textsieve."""
    from site_server import Site

    site = Site()  # answers 404 for every page: the page is gone
    url = site.url("/essay.html")
    db = tmp_path / "v7.db"
    conn = _connect(db)
    schema.migrate(conn, target=7)
    now = time.time()
    text = zstandard.ZstdCompressor(level=9).compress(OLD_TEXT.encode("utf-8"))
    meta = json.dumps({"extra": {"url": url, "final_url": url, "http_status": 200,
                                 "content_type": "text/html"}})
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO runs (started, ended, status) VALUES (?, ?, 'completed')",
                 (now, now))
    conn.execute("INSERT INTO sources (spec) VALUES (?)", (f"url:{url}",))
    for key, status, blob in ((url, "ok", text), ("/gone.txt", "error", None)):
        conn.execute(
            "INSERT INTO items (key, original, name, sha256, mime_type, title, metadata, "
            "status, text, text_chars, extractor_version, first_seen, last_seen, "
            "extracted_at, etag) VALUES (?, ?, 'essay.html', 'abc', 'text/html', 'Old essay', "
            "?, ?, ?, ?, '1:html/1#00000000', ?, ?, ?, '\"v1\"')",
            (key, key, meta, status, blob, len(OLD_TEXT) if blob else 0, now - 86400,
             now - 86400, now - 86400))
        conn.execute("INSERT INTO items_fts (rowid, title, text) VALUES "
                     "(last_insert_rowid(), 'Old essay', ?)", (OLD_TEXT if blob else "",))
    conn.execute("COMMIT")
    conn.close()

    with Archive(db) as a:
        assert a.conn.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION
        caps = a.conn.execute("SELECT i.key, c.current, c.url, c.http_status, c.etag, "
                              "c.original, c.text FROM captures c JOIN items i "
                              "ON i.id = c.item_id").fetchall()
    assert caps == [(url, 1, url, 200, '"v1"', None, None)]  # the error item has none
    try:
        p = subprocess.run([sys.executable, "-m", "textsieve", "run", url, "--archive",
                            str(db), "-q", "--allow-private", "--retries", "0"],
                           capture_output=True, text=True, timeout=120)
    finally:
        site.stop()
    assert p.returncode == 1 and "Traceback" not in p.stderr  # the fetch failed ...
    with Archive(db, readonly=True) as a:
        (item_id,) = a.conn.execute("SELECT id FROM items WHERE key = ?", (url,)).fetchone()
        doc = a.document(item_id)
        assert doc is not None and doc.text == OLD_TEXT  # ... and the text is still there
        assert [h.id for h in search(a, "heron")] == [item_id]
        check = a.check_of(item_id)
        assert check is not None and check["error_kind"] == "http_404"
        assert check["gone_since"] is not None


def test_a_version_8_archive_keeps_its_mail_labels_as_labels(tmp_path: Path) -> None:
    """Version 9 makes labels one kind: the Gmail labels and IMAP folders of mails archived
    before are the labels of the items they named, found by `search --label`."""
    db = tmp_path / "v8.db"
    conn = _connect(db)
    schema.migrate(conn, target=8)
    now = time.time()
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO runs (started, ended, status) VALUES (?, ?, 'completed')",
                 (now, now))
    conn.execute("INSERT INTO sources (spec) VALUES ('gmail:Links')")
    for n, key in enumerate(("https://example.org/a", "https://example.org/b"), 1):
        conn.execute("INSERT INTO items (key, original, status, title, first_seen, last_seen) "
                     "VALUES (?, ?, 'ok', 'T', ?, ?)", (key, key, now, now))
        conn.execute("INSERT INTO items_fts (rowid, title, text) VALUES (?, 'T', '')", (n,))
    conn.executemany(
        "INSERT INTO mails (source_id, message_id, labels, first_run) VALUES (1, ?, ?, 1)",
        [("<1@x>", json.dumps(["INBOX", "Reading list"])), ("<2@x>", "not json"),
         ("<3@x>", json.dumps(["Later", 7]))])
    conn.executemany("INSERT INTO item_mails VALUES (?, ?)", [(1, 1), (2, 2), (2, 3)])
    conn.execute("COMMIT")
    conn.close()
    with Archive(db) as a:  # migrated when opened for writing
        assert a.conn.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION
    labels = {}
    for label in ("reading list", "INBOX", "Later"):
        p = subprocess.run([sys.executable, "-m", "textsieve", "search", "--label", label,
                            "--archive", str(db)], capture_output=True, text=True,
                           timeout=120)
        labels[label] = p.stdout.count("https://example.org/")
    assert labels == {"reading list": 1, "INBOX": 1, "Later": 1}


def test_a_version_10_archive_keeps_the_feed_details_of_its_items(tmp_path: Path) -> None:
    """Version 11 keeps what a source told of an item (a feed entry's id, its feed) with
    provenance: an archive from before takes it from its items' metadata, for the feed
    named there (or the OPML list that gave the item), so a later capture made without
    the feed says it too; an item whose metadata is not JSON is left as it was."""
    db = tmp_path / "v10.db"
    conn = _connect(db)
    schema.migrate(conn, target=10)
    now = time.time()
    feed = {"feed": "https://example.org/feed.xml", "feed_entry": "tag:x,2026:1",
            "feed_content": "article", "feed_problems": ["a date that is no date"]}
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO runs (started, ended, status) VALUES (?, ?, 'completed')",
                 (now, now))
    conn.executemany("INSERT INTO sources (spec) VALUES (?)",
                     [("feed:https://example.org/feed.xml",), ("https://example.org/a",),
                      ("opml:/subs.opml",)])
    metas = [json.dumps({"extra": {**feed, "final_url": "https://example.org/a"}}),
             json.dumps({"extra": {**feed, "feed_entry": "tag:x,2026:2"}}), "{not json"]
    for n, meta in enumerate(metas, 1):
        conn.execute("INSERT INTO items (key, original, status, metadata, first_seen, "
                     "last_seen) VALUES (?, ?, 'ok', ?, ?, ?)",
                     (f"https://example.org/{n}", f"https://example.org/{n}", meta, now, now))
    conn.executemany("INSERT INTO provenance (item_id, source_id, first_run, last_run) "
                     "VALUES (?, ?, 1, 1)", [(1, 1), (1, 2), (2, 3), (3, 1)])
    conn.execute("COMMIT")
    conn.close()
    with Archive(db) as a:  # migrated when opened for writing
        assert a.conn.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION
        facts = {(i, s): json.loads(f) if f else None for i, s, f in a.conn.execute(
            "SELECT item_id, source_id, facts FROM provenance")}
    assert facts == {(1, 1): feed, (1, 2): None,
                     (2, 3): {**feed, "feed_entry": "tag:x,2026:2"}, (3, 1): None}
