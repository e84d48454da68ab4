"""PDF extractor: generated round trips (text, pages, metadata, scans, forms, attachments)
and every dev-corpus PDF giving text or a typed error."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas

import textsieve
from textsieve.extractors.pdf import pdf_date
from textsieve.model import ErrorKind, Status

PDF_DIR = "pdf"


def _image() -> ImageReader:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (200, 100), "white")
    ImageDraw.Draw(img).rectangle((20, 20, 180, 80), fill="black")
    return ImageReader(img)


def make_pdf(pages: list[str | None], *, title: str | None = None,
             author: str | None = None, encrypt: object = None) -> bytes:
    """One page per entry: a string is drawn as text lines, None draws an image only."""
    buf = io.BytesIO()
    c = canvas.Canvas(buf, encrypt=encrypt)
    if title:
        c.setTitle(title)
    if author:
        c.setAuthor(author)
    c.setSubject("Testing subject")
    c.setKeywords("alpha, beta")
    for content in pages:
        if content is None:
            c.drawImage(_image(), 50, 400, width=400, height=200)
        else:
            y = 750
            for line in content.split("\n"):
                c.drawString(72, y, line)
                y -= 16
        c.showPage()
    c.save()
    return buf.getvalue()


def test_pages_text_and_metadata() -> None:
    pages = [f"Page {i} first line of words\nsecond line number {i}" for i in range(1, 5)]
    doc = textsieve.extract(make_pdf(pages, title="Round Trip Title", author="Ada Lovelace"))
    assert doc.status is Status.OK, doc.error
    assert doc.mime_type == "application/pdf"
    assert doc.metadata.page_count == 4
    assert [p.number for p in doc.pages] == [1, 2, 3, 4]
    for i, page in enumerate(doc.pages, 1):
        assert page.text == f"Page {i} first line of words\nsecond line number {i}"
    assert doc.text.index("Page 1") < doc.text.index("Page 2") < doc.text.index("Page 4")
    assert "\r" not in doc.text
    assert doc.title == "Round Trip Title"
    assert doc.metadata.author == "Ada Lovelace"
    assert doc.metadata.subject == "Testing subject"
    assert doc.metadata.keywords == "alpha, beta"
    assert doc.metadata.created and doc.metadata.created[:2] in ("19", "20")
    assert doc.metadata.extra["producer"]
    assert "second line number 3" in doc.markdown


def test_from_path_equals_from_bytes(tmp_path: Path) -> None:
    data = make_pdf(["hello from a file path"])
    path = tmp_path / "x.pdf"
    path.write_bytes(data)
    assert textsieve.extract(path).text == textsieve.extract(data).text == (
        "hello from a file path")


def test_image_only_needs_ocr_when_ocr_is_off() -> None:
    doc = textsieve.extract(make_pdf([None, None]), ocr="never")
    assert doc.status is Status.ERROR
    assert doc.error is not None and doc.error.kind is ErrorKind.NEEDS_OCR
    assert "2 pages" in doc.error.message


def test_mixed_pages_list_pages_needing_ocr_when_ocr_is_off() -> None:
    doc = textsieve.extract(make_pdf(["real text here", None, "more text", None]), ocr="never")
    assert doc.status is Status.OK
    assert doc.metadata.extra["pages_needing_ocr"] == [2, 4]
    assert any("OCR" in w for w in doc.warnings)
    assert "real text here" in doc.text and "more text" in doc.text


def test_blank_pdf_is_empty() -> None:
    doc = textsieve.extract(make_pdf([""]))
    assert doc.status is Status.EMPTY
    assert doc.metadata.page_count == 1


def test_user_password_generated() -> None:
    from reportlab.lib.pdfencrypt import StandardEncryption

    enc = StandardEncryption("s3cret", ownerPassword="owner", strength=128)
    data = make_pdf(["locked words"], encrypt=enc)
    doc = textsieve.extract(data)
    assert doc.error is not None and doc.error.kind is ErrorKind.ENCRYPTED
    assert "password required" in doc.error.message
    wrong = textsieve.extract(data, password="nope")
    assert wrong.error is not None and wrong.error.kind is ErrorKind.ENCRYPTED
    assert "wrong password" in wrong.error.message
    assert textsieve.extract(data, password="s3cret").text == "locked words"


def test_owner_password_only_opens() -> None:
    from reportlab.lib.pdfencrypt import StandardEncryption

    enc = StandardEncryption("", ownerPassword="owner", canPrint=0, canCopy=0)
    doc = textsieve.extract(make_pdf(["restricted but readable"], encrypt=enc))
    assert doc.status is Status.OK
    assert doc.text == "restricted but readable"


def _form_pdf(pages: list[tuple[str, list[tuple[str, str]]]]) -> bytes:
    """A PDF whose pages each have a line of text and filled text fields (name, value)."""
    buf = io.BytesIO()
    c = canvas.Canvas(buf)
    for text, fields in pages:
        c.drawString(72, 750, text)
        for n, (name, value) in enumerate(fields):
            c.acroForm.textfield(name=name, value=value, x=72, y=650 - 50 * n,
                                 width=200, height=20)
        c.showPage()
    c.save()
    return buf.getvalue()


def test_form_field_values() -> None:
    doc = textsieve.extract(_form_pdf([("Application form", [("applicant", "Grace Hopper")])]))
    assert doc.status is Status.OK
    assert "Application form" in doc.text
    assert "Grace Hopper" in doc.text


def test_form_field_on_several_pages_is_shown_once() -> None:
    doc = textsieve.extract(_form_pdf([
        ("Form page 1", [("applicant", "Grace Hopper")]),
        ("Form page 2", [("applicant", "Grace Hopper"), ("city", "Arlington")])]))
    assert doc.status is Status.OK
    assert doc.text.count("Grace Hopper") == 1
    assert "Arlington" in doc.pages[1].text


def test_attachment_becomes_child() -> None:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(make_pdf(["the container page"]))
    att = pdf.new_attachment("notes.txt")
    att.set_data(b"words inside the attachment\n")
    out = io.BytesIO()
    pdf.save(out)
    pdf.close()
    doc = textsieve.extract(out.getvalue())
    assert doc.text == "the container page"
    assert [c.name for c in doc.children] == ["notes.txt"]
    assert "words inside the attachment" in doc.children[0].text


def test_corrupt_inputs() -> None:
    truncated = make_pdf(["some text"])[:200]
    for data in (b"%PDF-1.4\n garbage garbage", truncated):
        doc = textsieve.extract(data, name="bad.pdf")
        assert doc.error is not None and doc.error.kind is ErrorKind.CORRUPT, doc.error


@pytest.mark.parametrize("value,expected", [
    ("D:20230102030405+01'00'", "2023-01-02T03:04:05+01:00"),
    ("D:20230102030405Z", "2023-01-02T03:04:05Z"),
    ("D:20230102030405Z00'00'", "2023-01-02T03:04:05Z"),
    ("D:20230102030405-0530", "2023-01-02T03:04:05-05:30"),
    ("D:202301", "2023-01-01"),
    ("20230102", "2023-01-02"),
    ("D:20231302", None),
    ("garbage", None),
    ("", None),
])
def test_pdf_date(value: str, expected: str | None) -> None:
    assert pdf_date(value) == expected


# -- dev corpus ------------------------------------------------------------------------------

PASSWORDS = {
    "pdfjs__issue3371.pdf": "ELXRTQWS",
    "pdfjs__issue21579.pdf": "pässwört",
    "qpdf__encrypted-40-bit-R3.pdf": "623",
    "qpdf__enc-XI-long-password.pdf": "qwertyuiopasdfghjklzxcvbnm" * 6,
    "pdfjs__saslprep-r6.pdf": "S\u00aaSL\u00adprep",
}


@pytest.mark.parametrize("name", sorted(PASSWORDS))
def test_corpus_encrypted(corpus: Path, name: str) -> None:
    path = corpus / PDF_DIR / name
    locked = textsieve.extract(path)
    assert locked.error is not None and locked.error.kind is ErrorKind.ENCRYPTED
    assert "password required" in locked.error.message
    wrong = textsieve.extract(path, password="definitely-wrong")
    assert wrong.error is not None and wrong.error.kind is ErrorKind.ENCRYPTED
    opened = textsieve.extract(path, password=PASSWORDS[name])
    assert opened.error is None or opened.error.kind is ErrorKind.NEEDS_OCR, opened.error
    assert opened.metadata.page_count


def test_corpus_owner_only_opens(corpus: Path) -> None:
    doc = textsieve.extract(corpus / PDF_DIR / "qpdf__V4-aes.pdf")
    assert doc.status is Status.OK and doc.metadata.page_count == 30


@pytest.mark.parametrize("name,kind", [
    ("ocrmypdf__invalid.pdf", ErrorKind.CORRUPT),
    ("pdfjs__Brotli-Prototype-FileA.pdf", ErrorKind.CORRUPT),
    ("pdfjs__poppler-742-0-fuzzed.pdf", ErrorKind.CORRUPT),
    ("ocrmypdf__skew.pdf", ErrorKind.NEEDS_OCR),
    ("qpdf__encrypted-with-images.pdf", ErrorKind.NEEDS_OCR),
])
def test_corpus_typed_errors(corpus: Path, name: str, kind: ErrorKind) -> None:
    doc = textsieve.extract(corpus / PDF_DIR / name, ocr="never")
    assert doc.error is not None and doc.error.kind is kind, doc.error
    if "Brotli" in name:
        assert "Brotli" in doc.error.message


def test_corpus_mixed_scan(corpus: Path) -> None:
    doc = textsieve.extract(corpus / PDF_DIR / "ocrmypdf__multipage.pdf", ocr="never")
    assert doc.status is Status.OK
    assert doc.metadata.extra["pages_needing_ocr"]


def _pdftotext_has_text(path: Path) -> bool:
    res = subprocess.run(["pdftotext", "-q", str(path), "-"], capture_output=True,
                         timeout=60, check=False)
    return bool(res.stdout.strip())


def _corpus_pdfs() -> list[str]:
    folder = Path(__file__).resolve().parents[2] / "shared" / "data" / "dev-corpus" / PDF_DIR
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.mark.parametrize("name", _corpus_pdfs())
def test_corpus_every_pdf(corpus: Path, name: str) -> None:
    """Text layer: text or a typed error; never internal, never empty when pdftotext finds
    text. (OCR of the scans is covered by test_corpus and test_ocr.)"""
    path = corpus / PDF_DIR / name
    doc = textsieve.extract(path, ocr="never")
    if doc.error is not None:
        assert doc.error.kind is not ErrorKind.INTERNAL, doc.error
        assert doc.error.message
        return
    if shutil.which("pdftotext") and _pdftotext_has_text(path):
        assert doc.text.strip(), f"{name}: pdftotext finds text, we returned none"


def test_corpus_garbled_text_layer(corpus: Path) -> None:
    """TAMReview's body fonts have no Unicode mapping: those pages are flagged for OCR."""
    doc = textsieve.extract(corpus / PDF_DIR / "pdfjs__TAMReview.pdf", ocr="never")
    assert doc.status is Status.OK
    flagged = doc.metadata.extra["pages_needing_ocr"]
    assert 1 not in flagged and 23 not in flagged and 2 in flagged
    assert "Technology Acceptance Model" in doc.pages[0].text


