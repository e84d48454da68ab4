"""OCR throughput and accuracy, side by side in one run, on the same generated scans.

Run by hand: ``.venv/bin/python bench/bench_ocr.py [--pages 10] [--cores N] [--held-out]``
(both parts below), ``--only real [--split aside] [-v]`` or ``--only synthetic``;
``--searchable``: the words a search finds in searchable PDFs of the real-world pages;
``--against REV [--repeat N]``: in-process CPU a page and CER of this tree against git
revision REV's code on the synthetic scans, side by side (see ``against``).

Part one, real-world page kinds: the pages of bench/ocr_devset.py (articles, tables,
leaders, forms, charts, slides, receipts, court filings, letters, screenshots; wrong DPI
tags; made once with that script, into bench/out/ocr-dev/) and, in the dev split, the
dev corpus's real scans transcribed in bench/ocr_truth/. Each page is read by plain
``tesseract IMAGE -`` (the command line, default settings and environment; and again
with OMP_THREAD_LIMIT=1 for its CPU without OpenMP's spinning threads) and by textsieve
(in this process, engine warm, as a worker has it), one page after the other; CPU is
process CPU time (the child's rusage for tesseract). Word accuracy is defined below
(``word_accuracy``), summed over all words of the split.

Part two, synthetic scans:

Inputs: ``--pages`` pages of prose with numbers and punctuation, rendered with DejaVu Serif
11 pt at 300 dpi, each slightly skewed, blurred, noisy and stored as JPEG in one PDF
(cached in bench/out/, with the true text beside it). Contenders, each timed end to end:

(a)  the classic pipeline: ``pdftoppm -r 300`` then the ``tesseract`` command per page,
     pages run with ``xargs -P <cores>`` (default environment, as people run it; and again
     with OMP_THREAD_LIMIT=1, which is kinder to a busy machine);
(b)  ``ocrmypdf --force-ocr --sidecar -j <cores>`` (its fastest text-only mode,
     ``--output-type none``), from bench/.peers/ocr-venv;
(c)  the limit: tesseract's recognition alone, one warm tesserocr engine per worker
     process, on pages rendered beforehand (nothing else is timed);
(d)  textsieve: the ``textsieve extract -j N`` command, and the in-process worker pool
     (``extract_many``), on 1 core and on <cores>.

Then searchable-PDF creation: ``textsieve ocr`` against ``ocrmypdf --force-ocr`` writing a
PDF (``--output-type pdf``, and its default PDF/A), with the CER of ``pdftotext`` on each
output. CER: Levenshtein edits / characters of the true text, whitespace collapsed,
typographic quotes folded to ASCII for every contender alike.

Set-up for (b), once: ``python3 -m venv bench/.peers/ocr-venv &&
bench/.peers/ocr-venv/bin/pip install ocrmypdf`` (MPL-2.0; a bench-only peer, kept out of
.venv; v17 needs no Ghostscript: it rasterises with pypdfium2 and writes PDF/A itself).
"""

from __future__ import annotations

import argparse
import difflib
import io
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
OCRMYPDF = ROOT / "bench" / ".peers" / "ocr-venv" / "bin" / "ocrmypdf"
TEXTSIEVE = ROOT / ".venv" / "bin" / "textsieve"
SERIF = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"
DPI = 300

SENTENCES = [
    "The committee approved the revised budget of 14,250 euros on 3 March 2021.",
    "All invoices must be paid within thirty days of the delivery date.",
    "Our records show that the shipment left the warehouse in Rotterdam on Tuesday.",
    "Please return the signed contract, together with a copy of your identity card.",
    "The average temperature in the test chamber was 21.4 degrees, with a variance of 0.3.",
    "If the device does not start, check that the battery is charged and correctly inserted.",
    "Section 7(b) of the agreement describes the obligations of both parties in detail.",
    "The survey collected 1,832 responses from members in twelve regional offices.",
    "Maintenance is scheduled for the first weekend of every quarter, from 22:00 to 04:00.",
    "We regret to inform you that the position has already been filled.",
    "The library will be closed on public holidays and during the annual inventory.",
    "Each participant received a printed manual, a badge and a map of the building.",
    "Revenue grew by 8.5 percent, driven mainly by exports to Canada and Japan.",
    "The old bridge over the river was rebuilt in 1957 after the great flood.",
    "Questions about this notice may be sent to the office of the city clerk.",
    "A second inspection found no further damage to the roof or the north wall.",
    "The patient was advised to rest, drink plenty of water and return in two weeks.",
    "Orders placed before noon are dispatched on the same working day.",
    "The minutes of the previous meeting were read and approved without changes.",
    "Her report, submitted in June, recommends replacing the heating system entirely.",
    "Reference number: KX-4471/B. Keep this letter for your records.",
    "The train to Hamburg departs from platform 9 at 7:45 and arrives at 11:20.",
]


