"""EPUB: a generated book (spine order != manifest order) and the dev corpus."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

import textsieve
from textsieve.model import ErrorKind, Status

CONTAINER = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:'
             'opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/book.opf" '
             'media-type="application/oebps-package+xml"/></rootfiles></container>')
OPF = """<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
 <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
  <dc:identifier id="id">urn:uuid:1234</dc:identifier>
  <dc:title>The Generated Book</dc:title>
  <dc:creator>Jane Author</dc:creator>
  <dc:language>en</dc:language>
  <dc:date>2020-05-06</dc:date>
  <dc:subject>Testing</dc:subject>
 </metadata>
 <manifest>
  <item id="c1" href="text/one.xhtml" media-type="application/xhtml+xml"/>
  <item id="c2" href="text/two%20b.xhtml" media-type="application/xhtml+xml"/>
  <item id="css" href="style.css" media-type="text/css"/>
 </manifest>
 <spine><itemref idref="c2"/><itemref idref="c1"/></spine>
</package>"""
XHTML = """<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>ignored title</title>
<style>p {{ color: red }}</style><script>var hidden = 1;</script></head>
<body>{}</body></html>"""
ONE = XHTML.format(
    "<h1>Chapter One</h1><p>It was a dark&nbsp;night.</p>"
    "<ul><li>red</li><li>blue<ol><li>navy</li></ol></li></ul>"
    "<table><tr><th>k</th><th>v</th></tr><tr><td>x</td><td>1</td></tr></table>")
TWO = XHTML.format("<section><h2>Prologue</h2><div>Before <em>everything</em>.<br/>"
                   "New line.</div></section>")


def _make_epub(files: dict[str, str] | None = None, mimetype: bool = True) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        if mimetype:
            z.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        parts = {"META-INF/container.xml": CONTAINER, "OEBPS/book.opf": OPF,
                 "OEBPS/text/one.xhtml": ONE, "OEBPS/text/two b.xhtml": TWO,
                 "OEBPS/style.css": "p {}"}
        parts.update(files or {})
        for name, content in parts.items():
            if content is not None:
                z.writestr(name, content)
    return buf.getvalue()


def test_round_trip_spine_order_structure_metadata() -> None:
    doc = textsieve.extract(_make_epub())
    assert doc.status is Status.OK, doc.error
    text, md = doc.text, doc.markdown
    assert text.index("Prologue") < text.index("Chapter One")  # spine, not manifest order
    assert "## Prologue" in md and "# Chapter One" in md
    assert "It was a dark night." in text
    assert "- red\n- blue\n  1. navy" in md
    assert "| k | v |" in md and "| x | 1 |" in md
    assert "Before everything.\nNew line." in text
    assert "hidden" not in text and "color" not in text and "ignored title" not in text
    assert doc.title == "The Generated Book"
    m = doc.metadata
    assert (m.author, m.language, m.created, m.subject) == (
        "Jane Author", "en", "2020-05-06", "Testing")


def test_missing_container_finds_opf() -> None:
    data = _make_epub({"META-INF/container.xml": None})  # type: ignore[dict-item]
    doc = textsieve.extract(data, name="book.epub")
    assert doc.status is Status.OK, doc.error
    assert "Chapter One" in doc.text


def test_entities_in_chapter_are_not_expanded() -> None:
    evil = ('<?xml version="1.0"?><!DOCTYPE html [<!ENTITY xxe SYSTEM "file:///etc/passwd">'
            ']><html xmlns="http://www.w3.org/1999/xhtml"><body><p>safe &xxe; text</p>'
            '</body></html>')
    doc = textsieve.extract(_make_epub({"OEBPS/text/one.xhtml": evil}))
    assert "root:" not in doc.text and "safe" in doc.text


def test_drm_encrypted_chapters() -> None:
    enc = ('<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
           'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
           '<enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>'
           '<enc:CipherData><enc:CipherReference URI="OEBPS/text/one.xhtml"/></enc:CipherData>'
           '</enc:EncryptedData></encryption>')
    doc = textsieve.extract(_make_epub({"META-INF/encryption.xml": enc}))
    assert doc.status is Status.ERROR and doc.error.kind is ErrorKind.ENCRYPTED


def test_corpus_xml11(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "epub" / "versone__Xml11_test.epub")
    assert doc.status is Status.OK and "Test title" in doc.text
    assert doc.metadata.author == "John Doe"


def test_corpus_alice(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "epub" / "epubjs__alice.epub")
    assert doc.status is Status.OK
    assert "Alice was beginning to get very tired" in doc.text
    assert doc.text.index("Down The Rabbit-Hole") < doc.text.index("Pig And Pepper")


GOOD = ["epubcheck__ocf-filepath-utf8-valid.epub",
        "epubcheck__ocf-mimetype-file-missing-error.epub", "epubcheck__ocf-minimal-valid.epub",
        "epubcheck__valid.epub", "epubjs__alice.epub",
        "epubjs__alice_without_cover.epub", "versone__MissingToc_test.epub",
        "versone__Typical_EPUB2_test.epub", "versone__Typical_EPUB3_test.epub",
        "versone__Xml11_test.epub"]


@pytest.mark.parametrize("name", GOOD)
def test_corpus_has_text(corpus: Path, name: str) -> None:
    doc = textsieve.extract(corpus / "epub" / name)
    assert doc.status is Status.OK, doc.error
    assert doc.text.strip()


def test_corpus_broken_zip(corpus: Path) -> None:
    name = "epubcheck__ocf-zip-unreadable-no-end-header-fatal.epub"
    doc = textsieve.extract(corpus / "epub" / name)
    assert doc.status is Status.ERROR and doc.error.kind is ErrorKind.CORRUPT
