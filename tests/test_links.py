"""Links from mails: harvesting, exclusion rules, wrapper and Hacker News resolvers.

The fixtures in tests/fixtures/mail are realistic mails (Gmail, Outlook, Substack, Feedly,
an old broken webmail, Latin-1 and Shift_JIS bodies); every test asserts the exact links.
"""

from __future__ import annotations

import base64
import email
import email.policy
import json
from pathlib import Path

import pytest

from cpu_budget import cpu
from textsieve.links.harvest import Harvest, harvest, text_urls
from textsieve.links.resolve import hn_item_id, resolve_hn, resolve_wrapper
from textsieve.links.rules import Rules

MAIL = Path(__file__).parent / "fixtures" / "mail"


def _harvest(name: str, rules: Rules | None = None) -> Harvest:
    return harvest((MAIL / name).read_bytes(), rules)


def _urls(h: Harvest) -> list[str]:
    return [link.url for link in h.links]


# --------------------------------------------------------------------------------------
# Hand-written mails: every link, exactly
# --------------------------------------------------------------------------------------

EXPECTED_PERSONAL = {
    "plain_links.eml": [
        "https://en.wikipedia.org/wiki/Python_(programming_language)",
        "https://arxiv.org/abs/1706.03762",
        "https://lwn.net/Articles/930150/",
        "https://www.sqlite.org/wal.html",
        "https://www.nytimes.com/2024/01/15/technology/"
        "artificial-intelligence-chatbots-research-papers.html",
        "https://github.com/python/cpython/blob/main/Lib/email/feedparser.py?plain=1",
        "https://blog.rust-lang.org/2024/02/08/Rust-1.76.0.html",
        "https://jvns.ca/blog/2024/01/05/"
        "do-we-think-of-git-commits-as-diffs--snapshots--or-histories/",
    ],
    "pdf_link.eml": ["https://raft.github.io/raft.pdf"],
    "hn_link.eml": ["https://news.ycombinator.com/item?id=39530353"],
    "same_link_1.eml": ["https://simonwillison.net/2024/Mar/8/gpt-4-barrier/"],
    "same_link_2.eml": ["https://simonwillison.net/2024/Mar/8/gpt-4-barrier/"],
    "same_link_3.eml": ["https://simonwillison.net/2024/Mar/8/gpt-4-barrier/"],
    "latin1.eml": [
        "https://www.lemonde.fr/politique/article/2024/06/10/"
        "r%C3%A9sultats-%C3%A9lections_6238.html",
        "https://fr.wikipedia.org/wiki/%C3%89lections_europ%C3%A9ennes_de_2024",
    ],
    "shift_jis.eml": [
        "https://www.nikkei.com/article/DGXZQOUC2024A0000000/",
        "https://ja.wikipedia.org/wiki/SQLite",
    ],
    "broken_mime.eml": [
        "http://www.paulgraham.com/hp.html",
        "http://www.joelonsoftware.com/articles/Unicode.html",
        "https://www.eff.org/deeplinks/2006/07/net-neutrality",
    ],
    "wrapped_links.eml": [
        "https://www.theverge.com/2024/6/5/24171893/open-web-feeds",
        "https://www.bbc.co.uk/news/technology-68928491",
        "https://kernel.org/doc/html/latest/process/howto.html",
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED_PERSONAL))
def test_hand_written_mail_yields_all_its_links(name: str) -> None:
    h = _harvest(name)
    assert h.kind == "personal"
    assert h.article is None
    assert _urls(h) == EXPECTED_PERSONAL[name]
    assert not any(link.story for link in h.links)


def test_every_fixture_is_covered() -> None:
    shares = {"newsletter_substack.eml", "feedly_share.eml"}
    assert {p.name for p in MAIL.glob("*.eml")} == set(EXPECTED_PERSONAL) | shares


