"""The ``textsieve`` command.

Exit codes (``errors.ExitCode``): 0 every input extracted (``ok`` or ``empty``); 1 at least
one input failed (its error is printed to stderr and, with ``--format json``, in its record),
or the archive could not be used; 2 usage error (arguments, options, config, source spec);
3 a mail server or API unreachable; 4 credentials refused or missing; 70 internal error.
Anything but an extraction failure is a ``TextsieveError`` printed as one line; a traceback
only with ``--debug``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import signal
import sys
from collections.abc import Callable, Collection, Iterator
from typing import Any, NoReturn

from . import __version__
from .errors import ExitCode, TextsieveError, UsageError
from .model import Document, ErrorInfo, Status
from .options import (
    CONFIG_FILE,
    GROUPS,
    KNOBS,
    MiB,
    Options,
    convert_value,
    field_names,
    flag_of,
    parse_size,
    resolve,
)
from .terminal import for_terminal

EXIT_OK, EXIT_FAILED, EXIT_USAGE = ExitCode.OK, ExitCode.FAILED, ExitCode.USAGE
SOURCES_HELP = """\
sources:
  FILE, FOLDER, 'GLOB'          documents (folders walked, hidden entries skipped)
  https://...                   a web page, fetched politely
  urls:FILE                     a list of URLs, one a line (a file of URLs or a CSV with a
                                url column is recognised without the prefix)
  mbox:FILE  maildir:DIR  eml:DIR
                                every link mailed in a local mailbox
  imap://user@host[:port]/Folder[?tls=ssl|starttls|none]
                                an IMAP folder (password: --imap-password-file,
                                TEXTSIEVE_IMAP_PASSWORD, ~/.netrc or a prompt)
  gmail:LABEL                   a Gmail label (after `textsieve gmail-auth`)
  bookmarks:FILE                the links of a bookmark or read-later export: a browser's
                                bookmarks.html, places.sqlite or Bookmarks JSON, Pocket,
                                Instapaper, Omnivore, Pinboard (folders, tags as labels)

options: sizes (MiB) also take a unit: 512MiB, 2GiB. Every option can also be set in a
config file, textsieve.toml in the working folder or --config FILE, as `name = value` with
the option's name (max_body = 50, ocr_lang = "eng+deu", hn_hosts = ["news.ycombinator.com"]);
flags override it."""
EXIT_TERMINATED = 128 + signal.SIGTERM  # what a shell reports for a process SIGTERM ended


class Terminated(KeyboardInterrupt):
    """SIGTERM during ``run``, raised where Ctrl-C's KeyboardInterrupt would be, so the run
    stops the same clean way: the batch in hand is committed, the run marked interrupted,
    the workers stopped."""


def _on_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
    raise Terminated()


def _expand(args: list[str]) -> Iterator[tuple[str, ErrorInfo | None]]:
    """Files, folders (walked, sorted, hidden entries skipped) and globs, in order, each
    with why it cannot be read when that is known without opening it (a symlink loop, a
    pipe or a device found in a folder or by a glob: ``source.path_problem``)."""
    from .bytesource import path_problem, walk

    for a in args:
        if a == "-":
            yield a, None
        elif os.path.isdir(a):
            yield from walk(a)
        elif not os.path.lexists(a) and any(c in a for c in "*?["):  # glob.has_magic
            import glob  # here: a command given plain file names does not load it

            for p in sorted(glob.glob(a, recursive=True)):
                if not os.path.isdir(p):
                    yield p, path_problem(p)
        else:
            yield a, path_problem(a, named=True)


def _options(ns: argparse.Namespace) -> Options:
    """The command's Options (``options.resolve``: defaults < config file < environment <
    flags): the flags given (a flag not given is None and changes nothing) and the secret
    files named (``--password-file``)."""
    given = {name: tuple(v) if isinstance(v, list) else v for name in field_names()
             if (v := getattr(ns, name, None)) is not None}
    files = {name: path for name, knob in KNOBS.items()
             if knob.secret and (path := getattr(ns, f"{name}_file", None))}
    return resolve(flags=given, secret_files=files, config=getattr(ns, "config", None))


def _sqlite_int(text: str) -> int:
    """A whole number SQLite can take (an item id, a limit): a larger one was an
    OverflowError deep in the query, reported as an internal error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"out of range: {text}")
    return value