def _annotated_pdf() -> bytes:
    """A page with a FreeText box typed onto it, a sticky note and a hidden FreeText
    (annotation flag 2), all written by reportlab as PDF annotations, not page text."""
    buf = io.BytesIO()
    cv = canvas.Canvas(buf)
    cv.drawString(72, 720, "Body text of the page.")
    cv.freeTextAnnotation("Approved by the heron committee", DA="/Helv 12 Tf 0 g",
                          Rect=(72, 600, 400, 640))
    cv.freeTextAnnotation("Hidden draft remark", DA="/Helv 12 Tf 0 g",
                          Rect=(72, 560, 400, 590), F=2)
    cv.textAnnotation("Check these figures again", Rect=(72, 500, 90, 518))
    cv.showPage()
    cv.drawString(72, 720, "Second page.")
    cv.showPage()
    cv.save()
    return buf.getvalue()


def test_freetext_annotations_are_page_text_and_notes_come_with_comments() -> None:
    doc = textsieve.extract(_annotated_pdf(), name="a.pdf")
    assert doc.status is Status.OK, doc.error
    assert doc.pages[0].text == "Body text of the page.\n\nApproved by the heron committee"
    assert doc.pages[1].text == "Second page."
    assert "Hidden draft remark" not in doc.text and "Check these" not in doc.text
    with_notes = textsieve.extract(_annotated_pdf(), name="a.pdf", comments=True)
    assert with_notes.pages[0].text.endswith("committee\n\nCheck these figures again")


