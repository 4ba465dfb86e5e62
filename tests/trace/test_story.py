"""The one description of a round (trace/story.py): what each event says, the outline of steps, iterations,
nodes and rounds, and the round printer that prints it."""
from __future__ import annotations

import io

from ladr_lab.cli import RoundPrinter
from ladr_lab.engine import Run
from ladr_lab.models import ScriptedModel
from ladr_lab.trace import Fetched, Gate, Judgement, LlmCall, Write
from ladr_lab.trace.story import GateStory, RoundStory, VerdictStory, WriteStory, describe, round_tag
from tests.helpers_display import scripted_run


def _call(**kw) -> LlmCall:
    base = dict(step="s", node=2, round=3, iteration=1, messages=[{"role": "system", "content": "sys"},
                                                                   {"role": "user", "content": "Q:\nhi"}],
                output='{"request": {"glob": "*.md", "files": ["a.md"]}, "topK": 2}', forced_final=False,
                request_match="retrieval", model="m", tokens_in=10, tokens_out=5, cost=0.25, latency=1.5,
                provenance="recorded", request={"glob": "*.md", "files": ["a.md"]}, top_k=2,
                fetched=(Fetched(path="a.md", mode="files", status="fetched", chars=12, truncated=True,
                                 total_bytes=90_000),
                         Fetched(path="b.md", mode="glob", status="no_match", note="nothing matched")),
                verdict=Judgement(test="requestMatch", matched=True, extraction="strict", form="wrapped"),
                reason="JSON found (strict) and it matches requestMatch (wrapped form)", sections=[["field", "Q", 5]])
    base.update(kw)
    return LlmCall(**base)


def test_a_round_story_holds_every_piece():
    r = describe(_call())
    assert isinstance(r, RoundStory)
    assert r.label == "s · node 2 · round 3" and r.tag == "retrieval" and r.why.startswith("JSON found")
    assert r.request == (("files", ["a.md"]), ("glob", "*.md"))          # modes in the engine's order
    assert r.request_text() == 'files ["a.md"]; glob "*.md"; topK 2'
    assert [f.status for f in r.fetched] == ["fetched", "no_match"]
    assert "(cut: 90,000 bytes)" in r.fetched[0].detail and "— nothing matched" in r.fetched[1].detail
    assert r.stats() == "tokens 10 → 5 · prompt 8 chars · $0.2500 · 1.50 s · m (recorded)"
    assert [(s.kind, s.name, s.text) for s in r.prompt_sections()] == [("system", "systemPrompt", "sys"),
                                                                       ("field", "Q", "Q:\nhi")]


def test_tags_and_labels():
    assert round_tag(_call(forced_final=True, request_match="final")) == "forced final"
    assert round_tag(_call(request_match=None)) == "answer"
    assert round_tag(_call(request_match="final")) == "final"
    assert describe(_call(iteration=2)).label == "s · node 2 · round 3 · iteration 2"


def test_a_failed_schema_names_the_deciding_keyword_and_paths():
    j = Judgement(test="requestMatch", matched=False, extraction="fence", keyword="maxItems",
                  schema_path="/properties/request/properties/files", instance_path="/request/files",
                  message="[...] is too long")
    v = VerdictStory.of(j)
    assert v.deciding == "`maxItems` at /properties/request/properties/files (instance /request/files)"
    assert v.text().startswith("requestMatch: no match (fence) — `maxItems`")
    assert VerdictStory.of(Judgement(test="requestMatch", matched=False)).text() == \
        "requestMatch: no match (no JSON found)"


def test_gates_and_writes_say_what_happened_and_why():
    g = describe(Gate(step="v", node=1, condition="jsonMatches", matched=False, branch="else", action="jump",
                      jump="research", reason="no JSON found in the output"))
    assert isinstance(g, GateStory)
    assert g.headline() == "gate v#1: jsonMatches → else (jump → research); no JSON found in the output"
    w = describe(Write(step="v", node=1, mechanism="gate", branch="then", target="M/f/x.md", policy="append",
                       status="skipped", reason="no JSON found"))
    assert isinstance(w, WriteStory) and not w.written
    assert w.headline() == "write M/f/x.md (append, gate then): skipped — no JSON found"


