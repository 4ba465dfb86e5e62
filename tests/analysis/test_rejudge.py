"""Re-judging recorded runs against edited ladders and schemas: which rounds flip, why, and what follows."""
from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab import ConfigError, Run, ScriptedModel, rejudge, rejudge_rows
from tests.conftest import FULL_REQUEST

STEP = """
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
%s
"""
GATE = """  if:
    jsonMatches: { type: object, required: [ok] }
    then: continue
    else: prune
"""


def req(*files: str) -> str:
    return json.dumps({"request": {"files": list(files)}})


def build(ladder, schema=None, rounds=3, extra=GATE):
    return ladder(STEP % (rounds, json.dumps(schema or FULL_REQUEST), extra))


def with_max_items(n: int) -> dict:
    s = copy.deepcopy(FULL_REQUEST)
    s["properties"]["request"]["properties"]["files"]["maxItems"] = n
    return s


def recorded(ladder, slates, outputs, **kw):
    run = Run(build(ladder, **kw), model=ScriptedModel({"research": outputs}), input="q", slates=slates)
    run.run()
    return run


def test_an_edited_schema_flips_exactly_the_expected_rounds_with_keyword_and_paths(ladder, slates):
    run = recorded(ladder, slates, [req("core.md", "faq.md", "x.md"), req("glossary.md"), '{"ok": 1}'])
    rows = rejudge_rows(run.trace, build(ladder, with_max_items(2)))
    assert [(r["kind"], r["round"], r["old"], r["new"], r["flipped"]) for r in rows] == [
        ("requestMatch", 1, True, False, True),      # 3 files > maxItems 2
        ("requestMatch", 2, True, None, False),      # after the flip: round 2 would never happen
        ("requestMatch", 3, False, None, False),
        ("gate", None, True, None, False),           # ... and the gate would judge another output
    ]
    flip = rows[0]
    assert (flip["keyword"], flip["schema_path"], flip["instance_path"]) == (
        "maxItems", "/properties/request/properties/files", "/request/files")
    assert flip["seq"] == run.trace.call("research", 1, 1).seq
    # the step would have ended at round 1; the gate then judges round 1's output and prunes
    assert flip["effect_kind"] == "ends_step" and flip["changed"]
    assert "end at round 1" in flip["effect"] and "rounds 2–3 would not be made" in flip["effect"]
    assert "the gate would take else → prune" in flip["effect"]
    # every later row of that node describes a path the run would no longer take
    assert [r["after_flip"] for r in rows[1:]] == [flip["seq"]] * 3
    assert {r["effect_kind"] for r in rows[1:]} == {"unknown"}


def test_a_final_answer_that_would_now_be_a_request_says_what_it_would_fetch(ladder, slates):
    loose_final = '{"request": {"files": ["core.md", "faq.md"], "note": "done"}}'
    run = recorded(ladder, slates, [req("core.md"), loose_final, '{"ok": true}'])
    assert run.trace.call("research", 1, 2).request_match == "final"   # additionalProperties: false refused it
    edited = copy.deepcopy(FULL_REQUEST)
    edited["properties"]["request"]["additionalProperties"] = True
    rows = rejudge_rows(run.trace, build(ladder, edited), slates=slates)
    flip = next(r for r in rows if r["flipped"])
    assert (flip["round"], flip["old"], flip["new"], flip["keyword"]) == (2, False, True, "additionalProperties")
    assert flip["instance_path"] == "/request" and flip["effect_kind"] == "new_request"
    # dedup is rebuilt from round 1: core.md was delivered, faq.md would be fetched now
    assert flip["fetch"] == [{"path": "core.md", "mode": "files", "status": "already_in_context"},
                             {"path": "faq.md", "mode": "files", "status": "fetched"}]
    assert "round 3 would be a new model call (its output is unknown)" in flip["effect"]


