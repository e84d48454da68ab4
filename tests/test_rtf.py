"""RTF: handwritten documents with known text (code pages, unicode, tables, fields)."""

from __future__ import annotations

from pathlib import Path

import pytest

import textsieve
from cpu_budget import cpu
from textsieve.extractors.rtf import rtf_to_text


def _rtf(body: str, header: str = r"{\rtf1\ansi\ansicpg1252\deff0") -> bytes:
    return (header + body + "}").encode("ascii")


def test_unicode_escapes_and_uc_skip() -> None:
    data = _rtf(r"{\fonttbl{\f0 Arial;}}\uc1 Caf\u233?  \u26580?\u36947? \u-10179?\u-8704? end\par")
    text = textsieve.extract(data).text
    assert "Café" in text
    assert "柔道" in text
    assert "\U0001f600" in text  # a surrogate pair joined into one character
    assert "?" not in text and "end" in text


def test_cp1251_hex_escapes() -> None:
    data = _rtf(r"\'cf\'f0\'e8\'e2\'e5\'f2 \'ec\'e8\'f0\par",
                r"{\rtf1\ansi\ansicpg1251\deff0")
    assert textsieve.extract(data).text == "Привет мир"


def test_font_charset_overrides_ansi_code_page() -> None:
    data = _rtf(r"{\fonttbl{\f0\fcharset0 Arial;}{\f1\fcharset204 Arial Cyr;}}"
                r"{\f1 \'c4\'e0}\par")
    assert textsieve.extract(data).text == "Да"


def test_table_fields_info_and_skipped_destinations() -> None:
    data = _rtf(
        r"{\fonttbl{\f0 Times;}}{\colortbl;\red0\green0\blue0;}"
        r"{\stylesheet{\s0 Normal;}}"
        r"{\info{\title Quarterly Report}{\author Ada Lovelace}"
        r"{\creatim\yr2021\mo3\dy4\hr5\min6}}"
        r"{\*\generator Secret Generator;}"
        r"Intro paragraph.\par"
        r"\trowd\cellx1000\cellx2000\intbl Name\cell Value\cell\row"
        r"\trowd\cellx1000\cellx2000\intbl alpha\cell 42\cell\row"
        r"\pard After the table {\field{\*\fldinst HYPERLINK \"http://x.example\"}"
        r"{\fldrslt link text}} done.\par"
        r"{\pict\pngblip 89504e470d0a1a0a}"
        r"Tab\tab separated\line next line\par"
    )
    doc = textsieve.extract(data)
    assert doc.title == "Quarterly Report"
    assert doc.metadata.author == "Ada Lovelace"
    assert doc.metadata.created == "2021-03-04T05:06:00"
    text = doc.text
    assert "Intro paragraph." in text
    assert "Name\tValue\nalpha\t42" in text
    assert "After the table link text done." in text
    assert "Tab separated\nnext line" in text  # the Builder folds tabs in paragraphs
    assert "Tab\tseparated\nnext line" in rtf_to_text(data)
    for junk in ("Times", "Normal", "Secret", "HYPERLINK", "89504e", "Quarterly"):
        assert junk not in text
    assert "| alpha | 42 |" in doc.markdown


def test_headers_and_footers_once_around_the_body() -> None:
    data = _rtf(
        r"{\fonttbl{\f0 Arial;}}"
        r"{\header\pard Company Confidential\par}"
        r"{\footerr\pard Page {\field{\*\fldinst PAGE}{\fldrslt 1}}\par}"
        r"\pard First section body.\par\sect"
        r"{\header\pard Company Confidential\par}"  # the next section repeats it
        r"{\footer\pard\trowd\cellx1000\cellx2000\intbl Left\cell Right\cell\row}"
        r"\pard Second {\b section} body.\par"
    )
    doc = textsieve.extract(data)
    paras = [p for p in doc.text.split("\n\n") if p.strip()]
    assert paras == ["Company Confidential", "First section body.", "Second section body.",
                     "Page 1", "Left Right"], paras


def test_control_symbols_and_binary_skip() -> None:
    data = (rb"{\rtf1\ansi a\~b\_c \{braces\} back\\slash \emdash{\bin6 }{\x\'}z\par}")
    text = rtf_to_text(data)  # \bin's 6 raw bytes (braces, a backslash) are skipped unread
    assert text == "a\u00a0b\u2011c {braces} back\\slash \u2014z"


def test_unread_destinations_end_at_their_own_closing_brace() -> None:
    # Destinations we do not read are passed over by brace depth alone: escaped braces, an
    # escaped backslash before a real brace, and \bin bytes must not end them early.
    data = _rtf(r"{\stylesheet{\s1 Style \{fake\} \\{\*\x nested} tail}}"
                r"{\pict\bin5 }}}{{ hidden}"
                r"{\*\generator gen {\deep {\deeper}}}"
                r"Visible text.\par")
    assert rtf_to_text(data) == "Visible text."


def test_an_unterminated_unread_destination_ends_the_data() -> None:
    assert rtf_to_text(b"{\\rtf1 Before\\par {\\stylesheet{\\s0 Normal;}") == "Before"


