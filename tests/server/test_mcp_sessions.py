"""MCP sessions over streamable HTTP are bounded (issue 29, item 3): an idle lifetime, and a cap that ends the
least recently used; an ended session answers the SDK's 404 and its event stream ends.

`SessionKeeper` is checked as a property against a stand-in for the SDK's app (no SDK needed), then against the
real SDK: sessions held are counted in the keeper and in the SDK's own table, never by resident memory."""
from __future__ import annotations

import asyncio
import http.client
import json
import os
import socket
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab.server.limits import HttpLimits
from ladr_lab.server.sessions import MAX_SESSIONS, SESSION_IDLE_TIMEOUT, SessionKeeper, check_session_limits

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "sessions-test", "version": "0"}}})
PING = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})


class FakeSdk:
    """The SDK's streamable HTTP app as the keeper sees it: a request without a session opens one (its id in the
    answer's header), an unknown id is 404, a DELETE ends one."""

    def __init__(self) -> None:
        self.live: list[str] = []
        self.opened = 0

    async def __call__(self, scope, receive, send):
        headers = dict(scope["headers"])
        session = headers.get(b"mcp-session-id", b"").decode() or None
        extra = []
        if session is None:
            self.opened += 1
            session = f"s{self.opened}"
            self.live.append(session)
            status, extra = 200, [(b"mcp-session-id", session.encode())]
        elif session not in self.live:
            status = 404
        else:
            status = 200
            if scope["method"] == "DELETE":
                self.live.remove(session)
        await send({"type": "http.response.start", "status": status, "headers": extra})
        await send({"type": "http.response.body", "body": b""})


async def _request(app, method: str, session: str | None) -> int:
    headers = [(b"mcp-session-id", session.encode())] if session else []
    got = {}

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            got["status"] = message["status"]

    await app({"type": "http", "method": method, "path": "/mcp", "headers": headers}, receive, send)
    return got["status"]


OPS = st.lists(st.one_of(st.just(("open", 0)), st.tuples(st.sampled_from(["use", "delete", "stream"]),
                                                           st.integers(0, 40))), max_size=60)


@settings(max_examples=60, deadline=None)
@given(cap=st.integers(1, 5), ops=OPS)
def test_the_cap_keeps_the_most_recently_used_sessions(cap, ops):
    """Whatever the order of opening, using (a GET stream is no use), and deleting sessions, the keeper and the
    SDK hold the same sessions: the `cap` most recently used, as an LRU list would."""
    async def main():
        sdk = FakeSdk()
        keeper = SessionKeeper(sdk, idle_timeout=3600, max_sessions=cap)
        model: list[str] = []   # least recently used first
        evicted = 0
        for op, i in ops:
            if op == "open":
                assert await _request(keeper, "POST", None) == 200
                model.append(f"s{sdk.opened}")
                evicted += max(0, len(model) - cap)
                del model[:-cap]
                continue
            session = f"s{i}"
            status = await _request(keeper, {"use": "POST", "delete": "DELETE", "stream": "GET"}[op], session)
            assert status == (200 if session in model else 404)
            if session in model and op != "stream":
                model.remove(session)
                if op == "use":
                    model.append(session)
        assert set(sdk.live) == set(model)
        assert list(keeper._used) == model and keeper.sessions == len(model) <= cap
        assert keeper.evicted == evicted

    asyncio.run(main())


def test_idle_sessions_are_ended_least_recent_first_and_a_call_in_flight_keeps_one():
    async def main():
        sdk = FakeSdk()
        keeper = SessionKeeper(sdk, idle_timeout=0.6, max_sessions=10)
        for _ in range(3):
            await _request(keeper, "POST", None)
        release = asyncio.Event()

        class Slow:
            async def __call__(self, scope, receive, send):
                if scope["method"] == "POST":
                    await release.wait()
                await sdk(scope, receive, send)

        await asyncio.sleep(0.4)
        assert await _request(keeper, "POST", "s3") == 200   # s3 used again at 0.4 s: its clock restarts
        keeper.app = Slow()
        call = asyncio.ensure_future(_request(keeper, "POST", "s2"))   # a call in flight on s2 from 0.4 s
        await asyncio.sleep(0.4)
        assert sdk.live == ["s2", "s3"] and keeper.expired == 1      # 0.8 s: s1 (idle since 0) ended
        await asyncio.sleep(0.5)
        assert sdk.live == ["s2"]                                    # 1.3 s: s3 too; s2's call keeps it
        release.set()
        assert await call == 200                                     # its clock restarts when the call ends
        await asyncio.sleep(0.4)
        assert sdk.live == ["s2"]
        await asyncio.sleep(0.5)
        assert sdk.live == [] and keeper.sessions == 0 and keeper.expired == 3

    asyncio.run(main())


def test_session_limits_are_checked_and_documented():
    for idle, cap in ((0, 1), (-1, 1), (float("inf"), 1), (float("nan"), 1), (1, 0), (1, 1.5)):
        with pytest.raises(ValueError):
            check_session_limits(idle, cap)
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "server.md").read_text()
    assert "`--session-idle-timeout` | 1800 s" in doc and "`--max-sessions` | 128" in doc
    assert (SESSION_IDLE_TIMEOUT, MAX_SESSIONS) == (1800.0, 128)


# --- against the SDK ---------------------------------------------------------------------------------------

def need_mcp() -> None:
    if os.environ.get("LADR_REQUIRE_MCP") != "1":
        pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'ladr_lab[mcp]'); "
                                          "LADR_REQUIRE_MCP=1 makes this a failure")