def test_originals_are_kept_beside_the_normal_form() -> None:
    originals = [_harvest(f"same_link_{i}.eml").links[0].original for i in (1, 2, 3)]
    assert originals == [
        "https://simonwillison.net/2024/Mar/8/gpt-4-barrier/"
        "?utm_source=newsletter&utm_medium=email&utm_campaign=weekly",
        "https://simonwillison.net/2024/Mar/8/gpt-4-barrier/?fbclid=IwAR3kYq0h1dZ7c9XyJ2pLkQ",
        "https://simonwillison.net/2024/Mar/8/gpt-4-barrier/"
        "?ref=hackernews&utm_content=top#comments",
    ]
    # The third mail names it twice (tracked, then plain): one link.
    assert len(_harvest("same_link_3.eml").links) == 1


def test_wrapped_links_keep_anchor_text_and_original() -> None:
    h = _harvest("wrapped_links.eml")
    assert [link.text for link in h.links] == ["article I mentioned", "BBC story",
                                               "kernel howto"]
    assert h.links[0].original.startswith("https://eur01.safelinks.protection.outlook.com/")


def test_gmail_html_twin_is_used_and_anchor_text_kept() -> None:
    h = _harvest("pdf_link.eml")
    assert h.links[0].text == "https://raft.github.io/raft.pdf"


def test_a_parsed_message_is_accepted() -> None:
    msg = email.message_from_bytes((MAIL / "hn_link.eml").read_bytes(),
                                   policy=email.policy.default)
    assert _urls(harvest(msg)) == EXPECTED_PERSONAL["hn_link.eml"]


# --------------------------------------------------------------------------------------
# Shares and newsletters: the article and its story link only
# --------------------------------------------------------------------------------------


def test_substack_newsletter_gives_article_and_story_link_only() -> None:
    h = _harvest("newsletter_substack.eml")
    assert h.kind == "newsletter"
    assert [(link.url, link.story) for link in h.links] == [
        ("https://caseywrites.substack.com/p/the-quiet-comeback-of-rss", True)]
    assert h.links[0].text == "The quiet comeback of RSS"
    assert h.article is not None
    title, html = h.article
    assert title == "The quiet comeback of RSS"
    text = html.decode("utf-8-sig")
    assert "Google Reader closed in 2013" in text and "early adopters" in text
    assert h.pixels == ["https://eotrx.substackcdn.com/open?token=eyJtIjoiPDIwMjQwNDE2"]


def test_feedly_share_gives_article_and_story_link_only() -> None:
    h = _harvest("feedly_share.eml")
    assert h.kind == "share"
    assert [(link.url, link.story) for link in h.links] == [
        ("https://sqlite.org/draft/whybytecode.html", True)]
    assert h.article is not None
    assert h.article[0] == "Why SQLite uses bytecode"  # "[Feedly]" tag dropped
    assert "virtual machine" in h.article[1].decode("utf-8-sig")
    assert h.pixels == ["https://e.feedly.com/o/4aG7kQ2ZpLm9Xy8B3cVn1RtW"]


def _mail(headers: dict[str, str], body: str, ctype: str = "text/html") -> bytes:
    head = "".join(f"{k}: {v}\n" for k, v in headers.items())
    return (f"{head}MIME-Version: 1.0\nContent-Type: {ctype}; charset=utf-8\n\n"
            f"{body}\n").encode()


def test_digest_newsletter_without_article_yields_its_links_minus_list_unsubscribe() -> None:
    raw = _mail({"From": "Weekly Links <digest@news.example.com>",
                 "Subject": "Issue 12", "List-Id": "<weekly.news.example.com>",
                 "List-Unsubscribe": "<https://news.example.com/u/8f3a9c>, "
                                     "<mailto:leave@news.example.com>"},
                """<html><body><ul>
                <li><a href="https://one.example.org/post?utm_source=weekly">One</a></li>
                <li><a href="https://two.example.org/">Two</a></li>
                <li><a href="https://disqus.com/by/someone/">comments</a></li>
                <li><a href="https://ads.doubleclick.net/click?x=1">Sponsor</a></li>
                </ul><p><a href="https://news.example.com/u/8f3a9c">Leave</a>
                <a href="https://news.example.com/settings">Unsubscribe</a></p>
                </body></html>""")
    h = harvest(raw)
    assert h.kind == "newsletter" and h.article is None
    assert _urls(h) == ["https://one.example.org/post", "https://two.example.org/"]


