"""Archive benchmark: compression choice, archive size, write rate, search latency, re-runs.

Run by hand (about a minute on 2 cores)::

    .venv/bin/python bench/bench_archive.py [--corpus DIR] [--items 10000] [--files 1000]
        [--queries 200]

Five measurements in one run, each printed as a table, then a summary:

1. Compression of real extracted texts, each item compressed on its own as the archive does
   it: raw, zlib 6/9 (the classic choice for text in SQLite), zstd 1/3/6/9/12/19, and a zstd
   dictionary trained on half the corpus and tried on the other half (would it pay for
   small items?). Items: every text (top-level and children) ``textsieve.extract`` gets from
   the dev corpus, and for scale the corpus texts joined per format (large items).
2. Archive size vs raw text: ``textsieve run`` over the dev corpus into a fresh archive,
   checkpointed; size of every table and index from ``dbstat``, the FTS index among them.
3. Items/s written for small items: 10,000 synthetic 1-5 KB texts (Zipf-distributed words
   from a generated vocabulary, fixed seed) through ``Archive.write`` in batches of 64, as
   the runner does; then 1,000 of them as .txt files through the full ``textsieve run``.
4. Search latency on that 10,000-item archive: common, mid-frequency and rare words, 2 and 3
   words taken from one document, phrases; plus a first query on a fresh connection with the
   file's pages dropped from the OS cache (``posix_fadvise``: cold-ish).
5. Re-runs over the unchanged 1,000-file tree: same command, same archive; then after
   touching every file's mtime (the run hashes them all and re-extracts none).

End-to-end steps are timed best of 3 (the cores are shared with other work).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import textsieve  # noqa: E402
from textsieve.archive.search import search  # noqa: E402
from textsieve.archive.store import ZSTD_LEVEL, Archive, Entry  # noqa: E402
from textsieve.model import Document, Item  # noqa: E402

CORPUS = ROOT.parent / "shared" / "data" / "dev-corpus"
CLI = Path(sys.executable).with_name("textsieve")
SEED = 20240603
MB = 1_000_000
REPS = 3  # timed end-to-end steps: best of this many (the cores are shared)


def _table(headers: list[str], rows: list[list[object]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths, strict=True))) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _best_time(fn: Callable[[], object], *, budget: float = 0.6, max_reps: int = 3) -> float:
    """Best of a few repetitions (fewer when one pass already takes the budget)."""
    best = float("inf")
    spent = 0.0
    for _ in range(max_reps):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, spent = min(best, dt), spent + dt
        if spent > budget:
            break
    return best


# -- 1. compression ----------------------------------------------------------------------------
@dataclass
class Codec:
    name: str
    compress: Callable[[bytes], bytes]
    decompress: Callable[[bytes], bytes]


def _codecs() -> list[Codec]:
    out = [Codec("raw", bytes, bytes)]
    for level in (6, 9):
        out.append(Codec(f"zlib {level}", lambda b, lv=level: zlib.compress(b, lv),
                         zlib.decompress))
    dz = zstandard.ZstdDecompressor()  # one context reused, as Archive does
    for level in (1, 3, 6, 9, 12, 19):
        cz = zstandard.ZstdCompressor(level=level)
        out.append(Codec(f"zstd {level}", cz.compress, dz.decompress))
    return out


def corpus_texts(corpus: Path) -> tuple[list[bytes], dict[str, bytes], float, int]:
    """Every non-empty text textsieve extracts from the corpus (documents and children),
    the same joined per format (the large items), extraction seconds and file count."""
    texts: list[bytes] = []
    per_format: dict[str, list[bytes]] = defaultdict(list)
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    t0 = time.perf_counter()
    for p in files:
        doc = textsieve.extract(p)
        for d in doc.walk():
            if d.text:
                b = d.text.encode("utf-8")
                texts.append(b)
                fmt = p.relative_to(corpus).parts[0] if p.parent != corpus else "top"
                per_format[fmt].append(b)
    seconds = time.perf_counter() - t0
    large = {f"{fmt} (joined)": b"\n\n".join(v) for fmt, v in per_format.items()}
    large = {k: v for k, v in large.items() if len(v) >= 100_000}
    return texts, large, seconds, len(files)


@dataclass
class CodecResult:
    name: str
    raw: int
    packed: int
    c_seconds: float
    d_seconds: float
    items: int

    @property
    def ratio(self) -> float:
        return self.raw / self.packed if self.packed else 0.0


def measure_codec(codec: Codec, items: list[bytes]) -> CodecResult:
    packed = [codec.compress(b) for b in items]
    assert all(codec.decompress(p) == b for p, b in zip(packed, items, strict=True))
    c = _best_time(lambda: [codec.compress(b) for b in items])
    d = _best_time(lambda: [codec.decompress(p) for p in packed])
    return CodecResult(codec.name, sum(map(len, items)), sum(map(len, packed)), c, d,
                       len(items))


def compression_table(results: list[CodecResult]) -> str:
    rows = []
    for r in results:
        if r.name == "raw":
            rows.append([r.name, f"{r.raw:,}", "100.0%", "1.00x", "", "", ""])
            continue
        rows.append([r.name, f"{r.packed:,}", f"{r.packed / r.raw * 100:.1f}%",
                     f"{r.ratio:.2f}x", f"{r.raw / r.c_seconds / MB:,.0f}",
                     f"{r.raw / r.d_seconds / MB:,.0f}",
                     f"{r.c_seconds / r.items * 1e6:,.0f}"])
    return _table(["codec", "bytes", "of raw", "ratio", "comp MB/s", "decomp MB/s",
                   "comp us/item"], rows)


def dictionary_trial(texts: list[bytes], level: int) -> list[list[object]]:
    """Train a zstd dictionary on half the corpus items, measure on the other half."""
    train, test = texts[0::2], texts[1::2]
    rows: list[list[object]] = []
    plain = zstandard.ZstdCompressor(level=level)
    for dict_size in (16_384, 65_536):
        t0 = time.perf_counter()
        try:
            zd = zstandard.train_dictionary(dict_size, train, level=level, threads=1)
        except zstandard.ZstdError as exc:
            rows.append([f"{dict_size // 1024} KB", f"training failed: {exc}"])
            continue
        train_s = time.perf_counter() - t0
        withd = zstandard.ZstdCompressor(level=level, dict_data=zd)
        for label, sel in (("items < 4 KB", [b for b in test if len(b) < 4096]),
                           ("items 4-32 KB", [b for b in test if 4096 <= len(b) < 32768]),
                           ("all test items", test)):
            if not sel:
                continue
            raw = sum(map(len, sel))
            a = sum(len(plain.compress(b)) for b in sel)
            b_ = sum(len(withd.compress(b)) for b in sel)
            rows.append([f"{dict_size // 1024} KB", label, len(sel), f"{raw:,}", f"{a:,}",
                         f"{b_:,}", f"{(a - b_) / a * 100:+.1f}%", f"{train_s:.2f}"])
    return rows


# -- synthetic small documents ------------------------------------------------------------
_COMMON_WORDS = ("the of and to in a is that for it as was with be by on not he this are or his "
                 "from at which but have an they you were her she there been one all we their has "
                 "would when if so no will more can who its said about them some could into than "
                 "only other new time these two may first then do any like my now over such our "
                 "man me even most made after also did many before must through back years where "
                 "much your way well down should because each just those people how too little "
                 "state good very make world still own see men work long get here between both "
                 "life being under never day same another know while last might us great old year "
                 "off come since against go came right used take three")


class Corpus:
    """Zipf-distributed words from a generated vocabulary: realistic index statistics
    (few very common words, a long tail of rare ones), reproducible from the seed."""

    def __init__(self, seed: int = SEED, vocab_size: int = 30_000) -> None:
        self.rng = random.Random(seed)
        onsets = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t",
                  "v", "w", "z", "br", "ch", "cl", "dr", "fl", "gr", "pl", "pr", "sh", "st",
                  "th", "tr"]
        vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "io", "ou"]
        codas = ["", "", "n", "r", "s", "t", "l", "nd", "st", "ck", "ng", "m"]
        words: list[str] = list(dict.fromkeys(_COMMON_WORDS.split()))
        seen = set(words)
        while len(words) < vocab_size:
            w = "".join(self.rng.choice(onsets) + self.rng.choice(vowels)
                        for _ in range(self.rng.choice((1, 2, 2, 3, 3, 4))))
            w += self.rng.choice(codas)
            if w not in seen:
                seen.add(w)
                words.append(w)
        self.vocab = words
        acc, cum = 0.0, []
        for rank in range(1, vocab_size + 1):
            acc += 1.0 / rank ** 1.07
            cum.append(acc)
        self.cum = cum
        self.df: Counter[str] = Counter()  # in how many documents each word occurs
        self.docs: list[str] = []

    def document(self) -> str:
        target = self.rng.randint(1000, 5000)
        words = self.rng.choices(self.vocab, cum_weights=self.cum, k=target // 5 + 50)
        paras, para, sent, size, i = [], [], [], 0, 0
        while size < target and i < len(words):
            n = self.rng.randint(6, 22)
            sent = words[i:i + n]
            i += n
            if self.rng.random() < 0.15:
                sent.insert(self.rng.randrange(len(sent)), str(self.rng.randint(1, 2030)))
            s = " ".join(sent)
            s = s[0].upper() + s[1:] + self.rng.choice(".....?!")
            para.append(s)
            size += len(s) + 1
            if len(para) >= self.rng.randint(3, 7):
                paras.append(" ".join(para))
                para = []
        if para:
            paras.append(" ".join(para))
        text = "\n\n".join(paras)
        self.df.update(set(text.lower().replace(".", " ").replace("?", " ")
                           .replace("!", " ").split()))
        self.docs.append(text)
        return text


# -- 2. archive size ---------------------------------------------------------------------------
def _run_cli(args: list[str]) -> float:
    """Seconds for one ``textsieve run``; exit 1 only says some items failed (corpus)."""
    t0 = time.perf_counter()
    proc = subprocess.run([str(CLI), "run", "-q", *args], stdout=subprocess.DEVNULL)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"textsieve run {args} failed with exit code {proc.returncode}")
    return time.perf_counter() - t0


def _last_counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as c:
        row = c.execute("SELECT counts FROM runs ORDER BY id DESC LIMIT 1").fetchone()
    return json.loads(row[0])


def _checkpoint(db: Path) -> None:
    c = sqlite3.connect(db)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()


def archive_breakdown(db: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Bytes per table/index (dbstat), and what the items hold (raw vs compressed)."""
    _checkpoint(db)
    c = sqlite3.connect(db)
    objects: dict[str, int] = {}
    try:
        for name, size in c.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            objects[name] = size
    except sqlite3.OperationalError:  # no dbstat: page counts of the FTS shadow tables
        page = c.execute("PRAGMA page_size").fetchone()[0]
        for (name,) in c.execute("SELECT name FROM sqlite_master WHERE name LIKE 'items_fts_%'"
                                 " AND type = 'table'"):
            objects[name] = page * max(1, c.execute(f"SELECT count(*) FROM '{name}'")
                                       .fetchone()[0] // 4)
    dz = zstandard.ZstdDecompressor()
    facts = Counter()
    for text, md, pages, chars in c.execute(
            "SELECT text, markdown, pages, text_chars FROM items"):
        facts["items"] += 1
        facts["text_chars"] += chars
        if text:
            facts["text_utf8"] += len(dz.decompress(text))
            facts["text_zstd"] += len(text)
        if md:
            facts["markdown_zstd"] += len(md)
        if pages:
            facts["pages_zstd"] += len(pages)
    facts["file"] = db.stat().st_size
    facts["free"] = (c.execute("PRAGMA freelist_count").fetchone()[0]
                     * c.execute("PRAGMA page_size").fetchone()[0])
    c.close()
    return objects, dict(facts)


def fts_variants(texts: list[bytes]) -> list[list[object]]:
    """Index size of the same texts under FTS5's detail options (what each would cost or
    save; column and none lose phrase and NEAR queries)."""
    rows: list[list[object]] = []
    decoded = [t.decode("utf-8") for t in texts]
    for detail in ("full", "column", "none"):
        c = sqlite3.connect(":memory:")
        c.execute("CREATE VIRTUAL TABLE f USING fts5(title, text, content='', "
                  f"detail={detail}, tokenize='unicode61 remove_diacritics 2')")
        t0 = time.perf_counter()
        with c:
            c.executemany("INSERT INTO f (rowid, title, text) VALUES (?, '', ?)",
                          enumerate(decoded, 1))
        secs = time.perf_counter() - t0
        size = c.execute("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'f_%'").fetchone()[0]
        rows.append([detail + (" (archive)" if detail == "full" else ""), f"{size:,}",
                     f"{size / sum(map(len, texts)):.1%}", f"{secs:.2f}"])
        c.close()
    return rows


# -- 3. writing --------------------------------------------------------------------------------
def write_synthetic(db: Path, texts: list[str], batch: int = 64) -> float:
    """Write texts as top-level documents through Archive.write, batch by batch."""
    t0 = time.perf_counter()
    with Archive(db) as ar:
        run_id = ar.begin_run(["bench:"], {})
        sid = {"bench:": ar.source_id("bench:")}
        for start in range(0, len(texts), batch):
            entries = []
            for i, text in enumerate(texts[start:start + batch], start):
                key = f"/bench/d{i // 100:03d}/f{i:05d}.txt"
                item = Item(key=key, original=key, source="bench:", path=key, name=key[-10:],
                            size=len(text), mtime_ns=i)
                doc = Document(name=item.name, mime_type="text/plain", text=text,
                               markdown=text, size=len(text), sha256=f"{i:064x}",
                               extractor="bench/1")
                entries.append(Entry(item, doc))
            ar.write(entries, run_id, sid)
        ar.end_run(run_id, {"extracted": len(texts)})
    return time.perf_counter() - t0


# -- 4. search ---------------------------------------------------------------------------------
def make_queries(corp: Corpus, n: int) -> list[tuple[str, str]]:
    rng = random.Random(SEED + 1)
    by_df = sorted(corp.df.items(), key=lambda kv: -kv[1])
    words_only = [(w, df) for w, df in by_df if w.isalpha()]
    common = [w for w, _ in words_only[:60]]
    mid = [w for w, df in words_only if 20 <= df <= 500]
    rare = [w for w, df in words_only if df <= 2]
    out: list[tuple[str, str]] = []
    shares = {"common word": 0.2, "mid word": 0.2, "rare word": 0.2, "2 words, one doc": 0.15,
              "3 words, one doc": 0.1, "phrase": 0.15}
    for kind, share in shares.items():
        for _ in range(max(1, round(n * share))):
            if kind == "common word":
                q = rng.choice(common)
            elif kind == "mid word":
                q = rng.choice(mid)
            elif kind == "rare word":
                q = rng.choice(rare)
            else:
                doc = rng.choice(corp.docs).lower()
                for ch in ".?!":
                    doc = doc.replace(ch, " ")
                toks = [t for t in doc.split() if t.isalpha()]
                if kind == "phrase":
                    i = rng.randrange(len(toks) - 3)
                    q = '"' + " ".join(toks[i:i + rng.choice((2, 3))]) + '"'
                else:
                    q = " ".join(rng.sample(toks, 2 if kind.startswith("2") else 3))
            out.append((kind, q))
    return out


def _drop_cache(path: Path) -> None:
    for p in (path, Path(f"{path}-wal")):
        if p.exists() and hasattr(os, "posix_fadvise"):
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def search_latency(db: Path, queries: list[tuple[str, str]]
                   ) -> tuple[dict[str, list[tuple[float, int]]], float, float, float]:
    """Per kind of query: (seconds, hits); and the cold-ish open, first query, same warm."""
    _checkpoint(db)
    _drop_cache(db)
    t0 = time.perf_counter()
    ar = Archive(db, readonly=True)
    t1 = time.perf_counter()
    search(ar, queries[0][1], limit=20)
    t2 = time.perf_counter()
    search(ar, queries[0][1], limit=20)
    warm = time.perf_counter() - t2
    cold_open, cold_query = t1 - t0, t2 - t1
    per_kind: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for kind, q in queries:
        t = time.perf_counter()
        hits = search(ar, q, limit=20)
        per_kind[kind].append((time.perf_counter() - t, len(hits)))
    ar.close()
    return per_kind, cold_open, cold_query, warm


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs)) - 1))]