# -- scans -------------------------------------------------------------------------------

def page_text(rng: random.Random, font, width_px: int, max_lines: int) -> list[str]:
    """Paragraphs of shuffled sentences, wrapped to the text width by measuring."""
    lines: list[str] = []
    while len(lines) < max_lines - 1:
        para = " ".join(rng.sample(SENTENCES, rng.randint(3, 5)))
        words, cur = para.split(), ""
        for w in words:
            trial = f"{cur} {w}".strip()
            if font.getlength(trial) <= width_px:
                cur = trial
            else:
                lines.append(cur)
                cur = w
        lines.append(cur)
        lines.append("")  # paragraph gap
    return lines[:max_lines]


HELD_OUT_DPIS = (200, 240, 300, 400, 600)
HELD_OUT_FONTS = ("DejaVuSerif.ttf", "DejaVuSans.ttf", "DejaVuSerifCondensed.ttf")


def make_scans(pages: int, held_out: bool = False) -> tuple[Path, list[str]]:
    """The cached scan PDF and the true text of each page (generated on first use).

    ``held_out``: pages no tuning here was done on (another seed), scanned at 200 to 600
    dpi in three typefaces at 9-11 pt, each with a Bates number drawn as text in the
    corner, as scanning bureaus stamp them: the page is then more than one image, so it is
    rendered, and the resolution it is rendered at matters."""
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    pdf_path = OUT / (f"ocr-heldout-{pages}.pdf" if held_out else f"ocr-scans-{pages}.pdf")
    truth_path = pdf_path.with_suffix(".json")
    if pdf_path.exists() and truth_path.exists():
        return pdf_path, json.loads(truth_path.read_text())
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    OUT.mkdir(parents=True, exist_ok=True)
    rng = random.Random(18 if held_out else 4)
    w_pt, h_pt = 595, 842  # A4
    c = canvas.Canvas(str(pdf_path), pagesize=(w_pt, h_pt))
    truth = []
    for number in range(pages):
        dpi, pt, face = DPI, 11, SERIF
        if held_out:
            dpi = HELD_OUT_DPIS[number % len(HELD_OUT_DPIS)]
            pt = rng.choice((9, 10, 11))
            face = str(Path(SERIF).with_name(rng.choice(HELD_OUT_FONTS)))
        size = round(pt / 72 * dpi)
        font = ImageFont.truetype(face, size)
        margin, step = dpi, round(size * 1.45)
        width, height = round(w_pt / 72 * dpi), round(h_pt / 72 * dpi)
        max_lines = (height - 2 * margin) // step
        lines = page_text(rng, font, width - 2 * margin, max_lines)
        img = Image.new("L", (width, height), 255)
        draw = ImageDraw.Draw(img)
        for i, line in enumerate(lines):
            draw.text((margin, margin + i * step), line, font=font, fill=20)
        img = img.rotate(rng.uniform(-0.8, 0.8), resample=Image.Resampling.BICUBIC,
                         fillcolor=255)
        img = img.filter(ImageFilter.GaussianBlur(0.6 * dpi / DPI))
        noise = Image.effect_noise(img.size, 40)
        img = Image.blend(img, noise, 0.10)
        specks = ImageDraw.Draw(img)
        for _ in range(400):
            x, y = rng.randrange(width), rng.randrange(height)
            specks.point((x, y), fill=rng.choice((0, 90)))
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=75)
        buf.seek(0)
        c.drawImage(ImageReader(buf), 0, 0, w_pt, h_pt)
        if held_out:
            stamp = f"ACME{number + 1:06d}"
            c.setFont("Helvetica", 8)
            c.drawString(470, 20, stamp)
            lines = [*lines, stamp]
        truth.append("\n".join(lines))
        c.showPage()
    c.save()
    truth_path.write_text(json.dumps(truth))
    return pdf_path, truth


