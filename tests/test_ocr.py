"""OCR must-holds, on scans made here with known text and read by the real Tesseract.

Every scan is rendered by the test itself: DejaVu Sans at ~11.5 pt (48 px at 300 dpi) on a
white A4 page, turned by a fraction of a degree and sprinkled with seeded noise, then
wrapped into a PDF or saved as an image. Because the text is known exactly, quality is a
number (character error rate) rather than "some words came out". Pages are kept to a few
lines: OCR is slow and these run on every test run.
"""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

import pytest
from PIL import Image, ImageChops, ImageDraw, ImageFont

import textsieve
from cpu_budget import cpu, inflate_cpu
from textsieve.model import Document, ErrorKind, Status
from textsieve.options import Options
from textsieve.run.pool import extract_many

canvas = pytest.importorskip("reportlab.pdfgen.canvas")
from reportlab.lib.utils import ImageReader  # noqa: E402

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
DPI = 300
A4 = (2480, 3508)  # pixels at 300 dpi
A4_PT = (595.28, 841.89)
MAX_CER = 0.01

# Distinct text per page so a page can never pass on another page's words. No postcodes:
# Tesseract itself (the command line too) reads a clear 'BS1 5TY' as 'BS1 SLY', which
# alone costs ~0.9 % CER on a page; that measures the engine, not textsieve.
PAGES = [
    ["Invoice 2041 was paid on 14 March 2023 by bank transfer.",
     "The delivery address is 18 Harbour Road, Bristol, England.",
     "Please keep this letter for your records and tax returns.",
     "Questions about your account? Call us on 0117 496 0321."],
    ["Quarterly report: revenue rose 7.5% while costs fell slightly.",
     "The new warehouse opened in Leeds with forty-two employees.",
     "Shipping times improved from five days to three on average.",
     "The board will meet again on Thursday, 9 November."],
    ["Minutes of the garden committee, held in the village hall.",
     "Present: Alice Brown, Tom Evans, Priya Shah and Joe Miller.",
     "The hedge along the north fence will be trimmed in spring.",
     "Next meeting: the first Monday of the month at 7 pm."],
    ["Safety notice: wear gloves when handling the cleaning liquid.",
     "Store bottles upright, away from heat and direct sunlight.",
     "In case of contact with eyes, rinse with water for minutes.",
     "Report every accident to the duty manager the same day."],
]


# ---------------------------------------------------------------- helpers

def normalise(text: str) -> str:
    """Whitespace-normalised: line breaks and page layout are not what OCR is judged on."""
    return re.sub(r"\s+", " ", text).strip()


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions), two rows at a time."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def cer(got: str, reference: str) -> float:
    """Character error rate: edits needed to turn the OCR text into the reference."""
    ref = normalise(reference)
    return edit_distance(normalise(got), ref) / len(ref)


def font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(FONT, size)


def draw_lines(img: Image.Image, lines: list[str], *, size: int, at: tuple[int, int],
               fill: int | tuple[int, ...] = 0) -> None:
    draw, f, (x, y) = ImageDraw.Draw(img), font(size), at
    for line in lines:
        draw.text((x, y), line, font=f, fill=fill)
        y += round(size * 1.6)


