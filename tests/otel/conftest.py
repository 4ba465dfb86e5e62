"""The otel tests' fixtures: the SDK (skipped when the extra is absent, unless LADR_REQUIRE_OTEL=1), a scripted
run of examples/verify_then_persist.yaml (two rounds with a fetch, a gate, a write), and a tiny OTLP/HTTP
receiver on 127.0.0.1 that decodes what it is sent."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
LADDER = ROOT / "examples" / "verify_then_persist.yaml"
SCRIPT = ROOT / "examples" / "scripts" / "verify_then_persist.yaml"
REQUIRED = os.environ.get("LADR_REQUIRE_OTEL") == "1"

# (span name, parent name, OpenInference kind) of the scripted verify_then_persist run, in both the in-memory
# test and the Phoenix round trip
SPAN_TREE = (
    ("run verify-then-persist", None, "CHAIN"),
    ("step verify_and_store", "run verify-then-persist", "CHAIN"),
    ("node verify_and_store/1", "step verify_and_store", "CHAIN"),
    ("round 1", "node verify_and_store/1", "LLM"),
    ("fetch", "round 1", "RETRIEVER"),
    ("round 2", "node verify_and_store/1", "LLM"),
    ("gate jsonMatches", "node verify_and_store/1", "GUARDRAIL"),
    ("write Memory/trace/verified.md", "node verify_and_store/1", "CHAIN"),
    ("step present", "run verify-then-persist", "CHAIN"),
    ("node present/1", "step present", "CHAIN"),
    ("round 1", "node present/1", "LLM"),
)


def need(module: str, why: str):
    """Import `module`, or skip saying why (fail instead under LADR_REQUIRE_OTEL=1, as CI sets)."""
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as exc:
        if REQUIRED:
            pytest.fail(f"LADR_REQUIRE_OTEL=1 but {module} is missing ({why}): {exc}")
        pytest.skip(f"{module} is not installed ({why})")


@pytest.fixture
def sdk():
    need("opentelemetry.sdk.trace", 'pip install "ladr_lab[otel]"')
    need("opentelemetry.exporter.otlp.proto.http.trace_exporter", 'pip install "ladr_lab[otel]"')


@pytest.fixture
def memory(tmp_path):
    """A copy of the sample Memory slate, so the run's write lands in tmp_path."""
    dst = tmp_path / "memory"
    shutil.copytree(ROOT / "sample_slates" / "memory", dst)
    return dst


def scripted_run(memory: Path, **kwargs):
    """The Run of verify_then_persist with its scripted outputs (tokens as a real model would count them)."""
    from ladr_lab.engine import Run
    from ladr_lab.models import Completion, ScriptedModel

    script = yaml.safe_load(SCRIPT.read_text())
    outputs = {step: [Completion(text=o, tokens_in=100 * (i + 1), tokens_out=10 * (i + 1), cost=0.001 * (i + 1),
                                 latency=0.25, model="scripted-gpt")
                      for i, o in enumerate(items)] for step, items in script.items()}
    return Run(LADDER, model=ScriptedModel(outputs), input="How many calls per node?", slates={"Memory": memory},
               **kwargs)


class Receiver:
    """An OTLP/HTTP traces endpoint on 127.0.0.1: decodes each request into `spans` (protobuf Span objects)."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        spans: list = []
        paths: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                paths.append(self.path)
                for rs in req.resource_spans:
                    for ss in rs.scope_spans:
                        spans.extend(ss.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.spans, self.paths = spans, paths
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def make_run(memory):
    """Make the scripted run (keyword arguments go to Run)."""
    return lambda **kwargs: scripted_run(memory, **kwargs)


@pytest.fixture
def receiver(sdk):
    r = Receiver()
    yield r
    r.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read()


@pytest.fixture
def phoenix(sdk, tmp_path):
    """A Phoenix server of this test's own (its database in tmp_path, no telemetry), stopped after."""
    need("phoenix.server.main", "pip install arize-phoenix")
    exe = shutil.which("phoenix") or ""
    cmd = [exe, "serve"] if exe else [sys.executable, "-m", "phoenix.server.main", "serve"]
    port = _free_port()
    env = dict(os.environ, PHOENIX_PORT=str(port), PHOENIX_GRPC_PORT=str(_free_port()), PHOENIX_HOST="127.0.0.1",
               PHOENIX_WORKING_DIR=str(tmp_path / "phoenix"), PHOENIX_TELEMETRY_ENABLED="false",
               PHOENIX_ALLOW_EXTERNAL_RESOURCES="false")
    log = open(tmp_path / "phoenix.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120        # a liveness bound: Phoenix migrates its database on first start
        while True:
            try:
                _get(url + "/healthz")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = (tmp_path / "phoenix.log").read_text(errors="replace")[-2000:]
                    pytest.fail(f"Phoenix did not start (exit {proc.poll()}):\n{tail}")
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
