"""The archive's must-holds, end to end: real files, real ``textsieve`` processes.

* a run killed with SIGKILL part-way and re-run equals an uninterrupted run;
* a re-run over an unchanged folder extracts nothing; a changed file is re-extracted alone;
  ``--force``, ``--retry-errors`` and outdated extractor versions do what they say;
* search finds words that live only inside a PDF, a DOCX and a ZIP member, and says where;
* readers work while a run writes;
* a file that is not a textsieve archive is refused and left byte-for-byte untouched.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from textsieve.archive import Archive, ArchiveError

docx = pytest.importorskip("docx")
canvas = pytest.importorskip("reportlab.pdfgen.canvas")

WORDS = ["alder", "birch", "cedar", "dogwood", "elm", "fir", "ginkgo", "hazel", "juniper",
         "larch", "maple", "oak", "pine", "rowan", "spruce", "tamarack", "walnut", "yew"]


# -- building inputs --------------------------------------------------------------------------
def make_pdf(path: Path, lines: list[str], pages: int = 1) -> None:
    """A text PDF; ``lines`` on the first page, later pages repeat them (bulk for timing)."""
    c = canvas.Canvas(str(path))
    for page in range(pages):
        y = 800
        for line in lines if page == 0 else lines[1:]:
            c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()


def make_docx(path: Path, paragraphs: list[str]) -> None:
    d = docx.Document()
    for p in paragraphs:
        d.add_paragraph(p)
    d.save(str(path))


def _prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def make_mixed_tree(root: Path, n: int, *, pdf_pages: int = 1) -> list[Path]:
    """``n`` small files of mixed formats, each with a unique token ``uniqNNNN``."""
    rng = random.Random(1234)
    root.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for i in range(n):
        token = f"uniq{i:04d}"
        sub = root / f"d{i % 5}"
        sub.mkdir(exist_ok=True)
        kind = i % 6
        body = f"{token} {_prose(rng, 40)}"
        if kind == 0:
            p = sub / f"note{i}.txt"
            p.write_text(body + "\n", encoding="utf-8")
        elif kind == 1:
            p = sub / f"table{i}.csv"
            p.write_text("id,word,tree\n" + "".join(
                f"{j},{token if j == 0 else rng.choice(WORDS)},{rng.choice(WORDS)}\n"
                for j in range(20)), encoding="utf-8")
        elif kind == 2:
            p = sub / f"page{i}.html"
            p.write_text(f"<html><head><title>Page {i}</title></head><body><h1>{token}</h1>"
                         f"<p>{_prose(rng, 60)}</p></body></html>", encoding="utf-8")
        elif kind == 3:
            p = sub / f"doc{i}.docx"
            make_docx(p, [body, _prose(rng, 30)])
        elif kind == 4:
            p = sub / f"paper{i}.pdf"
            make_pdf(p, [token, *(_prose(rng, 10) for _ in range(30))], pdf_pages)
        else:
            p = sub / f"bundle{i}.zip"
            with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("inner/a.txt", body)
                z.writestr("inner/b.csv", f"x,y\n1,{rng.choice(WORDS)}\n")
                z.writestr("c.html", f"<p>{_prose(rng, 20)}</p>")
        out.append(p)
    return out


# -- running and reading ----------------------------------------------------------------------
def textsieve(*args: str | os.PathLike[str], cwd: Path | None = None,
              timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=timeout)


def run_cmd(src: Path, db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "textsieve", "run", str(src), "--archive", str(db),
            "-j", "2", *extra]


def snapshot(db: Path) -> dict[str, tuple]:
    """key -> (sha256, status, error_kind, extractor_version, title, text), texts decoded."""
    with Archive(db, readonly=True) as a:
        rows = a.conn.execute("SELECT key, sha256, status, error_kind, extractor_version, "
                              "title, text FROM items").fetchall()
        return {r[0]: (*r[1:6], a.unzip(r[6])) for r in rows}


def top_level_count(db: Path) -> int | None:
    """Committed top-level items, read the way another process would (None: not yet)."""
    if not db.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute(
                "SELECT count(*) FROM items WHERE parent_id IS NULL").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.OperationalError:  # not created yet / schema not there yet
        return None


def wait_for(pred: Callable[[], bool], proc: subprocess.Popen[bytes], what: str,
             limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not pred():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (rc {proc.returncode}) before {what}; "
                                 "make the input tree bigger")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def file_state(p: Path) -> tuple[str, int]:
    return hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns


def extracted_at(db: Path) -> dict[str, float]:
    with Archive(db, readonly=True) as a:
        return dict(a.conn.execute("SELECT key, extracted_at FROM items").fetchall())


def runs(db: Path) -> list[tuple[str, dict[str, int]]]:
    """(status, counts) of every run, oldest first."""
    import json

    with Archive(db, readonly=True) as a:
        return [(s, json.loads(c)) for s, c in
                a.conn.execute("SELECT status, counts FROM runs ORDER BY id")]


def live_members(pgid: int) -> list[int]:
    """Processes of a process group that are still running (zombies do not count)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(d.name))
    return out


