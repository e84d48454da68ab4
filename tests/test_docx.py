"""DOCX: round trips through python-docx-made files, raw-XML edge cases, the dev corpus."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from pathlib import Path

import docx
import pytest

import textsieve
from cpu_budget import cpu
from textsieve.model import ErrorKind, Status

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _make_docx() -> bytes:
    d = docx.Document()
    d.core_properties.title = "Quarterly Report"
    d.core_properties.author = "Ada Lovelace"
    d.core_properties.subject = "Finance"
    d.core_properties.keywords = "alpha, beta"
    d.core_properties.language = "en-GB"
    d.core_properties.created = dt.datetime(2021, 3, 4, 5, 6, 7)
    sec = d.sections[0]
    sec.header.paragraphs[0].text = "ACME header line"
    sec.footer.paragraphs[0].text = "Confidential footer"
    d.add_heading("Introduction", level=1)
    d.add_paragraph("First body paragraph.")
    d.add_heading("Details", level=2)
    d.add_paragraph("apple", style="List Bullet")
    d.add_paragraph("banana", style="List Bullet")
    d.add_paragraph("step one", style="List Number")
    d.add_paragraph("step two", style="List Number")
    t = d.add_table(rows=2, cols=2)
    t.cell(0, 0).text, t.cell(0, 1).text = "a", "b"
    t.cell(1, 0).text, t.cell(1, 1).text = "1", "2"
    d.add_paragraph("Closing words.")
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _patch(data: bytes, replace: dict[str, bytes]) -> bytes:
    """Rewrite some parts of a package (raw XML features python-docx cannot make)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename not in replace:
                dst.writestr(info, src.read(info))
        for name, content in replace.items():
            dst.writestr(name, content)
    return buf.getvalue()


def _body(xml: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{W_NS}" '
            'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
            'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
            'xmlns:v="urn:schemas-microsoft-com:vml">'
            f"<w:body>{xml}</w:body></w:document>").encode()


def _with_part(base: bytes, kind: str, xml: bytes,
               more: dict[str, bytes] | None = None) -> bytes:
    """``base`` with word/<kind>.xml added and related from the document (footnotes,
    comments, ...), plus any other parts replaced."""
    rels = zipfile.ZipFile(io.BytesIO(base)).read("word/_rels/document.xml.rels")
    rels = rels.replace(b"</Relationships>", (
        f'<Relationship Id="rId_{kind}" Type="http://schemas.openxmlformats.org/'
        f'officeDocument/2006/relationships/{kind}" Target="{kind}.xml"/>'
        "</Relationships>").encode())
    return _patch(base, {f"word/{kind}.xml": xml, "word/_rels/document.xml.rels": rels,
                         **(more or {})})


def test_round_trip_structure_and_metadata() -> None:
    doc = textsieve.extract(_make_docx())
    assert doc.status is Status.OK, doc.error
    md = doc.markdown
    assert "# Introduction" in md and "## Details" in md
    assert "- apple\n- banana" in md
    assert "1. step one\n2. step two" in md
    assert "| a | b |" in md and "| 1 | 2 |" in md
    # Order: header, body in sequence, footer.
    text = doc.text
    order = ["ACME header line", "Introduction", "First body paragraph.", "Details", "apple",
             "step two", "Closing words.", "Confidential footer"]
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions)
    assert text.count("ACME header line") == 1
    assert doc.title == "Quarterly Report"
    m = doc.metadata
    assert m.author == "Ada Lovelace" and m.subject == "Finance" and m.keywords == "alpha, beta"
    assert m.language == "en-GB"
    assert m.created is not None and m.created.startswith("2021-03-04")


