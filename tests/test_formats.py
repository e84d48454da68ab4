"""Formats: each is one module that declares what it reads (``textsieve.formats``), and a
plugin package adds one through the entry point group ``textsieve.formats``.

The plugin is real: a wheel made here, installed by pip into a folder, put on the path of
``textsieve`` run as a command; its files are then detected and read through ``textsieve
extract`` and ``textsieve run``, and its version decides what the archive re-extracts.
"""

from __future__ import annotations

import base64
import codecs
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from textsieve.extractors import registry
from textsieve.formats import Format, Reader, Signature

MIME = "application/x-demo-notes"
MAGIC = b"DEMO-NOTES\n"
PLUGIN = '''
"""A test's format: notes whose lines are ROT13, read back as they were written."""
import codecs

from textsieve.formats import Format, Reader, Signature

FORMAT = Format(name="demonotes", version={version},
                readers=(Reader("{mime}"),),
                signatures=(Signature("{mime}", {magic!r}),),
                hints={{"dnotes": "{mime}"}})


def extract(src, ctx, doc, out):
    for line in src.read().removeprefix({magic!r}).decode().splitlines():
        out.paragraph(codecs.decode(line, "rot13"))
'''
NOTE = "grey herons stand in the shallows"


def test_the_index_is_what_the_formats_declare() -> None:
    """Detection reads the built-in formats' signatures and hints from ``_index.py``; it
    must say what the modules declare (else: ``python scripts/format_index.py``)."""
    assert registry.index_path().read_text(encoding="utf-8") == registry.index_source(), \
        "run: python scripts/format_index.py"
    names = [fmt.name for _, fmt in registry.builtin_formats()]
    assert len(names) >= 15 and len(set(names)) == len(names)
    for specs in registry.REGISTRY.values():  # every reader named is there
        assert all(callable(registry._load(spec)) for spec in specs)


def test_a_signature_is_bytes_where_the_format_says() -> None:
    bmp = Signature("image/bmp", b"BM", also=((6, b"\0\0\0\0"),), min_size=15)
    assert bmp.matches(b"BM" + bytes(13)) and not bmp.matches(b"BM" + bytes(12))
    assert not bmp.matches(b"BM\0\0\0\0\1\0\0\0" + bytes(10))
    tar = Signature("application/x-tar", b"ustar", offset=257)
    assert tar.matches(bytes(257) + b"ustar") and not tar.matches(b"ustar" + bytes(300))
    pdf = Signature("application/pdf", b"%PDF-", within=1024)
    assert pdf.matches(b"junk" * 100 + b"%PDF-1.7") and not pdf.matches(bytes(1024) + b"%PDF-")
    fmt = Format("x", 1, readers=(Reader("a/b"),), signatures=(Signature("a/c", b"C"),),
                 unsupported={"a/d": "no"})
    assert fmt.mime_types == ("a/b", "a/c", "a/d")


def _wheel(tmp: Path, version: int) -> Path:
    """A pure-Python wheel of the package ``textsieve_demonotes``: the plugin format above,
    and a second entry point whose module fails to import."""
    files = {
        "textsieve_demonotes/__init__.py": PLUGIN.format(version=version, mime=MIME,
                                                         magic=MAGIC).encode(),
        "textsieve_demonotes/broken.py": b"raise ImportError('a dependency is missing')\n",
        "textsieve_demonotes-1.0.dist-info/METADATA":
            b"Metadata-Version: 2.1\nName: textsieve-demonotes\nVersion: 1.0\n",
        "textsieve_demonotes-1.0.dist-info/WHEEL":
            b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "textsieve_demonotes-1.0.dist-info/entry_points.txt":
            b"[textsieve.formats]\ndemonotes = textsieve_demonotes\n"
            b"broken = textsieve_demonotes.broken\n",
    }
    record = [f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"  # noqa: E501
              for name, data in files.items()]
    files["textsieve_demonotes-1.0.dist-info/RECORD"] = (
        "\n".join([*record, "textsieve_demonotes-1.0.dist-info/RECORD,,"]) + "\n").encode()
    path = tmp / "textsieve_demonotes-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    """The plugin installed by pip into a folder of its own (a real dist-info)."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "--target", str(target),
                    str(_wheel(tmp_path, version=1))], check=True, timeout=120)
    assert (target / "textsieve_demonotes-1.0.dist-info" / "entry_points.txt").is_file()
    return target


