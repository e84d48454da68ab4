"""All knobs of an extraction in one typed, immutable object.

It flows unchanged from the CLI / API / server into every stage; no stage reads the
environment or a global instead.
"""

from __future__ import annotations

import functools
import ipaddress
import os
from dataclasses import dataclass, replace
from typing import Any

MiB = 1024 * 1024
GiB = 1024 * MiB

OCR_MODES = ("auto", "always", "never")
MIN_MEMORY = 64 * MiB  # a memory cap below this would stop Python itself
HTML_MODES = ("auto", "main", "full", "sieve")
# What `textsieve run --enrich` may keep up to date (textsieve.enrich), in the order it runs.
ENRICH_KINDS = ("topics", "summaries", "keyphrases", "related", "duplicates")
# Each numeric knob's lowest sensible value; below it a run would refuse every input, never
# stop, or spin (a zero timeout, a zero memory cap, no members allowed in any container).
_AT_LEAST: dict[str, float] = {
    "workers": 0, "max_depth": 0, "max_redirects": 0, "retries": 0, "backoff": 0,
    "max_retry_after": 0, "per_host_delay": 0, "max_members": 1, "per_host_concurrency": 1,
    "max_ratio": 1, "ocr_dpi": 50, "max_file_size": 1,
    "max_unpacked": 1, "max_image_pixels": 1, "max_body": 1, "max_crawl_delay": 0,
    "topics_k": 0, "summary_sentences": 1,
}
_POSITIVE = ("timeout", "tool_timeout", "ocr_page_timeout", "connect_timeout", "read_timeout",
             "fetch_timeout")


class OptionsError(ValueError):
    """An option value no run could use: raised when the Options object is made, so a typo
    (``ocr="off"``) fails at once instead of quietly meaning something else."""


@dataclass(frozen=True)
class Options:
    password: str | None = None  # for encrypted PDFs / office files
    timeout: float = 120.0  # seconds per top-level file (isolated runs)
    memory_limit: int = 4 * GiB  # address-space cap per worker process (isolated runs); 0: none
    workers: int = 0  # 0: one per core
    max_file_size: int = 2 * GiB  # larger inputs are refused with too_large
    # Containers (ZIP/TAR/GZ, mail attachments, embedded files).
    max_depth: int = 8  # nesting levels below the top file
    max_members: int = 10_000  # members of one container
    max_unpacked: int = 1 * GiB  # total bytes unpacked under one top-level file
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
    # Enrichment after a run (textsieve.enrich): which capabilities (empty: all of
    # ENRICH_KINDS when enrichment is asked for), the number of topics (0: chosen by
    # coherence) and the sentences per summary.
    enrich: tuple[str, ...] = ()
    topics_k: int = 0
    summary_sentences: int = 3

    def __post_init__(self) -> None:
        if self.ocr not in OCR_MODES:
            raise OptionsError(f"ocr must be one of {', '.join(OCR_MODES)}, not {self.ocr!r}")
        if self.html not in HTML_MODES:
            raise OptionsError(
                f"html must be one of {', '.join(HTML_MODES)}, not {self.html!r}")
        if not self.ocr_lang or not isinstance(self.ocr_lang, str):
            raise OptionsError("ocr_lang must name at least one tesseract language")
        for name, low in _AT_LEAST.items():
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < low:
                raise OptionsError(f"{name} must be a number >= {low:,}, not {value!r}")
        if not isinstance(self.memory_limit, int) or (
                self.memory_limit != 0 and self.memory_limit < MIN_MEMORY):
            raise OptionsError(f"memory_limit must be 0 (no cap) or at least {MIN_MEMORY:,} "
                               f"bytes, not {self.memory_limit!r}")
        unknown = [k for k in self.enrich if k not in ENRICH_KINDS] if not isinstance(
            self.enrich, str) else [self.enrich]
        if unknown:
            raise OptionsError(f"enrich: {', '.join(map(repr, unknown))} is not one of "
                               f"{', '.join(ENRICH_KINDS)} (a tuple of them)")
        if isinstance(self.allow_cidrs, str):  # one string would be read char by char
            raise OptionsError("allow_cidrs must be a tuple of networks, not one string")
        for cidr in self.allow_cidrs:
            try:
                ipaddress.ip_network(cidr.strip(), strict=False)
            except (ValueError, AttributeError):
                raise OptionsError(f"allow_cidrs: {cidr!r} is not a network like "
                                   f"10.0.0.0/8 or an address") from None
        for name in _POSITIVE:
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0:
                raise OptionsError(f"{name} must be a number of seconds > 0, not {value!r}")

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