def assert_index_matches_texts(archive: Archive) -> None:
    """The full-text index holds exactly the tokens of the stored titles and texts: no
    stale rows from replaced items, none missing. (FTS5's own 'integrity-check' with
    content cannot say this: it expects a row for every content row, and items with
    neither title nor text are deliberately not indexed.)"""
    c = archive.conn
    c.execute("INSERT INTO items_fts (items_fts) VALUES ('integrity-check')")
    c.execute("CREATE VIRTUAL TABLE temp.fresh USING fts5(title, text, "
              "tokenize = 'unicode61 remove_diacritics 2')")
    c.execute("INSERT INTO temp.fresh (rowid, title, text) "
              "SELECT id, title, text FROM items_fts_content")
    c.execute("CREATE VIRTUAL TABLE temp.v_live USING fts5vocab(main, items_fts, 'instance')")
    c.execute("CREATE VIRTUAL TABLE temp.v_fresh USING fts5vocab(temp, fresh, 'instance')")
    q = "SELECT term, doc, col, offset FROM temp.{}"
    live = set(c.execute(q.format("v_live")).fetchall())
    fresh = set(c.execute(q.format("v_fresh")).fetchall())
    assert live == fresh, (sorted(live - fresh)[:5], sorted(fresh - live)[:5])
    for t in ("v_live", "v_fresh", "fresh"):
        c.execute(f"DROP TABLE temp.{t}")


# -- 1. SIGKILL part-way, re-run: the same archive as an uninterrupted run ----------------------
N_BIG = 384  # ~1 s of work with -j 2: six 64-item batches, so a kill lands between commits


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("big") / "tree"
    make_mixed_tree(root, N_BIG, pdf_pages=3)
    return root


