"""The export's limits and timing on synthetic traces: many fetched entries keep the span kind, long values are cut,
the OPENINFERENCE_HIDE_* variables leave content out, rounds of a node do not overlap, a saved trace keeps its
recorded start, a group's steps nest under it, and a model name gives its provider (docs/otel.md)."""
from __future__ import annotations

import json
import os

import pytest

from ladr_lab.trace import Fetched, LlmCall, RunEnd, RunStart, StepEnd, StepStart, Trace

T0 = 1_700_000_000.0


def _memory_exporter():
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    return InMemorySpanExporter()


def _call(step: str, rnd: int, t: float, *, latency: float = 0.0, content: str = "q", fetched=None,
          model: str = "openai/gpt-4o-mini") -> LlmCall:
    return LlmCall(step=step, node=1, round=rnd, iteration=1, t=t, latency=latency, model=model,
                   messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": content}],
                   output='{"answer": "a"}', forced_final=False, request_match="retrieval" if fetched else None,
                   request={"files": [f.path for f in fetched]} if fetched else None, fetched=fetched)


def _trace(*inner, model: str = "offline") -> list:
    return [RunStart(ladder="synthetic", model=model, inputs={"context": "q"}, budget={}, t=0.0),
            *inner, RunEnd(status="completed", output="a", error=None, llm_calls=1, steps=1, t=100.0)]


def _export(events, **kwargs):
    from ladr_lab.otel import export_events
    mem = _memory_exporter()
    export_events(events, T0, exporter=mem, **kwargs)
    return mem.get_finished_spans()


def _within(spans) -> None:
    by_id = {s.context.span_id: s for s in spans}
    for s in spans:
        if s.parent is not None:
            p = by_id[s.parent.span_id]
            assert p.start_time <= s.start_time <= s.end_time <= p.end_time, (s.name, p.name)


def test_a_fetch_of_many_entries_keeps_its_kind_and_caps_its_documents(sdk):
    from ladr_lab.otel.spans import MAX_DOCUMENTS
    fetched = tuple(Fetched(path=f"notes/{i:03}.md", mode="files", status="fetched", chars=10, score=0.5)
                    for i in range(60))
    spans = _export(_trace(StepStart(step="s", step_type="normal", nodes=1, t=1.0),
                           _call("s", 1, 2.0, fetched=fetched),
                           StepEnd(step="s", survivors=1, nodes=1, jump=None, t=3.0)))
    (fetch,) = [s for s in spans if s.name == "fetch"]
    assert fetch.attributes["openinference.span.kind"] == "RETRIEVER"
    assert fetch.dropped_attributes == 0
    assert fetch.attributes["ladr.fetched.count"] == 60
    assert len(fetch.attributes["ladr.fetched.paths"]) == 60
    assert f"retrieval.documents.{MAX_DOCUMENTS - 1}.document.id" in fetch.attributes
    assert f"retrieval.documents.{MAX_DOCUMENTS}.document.id" not in fetch.attributes


def test_the_span_kind_is_added_last_so_a_provider_with_a_small_limit_drops_something_else(sdk):
    from opentelemetry.sdk.trace import SpanLimits, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from ladr_lab.otel import export_events
    mem = _memory_exporter()
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=5))
    provider.add_span_processor(SimpleSpanProcessor(mem))
    fetched = tuple(Fetched(path=f"n{i}.md", mode="files", status="fetched", chars=1) for i in range(60))
    export_events(_trace(_call("s", 1, 2.0, fetched=fetched)), T0, tracer_provider=provider)
    spans = mem.get_finished_spans()
    assert {s.name for s in spans if s.dropped_attributes > 0} == {"run synthetic", "round 1", "fetch"}
    assert {s.attributes["openinference.span.kind"] for s in spans} == {"CHAIN", "LLM", "RETRIEVER"}


def test_the_own_provider_allows_more_attributes_unless_the_variable_says(sdk, monkeypatch):
    fetched = tuple(Fetched(path=f"n{i}.md", mode="files", status="fetched", chars=1) for i in range(60))
    events = _trace(_call("s", 1, 2.0, fetched=fetched))
    assert all(s.dropped_attributes == 0 for s in _export(events))
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "20")
    fetch = next(s for s in _export(events) if s.name == "fetch")
    assert fetch.dropped_attributes > 0 and len(fetch.attributes) == 20
    assert fetch.attributes["openinference.span.kind"] == "RETRIEVER"


