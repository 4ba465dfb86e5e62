"""The public run API around the loop: run_step, field types, the trace tables and files, replay, cost."""
from __future__ import annotations

import json

import pytest

from ladr_lab import LadrError, RunArgumentError, cost_report, load_trace
from ladr_lab.engine import Limits, Run
from ladr_lab.models import ReplayModel, ScriptedModel


def test_run_step_finishes_exactly_one_step(ladder, slates):
    lad = ladder("""
        - id: a
          nodes: 2
        - id: b
        """)
    run = Run(lad, model=ScriptedModel({"a": ["x", "y"], "b": ["z"]}), slates=slates)
    first = run.run_step()
    assert [e.step for e in first if e.type == "llm_call"] == ["a", "a"]
    ends = [e for e in first if e.type == "step_end"]
    assert [e.step for e in ends] == ["a"] and not run.done
    assert run.pending[0].step == "b"      # the run now waits at b's first call
    second = run.run_step()
    assert [e.type for e in second][-1] == "run_end" and run.done and run.output == "z"


def test_knob_json_text_value_and_node_info_fields(ladder, slates):
    lad = ladder("""
        - id: s
          nodes: 2
          fields:
            - { name: Count, type: knob, knob: n }
            - { name: Format, type: json, value: { answer: string, sources: [path] } }
            - { name: Fixed, type: text, value: "Be brief, {{knobs.who}}." }
            - { name: Me, type: nodeInfo }
        """, head="name: t\nknobs: { n: 7, who: Ann }\n")
    run = Run(lad, model=ScriptedModel(lambda m, **h: "ok"), slates=slates)
    run.run()
    prompt = run.trace.calls("s", 2)[0].messages[1]["content"]
    assert prompt == ('Count:\n7\n\nFormat:\n{\n  "answer": "string",\n  "sources": [\n    "path"\n  ]\n}\n\n'
                      'Fixed:\nBe brief, Ann.\n\nMe:\n{\n  "node": 2,\n  "nodes": 2\n}')


def test_trace_tables_and_jsonl_round_trip(ladder, slates, tmp_path):
    lad = ladder("""
        - id: research
          retrieve:
            to: { slate: Knowledge, folder: docs }
            as: Docs
            maxRounds: 2
            requestMatch: { type: object, required: [files] }
        """)
    out = tmp_path / "t.jsonl"
    run = Run(lad, model=ScriptedModel({"research": ['{"files": ["core.md", "nope.md"]}', "done"]}),
              slates=slates, trace_out=out)
    run.run()
    calls = run.trace.to_dataframe("calls")
    assert list(calls["request_match"]) == ["retrieval", "final"] and list(calls["fetched"]) == [2, 0]
    fetches = run.trace.to_dataframe("fetches")
    assert list(fetches["status"]) == ["fetched", "not_found"] and list(fetches["path"]) == ["core.md", "nope.md"]
    back = load_trace(out)
    assert [e.type for e in back] == [e.type for e in run.trace]
    assert back.calls()[0].messages == run.trace.calls()[0].messages


def test_replay_reproduces_a_run_and_stops_at_the_first_divergence(ladder, slates, tmp_path):
    lad = ladder("""
        - id: research
          fields: [{ name: Q, type: text, from: input.context }]
          retrieve:
            to: { slate: Knowledge, folder: docs }
            as: Docs
            maxRounds: 2
            requestMatch: { type: object, required: [files] }
        - id: after
        """)
    out = tmp_path / "t.jsonl"
    original = Run(lad, model=ScriptedModel({"research": ['{"files": ["core.md"]}', "done"], "after": ["end"]}),
                   slates=slates, input="q", trace_out=out)
    original.run()
    same = ReplayModel(out)
    r1 = Run(lad, model=same, slates=slates)          # the recorded inputs are reused
    res = r1.run()
    assert res.status == "completed" and res.output == "end" and same.divergence is None and res.live_calls == 0
    assert [c.provenance for c in r1.trace.calls()] == ["recorded"] * 3
    assert [c.to_dict() for c in r1.trace.calls()] == [
        {**c.to_dict(), "seq": c2.seq, "t": c2.t, "provenance": "recorded", "model": "script"}
        for c, c2 in zip(original.trace.calls(), r1.trace.calls(), strict=True)]
    other = ReplayModel(out)
    r2 = Run(lad, model=other, slates=slates, input="a different question")
    res2 = r2.run()
    assert res2.status == "error" and res2.error_type == "ReplayDivergence" and r2.llm_calls == 0
    assert "-q" in res2.error and "+a different question" in res2.error
    assert res2.divergence["step"] == "research" and res2.divergence["round"] == 1


