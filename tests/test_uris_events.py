"""URIs (s3:// on a real SeaweedFS, http(s):// under the address policy, file:// under
roots) and "extract this URI to that URI" events, through ``textsieve.handler`` and
``POST /v1/jobs`` of the real server."""

from __future__ import annotations

import http.server
import io
import re
import threading
import time
from pathlib import Path

import pytest

import textsieve
from seaweed import seaweed_fixture  # noqa: F401 - the fixture
from textsieve import uris
from textsieve.events import handle, local_runner
from textsieve.model import ErrorKind
from textsieve.options import Options

SAMPLES = Path(__file__).parent.parent / "samples" / "docs"


def _pdf(pages: list[str]) -> bytes:
    """A PDF with one page per string; an empty string is a blank page."""
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf)
    for text in pages:
        if text:
            c.drawString(72, 720, text)
        c.showPage()
    c.save()
    return buf.getvalue()


def _scan_pdf() -> bytes:
    """A PDF of one scanned page (an image, no text layer)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.open(SAMPLES / "notice-scan.png").convert("RGB").save(buf, "PDF", resolution=300)
    return buf.getvalue()


@pytest.fixture
def s3_env(seaweed, monkeypatch):
    """The usual AWS variables for the in-process handler (the library reads none)."""
    for k, v in seaweed.env.items():
        monkeypatch.setenv(k, v)
    return seaweed


def test_s3_read_write_with_object_metadata(seaweed, monkeypatch):
    for k, v in seaweed.env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL")  # the endpoint comes from Options here,
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")  # even over this one
    opts = Options(s3_endpoint=seaweed.endpoint)
    bucket = seaweed.bucket()
    uris.write(f"s3://{bucket}/dir/a.txt", b"hello", opts, metadata={"missing_text_pages": "2"})
    blob = uris.read(f"s3://{bucket}/dir/a.txt", opts)
    assert blob.data == b"hello" and blob.metadata == {"missing_text_pages": "2"}
    assert [o.key for o in uris.list_s3(f"s3://{bucket}/dir/", opts)] == ["dir/a.txt"]
    with pytest.raises(uris.UriError) as missing:
        uris.read(f"s3://{bucket}/nope", opts)
    assert missing.value.kind is ErrorKind.NOT_FOUND


def test_s3_prefix_is_a_string_prefix_and_keys_round_trip(s3_env):
    """``run s3://bucket/reports/2024-`` means what S3 means by a prefix (a string, not a
    folder), and a key with spaces, ``+`` and non-ASCII letters is the same key for
    textsieve and for another S3 client."""
    s3 = s3_env.client()
    bucket = s3_env.bucket()
    for key in ("reports/2024-05 May+June.txt", "reports/2024-06/räksmörgås.txt",
                "reports/2025-01.txt", "reports-2024-x.txt"):
        uris.write(f"s3://{bucket}/{key}", key.encode(), Options())
    listed = sorted(o.key for o in uris.list_s3(f"s3://{bucket}/reports/2024-", Options()))
    assert listed == ["reports/2024-05 May+June.txt", "reports/2024-06/räksmörgås.txt"]
    assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]) == [
        "reports-2024-x.txt", "reports/2024-05 May+June.txt",
        "reports/2024-06/räksmörgås.txt", "reports/2025-01.txt"]
    assert len(list(uris.list_s3(f"s3://{bucket}/reports", Options()))) == 4  # "reports-" too
    assert len(list(uris.list_s3(f"s3://{bucket}/", Options()))) == 4
    blob = uris.read(f"s3://{bucket}/reports/2024-06/räksmörgås.txt", Options())
    assert blob.data == "reports/2024-06/räksmörgås.txt".encode()
    assert all(len(o.etag) == 32 for o in uris.list_s3(f"s3://{bucket}/", Options()))


def test_s3_size_cap_refuses_before_reading(s3_env):
    bucket = s3_env.bucket()
    s3_env.client().put_object(Bucket=bucket, Key="big.bin", Body=b"x" * 5000)
    with pytest.raises(uris.UriError) as exc:
        uris.read(f"s3://{bucket}/big.bin", Options(max_file_size=4999))
    assert exc.value.kind is ErrorKind.TOO_LARGE
    assert uris.read(f"s3://{bucket}/big.bin", Options(max_file_size=5000)).data == b"x" * 5000


def test_s3_uris_naming_no_object_are_bad_url(s3_env):
    """``s3://b/notes/`` is not the object ``notes`` (obstore would drop the slash), and a
    key with an empty or ``..`` segment is a typed refusal, not a traceback."""
    bucket = s3_env.bucket()
    s3_env.client().put_object(Bucket=bucket, Key="notes", Body=b"another object")
    for key in ("notes/", "a//b", "a/../notes"):
        with pytest.raises(uris.UriError) as exc:
            uris.read(f"s3://{bucket}/{key}", Options())
        assert exc.value.kind is ErrorKind.BAD_URL, key
    with pytest.raises(uris.UriError) as exc:
        uris.write(f"s3://{bucket}/a//b", b"x", Options())
    assert exc.value.kind is ErrorKind.BAD_URL


def test_s3_credentials_from_a_profile_file(seaweed, monkeypatch, tmp_path):
    """A developer's ``~/.aws`` profile works like the environment's keys (obstore reads
    no profile; boto3's chain lends them when the environment names no key)."""
    bucket = seaweed.bucket()
    seaweed.client().put_object(Bucket=bucket, Key="a.txt", Body=b"from a profile",
                                Metadata={"missing_text_pages": "[]"})
    creds = tmp_path / "credentials"
    creds.write_text("[bench]\naws_access_key_id = textsieve\n"
                     "aws_secret_access_key = textsieve\n")
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_PROFILE", "bench")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    # Nothing may probe the link-local instance-metadata address: boto3 is told not to,
    # obstore (were it left to its own chain) gets a closed port on loopback instead.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", "http://127.0.0.1:9")
    opts = Options(s3_endpoint=seaweed.endpoint, retries=0)
    blob = uris.read(f"s3://{bucket}/a.txt", opts)
    assert blob.data == b"from a profile" and blob.metadata == {"missing_text_pages": "[]"}


def test_s3_store_is_made_once_and_again_when_the_environment_changes(seaweed,
                                                                      monkeypatch):
    """A run or an export touches thousands of objects: the store (4-8 ms to make) is made
    once per bucket and options, yet an endpoint or key changed in the environment is used,
    not a store made before the change."""
    import socket

    bucket = seaweed.bucket()
    seaweed.client().put_object(Bucket=bucket, Key="a.txt", Body=b"egret")
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    for k, v in seaweed.env.items():
        monkeypatch.setenv(k, v)
    opts = Options(retries=0)
    assert uris.s3_store(bucket, opts) is uris.s3_store(bucket, opts)
    assert uris.read(f"s3://{bucket}/a.txt", opts).data == b"egret"
    with socket.socket() as sock:  # bound, then closed: nothing listens there
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed}")
    with pytest.raises(uris.UriError):
        uris.read(f"s3://{bucket}/a.txt", opts)