def test_plain_text_share_gives_its_story_link() -> None:
    raw = _mail({"From": "Jo <jo@example.com>", "Subject": "Bytecode"},
                "Why SQLite uses bytecode\n"
                "https://getpocket.com/redirect?url=https%3A%2F%2Fsqlite.org%2Fwhybytecode.html\n"
                "Also: https://other.example.org/x\n\nShared from Pocket\n", "text/plain")
    h = harvest(raw)
    assert h.kind == "share" and h.article is None
    assert [(link.url, link.story) for link in h.links] == [
        ("https://sqlite.org/whybytecode.html", True)]


def test_html_base_pixels_mailto_and_junk_hosts() -> None:
    raw = _mail({"From": "Jo <jo@example.com>", "Subject": "stuff"},
                """<html><head><base href="https://docs.example.org/guide/"></head><body>
                <p><a href="intro.html#top">Intro</a>, <a href="../faq/">FAQ</a>,
                <a href="mailto:jo@example.com">mail me</a>, <a href="tel:+15550100">call</a>,
                <a href="#section">here</a>, <a href="javascript:void(0)">js</a>.</p>
                <p>Plain text URL in HTML: https://text.example.net/page.</p>
                <p><a href="https://foo.disqus.com/embed.js">comments</a>
                <a href="https://www.facebook.com/sharer/sharer.php?u=x">share</a>
                <a href="https://track.example.com/pixel.gif">pixel link</a></p>
                <img src="https://track.example.com/pixel.gif" width="1" height="1">
                <img src="https://img.example.com/photo.jpg" width="600" height="400">
                </body></html>""")
    h = harvest(raw)
    assert h.kind == "personal"
    assert _urls(h) == ["https://docs.example.org/guide/intro.html",
                        "https://docs.example.org/faq/",
                        "https://text.example.net/page"]
    assert h.pixels == ["https://track.example.com/pixel.gif"]


# --------------------------------------------------------------------------------------
# URLs in text
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "urls"), [
    ("see https://en.wikipedia.org/wiki/Set_(mathematics).",
     ["https://en.wikipedia.org/wiki/Set_(mathematics)"]),
    ("(https://example.com/a_(b)) and [x](https://example.com/md)",
     ["https://example.com/a_(b)", "https://example.com/md"]),
    ("Wow: https://example.com/q?a=1&b=2!?", ["https://example.com/q?a=1&b=2"]),
    ("«https://example.com/fr» and ‘https://example.com/uk’",
     ["https://example.com/fr", "https://example.com/uk"]),
    ("<URL:https://example.com/old>, <https://example.com/long/\n  wrapped/in/angles>",
     ["https://example.com/old", "https://example.com/long/wrapped/in/angles"]),
    ("www.example.org/x, example.com, mail jo@www.example.net",
     ["https://www.example.org/x"]),
    ("https://example.com/short\nThanks!\n", ["https://example.com/short"]),
    ("https://example.com/a/path/that/is/long/enough/to/have/been/wrapped-by-a-\n"
     "client?id=7 then text", ["https://example.com/a/path/that/is/long/enough/to/have/"
                               "been/wrapped-by-a-client?id=7"]),
    ("> https://example.com/quoted/path/long/enough/to/be/wrapped/by/the/client/\n"
     "> page-2.html\n", ["https://example.com/quoted/path/long/enough/to/be/wrapped/by/"
                         "the/client/page-2.html"]),
    ("https://example.com/a/path/that/is/long/enough/to/have/been/wrapped/by/x/\n"
     "Next sentence here.", ["https://example.com/a/path/that/is/long/enough/to/have/"
                             "been/wrapped/by/x/"]),
    ("記事：https://example.jp/news/1を読んで", ["https://example.jp/news/1"]),
    ("ftp://example.com/file and mailto:x@example.com", []),
])
def test_text_urls(text: str, urls: list[str]) -> None:
    assert text_urls(text) == urls