# -- accuracy ----------------------------------------------------------------------------

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                         "\u2014": "-", "\u2013": "-", "\ufb01": "fi", "\ufb02": "fl"})


def norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).translate(_QUOTES).split())


def _lev(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def edits(truth: str, got: str) -> int:
    """Levenshtein distance, computed per differing stretch between difflib's anchors
    (exact for the small local errors OCR makes, and fast on whole pages)."""
    sm = difflib.SequenceMatcher(None, truth, got, autojunk=False)
    return sum(_lev(truth[i1:i2], got[j1:j2]) for tag, i1, i2, j1, j2 in sm.get_opcodes()
               if tag != "equal")


def cer(truth: list[str], got: list[str]) -> float:
    if len(got) != len(truth):
        got = (got + [""] * len(truth))[:len(truth)]
    total = sum(len(norm(t)) for t in truth)
    return sum(edits(norm(t), norm(g)) for t, g in zip(truth, got, strict=True)) / total


# -- word accuracy (real-world page kinds) -------------------------------------------------
#
# Word accuracy = the number of words of the true text that the OCR text has in the same
# order (the length of the longest common subsequence of the two word sequences) over the
# number of words of the true text. Words: the text NFKC-normalised, typographic quotes,
# dashes and ligatures folded to ASCII, split at whitespace, then stripped of the
# punctuation at their ends; what is left empty (leaders, bullets, rules read as "|") is
# no word. Comparison is exact and case-sensitive. Words the OCR adds (garbage from dotted
# leaders, a chart's gridlines) cost nothing by themselves but break the words they run
# into; they are counted apart as "extra".

_EDGE = re.compile(r"^[^\w]+|[^\w]+$")


def words(text: str) -> list[str]:
    out = []
    for tok in norm(text).split():
        tok = _EDGE.sub("", tok)
        if tok:
            out.append(tok)
    return out


def lcs(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence, exact (Hyyrö's bit-vector algorithm:
    one big-integer step per word of ``b``)."""
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, tok in enumerate(a):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for tok in b:
        u = v & masks.get(tok, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - bin(v).count("1")


def word_accuracy(truth: str, got: str) -> tuple[int, int, int]:
    """(words of the truth, of them read in order, words the OCR text has in all)."""
    t, g = words(truth), words(got)
    return len(t), lcs(t, g), len(g)


# -- contenders --------------------------------------------------------------------------

def peer_env(omp_one: bool = False) -> dict[str, str]:
    """The environment a user has: textsieve's own OMP_THREAD_LIMIT is not inherited."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_THREAD_LIMIT"}
    if omp_one:
        env["OMP_THREAD_LIMIT"] = "1"
    return env


def classic(pdf: Path, cores: int, omp_one: bool) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="bench-ocr-a-") as tmp:
        # pdftoppm's default PPM: with -png, zlib on a noisy 300 dpi scan costs poppler
        # ~12 s a page here, which would measure PNG compression, not OCR.
        script = (f"pdftoppm -r {DPI} '{pdf}' '{tmp}/pg' && "
                  f"ls '{tmp}'/pg-*.ppm | xargs -P {cores} -I{{}} "
                  f"tesseract {{}} {{}} -l eng 2>/dev/null")
        subprocess.run(["bash", "-c", script], check=True, env=peer_env(omp_one))
        files = sorted(Path(tmp).glob("pg-*.ppm.txt"), key=lambda p: int(
            re.findall(r"\d+", p.name)[0]))
        return [f.read_text() for f in files]


def ocrmypdf_text(pdf: Path, cores: int) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="bench-ocr-b-") as tmp:
        side = Path(tmp, "side.txt")
        subprocess.run([str(OCRMYPDF), "--force-ocr", "--sidecar", str(side), "-j",
                        str(cores), "--output-type", "none", "-q", str(pdf), "-"],
                       check=True, env=peer_env(), stdout=subprocess.DEVNULL)
        return side.read_text().split("\f")


