"""Detection by content: the extension and declared type are hints only."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest

from textsieve import detect, extract
from textsieve import detection as d
from textsieve.model import ErrorKind


def _docx_bytes() -> bytes:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    document.add_paragraph("A word processing file in disguise")
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def test_docx_named_doc_is_read_as_docx(tmp_path: Path) -> None:
    p = tmp_path / "report.doc"
    p.write_bytes(_docx_bytes())
    assert detect(p) == d.DOCX


def _wp5(paragraphs: list[bytes]) -> bytes:
    """A WordPerfect 5.x document as the format defines it: the 16-byte prefix
    ("\\xffWPC", offset of the text, product 1, file type 10 = document, version 0.0, no
    encryption), then the text with a hard return (0x0A) closing each paragraph."""
    prefix = b"\xffWPC" + (16).to_bytes(4, "little") + bytes([1, 10, 0, 0]) + bytes(4)
    return prefix + b"".join(p + b"\x0a" for p in paragraphs)


needs_wpd2text = pytest.mark.skipif(shutil.which("wpd2text") is None,
                                    reason="wpd2text (libwpd-tools) not installed")


@needs_wpd2text
def test_wordperfect_named_doc_is_not_fed_to_a_word_parser(tmp_path: Path) -> None:
    p = tmp_path / "letter.doc"
    p.write_bytes(_wp5([b"Heron survey at the lake.", b"Second paragraph about egrets."]))
    assert detect(p) == d.WORDPERFECT
    doc = extract(p)
    assert doc.error is None, doc.error
    assert doc.text == "Heron survey at the lake.\n\nSecond paragraph about egrets."


@needs_wpd2text
def test_wordperfect_inside_ole2_is_read(tmp_path: Path) -> None:
    """WordPerfect 8+ may store the document as the PerfectOffice_MAIN stream of an
    OLE2 file: that is WordPerfect, not an unknown (or damaged) OLE2 container."""
    from textsieve.kernels.ole import pack

    p = tmp_path / "report.doc"
    p.write_bytes(pack({("PerfectOffice_MAIN",): _wp5([b"Kestrel nesting report"])}))
    assert detect(p) == d.WORDPERFECT
    assert extract(p).text == "Kestrel nesting report"


@needs_wpd2text
def test_damaged_wordperfect_is_corrupt_wordperfect(tmp_path: Path) -> None:
    p = tmp_path / "letter.wpd"  # a 6.x prefix over 5.x text: libwpd's "File Exception"
    p.write_bytes(_wp5([b"Heron survey"]).replace(bytes([1, 10, 0, 0]), bytes([1, 10, 2, 1])))
    doc = extract(p)
    assert doc.error is not None and doc.error.kind is ErrorKind.CORRUPT
    assert "WordPerfect" in doc.error.message


@pytest.mark.parametrize(("content", "name", "mime"), [
    (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "notes.txt", d.PDF),
    (b"plain words only\nsecond line\n", "scan.pdf", d.TEXT),
    (b"\xef\xbb\xbf<!DOCTYPE html><html><body>x</body></html>", "page.txt", d.HTML),
    (b"<?xml version='1.0'?><feed xmlns='http://www.w3.org/2005/Atom'/>", "f.dat", d.XML),
    (b"From: a@example.org\r\nTo: b@example.org\r\nSubject: s\r\n\r\nbody", "m.txt", d.EML),
    (b"From a@example.org Sat Jan  3 01:05:34 1996\nFrom: a@example.org\nSubject: x\n\nb\n",
     "box", d.MBOX),
    (b"id;name;score\n1;ann;3\n2;bob;4\n3;cid;5\n", "data.txt", d.CSV),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 32, "photo.jpg", d.PNG),
    (b"\x1f\x8b\x08\x00" + b"\x00" * 16, "x.zip", d.GZIP),
    ("grüße".encode("utf-16"), "u16.csv", d.CSV),  # BOM'd UTF-16 text, told CSV by name
    (b"", "empty.pdf", d.EMPTY),
])
def test_content_beats_extension(tmp_path: Path, content: bytes, name: str, mime: str) -> None:
    p = tmp_path / name
    p.write_bytes(content)
    assert detect(p) == mime


def test_zip_flavours_are_told_apart(tmp_path: Path) -> None:
    def make(entries: dict[str, bytes]) -> bytes:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            for n, data in entries.items():
                zf.writestr(n, data)
        return buf.getvalue()

    epub = make({"mimetype": b"application/epub+zip", "META-INF/container.xml": b"<c/>"})
    odt = make({"mimetype": b"application/vnd.oasis.opendocument.text", "content.xml": b"<x/>"})
    plain = make({"notes/a.txt": b"hello"})
    assert detect(epub, name="book.zip") == d.EPUB
    assert detect(odt, name="x.docx") == d.ODT
    assert detect(plain, name="a.docx") == d.ZIP


def test_truncated_docx_is_still_recognised_as_docx() -> None:
    data = _docx_bytes()[:3000]
    assert detect(data, name="cut.docx") == d.DOCX
    doc = extract(data, name="cut.docx")
    assert doc.error is not None and doc.error.kind is ErrorKind.CORRUPT


@pytest.mark.parametrize("rel", ["xls/poi__Basic_Expense_Template_2011.xls",
                                 "doc/poi__SampleDoc.doc", "ppt/poi__54880_chinese.ppt",
                                 "msg/poi__attachment_msg_pdf.msg"])
def test_ole_container_parsed_once_and_closed(corpus: Path, rel: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Detection and the extractor share one parse of the OLE2 container (olefile's parse
    was most of the time of a small DOC/XLS/MSG), and nothing stays open after."""
    import os

    import olefile

    opened: list[olefile.OleFileIO] = []

    class Counting(olefile.OleFileIO):  # type: ignore[misc]
        def __init__(self, *a: object, **k: object) -> None:
            super().__init__(*a, **k)
            opened.append(self)

    monkeypatch.setattr(olefile, "OleFileIO", Counting)
    path = corpus / rel
    doc = extract(path, ocr="never")
    assert doc.mime_type in (d.XLS, d.DOC, d.PPT, d.MSG)
    assert len(opened) == 1, f"{rel}: the container was parsed {len(opened)} times"
    links = {os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
             if os.path.exists(f"/proc/self/fd/{fd}")}
    assert str(path) not in links, "the file is still open after extraction"


