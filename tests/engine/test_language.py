"""Writes, gates, nodes, jumps and recursion, each asserted through the trace and the slate."""
from __future__ import annotations

import json
import threading
import time

import pytest

from ladr_lab.engine import Run
from ladr_lab.models import ScriptedModel

FACT_MATCH = {"type": "object", "required": ["fact", "confidence"],
              "properties": {"fact": {"type": "string", "minLength": 1}, "confidence": {"type": "number", "minimum": 0.7}}}


def run_with(lad, script, slates, **kw):
    r = Run(lad, model=ScriptedModel(script), slates=slates, input=kw.pop("input", "in"), **kw)
    r.run()
    return r


# ---- slateWrite -----------------------------------------------------------------------------------------
def test_slatewrite_append_field_and_skip_reasons(ladder, slates):
    lad = ladder(f"""
        - id: extract
          nodes: 4
          fields: [{{ name: Input, type: text, from: input.context }}]
          slateWrite:
            to: {{ slate: Memory, folder: facts, file: core.md }}
            field: fact
            on: append
            match: {json.dumps(FACT_MATCH)}
        """)
    r = run_with(lad, {"extract/1": ['{"fact": "A.", "confidence": 0.9}'],
                       "extract/2": ['{"fact": "Low.", "confidence": 0.2}'],
                       "extract/3": ['Here: {"fact": "B.", "confidence": 0.8} done'],
                       "extract/4": ["no json"]}, slates)
    writes = r.trace.writes()
    assert [w.status for w in sorted(writes, key=lambda w: w.node)] == ["written", "skipped", "written", "skipped"]
    by_node = {w.node: w for w in writes}
    assert "minimum" in by_node[2].reason and "confidence" in by_node[2].reason
    assert by_node[4].reason == "no JSON found in the output"
    assert (slates["Memory"] / "facts/core.md").read_text() == "Seed fact.\n\nA.\n\nB."


def test_overwrite_and_merge_by_key_with_items_lacking_the_key(ladder, slates):
    (slates["Memory"] / "registry/entities.md").write_text('[{"id": "a", "n": 1}, {"id": "b", "n": 1}]')
    lad = ladder("""
        - id: upsert
          slateWrite:
            to: { slate: Memory, folder: registry, file: entities.md }
            on: mergeByKey
            key: id
            match: { type: array }
        - id: best
          slateWrite:
            to: { slate: Memory, folder: facts, file: best.md }
            on: overwrite
            match: { type: object, required: [answer] }
            field: answer
        """)
    (slates["Memory"] / "facts/best.md").write_text("old")
    r = run_with(lad, {"upsert": ['[{"id": "b", "n": 2}, {"name": "keyless"}, {"id": "c", "n": 1}]'],
                       "best": ['{"answer": "new"}']}, slates)
    merged = json.loads((slates["Memory"] / "registry/entities.md").read_text())
    assert merged == [{"id": "a", "n": 1}, {"id": "b", "n": 2}, {"id": "c", "n": 1}]
    w = r.trace.writes()[0]
    assert w.skipped_items == [{"name": "keyless"}] and 'without key "id"' in w.reason
    assert (slates["Memory"] / "facts/best.md").read_text() == "new"


def test_merge_by_key_refuses_to_clobber_non_array_content(ladder, slates):
    (slates["Memory"] / "registry/entities.md").write_text("prose, not JSON")
    lad = ladder("""
        - id: upsert
          slateWrite:
            to: { slate: Memory, folder: registry, file: entities.md }
            on: mergeByKey
            key: id
            match: { type: array }
        """)
    r = run_with(lad, {"upsert": ['[{"id": "x"}]']}, slates)
    assert r.trace.writes()[0].status == "skipped"
    assert (slates["Memory"] / "registry/entities.md").read_text() == "prose, not JSON"


