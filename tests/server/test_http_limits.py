"""Both HTTP faces are bounded: idle and slow connections cannot starve them, overload gets a fast 503.

The floods run against the JSON-RPC face (`HttpServer`) and the MCP face (`McpHttpServer`, streamable HTTP at
/mcp) alike: one `face` fixture, parametrised, and one probe per face (a JSON-RPC `ping`; an MCP `initialize`, a
new client's first request). The MCP cases need the SDK (skipped without it unless LADR_REQUIRE_MCP=1).
"""
from __future__ import annotations

import http.client
import inspect
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

import pytest

from ladr_lab.server import HttpServer, RetrieveClient
from ladr_lab.server.limits import HttpLimits

ENV = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
JSON = {"Content-Type": "application/json"}
FAST = HttpLimits(max_connections=16, header_timeout=0.5, body_timeout=0.5, keepalive_timeout=0.5)
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "flood-test", "version": "0"}}}).encode()
FACES = ["rpc", "mcp"]


def need_mcp() -> None:
    if os.environ.get("LADR_REQUIRE_MCP") != "1":
        pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'ladr_lab[mcp]'); "
                                          "LADR_REQUIRE_MCP=1 makes this a failure")


def mcp_server(slate_dir, **kw):
    """An `McpHttpServer` over the test slate (not started)."""
    need_mcp()
    from ladr_lab.search import EmbeddedEngine
    from ladr_lab.server import McpHttpServer, SlateResources, build_mcp_server
    from ladr_lab.slate import SlateStore

    store = SlateStore()
    store.bind("Papers", slate_dir)
    engine = EmbeddedEngine.from_store(store, dense=False, chunks=False)
    return McpHttpServer(build_mcp_server(engine, SlateResources(store)), **kw)


class Face:
    """One HTTP face under test: its server, its path, and its probe (what a new client sends first)."""

    def __init__(self, kind: str, server) -> None:
        self.kind = kind
        self.server = server
        self.path = "/mcp" if kind == "mcp" else "/"

    def request(self, conn: http.client.HTTPConnection) -> tuple[int, bytes, http.client.HTTPResponse]:
        """The probe on `conn`: an MCP `initialize`, or a JSON-RPC `ping`."""
        if self.kind == "mcp":
            conn.request("POST", "/mcp", body=INITIALIZE, headers=MCP_HEADERS)
        else:
            conn.request("POST", "/", body=PING, headers=JSON)
        resp = conn.getresponse()
        return resp.status, resp.read(), resp

    def answered(self, status: int, body: bytes) -> bool:
        """Whether the probe got its real answer (not a 503, not an error)."""
        if self.kind == "mcp":
            return status == 200 and b'"serverInfo"' in body
        return status == 200 and json.loads(body) == {"jsonrpc": "2.0", "id": 1, "result": {}}

    def probe(self, timeout: float = 5.0) -> tuple[int, bytes, float]:
        """A new client's probe on a new connection: (status, body, seconds)."""
        host, port = self.server.address
        t0 = time.monotonic()
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            status, body, _ = self.request(conn)
        finally:
            conn.close()
        return status, body, time.monotonic() - t0

    def half_head(self) -> bytes:
        return f"POST {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl".encode()


def serve(kind: str, dispatcher, slate_dir, limits: HttpLimits, **kw):
    """The `kind` face's server, bounded by `limits` (not started)."""
    if kind == "mcp":
        return mcp_server(slate_dir, limits=limits, **kw)
    return HttpServer(dispatcher, limits=limits, **kw)


@pytest.fixture(params=FACES)
def face_with(request, dispatcher, slate_dir):
    """A factory: `face_with(limits)` starts the parametrised face with those limits; stopped after the test."""
    started = []

    def make(limits: HttpLimits, **kw) -> Face:
        server = serve(request.param, dispatcher, slate_dir, limits, **kw).start()
        started.append(server)
        return Face(request.param, server)

    yield make
    for server in started:
        server.shutdown()


@pytest.fixture
def face(face_with):
    return face_with(FAST)


def _rest() -> tuple[int, int]:
    return threading.active_count(), len(os.listdir("/proc/self/fd"))


def _back_to(rest: tuple[int, int], within: float = 5.0) -> tuple[int, int]:
    deadline = time.monotonic() + within
    while True:
        now = _rest()
        if (now[0] <= rest[0] and now[1] <= rest[1]) or time.monotonic() > deadline:
            return now
        time.sleep(0.05)


