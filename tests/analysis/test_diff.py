"""Two runs compared, and two rounds' prompts compared section by section."""
from __future__ import annotations

import json

import pytest

from ladr_lab import FORCED_FINAL_LINE, Run, ScriptedModel, diff_prompts, diff_runs, round_diff
from ladr_lab.models import Completion
from tests.conftest import FULL_REQUEST

STEPS = """
- id: research
  fields:
    - { name: Question, type: text, from: input.context }
    - { name: FileIndex, type: slateRead, from: { slate: Knowledge, folder: docs, metatag: index } }
  retrieve:
    to: { slate: Knowledge, folder: docs }
    as: RetrievedDocuments
    maxRounds: 2
    requestMatch: REQUEST_MATCH
  systemPrompt: Research.
- id: check
  fields: [{ name: Draft, type: text, from: previous }]
  if: { jsonMatches: { type: object }, then: continue, else: prune }
  slateWrite:
    to: { slate: Memory, folder: facts, file: core.md }
    match: { type: object, required: [fact] }
""".replace("REQUEST_MATCH", json.dumps(FULL_REQUEST))


def req(*files: str) -> str:
    return json.dumps({"request": {"files": list(files)}})


def run_with(ladder, slates, research, check=('{"fact": "F"}',), question="q", cost=0.0):
    def answer(messages, call):
        seq = research if call.step == "research" else list(check)
        text = seq[sum(1 for c in calls if c == call.step)]
        calls.append(call.step)
        return Completion(text, 10, 5, cost=cost)
    calls: list[str] = []
    run = Run(ladder(STEPS), model=ScriptedModel(answer), input=question, slates=slates)
    run.run()
    return run.trace


def test_identical_runs_have_no_divergence(ladder, slates):
    a = run_with(ladder, slates, [req("core.md"), "done"])
    b = run_with(ladder, slates, [req("core.md"), "done"], cost=0.5)
    d = diff_runs(a, b)
    assert d.identical and d.first_divergence is None and all(r["same"] for r in d.rows)
    assert [r["kind"] for r in d.rows] == ["call", "call", "call", "gate", "write"]
    assert d.totals["cost"] == {"a": 0.0, "b": 1.5, "delta": 1.5}   # cost differs, content does not
    assert d.per_step["research"]["calls_a"] == d.per_step["research"]["calls_b"] == 2


def test_the_first_divergence_names_the_round_and_the_prompt_section(ladder, slates):
    a = run_with(ladder, slates, [req("core.md"), "done"], question="first question")
    b = run_with(ladder, slates, [req("core.md"), "done"], question="second question")
    fd = diff_runs(a, b).first_divergence
    assert (fd["kind"], fd["step"], fd["node"], fd["round"]) == ("call", "research", 1, 1)
    assert fd["changes"] == ["prompt (Question)"]
    assert "-first question" in fd["detail"] and "+second question" in fd["detail"]


def test_deltas_of_calls_verdicts_fetched_files_and_writes(ladder, slates):
    a = run_with(ladder, slates, [req("core.md"), "done"], check=["OK"])
    b = run_with(ladder, slates, [req("faq.md"), req("glossary.md"), "done"])
    d = diff_runs(a, b)
    fd = d.first_divergence
    assert (fd["round"], fd["changes"]) == (1, ["output", "fetched"])
    assert d.totals["llm_calls"] == {"a": 3, "b": 4, "delta": 1}
    assert d.fetched == {"only_a": ["research: core.md"], "only_b": ["research: faq.md", "research: glossary.md"]}
    assert d.writes == {"only_a": [], "only_b": ["Memory/facts/core.md (append)"]}
    only_b = [r for r in d.rows if not r["in_a"]]
    assert [(r["kind"], r["round"]) for r in only_b] == [("call", 3), ("write", None)]
    gate = next(r for r in d.rows if r["kind"] == "gate")
    assert gate["changes"] == ["verdict", "action"] and (gate["verdict_a"], gate["verdict_b"]) == (
        "else:prune", "then:continue")
    assert d.totals["verdicts_changed"] >= 2
    assert "first divergence: call research · node 1 · round 1" in d.format()
    assert set(d.to_dataframe().columns) >= {"kind", "step", "node", "round", "same", "changes"}
    json.dumps(d.to_dict())


def test_round_diff_shows_what_a_round_added(ladder, slates):
    t = run_with(ladder, slates, [req("core.md"), req("faq.md"), "final"])
    diffs = round_diff(t, "research", 1, 2)
    assert [(d.kind, d.name, d.status) for d in diffs] == [
        ("system", "systemPrompt", "same"), ("field", "Question", "same"), ("field", "FileIndex", "same"),
        ("retrieved", "RetrievedDocuments 1", "added")]
    forced = {(d.name, d.status) for d in round_diff(t, "research", 1, 3)}
    assert ("forced final", "added") in forced and ("RetrievedDocuments 2", "added") in forced
    text = next(s.text for s in t.call("research", 1, 3).prompt_sections() if s.kind == "forced")
    assert text == FORCED_FINAL_LINE
    with pytest.raises(ValueError):
        round_diff(t, "research", 1, 1)


def test_diff_prompts_gives_a_unified_diff_of_a_changed_section(ladder, slates):
    a = run_with(ladder, slates, [req("core.md"), "done"], question="alpha")
    b = run_with(ladder, slates, [req("core.md"), "done"], question="beta")
    (changed,) = [d for d in diff_prompts(a.call("research"), b.call("research")) if d.status != "same"]
    assert changed.name == "Question" and "-alpha" in changed.diff and "+beta" in changed.diff
