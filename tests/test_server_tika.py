"""The real ``tika`` Python client (client-only mode) against textsieve serve."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("tika")

from server_proc import running_server

SAMPLES = Path(__file__).parent.parent / "samples" / "docs"

# Run in a child: the client reads TIKA_CLIENT_ONLY and TIKA_SERVER_ENDPOINT at import.
CLIENT = """
import json, sys
from tika import detector, parser
path = sys.argv[1]
out = {
    "text": parser.from_file(path, service="text"),
    "meta": parser.from_file(path, service="meta"),
    "all": parser.from_file(path),
    "buffer": parser.from_buffer(open(path, "rb").read()),
    "detect": detector.from_file(path),
}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def tika_client():
    with running_server("-j", "1") as server:
        def call(path: Path) -> dict:
            env = {"TIKA_CLIENT_ONLY": "True", "TIKA_SERVER_ENDPOINT": server.url,
                   "PATH": "/usr/bin:/bin", "HOME": str(path.parent)}
            r = subprocess.run([sys.executable, "-c", CLIENT, str(path)], env=env,
                               capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr[-2000:]
            return json.loads(r.stdout.strip().splitlines()[-1])
        yield call, server


def test_tika_client_text_meta_and_recursive(tika_client):
    call, _ = tika_client
    out = call(SAMPLES / "field-notes.pdf")
    assert out["text"]["status"] == 200
    assert "heron" in out["text"]["content"].lower()
    meta = out["meta"]["metadata"]
    assert meta["Content-Type"] == "application/pdf"
    assert meta["resourceName"] == "field-notes.pdf"  # the name the client sent
    assert int(meta["xmpTPg:NPages"]) >= 1
    assert "heron" in out["all"]["content"].lower()
    assert out["all"]["metadata"]["Content-Type"] == "application/pdf"
    assert "heron" in out["buffer"]["content"].lower()
    assert out["detect"] == "application/pdf"


def test_tika_client_recursive_metadata_lists_embedded_documents(tika_client):
    call, _ = tika_client
    out = call(SAMPLES / "trip.zip")
    types = out["all"]["metadata"]["Content-Type"]
    assert isinstance(types, list) and types[0] == "application/zip" and len(types) > 1
    paths = out["all"]["metadata"]["X-TIKA:embedded_resource_path"]
    assert all(p.startswith("/") for p in (paths if isinstance(paths, list) else [paths]))


def test_rmeta_container_first_and_xhtml(tika_client):
    _, server = tika_client
    data = (SAMPLES / "count.eml").read_bytes()
    with server.client() as c:
        rmeta = c.put("/rmeta", content=data).json()
        text = c.put("/rmeta/text", content=data).json()
        html = c.put("/tika", content=data, headers={"Accept": "text/html"})
        version = c.get("/version")
    assert rmeta[0]["Content-Type"] == "message/rfc822" and len(rmeta) >= 2
    assert "X-TIKA:embedded_resource_path" not in rmeta[0]
    assert rmeta[0]["X-TIKA:content"].startswith("<html")
    assert not text[0]["X-TIKA:content"].startswith("<html")
    assert html.headers["content-type"].startswith("text/html")
    assert "<body>" in html.text and "<script" not in html.text
    assert "Tika" in version.text



def test_tika_client_buffer_keeps_members_apart(tika_client):
    """from_buffer joins the member texts of /rmeta/text as they come: each must end with
    its line break, or the last word of one is glued to the first of the next (it was
    "waders.# Route")."""
    call, server = tika_client
    data = (SAMPLES / "count.eml").read_bytes()
    with server.client() as c:
        parts = [p["X-TIKA:content"] for p in c.put("/rmeta/text", content=data).json()]
    texts = [t for t in parts if t.strip()]
    assert len(texts) >= 2
    assert all(t.endswith("\n") for t in texts)
    content = call(SAMPLES / "count.eml")["buffer"]["content"]
    for before, after in itertools.pairwise(texts):
        glued = before.split()[-1] + after.split()[0]
        assert glued not in content, glued