def test_the_printer_prints_every_piece_it_always_printed(ladder, slates):
    out = io.StringIO()
    run = scripted_run(ladder, slates, tracer=RoundPrinter(out))
    run.run()
    text = out.getvalue()
    for want in ("▶ step research (normal, 1 node)",
                 "  ── research · node 1 · round 1 → retrieval",
                 '     │ {"request": {"files": ["core.md", "missing.md"]}}',
                 "     why: JSON found (strict) and it matches requestMatch (wrapped form)",
                 "fetched             files      core.md",
                 "not_found           files      missing.md",
                 "already_in_context  files      core.md",
                 "── research · node 1 · round 3 → forced final",
                 "◆ gate research#1: equals → else (continue)",
                 "✎ write Memory/facts/notes.md (append, slateWrite): written",
                 "■ completed after 3 model call(s)"):
        assert want in text, want
    assert "tokens" in text and "· script" in text


def test_the_printer_clips_long_outputs_and_indents_child_runs():
    out = io.StringIO()
    p = RoundPrinter(out)
    p(_call(output="x" * 2000, depth=1))
    text = out.getvalue()
    assert "[1400 more chars]" in text and text.startswith("    ── s · node 2 · round 3")


def test_an_error_while_handling_an_output_is_printed(ladder, slates):
    lad = ladder("""
        - id: r
          retrieve:
            to: { slate: Knowledge, folder: docs }
            as: Docs
            maxRounds: 1
            requestMatch: { type: object }
        """)
    out = io.StringIO()
    run = Run(lad, model=ScriptedModel({"r": ['{"files": ["core.md"]}', "done"]}), slates=slates,
              tracer=RoundPrinter(out))
    run.run()
    assert "→ retrieval" in out.getvalue() and "■ completed" in out.getvalue()


def _failing_run(ladder, slates) -> Run:
    """RETRIEVE_GATE_WRITE whose second model call raises: the run ends with an error inside the step."""
    from tests.helpers_display import RETRIEVE_GATE_WRITE
    calls = []

    def model(messages, **hints):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("rate limited")
        return '{"request": {"files": ["core.md"]}}'
    return Run(ladder(RETRIEVE_GATE_WRITE), model=ScriptedModel(model), slates=slates, input="q")


def test_events_missing_fields_are_described_with_question_marks_not_none_or_a_crash():
    from ladr_lab.trace import Event
    gate = describe(Event.from_dict({"type": "gate"}))
    assert "None" not in gate.headline() and gate.headline().startswith("gate ?#1: ? → ?")
    write = describe(Event.from_dict({"type": "write", "step": "s"}))
    assert write.headline().startswith("write ? (?, ?)") and "None" not in write.headline()
    call = describe(Event.from_dict({"type": "llm_call"}))
    assert call.label == "? · node 1 · round 1"
    out = io.StringIO()
    printer = RoundPrinter(out)
    for d in ({"type": "llm_call"}, {"type": "gate"}, {"type": "write"}, {"type": "step_end"}, {"type": "run_end"}):
        printer(Event.from_dict(d))
    assert "None" not in out.getvalue().replace("None)", "")


def test_a_gate_story_is_its_gate_event_with_words():
    from ladr_lab.trace import Event
    gate = Gate(step="v", node=2, condition="jsonMatches", matched=False, branch="else", action="jump",
                jump="research", reason="no JSON",
                verdict=Judgement(test="jsonMatches", matched=False, keyword="type", schema_path="/type"))
    g = describe(gate)
    assert g == GateStory(event=gate) and g.event is gate
    assert (g.label, g.condition, g.matched, g.branch, g.action, g.jump, g.reason) == \
        ("v#2", "jsonMatches", False, "else", "jump", "research", "no JSON")
    assert g.verdict == VerdictStory.of(gate.verdict) and g.verdict is g.verdict     # told once
    assert g.text_lines() == ["◆ gate v#2: jsonMatches → else (jump → research); no JSON"]
    bare = describe(Event.from_dict({"type": "gate", "step": "v", "node": 3, "condition": "equals", "matched": True,
                                     "branch": "then", "action": "continue"}))
    assert bare.headline() == "gate v#3: equals → then (continue); " and bare.reason == "" and bare.verdict is None
