"""The one request guard of `textsieve serve`, over HTTP against the real server: Host
names (DNS rebinding), Origin on what changes state, the token on every route (docs and
reading room included), and what a token must look like."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from server_proc import running_server

SAMPLES = Path(__file__).parent.parent / "samples" / "docs"
TOKEN = "k9-Vq3rT_w8ZpL2mXs7N"


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("guard")
    db = tmp / "a.db"
    r = subprocess.run([sys.executable, "-m", "textsieve", "run", str(SAMPLES / "article.html"),
                        "--archive", str(db), "-q"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return db


@pytest.fixture(scope="module")
def open_server(archive: Path, tmp_path_factory: pytest.TempPathFactory):
    """No token, on loopback: how most people run it on a laptop."""
    root = tmp_path_factory.mktemp("root")
    (root / "in.txt").write_text("heron\n")
    env = {"TEXTSIEVE_TOKEN": ""}
    with running_server("-j", "1", "--archive", str(archive), "--file-root", str(root),
                        env=env) as s:
        s.root = root  # type: ignore[attr-defined]
        yield s


def _requests(root: Path) -> list[tuple[str, str, dict]]:
    """One request of each kind a hostile page would like to make."""
    job = {"document_uri": f"file://{root}/in.txt", "text_uri": f"file://{root}/out.txt"}
    return [("GET", "/v1/search?q=heron", {}), ("GET", "/v1/items/1/text", {}),
            ("GET", "/v1/stats", {}), ("POST", "/v1/jobs", {"json": job}),
            ("POST", "/v1/runs", {"json": {"sources": [str(root)]}}),
            ("PUT", "/v1/extract", {"content": b"x"}), ("PUT", "/tika", {"content": b"x"}),
            ("GET", "/docs", {}), ("GET", "/openapi.json", {}), ("GET", "/metrics", {}),
            ("GET", "/ui/search?q=heron", {}), ("GET", "/ui/items/1", {})]


def test_a_rebound_dns_name_is_refused_on_every_route(open_server) -> None:
    """A web page at evil.example whose name resolves to 127.0.0.1 sends its own Host:
    nothing is read, nothing is started, on the API, Tika's routes, docs and pages."""
    with open_server.client() as c:
        for method, path, kw in _requests(open_server.root):
            r = c.request(method, path, headers={"Host": f"evil.example:{open_server.port}"},
                          **kw)
            assert r.status_code == 403, (path, r.status_code, r.text[:200])
            if path.startswith("/ui/"):
                assert r.headers["content-type"].startswith("text/html"), path
            else:
                assert r.json()["error"]["kind"] == "forbidden_host", path
        assert not (open_server.root / "out.txt").exists()


def test_loopback_names_and_allowed_hosts_are_answered(open_server, archive: Path) -> None:
    port = open_server.port
    with open_server.client() as c:
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}",
                     "LOCALHOST"):
            r = c.get("/v1/search", params={"q": "heron"}, headers={"Host": host})
            assert r.status_code == 200 and r.json(), host
        assert c.get("/v1/stats", headers={"Host": "proxy.example"}).status_code == 403
    with running_server("-j", "1", "--archive", str(archive), "--allowed-host",
                        "proxy.example", env={"TEXTSIEVE_TOKEN": ""}) as s, s.client() as c:
        for host in ("proxy.example", f"proxy.example:{s.port}", f"127.0.0.1:{s.port}"):
            assert c.get("/v1/stats", headers={"Host": host}).status_code == 200, host
        assert c.get("/v1/stats", headers={"Host": "other.example"}).status_code == 403
        # pages served through the proxy may change things, even under another Host
        proxied = {"Origin": "https://proxy.example", "Host": f"127.0.0.1:{s.port}"}
        assert c.put("/v1/extract", content=b"x", headers=proxied).status_code == 200
        assert c.put("/v1/extract", content=b"x", headers={
            **proxied, "Origin": "https://other.example"}).status_code == 403


