"""Exports (txt tree, JSONL, Parquet) and `textsieve show`, over an archive built by a real run.

The tree has nested folders with a text file, a DOCX, a ZIP with a member, a broken PDF
and an empty file, so every export rule (mirroring, children, skipping) is exercised.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from textsieve.archive import Archive
from textsieve.archive.export import COLUMNS, ExportError, export, txt_relpath
from textsieve.cli import main

docx = pytest.importorskip("docx")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(source folder, archive) after one `textsieve run`."""
    base = tmp_path_factory.mktemp("export")
    src = base / "docs"
    (src / "a" / "b").mkdir(parents=True)
    (src / "top.txt").write_text("plain words about kestrels\n", encoding="utf-8")
    d = docx.Document()
    d.add_paragraph("The docx speaks of ospreys.")
    d.save(str(src / "a" / "b" / "x.docx"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("inner/member.txt", "a member mentions lapwings\n")
    (src / "a" / "bundle.zip").write_bytes(buf.getvalue())
    (src / "a" / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj garbage, no xref, no trailer")
    (src / "a" / "empty.txt").write_bytes(b"")
    db = base / "t.db"
    assert main(["run", str(src), "--archive", str(db), "-q", "-j", "1"]) == 1  # broken.pdf
    return src, db


def _ids(db: Path) -> dict[str, int]:
    with Archive(db, readonly=True) as a:
        return {key: i for i, key in a.conn.execute("SELECT id, key FROM items")}


def test_txt_export_mirrors_the_tree(built: tuple[Path, Path], tmp_path: Path) -> None:
    src, db = built
    out = tmp_path / "out"
    counts: Counter[str] = Counter()
    with Archive(db, readonly=True) as a:
        n = export(a, out, "txt", counts=counts)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == ["a/b/x.docx.txt", "a/bundle.zip.txt", "top.txt.txt"]
    assert n == counts["items"] == 3
    assert counts["skipped error"] == 1 and counts["skipped empty"] == 1
    assert "ospreys" in (out / "a/b/x.docx.txt").read_text(encoding="utf-8")
    zipped = (out / "a/bundle.zip.txt").read_text(encoding="utf-8")
    assert "lapwings" in zipped and "inner/member.txt" in zipped
    # the same text `textsieve extract` prints: the document's full text, children included
    with Archive(db, readonly=True) as a:
        doc = a.document(_ids(db)[str(src / "a" / "bundle.zip")])
        assert doc is not None
        assert zipped == doc.full_text().rstrip("\n") + "\n"
    # exporting again over the same folder replaces, leaves no partial files behind
    with Archive(db, readonly=True) as a:
        assert export(a, out, "txt") == 3
    assert not list(out.rglob("*.partial"))


def test_txt_names_stay_inside_the_folder() -> None:
    assert txt_relpath("/data/docs/a/example.pdf", "/data/docs") == "a/example.pdf.txt"
    assert txt_relpath("https://example.org/x/report.pdf", None) == \
        "example.org/x/report.pdf.txt"
    assert txt_relpath("https://example.org:8080/dir/", None) == \
        "example.org_8080/dir/index.txt"
    for key in ("https://evil.org/../../etc/passwd", "../../etc/passwd", "/a/b/../../c",
                "rel/\x00nul/..", "https://h/a/%2e%2e/..//b"):
        rel = txt_relpath(key, "/data/docs")
        assert not os.path.isabs(rel) and "\x00" not in rel, key
        assert ".." not in Path(rel).parts, key
        assert os.path.normpath(os.path.join("/out", rel)).startswith("/out/"), key
    long = txt_relpath("/d/" + "é" * 300 + ".pdf", "/d")
    assert len(long.encode()) <= 255 and long.endswith(".txt")


def test_jsonl_has_every_item_with_parents_and_provenance(built: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    src, db = built
    out = tmp_path / "items.jsonl"
    with Archive(db, readonly=True) as a:
        total = a.conn.execute("SELECT count(*) FROM items").fetchone()[0]
        assert export(a, out, "jsonl") == 5  # top-level items
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == total == 6 and len({r["id"] for r in rows}) == total
    assert set(rows[0]) == set(COLUMNS)
    by_key = {r["key"]: r for r in rows}
    zip_row = by_key[str(src / "a" / "bundle.zip")]
    (member,) = [r for r in rows if r["parent_id"] == zip_row["id"]]
    assert "lapwings" in member["text"] and member["name"] == "inner/member.txt"
    assert member["root_id"] == zip_row["id"] and member["original"] is None
    spec = f"dir:{src}"
    assert zip_row["sources"] == member["sources"] == [spec]
    broken = by_key[str(src / "a" / "broken.pdf")]
    assert broken["status"] == "error" and broken["error_kind"] and broken["text"] == ""
    docx_row = by_key[str(src / "a" / "b" / "x.docx")]
    assert "ospreys" in docx_row["text"] and docx_row["sha256"] and docx_row["size"] > 0
    assert docx_row["extracted_at"] >= docx_row["first_seen"] > 0
    assert isinstance(docx_row["metadata"], dict)
    # '-' is stdout
    proc = subprocess.run([sys.executable, "-m", "textsieve", "export", "--format", "jsonl",
                           "--to", "-", "--archive", str(db)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["id"] for line in proc.stdout.splitlines()] == \
        [r["id"] for r in rows]


def test_parquet_reads_back_the_same_rows(built: tuple[Path, Path], tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    _, db = built
    with Archive(db, readonly=True) as a:
        export(a, tmp_path / "items.jsonl", "jsonl")
        assert export(a, tmp_path / "items.parquet", "parquet") == 5
    table = pq.read_table(tmp_path / "items.parquet")
    assert tuple(table.column_names) == COLUMNS
    expect = [json.loads(line) for line in
              (tmp_path / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    got = table.to_pylist()
    assert [(r["id"], r["parent_id"], r["text"], r["markdown"], r["sources"]) for r in got] \
        == [(r["id"], r["parent_id"], r["text"], r["markdown"], r["sources"]) for r in expect]
    assert [json.loads(r["metadata"]) for r in got] == [r["metadata"] for r in expect]


def test_parquet_row_groups_bound_memory(built: tuple[Path, Path], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from textsieve.archive import export as export_mod

    monkeypatch.setattr(export_mod, "ROW_GROUP_ROWS", 2)
    _, db = built
    with Archive(db, readonly=True) as a:
        export(a, tmp_path / "small-groups.parquet", "parquet")
    meta = pq.ParquetFile(tmp_path / "small-groups.parquet").metadata
    assert meta.num_rows == 6 and meta.num_row_groups == 3


def test_show_prints_an_item_and_a_child(built: tuple[Path, Path],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    src, db = built
    ids = _ids(db)
    zip_id = ids[str(src / "a" / "bundle.zip")]
    member_id = ids[f"{src / 'a' / 'bundle.zip'}//inner/member.txt"]
    docx_id = ids[str(src / "a" / "b" / "x.docx")]

    assert main(["show", str(member_id), "--archive", str(db)]) == 0
    assert capsys.readouterr().out == "a member mentions lapwings\n"
    assert main(["show", str(zip_id), "-f", "markdown", "--archive", str(db)]) == 0
    assert "## inner/member.txt" in capsys.readouterr().out
    assert main(["show", str(docx_id), "-f", "json", "--archive", str(db)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert "ospreys" in record["text"] and record["path"] == str(src / "a" / "b" / "x.docx")
    assert main(["show", str(member_id), "-f", "json", "--archive", str(db)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["name"] == "inner/member.txt" and "›" in record["path"]
    assert main(["show", "99999", "--archive", str(db)]) == 1
    assert "no item 99999" in capsys.readouterr().err


def test_export_errors_are_clear(built: tuple[Path, Path], tmp_path: Path) -> None:
    _, db = built
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for fmt, to in (("txt", blocker / "out"), ("jsonl", blocker / "x.jsonl"),
                    ("parquet", blocker / "x.parquet")):
        proc = subprocess.run([sys.executable, "-m", "textsieve", "export", "--format", fmt,
                               "--to", str(to), "--archive", str(db)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1, (fmt, proc.stderr)
        assert proc.stderr.startswith("textsieve: cannot ") and str(blocker) in proc.stderr
        assert "Traceback" not in proc.stderr
    assert blocker.read_text() == "not a folder"
    with Archive(db, readonly=True) as a, pytest.raises(ExportError, match="unknown"):
        export(a, tmp_path / "x", "csv")


def _hostile_archive(db: Path) -> dict[str, str]:
    """An archive whose keys are what a hostile source can make: names past the OS path
    limit, ``..``, NUL, absolute paths elsewhere. Returns key -> its text."""
    from textsieve.archive import Entry
    from textsieve.model import Document, Item

    deep = "/base/docs/" + "/".join(["d" * 200] * 25) + "/deep.txt"  # > 4096 bytes
    texts = {
        "/base/docs/good.txt": "a good text about grebes",
        deep: "a deep text about dunlins",
        "/base/docs/sub/x.txt": "behind a planted symlink: curlews",
        "/base/docs/../../../etc/evil": "dot dot text about shrikes",
        "/base/docs/nul\x00name.txt": "a name with a NUL: plovers",
        "https://evil.example/../../escape": "a URL climbing out: avocets",
        "/base/docs/" + "ä" * 400 + ".txt": "a name too long for one part: godwits",
        "/base/docs/" + "\U0001f426" * 59: "a name of 236 bytes, 4 per character: ruffs",
        "/base/docs/last.txt": "the last item, written all the same: stints",
    }
    with Archive(db) as a:
        run = a.begin_run(["hostile"], {})
        sid = {"hostile": a.source_id("hostile")}
        a.write([Entry(Item(key=k, original=k, source="hostile"), Document(name="x", text=t))
                 for k, t in texts.items()], run, sid)
        a.end_run(run, {})
    return texts


def test_txt_export_survives_hostile_names_and_planted_links(tmp_path: Path) -> None:
    """One unwritable item is reported and the export goes on; nothing is ever written
    outside the target folder, through a symlink planted there or by any stored key."""
    db = tmp_path / "h.db"
    texts = _hostile_archive(db)
    out, outside = tmp_path / "out", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    victim, victim2 = outside / "victim", outside / "victim2"
    victim.write_text("keep me")
    victim2.write_text("keep me too")
    (out / "good.txt.txt.partial").symlink_to(victim)  # the old temporary name
    (out / "last.txt.txt").symlink_to(victim2)  # the final name itself
    (out / "sub").symlink_to(outside, target_is_directory=True)  # a folder on the way
    proc = subprocess.run([sys.executable, "-m", "textsieve", "export", "--to", str(out),
                           "--archive", str(db)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("textsieve: ")]
    assert len(errors) == 1 and "sub" in errors[0] and "symlink" in errors[0], proc.stderr
    assert f"exported {len(texts) - 1} items" in proc.stderr
    assert victim.read_text() == "keep me" and victim2.read_text() == "keep me too"
    assert sorted(p.name for p in outside.iterdir()) == ["victim", "victim2"]
    assert not (out / "last.txt.txt").is_symlink()
    assert "stints" in (out / "last.txt.txt").read_text(encoding="utf-8")
    written: dict[str, str] = {}
    # fwalk: by folder handles (the deep path is past the OS limit), links not followed
    for dirpath, _dirs, files, dfd in os.fwalk(out):
        for f in files:
            if os.path.islink(f"/proc/self/fd/{dfd}/{f}"):
                continue
            fd = os.open(f, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
            with os.fdopen(fd, encoding="utf-8") as fh:
                written[os.path.join(dirpath, f)] = fh.read()
    assert not [p for p in written if p.endswith(".partial")]
    assert len(written) == len(texts) - 1
    for key, text in texts.items():
        found = [p for p, body in written.items() if body.strip() == text]
        assert len(found) == (0 if "curlews" in text else 1), key
        for p in found:  # no symlink under out: the plain path is where the file is
            assert os.path.normpath(p).startswith(str(out) + os.sep)
            assert all(len(part.encode()) <= 255 for part in Path(p).parts)
    assert any("dddd" in p and len(p) > 4096 for p in written)