def test_metatag_writes_append_wraps_and_text_joins(ladder, slates):
    lad = ladder("""
        - id: tag
          slateWrite:
            to: { slate: Memory, folder: facts, file: core.md, metatag: tags }
            on: append
            match: { type: string }
        - id: tag2
          slateWrite:
            to: { slate: Memory, folder: facts, file: core.md, metatag: tags }
            on: append
            match: { type: array }
        - id: summ
          slateWrite:
            to: { slate: Memory, folder: facts, file: core.md, metatag: summary }
            on: append
            match: { type: string }
        - id: summ2
          slateWrite:
            to: { slate: Memory, folder: facts, file: core.md, metatag: summary }
            on: append
            match: { type: string }
        - id: score
          slateWrite:
            to: { slate: Memory, folder: facts, file: core.md, metatag: score }
            on: overwrite
            match: { type: number }
        """)
    run_with(lad, {"tag": ['"alpha"'], "tag2": ['["beta", "gamma"]'], "summ": ['"one"'], "summ2": ['"two"'],
                   "score": ["0.5"]}, slates)
    tags = json.loads((slates["Memory"] / "facts/.metatags.json").read_text())["core.md"]
    assert tags["tags"] == ["alpha", "beta", "gamma"]
    assert tags["summary"] == "one\n\ntwo"
    assert tags["score"] == 0.5


# ---- gates -----------------------------------------------------------------------------------------------
GATED = """
- id: verify
  nodes: 3
  fields: [{ name: Claim, type: text, from: input.context }, { name: N, type: nodeInfo }]
  if:
    jsonMatches: { type: object, properties: { verdict: { enum: [accept] } }, required: [verdict] }
    then:
      write: { to: { slate: Memory, folder: facts, file: verified.md }, from: output, on: append }
    else: %s
- id: collect
  fields: [{ name: All, type: multi_ingest, from: { stepId: verify, nodeRef: accumulate } }]
"""


def test_gates_prune_and_survivors(ladder, slates):
    r = run_with(ladder(GATED % "prune"), {"verify/1": ['{"verdict": "accept", "n": 1}'],
                                            "verify/2": ['{"verdict": "reject"}'],
                                            "verify/3": ['{"verdict": "accept", "n": 3}'], "collect": ["done"]}, slates)
    assert r.status == "completed"
    gates = sorted(r.trace.of_type("gate"), key=lambda g: g.node)
    assert [(g.branch, g.action) for g in gates] == [("then", "write"), ("else", "prune"), ("then", "write")]
    prompt = r.trace.calls("collect")[0].messages[1]["content"]
    assert '"n": 1' in prompt and '"n": 3' in prompt and "reject" not in prompt
    assert "--- node 1 ---" in prompt and "--- node 3 ---" in prompt and "--- node 2 ---" not in prompt  # labels name the node
    text = (slates["Memory"] / "facts/verified.md").read_text()
    assert '"n": 1' in text and '"n": 3' in text


def test_gate_abort_stops_the_run(ladder, slates):
    r = run_with(ladder(GATED % "abort"), {"verify/1": ['{"verdict": "accept"}'], "verify/2": ["nope"],
                                            "verify/3": ['{"verdict": "accept"}']}, slates)
    assert r.status == "aborted" and "node 2" in r.error and r.trace.calls("collect") == []


def test_zero_survivors_is_a_node_dependency_error(ladder, slates):
    r = run_with(ladder(GATED % "prune"), {"verify": ["x", "y", "z"], "collect": ["never"]}, slates)
    assert r.status == "error" and r.error.startswith("NodeDependencyError: ")
    assert 'reads step "verify", but step "verify" left zero survivors, so the step does not run' in r.error
    assert r.trace.calls("collect") == []


def test_equals_gate_jump_skips_steps(ladder, slates):
    lad = ladder("""
        - id: classify
          if: { equals: RECORD, then: continue, else: { jump: { stepId: fallback } } }
        - id: record
        - id: fallback
        """)
    r = run_with(lad, {"classify": ["  SKIP "], "record": ["no"], "fallback": ["fell back"]}, slates)
    assert r.output == "fell back" and [c.step for c in r.trace.calls()] == ["classify", "fallback"]


