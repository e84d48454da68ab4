"""Legacy Office (DOC/PPT), LibreOffice fallback and encrypted Office files (OOXML and the
97-2003 binaries), on real files."""

from __future__ import annotations

import io
import shutil
import struct
from pathlib import Path

import pytest

import textsieve
from textsieve.bytesource import Source
from textsieve.extractors import Context
from textsieve.extractors.legacy import extract_libreoffice
from textsieve.model import Document, ErrorKind, ExtractionError
from textsieve.options import Options
from textsieve.render import Builder

ENCRYPTED_DOCS = {"poi__PasswordProtected.doc", "poi__password_password_cryptoapi.doc",
                  "poi__Password_Protected-hello.ppt"}


def test_every_dev_corpus_doc_and_ppt(corpus: Path) -> None:
    files = sorted([*(corpus / "doc").iterdir(), *(corpus / "ppt").iterdir()])
    assert len(files) > 20
    for f in files:
        doc = textsieve.extract(f)
        if f.name in ENCRYPTED_DOCS:
            assert doc.error is not None and doc.error.kind == ErrorKind.ENCRYPTED, f.name
        elif f.name == "poi__table_test.ppt":  # one slide holding an empty table
            assert doc.status == "empty", doc.error
        else:
            assert doc.status == "ok", (f.name, doc.error)
            assert doc.text.strip(), f.name


@pytest.mark.parametrize(("name", "needles"), [
    ("doc/poi__simple-table.doc", ["Cell 1,1\tCell 1,2\tCell 1,3", "below the table"]),
    ("doc/poi__Word95.doc", ["The quick brown fox jumps over the lazy dog"]),  # catdoc
    ("doc/poi__o_kurs.doc", ["МИНИСТЕРСТВО ЭКОНОМИЧЕСКОГО РАЗВИТИЯ"]),
    ("ppt/poi__54880_chinese.ppt", ["複数の文字", "カタカナ"]),
    ("ppt/poi__PPT95.ppt", ["XML, HTML and All That"]),
])
def test_known_text(corpus: Path, name: str, needles: list[str]) -> None:
    text = textsieve.extract(corpus / name).text
    for needle in needles:
        assert needle in text, (name, needle)


def test_ppt_pages_in_slide_order_and_metadata(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "ppt/poi__SampleShow.ppt")
    assert [p.number for p in doc.pages] == [1, 2]
    assert "Title of the first slide" in doc.pages[0].text
    assert "second" in doc.pages[1].text.lower()
    assert doc.title == "SlideShow Sample"
    assert doc.metadata.page_count == 2


def test_ppt_speaker_notes_follow_their_slide(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "ppt/poi__SampleShow.ppt")
    assert doc.status == "ok", doc.error
    first, second = doc.pages[0].text, doc.pages[1].text
    assert "Title of the first slide" in first and "I am the notes of the first slide" in first
    assert "These are the notes of the 2nd slide" in second
    assert "notes of the first" not in second
    assert "Click to edit Master" not in doc.text  # the notes master is not a note
    assert first.index("Title of the first slide") < first.index("Notes:") < \
        first.index("I am the notes")


def test_doc_metadata_from_summary_information(corpus: Path) -> None:
    doc = textsieve.extract(corpus / "doc/poi__SampleDoc.doc")
    assert doc.title == "Test Document"
    assert doc.metadata.created and doc.metadata.created.startswith("20")
    # The property set's code page (cp1251) is honoured for 8-bit strings.
    kurs = textsieve.extract(corpus / "doc/poi__o_kurs.doc")
    assert kurs.title and "МИНИСТЕРСТВО" in kurs.title


def test_truncated_doc_is_a_typed_error(corpus: Path) -> None:
    data = (corpus / "doc/poi__SampleDoc.doc").read_bytes()[:3000]
    doc = textsieve.extract(data)
    assert doc.error is not None
    assert doc.error.kind in (ErrorKind.CORRUPT, ErrorKind.UNSUPPORTED)


@pytest.mark.skipif(bool(shutil.which("soffice") or shutil.which("libreoffice")),
                    reason="LibreOffice is installed here")
def test_libreoffice_missing_is_missing_tool(corpus: Path) -> None:
    src = Source.from_path(corpus / "doc/poi__quick.doc")
    with pytest.raises(ExtractionError) as err:
        extract_libreoffice(src, Context(Options()), Document(), Builder())
    assert err.value.kind == ErrorKind.MISSING_TOOL


