"""Regenerate the small bundled samples in samples/ (committed; run by hand).

Each sample is a real file made by the library that writes that format, with text a
person can check by eye, so the README's first command shows every format family.
"""

from __future__ import annotations

import io
import zipfile
from email.message import EmailMessage
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "samples" / "docs"


def pdf() -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(OUT / "field-notes.pdf"), pagesize=A4, invariant=1)
    c.setTitle("Field notes on herons")
    c.setAuthor("A. Birder")
    for n, lines in enumerate([
        ["Field notes on herons", "", "Grey herons stood in the shallows at dawn.",
         "They hunt by waiting, then striking fast."],
        ["Page two", "", "Egrets arrived later, white against the reeds."],
    ], 1):
        y = 780
        for line in lines:
            c.drawString(72, y, line)
            y -= 18
        c.drawString(72, 40, f"page {n}")
        c.showPage()
    c.save()


def docx() -> None:
    import docx as d

    doc = d.Document()
    doc.core_properties.title = "Quarterly letter"
    doc.core_properties.author = "Office of Birds"
    doc.add_heading("Quarterly letter", 1)
    doc.add_paragraph("Dear members, the wetland survey is complete.")
    doc.add_paragraph("Counted 41 herons", style="List Bullet")
    doc.add_paragraph("Counted 12 egrets", style="List Bullet")
    t = doc.add_table(rows=2, cols=2)
    for (r, c), v in {(0, 0): "Species", (0, 1): "Count", (1, 0): "Heron", (1, 1): "41"}.items():
        t.cell(r, c).text = v
    doc.sections[0].header.paragraphs[0].text = "Wetland Society"
    doc.save(OUT / "letter.docx")


def pptx() -> None:
    from pptx import Presentation

    prs = Presentation()
    s = prs.slides.add_slide(prs.slide_layouts[1])
    s.shapes.title.text = "Survey results"
    body = s.placeholders[1].text_frame
    body.text = "Herons up by a third"
    p = body.add_paragraph()
    p.text = "Egrets stable"
    p.level = 1
    s.notes_slide.notes_text_frame.text = "Mention the volunteers."
    prs.save(OUT / "survey.pptx")


def xlsx() -> None:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Counts"
    ws.append(["Site", "Herons", "Egrets"])
    ws.append(["North marsh", 23, 5])
    ws.append(["South lake", 18, 7])
    wb.create_sheet("Notes").append(["Counted on foot, early morning"])
    wb.save(OUT / "counts.xlsx")


def odt() -> None:
    from odfdo import Document, Header, Paragraph

    doc = Document("text")
    body = doc.body
    body.clear()
    body.append(Header(1, "Reed beds"))
    body.append(Paragraph("Bitterns boom in the reed beds in spring."))
    doc.save(OUT / "reed-beds.odt")


def html() -> None:
    (OUT / "article.html").write_text(
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<title>Why herons stand still</title><style>p{color:red}</style>"
        "<script>var tracking = 1;</script></head><body>"
        "<h1>Why herons stand still</h1><p>Stillness hides the heron from fish.</p>"
        "<ul><li>Patience</li><li>Sharp eyes</li></ul></body></html>\n", encoding="utf-8")


def text_and_csv() -> None:
    (OUT / "sightings.csv").write_text(
        "date;species;place\n2026-04-01;Grey heron;North marsh\n"
        "2026-04-02;Little egret;South lake\n", encoding="utf-8")
    (OUT / "tagebuch-latin1.txt").write_bytes(
        "Graureiher am Weiher gesehen. Größe: beachtlich.\n".encode("latin-1"))
    (OUT / "memo.rtf").write_text(
        r"{\rtf1\ansi\ansicpg1252{\fonttbl{\f0 Arial;}}\f0 Memo: the hide opens at "
        r"six.\par Caf\'e9 at the visitor centre.\par}" "\n", encoding="ascii")


def mail() -> None:
    msg = EmailMessage()
    msg["From"] = "Ann <ann@example.org>"
    msg["To"] = "links@example.org"
    msg["Subject"] = "Heron photos and the count sheet"
    msg["Date"] = "Sat, 21 Nov 2026 09:00:00 +0000"
    msg.set_content("Hi! The count sheet is attached. Herons everywhere this week.\n")
    msg.add_attachment(b"site,herons\nNorth marsh,23\n", maintype="text", subtype="csv",
                       filename="count-sheet.csv")
    (OUT / "count.eml").write_bytes(bytes(msg))


def archive() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("trip/plan.txt", "Meet at the hide at six. Bring waders.\n")
        zf.writestr("trip/route.md", "# Route\n\n- North marsh\n- South lake\n")
    (OUT / "trip.zip").write_bytes(buf.getvalue())


def scan() -> None:
    """A 'scanned' notice: text as pixels only, slightly tilted, for the OCR path."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 42)
    img = Image.new("L", (1500, 420), 255)
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(["NOTICE: the heron hide is closed", "for repairs until",
                              "the end of March. Thank you."]):
        draw.text((60, 60 + i * 105), line, font=font, fill=20)
    img = img.rotate(0.6, fillcolor=255, resample=Image.Resampling.BICUBIC)
    img.save(OUT / "notice-scan.png", dpi=(300, 300), optimize=True)


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    for fn in (pdf, docx, pptx, xlsx, odt, html, text_and_csv, mail, archive, scan):
        fn()
    print("\n".join(sorted(p.name for p in OUT.iterdir())))
