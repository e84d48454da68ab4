"""Harvest the links a mail points to, and tell a share from a hand-written mail.

Two kinds of mail end up in a mailbox of links. A hand-written one (plain text, a few
links, maybe a Gmail HTML twin) yields every link it holds. A feed-reader share or a
newsletter carries a whole article as HTML: that article is the thing to archive, with its
story link, not the dozens of links inside it (related posts, author pages, social
buttons). The decision uses generic signals: headers and sender domains of share services
and newsletter platforms (List-Id / List-Unsubscribe), "via Feedly"-style phrases, an
article-like HTML part and a single prominent title link. A newsletter whose HTML is not
an article (a digest of links) is harvested like a hand-written mail.

Text parts go through a URL pattern that copes with what mail clients do to URLs
(balanced parentheses, trailing punctuation, ``<angle brackets>``, lines wrapped inside a
URL, format=flowed); bare domains are not links. HTML parts give their anchors, resolved
against ``<base>``. Every URL is unwrapped from redirect wrappers, checked against the
exclusion ``Rules`` (and the mail's own List-Unsubscribe targets and tracking pixels),
normalised and deduplicated in order of appearance.
"""

from __future__ import annotations

import contextlib
import email.policy
import re
from dataclasses import dataclass, field
from email.message import Message
from urllib.parse import urljoin

from ..kernels import mime
from ..model import Link
from .resolve import resolve_wrapper
from .rules import Rules

_DEFAULT_RULES: Rules | None = None


@dataclass
class Harvest:
    """The links of one mail, and the mail's own article when it is a share/newsletter."""

    links: list[Link]  # deduplicated by normal form, in order; the story link first
    article: tuple[str, bytes] | None  # (title, HTML bytes) of a share's own article
    kind: str  # "share" | "newsletter" | "personal"
    pixels: list[str] = field(default_factory=list)  # tracking pixels seen (never links)


def harvest(raw: bytes | Message, rules: Rules | None = None) -> Harvest:
    """Links and article of one mail (raw RFC 5322 bytes or a parsed message)."""
    global _DEFAULT_RULES
    if rules is None:
        if _DEFAULT_RULES is None:
            _DEFAULT_RULES = Rules()
        rules = _DEFAULT_RULES
    # The legacy policy: harvesting only walks parts, and the modern policy's header
    # objects cost more than all the rest of the harvest (sender checks use raw headers).
    msg = raw if isinstance(raw, Message) else mime.parse_message(raw, email.policy.compat32)
    parts = _bodies(msg)
    plains = [body for ctype, body in parts if ctype == "plain"]
    docs_all = [_HtmlPart.read(body) for ctype, body in parts if ctype == "html"]
    docs = [d for d in docs_all if d is not None]
    subject = mime.header(msg, "Subject") or ""
    dropped = _list_unsubscribe(msg, rules)
    pixels: list[str] = []
    for d in docs:
        pixels.extend(p for p in d.pixels if p not in pixels)
    dropped.update(rules.clean(p) for p in pixels)
    out = _Collector(rules, dropped)

    texts = " ".join(plains) + " " + " ".join(d.text for d in docs)
    article_doc = max((d for d in docs if d.article_like), key=lambda d: d.size, default=None)
    title_anchor = None
    for d in docs:
        title_anchor = d.title_anchor(subject, out)
        if title_anchor:
            break
    kind = _kind(msg, texts, article_doc is not None and title_anchor is not None)
    if kind != "personal" and (kind == "share" or article_doc is not None):
        story = title_anchor or _fallback_story(docs, plains, out)
        if story is not None:
            out.add(story[0], story[1], story=True)
        article = None
        if article_doc is not None:
            title = _clean_subject(subject) or (story[1] if story else None) or "article"
            article = (title, b"\xef\xbb\xbf" + article_doc.html.encode("utf-8", "replace"))
        return Harvest(out.links, article, kind, pixels)
    parsed = iter(docs_all)
    for ctype, body in parts:  # hand-written (or a digest): every link, in mail order
        if ctype == "html":
            html_doc = next(parsed)
            for url, text in (html_doc.links if html_doc is not None else ()):
                out.add(url, text)
        else:
            for url in text_urls(body):
                out.add(url, None)
    return Harvest(out.links, None, kind, pixels)