def test_handler_event_s3_in_and_out(s3_env):
    s3 = s3_env.client()
    bucket = s3_env.bucket()
    s3.put_object(Bucket=bucket, Key="in/report.pdf",
                  Body=_pdf(["Herons wait in the reeds", "", "Third page text"]))
    reply = textsieve.handler({"document_uri": f"s3://{bucket}/in/report.pdf",
                               "disable_ocr": True}, None)
    assert reply["status"] == "ok", reply
    assert reply["text_uri"] == f"s3://{bucket}/in/report.pdf.txt"
    assert reply["missing_text_pages"] == [2]
    assert reply["timings"]["total"] >= reply["timings"]["extract"] > 0
    obj = s3.get_object(Bucket=bucket, Key="in/report.pdf.txt")
    text = obj["Body"].read().decode()
    assert "Herons wait in the reeds" in text and "Third page text" in text
    assert obj["Metadata"] == {"missing_text_pages": "[2]"}


def test_handler_searchable_pdf_and_page_fan_out(s3_env):
    s3 = s3_env.client()
    bucket = s3_env.bucket()
    s3.put_object(Bucket=bucket, Key="scan.pdf", Body=_scan_pdf())
    doc_uri = f"s3://{bucket}/scan.pdf"
    reply = handle({"document_uri": doc_uri, "create_searchable_pdf": True}, Options(),
                   local_runner)
    assert reply["status"] == "ok", reply
    assert reply["missing_searchable_pdf_pages"] == []
    pdf = s3.get_object(Bucket=bucket, Key="scan.pdf.searchable.pdf")
    assert pdf["Metadata"] == {"missing_searchable_pdf_pages": "[]"}
    made = textsieve.extract(pdf["Body"].read(), ocr="never")  # a text layer now
    assert "notice" in made.text.lower()
    # One event per page, then a merge event puts them together.
    tmp = f"s3://{bucket}/tmp/scan/"
    page = textsieve.handler({"document_uri": doc_uri, "page": 1, "temp_uri_prefix": tmp})
    assert page["status"] == "ok" and page["text_uri"] == f"{tmp}page-00001.txt", page
    merged = textsieve.handler({"document_uri": doc_uri, "merge": 2, "temp_uri_prefix": tmp,
                                "text_uri": f"s3://{bucket}/scan.txt"})
    assert merged["missing_text_pages"] == [2]  # page 2 never reported back
    out = s3.get_object(Bucket=bucket, Key="scan.txt")
    assert "notice" in out["Body"].read().decode().lower()
    assert out["Metadata"] == {"missing_text_pages": "[2]"}


