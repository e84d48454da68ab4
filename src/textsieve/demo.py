"""`textsieve demo`: the whole job on the bundled samples, with no internet.

It serves the small bundled web site (``samples/site``) on 127.0.0.1, writes the bundled
mailbox of links (``samples/mail/links.mbox.in``) with that address filled in, and runs
``textsieve run`` over the sample documents and the mailbox into one archive: documents of
every format, a scanned notice (OCR), and the mailed links fetched, cleaned and
de-duplicated, each linked to the mails that named it. Then it searches the archive.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import sys
import threading
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DEMO_PORT = 8077  # a fixed port keeps the demo's URLs (and so its archive keys) stable


def samples_dir() -> Path:
    """The bundled samples: beside the source tree (a checkout) or the current folder."""
    for base in (Path(__file__).resolve().parents[2], Path.cwd()):
        if (base / "samples" / "site").is_dir():
            return base / "samples"
    raise FileNotFoundError("samples/ not found: run the demo from a textsieve checkout")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _free_port(preferred: int) -> int:
    with contextlib.closing(socket.socket()) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
        try:
            s.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])


def main(archive: str, workers: int = 0, *, command: Callable[[list[str]], int]) -> int:
    """Serve the samples, run ``textsieve run`` over them into ``archive`` and search it.
    ``command`` is the textsieve command's ``main`` (the caller's: this module sits
    beside the command and does not import it)."""
    samples = samples_dir()
    port = _free_port(DEMO_PORT)
    handler = functools.partial(_Quiet, directory=str(samples / "site"))
    httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    site = f"http://127.0.0.1:{port}"
    work = Path(archive).resolve().parent / "textsieve-demo"
    work.mkdir(exist_ok=True)
    mbox = work / "links.mbox"
    template = (samples / "mail" / "links.mbox.in").read_text(encoding="utf-8")
    mbox.write_text(template.replace("{SITE}", site), encoding="utf-8")
    print(f"demo: serving {samples / 'site'} at {site}; mailbox {mbox}", file=sys.stderr)
    try:
        # The demo's site is on this machine, which textsieve refuses to fetch from unless
        # told: only the demo server's own address is opened.
        args = ["run", str(samples / "docs"), f"mbox:{mbox}", "--archive", archive,
                "--host-delay", "0.05", "--allow-cidr", "127.0.0.1/32"]
        if workers:
            args += ["-j", str(workers)]
        code = command(args)
        for query in ("heron", "nettle soup", "ringing"):
            print(f"\n$ textsieve search {query!r}")
            command(["search", query, "--archive", archive, "-n", "5"])
    finally:
        httpd.shutdown()
    return code