def _kill_part_way(src: Path, db: Path, at_least: int) -> int:
    """Start a run, SIGKILL its whole process group once ``at_least`` top-level items are
    committed; returns how many were committed when it died."""
    proc = subprocess.Popen(run_cmd(src, db, "-q"), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: (top_level_count(db) or 0) >= at_least, proc,
                 f"{at_least} items were committed")
        os.killpg(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    deadline = time.monotonic() + 10  # the workers went down with the driver
    while live_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not live_members(proc.pid)
    committed = top_level_count(db)
    assert committed is not None and at_least <= committed < N_BIG, \
        f"killed too late ({committed} of {N_BIG} committed)"
    return committed


def test_sigkill_part_way_then_rerun_equals_an_uninterrupted_run(big_tree: Path,
                                                                 tmp_path: Path) -> None:
    a, b = tmp_path / "A.db", tmp_path / "B.db"
    first = _kill_part_way(big_tree, a, 1)
    second = _kill_part_way(big_tree, a, first + 1)  # the resumed run is killed as well
    assert first < second

    done = subprocess.run(run_cmd(big_tree, a), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    clean = subprocess.run(run_cmd(big_tree, b, "-q"), capture_output=True, text=True,
                           timeout=120)
    assert clean.returncode == 0, clean.stderr

    # The same items (top-level and children), the same hashes, statuses and texts.
    snap_a, snap_b = snapshot(a), snapshot(b)
    assert set(snap_a) == set(snap_b)
    assert sum(1 for k in snap_a if "//" in k) == N_BIG // 6 * 3  # zip members are there
    diff = [k for k in snap_a if snap_a[k] != snap_b[k]]
    assert not diff, diff[:5]
    assert all(v[1] == "ok" for v in snap_a.values())

    # The resumed runs redid nothing that had been committed, and lost nothing.
    statuses = runs(a)
    assert [s for s, _ in statuses] == ["interrupted", "interrupted", "completed"]
    last = statuses[-1][1]
    assert last["extracted"] == N_BIG - second and last["skipped"] == second

    with Archive(a) as arch:
        c = arch.conn
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert c.execute("SELECT count(*), count(DISTINCT key) FROM items").fetchone() == \
            (len(snap_a), len(snap_a))
        assert c.execute("SELECT count(*) FROM items c LEFT JOIN items p ON p.id = c.parent_id "
                         "WHERE c.parent_id IS NOT NULL AND p.id IS NULL").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM items i WHERE parent_id IS NULL AND NOT EXISTS "
                         "(SELECT 1 FROM provenance p WHERE p.item_id = i.id)").fetchone()[0] == 0
        assert_index_matches_texts(arch)
        hits = c.execute("SELECT count(*) FROM items_fts WHERE items_fts MATCH 'uniq*'")
        assert hits.fetchone()[0] == N_BIG


# -- 2. incremental re-runs --------------------------------------------------------------------
def _run_ok(src: Path, db: Path, *extra: str, rc: int = 0) -> dict[str, int]:
    """One CLI run; returns its counts from the runs table (and checks its summary)."""
    p = subprocess.run(run_cmd(src, db, *extra), capture_output=True, text=True, timeout=120)
    assert p.returncode == rc, p.stderr
    assert "Traceback" not in p.stderr
    status, counts = runs(db)[-1]
    assert status == "completed"
    summary = {line.rsplit(None, 1)[0].strip(): line.rsplit(None, 1)[1]
               for line in p.stderr.splitlines()
               if line.startswith(("extracted", "unchanged")) and line[-1].isdigit()}
    assert summary["extracted"] == str(counts["extracted"])
    return counts


def _changed(before: dict[str, float], after: dict[str, float]) -> set[str]:
    """Keys extracted again (or newly) between two extracted_at snapshots."""
    return {k for k, t in after.items() if before.get(k) != t}


def test_incremental_reruns(tmp_path: Path) -> None:
    src, db = tmp_path / "src", tmp_path / "a.db"
    files = make_mixed_tree(src, 12)
    note, bundle = files[0], files[5]
    assert note.suffix == ".txt" and bundle.suffix == ".zip"

    t0 = time.monotonic()
    counts = _run_ok(src, db)
    first = time.monotonic() - t0
    assert counts["extracted"] == 12 and counts["why_new"] == 12
    at = extracted_at(db)
    assert len(at) == 12 + 2 * 3  # two zips of three members

    # Unchanged folder: nothing extracted, nothing rewritten.
    t0 = time.monotonic()
    counts = _run_ok(src, db)
    again = time.monotonic() - t0
    assert counts["extracted"] == 0 and counts["skipped"] == 12
    assert extracted_at(db) == at
    print(f"first run {first:.2f}s, unchanged re-run {again:.2f}s")

    # One file's content changes: that one alone is extracted again.
    mtime = note.stat().st_mtime_ns
    note.write_text("rewritten entirely\n", encoding="utf-8")
    os.utime(note, ns=(mtime + 10**9, mtime + 10**9))
    counts = _run_ok(src, db)
    assert counts["extracted"] == 1 and counts["why_changed"] == 1
    now = extracted_at(db)
    assert _changed(at, now) == {str(note)}
    assert snapshot(db)[str(note)][5] == "rewritten entirely"
    at = now

    # A zip whose members change: its children are replaced, not accumulated.
    with zipfile.ZipFile(bundle, "w") as z:
        z.writestr("only/member.txt", "the one member left")
    counts = _run_ok(src, db)
    assert counts["extracted"] == 1
    now = extracted_at(db)
    assert {k for k in now if k.startswith(f"{bundle}//")} == {f"{bundle}//only/member.txt"}
    assert _changed(at, now) == {str(bundle), f"{bundle}//only/member.txt"}
    at = now

    # touch without a content change: nothing extracted, the new mtime is recorded.
    other = files[1]
    later = other.stat().st_mtime_ns + 5 * 10**9
    os.utime(other, ns=(later, later))
    counts = _run_ok(src, db)
    assert counts["extracted"] == 0
    assert extracted_at(db) == at
    with Archive(db, readonly=True) as a:
        assert a.conn.execute("SELECT mtime_ns FROM items WHERE key = ?",
                              (str(other),)).fetchone()[0] == later

    # A new file is added.
    new = src / "new.txt"
    new.write_text("brand new\n", encoding="utf-8")
    counts = _run_ok(src, db)
    assert counts["extracted"] == 1 and counts["why_new"] == 1
    now = extracted_at(db)
    assert _changed(at, now) == {str(new)}
    at = now

    # A corrupt PDF fails; --retry-errors redoes it and nothing else.
    bad = src / "broken.pdf"
    bad.write_bytes(b"%PDF-1.7\n1 0 obj <</Type /Catalog>>\n" + bytes(range(256)) * 4)
    counts = _run_ok(src, db, rc=1)
    assert counts["extracted"] == 1 and counts["status_error"] == 1
    at = extracted_at(db)
    counts = _run_ok(src, db, "--retry-errors", rc=1)
    assert counts["extracted"] == 1 and counts["why_failed"] == 1
    now = extracted_at(db)
    assert _changed(at, now) == {str(bad)}
    at = now

    # A plain re-run does not retry a failure that would repeat (same bytes, same
    # extractor) ...
    counts = _run_ok(src, db)
    assert counts["extracted"] == 0
    # ... but does retry one that may not (a timeout, a crash).
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE items SET error_kind = 'timeout' WHERE key = ?", (str(bad),))
    conn.close()
    counts = _run_ok(src, db, rc=1)
    assert counts["extracted"] == 1 and counts["why_failed"] == 1
    at = extracted_at(db)

    # A file deleted from the folder stays in the archive (no deletion semantics yet).
    bad.unlink()
    counts = _run_ok(src, db)
    assert counts["extracted"] == 0 and counts["total"] == 13
    assert str(bad) in extracted_at(db)

    # An item made by an older extractor version is extracted again on the next run.
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE items SET extractor_version = '0:text/0' WHERE key = ?",
                     (str(note),))
    conn.close()
    counts = _run_ok(src, db)
    assert counts["extracted"] == 1 and counts["why_outdated"] == 1
    now = extracted_at(db)
    assert _changed(at, now) == {str(note)}
    assert snapshot(db)[str(note)][3] != "0:text/0"

    # --force redoes everything present.
    counts = _run_ok(src, db, "--force")
    assert counts["extracted"] == 13 and counts["why_forced"] == 13
    assert _changed(now, extracted_at(db)) == set(now) - {str(bad)}