def test_tracked_changes_fields_textboxes_and_notes() -> None:
    body = _body(
        '<w:p><w:r><w:t xml:space="preserve">Kept </w:t></w:r>'
        '<w:del><w:r><w:delText>REMOVED</w:delText></w:r></w:del>'
        '<w:ins><w:r><w:t>inserted</w:t></w:r></w:ins></w:p>'
        '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        '<w:r><w:instrText> AUTHOR \\* Upper </w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>SHOWN RESULT</w:t></w:r>'
        '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>'
        '<w:p><w:r><w:t>Anchor</w:t></w:r><w:r><mc:AlternateContent><mc:Choice Requires="wps">'
        '<w:drawing><wps:txbx><w:txbxContent><w:p><w:r><w:t>Boxed text</w:t></w:r></w:p>'
        '</w:txbxContent></wps:txbx></w:drawing></mc:Choice><mc:Fallback><w:pict><v:textbox>'
        '<w:txbxContent><w:p><w:r><w:t>Boxed text</w:t></w:r></w:p></w:txbxContent>'
        '</v:textbox></w:pict></mc:Fallback></mc:AlternateContent></w:r>'
        '<w:r><w:footnoteReference w:id="1"/></w:r><w:r><w:tab/><w:t>after tab</w:t></w:r></w:p>'
        '<w:tbl><w:tr><w:tc><w:tcPr><w:gridSpan w:val="2"/></w:tcPr><w:p><w:r><w:t>wide</w:t>'
        '</w:r></w:p></w:tc></w:tr><w:tr><w:tc><w:p><w:r><w:t>x</w:t></w:r></w:p>'
        '<w:tbl><w:tr><w:tc><w:p><w:r><w:t>inner1</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r>'
        '<w:t>inner2</w:t></w:r></w:p></w:tc></w:tr></w:tbl></w:tc><w:tc><w:p><w:r><w:t>y</w:t>'
        '</w:r></w:p></w:tc></w:tr></w:tbl>')
    notes = (f'<?xml version="1.0"?><w:footnotes xmlns:w="{W_NS}">'
             '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p>'
             '</w:footnote><w:footnote w:id="1"><w:p><w:r><w:t>The footnote body.</w:t></w:r>'
             '</w:p></w:footnote></w:footnotes>').encode()
    data = _with_part(_make_docx(), "footnotes", notes, {"word/document.xml": body})
    doc = textsieve.extract(data)
    assert doc.status is Status.OK, doc.error
    text = doc.text
    assert "Kept inserted" in text and "REMOVED" not in text
    assert "SHOWN RESULT" in text and "AUTHOR" not in text
    assert text.count("Boxed text") == 1
    assert text.index("Anchor") < text.index("Boxed text")
    assert "after tab" in text
    assert "| wide |  |" in doc.markdown
    assert "inner1 | inner2" in text
    assert text.index("The footnote body.") > text.index("y")


def test_run_level_breaks_and_a_paragraph_inside_a_run_container() -> None:
    # A content control inside a paragraph may hold whole paragraphs (Word writes them for
    # some templates): their text follows on a new line. Breaks, tabs and non-breaking
    # hyphens become their characters.
    body = _body(
        '<w:p><w:r><w:t>before</w:t></w:r><w:sdt><w:sdtContent><w:p><w:r><w:t>inner</w:t>'
        '</w:r></w:p></w:sdtContent></w:sdt></w:p>'
        '<w:p><w:r><w:t>one</w:t><w:br/><w:t>two</w:t><w:tab/><w:t>three</w:t>'
        '<w:noBreakHyphen/><w:t>four</w:t></w:r></w:p>')
    doc = textsieve.extract(_patch(_make_docx(), {"word/document.xml": body}))
    assert doc.status is Status.OK, doc.error
    paragraphs = doc.text.split("\n\n")
    assert "before\ninner" in paragraphs and "one\ntwo three-four" in paragraphs, paragraphs