def _ping(server, timeout: float = 5.0) -> tuple[int, dict, float, http.client.HTTPResponse]:
    host, port = server.address
    t0 = time.monotonic()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", "/", body=PING, headers=JSON)
        resp = conn.getresponse()
        body = resp.read()
    finally:
        conn.close()
    return resp.status, json.loads(body), time.monotonic() - t0, resp


def _raw(server, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(server.address, timeout=5)
    if data:
        sock.sendall(data)
    return sock


def _read_until_closed(sock: socket.socket, within: float) -> tuple[bytes, bool]:
    """What the server sent before closing, and whether it closed within `within` seconds."""
    sock.settimeout(within)
    got = b""
    try:
        while chunk := sock.recv(4096):
            got += chunk
    except TimeoutError:
        return got, False
    except ConnectionResetError:
        pass
    return got, True


@pytest.fixture
def fast(dispatcher):
    with HttpServer(dispatcher, limits=FAST) as s:
        yield s


def test_an_idle_flood_past_the_limit_does_not_lock_out_a_client_and_resources_come_back(face):
    fast = face.server
    assert face.answered(*face.probe()[:2])           # warm: the worker pool has its first thread
    rest = _rest()
    flood = [_raw(fast, face.half_head() if i % 2 else b"") for i in range(40)]   # nothing sent, or half a head
    try:
        time.sleep(0.2)
        assert threading.active_count() <= rest[0]    # no thread per connection
        status, body, took = face.probe()
        assert face.answered(status, body), (status, body)
        assert took < 1.0
        closed = 0
        for sock in flood:                            # the server closed those past the limit at once
            sock.settimeout(0.05)
            try:
                closed += sock.recv(1) == b""
            except ConnectionResetError:              # closed before its half head was read
                closed += 1
            except TimeoutError:
                pass
        assert closed >= 40 - FAST.max_connections
    finally:
        for sock in flood:
            sock.close()
    now = _back_to(rest)
    assert now[0] <= rest[0] and now[1] <= rest[1], (rest, now)


def test_at_the_limit_the_connection_idle_longest_is_closed_first(face_with):
    face = face_with(HttpLimits(max_connections=2, header_timeout=5, keepalive_timeout=5))
    s = face.server
    oldest = _raw(s)                                  # nothing sent, opened first
    time.sleep(0.1)
    host, port = s.address
    kept = http.client.HTTPConnection(host, port, timeout=5)   # idle keep-alive, more recent
    assert face.answered(*face.request(kept)[:2])
    try:
        assert face.answered(*face.probe()[:2])       # a third connection: the oldest makes room
        got, closed = _read_until_closed(oldest, 2)
        assert closed and got == b""
        assert face.answered(*face.request(kept)[:2])   # the keep-alive one still answers
    finally:
        oldest.close()
        kept.close()


def test_idle_connections_are_closed_after_the_header_timeout(face):
    idle = _raw(face.server)
    got, closed = _read_until_closed(idle, 3)
    assert closed and got == b""                      # nothing was asked: closed without an answer
    idle.close()


def test_half_sent_headers_get_408_and_are_closed(face):
    slow = _raw(face.server, face.half_head())
    t0 = time.monotonic()
    got, closed = _read_until_closed(slow, 3)
    assert closed and got.startswith(b"HTTP/1.1 408") and time.monotonic() - t0 < 2.5
    slow.close()


def test_a_stalled_body_gets_408_and_is_closed(face):
    slow = _raw(face.server, f"POST {face.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             "Accept: application/json, text/event-stream\r\n"
                             "Content-Length: 100\r\n\r\n{\"jsonrpc\"".encode())
    got, closed = _read_until_closed(slow, 3)
    assert closed and got.startswith(b"HTTP/1.1 408")
    slow.close()


def test_a_stalled_refused_body_is_dropped_then_closed(fast):
    # refused at once (415); the body it promised never comes: the connection still ends
    slow = _raw(fast, b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                      b"Content-Length: 100\r\n\r\nabc")
    got, closed = _read_until_closed(slow, 3)
    assert closed and got.startswith(b"HTTP/1.1 415")
    slow.close()


def test_an_idle_keep_alive_connection_is_closed_after_its_timeout(face):
    host, port = face.server.address
    conn = http.client.HTTPConnection(host, port, timeout=5)
    status, body, resp = face.request(conn)
    assert face.answered(status, body) and not resp.will_close
    got, closed = _read_until_closed(conn.sock, 3)
    assert closed and got == b""
    conn.close()


class BlockingDispatcher:
    """A dispatcher whose `block` requests wait for `release`: requests held in flight."""

    max_request_bytes = 1 << 20

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)

    def handle_text(self, text, notify=None):
        msg = json.loads(text)
        if msg["method"] == "block":
            self.entered.release()
            self.release.wait(10)
        return json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {}})


