"""`ladr-lab serve --mcp`, over stdio and streamable HTTP, driven by the MCP SDK's own client (`ClientSession`)."""
from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

if os.environ.get("LADR_REQUIRE_MCP") != "1":
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'ladr_lab[mcp]'); "
                                      "LADR_REQUIRE_MCP=1 makes this a failure")

import anyio  # noqa: E402 - after the skip: the SDK brings it
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from ladr_lab.search.request import PARAMS_SCHEMA  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
KNOWLEDGE = REPO / "sample_slates" / "knowledge"
ENV = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
TOKEN = "mcp-test-token"
SERVE = [sys.executable, "-m", "ladr_lab", "serve", "--mcp", "--slate", f"Knowledge={KNOWLEDGE}"]
TRANSPORTS = ["stdio", "http"]


@pytest.fixture(scope="module")
def http_url():
    """`ladr-lab serve --mcp --http 127.0.0.1:0 --token ...` in a subprocess; its /mcp URL from standard error."""
    proc = subprocess.Popen([*SERVE, "--http", "127.0.0.1:0", "--token", TOKEN], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, text=True, cwd=REPO)
    url = None
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"MCP listening on (http://\S+)", line)
        if m:
            url = m.group(1)
            break
    try:
        assert url, "the MCP server did not start"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stderr.close()


