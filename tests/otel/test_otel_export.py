"""A run becomes one span tree: run → step → node → round → fetch, with the gate and the write under their node,
the OpenInference / GenAI attributes on the model call and ladr_lab's own under `ladr.` (docs/otel.md)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ladr_lab.errors import LadrError
from ladr_lab.trace import load_trace
from tests.otel.conftest import SPAN_TREE


def _tree(spans) -> list[tuple[str, str | None, str]]:
    """(name, parent name, OpenInference kind) of every span, in start order."""
    by_id = {s.context.span_id: s for s in spans}
    out = []
    for s in sorted(spans, key=lambda s: (s.start_time, s.context.span_id)):
        parent = by_id[s.parent.span_id].name if s.parent is not None else None
        out.append((s.name, parent, s.attributes["openinference.span.kind"]))
    return out


EXPECTED = set(SPAN_TREE)


def _memory_exporter():
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    return InMemorySpanExporter()


def test_a_live_run_with_otel_exports_its_exact_span_tree_when_it_ends(sdk, make_run):
    from ladr_lab.otel import OtelExport
    mem = _memory_exporter()
    run = make_run(otel=OtelExport(exporter=mem))
    assert mem.get_finished_spans() == ()          # nothing is sent before the run ends
    assert run.run().status == "completed"
    spans = mem.get_finished_spans()
    assert run.otel.spans == len(spans) == 11
    assert set(_tree(spans)) == EXPECTED and len(_tree(spans)) == len(EXPECTED)
    assert len({s.context.trace_id for s in spans}) == 1
    named = {(s.name, s.attributes.get("ladr.step")): s for s in spans}

    r1, r2 = named[("round 1", "verify_and_store")], named[("round 2", "verify_and_store")]
    assert r1.attributes["llm.model_name"] == r1.attributes["gen_ai.request.model"] == "scripted-gpt"
    assert (r1.attributes["llm.token_count.prompt"], r1.attributes["llm.token_count.completion"],
            r1.attributes["llm.token_count.total"]) == (100, 10, 110)
    assert (r2.attributes["gen_ai.usage.input_tokens"], r2.attributes["gen_ai.usage.output_tokens"]) == (200, 20)
    assert r2.attributes["llm.cost.total"] == r2.attributes["ladr.cost"] == pytest.approx(0.002)
    assert r1.attributes["gen_ai.operation.name"] == "chat"
    assert r1.attributes["llm.input_messages.0.message.role"] == "system"
    assert "How many calls per node?" in r1.attributes["llm.input_messages.1.message.content"]
    assert r1.attributes["llm.output_messages.0.message.content"] == '{"request": {"files": ["retrieve/max-rounds.md"]}}'
    assert r1.attributes["output.value"] == r1.attributes["llm.output_messages.0.message.content"]
    assert (r1.attributes["ladr.verdict"], r1.attributes["ladr.verdict.matched"]) == ("retrieval", True)
    assert r1.attributes["ladr.fetched.paths"] == ("retrieve/max-rounds.md",)
    # round 2's final answer fails requestMatch on its `required` keyword: the deciding keyword and reason are kept
    assert (r2.attributes["ladr.verdict"], r2.attributes["ladr.verdict.matched"]) == ("final", False)
    assert r2.attributes["ladr.verdict.keyword"] == "required"
    assert "does not match requestMatch" in r2.attributes["ladr.verdict.reason"]
    # a round began its latency before its event, but never before its step: the script's 0.25 s is cut there
    step = named[("step verify_and_store", "verify_and_store")]
    assert r1.start_time == step.start_time and r1.end_time - r1.start_time < 0.25e9

    fetch = named[("fetch", "verify_and_store")]
    assert r2.start_time >= fetch.end_time == r1.end_time      # round 2 does not begin before round 1 ended
    assert r1.attributes["input.value"] == r1.attributes["llm.input_messages.1.message.content"]
    assert fetch.attributes["retrieval.documents.0.document.id"] == "retrieve/max-rounds.md"
    assert fetch.attributes["ladr.fetched.statuses"] == ("fetched",)
    assert json.loads(fetch.attributes["input.value"]) == {"files": ["retrieve/max-rounds.md"]}
    gate = named[("gate jsonMatches", "verify_and_store")]
    assert (gate.attributes["ladr.gate.matched"], gate.attributes["ladr.gate.action"]) == (True, "continue")
    write = named[("write Memory/trace/verified.md", "verify_and_store")]
    assert (write.attributes["ladr.write.status"], write.attributes["ladr.write.policy"]) == ("written", "append")
    root = named[("run verify-then-persist", None)]
    assert root.attributes["ladr.run.status"] == "completed"
    assert root.attributes["session.id"] == root.attributes["ladr.run.id"] == run.run_id
    for s in spans:                           # every child lies within its parent
        if s.parent is not None:
            p = next(x for x in spans if x.context.span_id == s.parent.span_id)
            assert p.start_time <= s.start_time <= s.end_time <= p.end_time, (s.name, p.name)


def test_a_saved_trace_exports_the_same_tree_with_its_recorded_timing(sdk, make_run, tmp_path):
    from ladr_lab.otel import export
    path = tmp_path / "run.jsonl"
    make_run(trace_out=path).run()
    mem = _memory_exporter()
    assert export(path, exporter=mem, start=1_700_000_000.0) == 11
    spans = mem.get_finished_spans()
    assert set(_tree(spans)) == EXPECTED
    events = list(load_trace(path))
    root = next(s for s in spans if s.parent is None)
    assert root.start_time == int((1_700_000_000.0 + events[0].t) * 1e9)
    assert root.end_time == int((1_700_000_000.0 + events[-1].t) * 1e9)


def test_a_failed_run_marks_its_root_span_as_an_error(sdk, make_run, tmp_path):
    from opentelemetry.trace import StatusCode

    from ladr_lab.otel import export
    from ladr_lab.trace import RunEnd, RunStart, Trace
    t = Trace()
    t.emit(RunStart(ladder="x", model="m", inputs={}, budget={}))
    t.emit(RunEnd(status="error", output="", error="boom", llm_calls=0, steps=0))
    mem = _memory_exporter()
    assert export(t, exporter=mem) == 1
    (root,) = mem.get_finished_spans()
    assert (root.status.status_code, root.status.description) == (StatusCode.ERROR, "boom")


def test_export_sends_otlp_http_to_the_endpoint_the_standard_variable_names(receiver, make_run, tmp_path,
                                                                            monkeypatch):
    from ladr_lab.otel import export
    path = tmp_path / "run.jsonl"
    make_run(trace_out=path).run()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    assert export(path) == 11
    assert receiver.paths == ["/v1/traces"]
    names = sorted(s.name for s in receiver.spans)
    assert names == sorted(name for name, _, _ in EXPECTED)
    llm = [s for s in receiver.spans if s.name == "round 2"][0]
    attrs = {a.key: a.value for a in llm.attributes}
    assert attrs["llm.token_count.prompt"].int_value == 200


def test_an_unreachable_endpoint_is_an_otel_export_error_naming_it(sdk, make_run, tmp_path, monkeypatch):
    import socket

    from ladr_lab.otel import OtelExportError, export
    with socket.socket() as s:          # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    path = tmp_path / "run.jsonl"
    make_run(trace_out=path).run()
    with pytest.raises(OtelExportError, match=f"127.0.0.1:{port}/v1/traces"):
        export(path, endpoint=f"http://127.0.0.1:{port}")


def test_without_the_extra_otel_is_a_ladr_error_naming_the_install(sdk, make_run, monkeypatch):
    from ladr_lab.otel import OtelExportError, export
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)     # as if not installed
    with pytest.raises(OtelExportError, match=r'pip install "ladr_lab\[otel\]"') as info:
        make_run(otel=True)
    assert isinstance(info.value, LadrError)
    with pytest.raises(OtelExportError, match=r'pip install "ladr_lab\[otel\]"'):
        export([])


def test_importing_ladr_lab_imports_no_opentelemetry():
    code = ("import sys, ladr_lab, ladr_lab.otel, ladr_lab.engine, ladr_lab.cli; "
            "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'openinference', 'phoenix'))))")
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]"


def test_the_cli_exports_a_run_with_otel_and_a_saved_trace(receiver, memory, tmp_path, monkeypatch, capsys):
    from ladr_lab.cli import main
    root = Path(__file__).resolve().parents[2]
    path = tmp_path / "run.jsonl"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    code = main(["run", str(root / "examples" / "verify_then_persist.yaml"), "--slate", f"Memory={memory}",
                 "--model", f"script:{root / 'examples' / 'scripts' / 'verify_then_persist.yaml'}", "--input", "q?",
                 "--trace-out", str(path), "--otel"])
    assert code == 0
    assert "OpenTelemetry: 11 span(s) exported" in capsys.readouterr().out
    assert len(receiver.spans) == 11
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    assert main(["trace", "otel", str(path), "--endpoint", receiver.url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"spans": 11}
    assert len(receiver.spans) == 22 and len({s.trace_id for s in receiver.spans}) == 2


def test_the_cli_says_when_the_export_fails(sdk, tmp_path, capsys):
    import socket

    from ladr_lab.cli import main
    from ladr_lab.trace import RunEnd, RunStart, Trace
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "run.jsonl"
    t = Trace(path)
    t.emit(RunStart(ladder="x", model="m", inputs={}, budget={}))
    t.emit(RunEnd(status="completed", output="", error=None, llm_calls=0, steps=0))
    t.close()
    os.environ.setdefault("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    assert main(["trace", "otel", str(path), "--endpoint", f"http://127.0.0.1:{port}"]) == 1
    assert f"could not export 1 of 1 span(s) to http://127.0.0.1:{port}/v1/traces" in capsys.readouterr().err


def test_the_export_benchmark_runs_at_a_tiny_size(sdk, tmp_path):
    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "otel_export.json"
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, str(root / "benchmarks" / "otel_export.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["rounds"] == 100 and data["spans"] == 311 and data["results"]["jsonl"]["median_ms"] > 0