def test_a_changed_prompt_at_step_two_replays_step_one_and_reports_step_two(ladder, slates, tmp_path):
    lad = ladder("""
        - id: one
        - id: two
          systemPrompt: Be brief.
        """)
    out = tmp_path / "t.jsonl"
    Run(lad, model=ScriptedModel({"one": ["first"], "two": ["second"]}), slates=slates, trace_out=out).run()
    edited = ladder("""
        - id: one
        - id: two
          systemPrompt: Be very brief.
        """)
    stop = Run(edited, model=ReplayModel(out), slates=slates)
    res = stop.run()
    assert res.status == "error" and [c.step for c in stop.trace.calls()] == ["one"]
    assert res.divergence["step"] == "two" and "-Be brief." in res.error and "+Be very brief." in res.error
    mixed = Run(edited, model=ReplayModel(out, then=ScriptedModel({"two": ["live answer"]})), slates=slates)
    res = mixed.run()
    assert res.status == "completed" and res.output == "live answer" and res.live_calls == 1
    assert [c.provenance for c in mixed.trace.calls()] == ["recorded", "scripted"]


def test_a_replay_that_asks_for_fewer_calls_than_recorded_diverges(ladder, slates, tmp_path):
    step = """
        - id: research
          retrieve:
            to: { slate: Knowledge, folder: docs }
            as: Docs
            maxRounds: 3
            requestMatch: %s
        """
    out = tmp_path / "t.jsonl"
    loose = ladder(step % "{ type: object }")      # a final answer in JSON is taken as a request
    Run(loose, model=ScriptedModel({"research": ['{"answer": 42}', '{"answer": 42}', "done"]}), slates=slates,
        input="q", trace_out=out).run()
    fixed = ladder(step % "{ type: object, required: [request] }")
    replay = Run(fixed, model=ReplayModel(out), slates=slates)
    assert replay.result.divergence is None           # not started: nothing to say yet
    res = replay.run()
    assert res.status == "completed" and res.llm_calls == 1
    d = res.divergence
    assert d is not None and d["unserved"] == 2 and (d["step"], d["node"], d["round"]) == ("research", 1, 2)
    assert "2 recorded call(s) were not asked for" in d["diff"]
    same = Run(loose, model=ReplayModel(out), slates=slates).run()
    assert same.divergence is None and same.llm_calls == 3


def test_replay_answers_steps_that_declare_their_own_model(ladder, slates, tmp_path):
    lad = ladder("""
        - id: one
        - id: two
          model: offline
        """)
    out = tmp_path / "t.jsonl"
    original = Run(lad, model=ScriptedModel({"one": ["first"]}), slates=slates, input="q", trace_out=out)
    original.run()
    assert [c.provenance for c in original.trace.calls()] == ["scripted", "offline"]
    replay = Run(lad, model=ReplayModel(out), slates=slates)
    res = replay.run()
    assert res.status == "completed" and res.output == original.output
    assert [c.provenance for c in replay.trace.calls()] == ["recorded", "recorded"] and res.live_calls == 0
    # a mixed replay's live answers are counted whatever model gives them
    edited = ladder("""
        - id: one
          systemPrompt: changed
        - id: two
          model: offline
        """)
    mixed = Run(edited, model=ReplayModel(out, then=ScriptedModel({"one": ["live"], "two": ["live 2"]})),
                slates=slates)
    res = mixed.run()
    assert res.status == "completed" and res.live_calls == 2
    assert [c.provenance for c in mixed.trace.calls()] == ["scripted", "scripted"]


def test_a_fork_answers_the_pending_call_by_hand_and_is_judged_like_a_model(ladder, slates):
    lad = ladder("""
        - id: research
          retrieve:
            to: { slate: Knowledge, folder: docs }
            as: Docs
            maxRounds: 2
            requestMatch: { type: object, required: [files] }
        """)
    run = Run(lad, model=ScriptedModel({"research": ["the model's own final answer"]}), slates=slates)
    events = run.step(output='{"files": ["core.md"]}')
    (call,) = [e for e in events if e.type == "llm_call"]
    assert call.provenance == "edited" and call.request_match == "retrieval" and call.fetched[0].status == "fetched"
    run.run()
    assert run.output == "the model's own final answer" and run.llm_calls == 2
    assert [c.provenance for c in run.trace.calls()] == ["edited", "scripted"]
    # the summary says which calls no model answered
    assert run.result.edited_calls == 1 and "(1 answered by hand)" in run.result.to_text()
    end = run.trace.events[-1]
    assert end.edited_calls == 1 and "2 model call(s), 1 answered by hand" in end.to_text()


