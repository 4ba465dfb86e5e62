"""The retrieve loop driven by the scripted model: rounds, verdicts, dedup, modes, forced final, stepping."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab.engine import Run
from ladr_lab.models import ScriptedModel
from ladr_lab.round import FORCED_FINAL_LINE
from tests.conftest import FULL_REQUEST

RESEARCH = """
- id: research
  fields:
    - { name: Question, type: text, from: input.context }
    - { name: FileIndex, type: slateRead, from: { slate: Knowledge, folder: docs, metatag: index } }
  retrieve:
    to: { slate: Knowledge, folder: docs }
    as: RetrievedDocuments
    maxRounds: %d
    requestMatch: %s
  systemPrompt: Research.
"""


def research(ladder, rounds=3, schema=None):
    return ladder(RESEARCH % (rounds, json.dumps(schema or FULL_REQUEST)))


def req(**modes) -> str:
    return json.dumps({"request": modes})


def test_step_advances_exactly_one_call_and_pending_shows_the_prompt(ladder, slates):
    model = ScriptedModel({"research": [req(files=["core.md"]), "Done."]})
    run = Run(research(ladder), model=model, input="Q?", slates=slates)
    first = run.pending
    assert len(first) == 1 and "Question:\nQ?" in first[0].messages[1]["content"]
    assert model.calls == []
    ev1 = run.step()
    assert [e.type for e in ev1 if e.type == "llm_call"] == ["llm_call"]
    call = next(e for e in ev1 if e.type == "llm_call")
    assert call.round == 1 and call.request_match == "retrieval"
    assert [f.to_dict() for f in call.fetched] == [{"path": "core.md", "mode": "files", "status": "fetched", "chars": 45}]
    assert len(model.calls) == 1 and not run.done
    assert "RetrievedDocuments 1:\n--- core.md [files] ---\n# Core" in run.pending[0].messages[1]["content"]
    ev2 = run.step()
    assert run.done and run.status == "completed" and run.output == "Done."
    assert ev2[-1].type == "run_end" and ev2[-1].status == "completed"
    assert run.step() == []


def test_forced_final_after_max_rounds(ladder, slates):
    model = ScriptedModel({"research": [req(files=["faq.md"]), req(files=["glossary.md"]), req(files=["x"]), "no"]})
    run = Run(research(ladder, rounds=2), model=model, input="q", slates=slates)
    res = run.run()
    calls = run.trace.calls()
    assert res.llm_calls == 3 and [c.forced_final for c in calls] == [False, False, True]
    assert calls[-1].messages[1]["content"].endswith(FORCED_FINAL_LINE)
    assert calls[-1].request_match == "final" and res.output == req(files=["x"])
    assert "request_match" not in model.calls[2]["hints"] or model.calls[2]["hints"]["request_match"] is None


def test_verdict_reasons_name_the_schema_failure(ladder, slates):
    model = ScriptedModel({"research": ['{"files": ["core.md"]}']})
    run = Run(research(ladder), model=model, input="q", slates=slates)
    run.run()
    call = run.trace.calls()[0]
    assert call.request_match == "final"
    assert "'request' is a required property" in call.reason


def test_bare_form_and_top_k_beside_request(ladder, slates):
    bare = {"type": "object", "required": ["files"], "properties": {"files": {"type": "array"}}}
    run = Run(research(ladder, schema=bare), model=ScriptedModel({"research": ['{"files": ["faq.md"]}', "ok"]}),
              input="q", slates=slates)
    run.run()
    assert run.trace.calls()[0].request == {"files": ["faq.md"]}
    assert "FAQ-7731" in run.trace.calls()[1].messages[1]["content"]


def test_modes_order_dedup_and_statuses(ladder, slates):
    out = json.dumps({"request": {"files": ["core.md", "core.md", "missing.md"], "subfolders": ["notes", "nope"],
                                  "metatag": {"name": "tags", "contains": "MATH"}, "glob": "notes/*.md"}})
    run = Run(research(ladder), model=ScriptedModel({"research": [out, "ok"]}), input="q", slates=slates)
    run.run()
    got = [(f.path, f.mode, f.status) for f in run.trace.calls()[0].fetched]
    assert got == [
        ("core.md", "files", "fetched"), ("core.md", "files", "already_in_context"),
        ("missing.md", "files", "not_found"), ("notes/", "subfolders", "listed"), ("nope/", "subfolders", "not_found"),
        ("notes/algebra.md", "metatag", "fetched"), ("notes/calculus.md", "metatag", "fetched"),
        ("notes/algebra.md", "glob", "already_in_context"), ("notes/calculus.md", "glob", "already_in_context"),
    ]
    prompt = run.trace.calls()[1].messages[1]["content"]
    assert prompt.count("CALCULUS-7731") == 1 and "(not found)" in prompt and "(already in context)" in prompt


def test_metatag_without_contains_and_no_match(ladder, slates):
    outs = [req(metatag={"name": "summary"}), req(metatag={"name": "tags", "contains": "zzz"}), "ok"]
    run = Run(research(ladder), model=ScriptedModel({"research": outs}), input="q", slates=slates)
    run.run()
    first, second = (c.fetched for c in run.trace.calls()[:2])
    assert sorted(f.path for f in first) == ["core.md", "notes/algebra.md"]
    assert [f.to_dict() for f in second] == [{"path": 'tags~"zzz"', "mode": "metatag", "status": "no_match", "chars": 0}]


def test_dedup_is_per_node_execution(ladder, slates):
    lad = ladder(RESEARCH.replace("- id: research", "- id: research\n  nodes: 2") % (2, json.dumps(FULL_REQUEST)))
    model = ScriptedModel({"research": [req(files=["core.md"]), req(files=["core.md"]), "a", "b"]})
    run = Run(lad, model=model, input="q", slates=slates)
    run.run()
    statuses = sorted(c.fetched[0].status for c in run.trace.calls() if c.get("fetched"))
    assert statuses == ["fetched", "fetched"]


def test_similar_to_mode_ranks_the_matching_file_first(ladder, slates):
    out = json.dumps({"request": {"metatag": {"name": "embedding", "similarTo": "derivatives integrals"}}, "topK": 2})
    run = Run(research(ladder), model=ScriptedModel({"research": [out, "ok"]}), input="q", slates=slates)
    run.run()
    fetched = run.trace.calls()[0].fetched
    assert 1 <= len(fetched) <= 2 and fetched[0].path == "notes/calculus.md" and fetched[0].mode == "similarTo"
    assert fetched[0].score > 0


def test_budget_exhausted_is_a_hard_cap(ladder, slates):
    lad = ladder(RESEARCH % (5, json.dumps(FULL_REQUEST)), head="name: t\nexecutionBudget: { maxLlmCalls: 2 }\n")
    model = ScriptedModel({"research": [req(files=["faq.md"])] * 6})
    res = Run(lad, model=model, input="q", slates=slates).run()
    assert res.status == "budget_exhausted" and res.llm_calls == 2 and len(model.calls) == 2
    assert "maxLlmCalls (2)" in res.error


SECRET = "OUTSIDE-SECRET-9931"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(outputs=st.lists(st.one_of(
    st.text(max_size=40),
    st.builds(lambda fs: req(files=fs), st.lists(st.text(max_size=12), max_size=3)),
    st.builds(lambda g: req(glob=g), st.text(max_size=10)),
    st.builds(lambda s: req(subfolders=[s]), st.text(max_size=10)),
    st.sampled_from([req(files=["core.md"]), req(glob="**"), req(files=["../outside.md"]), "final answer"]),
), min_size=1, max_size=12), rounds=st.integers(1, 4), nodes=st.integers(1, 3))
def test_calls_never_exceed_max_rounds_plus_one_and_nothing_leaves_the_folder(ladder, slates, outputs, rounds, nodes):
    (slates["Knowledge"] / "outside.md").write_text(SECRET)
    lad = ladder((RESEARCH % (rounds, json.dumps(FULL_REQUEST))).replace("- id: research",
                                                                         f"- id: research\n  nodes: {nodes}"))
    counter = {"i": 0}

    def answer(messages, **hints):
        counter["i"] += 1
        return outputs[(counter["i"] - 1) % len(outputs)]
    run = Run(lad, model=ScriptedModel(answer), input="q", slates=slates)
    res = run.run()
    assert res.status == "completed"
    for k in range(1, nodes + 1):
        assert len(run.trace.calls("research", k)) <= rounds + 1
    assert res.llm_calls <= nodes * (rounds + 1)
    assert all(SECRET not in m["content"] for c in run.trace.calls() for m in c.messages)


LOOSE_REQUEST = {"type": "object", "required": ["request"]}


@pytest.mark.parametrize("request_, path, status, note", [
    ({"metatag": {"name": "tags", "contains": 5}}, "tags", "no_match", "metatag contains takes a text (got 5)"),
    ({"files": [3]}, "3", "no_match", "files takes path strings (got 3)"),
    ({"files": [True]}, "true", "no_match", "files takes path strings (got true)"),
    ({"metatag": {"name": "tree", "depth": "x"}}, "tree", "no_match",
     'tree takes depth as a whole number >= 1 (got "x")'),
    ({"subfolders": [".."]}, "../", "not_found", None),          # refused, said exactly as a missing path
    ({"subfolders": ["notes/../.."]}, "notes/../../", "not_found", None),
    ({"files": ["../core.md"]}, "../core.md", "not_found", None),
])
def test_a_malformed_entry_tells_the_model_what_was_wrong(ladder, slates, request_, path, status, note):
    out = json.dumps({"request": request_})
    run = Run(research(ladder, schema=LOOSE_REQUEST), model=ScriptedModel({"research": [out, "ok"]}), input="q",
              slates=slates)
    run.run()
    (f,) = run.trace.calls()[0].fetched
    prompt = run.trace.calls()[1].messages[1]["content"]
    if note is None:
        assert (f.path, f.status, f.note) == (path, status, None) and f"--- {path.rstrip('/')}" in prompt
        assert "(not found)" in prompt and '"name": "core.md"' not in prompt.split("RetrievedDocuments 1:")[1]
        return
    assert (f.path, f.status) == (path, status) and f.note.startswith(note)
    assert f"({status.replace('_', ' ')}: {note}" in prompt


@pytest.mark.parametrize("asked", ["", ".", "/", "./"])
def test_the_folder_itself_is_listed_when_a_subfolder_names_it(ladder, slates, asked):
    out = json.dumps({"request": {"subfolders": [asked]}})
    run = Run(research(ladder, schema=LOOSE_REQUEST), model=ScriptedModel({"research": [out, "ok"]}), input="q",
              slates=slates)
    run.run()
    (f,) = run.trace.calls()[0].fetched
    assert (f.path, f.status) == ("/", "listed")