def test_what_a_request_would_fetch_is_unknown_without_a_slate_not_guessed(ladder, slates):
    run = recorded(ladder, slates, ['{"request": {"files": ["core.md"]}, "x": 1}', '{"ok": 1}'])
    rows = rejudge_rows(run.trace, build(ladder, {"type": "object"}))     # no slates bound: the fixture has no path
    flip = rows[0]
    assert flip["flipped"] and flip["effect_kind"] == "new_request" and flip["fetch"] is None
    assert "what it would fetch is unknown" in flip["effect"]


def test_forced_final_is_final_whatever_it_matches(ladder, slates):
    run = recorded(ladder, slates, [req("core.md"), req("faq.md")], rounds=1)
    rows = rejudge_rows(run.trace, {"research": FULL_REQUEST})
    forced = rows[-1]
    assert forced["forced"] and forced["old"] is None and forced["new"] is True and not forced["flipped"]
    assert forced["effect"].startswith("forced final call")


def test_gate_flips_report_the_branch_action(ladder, slates):
    run = recorded(ladder, slates, ['{"ok": 1}'])
    gate_abort = GATE.replace("required: [ok]", "required: [ok, score]").replace("prune", "abort")
    rows = rejudge_rows(run.trace, build(ladder, extra=gate_abort))
    gate = next(r for r in rows if r["kind"] == "gate")
    assert (gate["test"], gate["old"], gate["new"], gate["flipped"]) == ("jsonMatches", True, False, True)
    assert (gate["keyword"], gate["schema_path"], gate["instance_path"]) == ("required", "", "")
    assert gate["effect_kind"] == "abort" and "the run would end with status aborted" in gate["effect"]
    # through the mapping form the branch's action is not known, and is said to be unknown
    rows = rejudge_rows(run.trace, {"research": {"jsonMatches": {"type": "object", "required": ["score"]}}})
    assert [r["kind"] for r in rows] == ["gate"] and rows[0]["effect_kind"] == "unknown"


def test_a_gate_flip_between_two_write_branches_says_which_write_would_happen_instead(ladder, slates):
    writes = """  if:
    jsonMatches: { type: object, required: [ok], properties: { ok: { minimum: %s } } }
    then: { write: { to: { slate: Memory, folder: facts, file: core.md }, from: output, "on": append } }
    else: { write: { to: { slate: Memory, folder: registry, file: no.md }, from: output, "on": append } }
"""
    run = recorded(ladder, slates, ['{"ok": 4}'], extra=writes % 4)
    assert [(w.target, w.branch) for w in run.trace.writes()] == [("Memory/facts/core.md", "then")]
    rows = rejudge_rows(run.trace, build(ladder, extra=writes % 5))
    gate = next(r for r in rows if r["kind"] == "gate")
    assert gate["flipped"] and gate["changed"] and gate["effect_kind"] == "write"
    assert "write to Memory/registry/no.md" in gate["effect"] and "recorded: then" in gate["effect"]
    assert "Memory/facts/core.md" in gate["effect"]
    # both branches writing the same thing: a flip, but no different outcome
    same = writes.replace("registry, file: no.md", "facts, file: core.md")
    rows = rejudge_rows(run.trace, build(ladder, extra=same % 5))
    gate = next(r for r in rows if r["kind"] == "gate")
    assert gate["flipped"] and not gate["changed"] and gate["effect_kind"] == "none"


def test_slate_write_flips_say_whether_the_write_would_be_made(ladder, slates):
    write = """  slateWrite:
    to: { slate: Memory, folder: facts, file: core.md }
    match: { type: object, required: [fact], properties: { confidence: { minimum: %s } } }
"""
    run = recorded(ladder, slates, ['{"fact": "F", "confidence": 0.5}'], extra=write % 0.4)
    assert [e.status for e in run.trace.writes()] == ["written"]
    rows = rejudge_rows(run.trace, build(ladder, extra=write % 0.7))
    w = next(r for r in rows if r["kind"] == "slateWrite")
    assert (w["old"], w["new"], w["keyword"], w["instance_path"]) == (True, False, "minimum", "/confidence")
    assert w["effect_kind"] == "skip_write" and "Memory/facts/core.md" in w["effect"]


