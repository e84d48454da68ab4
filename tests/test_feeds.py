"""`textsieve run feed:URL` and `opml:FILE`, end to end, on real feeds served locally.

The feeds are made by real feed generators: RSS 2.0, Atom 1.0, JSON Feed and the OPML
list by the npm packages `feed` and `opml` (tests/data/feeds/make_feeds.mjs says how),
RSS 2.0 and Atom with teasers by feedgen, RSS 0.91 by feedgenerator (Django's), each
served by a local HTTP server that answers conditional GETs as real servers do.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from feed_server import FeedSite, feed_site_fixture  # noqa: F401 - registers feed_site

DATA = Path(__file__).parent / "data" / "feeds"
UTC = dt.UTC
# The articles the npm-made Marsh Notes feed announces, and the words of each.
MARSH = {"/posts/heron-return.html": ("The herons return", "grey herons"),
         "/posts/godwit-flock.html": ("A flock of godwits", "bar-tailed godwits"),
         "/posts/spoonbill-%C3%A9t%C3%A9.html": ("Spoonbills in summer (été)", "spoonbills")}


def _para(topic: str, n: int = 6) -> str:
    # The same paragraphs make_feeds.mjs puts in the feed's content.
    return "".join(
        f"<p>Paragraph {i + 1} about {topic}: the observers counted the birds at dawn and "
        f"noted the wind, the tide and the light over the marsh before the crowds came.</p>"
        for i in range(n))


def _article(title: str, body: str) -> str:
    return (f"<!DOCTYPE html><html lang='en'><head><title>{title}</title></head><body>"
            f"<nav><a href='/'>Home</a> <a href='/about'>About</a></nav>"
            f"<article><h1>{title}</h1>{body}</article>"
            f"<footer>Copyright the marsh society. Subscribe to our newsletter.</footer>"
            f"</body></html>")


def _serve_marsh(site: FeedSite) -> None:
    types = {"rss": "application/rss+xml", "atom": "application/atom+xml",
             "json": "application/feed+json"}
    for ext, ctype in types.items():
        text = (DATA / f"marsh.{ext}").read_text().replace("http://BASE", site.base)
        site.set(f"/marsh.{ext}", text, ctype)
    for path, (title, topic) in MARSH.items():
        site.set(path, _article(title, _para(topic)))


def run(db: Path, *specs: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "textsieve", "run", *specs, "--archive",
                           str(db), "--allow-private", "--host-delay", "0", "-j", "2",
                           "--fetch-timeout", "20"],
                          capture_output=True, text=True, timeout=300, check=False)
    if check:
        assert done.returncode in (0, 1), done.stderr
    return done


def exported(db: Path) -> dict[str, dict]:
    """The archive's top-level items as `textsieve export --format jsonl` gives them."""
    out = subprocess.run([sys.executable, "-m", "textsieve", "export", "--archive", str(db),
                          "--format", "jsonl", "--to", "-"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    return {r["key"]: r for r in rows if r["parent_id"] is None}


def articles(db: Path) -> dict[str, dict]:
    """The exported items of feed entries (not the feeds' own items, keyed feed:URL)."""
    return {k: r for k, r in exported(db).items() if not k.startswith("feed:")}


def _meta(row: dict) -> dict:
    m = row["metadata"]
    return m if isinstance(m, dict) else json.loads(m)


@pytest.mark.parametrize("ext", ["rss", "atom", "json"])
def test_real_feed_each_format(feed_site: FeedSite, tmp_path: Path, ext: str) -> None:
    """One item per distinct link (the re-post of the heron article joins its item), with
    its title, date and the feed's name as label; the feed carries whole articles (same
    text as the pages), so its own content is kept and that is said."""
    _serve_marsh(feed_site)
    db = tmp_path / "a.db"
    done = run(db, f"feed:{feed_site.url(f'/marsh.{ext}')}")
    assert done.returncode == 0, done.stderr
    everything = exported(db)
    channel = everything.pop(f"feed:{feed_site.url(f'/marsh.{ext}')}")
    assert channel["title"] == "Marsh Notes" and channel["labels"] == ["Marsh Notes"]
    assert "Field notes from the estuary" in channel["text"]
    items = everything
    assert len(items) == 3, list(items)
    by_title = {r["title"]: r for r in items.values()}
    assert set(by_title) == {t for t, _ in MARSH.values()}
    heron = by_title["The herons return"]
    assert heron["key"] == feed_site.url("/posts/heron-return.html")
    assert "grey herons" in heron["text"] and "Subscribe" not in heron["text"]
    assert _meta(heron)["extra"]["feed_content"] == "feed"
    assert _meta(heron)["created"].startswith("2026-03-01T07:30")
    assert heron["labels"] == ["Marsh Notes"]
    feed = f"feed:{feed_site.url(f'/marsh.{ext}')}"
    # Listed with its first announcement (not the re-post), from the feed it came from.
    assert heron["listings"] == [{"source": feed, "title": "The herons return",
                                  "note": heron["listings"][0]["note"],
                                  "listed": "2026-03-01T07:30:00Z"}]
    assert heron["listings"][0]["note"].startswith("Paragraph 1 about grey herons")
    assert heron["sources"] == [feed]
    spoon = by_title["Spoonbills in summer (été)"]
    assert spoon["listings"][0]["listed"] == "2026-03-03T06:15:00Z"


def _teasers(site: FeedSite, n: int, fmt: str = "rss") -> None:
    """A feed made by feedgen whose entries carry a one-line teaser; the articles are
    long pages on the same site."""
    from feedgen.feed import FeedGenerator

    fg = FeedGenerator()
    fg.id(site.url("/"))
    fg.title("Estuary Teasers")
    fg.link(href=site.url("/"), rel="alternate")
    fg.description("Short notes")
    fg.language("en")
    for i in range(n):
        fe = fg.add_entry(order="append")
        fe.id(f"tag:estuary.test,2026:{i}")
        fe.title(f"Tide table {i}")
        fe.link(href=site.url(f"/tides/{i}.html"))
        fe.description(f"The tides of week {i}, in short.")
        fe.published(dt.datetime(2026, 4, 1 + i, 6, 0, tzinfo=UTC))
        site.set(f"/tides/{i}.html", _article(f"Tide table {i}", _para(f"the tides of week {i}")))
    body = fg.rss_str(pretty=True) if fmt == "rss" else fg.atom_str(pretty=True)
    site.set(f"/teasers.{fmt}", body, "application/rss+xml" if fmt == "rss"
             else "application/atom+xml")


@pytest.mark.parametrize("fmt", ["rss", "atom"])
def test_teasers_fetch_the_articles_and_a_second_run_adds_only_new(
        feed_site: FeedSite, tmp_path: Path, fmt: str) -> None:
    _teasers(feed_site, 3, fmt)
    db = tmp_path / "a.db"
    feed = f"feed:{feed_site.url(f'/teasers.{fmt}')}"
    assert run(db, feed).returncode == 0
    items = articles(db)
    assert len(items) == 3
    row = items[feed_site.url("/tides/1.html")]
    assert "the tides of week 1" in row["text"] and _meta(row)["extra"]["feed_content"] == \
        "article"
    assert row["listings"][0]["listed"] == "2026-04-02T06:00:00Z"
    assert row["listings"][0]["title"] == "Tide table 1"
    assert row["labels"] == ["Estuary Teasers"]
    # Unchanged feed: asked with its validators, answered 304, nothing fetched again.
    before = len(feed_site.hits)
    assert run(db, feed).returncode == 0
    again = feed_site.hits[before:]
    assert [(h.path, h.status) for h in again if h.path != "/robots.txt"] == \
        [(f"/teasers.{fmt}", 304)]
    assert again[-1].headers.get("If-None-Match")
    # Two new entries: only their articles are fetched and added.
    _teasers(feed_site, 5, fmt)
    before = len(feed_site.hits)
    assert run(db, feed).returncode == 0
    fetched = sorted(h.path for h in feed_site.hits[before:] if h.path.startswith("/tides/"))
    assert fetched == ["/tides/3.html", "/tides/4.html"]
    assert len(articles(db)) == 5


def test_fetch_never_lists_entries_and_a_later_run_fetches(feed_site: FeedSite,
                                                           tmp_path: Path) -> None:
    _teasers(feed_site, 3)
    db = tmp_path / "a.db"
    feed = f"feed:{feed_site.url('/teasers.rss')}"
    assert run(db, feed, "--fetch", "never").returncode == 0
    assert not [h for h in feed_site.hits if h.path.startswith("/tides/")]
    items = exported(db)
    row = items[feed_site.url("/tides/0.html")]
    assert row["status"] == "listed" and row["title"] == "Tide table 0"
    assert row["text"] == "The tides of week 0, in short." and row["labels"] == \
        ["Estuary Teasers"]
    assert run(db, feed).returncode == 0
    assert sorted(h.path for h in feed_site.hits if h.path.startswith("/tides/")) == \
        [f"/tides/{i}.html" for i in range(3)]
    row = exported(db)[feed_site.url("/tides/0.html")]
    assert row["status"] == "ok" and "the tides of week 0" in row["text"]


def test_rss091_from_feedgenerator(feed_site: FeedSite, tmp_path: Path) -> None:
    from feedgenerator import RssUserland091Feed

    f = RssUserland091Feed(title="Old school", link=feed_site.url("/"),
                           description="RSS 0.91", language="en")
    for i in range(2):
        f.add_item(title=f"Old post {i}", link=feed_site.url(f"/old/{i}.html"),
                   description=f"Teaser {i}")
        feed_site.set(f"/old/{i}.html", _article(f"Old post {i}", _para(f"old post {i}")))
    feed_site.set("/old.rss", f.writeString("utf-8"), "application/rss+xml")
    db = tmp_path / "a.db"
    assert run(db, f"feed:{feed_site.url('/old.rss')}").returncode == 0
    items = articles(db)
    assert sorted(r["title"] for r in items.values()) == ["Old post 0", "Old post 1"]
    assert all(r["labels"] == ["Old school"] for r in items.values())


def test_opml_folders_become_labels(feed_site: FeedSite, tmp_path: Path) -> None:
    """Every feed of the list, its folders and name as labels; a feed that is gone is
    a typed record and the others still come in."""
    _serve_marsh(feed_site)
    _teasers(feed_site, 2)
    opml = tmp_path / "subs.opml"
    opml.write_text((DATA / "subscriptions.opml").read_text(encoding="latin-1")
                    .replace("http://BASE", feed_site.base), encoding="latin-1")
    db = tmp_path / "a.db"
    done = run(db, f"opml:{opml}")
    assert done.returncode == 1  # the gone feed
    assert "gone.rss: http_404" in done.stderr
    items = exported(db)
    gone = items[f"feed:{feed_site.url('/gone.rss')}"]
    assert gone["status"] == "error" and gone["error_kind"] == "http_404"
    heron = items[feed_site.url("/posts/heron-return.html")]
    # Two feeds of the list announce it: the labels of both, each feed its provenance.
    assert heron["labels"] == ["Birds", "Marsh Notes", "Nature", "Tides (JSON)"]
    assert sorted(heron["sources"]) == [f"feed:{feed_site.url('/marsh.json')}",
                                        f"feed:{feed_site.url('/marsh.rss')}"]
    tide = items[feed_site.url("/tides/1.html")]
    assert tide["labels"] == ["Teasers"]
    # Search by label, as a user does.
    hits = subprocess.run([sys.executable, "-m", "textsieve", "search", "--archive", str(db),
                           "--label", "Birds", "observers"], capture_output=True, text=True,
                          timeout=120, check=True).stdout
    assert "heron-return" in hits and "tides" not in hits
    # The gone feed comes back: its record is its item again, the others unchanged.
    feed_site.set("/gone.rss", feed_site.pages["/teasers.rss"][0], "application/rss+xml")
    again = run(db, f"opml:{opml}")
    assert again.returncode == 0, again.stderr
    back = exported(db)[f"feed:{feed_site.url('/gone.rss')}"]
    assert back["status"] == "ok" and back["labels"] == ["Gone feed"]
    assert len([k for k in items if not k.startswith("feed:")]) == 5


def test_feed_file_and_bad_feeds_are_typed_records(feed_site: FeedSite,
                                                   tmp_path: Path) -> None:
    """A feed file works like a URL; a page that is not a feed, a feed in a broken
    encoding and a billion-laughs feed are each a typed record, and the run goes on."""
    _serve_marsh(feed_site)
    local = tmp_path / "marsh.json"
    local.write_text((DATA / "marsh.json").read_text().replace("http://BASE", feed_site.base))
    feed_site.set("/not-a-feed", "<html><body><p>Just a page</p></body></html>")
    feed_site.set("/laughs.rss", _laughs("rss version='2.0'", (
        "<channel><title>&lol9;</title><item><title>Laughs &lol9;</title>"
        f"<link>{feed_site.url('/laugh.html')}</link></item></channel>")),
        "application/rss+xml")
    feed_site.set("/laugh.html", _article("No laughing matter", _para("laughter")))
    feed_site.set("/garbage.json", b"\xff\xfe{\x00 broken", "application/feed+json")
    # Latin-1 bytes in a feed that says it is UTF-8: read as what it is, and said so.
    lying = (DATA / "marsh.rss").read_text().replace("http://BASE", feed_site.base)
    lying = lying.replace("/posts/", "/latin/")
    feed_site.set("/lying.rss", lying.encode("latin-1"), "application/rss+xml; charset=utf-8")
    for path, (title, topic) in MARSH.items():
        feed_site.set(path.replace("/posts/", "/latin/"), _article(title, _para(topic)))
    db = tmp_path / "a.db"
    done = run(db, f"feed:{local}", f"feed:{feed_site.url('/not-a-feed')}",
               f"feed:{feed_site.url('/laughs.rss')}",
               f"feed:{feed_site.url('/garbage.json')}", f"feed:{feed_site.url('/lying.rss')}")
    assert done.returncode == 1, done.stderr
    items = exported(db)
    assert items[f"feed:{feed_site.url('/not-a-feed')}"]["error_kind"] == "unsupported"
    assert items[f"feed:{feed_site.url('/garbage.json')}"]["error_kind"] == "corrupt"
    assert len([k for k in items if not k.startswith("feed:")]) == 7
    spoon = items[feed_site.url("/latin/spoonbill-%C3%A9t%C3%A9.html")]
    assert spoon["title"] == "Spoonbills in summer (été)"
    assert "declared as utf-8" in " ".join(_meta(spoon)["extra"]["feed_problems"])
    laugh = items[feed_site.url("/laugh.html")]  # the bomb's entry, nothing expanded
    assert laugh["title"] == "No laughing matter"
    assert not any("lollol" in json.dumps(r) for r in items.values())
    assert "Traceback" not in done.stderr


def _laughs(root: str, body: str) -> str:
    ents = "".join(f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">'
                   for i in range(1, 10))
    tag = root.split()[0]
    return (f'<?xml version="1.0"?>\n<!DOCTYPE {tag} [<!ENTITY lol0 "lol">{ents}]>\n'
            f"<{root}>{body}</{tag}>")


def test_billion_laughs_opml(tmp_path: Path) -> None:
    """A billion-laughs OPML expands nothing: one line naming what is wrong, at once."""
    opml = tmp_path / "laughs.opml"
    opml.write_text(_laughs("opml version='2.0'", "<body><outline text='&lol9;' "
                            "xmlUrl='http://127.0.0.1:9/x.rss'/></body>"))
    db = tmp_path / "a.db"
    done = subprocess.run([sys.executable, "-m", "textsieve", "run", f"opml:{opml}",
                           "--archive", str(db), "--fetch-timeout", "5"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "amplification" in done.stderr
    assert len(done.stderr) < 2_000


def test_malformed_dates_are_kept_as_problems(feed_site: FeedSite, tmp_path: Path) -> None:
    """An entry whose date cannot be read is archived without a date, saying why."""
    text = (DATA / "marsh.rss").read_text().replace("http://BASE", feed_site.base)
    text = text.replace("Mon, 02 Mar 2026 08:00:00 GMT", "the second of March, at dawn")
    assert "the second of March" in text
    _serve_marsh(feed_site)
    feed_site.set("/marsh.rss", text, "application/rss+xml")
    db = tmp_path / "a.db"
    assert run(db, f"feed:{feed_site.url('/marsh.rss')}").returncode == 0
    items = articles(db)
    godwit = items[feed_site.url("/posts/godwit-flock.html")]
    assert godwit["listings"][0]["listed"] is None
    assert godwit["title"] == "A flock of godwits"
    assert "unreadable date 'the second of March" in _meta(godwit)["extra"]["feed_problems"][0]
    assert len(items) == 3


_MEASURE = r"""
import json, sys
def peak():  # VmHWM: this process's own peak (ru_maxrss keeps the parent's over exec)
    with open('/proc/self/status') as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith('VmHWM:'))
path, mode = sys.argv[1], sys.argv[2]
if mode == 'whole':
    import feedparser
    n = len(feedparser.parse(open(path, 'rb').read()).entries)
else:
    from textsieve.options import Options
    from textsieve.sources.feeds import FeedSource
    n = sum(1 for _ in FeedSource('feed:' + path, Options()).items())
print(json.dumps([n, peak()]))
"""


@pytest.mark.slow
def test_feed_of_100000_entries_in_bounded_memory(tmp_path: Path) -> None:
    """Every one of 100,000 entries becomes an item, in a fraction of the memory that
    reading the document whole takes (measured side by side; bench/bench_feeds.py has
    the figures)."""
    path = tmp_path / "big.rss"
    with path.open("w") as f:
        f.write('<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0"><channel>'
                "<title>Big</title><link>https://example.org/</link><description>d"
                "</description>\n")
        for i in range(100_000):
            f.write(f"<item><title>Entry {i}</title><link>https://example.org/p/{i}</link>"
                    f"<guid>urn:e:{i}</guid></item>\n")
        f.write("</channel></rss>\n")

    def measure(mode: str) -> tuple[int, int]:
        out = subprocess.run([sys.executable, "-c", _MEASURE, str(path), mode],
                             capture_output=True, text=True, timeout=600, check=True)
        n, rss = json.loads(out.stdout.strip().splitlines()[-1])
        return n, rss

    n, rss = measure("items")
    whole_n, whole_rss = measure("whole")
    assert n == whole_n + 1 == 100_001  # every entry, and the feed's own item
    assert rss < whole_rss * 0.6, (rss, whole_rss)