def test_a_huge_prompt_is_cut_at_the_length_limit_with_a_marker_and_sent_once(sdk, monkeypatch):
    from ladr_lab.otel.export import MAX_LENGTH
    prompt = "x" * 2_000_000
    events = _trace(_call("s", 1, 2.0, content=prompt))
    spans = _export(events)
    for s in spans:
        for v in s.attributes.values():
            assert all(len(x) <= MAX_LENGTH for x in (v if isinstance(v, tuple) else (v,)) if isinstance(x, str))
    llm = next(s for s in spans if s.name == "round 1")
    content = llm.attributes["llm.input_messages.1.message.content"]
    assert len(content) == MAX_LENGTH and content.endswith("[truncated: 2000000 chars]")
    assert llm.attributes["input.value"] == content            # the last user message, not the list again
    assert llm.attributes["input.mime_type"] == "text/plain"
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "1000")
    llm = next(s for s in _export(events) if s.name == "round 1")
    assert len(llm.attributes["llm.input_messages.1.message.content"]) == 1000
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "500")       # the span variable comes first
    llm = next(s for s in _export(events) if s.name == "round 1")
    assert len(llm.attributes["input.value"]) == 500


CONTENT = ("input.value", "output.value", "llm.input_messages.", "llm.output_messages.")


def _keys(spans) -> set[str]:
    return {k for s in spans for k in s.attributes}


@pytest.mark.parametrize(("env", "gone", "kept"), [
    ({"OPENINFERENCE_HIDE_INPUTS": "true"}, ("input.value", "llm.input_messages."), ("output.value",)),
    ({"OPENINFERENCE_HIDE_OUTPUTS": "TRUE"}, ("output.value", "llm.output_messages.", "ladr.request"),
     ("input.value",)),
    ({"OPENINFERENCE_HIDE_INPUT_MESSAGES": "true"}, ("llm.input_messages.",), ("input.value", "output.value")),
    ({"OPENINFERENCE_HIDE_OUTPUT_MESSAGES": "true"}, ("llm.output_messages.",), ("input.value", "output.value")),
])
def test_the_openinference_hide_variables_leave_the_content_out(sdk, monkeypatch, env, gone, kept):
    fetched = (Fetched(path="a.md", mode="files", status="fetched", chars=1),)
    events = _trace(_call("s", 1, 2.0, content="the secret", fetched=fetched))
    before = _keys(_export(events))
    assert all(any(k.startswith(g) for k in before) for g in gone)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    after = _keys(_export(events))
    assert not any(k.startswith(gone) for k in after)
    assert all(any(k.startswith(g) for k in after) for g in kept)


def test_hide_inputs_and_hide_outputs_parameters_override_the_variables(sdk, monkeypatch):
    from ladr_lab.otel import export
    t = Trace()
    for e in _trace(_call("s", 1, 2.0, content="the secret")):
        t.emit(e)
    mem = _memory_exporter()
    export(t, exporter=mem, hide_inputs=True, hide_outputs=True)
    assert not any(k.startswith(CONTENT) for k in _keys(mem.get_finished_spans()))
    assert not any("the secret" in str(v) for s in mem.get_finished_spans() for v in s.attributes.values())
    monkeypatch.setenv("OPENINFERENCE_HIDE_INPUTS", "true")
    mem = _memory_exporter()
    export(t, exporter=mem, hide_inputs=False)
    assert "llm.input_messages.1.message.content" in _keys(mem.get_finished_spans())


def test_rounds_of_one_node_never_overlap_and_lie_within_their_parents(sdk):
    # round 2's latency (5 s) reaches back past round 1's end (at 3 s): it starts where round 1 ended
    fetched = (Fetched(path="a.md", mode="files", status="fetched", chars=1),)
    spans = _export(_trace(StepStart(step="s", step_type="normal", nodes=1, t=1.0),
                           _call("s", 1, 3.0, latency=1.5, fetched=fetched),
                           _call("s", 2, 4.0, latency=5.0),
                           _call("s", 3, 4.5, latency=5.0),
                           StepEnd(step="s", survivors=1, nodes=1, jump=None, t=5.0)))
    rounds = sorted((s for s in spans if s.name.startswith("round")), key=lambda s: s.start_time)
    assert [r.name for r in rounds] == ["round 1", "round 2", "round 3"]
    assert rounds[0].start_time == int((T0 + 1.5) * 1e9)
    for a, b in zip(rounds, rounds[1:], strict=False):
        assert a.end_time <= b.start_time, (a.name, b.name)
    assert rounds[1].start_time == rounds[0].end_time
    _within(spans)