def test_libreoffice_disabled_by_option(corpus: Path) -> None:
    src = Source.from_path(corpus / "doc/poi__quick.doc")
    with pytest.raises(ExtractionError) as err:
        extract_libreoffice(src, Context(Options(libreoffice=False)), Document(), Builder())
    assert err.value.kind == ErrorKind.MISSING_TOOL


# -- encrypted OOXML ----------------------------------------------------------------------


def test_encrypted_ooxml_from_dev_corpus(corpus: Path) -> None:
    agile = textsieve.extract(corpus / "docx/poi__protected_agile.docx")  # VelvetSweatshop
    assert agile.status == "ok", agile.error
    assert "Agile protected document" in agile.text
    assert agile.metadata.extra["encrypted"] is True
    for name in ("xlsx/calamine__pass_protected.xlsx", "xlsx/poi__protected_sha512.xlsx",
                 "docx/poi__bug53475-password-is-pass.docx"):
        doc = textsieve.extract(corpus / name)
        assert doc.error is not None and doc.error.kind == ErrorKind.ENCRYPTED, name


def test_encrypted_ooxml_with_password(corpus: Path) -> None:
    path = corpus / "xlsx/calamine__pass_protected.xlsx"
    ok = textsieve.extract(path, password="123")
    assert ok.error is None, ok.error
    assert ok.status == "empty"  # opened: its one sheet holds no cell
    assert ok.metadata.extra["decrypted_as"].endswith("spreadsheetml.sheet")
    wrong = textsieve.extract(path, password="nope")
    assert wrong.error is not None and wrong.error.kind == ErrorKind.ENCRYPTED
    assert "wrong password" in wrong.error.message
    # SHA-1 with a 256-bit key: the 20-byte hash is padded with 0x36 to make the key
    # (MS-OFFCRYPTO 2.3.4.11); msoffcrypto's own derivation failed on it.
    sha1 = textsieve.extract(corpus / "docx/poi__bug53475-password-is-pass.docx",
                             password="pass")
    assert sha1.status == "ok", sha1.error
    assert "password protected document" in sha1.text


@pytest.mark.parametrize("name", ["xlsx/calamine__pass_protected.xlsx",
                                  "docx/poi__protected_agile.docx"])
def test_agile_key_matches_msoffcrypto(corpus: Path, name: str) -> None:
    """Our faster key derivation gives msoffcrypto's key, right and wrong password alike
    (SHA-512 with a 256-bit key; SHA-1 with a 128-bit one)."""
    import msoffcrypto
    from msoffcrypto.method.ecma376_agile import ECMA376Agile

    from textsieve.extractors.encrypted import _agile_key

    info = msoffcrypto.OfficeFile(io.BytesIO((corpus / name).read_bytes())).info
    for password in ("123", "VelvetSweatshop", "wrong"):
        assert _agile_key(info, password) == ECMA376Agile.makekey_from_password(
            password, info["passwordSalt"], info["passwordHashAlgorithm"],
            info["encryptedKeyValue"], info["spinValue"], info["passwordKeyBits"])


# -- encrypted 97-2003 binaries --------------------------------------------------------------

# (file, its password, words it holds); the passwords are those of Apache POI's test files.
LEGACY_LOCKED = [
    ("doc/poi__password_password_cryptoapi.doc", "password", ["This is a test"]),
    ("ppt/poi__Password_Protected-hello.ppt", "hello", ["This is a protected document",
                                                       "It only has the one slide"]),
    ("xls/poi__xor-encryption-abc.xls", "abc", ["Sheet1"]),
]


@pytest.mark.parametrize(("name", "password", "words"), LEGACY_LOCKED)
def test_encrypted_legacy_office_opens_with_its_password(corpus: Path, name: str,
                                                         password: str, words: list[str]
                                                         ) -> None:
    path = corpus / name
    locked = textsieve.extract(path)
    assert locked.error is not None and locked.error.kind == ErrorKind.ENCRYPTED, name
    assert "password-protected" in locked.error.message and not locked.text
    wrong = textsieve.extract(path, password="not-the-password")
    assert wrong.error is not None and wrong.error.kind == ErrorKind.ENCRYPTED
    assert "wrong password" in wrong.error.message
    opened = textsieve.extract(path, password=password)
    assert opened.status == "ok", opened.error
    assert opened.metadata.extra["encrypted"] is True
    for word in words:
        assert word in opened.text, (name, opened.text[:300])