def _flag_value(name: str, text: str) -> Any:
    try:
        return convert_value(name, text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_option_flags(p: argparse.ArgumentParser, *, run: bool,
                      only: Collection[str] | None = None,
                      choices: dict[str, tuple[str, ...]] | None = None) -> None:
    """The flags of the Options fields, made from ``options.KNOBS`` (help, unit, group),
    with the defaults shown from ``Options`` itself; ``run``: also the fetching and mail
    ones. Every flag defaults to None, so that only what is given overrides the config."""
    defaults = Options()
    groups: dict[str, Any] = {}
    for name in field_names():
        knob = KNOBS.get(name)
        if knob is None or (only is not None and name not in only) or (
                knob.run_only and not run):
            continue
        if knob.group not in groups:
            groups[knob.group] = p.add_argument_group(GROUPS[knob.group])
        g = groups[knob.group]
        default = getattr(defaults, name)
        flags = [f for f in (knob.short, flag_of(name)) if f]
        if isinstance(default, bool):
            g.add_argument(*flags, dest=name, default=None,
                           action=argparse.BooleanOptionalAction,
                           help=f"{knob.help} (default: {'yes' if default else 'no'})")
            if knob.off_flag:
                g.add_argument(knob.off_flag, dest=name, default=None, action="store_false",
                               help=f"the same as --no-{flag_of(name)[2:]}")
            continue
        if knob.size:
            shown = f"{default // (1024 * 1024)} MiB"
        elif isinstance(default, tuple):
            shown = ",".join(default)
        else:
            shown = "" if default is None else str(default)
        help_text = (f"{knob.help} (default: {shown})" if shown else knob.help
                     ).replace("%", "%%")
        options = (choices or {}).get(name) or knob.choices or None
        g.add_argument(*flags, dest=name, default=None, metavar=knob.metavar or None,
                       choices=options, type=functools.partial(_flag_value, name),
                       action="extend" if isinstance(default, tuple) else "store",
                       help=help_text)  # a list (tuple field): repeatable, items add up
        if knob.secret:
            g.add_argument(f"{flag_of(name)}-file", dest=f"{name}_file", metavar="FILE",
                           help=f"read the {name.replace('_', ' ')} from the first line of "
                                f"FILE" + (f" (or set {knob.env})" if knob.env else ""))


def _add_config_option(p: argparse.ArgumentParser, *, top: bool = False) -> None:
    p.add_argument("--config", metavar="FILE", default=None if top else argparse.SUPPRESS,
                   help=f"settings file (default: ./{CONFIG_FILE} when it exists)")


class _Help(argparse.HelpFormatter):
    """argparse's help layout with the terminal's width asked once: argparse makes a
    formatter for every argument it adds (to check its metavar), each asking again."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _help_width() if width is None else width)


class _RawHelp(argparse.RawDescriptionHelpFormatter, _Help):
    """The same, with the description and epilog kept as written (``run``'s sources)."""


@functools.cache
def _help_width() -> int:
    """What argparse takes (``shutil.get_terminal_size().columns - 2``), without importing
    shutil (and with it bz2 and lzma) to start a command that prints no help."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


def _fill_extract(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="FILE", help="files, folders, globs, or -")
    p.add_argument("-f", "--format", choices=["text", "markdown", "json"], default="text")
    p.add_argument("--explain", action="store_true",
                   help="with --html sieve: print, instead of the text, an SVG of the page's "
                        "topic score along its blocks with the kept span shaded (one page)")
    _add_config_option(p)
    _add_option_flags(p, run=False)


def _fill_detect(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="FILE")


def _fill_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="files, folders, globs, URLs, urls:FILE, mbox:FILE, maildir:DIR, "
                        "eml:DIR, imap://user@host/Folder, gmail:LABEL (see below)")
    _add_archive_option(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--force", action="store_true", help="extract every item again")
    g.add_argument("--retry-errors", action="store_true",
                   help="only retry items that failed before")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary")
    _add_config_option(p)
    p.add_argument("--enrich", nargs="?", const="all", metavar="KINDS",
                   help="then bring topics, summaries, keyphrases, related items and "
                        "near-duplicates up to date (only new items; KINDS: a comma list "
                        "of those, default all; needs textsieve[topics])")
    _add_option_flags(p, run=True)


def _fill_watch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--every", required=True, metavar="INTERVAL",
                   help="how often to run: 30m, 1h, 90s, 1h30m (a round starts this long "
                        "after the last one started)")
    p.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="stop after N rounds (default: until SIGINT or SIGTERM)")
    _fill_run(p)


def _fill_ocr(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", metavar="IN.pdf")
    p.add_argument("-o", "--output", required=True, metavar="OUT.pdf",
                   help="the searchable PDF to write (the input is never modified)")
    _add_config_option(p)
    _add_option_flags(p, run=False, only={"password", "workers", "ocr", "ocr_lang", "ocr_dpi",
                                          "ocr_page_timeout", "max_image_pixels"},
                      choices={"ocr": ("auto", "always")})


def _fill_demo(p: argparse.ArgumentParser) -> None:
    _add_archive_option(p)
    p.add_argument("-j", "--jobs", type=int, default=0)


def _fill_gmail_auth(p: argparse.ArgumentParser) -> None:
    p.add_argument("--client-id", required=True, help="OAuth client id (installed app)")
    p.add_argument("--client-secret", help="OAuth client secret, if your client has one")
    _add_config_option(p)
    _add_option_flags(p, run=True, only={"gmail_token_file", "gmail_token_url",
                                         "connect_timeout", "read_timeout"})


def _fill_search(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="?", default="",
                   help="words (all must match), or FTS5 syntax: \"a phrase\", OR")
    p.add_argument("-n", "--limit", type=_sqlite_int, default=20)
    p.add_argument("--label", help="only items with this label (a mail label or folder, a "
                                   "bookmark folder or tag; any case); alone: all of them")
    p.add_argument("--lang", metavar="CODE",
                   help="only items in this language (ISO 639-1: de also finds de-AT; "
                        "declared by the document or detected from its text)")
    p.add_argument("--all-duplicates", action="store_true",
                   help="list near-duplicates of a hit as hits of their own")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--gone", dest="source_state", action="store_const", const="gone",
                   help="only items whose source failed when last checked (the text is "
                        "from an earlier capture)")
    g.add_argument("--alive", dest="source_state", action="store_const", const="alive",
                   help="only items whose source answered when last checked (or was never "
                        "checked: files)")
    _add_archive_option(p)


def _fill_show(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", type=_sqlite_int)
    p.add_argument("-f", "--format", choices=["text", "markdown", "json"], default="text")
    p.add_argument("--captures", action="store_true",
                   help="list the item's captures (each time its bytes were received) "
                        "instead of its text")
    _add_archive_option(p)


def _fill_reextract(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="*", type=_sqlite_int, metavar="ID",
                   help="only these items (default: every item with a kept original)")
    p.add_argument("--force", action="store_true",
                   help="every selected item, not only those a newer extractor or other "
                        "options would make differently")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary")
    _add_selection_options(p)
    _add_archive_option(p)
    _add_config_option(p)
    _add_option_flags(p, run=False)


def _fill_topics(p: argparse.ArgumentParser) -> None:
    p.add_argument("-k", type=int, metavar="N",
                   help="number of topics (default: chosen by coherence)")
    p.add_argument("--refit", action="store_true", help="fit the topics again from scratch")
    p.add_argument("--format", choices=["table", "json"], default="table")
    _add_selection_options(p)
    _add_archive_option(p)


def _fill_summarize(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="*", type=int, metavar="ID")
    p.add_argument("--all", action="store_true", help="every item without a summary yet")
    p.add_argument("-n", "--sentences", type=int, default=3, metavar="N",
                   help="sentences per summary (default 3)")
    p.add_argument("--force", action="store_true", help="summarise again (with --all)")
    _add_archive_option(p)


def _fill_keyphrases(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="*", type=int, metavar="ID")
    p.add_argument("--all", action="store_true", help="every item without keyphrases yet")
    p.add_argument("--force", action="store_true", help="find them again (with --all)")
    _add_archive_option(p)


def _fill_related(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="*", type=int, metavar="ID")
    p.add_argument("--all", action="store_true", help="compute the neighbours of every item")
    _add_archive_option(p)


def _fill_duplicates(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["table", "json"], default="table")
    _add_archive_option(p)


def _fill_archive_only(p: argparse.ArgumentParser) -> None:
    _add_archive_option(p)


def _fill_check(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repair", action="store_true",
                   help="rebuild indexes and full-text index from the readable rows; items "
                        "with damaged rows are dropped (the next run extracts them again); "
                        "the original is kept as FILE.bak")
    _add_archive_option(p)


def _fill_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("--to", required=True, metavar="PATH",
                   help="folder (txt) or file (jsonl, parquet, warc: FILE.warc.gz); or "
                        "s3://bucket/prefix")
    p.add_argument("--format", choices=["txt", "jsonl", "parquet", "warc", "chunks"],
                   default="txt",
                   help="warc: every kept original as a WARC/1.1 response (or resource) "
                        "record, with its provenance in a metadata record; chunks: JSON "
                        "Lines of chunks for a language model (--max-tokens)")
    p.add_argument("--max-tokens", type=int, default=512, metavar="N",
                   help="chunks: at most N tokens a chunk (default 512)")
    p.add_argument("--overlap", type=int, default=0, metavar="M",
                   help="chunks: about M tokens of whole sentences or lines repeated from "
                        "the end of a chunk at the start of the next (default 0)")
    p.add_argument("--tokenizer", default=None, metavar="SPEC",
                   help="chunks: how tokens are counted: approx (default), "
                        "tiktoken:ENCODING (if cached: nothing is downloaded) or "
                        "tokenizers:FILE (a tokenizer.json)")
    p.add_argument("--label", help="only the items with this label (a mail label or "
                                   "folder, a bookmark folder or tag; any case)")
    _add_archive_option(p)


def _fill_serve(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on; beyond loopback a bearer token is required")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--archive", default=None, metavar="FILE",
                   help="the archive for /v1/search, /v1/items, /v1/runs, /v1/stats")
    p.add_argument("--token-file", metavar="FILE",
                   help="the bearer token clients must send (or TEXTSIEVE_TOKEN; at least "
                   "16 visible characters), for the API and the reading room alike")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="a Host name answered besides loopback ones when there is no "
                   "token (a proxy's name); repeat for more")
    p.add_argument("--max-upload", type=parse_size, default=100 * MiB, metavar="SIZE",
                   help="request bodies above this are refused (MiB, or 2GiB)")
    p.add_argument("--queue", type=int, default=None, metavar="N",
                   help="requests admitted beyond the busy workers before 503 (default: "
                   "2 per worker)")
    p.add_argument("--recycle-after", type=int, default=None, metavar="N",
                   help="replace a worker process after about N documents (default "
                   "1000; its memory is checked too)")
    p.add_argument("--file-root", action="append", default=[], metavar="DIR",
                   help="file:// URIs of jobs may read and write under this folder only")
    p.add_argument("--watch", action="append", default=[], metavar="SOURCE",
                   help="run this source into --archive every --every, as `textsieve watch` "
                        "does, while serving (repeat for more)")
    p.add_argument("--every", metavar="INTERVAL", default=None,
                   help="how often --watch sources are run: 30m, 1h, 90s")
    _add_config_option(p)
    _add_option_flags(p, run=True)  # jobs fetch http(s):// and s3:// URIs


def _fill_mcp(p: argparse.ArgumentParser) -> None:
    _add_archive_option(p)
    p.add_argument("--file-root", action="append", default=[], metavar="DIR",
                   help="the extract tool may read files under this folder only (repeat "
                   "for more; none: no files)")
    _add_config_option(p)
    _add_option_flags(p, run=True)  # the extract tool fetches URLs: the fetch policy


# Every subcommand: its one-line help (and other add_parser settings), and what fills in
# its arguments. Only the command being run is filled in (``build_parser(command)``): the
# option flags of all of them are most of the parser, and a shell loop starts it per file.
_Fill = Callable[[argparse.ArgumentParser], None]
COMMANDS: dict[str, tuple[_Fill, dict[str, Any]]] = {
    "extract": (_fill_extract, {
        "help": "print the text of files (folders and globs expand)"}),
    "detect": (_fill_detect, {"help": "print the MIME type of files, decided by content"}),
    "run": (_fill_run, {
        "help": "extract sources into the archive (incremental, resumable)",
        "epilog": SOURCES_HELP, "formatter_class": _RawHelp}),
    "watch": (_fill_watch, {
        "help": "run sources into the archive again and again (--every 30m), backing off "
                "failing sources, until stopped", "epilog": SOURCES_HELP,
        "formatter_class": _RawHelp}),
    "ocr": (_fill_ocr, {
        "help": "make a scanned PDF searchable: the same pages with an invisible OCR text "
                "layer"}),
    "demo": (_fill_demo, {
        "help": "the whole job on the bundled samples (documents, a mailbox of links "
                "served from a local site), then searches"}),
    "gmail-auth": (_fill_gmail_auth, {
        "help": "authorise textsieve to read your Gmail (once): opens Google's consent page "
                "and stores the token for gmail:LABEL"}),
    "search": (_fill_search, {"help": "full-text search of the archive"}),
    "show": (_fill_show, {"help": "print an archived item"}),
    "topics": (_fill_topics, {
        "help": "find the topics of the archive's texts (fitted once, new items placed in "
                "them on later runs)"}),
    "summarize": (_fill_summarize, {
        "help": "write an extractive summary of items into the archive (shown by show, "
                "search and exports)"}),
    "keyphrases": (_fill_keyphrases, {
        "help": "find the keyphrases of items (stored in the archive, shown by show)"}),
    "related": (_fill_related, {
        "help": "items most like an item (nearest neighbours, kept up to date in the "
                "archive)"}),
    "duplicates": (_fill_duplicates, {
        "help": "group near-duplicate items (the same text under two URLs...): search "
                "shows each group once"}),
    "stats": (_fill_archive_only, {"help": "summarise the archive by status, type and error"}),
    "reextract": (_fill_reextract, {
        "help": "extract archived items again from their kept originals, offline (after "
                "an upgrade, or with other options)"}),
    "gc": (_fill_archive_only, {
        "help": "drop the kept originals no capture uses any more (and stray files of "
                "FILE.originals)"}),
    "check": (_fill_check, {
        "help": "check the archive is whole (every page, index and stored text); --repair "
                "rebuilds a damaged one, keeping a backup"}),
    "export": (_fill_export, {"help": "write the archive out as files, JSONL or Parquet"}),
    "mcp": (_fill_mcp, {
        "help": "an MCP server on stdin/stdout: an assistant searches and reads the "
                "archive (needs textsieve[mcp])"}),
    "serve": (_fill_serve, {
        "help": "extraction as a service: REST API, Tika-compatible endpoints (needs "
                "textsieve[server])"}),
}
ALL_COMMANDS = "*"


class _Parser(argparse.ArgumentParser):
    """The top-level parser. Built ``lean`` (only the subcommand being run), its own usage
    would list that one command: on a usage error the full parser parses the same
    arguments again and says what it always said."""

    lean = False
    _args: list[str] | None = None

    def parse_known_args(self, args=None, namespace=None):
        self._args = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        if self.lean and self._args is not None:
            build_parser().parse_args(self._args)  # exits with the full message
        super().error(message)


def build_parser(command: str | None = ALL_COMMANDS) -> argparse.ArgumentParser:
    """The command line. ``command``: only that subcommand (the one ``main`` runs) with its
    arguments: an argparse parser per subcommand costs a millisecond or so (gettext looks
    up its messages' translations on disk every time), and a shell loop starts the command
    once per file. ``None``: every subcommand listed, none filled in (``--help``); the
    default: all of them, complete."""
    parser = _Parser(prog="textsieve", formatter_class=_Help,
                     description="Clean, searchable text from any pile of documents.")
    parser.lean = command not in (ALL_COMMANDS, None)
    parser.add_argument("--version", action="version", version=f"textsieve {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks and debug logging (also after the command)")
    _add_config_option(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True,
                                parser_class=argparse.ArgumentParser)
    for name, (fill, settings) in COMMANDS.items():
        if parser.lean and name != command:
            continue
        p = sub.add_parser(name, **{"formatter_class": _Help, **settings})
        if command in (ALL_COMMANDS, name):
            fill(p)
        # `textsieve run ... --debug` works as well as before it
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show tracebacks and debug logging")
    return parser


def command_of(argv: list[str]) -> str | None:
    """The subcommand an argument list runs (the first word that is not a top-level
    option or ``--config``'s value), or None: none given, an unknown one, or a help
    request before it (``textsieve --help extract`` shows the list of commands)."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "-h" or (len(arg) > 2 and "--help".startswith(arg)):
            return None
        elif arg == "--":
            continue
        elif arg.startswith("-"):
            # --config FILE (or an abbreviation argparse accepts: --conf FILE)
            skip = len(arg) > 3 and "--config".startswith(arg)
        else:
            return arg if arg in COMMANDS else None
    return None


def _add_archive_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--archive", default="textsieve.db", metavar="FILE",
                   help="the archive file (default: textsieve.db here)")


def _add_selection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--type", dest="mime", metavar="MIME",
                   help="only items of this MIME type or prefix (text/html, application/)")
    p.add_argument("--since", metavar="DATE", help="only items first seen on or after it")
    p.add_argument("--until", metavar="DATE", help="only items first seen up to that day")
    p.add_argument("--label", help="only items with this label (any source: a mail label "
                                   "or folder, a bookmark folder or tag)")


def _read_stdin(options: Options, name: str) -> bytes | Document:
    """Standard input, read once and capped while reading (``< /dev/zero`` ends at the
    limit); past it, the input's ``too_large`` record, made here: nothing to send on."""
    from .bytesource import read_capped
    from .model import ExtractionError

    try:
        return read_capped(sys.stdin.buffer, options.max_file_size)
    except ExtractionError as exc:
        return Document.failed(exc.kind, exc.message, name=name)


# `textsieve extract FILE` on one file up to this size skips the worker pool: it runs in
# one forked child under the same deadline and memory cap (``core.Isolation.CHILD``).
ALONE_MAX_BYTES = 16 * 1024 * 1024


def cmd_extract(ns: argparse.Namespace) -> int:
    options: Options = ns.options
    expanded = list(_expand(ns.inputs))
    paths = [p for p, _ in expanded]
    if not paths:
        print("textsieve: no input files", file=sys.stderr)
        return EXIT_USAGE
    many = len(paths) > 1
    if ns.explain and (options.html != "sieve" or many):
        raise UsageError("--explain draws the sieve of one page: --html sieve --topic T PAGE")
    docs: Iterator[Document]
    if not many and expanded[0][1] is None and _alone(paths[0], options):
        from .core import Isolation, extract

        # One child reads it; a scan with pages enough to spread goes on to a pool.
        docs = iter([extract(paths[0], options=options, isolation=Isolation.CHILD)])
    else:
        from .core import extract_many

        # A path that leads nowhere is its typed record at once: never opened (a pipe in a
        # folder would wait for a writer for ever), never sent to a worker.
        objs = [Document.failed(why.kind, why.message, name=os.path.basename(p))
                if why is not None else _read_stdin(options, "<stdin>") if p == "-" else p
                for p, why in expanded]
        todo = [(o, "<stdin>" if p == "-" else None) for p, o in zip(paths, objs, strict=True)
                if not isinstance(o, Document)]
        workers = options.worker_count  # all of them even for one file: its OCR pages spread
        extracted = extract_many([o for o, _ in todo], options, names=[n for _, n in todo],
                                 workers=workers)
        docs = (obj if isinstance(obj, Document) else next(extracted) for obj in objs)
    failed = 0
    out = sys.stdout
    for path, doc in zip(paths, docs, strict=True):
        if doc.status is Status.ERROR:
            failed += 1
            assert doc.error is not None
            _say(f"{path}: {doc.error.kind}: {doc.error.message}")
        else:
            _warn_failed_parts(path, doc)
        if ns.explain:
            if doc.status is not Status.ERROR:
                from .web.sieveplot import for_metadata

                out.write((for_metadata(doc.metadata.extra) or "") + "\n")
            continue
        _emit(out, path, doc, ns.format, many, clean=out.isatty())
    out.flush()
    return EXIT_FAILED if failed else EXIT_OK


def _alone(path: str, options: Options) -> bool:
    """One small regular file, nothing asked of the pool (a searchable copy) and a
    platform that forks: the start-up of a pool would cost more than the extraction."""
    from .forking import can_fork

    try:
        small = os.path.isfile(path) and os.path.getsize(path) <= ALONE_MAX_BYTES
    except OSError:
        return False
    return small and options.searchable_pdf_dir is None and can_fork()


def _say(message: str) -> None:
    """One line on stderr: ``textsieve: message``, with the escape sequences and line
    breaks a hostile path, title or server answer may carry taken out."""
    print(f"textsieve: {for_terminal(message, one_line=True)}", file=sys.stderr)


def _warn_failed_parts(path: str, doc: Document) -> None:
    """A readable container with parts that are not (an encrypted ZIP member, a damaged
    attachment) is still a success, but the loss must not be visible in JSON only."""
    for part in doc.walk()[1:]:
        if part.status is Status.ERROR and part.error is not None:
            _say(f"{path}: warning: {part.name or part.mime_type}: "
                 f"{part.error.kind}: {part.error.message}")


def _emit(out, path: str, doc: Document, fmt: str, many: bool, *, clean: bool) -> None:
    """One document in ``fmt``; ``clean``: the text goes to a person's terminal, so its
    control characters and escape sequences go (JSON is exact: json escapes them)."""
    if fmt == "json":
        import json  # here: text output, the common case, does not load it

        record = {"path": path, **doc.to_dict()}
        out.write(json.dumps(record, ensure_ascii=False, indent=None if many else 2) + "\n")
        return
    body = doc.full_text(markdown=fmt == "markdown")
    if clean:
        body, path = for_terminal(body), for_terminal(path, one_line=True)
    if many:
        header = f"# {path}" if fmt == "markdown" else f"==> {path} <=="
        out.write(f"{header}\n\n")
    if body:
        out.write(body.rstrip("\n") + "\n")
    if many:
        out.write("\n")


def cmd_detect(ns: argparse.Namespace) -> int:
    from .bytesource import Source, os_problem, read_capped
    from .detection import detect
    from .model import ExtractionError

    limit = Options().max_file_size

    failed = 0
    for path, why in _expand(ns.inputs):
        try:
            if why is not None:  # never opened: a pipe in a folder would wait for ever
                raise ExtractionError(why.kind, why.message)
            src = Source.from_bytes(read_capped(sys.stdin.buffer, limit), name="<stdin>",
                                    max_size=limit) if path == "-" else \
                Source.from_path(path, max_size=limit)
            with src:
                det = detect(src)
        except OSError as exc:
            why = os_problem(path, exc)
            _say(f"{path}: {why.kind}: {why.message}")
            failed += 1
            continue
        except ExtractionError as exc:  # stdin past the size limit, a path to nowhere
            _say(f"{path}: {exc.kind}: {exc.message}")
            failed += 1
            continue
        note = f"  ({det.note})" if det.note else ""
        print(for_terminal(f"{path}: {det.mime}  [{det.how}]{note}", one_line=True))
    return EXIT_FAILED if failed else EXIT_OK


def _open_archive(path: str, *, readonly: bool):
    from .archive import Archive, ArchiveError

    if readonly and not os.path.exists(path):
        raise ArchiveError(f"{path}: no such archive (create it with textsieve run)")
    return Archive(path, readonly=readonly)


def cmd_run(ns: argparse.Namespace) -> int:
    from .archive.stats import totals
    from .run.progress import Progress
    from .run.runner import Mode, run
    from .sources import open_source

    archive_path = os.path.abspath(ns.archive)
    exclude = frozenset({archive_path, archive_path + "-wal", archive_path + "-shm",
                         archive_path + "-journal"})
    options: Options = ns.options
    if options.searchable_pdf_dir:
        try:
            os.makedirs(options.searchable_pdf_dir, exist_ok=True)
        except OSError as exc:  # a file of that name, no permission: the user's to fix
            raise UsageError(f"--searchable-pdf {options.searchable_pdf_dir}: cannot create "
                             f"the folder ({exc.strerror or exc})") from None
        options = options.with_(searchable_pdf_dir=os.path.abspath(options.searchable_pdf_dir))
    enrich_kinds: tuple[str, ...] = ()
    if ns.enrich:
        from .enrich import require
        from .options import ENRICH_KINDS

        enrich_kinds = ENRICH_KINDS if ns.enrich == "all" else tuple(
            k.strip() for k in ns.enrich.split(",") if k.strip())
        unknown = [k for k in enrich_kinds if k not in ENRICH_KINDS]
        if unknown or not enrich_kinds:
            raise UsageError(f"--enrich: {', '.join(map(repr, unknown)) or 'nothing'} is not "
                             f"one of {', '.join(ENRICH_KINDS)} (comma-separated) or all")
        require()  # before the extraction, not after an hour of it
    sources = [open_source(spec, exclude=exclude, options=options) for spec in ns.sources]
    mode = Mode.FORCE if ns.force else Mode.RETRY_ERRORS if ns.retry_errors else \
        Mode.INCREMENTAL
    progress = Progress(quiet=ns.quiet)
    signal.signal(signal.SIGTERM, _on_sigterm)
    with _open_archive(ns.archive, readonly=False) as archive, progress:
        stats = run(sources, archive, options, mode=mode, progress=progress,
                    run_options={"mode": str(mode), "timeout": options.timeout,
                                 "workers": options.worker_count})
        progress.finish(stats, totals(archive))  # on Ctrl-C, the summary so far
        if ns.enrich:
            from .enrich.driver import enrich

            done = enrich(archive, options, kinds=enrich_kinds,
                          progress=_enrich_progress(ns.quiet))
            if not ns.quiet:
                print("enriched: " + ", ".join(f"{k} {v}" for k, v in done.items()),
                      file=sys.stderr)
    return EXIT_FAILED if stats.status.get("error") or stats.gone else EXIT_OK


def _sleep_then_go_on(seconds: float) -> bool:
    """The plain command's pause between rounds: nothing but a signal ends it early."""
    import time

    time.sleep(seconds)
    return False


def cmd_watch(ns: argparse.Namespace) -> int:
    """The incremental run every --every until a signal (textsieve.run.watch)."""
    from .run.progress import Progress
    from .run.watch import Round, Watcher, describe, parse_every

    every = parse_every(ns.every)
    if ns.rounds is not None and ns.rounds < 1:
        raise UsageError("--rounds must be at least 1")
    if ns.force or ns.retry_errors or ns.enrich:
        raise UsageError("watch runs incrementally: --force, --retry-errors and --enrich "
                         "are for run")
    archive_path = os.path.abspath(ns.archive)
    exclude = frozenset({archive_path, archive_path + "-wal", archive_path + "-shm",
                         archive_path + "-journal"})

    def report(r: Round) -> None:
        if ns.quiet and not r.failed:
            return
        print(for_terminal(describe(r), one_line=True), file=sys.stderr, flush=True)
        for spec, why in r.failed.items():
            _say(f"{spec}: {why}")

    signal.signal(signal.SIGTERM, _on_sigterm)
    rounds = 0
    progress = Progress(quiet=True)
    with _open_archive(ns.archive, readonly=False) as archive:
        watcher = Watcher(ns.sources, archive, ns.options, every, exclude=exclude,
                          report=report, progress=progress)
        try:
            rounds = watcher.loop(_sleep_then_go_on, rounds=ns.rounds)
        except KeyboardInterrupt as exc:  # SIGINT, or SIGTERM (Terminated)
            how = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
            print(f"textsieve watch: stopped ({how}) in round {watcher.rounds}; what was "
                  "read is kept", file=sys.stderr)
            return EXIT_OK
    if not ns.quiet:
        print(f"textsieve watch: {rounds} round(s) done", file=sys.stderr)
    return EXIT_OK


def cmd_reextract(ns: argparse.Namespace) -> int:
    from .archive.stats import totals
    from .run.progress import Progress
    from .run.runner import Mode, run
    from .sources.stored import Selection, StoredSource

    selection = Selection(ids=tuple(ns.ids), mime=ns.mime, since=ns.since, until=ns.until,
                          label=ns.label)
    progress = Progress(quiet=ns.quiet)
    signal.signal(signal.SIGTERM, _on_sigterm)
    with _open_archive(ns.archive, readonly=False) as archive, progress:
        source = StoredSource(archive, selection)
        mode = Mode.FORCE if ns.force else Mode.INCREMENTAL
        stats = run([source], archive, ns.options, mode=mode, progress=progress,
                    run_options={"mode": f"reextract-{mode}", "timeout": ns.options.timeout,
                                 "workers": ns.options.worker_count})
        progress.finish(stats, totals(archive))
    if source.without and not ns.quiet:
        print(f"{source.without:,} selected item(s) have no kept original: `textsieve run` "
              "their sources to extract them again", file=sys.stderr)
    if stats.lost_originals:  # damage, said even with -q: their text stays as it was
        _say(f"{ns.archive}: {stats.lost_originals:,} item(s) not re-extracted: their kept "
             "original is missing or damaged (`textsieve check` names them); their text "
             "is kept")
    return EXIT_FAILED if stats.status.get("error") or stats.lost_originals else EXIT_OK


def cmd_gc(ns: argparse.Namespace) -> int:
    from .archive.originals import collect

    with _open_archive(ns.archive, readonly=False) as archive:
        done = collect(archive)
    print(f"{ns.archive}: {done.rows:,} unused original(s) dropped, {done.files:,} file(s) "
          f"removed, {done.bytes / 1e6:.1f} MB freed", file=sys.stderr)
    return EXIT_OK


def cmd_ocr(ns: argparse.Namespace) -> int:
    from .core import make_searchable
    from .model import ExtractionError
    from .run.pool import WorkerPool

    options: Options = ns.options
    if options.ocr == "never":  # a config file's ocr = "never" has no meaning here
        raise UsageError("textsieve ocr needs ocr auto or always, not never")
    if not os.path.isfile(ns.input):
        _say(f"{ns.input}: no such file")
        return EXIT_FAILED
    try:
        with WorkerPool(options) as pool:  # the pages of the scan spread over all cores
            report = make_searchable(ns.input, ns.output, options, pool=pool)
    except (ExtractionError, OSError) as exc:
        what = f"{exc.kind}: {exc.message}" if isinstance(exc, ExtractionError) else str(exc)
        _say(f"{ns.input}: cannot make it searchable: {what}")
        return EXIT_FAILED
    ocred, kept, missing = report["ocr_pages"], report["kept_pages"], report["missing_pages"]
    print(f"{ns.output}: {len(ocred)} page(s) OCRed, {len(kept)} kept their text layer "
          f"({report['seconds']:.1f} s)", file=sys.stderr)
    if missing:
        reasons = "; ".join(f"page {n}: {report['errors'][n]}" for n in missing[:10])
        _say(f"{ns.input}: OCR failed on {len(missing)} page(s), left without text in "
             f"{ns.output}: {reasons}")
        return EXIT_FAILED
    return EXIT_OK


def cmd_search(ns: argparse.Namespace) -> int:
    from .archive.search import format_hit, languages_of, search

    if not ns.query.strip() and not ns.label:
        raise UsageError("search needs words to look for, or --label")
    with _open_archive(ns.archive, readonly=True) as archive:
        hits = search(archive, ns.query, limit=ns.limit,  # QueryError: a usage error
                      source_state=ns.source_state, label=ns.label, language=ns.lang)
        languages = languages_of(archive, [h.id for h in hits])
        from .archive.labels import labels_by_item
        from .enrich.candidates import duplicates_of, summary_of

        summaries = {h.id: summary_of(archive, h.id) for h in hits}
        labels = labels_by_item(archive.conn, [h.id for h in hits])
        collapsed: dict[int, list[int]] = {}
        if not ns.all_duplicates:  # one hit per near-duplicate group (textsieve duplicates)
            seen: set[int] = set()
            kept = []
            for h in hits:
                if h.id in seen:
                    continue
                dups = duplicates_of(archive, h.id)
                seen.update(dups)
                kept.append(h)
                collapsed[h.id] = dups
            hits = kept
    for h in hits:
        head, _, snippet = format_hit(h).partition("\n")
        lang = for_terminal(f"  ({languages[h.id]})", one_line=True) if h.id in languages \
            else ""
        print(f"{head}{lang}\n{snippet}")
        if labels.get(h.id):
            print("    # " + for_terminal(", ".join(labels[h.id]), one_line=True))
        summary = summaries.get(h.id)
        if summary:
            print("    = " + for_terminal(summary, one_line=True))
        if collapsed.get(h.id):
            print("    + near-duplicates: " + " ".join(f"[{d}]" for d in collapsed[h.id]))
    if not hits:
        print("no match", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def cmd_show(ns: argparse.Namespace) -> int:
    from .archive.browse import source_note

    with _open_archive(ns.archive, readonly=True) as archive:
        doc = archive.document(ns.id)
        lineage = archive.lineage(ns.id)
        where = " › ".join(w for _, w in lineage)
        mails = archive.mails_of(lineage[0][0]) if lineage else []
        enriched = _enriched(archive, ns.id)
        captures = archive.captures(ns.id)
        check = archive.check_of(ns.id)
        from .archive.labels import labels_of, listings_of

        labels = labels_of(archive.conn, ns.id)
        listings = listings_of(archive.conn, lineage[0][0]) if lineage else []
    if doc is None:
        _say(f"no item {ns.id}")
        return EXIT_FAILED
    if ns.format == "json":
        import json

        record = {"path": where, **doc.to_dict(), "labels": labels,
                  "listings": listings, "mails": mails, **enriched,
                  "source_state": check, "captures": captures}
        sys.stdout.write(json.dumps(record, ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    note = source_note(check, captures)
    if ns.captures:
        print(for_terminal(where, one_line=True))
        if note:
            print(for_terminal(note, one_line=True))
        for c in captures:
            mark = "*" if c["current"] else " "
            what = f"HTTP {c['http_status']}" if c["http_status"] else c["status"]
            print(for_terminal(
                f"{mark} {_when(c['captured_at'])}  {what:<8}  {c['text_chars']:>8,} chars  "
                f"{c['kind']}  original {(c['original'] or 'not kept')[:16]}  "
                f"{c['url'] or ''}", one_line=True))
        return EXIT_OK
    if note:
        print(for_terminal(note, one_line=True), file=sys.stderr)
    for m in mails:  # which mails named it: provenance a reader wants to see first
        print(for_terminal(f"mailed: {m['date'] or '?'}  {m['from'] or '?'}  "
                           f"«{m['subject'] or ''}»", one_line=True), file=sys.stderr)
    for li in listings:  # which lists named it, and what they said
        print(for_terminal(f"listed: {li['listed'] or '?'}  «{li['title'] or ''}»"
                           + (f"  {li['note']}" if li["note"] else ""), one_line=True),
              file=sys.stderr)
    if labels:
        print(for_terminal("labels: " + ", ".join(labels), one_line=True), file=sys.stderr)
    if enriched["summary"]:
        print(for_terminal(f"summary: {enriched['summary']}", one_line=True), file=sys.stderr)
    _emit(sys.stdout, where, doc, ns.format, many=False, clean=True)
    return EXIT_OK


def _when(epoch: float | None) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch)) if epoch else "?"


def cmd_serve(ns: argparse.Namespace) -> int:
    try:
        from .server import serve
        from .server.app import ServerConfig
    except ImportError as exc:
        raise UsageError(f"serve needs the server extra: pip install 'textsieve[server]' "
                         f"({exc})") from exc
    from .server.guard import check_token

    # Checked as given (TEXTSIEVE_TOKEN=" " is an error, not a one-space token); a file
    # loses its final line break only, and is checked the same way.
    token = os.environ.get("TEXTSIEVE_TOKEN") or None
    check_token(token, "TEXTSIEVE_TOKEN")
    if ns.token_file:
        try:
            with open(ns.token_file, encoding="utf-8") as f:
                raw = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--token-file: {exc}") from exc
        token = raw[:-1] if raw.endswith("\n") else raw
        token = token[:-1] if token.endswith("\r") else token
        check_token(token, f"the token in {ns.token_file}")
    config = ServerConfig(host=ns.host, port=ns.port, token=token, archive=ns.archive,
                          allowed_hosts=tuple(ns.allowed_host),
                          max_upload=ns.max_upload,
                          queue=None if ns.queue is None else max(0, ns.queue),
                          recycle_after=ServerConfig.recycle_after
                          if ns.recycle_after is None else max(1, ns.recycle_after),
                          file_roots=tuple(os.path.abspath(r) for r in ns.file_root))
    config.check()
    if not ns.watch:
        if ns.every:
            raise UsageError("--every goes with --watch SOURCE")
        serve(config, ns.options)
        return EXIT_OK
    watcher = _start_watch(ns)
    try:
        serve(config, ns.options)
    finally:
        _stop_watch(watcher)
    return EXIT_OK


def _start_watch(ns: argparse.Namespace):
    """``serve --watch``: the watch in its own process (textsieve.run.watch)."""
    from . import procs
    from .run.watch import parse_every, watch_process
    from .sources import open_source

    if not ns.archive:
        raise UsageError("--watch needs --archive FILE")
    if not ns.every:
        raise UsageError("--watch needs --every INTERVAL (30m, 1h...)")
    every = parse_every(ns.every)
    for spec in ns.watch:  # a spec that is wrong is a usage error now, not in an hour
        open_source(spec, options=ns.options)
    return procs.start(watch_process, list(ns.watch), os.path.abspath(ns.archive),
                       ns.options, every, duplex=True, daemon=False,
                       setup=procs.Setup(guard=True),
                       method=procs.start_method(threads_run=True))


def _stop_watch(child) -> None:
    """Stop the watch like a signal stops ``watch``: the round in hand committed."""
    with contextlib.suppress(OSError, ValueError):
        child.conn.send("stop")  # between rounds: it ends at once
    if child.exitcode(2) is None:  # in a round: as SIGTERM stops a run, batch committed
        with contextlib.suppress(OSError):
            os.kill(child.pid, signal.SIGTERM)
    if child.exitcode(30) is None:
        child.kill()
    else:
        child.conn.close()


def cmd_mcp(ns: argparse.Namespace) -> int:
    """``textsieve mcp``: the MCP server on stdio. stdout is the protocol's: nothing else
    may be printed there."""
    try:
        from .server.mcp_server import Backend, run_stdio
    except ImportError as exc:
        raise UsageError(f"mcp needs the mcp extra: pip install 'textsieve[mcp]' ({exc})"
                         ) from exc
    if not os.path.exists(ns.archive):
        raise UsageError(f"{ns.archive}: no such archive (textsieve run fills one)")
    run_stdio(Backend(os.path.abspath(ns.archive), ns.options,
                      tuple(os.path.abspath(r) for r in ns.file_root)))
    return EXIT_OK


def _enriched(archive, item_id: int) -> dict:
    """What enrichment knows about an item (for show): summary, keyphrases, topics..."""
    from .enrich.candidates import enriched

    return enriched(archive, item_id)


def _enrich_progress(quiet: bool = False):
    """A one-line progress report on stderr for long enrichment work (a terminal only)."""
    if quiet or not sys.stderr.isatty():
        return None

    def show(kind: str, done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        print(f"\r{kind}: {done:,}/{total:,}", end=end, file=sys.stderr, flush=True)
    return show


def cmd_topics(ns: argparse.Namespace) -> int:
    from .enrich import candidates, require, topics

    require()
    if ns.k is not None and ns.k < 1:
        print("textsieve: -k must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    selection = candidates.Selection(mime=ns.mime, since=ns.since, until=ns.until, label=ns.label)
    with _open_archive(ns.archive, readonly=False) as archive:
        report = topics.update(archive, k=ns.k, refit=ns.refit, selection=selection,
                               progress=_enrich_progress())
        found = topics.list_topics(archive)
    if ns.format == "json":
        import json

        sys.stdout.write(json.dumps([t.to_dict() for t in found], ensure_ascii=False,
                                    indent=2) + "\n")
    else:
        for t in found:
            coh = f"{t.coherence:+.2f}" if t.coherence is not None else "   ?"
            print(f"{t.id:>3}  {t.size:>6,}  {coh}  {t.label}\n"
                  f"     {', '.join(term for term, _ in t.terms)}")
            for it in t.items:
                print(f"     [{it['id']}] {it['title'] or it['key']}")
    how = "fitted" if report.refitted else "placed in the existing topics"
    print(f"{report.k} topics; {report.placed:,} item(s) {how}", file=sys.stderr)
    return EXIT_OK


def _ids_or_all(ns: argparse.Namespace, command: str) -> None:
    """A per-item enrichment command works on the ids given or on ``--all``: one of them."""
    if bool(ns.ids) == bool(ns.all):
        raise UsageError(f"{command} takes item ids or --all")


def cmd_summarize(ns: argparse.Namespace) -> int:
    from .enrich import require, summary

    require()
    _ids_or_all(ns, "summarize")
    if ns.sentences < 1:
        raise UsageError("summarize -n takes at least 1 sentence")
    with _open_archive(ns.archive, readonly=False) as archive:
        n = summary.update(archive, ns.ids or None, n=ns.sentences,
                           force=ns.force or bool(ns.ids), progress=_enrich_progress())
        for item_id in ns.ids:
            text = summary.summary_of(archive, item_id)
            print(f"[{item_id}] {text}" if text else
                  f"[{item_id}] (no summary: no such item or too little text)")
    print(f"{n:,} item(s) summarised", file=sys.stderr)
    return EXIT_OK


def cmd_keyphrases(ns: argparse.Namespace) -> int:
    from .enrich import candidates, keyphrases, require

    require()
    _ids_or_all(ns, "keyphrases")
    with _open_archive(ns.archive, readonly=False) as archive:
        n = keyphrases.update(archive, ns.ids or None, force=ns.force or bool(ns.ids),
                              progress=_enrich_progress())
        for item_id in ns.ids:
            print(f"[{item_id}] " + ", ".join(candidates.keyphrases_of(archive, item_id)))
    print(f"{n:,} item(s) given keyphrases", file=sys.stderr)
    return EXIT_OK


def cmd_related(ns: argparse.Namespace) -> int:
    from .enrich import candidates, related, require

    require()
    _ids_or_all(ns, "related")
    with _open_archive(ns.archive, readonly=False) as archive:
        n = related.update(archive, progress=_enrich_progress())
        for item_id in ns.ids:
            print(f"[{item_id}]")
            for r in candidates.related_of(archive, item_id):
                print(f"  {r['score']:.2f}  [{r['id']}] {r['title'] or r['key']}")
    print(f"{n:,} item(s) given neighbours", file=sys.stderr)
    return EXIT_OK


def cmd_duplicates(ns: argparse.Namespace) -> int:
    from .enrich import neardup, require

    require()
    with _open_archive(ns.archive, readonly=False) as archive:
        n = neardup.update(archive, progress=_enrich_progress())
        found = neardup.groups(archive)
        where = {g: [(i, archive.lineage(i)[0][1] if archive.lineage(i) else "?")
                     for i in group] for g, group in enumerate(found)}
    if ns.format == "json":
        import json

        sys.stdout.write(json.dumps([[{"id": i, "key": k} for i, k in where[g]]
                                     for g in where], ensure_ascii=False, indent=2) + "\n")
    else:
        for g in where:
            print("  ".join(f"[{i}] {k}" for i, k in where[g]))
    print(f"{len(found):,} group(s) of near-duplicates; {n:,} item(s) hashed",
          file=sys.stderr)
    return EXIT_OK


def cmd_stats(ns: argparse.Namespace) -> int:
    from .archive.stats import format_stats, stats

    with _open_archive(ns.archive, readonly=True) as archive:
        print(for_terminal(format_stats(stats(archive))))
    return EXIT_OK


def _s3_options() -> Options:
    """Options for s3:// of a command without option flags: the endpoint from the
    environment, as ``--s3-endpoint`` would take it."""
    return resolve(config_file=False)


def cmd_export(ns: argparse.Namespace) -> int:
    from collections import Counter

    from .archive.export import export

    counts: Counter[str] = Counter()
    with _open_archive(ns.archive, readonly=True) as archive:
        if ns.format == "chunks":
            from .archive.chunks import export_chunks

            if ns.to.startswith("s3://"):
                raise UsageError("--format chunks writes a local file or - (stdout)")
            n = export_chunks(archive, ns.to, ns.max_tokens, ns.overlap,
                              tokenizer=ns.tokenizer, counts=counts, label=ns.label)
            print(f"exported {counts['chunks']:,} chunks of {n:,} items to {ns.to}",
                  file=sys.stderr)
            return EXIT_OK
        if ns.to.startswith("s3://"):  # written locally, then uploaded
            from .uris import export_to_s3

            n = export_to_s3(lambda to: export(archive, to, ns.format, counts=counts,
                                               on_error=_say, label=ns.label),
                             ns.to, ns.format, _s3_options())
        else:
            n = export(archive, ns.to, ns.format, counts=counts,  # ExportError: exit 1
                       label=ns.label,
                       on_error=_say)
    more = "".join(f", {v:,} {k}" for k, v in sorted(counts.items()) if k != "items" and v)
    print(f"exported {n:,} items to {ns.to}{more}", file=sys.stderr)
    return EXIT_FAILED if counts["failed"] else EXIT_OK


def cmd_check(ns: argparse.Namespace) -> int:
    from .archive.check import check, repair

    report = check(ns.archive)
    if report.ok:
        print(f"{ns.archive}: whole ({report.items:,} items; pages, indexes, full-text "
              "index, every stored text and kept original checked)", file=sys.stderr)
        return EXIT_OK
    for line in report.problems:
        _say(f"{ns.archive}: {line}")
    if not ns.repair:
        _say(f"{ns.archive}: damaged; `textsieve check --repair` rebuilds it from what is "
             "readable, keeping a backup")
        return EXIT_FAILED
    fixed = repair(ns.archive)
    found = f" ({fixed.salvaged:,} rows read from pages SQLite no longer reached)" \
        if fixed.salvaged else ""
    print(f"{ns.archive}: repaired: {fixed.kept:,} items kept{found}, {fixed.dropped:,} "
          f"dropped (the next run extracts them again), {fixed.lost_rows:,} unreadable rows "
          f"lost; the damaged original is {fixed.backup}", file=sys.stderr)
    return EXIT_OK


def _check_sieve(options: Options) -> Options:
    """--topic implies --html sieve; sieve needs a topic that loads (checked here once, not
    in every worker); a topic file is made absolute for workers and re-runs."""
    if options.topic and options.html == "auto":
        options = options.with_(html="sieve")
    if options.html != "sieve":
        if options.topic:
            raise UsageError("--topic only applies to --html sieve")
        return options
    if not options.topic:
        raise UsageError("--html sieve needs --topic WORDS|FILE")
    from .web.sieve import load_topic

    try:
        load_topic(options.topic)
    except (ValueError, OSError) as exc:
        raise UsageError(f"--topic: {exc}") from None
    if not _is_preset(options.topic) and os.path.isfile(options.topic):
        options = options.with_(topic=os.path.abspath(options.topic))
    return options


def _is_preset(name: str) -> bool:
    from .web.sieve import presets

    return name in presets()


def cmd_gmail_auth(ns: argparse.Namespace) -> int:
    from .sources.mailboxes.gmail import authorize

    path = authorize(ns.client_id, ns.client_secret, ns.options,
                     show=lambda url: print(f"Open this page to allow access:\n{url}",
                                            file=sys.stderr))
    print(f"token stored in {path}", file=sys.stderr)
    return EXIT_OK


def cmd_demo(ns: argparse.Namespace) -> int:
    from .demo import main as demo_main

    return demo_main(ns.archive, ns.jobs, command=main)


def _database_error() -> type[Exception]:
    """sqlite3's error class, if an archive was opened: ``extract`` never imports sqlite3
    (only the archive commands need it), so it is not imported for this ``except``."""
    sqlite3 = sys.modules.get("sqlite3")
    return sqlite3.DatabaseError if sqlite3 is not None else _NoError


class _NoError(Exception):
    """Never raised: what ``_database_error`` catches when sqlite3 was never imported."""


def main(argv: list[str] | None = None) -> int:
    # Only the subcommand being run gets its arguments built: a shell loop starts the
    # command once per file, and the flags of every other subcommand are most of the parser.
    parser = build_parser(command_of(sys.argv[1:] if argv is None else argv))
    ns = parser.parse_args(argv)
    debug = bool(getattr(ns, "debug", False))
    if debug:
        import logging  # here: without --debug nothing configures it

        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
        os.environ["TEXTSIEVE_DEBUG"] = "1"  # workers keep native libraries' warnings too
    handler = {"extract": cmd_extract, "detect": cmd_detect, "run": cmd_run,
               "watch": cmd_watch,
               "ocr": cmd_ocr, "search": cmd_search, "demo": cmd_demo, "gmail-auth": cmd_gmail_auth,
               "show": cmd_show, "topics": cmd_topics,
               "summarize": cmd_summarize, "keyphrases": cmd_keyphrases,
               "related": cmd_related, "duplicates": cmd_duplicates,
               "stats": cmd_stats, "export": cmd_export, "check": cmd_check,
               "serve": cmd_serve, "reextract": cmd_reextract, "gc": cmd_gc,
               "mcp": cmd_mcp}[ns.command]
    try:
        if ns.command in ("extract", "run", "watch", "ocr", "gmail-auth", "serve",
                          "reextract", "mcp"):  # those with Options
            ns.options = _check_sieve(_options(ns))
        return handler(ns)
    except TextsieveError as exc:  # options, config, archive, sources, mail servers
        if debug:
            import traceback

            traceback.print_exc()
        _say(exc.message)
        return exc.exit_code
    except _database_error() as exc:  # damage the open checks cannot see (a bad page)
        if debug:
            import traceback

            traceback.print_exc()
        _say(f"{getattr(ns, 'archive', 'archive')}: cannot use the archive ({exc})")
        return EXIT_FAILED
    except BrokenPipeError:  # `textsieve extract ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Terminated:
        print("textsieve: terminated (SIGTERM): what was committed is kept; run again to "
              "resume", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except Exception as exc:  # a bug outside extraction: one line, the details on demand
        if debug:
            import traceback

            traceback.print_exc()
            _say(f"internal error: {type(exc).__name__}: {exc}")
        else:
            _say(f"internal error: {type(exc).__name__}: {exc} "
                 "(run with --debug for the traceback)")
        return ExitCode.INTERNAL


# One-shot commands after which nothing is left to tear down: a shell loop runs them per file.
QUICK_EXIT = frozenset({"extract", "detect"})


def entry() -> None:
    """The ``textsieve`` console script and ``python -m textsieve``: ``main``, and after a
    one-shot command (``QUICK_EXIT``) the process ends without the interpreter tearing
    down every module and object one by one (~10 ms of a ~60 ms `textsieve extract FILE`)."""
    code = main()
    if command_of(sys.argv[1:]) in QUICK_EXIT:
        exit_now(code)
    sys.exit(code)


def exit_now(code: int) -> NoReturn:
    """End the process as the interpreter's own exit would, minus its teardown: other
    threads are waited for and the atexit callbacks run (logging's flush, multiprocessing's
    cleanup), the standard streams are flushed; the kernel frees the rest."""
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # what the interpreter calls first on exit
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone (`| head`), closed
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()