def test_jump_back_loops_are_bounded_by_max_steps(ladder, slates):
    lad = ladder("""
        - id: draft
          fields: [{ name: Critique, type: text, value: none }]
        - id: critique
          fields: [{ name: Draft, type: ingest, from: { stepId: draft } }]
          if: { equals: GOOD, then: continue, else: { jump: { stepId: draft } } }
        """, head="name: t\nexecutionBudget: { maxSteps: 5 }\n")
    r = run_with(lad, {"draft": ["d1", "d2", "d3"], "critique": ["bad", "bad", "bad"]}, slates)
    assert r.status == "budget_exhausted" and "maxSteps (5)" in r.error
    assert [c.iteration for c in r.trace.calls()] == [1, 1, 2, 2, 3]
    r2 = run_with(lad, {"draft": ["d1", "d2"], "critique": ["bad", "GOOD"]}, slates)
    assert r2.status == "completed" and r2.output == "GOOD"
    assert "d2" in r2.trace.calls("critique")[1].messages[1]["content"]


def test_nodes_disagreeing_on_jump_is_an_error(ladder, slates):
    lad = ladder("""
        - id: a
          nodes: 2
          if: { equals: X, then: { jump: { stepId: b } }, else: { jump: { stepId: c } } }
        - id: b
        - id: c
        """)
    r = run_with(lad, {"a/1": ["X"], "a/2": ["Y"]}, slates)
    assert r.status == "error" and 'Step "a": nodes disagree on the jump target (b, c)' in r.error


# ---- from: vocabulary --------------------------------------------------------------------------------------
def test_from_vocabulary_in_gated_writes(ladder, slates):
    (slates["Memory"] / "facts/.metatags.json").write_text('{"core.md": {"score": 7}}')
    lad = ladder("""
        - id: gen
          nodes: 3
        - id: w
          nodes: 2
          if:
            equals: GO
            then:
              write:
                - { to: { slate: Memory, folder: facts, file: prev.md }, from: previous, on: overwrite }
                - { to: { slate: Memory, folder: facts, file: out.md }, from: output, on: append }
                - { to: { slate: Memory, folder: facts, file: lit.md }, from: "Literal.", on: overwrite }
                - { to: { slate: Memory, folder: facts, file: step.md }, from: { stepId: gen }, on: overwrite }
                - { to: { slate: Memory, folder: facts, file: cur.md }, from: { stepId: gen, nodeRef: current }, on: append }
                - { to: { slate: Memory, folder: facts, file: acc.md }, from: { stepId: gen, nodeRef: accumulate }, on: overwrite }
                - { to: { slate: Memory, folder: facts, file: n3.md }, from: { stepId: gen, node: 3 }, on: overwrite }
                - { to: { slate: Memory, folder: facts, file: copy.md }, from: { slate: Memory, folder: facts, file: core.md }, on: overwrite }
                - { to: { slate: Memory, folder: facts, file: score.md }, from: { slate: Memory, folder: facts, file: core.md, metatag: score }, on: overwrite }
            else: abort
        """)
    r = run_with(lad, {"gen/1": ["g1"], "gen/2": ["g2"], "gen/3": ["g3"], "w": ["GO", "GO"]}, slates)
    assert r.status == "completed", r.error
    f = slates["Memory"] / "facts"
    assert (f / "prev.md").read_text() == "g1\n\ng2\n\ng3"
    assert (f / "out.md").read_text() == "GO\n\nGO"
    assert (f / "lit.md").read_text() == "Literal."
    assert (f / "step.md").read_text() == (f / "acc.md").read_text() == "g1\n\ng2\n\ng3"
    assert (f / "cur.md").read_text() == "g1\n\ng2"
    assert (f / "n3.md").read_text() == "g3"
    assert (f / "copy.md").read_text() == "Seed fact."
    assert (f / "score.md").read_text() == "7"
    assert all(w.status == "written" for w in r.trace.writes())


