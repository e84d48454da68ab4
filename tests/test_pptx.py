"""PPTX: python-pptx round trips (titles, bullets with levels, tables, notes) and corpus."""

from __future__ import annotations

import io
from pathlib import Path

import pptx
import pytest
from pptx.util import Inches

import textsieve
from textsieve.model import ErrorKind, Status


def _make_pptx() -> bytes:
    prs = pptx.Presentation()
    prs.core_properties.title = "Roadmap Deck"
    prs.core_properties.author = "Grace Hopper"
    # Slide 1: title + bullets with levels; a free text box placed ABOVE the body.
    s1 = prs.slides.add_slide(prs.slide_layouts[1])
    s1.shapes.title.text = "Goals"
    body = s1.placeholders[1].text_frame
    body.text = "Ship version two"
    p = body.add_paragraph()
    p.text, p.level = "Faster parser", 1
    p = body.add_paragraph()
    p.text = "Hire people"
    box = s1.shapes.add_textbox(Inches(7), Inches(7), Inches(2), Inches(0.5))
    box.text_frame.text = "Footer box at the bottom"
    s1.notes_slide.notes_text_frame.text = "Speak slowly here"
    # Slide 2: title + table.
    s2 = prs.slides.add_slide(prs.slide_layouts[5])
    s2.shapes.title.text = "Numbers"
    tbl = s2.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(6), Inches(1)).table
    for (r, c), v in {(0, 0): "Quarter", (0, 1): "Sales", (1, 0): "Q1", (1, 1): "42"}.items():
        tbl.cell(r, c).text = v
    # Slide 3: group shape with text.
    s3 = prs.slides.add_slide(prs.slide_layouts[6])
    grp = s3.shapes.add_group_shape()
    tb = grp.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1))
    tb.text_frame.text = "Grouped words"
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def test_round_trip() -> None:
    doc = textsieve.extract(_make_pptx())
    assert doc.status is Status.OK, doc.error
    assert [p.number for p in doc.pages] == [1, 2, 3]
    md = doc.markdown
    assert "## Goals" in md and "## Numbers" in md
    assert "- Ship version two\n  - Faster parser\n- Hire people" in md
    assert "| Quarter | Sales |" in md and "| Q1 | 42 |" in md
    p1 = doc.pages[0].text
    assert p1.index("Goals") < p1.index("Ship version two") < p1.index("Footer box")
    assert p1.index("Footer box") < p1.index("Notes:") < p1.index("Speak slowly here")
    assert "Grouped words" in doc.pages[2].text
    assert doc.title == "Roadmap Deck" and doc.metadata.author == "Grace Hopper"
    assert doc.metadata.page_count == 3


def test_slide_order_follows_presentation_not_file_names() -> None:
    prs = pptx.Presentation(io.BytesIO(_make_pptx()))
    ids = prs.slides._sldIdLst
    first = ids[0]
    ids.remove(first)
    ids.append(first)  # now: Numbers, group slide, Goals
    buf = io.BytesIO()
    prs.save(buf)
    doc = textsieve.extract(buf.getvalue())
    assert "Numbers" in doc.pages[0].text and "Goals" in doc.pages[2].text


def test_not_a_presentation_zip_is_corrupt() -> None:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("ppt/slides/slide1.xml", "<x/>")
    doc = textsieve.extract(buf.getvalue(), name="x.pptx")
    assert doc.status is Status.ERROR and doc.error.kind is ErrorKind.CORRUPT


def test_corpus_notes_and_embeddings(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "pptx" / "poi__SampleShow.pptx")
    assert "## Title of the first slide" in doc.markdown
    assert "I am the notes of the first slide" in doc.pages[0].text
    att = textsieve.extract(corpus / "pptx" / "poi__PPTWithAttachments.pptm")
    assert att.status is Status.OK and len(att.children) >= 3
    assert any("I am ooxml" in c.text for c in att.children)


CORPUS_TEXT = ["poi__PPTWithAttachments.pptm", "poi__SampleShow.pptx",
               "poi__aascu.org_hbcu_leadershipsummit_cooper_.pptx", "poi__bar-chart.pptx",
               "poi__bug58144-headers-footers-2007.pptx", "poi__with_japanese.pptx",
               "pypptx__missing_rels_item.pptx", "pypptx__prs-notes.pptx"]


@pytest.mark.parametrize("name", CORPUS_TEXT)
def test_corpus_has_text(corpus: Path, name: str) -> None:
    doc = textsieve.extract(corpus / "pptx" / name)
    assert doc.status is Status.OK, doc.error
    assert doc.text.strip() and doc.pages


