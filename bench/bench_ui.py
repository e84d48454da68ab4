"""Reading-room benchmark: page latency through HTTP on an archive of 100,000 items.

Run by hand (building the archive takes a few minutes on 2 cores; it is kept in
bench/out/ and reused)::

    nice -n 10 .venv/bin/python bench/bench_ui.py [--items 100000] [--requests 200]
        [--rebuild]

The archive: generated items written through ``Archive.write`` as a run writes them:
Zipf-distributed texts (bench_archive.Corpus, fixed seed) with titles, a mix of types,
languages, publication dates; one in five a web page on one of 40 sites, linked from a
mail of a mailbox source; one in twenty a ZIP with three members; 3 % failures of a few
kinds. The server: ``textsieve.ui.app`` under uvicorn in its own process (so the client's
work does not share its interpreter), on 127.0.0.1. Each page is asked ``--requests``
times after a warm-up, with a mix of queries (common, mid-frequency and rare words, two
words, a phrase, a prefix, filtered by type, by site, sorted by date, page 3) and of item
pages (plain, web with mails, ZIP with members, a member). Reported: p50, p95, max in ms,
against the issue's bar: search p95 < 100 ms, item p95 < 50 ms.
"""

from __future__ import annotations

import argparse
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_archive import Corpus  # noqa: E402
from textsieve.archive.store import Archive, Entry  # noqa: E402
from textsieve.model import (  # noqa: E402
    Document,
    ErrorInfo,
    ErrorKind,
    Item,
    MailRef,
    Metadata,
    Status,
)

OUT = ROOT / "bench" / "out"
SEED = 20261124
TYPES = [("text/html", 30), ("application/pdf", 25), ("text/plain", 15),
         ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", 10),
         ("message/rfc822", 8), ("text/csv", 5), ("application/vnd.oasis.opendocument.text", 4),
         ("image/png", 3)]
LANGS = [("en", 60), ("de", 15), ("fr", 10), (None, 15)]
ERRORS = ["corrupt", "http_404", "timeout", "encrypted", "unsupported"]
MAILBOX = "mbox:/home/reader/links.mbox"


def build(path: Path, items: int) -> None:
    """Write ``items`` generated top-level items (plus members) into a new archive."""
    rng = random.Random(SEED)
    corpus = Corpus(seed=SEED)
    sites = [f"site{n}.example.org" for n in range(40)]
    types, tweights = zip(*TYPES, strict=True)
    langs, lweights = zip(*LANGS, strict=True)
    t0 = time.perf_counter()
    with Archive(path) as a:
        run_id = a.begin_run(["dir:/home/reader/docs", MAILBOX], {})
        sources = {"dir:/home/reader/docs": a.source_id("dir:/home/reader/docs"),
                   MAILBOX: a.source_id(MAILBOX)}
        batch: list[Entry] = []
        links: list[tuple[str, MailRef]] = []
        for n in range(items):
            text = corpus.document()
            corpus.docs.clear()  # the corpus keeps texts for its own benchmark: not here
            title = " ".join(text.split()[:rng.randint(3, 8)]).rstrip(".?!")
            web = rng.random() < 0.2
            if web:
                key = f"https://{rng.choice(sites)}/a/{n}.html"
                item = Item(key=key, original=key, source=MAILBOX, url=key, name=f"{n}.html")
                mime = "text/html"
            else:
                mime = rng.choices(types, tweights)[0]
                key = f"/home/reader/docs/{n // 1000}/doc{n}"
                item = Item(key=key, original=key, source="dir:/home/reader/docs", path=key,
                            name=f"doc{n}", size=len(text) * 2, mtime_ns=n)
            year = rng.randint(2005, 2026)
            meta = Metadata(author=f"Author {rng.randint(1, 500)}",
                            created=f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                            language=rng.choices(langs, lweights)[0])
            failed = rng.random() < 0.03
            doc = Document(name=item.name, mime_type=mime, text="" if failed else text,
                           markdown="" if failed else f"# {title}\n\n{text}",
                           title=None if failed else title, metadata=meta,
                           size=item.size, sha256=f"{n:064x}", extractor="bench/1")
            if failed:
                doc.status = Status.ERROR
                kind = "http_404" if web else rng.choice(ERRORS)
                doc.error = ErrorInfo(ErrorKind(kind), f"generated failure {kind}")
            elif not web and rng.random() < 0.05:
                doc.mime_type = "application/zip"
                for m in range(3):
                    member = corpus.document()
                    corpus.docs.clear()
                    doc.children.append(Document(name=f"member{m}.txt", mime_type="text/plain",
                                                 text=member[:1500], markdown=member[:1500]))
            batch.append(Entry(item=item, doc=doc))
            if web:
                links.append((key, MailRef(source=MAILBOX, message_id=f"<m{n}@bench>",
                                           date=f"{year}-{rng.randint(1, 12):02d}-01T08:00:00",
                                           sender="me@example.org", subject=f"read: {title}",
                                           labels=("Links",))))
            if len(batch) >= 500:
                a.write(batch, run_id, sources)
                a.link_mails(links, run_id, sources)
                batch, links = [], []
                if (n + 1) % 10_000 == 0:
                    print(f"  {n + 1:,} items, {time.perf_counter() - t0:.0f} s", flush=True)
        a.write(batch, run_id, sources)
        a.link_mails(links, run_id, sources)
        a.end_run(run_id, {"total": items})
        a.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        a.conn.execute("ANALYZE")
    print(f"built {path} ({path.stat().st_size / 1e6:.0f} MB) in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(path: Path, port: int) -> subprocess.Popen[bytes]:
    code = ("import uvicorn, sys; from textsieve.ui import app; "
            f"uvicorn.run(app(sys.argv[1]), host='127.0.0.1', port={port}, "
            "log_level='warning')")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)])
    deadline = time.monotonic() + 120  # the first open runs the integrity check
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/static/style.css", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start")


