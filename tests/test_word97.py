"""Word 97-2003 read by textsieve's own reader (word97), held against antiword on the real
corpus files, plus what antiword never gave: headers, footers, notes, headings, lists."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import textsieve
from textsieve.model import ErrorKind

WORDS = re.compile(r"\w+")
WORD6 = {"poi__Word95.doc", "poi__cn.orthodox.www_divenbog_APRIL_30-APRIL.DOC"}
ENCRYPTED = {"poi__PasswordProtected.doc", "poi__password_password_cryptoapi.doc"}


def _word97_files(corpus: Path) -> list[Path]:
    return [f for f in sorted((corpus / "doc").iterdir()) if f.name not in WORD6 | ENCRYPTED]


@pytest.mark.skipif(shutil.which("antiword") is None, reason="antiword is set up by scripts/setup")
def test_every_word97_corpus_file_is_read_here_with_all_of_antiwords_words(
        corpus: Path) -> None:
    files = _word97_files(corpus)
    assert len(files) >= 9
    for f in files:
        doc = textsieve.extract(f)
        assert doc.status == "ok", (f.name, doc.error)
        assert "/word97/" in doc.extractor.replace(":", "/"), (f.name, doc.extractor)
        ref = subprocess.run(["antiword", "-w", "0", "-m", "UTF-8.txt", str(f)],
                             capture_output=True, timeout=60, check=False)
        if ref.returncode != 0:
            continue  # antiword refuses it (fast-saved): nothing to hold it against
        theirs = set(WORDS.findall(ref.stdout.decode("utf-8", "replace").lower()))
        ours = set(WORDS.findall(doc.text.lower()))
        missing = theirs - ours - {"pic"}  # antiword's "[pic]" placeholder for images
        assert not missing, (f.name, sorted(missing)[:20])


def test_word6_and_95_files_go_to_the_tools(corpus: Path) -> None:
    for name in sorted(WORD6):
        doc = textsieve.extract(corpus / "doc" / name)
        assert doc.status == "ok", (name, doc.error)
        assert "legacy" in doc.extractor, doc.extractor  # catdoc reads the older format


def test_encrypted_files_stay_encrypted(corpus: Path) -> None:
    for name in sorted(ENCRYPTED):
        doc = textsieve.extract(corpus / "doc" / name)
        assert doc.error is not None and doc.error.kind == ErrorKind.ENCRYPTED, name


def test_headers_before_the_body_and_footers_after(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "doc" / "poi__HeaderFooterUnicode.doc")
    paras = [p for p in doc.text.split("\n\n") if p.strip()]
    assert paras[0] == "This is a simple header, with a € euro symbol in it."
    assert paras[-1] == "The footer, with Molière, has Unicode in it."
    assert "This is page two. Les Précieuses ridicules. The end." in paras


def test_footnotes_endnotes_and_comments_on_request(corpus: Path) -> None:
    path = corpus / "doc" / "poi__footnote.doc"
    text = textsieve.extract(path).text
    assert text.index("Test text") < text.index("TestFootnote") < text.index("TestEndnote")
    assert "TestComment" not in text
    assert "TestComment" in textsieve.extract(path, comments=True).text


def test_tables_rows_and_cells(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "doc" / "poi__simple-table.doc")
    assert "| Cell 1,1 | Cell 1,2 | Cell 1,3 |\n| Cell 2,1 | Cell 2,2 | Cell 2,3 |" \
        in doc.markdown
    assert doc.markdown.index("created using Word 97") < doc.markdown.index("Cell 1,1") \
        < doc.markdown.index("This text is below the table.")


def test_headings_from_built_in_styles_and_numbered_lists(corpus: Path) -> None:
    md = textsieve.extract(corpus / "doc" / "poi__Fuzzed.doc").markdown
    assert "# Heading 1\n\n## Heading 2\n\n### Heading 3" in md
    md = textsieve.extract(corpus / "doc" / "poi__o_kurs.doc").markdown
    # Word numbers these itself: not characters of the file, they come from the list
    assert "5. Выводы, предложения, заключения и т.п.\n6. Список использованной литературы" \
        "\n7. Приложения" in md
    text = textsieve.extract(corpus / "doc" / "poi__o_kurs.doc").text
    assert "\n\n5. Выводы, предложения, заключения и т.п.\n\n6. Список использованной" in text


def test_field_instructions_are_not_text(tmp_path: Path, corpus: Path) -> None:
    # A real file whose body text is overwritten in place (same length, so every offset
    # in it still holds) with a field: its result is shown, its instruction is not.
    data = (corpus / "doc" / "poi__quick.doc").read_bytes()
    old = b"The quick brown fox"
    new = b"\x13INSTRUCTION\x14Shown\x15"
    assert len(new) == len(old) and old in data  # 8-bit text (and the title property)
    path = tmp_path / "field.doc"
    path.write_bytes(data.replace(old, new))
    doc = textsieve.extract(path)
    assert "/word97/" in doc.extractor.replace(":", "/")
    assert "Shown jumps over the lazy dog" in doc.text
    assert "INSTRUCTION" not in doc.text


def test_a_cut_file_is_an_error_record_not_a_crash(corpus: Path, tmp_path: Path) -> None:
    data = (corpus / "doc" / "poi__o_kurs.doc").read_bytes()
    for size in (512, 4096, len(data) // 2, len(data) - 1000):
        cut = tmp_path / f"cut{size}.doc"
        cut.write_bytes(data[:size])
        doc = textsieve.extract(cut)
        assert doc.status in ("ok", "empty") or doc.error.kind == ErrorKind.CORRUPT, \
            (size, doc.error)


def test_embedded_documents_become_children(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "doc" / "poi__word_with_embeded.doc")
    assert doc.status == "ok", doc.error
    kids = {c.name.rsplit(".", 1)[1]: c for c in doc.children}
    assert sorted(c.name.rsplit(".", 1)[1] for c in doc.children) == ["doc", "ppt", "xls", "xls"]
    assert all(c.status == "ok" for c in doc.children), [c.error for c in doc.children]
    texts = " ".join(c.text for c in doc.children)
    for words in ("I am a sample document", "Sample PowerPoint file", "Test excel file",
                  "Another excel file"):
        assert words in texts, words
    assert kids["doc"].mime_type == "application/msword"


@pytest.mark.parametrize("name", ["doc/poi__word_with_embeded.doc", "xls/poi__SampleSS.xls",
                                  "ppt/poi__SampleShow.ppt",
                                  "msg/poi__attachment_msg_pdf.msg"])
def test_a_storage_written_out_reads_back_stream_for_stream(corpus: Path, name: str) -> None:
    import olefile

    from textsieve.kernels.ole import pack_storage

    with olefile.OleFileIO(str(corpus / name)) as ole:
        want = {"/".join(e): ole.openstream(e).read() for e in ole.listdir()}
        packed = pack_storage(ole, [], 1 << 30)
    assert packed is not None
    with olefile.OleFileIO(packed) as copy:
        got = {"/".join(e): copy.openstream(e).read() for e in copy.listdir()}
    assert got == want
    sizes = sorted(map(len, want.values()))
    assert sizes[0] < 4096 <= sizes[-1]  # both the mini stream and big streams are used


def test_a_spent_unpack_budget_keeps_the_text(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "doc" / "poi__word_with_embeded.doc", max_unpacked=60_000)
    assert doc.status == "ok", doc.error
    assert "lots of embedded files in me" in doc.text
    failed = [c for c in doc.children if c.error is not None]
    assert [c.error.kind for c in failed] == [ErrorKind.TOO_LARGE]


def test_embedded_objects_are_capped_at_max_members(corpus: Path) -> None:
    import olefile

    from textsieve.kernels.ole import pack

    # quick.doc with 3,000 packaged objects (CONTENTS streams) in its ObjectPool
    with olefile.OleFileIO(str(corpus / "doc" / "poi__quick.doc")) as ole:
        tree = {tuple(e): ole.openstream(e).read() for e in ole.listdir()}
    for i in range(3000):
        tree[("ObjectPool", f"_{i:06d}", "CONTENTS")] = f"object number {i}\n".encode()
    doc = textsieve.extract(pack(tree), max_members=40)
    assert doc.status == "ok", doc.error
    assert len(doc.children) == 40
    assert doc.children[0].text == "object number 0"
    assert any("more than 40 embedded objects" in w for w in doc.warnings)


def _png_of(words: str) -> bytes:
    import io

    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("L", (1000, 160), 255)
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 48)
    ImageDraw.Draw(img).text((20, 40), words, fill=0, font=font)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def test_a_word_file_of_pictures_only_is_read_by_ocr(corpus: Path) -> None:
    import olefile

    from textsieve.kernels.ole import pack

    # quick.doc with its one sentence blanked out and a scanned line in its Data stream
    with olefile.OleFileIO(str(corpus / "doc" / "poi__quick.doc")) as ole:
        tree = {tuple(e): ole.openstream(e).read() for e in ole.listdir()}
    sentence = b"The quick brown fox jumps over the lazy dog"
    assert sentence in tree[("WordDocument",)]
    tree[("WordDocument",)] = tree[("WordDocument",)].replace(sentence, b" " * len(sentence))
    tree[("Data",)] = b"\0" * 68 + _png_of("Heron survey results") + b"\0" * 30
    data = pack(tree)
    doc = textsieve.extract(data)
    assert doc.status == "ok", doc.error
    assert [c.name for c in doc.children] == ["picture1.png"]
    assert "heron survey" in doc.full_text().lower()
    off = textsieve.extract(data, ocr="never")
    assert off.error is not None and off.error.kind == ErrorKind.NEEDS_OCR


def test_pictures_are_cut_at_their_real_end() -> None:
    import io

    from PIL import Image

    from textsieve.extractors.word97 import _pictures

    png = _png_of("one")
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 10, 10)).save(buf, "JPEG")
    jpeg = buf.getvalue()
    stream = b"junk\xff\xd9" + png + b"\x89PNG more junk" + jpeg + b"\xff\xd9tail" + png
    assert [p for _, p in _pictures((stream,), 10)] == [png, jpeg]  # each once, exact
    assert [n for n, _ in _pictures((stream, png), 10)] == ["picture1.png", "picture2.jpg"]
    assert len(_pictures((stream,), 1)) == 1


def test_ocr_always_reads_the_pictures_of_a_document_with_text(corpus: Path) -> None:
    path = corpus / "doc" / "poi__Fuzzed.doc"
    assert not any(c.name.startswith("picture") for c in textsieve.extract(path).children)
    doc = textsieve.extract(path, ocr="always")
    pictures = [c for c in doc.children if c.name.startswith("picture")]
    # The picture (a 100x75 photo of an astronaut) is OCRed; it holds no text, so it may
    # come out empty (reading it enlarged 3x because it says 96 dpi made up "aN 7S GD").
    assert pictures and pictures[0].status in ("ok", "empty")
    assert pictures[0].metadata.extra["ocr_pages"] == [1]
    assert pictures[0].metadata.extra["width"] == 100


@pytest.mark.parametrize(("text", "markdown"), [
    ("Intro\rA\x07B\x07cut here", "Intro\n\n|  |  |  |\n|---|---|---|\n| A | B | cut here |"),
    ("Intro\rcut here", "Intro\n\ncut here"),
])
def test_text_after_the_last_mark_comes_out_once(text: str, markdown: str) -> None:
    # A story cut short: what follows the last paragraph or cell mark is kept, once (it
    # ended a table's last cell and then came again as a paragraph).
    from types import SimpleNamespace

    from textsieve.extractors import word97
    from textsieve.render import Builder

    reader = SimpleNamespace(para_at=lambda cp: word97._PLAIN, table=b"",
                             fib=SimpleNamespace(fclcb=lambda index: (0, 0)))
    out = Builder()
    word97._Reader.body(reader, text, 0, len(text), out)  # type: ignore[arg-type]
    assert out.build()[1] == markdown


@pytest.mark.parametrize("name", ["poi__o_kurs.doc", "poi__quick.doc"])
def test_the_fib_check_reads_the_start_of_the_word_stream(corpus: Path, name: str) -> None:
    # The encryption check reads only the FIB's sectors; the reader loads the stream once.
    import olefile

    from textsieve.kernels.ole import stream_head

    with olefile.OleFileIO(str(corpus / "doc" / name)) as ole:
        whole = ole.openstream("WordDocument").read()
        assert stream_head(ole, "WordDocument", 64)[:64] == whole[:64]


def test_a_character_outside_the_bmp_does_not_shift_the_headers(
        tmp_path: Path, corpus: Path) -> None:
    # A real file with "GB" (two UTF-16 code units, two CPs) of its body overwritten in
    # place by one emoji (a surrogate pair: also two CPs), so every offset still holds.
    # Python makes one character of the pair; the header and footer stories, found by CP,
    # came out cut one character too far on ("T" / "his is a simple header...").
    data = (corpus / "doc" / "poi__HeaderFooterUnicode.doc").read_bytes()
    old, new = "GB".encode("utf-16-le"), "\U0001F600".encode("utf-16-le")
    assert len(old) == len(new) and data.count(old) == 1
    path = tmp_path / "emoji.doc"
    path.write_bytes(data.replace(old, new))
    paras = [p for p in textsieve.extract(path).text.split("\n\n") if p.strip()]
    assert paras[0] == "This is a simple header, with a € euro symbol in it."
    assert "\U0001F600P - £" in paras
    assert paras[-1] == "The footer, with Molière, has Unicode in it."


# Made by LibreOffice from flat ODT (tests/fixtures/office/make_fixtures.py): no corpus DOC
# has a text box in a header or lettered/roman list numbers.
OFFICE = Path(__file__).parent / "fixtures" / "office"


def test_a_text_box_in_the_header_is_read_whole() -> None:
    doc = textsieve.extract(OFFICE / "header_text_box.doc")
    assert "/word97/" in doc.extractor.replace(":", "/")
    paras = [p for p in doc.text.split("\n\n") if p.strip()]
    # the header story's own text first, the box in it with the other text boxes
    assert paras == ["Quarterly header line", "The body paragraph of the report.",
                     "Boxed header note"]


def test_lettered_and_roman_list_numbers() -> None:
    doc = textsieve.extract(OFFICE / "lettered_roman_lists.doc")
    assert "/word97/" in doc.extractor.replace(":", "/")
    lines = [line.strip() for line in doc.text.splitlines() if line.strip()]
    assert lines == ["Steps follow.", "a) Alpha step", "b) Beta step", "i. First detail",
                     "ii. Second detail", "iii. Third detail", "iv. Fourth detail",
                     "c) Gamma step", "I. Roman one", "II. Roman two", "III. Roman three",
                     "IV. Roman four"]