def test_when_every_connection_is_busy_a_new_client_gets_a_fast_503_then_service_resumes():
    d = BlockingDispatcher()
    with HttpServer(d, limits=HttpLimits(max_connections=3, header_timeout=2, body_timeout=2, keepalive_timeout=2),
                    workers=3) as s:
        host, port = s.address
        results = []

        def held():
            conn = http.client.HTTPConnection(host, port, timeout=10)
            conn.request("POST", "/", body=json.dumps({"jsonrpc": "2.0", "id": 9, "method": "block"}), headers=JSON)
            resp = conn.getresponse()
            results.append((resp.status, resp.read()))
            conn.close()

        holders = [threading.Thread(target=held) for _ in range(3)]
        try:
            for t in holders:
                t.start()
            for _ in holders:
                assert d.entered.acquire(timeout=5)
            status, answer, took, resp = _ping(s)
            assert status == 503 and resp.getheader("Retry-After") == "1" and "busy" in answer["error"]
            assert took < 1.0
        finally:
            d.release.set()
            for t in holders:
                t.join(10)
        assert [r[0] for r in results] == [200, 200, 200]
        assert _ping(s)[0] == 200


def test_limits_are_checked():
    for bad in ({"max_connections": 0}, {"header_timeout": 0}, {"body_timeout": -1}, {"keepalive_timeout": 0}):
        with pytest.raises(ValueError):
            HttpLimits(**bad)


@pytest.mark.parametrize("kind", FACES)
def test_shutdown_is_prompt_and_returns_threads_and_descriptors(kind, dispatcher, slate_dir):
    if kind == "mcp":
        need_mcp()
        import mcp.server.streamable_http  # noqa: F401 - the SDK's first import opens nothing later
    rest = _rest()
    t0 = time.monotonic()
    s = serve(kind, dispatcher, slate_dir, FAST).start()
    assert Face(kind, s).answered(*Face(kind, s).probe()[:2])
    idle = _raw(s)                                    # an open connection does not hold the shutdown up
    s.shutdown()
    assert time.monotonic() - t0 < 4
    idle.close()
    now = _back_to(rest)
    assert now[0] <= rest[0] and now[1] <= rest[1], (rest, now)


def test_uvicorn_is_the_pinned_range_and_its_h11_protocol_has_what_limits_uses():
    import h11
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

    major, minor = (int(x) for x in uvicorn.__version__.split(".")[:2])
    assert (0, 30) <= (major, minor) < (0, 55), "server/limits.py was verified on uvicorn 0.30-0.54"
    for name in ("connection_made", "data_received", "on_response_complete", "connection_lost",
                 "timeout_keep_alive_handler", "handle_events", "send_400_response", "pause_writing",
                 "resume_writing"):
        assert callable(getattr(H11Protocol, name, None)), name
    init = inspect.getsource(RequestResponseCycle.__init__)
    assert "self.response_started" in init and "self.response_complete" in init
    init = inspect.getsource(H11Protocol.__init__)
    assert "self.conn = h11.Connection" in init and "self.scope" in init   # a GET's method tells a stream
    assert "self.scope = {" in inspect.getsource(H11Protocol.handle_events)
    assert hasattr(h11.Connection, "trailing_data")


def test_import_ladr_lab_server_does_not_load_uvicorn():
    code = "import sys, ladr_lab.server; print([m for m in ('uvicorn', 'h11') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, check=True)
    assert out.stdout.strip() == "[]"


def test_serve_http_takes_the_limits(slate_dir):
    cmd = [sys.executable, "-m", "ladr_lab", "serve", "--slate", f"Papers={slate_dir}", "--http", "127.0.0.1:0",
           "--no-chunks", "--max-connections", "4", "--header-timeout", "0.5", "--body-timeout", "1",
           "--keepalive-timeout", "1", "--workers", "2"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=ENV, text=True)
    try:
        url = None
        for line in proc.stderr:
            if m := re.search(r"listening on (http://\S+)", line):
                url = m.group(1)
                break
        assert url
        host, port = url.split("//")[1].rstrip("/").split(":")
        flood = [socket.create_connection((host, int(port)), timeout=5) for _ in range(12)]
        t0 = time.monotonic()
        with RetrieveClient.http(url) as c:
            assert c.call("ping") == {}
            notes = []
            assert c.retrieve("transformer", k=1, on_progress=notes.append)["hits"] and notes   # SSE
        assert time.monotonic() - t0 < 5
        got, closed = _read_until_closed(flood[-1], 3)   # the header timeout closes the idle ones
        assert closed and got == b""
        for sock in flood:
            sock.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stderr.close()
    bad = subprocess.run(cmd[:-10] + ["--max-connections", "0"], capture_output=True, text=True, env=ENV, timeout=60)
    assert bad.returncode != 0 and "max_connections" in bad.stderr and "indexed" not in bad.stderr


