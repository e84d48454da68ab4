"""Damaged input: every way a real file can be broken gets a typed outcome, never a bug.

The cases below were found by mutating dev-corpus files (truncating them, flipping bytes,
zeroing blocks) and feeding the result through textsieve; each is pinned here with the
exact damage, and a seeded mutation run over the corpus keeps looking for new ones.
"""

from __future__ import annotations

import io
import random
import struct
import zipfile
from pathlib import Path

import pytest

import textsieve
from cpu_budget import cpu, cpu_with_children
from textsieve.core import extract_many
from textsieve.model import ErrorKind
from textsieve.options import Options


def test_rust_parser_panic_is_corrupt_not_an_escaping_exception(corpus: Path) -> None:
    """calamine panics on this damaged XLSB; pyo3 raises PanicException, a BaseException
    that used to escape ``textsieve.extract`` and take the caller down."""
    data = bytearray((corpus / "xlsb" / "calamine__any_sheets.xlsb").read_bytes())
    data[9879:11427] = bytes(11427 - 9879)
    doc = textsieve.extract(bytes(data))
    assert doc.error is not None and doc.error.kind == ErrorKind.CORRUPT, doc.error
    assert "damaged" in doc.error.message


def _docx_bytes() -> bytes:
    docx = pytest.importorskip("docx")
    d = docx.Document()
    for n in range(200):
        d.add_paragraph(f"Paragraph {n} of a document whose XML will be damaged.")
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def test_pdf_info_with_broken_utf16_keeps_its_text(corpus: Path) -> None:
    """A zeroed block leaves the Info dictionary with a lone UTF-16 surrogate; pypdfium2's
    metadata helper decoded it strictly and the whole PDF came out 'internal'."""
    data = bytearray((corpus / "pdf" / "pdfjs__bug1937438_from_word.pdf").read_bytes())
    data[3155:4666] = bytes(4666 - 3155)
    doc = textsieve.extract(bytes(data), ocr="never")
    assert doc.status == "ok", doc.error
    assert doc.text.strip()


