"""The HTTP server refuses foreign Host/Origin headers and non-JSON bodies, and keeps keep-alive in step."""
from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys

import pytest

from ladr_lab.server import HttpServer, RetrieveClient, RetrieveError
from ladr_lab.server.serving import Admission, host_name

ENV = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")


def serve_cmd(slate_dir, *extra):
    return [sys.executable, "-m", "ladr_lab", "serve", "--slate", f"Papers={slate_dir}", *extra]


PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def server(dispatcher):
    with HttpServer(dispatcher, token="s3cret", allow_hosts=["rpc.example"], allow_origins=["https://app.example"]) as s:
        yield s


def _conn(server):
    host, port = server.address
    return http.client.HTTPConnection(host, port, timeout=10)


def _post(conn, headers, body=PING, path="/"):
    conn.request("POST", path, body=body, headers={"Authorization": "Bearer s3cret", **JSON, **headers})
    resp = conn.getresponse()
    return resp.status, resp.read()


@pytest.mark.parametrize("host,ok", [
    ("127.0.0.1:8765", True), ("localhost", True), ("LOCALHOST:1", True), ("[::1]:8765", True),
    ("rpc.example:80", True), ("evil.example:8765", False), ("127.0.0.1.evil.example", False), ("[::2]", False),
])
def test_host_header(server, host, ok):
    conn = _conn(server)
    status, body = _post(conn, {"Host": host})
    assert (status == 200) == ok
    if not ok:
        assert status == 403 and "Host" in json.loads(body)["error"]
    conn.close()


@pytest.mark.parametrize("origin,ok", [
    (None, True), ("http://localhost:3000", True), ("http://127.0.0.1:8765", True), ("https://[::1]", True),
    ("https://app.example", True), ("https://evil.example", False), ("http://localhost.evil.example", False),
    ("null", False), ("https://app.example:444", False),
])
def test_origin_header(server, origin, ok):
    conn = _conn(server)
    status, body = _post(conn, {"Origin": origin} if origin else {})
    assert status == (200 if ok else 403)
    if ok:
        assert json.loads(body)["result"] == {}
    conn.close()


def test_get_health_is_checked_too(server):
    conn = _conn(server)
    conn.request("GET", "/health", headers={"Host": "evil.example"})
    resp = conn.getresponse()
    assert resp.status == 403 and resp.read()
    conn.request("GET", "/health")
    assert conn.getresponse().read() == b'{"ok":true}'
    conn.close()


@pytest.mark.parametrize("ctype,status", [
    ("application/json", 200), ("application/json; charset=utf-8", 200), ("Application/JSON", 200),
    ("text/plain", 415), ("application/x-www-form-urlencoded", 415), ("multipart/form-data; boundary=x", 415),
    (None, 415),
])
def test_only_json_bodies(server, ctype, status):
    conn = _conn(server)
    conn.putrequest("POST", "/")
    conn.putheader("Authorization", "Bearer s3cret")
    if ctype:
        conn.putheader("Content-Type", ctype)
    conn.putheader("Content-Length", str(len(PING)))
    conn.endheaders(PING)
    resp = conn.getresponse()
    resp.read()
    assert resp.status == status
    assert _post(conn, {})[0] == 200     # the same connection still answers
    conn.close()


@pytest.mark.parametrize("refusal", ["token", "path", "origin", "host", "ctype"])
def test_a_refused_body_does_not_stay_on_the_keep_alive_connection(server, refusal):
    # the refused body is itself a whole HTTP request: it must be dropped, never answered
    inner = (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer s3cret\r\n"
             b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(PING)) + PING
    headers = {"token": {"Authorization": "Bearer wrong"}, "path": {}, "origin": {"Origin": "https://evil.example"},
               "host": {"Host": "evil.example"}, "ctype": {"Content-Type": "text/plain"}}[refusal]
    conn = _conn(server)
    status, _ = _post(conn, headers, body=inner, path="/nowhere" if refusal == "path" else "/")
    assert status == {"token": 401, "path": 404, "ctype": 415}.get(refusal, 403)
    retry = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode()
    status, body = _post(conn, {}, body=retry)           # the retry on the same connection
    assert status == 200 and json.loads(body) == {"jsonrpc": "2.0", "id": 7, "result": {}}
    conn.sock.settimeout(0.3)           # nothing else comes: no answer to the smuggled request, no close
    with pytest.raises(TimeoutError):
        conn.sock.recv(1)
    conn.close()


