"""Chunks for a language model: within budget, following the document's structure, with
provenance a model's answer can point back to (README: "Chunks for language models").

Through what users run: ``textsieve.chunk``, ``textsieve export --format chunks`` and
``GET /v1/items/{id}/chunks`` under a real ``textsieve serve``.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import textsieve
from server_proc import running_server
from textsieve.chunking import ChunkError, approx_tokens

WORD = re.compile(r"\w+")


def textsieve_cli(*args: object, env: dict[str, str] | None = None
                  ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", *map(str, args)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def report_html() -> str:
    """A report with nested sections, a list, a long paragraph and a 60-row table."""
    rows = "".join(f"<tr><td>station {i}</td><td>{i * 7 % 50} herons</td>"
                   f"<td>{1990 + i % 30}</td></tr>" for i in range(60))
    long_para = " ".join(f"Sentence {i} tells how the herons of the lake moved north "
                         f"in spring." for i in range(40))
    items = "".join(f"<li>Item {i}: nests counted along the eastern shore of the lake "
                    f"in the morning.</li>" for i in range(12))
    return f"""<html><head><title>Heron report</title></head><body>
<h1>Heron report</h1><p>An introduction to the survey of herons and their nests.</p>
<h2>Methods</h2><p>We counted nests from boats.</p>
<h3>Boats</h3><p>Two boats went out each morning with three observers.</p>
<ul>{items}</ul>
<h2>Results</h2><p>{long_para}</p>
<h3>Counts by station</h3>
<table><tr><th>Station</th><th>Count</th><th>Year</th></tr>{rows}</table>
<h2>Discussion</h2><p>The colony grew.</p></body></html>"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> textsieve.Document:
    path = tmp_path_factory.mktemp("chunks") / "report.html"
    path.write_text(report_html())
    doc = textsieve.extract(path, html="full")
    assert doc.status == "ok", doc.error
    return doc


def covered_words(text: str, spans: list[tuple[int, int]]) -> float:
    marks = bytearray(len(text) + 1)
    for a, b in spans:
        marks[a:b] = b"\x01" * (b - a)
    words = [m.start() for m in WORD.finditer(text)]
    return sum(marks[w] for w in words) / max(len(words), 1)


def test_chunks_follow_the_structure(report: textsieve.Document) -> None:
    chunks = textsieve.chunk(report, max_tokens=64)
    text = report.text
    assert len(chunks) > 5
    for c in chunks:
        assert c.tokens <= 64 and c.tokens == approx_tokens(c.text), c
        body = text[c.start:c.end]
        if c.header_repeated:
            assert c.text == "Station\tCount\tYear\n" + body
        else:
            assert c.text == body
    assert covered_words(text, [(c.start, c.end) for c in chunks]) == 1.0
    # Heading paths: what a chunk is about, from the top.
    by_text = {w: c.heading_path for c in chunks for w in ("observers", "Sentence 39",
                                                           "station 59", "colony")
               if w in c.text}
    assert by_text["observers"] == ["Heron report", "Methods", "Boats"]
    assert by_text["Sentence 39"] == ["Heron report", "Results"]
    assert by_text["station 59"] == ["Heron report", "Results", "Counts by station"]
    assert by_text["colony"] == ["Heron report", "Discussion"]
    # No chunk runs across a heading into the next section.
    assert not any("We counted" in c.text and "Two boats" in c.text for c in chunks)
    # A list item is never cut; the long paragraph is cut between sentences only.
    for i in range(12):
        line = f"Item {i}: nests counted along the eastern shore of the lake in the morning."
        assert sum(line in c.text for c in chunks) == 1, line
    for i in range(40):
        sentence = f"Sentence {i} tells how the herons of the lake moved north in spring."
        assert sum(sentence in c.text for c in chunks) == 1, sentence
    # The table is split by rows, each piece after the first under the header row again.
    pieces = [c for c in chunks if "station 3" in c.text or c.header_repeated]
    assert len(pieces) >= 3 and sum(c.header_repeated for c in pieces) >= 2
    for i in range(60):
        row = f"station {i}\t{i * 7 % 50} herons\t{1990 + i % 30}"
        assert sum(row + "\n" in c.text + "\n" for c in chunks) == 1, row