def add_noise(img: Image.Image, seed: int, amplitude: int = 40) -> Image.Image:
    """Light sensor noise: each pixel moved by up to +-amplitude/2 grey levels (seeded)."""
    rng = random.Random(seed)
    noise = Image.frombytes("L", img.size, rng.randbytes(img.width * img.height))
    noise = noise.point(lambda v: v * amplitude // 255)
    return ImageChops.add(img, noise, offset=-(amplitude // 2))


def scan(lines: list[str], *, seed: int = 1, angle: float = 0.7,
         size: tuple[int, int] = A4) -> Image.Image:
    """A scanned page: text at 48 px (~11.5 pt at 300 dpi), slightly skewed, noisy, grey."""
    page = Image.new("L", size, 255)
    draw_lines(page, lines, size=48, at=(220, 300))
    page = page.rotate(angle, resample=Image.Resampling.BICUBIC, fillcolor=255)
    return add_noise(page, seed)


def pdf_of(images: list[Image.Image]) -> bytes:
    """Scanned pages wrapped into a PDF at 300 dpi (each page is one image, no text)."""
    buf = io.BytesIO()
    images[0].save(buf, "PDF", resolution=DPI, save_all=True, append_images=images[1:])
    return buf.getvalue()


def text_page(c: canvas.Canvas, lines: list[str]) -> None:
    """A born-digital page: real text objects."""
    y = A4_PT[1] - 90
    for line in lines:
        c.setFont("Helvetica", 12)
        c.drawString(72, y, line)
        y -= 20
    c.showPage()


def scan_page(c: canvas.Canvas, img: Image.Image) -> None:
    """A scanned page: one full-page image and nothing else."""
    c.drawImage(ImageReader(img), 0, 0, width=A4_PT[0], height=A4_PT[1])
    c.showPage()


def mixed_pdf(kinds: list[str | int]) -> bytes:
    """Pages in order: "t<i>" a text page with PAGES[i], an int i a scan of PAGES[i]."""
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4_PT)
    for kind in kinds:
        if isinstance(kind, int):
            scan_page(c, scan(PAGES[kind], seed=kind))
        else:
            text_page(c, PAGES[int(kind[1:])])
    c.save()
    return buf.getvalue()


def joined(lines: list[str]) -> str:
    return " ".join(lines)


def ok(doc: Document) -> Document:
    assert doc.status is Status.OK, (doc.status, doc.error, doc.warnings)
    return doc


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def four_page_scan() -> bytes:
    return pdf_of([scan(lines, seed=i) for i, lines in enumerate(PAGES)])


@pytest.fixture(scope="module")
def in_process(four_page_scan: bytes) -> Document:
    return ok(textsieve.extract(four_page_scan, name="scan.pdf"))


# ---------------------------------------------------------------- quality

def test_scanned_pdf_reads_under_one_percent_cer(in_process: Document) -> None:
    """Every page of a skewed, noisy 300 dpi scan reads with CER < 1 %."""
    assert in_process.metadata.extra["ocr_pages"] == [1, 2, 3, 4]
    assert [p.number for p in in_process.pages] == [1, 2, 3, 4]
    for page, lines in zip(in_process.pages, PAGES, strict=True):
        assert page.ocr
        rate = cer(page.text, joined(lines))
        print(f"page {page.number}: CER {rate:.4f}")
        assert rate < MAX_CER, (page.number, page.text)
    assert cer(in_process.text, " ".join(joined(p) for p in PAGES)) < MAX_CER


def test_mixed_pdf_ocrs_only_the_scanned_pages() -> None:
    """Text pages keep their own text layer, untouched; only scanned pages are OCRed."""
    data = mixed_pdf(["t0", 1, "t2", 3])
    doc = ok(textsieve.extract(data, name="mixed.pdf"))
    assert doc.metadata.extra["ocr_pages"] == [2, 4]
    assert [p.ocr for p in doc.pages] == [False, True, False, True]
    layer = ok(textsieve.extract(data, name="mixed.pdf", ocr="never"))
    for n in (1, 3):  # exactly what the text layer gives
        assert doc.pages[n - 1].text == layer.pages[n - 1].text
        assert normalise(doc.pages[n - 1].text) == joined(PAGES[n - 1])
    for n in (2, 4):
        assert not layer.pages[n - 1].text.strip()  # truly scanned: nothing without OCR
        assert cer(doc.pages[n - 1].text, joined(PAGES[n - 1])) < MAX_CER


def test_rotated_scans_read_like_the_upright_one() -> None:
    """A page scanned at 90, 180 or 270 degrees gives the same text as upright."""
    upright = scan(PAGES[2], seed=7)
    angles = [0, 90, 180, 270]
    datas = [pdf_of([upright.rotate(a, expand=True) if a else upright]) for a in angles]
    docs = [ok(d) for d in extract_many(datas, Options(), names=[f"r{a}.pdf" for a in angles],
                                        workers=2)]
    base = normalise(docs[0].text)
    assert cer(base, joined(PAGES[2])) < MAX_CER
    for angle, doc in zip(angles[1:], docs[1:], strict=True):
        got = normalise(doc.text)
        assert got == base or cer(got, base) < MAX_CER, (angle, got)
    # Upside down is unreadable as it lies: the page must have been turned, and say so.
    # (At 90/270 Tesseract may read the lines as vertical text without turning the page.)
    assert docs[2].metadata.extra.get("ocr_rotated") == {1: 180}


# ---------------------------------------------------------------- images

def label(lines: list[str], *, mode: str = "L", size: tuple[int, int] = (1800, 420),
          seed: int = 3) -> Image.Image:
    """A small scanned label (a few lines at 300 dpi), cheaper than a full page."""
    img = Image.new("L", size, 255)
    draw_lines(img, lines, size=48, at=(60, 60))
    img = add_noise(img.rotate(0.5, resample=Image.Resampling.BICUBIC, fillcolor=255), seed)
    return img.convert(mode)


def saved(img: Image.Image, fmt: str, **params: object) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **params)
    return buf.getvalue()


IMAGE_LINES = ["Parcel 7731 leaves the depot at noon.", "Signed for by Martin Clarke."]
FRAME2_LINES = ["Second frame: gas meter reading 48213.", "Checked on Friday morning."]


def transparent_label() -> Image.Image:
    """Black text on a fully transparent background (alpha is the only thing drawn)."""
    img = Image.new("RGBA", (1800, 420), (0, 0, 0, 0))
    draw_lines(img, IMAGE_LINES, size=48, at=(60, 60), fill=(0, 0, 0, 255))
    return img


def image_inputs() -> dict[str, bytes]:
    base = label(IMAGE_LINES)
    frame2 = label(FRAME2_LINES, seed=4)
    tiff = io.BytesIO()
    base.save(tiff, "TIFF", dpi=(DPI, DPI), save_all=True, append_images=[frame2],
              compression="tiff_deflate")
    return {
        "label.png": saved(base, "PNG", dpi=(DPI, DPI)),
        "label.jpg": saved(base.convert("RGB"), "JPEG", quality=85, dpi=(DPI, DPI)),
        "label.tiff": tiff.getvalue(),
        "label.bmp": saved(base.convert("RGB"), "BMP"),
        "label.gif": saved(base.convert("P"), "GIF"),
        "label.webp": saved(transparent_label(), "WEBP", lossless=True),
        "label-lossy.webp": saved(base.convert("RGB"), "WEBP", quality=90),
    }


@pytest.fixture(scope="module")
def image_docs() -> dict[str, Document]:
    inputs = image_inputs()
    docs = extract_many(list(inputs.values()), Options(), names=list(inputs), workers=2)
    return dict(zip(inputs, docs, strict=True))


@pytest.mark.parametrize("name", ["label.png", "label.jpg", "label.bmp", "label.gif",
                                  "label.webp", "label-lossy.webp"])
def test_image_formats_give_their_text(name: str, image_docs: dict[str, Document]) -> None:
    doc = ok(image_docs[name])
    assert doc.metadata.extra["ocr_pages"] == [1]
    assert cer(doc.text, joined(IMAGE_LINES)) < MAX_CER, doc.text


def test_multipage_tiff_gives_every_frame(image_docs: dict[str, Document]) -> None:
    doc = ok(image_docs["label.tiff"])
    assert doc.metadata.page_count == 2
    assert doc.metadata.extra["ocr_pages"] == [1, 2]
    assert cer(doc.pages[0].text, joined(IMAGE_LINES)) < MAX_CER
    assert cer(doc.pages[1].text, joined(FRAME2_LINES)) < MAX_CER


def test_low_resolution_image_is_upscaled_and_read() -> None:
    """Text at 12 px (a 72 dpi screenshot) is below what Tesseract reads unaided."""
    lines = ["Meeting moved to Room 12 on Tuesday.", "Bring the signed forms with you."]
    img = Image.new("L", (330, 60), 255)
    draw_lines(img, lines, size=12, at=(6, 8))
    doc = ok(textsieve.extract(saved(img, "PNG", dpi=(72, 72)), name="small.png"))
    rate = cer(doc.text, joined(lines))
    print(f"12 px text: CER {rate:.4f}")
    assert rate < 0.03, doc.text


@pytest.mark.parametrize(("dpi", "seen"), [(200, 200), (400, 400), (600, 300)])
def test_stamped_scan_is_ocred_at_its_own_resolution(dpi: int, seen: int) -> None:
    """A scan with a Bates number drawn on it as text is still OCRed (the few characters of
    text are not the page's text layer), and rendered at the scan's resolution, not
    resampled to 300 dpi (which blurs and shifts strokes: more character errors)."""
    from textsieve.bytesource import Source
    from textsieve.ocr import raster

    width, height = round(A4_PT[0] / 72 * dpi), round(A4_PT[1] / 72 * dpi)
    img = Image.new("L", (width, height), 255)
    draw_lines(img, PAGES[0], size=round(11 / 72 * dpi), at=(dpi, dpi))
    img = add_noise(img, seed=dpi)
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4_PT)
    c.drawImage(ImageReader(img), 0, 0, width=A4_PT[0], height=A4_PT[1])
    c.setFont("Helvetica", 8)
    c.drawString(470, 20, "ACME000042")
    c.showPage()
    c.save()
    src = Source.from_bytes(buf.getvalue(), name="stamped.pdf")
    with raster.open_pages(src, "application/pdf", Options()) as pager:
        page, got_dpi = pager.image(1)
    # Drawn at the scan's resolution (to a pixel: page and scan differ in aspect by a
    # rounding), not resampled to 300 dpi; above 400 dpi at a whole fraction of it.
    assert got_dpi == seen
    k = dpi // seen
    assert abs(page.width - width / k) <= 1 and abs(page.height - height / k) <= 1
    doc = ok(textsieve.extract(buf.getvalue(), name="stamped.pdf"))
    assert cer(doc.text, joined(PAGES[0]) + " ACME000042") < 0.01, doc.text