def test_changed_output_options_redo_items(tmp_path: Path) -> None:
    """Like changed parameters in a build file: output options are part of an item's
    freshness (--ocr, --html, --lang ...), and a password retries what was encrypted."""
    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.txt").write_text("first words\n", encoding="utf-8")
    (src / "b.csv").write_text("x,y\n1,2\n3,4\n5,6\n", encoding="utf-8")
    from reportlab.lib.pdfencrypt import StandardEncryption
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(src / "locked.pdf"), encrypt=StandardEncryption("pw", "owner"))
    c.drawString(72, 720, "sealed words")
    c.showPage()
    c.save()
    db = tmp_path / "a.db"
    counts = _run_ok(src, db, rc=1)
    assert counts["extracted"] == 3 and counts["error_encrypted"] == 1
    assert _run_ok(src, db)["extracted"] == 0
    counts = _run_ok(src, db, "--ocr", "never", rc=1)
    assert counts["extracted"] == 3 and counts["why_outdated"] == 3  # failures too
    assert _run_ok(src, db, "--ocr", "never")["extracted"] == 0
    counts = _run_ok(src, db, "--ocr", "never", "--password", "pw")
    assert counts["extracted"] == 1 and counts["why_failed"] == 1
    assert "sealed words" in snapshot(db)[str(src / "locked.pdf")][5]