def test_overlap_repeats_whole_sentences(report: textsieve.Document) -> None:
    plain = [c for c in textsieve.chunk(report, max_tokens=64) if c.heading_path[-1:] ==
             ["Results"]]
    lapped = [c for c in textsieve.chunk(report, max_tokens=64, overlap=30)
              if c.heading_path[-1:] == ["Results"]]
    assert len(lapped) > len(plain) >= 3
    for a, b in itertools.pairwise(lapped):
        assert a.tokens <= 64 and b.start < a.end  # the next one starts inside this one
        shared = report.text[b.start:a.end]
        assert shared.startswith("Sentence") and shared.rstrip().endswith(".")


def test_slides_are_chunked_one_by_one(tmp_path: Path) -> None:
    pptx = pytest.importorskip("pptx")
    prs = pptx.Presentation()
    for n in range(1, 4):
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = f"Slide title {n}"
        slide.placeholders[1].text = f"Point {n} about herons"
    path = tmp_path / "deck.pptx"
    prs.save(path)
    chunks = textsieve.chunk(path, max_tokens=500)
    assert [(c.page_kind, c.pages) for c in chunks] == [("slide", [n]) for n in (1, 2, 3)]
    assert [c.heading_path[-1] for c in chunks] == [f"Slide title {n}" for n in (1, 2, 3)]


def make_tokenizer_file(path: Path) -> Path:
    """A real word-level tokenizer, trained here on a few sentences (nothing downloaded)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([report_html()], trainers.WordLevelTrainer(
        special_tokens=["[UNK]"]))
    tok.save(str(path))
    return path


def test_exact_tokenizer_by_file(report: textsieve.Document, tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    path = make_tokenizer_file(tmp_path / "tokenizer.json")
    tok = Tokenizer.from_file(str(path))
    chunks = textsieve.chunk(report, max_tokens=40, tokenizer=f"tokenizers:{path}")
    for c in chunks:
        exact = len(tok.encode(c.text, add_special_tokens=False).ids)
        assert c.tokens == exact <= 40
    assert covered_words(report.text, [(c.start, c.end) for c in chunks]) == 1.0


def test_a_tokenizer_that_needs_a_download_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("tiktoken")
    empty = tmp_path / "cache"
    empty.mkdir()
    os.environ["TIKTOKEN_CACHE_DIR"] = str(empty)
    try:
        with pytest.raises(ChunkError) as err:
            textsieve.chunk(textsieve.Document(text="herons"), tokenizer="tiktoken:cl100k_base")
    finally:
        del os.environ["TIKTOKEN_CACHE_DIR"]
    assert err.value.kind == "tokenizer_needs_download"
    assert not any(empty.iterdir())  # nothing fetched, nothing half-written


def test_bad_budgets_are_refused() -> None:
    doc = textsieve.Document(text="herons")
    for kw in ({"max_tokens": 0}, {"max_tokens": 64, "overlap": 40},
               {"max_tokens": 64, "overlap": -1}):
        with pytest.raises(ChunkError):
            textsieve.chunk(doc, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An archive of the report, a CSV and a mail with an attachment."""
    src = tmp_path_factory.mktemp("docs")
    (src / "report.html").write_text(report_html())
    (src / "birds.csv").write_text("bird,count\n" + "".join(
        f"heron {i},{i}\n" for i in range(200)))
    (src / "note.eml").write_text(
        "From: a@example.org\nTo: b@example.org\nSubject: Herons\nMIME-Version: 1.0\n"
        "Content-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/plain\n\n"
        "See the attached list of herons.\n--XX\nContent-Type: text/plain\n"
        "Content-Disposition: attachment; filename=list.txt\n\nGrey heron\n\nPurple heron\n"
        "--XX--\n")
    db = src.parent / "a.db"
    done = textsieve_cli("run", src, "--archive", db)
    assert done.returncode == 0, done.stderr
    return db


def item_texts(db: Path, tmp: Path) -> dict[int, dict[str, Any]]:
    out = tmp / "items.jsonl"
    assert textsieve_cli("export", "--format", "jsonl", "--to", out, "--archive",
                         db).returncode == 0
    # Lines split at "\n" only: JSON keeps U+2028 and friends as they are, which
    # str.splitlines() would cut at.
    rows = (json.loads(line) for line in out.read_text().split("\n") if line)
    return {r["id"]: r for r in rows}


