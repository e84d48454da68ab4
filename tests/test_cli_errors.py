"""Errors outside extraction as a user meets them on the command line: one line
``textsieve: message``, a typed exit code, a traceback only with ``--debug``; and archive
content that cannot drive the terminal (escape sequences stripped from what is shown)."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dovecot import DOVECOT, Dovecot, start_dovecot
from textsieve.errors import ExitCode


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", *args], capture_output=True,
                          text=True, timeout=120, check=False, cwd=cwd,
                          env={**os.environ, **(env or {})})


def one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    """The stderr of a failed command: one ``textsieve:`` line, no traceback."""
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("textsieve: "), r.stderr
    return lines[0]


def closed_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_imap_connection_refused_is_one_line_exit_3(tmp_path: Path) -> None:
    spec = f"imap://me@127.0.0.1:{closed_port()}/Links?tls=none"
    r = run("run", "-q", "--archive", str(tmp_path / "a.db"), spec,
            env={"HOME": str(tmp_path), "TEXTSIEVE_IMAP_PASSWORD": "x"})
    line = one_line_error(r)
    assert r.returncode == ExitCode.UNREACHABLE
    assert "cannot connect to IMAP server" in line and "refused" in line.lower()


@pytest.mark.skipif(DOVECOT is None, reason="the dovecot binary is not installed")
def test_imap_login_refused_is_one_line_exit_4(tmp_path: Path) -> None:
    server: Dovecot = start_dovecot()
    secret = tmp_path / "imap-password"
    secret.write_text(server.password + "\n")
    try:
        refused = run("run", "-q", "--archive", str(tmp_path / "a.db"), server.url("INBOX"),
                      env={"HOME": str(tmp_path), "TEXTSIEVE_IMAP_PASSWORD": "wrong-password"})
        # The right password from a file (not the command line, where ps shows it) wins
        # over the environment's.
        read = run("run", "-q", "--archive", str(tmp_path / "a.db"), server.url("INBOX"),
                   "--imap-password-file", str(secret),
                   env={"HOME": str(tmp_path), "TEXTSIEVE_IMAP_PASSWORD": "wrong-password"})
    finally:
        server.stop()
    line = one_line_error(refused)
    assert refused.returncode == ExitCode.AUTH
    assert f"IMAP login as {server.user}" in line and "refused" in line
    assert read.returncode == 0, read.stderr


@pytest.fixture
def no_gmail_token(tmp_path: Path) -> Iterator[dict[str, str]]:
    yield {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def test_gmail_without_token_is_one_line_exit_4(tmp_path: Path,
                                                no_gmail_token: dict[str, str]) -> None:
    r = run("run", "-q", "--archive", str(tmp_path / "a.db"), "gmail:Links",
            env=no_gmail_token)
    line = one_line_error(r)
    assert r.returncode == ExitCode.AUTH
    assert "no Gmail token" in line and "textsieve gmail-auth" in line


def test_debug_shows_the_traceback(tmp_path: Path, no_gmail_token: dict[str, str]) -> None:
    for args in (["--debug", "run"], ["run", "--debug"]):  # before or after the command
        r = run(*args, "-q", "--archive", str(tmp_path / "a.db"), "gmail:Links",
                env=no_gmail_token)
        assert r.returncode == ExitCode.AUTH
        assert "Traceback (most recent call last)" in r.stderr
        assert "MailAuthError" in r.stderr
        assert r.stderr.strip().splitlines()[-1].startswith("textsieve: no Gmail token")


def test_archive_that_is_not_ours_is_one_line(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.db"
    bogus.write_text("my notes, not an archive\n")
    r = run("stats", "--archive", str(bogus))
    one_line_error(r)
    assert r.returncode == ExitCode.FAILED
    assert bogus.read_text() == "my notes, not an archive\n"


HOSTILE_TITLE = "Herons\x1b]0;pwned\x07 and \x1b[2Jegrets\x9b31m"
HOSTILE_BODY = "Wading birds\x1b[31m of the marsh\rfake line\x1b]52;c;ZXZpbA==\x07 heron."


@pytest.fixture
def hostile_archive(tmp_path: Path) -> Path:
    page = tmp_path / "docs" / "page.html"
    page.parent.mkdir()
    page.write_text(f"<html><head><title>{HOSTILE_TITLE}</title></head><body><p>"
                    f"{HOSTILE_BODY}</p></body></html>", encoding="utf-8")
    archive = tmp_path / "a.db"
    r = run("run", "-q", "--archive", str(archive), str(page.parent))
    assert r.returncode == 0, r.stderr
    return archive


def _no_controls(text: str) -> None:
    bad = [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]
    assert not bad, repr(text)


def test_search_and_show_strip_escape_sequences(hostile_archive: Path) -> None:
    r = run("search", "heron", "--archive", str(hostile_archive))
    assert r.returncode == 0, r.stderr
    _no_controls(r.stdout)
    assert "Herons and egrets" in r.stdout  # the words stay, the sequences go
    assert "pwned" not in r.stdout  # an OSC string is taken out whole, not its ESC only
    item = r.stdout.split("]")[0].lstrip("[")
    shown = run("show", item, "--archive", str(hostile_archive))
    assert shown.returncode == 0, shown.stderr
    _no_controls(shown.stdout)
    assert "Wading birds of the marsh" in shown.stdout and "heron." in shown.stdout
    stats = run("stats", "--archive", str(hostile_archive))
    _no_controls(stats.stdout)
    exact = json.loads(run("show", item, "-f", "json", "--archive",
                           str(hostile_archive)).stdout)
    assert "\x1b[31m" in exact["text"]  # JSON keeps the text as it was: json escapes it


def test_user_mistakes_that_were_internal_errors_are_usage_errors(tmp_path: Path,
                                                                  hostile_archive: Path
                                                                  ) -> None:
    # Each of these used to end as an OverflowError or FileExistsError traceback.
    afile = tmp_path / "not-a-folder"
    afile.write_text("x")
    r = run("run", "-q", "--archive", str(tmp_path / "b.db"), "--searchable-pdf", str(afile),
            str(hostile_archive))
    assert r.returncode == ExitCode.USAGE and "--searchable-pdf" in one_line_error(r)
    for args in (["show", "99999999999999999999999"], ["search", "heron", "-n", "1" + "0" * 30]):
        r = run(*args, "--archive", str(hostile_archive))
        assert r.returncode == ExitCode.USAGE, r.stderr
        assert "Traceback" not in r.stderr and "out of range" in r.stderr


@pytest.mark.parametrize("args", [["summarize"], ["keyphrases"], ["related"],
                                  ["summarize", "--all", "-n", "0"]])
def test_enrich_commands_need_ids_or_all(hostile_archive: Path, args: list[str]) -> None:
    pytest.importorskip("sklearn")  # the commands first check the topics extra
    r = run(*args, "--archive", str(hostile_archive))
    assert r.returncode == ExitCode.USAGE
    assert args[0] in one_line_error(r)


def test_a_bug_outside_extraction_is_one_line_exit_70(hostile_archive: Path, monkeypatch,
                                                      capsys) -> None:
    # A fault injected where no error is expected (like OCRmyPDF's crashing plugins): the
    # user gets one line that says it is a bug and how to see more.
    from textsieve.archive.store import Archive
    from textsieve.cli import main

    def broken(self: Archive, item_id: int) -> None:
        raise RuntimeError("injected fault")

    monkeypatch.setattr(Archive, "document", broken)
    assert main(["show", "1", "--archive", str(hostile_archive)]) == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert err == ("textsieve: internal error: RuntimeError: injected fault (run with --debug "
                   "for the traceback)\n")
    monkeypatch.setenv("TEXTSIEVE_DEBUG", "")  # --debug sets it: restored after the test
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        assert main(["--debug", "show", "1", "--archive", str(hostile_archive)]) == 70
    finally:  # --debug configured this process's logging: leave it as it was
        root.setLevel(level)
        root.handlers[:] = handlers
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in broken" in err


def test_extract_cleans_only_what_goes_to_a_terminal(tmp_path: Path) -> None:
    f = tmp_path / "note.txt"
    f.write_bytes(b"grey heron\x1b[2J stands\x1b]0;owned\x07 still\n")
    piped = run("extract", str(f))
    assert piped.returncode == 0 and "\x1b[2J" in piped.stdout  # a pipe gets the exact text
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "textsieve", "extract", str(f)],
                              stdout=follower, stderr=subprocess.PIPE, timeout=120,
                              check=False)
        os.close(follower)
        follower = -1
        out = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's other side is closed and drained
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    assert proc.returncode == 0, proc.stderr
    text = out.decode()
    assert "grey heron stands still" in text and "\x1b" not in text and "owned" not in text


def test_ray_without_a_cluster_points_at_address_local(tmp_path: Path) -> None:
    """`run --executor ray` where no cluster runs says how to get one for this machine
    (it said only "no Ray cluster at auto")."""
    pytest.importorskip("ray")
    from ray._private.services import find_gcs_addresses

    if find_gcs_addresses():
        pytest.skip("a Ray cluster runs on this machine: `auto` would find it")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(TMPDIR=str(tmp_path), RAY_TMPDIR=str(tmp_path))  # no address file there
    r = subprocess.run([sys.executable, "-m", "textsieve", "run", "--executor", "ray",
                        str(Path(__file__).parents[1] / "samples" / "docs" / "memo.rtf"),
                        "--archive",
                        str(tmp_path / "a.db"), "-q"], env=env, capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "no Ray cluster at auto" in r.stderr and "--address local" in r.stderr, r.stderr