# --------------------------------------------------------------------------------------
# Collecting: unwrap, exclude, normalise, deduplicate
# --------------------------------------------------------------------------------------


class _Collector:
    def __init__(self, rules: Rules, dropped: set[str]) -> None:
        self.rules = rules
        self.dropped = dropped
        self.links: list[Link] = []
        self.seen: set[str] = set()

    def accept(self, original: str, text: str | None) -> str | None:
        """The normal form of a link worth keeping, or None."""
        target = resolve_wrapper(original)
        if self.rules.excluded(target, text) or (
                target != original and self.rules.excluded(original, None)):
            return None
        url = self.rules.clean(target)
        return None if url in self.dropped else url

    def add(self, original: str, text: str | None, *, story: bool = False) -> None:
        url = self.accept(original, text)
        if url is None or url in self.seen:
            return
        self.seen.add(url)
        self.links.append(Link(url=url, original=original, text=text or None, story=story))


def _raw(msg: Message, name: str) -> str:
    value = mime.raw_header(msg, name)
    return mime.fix_header(value) if value else ""


def _list_unsubscribe(msg: Message, rules: Rules) -> set[str]:
    value = _raw(msg, "List-Unsubscribe")
    return {rules.clean(u) for u in re.findall(r"<\s*(https?://[^>\s]+)\s*>", value)}


# --------------------------------------------------------------------------------------
# Mail structure
# --------------------------------------------------------------------------------------


def _bodies(msg: Message) -> list[tuple[str, str]]:
    """("plain" | "html", decoded body) in mail order, attachments skipped; in an
    alternative, the HTML twin wins (it has the anchor texts) unless it is empty."""
    out: list[tuple[str, str]] = []
    stack: list[tuple[Message, int]] = [(msg, 0)]
    while stack:
        part, depth = stack.pop()
        if depth > mime.MAX_MIME_DEPTH:
            continue
        try:
            ctype = part.get_content_type()
        except Exception:
            ctype = "text/plain"
        if part.is_multipart():
            subs = [p for p in part.get_payload() if isinstance(p, Message)]
            if ctype == "multipart/alternative" and subs:
                rich = [p for p in subs if p.is_multipart() or p.get_content_type() == "text/html"]
                plain = [p for p in subs if p.get_content_type() == "text/plain"]
                if rich and (rich[-1].is_multipart() or mime.payload(rich[-1]).strip()):
                    subs = [rich[-1]]
                else:
                    subs = plain[:1] or subs[-1:]
            stack.extend((s, depth + 1) for s in reversed(subs))
            continue
        if ctype == "message/rfc822":  # a forwarded mail: its links count too
            inner = part.get_payload()
            inner = inner[0] if isinstance(inner, list) and inner else inner
            if isinstance(inner, Message):
                stack.append((inner, depth + 1))
            continue
        try:
            attached = bool(part.get_filename()) or part.get_content_disposition() == "attachment"
        except Exception:
            attached = False
        if attached or not ctype.startswith(("text/", "multipart/")):
            continue
        try:
            charset = part.get_content_charset()
        except Exception:
            charset = None
        text = mime.decode_body(mime.payload(part), charset)
        if ctype == "text/html":
            out.append(("html", text))
        elif ctype in ("text/plain", "text/enriched") or ctype.startswith("multipart/"):
            if _is_flowed(part):
                text = _unflow(text, _param(part, "delsp").lower() == "yes")
            out.append(("plain", text))
    return out


def _param(part: Message, name: str) -> str:
    try:
        value = part.get_param(name)
    except Exception:
        return ""
    return value if isinstance(value, str) else ""