def test_comments_only_on_request() -> None:
    comments = (f'<?xml version="1.0"?><w:comments xmlns:w="{W_NS}"><w:comment w:id="0" '
                'w:author="Bob"><w:p><w:r><w:t>Check this figure</w:t></w:r></w:p>'
                '</w:comment></w:comments>').encode()
    data = _with_part(_make_docx(), "comments", comments)
    assert "Check this figure" not in textsieve.extract(data).text
    with_c = textsieve.extract(data, comments=True).text
    assert "Check this figure" in with_c and "Bob" in with_c


def test_xml_bomb_and_external_entity_are_not_expanded(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    lol = "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    xml = (f'<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY lol0 "lol">{lol}'
           f'<!ENTITY xxe SYSTEM "file://{secret}">]>'
           f'<w:document xmlns:w="{W_NS}"><w:body><w:p><w:r><w:t>Visible &xxe; &lol9;</w:t>'
           '</w:r></w:p></w:body></w:document>').encode()
    plain = _make_docx()
    data = _patch(plain, {"word/document.xml": xml})
    for _ in range(2):  # the second one warm (imports done), as the bomb's will be
        _, peer = cpu(lambda: textsieve.extract(plain))
    doc, spent = cpu(lambda: textsieve.extract(data))
    assert spent < 50 * peer + 0.05, (spent, peer)  # 10^9 "lol"s were never made
    assert "TOP-SECRET" not in doc.text
    assert "lollol" not in doc.text
    assert doc.ok or doc.error.kind is ErrorKind.CORRUPT


def test_missing_document_part_is_corrupt() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("[Content_Types].xml", '<Types><Override PartName="/word/document.xml" '
                   'ContentType="application/vnd.openxmlformats-officedocument.'
                   'wordprocessingml.document.main+xml"/></Types>')
        z.writestr("word/styles.xml", "<x/>")
    doc = textsieve.extract(buf.getvalue())
    assert doc.status is Status.ERROR and doc.error.kind is ErrorKind.CORRUPT


def test_missing_secondary_parts_still_give_text() -> None:
    base = _make_docx()
    src = zipfile.ZipFile(io.BytesIO(base))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            if info.filename in ("word/styles.xml", "word/numbering.xml", "docProps/core.xml"):
                continue
            dst.writestr(info, src.read(info))
    doc = textsieve.extract(buf.getvalue())
    assert doc.status is Status.OK and "First body paragraph." in doc.text


def test_corpus_attachments_become_children(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "docx" / "poi__WordWithAttachments.docx")
    assert doc.status is Status.OK
    assert "Русский вариант" in doc.text
    assert len(doc.children) >= 4
    assert any("this is ooxml" in c.text for c in doc.children)
    assert sum(1 for c in doc.children if c.ok and c.text.strip()) >= 3


def test_corpus_tracked_changes_and_fields(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "docx" / "poi__FieldCodes.docx")
    assert "ANTONI" in doc.text and "MERGEFORMAT" not in doc.text
    cb = textsieve.extract(corpus / "docx" / "poi__checkboxes.docx").text
    assert "☒" in cb and "☐" in cb


CORPUS_DOCX = ["poi__FieldCodes.docx", "poi__HeaderFooterUnicode.docx",
               "poi__bib-chernigovka.netdo.ru_download_docs_17459.docx", "poi__checkboxes.docx",
               "poi__delins.docx", "poi__sample.docx", "pydocx__comments-rich-para.docx",
               "pydocx__par-hyperlinks.docx"]


@pytest.mark.parametrize("name", CORPUS_DOCX)
def test_corpus_has_text(corpus: Path, name: str) -> None:
    doc = textsieve.extract(corpus / "docx" / name)
    assert doc.status is Status.OK, doc.error
    assert len(doc.text.strip()) >= 10


def test_corpus_textless_file_is_empty_not_an_error(corpus: Path) -> None:
    # two tables whose cells are all empty, and no pictures: genuinely nothing to read
    assert textsieve.extract(corpus / "docx" / "pydocx__tbl-having-tables.docx").status \
        is Status.EMPTY


