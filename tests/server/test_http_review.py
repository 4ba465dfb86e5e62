"""A stranger's attacks on the HTTP server: clients that never read, `Expect: 100-continue`, scheme case, 400s."""
from __future__ import annotations

import json
import socket
import time

import pytest

from ladr_lab.search import EmbeddedEngine
from ladr_lab.server import Dispatcher, HttpLimits, HttpServer
from ladr_lab.slate import SlateStore

PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
BIG = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "retrieve",
                  "params": {"query": "transformer attention networks", "k": 5, "includeText": True}})


def _request(body: str, token: str | None = None, **headers: str) -> bytes:
    head = {"Host": "127.0.0.1", "Content-Type": "application/json", "Content-Length": str(len(body.encode()))}
    if token:
        head["Authorization"] = f"Bearer {token}"
    head.update({k.replace("_", "-"): v for k, v in headers.items()})
    return ("POST / HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items()) + "\r\n").encode() + body.encode()


def _connect(server: HttpServer, timeout: float = 5.0) -> socket.socket:
    sock = socket.create_connection(server.address, timeout=timeout)
    _PENDING.pop(sock.fileno(), None)
    return sock


def _answer(sock: socket.socket) -> bytes:
    """One whole answer (headers and a Content-Length body), or what came before the peer closed; bytes past
    it stay for the next call."""
    pending = _PENDING.pop(sock.fileno(), b"")
    data = pending
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    _PENDING[sock.fileno()] = rest[length:]
    return head + b"\r\n\r\n" + rest[:length]


_PENDING: dict[int, bytes] = {}


def _ping_ok(server: HttpServer) -> bytes:
    with _connect(server, timeout=2) as sock:
        sock.sendall(_request(PING, Connection="close"))
        return _answer(sock)


@pytest.fixture(scope="module")
def big_dispatcher(tmp_path_factory) -> Dispatcher:
    """A slate of 20 documents of 40 KB each: `k=20` with text answers about 800 KB."""
    folder = tmp_path_factory.mktemp("big") / "Big" / "docs"
    folder.mkdir(parents=True)
    for i in range(20):
        (folder / f"doc{i}.md").write_text(f"# Doc {i}\n\n" + "common words repeated here " * 1500, encoding="utf-8")
    store = SlateStore()
    store.bind("Big", folder.parent)
    return Dispatcher(EmbeddedEngine.from_store(store, dense=False, chunks=False))


LARGE = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "retrieve",
                    "params": {"query": "common words", "k": 20, "includeText": True}})


def test_a_client_that_never_reads_its_answers_is_disconnected(big_dispatcher):
    """Pipelined large answers never read held its connection for ever: no timer runs while a
    request is in flight, so a handful of such clients kept every newcomer on 503. Past `send_timeout` they
    are dropped, and the server answers again."""
    limits = HttpLimits(max_connections=3, send_timeout=1.0, keepalive_timeout=60, header_timeout=60, body_timeout=60)
    with HttpServer(big_dispatcher, limits=limits) as server:
        hogs = []
        try:
            for _ in range(3):
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.connect(server.address)
                sock.sendall(_request(LARGE) * 12)   # 12 answers of 0.8 MB each, never read
                hogs.append(sock)
            time.sleep(0.5)
            for _ in range(4):   # evicting the hogs (when idle) leaves them closing with their answers unsent
                _ping_ok(server)
            time.sleep(1.5)      # past send_timeout
            answers = [_ping_ok(server) for _ in range(4)]
            assert all(b" 200 " in a for a in answers), answers
        finally:
            for sock in hogs:
                sock.close()


def test_send_timeout_must_be_positive():
    with pytest.raises(ValueError, match="send_timeout"):
        HttpLimits(send_timeout=0)


