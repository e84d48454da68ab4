"""All knobs of an extraction in one typed, immutable object.

It flows unchanged from the CLI / API / server into every stage; no stage reads the
environment or a global instead.

``KNOBS`` says, for every field, how a person sets it: the flag, its help, its group, its
unit. The command line's flags (``cli.build_parser``), the config file (``textsieve.toml``,
``load_config``) and ``Options.from_mapping`` are all made from it, so a new field is one
line here and one in ``KNOBS`` (tests/test_options.py fails when the second is missing).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from .errors import UsageError

MiB = 1024 * 1024
GiB = 1024 * MiB

OCR_MODES = ("auto", "always", "never")
MIN_MEMORY = 64 * MiB  # a memory cap below this would stop Python itself
UNPACK_SHARE = 6  # at most 1/6 of a worker's memory cap is unpacked per top-level file
HTML_MODES = ("auto", "main", "full", "sieve")
EXECUTORS = ("local", "ray")
# Which originals (bytes as received) `textsieve run` keeps in the archive: none, what was
# fetched or came inside a mail or a WARC (gone once the server or mail is), or all (files too).
KEEP_ORIGINALS = ("none", "fetched", "all")
# Whether `textsieve run` fetches the links its sources name: auto (what needs it) or never
# (links are archived with what their source says about them; a later run fetches them).
FETCH_MODES = ("auto", "never")
# What `textsieve run --enrich` may keep up to date (textsieve.enrich), in the order it runs.
ENRICH_KINDS = ("topics", "summaries", "keyphrases", "related", "duplicates")
# Each numeric knob's lowest sensible value; below it a run would refuse every input, never
# stop, or spin (a zero timeout, a zero memory cap, no members allowed in any container).
_AT_LEAST: dict[str, float] = {
    "workers": 0, "batch": 1, "max_depth": 0, "max_redirects": 0, "retries": 0, "backoff": 0,
    "max_retry_after": 0, "per_host_delay": 0, "max_members": 1, "per_host_concurrency": 1,
    "max_ratio": 1, "ocr_dpi": 50, "max_file_size": 1,
    "max_unpacked": 1, "max_image_pixels": 1, "max_body": 1, "max_crawl_delay": 0,
    "topics_k": 0, "summary_sentences": 1,
}
_POSITIVE = ("timeout", "tool_timeout", "ocr_page_timeout", "connect_timeout", "read_timeout",
             "fetch_timeout")


class OptionsError(UsageError, ValueError):
    """An option value no run could use: raised when the Options object is made, so a typo
    (``ocr="off"``) fails at once instead of quietly meaning something else. ``field`` names
    the option, so the command line can name the flag or the config key the user wrote."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Options:
    password: str | None = None  # for encrypted PDFs / office files
    timeout: float = 120.0  # seconds per top-level file (isolated runs)
    memory_limit: int = 4 * GiB  # address-space cap per worker process (isolated runs); 0: none
    workers: int = 0  # 0: one per core
    # Where tasks run: "local" (worker processes here) or "ray" (a Ray cluster at
    # ``address``: "auto" an existing one, "ray://host:port" a remote one, "local" a new one).
    executor: str = "local"
    address: str = "auto"
    batch: int = 32  # small files per Ray task (Ray's per-task overhead, shared); 1: none
    max_file_size: int = 2 * GiB  # larger inputs are refused with too_large
    # Containers (ZIP/TAR/GZ, mail attachments, embedded files).
    max_depth: int = 8  # nesting levels below the top file
    max_members: int = 10_000  # members of one container
    max_unpacked: int = 1 * GiB  # total bytes unpacked under one top-level file (unpack_budget)
    max_ratio: float = 250.0  # uncompressed/compressed ratio above which a member is a bomb
    # Content choices.
    comments: bool = False  # include DOCX/ODT comments
    libreoffice: bool = True  # use LibreOffice headless as a last resort when installed
    tool_timeout: float = 60.0  # seconds for one external helper program (antiword, ...)
    # OCR.
    ocr: str = "auto"  # auto: pages without usable text | always | never
    ocr_lang: str = "eng"  # tesseract languages, e.g. "eng+deu"
    ocr_dpi: int = 300  # render resolution for PDF pages (lower for huge pages)
    ocr_page_timeout: float = 180.0  # seconds per page (isolated runs)
    max_image_pixels: int = 250_000_000  # larger images are refused (decompression bombs)
    searchable_pdf_dir: str | None = None  # run: write OCRed PDFs here, with a text layer
    # Link resolvers: hosts whose /item?id=N pages are Hacker News discussions.
    hn_hosts: tuple[str, ...] = ("news.ycombinator.com", "ycombinator.com")
    # HTML: auto (main for fetched pages, full for files) | main | full | sieve (--topic).
    html: str = "auto"
    topic: str | None = None  # --html sieve: a preset name, a words file, or words
    # Fetching web pages (textsieve.fetch): polite, bounded, typed errors.
    user_agent: str | None = None  # None: textsieve's own (``agent``), naming contact_url
    contact_url: str | None = None  # where a site owner can reach whoever runs the fetches
    # Addresses (textsieve.netpolicy): only public ones unless opened here, for every URL.
    allow_private: bool = False  # loopback, private, link-local, CGNAT, metadata... too
    allow_cidrs: tuple[str, ...] = ()  # networks opened one by one ("127.0.0.1/32")
    obey_robots: bool = True  # robots.txt honoured (False: --ignore-robots, own sites)
    max_crawl_delay: float = 30.0  # a robots.txt Crawl-delay above this is capped to it
    connect_timeout: float = 10.0  # seconds to open a connection
    read_timeout: float = 30.0  # seconds of silence allowed while reading
    fetch_timeout: float = 120.0  # total seconds per URL: redirects, retries and body included
    max_body: int = 100 * MiB  # bodies are read up to this (decoded) size, then too_large
    max_redirects: int = 10
    retries: int = 3  # extra attempts on 429, 5xx, connect errors and timeouts
    backoff: float = 0.5  # first retry wait in seconds, doubled each time, with jitter
    max_retry_after: float = 60.0  # a longer Retry-After is not waited for: the fetch fails
    per_host_concurrency: int = 2  # requests in flight to one host
    per_host_delay: float = 0.5  # minimum seconds between request starts to one host
    # Gmail source (textsieve.mailsrc.gmail); the URLs are overridable for a local test server.
    gmail_api_base: str = "https://gmail.googleapis.com"
    gmail_token_url: str = "https://oauth2.googleapis.com/token"
    gmail_token_file: str | None = None  # None: ~/.config/textsieve/gmail-token.json
    imap_password: str | None = None  # None: ~/.netrc, else a prompt on a terminal
    # s3:// URIs (textsieve.uris): any S3-compatible endpoint; None: the environment's
    # (AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_S3 when set, else AWS).
    s3_endpoint: str | None = None
    # Enrichment (textsieve.enrich: `run --enrich`, `topics`, `summarize`): the number of
    # topics (0: chosen by coherence) and the sentences per summary.
    topics_k: int = 0
    summary_sentences: int = 3
    # Originals kept by `textsieve run` (re-extraction without the network, WARC export).
    keep_originals: str = "fetched"
    fetch_mode: str = "auto"  # run --fetch never: links archived as listed, nothing fetched

    def __post_init__(self) -> None:
        if self.ocr not in OCR_MODES:
            raise OptionsError(f"ocr must be one of {', '.join(OCR_MODES)}, not {self.ocr!r}",
                               "ocr")
        if self.html not in HTML_MODES:
            raise OptionsError(
                f"html must be one of {', '.join(HTML_MODES)}, not {self.html!r}", "html")
        if self.keep_originals not in KEEP_ORIGINALS:
            raise OptionsError(f"keep_originals must be one of {', '.join(KEEP_ORIGINALS)}, "
                               f"not {self.keep_originals!r}", "keep_originals")
        if self.fetch_mode not in FETCH_MODES:
            raise OptionsError(f"fetch_mode must be one of {', '.join(FETCH_MODES)}, "
                               f"not {self.fetch_mode!r}", "fetch_mode")
        if self.executor not in EXECUTORS:
            raise OptionsError(f"executor must be one of {', '.join(EXECUTORS)}, "
                               f"not {self.executor!r}", "executor")
        if not self.ocr_lang or not isinstance(self.ocr_lang, str):
            raise OptionsError("ocr_lang must name at least one tesseract language",
                               "ocr_lang")
        for name, low in _AT_LEAST.items():
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < low:
                raise OptionsError(f"{name} must be a number >= {low:,}, not {value!r}", name)
        if not isinstance(self.memory_limit, int) or (
                self.memory_limit != 0 and self.memory_limit < MIN_MEMORY):
            raise OptionsError(f"memory_limit must be 0 (no cap) or at least {MIN_MEMORY:,} "
                               f"bytes ({MIN_MEMORY // MiB} MiB), not {self.memory_limit!r}",
                               "memory_limit")
        if isinstance(self.allow_cidrs, str):  # one string would be read char by char
            raise OptionsError("allow_cidrs must be a tuple of networks, not one string",
                               "allow_cidrs")
        if self.allow_cidrs:
            import ipaddress  # here: most runs allow no private networks

        for cidr in self.allow_cidrs:
            try:
                ipaddress.ip_network(cidr.strip(), strict=False)
            except (ValueError, AttributeError):
                raise OptionsError(f"allow_cidrs: {cidr!r} is not a network like "
                                   f"10.0.0.0/8 or an address", "allow_cidrs") from None
        for name in _POSITIVE:
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0:
                raise OptionsError(f"{name} must be a number of seconds > 0, not {value!r}",
                                   name)

    def output_fingerprint(self) -> str:
        """A short hash of the options that change what an extraction outputs: an archive
        re-extracts items made with other ones (build-system semantics, like changed
        parameters in a Snakefile)."""
        import hashlib

        relevant = (self.ocr, self.ocr_lang, self.ocr_dpi, self.html, self.topic,
                    self.comments, self.libreoffice)
        return hashlib.sha256(repr(relevant).encode()).hexdigest()[:8]

    @property
    def agent(self) -> str:
        """The User-Agent sent: ``user_agent`` if set, else one that names textsieve (the
        token robots.txt rules are matched against) and, when given, ``contact_url``."""
        if self.user_agent:
            return self.user_agent
        contact = f"; +{self.contact_url}" if self.contact_url else ""
        return f"Mozilla/5.0 (compatible; textsieve/0.1{contact})"

    def with_(self, **changes: Any) -> Options:
        return replace(self, **changes)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], *, base: Options | None = None,
                     origin: str = "options") -> Options:
        """Options from a mapping of field names (a parsed JSON or TOML document, a web
        form, keyword arguments): unknown names are refused, values are coerced the way a
        person writes them (a list for a tuple, ``"512MiB"`` for a size; a bare number for
        a size is bytes, as in ``Options``). ``origin`` names where they came from."""
        return (base or _defaults()).with_(**{
            name: coerce(name, value, origin=origin, sizes_in_mib=False)
            for name, value in _known(values, origin).items()})

    @property
    def unpack_budget(self) -> int:
        """Bytes that may be unpacked under one top-level file: ``max_unpacked``, and under
        a memory cap no more than a share of it. What is unpacked stays in memory as the
        members' text (about once, more for non-ASCII text and Markdown tables), then is
        pickled back to the driver (about once more): a budget near the cap made the worker
        run out of memory and lose every member instead of keeping those that fit."""
        if self.memory_limit == 0:
            return self.max_unpacked
        return min(self.max_unpacked, self.memory_limit // UNPACK_SHARE)

    @property
    def worker_count(self) -> int:
        return self.workers if self.workers > 0 else _cores()


@functools.cache
def _cores() -> int:
    """Cores this process may use (its affinity mask, as a container or taskset sets it);
    asked once, since every ``extract`` call consults it."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# -- how each field is set by a person: flags, config keys, help ---------------------------


@dataclass(frozen=True)
class Knob:
    """How one ``Options`` field is set from the command line and the config file."""

    help: str
    group: str  # the section of --help: documents, containers, ocr, html, fetch, mail
    flag: str = ""  # default: --field-name
    short: str = ""  # -j
    metavar: str = ""
    size: bool = False  # bytes in Options; MiB (or "2GiB") on the command line and in config
    run_only: bool = False  # only `textsieve run` has it (fetching, mail, searchable PDFs)
    path: bool = False  # a path: in a config file, relative to the file's folder
    secret: bool = False  # also --NAME-file FILE (a flag's value shows in ps)
    env: str = ""  # the environment variable the command line takes it from (never the library)
    choices: tuple[str, ...] = ()
    off_flag: str = ""  # a bool's familiar flag for False (--ignore-robots for obey_robots)


GROUPS = {
    "documents": "documents (every input)",
    "containers": "archives, attachments and embedded files",
    "ocr": "OCR",
    "html": "HTML and web pages",
    "fetch": "fetching web pages (run)",
    "mail": "mail sources (run)",
    "enrich": "enrichment (run --enrich, topics, summarize)",
}

KNOBS: dict[str, Knob] = {
    "s3_endpoint": Knob("the S3-compatible endpoint of s3:// URIs (SeaweedFS, MinIO, R2; "
                        "default: AWS)", "fetch", metavar="URL", run_only=True,
                        env="AWS_ENDPOINT_URL"),
    "password": Knob("password for encrypted PDF/Office/OpenDocument files (shows in ps: "
                     "prefer --password-file or TEXTSIEVE_PASSWORD)", "documents", secret=True,
                     env="TEXTSIEVE_PASSWORD"),
    "timeout": Knob("seconds allowed per file before it is stopped", "documents", metavar="S"),
    "memory_limit": Knob("memory cap per worker process (0: no cap)", "documents",
                         metavar="MiB", size=True),
    "workers": Knob("files extracted in parallel (0: one per core)", "documents",
                    flag="--jobs", short="-j", metavar="N"),
    "executor": Knob("where files are extracted: local processes, or a Ray cluster "
                     "(pip install textsieve[ray])", "documents", choices=EXECUTORS),
    "address": Knob("the Ray cluster: auto (the one this machine belongs to), "
                    "ray://host:port, or local (start one here)", "documents",
                    metavar="ADDR"),
    "batch": Knob("small files (under 256 KiB) per Ray task: shares Ray's few ms per "
                  "task among them (1: one file per task)", "documents", metavar="N"),
    "max_file_size": Knob("larger inputs are refused as too_large", "documents",
                          metavar="MiB", size=True),
    "comments": Knob("include document comments (DOCX, ODT)", "documents"),
    "libreoffice": Knob("fall back to LibreOffice for legacy formats when installed",
                        "documents"),
    "tool_timeout": Knob("seconds for one helper program (antiword, catdoc, ...)",
                         "documents", metavar="S"),
    "max_depth": Knob("nesting levels below the top file", "containers", metavar="N"),
    "max_members": Knob("members of one container", "containers", metavar="N"),
    "max_unpacked": Knob("total unpacked under one top-level file", "containers",
                         metavar="MiB", size=True),
    "max_ratio": Knob("uncompressed/compressed ratio above which a member is a bomb",
                      "containers", metavar="X"),
    "ocr": Knob("auto: OCR pages without usable text; always; never", "ocr",
                choices=OCR_MODES),
    "ocr_lang": Knob("OCR languages, tesseract codes joined by +", "ocr", flag="--lang",
                     metavar="LANGS"),
    "ocr_dpi": Knob("render resolution of PDF pages for OCR", "ocr", metavar="DPI"),
    "ocr_page_timeout": Knob("seconds per OCRed page", "ocr", metavar="S"),
    "max_image_pixels": Knob("larger images are refused (decompression bombs)", "ocr",
                             metavar="N"),
    "searchable_pdf_dir": Knob("also write every OCRed PDF here, with an invisible text "
                               "layer", "ocr", flag="--searchable-pdf", metavar="DIR",
                               run_only=True, path=True),
    "hn_hosts": Knob("hosts whose /item?id=N pages are Hacker News discussions "
                     "(comma-separated)", "html", metavar="HOSTS", run_only=True),
    "html": Knob("HTML: main content, all visible text, or only the part about --topic "
                 "(sieve); auto: main for web pages, full for files", "html",
                 choices=HTML_MODES),
    "topic": Knob("for --html sieve: a preset (recipe-directions, recipe-ingredients), a "
                  "file of words/phrases one a line, or words", "html", metavar="WORDS|FILE"),
    "user_agent": Knob("the User-Agent header sent when fetching (default: textsieve's own, "
                       "naming --contact-url)", "fetch", metavar="UA", run_only=True),
    "contact_url": Knob("named in the User-Agent, so site owners can reach you", "fetch",
                        metavar="URL", run_only=True),
    "allow_private": Knob("also fetch loopback, private, link-local and metadata addresses "
                          "(refused by default: links in mail and pages are not trusted)",
                          "fetch", run_only=True),
    "allow_cidrs": Knob("fetch from these networks although they are not public, e.g. "
                        "192.168.1.0/24 (repeatable, or comma-separated)", "fetch",
                        flag="--allow-cidr", metavar="CIDR", run_only=True),
    "obey_robots": Knob("honour robots.txt; --ignore-robots only for sites that are yours",
                        "fetch", off_flag="--ignore-robots", run_only=True),
    "max_crawl_delay": Knob("a robots.txt Crawl-delay above this many seconds is capped to "
                            "it", "fetch", metavar="S", run_only=True),
    "connect_timeout": Knob("seconds to open a connection", "fetch", metavar="S",
                            run_only=True),
    "read_timeout": Knob("seconds of silence allowed while reading", "fetch", metavar="S",
                         run_only=True),
    "fetch_timeout": Knob("seconds allowed per URL, redirects, retries and body included",
                          "fetch", metavar="S", run_only=True),
    "max_body": Knob("bodies are read up to this size, then too_large", "fetch",
                     metavar="MiB", size=True, run_only=True),
    "max_redirects": Knob("redirects followed per URL", "fetch", metavar="N", run_only=True),
    "retries": Knob("extra attempts on 429, 5xx, connect errors and timeouts", "fetch",
                    metavar="N", run_only=True),
    "backoff": Knob("first retry wait in seconds, doubled each time", "fetch", metavar="S",
                    run_only=True),
    "max_retry_after": Knob("a longer Retry-After is not waited for: the fetch fails",
                            "fetch", metavar="S", run_only=True),
    "per_host_concurrency": Knob("requests in flight to one host", "fetch", metavar="N",
                                 run_only=True),
    "per_host_delay": Knob("minimum seconds between requests to one host", "fetch",
                           flag="--host-delay", metavar="S", run_only=True),
    "gmail_api_base": Knob("the Gmail API's base URL", "mail", metavar="URL", run_only=True),
    "gmail_token_url": Knob("the OAuth token endpoint", "mail", metavar="URL", run_only=True),
    "gmail_token_file": Knob("the Gmail token file (default: "
                             "~/.config/textsieve/gmail-token.json)", "mail", metavar="FILE",
                             run_only=True, path=True),
    "imap_password": Knob("password for imap:// sources (shows in ps: prefer "
                          "--imap-password-file or TEXTSIEVE_IMAP_PASSWORD; default: ~/.netrc, "
                          "else a prompt)", "mail", run_only=True, secret=True,
                          env="TEXTSIEVE_IMAP_PASSWORD"),
    "topics_k": Knob("number of topics (0: chosen by coherence)", "enrich", flag="--topics-k",
                     metavar="K", run_only=True),
    "summary_sentences": Knob("sentences per summary", "enrich", metavar="N", run_only=True),
    "keep_originals": Knob("keep the bytes as received in the archive (content-addressed, "
                           "compressed): what was fetched or came in a mail or WARC, all "
                           "(files too), or none; items are re-extracted from them offline",
                           "documents", choices=KEEP_ORIGINALS, run_only=True),
    "fetch_mode": Knob("never: archive the links of bookmarks, lists and mails with what "
                       "their source says (title, labels, date, note) and fetch nothing; "
                       "a later run without it fetches them", "fetch", flag="--fetch",
                       choices=FETCH_MODES, run_only=True),
}

CONFIG_FILE = "textsieve.toml"  # looked for in the working folder when --config is not given
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "k": 1024, "m": MiB, "g": GiB, "t": 1024 * GiB}


@functools.cache
def _defaults() -> Options:
    return Options()


def field_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Options))


def flag_of(name: str) -> str:
    """The long command-line flag of a field (``--jobs`` for ``workers``)."""
    knob = KNOBS.get(name)
    return (knob.flag if knob and knob.flag else "--" + name.replace("_", "-"))


def _known(values: Mapping[str, Any], origin: str) -> Mapping[str, Any]:
    """``values`` when every key is a field; a typo is refused (and a near name offered)
    rather than silently ignored, which would leave the default the user meant to change."""
    import difflib

    unknown = sorted(set(values) - set(field_names()))
    if unknown:
        near = difflib.get_close_matches(unknown[0], field_names(), n=1)
        raise OptionsError(f"{origin}: unknown option {unknown[0]!r}"
                           + (f" (did you mean {near[0]!r}?)" if near else "")
                           + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""),
                           unknown[0])
    return values


def parse_size(value: Any, *, default_unit: int = MiB) -> int:
    """``2048`` (in ``default_unit``), ``"512MiB"``, ``"2 GiB"``, ``"1.5g"`` -> bytes."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, (int, float)):
        return int(value * default_unit)
    m = _SIZE.match(str(value))
    if not m:
        raise ValueError(f"not a size (a number of MiB, or 512MiB, 2GiB): {value!r}")
    unit = _UNITS[m.group(2)[0].lower()] if m.group(2) else default_unit
    return int(float(m.group(1)) * unit)


def coerce(name: str, value: Any, *, origin: str = "options", sizes_in_mib: bool = True) -> Any:
    """``convert_value``, its failure an ``OptionsError`` naming ``origin`` and the field."""
    try:
        return convert_value(name, value, sizes_in_mib=sizes_in_mib)
    except ValueError as exc:
        raise OptionsError(f"{origin}: {name}: {exc}", name) from None


def convert_value(name: str, value: Any, *, sizes_in_mib: bool = True) -> Any:
    """A value as a person writes it (a command-line string, a TOML or JSON value) -> the
    type of the field ``name`` (``ValueError`` when it is not one); the range checks stay
    in ``Options.__post_init__``."""
    default = getattr(_defaults(), name)
    knob = KNOBS.get(name)
    try:
        if knob is not None and knob.size:
            return parse_size(value, default_unit=MiB if sizes_in_mib else 1)
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            word = str(value).strip().lower()
            if word in ("1", "true", "yes", "on"):
                return True
            if word in ("0", "false", "no", "off"):
                return False
            raise ValueError(f"not true or false: {value!r}")
        if isinstance(default, tuple):
            items = value.split(",") if isinstance(value, str) else list(value)
            return tuple(str(x).strip() for x in items if str(x).strip())
        if isinstance(value, bool):
            raise ValueError(f"not a number: {value!r}")
        if isinstance(default, int):
            number = float(value)
            if number != int(number):
                raise ValueError(f"not a whole number: {value!r}")
            return int(number)
        if isinstance(default, float):
            return float(value)
        if value is None or isinstance(value, str):
            return value
        raise ValueError(f"not text: {value!r}")
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def load_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The settings of a ``textsieve.toml``: top-level keys are ``Options`` field names,
    written as on the command line (sizes in MiB or with a unit); relative paths are taken
    from the file's folder. A missing file, bad TOML, an unknown key or a bad value is a
    ``ConfigError`` naming the file (and the key)."""
    import tomllib  # here: only a run with a config file pays for the parser

    from .errors import ConfigError

    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"config {file}: cannot read it ({why})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {file}: not valid TOML ({exc})") from None
    origin = f"config {file}"
    try:
        values = {name: coerce(name, value, origin=origin)
                  for name, value in _known(data, origin).items()}
    except OptionsError as exc:
        raise ConfigError(str(exc)) from None
    for name, value in values.items():
        if KNOBS[name].path and isinstance(value, str) and value:
            values[name] = str((file.parent / os.path.expanduser(value)).resolve())
    return values
