"""Searchable PDFs (`textsieve ocr`): an invisible text layer where the scan is, nothing else.

The input is generated here: a page with a real text layer and scanned pages (text drawn
with DejaVu Sans at 300 dpi), one of them drawn under a transformation left open at the end
of the page's content (as scanners write it), one on a page with /Rotate 90, one scanned
sideways. Real tesseract, real poppler (pdftotext, pdftoppm) as the independent reader.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("reportlab")
pytest.importorskip("pypdfium2")
from PIL import Image, ImageChops, ImageDraw, ImageFont, ImageStat

from textsieve import extract
from textsieve.core import make_searchable
from textsieve.options import Options
from textsieve.run.pool import WorkerPool

pytestmark = pytest.mark.skipif(
    not (shutil.which("tesseract") and shutil.which("pdftotext") and shutil.which("pdftoppm")),
    reason="needs tesseract-ocr and poppler-utils")

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
DPI = 300
PX = DPI / 72  # pixels per point
W, H = 612, 792  # letter, points
TEXT_PAGE = "Page one keeps its own text layer 7731 untouched."
LINES = ["The quick brown fox jumps over the lazy dog.",
         "Invoice number 48213 was paid on Monday.",
         "Searchable output keeps every original pixel."]
ORIGIN = (300, 400)  # pixels: where the first line is drawn on the upright scan
STEP = 90  # pixels between lines
SIZE = 50  # pixels: 12 pt at 300 dpi


def scan() -> Image.Image:
    img = Image.new("L", (round(W * PX), round(H * PX)), 255)
    draw, font = ImageDraw.Draw(img), ImageFont.truetype(FONT, SIZE)
    for i, line in enumerate(LINES):
        draw.text((ORIGIN[0], ORIGIN[1] + i * STEP), line, font=font, fill=0)
    return img


def word_box(line: int, word: str) -> tuple[float, float, float, float]:
    """Where ``word`` of ``LINES[line]`` is on the upright page: points, top-left origin."""
    font = ImageFont.truetype(FONT, SIZE)
    text = LINES[line]
    start = font.getlength(text[:text.index(word)])
    left, top, right, bottom = font.getbbox(word)
    x, y = ORIGIN[0] + start, ORIGIN[1] + line * STEP
    return ((x + left) / PX, (y + top) / PX, (x + right) / PX, (y + bottom) / PX)


def make_input(path: Path) -> None:
    """1: text layer; 2: scan under an unclosed transformation; 3: /Rotate 90 page that
    shows the scan upright; 4: the scan lying sideways (no /Rotate)."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    upright = scan()
    turned = upright.rotate(90, expand=True)  # counter-clockwise
    c = canvas.Canvas(str(path), pagesize=(W, H))
    c.setFont("Helvetica", 14)
    c.drawString(72, 700, TEXT_PAGE)
    c.showPage()
    c.translate(10, 20)  # left in force after the image: the CTM at the end is not identity
    c.scale(0.5, 0.5)
    c.drawImage(ImageReader(upright), -20, -40, 2 * W, 2 * H)
    c.showPage()
    c.setPageSize((H, W))  # landscape media box for pages 3 and 4
    c.setPageRotation(90)  # shown turned clockwise: the sideways image appears upright
    c.drawImage(ImageReader(turned), 0, 0, H, W)
    c.showPage()
    c.setPageRotation(0)
    c.drawImage(ImageReader(turned), 0, 0, H, W)
    c.showPage()
    c.save()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", *args], capture_output=True,
                          text=True, timeout=300, check=False)


def pdftotext(path: Path, page: int, *extra: str) -> str:
    return subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), *extra, str(path),
                           "-"], capture_output=True, text=True, check=True).stdout


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def bbox_of(path: Path, page: int, word: str) -> tuple[float, float, float, float]:
    found = re.findall(r'xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">'
                       + re.escape(word) + "<", pdftotext(path, page, "-bbox"))
    assert len(found) == 1, f"{word!r} on page {page}: {found}"
    return tuple(float(v) for v in found[0])  # type: ignore[return-value]


def center(box: tuple[float, float, float, float]) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def render(path: Path, tmp: Path) -> list[Image.Image]:
    prefix = tmp / path.stem
    subprocess.run(["pdftoppm", "-r", "40", "-gray", str(path), str(prefix)], check=True,
                   capture_output=True)
    return [Image.open(p).convert("L") for p in sorted(tmp.glob(path.stem + "-*.pgm"))]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str, str]:
    tmp = tmp_path_factory.mktemp("searchable")
    src, out = tmp / "in.pdf", tmp / "out.pdf"
    make_input(src)
    before = sha256(src)
    r = run_cli("ocr", str(src), "-o", str(out), "-j", "2")
    assert r.returncode == 0, r.stderr
    return src, out, before, r.stderr


