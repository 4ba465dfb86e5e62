"""ReplayModel: recorded outputs come back in order per step/node; prompt changes are reported."""
from __future__ import annotations

import json
import pickle

import pytest

from ladr_lab.errors import ModelError
from ladr_lab.models import CallInfo, ReplayDivergence, ReplayModel, ScriptedModel


def msgs(user):
    return [{"role": "system", "content": "Research."}, {"role": "user", "content": user}]


def call(step, node, rnd, user, output):
    return {"type": "llm_call", "step": step, "node": node, "round": rnd, "messages": msgs(user),
            "output": output, "forced_final": False}


@pytest.fixture
def trace(tmp_path):
    events = [
        {"type": "run_start", "ladder": "demo"},
        call("research", 1, 1, "Question:\nslates?\n\nIndex:\n[]", '{"request": {"files": ["a.md"]}}'),
        call("research", 2, 1, "Question:\nslates?\n\nNode:\n2", "node two"),
        {"type": "write", "step": "research", "node": 1, "status": "skipped"},
        call("research", 1, 2, "Question:\nslates?\n\nIndex:\n[]\n\nRetrievedDocuments 1:\n--- a.md [files] ---\nA",
             "Slates are folders [a.md]."),
        call("summarize", 1, 1, "Findings:\nSlates are folders [a.md].", "Summary."),
        {"type": "run_end", "status": "completed", "output": "Summary."},
    ]
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n", encoding="utf-8")
    return path


def test_replays_outputs_by_step_node_and_occurrence(trace):
    m = ReplayModel(trace)
    assert m.recorded_calls == 4
    assert m.complete(msgs("Question:\nslates?\n\nNode:\n2"), call=CallInfo(step="research", node=2, round=1)).text == "node two"
    assert m.complete(msgs("Question:\nslates?\n\nIndex:\n[]"), call=CallInfo(step="research", node=1, round=1)).text.startswith('{"request"')
    second = m.complete(
        msgs("Question:\nslates?\n\nIndex:\n[]\n\nRetrievedDocuments 1:\n--- a.md [files] ---\nA"), call=CallInfo(step="research", node=1, round=2))
    assert second.text == "Slates are folders [a.md]." and second.tokens_out > 0
    assert m.divergence is None and m.divergences == []


def test_stops_at_the_first_divergence_with_a_diff(trace):
    m = ReplayModel(trace)
    with pytest.raises(ReplayDivergence) as info:
        m.complete(msgs("Question:\nmetatags?\n\nIndex:\n[]"), call=CallInfo(step="research", node=1, round=1))
    d = m.divergence
    assert info.value.divergence is d and isinstance(info.value, ModelError)
    assert (d["step"], d["node"], d["round"], d["message_index"]) == ("research", 1, 1, 1)
    assert "-slates?" in d["diff"] and "+metatags?" in d["diff"] and "+metatags?" in str(info.value)


def test_a_divergence_pickles_and_unpickles_with_its_data_and_call(trace):
    m = ReplayModel(trace)
    info = CallInfo(step="research", node=1, round=1)
    with pytest.raises(ReplayDivergence) as caught:
        m.complete(msgs("Question:\nmetatags?\n\nIndex:\n[]"), call=info)
    caught.value.call = info
    back = pickle.loads(pickle.dumps(caught.value))
    assert type(back) is ReplayDivergence and str(back) == str(caught.value) and back.args == caught.value.args
    assert back.divergence == caught.value.divergence and back.call == info


def test_unserved_calls_are_listed_in_recording_order(trace):
    m = ReplayModel(trace)
    assert [(c.step, c.node, c.round) for c in m.unserved][:2] == [("research", 1, 1), ("research", 2, 1)]
    m.complete(msgs("Question:\nslates?\n\nIndex:\n[]"), call=CallInfo(step="research", node=1, round=1))
    d = m.unserved_divergence()
    assert d is not None and d["unserved"] == 3 and (d["step"], d["node"], d["round"]) == ("research", 2, 1)


