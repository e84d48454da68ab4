"""The ``textsieve`` command.

Exit codes: 0 every input extracted (``ok`` or ``empty``); 1 at least one input failed
(its error is printed to stderr and, with ``--format json``, in its record); 2 usage error.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from collections.abc import Iterator

from . import __version__
from .model import Document, Status
from .options import MiB, Options

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _expand(args: list[str]) -> Iterator[str]:
    """Files, folders (walked, sorted, hidden entries skipped) and globs, in order."""
    for a in args:
        if a == "-":
            yield a
        elif os.path.isdir(a):
            for root, dirs, files in os.walk(a):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for f in sorted(files):
                    if not f.startswith("."):
                        yield os.path.join(root, f)
        elif not os.path.exists(a) and glob.has_magic(a):
            yield from sorted(glob.glob(a, recursive=True))
        else:
            yield a


def _options(ns: argparse.Namespace) -> Options:
    return Options(
        password=ns.password,
        timeout=ns.timeout,
        memory_limit=ns.memory_limit * MiB,
        workers=ns.jobs,
        comments=ns.comments,
        libreoffice=not ns.no_libreoffice,
    )


def _add_extract_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-j", "--jobs", type=int, default=0,
                   help="files extracted in parallel (default: number of cores)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds allowed per file before it is stopped (default 120)")
    p.add_argument("--memory-limit", type=int, default=4096, metavar="MB",
                   help="memory cap per worker process in MiB (default 4096)")
    p.add_argument("--password", help="password for encrypted PDF/Office files")
    p.add_argument("--comments", action="store_true", help="include document comments")
    p.add_argument("--no-libreoffice", action="store_true",
                   help="never fall back to LibreOffice for legacy formats")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="textsieve", description="Clean, searchable text from any pile of documents.")
    parser.add_argument("--version", action="version", version=f"textsieve {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("extract", help="print the text of files (folders and globs expand)")
    p.add_argument("inputs", nargs="+", metavar="FILE", help="files, folders, globs, or -")
    p.add_argument("-f", "--format", choices=["text", "markdown", "json"], default="text")
    _add_extract_options(p)

    p = sub.add_parser("detect", help="print the MIME type of files, decided by content")
    p.add_argument("inputs", nargs="+", metavar="FILE")
    return parser


def _read_stdin() -> bytes:
    return sys.stdin.buffer.read()


def cmd_extract(ns: argparse.Namespace) -> int:
    from .run.pool import extract_many

    options = _options(ns)
    paths = list(_expand(ns.inputs))
    if not paths:
        print("textsieve: no input files", file=sys.stderr)
        return EXIT_USAGE
    objs = [_read_stdin() if p == "-" else p for p in paths]
    names = ["<stdin>" if p == "-" else None for p in paths]
    many = len(paths) > 1
    failed = 0
    out = sys.stdout
    workers = min(options.worker_count, len(paths))
    for path, doc in zip(paths, extract_many(objs, options, names=names, workers=workers),
                         strict=True):
        if doc.status is Status.ERROR:
            failed += 1
            assert doc.error is not None
            print(f"textsieve: {path}: {doc.error.kind}: {doc.error.message}", file=sys.stderr)
        _emit(out, path, doc, ns.format, many)
    out.flush()
    return EXIT_FAILED if failed else EXIT_OK


def _emit(out, path: str, doc: Document, fmt: str, many: bool) -> None:
    if fmt == "json":
        record = {"path": path, **doc.to_dict()}
        out.write(json.dumps(record, ensure_ascii=False, indent=None if many else 2) + "\n")
        return
    body = doc.full_text(markdown=fmt == "markdown")
    if many:
        header = f"# {path}" if fmt == "markdown" else f"==> {path} <=="
        out.write(f"{header}\n\n")
    if body:
        out.write(body.rstrip("\n") + "\n")
    if many:
        out.write("\n")


def cmd_detect(ns: argparse.Namespace) -> int:
    from . import _source
    from .detection import detect

    failed = 0
    for path in _expand(ns.inputs):
        try:
            src = _source(sys.stdin.buffer.read() if path == "-" else path, None, Options())
            det = detect(src)
        except OSError as exc:
            print(f"textsieve: {path}: {exc.strerror or exc}", file=sys.stderr)
            failed += 1
            continue
        note = f"  ({det.note})" if det.note else ""
        print(f"{path}: {det.mime}  [{det.how}]{note}")
    return EXIT_FAILED if failed else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    if getattr(ns, "jobs", 0) < 0 or getattr(ns, "timeout", 1) <= 0:
        parser.error("--jobs must be >= 0 and --timeout > 0")
    handler = {"extract": cmd_extract, "detect": cmd_detect}[ns.command]
    try:
        return handler(ns)
    except BrokenPipeError:  # `textsieve extract ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