@asynccontextmanager
async def connect(transport, url):
    """An initialized ClientSession to the server over `transport`."""
    if transport == "stdio":
        params = StdioServerParameters(command=SERVE[0], args=[*SERVE[1:], "--stdio"], env=ENV, cwd=REPO)
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                yield session
    else:
        import httpx2

        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as client, \
                streamable_http_client(url, http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield session


def run(transport, request, scenario):
    """Run `scenario(session)` against a fresh session over `transport`."""
    url = request.getfixturevalue("http_url") if transport == "http" else None

    async def main():
        async with connect(transport, url) as session:
            await scenario(session)

    anyio.run(main)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_retrieve_tool_takes_seed_002s_params(transport, request):
    async def scenario(session):
        tools = (await session.list_tools()).tools
        assert [t.name for t in tools] == ["retrieve"]
        schema = tools[0].input_schema
        assert schema == PARAMS_SCHEMA
        assert {"query", "k", "filter", "cursor", "mode", "indexVersion"} <= set(schema["properties"])
        assert schema["required"] == ["query"]
        assert tools[0].output_schema["required"] == ["hits", "indexVersion", "usage"]
        assert tools[0].annotations.read_only_hint is True

    run(transport, request, scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_retrieve_with_a_filter_then_the_cursor_it_returned(transport, request):
    tagged = {"field": "tags", "op": "contains", "value": "retrieve"}

    async def scenario(session):
        first = await session.call_tool("retrieve", {"query": "metatag filter", "k": 3, "filter": tagged})
        assert not first.is_error
        page1 = first.structured_content
        assert json.loads(first.content[0].text) == page1           # the same result, as text
        assert len(page1["hits"]) == 3
        assert all("retrieve" in h["meta"]["tags"] for h in page1["hits"])
        assert all(h["citation"]["uri"].startswith("slate:Knowledge/docs/") for h in page1["hits"])
        cursor = page1["nextCursor"]

        second = await session.call_tool("retrieve", {"query": "metatag filter", "cursor": cursor})
        assert not second.is_error
        page2 = second.structured_content
        assert page2["hits"] and all("retrieve" in h["meta"]["tags"] for h in page2["hits"])
        assert not {h["id"] for h in page1["hits"]} & {h["id"] for h in page2["hits"]}
        assert page2["indexVersion"] == page1["indexVersion"]

        other = await session.call_tool("retrieve", {"query": "metatag filter", "k": 3,
                                                     "filter": {"field": "slate", "op": "eq", "value": "Nowhere"}})
        assert not other.is_error and other.structured_content["hits"] == []

    run(transport, request, scenario)


BAD = [
    ({"query": "x", "k": 0}, "k must be >= 1"),
    ({"query": "x", "k": "ten"}, "k must be an integer"),
    ({"query": "x", "cursor": "not-a-cursor"}, 'cursor "not-a-cursor" is unknown'),
    ({"query": "x", "filter": {"field": "colour", "op": "eq", "value": 1}}, 'filter.field "colour"'),
    ({"query": "x", "mode": "psychic"}, "mode must be one of"),
    ({"k": 3}, "query is required"),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_bad_argument_is_an_error_result_and_the_session_goes_on(transport, request):
    async def scenario(session):
        for args, message in BAD:
            result = await session.call_tool("retrieve", args)
            assert result.is_error, args
            assert message in result.content[0].text and "(-32602)" in result.content[0].text
            assert result.structured_content["error"]["code"] == -32602
        with pytest.raises(MCPError, match="unknown tool"):
            await session.call_tool("search", {"query": "x"})
        after = await session.call_tool("retrieve", {"query": "gates", "k": 1})
        assert not after.is_error and len(after.structured_content["hits"]) == 1

    run(transport, request, scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_slates_files_are_resources(transport, request):
    on_disk = sorted(p.relative_to(KNOWLEDGE).as_posix() for p in KNOWLEDGE.rglob("*")
                     if p.is_file() and not any(part.startswith(".") for part in p.relative_to(KNOWLEDGE).parts))

    async def scenario(session):
        listed = await session.list_resources()
        uris = [r.uri for r in listed.resources]
        assert listed.next_cursor is None                         # 46 files: one page (200)
        assert uris == [f"slate:Knowledge/{rel}" for rel in on_disk]
        overview = next(r for r in listed.resources if r.uri == "slate:Knowledge/docs/overview.md")
        assert overview.mime_type == "text/markdown"
        read = await session.read_resource(overview.uri)
        assert read.contents[0].text == (KNOWLEDGE / "docs" / "overview.md").read_text(encoding="utf-8")
        hit = (await session.call_tool("retrieve", {"query": "gate actions", "k": 1})).structured_content["hits"][0]
        assert (await session.read_resource(hit["citation"]["uri"])).contents[0].text.startswith("#")

    run(transport, request, scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_path_escape_is_refused_and_the_session_goes_on(transport, request):
    async def scenario(session):
        for uri in ("slate:Knowledge/docs/../../../pyproject.toml", "slate:Knowledge//etc/passwd",
                    "file:///etc/passwd", "slate:Knowledge/docs/%2e%2e/%2e%2e/README.md"):
            with pytest.raises(MCPError) as caught:
                await session.read_resource(uri)
            assert caught.value.code == -32602, uri
        with pytest.raises(MCPError) as caught:
            await session.read_resource("slate:Knowledge/docs/no-such-file.md")
        assert caught.value.code == -32002
        assert [t.name for t in (await session.list_tools()).tools] == ["retrieve"]

    run(transport, request, scenario)


def test_http_needs_the_bearer_token_and_a_loopback_host(http_url):
    host, port = re.match(r"http://([^:/]+):(\d+)/mcp", http_url).groups()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})

    def status(headers):
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request("POST", "/mcp", body, {"Content-Type": "application/json",
                                                "Accept": "application/json, text/event-stream", **headers})
            return conn.getresponse().status
        finally:
            conn.close()

    assert status({}) == 401
    assert status({"Authorization": "Bearer wrong"}) == 401
    assert status({"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}) == 403
    assert status({"Authorization": f"Bearer {TOKEN}", "Origin": "https://evil.example"}) == 403


class _SlowEngine:
    """An engine whose retrieve takes 100 ms, then checks its budget (as a slow stage would)."""

    def capabilities(self):
        return {}

    def retrieve(self, params, progress=None):
        import time

        from ladr_lab.search.budget import check_budget

        time.sleep(0.1)
        check_budget("recall")
        return {"hits": [], "indexVersion": "v", "usage": {}}


def test_a_tool_call_past_the_servers_time_budget_is_a_failed_call_with_code_32001():
    from mcp import Client

    from ladr_lab.server.mcp_server import build_mcp_server
    from ladr_lab.server.resources import SlateResources
    from ladr_lab.slate import SlateStore

    async def main():
        server = build_mcp_server(_SlowEngine(), SlateResources(SlateStore()), request_timeout=0.05)
        async with Client(server) as client:
            result = await client.call_tool("retrieve", {"query": "x"})
            assert result.is_error
            assert result.content[0].text.startswith(
                "retrieve failed, request timed out (-32001): the request ran out of its time budget of 50 ms")
            assert result.structured_content["error"]["data"]["stage"] == "recall"
        async with Client(build_mcp_server(_SlowEngine(), SlateResources(SlateStore()))) as client:
            assert not (await client.call_tool("retrieve", {"query": "x"})).is_error   # 5 s by default

    anyio.run(main)