def _measure(client: httpx.Client, urls: list[str], n: int,
             per_url: dict[str, list[float]] | None = None) -> list[float]:
    for u in urls:  # warm-up: every page once (SQLite's cache, the facets)
        client.get(u).raise_for_status()
    times = []
    for i in range(n):
        u = urls[i % len(urls)]
        t0 = time.perf_counter()
        r = client.get(u)
        times.append((time.perf_counter() - t0) * 1000)
        r.raise_for_status()
        if per_url is not None:
            per_url.setdefault(u, []).append(times[-1])
    return times


def _row(name: str, times: list[float], bar: float) -> str:
    p95 = statistics.quantiles(times, n=20)[18]
    return (f"{name:<8} {len(times):>5} {statistics.median(times):>8.1f} {p95:>8.1f} "
            f"{max(times):>8.1f}   p95 < {bar:.0f} ms: {'yes' if p95 < bar else 'NO'}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    path = OUT / f"ui-{args.items}.db"
    if args.rebuild or not path.exists():
        for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            p.unlink(missing_ok=True)
        build(path, args.items)
    with Archive(path, check=False):  # an archive built by an older textsieve: migrated
        pass
    with Archive(path, readonly=True, check=False) as a:
        c = a.conn
        plain = [r[0] for r in c.execute("SELECT id FROM items WHERE parent_id IS NULL AND "
                                         "key LIKE '/home/%' AND status = 'ok' LIMIT 50")]
        webs = [r[0] for r in c.execute("SELECT DISTINCT item_id FROM item_mails LIMIT 50")]
        zips = [r[0] for r in c.execute("SELECT id FROM items WHERE mime_type = "
                                        "'application/zip' LIMIT 30")]
        members = [r[0] for r in c.execute("SELECT id FROM items WHERE parent_id IS NOT NULL "
                                           "LIMIT 30")]
    corpus = Corpus(seed=SEED)
    vocab = corpus.vocab
    queries = ["q=the", "q=year", f"q={vocab[300]}", f"q={vocab[3000]}", f"q={vocab[20000]}",
               f"q={vocab[100]}+{vocab[2000]}", f"q=%22{vocab[0]}+{vocab[1]}%22",
               f"q={vocab[500][:4]}*", f"q={vocab[1000]}&type=application%2Fpdf",
               f"q={vocab[800]}&site=site3.example.org", f"q={vocab[400]}&sort=read",
               f"q={vocab[400]}&sort=published", f"q={vocab[250]}&page_no=3",
               f"q={vocab[600]}&language=de", "q=&status=error", "q="]
    port = _port()
    proc = _serve(path, port)
    try:
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(timeout=30) as client:
            per_query: dict[str, list[float]] = {}
            search = _measure(client, [f"{base}/search?{q}" for q in queries], args.requests,
                              per_query)
            item_ids = [x for group in zip(plain, webs, zips, members, strict=False)
                        for x in group]
            items = _measure(client, [f"{base}/items/{i}" for i in item_ids], args.requests)
            other = {p: _measure(client, [f"{base}{p}"], max(10, args.requests // 10))
                     for p in ("/reading", "/problems", "/overview")}
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"\n{args.items:,} items, {path.stat().st_size / 1e6:.0f} MB; ms through HTTP "
          f"(uvicorn, one process, 127.0.0.1)")
    print(f"{'page':<8} {'n':>5} {'p50':>8} {'p95':>8} {'max':>8}")
    print(_row("search", search, 100))
    print(_row("item", items, 50))
    for p, t in other.items():
        print(_row(p.strip("/")[:8], t, 1000))
    print("\nsearch by query (median ms, slowest first):")
    for u, t in sorted(per_query.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"  {statistics.median(t):7.1f}  {u.split('/search?', 1)[1]}")


if __name__ == "__main__":
    main()