def test_only_scanned_pages_are_ocred(made: tuple[Path, Path, str, str]) -> None:
    src, out, _, message = made
    assert "3 page(s) OCRed, 1 kept their text layer" in message
    assert pdftotext(out, 1) == pdftotext(src, 1)  # the text page is not touched
    assert pdftotext(src, 2).strip() == ""
    want = set(words(" ".join(LINES)))
    for page in (2, 3, 4):
        got = words(pdftotext(out, page))
        assert want <= set(got), (page, got)
        assert len(got) == len(words(" ".join(LINES))), (page, got)  # no doubled layer


def test_text_layer_is_the_ocr_text(made: tuple[Path, Path, str, str]) -> None:
    src, out, _, _ = made
    doc = extract(src)
    assert doc.metadata.extra["ocr_pages"] == [2, 3, 4]
    for page in doc.pages:
        if page.ocr:
            assert sorted(words(pdftotext(out, page.number))) == sorted(words(page.text))


@pytest.mark.parametrize("line,word", [(1, "Invoice"), (2, "original"), (0, "quick")])
def test_words_are_where_the_scan_shows_them(made: tuple[Path, Path, str, str], line: int,
                                             word: str) -> None:
    _, out, _, _ = made
    left, top, right, bottom = word_box(line, word)
    expect = center((left, top, right, bottom))
    # Page 2 (under a leftover transformation) and page 3 (/Rotate 90) show it upright.
    for page in (2, 3):
        box = bbox_of(out, page, word)
        assert box[2] - box[0] > box[3] - box[1]  # horizontal
        got = center(box)
        assert abs(got[0] - expect[0]) < 4 and abs(got[1] - expect[1]) < 4, (page, box)
    # Page 4 shows the scan turned counter-clockwise: (x, y) -> (y, W - x).
    box = bbox_of(out, 4, word)
    assert box[3] - box[1] > box[2] - box[0]  # vertical
    got = center(box)
    assert abs(got[0] - expect[1]) < 4 and abs(got[1] - (W - expect[0])) < 4, box


def test_output_looks_like_the_input(made: tuple[Path, Path, str, str],
                                     tmp_path: Path) -> None:
    src, out, _, _ = made
    a, b = render(src, tmp_path), render(out, tmp_path)
    assert len(a) == len(b) == 4
    for i, (x, y) in enumerate(zip(a, b, strict=True), 1):
        assert x.size == y.size, i
        assert ImageStat.Stat(ImageChops.difference(x, y)).mean[0] < 0.01, i


def test_input_is_never_modified(made: tuple[Path, Path, str, str]) -> None:
    src, _, before, _ = made
    assert sha256(src) == before
    r = run_cli("ocr", str(src), "-o", str(src))
    assert r.returncode == 1 and "different file" in r.stderr
    assert sha256(src) == before


def test_bad_inputs_exit_1_with_a_clear_message(tmp_path: Path) -> None:
    good = tmp_path / "good.pdf"
    make_input(good)
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(good.read_bytes()[:1500])
    out = tmp_path / "out.pdf"
    r = run_cli("ocr", str(broken), "-o", str(out))
    assert r.returncode == 1
    assert "broken.pdf: cannot make it searchable: corrupt" in r.stderr, r.stderr
    text = tmp_path / "notes.txt"
    text.write_text("just words\n")
    r = run_cli("ocr", str(text), "-o", str(out))
    assert r.returncode == 1 and "not a PDF" in r.stderr, r.stderr
    r = run_cli("ocr", str(tmp_path / "missing.pdf"), "-o", str(out))
    assert r.returncode == 1 and "no such file" in r.stderr
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp


def _two_pages(path: Path) -> None:
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=(W, H))
    c.setFont("Helvetica", 14)
    c.drawString(72, 700, TEXT_PAGE)
    c.showPage()
    c.drawImage(ImageReader(scan()), 0, 0, W, H)
    c.showPage()
    c.save()


def test_a_page_that_fails_stays_as_it_was_and_is_reported(tmp_path: Path) -> None:
    src, out = tmp_path / "in.pdf", tmp_path / "out.pdf"
    _two_pages(src)
    options = Options(ocr_page_timeout=0.01)  # no page can be OCRed in 10 ms: it times out
    with WorkerPool(options, workers=1) as pool:
        report = make_searchable(src, out, options, pool=pool)
    assert report["missing_pages"] == [2] and report["ocr_pages"] == []
    assert report["errors"][2].startswith("timeout")
    assert pdftotext(out, 1) == pdftotext(src, 1)
    assert pdftotext(out, 2).strip() == ""
    a, b = render(src, tmp_path), render(out, tmp_path)
    assert ImageStat.Stat(ImageChops.difference(a[1], b[1])).mean[0] < 0.01