def test_a_refused_body_of_unknown_or_huge_length_closes_the_connection(dispatcher):
    with HttpServer(dispatcher, token="s3cret", port=0) as s:
        conn = _conn(s)
        conn.request("POST", "/", body=b"x" * 10, headers={**JSON, "Transfer-Encoding": "chunked"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 401 and resp.getheader("Connection") == "close" and resp.will_close
        conn.close()
        conn = _conn(s)   # a length past what is worth reading: answered, then closed unread
        conn.putrequest("POST", "/")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(17 * 1024 * 1024))
        conn.endheaders(b"x" * 100)
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 401 and resp.will_close
        conn.close()
        conn = _conn(s)   # no Content-Length at all: 411, and the connection is closed
        conn.putrequest("POST", "/")
        conn.putheader("Authorization", "Bearer s3cret")
        conn.putheader("Content-Type", "application/json")
        conn.endheaders()
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 411 and resp.getheader("Connection") == "close"
        conn.close()


def test_admission_names():
    assert host_name("[::1]:80") == "::1" and host_name("::1") == "::1" and host_name("LocalHost.:9") == "localhost"
    a = Admission(["*"], ["*"])
    assert a.host_allowed("anything") and a.origin_allowed("null")
    b = Admission()
    assert b.host_allowed(None) and not b.host_allowed("example.com") and not b.origin_allowed("file://")


def _start(cmd, env):
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env, text=True)
    for line in proc.stderr:
        m = re.search(r"listening on (http://\S+)", line)
        if m:
            return proc, m.group(1)
    raise AssertionError("the server did not start")


@pytest.mark.parametrize("how", ["file", "env"])
def test_the_token_can_come_from_a_file_or_the_environment(slate_dir, tmp_path, monkeypatch, how):
    secret = "t0ken-not-in-argv"
    extra, env = [], dict(ENV)
    if how == "file":
        (tmp_path / "token").write_text(secret + "\n")
        extra = ["--token-file", str(tmp_path / "token")]
    else:
        env["LADR_SERVE_TOKEN"] = secret
    proc, url = _start(serve_cmd(slate_dir, "--http", "127.0.0.1:0", "--no-chunks", "--allow-host", "rpc.example",
                                 "--allow-origin", "https://app.example", *extra), env)
    try:
        assert secret not in " ".join(proc.args)
        host, port = url.split("//")[1].rstrip("/").split(":")
        for headers, status in (({"Host": "rpc.example"}, 200), ({"Host": "evil.example"}, 403),
                                ({"Origin": "https://app.example"}, 200), ({"Origin": "https://evil.example"}, 403)):
            conn = http.client.HTTPConnection(host, int(port), timeout=10)
            conn.request("POST", "/", body=PING, headers={**JSON, "Authorization": f"Bearer {secret}", **headers})
            resp = conn.getresponse()
            resp.read()
            assert resp.status == status, headers
            conn.close()
        with RetrieveClient.http(url, token="wrong") as c, pytest.raises(RetrieveError, match="401"):
            c.call("ping")
        with RetrieveClient.http(url, token=secret) as c:
            assert c.call("ping") == {}
            notes = []
            assert c.retrieve("transformer", k=1, on_progress=notes.append)["hits"] and notes  # SSE path
        monkeypatch.setenv("LADR_SERVE_TOKEN", secret)    # the client takes the same variable
        with RetrieveClient.http(url) as c:
            assert c.call("ping") == {}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stderr.close()


def test_token_file_errors(slate_dir, tmp_path):
    run = lambda *a: subprocess.run(serve_cmd(slate_dir, "--http", "127.0.0.1:0", *a), capture_output=True,  # noqa: E731
                                    text=True, env=ENV, timeout=60)
    p = run("--token-file", str(tmp_path / "missing"))
    assert p.returncode != 0 and "--token-file" in p.stderr and "indexed" not in p.stderr
    (tmp_path / "empty").write_text("\n")
    assert "is empty" in run("--token-file", str(tmp_path / "empty")).stderr
    assert "not both" in run("--token", "a", "--token-file", str(tmp_path / "empty")).stderr