def test_a_saved_trace_exports_at_its_recorded_start_whatever_its_file_time(sdk, make_run, tmp_path):
    from ladr_lab.otel import export
    from ladr_lab.trace import load_trace
    path = tmp_path / "run.jsonl"
    make_run(trace_out=path).run()
    first = next(iter(load_trace(path)))
    assert isinstance(first, RunStart) and first.started_at is not None
    os.utime(path, (T0, T0))                      # as a copy or a checkout leaves it
    mem = _memory_exporter()
    export(path, exporter=mem)
    root = next(s for s in mem.get_finished_spans() if s.parent is None)
    assert root.start_time == int(first.started_at * 1e9)
    old = tmp_path / "old.jsonl"                  # a trace without started_at: the file's time, as before
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0].pop("started_at")
    old.write_text("".join(json.dumps(d) + "\n" for d in lines))
    os.utime(old, (T0, T0))
    mem = _memory_exporter()
    export(old, exporter=mem)
    last = max(e.t or 0.0 for e in load_trace(old))
    root = next(s for s in mem.get_finished_spans() if s.parent is None)
    assert abs(root.end_time - T0 * 1e9) < 1e3 and root.start_time == int((T0 - last + first.t) * 1e9)


def test_a_group_s_steps_nest_under_the_group_step(sdk):
    spans = _export(_trace(StepStart(step="checks", step_type="group", nodes=1, t=1.0),
                           StepStart(step="style", step_type="normal", nodes=1, t=1.1),
                           StepStart(step="facts", step_type="normal", nodes=1, t=1.1),
                           _call("style", 1, 2.0), _call("facts", 1, 2.5),
                           StepEnd(step="style", survivors=1, nodes=1, jump=None, t=2.1),
                           StepEnd(step="facts", survivors=1, nodes=1, jump=None, t=2.6),
                           StepEnd(step="checks", survivors=2, nodes=2, jump=None, t=3.0),
                           StepStart(step="after", step_type="normal", nodes=1, t=3.1),
                           StepEnd(step="after", survivors=1, nodes=1, jump=None, t=3.2)))
    by_id = {s.context.span_id: s for s in spans}
    parent = {s.name: by_id[s.parent.span_id].name for s in spans if s.parent is not None}
    assert parent["step style"] == parent["step facts"] == "step checks"
    assert parent["step checks"] == parent["step after"] == "run synthetic"
    _within(spans)


@pytest.mark.parametrize(("model", "run_model", "provider"), [
    ("openai/gpt-4o-mini", "offline", "openai"), ("anthropic/claude-3-5-haiku", "x", "anthropic"),
    ("offline", "offline", "ladr_lab"), ("scripted-gpt", "script:/tmp/s.yaml", "ladr_lab"),
    ("scripted-gpt", "replay:run.jsonl", "ladr_lab"), ("litellm:openai/gpt-4o", "x", "openai"),
    ("gpt-4o", "gpt-4o", "openai"), ("mistral-large-latest", "mistral-large-latest", None)])
def test_a_round_names_its_provider_when_the_model_name_gives_one(sdk, model, run_model, provider):
    llm = next(s for s in _export(_trace(_call("s", 1, 2.0, model=model), model=run_model))
               if s.name == "round 1")
    got = {k: llm.attributes.get(k) for k in ("llm.provider", "llm.system", "gen_ai.system")}
    assert got == dict.fromkeys(got, provider)


GROUP_LADDER = """\
name: step-types
model: offline
steps:
  - id: draft
    systemPrompt: Write a draft.
  - id: checks
    type: group
    steps:
      - { id: style, systemPrompt: Check the style. }
      - { id: facts, systemPrompt: Check the facts. }
  - id: polish
    systemPrompt: Polish.
"""


def test_a_run_of_a_ladder_with_a_group_nests_its_steps_under_the_group(sdk, tmp_path):
    from ladr_lab.engine import Run
    from ladr_lab.otel import export
    ladder = tmp_path / "group.yaml"
    ladder.write_text(GROUP_LADDER)
    run = Run(ladder, input="q")
    assert run.run().status == "completed"
    mem = _memory_exporter()
    export(run.trace, exporter=mem)
    spans = mem.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    parent = {s.name: by_id[s.parent.span_id].name for s in spans if s.parent is not None}
    assert parent["step style"] == parent["step facts"] == "step checks"
    assert parent["step draft"] == parent["step checks"] == parent["step polish"] == "run step-types"
    llm = next(s for s in spans if s.name == "round 1" and s.attributes["ladr.step"] == "style")
    assert llm.attributes["llm.provider"] == "ladr_lab"
    _within(spans)
