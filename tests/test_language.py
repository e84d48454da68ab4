"""The language of every item, files and mails too: detected from the text when the
format does not declare it, filterable in `search --lang`, shown in hits and exports."""

from __future__ import annotations

import json
import subprocess
import sys
from email.message import EmailMessage
from pathlib import Path

DE = ("Die Reiher kehren im Frühjahr an die Küste zurück. Am Morgen zählten die Beobachter "
      "die Vögel im Watt und notierten den Wind, die Flut und das Licht über dem Marschland.")
FR = ("Les hérons reviennent sur la côte au printemps. Le matin, les observateurs ont compté "
      "les oiseaux dans la vasière et noté le vent, la marée et la lumière sur le marais.")
EN = ("The herons come back to the coast in spring. In the morning the observers counted "
      "the birds on the mudflats and noted the wind, the tide and the light over the marsh.")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", *args], capture_output=True,
                          text=True, timeout=300, check=False)


def test_language_of_files_and_mails(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "reiher.txt").write_text(DE, encoding="utf-8")
    (docs / "herons.md").write_text(f"# Herons\n\n{EN}\n", encoding="utf-8")
    (docs / "numbers.csv").write_text("id,count\n1,12\n2,7\n")
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "a@example.org", "b@example.org", "Hérons"
    mail.set_content(FR)
    (docs / "herons.eml").write_bytes(mail.as_bytes())
    import zipfile

    with zipfile.ZipFile(docs / "mixed.zip", "w") as z:
        z.writestr("inside/reiher.txt", DE)
    db = tmp_path / "a.db"
    done = _cli("run", str(docs), "--archive", str(db))
    assert done.returncode == 0, done.stderr
    out = _cli("export", "--archive", str(db), "--format", "jsonl", "--to", "-").stdout
    all_rows = [json.loads(line) for line in out.splitlines()]
    rows = {Path(r["key"]).name: r for r in all_rows if r["parent_id"] is None}
    assert rows["reiher.txt"]["language"] == "de"
    assert rows["herons.md"]["language"] == "en"
    assert rows["herons.eml"]["language"] == "fr"
    assert rows["numbers.csv"]["language"] is None  # no words to tell by: no guess
    member = next(r for r in all_rows if r["parent_id"] is not None
                  and r["key"].endswith("reiher.txt"))
    assert member["language"] == "de"
    assert rows["reiher.txt"]["metadata"]["extra"]["language_by"] == "detected"
    # search --lang keeps that language's items, and hits say their language.
    hits = _cli("search", "--archive", str(db), "--lang", "de", "Reiher").stdout
    assert "reiher.txt" in hits and "(de)" in hits and "herons" not in hits
    hits = _cli("search", "--archive", str(db), "--lang", "fr", "hérons").stdout
    assert "herons.eml" in hits and "reiher" not in hits


def test_declared_language_is_kept_and_found_by_its_prefix(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(f"<html lang='de-AT'><body><p>{DE}</p></body></html>", encoding="utf-8")
    db = tmp_path / "a.db"
    assert _cli("run", str(page), "--archive", str(db)).returncode == 0
    row = json.loads(_cli("export", "--archive", str(db), "--format", "jsonl", "--to", "-")
                     .stdout.splitlines()[0])
    assert row["language"] == "de-AT" and "language_by" not in row["metadata"]["extra"]
    assert "page.html" in _cli("search", "--archive", str(db), "--lang", "de", "Reiher").stdout


def test_a_scan_takes_the_language_of_all_its_text(tmp_path: Path) -> None:
    """A PDF with a short English text page and three scanned German pages: the language
    is that of the whole text once its pages are read, not a guess from the text layer
    alone before OCR (which stayed, since a language already set is kept)."""
    import io

    from PIL import Image, ImageDraw, ImageFont
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 40)
    words = DE.split()
    lines = [" ".join(words[i:i + 6]) for i in range(0, len(words), 6)]
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=(612, 792))
    c.drawString(72, 700, EN[:120])
    c.showPage()
    for _ in range(3):
        img = Image.new("L", (2550, 3300), 255)
        draw = ImageDraw.Draw(img)
        for n, line in enumerate(lines):
            draw.text((200, 300 + n * 70), line, font=font, fill=0)
        c.drawImage(ImageReader(img), 0, 0, 612, 792)
        c.showPage()
    c.save()
    path = tmp_path / "bericht.pdf"
    path.write_bytes(buf.getvalue())
    res = _cli("extract", "-f", "json", str(path))
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert "Reiher" in doc["text"] and "herons" in doc["text"]
    assert doc["metadata"]["language"] == "de"
