"""Jobs (`POST /v1/jobs`) against the real `textsieve serve`: what they may write under
`--file-root` (never through a link, never the source, never an existing file unless
asked), what they may read (regular files only: a FIFO is a typed error, not a hang that
starves the other jobs), strict event fields, and a merge of many missing pages."""

from __future__ import annotations

import http.client
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from seaweed import seaweed_fixture  # noqa: F401 - the fixture
from server_proc import running_server

SAMPLES = Path(__file__).parent.parent / "samples" / "docs"


def _wait(c, reply: dict, seconds: float = 60) -> dict:
    """The job's final reply (or what it was when ``seconds`` ran out)."""
    deadline = time.monotonic() + seconds
    state = reply
    while time.monotonic() < deadline:
        state = c.get(f"/v1/jobs/{reply['id']}").json()
        if state["status"] == "done":
            return state["reply"]
        time.sleep(0.05)
    raise AssertionError(f"job still {state['status']} after {seconds} s")


def _job(c, **event) -> dict:
    r = c.post("/v1/jobs", json=event)
    assert r.status_code == 202, r.text
    return _wait(c, r.json())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """R (the file root) beside an outside folder holding what must never be touched."""
    root, outside = tmp_path / "R", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "doc.txt").write_text("the heron waits\n")
    (outside / "precious.txt").write_text("precious")
    return root


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.getbasetemp()
    with running_server("-j", "1", "--file-root", str(base)) as s:
        yield s


def test_a_symlinked_sidecar_or_folder_is_never_written_through(server, tree: Path) -> None:
    outside = tree.parent / "outside"
    (tree / "victim.txt.meta.json").symlink_to(outside / "precious.txt")
    (tree / "sub").symlink_to(outside)
    with server.client() as c:
        doc = f"file://{tree}/doc.txt"
        plain = _job(c, document_uri=doc, text_uri=f"file://{tree}/victim.txt")
        half_written = (tree / "victim.txt").exists()
        forced = _job(c, document_uri=doc, text_uri=f"file://{tree}/victim.txt",
                      overwrite=True)
        through = _job(c, document_uri=doc, text_uri=f"file://{tree}/sub/new.txt",
                       overwrite=True)
    assert (outside / "precious.txt").read_text() == "precious"
    assert sorted(p.name for p in outside.iterdir()) == ["precious.txt"]
    assert plain["status"] == "error" and plain["error"]["kind"] == "exists", plain
    assert not half_written  # refused before anything was written
    # asked to overwrite: the link itself is replaced by a file, nothing behind it
    assert forced["status"] == "ok", forced
    assert not (tree / "victim.txt.meta.json").is_symlink()
    assert (tree / "victim.txt").read_text().strip() == "the heron waits"
    assert through["status"] == "error" and through["error"]["kind"] == "blocked_address"


def test_a_failed_write_leaves_nothing_behind(tree: Path) -> None:
    """A text_uri naming the root itself (whose folder is outside the root) or a folder
    fails without leaving a temporary file anywhere."""
    (tree / "folder").mkdir()
    with running_server("-j", "1", "--file-root", str(tree)) as server, \
            server.client() as c:
        doc = f"file://{tree}/doc.txt"
        at_root = _job(c, document_uri=doc, text_uri=f"file://{tree}")
        at_folder = _job(c, document_uri=doc, text_uri=f"file://{tree}/folder")
    assert at_root["status"] == "error" and at_folder["status"] == "error"
    leftovers = [p for folder in (tree.parent, tree, tree / "folder")
                 for p in folder.iterdir()
                 if p.name.startswith(".textsieve-") or p.name.endswith(".partial")]
    assert leftovers == []


def test_the_source_and_existing_files_are_kept(server, tree: Path) -> None:
    doc = tree / "doc.txt"
    os.link(doc, tree / "alias.txt")  # the same file under another name
    (tree / "old.txt").write_text("old")
    with server.client() as c:
        uri = f"file://{doc}"
        itself = c.post("/v1/jobs", json={"document_uri": uri, "text_uri": uri,
                                          "overwrite": True})
        dotted = c.post("/v1/jobs", json={"document_uri": uri,
                                          "text_uri": f"file://{tree}/./x/../doc.txt"})
        alias = _job(c, document_uri=uri, text_uri=f"file://{tree}/alias.txt",
                     overwrite=True)
        kept = _job(c, document_uri=uri, text_uri=f"file://{tree}/old.txt")
        replaced = _job(c, document_uri=uri, text_uri=f"file://{tree}/new.txt")
    for refused in (itself, dotted):
        assert refused.status_code == 400 and "document itself" in refused.text
    assert alias["status"] == "error" and alias["error"]["kind"] == "blocked_address"
    assert doc.read_text() == "the heron waits\n"
    assert kept["error"]["kind"] == "exists" and (tree / "old.txt").read_text() == "old"
    assert replaced["status"] == "ok" and (tree / "new.txt").exists()