def test_pictures_of_a_document_without_text_are_read_by_ocr(corpus: Path) -> None:
    # No w:t at all, three logos: each picture becomes a child and is OCRed (the words
    # are in the logos); with OCR off the document says it needs OCR, never "empty".
    path = corpus / "docx" / "pydocx__having-images.docx"
    doc = textsieve.extract(path)
    assert doc.status is Status.OK, doc.error
    assert sorted(c.name for c in doc.children) == ["image1.png", "image2.png", "image3.png"]
    words = doc.full_text().lower()
    assert "python" in words and "powered" in words
    off = textsieve.extract(path, ocr="never")
    assert off.error is not None and off.error.kind == ErrorKind.NEEDS_OCR
    # a document with text keeps its pictures to itself (no OCR of every logo), unless
    # every picture is asked for
    d = docx.Document(io.BytesIO(_make_docx()))
    d.add_picture(io.BytesIO(zipfile.ZipFile(path).read("word/media/image1.png")))
    buf = io.BytesIO()
    d.save(buf)
    assert textsieve.extract(buf.getvalue()).children == []
    assert [c.name for c in textsieve.extract(buf.getvalue(), ocr="always").children] \
        == ["image1.png"]


def test_a_scan_pasted_into_a_document_is_read(tmp_path: Path) -> None:
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("L", (900, 160), 255)
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 48)  # as OCR tests
    ImageDraw.Draw(img).text((20, 40), "Invoice for the heron survey", fill=0, font=font)
    png = tmp_path / "scan.png"
    img.save(png)
    d = docx.Document()
    d.add_picture(str(png))
    buf = io.BytesIO()
    d.save(buf)
    doc = textsieve.extract(buf.getvalue())
    assert doc.status is Status.OK, doc.error
    assert "heron survey" in doc.full_text().lower()



@pytest.mark.parametrize("name", [
    "poi__clusterfuzz-testcase-minimized-POIXWPFFuzzer-4959857092198400.docx",
    "poi__truncated62886.docx"])
def test_corpus_damaged_is_corrupt(corpus: Path, name: str) -> None:
    doc = textsieve.extract(corpus / "docx" / name)
    assert doc.status is Status.ERROR and doc.error.kind is ErrorKind.CORRUPT


def test_localized_heading_styles_and_outline_levels() -> None:
    styles = (f'<?xml version="1.0"?><w:styles xmlns:w="{W_NS}">'
              '<w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/>'
              '</w:style><w:style w:type="paragraph" w:styleId="Kapitel">'
              '<w:name w:val="Überschrift 2"/></w:style>'
              '<w:style w:type="paragraph" w:styleId="Eigene"><w:name w:val="Eigene"/>'
              '<w:basedOn w:val="Basis"/></w:style><w:style w:type="paragraph" '
              'w:styleId="Basis"><w:name w:val="Basis"/><w:pPr><w:outlineLvl w:val="2"/>'
              '</w:pPr></w:style></w:styles>').encode()

    def para(style: str, text: str) -> str:
        return (f'<w:p><w:pPr><w:pStyle w:val="{style}"/></w:pPr><w:r><w:t>{text}</w:t>'
                '</w:r></w:p>')

    body = _body(para("berschrift1", "Erstes") + para("Kapitel", "Zweites")
                 + para("Eigene", "Drittes") + para("Unbekannt", "Normal"))
    data = _patch(_make_docx(), {"word/document.xml": body, "word/styles.xml": styles})
    md = textsieve.extract(data).markdown
    assert "# Erstes" in md and "## Zweites" in md and "### Drittes" in md
    assert "\nNormal" in md and "# Normal" not in md


def _numbered(num_id: int, ilvl: int, text: str) -> str:
    return (f'<w:p><w:pPr><w:numPr><w:ilvl w:val="{ilvl}"/><w:numId w:val="{num_id}"/>'
            f"</w:numPr></w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>")