def test_mapping_edits_judge_only_the_named_steps_and_check_the_schema(ladder, slates):
    run = recorded(ladder, slates, [req("core.md"), '{"ok": 1}'])
    assert rejudge_rows(run.trace, {"elsewhere": {"type": "object"}}) == []
    as_text = rejudge_rows(run.trace, {"research": json.dumps(with_max_items(0))})
    assert as_text[0]["flipped"] and as_text[0]["keyword"] == "maxItems"
    with pytest.raises(ConfigError, match="not a valid JSON Schema") as info:
        rejudge_rows(run.trace, {"research": {"type": "objekt"}})
    assert info.value.rule == "invalid-schema"


def test_a_path_and_a_trace_give_the_same_table(ladder, slates, tmp_path):
    path = tmp_path / "t.jsonl"
    run = Run(build(ladder), model=ScriptedModel({"research": [req("core.md", "faq.md"), "done"]}), input="q",
              slates=slates, trace_out=path)
    run.run()
    edited = build(ladder, with_max_items(1))
    df = rejudge(path, edited, detail="all")
    assert df == rejudge(run.trace, edited, detail="all")
    assert df.to_dataframe().equals(rejudge(run.trace, edited, detail="all").to_dataframe())
    assert list(df["flipped"]) == [True, False, False] and df["new_reason"].notna().tolist() == [True, False, False]
    assert df["new"].tolist() == [False, None, None] and df["effect_kind"].tolist()[1:] == ["unknown"] * 2
    assert list(rejudge(path, edited, step="nope").to_dataframe().index) == [] and rejudge(path, edited, step="nope") == []


def test_rejudge_returns_a_report_that_is_the_list_of_rows(ladder, slates):
    """`rejudge` returns a `Rejudging`: the very row dicts `rejudge_rows` gave (len, iteration, indexing), a
    displayable report (`to_text`, `to_html`, `flips`), whose `to_dataframe()` is the old DataFrame and which
    answers a column or a DataFrame attribute as that DataFrame does."""
    from ladr_lab import Rejudging
    from ladr_lab.analysis.rejudge import COLUMNS, format_rows
    from ladr_lab.display import render
    run = Run(build(ladder), model=ScriptedModel({"research": [req("core.md", "faq.md"), "done"]}), input="q",
              slates=slates)
    run.run()
    r = rejudge(run.trace, build(ladder, with_max_items(1)))
    rows = rejudge_rows(run.trace, build(ladder, with_max_items(1)))
    assert isinstance(r, Rejudging) and isinstance(r, list) and r == rows == list(r)
    assert len(r) == 3 and [type(x) for x in r] == [dict] * 3 and r[0] == rows[0] and r[-1] is r[2]
    assert isinstance(r[1:], Rejudging) and r[1:] == rows[1:]
    assert r.flips == [rows[0]] and isinstance(r.flips, Rejudging)
    assert r.to_text() == format_rows(rows) and r.to_text(flips_only=True) == format_rows(rows, flips_only=True)
    assert repr(r) == "<Rejudging: 3 verdict(s), 1 flipped, 1 with a different outcome>"
    html = render(r)
    assert "3 verdicts re-judged, 1 flipped" in html and "ladr-rejudge-rows" in html and "maxItems" in html
    assert render(r, "text/plain") == r.to_text()
    df = r.to_dataframe()
    assert list(df.columns) == list(COLUMNS) and len(df) == 3
    assert r.flipped.tolist() == [True, False, False] and list(r[["old", "new"]].columns) == ["old", "new"]
    assert r[r.flipped].iloc[0]["keyword"] == "maxItems" and r.iloc[0]["seq"] == rows[0]["seq"]
    assert json.loads(json.dumps(r, default=str)) == json.loads(json.dumps(rows, default=str))
    with pytest.raises(AttributeError):
        r.no_such_column  # noqa: B018