def test_a_fifo_is_a_typed_error_and_later_jobs_run(server, tree: Path) -> None:
    """A named pipe nobody writes to once hung its job, and with -j 1 every later job
    stayed queued for ever."""
    os.mkfifo(tree / "pipe")
    with server.client() as c:
        first = c.post("/v1/jobs", json={"document_uri": f"file://{tree}/pipe",
                                         "text_uri": f"file://{tree}/p1.txt"}).json()
        second = c.post("/v1/jobs", json={"document_uri": f"file://{tree}/pipe",
                                          "text_uri": f"file://{tree}/p2.txt"}).json()
        normal = c.post("/v1/jobs", json={"document_uri": f"file://{tree}/doc.txt",
                                          "text_uri": f"file://{tree}/d.txt"}).json()
        replies = [_wait(c, j, 30) for j in (first, second, normal)]
    for r in replies[:2]:
        assert r["status"] == "error" and r["error"]["kind"] == "not_regular", r
        assert "named pipe" in r["error"]["message"]
    assert replies[2]["status"] == "ok"


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_is_refused_not_read(server, tree: Path) -> None:
    os.mknod(tree / "zero", 0o600 | 0o020000, os.makedev(1, 5))  # like /dev/zero
    with server.client() as c:
        r = _job(c, document_uri=f"file://{tree}/zero", text_uri=f"file://{tree}/z.txt")
    assert r["error"]["kind"] == "not_regular" and "device" in r["error"]["message"]


def test_event_numbers_are_strict_and_a_page_past_the_end_is_out_of_range(
        server, tree: Path) -> None:
    pdf = tree / "notes.pdf"
    pdf.write_bytes((SAMPLES / "field-notes.pdf").read_bytes())
    uri = f"file://{pdf}"
    tmp = f"file://{tree}/pages/"
    with server.client() as c:
        for page in ("2", True, 1.0):
            r = c.post("/v1/jobs", json={"document_uri": uri, "page": page,
                                         "temp_uri_prefix": tmp})
            assert r.status_code == 422, page
        assert c.post("/v1/jobs", json={"document_uri": uri, "overwrite": "yes"}
                      ).status_code == 422
        past = _job(c, document_uri=uri, page=9, temp_uri_prefix=tmp)
        first = _job(c, document_uri=uri, page=1, temp_uri_prefix=tmp)
    assert past["status"] == "error" and past["error"]["kind"] == "out_of_range", past
    assert "2 page" in past["error"]["message"]
    assert first["status"] == "ok" and (tree / "pages" / "page-00001.txt").exists()


class _Counting(BaseHTTPRequestHandler):
    """A transparent proxy in front of the S3 server that counts what passes (Host is
    passed on as sent, so request signatures hold)."""

    upstream = ("127.0.0.1", 0)
    seen: ClassVar[list[str]] = []
    lock = threading.Lock()

    def _forward(self) -> None:
        with self.lock:
            self.seen.append(f"{self.command} {self.path}")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        conn = http.client.HTTPConnection(*self.upstream, timeout=30)
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in self.headers.items():
            conn.putheader(k, v)
        conn.endheaders(body or None)
        r = conn.getresponse()
        data = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _forward

    def log_message(self, *args: object) -> None:
        pass


def test_a_merge_of_many_missing_pages_lists_once(seaweed, tmp_path: Path) -> None:
    """10,000 pages announced, 3 came back: one listing and three reads, not 10,000
    sequential GETs (a minute and more on a real store)."""
    from urllib.parse import urlsplit

    s3 = seaweed.client()
    bucket = seaweed.bucket()
    for n in (1, 5000, 10_000):
        s3.put_object(Bucket=bucket, Key=f"tmp/scan/page-{n:05d}.txt",
                      Body=f"text of page {n}".encode())
    up = urlsplit(seaweed.endpoint)
    _Counting.upstream = (up.hostname, up.port)
    _Counting.seen = []
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{proxy.server_address[1]}"
    try:
        env = {**seaweed.env, "AWS_ENDPOINT_URL": endpoint}
        with running_server("-j", "1", "--file-root", str(tmp_path), env=env) as s, \
                s.client() as c:
            reply = _job(c, document_uri=f"s3://{bucket}/scan.pdf", merge=10_000,
                         temp_uri_prefix=f"s3://{bucket}/tmp/scan/",
                         text_uri=f"file://{tmp_path}/scan.txt")
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert reply["status"] == "ok", reply
    assert len(reply["missing_text_pages"]) == 9997
    assert {1, 5000, 10_000}.isdisjoint(reply["missing_text_pages"])
    text = (tmp_path / "scan.txt").read_text()
    assert text.index("page 1") < text.index("page 5000") < text.index("page 10000")
    gets = [r for r in _Counting.seen if r.startswith("GET")]
    assert len(gets) < 20, gets[:30]
