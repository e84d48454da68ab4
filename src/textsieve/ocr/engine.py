"""Tesseract, kept warm: one engine per (languages, mode) per process, reused page after
page; the tesseract command line is the fallback when the tesserocr binding is missing.

Tesseract's own threads are pinned to one (OMP_THREAD_LIMIT) before it loads: parallelism
comes from running pages in several worker processes, and OpenMP threads on top of that
only oversubscribe the cores and slow everything down.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model import ErrorKind, ExtractionError
from .layout import Line, Word, text_of

if TYPE_CHECKING:
    from PIL import Image

os.environ.setdefault("OMP_THREAD_LIMIT", "1")

_TESSDATA_CANDIDATES = ("/usr/share/tesseract-ocr/5/tessdata",
                        "/usr/share/tesseract-ocr/4.00/tessdata", "/usr/share/tessdata",
                        "/usr/local/share/tessdata")


@dataclass
class Recognized:
    text: str
    confidence: float  # mean word confidence, 0-100
    pdf: bytes | None = None  # tesseract's text-only PDF of the page, when asked for
    lines: list[Line] | None = None  # the words with their boxes, line by line

    def __post_init__(self) -> None:
        # Tesseract's block order, fixed where blocks are the columns of a table.
        if self.lines is not None:
            self.text = text_of(self.lines)


def tessdata_dir() -> str | None:
    env = os.environ.get("TESSDATA_PREFIX")
    if env and Path(env).is_dir():
        return env
    for cand in _TESSDATA_CANDIDATES:
        if Path(cand, "eng.traineddata").exists() or Path(cand, "osd.traineddata").exists():
            return cand
    return None


def available_languages() -> set[str]:
    d = tessdata_dir()
    if not d:
        return set()
    return {p.stem for p in Path(d).glob("*.traineddata")}


def check_languages(lang: str) -> None:
    have = available_languages()
    if not have and not _binding() and not shutil.which("tesseract"):
        raise ExtractionError(ErrorKind.MISSING_TOOL,
                              "tesseract is not installed (Debian: tesseract-ocr)")
    missing = [code for code in lang.split("+") if code and have and code not in have]
    if missing:
        raise ExtractionError(ErrorKind.MISSING_TOOL,
                              f"tesseract language data not installed: {', '.join(missing)} "
                              f"(Debian: tesseract-ocr-{missing[0]})")


_binding_mod: Any = None
_binding_checked = False


def _binding() -> Any:
    global _binding_mod, _binding_checked
    if not _binding_checked:
        _binding_checked = True
        try:
            import tesserocr

            _binding_mod = tesserocr
        except ImportError:
            _binding_mod = None
    return _binding_mod


_engines: dict[tuple[str, int, int], Any] = {}
_lock = threading.Lock()


def _api(lang: str, psm: int, threshold: int = 0) -> Any:
    """A warm tesserocr engine for these languages, page-segmentation mode and
    binarisation (Tesseract's ``thresholding_method``: 0 Otsu, 2 Sauvola)."""
    key = (lang, psm, threshold)
    api = _engines.get(key)
    if api is None:
        tesserocr = _binding()
        try:
            api = tesserocr.PyTessBaseAPI(path=(tessdata_dir() or "") + "/", lang=lang,
                                          psm=psm)
        except RuntimeError as exc:
            raise ExtractionError(ErrorKind.MISSING_TOOL,
                                  f"tesseract cannot load languages {lang!r}: {exc}") from exc
        if threshold:
            api.SetVariable("thresholding_method", str(threshold))
        _engines[key] = api
    return api


PSM_LINE = 7  # the image is one line of text
SAUVOLA = 2


def read_line(img: Image.Image, lang: str, *, dpi: int = 300, threshold: int = 0
              ) -> list[Word] | None:
    """The words of an image of one line (a second look at a line read badly), with
    boxes in ``img``'s pixels; None without the binding (the command line would cost a
    process per line: no second look then)."""
    if _binding() is None:
        return None
    with _lock:
        api = _api(lang, PSM_LINE, threshold)
        api.SetImage(img)
        api.SetSourceResolution(dpi)
        try:
            api.Recognize()
            lines = _lines(api)
        except RuntimeError:  # nothing Tesseract could make a line of
            return None
    return [w for ln in lines for w in ln.words]


def read_block(img: Image.Image, lang: str, *, dpi: int = 300) -> list[Line] | None:
    """The lines of an image read as one block of text (``--psm 6``: a part of a page
    the page segmentation left out), boxes in ``img``'s pixels; None without the binding
    (the command line would cost a process per part: no such look then)."""
    if _binding() is None:
        return None
    with _lock:
        api = _api(lang, PSM_BLOCK)
        api.SetImage(img)
        api.SetSourceResolution(dpi)
        try:
            api.Recognize()
            return _lines(api)
        except RuntimeError:  # nothing Tesseract could read
            return None


PSM_AUTO = 3  # fully automatic page segmentation, no OSD
PSM_BLOCK = 6  # one uniform block of text: a table read row by row
PSM_SPARSE = 11  # as much text as possible, in no particular order (labels, logos)
PSM_OSD_ONLY = 0


def recognize(img: Image.Image, lang: str, *, dpi: int = 300, want_pdf: bool = False,
              psm: int = PSM_AUTO) -> Recognized:
    """Text (and optionally a text-only PDF page) of one upright image."""
    if _binding() is None:
        return _recognize_cli(img, lang, dpi=dpi, want_pdf=want_pdf, psm=psm)
    with _lock:
        api = _api(lang, psm)
        if not want_pdf:
            api.SetImage(img)
            api.SetSourceResolution(dpi)
            api.Recognize()  # the text is made from the lines (Recognized): no GetUTF8Text
            return Recognized("", float(api.MeanTextConf()), lines=_lines(api))
        # One recognition pass gives both the text and tesseract's own text-only PDF (its
        # GlyphLessFont maps every glyph to Unicode, any script): ProcessPages wants a file.
        with tempfile.TemporaryDirectory(prefix="textsieve-ocr-") as tmp:
            image_path = os.path.join(tmp, "page.tif")
            img.save(image_path, dpi=(dpi, dpi), compression="raw")
            base = os.path.join(tmp, "page")
            for name, value in (("tessedit_create_pdf", "1"), ("textonly_pdf", "1"),
                                ("tessedit_create_txt", "0")):
                api.SetVariable(name, value)
            try:
                ok = api.ProcessPages(base, image_path)
            finally:
                api.SetVariable("tessedit_create_pdf", "0")
            if not ok:
                raise ExtractionError(ErrorKind.CORRUPT, "tesseract could not process the page")
            text = api.GetUTF8Text()
            conf = float(api.MeanTextConf())
            return Recognized(text, conf, Path(base + ".pdf").read_bytes(), _lines(api))


def _lines(api: Any) -> list[Line]:
    """The words of the last recognition, with their boxes and confidences, by line."""
    from tesserocr import RIL, iterate_level

    lines: list[Line] = []
    block = para = 0
    it = api.GetIterator()
    if it is None:
        return lines
    for w in iterate_level(it, RIL.WORD):
        try:
            text = (w.GetUTF8Text(RIL.WORD) or "").strip()
        except RuntimeError:  # tesserocr's "No text returned": an empty word
            text = ""
        box = w.BoundingBox(RIL.WORD)
        if w.IsAtBeginningOf(RIL.BLOCK):
            block += 1
        if w.IsAtBeginningOf(RIL.PARA):
            para += 1
        if not text or box is None:
            continue
        word = Word(text, float(w.Confidence(RIL.WORD)), tuple(box))
        if w.IsAtBeginningOf(RIL.TEXTLINE) or not lines or lines[-1].para != para:
            lines.append(Line([word], block, para))
        else:
            lines[-1].words.append(word)
    return lines


def orientation(img: Image.Image) -> tuple[int, float] | None:
    """Tesseract's orientation guess: (degrees to rotate counter-clockwise, confidence)."""
    if "osd" not in available_languages():
        return None
    if _binding() is None:
        return _orientation_cli(img)
    with _lock:
        api = _api("osd", PSM_OSD_ONLY)
        api.SetImage(img)
        try:
            res = api.DetectOrientationScript()
        except RuntimeError:
            return None
    if not res:
        return None
    return int(res["orient_deg"]), float(res["orient_conf"])


def _orientation_cli(img: Image.Image) -> tuple[int, float] | None:
    """OSD through the command line (``--psm 0``), for machines without the binding."""
    exe = shutil.which("tesseract")
    if exe is None:
        return None
    with tempfile.TemporaryDirectory(prefix="textsieve-osd-") as tmp:
        path = os.path.join(tmp, "page.png")
        img.save(path, dpi=(150, 150))
        proc = subprocess.run([exe, path, "stdout", "--psm", "0"], capture_output=True,
                              check=False, env={**os.environ, "OMP_THREAD_LIMIT": "1"})
    out = proc.stdout.decode("utf-8", "replace")
    deg = re.search(r"Orientation in degrees:\s*(\d+)", out)
    conf = re.search(r"Orientation confidence:\s*([\d.]+)", out)
    if not deg or not conf:
        return None
    return int(deg.group(1)), float(conf.group(1))


def _recognize_cli(img: Image.Image, lang: str, *, dpi: int, want_pdf: bool,
                   psm: int) -> Recognized:
    """The fallback: the tesseract command, one process per page (slower to start)."""
    exe = shutil.which("tesseract")
    if exe is None:
        raise ExtractionError(ErrorKind.MISSING_TOOL,
                              "tesseract is not installed (Debian: tesseract-ocr)")
    with tempfile.TemporaryDirectory(prefix="textsieve-ocr-") as tmp:
        image_path = os.path.join(tmp, "page.png")
        img.save(image_path, dpi=(dpi, dpi))
        base = os.path.join(tmp, "page")
        args = [exe, image_path, base, "-l", lang, "--psm", str(psm), "--dpi", str(dpi)]
        if want_pdf:
            args += ["-c", "textonly_pdf=1"]
        args += ["txt", "tsv"] + (["pdf"] if want_pdf else [])
        proc = subprocess.run(args, capture_output=True, check=False,
                              env={**os.environ, "OMP_THREAD_LIMIT": "1"})
        if proc.returncode != 0:
            raise ExtractionError(ErrorKind.CORRUPT, "tesseract failed: "
                                  + proc.stderr.decode("utf-8", "replace").strip()[:200])
        text = Path(base + ".txt").read_text("utf-8", errors="replace")
        pdf = Path(base + ".pdf").read_bytes() if want_pdf else None
        tsv = Path(base + ".tsv")
        return Recognized(text, _tsv_confidence(tsv), pdf, _tsv_lines(tsv))


def _tsv_lines(path: Path) -> list[Line] | None:
    """The words of tesseract's TSV output by line (what ``_lines`` gets from the API)."""
    lines: list[Line] = []
    key = None
    try:
        rows = path.read_text("utf-8", errors="replace").splitlines()[1:]
    except OSError:
        return None
    for row in rows:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5" or not cols[11].strip():
            continue
        try:
            block, para, line = int(cols[2]), int(cols[3]), int(cols[4])
            left, top, width, height = (int(c) for c in cols[6:10])
            conf = float(cols[10])
        except ValueError:
            return None
        word = Word(cols[11].strip(), conf, (left, top, left + width, top + height))
        if (block, para, line) != key:
            lines.append(Line([word], block, block * 10_000 + para))
            key = (block, para, line)
        else:
            lines[-1].words.append(word)
    return lines


def _tsv_confidence(path: Path) -> float:
    """Mean word confidence from tesseract's TSV output (what MeanTextConf gives)."""
    confs = []
    try:
        for line in path.read_text("utf-8", errors="replace").splitlines()[1:]:
            cols = line.split("\t")
            if len(cols) >= 12 and cols[11].strip():
                conf = float(cols[10])
                if conf >= 0:
                    confs.append(conf)
    except (OSError, ValueError):
        return 0.0
    return sum(confs) / len(confs) if confs else 0.0