def test_bad_events_are_typed_replies(s3_env):
    assert textsieve.handler({})["error"]["kind"] == "bad_event"
    assert textsieve.handler({"document_uri": "s3://x/y", "page": 0})["error"]["kind"] == \
        "bad_event"
    bucket = s3_env.bucket()
    reply = textsieve.handler({"document_uri": f"s3://{bucket}/missing.pdf"})
    assert reply["status"] == "error" and reply["error"]["kind"] == "not_found"
    assert textsieve.handler({"document_uri": "ftp://x/y"})["error"]["kind"] == "bad_url"
    # Not a bucket name: refused before the S3 client sees it (it panicked on a space).
    for doc in ("s3://a b/doc.pdf", "s3://ä/doc.pdf", "s3://user@host/doc.pdf"):
        assert textsieve.handler({"document_uri": doc})["error"]["kind"] == "bad_url", doc
    with pytest.raises(uris.UriError) as exc:
        uris.read(f"s3://{bucket}/k", Options(s3_endpoint="http://[bad"))
    assert exc.value.kind is ErrorKind.BAD_URL


# -- SSRF: every http(s) URI goes through the address policy -----------------------------


class _Redirect(http.server.BaseHTTPRequestHandler):
    target = ""

    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", self.target)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def redirector():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("uri", [
    "http://127.0.0.1:9/doc.pdf",  # loopback
    "http://10.1.2.3/doc.pdf",  # private
    "http://169.254.169.254/latest/meta-data/",  # cloud metadata
    "http://localhost:9/doc.pdf",  # a name that resolves to loopback
])
def test_ssrf_refused_with_a_typed_error(uri):
    with pytest.raises(uris.UriError) as exc:
        uris.read(uri, Options(retries=0))
    assert exc.value.kind is ErrorKind.BLOCKED_ADDRESS
    reply = handle({"document_uri": uri}, Options(retries=0), local_runner)
    assert reply["error"]["kind"] == "blocked_address"


def test_ssrf_redirect_to_a_private_address_refused(redirector):
    port = redirector.server_address[1]
    _Redirect.target = f"http://127.0.0.2:{port}/secret"
    opts = Options(retries=0, allow_cidrs=("127.0.0.1/32",))  # the redirector only
    with pytest.raises(uris.UriError) as exc:
        uris.read(f"http://127.0.0.1:{port}/doc", opts)
    assert exc.value.kind is ErrorKind.BLOCKED_ADDRESS
    assert "127.0.0.2" in str(exc.value)