def _with_strays(data: bytes, every: int) -> bytes:
    """``data`` with a NUL byte after every ``every`` bytes (a page saved by a buggy tool)."""
    return b"\x00".join(data[i:i + every] for i in range(0, len(data), every))


def test_html_with_stray_nuls_is_read_as_html(tmp_path: Path) -> None:
    """A few NULs (here one in 40 bytes, and a zeroed block) do not make a page binary."""
    page = Path(__file__).parents[1] / "samples" / "site" / "heron-migration.html"
    p = tmp_path / "page.html"
    p.write_bytes(_with_strays(page.read_bytes(), 40) + b"\x00" * 64)
    assert detect(p) == d.HTML
    doc = extract(p)
    assert doc.error is None and doc.status.value == "ok"
    assert "heron" in doc.text.lower() and "\x00" not in doc.text


def test_latin1_text_with_stray_nuls_is_text(tmp_path: Path) -> None:
    text = ("Grüße aus Köln, où l'été est chaud. " * 40).encode("cp1252")
    p = tmp_path / "notes.txt"
    p.write_bytes(_with_strays(text, 30))
    assert detect(p) == d.TEXT
    assert "Grüße aus Köln" in extract(p).text


@pytest.mark.parametrize("name", ["samples/docs/notice-scan.png", "samples/docs/counts.xlsx"])
def test_binary_with_nuls_stays_binary(tmp_path: Path, name: str) -> None:
    """The tolerance does not reach real binary data: a PNG's or a ZIP's deflated bytes
    without their signature are still binary."""
    data = (Path(__file__).parents[1] / name).read_bytes()[64:]
    p = tmp_path / "blob.bin"
    p.write_bytes(data)
    assert detect(p) == d.OCTET
