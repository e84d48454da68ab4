"""The MCP server: an assistant searches and reads what textsieve extracted.

One server, two transports: ``textsieve mcp --archive FILE`` speaks MCP over stdio (what
an assistant's config starts), and ``textsieve serve`` mounts the same tools at ``/mcp``
(streamable HTTP) behind the service's one request guard (Host, Origin, token), so the
HTTP endpoint is exactly as open as the API. Built on the official MCP Python SDK (extra
``textsieve[mcp]``).

The tools are the archive's reading functions, not new ones: search (with the search
filters), show (text, Markdown, metadata, provenance), chunks, related, topics, summarize;
and extract, for a file under the allowed folders (``--file-root``) or a URL under the
fetch policy (public addresses only unless ``--allow-private``/``--allow-cidr``).

What they return is kept small for a model's context: a page of hits, a slice of text
with the offset to ask for the next, a page of chunks; every result names the ids to ask
for more. A failure is a tool error with a one-line message (no such item, outside the
allowed folders, blocked address), never a traceback.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

try:
    import anyio
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.transport_security import TransportSecuritySettings
    from pydantic import Field
except ImportError as exc:  # the optional extra: say which, not just the module
    raise ImportError(f"the MCP server needs the mcp extra: pip install 'textsieve[mcp]' "
                      f"({exc})") from exc

from .. import __version__
from ..archive import Archive
from ..errors import TextsieveError
from ..model import Document
from ..options import Options

log = logging.getLogger(__name__)

MAX_CHARS = 6_000  # text handed back per call, by default: ~1,500 tokens
MAX_CHARS_CAP = 50_000
SNIPPET_HITS = 10

INSTRUCTIONS = """\
Search and read documents that textsieve extracted into its archive (files, web pages,
mail). Start with `search`; each hit has an `id`. `show` gives an item's text, Markdown,
metadata or provenance a slice at a time (`offset`, `next_offset`); `chunks` gives it in
token-bounded pieces with heading paths and page numbers; `related`, `topics` and
`summarize` help find and skim. `extract` reads a new file or URL without archiving it."""

Extractor = Callable[[bytes, str | None, Options], Document]


@dataclass
class Backend:
    """What the tools work on: the archive, the base options (fetch policy, limits), the
    folders ``extract`` may read, and how a document is extracted (in a child process for
    stdio; the service's worker pool under serve)."""

    archive: str | None
    options: Options = field(default_factory=Options)
    file_roots: tuple[str, ...] = ()
    extract: Extractor | None = None

    def open(self, *, readonly: bool = True) -> Archive:
        if not self.archive:
            raise ToolError("no archive: start the server with --archive FILE")
        if not os.path.exists(self.archive):
            raise ToolError(f"the archive {self.archive} does not exist yet (textsieve run "
                            "fills it)")
        try:
            return Archive(self.archive, readonly=readonly)
        except TextsieveError as exc:
            raise ToolError(exc.message) from None

    def extract_bytes(self, data: bytes, name: str | None) -> Document:
        if self.extract is not None:
            return self.extract(data, name, self.options)
        import textsieve

        return textsieve.extract(data, name=name, options=self.options, isolate=True)


def _slice(text: str, offset: int, max_chars: int) -> dict[str, Any]:
    """A slice of a long text, cut at a line or word boundary near ``max_chars``, and the
    offset to ask for the rest."""
    max_chars = max(200, min(max_chars, MAX_CHARS_CAP))
    end = min(len(text), offset + max_chars)
    if end < len(text):
        cut = max(text.rfind("\n", offset + max_chars // 2, end),
                  text.rfind(" ", offset + max_chars // 2, end))
        end = cut + 1 if cut > offset else end
    out: dict[str, Any] = {"text": text[offset:end], "offset": offset,
                           "total_chars": len(text)}
    if end < len(text):
        out["next_offset"] = end
    return out


def _item_or_error(archive: Archive, item_id: int) -> dict[str, Any]:
    from ..archive.browse import item

    row = item(archive, item_id)
    if row is None:
        raise ToolError(f"no item {item_id} (search gives the ids)")
    return row


def build(backend: Backend) -> MCPServer:
    """The MCP server over ``backend``: its tools, each a thin call of the archive's own
    reading functions, run in a worker thread (the event loop keeps serving)."""
    # The SDK configures the root logger when a server is made: at WARNING it changes
    # nothing a user sees (what Python shows without configuration), where its INFO
    # default would print every library's INFO lines in serve's and mcp's stderr.
    server = MCPServer("textsieve", version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")

    async def off_loop(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kw))
        except ToolError:
            raise
        except TextsieveError as exc:  # a bad query, an unusable archive: the model's to read
            raise ToolError(exc.message) from None

    @server.tool()
    async def search(
        query: Annotated[str, Field(description="words (all must match), a \"phrase\", "
                                    "OR, NEAR, prefix*; empty: list what the filters keep",
                                    max_length=1000)],
        limit: Annotated[int, Field(ge=1, le=50)] = SNIPPET_HITS,
        offset: Annotated[int, Field(ge=0)] = 0,
        type: Annotated[str | None, Field(description="MIME type, e.g. application/pdf")] = None,
        status: Literal["ok", "empty", "error"] | None = None,
        site: Annotated[str | None, Field(description="a web host")] = None,
        source: Annotated[str | None, Field(description="a source as the run named it")] = None,
        mailbox: Annotated[str | None, Field(description="a mail source or label")] = None,
        since: Annotated[str | None, Field(description="YYYY-MM-DD, first read on or "
                                           "after")] = None,
        until: Annotated[str | None, Field(description="YYYY-MM-DD")] = None,
        language: Annotated[str | None, Field(description="e.g. en, de")] = None,
        sort: Literal["relevance", "read", "published"] = "relevance",
    ) -> dict[str, Any]:
        """Search the archive's full text. Hits with id, title, where they came from and
        a snippet; ask `show` or `chunks` for an id's text."""
        from ..archive.search import Filters, find

        filters = Filters(type=type, status=status, source=source, mailbox=mailbox,
                          site=site, since=since, until=until, language=language)

        def run() -> dict[str, Any]:
            with backend.open() as archive:
                hits, total = find(archive, query, filters, sort=sort, limit=limit,
                                   offset=offset, count=True)
            out: dict[str, Any] = {
                "hits": [{"id": h.id, "title": h.title, "where": h.where,
                          "mime_type": h.mime_type, "snippet": h.snippet} for h in hits],
                "total": total}
            if total is not None and offset + len(hits) < total:
                out["next_offset"] = offset + len(hits)
            return out

        return await off_loop(run)

    @server.tool()
    async def show(
        item_id: Annotated[int, Field(ge=1, description="an id from search")],
        part: Literal["text", "markdown", "metadata", "provenance"] = "text",
        offset: Annotated[int, Field(ge=0)] = 0,
        max_chars: Annotated[int, Field(ge=200, le=MAX_CHARS_CAP)] = MAX_CHARS,
    ) -> dict[str, Any]:
        """One archived item: its text or Markdown a slice at a time (next_offset asks for
        more), its metadata (title, type, status, pages, summary, children), or its
        provenance (sources, runs, mails, captures, source state)."""

        def run() -> dict[str, Any]:
            from ..archive import browse

            with backend.open() as archive:
                row = _item_or_error(archive, item_id)
                head = {"id": item_id, "title": row.get("title"), "key": row.get("key"),
                        "mime_type": row.get("mime_type"), "status": row.get("status")}
                if part in ("text", "markdown"):
                    doc = archive.document(item_id, children=False)
                    assert doc is not None
                    text = doc.markdown if part == "markdown" else doc.text
                    kids = [i for (i,) in archive.conn.execute(
                        "SELECT id FROM items WHERE parent_id = ? ORDER BY id LIMIT 50",
                        (item_id,))]
                    out = {**head, **_slice(text, offset, max_chars)}
                    if kids:
                        out["children"] = kids
                    return out
                if part == "metadata":
                    from ..enrich.candidates import enriched

                    meta = {k: row.get(k) for k in (
                        "name", "size", "sha256", "text_chars", "metadata", "warnings",
                        "pages", "ocr_pages", "missing_pages", "error_kind",
                        "error_message", "parent_id") if row.get(k) not in (None, [], {})}
                    try:
                        meta.update({k: v for k, v in enriched(archive, item_id).items()
                                     if v})
                    except Exception:
                        log.debug("no enrichment for %s", item_id, exc_info=True)
                    meta["children"] = [
                        {"id": c, "name": n} for c, n in archive.conn.execute(
                            "SELECT id, name FROM items WHERE parent_id = ? ORDER BY id "
                            "LIMIT 50", (item_id,))]
                    return {**head, **_jsonable(meta)}
                return {**head, "lineage": [{"id": i, "key": k} for i, k in
                                            archive.lineage(item_id)],
                        "sources": browse.provenance(archive, item_id),
                        "mails": browse.mails_with_ids(archive, item_id)[:20],
                        "captures": (row.get("captures") or [])[:20],
                        "source_state": row.get("source_state"),
                        "source_note": row.get("source_note")}

        return await off_loop(run)

    @server.tool()
    async def chunks(
        item_id: Annotated[int, Field(ge=1, description="an id from search")],
        max_tokens: Annotated[int, Field(ge=16, le=100_000)] = 512,
        overlap: Annotated[int, Field(ge=0, le=50_000)] = 0,
        start: Annotated[int, Field(ge=0, description="index of the first chunk")] = 0,
        limit: Annotated[int, Field(ge=1, le=50)] = 8,
    ) -> dict[str, Any]:
        """An item's text in pieces of at most max_tokens tokens that follow its structure
        (sections, slides, pages; table rows and list items whole), each with its heading
        path, page or slide numbers and character offsets; next_start asks for more."""
        from ..archive.chunks import item_chunks

        def run() -> dict[str, Any]:
            with backend.open() as archive:
                found = item_chunks(archive, item_id, max_tokens, overlap)
            if found is None:
                raise ToolError(f"no item {item_id} (search gives the ids)")
            page = found[start:start + limit]
            out: dict[str, Any] = {"item_id": item_id, "total": len(found),
                                   "chunks": [_small_chunk(c.to_dict()) for c in page]}
            if found:
                out["item"] = found[0].item
            if start + limit < len(found):
                out["next_start"] = start + limit
            return out

        return await off_loop(run)

    @server.tool()
    async def related(
        item_id: Annotated[int, Field(ge=1)],
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> dict[str, Any]:
        """Items most like this one (TF-IDF nearest neighbours), closest first."""

        def run() -> dict[str, Any]:
            from ..enrich import candidates, require

            require()
            with backend.open() as archive:
                _item_or_error(archive, item_id)
                found = candidates.related_of(archive, item_id)
            if not found:
                with backend.open(readonly=False) as archive:  # kept up to date on demand
                    from ..enrich import related as related_items

                    related_items.update(archive)
                    found = candidates.related_of(archive, item_id)
            return {"item_id": item_id, "related": found[:limit]}

        return await off_loop(run)

    @server.tool()
    async def topics(
        items_per_topic: Annotated[int, Field(ge=0, le=10)] = 3,
    ) -> dict[str, Any]:
        """What the archive is about: its topics (top terms, size, a few items each).
        Fitted on the archive the first time it is asked, offline."""

        def run() -> dict[str, Any]:
            from ..enrich import candidates, require

            require()
            with backend.open() as archive:
                found = candidates.list_topics(archive, items=items_per_topic)
            if not found:
                from ..enrich import topics as topic_model

                with backend.open(readonly=False) as archive:
                    topic_model.update(archive)
                    found = candidates.list_topics(archive, items=items_per_topic)
            return {"topics": [t.to_dict() for t in found]}

        return await off_loop(run)

    @server.tool()
    async def summarize(
        item_id: Annotated[int, Field(ge=1)],
        sentences: Annotated[int, Field(ge=1, le=20)] = 3,
    ) -> dict[str, Any]:
        """A few-sentence extractive summary of an item (the lead sentence and the most
        central others, in its language)."""

        def run() -> dict[str, Any]:
            from ..enrich import candidates, require, summary

            require()
            with backend.open() as archive:
                _item_or_error(archive, item_id)
                stored = candidates.summary_of(archive, item_id)
                doc = None if stored else archive.document(item_id, children=False)
            if stored:
                return {"item_id": item_id, "summary": stored}
            assert doc is not None
            text = summary.summarize(doc.text, language=doc.metadata.language, n=sentences)
            return {"item_id": item_id, "summary": text}

        return await off_loop(run)

    @server.tool()
    async def extract(
        source: Annotated[str, Field(description="a file path under the allowed folders, "
                                     "or an http(s) URL", max_length=4096)],
        format: Literal["text", "markdown"] = "text",
        offset: Annotated[int, Field(ge=0)] = 0,
        max_chars: Annotated[int, Field(ge=200, le=MAX_CHARS_CAP)] = MAX_CHARS,
    ) -> dict[str, Any]:
        """Extract a document that is not in the archive (nothing is stored): a file under
        the folders this server allows, or a public web URL. Text a slice at a time."""

        def run() -> dict[str, Any]:
            from ..uris import UriError, read

            if source.startswith(("http://", "https://")):
                uri, name = source, None
            elif "://" in source:
                raise ToolError(f"{source}: only file paths and http(s) URLs")
            else:
                path = os.path.abspath(os.path.expanduser(source))
                uri, name = "file://" + path, os.path.basename(path)
            try:
                blob = read(uri, backend.options, roots=backend.file_roots)
            except UriError as exc:
                raise ToolError(f"{exc.kind}: {exc.message}") from None
            doc = backend.extract_bytes(blob.data, name or source.rsplit("/", 1)[-1] or None)
            if doc.error is not None:
                raise ToolError(f"{doc.error.kind}: {doc.error.message}")
            text = doc.full_text(markdown=format == "markdown")
            return {"source": source, "mime_type": doc.mime_type, "title": doc.title,
                    "status": str(doc.status), **_slice(text, offset, max_chars)}

        return await off_loop(run)

    return server


def _small_chunk(c: dict[str, Any]) -> dict[str, Any]:
    """A chunk without its item (said once for the page)."""
    c = dict(c)
    c.pop("item", None)
    return c


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(d, default=str))


def run_stdio(backend: Backend) -> None:
    """``textsieve mcp``: serve over stdin/stdout until the client closes them."""
    build(backend).run("stdio")


def http_routes(backend: Backend, path: str = "/mcp") -> tuple[list[Any], Callable[[], Any]]:
    """The streamable-HTTP route(s) to add to the service's app at ``path`` and the context
    manager that runs their session manager (entered in the service's lifespan). Host,
    Origin and token are the service's guard's to check, in front of every route, so the
    SDK's own loopback-only Host check is off (it would refuse ``--allowed-host``)."""
    server = build(backend)
    app = server.streamable_http_app(
        streamable_http_path=path, transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=False))
    return list(app.routes), server.session_manager.run
