"""Summaries of real web pages (WCXB dev ground truth): they keep the lead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textsieve.archive.store import Archive
from textsieve.cli import main
from textsieve.enrich import summary
from wcxb_archive import pages, write_pages


def _lead(text: str) -> str | None:
    """The first sentence of the first real paragraph (20+ words): the known lead."""
    paras = [p for p in text.split("\n\n") if len(p.split()) >= 20]
    first = summary.sentences(paras[0])[0] if paras else ""
    return first if len(first.split()) >= 6 else None


@pytest.fixture(scope="module")
def articles() -> list[dict]:
    return [r for r in pages() if r["page_type"] == "article"][:300]


def test_summaries_of_articles_contain_their_lead(articles) -> None:
    cases = [(r, _lead(r["text"])) for r in articles]
    cases = [(r, lead) for r, lead in cases if lead]
    kept = sum(lead in summary.summarize(r["text"], language="en") for r, lead in cases)
    print(f"lead sentence kept in {kept}/{len(cases)} article summaries")
    assert len(cases) > 200
    assert kept / len(cases) > 0.85


def test_summary_is_short_and_made_of_the_text(articles) -> None:
    for r in articles[:50]:
        s = summary.summarize(r["text"], language="en")
        flat = " ".join(r["text"].split())
        for line in s.split("\n"):  # extractive: every sentence is the page's own, after
            pieces = line.split(": ")  # a "section heading: " prefix on long pages
            assert any(all(sent in flat for sent in summary.sentences(": ".join(pieces[j:])))
                       for j in range(len(pieces))), line
        assert len(s) < max(len(r["text"]) * 0.6, 400)


def test_long_texts_with_sections_are_summarised_by_section() -> None:
    sections = [f"## Part {n}\n\n" + " ".join(
        f"Topic {n} sentence {i} talks about subject number {n} in detail." for i in range(20))
        for n in range(5)]
    text = "This report covers five parts of one plan. It is long.\n\n" + "\n\n".join(sections)
    s = summary.summarize(text)
    lines = s.split("\n")
    assert lines[0].startswith("This report covers five parts")
    assert [ln.split(":")[0] for ln in lines[1:]] == [f"Part {n}" for n in range(5)]


def test_summarize_cli_stores_and_show_search_export_read_it(tmp_path: Path, articles,
                                                              capsys) -> None:
    path = tmp_path / "s.db"
    with Archive(path) as a:
        write_pages(a, articles[:30])
    assert main(["summarize", "--archive", str(path), "--all"]) == 0
    assert "30 item(s) summarised" in capsys.readouterr().err
    assert main(["summarize", "--archive", str(path), "--all"]) == 0  # incremental
    assert "0 item(s) summarised" in capsys.readouterr().err
    lead = _lead(articles[0]["text"])
    assert main(["show", "--archive", str(path), "1", "-f", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)["summary"]
    assert lead and lead in shown
    assert main(["summarize", "--archive", str(path), "1", "-n", "1"]) == 0
    assert capsys.readouterr().out.strip() == f"[1] {lead}"
    word = lead.split()[3].strip(",.")
    assert main(["search", "--archive", str(path), f'"{lead}"']) == 0
    assert f"    = {lead}" in capsys.readouterr().out, word
    out = tmp_path / "all.jsonl"
    assert main(["export", "--archive", str(path), "--format", "jsonl", "--to",
                 str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["summary"] == lead and all(r["summary"] for r in rows)


def test_a_re_extracted_item_loses_its_old_summary(tmp_path: Path, articles) -> None:
    with Archive(tmp_path / "r.db") as a:
        write_pages(a, articles[:2])
        assert summary.update(a) == 2
        write_pages(a, articles[:1], text=lambda r: "Entirely new text of the page here. "
                    * 20)
        assert summary.summary_of(a, 1) is None  # never the summary of the old text
        assert summary.update(a) == 1
        assert summary.summary_of(a, 1).startswith("Entirely new text")
