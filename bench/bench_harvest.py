"""Mail harvest benchmark: links harvested per second from a 10,000-mail mbox, and memory.

Run by hand (about half a minute)::

    .venv/bin/python bench/bench_harvest.py [--mails 10000] [--seed 6]

1. Generates ``bench/out/harvest-<N>.mbox`` (fixed seed, written one mail at a time): a mix
   of the styles of tests/fixtures/mail — hand-written plain mails with several links
   (parentheses, trailing punctuation, angle brackets, wrapped lines, tracking parameters),
   Gmail plain+HTML twins, Substack-like newsletters carrying a whole article, Feedly shares,
   link digests with List-Unsubscribe, Outlook safelinks and Google redirects, PDF and
   Hacker News links, ISO-8859-1 and Shift_JIS bodies, broken MIME (no closing boundary).
2. In a fresh process (so generation does not count), streams the mbox through the real
   mail source (``MboxSource``: mmap + the mbox splitter) into ``harvest`` and reports
   mails/s, and peak RSS (``ru_maxrss``) plus the current anonymous and file-backed RSS
   after 1k, 5k and 10k mails: a flat anonymous RSS means memory does not grow with the
   number of mails (file-backed pages are the mapped mbox, reclaimable page cache).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"

HOSTS = ["en.wikipedia.org", "arxiv.org", "lwn.net", "www.sqlite.org", "github.com",
         "blog.rust-lang.org", "jvns.ca", "simonwillison.net", "www.nytimes.com",
         "www.theverge.com", "www.bbc.co.uk", "kernel.org", "antonz.org", "danluu.com",
         "martinfowler.com", "www.lemonde.fr", "www.nikkei.com", "raft.github.io",
         "www.usenix.org", "research.google", "eli.thegreenplace.net", "fasterthanli.me"]
WORDS = [
    "sqlite", "rust", "python", "feeds", "parser", "memory", "cache", "latency", "design",
    "systems", "database", "compiler", "network", "protocol", "history", "paper", "review",
    "notes", "release", "bytecode", "index", "search", "archive", "mail", "links", "reading",
    "weekend",
]
TRACKING = ["utm_source=newsletter&utm_medium=email", "fbclid=IwAR3kYq0h1dZ7c9",
            "ref=hackernews", "utm_campaign=weekly&utm_content=top", "mc_cid=ab12&mc_eid=cd34"]
PROSE = ("Every SQL database engine works in roughly the same way: it first translates the "
         "input text into a prepared statement, then runs it to get a result. ")


def _url(rng: random.Random) -> str:
    path = "/".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
    url = f"https://{rng.choice(HOSTS)}/{path}"
    if rng.random() < 0.3:
        url += rng.choice([".html", ".pdf", "/", "_(disambiguation)"])
    if rng.random() < 0.4:
        url += "?" + rng.choice(TRACKING)
    return url


def _head(rng: random.Random, i: int, subject: str, sender: str, ctype: str,
          extra: str = "") -> str:
    date = datetime(2015, 1, 1, tzinfo=UTC) + timedelta(minutes=137 * i)
    return (f"From: {sender}\nTo: jo.bloggs+links@gmail.com\nSubject: {subject}\n"
            f"Date: {format_datetime(date)}\nMessage-ID: <bench-{i}-{rng.randrange(10**9)}"
            f"@example.net>\n{extra}MIME-Version: 1.0\nContent-Type: {ctype}\n\n")


def _plain(rng: random.Random, i: int) -> bytes:
    lines = ["Some links for later:", ""]
    for _ in range(rng.randint(1, 6)):
        u = _url(rng)
        lines.append(rng.choice([f"{u}", f"See {u}.", f"({u})", f"<{u}>!", f"\"{u}\",",
                                 f"{u[:40]}\n{u[40:]}" if len(u) > 60 else u]))
    lines += ["", "-- ", "Jo"]
    return (_head(rng, i, "links", "Jo <jo.bloggs@gmail.com>", "text/plain; charset=utf-8")
            + "\n".join(lines) + "\n").encode()


def _gmail(rng: random.Random, i: int) -> bytes:
    urls = [_url(rng) for _ in range(rng.randint(1, 3))]
    b = f"0000000000{i:08x}"
    plain = "\n".join(urls)
    html = "<div dir=\"ltr\">" + "<br>".join(f"<a href=\"{u}\">{u}</a>" for u in urls) + "</div>"
    return (_head(rng, i, "read", "Jo <jo.bloggs@gmail.com>",
                  f"multipart/alternative; boundary=\"{b}\"")
            + f"--{b}\nContent-Type: text/plain; charset=UTF-8\n\n{plain}\n"
            f"--{b}\nContent-Type: text/html; charset=UTF-8\n\n{html}\n--{b}--\n").encode()


def _article(rng: random.Random, story: str, title: str, heading: str) -> str:
    paras = "".join(f"<p>{PROSE * rng.randint(2, 4)}<a href=\"{_url(rng)}\">a source</a>. "
                    f"{PROSE}</p>\n" for _ in range(rng.randint(5, 10)))
    return (f"<html><body><table><tr><td><{heading}><a href=\"{story}\">{title}</a>"
            f"</{heading}>\n{paras}<p><a href=\"https://www.facebook.com/sharer/sharer.php?"
            f"u=x\">Share</a> <a href=\"https://example.substack.com/action/disable_email?"
            f"token=t{rng.randrange(10**6)}\">Unsubscribe</a></p></td></tr></table>"
            f"<img src=\"https://eotrx.substackcdn.com/open?token=px{rng.randrange(10**6)}\""
            f" width=\"1\" height=\"1\"></body></html>")


def _newsletter(rng: random.Random, i: int) -> bytes:
    title = " ".join(rng.choice(WORDS) for _ in range(5)).capitalize()
    story = f"https://casey.substack.com/p/post-{i}?utm_source=post-email-title"
    extra = ("List-Id: <casey.substack.com>\nList-Unsubscribe: <https://casey.substack.com/"
             f"action/disable_email?token={i}>\n")
    return (_head(rng, i, title, "Casey <casey@substack.com>", "text/html; charset=utf-8",
                  extra) + _article(rng, story, title, "h1") + "\n").encode()


def _feedly(rng: random.Random, i: int) -> bytes:
    title = " ".join(rng.choice(WORDS) for _ in range(6)).capitalize()
    body = _article(rng, _url(rng), title, "h2").replace(
        "</body>", "<p>Shared from <a href=\"https://feedly.com/\">Feedly</a></p></body>")
    return (_head(rng, i, f"[Feedly] {title}", "\"Jo via Feedly\" <share@feedly.com>",
                  "text/html; charset=utf-8") + body + "\n").encode()


def _digest(rng: random.Random, i: int) -> bytes:
    items = "".join(f"<li><a href=\"{_url(rng)}\">item {k}</a></li>" for k in range(20))
    extra = ("List-Id: <weekly.news.example.com>\n"
             f"List-Unsubscribe: <https://news.example.com/u/{i:x}>\n")
    return (_head(rng, i, f"Weekly #{i}", "Weekly <digest@news.example.com>",
                  "text/html; charset=utf-8", extra)
            + f"<html><body><ul>{items}</ul><a href=\"https://news.example.com/u/{i:x}\">"
            "leave</a></body></html>\n").encode()


def _wrapped(rng: random.Random, i: int) -> bytes:
    from urllib.parse import quote

    u1, u2 = _url(rng), _url(rng)
    safe = f"https://eur01.safelinks.protection.outlook.com/?url={quote(u1, safe='')}&data=05"
    goog = f"https://www.google.com/url?q={u2}&amp;sa=D&amp;usg=AOvVaw0"
    return (_head(rng, i, "FW: reading", "Alex <alex@contoso-corp.com>",
                  "text/html; charset=us-ascii")
            + f"<html><body><p class=\"MsoNormal\">The <a href=\"{safe}\">article</a> and "
            f"<a href=\"{goog}\">this</a>.</p></body></html>\n").encode()


def _special(rng: random.Random, i: int) -> bytes:
    kind = rng.randrange(4)
    if kind == 0:
        return (_head(rng, i, "HN", "Jo <jo.bloggs@gmail.com>", "text/plain")
                + f"https://news.ycombinator.com/item?id={rng.randrange(10**7, 10**8)}\n"
                ).encode()
    if kind == 1:
        return (_head(rng, i, "Lien", "Fr <f@laposte.net>",
                      "text/plain; charset=ISO-8859-1").encode()
                + f"Voilà l'article : {_url(rng)} — très intéressant.\n".encode(
                    "iso-8859-1", "replace"))
    if kind == 2:
        return (_head(rng, i, "記事", "Y <y@example.co.jp>",
                      "text/plain; charset=Shift_JIS").encode("utf-8")
                + f"この記事：{_url(rng)}を読んでください。\n".encode("shift_jis"))
    return (_head(rng, i, "old", "old@example.net", "multipart/mixed; boundary=\"zz\"")
            + f"--zz\nContent-Type: text/plain\n\nlink: {_url(rng)}\n\n--zz\n"
            f"Content-Type: text/html\n\n<p><a href=\"{_url(rng)}\">x</a><p>cut off"
            ).encode()


STYLES = [(_plain, 30), (_gmail, 20), (_newsletter, 12), (_feedly, 8), (_digest, 8),
          (_wrapped, 8), (_special, 14)]


def generate(path: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    funcs = [f for f, _ in STYLES]
    weights = [w for _, w in STYLES]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        for i in range(n):
            raw = rng.choices(funcs, weights)[0](rng, i)
            raw = raw.replace(b"\nFrom ", b"\n>From ")
            if not raw.endswith(b"\n"):
                raw += b"\n"  # mbox writers end each message with a blank line
            out.write(b"From bench@example.net Thu Jan  1 00:00:00 2015\n" + raw + b"\n")


def _rss_kb() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("RssAnon:", "RssFile:")):
                key, value = line.split(":")
                out[key] = int(value.split()[0])
    return out


def measure(path: Path, checkpoints: list[int]) -> dict[str, object]:
    sys.path.insert(0, str(ROOT / "src"))
    from textsieve.links.harvest import harvest
    from textsieve.sources.mailboxes.local import MboxSource

    kinds: collections.Counter[str] = collections.Counter()
    links = stories = articles = 0
    rows = []
    harvest_s = 0.0
    t0 = time.perf_counter()
    n = 0
    for mail in MboxSource(str(path)).mails():
        t = time.perf_counter()
        h = harvest(mail.raw)
        harvest_s += time.perf_counter() - t
        n += 1
        kinds[h.kind] += 1
        links += len(h.links)
        stories += sum(link.story for link in h.links)
        articles += h.article is not None
        if n in checkpoints:
            rss = _rss_kb()
            rows.append({"mails": n, "seconds": round(time.perf_counter() - t0, 2),
                         "mails_per_s": round(n / (time.perf_counter() - t0)),
                         "maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF)
                                            .ru_maxrss / 1024, 1),
                         "anon_mb": round(rss["RssAnon"] / 1024, 1),
                         "file_mb": round(rss["RssFile"] / 1024, 1)})
    total = time.perf_counter() - t0
    return {"mails": n, "seconds": round(total, 2), "mails_per_s": round(n / total),
            "harvest_only_mails_per_s": round(n / harvest_s), "kinds": dict(kinds),
            "links": links, "story_links": stories, "articles": articles, "checkpoints": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mails", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    checkpoints = sorted({c for c in (1000, 5000, 10_000, args.mails) if c <= args.mails})
    if args.measure:
        print(json.dumps(measure(args.measure, checkpoints)))
        return
    path = OUT / f"harvest-{args.mails}.mbox"
    t = time.perf_counter()
    generate(path, args.mails, args.seed)
    print(f"generated {path.relative_to(ROOT)}: {args.mails} mails, "
          f"{path.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s")
    base = subprocess.run([sys.executable, "-c", "import resource, textsieve.links.harvest, "
                           "textsieve.sources.mailboxes.local; print(resource.getrusage("
                           "resource.RUSAGE_SELF).ru_maxrss)"],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    res = json.loads(subprocess.run([sys.executable, __file__, "--mails", str(args.mails),
                                     "--measure", str(path)], capture_output=True, text=True,
                                    check=True).stdout)
    print(f"python {sys.version.split()[0]}; imports alone: peak RSS "
          f"{int(base.stdout) / 1024:.1f} MB")
    print(f"{'mails':>7} {'seconds':>8} {'mails/s':>8} {'peak RSS MB':>12} "
          f"{'anon RSS MB':>12} {'file RSS MB':>12}")
    for r in res["checkpoints"]:
        print(f"{r['mails']:>7} {r['seconds']:>8} {r['mails_per_s']:>8} {r['maxrss_mb']:>12} "
              f"{r['anon_mb']:>12} {r['file_mb']:>12}")
    print(f"total {res['mails']} mails in {res['seconds']} s = {res['mails_per_s']} mails/s "
          f"(harvest alone: {res['harvest_only_mails_per_s']} mails/s)")
    print(f"kinds {res['kinds']}; {res['links']} links, {res['story_links']} story links, "
          f"{res['articles']} articles")


if __name__ == "__main__":
    main()