def _is_flowed(part: Message) -> bool:
    return _param(part, "format").lower() == "flowed"


def _unflow(text: str, delsp: bool) -> str:
    """RFC 3676: a line ending in a space continues on the next one (delsp: glued)."""
    out: list[str] = []
    buf = ""
    for line in text.split("\n"):
        if line.startswith(" "):
            line = line[1:]  # space-stuffing
        if line.endswith(" ") and line != "-- ":
            buf += line[:-1] if delsp else line
            continue
        out.append(buf + line)
        buf = ""
    if buf:
        out.append(buf)
    return "\n".join(out)


# --------------------------------------------------------------------------------------
# URLs in text
# --------------------------------------------------------------------------------------

# URL characters: no whitespace, no <>", and not CJK (Japanese text runs into URLs).
_U = r"[^\s<>\"\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]"
_TEXT_URL = re.compile(
    r"<(?:URL:)?[ \t]*((?:https?://|www\.)[^<>\"]{1,4096}?)[ \t]*>"
    rf"|((?:https?://|(?<![\w@.:/-])www\.[\w-]+\.){_U}+)", re.I)
_QUOTE = re.compile(r"[ \t]*((?:>[ \t]?)*)")
_CONT = re.compile(rf"{_U}+")
_TRAIL = ".,;:!?'\"*_»”’›…"
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_WRAP_WIDTH = 60  # a line this long ending in a URL may have been wrapped by the client


def text_urls(text: str) -> list[str]:
    """The URLs in a text body, in order, as written (``www.`` ones given https://)."""
    out: list[str] = []
    pos = 0
    n = len(text)
    while True:
        m = _TEXT_URL.search(text, pos)
        if m is None:
            return out
        if m.group(1):
            url = re.sub(r"\s+", "", m.group(1))
            end = m.end()
        else:
            url, end = m.group(2), m.end()
            while end < n and text[end] == "\n":
                cont = _continuation(text, m.start(), end)
                if cont is None:
                    break
                url += cont[0]
                end = cont[1]
        url = _trim(url)
        if url.lower().startswith("www."):
            url = "https://" + url
        if len(url) > len("https://x."):
            out.append(url)
        pos = max(end, m.start() + 1)


def _continuation(text: str, start: int, end: int) -> tuple[str, int] | None:
    """The start of the next line if it continues a URL a mail client wrapped: same quote
    prefix, no indent, and either clearly URL-ish (starts with / ? & = # %) or after a long
    line, a URL-ish token alone on its line or a token after a URL cut at - ? & = _ %."""
    line_start = text.rfind("\n", 0, start) + 1
    line = text[line_start:end]
    nxt_end = text.find("\n", end + 1)
    if nxt_end == -1:
        nxt_end = len(text)
    nxt = text[end + 1:nxt_end].rstrip()
    qa = _QUOTE.match(line)
    qb = _QUOTE.match(nxt)
    if qa is None or qb is None or qa.group(1).replace(" ", "") != qb.group(1).replace(" ", ""):
        return None
    body = nxt[qb.end():]
    tok = _CONT.match(body)
    if tok is None or _TEXT_URL.match(body):
        return None
    token = tok.group()
    stop = end + 1 + qb.end() + len(token)
    if token.startswith(("/", "?", "&", "=", "#", "%")):
        return token, stop
    if len(line) < _WRAP_WIDTH or not any(c.isalnum() for c in token) or token == "--":
        return None
    urlish = any(c in "/?=&%#_.-~+" or c.isdigit() for c in token)
    if (token == body and urlish) or line.endswith(("-", "?", "&", "=", "_", "%")):
        return token, stop
    return None


def _trim(url: str) -> str:
    """Drop trailing punctuation that belongs to the sentence, not the URL."""
    while url:
        c = url[-1]
        if c in _TRAIL or (c in _CLOSERS and url.count(_CLOSERS[c]) < url.count(c)):
            url = url[:-1]
        elif url.endswith(("&gt;", "&lt;")):
            url = url[:-4]
        else:
            return url
    return url