@pytest.mark.parametrize("name", ["poi__SmartArt.pptx", "poi__table_test.pptx",
                                  "pypptx__no-slides.pptx", "pypptx__shp-groupshape.pptx"])
def test_corpus_textless_decks_are_empty(corpus: Path, name: str) -> None:
    # These decks hold only empty placeholders, cells and SmartArt nodes.
    assert textsieve.extract(corpus / "pptx" / name).status is Status.EMPTY


def test_corpus_fuzzed_is_corrupt(corpus: Path) -> None:
    doc = textsieve.extract(
        corpus / "pptx" / "poi__clusterfuzz-testcase-minimized-POIXSLFFuzzer-6254434927378432.pptx")
    assert doc.error is not None and doc.error.kind is ErrorKind.CORRUPT


def test_slides_that_are_only_pictures_are_read_by_ocr(tmp_path: Path) -> None:
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("L", (900, 160), 255)
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 48)
    ImageDraw.Draw(img).text((20, 40), "Quarterly kestrel count", fill=0, font=font)
    png = tmp_path / "slide.png"
    img.save(png)
    prs = pptx.Presentation()
    prs.slides.add_slide(prs.slide_layouts[6]).shapes.add_picture(str(png), Inches(1), Inches(1))
    path = tmp_path / "pictures.pptx"
    prs.save(str(path))
    doc = textsieve.extract(path)
    assert doc.status == "ok", doc.error
    assert "kestrel count" in doc.full_text().lower()
    assert textsieve.extract(path, ocr="never").error.kind == "needs_ocr"


def _autonum(paragraph: object, scheme: str, start: int | None = None) -> None:
    """Give a python-pptx paragraph PowerPoint's automatic numbering (a:buAutoNum)."""
    from pptx.oxml.ns import qn
    ppr = paragraph._p.get_or_add_pPr()  # type: ignore[attr-defined]
    num = ppr.makeelement(qn("a:buAutoNum"), {"type": scheme})
    if start is not None:
        num.set("startAt", str(start))
    ppr.append(num)


def test_auto_numbered_paragraphs_keep_their_numbers_in_the_text() -> None:
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    frame = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(6), Inches(4)).text_frame
    frame.text = "Agenda"
    for text, level, scheme, start in (("Answer", 0, "arabicPeriod", 42),
                                       ("first", 1, "alphaLcParenR", None),
                                       ("second", 1, "alphaLcParenR", None),
                                       ("Next", 0, "arabicPeriod", 42),
                                       ("Part", 0, "romanUcParenBoth", None)):
        p = frame.add_paragraph()
        p.text, p.level = text, level
        _autonum(p, scheme, start)
    buf = io.BytesIO()
    prs.save(buf)
    doc = textsieve.extract(buf.getvalue(), name="n.pptx")
    lines = [ln.strip() for ln in doc.text.split("\n") if ln.strip()]
    assert lines == ["Agenda", "42. Answer", "a) first", "b) second", "43. Next", "(I) Part"]
    assert "42. Answer\n  1. first\n  2. second\n43. Next" in doc.markdown


def test_alt_text_of_pictures_and_shapes_is_in_the_slide_text() -> None:
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (24, 24), "white").save(png, "PNG")
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    slide.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = \
        "Results"
    pic = slide.shapes.add_picture(io.BytesIO(png.getvalue()), Inches(1), Inches(3))
    pic._element.nvPicPr.cNvPr.set("descr", "Map of the heron colonies")
    hidden = slide.shapes.add_picture(io.BytesIO(png.getvalue()), Inches(3), Inches(3))
    hidden._element.nvPicPr.cNvPr.set("descr", "Hidden picture")
    hidden._element.nvPicPr.cNvPr.set("hidden", "1")
    buf = io.BytesIO()
    prs.save(buf)
    doc = textsieve.extract(buf.getvalue(), name="alt.pptx")
    assert doc.pages[0].text == "Results\n\nMap of the heron colonies"
    assert "Results\n\n![Map of the heron colonies]()" in doc.markdown


def _master_box(prs: pptx.Presentation, slide: object, xml_runs: str, top: float) -> None:
    """A text box on the slide master (python-pptx adds none there): made on ``slide``,
    then moved into the master's shape tree, with ``xml_runs`` as its paragraph."""
    from lxml import etree

    box = slide.shapes.add_textbox(Inches(1), Inches(top), Inches(4), Inches(0.4))  # type: ignore[attr-defined]
    p = box.text_frame.paragraphs[0]._p
    for run in etree.fromstring(
            f'<x xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">{xml_runs}</x>'):
        p.append(run)
    prs.slide_master.shapes._spTree.append(box._element)


