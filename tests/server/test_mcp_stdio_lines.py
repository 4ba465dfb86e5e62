"""`ladr-lab serve --mcp --stdio` answers every line: bad ones with a JSON-RPC error, in order, and keeps serving."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

if os.environ.get("LADR_REQUIRE_MCP") != "1":
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'ladr_lab[mcp]'); "
                                      "LADR_REQUIRE_MCP=1 makes this a failure")

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(REPO))
SERVE = [sys.executable, "-m", "ladr_lab", "serve", "--mcp", "--stdio", "--slate",
         f"Knowledge={REPO / 'sample_slates' / 'knowledge'}"]


def _answer(proc) -> dict:
    line = proc.stdout.readline()
    assert line, f"no answer; stderr: {proc.stderr.read().decode('utf-8', 'replace')[-2000:]}"
    return json.loads(line)


def test_every_line_gets_one_answer_in_order_and_the_server_stays_up():
    proc = subprocess.Popen(SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=ENV, cwd=REPO)
    try:
        def send(raw: bytes) -> None:
            proc.stdin.write(raw + b"\n")
            proc.stdin.flush()

        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}).encode())
        assert _answer(proc)["id"] == 1
        send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        lines = [
            (b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"\\ud800"}}', -32700),  # a lone surrogate
            (b'{"jsonrpc":"2.0","id":3,"method":"ping","x":"\xff\xfe"}', -32700),           # raw invalid UTF-8
            (b"[" * 200 + b"]" * 200, -32600),                                               # 200 deep, no request
            (b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"a":' + b"[" * 300 + b"]" * 300 + b"}}", -32700),
            (b"plain garbage", -32700),
            (b'{"no":"request"}', -32600),
            (b'{"jsonrpc":"2.0","id":5,"method":7}', -32600),
        ]
        for raw, _code in lines:
            send(raw)
        send(b'{"jsonrpc":"2.0","id":9,"method":"tools/list"}')
        for raw, code in lines:
            got = _answer(proc)
            assert got.get("error", {}).get("code") == code, (raw[:60], got)
            assert got["id"] == (5 if code == -32600 and b'"id":5' in raw else None)
        listed = _answer(proc)
        assert listed["id"] == 9 and listed["result"]["tools"][0]["name"] == "retrieve"
        assert proc.poll() is None
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 0
