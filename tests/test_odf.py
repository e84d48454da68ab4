"""ODF: odfdo-made text and presentation documents round trip; corpus files."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from odfdo import (
    Document,
    DrawPage,
    Frame,
    Header,
    List,
    ListItem,
    Note,
    Paragraph,
    Table,
)

import textsieve
from textsieve.model import ErrorKind, Status


def _save(doc: Document) -> bytes:
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def _make_odt() -> bytes:
    doc = Document("text")
    body = doc.body
    body.clear()
    body.append(Header(1, "Main Title"))
    body.append(Paragraph("Opening paragraph."))
    body.append(Header(2, "Sub Section"))
    lst = List(["first item", "second item"])
    inner = List(["nested item"])
    item = ListItem("third item")
    item.append(inner)
    lst.append(item)
    body.append(lst)
    table = Table("T1", width=2, height=2)
    table.set_values([["a", "b"], ["1", "2"]])
    body.append(table)
    para = Paragraph("Body with note")
    para.append(Note(note_id="ftn1", citation="1", body="The note text."))
    body.append(para)
    body.append(Paragraph("Final words."))
    doc.meta.title = "ODT Title"
    doc.meta.language = "fr-FR"
    doc.meta.subject = "Testing"
    return _save(doc)


def test_odt_round_trip() -> None:
    out = textsieve.extract(_make_odt())
    assert out.status is Status.OK, out.error
    md = out.markdown
    assert "# Main Title" in md and "## Sub Section" in md
    assert "- first item\n- second item\n- third item\n  - nested item" in md
    assert "| a | b |" in md and "| 1 | 2 |" in md
    text = out.text
    order = ["Main Title", "Opening paragraph.", "first item", "nested item", "Body with note",
             "Final words.", "The note text."]
    assert [text.index(s) for s in order] == sorted(text.index(s) for s in order)
    assert out.title == "ODT Title"
    assert out.metadata.language == "fr-FR" and out.metadata.subject == "Testing"


def test_odp_round_trip_pages() -> None:
    doc = Document("presentation")
    body = doc.body
    body.clear()
    for i, words in enumerate(["alpha slide words", "beta slide words"], 1):
        page = DrawPage(f"p{i}", name=f"Chapter {i}")
        page.append(Frame.text_frame(words, size=("10cm", "2cm"), position=("1cm", "1cm")))
        body.append(page)
    out = textsieve.extract(_save(doc))
    assert out.status is Status.OK, out.error
    assert [p.number for p in out.pages] == [1, 2]
    assert "alpha slide words" in out.pages[0].text and "beta" not in out.pages[0].text
    assert "beta slide words" in out.pages[1].text
    assert "## Chapter 1" in out.markdown  # the page name when no title frame exists


def test_tracked_deletions_dropped(corpus: Path) -> None:
    out = textsieve.extract(corpus / "odt" / "odfdo__tracked_changes.odt")
    assert "los bonitos amigos" in out.text
    assert "amis," not in out.text


def test_annotations_only_with_comments(corpus: Path) -> None:
    path = corpus / "odt" / "odfdo__note.odt"
    plain = textsieve.extract(path)
    assert "Un paragraphe d'apparence banale." in plain.text
    assert "Les apparences sont trompeuses" in plain.text  # the endnote
    assert "Sauf qu'il est commenté" not in plain.text
    assert "Sauf qu'il est commenté" in textsieve.extract(path, comments=True).text


def test_encrypted_odf() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        z.writestr("content.xml", b"\x8a\x01garbage")
        z.writestr("META-INF/manifest.xml", (
            '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:'
            'manifest:1.0"><manifest:file-entry manifest:full-path="/" manifest:media-type='
            '"application/vnd.oasis.opendocument.text"/><manifest:file-entry manifest:'
            'full-path="content.xml" manifest:media-type="text/xml"><manifest:encryption-data '
            'manifest:checksum-type="SHA1"/></manifest:file-entry></manifest:manifest>'))
    out = textsieve.extract(buf.getvalue())
    assert out.status is Status.ERROR and out.error.kind is ErrorKind.ENCRYPTED


def _encrypt_odf(plain: bytes, password: str, *, blowfish: bool = False) -> bytes:
    """Password-protect an ODF package the way the ODF 1.2 spec says (an independent
    writer, so the reader is checked against the spec, not against itself): each member
    raw-deflated, then AES-256-CBC with W3C padding (or OpenOffice.org 3's Blowfish-CFB),
    key = PBKDF2-HMAC-SHA1(SHA-256 or SHA-1 of the password), checksum of the first KB."""
    import base64
    import hashlib
    import os
    import zlib

    from cryptography.hazmat.decrepit.ciphers.algorithms import Blowfish
    from cryptography.hazmat.decrepit.ciphers.modes import CFB
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    src = zipfile.ZipFile(io.BytesIO(plain))
    entries = []
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("mimetype", src.read("mimetype"), compress_type=zipfile.ZIP_STORED)
        for name in src.namelist():
            if name in ("mimetype", "META-INF/manifest.xml") or name.endswith("/"):
                continue
            data = src.read(name)
            comp = zlib.compressobj(9, zlib.DEFLATED, -15)
            packed = comp.compress(data) + comp.flush()
            salt, rounds = os.urandom(16), (1024 if blowfish else 100_000)
            if blowfish:
                iv = os.urandom(8)
                key = hashlib.pbkdf2_hmac("sha1", hashlib.sha1(password.encode()).digest(),
                                          salt, rounds, 16)
                enc = Cipher(Blowfish(key), CFB(iv)).encryptor()
                sealed = enc.update(packed) + enc.finalize()
                check_type, check_value = "SHA1/1K", hashlib.sha1(packed[:1024]).digest()
                algo, start = "Blowfish CFB", ""  # no start-key element: SHA-1 is implied
            else:
                iv = os.urandom(16)
                key = hashlib.pbkdf2_hmac("sha1", hashlib.sha256(password.encode()).digest(),
                                          salt, rounds, 32)
                pad = 16 - len(packed) % 16
                padded = packed + os.urandom(pad - 1) + bytes([pad])
                enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
                sealed = enc.update(padded) + enc.finalize()
                check_type = "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#sha256-1k"
                check_value = hashlib.sha256(padded[:1024]).digest()
                algo = "http://www.w3.org/2001/04/xmlenc#aes256-cbc"
                start = ('<manifest:start-key-generation manifest:start-key-generation-name='
                         '"http://www.w3.org/2000/09/xmldsig#sha256" manifest:key-size="32"/>')
            z.writestr(name, sealed, compress_type=zipfile.ZIP_STORED)
            b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
            entries.append(
                f'<manifest:file-entry manifest:full-path="{name}" manifest:media-type="text/xml"'
                f' manifest:size="{len(data)}"><manifest:encryption-data manifest:checksum-type='
                f'"{check_type}" manifest:checksum="{b64(check_value)}"><manifest:algorithm '
                f'manifest:algorithm-name="{algo}" manifest:initialisation-vector="{b64(iv)}"/>'
                f'{start}<manifest:key-derivation manifest:key-derivation-name="PBKDF2" '
                f'manifest:key-size="{len(key)}" manifest:iteration-count="{rounds}" '
                f'manifest:salt="{b64(salt)}"/></manifest:encryption-data></manifest:file-entry>')
        mime = src.read("mimetype").decode()
        z.writestr("META-INF/manifest.xml", (
            '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest='
            '"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
            f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{mime}"/>'
            + "".join(entries) + "</manifest:manifest>"))
    return out.getvalue()


@pytest.mark.parametrize("blowfish", [False, True], ids=["aes256-cbc", "blowfish-cfb"])
def test_password_protected_odt_round_trip(blowfish: bool) -> None:
    locked = _encrypt_odf(_make_odt(), "Grüße 2024", blowfish=blowfish)
    none = textsieve.extract(locked)
    assert none.error is not None and none.error.kind is ErrorKind.ENCRYPTED
    wrong = textsieve.extract(locked, password="grüße 2024")
    assert wrong.error is not None and wrong.error.kind is ErrorKind.ENCRYPTED
    assert "wrong password" in wrong.error.message
    out = textsieve.extract(locked, password="Grüße 2024")
    assert out.status is Status.OK, out.error
    assert out.metadata.extra["encrypted"] is True
    assert out.title == "ODT Title"  # meta.xml was encrypted too
    assert "# Main Title" in out.markdown and "Final words." in out.text


def test_password_protected_ods_from_libreoffice(corpus: Path) -> None:
    """A real LibreOffice file (calamine's test file; its password is 1234)."""
    path = corpus / "ods" / "calamine__pass_protected.ods"
    locked = textsieve.extract(path)
    assert locked.error is not None and locked.error.kind is ErrorKind.ENCRYPTED
    out = textsieve.extract(path, password="1234")
    assert out.status is Status.OK, out.error
    assert out.metadata.extra["encrypted"] is True
    assert "Sheet1" in out.text and "String" in out.text and "2010-10-10" in out.text


def test_broken_content_is_corrupt() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        z.writestr("styles.xml", "<x/>")
    out = textsieve.extract(buf.getvalue())
    assert out.status is Status.ERROR and out.error.kind is ErrorKind.CORRUPT


def test_corpus_embedded_chart_tables(corpus: Path) -> None:
    out = textsieve.extract(corpus / "odp" / "odftoolkit__presentationWithEmbedDoc.odp")
    assert "| Row 1 | 9.1 | 3.2 | 4.54 |" in out.markdown


def test_corpus_shifted_zip_offsets(corpus: Path) -> None:
    out = textsieve.extract(corpus / "odt" / "ocrmypdf__tagged.odt")
    assert out.status is Status.OK and "Page 2 Heading" in out.text


ODT = sorted(p.name for p in (Path(__file__).resolve().parents[2] / "shared" / "data" /
                              "dev-corpus" / "odt").glob("*.odt"))
ODP = sorted(p.name for p in (Path(__file__).resolve().parents[2] / "shared" / "data" /
                              "dev-corpus" / "odp").glob("*.odp"))


@pytest.mark.parametrize("folder,name", [("odt", n) for n in ODT] + [("odp", n) for n in ODP])
def test_corpus_has_text(corpus: Path, folder: str, name: str) -> None:
    out = textsieve.extract(corpus / folder / name)
    assert out.status is Status.OK, out.error
    assert out.text.strip()
    if folder == "odp":
        assert out.pages


def _retype(data: bytes, mime: str) -> bytes:
    """The same package declared as another OpenDocument type (mimetype + manifest root)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    old = src.read("mimetype")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "mimetype":
                body = mime.encode()
            elif info.filename == "META-INF/manifest.xml":
                body = body.replace(b'media-type="' + old + b'"',
                                    b'media-type="' + mime.encode() + b'"')
            dst.writestr(info, body)
    return buf.getvalue()


@pytest.mark.parametrize(("ext", "mime"), [
    ("ott", "application/vnd.oasis.opendocument.text-template"),
    ("odm", "application/vnd.oasis.opendocument.text-master"),
    ("otm", "application/vnd.oasis.opendocument.text-master-template"),
    ("oth", "application/vnd.oasis.opendocument.text-web"),
])
def test_every_text_flavour_and_template(ext: str, mime: str) -> None:
    data = _retype(_make_odt(), mime)
    assert textsieve.detect(data, name=f"x.{ext}") == mime
    out = textsieve.extract(data, name=f"x.{ext}")
    assert out.status is Status.OK, out.error
    assert out.mime_type == mime
    assert "# Main Title" in out.markdown and "Final words." in out.text


def test_presentation_template() -> None:
    doc = Document("presentation")
    page = DrawPage("p1", name="Intro")
    page.append(Frame.text_frame("Template slide words", size=("10cm", "2cm"),
                                 position=("1cm", "1cm")))
    doc.body.append(page)
    mime = "application/vnd.oasis.opendocument.presentation-template"
    out = textsieve.extract(_retype(_save(doc), mime), name="deck.otp")
    assert out.mime_type == mime
    assert out.status is Status.OK, out.error
    assert "Template slide words" in out.text


_ODF_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
           'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
           'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
           'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
           'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
           'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
           'xmlns:xlink="http://www.w3.org/1999/xlink" '
           'xmlns:math="http://www.w3.org/1998/Math/MathML" '
           'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"')


def _package(content: str, styles: str = "", kind: str = "text",
             more: dict[str, str] | None = None) -> bytes:
    """An ODF package from raw XML: what LibreOffice writes, cut to the parts a test needs
    (odfdo makes no master pages, list number styles or formulas)."""
    mime = f"application/vnd.oasis.opendocument.{kind}"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("mimetype", mime)
        z.writestr("content.xml", '<?xml version="1.0" encoding="UTF-8"?>'
                   f'<office:document-content {_ODF_NS} office:version="1.3">{content}'
                   "</office:document-content>")
        z.writestr("styles.xml", '<?xml version="1.0" encoding="UTF-8"?>'
                   f'<office:document-styles {_ODF_NS} office:version="1.3">{styles}'
                   "</office:document-styles>")
        entries = "".join(f'<manifest:file-entry manifest:full-path="{n}" '
                          'manifest:media-type="text/xml"/>' for n in (more or {}))
        z.writestr("META-INF/manifest.xml", '<?xml version="1.0" encoding="UTF-8"?>'
                   '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:'
                   'xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry '
                   f'manifest:full-path="/" manifest:media-type="{mime}"/>'
                   '<manifest:file-entry manifest:full-path="content.xml" '
                   f'manifest:media-type="text/xml"/>{entries}</manifest:manifest>')
        for name, xml in (more or {}).items():
            z.writestr(name, xml)
    return buf.getvalue()


def test_list_numbers_are_in_the_text() -> None:
    content = (
        "<office:automatic-styles><text:list-style style:name='L1'>"
        "<text:list-level-style-number text:level='1' style:num-format='1' "
        "style:num-suffix='.'/>"
        "<text:list-level-style-number text:level='2' style:num-format='a' "
        "style:num-suffix=')'/>"
        "<text:list-level-style-number text:level='3' style:num-format='i' "
        "style:num-prefix='(' style:num-suffix=')' text:display-levels='2'/>"
        "</text:list-style></office:automatic-styles>"
        "<office:body><office:text><text:list text:style-name='L1'>"
        "<text:list-item text:start-value='42'><text:p>Answer</text:p>"
        "<text:list><text:list-item><text:p>first</text:p></text:list-item>"
        "<text:list-item><text:p>second</text:p><text:list><text:list-item>"
        "<text:p>deep</text:p></text:list-item></text:list></text:list-item></text:list>"
        "</text:list-item><text:list-item><text:p>Next</text:p></text:list-item>"
        "</text:list></office:text></office:body>")
    out = textsieve.extract(_package(content), name="l.odt")
    assert out.status is Status.OK, out.error
    lines = [ln.strip() for ln in out.text.split("\n") if ln.strip()]
    assert lines == ["42. Answer", "a) first", "b) second", "(2.i) deep", "43. Next"]
    assert "42. Answer\n  1. first\n  2. second\n    1. deep\n43. Next" in out.markdown


def test_alt_text_of_frames_and_shapes() -> None:
    content = (
        "<office:body><office:text><text:p>Before the picture."
        "<draw:frame draw:name='img1'><draw:image xlink:href='Pictures/x.png'/>"
        "<svg:title>Heron map</svg:title><svg:desc>Colonies along the river</svg:desc>"
        "</draw:frame></text:p><text:p>After it.</text:p></office:text></office:body>")
    out = textsieve.extract(_package(content), name="a.odt")
    assert out.status is Status.OK, out.error
    assert out.text == ("Before the picture.\n\nHeron map\n\nColonies along the river\n\n"
                        "After it.")
    assert "![Heron map]()\n\n![Colonies along the river]()" in out.markdown


def test_sheet_footer_regions_are_text_but_default_page_fields_are_not() -> None:
    styles = (
        "<office:master-styles><style:master-page style:name='Default'>"
        "<style:header><text:p><text:sheet-name>???</text:sheet-name></text:p></style:header>"
        "<style:footer><style:region-left><text:p>Heron Society accounts</text:p>"
        "</style:region-left><style:region-right><text:p>Page <text:page-number>1"
        "</text:page-number></text:p></style:region-right></style:footer>"
        "<style:footer-left style:display='false'><text:p>Hidden left footer</text:p>"
        "</style:footer-left></style:master-page></office:master-styles>")
    content = ("<office:body><office:spreadsheet><table:table table:name='Sheet1' "
               "xmlns:table='urn:oasis:names:tc:opendocument:xmlns:table:1.0'>"
               "<table:table-row><table:table-cell office:value-type='string'>"
               "<text:p>Cell words</text:p></table:table-cell></table:table-row>"
               "</table:table></office:spreadsheet></office:body>")
    out = textsieve.extract(_package(content, styles, "spreadsheet"), name="s.ods")
    assert out.status is Status.OK, out.error
    assert "Cell words" in out.text
    assert "Heron Society accounts" in out.text
    assert "???" not in out.text and "Hidden left footer" not in out.text


def test_slide_master_text_and_footer_declarations_are_slide_text() -> None:
    styles = (
        "<office:master-styles><style:master-page style:name='Master1'>"
        "<draw:frame presentation:class='title'><draw:text-box><text:p>Click to add Title"
        "</text:p></draw:text-box></draw:frame>"
        "<draw:frame><draw:text-box><text:p>ACME Confidential</text:p></draw:text-box>"
        "</draw:frame><draw:frame><draw:text-box><text:p>Slide <text:page-number>&lt;number"
        "&gt;</text:page-number></text:p></draw:text-box></draw:frame>"
        "<draw:frame presentation:class='footer'><draw:text-box><text:p><presentation:footer/>"
        "</text:p></draw:text-box></draw:frame></style:master-page></office:master-styles>")
    content = (
        "<office:body><office:presentation>"
        "<presentation:footer-decl presentation:name='ftr1'>Heron Society 2026"
        "</presentation:footer-decl>"
        "<draw:page draw:name='page1' draw:master-page-name='Master1' "
        "presentation:use-footer-name='ftr1'/>"
        "<draw:page draw:name='page2' draw:master-page-name='Master1' "
        "presentation:use-footer-name='ftr1'/>"
        "</office:presentation></office:body>")
    out = textsieve.extract(_package(content, styles, "presentation"), name="m.odp")
    assert out.status is Status.OK, out.error
    assert [p.text for p in out.pages] == [
        "ACME Confidential\n\nSlide 1\n\nHeron Society 2026", "Slide 2"]
    assert "Click to add" not in out.text


_FORMULA = (
    '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><semantics><mrow>'
    "<msup><mi>a</mi><mn>2</mn></msup><mo>+</mo><msup><mi>b</mi><mn>2</mn></msup>"
    "<mo>=</mo><msup><mi>c</mi><mn>2</mn></msup></mrow>{annotation}</semantics></math>")


@pytest.mark.parametrize(("annotation", "expected"), [
    # LibreOffice keeps the StarMath source the author typed: that is the linear form
    ('<annotation encoding="StarMath 5.0">a^2 + b^2 = c^2</annotation>', "a^2 + b^2 = c^2"),
    ("", "a^2+b^2=c^2"),  # MathML alone: written out from the presentation tree
])
def test_formula_objects_come_out_as_linear_text(annotation: str, expected: str) -> None:
    content = ("<office:body><office:text><text:p>Pythagoras:<draw:frame draw:name='F1'>"
               "<draw:object xlink:href='./Object 1' xlink:type='simple'/></draw:frame>"
               "</text:p></office:text></office:body>")
    data = _package(content, more={"Object 1/content.xml": _FORMULA.format(
        annotation=annotation)})
    out = textsieve.extract(data, name="f.odt")
    assert out.status is Status.OK, out.error
    assert out.text == f"Pythagoras:\n\n{expected}"


def test_a_formula_anchored_as_a_character_stays_in_its_sentence() -> None:
    # Made by LibreOffice (tests/fixtures/office/make_fixtures.py): the formula is the
    # sub-package "Object 1", its frame anchored as a character inside the paragraph.
    path = Path(__file__).parent / "fixtures" / "office" / "inline_formula.odt"
    out = textsieve.extract(path)
    assert out.status is Status.OK, out.error
    assert out.text == "Einstein wrote E = m c^2 in 1905."