def test_a_refused_expect_100_continue_closes_so_the_next_request_is_not_eaten_as_its_body(dispatcher):
    """A 401 sent before the body (no `100 Continue`) left the connection open: the client, not asked for its
    body, sends its next request, which the server read as the refused body and never answered."""
    with HttpServer(dispatcher, token="s3cret") as server, _connect(server) as sock:
        nxt = _request(PING, token="s3cret")
        head = _request("", Expect="100-continue", Content_Length=str(len(nxt)))
        sock.sendall(head)
        first = _answer(sock)
        assert b" 401 " in first and b"connection: close" in first.lower()
        try:
            sock.sendall(nxt)
            assert sock.recv(65536) == b""   # closed: the would-be body is never taken for anything
        except (BrokenPipeError, ConnectionResetError):
            pass


def test_a_413_to_expect_100_continue_closes(dispatcher):
    with HttpServer(dispatcher) as server, _connect(server) as sock:
        sock.sendall(_request("", Expect="100-continue", Content_Length=str(2 * dispatcher.max_request_bytes)))
        answer = _answer(sock)
        assert b" 413 " in answer and b"connection: close" in answer.lower()


def test_a_refused_request_without_expect_keeps_the_connection(dispatcher):
    with HttpServer(dispatcher, token="s3cret") as server, _connect(server) as sock:
        inner = _request(PING.replace('"id": 1', '"id": 666'), token="s3cret")
        sock.sendall(_request(inner.decode()) + _request(PING, token="s3cret"))
        first, second = _answer(sock), _answer(sock)
        assert b" 401 " in first and b"connection: close" not in first.lower()
        assert b" 200 " in second and b'"id":1' in second and b"666" not in second


@pytest.mark.parametrize("value,ok", [("Bearer s3cret", True), ("bearer s3cret", True), ("BEARER s3cret", True),
                                      ("Bearer  s3cret", True), ("Bearer s3cret2", False), ("Basic s3cret", False),
                                      ("s3cret", False), ("Bearers3cret", False), ("", False)])
def test_the_auth_scheme_is_case_insensitive(dispatcher, value, ok):
    """RFC 9110 11.1: the scheme is case-insensitive; `bearer TOKEN` got 401."""
    with HttpServer(dispatcher, token="s3cret") as server, _connect(server) as sock:
        sock.sendall(_request(PING, Authorization=value) if value else _request(PING))
        answer = _answer(sock)
        assert (b" 200 " in answer) == ok, answer
        if not ok:
            assert b" 401 " in answer


@pytest.mark.parametrize("raw", [b"HELLO\r\n\r\n", b"POST / HTTP/1.1\r\nContent-Length: x\r\nHost: a\r\n\r\n",
                                 b"POST / HTTP/1.1\r\n\r\n", b"POST / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"])
def test_a_malformed_request_gets_a_json_400(dispatcher, raw):
    """h11's refusals came as `text/plain` "Invalid HTTP request received." with no length."""
    with HttpServer(dispatcher) as server, _connect(server) as sock:
        sock.sendall(raw)
        answer = _answer(sock)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 ") and b"application/json" in head
        assert "malformed" in json.loads(body)["error"]
        assert _ping_ok(server).startswith(b"HTTP/1.1 200 ")


def test_a_head_past_the_size_limit_gets_a_json_400(dispatcher):
    with HttpServer(dispatcher) as server, _connect(server) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: ")
        try:
            for _ in range(40):   # 40 KB of one header line, trickled: past h11's 16 KiB for an incomplete head
                sock.sendall(b"a" * 1000)
                time.sleep(0.005)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            answer = _answer(sock)
        except ConnectionResetError:
            pytest.skip("the reset overtook the answer")
        assert answer.startswith(b"HTTP/1.1 400 ") and b"too large" in answer


def test_serve_takes_send_timeout_and_checks_it_before_indexing(slate_dir):
    import os
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "ladr_lab", "serve", "--slate", f"Papers={slate_dir}", "--http", "127.0.0.1:0",
           "--send-timeout", "0"]
    bad = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True"))
    assert bad.returncode != 0 and "send_timeout" in bad.stderr and "indexed" not in bad.stderr
