"""Every option reachable from the command line, a config file and the API, from one
definition (``options.KNOBS``); the password kept out of ``ps``."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from reportlab.lib.pdfencrypt import StandardEncryption
from reportlab.pdfgen import canvas

from textsieve import Options, OptionsError
from textsieve.cli import _options, build_parser
from textsieve.errors import ExitCode
from textsieve.options import KNOBS, GiB, MiB, field_names, flag_of, load_config

DEFAULTS = Options()


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", *args], capture_output=True,
                          text=True, timeout=120, check=False, cwd=cwd,
                          env={**os.environ, **(env or {})})


def other_value(name: str) -> tuple[Any, Any]:
    """A value for field ``name`` as a person writes it (CLI/config units) that differs
    from the default, and what it must become in Options."""
    default = getattr(DEFAULTS, name)
    knob = KNOBS[name]
    if knob.choices:
        choice = next(c for c in knob.choices if c != default)
        return choice, choice
    if isinstance(default, bool):
        return (not default), (not default)
    if knob.size:
        mib = default // MiB + 7
        return mib, mib * MiB
    if name == "allow_cidrs":
        return ["10.0.0.0/8", "192.168.1.0/24"], ("10.0.0.0/8", "192.168.1.0/24")
    if isinstance(default, tuple):
        return ["a.example", "b.example"], ("a.example", "b.example")
    if isinstance(default, int):
        return default + 3, default + 3
    if isinstance(default, float):
        return default + 1.5, default + 1.5
    if name == "ocr_lang":
        return "eng+deu", "eng+deu"
    return f"value-of-{name}", f"value-of-{name}"


FIELDS = list(field_names())


def test_every_field_has_a_knob() -> None:
    # Fails when someone adds an Options field without saying how a person sets it.
    assert sorted(set(FIELDS) - set(KNOBS)) == []
    assert sorted(set(KNOBS) - set(FIELDS)) == []


def _as_flag(name: str, written: Any) -> list[str]:
    if isinstance(written, bool):
        return [flag_of(name) if written else "--no-" + flag_of(name)[2:]]
    if isinstance(written, list):
        return [flag_of(name), ",".join(written)]
    return [flag_of(name), str(written)]


@pytest.mark.parametrize("name", FIELDS)
def test_every_field_is_a_run_flag(name: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no textsieve.toml of the working folder
    monkeypatch.delenv("TEXTSIEVE_PASSWORD", raising=False)
    written, expected = other_value(name)
    ns = build_parser().parse_args(["run", *_as_flag(name, written), "x"])
    got = getattr(_options(ns), name)
    if KNOBS[name].path:
        expected = str(written)  # a flag's path is taken as given (the CLI makes it absolute)
    assert got == expected


def test_familiar_flags_keep_working(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    ns = build_parser().parse_args([
        "run", "--ignore-robots", "--no-libreoffice", "--allow-cidr", "127.0.0.1/32",
        "--allow-cidr", "10.0.0.0/8,192.168.0.0/16", "-j", "2", "--memory-limit", "512",
        "--lang", "eng+deu", "--host-delay", "0.1", "--searchable-pdf", "out", "x"])
    opts = _options(ns)
    assert (opts.obey_robots, opts.libreoffice, opts.workers) == (False, False, 2)
    assert opts.allow_cidrs == ("127.0.0.1/32", "10.0.0.0/8", "192.168.0.0/16")  # they add up
    assert (opts.memory_limit, opts.ocr_lang, opts.per_host_delay) == (512 * MiB, "eng+deu",
                                                                       0.1)
    assert opts.searchable_pdf_dir == "out"


@pytest.mark.parametrize("name", FIELDS)
def test_every_field_is_a_config_key(name: str, tmp_path: Path) -> None:
    written, expected = other_value(name)
    toml = tmp_path / "textsieve.toml"
    value = (repr(written).lower() if isinstance(written, bool) else
             "[" + ", ".join(f'"{x}"' for x in written) + "]" if isinstance(written, list)
             else f'"{written}"' if isinstance(written, str) else repr(written))
    toml.write_text(f"{name} = {value}\n")
    got = Options(**load_config(toml))
    if KNOBS[name].path:
        expected = str(tmp_path / written)  # relative to the config file's folder
    assert getattr(got, name) == expected


def test_help_lists_every_flag_and_every_kind_of_source() -> None:
    r = cli("run", "--help")
    assert r.returncode == 0, r.stderr
    for name in FIELDS:
        assert flag_of(name) in r.stdout, name
    for kind in ("https://", "urls:", "mbox:", "maildir:", "eml:", "imap://", "gmail:"):
        assert kind in r.stdout, kind
    assert "textsieve.toml" in r.stdout


def test_api_takes_the_same_names() -> None:
    opts = Options.from_mapping({"max_body": "2GiB", "hn_hosts": ["x.example"], "retries": 1,
                                 "memory_limit": 512 * MiB})
    assert (opts.max_body, opts.hn_hosts, opts.retries) == (2 * GiB, ("x.example",), 1)
    assert opts.memory_limit == 512 * MiB  # a bare number is bytes, as in Options(...)
    with pytest.raises(OptionsError, match="unknown option 'max_bodies'"):
        Options.from_mapping({"max_bodies": 1})
    with pytest.raises(OptionsError, match="retries"):
        Options.from_mapping({"retries": "many"})


@pytest.fixture
def two_kib(tmp_path: Path) -> Path:
    f = tmp_path / "notes.txt"
    f.write_text("heron " * 400)  # 2400 bytes
    return f


def test_config_in_the_working_folder_and_flags_override(tmp_path: Path, two_kib: Path) -> None:
    (tmp_path / "textsieve.toml").write_text('max_file_size = "1KiB"\n')
    r = cli("extract", "-f", "json", str(two_kib), cwd=tmp_path)
    assert r.returncode == ExitCode.FAILED and '"too_large"' in r.stdout, r.stdout
    r = cli("extract", "--max-file-size", "1", str(two_kib), cwd=tmp_path)  # 1 MiB
    assert r.returncode == 0 and "heron" in r.stdout, r.stderr
    elsewhere = tmp_path / "cfg" / "strict.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text("max_file_size = '2KiB'\n")
    r = cli("extract", "--config", str(elsewhere), str(two_kib))
    assert r.returncode == ExitCode.FAILED and "too_large" in r.stderr


def test_unknown_config_key_is_a_one_line_error(tmp_path: Path, two_kib: Path) -> None:
    (tmp_path / "textsieve.toml").write_text("max_file_sise = 10\n")
    r = cli("extract", str(two_kib), cwd=tmp_path)
    assert r.returncode == ExitCode.USAGE
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "textsieve.toml" in r.stderr and "max_file_sise" in r.stderr
    assert "did you mean 'max_file_size'" in r.stderr
    (tmp_path / "textsieve.toml").write_text("ocr_dpi = 'high'\n")
    r = cli("extract", str(two_kib), cwd=tmp_path)
    assert r.returncode == ExitCode.USAGE and "ocr_dpi" in r.stderr, r.stderr
    (tmp_path / "textsieve.toml").write_text("ocr_dpi = 10\n")  # parsed, then refused
    r = cli("extract", str(two_kib), cwd=tmp_path)
    assert r.returncode == ExitCode.USAGE and "ocr_dpi must be" in r.stderr, r.stderr
    assert "textsieve.toml" in r.stderr


@pytest.fixture
def locked_pdf(tmp_path: Path) -> Path:
    buf = io.BytesIO()
    c = canvas.Canvas(buf, encrypt=StandardEncryption("s3cret", ownerPassword="owner",
                                                      strength=128))
    c.drawString(72, 720, "locked heron words")
    c.showPage()
    c.save()
    path = tmp_path / "locked.pdf"
    path.write_bytes(buf.getvalue())
    return path


def test_password_from_a_file_the_environment_or_the_config(tmp_path: Path,
                                                            locked_pdf: Path) -> None:
    no_env = {"TEXTSIEVE_PASSWORD": ""}
    r = cli("extract", str(locked_pdf), cwd=tmp_path, env=no_env)
    assert r.returncode == ExitCode.FAILED and "encrypted" in r.stderr
    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    r = cli("extract", "--password-file", str(secret), str(locked_pdf), cwd=tmp_path,
            env=no_env)
    assert r.returncode == 0 and "locked heron words" in r.stdout, r.stderr
    r = cli("extract", str(locked_pdf), cwd=tmp_path, env={"TEXTSIEVE_PASSWORD": "s3cret"})
    assert r.returncode == 0 and "locked heron words" in r.stdout, r.stderr
    (tmp_path / "textsieve.toml").write_text('password = "s3cret"\n')
    r = cli("extract", str(locked_pdf), cwd=tmp_path, env=no_env)
    assert r.returncode == 0 and "locked heron words" in r.stdout, r.stderr
    r = cli("extract", "--password-file", str(tmp_path / "missing"), str(locked_pdf),
            env=no_env)
    assert r.returncode == ExitCode.USAGE and "--password-file" in r.stderr