_IMAGES: list = []
_API = None


def _limit_init() -> None:
    global _API
    import tesserocr

    from textsieve.ocr import engine

    _API = tesserocr.PyTessBaseAPI(path=(engine.tessdata_dir() or "") + "/", lang="eng",
                                   psm=3)


def _limit_page(i: int) -> tuple[str, float]:
    t0 = time.perf_counter()
    _API.SetImage(_IMAGES[i])
    _API.SetSourceResolution(DPI)
    text = _API.GetUTF8Text()
    return text, time.perf_counter() - t0


def limit(pdf: Path, cores: int) -> tuple[list[str], float, float]:
    """(texts, wall seconds of recognition, summed per-page recognition seconds)."""
    import pypdfium2 as pdfium

    os.environ["OMP_THREAD_LIMIT"] = "1"
    doc = pdfium.PdfDocument(str(pdf))
    _IMAGES[:] = [doc[i].render(scale=DPI / 72, grayscale=True).to_pil().copy()
                  for i in range(len(doc))]
    doc.close()
    with mp.get_context("fork").Pool(cores, initializer=_limit_init) as pool:
        pool.map(_limit_page, [0] * cores, chunksize=1)  # warm every engine first
        t0 = time.perf_counter()
        out = pool.map(_limit_page, range(len(_IMAGES)), chunksize=1)
        wall = time.perf_counter() - t0
    return [t for t, _ in out], wall, sum(s for _, s in out)


def textsieve_cli(pdf: Path, cores: int) -> list[str]:
    proc = subprocess.run([str(TEXTSIEVE), "extract", "-j", str(cores), "-f", "json",
                           str(pdf)], check=True, capture_output=True, text=True)
    return [p["text"] for p in json.loads(proc.stdout)["pages"]]


def textsieve_pool(pdf: Path, cores: int) -> list[str]:
    from textsieve.core import extract_many
    from textsieve.options import Options

    doc = next(iter(extract_many([str(pdf)], Options(workers=cores), workers=cores)))
    assert doc.ok, doc.error
    return [p.text for p in doc.pages]


def pdftotext_pages(pdf: Path) -> list[str]:
    out = subprocess.run(["pdftotext", str(pdf), "-"], check=True, capture_output=True,
                         text=True).stdout
    return out.split("\f")[:-1]


def timed(fn: Callable[[], list[str]], repeat: int) -> tuple[list[str], float]:
    """Texts and the best wall time of ``repeat`` runs (other jobs on the machine only
    ever make a run slower)."""
    best, texts = float("inf"), []
    for _ in range(repeat):
        t0 = time.perf_counter()
        texts = fn()
        best = min(best, time.perf_counter() - t0)
    return texts, best


# -- real-world page kinds ----------------------------------------------------------------

DEVSET = OUT / "ocr-dev"


def child_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def plain_tesseract(path: Path, omp_one: bool = False) -> tuple[str, float]:
    """``tesseract IMAGE -``, default settings and environment (its OpenMP threads
    included; ``omp_one``: OMP_THREAD_LIMIT=1, no threads to spin): (text, CPU s)."""
    c0 = child_cpu()
    proc = subprocess.run(["tesseract", str(path), "-"], capture_output=True, text=True,
                          env=peer_env(omp_one), check=False)
    return proc.stdout, child_cpu() - c0


def textsieve_image(path: Path) -> tuple[str, float, dict]:
    """textsieve's OCR of one image in this process (engine warm): (text, CPU s, extra)."""
    import textsieve

    c0 = time.process_time()
    doc = textsieve.extract(str(path))
    return doc.text, time.process_time() - c0, doc.metadata.extra


CORPUS = ROOT.parent / "shared" / "data" / "dev-corpus"
TRUTH = ROOT / "bench" / "ocr_truth"