# -- right-to-left text ------------------------------------------------------------------
DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
needs_dejavu = pytest.mark.skipif(not DEJAVU.exists(), reason="fonts-dejavu-core not installed")


def _presentation_forms() -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], str]]:
    """Arabic presentation forms by (letter, form) and lam-alef ligatures by (pair, form),
    from the Unicode decompositions of U+FE70..U+FEFC."""
    import unicodedata

    forms: dict[tuple[str, str], str] = {}
    ligatures: dict[tuple[str, str], str] = {}
    for cp in range(0xFE70, 0xFEFD):
        tag, *codes = (unicodedata.decomposition(chr(cp)) or "x").split()
        base = "".join(chr(int(h, 16)) for h in codes)
        if tag.startswith("<"):
            (forms if len(base) == 1 else ligatures)[base, tag.strip("<>")] = chr(cp)
    return forms, ligatures


def _visual_arabic(line: str) -> str:
    """A logical right-to-left line as PDF producers draw it: each word shaped into
    presentation forms (lam + alef as one ligature glyph), glyphs in visual order."""
    forms, ligatures = _presentation_forms()

    def joins(ch: str) -> bool:
        return (ch, "final") in forms

    def dual(ch: str) -> bool:
        return (ch, "initial") in forms

    def shape(word: str) -> str:
        out, i = [], 0
        while i < len(word):
            after = i > 0 and dual(word[i - 1])
            if (word[i:i + 2], "isolated") in ligatures:
                out.append(ligatures[word[i:i + 2], "final" if after else "isolated"])
                i += 2
                continue
            before = i + 1 < len(word) and dual(word[i]) and joins(word[i + 1])
            form = {(0, 0): "isolated", (0, 1): "initial", (1, 1): "medial",
                    (1, 0): "final"}[int(after), int(before)]
            out.append(forms.get((word[i], form)) or word[i])
            i += 1
        return "".join(out)

    return " ".join(shape(w)[::-1] if not w.isascii() else w for w in reversed(line.split()))