def test_master_footers_and_slide_number_fields_are_slide_text() -> None:
    prs = pptx.Presentation()
    blank = prs.slide_layouts[6]
    first, second, empty = (prs.slides.add_slide(blank) for _ in range(3))
    first.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = \
        "Opening"
    _master_box(prs, first, "<a:r><a:t>ACME Confidential</a:t></a:r>", 6.8)
    _master_box(prs, first, '<a:r><a:t>Page </a:t></a:r><a:fld id="{B6F15528-21DE-4FAA-801E-'
                '634DDDAF4B2B}" type="slidenum"><a:t>\u2039#\u203a</a:t></a:fld>', 7.0)
    second.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = \
        "Details"
    empty._element.set("showMasterSp", "0")  # a slide that hides the master's shapes
    buf = io.BytesIO()
    prs.save(buf)
    doc = textsieve.extract(buf.getvalue(), name="m.pptx")
    assert [p.text for p in doc.pages] == [
        "Opening\n\nACME Confidential\n\nPage 1", "Details\n\nPage 2", ""]
    # Master placeholders are templates ("Click to edit Master title style"), not text.
    assert "Click to edit" not in doc.text


def test_a_deck_whose_only_text_is_a_master_footer_is_not_empty() -> None:
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    _master_box(prs, slide, "<a:r><a:t>Heron Society 2026</a:t></a:r>", 6.8)
    buf = io.BytesIO()
    prs.save(buf)
    doc = textsieve.extract(buf.getvalue(), name="f.pptx")
    assert doc.status is Status.OK and doc.text == "Heron Society 2026"


def test_a_slide_footer_placeholder_is_slide_text(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "pptx" / "poi__bug58144-headers-footers-2007.pptx")
    assert doc.text.count("Slide footer") == 1


def test_alt_text_that_is_only_a_file_path_is_left_out() -> None:
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (24, 24), "white").save(png, "PNG")
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    slide.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = "Text"
    pic = slide.shapes.add_picture(io.BytesIO(png.getvalue()), Inches(1), Inches(3))
    # what PowerPoint 2007 stored as the description of an inserted picture
    pic._element.nvPicPr.cNvPr.set("descr", "C:\\Documents and Settings\\me\\MC900438451[1].jpg")
    buf = io.BytesIO()
    prs.save(buf)
    assert textsieve.extract(buf.getvalue(), name="p.pptx").text == "Text"


def _chart_deck() -> bytes:
    """A deck with one bar chart whose embedded workbook is taken out, as in many files
    that were copied around: only the values cached in the chart part are left."""
    import zipfile

    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE

    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    data = CategoryChartData()
    data.categories = ["Heron", "Egret"]
    data.add_series("Nests 2024", (12, 7.5))
    data.add_series("Nests 2025", (15, 0.30000000000000004))
    gf = slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1),
                                Inches(6), Inches(4), data)
    gf.chart.has_title = True
    gf.chart.chart_title.text_frame.text = "Colony census"
    buf = io.BytesIO()
    prs.save(buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if not info.filename.startswith("ppt/embeddings/"):
                dst.writestr(info, src.read(info))
    return out.getvalue()


def test_chart_values_come_from_the_chart_parts_own_cache() -> None:
    doc = textsieve.extract(_chart_deck(), name="chart.pptx")
    assert doc.status is Status.OK, doc.error
    assert doc.children == []  # no workbook to read them from
    assert "Colony census" in doc.text
    assert "\tNests 2024\tNests 2025\nHeron\t12\t15\nEgret\t7.5\t0.3" in doc.text
    assert "| Heron | 12 | 15 |" in doc.markdown


def test_master_furniture_does_not_hide_photographed_slides_from_ocr() -> None:
    # Slides that are pictures (a scanned handout) under a master footer: the footer is
    # text, but the pictures still need reading, so with OCR off the deck says so.
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (64, 64), "white").save(png, "PNG")
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    slide.shapes.add_picture(io.BytesIO(png.getvalue()), Inches(1), Inches(1))
    _master_box(prs, slide, "<a:r><a:t>Heron Society 2026</a:t></a:r>", 6.8)
    buf = io.BytesIO()
    prs.save(buf)
    doc = textsieve.extract(buf.getvalue(), name="scan.pptx", ocr="never")
    assert doc.error is not None and doc.error.kind == ErrorKind.NEEDS_OCR