def test_ocr_always_also_covers_text_pages_in_process(tmp_path: Path) -> None:
    src, out = tmp_path / "in.pdf", tmp_path / "out.pdf"
    _two_pages(src)
    report = make_searchable(src, out, Options(ocr="always"))  # no pool: this process
    assert report["ocr_pages"] == [1, 2] and report["kept_pages"] == []
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(out)
    text = pdf[0].get_textpage().get_text_range()  # poppler would fold the overlap into one
    assert words(text).count("untouched") == 2, text  # its own text + the OCR layer
    pdf.close()
    assert "48213" in pdftotext(out, 2)


def test_nothing_to_ocr_copies_the_input(tmp_path: Path) -> None:
    from reportlab.pdfgen import canvas

    src, out = tmp_path / "in.pdf", tmp_path / "out.pdf"
    c = canvas.Canvas(str(src))
    c.drawString(72, 700, TEXT_PAGE)
    c.save()
    report = make_searchable(src, out, Options())
    assert report["ocr_pages"] == [] and report["kept_pages"] == [1]
    assert out.read_bytes() == src.read_bytes()


def test_run_writes_searchable_copies_without_a_second_ocr(tmp_path: Path) -> None:
    """`textsieve run --searchable-pdf DIR`: the pages OCRed for the archive also give the
    searchable copy; a PDF that needed no OCR gets none."""
    docs, out = tmp_path / "docs", tmp_path / "searchable"
    docs.mkdir()
    make_input(docs / "mixed.pdf")
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(docs / "text-only.pdf"))
    c.drawString(72, 720, "Only a text layer here")
    c.showPage()
    c.save()
    db = tmp_path / "a.db"
    p = run_cli("run", str(docs), "--archive", str(db), "--searchable-pdf", str(out), "-j", "2")
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in out.iterdir()) == ["mixed.pdf"]
    copy = out / "mixed.pdf"
    assert pdftotext(copy, 1).strip() == pdftotext(docs / "mixed.pdf", 1).strip()
    for page in (2, 3, 4):
        assert "quick brown" in " ".join(words(pdftotext(copy, page))), page
    from textsieve.archive import Archive

    with Archive(db, readonly=True) as a:
        (iid,) = a.conn.execute("SELECT id FROM items WHERE key LIKE '%mixed.pdf'").fetchone()
        doc = a.document(iid)
    assert doc is not None and doc.metadata.extra["searchable_pdf"] == str(copy)
    assert doc.metadata.extra["ocr_pages"] == [2, 3, 4]


def _marked_scan(path: Path, marker: str) -> None:
    """Page 1: a text layer saying ``marker``; page 2: the scan (needs OCR)."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    path.parent.mkdir(parents=True, exist_ok=True)
    c = canvas.Canvas(str(path), pagesize=(W, H))
    c.drawString(72, 700, marker)
    c.showPage()
    c.drawImage(ImageReader(scan()), 0, 0, W, H)
    c.showPage()
    c.save()


def test_run_copies_mirror_the_tree_and_never_follow_a_planted_link(tmp_path: Path) -> None:
    """`a/scan.pdf` and `b/scan.pdf` get a copy each (before, both became DIR/scan.pdf and
    both items pointed to it); a symlink planted in DIR is never written through."""
    docs, out, outside = tmp_path / "docs", tmp_path / "searchable", tmp_path / "outside"
    for sub in ("a", "b", "c"):
        _marked_scan(docs / sub / "scan.pdf", f"copy of folder {sub} marker")
    out.mkdir()
    outside.mkdir()
    (out / "c").symlink_to(outside, target_is_directory=True)
    db = tmp_path / "a.db"
    p = run_cli("run", str(docs), "--archive", str(db), "--searchable-pdf", str(out), "-j", "2")
    assert p.returncode == 0, p.stderr
    assert list(outside.iterdir()) == []
    from textsieve.archive import Archive

    with Archive(db, readonly=True) as a:
        rows = a.conn.execute("SELECT id, key FROM items WHERE parent_id IS NULL").fetchall()
        docs_by_folder = {Path(key).parent.name: a.document(iid) for iid, key in rows}
    for sub in ("a", "b"):
        doc = docs_by_folder[sub]
        assert doc is not None
        copy = out / sub / "scan.pdf"
        assert doc.metadata.extra["searchable_pdf"] == str(copy)
        assert f"folder {sub} marker" in pdftotext(copy, 1)
        assert "quick brown" in " ".join(words(pdftotext(copy, 2)))
    c = docs_by_folder["c"]
    assert c is not None and "searchable_pdf" not in c.metadata.extra
    assert any("searchable PDF not written" in w and "symlink" in w for w in c.warnings)
    assert "quick brown" in c.text  # the text is what matters: extracted all the same