def test_a_fork_on_a_finished_run_is_an_error_and_forks_spend_the_budget(ladder, slates):
    import pytest

    from ladr_lab.errors import RunError

    lad = ladder("- id: a\n- id: b\n", head="name: t\nexecutionBudget: { maxLlmCalls: 1 }\n")
    run = Run(lad, model=ScriptedModel({"b": ["never"]}), slates=slates)
    run.step(output="by hand")          # takes the one call maxLlmCalls allows, as the model's call would
    run.run()
    assert run.status == "budget_exhausted" and run.llm_calls == 1 and run.result.edited_calls == 1
    with pytest.raises(RunError, match="the run has ended"):
        run.step(output="late")
    assert run.step() == []             # asking for the next call of a finished run is still no call


def test_result_is_a_property_and_the_old_call_still_works_with_a_warning(ladder, slates):
    import pytest

    run = Run(ladder("- id: a\n"), model=ScriptedModel(["x"]), slates=slates)
    run.run()
    assert run.result.output == "x"
    with pytest.warns(DeprecationWarning):
        assert run.result().output == "x"


def test_prompt_sections_name_every_part_of_a_prompt(ladder, slates):
    lad = ladder("""
        - id: research
          fields: [{ name: Q, type: text, from: input.context }, { name: Extra, type: text, value: "a\\n\\nb" }]
          retrieve:
            to: { slate: Knowledge, folder: docs }
            as: Docs
            maxRounds: 1
            requestMatch: { type: object, required: [files] }
          systemPrompt: Sys.
        """)
    run = Run(lad, model=ScriptedModel({"research": ['{"files": ["core.md"]}', "x"]}), slates=slates, input="q")
    run.run()
    last = run.trace.call("research", 1, 2)
    got = [(s.kind, s.name, s.text[:12]) for s in last.prompt_sections()]
    assert got == [("system", "systemPrompt", "Sys."), ("field", "Q", "Q:\nq"), ("field", "Extra", "Extra:\na\n\nb"),
                   ("retrieved", "Docs 1", "Docs 1:\n--- "), ("forced", "forced final", "Retrieval bu")]
    assert "\n\n".join(s.text for s in last.prompt_sections()[1:]) == last.messages[1]["content"]


def test_cost_report_counts_rounds_nodes_loops_groups_and_calls(ladder):
    lad = ladder("""
        - id: fan
          nodes: 3
          retrieve:
            to: { slate: Knowledge, folder: docs }
            as: Docs
            maxRounds: 2
            requestMatch: { type: object }
        - id: g
          type: group
          steps: [{ id: a }, { id: b, nodes: 2 }]
        - id: check
          if: { equals: OK, then: continue, else: { jump: { stepId: fan } } }
        """, head="name: t\nexecutionBudget: { maxSteps: 7, maxLlmCalls: 20 }\n")
    rep = cost_report(lad)
    assert [(s, c) for s, c, _ in rep.per_step] == [("fan", 9), ("g", 3), ("check", 1)]
    # 7 step executions: fan g check fan g check fan → 9+3+1+9+3+1+9
    assert rep.worst == 35 and rep.loops and rep.exceeds_budget
    assert "warning: the worst case (35) exceeds executionBudget.maxLlmCalls (20)" in rep.format()
    rec = ladder("""
        - id: w
        - id: deeper
          type: call
          call: { ladder: self, maxDepth: 2 }
        """)
    # depth 0: w + deeper(depth 1: w + deeper(depth 2: w + nothing)) = 3
    assert cost_report(rec).worst == 3
    unbounded = ladder("""
        - id: x
          if: { equals: A, then: continue, else: { jump: { stepId: x } } }
        """)
    assert cost_report(unbounded).worst == float("inf") and "unbounded" in cost_report(unbounded).format()


def test_trace_events_have_the_contract_fields(ladder, slates):
    lad = ladder("""
        - id: s
          slateWrite: { to: { slate: Memory, folder: facts, file: core.md }, on: append, match: { type: object } }
          if: { equals: x, then: continue, else: continue }
        """)
    run = Run(lad, model=ScriptedModel({"s": ['{"a": 1}']}), slates=slates)
    run.run()
    call = run.trace.calls()[0].to_dict()
    for key in ("step", "node", "round", "messages", "output", "forced_final", "request_match"):
        assert key in call
    assert call["request_match"] is None and call["forced_final"] is False
    write = run.trace.writes()[0].to_dict()
    assert {k: write[k] for k in ("step", "node", "target", "policy", "status")} == {
        "step": "s", "node": 1, "target": "Memory/facts/core.md", "policy": "append", "status": "written"}
    assert run.trace.of_type("gate")[0].branch == "else"
    end = run.trace.events[-1]
    assert end.type == "run_end" and end.status == "completed" and end.output == '{"a": 1}'
    assert json.loads((slates["Memory"] / "facts/core.md").read_text().split("\n\n")[1]) == {"a": 1}