def test_encrypted_xls_cells_are_the_plain_values(corpus: Path) -> None:
    """XOR-obfuscated cells come back as the numbers a person sees, not scrambled bytes."""
    doc = textsieve.extract(corpus / "xls/poi__xor-encryption-abc.xls", password="abc")
    assert doc.status == "ok", doc.error
    assert [ln for ln in doc.text.splitlines() if ln.strip()][1:] == ["1", "2", "3"]


def test_encrypt_round_trip_generated_docx(tmp_path: Path) -> None:
    docx = pytest.importorskip("docx")
    from msoffcrypto.format.ooxml import OOXMLFile

    d = docx.Document()
    d.add_heading("Secret Plans", 1)
    d.add_paragraph("The treasure is under the old oak tree.")
    plain = io.BytesIO()
    d.save(plain)
    plain.seek(0)
    enc = io.BytesIO()
    OOXMLFile(plain).encrypt("s3cret", enc)
    data = enc.getvalue()
    locked = textsieve.extract(data)
    assert locked.mime_type == "application/x-ooxml-encrypted"
    assert locked.error is not None and locked.error.kind == ErrorKind.ENCRYPTED
    opened = textsieve.extract(data, password="s3cret")
    assert opened.status == "ok", opened.error
    assert "The treasure is under the old oak tree." in opened.text
    assert "# Secret Plans" in opened.markdown


# -- Information Rights Management ----------------------------------------------------
def test_irm_protected_doc_is_encrypted_not_its_placeholder(corpus: Path) -> None:
    """A Word file under IRM keeps a readable WordDocument stream that holds only Office's
    placeholder; the content is in \\tDRMContent beside the \\x06DataSpaces storages
    (MS-OFFCRYPTO 2.2.10). Built from a real DOC plus those storages."""
    import olefile

    from textsieve.kernels.ole import pack

    ole = olefile.OleFileIO(str(corpus / "doc/poi__SampleDoc.doc"))
    tree: dict[tuple[str, ...], bytes | None] = {
        tuple(e): ole.openstream(e).read() for e in ole.listdir(streams=True, storages=False)}
    ole.close()
    plain = textsieve.extract(pack(tree))
    assert plain.status == "ok"  # the placeholder text reads fine on its own
    tree[("\x06DataSpaces", "DataSpaceMap")] = bytes(16)
    tree[("\x06DataSpaces", "DataSpaceInfo", "\tDRMDataSpace")] = bytes(16)
    tree[("\x06DataSpaces", "TransformInfo", "\tDRMTransform", "\x06Primary")] = bytes(16)
    tree[("\tDRMContent",)] = bytes(4096)
    doc = textsieve.extract(pack(tree))
    assert doc.error is not None and doc.error.kind == ErrorKind.ENCRYPTED
    assert "Information Rights Management" in doc.error.message
    assert doc.text == ""


def _pfile(extension: bytes, placeholder: bytes) -> bytes:
    """A PFILE laid out as the RMS SDK reads one (v2.1): ".pfile", versions, the cleartext
    redirection header, the offsets, then extension, licence (a stand-in) and content."""
    licence = b"<?xml version='1.0'?><XrML>publishing licence stand-in</XrML>"
    content = bytes(range(256)) * 8  # ciphertext stands in as opaque bytes
    fixed = 6 + 4 + 4 + 4 + len(placeholder)
    ext_at = fixed + 6 * 4 + 8 + 4 + 4
    pl_at = ext_at + len(extension)
    content_at = pl_at + len(licence)
    header = struct.pack("<IIIIIIQII", 0, ext_at, len(extension), pl_at, len(licence),
                         content_at, len(content), content_at, 0)
    return (b".pfile" + struct.pack("<III", 2, 1, len(placeholder)) + placeholder + header
            + extension + licence + content)


def test_pfile_is_encrypted_with_the_protected_files_type() -> None:
    """Microsoft RMS wraps non-Office files (a protected PDF saved as .ppdf) in a PFILE;
    its only readable text is the placeholder telling the reader to get the RMS viewer."""
    data = _pfile(b".pdf", b"This file is protected by Microsoft Rights Management. "
                           b"Open it with the Azure Information Protection viewer.")
    doc = textsieve.extract(data, name="report.ppdf")
    assert doc.error is not None and doc.error.kind == ErrorKind.ENCRYPTED
    assert "PFILE" in doc.error.message and ".pdf" in doc.error.message