def test_list_numbers_are_in_the_text_as_word_shows_them() -> None:
    # Level 0 starts at 42 ("42."), level 1 is "a)", level 2 "%1.%3" in roman: "43.i".
    numbering = (
        f'<?xml version="1.0" encoding="UTF-8"?><w:numbering xmlns:w="{W_NS}">'
        '<w:abstractNum w:abstractNumId="7">'
        '<w:lvl w:ilvl="0"><w:start w:val="42"/><w:numFmt w:val="decimal"/>'
        '<w:lvlText w:val="%1."/></w:lvl>'
        '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/>'
        '<w:lvlText w:val="%2)"/></w:lvl>'
        '<w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="lowerRoman"/>'
        '<w:lvlText w:val="%1.%3"/></w:lvl>'
        '<w:lvl w:ilvl="3"><w:numFmt w:val="bullet"/><w:lvlText w:val="o"/></w:lvl>'
        '</w:abstractNum><w:num w:numId="5"><w:abstractNumId w:val="7"/></w:num>'
        "</w:numbering>").encode()
    body = "".join([_numbered(5, 0, "Answer"), _numbered(5, 1, "first"),
                    _numbered(5, 1, "second"), _numbered(5, 0, "Next"),
                    _numbered(5, 2, "deep"), _numbered(5, 3, "dot")])
    data = _with_part(_make_docx(), "numbering", numbering,
                      {"word/document.xml": _body(body)})
    doc = textsieve.extract(data, name="n.docx")
    lines = [ln.strip() for ln in doc.text.split("\n") if ln.strip()]
    assert lines[1:-1] == ["42. Answer", "a) first", "b) second", "43. Next", "43.i deep",
                           "dot"]  # between the header and the footer
    assert "42. Answer\n  1. first\n  2. second\n43. Next" in doc.markdown


def _with_alt_picture(text: str | None, alt: str) -> bytes:
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (24, 24), "white").save(png, "PNG")
    d = docx.Document()
    if text:
        d.add_paragraph(text)
    d.add_picture(io.BytesIO(png.getvalue()))
    d.inline_shapes[0]._inline.docPr.set("descr", alt)  # Word's "Alt Text" pane
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def test_picture_alt_text_is_text_marked_as_an_image_in_markdown() -> None:
    doc = textsieve.extract(_with_alt_picture("Quarterly figures.", "Bar chart of sales"))
    assert doc.text == "Quarterly figures.\n\nBar chart of sales"
    assert doc.markdown == "Quarterly figures.\n\n![Bar chart of sales]()"
    # Alt text is not the document's text: a pasted scan with Word's automatic caption
    # still needs its picture read (here OCR is off, so it says so).
    only = textsieve.extract(_with_alt_picture(None, "A picture containing text"),
                             ocr="never")
    assert only.error is not None and only.error.kind == ErrorKind.NEEDS_OCR


def _chart_part() -> bytes:
    """A real chart part (DrawingML chart with its caches), as python-pptx writes one."""
    import pptx
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    prs = pptx.Presentation()
    data = CategoryChartData()
    data.categories = ["North", "South"]
    data.add_series("Rainfall", (31.5, 12))
    gf = prs.slides.add_slide(prs.slide_layouts[6]).shapes.add_chart(
        XL_CHART_TYPE.PIE, Inches(1), Inches(1), Inches(4), Inches(3), data)
    gf.chart.has_title = True
    gf.chart.chart_title.text_frame.text = "Rain by region"
    buf = io.BytesIO()
    prs.save(buf)
    return zipfile.ZipFile(buf).read("ppt/charts/chart1.xml")