def test_damaged_deflate_stream_in_a_package_is_corrupt() -> None:
    """Bytes flipped inside word/document.xml's compressed data: zlib.error, which the
    parsers did not map, came out as 'internal'."""
    data = bytearray(_docx_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
        info = z.getinfo("word/document.xml")
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len
    for i in range(start + 40, start + info.compress_size - 8, 97):
        data[i] ^= 0x5A
    doc = textsieve.extract(bytes(data))
    assert doc.error is not None and doc.error.kind == ErrorKind.CORRUPT, doc.error


def test_zip_with_a_nonsense_central_directory_is_read_from_local_headers() -> None:
    """A flipped byte makes the directory ask for "zip file version 16.2": zipfile raises
    NotImplementedError; the members are still there, after their local headers."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.txt", "alpha member text\n")
        z.writestr("b.txt", "bravo member text\n")
    data = bytearray(buf.getvalue())
    central = data.find(b"PK\x01\x02")
    data[central + 6] = 162  # "version needed to extract": 16.2
    doc = textsieve.extract(bytes(data))
    assert doc.status == "ok", doc.error
    assert [c.text.strip() for c in doc.children] == ["alpha member text", "bravo member text"]


def test_damaged_encrypted_package_is_an_error_not_a_bug(corpus: Path) -> None:
    """Bytes flipped inside an encrypted DOCX: the decrypted package's ZIP directory asks
    for "version 15.7" and the plausibility check raised NotImplementedError."""
    data = bytearray((corpus / "docx" / "poi__protected_agile.docx").read_bytes())
    for offset, value in [(1459, 151), (2129, 111), (2226, 206), (2605, 152), (2620, 77),
                          (8931, 238), (14145, 28), (17674, 182), (19283, 27)]:
        data[offset] = value
    doc = textsieve.extract(bytes(data))
    assert doc.error is not None, doc.status
    assert doc.error.kind in (ErrorKind.ENCRYPTED, ErrorKind.CORRUPT), doc.error


def test_local_header_member_without_a_name() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("x" * 5, "the nameless member\n")
    data = bytearray(buf.getvalue())
    data[30:35] = bytes(5)  # the local name: all NUL (ZipInfo cuts names at NUL)
    data = data[:data.find(b"PK\x01\x02")]  # and no central directory
    doc = textsieve.extract(bytes(data))
    assert doc.status == "ok", doc.error
    assert doc.children[0].name == "member-1"
    assert doc.children[0].text.strip() == "the nameless member"


def test_doc_that_hangs_catdoc_is_corrupt_in_bounded_time(corpus: Path) -> None:
    """Cut short, this DOC sends catdoc into an endless loop: it is stopped (after 10 s +
    1 s/MB, here the 2 s tool limit), called unreadable, and not retried as a timeout."""
    data = (corpus / "doc" / "poi__cn.orthodox.www_divenbog_APRIL_30-APRIL.DOC").read_bytes()
    for _ in range(2):  # the whole file, the second time warm: the peer
        _, peer = cpu_with_children(lambda: textsieve.extract(data, tool_timeout=2.0))
    doc, spent = cpu_with_children(lambda: textsieve.extract(data[:16399], tool_timeout=2.0))
    assert doc.error is not None and doc.error.kind == ErrorKind.CORRUPT, doc.error
    # CPU of this process and its helpers (a load that delays them costs nothing here):
    # the spinning catdoc gets at most its 2 s, once; the rest is as cheap as the peer.
    assert spent < 2.0 + 1.0 + 20 * peer, (spent, peer)


def test_damaged_property_set_does_not_spin(corpus: Path) -> None:
    """One byte changed in Word95.doc's DocumentSummaryInformation makes a vector claim
    billions of elements; olefile's metadata parser looped over them for minutes."""
    healthy = (corpus / "doc" / "poi__Word95.doc").read_bytes()
    data = bytearray(healthy)
    data[2614] = 65
    doc = textsieve.extract(bytes(data), isolate=True, timeout=20)  # a regression: timeout
    assert doc.status == "ok", doc.error
    assert doc.text.strip()
    # It ended, so it is safe in this process too: no more work than the healthy file
    # (measured side by side, CPU time: a loaded machine delays both, it inflates neither).
    for _ in range(2):
        _, peer = cpu(lambda: textsieve.extract(healthy))
    _, spent = cpu(lambda: textsieve.extract(bytes(data)))
    assert spent < 20 * peer + 0.1, (spent, peer)


def test_property_set_reader_checks_every_offset() -> None:
    from textsieve.kernels.ole import property_set

    header = struct.pack("<HHI16sI", 0xFFFE, 0, 0, bytes(16), 1) + bytes(16)
    body = struct.pack("<II", 0, 3)  # size (unused), three properties
    body += struct.pack("<II", 2, 8 + 3 * 8)  # title: a string just after the table
    body += struct.pack("<II", 4, 0xFFFFFF00)  # author: an offset far past the end
    body += struct.pack("<II", 14, 8 + 3 * 8 + 16)  # pages
    body += struct.pack("<HHI", 0x1E, 0, 0xFFFFFFFF) + b"Title\x00\x00\x00"  # huge length
    body += struct.pack("<HHi", 3, 0, 12)
    data = header + struct.pack("<I", len(header) + 4) + body
    props = property_set(data)
    assert props == {2: b"Title", 14: 12}
    assert property_set(data[:50]) == {} and property_set(b"") == {}


def _mutations(corpus: Path, seed: int, per_format: int) -> list[tuple[bytes, str]]:
    rng = random.Random(seed)
    out = []
    for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
        files = sorted(p for p in folder.iterdir() if p.is_file() and 64 < p.stat().st_size
                       < 1_000_000)
        for path in rng.sample(files, min(per_format, len(files))):
            data = path.read_bytes()
            for kind in ("trunc", "flip", "zero"):
                d = bytearray(data)
                if kind == "trunc":
                    d = d[:rng.randint(8, len(d) - 1)]
                elif kind == "flip":
                    for _ in range(max(1, len(d) // 2000)):
                        d[rng.randrange(len(d))] = rng.randrange(256)
                else:
                    i = rng.randrange(len(d))
                    n = rng.randint(1, min(4096, len(d) - i))
                    d[i:i + n] = bytes(n)
                out.append((bytes(d), f"{folder.name}/{path.name}#{kind}"))
    return out


def test_mutated_corpus_files_get_typed_outcomes(corpus: Path) -> None:
    """Seeded mutations of corpus files of every format, through the isolated pool: no
    'internal' (an unmapped exception is a bug), and the run finishes."""
    inputs = _mutations(corpus, seed=20261121, per_format=6)
    opts = Options(ocr="never", timeout=60, tool_timeout=5)
    bad = []
    for doc in extract_many([d for d, _ in inputs], opts, names=[n for _, n in inputs]):
        if doc.error is not None and doc.error.kind == ErrorKind.INTERNAL:
            bad.append((doc.name, doc.error.message))
    assert not bad, bad


def test_cli_stderr_carries_our_error_not_library_chatter(corpus: Path, tmp_path: Path
                                                         ) -> None:
    """A damaged file makes calamine panic (with a Rust backtrace on stderr): the user sees
    textsieve's one-line typed error, not the library's noise."""
    import os
    import subprocess
    import sys

    data = bytearray((corpus / "xlsb" / "calamine__any_sheets.xlsb").read_bytes())
    data[9879:11427] = bytes(11427 - 9879)
    bad = tmp_path / "damaged.xlsb"
    bad.write_bytes(bytes(data))
    res = subprocess.run([sys.executable, "-m", "textsieve.cli", "extract", str(bad)],
                         capture_output=True, text=True, timeout=60, check=False,
                         env={**os.environ, "RUST_BACKTRACE": "1"})
    assert res.returncode == 1
    assert "corrupt" in res.stderr
    assert "panicked" not in res.stderr and "backtrace" not in res.stderr, res.stderr
    assert [ln for ln in res.stderr.splitlines() if ln.strip()] == [
        ln for ln in res.stderr.splitlines() if ln.startswith("textsieve:")], res.stderr


@pytest.mark.parametrize(("name", "start", "end"), [
    ("xlrd__Formate.xls", 484, 3609), ("poi__chinese-provinces.xls", 1024, 4032)])
def test_xls_that_makes_calamine_allocate_gigabytes(corpus: Path, tmp_path: Path,
                                                     name: str, start: int, end: int) -> None:
    """Zeroed sectors make calamine's OLE reader allocate 4-8 GB; in the caller's own
    process the OOM killer ended it. The API reads XLS in a capped child: a typed error.
    (Run under ``ulimit -v`` so that a regression aborts this child, not the machine.)"""
    import subprocess
    import sys

    data = bytearray((corpus / "xls" / name).read_bytes())
    data[start:end] = bytes(end - start)
    bad = tmp_path / name
    bad.write_bytes(bytes(data))
    code = ("import sys, textsieve; d = textsieve.extract(sys.argv[1]); "
            "print(d.status, d.error.kind if d.error else '-')")
    res = subprocess.run(["bash", "-c", 'ulimit -v 6000000; exec "$@"', "-", sys.executable,
                          "-c", code, str(bad)], capture_output=True, text=True, timeout=120,
                         check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["error", "corrupt"], res.stdout