def test_loop_iterations_are_kept_apart(ladder, slates):
    loop = """
- id: draft
  fields: [{ name: Q, type: text, from: input.context }]
  if:
    equals: "DONE"
    then: continue
    else: { jump: { stepId: draft } }
"""
    lad = ladder(loop, head="name: t\nexecutionBudget: { maxSteps: 5 }\n")
    run = Run(lad, model=ScriptedModel({"draft": ["again", "DONE"]}), input="q", slates=slates)
    assert run.run().status == "completed"
    edited = ladder(loop.replace('"DONE"', '"again"'), head="name: t\nexecutionBudget: { maxSteps: 5 }\n")
    rows = rejudge_rows(run.trace, edited)
    assert [(r["iteration"], r["old"], r["new"]) for r in rows] == [(1, False, True), (2, True, None)]
    assert rows[0]["effect_kind"] == "continue" and "recorded: else → jump" in rows[0]["effect"]
    assert rows[1]["after_flip"] == rows[0]["seq"] and rows[1]["effect_kind"] == "unknown"


OUTPUT = st.one_of(
    st.lists(st.sampled_from(["core.md", "faq.md", "nope.md", "notes/algebra.md"]), min_size=1, max_size=3).map(
        lambda fs: req(*fs)),
    st.text(alphabet="abc {}[]\":,", max_size=30),
    st.sampled_from(['{"files": ["core.md"]}', '{"request": {"files": "core.md"}}', '```json\n{"ok": 1}\n```',
                     '{"request": {"glob": 3}}', "Answer in prose."]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(outputs=st.lists(OUTPUT, min_size=1, max_size=4))
def test_the_unchanged_ladder_never_flips(ladder, slates, outputs):
    lad = build(ladder)
    run = Run(lad, model=ScriptedModel({"research": outputs + ["final"] * 4}), input="q", slates=slates)
    run.run()
    rows = rejudge_rows(run.trace, lad)
    assert rows and not any(r["flipped"] or r["changed"] for r in rows)
    assert all(r["old"] == r["new"] for r in rows if not r["forced"])


def _two_round_trace(outputs: list[list[str]], schema: dict):
    from ladr_lab.round.verdict import judge
    from ladr_lab.trace import LlmCall, StepEnd, StepStart, Trace
    t = Trace()
    events = [StepStart(step="research", step_type="normal", nodes=len(outputs))]
    for node, texts in enumerate(outputs, 1):
        for k, text in enumerate(texts, 1):
            v = judge(text, schema)
            events.append(LlmCall(step="research", node=node, round=k, iteration=1, messages=[], output=text,
                                  forced_final=False, request_match="retrieval" if v.is_request else "final",
                                  model="m", reason=v.reason, request=v.request if v.is_request else None,
                                  verdict=v.judgement))
    events.append(StepEnd(step="research", survivors=len(outputs), nodes=len(outputs), jump=None))
    for seq, e in enumerate(events):
        t.events.append(type(e)(**{**{f: getattr(e, f) for f in e.own_fields()}, "seq": seq}))
    return t


def test_extracting_ahead_changes_no_row_and_skips_rounds_after_a_flip(monkeypatch):
    import importlib
    module = importlib.import_module("ladr_lab.analysis.rejudge")    # the package re-exports a function of that name
    verdict = importlib.import_module("ladr_lab.round.verdict")
    schema = {"type": "object", "required": ["request"], "properties": {"request": {"type": "object"}}}
    edited = copy.deepcopy(schema)
    edited["properties"]["request"]["properties"] = {"files": {"type": "array", "maxItems": 1}}
    after_flip = 'later {"request": {"files": ["z1"]}}'
    trace = _two_round_trace([['{"request": {"files": ["a1", "b1"]}}', after_flip],
                              ['{"request": {"files": ["c2"]}}', 'final answer 2']], schema)
    seen: list[str] = []
    real = verdict.extract
    monkeypatch.setattr(verdict, "extract", lambda text: seen.append(text) or real(text))
    verdict.extraction.cache_clear()
    rows = rejudge_rows(trace, {"research": edited})
    assert after_flip not in seen                       # node 1 flipped at round 1: round 2 is never extracted
    assert [r["flipped"] for r in rows] == [True, False, False, False]
    verdict.extraction.cache_clear()
    monkeypatch.setattr(module, "_PREFETCH_MAX", 0)     # no extraction ahead: the very same rows
    assert rejudge_rows(trace, {"research": edited}) == rows
