"""Which harvested links are junk: sensible defaults a person can extend or replace.

A mailbox of links is full of things nobody wants archived: comment widgets, ad and
analytics hosts, share buttons, unsubscribe and preference pages, open-tracking pixels.
They are dropped by host (suffix match, so ``disqus.com`` covers ``foo.disqus.com``), by
URL pattern, or by the anchor text a newsletter footer gives them ("Unsubscribe").
Tracking parameters are a different matter: the link is good, only the parameters go, so
they are stripped by the normaliser instead (``strip_params`` adds names to its list).

Overrides come as keyword arguments or a TOML file::

    exclude_hosts = ["example-ads.com"]      # added to the defaults
    allow_hosts = ["disqus.com"]             # removed from the defaults
    exclude_patterns = ["/sponsored/"]       # regular expressions, searched in the URL
    strip_params = ["source"]                # more query parameters to strip
    replace_defaults = false                 # true: the lists above replace the defaults
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from .normalize import BadUrl, normalize_url, strip_userinfo

DEFAULT_EXCLUDED_HOSTS: frozenset[str] = frozenset({
    # comment widgets
    "disqus.com", "disquscdn.com", "intensedebate.com",
    # ads, analytics, tag managers
    "doubleclick.net", "googleadservices.com", "googlesyndication.com",
    "google-analytics.com", "googletagmanager.com", "googletagservices.com",
    "adservice.google.com", "scorecardresearch.com", "quantserve.com", "outbrain.com",
    "taboola.com", "criteo.com", "adnxs.com", "moatads.com", "amazon-adsystem.com",
    # newsletter click/open trackers whose target cannot be read without a fetch
    "list-manage.com", "mcsv.net", "mcdlv.net", "ct.sendgrid.net", "mandrillapp.com",
    "mailgun.org", "sparkpostmail.com", "hubspotlinks.com", "exct.net", "rs6.net",
    "campaign-archive.com", "eotrx.substackcdn.com", "createsend1.com", "cmail19.com",
    "cmail20.com",
    # share buttons
    "addthis.com", "sharethis.com", "addtoany.com",
})

DEFAULT_EXCLUDED_PATTERNS: tuple[str, ...] = (
    r"unsubscribe", r"/unsub\b", r"\bopt[-_]?out\b",
    r"manage[-_/]?(your[-_/]?)?(preferences|subscription|email)",
    r"(email|notification|subscription)[-_]?(preferences|settings)",
    r"/preferences(/|\?|$)", r"/account/(email|notifications)",
    # share intents: facebook sharer, twitter/x intents, linkedin, reddit, pinterest
    r"^https?://([a-z0-9-]+\.)?facebook\.com/(sharer|share\.php|dialog/(share|feed))",
    r"^https?://([a-z0-9-]+\.)?(twitter|x)\.com/(intent/|share\b|home\?status=)",
    r"^https?://([a-z0-9-]+\.)?linkedin\.com/(sharearticle|shareArticle|sharing/)",
    r"^https?://([a-z0-9-]+\.)?reddit\.com/submit",
    r"^https?://([a-z0-9-]+\.)?pinterest\.[a-z.]+/pin/create",
    r"^https?://(api\.)?whatsapp\.com/send", r"^https?://wa\.me/\?text=",
    r"^https?://t\.me/share",
    # open-tracking paths (pixels), web beacons
    r"/(track|tracking)/(open|click|pixel)\b", r"/(e|wf)/o(pen)?\b", r"/o/[A-Za-z0-9_-]{16,}",
    r"/open\.(gif|png|aspx|php)\b", r"/open\?(token|id|u|e)=",
    r"/(pixel|beacon)(\.gif|\.png)?(\?|$)",
    # "view in browser" copies of the mail itself and app-store badges
    r"/webversion\b", r"view[-_]?(in[-_]?)?browser", r"/email/web-version",
    r"^https?://(apps\.apple\.com|itunes\.apple\.com|play\.google\.com/store)/",
)

DEFAULT_EXCLUDED_TEXTS: tuple[str, ...] = (
    r"\bunsubscribe\b", r"\bopt[- ]out\b", r"manage (your )?(preferences|subscription)",
    r"update (your )?(preferences|profile)", r"email preferences",
    r"view (this email |it )?(in|on) (your |a )?(web )?browser", r"\bview online\b",
    r"\bforward to a friend\b",
)

_FETCHABLE = ("http", "https")


@dataclass
class Rules:
    """Exclusion and stripping rules for harvested links (defaults: see module doc)."""

    exclude_hosts: frozenset[str] = DEFAULT_EXCLUDED_HOSTS
    exclude_patterns: tuple[str, ...] = DEFAULT_EXCLUDED_PATTERNS
    exclude_texts: tuple[str, ...] = DEFAULT_EXCLUDED_TEXTS
    strip_params: frozenset[str] = frozenset()
    _url_re: re.Pattern[str] = field(init=False, repr=False)
    _text_re: re.Pattern[str] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.exclude_hosts = frozenset(h.lower().strip(".") for h in self.exclude_hosts)
        self.strip_params = frozenset(p.lower() for p in self.strip_params)
        # One alternation: a single regex scan per URL instead of one per pattern.
        self._url_re = re.compile("|".join(f"(?:{p})" for p in self.exclude_patterns)
                                  or r"(?!)", re.I)
        self._text_re = (re.compile("|".join(f"(?:{p})" for p in self.exclude_texts), re.I)
                         if self.exclude_texts else None)

    @classmethod
    def from_options(cls, *, exclude_hosts: list[str] | tuple[str, ...] = (),
                     allow_hosts: list[str] | tuple[str, ...] = (),
                     exclude_patterns: list[str] | tuple[str, ...] = (),
                     exclude_texts: list[str] | tuple[str, ...] = (),
                     strip_params: list[str] | tuple[str, ...] = (),
                     replace_defaults: bool = False) -> Rules:
        """Defaults extended (or replaced) by the given lists; ``allow_hosts`` removes."""
        base_hosts = frozenset() if replace_defaults else DEFAULT_EXCLUDED_HOSTS
        base_pats = () if replace_defaults else DEFAULT_EXCLUDED_PATTERNS
        base_texts = () if replace_defaults else DEFAULT_EXCLUDED_TEXTS
        allow = {h.lower().strip(".") for h in allow_hosts}
        hosts = (base_hosts | {h.lower().strip(".") for h in exclude_hosts}) - allow
        return cls(exclude_hosts=frozenset(hosts),
                   exclude_patterns=tuple(base_pats) + tuple(exclude_patterns),
                   exclude_texts=tuple(base_texts) + tuple(exclude_texts),
                   strip_params=frozenset(strip_params))

    @classmethod
    def load(cls, path: str | Path) -> Rules:
        """Rules from a TOML file (keys as ``from_options``); unknown keys are an error."""
        with open(path, "rb") as f:
            data = tomllib.load(f)
        known = {"exclude_hosts", "allow_hosts", "exclude_patterns", "exclude_texts",
                 "strip_params", "replace_defaults"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"{path}: unknown link rule keys: {', '.join(sorted(unknown))}")
        return cls.from_options(**data)

    def host_excluded(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        while host:
            if host in self.exclude_hosts:
                return True
            _, _, host = host.partition(".")
        return False

    def excluded(self, url: str, text: str | None = None) -> bool:
        """True for junk: not http(s), an excluded host, URL pattern or anchor text."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return True
        if parts.scheme.lower() not in _FETCHABLE or not parts.hostname:
            return True
        if self.host_excluded(parts.hostname):
            return True
        if self._url_re.search(url):
            return True
        return bool(text and self._text_re is not None and self._text_re.search(text))

    def clean(self, url: str) -> str:
        """The normal form, with the normaliser's tracking parameters and ours stripped; a
        malformed URL comes back as given (minus credentials) to become a bad_url record."""
        try:
            return normalize_url(url, self.strip_params)
        except BadUrl:
            return strip_userinfo(url)