# --------------------------------------------------------------------------------------
# HTML parts
# --------------------------------------------------------------------------------------

_BLOCK_MIN = 80  # characters in a paragraph of prose
_ARTICLE_MIN_CHARS = 1200
_ARTICLE_MIN_PARAS = 3
_NOT_IN = "[not(ancestor::a)][not(ancestor::script)][not(ancestor::style)][not(ancestor::head)]"


@dataclass
class _HtmlPart:
    html: str
    links: list[tuple[str, str]]  # (absolute URL as written, anchor text), document order
    headings: list[tuple[str, str]]  # anchors inside h1-h3
    pixels: list[str]
    text: str  # the text outside anchors (phrases, bare URLs)
    prose: int  # characters in prose paragraphs
    paras: int

    @property
    def size(self) -> int:
        return self.prose

    @property
    def article_like(self) -> bool:
        return self.prose >= _ARTICLE_MIN_CHARS and self.paras >= _ARTICLE_MIN_PARAS

    @classmethod
    def read(cls, html: str) -> _HtmlPart | None:
        import lxml.html

        if not html.strip():
            return None
        parser = lxml.html.HTMLParser(encoding="utf-8", no_network=True, remove_comments=True,
                                      remove_pis=True)
        try:
            root = lxml.html.document_fromstring(html.encode("utf-8", "replace"), parser=parser)
        except Exception:  # hopeless markup: its text still has URLs
            return cls(html, [(u, "") for u in text_urls(re.sub(r"<[^>]*>", " ", html))],
                       [], [], html, 0, 0)
        base = ""
        for b in root.iter("base"):
            base = (b.get("href") or "").strip()
            if base:
                break
        pixels = [src for img in root.iter("img") if (src := _pixel(img, base))]
        links: list[tuple[str, str]] = []
        headings: list[tuple[str, str]] = []
        texts: list[str] = []
        for node in root.xpath(f"//a[@href] | //area[@href] | //body//text(){_NOT_IN}"):
            if isinstance(node, str):
                texts.append(node)
                for u in text_urls(node):
                    links.append((u, ""))
                continue
            url = _absolute(node.get("href") or "", base)
            if url is None:
                continue
            label = " ".join(node.text_content().split())
            if not label:
                label = " ".join(node.xpath(".//img/@alt")).strip()
            links.append((url, label))
            if node.xpath("ancestor::h1 | ancestor::h2 | ancestor::h3"):
                headings.append((url, label))
        prose = paras = 0
        for el in root.xpath("//p | //blockquote[not(.//p)] | //div[not(.//div|.//p|.//table)]"):
            n = len(" ".join(el.text_content().split()))
            if n >= _BLOCK_MIN:
                prose += n
                paras += 1
        return cls(html, links, headings, pixels, " \n".join(texts), prose, paras)

    def title_anchor(self, subject: str, out: _Collector) -> tuple[str, str] | None:
        """The prominent title link: an anchor in a heading, or one whose text is the
        subject; only links that survive the rules count."""
        for url, text in self.headings:
            if text and out.accept(url, text):
                return url, text
        want = _fold(_clean_subject(subject))
        if len(want) >= 8:
            for url, text in self.links:
                got = _fold(text)
                close = got == want or (len(got) >= 15 and (got in want or want in got))
                if got and close and out.accept(url, text):
                    return url, text
        return None


def _absolute(href: str, base: str) -> str | None:
    href = re.sub(r"\s+", "", href)
    if not href or href.startswith("#"):
        return None
    if base:
        # A broken IPv6 literal in the base or the link: kept as is (an absolute one becomes
        # a bad_url record, a relative one is dropped).
        with contextlib.suppress(ValueError):
            href = urljoin(base, href)
    low = href[:8].lower()
    if low.startswith(("http://", "https://")):
        return href
    if low.startswith("www."):
        return "https://" + href
    return None  # relative without <base>, mailto:, tel:, javascript:


_PX = re.compile(r"(width|height)\s*:\s*([0-9.]+)\s*px", re.I)


def _pixel(img: object, base: str) -> str | None:
    """The URL of an image that is a tracking pixel (1x1, or hidden), else None."""
    get = img.get  # type: ignore[attr-defined]
    src = _absolute(get("src") or "", base)
    if src is None:
        return None
    style = (get("style") or "").lower().replace(" ", "")
    if "display:none" in style or "visibility:hidden" in style:
        return src
    dims = {k.lower(): v for k, v in _PX.findall(style)}
    w = get("width") or dims.get("width")
    h = get("height") or dims.get("height")
    try:
        if w is not None and h is not None and float(str(w).rstrip("px")) <= 1 \
                and float(str(h).rstrip("px")) <= 1:
            return src
    except ValueError:
        return None
    return None


# --------------------------------------------------------------------------------------
# Kind of mail and its story link
# --------------------------------------------------------------------------------------

_SHARE_DOMAINS = re.compile(
    r"[@.](feedly\.com|inoreader\.com|instapaper\.com|getpocket\.com|newsblur\.com|"
    r"theoldreader\.com|feedbin\.com|readwise\.io|omnivore\.app|bazqux\.com)\b", re.I)
_SHARE_PHRASE = re.compile(
    r"\b(shared|sent|saved|posted)\s+(from|via|with|using)\s+(feedly|inoreader|instapaper|"
    r"pocket|newsblur|the old reader|feedbin|readwise|apple news|google news)\b"
    r"|\bvia\s+(feedly|inoreader|instapaper|pocket|newsblur)\b"
    r"|\bshared\s+(this|a|an)\s+(story|article|post)\s+with\s+you\b", re.I)
_NEWSLETTER_DOMAINS = re.compile(
    r"[@.](substack\.com|buttondown\.email|buttondown\.com|beehiiv\.com|ghost\.io|"
    r"convertkit\.com|ck\.page|mcsv\.net|mcdlv\.net|mailchimpapp\.net|revue\.email|"
    r"tinyletter\.com|mailerlite\.com|sendibt3\.com)\b", re.I)
_SENDER_HEADERS = ("From", "Sender", "Reply-To", "Return-Path", "X-Mailer", "Message-ID",
                   "List-Id")
_STORY_TEXTS = re.compile(
    r"^(read (the )?(full|original|more|online|article|post|story|on)\b|view (the )?"
    r"(original|article|post|story|full)|original (article|post|story)|continue reading|"
    r"open (original|in)|visit (website|site|the article)|read in (app|browser)|source)",
    re.I)


def _kind(msg: Message, texts: str, titled_article: bool) -> str:
    senders = " ".join(_raw(msg, h) for h in _SENDER_HEADERS)
    if _SHARE_DOMAINS.search(senders) or _SHARE_PHRASE.search(texts):
        return "share"
    listed = bool(_raw(msg, "List-Unsubscribe")) and (
        bool(_raw(msg, "List-Id")) or _raw(msg, "Precedence").lower() in ("bulk", "list"))
    if listed or _NEWSLETTER_DOMAINS.search(senders):
        return "newsletter"
    return "share" if titled_article else "personal"


def _fallback_story(docs: list[_HtmlPart], plains: list[str],
                    out: _Collector) -> tuple[str, str] | None:
    """No title link: a "Read more"/"View original" anchor, else the first text URL."""
    for d in docs:
        for url, text in d.links:
            if text and _STORY_TEXTS.match(text) and out.accept(url, text):
                return url, text
    for body in plains:
        for url in text_urls(body):
            if out.accept(url, None):
                return url, ""
    return None


_SUBJECT_TAGS = re.compile(r"^\s*((re|fwd?|aw|tr|wg)\s*:\s*|\[[^\]]{1,40}\]\s*)+", re.I)


def _clean_subject(subject: str) -> str:
    return _SUBJECT_TAGS.sub("", subject).strip()


def _fold(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())