def test_a_chart_gives_its_cached_values_where_it_is_anchored() -> None:
    body = _body(
        "<w:p><w:r><w:t>Before the chart.</w:t></w:r></w:p><w:p><w:r><w:drawing>"
        '<wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/'
        'wordprocessingDrawing"><wp:docPr id="1" name="Chart 1"/>'
        '<a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">'
        '<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/chart">'
        '<c:chart xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
        'r:id="rId_chart"/></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>'
        "<w:p><w:r><w:t>After it.</w:t></w:r></w:p>")
    data = _with_part(_make_docx(), "chart", _chart_part(), {"word/document.xml": body})
    doc = textsieve.extract(data, name="c.docx")
    assert doc.status is Status.OK, doc.error
    text = doc.text
    assert "Before the chart.\n\nRain by region\n\n\tRainfall\nNorth\t31.5\nSouth\t12\n\n" \
        "After it." in text


_MATH = 'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"'


def _r(text: str) -> str:
    return f"<m:r><m:t>{text}</m:t></m:r>"


def test_equations_come_out_as_linear_text() -> None:
    # The quadratic formula as Word writes it: x = (-b ± √(b²-4ac)) / 2a
    quadratic = (
        f"<m:oMathPara {_MATH}><m:oMath>{_r('x=')}<m:f><m:num>{_r('-b±')}<m:rad>"
        "<m:radPr><m:degHide m:val='1'/></m:radPr><m:deg/><m:e><m:sSup><m:e>"
        f"{_r('b')}</m:e><m:sup>{_r('2')}</m:sup></m:sSup>{_r('-4ac')}</m:e></m:rad>"
        f"</m:num><m:den>{_r('2a')}</m:den></m:f></m:oMath></m:oMathPara>")
    inline = (f"<m:oMath {_MATH}><m:nary><m:naryPr><m:chr m:val='∑'/></m:naryPr>"
              f"<m:sub>{_r('i=1')}</m:sub><m:sup>{_r('n')}</m:sup><m:e>{_r('i')}</m:e>"
              f"</m:nary>{_r('=')}<m:d><m:e>{_r('n')}</m:e></m:d></m:oMath>")
    body = _body(f"<w:p>{quadratic}</w:p><w:p><w:r><w:t xml:space='preserve'>So </w:t>"
                 f"</w:r>{inline}<w:r><w:t xml:space='preserve'> holds.</w:t></w:r></w:p>")
    doc = textsieve.extract(_patch(_make_docx(), {"word/document.xml": body}), name="m.docx")
    paras = doc.text.split("\n\n")
    assert "x=(-b±√(b^2-4ac))/(2a)" in paras
    assert "So ∑_(i=1)^n i=(n) holds." in paras


@pytest.mark.parametrize(("part", "content"), [
    ("chunk.htm", b"<html><body><h1>Imported</h1><p>Heron colony from an HTML chunk."
                  b"</p></body></html>"),
    ("chunk.rtf", rb"{\rtf1\ansi Heron colony from an RTF chunk.\par}"),
])
def test_an_alt_chunk_is_read_in_place(part: str, content: bytes) -> None:
    rels = zipfile.ZipFile(io.BytesIO(_make_docx())).read("word/_rels/document.xml.rels")
    rels = rels.replace(b"</Relationships>", (
        '<Relationship Id="rIdChunk" Type="http://schemas.openxmlformats.org/'
        f'officeDocument/2006/relationships/aFChunk" Target="{part}"/>'
        "</Relationships>").encode())
    body = _body('<w:p><w:r><w:t>Before.</w:t></w:r></w:p><w:altChunk xmlns:r="http://'
                 'schemas.openxmlformats.org/officeDocument/2006/relationships" '
                 'r:id="rIdChunk"/><w:p><w:r><w:t>After.</w:t></w:r></w:p>')
    data = _patch(_make_docx(), {"word/document.xml": body, f"word/{part}": content,
                                 "word/_rels/document.xml.rels": rels})
    doc = textsieve.extract(data, name="chunk.docx")
    assert doc.status is Status.OK, doc.error
    kind = "HTML" if part.endswith("htm") else "RTF"
    text = doc.text
    assert text.index("Before.") < text.index(f"Heron colony from an {kind} chunk.") \
        < text.index("After.")