def _rtl_pdf(path: Path, runs: list[list[str]], ligature_as_two: bool) -> Path:
    """One line per entry of ``runs``; each line's runs drawn right to left, edge to edge
    without a space glyph between them (the way bidi runs are placed). With
    ``ligature_as_two`` the ToUnicode map gives the lam-alef glyphs the two letters they
    stand for, as Word and LibreOffice write it."""
    import re

    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    pdfmetrics.registerFont(TTFont("DejaVuRTL", str(DEJAVU)))
    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pageCompression=0)
    y = 780.0
    for line in runs:
        right = 550.0
        for run in line:
            shown = run if run.isascii() else _visual_arabic(run) if any(
                "\u0600" <= ch <= "\u06ff" for ch in run) else run[::-1]
            pdf.setFont("DejaVuRTL", 14)
            pdf.drawRightString(right, y, shown)
            right -= pdfmetrics.stringWidth(shown, "DejaVuRTL", 14)
        y -= 24
    pdf.save()
    data = buf.getvalue()
    if ligature_as_two:
        data = re.sub(rb"<FEF[5-9A-C]>", b"<06440627>", data)
    path.write_bytes(data)
    return path


@needs_dejavu
@pytest.mark.parametrize("ligature_as_two", [False, True])
def test_arabic_lam_alef_in_logical_order(tmp_path: Path, ligature_as_two: bool) -> None:
    path = _rtl_pdf(tmp_path / "ar.pdf", [["السلام عليكم ورحمة الله"], ["لا إله إلا الله"]],
                    ligature_as_two)
    doc = textsieve.extract(path)
    assert doc.status is Status.OK
    assert doc.text.split("\n") == ["السلام عليكم ورحمة الله", "لا إله إلا الله"]


