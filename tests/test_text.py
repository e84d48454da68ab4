"""Plain text and CSV: encodings, newlines, dialect sniffing, ragged and malformed input."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

import textsieve
from textsieve.extractors.text import sniff_delimiter
from textsieve.model import ErrorKind, Status

FRENCH = "Le cœur déçu mais l'âme plutôt naïve, Louÿs rêva de crapaüter en canoë"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "cp1252"])
def test_csv_round_trip_encodings(tmp_path: Path, encoding: str) -> None:
    rows = [["nom", "phrase", "prix"],
            ["Été", FRENCH, "3,50"],
            ["guillemets", 'il a dit "oui; non"', "1,25"],
            ["multi", "ligne une\nligne deux", "0"]]
    buf = io.StringIO()
    csv.writer(buf, delimiter=";", quoting=csv.QUOTE_MINIMAL).writerows(rows)
    path = tmp_path / "data.csv"
    path.write_bytes(buf.getvalue().encode(encoding))
    doc = textsieve.extract(path)
    assert doc.status is Status.OK, doc.error
    assert doc.mime_type == "text/csv"
    assert doc.metadata.extra["delimiter"] == ";"
    lines = doc.text.split("\n")
    assert lines[0] == "nom\tphrase\tprix"
    assert lines[1] == f"Été\t{FRENCH}\t3,50"
    assert lines[2] == 'guillemets\til a dit "oui; non"\t1,25'
    assert lines[3] == "multi\tligne une ligne deux\t0"
    assert doc.markdown.startswith("| nom | phrase | prix |\n|---|---|---|\n| Été |")
    assert "| multi | ligne une<br>ligne deux | 0 |" in doc.markdown


def test_ragged_and_nul(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_bytes(b"a,b,c\r\n1,2\r\n3,4,5,6\r\nx\x00y,z,w\r\n")
    doc = textsieve.extract(path)
    assert doc.text.split("\n") == ["a\tb\tc", "1\t2", "3\t4\t5\t6", "xy\tz\tw"]
    assert "| a | b | c |  |" in doc.markdown


def test_sniffer() -> None:
    assert sniff_delimiter('a;b;c\n1,5;2,5;"x;y"\n3;4;5\n') == ";"
    assert sniff_delimiter('a,b\n"1;2",3\n4,5\n') == ","
    assert sniff_delimiter("a|b|c\n1|2|3\n") == "|"
    assert sniff_delimiter("a\tb, c\td\n1\t2, 3\t4\n") == "\t"
    assert sniff_delimiter("just one column\nof words\n") == ","
    assert sniff_delimiter("a b\n", prefer_tab=True) == "\t"


def test_big_csv_is_linear(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    with open(path, "w", encoding="utf-8") as f:
        f.write("id,name,value\n")
        f.writelines(f'{i},"name, {i}",{i * 2}\n' for i in range(200_000))
    doc = textsieve.extract(path)
    assert doc.metadata.extra["rows"] == 200_001
    assert doc.text.endswith("199999\tname, 199999\t399998")


@pytest.mark.parametrize("newline", [b"\r\n", b"\r", b"\n"])
def test_text_newlines_and_encoding(tmp_path: Path, newline: bytes) -> None:
    body = newline.join([FRENCH.encode("cp1252"), b"", b"second paragraph\x00 here", b""])
    path = tmp_path / "t.txt"
    path.write_bytes(body + body.replace(b"\x00", b"") * 20)
    doc = textsieve.extract(path)
    assert doc.status is Status.OK
    assert doc.metadata.encoding == "cp1252"
    assert "\r" not in doc.text and "\x00" not in doc.text
    assert doc.text.startswith(FRENCH + "\n\nsecond paragraph here")


def test_text_utf16_bom(tmp_path: Path) -> None:
    path = tmp_path / "u.txt"
    path.write_bytes("Ζωή\r\nкошка 猫".encode("utf-16"))
    doc = textsieve.extract(path)
    assert doc.text == "Ζωή\nкошка 猫"
    assert doc.metadata.encoding.startswith("utf-16")


def test_text_markdown_is_escaped(tmp_path: Path) -> None:
    path = tmp_path / "m.txt"
    path.write_text("# not a heading\n- not a list\nplain\n", encoding="utf-8")
    doc = textsieve.extract(path)
    assert doc.text.startswith("# not a heading")
    assert "\\# not a heading" in doc.markdown


EXPECTED_CSV = {
    "csvkit__bad.csv": ["column_a\tcolumn_b\tcolumn_c", "1\t27\t\tI'm too long!"],
    "csvkit__dummy.tsv": ["a\tb\tc", "1\t2\t3"],
    "csvkit__mac_newlines.csv": ["a\tb\tc", "Once upon a time\t5\t6"],
    "csvkit__null_byte.csv": ["a\tb\tc", "\t2\t3"],
    "csvkit__test_utf16_big.csv": ["4\t5\t\u02a4"],
    "csvkit__test_utf16_little.csv": ["4\t5\t\u02a4"],
    "csvkit__test_utf8_bom.csv": ["foo\tbar\tbaz"],
    "odfdo__text2.csv": ["1\t2\tsome text with, comma\t-3.14"],
}


def _files(*folders: str) -> list[str]:
    from conftest import CORPUS

    return [f"{f}/{p.name}" for f in folders if (CORPUS / f).is_dir()
            for p in sorted((CORPUS / f).iterdir())]


@pytest.mark.parametrize("rel", _files("csv", "txt"))
def test_corpus_text(corpus: Path, rel: str) -> None:
    doc = textsieve.extract(corpus / rel)
    name = rel.split("/", 1)[1]
    if name == "csvkit__empty.csv":
        assert doc.status is Status.EMPTY and doc.text == ""
        return
    assert doc.status is Status.OK, doc.error
    assert doc.metadata.encoding
    assert "\x00" not in doc.text and "\r" not in doc.text
    assert "\ufffd" not in doc.text
    lines = doc.text.split("\n")
    for expected in EXPECTED_CSV.get(name, []):
        assert expected in lines


def test_corpus_legacy_encodings(corpus: Path) -> None:
    greek = textsieve.extract(corpus / "txt" / "charsetnorm__sample-greek-2.txt")
    assert "ελληνική" in greek.text
    russian = textsieve.extract(corpus / "txt" / "charsetnorm__sample-russian.txt")
    assert "гимназии" in russian.text


def test_not_found() -> None:
    doc = textsieve.extract("/nonexistent/file.csv")
    assert doc.error is not None and doc.error.kind is ErrorKind.NOT_FOUND
