"""Spreadsheets: round trips through openpyxl / odfdo, and the dev corpus."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import openpyxl
import pytest

import textsieve
from textsieve.model import ErrorKind, Status


def _workbook(path: Path) -> Path:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sales"
    ws.append(["Item", "Qty", "Price", "When", "Paid"])
    ws.append(["Apple", 3, 1.25, dt.date(2024, 2, 29), True])
    ws.append(["Pear|green", 10, 0.1 + 0.2, dt.datetime(2024, 3, 1, 14, 30), False])
    ws["B4"] = "=SUM(B2:B3)"
    second = wb.create_sheet("Notes")
    second["A1"] = "Hello from the second sheet"
    second["C3"] = 42.0
    hidden = wb.create_sheet("Secret")
    hidden["A1"] = "hidden text"
    hidden.sheet_state = "hidden"
    wb.save(path)
    # Formulas keep no cached value when written by openpyxl: add one the way Excel does.
    _set_cached_value(path, "B4", "13")
    return path


def _set_cached_value(path: Path, ref: str, value: str) -> None:
    import zipfile

    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    name = "xl/worksheets/sheet1.xml"
    xml = parts[name].decode()
    start = xml.index(f'<c r="{ref}"')
    end = xml.index("</c>", start)
    cell = xml[start:end]
    parts[name] = (xml[:start] + cell + f"<v>{value}</v>" + xml[end:]).encode()
    with zipfile.ZipFile(path, "w") as z:
        for n, data in parts.items():
            z.writestr(n, data)


def test_xlsx_round_trip(tmp_path: Path) -> None:
    doc = textsieve.extract(_workbook(tmp_path / "book.xlsx"))
    assert doc.status is Status.OK, doc.error
    assert doc.metadata.page_count == 3
    assert doc.metadata.extra["sheets"] == ["Sales", "Notes", "Secret"]
    assert [p.number for p in doc.pages] == [1, 2, 3]
    lines = doc.text.splitlines()
    assert lines[0] == "Sales"
    assert "Item\tQty\tPrice\tWhen\tPaid" in lines
    assert "Apple\t3\t1.25\t2024-02-29\tTRUE" in lines
    assert "Pear|green\t10\t0.3\t2024-03-01 14:30:00\tFALSE" in lines
    assert "\t13" in lines  # the formula's cached value
    assert "hidden text" in doc.pages[2].text
    assert doc.pages[1].text.startswith("Notes")
    # Sheet 2: trailing empty cells trimmed, blank row between kept out of the text.
    assert "Hello from the second sheet" in doc.pages[1].text
    assert "\t\t42" in doc.pages[1].text
    md = doc.markdown
    assert "## Sales" in md and "## Notes" in md and "## Secret" in md
    assert "| Item | Qty | Price | When | Paid |\n|---|---|---|---|---|" in md
    assert "| Pear\\|green | 10 | 0.3 |" in md


@pytest.fixture(scope="session")
def big_xlsx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.xlsx"
    wb = openpyxl.Workbook(write_only=True)
    ws = wb.create_sheet("Big")
    for i in range(100_000):
        ws.append([i, f"name {i}", i * 1.5, "x", i % 7, "a|b", dt.date(2020, 1, 1), True, -i,
                   f"r{i}"])
    wb.save(path)
    return path


def test_big_sheet_last_row(big_xlsx: Path) -> None:
    doc = textsieve.extract(big_xlsx)
    assert doc.status is Status.OK
    last = doc.text.rsplit("\n", 1)[1]
    assert last == "99999\tname 99999\t149998.5\tx\t4\ta|b\t2020-01-01\tTRUE\t-99999\tr99999"
    assert doc.markdown.endswith(
        "| 99999 | name 99999 | 149998.5 | x | 4 | a\\|b | 2020-01-01 | TRUE | -99999 | r99999 |")
    assert doc.text.count("\n") == 100_000 + 1  # heading, blank line, 100,000 rows


def test_ods_round_trip(tmp_path: Path) -> None:
    from odfdo import Document, Table

    odf = Document("spreadsheet")
    body = odf.body
    body.clear()
    t1 = Table("Fruit")
    t1.set_values([["name", "count"], ["kiwi", 7]])
    t2 = Table("Empty")
    body.append(t1)
    body.append(t2)
    path = tmp_path / "s.ods"
    odf.save(path)
    doc = textsieve.extract(path)
    assert doc.status is Status.OK, doc.error
    assert doc.metadata.extra["sheets"] == ["Fruit", "Empty"]
    assert "name\tcount\nkiwi\t7" in doc.text


def test_damaged_workbook_is_corrupt(tmp_path: Path) -> None:
    path = _workbook(tmp_path / "book.xlsx")
    data = path.read_bytes()
    bad = tmp_path / "bad.xlsx"
    bad.write_bytes(data[: len(data) // 2])
    doc = textsieve.extract(bad)
    assert doc.status is Status.ERROR
    assert doc.error is not None and doc.error.kind is ErrorKind.CORRUPT


EXPECTED_ERRORS = {
    "poi__xor-encryption-abc.xls": ErrorKind.ENCRYPTED,
    "calamine__pass_protected.ods": ErrorKind.ENCRYPTED,
    "poi__invalid.xlsx": ErrorKind.CORRUPT,
    "poi__poc-xmlbomb.xlsx": ErrorKind.CORRUPT,
    "poi__xlsx-corrupted.xlsx": ErrorKind.CORRUPT,
    "calamine__issue_594_dos.ods": ErrorKind.TOO_LARGE,
}


def _sheet_files() -> list[str]:
    from conftest import CORPUS

    out = []
    for folder in ("xls", "xlsx", "xlsb", "ods"):
        d = CORPUS / folder
        if d.is_dir():
            out += [f"{folder}/{p.name}" for p in sorted(d.iterdir())]
    return out


@pytest.mark.parametrize("rel", _sheet_files())
def test_corpus_sheets(corpus: Path, rel: str) -> None:
    doc = textsieve.extract(corpus / rel)
    if doc.mime_type == "application/x-ooxml-encrypted":
        pytest.skip("encrypted OOXML belongs to the encrypted extractor")
    name = rel.split("/", 1)[1]
    if name in EXPECTED_ERRORS:
        assert doc.error is not None, doc.text[:200]
        assert doc.error.kind is EXPECTED_ERRORS[name], doc.error
        assert doc.timings["total"] < 5
        return
    assert doc.status is Status.OK, doc.error
    assert doc.text.strip()
    if doc.mime_type != "text/plain":
        assert doc.metadata.page_count == len(doc.metadata.extra["sheets"])


def test_corpus_hidden_sheet_included(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "ods" / "odfdo__minimal_hidden.ods")
    assert doc.metadata.extra["hidden_sheets"] == ["Tab 2"]
    assert len(doc.pages) == 2 and doc.pages[1].text.startswith("Tab 2")


def test_corpus_xlsb(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "xlsb" / "calamine__any_sheets.xlsb")
    assert doc.pages[0].text.startswith("Visible\n\n1\t2\n3\t4")
    assert doc.metadata.extra["sheets"] == ["Visible", "Hidden", "VeryHidden", "Chart"]


def test_corpus_biff4_without_ole(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "xls" / "xlrd__biff4_no_format_no_window2.xls")
    assert doc.status is Status.OK, doc.error
    lines = doc.text.splitlines()
    assert lines[0] == "ID\tTOTAL\tMAIN\tSUB"
    assert "B\tBIRD PRODUCTS\tBird Product" in lines


def test_rk_numbers() -> None:
    import struct

    from textsieve.extractors.sheets import _rk

    assert _rk((123 << 2) | 2) == 123.0
    assert _rk((12345 << 2) | 3) == 123.45
    assert _rk((struct.unpack("<Q", struct.pack("<d", 1.5))[0] >> 32) & ~3) == 1.5


@pytest.mark.parametrize("name", ["poi__Basic_Expense_Template_2011.xls",
                                  "poi__florida_data.ashx.xls", "poi__SampleSS.xls",
                                  "poi__xor-encryption-abc.xls"])
def test_workbook_stream_head_is_the_streams_start(corpus: Path, name: str) -> None:
    """The encryption check reads only the first sectors of the workbook stream (FILEPASS
    sits right after BOF): they must be the stream's own first bytes, for a large stream
    (its sector chain) and a small one (the mini stream) alike."""
    import olefile

    from textsieve.kernels.ole import stream_head

    with olefile.OleFileIO(str(corpus / "xls" / name)) as ole:
        whole = ole.openstream("Workbook").read()
        assert stream_head(ole, "Workbook", 4096) == whole[:4096]


@pytest.mark.parametrize("sheet_names", [["Sheet"], ["Budget", "Notes"]])
def test_workbook_without_cells_is_empty(tmp_path: Path, sheet_names: list[str]) -> None:
    """A workbook whose sheets hold nothing is `empty`: its sheet names are not its text."""
    wb = openpyxl.Workbook()
    wb.active.title = sheet_names[0]
    for name in sheet_names[1:]:
        wb.create_sheet(name)
    path = tmp_path / "blank.xlsx"
    wb.save(path)
    doc = textsieve.extract(path)
    assert doc.status is Status.EMPTY, doc.text
    assert doc.text == ""
    assert doc.metadata.extra["sheets"] == sheet_names


def test_empty_sheet_keeps_its_heading_beside_a_full_one(tmp_path: Path) -> None:
    wb = openpyxl.Workbook()
    wb.active.title = "Blank"
    wb.create_sheet("Data")["A1"] = "figures"
    path = tmp_path / "half.xlsx"
    wb.save(path)
    doc = textsieve.extract(path)
    assert doc.status is Status.OK
    assert [p.number for p in doc.pages] == [1, 2]
    assert "## Blank" in doc.markdown and "figures" in doc.text