def _textsieve(*args: str, plugins: Path | None, python: tuple[str, ...] = (), **env: str
               ) -> subprocess.CompletedProcess[str]:
    """The command, in a new interpreter (with ``python`` flags), the plugin's folder on
    its path when given."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",
                                                                 "TEXTSIEVE_DEBUG")}
    if plugins is not None:
        environ["PYTHONPATH"] = str(plugins)
    return subprocess.run([sys.executable, *python, "-m", "textsieve", *args],
                          capture_output=True, text=True, timeout=120,
                          env={**environ, **env}, check=False)


def _notes(path: Path, text: str = NOTE, magic: bytes = MAGIC) -> Path:
    path.write_bytes(magic + codecs.encode(text, "rot13").encode() + b"\n")
    return path


def test_a_plugin_format_is_detected_and_read(tmp_path: Path, plugin_dir: Path) -> None:
    """By its signature, whatever the name; by its name's extension when the content
    says nothing specific. Without the plugin the same file is plain text."""
    by_content = _notes(tmp_path / "field notes")
    by_name = _notes(tmp_path / "heron.dnotes", "herons fish at dawn", magic=b"")
    proc = _textsieve("extract", str(by_content), str(by_name), "--format", "json",
                      plugins=plugin_dir)
    assert proc.returncode == 0, proc.stderr
    docs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [d["text"].strip() for d in docs] == [NOTE, "herons fish at dawn"]
    assert {d["mime_type"] for d in docs} == {MIME}
    assert {d["extractor"] for d in docs} == {"1:demonotes/1"}
    # The broken entry point next to it is reported, and costs nothing else.
    assert "broken" in proc.stderr and "cannot be loaded" in proc.stderr
    alone = _textsieve("extract", str(by_content), "--format", "json", plugins=None)
    assert alone.returncode == 0, alone.stderr
    doc = json.loads(alone.stdout)
    assert doc["mime_type"] == "text/plain" and NOTE not in doc["text"]


def test_a_plugin_costs_nothing_to_files_textsieve_reads(tmp_path: Path,
                                                         plugin_dir: Path) -> None:
    """A text file named .txt, a PDF: textsieve's own formats know them, so no package's
    metadata is read (importlib.metadata is ~30 ms of every such command)."""
    note = tmp_path / "note.txt"
    note.write_text(NOTE + "\n")
    # TEXTSIEVE_DEBUG: the forked child that reads the file keeps its stderr (its imports).
    traced = {"plugins": plugin_dir, "python": ("-X", "importtime"), "TEXTSIEVE_DEBUG": "1"}
    proc = _textsieve("extract", str(note), **traced)  # type: ignore[arg-type]
    assert proc.returncode == 0 and proc.stdout == NOTE + "\n", proc.stderr[-2000:]
    assert "importlib.metadata" not in proc.stderr
    assert "textsieve_demonotes" not in proc.stderr
    # ... while a file it has nothing specific to say about does look (the test's premise).
    odd = tmp_path / "note.rst"
    odd.write_text(NOTE + "\n")
    proc = _textsieve("extract", str(odd), **traced)  # type: ignore[arg-type]
    assert proc.returncode == 0 and "textsieve_demonotes" in proc.stderr, proc.stderr[-2000:]


def _archived(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT mime_type, extractor_version FROM items").fetchall()


def test_the_plugin_version_decides_what_is_extracted_again(tmp_path: Path,
                                                            plugin_dir: Path) -> None:
    """The format's version is in every item it made: the same version leaves the item
    alone on the next run; a new one re-extracts it (``outdated``), nothing else."""
    folder = tmp_path / "in"
    folder.mkdir()
    _notes(folder / "a.dnotes")
    (folder / "b.txt").write_text("plain text stays as it is\n")
    db = tmp_path / "a.db"
    first = _textsieve("run", str(folder), "--archive", str(db), plugins=plugin_dir)
    assert first.returncode == 0, first.stderr
    made = dict((m, v.partition("#")[0]) for m, v in _archived(db))
    assert made[MIME] == "1:demonotes/1" and made["text/plain"] == "1:text/1"
    again = _textsieve("run", str(folder), "--archive", str(db), plugins=plugin_dir)
    assert again.returncode == 0 and _line(again.stderr, "extracted") == "0", again.stderr
    module = plugin_dir / "textsieve_demonotes" / "__init__.py"
    module.write_text(module.read_text().replace("version=1,", "version=2,"))
    shutil.rmtree(module.parent / "__pycache__")  # compiled by pip this very second
    newer = _textsieve("run", str(folder), "--archive", str(db), plugins=plugin_dir)
    assert newer.returncode == 0, newer.stderr
    assert _line(newer.stderr, "extracted") == "1" and _line(newer.stderr, "outdated") == "1"
    assert dict((m, v.partition("#")[0]) for m, v in _archived(db))[MIME] == "1:demonotes/2"


def _line(summary: str, label: str) -> str | None:
    """The figure of one line of a run's summary (``extracted   3``)."""
    for line in summary.splitlines():
        parts = line.split()
        if parts[:-1] == label.split() and parts:
            return parts[-1]
    return None


def test_a_renamed_format_keeps_what_it_made_current() -> None:
    """ZIP and TAR were read by the format "archive", now "containers": items tagged with
    either name at the same version are current, at another version they are not."""
    assert registry.version_of("textsieve.extractors.containers:extract_zip") == \
        "1:containers/3"
    assert registry.is_current("1:archive/3") and registry.is_current("1:containers/3")
    assert not registry.is_current("1:archive/2") and not registry.is_current("1:nothing/1")
    assert not registry.is_current("2:containers/3")