def test_at_the_limit_the_oldest_slow_body_is_evicted_with_408_but_a_fresh_one_is_not(dispatcher):
    from ladr_lab.server.limits import SLOW_BODY

    head = (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n{\"jsonrpc\"")
    with HttpServer(dispatcher, limits=HttpLimits(max_connections=3, header_timeout=10, body_timeout=10,
                                              keepalive_timeout=10)) as s:
        first = _raw(s, head)
        time.sleep(0.2)
        rest = [_raw(s, head) for _ in range(2)]
        time.sleep(0.2)               # their heads read: they are bodies now, not connections still waiting
        status, _answer, _took, _resp = _ping(s)
        assert status == 503          # every body is still fresh: nobody is evicted yet
        time.sleep(SLOW_BODY + 0.2)
        status, answer, took, _resp = _ping(s)
        assert status == 200 and answer["result"] == {} and took < 1.0
        got, closed = _read_until_closed(first, 2)   # the one arriving longest made room
        assert closed and got.startswith(b"HTTP/1.1 408")
        for sock in rest:
            sock.settimeout(0.2)
            with pytest.raises(TimeoutError):   # the others are still being read
                sock.recv(1)
        for sock in (first, *rest):
            sock.close()


def test_the_client_waits_out_a_503_for_its_retry_after_then_is_answered_or_says_busy():
    from ladr_lab.server.client import MAX_RETRY_AFTER, RetrieveError, _retry_after

    assert [_retry_after(v) for v in (None, "2", "0", "-3", "soon", "600", "nan")] == [1.0, 2.0, 0.0, 0.0, 1.0,
                                                                                    MAX_RETRY_AFTER, 1.0]
    d = BlockingDispatcher()
    with HttpServer(d, limits=HttpLimits(max_connections=1, header_timeout=5, body_timeout=5, keepalive_timeout=5),
                    workers=2) as s:
        host, port = s.address
        held = http.client.HTTPConnection(host, port, timeout=10)   # kept open: its request holds the one place
        holder = threading.Thread(target=lambda: held.request(
            "POST", "/", body=json.dumps({"jsonrpc": "2.0", "id": 9, "method": "block"}), headers=JSON))
        holder.start()
        assert d.entered.acquire(timeout=5)
        impatient, patient = RetrieveClient.http(s.url, busy_retries=0), RetrieveClient.http(s.url)
        with pytest.raises(RetrieveError, match="HTTP 503"):
            impatient.call("ping")
        impatient.close()
        threading.Timer(0.3, d.release.set).start()   # the held request ends while the client waits
        t0 = time.monotonic()
        assert patient.call("ping") == {}
        patient.close()
        assert 0.9 <= time.monotonic() - t0 < 4   # it waited the server's Retry-After (1 s), then was answered
        holder.join(5)
        assert held.getresponse().status == 200
        held.close()


def _open(server, n: int, data: bytes = b"") -> list[socket.socket]:
    """`n` connections that each sent `data` (nothing, or half a request head), left open."""
    flood = []
    for _ in range(n):
        sock = socket.create_connection(server.address, timeout=5)
        if data:
            try:
                sock.sendall(data)
            except OSError:   # already closed to make room for a later one: it still counts as sent
                pass
        flood.append(sock)
    return flood


def _probe_while(face: Face, flood: list[socket.socket]) -> None:
    """With the flood still open, new clients are answered, each within a second. The first one may wait
    longer: it queues for `accept` behind the flood's own last connections (on a loaded 2-core machine
    asyncio takes in ~1,000 a second), which is how long the flood takes to arrive, not a lock-out."""
    try:
        status, body, _ = face.probe(timeout=15)
        assert face.answered(status, body), (status, body[:200])
        for _ in range(3):
            status, body, took = face.probe(timeout=5)
            assert face.answered(status, body), (status, body[:200])
            assert took < 1.0, took
    finally:
        for sock in flood:
            sock.close()


def test_the_issue_29_floods_lock_no_client_out(face_with):
    """300 idle connections, then 2,000 half-sent request heads (issue 29, item 1; limits lowered to keep it fast):
    a new client is answered within a second during each. The MCP face answered 503 (idle) and timed out
    (half heads: every descriptor held) before it ran on the JSON-RPC face's bounded protocol."""
    face = face_with(HttpLimits(max_connections=32, keepalive_timeout=1))   # the default 10 s header timeout:
    assert face.answered(*face.probe()[:2])                                  # eviction admits the client, not it
    _probe_while(face, _open(face.server, 300))
    _probe_while(face, _open(face.server, 2000, face.half_head()))


def test_the_issue_29_floods_at_the_default_limits(dispatcher, slate_dir):
    """The issue's numbers against the MCP face at the default limits (256 connections, 10 s header timeout): 300
    idle connections, then 2,100 half-sent heads (the JSON-RPC face meets the same in benchmarks/server_http.py)."""
    face = Face("mcp", mcp_server(slate_dir).start())
    assert face.answered(*face.probe()[:2])
    try:
        _probe_while(face, _open(face.server, 300))
        _probe_while(face, _open(face.server, 2100, face.half_head()))
    finally:
        face.server.shutdown()


def _mcp_session(face: Face) -> str:
    host, port = face.server.address
    conn = http.client.HTTPConnection(host, port, timeout=5)
    status, body, resp = face.request(conn)
    conn.close()
    assert face.answered(status, body)
    return resp.getheader("mcp-session-id")


def _open_stream(face: Face, session: str) -> socket.socket:
    """The session's standalone event stream (`GET /mcp`), its answer's head read."""
    sock = socket.create_connection(face.server.address, timeout=5)
    sock.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                 f"mcp-session-id: {session}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head, head
    return sock


def test_open_event_streams_past_the_connection_limit_lock_no_client_out(dispatcher, slate_dir):
    """Each MCP session may hold a `GET /mcp` event stream open for as long as it lasts: a stream is a listener,
    so at the connection limit the oldest one is closed to admit a new client (never a 503)."""
    s = mcp_server(slate_dir, limits=HttpLimits(max_connections=8, header_timeout=2, keepalive_timeout=1)).start()
    face = Face("mcp", s)
    try:
        streams = [_open_stream(face, _mcp_session(face)) for _ in range(12)]
        try:
            time.sleep(0.2)
            status, body, took = face.probe()
            assert face.answered(status, body) and took < 1.0
            got, closed = _read_until_closed(streams[0], 2)   # the oldest stream made room
            assert closed
            streams[-1].settimeout(0.2)
            with pytest.raises(TimeoutError):                 # the newest is still open
                streams[-1].recv(1)
        finally:
            for sock in streams:
                sock.close()
    finally:
        s.shutdown()


def test_serve_mcp_http_takes_the_same_limits(slate_dir):
    """`serve --mcp --http` takes the JSON-RPC face's limits (they were refused with --mcp) and the session ones;
    the session options are refused without --mcp."""
    need_mcp()
    cmd = [sys.executable, "-m", "ladr_lab", "serve", "--mcp", "--slate", f"Papers={slate_dir}", "--http",
           "127.0.0.1:0", "--no-chunks", "--max-connections", "4", "--header-timeout", "0.5", "--body-timeout", "1",
           "--keepalive-timeout", "1", "--send-timeout", "5", "--workers", "2", "--session-idle-timeout", "60",
           "--max-sessions", "8"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=ENV, text=True)
    try:
        url = None
        for line in proc.stderr:
            if m := re.search(r"MCP listening on (http://\S+)", line):
                url = m.group(1)
                break
        assert url
        host, port = url.split("//")[1].split("/")[0].split(":")
        flood = [socket.create_connection((host, int(port)), timeout=5) for _ in range(12)]
        server = type("Bound", (), {"address": (host, int(port))})()
        status, body, took = Face("mcp", server).probe()
        assert Face("mcp", server).answered(status, body) and took < 1.0
        got, closed = _read_until_closed(flood[-1], 3)   # the header timeout closes the idle ones
        assert closed and got == b""
        for sock in flood:
            sock.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stderr.close()
    for extra, words in ((["--max-sessions", "0"], "max_sessions must be at least 1"),
                         (["--session-idle-timeout", "0"], "session_idle_timeout must be a positive")):
        bad = subprocess.run(cmd[:5] + cmd[5:9] + extra, capture_output=True, text=True, env=ENV, timeout=60)
        assert bad.returncode != 0 and words in bad.stderr and "indexed" not in bad.stderr, bad.stderr
    rpc = [c for c in cmd[:9] if c != "--mcp"] + ["--max-sessions", "8"]
    bad = subprocess.run(rpc, capture_output=True, text=True, env=ENV, timeout=60)
    assert bad.returncode != 0 and "--max-sessions apply to --mcp only" in bad.stderr, bad.stderr