def test_mixed_replay_goes_live_from_the_divergence_on(trace):
    live = ScriptedModel(["live one", "live two"])
    m = ReplayModel(trace, then=live)
    first = m.complete(msgs("Question:\nslates?\n\nNode:\n2"), call=CallInfo(step="research", node=2, round=1))
    assert (first.text, first.provenance) == ("node two", "recorded")
    changed = m.complete(msgs("Question:\nmetatags?"), call=CallInfo(step="research", node=1, round=1))
    same_as_recorded = m.complete(msgs("Findings:\nSlates are folders [a.md]."), call=CallInfo(step="summarize"))
    assert (changed.text, changed.provenance) == ("live one", "scripted")
    assert same_as_recorded.text == "live two" and m.live_calls == 2   # live from the divergence on
    assert m.divergence["step"] == "research"


def test_recorded_tokens_cost_and_latency_are_kept(tmp_path):
    event = {"type": "llm_call", "step": "s", "node": 1, "round": 1, "iteration": 1, "messages": msgs("x"),
             "output": "o", "forced_final": False, "request_match": None, "model": "openai/gpt-4o-mini",
             "tokens_in": 120, "tokens_out": 30, "cost": 0.0042, "latency": 1.5}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"type": "run_start", "inputs": {"context": "q"}}) + "\n" + json.dumps(event) + "\n")
    m = ReplayModel(path)
    c = m.complete(msgs("x"), call=CallInfo(step="s"))
    assert (c.tokens_in, c.tokens_out, c.cost, c.latency, c.model) == (120, 30, 0.0042, 1.5, "openai/gpt-4o-mini")
    assert m.recorded_inputs == {"context": "q"}


def test_a_call_with_no_recording_is_a_model_error(trace):
    m = ReplayModel(trace)
    m.complete(msgs("Findings:\nSlates are folders [a.md]."), call=CallInfo(step="summarize", node=1))
    with pytest.raises(ReplayDivergence, match=r'no recorded call #2 for step "summarize" node 1 \(1 recorded'):
        m.complete(msgs("again"), call=CallInfo(step="summarize", node=1))
    with pytest.raises(ModelError, match=r'step "plan" node 1 \(0 recorded'):
        m.complete(msgs("x"), call=CallInfo(step="plan", node=1))


def test_bad_trace_files_are_model_errors(tmp_path):
    with pytest.raises(ModelError, match="missing.jsonl"):
        ReplayModel(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "llm_call"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ModelError, match=r"bad.jsonl:2"):
        ReplayModel(bad)


def test_replay_keys_on_iteration_and_callers(ladder, slates, tmp_path):
    from ladr_lab.engine import Run
    from ladr_lab.models import ScriptedModel

    lad = ladder("""
        - id: draft
          fields: [{ name: In, type: text, from: input.context }]
        - id: critique
          if: { equals: GOOD, then: continue, else: { jump: { stepId: draft } } }
        - id: fan
          type: call
          nodes: 2
          call: { ladder: self, maxDepth: 1, input: { stepId: draft, nodeRef: accumulate } }
        """, head="name: t\nexecutionBudget: { maxSteps: 20 }\n")
    outputs = {"draft": ["d1", "d2", "c-d1", "c-d2"], "critique": ["BAD", "GOOD", "GOOD", "GOOD"]}
    out = tmp_path / "t.jsonl"
    first = Run(lad, model=ScriptedModel(outputs), slates=slates, input="x", trace_out=out)
    assert first.run().status == "completed", first.error
    replayed = Run(lad, model=ReplayModel(out), slates=slates, input="x")
    assert replayed.run().status == "completed", replayed.error
    assert [(c.step, c.iteration, c.caller, c.output) for c in replayed.trace.calls()] == \
        [(c.step, c.iteration, c.caller, c.output) for c in first.trace.calls()]
    assert {c.caller for c in first.trace.calls()} == {(), ("fan/1",), ("fan/2",)}
    assert replayed.model.divergence is None