def dev_pages(split: str, limit: int | None = None, kinds: str | None = None
              ) -> list[tuple[Path, str, str]]:
    """(image, kind, true text) of the generated pages of ``split`` (bench/ocr_devset.py)
    and, in the dev split, the real scans of the shared dev corpus that have a transcript
    in bench/ocr_truth/ (kind "corpus"): the first ``limit``, of ``kinds`` (comma-separated)
    only if given."""
    folder = DEVSET / split
    pages = []
    if (folder / "index.json").exists():
        pages = [(folder / e["file"], e["kind"] + ("-lowres" if e["low_res"] else ""),
                  (folder / e["file"]).with_suffix(".txt").read_text())
                 for e in json.loads((folder / "index.json").read_text())]
    if split == "dev":
        for truth in sorted(TRUTH.glob("*.txt")):
            found = list(CORPUS.glob(f"*/{truth.stem}"))
            if found:
                pages.append((found[0], "corpus", truth.read_text()))
    pages = pages[:limit]
    if kinds:
        pages = [p for p in pages if p[1].split("-")[0] in kinds.split(",")]
    return pages


def real_world(split: str, limit: int | None = None, verbose: bool = False,
               cached_peer: bool = False, kinds: str | None = None) -> None:
    pages = dev_pages(split, limit, kinds)
    cache_path = DEVSET / split / "tesseract-cache.json"
    cache = json.loads(cache_path.read_text()) if cached_peer and cache_path.exists() else {}
    if not pages:
        print(f"  no pages: make them with bench/ocr_devset.py --split {split} (docstring)")
        return
    textsieve_image(pages[0][0])  # load the engine once, as a worker has it loaded
    totals = {"tesseract": [0, 0, 0, 0.0], "textsieve": [0, 0, 0, 0.0]}
    omp1_cpu = 0.0
    by_kind: dict[str, dict[str, list[float]]] = {}
    for path, kind, truth in pages:
        if path.name in cache:  # --cached-peer: while tuning, not for reported figures
            t_text, t_cpu = cache[path.name]
            omp1_cpu += cache.get("omp1:" + path.name, [None, t_cpu])[1]
        else:
            t_text, t_cpu = plain_tesseract(path)
            _, cpu1 = plain_tesseract(path, omp_one=True)  # the same text, its CPU
            omp1_cpu += cpu1
            cache[path.name] = [t_text, t_cpu]
            cache["omp1:" + path.name] = [None, cpu1]
            cache_path.write_text(json.dumps(cache))
        s_text, s_cpu, extra = textsieve_image(path)
        row = []
        for name, text, sec in (("tesseract", t_text, t_cpu), ("textsieve", s_text, s_cpu)):
            n, ok, got = word_accuracy(truth, text)
            acc = totals[name]
            acc[0] += n
            acc[1] += ok
            acc[2] += got - ok
            acc[3] += sec
            k = by_kind.setdefault(kind.split("-")[0], {}).setdefault(name, [0, 0])
            k[0] += n
            k[1] += ok
            row.append(f"{ok / max(n, 1):6.1%} {sec:5.2f}s")
        if verbose:
            scale = extra.get("ocr_scale", {})
            print(f"  {path.name:30s} tesseract {row[0]}   textsieve {row[1]}   "
                  f"scale {scale}", flush=True)
    n = len(pages)
    print("\n  by kind (word accuracy, tesseract -> textsieve):")
    for kind, d in sorted(by_kind.items()):
        t, s = d["tesseract"], d["textsieve"]
        print(f"    {kind:12s} {t[1] / max(t[0], 1):6.1%} -> {s[1] / max(s[0], 1):6.1%}")
    print(f"\n  {n} pages of split {split!r}, {totals['tesseract'][0]:,} words")
    for name, label in (("tesseract", "plain `tesseract IMAGE -`"),
                        ("textsieve", "textsieve (in process, engine warm)")):
        words_n, ok, extra_words, sec = totals[name]
        print(f"  {label:40s} word accuracy {ok / words_n:6.2%}  extra words "
              f"{extra_words / words_n:5.1%}  CPU {sec / n:5.2f} s/page")
    print(f"  {'the same tesseract, OMP_THREAD_LIMIT=1':40s} {'':32s} CPU "
          f"{omp1_cpu / n:5.2f} s/page")
    t, s = totals["tesseract"], totals["textsieve"]
    print(f"  textsieve - tesseract: {100 * (s[1] / s[0] - t[1] / t[0]):+.1f} points of word "
          f"accuracy; CPU {s[3] / t[3]:.2f}x tesseract's, {s[3] / max(omp1_cpu, 1e-9):.2f}x "
          "with OMP_THREAD_LIMIT=1")


