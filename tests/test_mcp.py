"""The MCP server, driven by the official MCP Python SDK's client, as an assistant drives
it: ``textsieve mcp`` as a real subprocess on stdio, and ``/mcp`` under a real ``textsieve
serve`` (streamable HTTP, behind the service's guard). README: "MCP: an assistant reads
the archive"."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
import httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from http_server import (  # noqa: F401 - registers the http_server fixture
    TestServer,
    http_server_fixture,
)
from server_proc import running_server

TOOLS = {"search", "show", "chunks", "related", "topics", "summarize", "extract"}
TOKEN = "s3cret-token-for-mcp-tests"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An archive of three documents; a folder of files extract may read; one beside it
    that it may not."""
    base = tmp_path_factory.mktemp("mcp")
    docs = base / "docs"
    docs.mkdir()
    (docs / "herons.html").write_text(
        "<html><head><title>Grey herons</title></head><body><h1>Grey herons</h1>"
        + "".join(f"<p>Paragraph {i}: grey herons nest in colonies by the lake.</p>"
                  for i in range(200)) + "</body></html>")
    (docs / "otters.txt").write_text("Otters play in the river all afternoon.\n")
    (docs / "kites.txt").write_text("Red kites circle above the fields.\n")
    db = base / "a.db"
    done = subprocess.run([sys.executable, "-m", "textsieve", "run", docs, "--archive", db],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    allowed = base / "allowed"
    allowed.mkdir()
    (allowed / "memo.html").write_text("<html><body><h1>Memo</h1><p>The storks are back "
                                       "on the church roof.</p></body></html>")
    outside = base / "outside.txt"
    outside.write_text("A secret nobody may read through the assistant.\n")
    return {"db": db, "allowed": allowed, "outside": outside}


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    if data is None:  # a server that answers in text only
        data = json.loads(result.content[0].text)
    return data.get("result", data) if isinstance(data, dict) else data


def error_text(result: Any) -> str:
    assert result.is_error, result
    return " ".join(getattr(c, "text", "") for c in result.content)


async def session_checks(client: Client, setup: dict[str, Path], private_url: str) -> None:
    """What an assistant does: list the tools, search, show a hit, page through it, read
    its chunks, extract a file; and what it must not be able to do."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= TOOLS
    assert "type" in tools["search"].input_schema["properties"]  # the search filters

    hits = payload(await client.call_tool("search", {"query": "herons"}))["hits"]
    assert len(hits) == 1 and hits[0]["title"] == "Grey herons"
    hid = hits[0]["id"]
    filtered = payload(await client.call_tool("search", {"query": "river",
                                                         "type": "text/html"}))
    assert filtered["hits"] == []
    assert payload(await client.call_tool("search", {"query": "river"}))["hits"]

    shown = payload(await client.call_tool("show", {"item_id": hid, "max_chars": 1000}))
    assert shown["text"].startswith("Grey herons") and len(shown["text"]) <= 1000
    assert shown["total_chars"] > 5000 and shown["next_offset"] > 0
    more = payload(await client.call_tool("show", {"item_id": hid,
                                                   "offset": shown["next_offset"]}))
    assert more["offset"] == shown["next_offset"] and "Paragraph" in more["text"]
    meta = payload(await client.call_tool("show", {"item_id": hid, "part": "metadata"}))
    assert meta["mime_type"] == "text/html"
    prov = payload(await client.call_tool("show", {"item_id": hid, "part": "provenance"}))
    assert prov["lineage"][0]["key"].endswith("herons.html") and prov["sources"]
    missing = await client.call_tool("show", {"item_id": 999999})
    assert "no item 999999" in error_text(missing)

    ch = payload(await client.call_tool("chunks", {"item_id": hid, "max_tokens": 128}))
    assert ch["total"] > 8 and len(ch["chunks"]) == 8 and ch["next_start"] == 8
    assert all(c["tokens"] <= 128 and c["heading_path"] == ["Grey herons"]
               for c in ch["chunks"])
    assert ch["item"]["path"].endswith("herons.html")

    summary = payload(await client.call_tool("summarize", {"item_id": hid}))
    assert "grey herons" in summary["summary"]
    related = await client.call_tool("related", {"item_id": hid})
    if related.is_error:  # three items may be too few to compare: said, not a crash
        assert "too few" in error_text(related)
    else:
        assert all(r["id"] != hid for r in payload(related)["related"])

    memo = setup["allowed"] / "memo.html"
    got = payload(await client.call_tool("extract", {"source": str(memo),
                                                     "format": "markdown"}))
    assert "# Memo" in got["text"] and "storks" in got["text"]

    refused = await client.call_tool("extract", {"source": str(setup["outside"])})
    assert "outside the allowed folders" in error_text(refused)
    sneaky = await client.call_tool("extract", {
        "source": str(setup["allowed"] / ".." / setup["outside"].name)})
    assert "outside the allowed folders" in error_text(sneaky)
    private = await client.call_tool("extract", {"source": private_url})
    assert "blocked_address" in error_text(private)


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, as anyio's task groups raise."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in leaves(e)]
    return [exc]


def stdio(setup: dict[str, Path], *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "textsieve", "mcp", "--archive", str(setup["db"]), "--file-root",
              str(setup["allowed"]), *extra],
        env=dict(os.environ))


def drive(params: Any, checks: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await checks(client)

    asyncio.run(main())


def test_stdio(setup: dict[str, Path], http_server: TestServer) -> None:
    url = http_server.url("/article.html?token=mcp-stdio")
    drive(stdio(setup), lambda c: session_checks(c, setup, url))
    assert http_server.count("/article.html", "mcp-stdio") == 0  # refused before connecting


def test_stdio_fetch_policy_is_the_run_flags(setup: dict[str, Path],
                                             http_server: TestServer) -> None:
    """--allow-private opens what the fetch policy closes, as it does for run."""
    url = http_server.url("/article.html?token=mcp-allowed")

    async def checks(client: Client) -> None:
        got = payload(await client.call_tool("extract", {"source": url}))
        assert got["mime_type"] == "text/html" and got["text"].strip()

    drive(stdio(setup, "--allow-private"), checks)
    assert http_server.count("/article.html", "mcp-allowed") == 1


def test_mcp_without_an_archive_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "textsieve", "mcp", "--archive",
                           tmp_path / "none.db"], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stderr.startswith("textsieve: ")
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_http_under_serve(setup: dict[str, Path], http_server: TestServer) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    url = http_server.url("/article.html?token=mcp-http")
    env = {"TEXTSIEVE_TOKEN": TOKEN}
    with running_server("--archive", str(setup["db"]), "--file-root",
                        str(setup["allowed"]), env=env) as server:
        endpoint = server.url + "/mcp"
        transport = streamable_http_client(endpoint, http_client=create_mcp_http_client(
            headers={"Authorization": f"Bearer {TOKEN}"}))
        drive(transport, lambda c: session_checks(c, setup, url))
        assert http_server.count("/article.html", "mcp-http") == 0

        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        with httpx.Client(timeout=30) as http:
            # No token: refused before the MCP app sees the request.
            r = http.post(endpoint, json=init, headers=accept)
            assert r.status_code == 401
            r = http.post(endpoint, json=init, headers={
                **accept, "Authorization": "Bearer wrong-token-wrong-token"})
            assert r.status_code == 401
            # A rebound name without the token is refused like a missing token (with a
            # token set the token is what counts, as for the API: README "The service").
            r = http.post(endpoint, json=init, headers={**accept, "Host": "evil.example"})
            assert r.status_code == 401
            assert r.status_code == http.get(server.url + "/v1/stats",
                                             headers={"Host": "evil.example"}).status_code
            # A foreign page posting with the token in hand: refused too.
            r = http.post(endpoint, json=init, headers={
                **accept, "Authorization": f"Bearer {TOKEN}",
                "Origin": "https://evil.example"})
            assert r.status_code == 403
            r = http.post(endpoint, json=init, headers={
                **accept, "Authorization": f"Bearer {TOKEN}"})
            assert r.status_code == 200

        # The SDK's client with a wrong token does not get a session.
        bad = streamable_http_client(endpoint, http_client=create_mcp_http_client(
            headers={"Authorization": "Bearer wrong-token-wrong-token"}))

        async def never(client: Client) -> None:
            raise AssertionError("connected with a wrong token")

        with pytest.raises(BaseException) as err:
            drive(bad, never)
        assert any(type(e).__name__ == "MCPError" for e in leaves(err.value)), err.value


def test_http_without_a_token_answers_loopback_names_only(setup: dict[str, Path]) -> None:
    with running_server("--archive", str(setup["db"])) as server:
        endpoint = server.url + "/mcp"

        async def checks(client: Client) -> None:
            hits = payload(await client.call_tool("search", {"query": "kites"}))["hits"]
            assert len(hits) == 1

        drive(endpoint, checks)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}
        r = httpx.post(endpoint, json=init, timeout=30, headers={
            "Accept": "application/json, text/event-stream", "Host": "attacker.example:80"})
        assert r.status_code == 403