def test_file_uris_only_under_roots(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("outside")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    roots = (str(root),)
    assert uris.read(f"file://{root}/a.txt", Options(), roots=roots).data == b"inside"
    for uri in (f"file://{root}/../secret.txt", f"file://{root}/link.txt",
                f"file://{tmp_path}/secret.txt"):
        with pytest.raises(uris.UriError) as exc:
            uris.read(uri, Options(), roots=roots)
        assert exc.value.kind is ErrorKind.BLOCKED_ADDRESS
    with pytest.raises(uris.UriError):
        uris.read(f"file://{root}/a.txt", Options())  # no roots: never
    with pytest.raises(uris.UriError):
        uris.write(f"file://{root}/../escape.txt", b"x", Options(), roots=roots)
    assert not (tmp_path / "escape.txt").exists()


# -- the same events through the real server ----------------------------------------------


def test_jobs_over_http(seaweed, tmp_path):
    from server_proc import running_server

    s3 = seaweed.client()
    bucket = seaweed.bucket()
    s3.put_object(Bucket=bucket, Key="memo.docx", Body=(SAMPLES / "letter.docx").read_bytes())
    (tmp_path / "note.txt").write_text("a local note")
    with running_server("-j", "1", "--file-root", str(tmp_path), env=seaweed.env) as server, \
            server.client() as c:
        jobs = [c.post("/v1/jobs", json={"document_uri": f"s3://{bucket}/memo.docx"}),
                c.post("/v1/jobs", json={"document_uri": f"file://{tmp_path}/note.txt"}),
                c.post("/v1/jobs", json={"document_uri": "file:///etc/passwd"}),
                c.post("/v1/jobs", json={"document_uri": "http://127.0.0.1:1/x"})]
        bad = c.post("/v1/jobs", json={"text_uri": "s3://x/y"})
        assert bad.status_code == 422 and bad.json()["error"]["kind"] == "invalid_request"
        assert [j.status_code for j in jobs] == [202] * 4
        replies = []
        for job in jobs:
            for _ in range(300):
                state = c.get(f"/v1/jobs/{job.json()['id']}").json()
                if state["status"] == "done":
                    break
                time.sleep(0.1)
            replies.append(state["reply"])
        assert c.get("/v1/jobs/nope").status_code == 404
    assert replies[0]["status"] == "ok", replies[0]
    assert s3.head_object(Bucket=bucket, Key="memo.docx.txt")["Metadata"] == \
        {"missing_text_pages": "[]"}
    assert replies[1]["status"] == "ok"
    assert (tmp_path / "note.txt.txt").read_text() == "a local note"
    assert replies[2]["error"]["kind"] == "blocked_address"
    assert replies[3]["error"]["kind"] == "blocked_address"


def test_run_from_s3_incremental_by_etag_and_export_to_s3(seaweed, tmp_path):
    import os
    import subprocess
    import sys

    s3 = seaweed.client()
    bucket = seaweed.bucket()
    s3.put_object(Bucket=bucket, Key="docs/letter.docx",
                  Body=(SAMPLES / "letter.docx").read_bytes())
    s3.put_object(Bucket=bucket, Key="docs/notes.txt", Body=b"reed warbler nest")
    s3.put_object(Bucket=bucket, Key="other/skip.txt", Body=b"not under the prefix")
    env = {**os.environ, **seaweed.env}
    archive = str(tmp_path / "a.db")

    def textsieve(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "textsieve", *args], env=env,
                              capture_output=True, text=True, timeout=300)

    def run() -> dict:
        r = textsieve("run", "-q", "--archive", archive, f"s3://{bucket}/docs/")
        assert r.returncode == 0, r.stderr
        import sqlite3

        with sqlite3.connect(archive) as c:
            return dict(c.execute("SELECT key, status FROM items WHERE parent_id IS NULL"))

    first = run()
    assert first == {f"s3://{bucket}/docs/letter.docx": "ok",
                     f"s3://{bucket}/docs/notes.txt": "ok"}
    stats = textsieve("stats", "--archive", archive)
    assert stats.returncode == 0
    # Unchanged objects are skipped from the listing; a changed ETag is extracted again.
    # The same size: only the ETag tells the change.
    s3.put_object(Bucket=bucket, Key="docs/notes.txt", Body=b"bittern booms now")
    r = textsieve("run", "--archive", archive, f"s3://{bucket}/docs/")
    assert r.returncode == 0
    assert "bittern" in textsieve("search", "--archive", archive, "bittern").stdout
    assert re.search(r"unchanged \(skipped\)\s+1\b", r.stderr), r.stderr
    assert re.search(r"extracted\s+1\b", r.stderr), r.stderr
    exported = textsieve("export", "--archive", archive, "--to", f"s3://{bucket}/out/")
    assert exported.returncode == 0, exported.stderr
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="out/")
                  ["Contents"])
    assert len(keys) == 2 and all(k.endswith(".txt") for k in keys)
    body = s3.get_object(Bucket=bucket, Key=next(k for k in keys if "notes" in k))["Body"]
    assert body.read().decode().strip() == "bittern booms now"
    jsonl = textsieve("export", "--archive", archive, "--format", "jsonl", "--to",
                      f"s3://{bucket}/dump/all.jsonl")
    assert jsonl.returncode == 0
    rows = s3.get_object(Bucket=bucket, Key="dump/all.jsonl")["Body"].read().splitlines()
    assert len(rows) >= 2


def _read_in_child(uri: str, queue) -> None:
    try:
        queue.put(("ok", uris.read(uri, Options(retries=0)).data))
    except uris.UriError as exc:
        queue.put((exc.kind.value, str(exc)))


def test_s3_in_a_child_forked_after_use_fails_fast_not_hangs(s3_env):
    """obstore's runtime does not survive fork: a forked child's s3:// read is a typed
    error at once, never a hang (without the guard the child waits forever)."""
    import multiprocessing

    bucket = s3_env.bucket()
    s3_env.client().put_object(Bucket=bucket, Key="a.txt", Body=b"hello")
    uri = f"s3://{bucket}/a.txt"
    assert uris.read(uri, Options()).data == b"hello"  # the parent's runtime is up
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_read_in_child, args=(uri, queue))
    child.start()
    child.join(30)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the forked child hung on its s3:// read")
    kind, _ = queue.get(timeout=5)
    assert kind == "internal"