def test_data_cut_inside_a_header_keeps_the_table_before_it() -> None:
    data = rb"{\rtf1 \trowd\intbl A\cell B\cell\row {\header Head text"
    assert rtf_to_text(data) == "Head text\n\nA\tB"  # the table was lost


def test_malformed_rtf_still_gives_text() -> None:
    data = b"{\\rtf1\\ansi {\\b unclosed group text} stray } } more text \\'e9t\\"
    assert "unclosed group text" in rtf_to_text(data)
    assert "more text ét" in rtf_to_text(data)


def test_linear_time_on_large_input() -> None:
    para = r"Lorem {\b ipsum} dolor \'e9 \u8364? sit amet.\par "
    data = _rtf(para * 40_000)  # about 2 MB
    _, small = cpu(lambda: rtf_to_text(_rtf(para * 5_000)))  # an eighth: the peer
    text, spent = cpu(lambda: rtf_to_text(data))
    assert spent < 3 * 8 * small + 0.02, (spent, small)  # linear (quadratic: 64 x)
    assert text.count("Lorem ipsum dolor é € sit amet.") == 40_000


def test_linear_time_when_cut_short_in_formatting_words() -> None:
    # A file cut short in a long run of formatting words took time quadratic in the run
    # (60 KB: 20 s); nothing is left to show but the text before it.
    data = b"{\\rtf1\\ansi hello " + b"\\b0\\i " * 10_000
    _, small = cpu(lambda: rtf_to_text(b"{\\rtf1\\ansi hello " + b"\\b0\\i " * 1_250))
    text, spent = cpu(lambda: rtf_to_text(data))
    assert text == "hello"
    assert spent < 3 * 8 * small + 0.02, (spent, small)  # linear (quadratic: 64 x)


def test_dev_corpus_rtf(corpus: Path) -> None:
    files = sorted((corpus / "rtf").iterdir())
    assert files
    for f in files:
        doc = textsieve.extract(f)
        assert doc.status == "ok", (f.name, doc.error)
        assert doc.text.strip(), f.name
    expect = {
        "striprtf__unicode.rtf": "柔道",
        "striprtf__ansicpg1250.rtf": "Proszę o zapoznanie się",
        "striprtf__issue_29_bad.rtf": "Таблиця розподілу номерного ресурсу",
        "striprtf__encoding.rtf": "TOMOGRAFIA COMPUTADORIZADA DE TÓRAX",
        "striprtf__pages_table_sample.rtf": "A1\tB1\tC1",
        "striprtf__hyperlinks.rtf": "Wikipedia",
    }
    for name, needle in expect.items():
        assert needle in textsieve.extract(corpus / "rtf" / name).text, name


@pytest.mark.parametrize("data", [b"{\\rtf1", b"{\\rtf1}", b"{\\rtf1 \\u"])
def test_degenerate_rtf_is_not_an_internal_error(data: bytes) -> None:
    doc = textsieve.extract(data)
    assert doc.error is None or doc.error.kind != "internal"


def _ole1(class_name: str, native: bytes) -> str:
    """An OLE1 embedded object as Word writes it into \\objdata (MS-OLEDS 2.2.4), in hex
    split into lines as in real files."""
    import struct

    def name(s: str) -> bytes:
        raw = s.encode("latin-1") + b"\0" if s else b""
        return struct.pack("<I", len(raw)) + raw

    obj = (struct.pack("<II", 0x0501, 2) + name(class_name) + name("") + name("")
           + struct.pack("<I", len(native)) + native)
    hexed = obj.hex()
    return "\n".join(hexed[i:i + 128] for i in range(0, len(hexed), 128))


def _packaged(label: str, payload: bytes) -> bytes:
    """Packager native data: what an object of class "Package" holds (a dropped file)."""
    import struct

    path = f"C:\\Users\\me\\{label}".encode("latin-1") + b"\0"
    return (b"\x02\x00" + label.encode("latin-1") + b"\0" + path + b"\x00\x00\x03\x00"
            + struct.pack("<I", len(path)) + path + struct.pack("<I", len(payload)) + payload)


def test_embedded_objects_become_children(corpus: Path) -> None:
    word = (corpus / "doc" / "poi__quick.doc").read_bytes()  # a real Word compound file
    note = b"Heron counts for the river survey, kept as a dropped text file.\n"
    body = (r"Before the objects.\par "
            r"{\object\objemb{\*\objclass Word.Document.8}\objw2000\objh1000"
            r"{\*\objdata " + _ole1("Word.Document.8", word) + r"}{\result Shown picture}}"
            r"\par {\object\objemb{\*\objclass Package}{\*\objdata "
            + _ole1("Package", _packaged("herons.txt", note)) + r"}}\par After them.\par}")
    doc = textsieve.extract(_rtf(body), name="objects.rtf")
    assert doc.status == "ok", doc.error
    assert "Before the objects." in doc.text and "After them." in doc.text
    assert "d0cf11e0" not in doc.text.lower()  # the hex is no text of the document
    kids = {c.name: c for c in doc.children}
    assert sorted(kids) == ["herons.txt", "object1"]
    assert "The quick brown fox" in kids["object1"].text
    assert "Heron counts for the river survey" in kids["herons.txt"].text