@pytest.mark.parametrize("raw", [
    b"", b"\x00\xff" * 500, b"Subject: no body\n",
    b"Content-Type: multipart/mixed; boundary=x\n\n--x\n" * 60,  # nesting, never closed
    b"Content-Type: text/html\n\n" + b"<a href=" * 2000,
    b"Content-Type: text/plain\n\n" + b"<https://example.com/" * 5000,
])
def test_hostile_mails_do_not_raise_and_stay_fast(raw: bytes) -> None:
    # CPU against a plain mail of the same size, measured here and now (not wall time:
    # a busy machine must not fail it; a parser gone quadratic would).
    plain = b"Content-Type: text/plain\n\n" + b"a few words. " * (len(raw) // 13 + 1)
    for _ in range(2):
        _, peer = cpu(lambda: harvest(plain))
    h, spent = cpu(lambda: harvest(raw))
    assert h.kind in ("personal", "newsletter", "share")
    assert spent < 50 * peer + 0.05, (spent, peer)


# --------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------


def test_rules_defaults() -> None:
    r = Rules()
    for junk in ("https://disqus.com/embed/comments/", "https://stats.g.doubleclick.net/x",
                 "https://www.google-analytics.com/collect?v=1",
                 "https://example.us4.list-manage.com/track/click?u=1&id=2",
                 "https://example.com/newsletter/unsubscribe?u=1",
                 "https://www.facebook.com/sharer/sharer.php?u=x",
                 "https://twitter.com/intent/tweet?url=x", "mailto:jo@example.com",
                 "tel:+15550100", "https://example.com/wf/open?upn=abc"):
        assert r.excluded(junk), junk
    for good in ("https://example.com/blog/adopt-outdoor-cats",
                 "https://example.com/preferences-in-ml", "https://twitter.com/jack",
                 "https://www.facebook.com/notes/some-note"):
        assert not r.excluded(good), good
    assert r.excluded("https://example.com/x", "Unsubscribe from this list")


def test_rules_overrides(tmp_path: Path) -> None:
    r = Rules.from_options(allow_hosts=["disqus.com"], exclude_hosts=["ads.example.com"],
                           exclude_patterns=[r"/sponsored/"], strip_params=["Source"])
    assert not r.excluded("https://disqus.com/by/someone/")
    assert r.excluded("https://x.ads.example.com/a")
    assert r.excluded("https://example.com/sponsored/post")
    assert r.clean("https://example.com/a?source=rss&id=3") == "https://example.com/a?id=3"
    bare = Rules.from_options(replace_defaults=True)
    assert not bare.excluded("https://disqus.com/x")
    assert bare.excluded("mailto:jo@example.com")  # never fetchable

    path = tmp_path / "rules.toml"
    path.write_text('exclude_hosts = ["news.ycombinator.com"]\nstrip_params = ["x"]\n')
    loaded = Rules.load(path)
    assert loaded.excluded("https://news.ycombinator.com/item?id=1")
    h = harvest((MAIL / "hn_link.eml").read_bytes(), loaded)
    assert h.links == []
    path.write_text('exclude_host = ["typo.example"]\n')
    with pytest.raises(ValueError, match="exclude_host"):
        Rules.load(path)


# --------------------------------------------------------------------------------------
# Resolvers
# --------------------------------------------------------------------------------------


def _jwt(payload: dict[str, object]) -> str:
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    return f"eyJhbGciOiJIUzI1NiJ9.{body}.c2ln"


@pytest.mark.parametrize(("wrapped", "target"), [
    ("https://www.google.com/url?q=https://example.com/a%3Fb%3D1&sa=D&usg=x",
     "https://example.com/a?b=1"),
    ("https://www.google.co.uk/url?sa=t&url=https%3A%2F%2Fexample.org%2F&ved=2a",
     "https://example.org/"),
    ("https://eur01.safelinks.protection.outlook.com/?url=https%3A%2F%2Fexample.com%2Fx"
     "&data=05%7C01&reserved=0", "https://example.com/x"),
    ("https://l.facebook.com/l.php?u=https%3A%2F%2Fexample.com%2Fy&h=AT0", "https://example.com/y"),
    ("https://urldefense.proofpoint.com/v2/url?u=https-3A__example.com_path_page.html"
     "&d=DwMFaQ&c=x&r=y", "https://example.com/path/page.html"),
    ("https://urldefense.com/v3/__https://example.com/plain__;!!ABC!def$",
     "https://example.com/plain"),
    ("https://urldefense.com/v3/__https://example.com/q?a=1*b=2**Ac__;JiYm!!ABC!def$",
     "https://example.com/q?a=1&b=2&&c"),
    ("https://getpocket.com/redirect?url=https%3A%2F%2Fexample.com%2Fp",
     "https://example.com/p"),
    (f"https://substack.com/redirect/2/{_jwt({'e': 'https://example.com/sub', 'p': 1})}",
     "https://example.com/sub"),
    ("https://substack.com/redirect/2/" + _jwt({"e": "https://example.com/s2"}).split(".", 1)[1],
     "https://example.com/s2"),  # payload.signature, no JWT header
    # nested: safelinks around a Google redirect around the target
    ("https://nam12.safelinks.protection.outlook.com/?url=https%3A%2F%2Fwww.google.com"
     "%2Furl%3Fq%3Dhttps%253A%252F%252Fexample.com%252Fdeep%26sa%3DD&data=05",
     "https://example.com/deep"),
    # left alone: needs a fetch, or not a wrapper
    ("https://t.co/AbCdEf123", "https://t.co/AbCdEf123"),
    ("https://www.google.com/url?q=cats", "https://www.google.com/url?q=cats"),
    ("https://www.google.com/search?q=https://example.com",
     "https://www.google.com/search?q=https://example.com"),
    ("https://example.com/url?q=https://evil.example", "https://example.com/url?q=https://evil.example"),
])
def test_resolve_wrapper(wrapped: str, target: str) -> None:
    assert resolve_wrapper(wrapped) == target


def test_hn_item_id() -> None:
    assert hn_item_id("https://news.ycombinator.com/item?id=39530353") == "39530353"
    assert hn_item_id("http://news.ycombinator.com/item?id=1&p=2") == "1"
    assert hn_item_id("https://news.ycombinator.com/news") is None
    assert hn_item_id("https://news.ycombinator.com/item?id=abc") is None
    assert hn_item_id("https://example.com/item?id=1") is None


def test_resolve_hn_story() -> None:
    url = "https://news.ycombinator.com/item?id=39530353"
    r = resolve_hn((MAIL / "hn_item.html").read_bytes(), url)
    assert r.item_id == "39530353"
    assert r.story_url == "https://antonz.org/sqlite-is-not-a-toy-database/"
    assert r.title == "SQLite is not a toy database"
    assert r.comments == 2
    assert r.text == (
        "tptacek: We run it in production for a read-heavy service and the only surprise "
        "was how little there was to tune.\n\n"
        "WAL mode and a sane busy_timeout cover most of what people worry about.\n\n"
        "simonw: Agreed. See also https://www.sqlite.org/whentouse.html")


def test_resolve_hn_ask() -> None:
    url = "https://news.ycombinator.com/item?id=40102030"
    r = resolve_hn((MAIL / "hn_ask.html").read_bytes(), url)
    assert r.story_url is None
    assert r.title == "Ask HN: How do you keep a reading list?"
    assert r.text.startswith("I mail links to myself with a +links address and a filter."
                             "\n\nAfter ten years")
    assert r.text.endswith("pinboarder: Pinboard with the archiving add-on, for the last "
                           "twelve years.\n\ngrepfan: A folder of text files and ripgrep.")


def test_resolve_hn_garbage() -> None:
    r = resolve_hn(b"", "https://news.ycombinator.com/item?id=5")
    assert (r.item_id, r.story_url, r.text, r.comments) == ("5", None, "", 0)
    r = resolve_hn(b"<html><body>rate limited</body></html>",
                   "https://news.ycombinator.com/item?id=5")
    assert r.story_url is None and r.title is None