class SlowEngine:
    """An engine whose `retrieve` takes `seconds`: a call held in flight."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def retrieve(self, params):
        time.sleep(self.seconds)
        return {"hits": [], "indexVersion": "v1", "usage": {}}


@pytest.fixture
def mcp_with(slate_dir):
    """A factory: `mcp_with(idle, cap, engine=None)` starts an McpHttpServer on the test slate."""
    need_mcp()
    from ladr_lab.search import EmbeddedEngine
    from ladr_lab.server import McpHttpServer, SlateResources, build_mcp_server
    from ladr_lab.slate import SlateStore

    started = []

    def make(idle: float, cap: int, engine=None):
        store = SlateStore()
        store.bind("Papers", slate_dir)
        engine = engine or EmbeddedEngine.from_store(store, dense=False, chunks=False)
        mcp = build_mcp_server(engine, SlateResources(store))
        server = McpHttpServer(mcp, limits=HttpLimits(max_connections=64, keepalive_timeout=2),
                               session_idle_timeout=idle, max_sessions=cap).start()
        server.sdk_sessions = lambda: len(mcp._session_manager._server_instances)   # the SDK's own table
        started.append(server)
        return server

    yield make
    for server in started:
        server.shutdown()


def _post(server, body: str, session: str | None = None) -> tuple[int, str | None, bytes]:
    conn = http.client.HTTPConnection(*server.address, timeout=10)
    try:
        conn.request("POST", "/mcp", body, {**HEADERS, **({"mcp-session-id": session} if session else {})})
        resp = conn.getresponse()
        return resp.status, resp.getheader("mcp-session-id"), resp.read()
    finally:
        conn.close()


def _initialize(server) -> str:
    status, session, body = _post(server, INITIALIZE)
    assert status == 200 and b"serverInfo" in body and session
    return session


def _ping(server, session: str) -> int:
    return _post(server, PING, session)[0]


def _until(predicate, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_an_idle_session_is_ended_and_answers_404_and_its_event_stream_ends(mcp_with):
    server = mcp_with(idle=1.0, cap=10)
    kept, idle = _initialize(server), _initialize(server)
    stream = socket.create_connection(server.address, timeout=5)   # idle's event stream: no use, no reprieve
    stream.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                   f"mcp-session-id: {idle}\r\n\r\n".encode())
    head = stream.recv(4096)
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    for _ in range(6):
        time.sleep(0.3)
        assert _ping(server, kept) == 200                     # used: kept
    status, _, body = _post(server, PING, idle)
    assert status == 404 and json.loads(body)["error"]["message"] == "Session not found"
    stream.settimeout(3)
    tail = b""
    while chunk := stream.recv(4096):                          # the stream's answer ended (then keep-alive closed)
        tail += chunk
        if tail.endswith(b"0\r\n\r\n"):
            break
    assert tail.endswith(b"0\r\n\r\n")
    stream.close()
    assert server.sessions == 1 and server.sdk_sessions() == 1
    assert _until(lambda: server.sdk_sessions() == 0 and server.sessions == 0)
    assert _ping(server, kept) == 404 and server.keeper.expired == 2


def test_a_call_in_flight_keeps_its_session_past_the_idle_lifetime(mcp_with):
    server = mcp_with(idle=0.8, cap=10, engine=SlowEngine(2.0))
    session = _initialize(server)
    call = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": {"name": "retrieve", "arguments": {"query": "x"}}})
    status, _, body = _post(server, call, session)
    assert status == 200 and b'"indexVersion"' in body and b"isError\":true" not in body
    assert _ping(server, session) == 200


def test_past_the_cap_the_least_recently_used_session_is_ended(mcp_with):
    server = mcp_with(idle=600, cap=3)
    first, second, third = (_initialize(server) for _ in range(3))
    assert _ping(server, first) == 200                        # first is now more recent than second
    fourth = _initialize(server)
    assert [_ping(server, s) for s in (first, second, third, fourth)] == [200, 404, 200, 200]
    assert server.sessions == 3 and server.sdk_sessions() == 3 and server.keeper.evicted == 1


def test_many_initialize_calls_hold_at_most_the_cap(mcp_with):
    """The issue's 3,000 `initialize` calls (+109 MiB before): sessions held stay at the cap (500 calls, cap 16)."""
    server = mcp_with(idle=600, cap=16)
    peak = 0

    def initialize_many(n):
        nonlocal peak
        for _ in range(n):
            _initialize(server)
            peak = max(peak, server.sdk_sessions())

    threads = [threading.Thread(target=initialize_many, args=(125,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert server.sessions == 16 and server.sdk_sessions() == 16
    assert peak <= 16 + 4                                     # at most one opening per concurrent client over it
    assert server.keeper.evicted == 500 - 16


def test_the_sdk_client_is_told_its_session_ended_and_a_new_one_works(mcp_with):
    """The SDK's own client, after its session idled out: its next call fails naming the session, and a new
    session (a new `initialize`) answers."""
    import anyio
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    server = mcp_with(idle=0.5, cap=10)

    async def main():
        async with httpx2.AsyncClient() as client, streamable_http_client(server.url, http_client=client) as (
                read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert (await session.call_tool("retrieve", {"query": "transformer", "k": 1})).structured_content["hits"]
            await anyio.sleep(1.0)
            with pytest.raises(MCPError, match="Session not found"):
                await session.call_tool("retrieve", {"query": "transformer", "k": 1})
        async with httpx2.AsyncClient() as client, streamable_http_client(server.url, http_client=client) as (
                read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert (await session.call_tool("retrieve", {"query": "transformer", "k": 1})).structured_content["hits"]

    anyio.run(main)