# -- 3. search ---------------------------------------------------------------------------------
def search_cli(db: Path, query: str) -> subprocess.CompletedProcess[str]:
    p = textsieve("search", query, "--archive", db)
    assert "Traceback" not in p.stderr
    return p


def hits_of(out: str) -> list[tuple[str, str]]:
    """(where, snippet) per hit from `textsieve search` output."""
    lines = out.splitlines()
    return [(lines[i], lines[i + 1].strip()) for i in range(0, len(lines) - 1, 2)]


@pytest.fixture
def search_tree(tmp_path: Path) -> tuple[Path, Path]:
    src, db = tmp_path / "src", tmp_path / "s.db"
    src.mkdir()
    make_pdf(src / "report.pdf", ["Quarterly figures", "the zephyrquill appears here only"])
    make_docx(src / "letter.docx", ["Dear reader,", "a marrowlight was seen at dawn"])
    with zipfile.ZipFile(src / "bundle.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("notes/deep/member.txt", "inside the zip lives the quintessor word")
        z.writestr("other.txt", "nothing special")
    filler = " ".join(WORDS * 3)
    (src / "dense.txt").write_text(f"grey heron {filler} heron heron heron heron\n",
                                   encoding="utf-8")
    (src / "sparse.txt").write_text(f"heron grey {filler}\n", encoding="utf-8")
    (src / "cafe.txt").write_text("we met at the café\n", encoding="utf-8")
    (src / "plain.txt").write_text("resume without accents: naive cafe\n", encoding="utf-8")
    (src / "old.txt").write_text("the obsoletium word\n", encoding="utf-8")
    _run_ok(src, db)
    return src, db


def test_search_finds_words_only_inside_pdf_docx_and_zip_member(
        search_tree: tuple[Path, Path]) -> None:
    src, db = search_tree
    for word, where in [("zephyrquill", [f"{src / 'report.pdf'}"]),
                        ("marrowlight", [f"{src / 'letter.docx'}"]),
                        ("quintessor", [f"{src / 'bundle.zip'}", "notes/deep/member.txt"])]:
        p = search_cli(db, word)
        assert p.returncode == 0, p.stderr
        hits = hits_of(p.stdout)
        assert len(hits) == 1, p.stdout
        head, snippet = hits[0]
        assert all(w in head for w in where), head
        assert f"[{word}]" in snippet


def test_search_ranking_phrases_errors_and_diacritics(search_tree: tuple[Path, Path]) -> None:
    src, db = search_tree
    hits = hits_of(search_cli(db, "heron").stdout)
    assert [h[0].split()[1] for h in hits] == [str(src / "dense.txt"), str(src / "sparse.txt")]

    hits = hits_of(search_cli(db, '"grey heron"').stdout)
    assert [h[0].split()[1] for h in hits] == [str(src / "dense.txt")]

    bad = search_cli(db, '"unbalanced')
    assert bad.returncode == 2 and bad.stdout == ""
    assert "cannot search" in bad.stderr and len(bad.stderr.splitlines()) == 1

    for query in ("cafe", "café"):  # either spelling finds both
        found = {h[0].split()[1] for h in hits_of(search_cli(db, query).stdout)}
        assert found == {str(src / "cafe.txt"), str(src / "plain.txt")}, query

    none = search_cli(db, "nowhereword")
    assert none.returncode == 1 and none.stdout == ""


def test_reextraction_removes_old_words_from_the_index(search_tree: tuple[Path, Path]) -> None:
    src, db = search_tree
    assert search_cli(db, "obsoletium").returncode == 0
    assert search_cli(db, "quintessor").returncode == 0
    (src / "old.txt").write_text("now the novelium word, longer than before\n",
                                 encoding="utf-8")
    with zipfile.ZipFile(src / "bundle.zip", "w") as z:
        z.writestr("notes/deep/member.txt", "the member now says freshling instead")
    assert _run_ok(src, db)["extracted"] == 2
    for gone in ("obsoletium", "quintessor"):
        p = search_cli(db, gone)
        assert p.returncode == 1 and p.stdout == "", p.stdout
    for new in ("novelium", "freshling"):
        assert len(hits_of(search_cli(db, new).stdout)) == 1
    with Archive(db) as a:
        assert_index_matches_texts(a)


# -- 4. reading while a run writes -------------------------------------------------------------
def _signal_group(pgid: int, sig: signal.Signals) -> None:
    """``sig`` to the run's process group; a group already gone has nothing to stop."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def test_search_while_a_run_writes(big_tree: Path, tmp_path: Path) -> None:
    """Readers see one consistent, growing snapshot at a time while a run commits, and a
    CLI search never meets a lock.

    The overlap is made certain rather than hoped for: the run is stepped. It is stopped
    (SIGSTOP on its process group) except while the in-process reader takes a snapshot,
    so however slow or loaded the machine, the run cannot finish between two snapshots
    unseen; the slow CLI searches are made while it is stopped part-way (a write
    transaction may be open then: WAL readers must not wait for it).
    """
    from textsieve.archive.search import search

    db = tmp_path / "live.db"
    proc = subprocess.Popen(run_cmd(big_tree, db, "-q"), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen: list[int] = []
    cli_checks = 0
    try:
        wait_for(lambda: (top_level_count(db) or 0) >= 1, proc, "a first commit")
        _signal_group(proc.pid, signal.SIGSTOP)
        while proc.poll() is None:
            _signal_group(proc.pid, signal.SIGCONT)  # the run writes while we read
            try:
                with Archive(db, readonly=True) as a:
                    c = a.conn
                    c.execute("BEGIN")  # one snapshot for all three reads
                    top = c.execute("SELECT count(*) FROM items WHERE parent_id IS NULL")
                    n_top = top.fetchone()[0]
                    # Every committed text with a token is in the index, and nothing else.
                    with_token = c.execute("SELECT count(*) FROM items "
                                           "WHERE ts_unzstd(text) LIKE '%uniq%'").fetchone()[0]
                    indexed = c.execute("SELECT count(*) FROM items_fts "
                                        "WHERE items_fts MATCH 'uniq*'").fetchone()[0]
                    # A committed note (documents are committed as they finish, in any
                    # order): search must find it from now on.
                    note = c.execute("SELECT key FROM items WHERE parent_id IS NULL AND "
                                     "key LIKE '%/note%.txt' ORDER BY id LIMIT 1").fetchone()
                    c.execute("COMMIT")
                    assert with_token == indexed == n_top
                    if note is not None:
                        token = f"uniq{int(Path(note[0]).stem[4:]):04d}"
                        assert [h.where[0] for h in search(a, token)] == [note[0]]
            finally:
                _signal_group(proc.pid, signal.SIGSTOP)
            assert not seen or n_top >= seen[-1]
            seen.append(n_top)
            # A CLI search (~0.3 s, a third of the run) now and then, the run stopped.
            if note is not None and n_top < N_BIG and len(seen) % 10 == 1 and \
                    cli_checks < 3:
                p = textsieve("search", token, "--archive", db)  # a committed note
                assert p.returncode == 0 and Path(note[0]).name in p.stdout, p.stderr
                assert "locked" not in p.stderr
                cli_checks += 1
            if n_top == N_BIG:  # all committed: let it end
                _signal_group(proc.pid, signal.SIGCONT)
                proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            _signal_group(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "locked" not in err.decode()
    part_way = [n for n in seen if 0 < n < N_BIG]
    assert len(part_way) >= 3 and cli_checks >= 1, seen  # the reads overlapped the writes
    print(f"{len(seen)} snapshots ({len(set(part_way))} counts part-way), {cli_checks} CLI "
          "searches during the run")


# -- 5. a file that is not a (healthy) textsieve archive is refused and left alone ------------
def _foreign_sqlite(p: Path) -> None:
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT)")
    conn.execute("INSERT INTO accounts (owner) VALUES ('someone else')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("kind, make, message", [
    ("random", lambda p: p.write_bytes(random.Random(7).randbytes(20_000)), "not an SQLite"),
    ("text", lambda p: p.write_text("my shopping list\n"), "not an SQLite"),
    ("empty", lambda p: p.write_bytes(b""), "empty file"),
    ("foreign", _foreign_sqlite, "not a textsieve archive"),
])
def test_a_foreign_file_as_archive_is_refused_and_untouched(
        tmp_path: Path, kind: str, make: Callable[[Path], object], message: str) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("hello\n")
    target = tmp_path / f"{kind}.db"
    make(target)
    os.utime(target, ns=(10**18, 10**18))  # a distinctive mtime any write would move
    before = file_state(target)
    for args in (["run", src, "-q"], ["search", "hello"], ["stats"], ["show", "1"]):
        p = textsieve(*args, "--archive", target)
        assert p.returncode == 1, (args, p.stderr)
        assert p.stderr.startswith(f"textsieve: {target}: ") and message in p.stderr, p.stderr
        assert "Traceback" not in p.stderr and p.stdout == ""
        assert file_state(target) == before
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted(["src", target.name])
    with pytest.raises(ArchiveError):
        Archive(target)
    assert file_state(target) == before


@pytest.mark.parametrize("damage", ["truncated", "holed"])
def test_a_damaged_archive_gives_a_clear_error(big_tree: Path, tmp_path: Path,
                                               damage: str) -> None:
    db = tmp_path / "a.db"
    subprocess.run(run_cmd(big_tree, db, "-q"), check=True, timeout=120)
    with Archive(db) as a:  # fold the WAL into the file, as after any finished run
        a.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    assert len(data) > 200_000
    if damage == "truncated":
        data = data[:len(data) // 2]
    else:  # pages in the middle overwritten: the header and schema still look fine
        mid = len(data) // 2
        data[mid:mid + 16 * 4096] = b"\xff" * (16 * 4096)
    db.write_bytes(bytes(data))
    for args in (["run", big_tree, "-q"], ["search", "uniq*", "-n", "1000"], ["stats"]):
        p = textsieve(*args, "--archive", db)
        assert p.returncode == 1, (args, p.stdout[-300:], p.stderr[-2000:])
        assert "Traceback" not in p.stderr, p.stderr[-2000:]
        assert p.stderr.startswith(f"textsieve: {db}: "), p.stderr
        assert "damaged" in p.stderr and "check --repair" in p.stderr, p.stderr


def test_file_names_that_are_not_utf8_are_archived_losslessly(tmp_path: Path) -> None:
    """A Latin-1 name (bytes Python can only hold as surrogates) is one item like any other:
    archived, found, shown readably, unchanged on a re-run, exported under its own bytes;
    and a UTF-8 name that spells its percent-encoded key is a different item."""
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    latin = os.path.join(os.fsencode(src / "sub"), b"caf\xe9 \xff.txt")
    with open(latin, "wb") as f:
        f.write(b"a note about sanderlings\n")
    (src / "sub" / "caf%E9 %FF.txt").write_text("a note about turnstones\n")
    (src / "plain.txt").write_text("a note about knots\n")
    db = tmp_path / "a.db"
    for n in (1, 2):
        p = textsieve("run", src, "--archive", db, "-j", "1")
        assert p.returncode == 0, p.stderr
        assert "Traceback" not in p.stderr
        with Archive(db, readonly=True) as a:
            rows = dict(a.conn.execute("SELECT key, name FROM items").fetchall())
            last = a.conn.execute("SELECT counts FROM runs ORDER BY id DESC").fetchone()[0]
        assert len(rows) == 3
        assert '"skipped": 3' in last if n == 2 else '"extracted": 3' in last
    key = f"file://{src}/sub/caf%E9 %FF.txt"
    assert rows[key] == "caf\\xe9 \\xff.txt"  # shown readably
    assert rows[str(src / "sub" / "caf%E9 %FF.txt")] == "caf%E9 %FF.txt"
    from textsieve.filekeys import key_path

    assert os.fsencode(key_path(key) or "") == latin  # the exact bytes, back from the key
    p = textsieve("search", "sanderlings", "--archive", db)
    assert p.returncode == 0 and key in p.stdout, p.stderr
    out = tmp_path / "out"
    p = textsieve("export", "--to", out, "--archive", db)
    assert p.returncode == 0, p.stderr
    exported = os.path.join(os.fsencode(out / "sub"), b"caf\xe9 \xff.txt.txt")
    with open(exported, "rb") as f:
        assert f.read() == b"a note about sanderlings\n"
    assert (out / "sub" / "caf%E9 %FF.txt.txt").read_text() == "a note about turnstones\n"