@needs_dejavu
def test_space_where_the_script_changes(tmp_path: Path) -> None:
    """Logical "تعلمت Python من الكتاب" / "שלום Python עולם", each run drawn apart with no
    space glyph between: the words of two scripts are not glued together."""
    path = _rtl_pdf(tmp_path / "mixed.pdf", [["تعلمت", "Python", "من الكتاب"],
                                             ["שלום", "Python", "עולם"]], False)
    words = textsieve.extract(path).text.split()
    assert "Python" in words and "من" in words and "تعلمت" in words
    assert "שלום" in words and "עולם" in words
    assert words.count("Python") == 2


def _rights_managed_pdf(handler: bytes) -> bytes:
    """A one-page PDF whose /Encrypt names a rights-management handler (no password opens it).

    Written by hand: no PDF library writes MicrosoftIRMServices or Adobe.APS encryption. The
    trailer carries /Encrypt and /ID as a real one does; the handler's licence is a stand-in.
    """
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
            b"<< /Filter /" + handler + b" /V 4 /R 4 /Length 128 /PublicationLicense (lic) >>"]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (i, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += (b"trailer\n<< /Size %d /Root 1 0 R /Encrypt 4 0 R /ID [<0011223344556677>"
            b" <0011223344556677>] >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref))
    return bytes(out)


def _wrapper(placeholder: str, payload_name: str, payload: bytes) -> bytes:
    """A cover page that tells the reader to use another viewer, the document attached."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(make_pdf([placeholder]))
    pdf.new_attachment(payload_name).set_data(payload)
    out = io.BytesIO()
    pdf.save(out)
    pdf.close()
    return out.getvalue()


# Placeholder pages as the vendors word them (paraphrased): Microsoft Purview's protected
# PDF (the payload attachment has this fixed name) and Adobe LiveCycle/AEM's "page 0".
_MS_PAGE = ("Microsoft Information Protection\nThis document is protected with encryption "
            "by Microsoft Information Protection.\nOpen it with a PDF viewer that supports "
            "Azure Rights Management.")
_ADOBE_PAGE = ("This document is protected by Adobe LiveCycle Rights Management.\nOpen it "
               "in Adobe Acrobat or Adobe Reader to view its content.")


@pytest.mark.parametrize("page, name, handler", [
    (_MS_PAGE, "MicrosoftIRMServices Protected PDF.pdf", b"MicrosoftIRMServices"),
    (_ADOBE_PAGE, "protected.pdf", b"Adobe.APS"),
])
def test_rights_management_wrapper_is_encrypted(page: str, name: str, handler: bytes) -> None:
    doc = textsieve.extract(_wrapper(page, name, _rights_managed_pdf(handler)))
    assert doc.status is Status.ERROR
    assert doc.error is not None and doc.error.kind is ErrorKind.ENCRYPTED
    assert handler.decode() in doc.error.message and name in doc.error.message
    assert "protected" not in doc.text  # the placeholder is not passed off as content


def test_rights_managed_pdf_is_encrypted() -> None:
    doc = textsieve.extract(_rights_managed_pdf(b"MicrosoftIRMServices"))
    assert doc.error is not None and doc.error.kind is ErrorKind.ENCRYPTED
    assert "MicrosoftIRMServices" in doc.error.message


def test_cover_page_with_password_protected_attachment_keeps_its_text() -> None:
    # A password (Standard handler) attachment is not a rights-management payload.
    payload = make_pdf(["secret"], encrypt="pw")
    doc = textsieve.extract(_wrapper("Cover letter: the report is attached.", "report.pdf",
                                     payload))
    assert doc.status is Status.OK
    assert "Cover letter" in doc.text
    assert doc.children[0].error is not None
    assert doc.children[0].error.kind is ErrorKind.ENCRYPTED