def test_short_text_beside_a_small_picture_keeps_its_text_layer() -> None:
    """Only a page-covering picture makes a little text a stamp: a title page with a logo
    keeps its exact text and is not OCRed."""
    logo = Image.new("L", (300, 300), 255)
    draw_lines(logo, ["LOGO"], size=60, at=(40, 100))
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4_PT)
    c.drawImage(ImageReader(logo), 72, 600, width=150, height=150)
    c.setFont("Helvetica", 20)
    c.drawString(72, 500, "Annual report 2023")
    c.showPage()
    c.save()
    doc = ok(textsieve.extract(buf.getvalue(), name="title.pdf"))
    assert doc.text == "Annual report 2023" and not doc.pages[0].ocr


def test_decompression_bomb_is_refused_quickly(tmp_path: Path) -> None:
    """A 30000 x 30000 PNG (900 Mpixels, a few hundred KB on disk) is refused, not decoded."""
    path = tmp_path / "bomb.png"
    Image.new("1", (30000, 30000)).save(path)
    assert path.stat().st_size < 2_000_000
    doc, spent = cpu(lambda: textsieve.extract(path))
    assert doc.status is Status.ERROR and doc.error is not None
    assert doc.error.kind is ErrorKind.TOO_LARGE, doc.error
    # Decoding it means inflating its 112 MiB of pixels at the very least (measured here).
    assert spent < inflate_cpu(112), spent