def test_runtime_resolution_errors_name_step_and_branch(ladder, slates):
    lad = ladder("""
        - id: first
          if:
            equals: GO
            then: continue
            else:
              write: { to: { slate: Memory, folder: facts, file: x.md }, from: { stepId: later }, on: append }
        - id: later
        """)
    r = run_with(lad, {"first": ["no"], "later": ["x"]}, slates)
    assert r.status == "error"
    assert r.error.startswith('SourceResolutionError: Step "first" (if.else): if.else write reads {stepId: later}, '
                              'which requires step "later" to have executed in the current loop')
    assert r.exception.step_id == "first" and r.result.error_type == "SourceResolutionError"


def test_previous_at_first_step_is_a_runtime_error(ladder, slates):
    lad = ladder("""
        - id: only
          fields: [{ name: P, type: ingest, from: previous }]
        """)
    r = run_with(lad, {"only": ["x"]}, slates)
    assert r.status == "error" and "no step has executed before this one" in r.error
    assert r.error.startswith("SourceResolutionError: ")


# ---- nodes ----------------------------------------------------------------------------------------------------
def test_normal_nodes_run_concurrently(ladder, slates):
    lad = ladder("""
        - id: fan
          nodes: 4
          fields: [{ name: N, type: nodeInfo }]
        """)
    state = {"now": 0, "peak": 0}
    lock = threading.Lock()

    def slow(messages, **hints):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return f"node {hints['node']}"
    r = Run(lad, model=ScriptedModel(slow, max_concurrency=4), slates=slates)
    res = r.run()
    assert state["peak"] > 1
    assert res.output == "node 1\n\nnode 2\n\nnode 3\n\nnode 4"
    prompts = [c.messages[1]["content"] for c in sorted(r.trace.calls(), key=lambda c: c.node)]
    assert '"node": 3' in prompts[2] and '"nodes": 4' in prompts[2]


def test_sequential_nodes_see_the_previous_node(ladder, slates):
    lad = ladder("""
        - id: chain
          type: sequential
          nodes: 3
          fields: [{ name: Before, type: ingest, from: { stepId: chain, nodeRef: previous } }]
        """)
    r = run_with(lad, {"chain": ["one", "two", "three"]}, slates)
    prompts = [c.messages[1]["content"] for c in r.trace.calls()]
    assert prompts[0] == "Before:\n" and prompts[1] == "Before:\none" and prompts[2] == "Before:\ntwo"


def test_group_branches_and_step_refs_after(ladder, slates):
    lad = ladder("""
        - id: g
          type: group
          steps:
            - { id: a, systemPrompt: A }
            - { id: b, systemPrompt: B, nodes: 2 }
        - id: join
          fields:
            - { name: A, type: ingest, from: { stepId: a } }
            - { name: B, type: multi_ingest, from: { stepId: b, nodeRef: accumulate } }
        """)
    r = run_with(lad, {"a": ["from a"], "b": ["b1", "b2"], "join": ["joined"]}, slates)
    p = r.trace.calls("join")[0].messages[1]["content"]
    assert "A:\nfrom a" in p and "b1" in p and "b2" in p and r.output == "joined"


def test_call_recursion_is_bounded_and_shares_the_budget(ladder, slates):
    lad = ladder("""
        - id: work
          fields: [{ name: In, type: text, from: input.context }]
        - id: recurse
          type: call
          call: { ladder: self, input: previous, maxDepth: 2 }
        """)
    seen = []

    def echo(messages, **hints):
        seen.append(hints["depth"])
        return "w" + messages[1]["content"].split("\n", 1)[1]
    r = Run(lad, model=ScriptedModel(echo), slates=slates, input="x")
    res = r.run()
    assert res.status == "completed", res.error
    assert seen == [0, 1, 2] and res.output == "wwwx"
    limits = [e for e in r.trace.of_type("call") if e.status == "depth_limit"]
    assert len(limits) == 1 and limits[0].max_depth == 2


