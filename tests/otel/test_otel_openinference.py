"""What an OpenInference backend (Phoenix) needs from the spans, issue 30: each retrieved document's content (capped,
hidden on request), a status on every span, `llm.invocation_parameters` and `llm.finish_reason` as
openinference-instrumentation-litellm sets them for the same call, the application's global tracer provider used when
it set one, and one trace when litellm's own instrumentation is on too (its span a child of the round's)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.otel.conftest import LADDER, ROOT, need

DOC = ROOT / "sample_slates" / "knowledge" / "docs" / "retrieve" / "max-rounds.md"
ANSWER = ('{"answer": "At most maxRounds + 1 calls (retrieve/max-rounds.md).", "confidence": 0.95, '
          '"verified": true}')


def _memory():
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    return InMemorySpanExporter()


def _spans(make_run, **export):
    from ladr_lab.otel import OtelExport
    mem = _memory()
    run = make_run(otel=OtelExport(exporter=mem, **export))
    assert run.run().status == "completed"
    return {(s.name, s.attributes.get("ladr.step")): s for s in mem.get_finished_spans()}


def _fetch(spans):
    return spans[("fetch", "verify_and_store")]


def test_a_fetch_span_carries_each_documents_content_as_the_model_read_it(sdk, make_run, monkeypatch):
    for var in ("LADR_OTEL_DOCUMENT_CHARS", "OPENINFERENCE_HIDE_INPUTS", "LADR_OTEL_NO_CONTENT"):
        monkeypatch.delenv(var, raising=False)
    spans = _spans(make_run)
    fetch = _fetch(spans)
    content = fetch.attributes["retrieval.documents.0.document.content"]
    assert content == DOC.read_text(encoding="utf-8").strip("\n")        # the whole file: under the 4,000 cap
    # it is what round 2's prompt showed, read back from there
    assert content in spans[("round 2", "verify_and_store")].attributes["llm.input_messages.1.message.content"]


def test_a_documents_content_is_capped_and_can_be_left_out(sdk, make_run, monkeypatch):
    size = len(DOC.read_text(encoding="utf-8").strip("\n"))
    capped = _fetch(_spans(make_run, document_chars=300)).attributes["retrieval.documents.0.document.content"]
    assert len(capped) == 300 and capped.endswith(f"…[truncated: {size} chars]")
    assert capped.startswith("# maxRounds and the Forced Final Call")
    monkeypatch.setenv("LADR_OTEL_DOCUMENT_CHARS", "120")
    assert len(_fetch(_spans(make_run)).attributes["retrieval.documents.0.document.content"]) == 120
    monkeypatch.setenv("LADR_OTEL_DOCUMENT_CHARS", "0")
    fetch = _fetch(_spans(make_run))
    assert "retrieval.documents.0.document.content" not in fetch.attributes
    assert fetch.attributes["retrieval.documents.0.document.id"] == "retrieve/max-rounds.md"


def test_hiding_the_inputs_hides_the_documents_and_no_content_hides_every_text(sdk, make_run, monkeypatch):
    monkeypatch.setenv("OPENINFERENCE_HIDE_INPUTS", "true")
    spans = _spans(make_run)
    assert "retrieval.documents.0.document.content" not in _fetch(spans).attributes
    assert "llm.input_messages.0.message.content" not in spans[("round 1", "verify_and_store")].attributes
    assert spans[("round 1", "verify_and_store")].attributes["output.value"].startswith('{"request"')
    monkeypatch.delenv("OPENINFERENCE_HIDE_INPUTS")
    spans = _spans(make_run, content=False)
    texts = ("input.value", "output.value", "llm.input_messages.", "llm.output_messages.", "ladr.request",
             "ladr.verdict.reason", "ladr.verdict.message", "ladr.gate.reason", ".document.content")
    sent = {k for s in spans.values() for k in s.attributes}
    assert not [k for k in sent if any(t in k for t in texts)]
    # what stays: names, paths, statuses, counts, tokens
    assert _fetch(spans).attributes["retrieval.documents.0.document.id"] == "retrieve/max-rounds.md"
    assert spans[("round 2", "verify_and_store")].attributes["llm.token_count.prompt"] == 200
    monkeypatch.setenv("LADR_OTEL_NO_CONTENT", "true")
    assert "output.value" not in _spans(make_run)[("round 1", "present")].attributes


def test_every_span_has_a_status_ok_and_a_failed_call_is_an_error(sdk, memory):
    from opentelemetry.trace import StatusCode

    from ladr_lab.engine import Run
    from ladr_lab.models import ScriptedModel
    from ladr_lab.otel import OtelExport
    mem = _memory()
    Run(LADDER, model="offline", input="How many calls?", slates={"Memory": memory},
        otel=OtelExport(exporter=mem)).run()
    assert {s.status.status_code for s in mem.get_finished_spans()} == {StatusCode.OK}

    def fail(messages, call):
        raise ConnectionError("the server hung up")

    mem = _memory()
    run = Run(LADDER, model=ScriptedModel(fail), input="q", slates={"Memory": memory}, otel=OtelExport(exporter=mem))
    assert run.run().status == "error"
    status = {s.name: s.status for s in mem.get_finished_spans()}
    assert status["round 1"].status_code == StatusCode.ERROR and "the server hung up" in status["round 1"].description
    assert status["run verify-then-persist"].status_code == StatusCode.ERROR
    assert status["step verify_and_store"].status_code == StatusCode.OK


# ---- a live model behind an OpenAI-compatible server on 127.0.0.1 ---------------------------------------------------

class _OpenAI(BaseHTTPRequestHandler):
    """Answers verify_then_persist as a model would: a request, then the verified answer, then the prose."""

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if "LADR handbook" not in system:
            text = "A retrieve step makes at most maxRounds + 1 calls per node (retrieve/max-rounds.md)."
        elif "RetrievedDocuments 1:" in user:
            text = ANSWER
        else:
            text = '{"request": {"files": ["retrieve/max-rounds.md"]}}'
        out = json.dumps({"id": "c1", "object": "chat.completion", "created": 1, "model": "fake",
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": text}}],
                          "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


@pytest.fixture
def openai_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_live_round_says_its_invocation_parameters_and_finish_reason(sdk, memory, openai_server):
    """The direct OpenAI-compatible client (`openai/NAME` with an api_base): the options it sent, its key left out."""
    from ladr_lab.engine import Run
    from ladr_lab.otel import OtelExport
    mem = _memory()
    run = Run(LADDER, model="openai/fake", input="How many calls?", slates={"Memory": memory}, cache=False,
              model_options={"api_base": openai_server, "api_key": "sk-secret", "temperature": 0, "seed": 7},
              otel=OtelExport(exporter=mem))
    assert run.run().status == "completed"
    rounds = [s for s in mem.get_finished_spans() if s.name.startswith("round ")]
    assert len(rounds) == 3
    for r in rounds:
        assert r.attributes["llm.finish_reason"] == "stop"
        params = json.loads(r.attributes["llm.invocation_parameters"])
        assert params == {"model": "openai/fake", "api_base": openai_server, "temperature": 0, "seed": 7}
    assert "sk-secret" not in json.dumps([dict(s.attributes) for s in mem.get_finished_spans()])


def test_with_litellms_own_instrumentation_on_a_run_is_one_trace(sdk, memory, openai_server, monkeypatch):
    """openinference-instrumentation-litellm makes a span per litellm call: each is the child of its round's span, all
    in the run's trace (before: three separate traces), and the round says the same invocation parameters and finish
    reason as litellm's span for the same call."""
    need("openinference.instrumentation.litellm", "pip install openinference-instrumentation-litellm")
    from openinference.instrumentation.litellm import LiteLLMInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from ladr_lab.engine import Run
    from ladr_lab.otel import OtelExport
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    mem = _memory()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(mem))
    instrumentor = LiteLLMInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        run = Run(LADDER, model="litellm:openai/fake", input="How many calls?", slates={"Memory": memory},
                  cache=False, model_options={"api_base": openai_server, "api_key": "sk-x", "temperature": 0},
                  otel=OtelExport(tracer_provider=provider))
        assert run.run().status == "completed", run.result.error
    finally:
        instrumentor.uninstrument()
    spans = mem.get_finished_spans()
    ours = [s for s in spans if s.instrumentation_scope.name == "ladr_lab"]
    theirs = [s for s in spans if s.instrumentation_scope.name != "ladr_lab"]
    assert len(ours) == 11 and len(theirs) == 3
    assert len({s.context.trace_id for s in spans}) == 1
    rounds = {s.context.span_id: s for s in ours if s.name.startswith("round ")}
    for span in theirs:
        assert span.parent is not None and span.parent.span_id in rounds, span.name
        mine = rounds[span.parent.span_id]
        assert span.attributes["llm.finish_reason"] == mine.attributes["llm.finish_reason"] == "stop"
        assert json.loads(span.attributes["llm.invocation_parameters"]) == \
            json.loads(mine.attributes["llm.invocation_parameters"])
    # each round has exactly one litellm child: the call it made
    assert sorted(s.parent.span_id for s in theirs) == sorted(rounds)