# ---------------------------------------------------------------- modes

def test_ocr_never_leaves_a_scan_as_needs_ocr(four_page_scan: bytes) -> None:
    doc = textsieve.extract(four_page_scan, name="scan.pdf", ocr="never")
    assert doc.status is Status.ERROR and doc.error is not None
    assert doc.error.kind is ErrorKind.NEEDS_OCR


def test_ocr_always_reads_every_page_of_a_text_pdf() -> None:
    data = mixed_pdf(["t0", "t1"])
    doc = ok(textsieve.extract(data, name="text.pdf", ocr="always"))
    assert doc.metadata.extra["ocr_pages"] == [1, 2]
    assert all(p.ocr for p in doc.pages)
    for page, lines in zip(doc.pages, PAGES, strict=False):
        assert cer(page.text, joined(lines)) < MAX_CER, page.text


# ---------------------------------------------------------------- failure and parallelism

def corrupt_frame_tiff() -> bytes:
    """A 3-frame TIFF whose second frame's compressed data is garbage."""
    frames = [label(IMAGE_LINES), label(FRAME2_LINES, seed=4), label(PAGES[0][:1], seed=5)]
    buf = io.BytesIO()
    frames[0].save(buf, "TIFF", save_all=True, append_images=frames[1:],
                   compression="tiff_deflate", dpi=(DPI, DPI))
    data = bytearray(buf.getvalue())
    with Image.open(io.BytesIO(bytes(data))) as im:
        im.seek(1)
        offsets = im.tag_v2[273]
        counts = im.tag_v2[279]
    for off, n in zip(offsets, counts, strict=True):
        data[off + 2:off + n] = bytes(n - 2)  # keep the zlib header, break the stream
    return bytes(data)