@pytest.mark.parametrize("budget,status", [(2, "budget_exhausted"), (10, "completed")])
def test_children_share_the_call_budget(ladder, slates, budget, status):
    lad = ladder("""
        - id: work
        - id: recurse
          type: call
          call: { ladder: self, input: previous, maxDepth: 3 }
        """, head=f"name: t\nexecutionBudget: {{ maxLlmCalls: {budget} }}\n")
    res = Run(lad, model=ScriptedModel(lambda m, **h: "x"), slates=slates).run()
    assert res.status == status and res.llm_calls == min(budget, 4)


def test_runtime_errors_point_at_the_yaml_line(ladder, slates):
    lad = ladder("""
        - id: only
          fields:
            - { name: P, type: ingest, from: { stepId: later } }
        - id: later
        """)
    r = run_with(lad, {"only": ["x"]}, slates)
    assert r.status == "error" and r.error.endswith("(declared at <ladder>:23:40)")


def test_unsafe_write_targets_are_refused_at_load_time(ladder):
    from ladr_lab.errors import ConfigErrors
    with pytest.raises(ConfigErrors) as info:
        ladder("""
            - id: w
              slateWrite: { to: { slate: Memory, folder: facts, file: ../../escape.md }, match: { type: object } }
              if:
                equals: x
                then: { write: { to: { slate: Memory, folder: facts, file: .hidden }, from: output } }
                else: continue
            """)
    msgs = [str(e) for e in info.value]
    assert any('slateWrite.to.file "../../escape.md" is not allowed' in m for m in msgs)
    assert any('if.then write.to.file ".hidden" is not allowed' in m for m in msgs)


def test_call_a_child_ladder_by_path_shares_slates(ladder, slates, tmp_path):
    child = tmp_path / "child.yaml"
    child.write_text("""name: child
slates:
  - title: Memory
    folders: [{ name: facts, files: [{ name: core.md }] }]
steps:
  - id: read
    fields:
      - { name: In, type: text, from: input.context }
      - { name: Core, type: slateRead, from: { slate: Memory, folder: facts, file: core.md } }
""")
    lad = ladder(f"""
        - id: start
        - id: sub
          type: call
          nodes: 2
          call: {{ ladder: {child}, input: {{ stepId: start }} }}
        """)
    seen = []

    def model(messages, **h):
        seen.append((h["step"], h["depth"], messages[1]["content"]))
        return "child saw it" if h["step"] == "read" else "from start"
    r = Run(lad, model=ScriptedModel(model), slates=slates)
    res = r.run()
    assert res.status == "completed", res.error
    assert res.output == "child saw it\n\nchild saw it"
    child_prompts = [p for s, d, p in seen if s == "read"]
    assert len(child_prompts) == 2 and all(d == 1 for s, d, _ in seen if s == "read")
    assert child_prompts[0] == "In:\nfrom start\n\nCore:\nSeed fact."


def test_a_step_creates_no_more_nodes_than_the_budget_can_call_for(ladder, slates, monkeypatch):
    from ladr_lab.engine import steps
    made = []
    real = steps.run_node
    monkeypatch.setattr(steps, "run_node", lambda x, step, k, res: made.append(k) or real(x, step, k, res))
    lad = ladder("- id: many\n  nodes: 10000\n  systemPrompt: x\n",
                 head="name: t\nexecutionBudget: { maxLlmCalls: 5 }\n")
    res = Run(lad, model=ScriptedModel(lambda m, **h: "x"), slates=slates).run()
    assert res.status == "budget_exhausted" and res.llm_calls == 5
    assert made == [1, 2, 3, 4, 5, 6]          # node 6 finds the budget spent; no node after it is created
