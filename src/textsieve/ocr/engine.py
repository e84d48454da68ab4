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


_engines: dict[tuple[str, int], Any] = {}
_lock = threading.Lock()


def _api(lang: str, psm: int) -> Any:
    """A warm tesserocr engine for these languages and page-segmentation mode."""
    key = (lang, psm)
    api = _engines.get(key)
    if api is None:
        tesserocr = _binding()
        try:
            api = tesserocr.PyTessBaseAPI(path=(tessdata_dir() or "") + "/", lang=lang,
                                          psm=psm)
        except RuntimeError as exc:
            raise ExtractionError(ErrorKind.MISSING_TOOL,
                                  f"tesseract cannot load languages {lang!r}: {exc}") from exc
        _engines[key] = api
    return api


PSM_AUTO = 3  # fully automatic page segmentation, no OSD
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
            text = api.GetUTF8Text()
            return Recognized(text, float(api.MeanTextConf()))
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
            return Recognized(text, conf, Path(base + ".pdf").read_bytes())


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
        return Recognized(text, _tsv_confidence(Path(base + ".tsv")), pdf)


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