def test_export_chunks(archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "chunks.jsonl"
    done = textsieve_cli("export", "--format", "chunks", "--max-tokens", 48, "--overlap", 8,
                         "--to", out, "--archive", archive)
    assert done.returncode == 0, done.stderr
    chunks = [json.loads(line) for line in out.read_text().split("\n") if line]
    items = item_texts(archive, tmp_path)
    by_item: dict[int, list[dict[str, Any]]] = {}
    for c in chunks:
        assert c["tokens"] <= 48
        by_item.setdefault(c["item"]["id"], []).append(c)
    with_text = {i for i, r in items.items() if r["text"].strip()}
    assert set(by_item) == with_text
    for iid, cs in by_item.items():
        row = items[iid]
        assert [c["index"] for c in cs] == list(range(len(cs)))
        assert cs[0]["item"]["key"] == row["key"]
        if row["parent_id"] is None:
            assert cs[0]["item"]["path"] == row["key"]
        else:  # an attachment: its parent and the file it came from
            assert cs[0]["item"]["parent_id"] == row["parent_id"]
            assert cs[0]["item"]["root"].endswith("note.eml")
        for c in cs:
            piece = row["text"][c["start"]:c["end"]]
            assert c["text"].endswith(piece) and piece
        assert covered_words(row["text"], [(c["start"], c["end"]) for c in cs]) >= 0.99
    report = next(cs for cs in by_item.values() if cs[0]["item"].get("path", "").endswith(".html"))
    assert ["Heron report", "Results", "Counts by station"] in [c["heading_path"]
                                                                 for c in report]
    csv = next(cs for cs in by_item.values() if cs[0]["item"].get("path", "").endswith(".csv"))
    assert len(csv) > 3 and all(c["text"].startswith("bird\tcount\n") for c in csv)
    # A budget too small, or a tokenizer not there: one line, exit 2, nothing written.
    bad = textsieve_cli("export", "--format", "chunks", "--max-tokens", 2, "--to",
                        tmp_path / "x.jsonl", "--archive", archive)
    assert bad.returncode == 2 and bad.stderr.startswith("textsieve: ")
    assert "Traceback" not in bad.stderr and not (tmp_path / "x.jsonl").exists()


def test_chunks_route(archive: Path, tmp_path: Path) -> None:
    items = item_texts(archive, tmp_path)
    iid = next(i for i, r in items.items() if r["key"].endswith("report.html"))
    with running_server("--archive", str(archive)) as server, server.client() as http:
        r = http.get(f"/v1/items/{iid}/chunks", params={"max_tokens": 64, "overlap": 16})
        assert r.status_code == 200, r.text
        body = r.json()
        text = items[iid]["text"]
        assert body["chunks"] and all(c["tokens"] <= 64 for c in body["chunks"])
        assert all(c["text"].endswith(text[c["start"]:c["end"]]) for c in body["chunks"])
        assert ["Heron report", "Methods", "Boats"] in [c["heading_path"]
                                                         for c in body["chunks"]]
        assert http.get("/v1/items/999999/chunks").status_code == 404
        assert http.get(f"/v1/items/{iid}/chunks", params={"max_tokens": 4}).status_code == 422
        # A server path as a tokenizer is not something a remote caller may name.
        assert http.get(f"/v1/items/{iid}/chunks",
                        params={"tokenizer": "tokenizers:/etc/passwd"}).status_code == 422


def heading_offsets(text: str, markdown: str) -> list[tuple[int, int, str]] | None:
    """(offset, level, heading) of the Markdown's headings found in order in the text as
    blocks of their own; None when one is not found that way."""
    out, pos = [], 0
    for m in re.finditer(r"^(#{1,6}) (.+?)$", markdown, re.M):
        heading = re.sub(r"\\(.)", r"\1", m.group(2)).strip()
        at = text.find(heading, pos)
        while at >= 0 and not ((at == 0 or text[at - 2:at] == "\n\n")
                               and text[at + len(heading):at + len(heading) + 2] in ("",
                                                                                    "\n\n")):
            at = text.find(heading, at + 1)
        if at < 0:
            return None
        out.append((at, len(m.group(1)), heading))
        pos = at + len(heading)
    return out


def within(spans: list[tuple[int, int]], a: int, b: int) -> bool:
    return any(s <= a and b <= e for s, e in spans)


def path_at(headings: list[tuple[int, int, str]], offset: int) -> list[str]:
    stack: list[tuple[int, str]] = []
    for at, level, heading in headings:
        if at >= offset:
            break
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
    return [h for _, h in stack]


@pytest.mark.slow
@pytest.mark.parametrize("budget", [(128, 0), (512, 64)])
def test_dev_corpus_chunks(corpus: Path, tmp_path_factory: pytest.TempPathFactory,
                           budget: tuple[int, int]) -> None:
    """Every item of the dev corpus: chunks within budget, covering its words, heading
    paths right, no block or table row that fits cut."""
    max_tokens, overlap = budget
    tmp = tmp_path_factory.mktemp("corpus")
    db = corpus_archive(corpus, tmp_path_factory)
    out = tmp / "chunks.jsonl"
    done = textsieve_cli("export", "--format", "chunks", "--max-tokens", max_tokens,
                         "--overlap", overlap, "--to", out, "--archive", db)
    assert done.returncode == 0, done.stderr
    by_item: dict[int, list[dict[str, Any]]] = {}
    for line in filter(None, out.read_text().split("\n")):
        c = json.loads(line)
        by_item.setdefault(c["item"]["id"], []).append(c)
    items = item_texts(db, tmp)
    checked = with_headings = 0
    for iid, row in items.items():
        text = row["text"]
        if row["status"] == "error" or not text.strip():
            continue
        cs = by_item[iid]
        checked += 1
        spans = [(c["start"], c["end"]) for c in cs]
        assert all(c["tokens"] <= max_tokens for c in cs), row["key"]
        assert covered_words(text, spans) >= 0.99, row["key"]
        inside = functools.partial(within, sorted(spans))

        for m in re.finditer(r"(?:^|(?<=\n\n))(.+?)(?=\n[ \t]*\n|\Z)", text, re.S):
            block = m.group(1).strip()
            if block and approx_tokens(block) <= max_tokens:
                a = m.start(1) + (len(m.group(1)) - len(m.group(1).lstrip()))
                assert inside(a, a + len(block)), (row["key"], block[:80])
        for m in re.finditer(r"[^\n]*\t[^\n]*", text):  # table rows
            line = m.group()
            if line.strip() and approx_tokens(line) * 2 <= max_tokens:
                a = m.start() + len(line) - len(line.lstrip())
                assert inside(a, m.start() + len(line.rstrip())), (row["key"], line[:80])
        headings = heading_offsets(text, row["markdown"]) if row["markdown"] != text else []
        if headings:
            with_headings += 1
            for c in cs:
                assert c["heading_path"] == path_at(headings, c["end"]), (row["key"], c)
    assert checked > 300 and with_headings > 30, (checked, with_headings)


_CORPUS_DB: dict[str, Path] = {}


def corpus_archive(corpus: Path, factory: pytest.TempPathFactory) -> Path:
    """The dev corpus in an archive, made once per session by ``textsieve run``."""
    if "db" not in _CORPUS_DB:
        db = factory.mktemp("corpus-db") / "corpus.db"
        done = textsieve_cli("run", corpus, "--archive", db, "--timeout", 300)
        assert done.returncode in (0, 1), done.stderr[-2000:]  # some files fail by design
        _CORPUS_DB["db"] = db
    return _CORPUS_DB["db"]


def test_chunks_export_takes_a_label(tmp_path: Path) -> None:
    """`export --format chunks --label L` chunks only the items with that label, as the
    other export formats do (a reading list's folder handed to a model)."""
    marks = tmp_path / "marks.html"
    notes = {"https://birds.example/heron": ("Birds", "Grey herons wait in the shallows."),
             "https://birds.example/avocet": ("Birds", "Avocets sweep the mud for food."),
             "https://bread.example/rye": ("Baking", "Rye dough wants a long cold rest.")}
    body = "".join(f'<DT><H3>{folder}</H3>\n<DL><p>\n<DT><A HREF="{url}">{url}</A>\n'
                   f"<DD>{note}\n</DL><p>\n" for url, (folder, note) in notes.items())
    marks.write_text('<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<META HTTP-EQUIV="Content-Type" '
                     'CONTENT="text/html; charset=UTF-8">\n<TITLE>Bookmarks</TITLE>\n'
                     f"<H1>Bookmarks</H1>\n<DL><p>\n{body}</DL><p>\n")
    db = tmp_path / "a.db"
    r = textsieve_cli("run", "--archive", db, "--fetch", "never", f"bookmarks:{marks}", "-q")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "birds.jsonl"
    r = textsieve_cli("export", "--archive", db, "--format", "chunks", "--to", out,
                      "--label", "birds")
    assert r.returncode == 0, r.stderr
    chunks = [json.loads(line) for line in out.read_text().splitlines()]
    text = " ".join(c["text"] for c in chunks)
    assert "herons" in text and "Avocets" in text and "Rye" not in text