def searchable_layers(split: str, limit: int | None = None, kinds: str | None = None
                      ) -> None:
    """The text a search in a searchable PDF finds: each real-world page wrapped in a
    one-page PDF at its resolution tag (300 dpi without one), made searchable by plain
    ``tesseract IMAGE OUT pdf`` (its own text layer over the image, as OCRmyPDF lays
    Tesseract's) and by textsieve (``core.make_searchable``, in process), each read back
    by poppler's ``pdftotext``; word accuracy against the page's true text."""
    import tempfile

    from PIL import Image

    from textsieve.core import make_searchable
    from textsieve.options import Options

    pages = dev_pages(split, limit, kinds)
    totals = {"tesseract": [0, 0], "textsieve": [0, 0]}
    with tempfile.TemporaryDirectory() as tmp:
        for path, _kind, truth in pages:
            scan, ours = Path(tmp, "scan.pdf"), Path(tmp, "ours.pdf")
            with Image.open(path) as im:
                dpi = round((im.info.get("dpi") or (300, 300))[0]) or 300
                im.convert("RGB" if im.mode not in ("L", "1") else "L").save(
                    scan, "PDF", resolution=dpi)
            subprocess.run(["tesseract", str(path), str(Path(tmp, "tess")), "pdf"],
                           capture_output=True, env=peer_env(), check=False)
            make_searchable(scan, ours, Options())
            for name, pdf in (("tesseract", Path(tmp, "tess.pdf")), ("textsieve", ours)):
                text = "".join(pdftotext_pages(pdf)) if pdf.exists() else ""
                n, ok, _got = word_accuracy(truth, text)
                totals[name][0] += n
                totals[name][1] += ok
                pdf.unlink(missing_ok=True)
    print(f"  {len(pages)} pages of split {split!r}: words a search in the searchable PDF "
          "finds (pdftotext)")
    for name, label in (("tesseract", "`tesseract IMAGE OUT pdf`"),
                        ("textsieve", "textsieve (core.make_searchable)")):
        n, ok = totals[name]
        print(f"  {label:40s} word accuracy {ok / max(n, 1):6.2%}")


# -- against another revision ------------------------------------------------------------

def _page_server(src_dir: str, pdf: str) -> None:
    """Child of ``against``: textsieve from ``src_dir`` OCRs the page numbers it reads on
    stdin, in this process (engine warm), and answers each with [CPU s, text]."""
    sys.path.insert(0, src_dir)
    from textsieve.ocr import ocr_pages
    from textsieve.options import Options

    try:
        from textsieve.bytesource import Source
    except ImportError:  # revisions before the module was renamed
        from textsieve.source import Source  # type: ignore[no-redef]
    opts, src = Options(), Source.from_path(pdf)
    ocr_pages(src, "application/pdf", [1], opts)  # load the engine first
    print("ready", flush=True)
    for line in sys.stdin:
        c0 = time.process_time()
        page = ocr_pages(src, "application/pdf", [int(line)], opts)[0]
        print(json.dumps([time.process_time() - c0, page.text]), flush=True)