def test_run_accepts_a_ladder_path_and_a_shared_store():
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    first = Run(root / "examples" / "research.yaml", input="glob mode")
    assert first.run().status == "completed" and first.ladder.name == "research-assistant"
    again = Run(str(root / "examples" / "research.yaml"), input="glob mode", store=first.store)
    assert again.store is first.store and again.run().output == first.output


def test_run_closes_the_models_it_made_and_not_the_ones_it_was_given(ladder, slates, monkeypatch):
    from ladr_lab.models import OfflineModel

    closed = []
    monkeypatch.setattr(OfflineModel, "close", lambda self: closed.append(self))
    lad = ladder("- id: a\n")
    mine = Run(lad, slates=slates, input="q")
    mine.run()
    assert closed == [mine.model]
    given = OfflineModel()
    Run(lad, model=given, slates=slates, input="q").run()
    assert closed == [mine.model]
    # a step's own `model:` is made by the run, so the run closes it (the given run model stays open)
    closed.clear()
    per_step = Run(ladder("- id: a\n- id: b\n  model: offline\n"), model=ScriptedModel({"a": ["x"]}),
                   slates=slates, input="q")
    per_step.run()
    assert len(closed) == 1 and isinstance(closed[0], OfflineModel) and per_step.trace.calls()[1].provenance == "offline"


def test_a_user_model_needs_only_complete(ladder, slates):
    class Echo:
        name = "echo"
        max_concurrency = 1

        def complete(self, messages, call=None):
            return f"{call.step}#{call.node} r{call.round} it{call.iteration}"

    run = Run(ladder("- id: a\n"), model=Echo(), slates=slates)
    assert run.run().output == "a#1 r1 it1"


def test_a_failed_model_call_keeps_its_call_and_cause(ladder, slates):
    def boom(messages, call):
        raise ConnectionError("provider down")

    run = Run(ladder("- id: a\n"), model=ScriptedModel(boom), slates=slates)
    res = run.run()
    assert res.status == "error" and res.error_type == "ModelError" and res.error_step == "a"
    exc = run.exception
    assert isinstance(exc.__cause__, ConnectionError) and exc.call.step == "a" and exc.call.round == 1
    (err,) = run.trace.of_type("llm_error")
    assert "provider down" in err.error and err.messages[0]["role"] == "system"


def test_a_shared_store_keeps_its_bindings_for_a_ladder_without_paths(ladder, slates):
    lad = ladder("- id: a\n  fields: [{ name: I, type: slateRead, from: { slate: Knowledge, folder: docs, metatag: index } }]\n")
    first = Run(lad, model=ScriptedModel(["x"]), slates=slates)
    first.run()
    again = Run(lad, model=ScriptedModel(["y"]), store=first.store)     # no slates=: the store's bindings stand
    assert again.run().status == "completed" and "core.md" in again.trace.calls()[0].messages[1]["content"]


def test_a_model_error_gives_the_failed_call_s_step_and_node_in_the_result(ladder, slates):
    lad = ladder("""
        - id: one
        - id: two
          nodes: 2
        """)

    def model(messages, call):
        if call.step == "two" and call.node == 2:
            raise ValueError("api down")
        return "fine"

    run = Run(lad, model=ScriptedModel(model), slates=slates)
    res = run.run()
    assert res.status == "error" and res.error_type == "ModelError" and "api down" in res.error
    assert run.exception.call.node == 2
    assert (res.error_step, res.error_node) == ("two", 2)


@pytest.mark.parametrize("arg", ["max_fetch_chars", "max_round_chars"])
@pytest.mark.parametrize("value", [-1, 0, "x", 2.5, True, "5" * 500])
def test_a_fetch_bound_that_is_not_a_whole_number_from_one_is_refused_before_the_run(ladder, slates, arg, value):
    with pytest.raises(RunArgumentError) as err:
        Run(ladder("- id: a\n"), model=ScriptedModel(["x"]), slates=slates, **{arg: value})
    assert isinstance(err.value, ValueError) and isinstance(err.value, LadrError)
    assert str(err.value).startswith(f"{arg} must be a whole number >= 1") and len(str(err.value)) < 200


def test_a_fetch_bound_of_none_is_the_default_and_one_is_allowed(ladder, slates):
    run = Run(ladder("- id: a\n"), model=ScriptedModel(["x"]), slates=slates, max_fetch_chars=None, max_round_chars=1)
    assert run.limits == Limits(round_chars=1)
    assert run.run().status == "completed"