def test_a_foreign_origin_changes_nothing(open_server) -> None:
    """A form or fetch from another site (Origin, or Sec-Fetch-Site in browsers that send
    it) may not start a job, a run or an extraction; reading stays possible."""
    root = open_server.root
    job = {"document_uri": f"file://{root}/in.txt", "text_uri": f"file://{root}/o2.txt"}
    with open_server.client() as c:
        for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                        {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}):
            r = c.post("/v1/jobs", json=job, headers=headers)
            assert r.status_code == 403 and r.json()["error"]["kind"] == "cross_site"
            assert c.put("/v1/extract", content=b"x", headers=headers).status_code == 403
        assert not (root / "o2.txt").exists()
        same = c.post("/v1/jobs", json=job, headers={
            "Origin": open_server.url, "Sec-Fetch-Site": "same-origin"})
        assert same.status_code == 202
        assert c.get("/v1/stats", headers={"Origin": "http://evil.example"}
                     ).status_code == 200


def test_the_token_guards_every_route_docs_and_pages_included(archive: Path) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with running_server("-j", "1", "--archive", str(archive),
                        env={"TEXTSIEVE_TOKEN": TOKEN}) as s, s.client() as c:
        for path in ("/docs", "/openapi.json", "/version", "/metrics", "/v1/stats",
                     "/v1/search?q=heron", "/ui/search", "/ui/items/1", "/ui/overview"):
            r = c.get(path)
            assert r.status_code == 401, path
            assert c.get(path, headers={"Authorization": "Bearer wrong-token-123456"}
                         ).status_code == 401, path
            assert c.get(path, headers=bearer).status_code == 200, path
        for path in ("/v1/extract", "/tika", "/meta"):
            assert c.put(path, content=b"x").status_code == 401
        page = c.get("/ui/search?q=heron")  # a page without the token: its login form
        assert page.headers["content-type"].startswith("text/html")
        assert 'action="/ui/login"' in page.text and 'value="/ui/search?q=heron"' in page.text
        assert c.get("/healthz").status_code == 200  # liveness probes carry no token
        # what a browser opens first leads to the login form; its stylesheet is public
        home = c.get("/", follow_redirects=False)
        assert home.status_code == 307 and home.headers["location"] == "/ui/"
        assert c.get("/ui/static/style.css").status_code == 200
        # another Host is fine with a token: the token is what guards it
        assert c.get("/v1/stats", headers={**bearer, "Host": "example.org"}).status_code == 200


def _serve_fails(env: dict[str, str], *args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "textsieve", "serve", "--port", "1", *args],
                       env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    return r.stderr


@pytest.mark.parametrize("token", [" ", "  \t", "short-token", f"{TOKEN} x", f" {TOKEN}",
                                   f"{TOKEN}\n"])
def test_weak_or_blank_tokens_are_a_usage_error(token: str, tmp_path: Path) -> None:
    """TEXTSIEVE_TOKEN=" " once started a server guarded by one space; a token file is
    read the same way (only its final line break dropped)."""
    message = _serve_fails({"TEXTSIEVE_TOKEN": token})
    assert "TEXTSIEVE_TOKEN" in message
    f = tmp_path / "token"
    f.write_text(token + "\n")
    assert str(f) in _serve_fails({"TEXTSIEVE_TOKEN": ""}, "--token-file", str(f))


def test_a_token_file_with_its_line_break_works(tmp_path: Path) -> None:
    f = tmp_path / "token"
    f.write_text(TOKEN + "\n")
    with running_server("-j", "1", "--token-file", str(f),
                        env={"TEXTSIEVE_TOKEN": ""}) as s, s.client() as c:
        assert c.put("/v1/extract", content=b"x", headers={
            "Authorization": f"Bearer {TOKEN}"}).text == "x"
        assert c.put("/v1/extract", content=b"x").status_code == 401


def test_the_startup_line_brackets_an_ipv6_address() -> None:
    from server_proc import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "textsieve", "serve", "--host", "::1",
                             "--port", str(port), "-j", "1"], stderr=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stderr.readline()  # type: ignore[union-attr]
    finally:
        proc.terminate()
        proc.wait(20)
    assert f"http://[::1]:{port}" in line and f"http://::1:{port}" not in line
