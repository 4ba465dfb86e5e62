"""The published schemas in a real editor server: yaml-language-server (npm), driven over its stdio LSP.

A ladder with a misspelt key gets a diagnostic on that key's line, completion inside a step offers the step's
keys, and hover shows the key's sentence; so does an experiment file with the experiment file's schema (an unknown
key, an unknown assertion kind, completion of the top-level keys and of `filters`, hover). Skipped when node or yaml-language-server is absent (the server is
found on PATH, or at $YAML_LANGUAGE_SERVER); LADR_REQUIRE_YAML_LS=1 (set in CI) makes that a failure.
"""
from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

SCHEMA = Path(__file__).resolve().parents[2] / "ladr_lab" / "config" / "ladder.schema.json"
EXPERIMENT_SCHEMA = Path(__file__).resolve().parents[2] / "ladr_lab" / "experiments" / "experiment.schema.json"
TIMEOUT = 30.0


def _server() -> str:
    found = os.environ.get("YAML_LANGUAGE_SERVER") or shutil.which("yaml-language-server")
    if found and shutil.which("node"):
        return found
    why = "node and yaml-language-server are needed (npm install -g yaml-language-server)"
    if os.environ.get("LADR_REQUIRE_YAML_LS") == "1":
        pytest.fail(f"LADR_REQUIRE_YAML_LS=1 but {why}")
    pytest.skip(why)


class Lsp:
    """A minimal LSP client over a server's stdin and stdout (Content-Length framed JSON-RPC)."""

    def __init__(self, cmd: list[str]):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.inbox: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                k, _, v = line.decode("ascii").partition(":")
                headers[k.strip().lower()] = v.strip()
            self.inbox.put(json.loads(out.read(int(headers["content-length"]))))

    def send(self, msg: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict):
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == self.next_id and "method" not in m).get("result")

    def wait(self, want):
        """The next message `want` accepts, answering the server's own requests meanwhile."""
        while True:
            msg = self.inbox.get(timeout=TIMEOUT)
            if "method" in msg and "id" in msg:     # a request from the server: configuration, registrations
                items = msg.get("params", {}).get("items", [])
                result = [SETTINGS["yaml"] if i.get("section") == "yaml" else None for i in items] \
                    if msg["method"] == "workspace/configuration" else None
                self.send({"id": msg["id"], "result": result})
            if want(msg):
                return msg

    def close(self) -> None:
        try:
            self.request("shutdown", {})
            self.notify("exit", {})
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        finally:
            for pipe in (self.proc.stdin, self.proc.stdout):
                if pipe is not None:
                    pipe.close()


SETTINGS = {"yaml": {"validate": True, "hover": True, "completion": True, "schemas": {}}}

LADDER = f"""# yaml-language-server: $schema={SCHEMA.as_uri()}
name: typo
model: offline
steps:
  - id: ask
    systemPrompt: Answer.
    retreive:
      to: {{ slate: Knowledge, folder: docs }}
  - id: second
    sys
"""


@pytest.fixture
def lsp(tmp_path):
    server = _server()
    client = Lsp([server, "--stdio"] if server.endswith("yaml-language-server") or "/" not in server
                 else ["node", server, "--stdio"])
    client.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {
        "workspace": {"configuration": True},
        "textDocument": {"completion": {"completionItem": {"snippetSupport": False}},
                         "hover": {"contentFormat": ["markdown", "plaintext"]},
                         "publishDiagnostics": {}}}})
    client.notify("initialized", {})
    client.notify("workspace/didChangeConfiguration", {"settings": SETTINGS})
    yield client
    client.close()


def test_the_schema_flags_a_typo_completes_keys_and_describes_them(lsp, tmp_path):
    uri = (tmp_path / "typo.yaml").as_uri()
    lsp.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1,
                                                         "text": LADDER}})
    diags = lsp.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                     and m["params"]["uri"] == uri and m["params"]["diagnostics"])["params"]["diagnostics"]
    line = LADDER.splitlines().index("    retreive:")
    typo = [d for d in diags if d["range"]["start"]["line"] == line]
    assert typo and "retreive" in typo[0]["message"], diags

    items = lsp.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                    "position": {"line": len(LADDER.splitlines()) - 1,
                                                                 "character": 7}})
    labels = {i["label"] for i in (items["items"] if isinstance(items, dict) else items)}
    assert {"systemPrompt", "retrieve", "slateWrite", "fields"} <= labels, labels

    line = LADDER.splitlines().index("    systemPrompt: Answer.")
    hover = lsp.request("textDocument/hover", {"textDocument": {"uri": uri},
                                               "position": {"line": line, "character": 6}})
    text = json.dumps(hover["contents"])
    assert "The instructions sent to the model." in text, hover


EXPERIMENT = f"""# yaml-language-server: $schema={EXPERIMENT_SCHEMA.as_uri()}
variants: {{ a: a.yaml }}
inputs: rows.jsonl
treshold: 0.5
assert:
  - contians: dedup
  - {{ contains: dedup, weight: 2 }}
filters:
  sam
passRate: 0.9
"""


def test_the_experiment_schema_flags_typos_completes_keys_and_describes_them(lsp, tmp_path):
    uri = (tmp_path / "experiment.yaml").as_uri()
    lsp.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1,
                                                         "text": EXPERIMENT}})
    diags = lsp.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                     and m["params"]["uri"] == uri and m["params"]["diagnostics"])["params"]["diagnostics"]
    lines = EXPERIMENT.splitlines()
    flagged = {d["range"]["start"]["line"] for d in diags}
    assert lines.index("treshold: 0.5") in flagged, diags
    assert lines.index("  - contians: dedup") in flagged, diags                 # no kind of that name
    assert lines.index("  - { contains: dedup, weight: 2 }") not in flagged, diags   # the short form with a weight

    items = lsp.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                    "position": {"line": lines.index("  sam"), "character": 5}})
    labels = {i["label"] for i in (items["items"] if isinstance(items, dict) else items)}
    assert {"sample", "seed", "rows", "failing"} <= labels, labels

    hover = lsp.request("textDocument/hover", {"textDocument": {"uri": uri},
                                               "position": {"line": lines.index("passRate: 0.9"), "character": 3}})
    assert "exit 0 when at least this share of cells passed" in json.dumps(hover["contents"]), hover