_GLOBAL = r"""
import json, os, shutil, sys, tempfile
from pathlib import Path
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ladr_lab.engine import Run
from ladr_lab.otel import export
root = Path(sys.argv[1])
memory = Path(tempfile.mkdtemp()) / "memory"
shutil.copytree(root / "sample_slates" / "memory", memory)
mem = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(mem))
trace.set_tracer_provider(provider)          # as phoenix.otel.register() does
run = Run(root / "examples" / "verify_then_persist.yaml", model="offline", input="How many calls?",
          slates={"Memory": memory}, otel=True, trace_out=memory / "run.jsonl")
status = run.run().status
live = len(mem.get_finished_spans())
exported = export(memory / "run.jsonl")
again = len(mem.get_finished_spans())
own = InMemorySpanExporter()
export(memory / "run.jsonl", exporter=own)          # a place named: the global provider is not used
print(json.dumps({"status": status, "errors": [str(f.exception) for f in run.trace.listener_errors],
                  "live": live, "exported": exported, "again": again, "own": len(own.get_finished_spans()),
                  "after": len(mem.get_finished_spans()),
                  "scopes": sorted({s.instrumentation_scope.name for s in mem.get_finished_spans()})}))
"""


def test_the_tracer_provider_the_application_set_is_used(sdk, tmp_path):
    """A global provider (phoenix.otel.register(), logfire's configure()) receives Run(otel=True)'s and export()'s
    spans; nothing goes to OTLP's default localhost:4318 (here a port nothing listens on, which would fail)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True",
               OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{dead}", OTEL_EXPORTER_OTLP_TIMEOUT="1")
    done = subprocess.run([sys.executable, "-c", _GLOBAL, str(ROOT)], capture_output=True, text=True, env=env,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["status"] == "completed" and got["errors"] == []
    assert got["live"] == got["exported"] > 5 and got["again"] == 2 * got["live"]
    assert got["own"] == got["live"] and got["after"] == got["again"]
    assert got["scopes"] == ["ladr_lab"]


def test_the_cli_sends_no_content_with_otel_no_content(receiver, memory, tmp_path, monkeypatch, capsys):
    from ladr_lab.cli import main
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    code = main(["run", str(LADDER), "--slate", f"Memory={memory}", "--model",
                 f"script:{ROOT / 'examples' / 'scripts' / 'verify_then_persist.yaml'}", "--input", "q?",
                 "--otel-no-content"])
    assert code == 0, capsys.readouterr().err
    keys = {a.key for s in receiver.spans for a in s.attributes}
    assert len(receiver.spans) == 11
    assert not {k for k in keys if k.startswith(("input.", "output.", "llm.input_messages", "llm.output_messages"))}
    assert "retrieval.documents.0.document.id" in keys and "retrieval.documents.0.document.content" not in keys
    path = tmp_path / "run.jsonl"
    assert main(["run", str(LADDER), "--slate", f"Memory={memory}", "--model",
                 f"script:{ROOT / 'examples' / 'scripts' / 'verify_then_persist.yaml'}", "--input", "q?",
                 "--trace-out", str(path)]) == 0
    capsys.readouterr()
    receiver.spans.clear()
    assert main(["trace", "otel", str(path), "--endpoint", receiver.url, "--otel-document-chars", "50"]) == 0
    content = [a.value.string_value for s in receiver.spans for a in s.attributes
               if a.key == "retrieval.documents.0.document.content"]
    assert len(content) == 1 and len(content[0]) == 50


def test_a_trace_without_the_next_prompt_gives_no_content(sdk):
    """A round whose documents reached no prompt (the run stopped before the next call) has ids but no content."""
    from ladr_lab.otel import plan_spans
    from ladr_lab.round.records import Fetched
    from ladr_lab.trace import LlmCall, RunEnd, RunStart
    events = [RunStart(ladder="x", model="m", inputs={}, budget={}),
              LlmCall(step="s", node=1, round=1, iteration=1, messages=[{"role": "user", "content": "Q:\nq"}],
                      output="{}", forced_final=False, request_match="retrieval", model="m", request={"files": ["a"]},
                      fetched=(Fetched(path="a", mode="files", status="fetched", chars=3),)),
              RunEnd(status="budget_exhausted", output="", error=None, llm_calls=1, steps=1)]
    fetch = next(p for p in plan_spans(events, 0.0) if p.name == "fetch")
    assert fetch.attributes["retrieval.documents.0.document.id"] == "a"
    assert not [k for k in fetch.attributes if k.endswith(".document.content")]


def test_contents_follow_the_prompt_through_statuses_and_left_out_entries():
    """Content goes to the entries that delivered text, matched by path in order: `not_found` and `left_out` have
    none, a path the model wrote differently (`asked`) still matches."""
    from ladr_lab.otel import plan_spans
    from ladr_lab.round.prompt import Entry, render_block
    from ladr_lab.round.records import Fetched
    from ladr_lab.trace import LlmCall, RunEnd, RunStart
    entries = [Entry(Fetched(path="a.md", mode="files", status="fetched", chars=5, asked="./a.md"), "alpha"),
               Entry(Fetched(path="b.md", mode="files", status="not_found", chars=0)),
               Entry(Fetched(path="c.md", mode="glob", status="fetched", chars=5), "gamma"),
               Entry(Fetched(path="d.md", mode="glob", status="left_out", chars=0), shown=False)]
    block = render_block("Docs", 1, entries)
    fetched = tuple(e.fetched for e in entries)
    call = dict(step="s", node=1, iteration=1, forced_final=False, model="m")
    events = [RunStart(ladder="x", model="m", inputs={}, budget={}),
              LlmCall(round=1, messages=[{"role": "user", "content": "Q:\nq"}], output="{}",
                      request_match="retrieval", request={"files": ["a.md"]}, fetched=fetched, **call),
              LlmCall(round=2, messages=[{"role": "user", "content": "Q:\nq\n\n" + block}], output="done",
                      request_match="final", **call),
              RunEnd(status="completed", output="done", error=None, llm_calls=2, steps=1)]
    fetch = next(p for p in plan_spans(events, 0.0) if p.name == "fetch")
    got = {k.split(".")[2]: v for k, v in fetch.attributes.items() if k.endswith(".document.content")}
    assert got == {"0": "alpha", "2": "gamma"}


def test_the_options_are_checked_at_once(sdk):
    from ladr_lab.cli import main
    with pytest.raises(SystemExit) as info:
        main(["trace", "otel", "x.jsonl", "--otel-document-chars", "-1"])
    assert info.value.code == 2


def test_importing_the_cli_still_imports_no_phoenix():
    code = "import sys, ladr_lab.cli, ladr_lab.experiments; print([m for m in sys.modules if m.startswith('phoenix')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(ROOT)))
    assert out.stdout.strip() == "[]"


_words = st.text(alphabet="abcdefgh .,", min_size=1, max_size=30).filter(lambda t: t.strip() == t and t.strip())


@settings(max_examples=40, deadline=None)
@given(rounds=st.lists(st.lists(st.tuples(st.sampled_from(["a.md", "b/c.md", "d.md", "e.md"]),
                                          st.lists(_words, min_size=1, max_size=3)), min_size=1, max_size=3),
                       min_size=1, max_size=3),
       with_sections=st.booleans())
def test_each_rounds_documents_get_the_text_their_block_showed(rounds, with_sections):
    """Whatever the rounds fetched, each fetch span's documents carry the bodies their own `<as> <k>:` block showed,
    read from the recorded block alone (sections) or from the whole prompt (a trace without sections)."""
    from ladr_lab.otel import plan_spans
    from ladr_lab.round.prompt import Entry, assemble_blocks, render_block, render_field
    from ladr_lab.round.records import Fetched, SectionSpan
    from ladr_lab.trace import LlmCall, RunEnd, RunStart
    blocks = [render_field("Question", "which file?")]
    spans = [SectionSpan("field", "Question", len(blocks[0]))]
    events: list = [RunStart(ladder="x", model="m", inputs={}, budget={})]
    bodies = []
    for k, fetched in enumerate(rounds, 1):
        entries = [Entry(Fetched(path=p, mode="files", status="fetched", chars=9), "\n".join(lines))
                   for p, lines in fetched]
        events.append(LlmCall(step="s", node=1, round=k, iteration=1, messages=assemble_blocks("sys", blocks),
                              output="{}", forced_final=False, request_match="retrieval", model="m",
                              request={"files": ["a"]}, fetched=tuple(e.fetched for e in entries),
                              sections=tuple(spans) if with_sections else None))
        bodies.append([e.content for e in entries])
        blocks.append(render_block("Docs", k, entries))
        spans.append(SectionSpan("retrieved", f"Docs {k}", len(blocks[-1])))
    events += [LlmCall(step="s", node=1, round=len(rounds) + 1, iteration=1, messages=assemble_blocks("sys", blocks),
                       output="done", forced_final=False, request_match="final", model="m",
                       sections=tuple(spans) if with_sections else None),
               RunEnd(status="completed", output="done", error=None, llm_calls=len(rounds) + 1, steps=1)]
    fetches = [p for p in plan_spans(events, 0.0) if p.name == "fetch"]
    assert len(fetches) == len(rounds)
    for fetch, want in zip(fetches, bodies, strict=True):
        got = [fetch.attributes.get(f"retrieval.documents.{j}.document.content") for j in range(len(want))]
        assert got == want