def against(rev: str, pages: int, repeat: int, held_out: bool) -> None:
    """In-process CPU a page and CER of this tree's OCR and of revision ``rev``'s, on the
    synthetic scans: one child process each, the same page given to both in turn (in
    alternating order), ``repeat`` rounds, the best CPU of each page kept. Both run on
    the same machine at the same moments, so load from other jobs falls on both."""
    pdf, truth = make_scans(pages, held_out)
    with tempfile.TemporaryDirectory(prefix="bench-ocr-rev-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        trees = [(f"revision {rev}", str(Path(tmp, "src"))), ("this tree", str(ROOT / "src"))]
        procs = [subprocess.Popen([sys.executable, __file__, "--page-server", src_dir,
                                   str(pdf)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True) for _, src_dir in trees]
        for proc in procs:
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit("a page server did not start")
        n = len(truth)
        best = [[float("inf")] * n for _ in trees]
        texts = [[""] * n for _ in trees]
        for r in range(repeat):
            for i in range(n):
                order = [0, 1] if (r + i) % 2 == 0 else [1, 0]
                for k in order:
                    procs[k].stdin.write(f"{i + 1}\n")
                    procs[k].stdin.flush()
                    cpu, texts[k][i] = json.loads(procs[k].stdout.readline())
                    best[k][i] = min(best[k][i], cpu)
        for proc in procs:
            proc.stdin.close()
            proc.wait()
    print(f"{n} scanned pages ({pdf.name}), in-process CPU a page (best of {repeat}), "
          "pages interleaved")
    for (name, _), cpus, got in zip(trees, best, texts, strict=True):
        print(f"  {name:24s} {sum(cpus) / n:6.3f} s/page  CER {cer(truth, got):.3%}")
    print(f"  this tree / revision: {sum(best[1]) / sum(best[0]):.3f}x CPU")


# -- main --------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs per contender")
    ap.add_argument("--held-out", action="store_true",
                    help="the held-out scans: 200-600 dpi, three typefaces, a text stamp")
    ap.add_argument("--only", choices=("synthetic", "real"),
                    help="only the synthetic scans, or only the real-world page kinds")
    ap.add_argument("--split", choices=("dev", "aside"), default="dev",
                    help="the real-world pages: the development split or the one held aside")
    ap.add_argument("--limit", type=int, help="score only the first N real-world pages")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per real page")
    ap.add_argument("--kinds", help="only these page kinds, comma-separated (slide,table...)")
    ap.add_argument("--cached-peer", action="store_true",
                    help="reuse plain tesseract's last readings of the real pages (tuning "
                         "only: reported figures run it side by side)")
    ap.add_argument("--target", type=float,
                    help="tuning: the glyph height in pixels pages are scaled to")
    ap.add_argument("--no-second-look", action="store_true",
                    help="ablation: textsieve without its second look at weak lines")
    ap.add_argument("--against", metavar="REV",
                    help="synthetic scans only: this tree's in-process CPU a page and CER "
                         "against git revision REV's, side by side (pages interleaved)")
    ap.add_argument("--searchable", action="store_true",
                    help="real-world pages: the text layer of searchable PDFs, textsieve's "
                         "against tesseract's own (read back by pdftotext)")
    ap.add_argument("--page-server", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.page_server:
        _page_server(*args.page_server)
        return
    if args.against:
        against(args.against, args.pages, max(2, args.repeat), args.held_out)
        return
    if args.target:
        from textsieve.ocr import prep

        prep.TARGET_GLYPH_PX = args.target
    if args.no_second_look:
        from textsieve.ocr import reread

        reread.LOW_CONF = -1.0
    if args.searchable:
        searchable_layers(args.split, args.limit, args.kinds)
        return
    if args.only != "synthetic":
        print(f"== real-world page kinds (bench/ocr_devset.py, split {args.split!r}): "
              "plain tesseract vs textsieve, one page after the other")
        real_world(args.split, args.limit, args.verbose, args.cached_peer, args.kinds)
        if args.only == "real":
            return
        print()
    cores = args.cores
    pdf, truth = make_scans(args.pages, args.held_out)
    n = len(truth)
    have_ocrmypdf = OCRMYPDF.exists()
    import tesserocr

    tess_cli = subprocess.run(["tesseract", "--version"], capture_output=True,
                              text=True).stdout.split("\n")[0]
    print(f"{n} scanned pages ({pdf.name}, {sum(len(norm(t)) for t in truth):,} chars), "
          f"{cores} cores, python {sys.version.split()[0]}")
    print(f"tesseract CLI: {tess_cli}; tesserocr {tesserocr.__version__} "
          f"(libtesseract {tesserocr.tesseract_version().split()[1]})"
          + ("" if have_ocrmypdf else "; ocrmypdf: not installed (see docstring)"))

    rows: list[tuple[str, float, float]] = []  # name, seconds, cer

    def add(name: str, texts: list[str], seconds: float) -> None:
        rows.append((name, seconds, cer(truth, texts)))
        print(f"  {name:42s} {seconds:7.2f} s  {n / seconds:6.2f} pages/s  "
              f"CER {rows[-1][2]:.3%}", flush=True)

    print("\n== text from scans")
    limit_texts, limit_wall, limit_sum = min(
        (limit(pdf, cores) for _ in range(args.repeat)), key=lambda r: r[1])
    add(f"(c) limit: tesserocr only, {cores} procs", limit_texts, limit_wall)
    t1, w1, _ = min((limit(pdf, 1) for _ in range(args.repeat)), key=lambda r: r[1])
    add("(c) limit: tesserocr only, 1 proc", t1, w1)
    for name, fn in [
        (f"(d) textsieve pool -j {cores}", lambda: textsieve_pool(pdf, cores)),
        ("(d) textsieve pool -j 1", lambda: textsieve_pool(pdf, 1)),
        (f"(d) textsieve extract CLI -j {cores}", lambda: textsieve_cli(pdf, cores)),
        ("(d) textsieve extract CLI -j 1", lambda: textsieve_cli(pdf, 1)),
        (f"(a) pdftoppm + tesseract, xargs -P {cores}", lambda: classic(pdf, cores, False)),
        ("(a') same, OMP_THREAD_LIMIT=1", lambda: classic(pdf, cores, True)),
    ] + ([(f"(b) ocrmypdf --sidecar -j {cores}", lambda: ocrmypdf_text(pdf, cores))]
         if have_ocrmypdf else []):
        add(name, *timed(fn, args.repeat))

    by = {name: (s, c) for name, s, c in rows}
    ts = by[f"(d) textsieve pool -j {cores}"][0]
    ts_cli = by[f"(d) textsieve extract CLI -j {cores}"][0]
    print("\nratios (throughput, textsieve pool / CLI over the other):")
    for name, s, _ in rows:
        if not name.startswith("(d)"):
            print(f"  vs {name:42s} pool {s / ts:5.2f}x   CLI {s / ts_cli:5.2f}x")
    print(f"  textsieve -j {cores} vs -j 1: pool "
          f"{by['(d) textsieve pool -j 1'][0] / ts:.2f}x, CLI "
          f"{by['(d) textsieve extract CLI -j 1'][0] / ts_cli:.2f}x; "
          f"limit {cores} procs vs 1: {w1 / limit_wall:.2f}x")
    print(f"  limit: {limit_sum / n:.2f} s of recognition per page (sum over workers)")

    print("\n== searchable PDF")
    with tempfile.TemporaryDirectory(prefix="bench-ocr-pdf-") as tmp:
        out = Path(tmp, "ts.pdf")
        t0 = time.perf_counter()
        subprocess.run([str(TEXTSIEVE), "ocr", str(pdf), "-o", str(out), "-j", str(cores)],
                       check=True, capture_output=True)
        ts_pdf = time.perf_counter() - t0
        print(f"  {'textsieve ocr -j ' + str(cores):42s} {ts_pdf:7.2f} s  "
              f"{n / ts_pdf:6.2f} pages/s  CER {cer(truth, pdftotext_pages(out)):.3%}  "
              f"{out.stat().st_size / 1e6:.2f} MB (input {pdf.stat().st_size / 1e6:.2f} MB)")
        if have_ocrmypdf:
            for kind in ("pdf", "pdfa"):
                peer = Path(tmp, f"om-{kind}.pdf")
                t0 = time.perf_counter()
                proc = subprocess.run([str(OCRMYPDF), "--force-ocr", "-j", str(cores), "-q",
                                       "--output-type", kind, str(pdf), str(peer)],
                                      env=peer_env(), capture_output=True, text=True)
                s = time.perf_counter() - t0
                if proc.returncode != 0:
                    why = proc.stderr.strip().splitlines()[-1:] or ["?"]
                    print(f"  ocrmypdf --output-type {kind}: failed after {s:.1f} s "
                          f"(exit {proc.returncode}: {why[0]})")
                    continue
                print(f"  {'ocrmypdf --force-ocr --output-type ' + kind:42s} {s:7.2f} s  "
                      f"{n / s:6.2f} pages/s  CER {cer(truth, pdftotext_pages(peer)):.3%}  "
                      f"{peer.stat().st_size / 1e6:.2f} MB  (textsieve {s / ts_pdf:.2f}x)")
    if shutil.which("nproc"):
        load = os.getloadavg()[0]
        print(f"\nload average at the end: {load:.1f} (other jobs skew timings)")


if __name__ == "__main__":
    main()
