"""Nothing is read over the network and no external entity is ever opened.

A real HTTP server on 127.0.0.1 counts requests; documents of every XML-based format point
external entities, DTDs and XIncludes at it and at a local secret file. After extraction
the server must have seen no request and the secret must not appear.
"""

from __future__ import annotations

import io
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from textsieve import extract


class _Counter(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        body = b"<!ENTITY leak 'NETWORK-LEAK'>" if self.path.endswith(".dtd") else b"NETLEAK"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    p = tmp_path / "secret.txt"
    p.write_text("TOP-SECRET-LOCAL-FILE")
    return p


def _hostile_xml(server: str, secret: Path, root: str, body: str) -> bytes:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE {root.split()[0]} SYSTEM "{server}/doc.dtd" [\n'
        f'  <!ENTITY local SYSTEM "file://{secret}">\n'
        f'  <!ENTITY remote SYSTEM "{server}/entity">\n'
        f'  <!ENTITY % pe SYSTEM "{server}/param.dtd"> %pe;\n'
        f"]>\n<{root}>{body}</{root.split()[0]}>"
    ).encode()


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _cases(server: str, secret: Path) -> dict[str, bytes]:
    payload = "Visible words &local; &remote;"
    xinclude = (f'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" '
                f'href="{server}/xinclude" parse="text"/>')
    xml = _hostile_xml(server, secret, "note", f"<p>{payload}</p>{xinclude}")
    w = 'w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    docx_xml = _hostile_xml(server, secret, w,
                            f"<w:body><w:p><w:r><w:t>{payload}</w:t></w:r></w:p></w:body>")
    ct = (b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
          b'content-types"><Override PartName="/word/document.xml" ContentType="application/'
          b'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>')
    office = ('office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:'
              'office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"')
    odt_xml = _hostile_xml(server, secret, office,
                           f"<office:body><office:text><text:p>{payload}</text:p>"
                           "</office:text></office:body>")
    html = (f'<!DOCTYPE html><html><head><link rel="stylesheet" href="{server}/css">'
            f'<script src="{server}/js"></script></head><body><p>Visible words</p>'
            f'<img src="{server}/img"><iframe src="{server}/frame"></iframe></body></html>')
    return {
        "note.xml": xml,
        "page.html": html.encode(),
        "doc.docx": _zip({"[Content_Types].xml": ct, "word/document.xml": docx_xml}),
        "doc.odt": _zip({"mimetype": b"application/vnd.oasis.opendocument.text",
                         "content.xml": odt_xml}),
    }


@pytest.mark.parametrize("name", ["note.xml", "page.html", "doc.docx", "doc.odt"])
def test_no_request_and_no_local_file_read(server: str, secret: Path, name: str) -> None:
    _Counter.hits.clear()
    data = _cases(server, secret)[name]
    doc = extract(data, name=name)
    text = doc.full_text()
    assert "TOP-SECRET-LOCAL-FILE" not in text
    assert "NETLEAK" not in text and "NETWORK-LEAK" not in text
    assert _Counter.hits == [], f"{name} made network requests: {_Counter.hits}"
    # The document itself is still read (or refused as corrupt), never an internal error.
    assert doc.error is None or doc.error.kind.value == "corrupt", doc.error
    if doc.error is None:
        assert "Visible words" in text