def test_a_failing_page_is_listed_and_the_rest_returned() -> None:
    doc = ok(textsieve.extract(corrupt_frame_tiff(), name="broken.tiff"))
    assert doc.metadata.extra["missing_pages"] == [2]
    assert doc.metadata.extra["ocr_pages"] == [1, 3]
    assert cer(doc.pages[0].text, joined(IMAGE_LINES)) < MAX_CER
    assert cer(doc.pages[2].text, PAGES[0][0]) < MAX_CER
    assert any("page" in w for w in doc.warnings)


def test_pages_timing_out_in_the_pool_are_missing_not_fatal() -> None:
    """An OCR page over its time limit costs that page only: the text pages come back."""
    data = mixed_pdf(["t0", 1, 2])
    opts = Options(ocr_page_timeout=0.01)
    doc = ok(next(iter(extract_many([data], opts, names=["slow.pdf"], workers=2))))
    assert doc.metadata.extra["missing_pages"] == [2, 3]
    assert "ocr_pages" not in doc.metadata.extra
    assert normalise(doc.pages[0].text) == joined(PAGES[0])


def test_pool_spreads_pages_and_matches_in_process(four_page_scan: bytes,
                                                   in_process: Document) -> None:
    """The pages of one scan go to several workers; the merged result is the same."""
    doc = ok(next(iter(extract_many([four_page_scan], Options(), names=["scan.pdf"],
                                    workers=2))))
    assert doc.metadata.extra["ocr_pages"] == [1, 2, 3, 4]
    assert [p.ocr for p in doc.pages] == [True] * 4
    assert doc.text == in_process.text


def long_scan(pages: int) -> bytes:
    """An image-only PDF of many small pages (a 4 x 2/3 inch strip each, one line of text):
    cheap to make and to OCR, so a test can outrun a short deadline by page count."""
    buf = io.BytesIO()
    size = (1200 * 72 / DPI, 200 * 72 / DPI)
    c = canvas.Canvas(buf, pagesize=size)
    for n in range(1, pages + 1):
        img = Image.new("L", (1200, 200), 255)
        draw_lines(img, [f"Heron page {n}"], size=48, at=(40, 60))
        c.drawImage(ImageReader(img), 0, 0, width=size[0], height=size[1])
        c.showPage()
    c.save()
    return buf.getvalue()


def test_the_document_deadline_bounds_all_its_ocr_pages(tmp_path: Path) -> None:
    """A 2,000-page scan ran over 10 minutes under --timeout 120: each page had its own
    deadline but nothing bounded the document. Now the pages read in time are kept, the
    rest are missing_pages, and the document is a timeout."""
    import json
    import subprocess
    import sys

    # ~45 ms of OCR a page on one core here (a scan read at its own resolution): 600 pages
    # are ~13 s of work on 2 cores, far beyond the 5 s allowed (which leave a loaded
    # machine time to read a few).
    n = 600
    path = tmp_path / "long-scan.pdf"
    path.write_bytes(long_scan(n))
    res = subprocess.run([sys.executable, "-m", "textsieve", "extract", "-f", "json",
                          "-j", "2", "--timeout", "5", str(path)],
                         capture_output=True, text=True, timeout=90, check=False)
    assert res.returncode == 1, res.stderr
    assert "timeout: extraction exceeded 5 s" in res.stderr and "Traceback" not in res.stderr
    doc = json.loads(res.stdout)
    assert doc["status"] == "error" and doc["error"]["kind"] == "timeout"
    extra = doc["metadata"]["extra"]
    read, missing = extra.get("ocr_pages", []), extra["missing_pages"]
    assert sorted(read + missing) == list(range(1, n + 1))
    # Which pages finish first depends on the two workers and the machine's load (page 1
    # may still be in a worker when the deadline falls); that some are kept, and kept
    # right, does not.
    assert read and n in missing
    texts = {p["number"]: p["text"] for p in doc["pages"]}
    assert all(normalise(texts[k]) == f"Heron page {k}" for k in read)
