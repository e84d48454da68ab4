"""Options are checked when they are made: a typo fails at once, it never means something else."""

from __future__ import annotations

import subprocess
import sys

import pytest

import textsieve
from textsieve import Options, OptionsError


@pytest.mark.parametrize("changes, named", [
    ({"ocr": "off"}, "ocr must be one of auto, always, never"),
    ({"html": "article"}, "html must be one of auto, main, full, sieve"),
    ({"ocr_lang": ""}, "ocr_lang"),
    ({"timeout": 0}, "timeout"),
    ({"fetch_timeout": -1.0}, "fetch_timeout"),
    ({"memory_limit": 1 << 20}, "memory_limit must be 0 \\(no cap\\) or at least"),
    ({"memory_limit": -1}, "memory_limit"),
    ({"workers": -1}, "workers"),
    ({"max_members": 0}, "max_members"),
    ({"ocr_dpi": 10}, "ocr_dpi"),
    ({"retries": "3"}, "retries"),
])
def test_a_value_no_run_could_use_is_refused(changes: dict, named: str) -> None:
    with pytest.raises(OptionsError, match=named):
        Options(**changes)
    with pytest.raises(OptionsError, match=named):  # derived options are checked as well
        Options().with_(**changes)


def test_extract_refuses_a_mistyped_mode_before_reading_anything() -> None:
    # "off" used to pass unchecked and was read as "not never": images went to OCR.
    with pytest.raises(OptionsError, match="'off'"):
        textsieve.extract(b"\x89PNG\r\n\x1a\n" + b"\0" * 64, ocr="off")
    assert isinstance(OptionsError("x"), ValueError)  # callers catching ValueError see it


@pytest.mark.parametrize("ocr", ["auto", "always", "never"])
@pytest.mark.parametrize("html", ["auto", "main", "full", "sieve"])
def test_every_documented_mode_is_accepted(ocr: str, html: str) -> None:
    opts = Options(ocr=ocr, html=html, workers=0, max_depth=0, retries=0, backoff=0)
    assert (opts.ocr, opts.html) == (ocr, html)


def test_cli_reports_a_bad_value_as_a_usage_error(tmp_path) -> None:
    f = tmp_path / "a.txt"
    f.write_text("words\n")
    r = subprocess.run([sys.executable, "-m", "textsieve", "extract", "--memory-limit", "1",
                        str(f)], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2
    assert "--memory-limit" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "textsieve", "extract", "--lang", "", str(f)],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2
    assert "ocr_lang" in r.stderr and "Traceback" not in r.stderr


def test_keyword_options_apply_to_each_call_on_their_own(tmp_path) -> None:
    # Derived options are reused between calls with the same keywords; a call must still
    # get exactly its own, whatever came before (and whatever ``options=`` it passes).
    from PIL import Image

    png = tmp_path / "blank.png"
    Image.new("L", (40, 20), 255).save(png)
    assert textsieve.extract(png, ocr="never").error.kind == "needs_ocr"
    assert textsieve.extract(png, ocr="auto").status == "empty"  # OCRed: no text
    assert textsieve.extract(png, ocr="never").error.kind == "needs_ocr"
    base = Options(ocr="never")
    assert textsieve.extract(png, options=base).error.kind == "needs_ocr"
    assert textsieve.extract(png, options=base, ocr="auto").status == "empty"


def test_memory_limit_zero_means_no_cap(corpus) -> None:
    # 0 switches the cap off (the worker pool always read it so); the workbook helper
    # process, which caps itself, must honour it too rather than cap at nothing.
    opts = Options(memory_limit=0)
    doc = textsieve.extract(corpus / "xls" / "poi__florida_data.ashx.xls", options=opts)
    assert doc.status == "ok", doc.error
    assert doc.text.strip()


def test_secrets_never_show_in_a_repr() -> None:
    """A password in a log line or a traceback's locals is a leaked password."""
    from textsieve.server.guard import Policy
    from textsieve.server.service import ServerConfig

    opts = Options(password="pdf-secret-1", imap_password="imap-secret-2", retries=1)
    token = "tok-secret-3-abcdefghijkl"
    shown = repr(opts) + repr(ServerConfig(token=token)) + repr(Policy(token=token)) + \
        repr(opts.mail) + repr(opts.extraction) + str(opts)
    assert "retries=1" in shown  # the rest is shown
    assert not any(s in shown for s in ("pdf-secret-1", "imap-secret-2", token)), shown


def test_options_are_composed_per_area_and_read_flat() -> None:
    opts = Options(ocr="never", retries=0, imap_password="x", topics_k=4, workers=2)
    assert (opts.extraction.ocr, opts.fetch.retries, opts.mail.imap_password) == \
        ("never", 0, "x")
    assert (opts.enrich.topics_k, opts.run.workers) == (4, 2)
    assert (opts.ocr, opts.retries, opts.topics_k) == ("never", 0, 4)
    assert opts.with_(ocr="auto").fetch is opts.fetch  # a change remakes its part only
    assert Options.compose(extraction=opts.extraction) == Options(ocr="never")
    assert hash(opts) == hash(Options(ocr="never", retries=0, imap_password="x", topics_k=4,
                                      workers=2))
    with pytest.raises(TypeError, match="colour"):
        Options(colour="red")


def test_a_worker_is_given_the_extraction_options_alone(tmp_path, monkeypatch) -> None:
    """Only the extraction part of the options travels to a worker process: no mail
    password, no fetching setting; the PDF password, which reading needs, does."""
    from textsieve import detection as d
    from textsieve.core import extract_many
    from textsieve.extractors import REGISTRY

    monkeypatch.setitem(REGISTRY, d.TEXT, ["fault_plugins:tell_options"])
    f = tmp_path / "note.txt"
    f.write_text("words\n")
    opts = Options(imap_password="imap-secret", retries=7, ocr="never", password="pw",
                   workers=1)
    [doc] = list(extract_many([str(f)], opts))
    assert doc.text.strip() == "imap=None retries=3 ocr=never password=pw", doc