# -- 5. the tree ------------------------------------------------------------------------------
def write_tree(root: Path, texts: list[str]) -> None:
    for i, text in enumerate(texts):
        d = root / f"d{i // 100:02d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"note-{i:04d}.txt").write_text(text, encoding="utf-8")


def touch_all(root: Path) -> None:
    for p in root.rglob("*.txt"):
        st = p.stat()
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


# -- main --------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--items", type=int, default=10_000, help="synthetic items written")
    ap.add_argument("--files", type=int, default=1_000, help=".txt files in the re-run tree")
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    summary: list[str] = []
    print(f"python {sys.version.split()[0]}; SQLite {sqlite3.sqlite_version}; "
          f"zstandard {zstandard.__version__} (zstd {zstandard.ZSTD_VERSION}); "
          f"archive ZSTD_LEVEL = {ZSTD_LEVEL}; {os.cpu_count()} cores")

    # 1 ---------------------------------------------------------------------------------------
    texts, large, ext_s, nfiles = corpus_texts(args.corpus)
    sizes = sorted(map(len, texts))
    print(f"\n== 1. compression, each item on its own\n"
          f"dev corpus: {nfiles} files -> {len(texts)} texts, {sum(sizes):,} bytes UTF-8 "
          f"(median {statistics.median(sizes):,.0f} B, {sum(s < 4096 for s in sizes)} "
          f"under 4 KB, largest {sizes[-1]:,} B); in-process extraction "
          f"{nfiles / ext_s:,.0f} files/s, {len(texts) / ext_s:,.0f} texts/s")
    codecs = _codecs()
    corpus_res = [measure_codec(c, texts) for c in codecs]
    print(f"\n-- dev-corpus texts ({len(texts)} items)")
    print(compression_table(corpus_res))
    large_items = list(large.values())
    print(f"\n-- large items: corpus texts joined per format ({len(large_items)} items, "
          f"{sum(map(len, large_items)):,} bytes: "
          f"{', '.join(f'{k.split()[0]} {len(v) // 1000} KB' for k, v in large.items())})")
    large_res = [measure_codec(c, large_items) for c in codecs]
    print(compression_table(large_res))
    print(f"\n-- zstd {ZSTD_LEVEL} with a trained dictionary (trained on the even-numbered "
          "corpus texts, measured on the odd ones)")
    print(_table(["dict", "test set", "items", "raw", "no dict", "with dict", "saved",
                  "train s"], dictionary_trial(texts, ZSTD_LEVEL)))
    by = {r.name: r for r in corpus_res}
    cur = by[f"zstd {ZSTD_LEVEL}"] if f"zstd {ZSTD_LEVEL}" in by else by["zstd 9"]
    summary.append(f"compression (corpus texts): zlib 6 {by['zlib 6'].ratio:.2f}x, "
                   f"zstd 3 {by['zstd 3'].ratio:.2f}x, {cur.name} {cur.ratio:.2f}x "
                   f"({cur.raw / cur.c_seconds / MB:.0f} MB/s, "
                   f"{cur.c_seconds / cur.items * 1e6:.0f} us/item), "
                   f"zstd 19 {by['zstd 19'].ratio:.2f}x "
                   f"({by['zstd 19'].raw / by['zstd 19'].c_seconds / MB:.0f} MB/s)")

    with tempfile.TemporaryDirectory(prefix="bench-archive-") as tmp_s:
        tmp = Path(tmp_s)

        # 2 -----------------------------------------------------------------------------------
        db = tmp / "corpus.db"
        run_s = _run_cli([str(args.corpus), "--archive", str(db)])
        objects, facts = archive_breakdown(db)
        fts = sum(v for k, v in objects.items() if k.startswith("items_fts"))
        items_tbl = objects.get("items", 0)
        idx = sum(v for k, v in objects.items()
                  if k.startswith(("sqlite_autoindex_items", "items_parent", "items_sha",
                                   "items_status")))
        other = facts["file"] - fts - items_tbl - idx - facts["free"]
        raw = facts["text_utf8"]
        print(f"\n== 2. archive size vs raw text (textsieve run over the dev corpus, "
              f"{run_s:.1f} s, {facts['items']} items incl. children; checkpointed)")
        rows = [
            ["raw extracted text (UTF-8)", f"{raw:,}", "100%"],
            ["  (text_chars, code points)", f"{facts['text_chars']:,}", ""],
            ["text blobs, zstd", f"{facts['text_zstd']:,}", f"{facts['text_zstd'] / raw:.1%}"],
            ["markdown blobs (when != text), zstd", f"{facts.get('markdown_zstd', 0):,}",
             f"{facts.get('markdown_zstd', 0) / raw:.1%}"],
            ["page offsets, zstd JSON", f"{facts.get('pages_zstd', 0):,}",
             f"{facts.get('pages_zstd', 0) / raw:.1%}"],
            ["items table (rows, blobs, metadata)", f"{items_tbl:,}", f"{items_tbl / raw:.1%}"],
            ["items indexes (key, parent, sha, status)", f"{idx:,}", f"{idx / raw:.1%}"],
            ["FTS5 index (items_fts_*)", f"{fts:,}", f"{fts / raw:.1%}"],
            ["free pages (left by FTS segment merges)", f"{facts['free']:,}",
             f"{facts['free'] / raw:.1%}"],
            ["everything else (runs, provenance, meta...)", f"{other:,}", f"{other / raw:.1%}"],
            ["archive file", f"{facts['file']:,}", f"{facts['file'] / raw:.1%}"],
        ]
        print(_table(["", "bytes", "of raw text"], rows))
        print("FTS shadow tables: " + ", ".join(
            f"{k} {v:,}" for k, v in sorted(objects.items()) if k.startswith("items_fts"))
            + "\nthe same corpus texts in a contentless FTS5 table, by detail option "
            "(column/none: no phrase or NEAR queries):")
        try:
            print(_table(["detail", "bytes", "of raw text", "index s"], fts_variants(texts)))
        except sqlite3.OperationalError as exc:
            print(f"(not measured: {exc})")
        summary.append(f"archive of the dev corpus: {facts['file'] / MB:.2f} MB for "
                       f"{raw / MB:.2f} MB raw text ({facts['file'] / raw:.0%}); "
                       f"FTS index {fts / MB:.2f} MB ({fts / raw:.0%} of raw), compressed "
                       f"texts {facts['text_zstd'] / MB:.2f} MB")

        # 3 -----------------------------------------------------------------------------------
        corp = Corpus()
        t0 = time.perf_counter()
        syn = [corp.document() for _ in range(args.items)]
        gen_s = time.perf_counter() - t0
        syn_bytes = sum(len(t.encode()) for t in syn)
        # Shared cores: best of REPS, each into a fresh archive (the last one is kept).
        write_ts = []
        for rep in range(REPS):
            big = tmp / f"synthetic-{rep}.db"
            write_ts.append(write_synthetic(big, syn))
        write_s = min(write_ts)
        _checkpoint(big)
        print(f"\n== 3. items/s written, small items ({args.items:,} synthetic texts, "
              f"{syn_bytes / args.items / 1000:.1f} KB average, vocabulary "
              f"{len(corp.df):,} words; generated in {gen_s:.1f} s)")
        tree = tmp / "tree"
        write_tree(tree, syn[:args.files])
        first_ts = []
        for rep in range(REPS):
            tdb = tmp / f"tree-{rep}.db"
            first_ts.append(_run_cli([str(tree), "--archive", str(tdb)]))
        first_s = min(first_ts)
        first_counts = _last_counts(tdb)
        tree_bytes = sum(len(t.encode()) for t in syn[:args.files])
        rows = [
            [f"Archive.write, batches of 64 ({args.items:,} items)",
             f"{write_s:.2f} (best of {REPS})",
             f"{args.items / write_s:,.0f}", f"{syn_bytes / write_s / MB:.2f}"],
            [f"textsieve run, {args.files:,} .txt files (extraction incl.)",
             f"{first_s:.2f} (best of {REPS})",
             f"{args.files / first_s:,.0f}", f"{tree_bytes / first_s / MB:.2f}"],
        ]
        print(_table(["path", "seconds", "items/s", "MB/s"], rows))
        syn_obj, syn_facts = archive_breakdown(big)
        syn_fts = sum(v for k, v in syn_obj.items() if k.startswith("items_fts"))
        print(f"archive of {args.items:,} items: {syn_facts['file'] / MB:.1f} MB for "
              f"{syn_bytes / MB:.1f} MB raw text ({syn_facts['file'] / syn_bytes:.0%}): "
              f"FTS index {syn_fts / MB:.1f} MB ({syn_fts / syn_bytes:.0%}), text blobs "
              f"{syn_facts['text_zstd'] / MB:.1f} MB ({syn_facts['text_zstd'] / syn_bytes:.0%}; "
              "random word sequences compress worse than real text); textsieve run extracted "
              f"{first_counts.get('extracted')} items")
        syn_b = [t.encode() for t in syn]
        shares = []
        for level in sorted({3, 6, ZSTD_LEVEL, 12, 19}):
            cz = zstandard.ZstdCompressor(level=level)
            sec = _best_time(lambda cz=cz: [cz.compress(b) for b in syn_b], budget=2.5)
            shares.append(f"zstd {level} {sec:.2f} s ({sec / write_s:.0%})")
        print("compressing the same texts alone, share of the Archive.write time: "
              + ", ".join(shares))
        summary.append(f"writes: {args.items / write_s:,.0f} items/s "
                       f"({syn_bytes / write_s / MB:.1f} MB/s) through Archive.write; "
                       f"{args.files / first_s:,.0f} files/s through textsieve run")

        # 4 -----------------------------------------------------------------------------------
        queries = make_queries(corp, args.queries)
        per_kind, cold_open, cold_q, warm_q = search_latency(big, queries)
        print(f"\n== 4. search latency, {args.items:,}-item archive, limit 20 "
              f"({len(queries)} queries; ms)")
        rows = []
        all_t: list[float] = []
        for kind, res in per_kind.items():
            ts = [t * 1000 for t, _ in res]
            all_t += ts
            rows.append([kind, len(ts), f"{statistics.mean(h for _, h in res):.1f}",
                         f"{_pct(ts, 50):.2f}", f"{_pct(ts, 95):.2f}", f"{max(ts):.2f}"])
        rows.append(["all", len(all_t), "", f"{_pct(all_t, 50):.2f}", f"{_pct(all_t, 95):.2f}",
                     f"{max(all_t):.2f}"])
        print(_table(["queries", "n", "avg hits", "p50", "p95", "max"], rows))
        print(f"cold-ish first query ({queries[0][1]!r}, file dropped from the OS cache): "
              f"open {cold_open * 1000:.1f} ms + query {cold_q * 1000:.1f} ms; the same "
              f"query again, warm: {warm_q * 1000:.1f} ms")
        summary.append(f"search on {args.items:,} items: p50 {_pct(all_t, 50):.1f} ms, "
                       f"p95 {_pct(all_t, 95):.1f} ms, max {max(all_t):.1f} ms; cold-ish "
                       f"first query {(cold_open + cold_q) * 1000:.0f} ms")

        # 5 -----------------------------------------------------------------------------------
        again_s = min(_run_cli([str(tree), "--archive", str(tdb)]) for _ in range(REPS))
        again = _last_counts(tdb)
        touched_ts = []
        for _ in range(REPS):  # each run records the new mtimes: touch again every time
            touch_all(tree)
            touched_ts.append(_run_cli([str(tree), "--archive", str(tdb)]))
        touched_s = min(touched_ts)
        touched = _last_counts(tdb)
        start_s = min(_best_time(lambda: subprocess.run(
            [str(CLI), "--help"], check=True, stdout=subprocess.DEVNULL)) for _ in range(2))
        print(f"\n== 5. re-runs over the unchanged {args.files:,}-file tree (same archive)")
        rows = [
            ["first run", f"{first_s:.2f}", "1.00", first_counts.get("extracted"),
             first_counts.get("skipped")],
            ["second run, unchanged", f"{again_s:.2f}", f"{again_s / first_s:.2f}",
             again.get("extracted"), again.get("skipped")],
            ["after touching every mtime (hashes all)", f"{touched_s:.2f}",
             f"{touched_s / first_s:.2f}", touched.get("extracted"), touched.get("skipped")],
            ["(CLI start-up alone: textsieve --help)", f"{start_s:.2f}",
             f"{start_s / first_s:.2f}", "", ""],
        ]
        print(_table(["run", f"seconds (best of {REPS})", "vs first", "extracted", "skipped"],
                     rows))
        # Context: real documents. Items that failed are retried on every run by design,
        # so this re-run is not extraction-free when the corpus has failures.
        corpus_again = _run_cli([str(args.corpus), "--archive", str(db)])
        cc = _last_counts(db)
        print(f"dev corpus ({nfiles} real files, archive of section 2): first run {run_s:.2f} s,"
              f" re-run {corpus_again:.2f} s ({corpus_again / run_s:.0%}), extracted "
              f"{cc.get('extracted')} (why: "
              + ", ".join(f"{k[4:]} {v}" for k, v in cc.items() if k.startswith("why_"))
              + f"), skipped {cc.get('skipped')}")
        summary.append(f"re-run of {args.files:,} unchanged files: {again_s:.2f} s vs "
                       f"{first_s:.2f} s first ({again_s / first_s:.0%}); after touch "
                       f"{touched_s:.2f} s ({touched_s / first_s:.0%}), "
                       f"{touched.get('extracted')} re-extracted")

    print(f"\n== summary ({time.perf_counter() - t_start:.0f} s)")
    for line in summary:
        print(f"- {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
