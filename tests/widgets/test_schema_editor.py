"""RequestMatchEditor: typing re-judges the recorded rounds live (flips with the deciding keyword and path),
syntax and metaschema errors show at their lines, lint findings show, and apply / to_yaml give the edited
ladder with its YAML rewritten in place."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

import ladr_lab  # noqa: E402
from ladr_lab.errors import ConfigError  # noqa: E402
from ladr_lab.models import ScriptedModel  # noqa: E402
from ladr_lab.widgets import RequestMatchEditor  # noqa: E402

LADDER = """name: edit-me
slates:
  - title: Knowledge
    folders: [{name: docs}]
steps:
  - id: research
    retrieve:
      to: { slate: Knowledge, folder: docs }
      as: Docs
      maxRounds: 3
      # the request shape the model must use
      requestMatch:
        type: object
        required: [request]
        properties:
          request:
            type: object
            properties:
              files: { type: array, items: { type: string } }
"""


@pytest.fixture
def recorded(slates, tmp_path):
    path = tmp_path / "l.yaml"
    path.write_text(LADDER)
    lad = ladr_lab.load_ladder(path)
    runs = []
    for script in (['{"request": {"files": ["core.md", "faq.md"]}}', "done"],
                   ['{"request": {"files": ["core.md"]}}', '{"request": {"files": ["a.md", "b.md", "c.md"]}}', "ok"]):
        run = ladr_lab.Run(lad, model=ScriptedModel({"research": script}),
                           slates={"Knowledge": slates["Knowledge"]})
        run.run()
        runs.append(run)
    return lad, runs


def test_it_starts_with_the_schema_as_written_and_nothing_flips(recorded):
    lad, runs = recorded
    ed = RequestMatchEditor(lad, "research", trace=runs)
    assert "ladr-schema-editor" in ed.widget._dom_classes and "ladr-schema-text" in ed.text._dom_classes
    assert ed.text.value.startswith("type: object\nrequired: [request]")
    assert "files: { type: array" in ed.text.value          # the author's own layout
    assert ed.errors == [] and ed.flips == [] and len(ed.rows) == 5
    assert "ladr-flip" not in ed.flips_html.value


def test_an_edit_flips_rounds_with_the_deciding_keyword_and_path(recorded):
    lad, runs = recorded
    ed = RequestMatchEditor(lad, "research", trace=runs)
    ed.text.value = ed.text.value.replace("items: { type: string }", "items: { type: string }, maxItems: 1")
    flips = ed.flips
    assert [(f["trace"], f["round"]) for f in flips] == [("run 1", 1), ("run 2", 2)]
    assert {f["keyword"] for f in flips} == {"maxItems"}
    assert flips[0]["schema_path"] == "/properties/request/properties/files" and \
        flips[0]["instance_path"] == "/request/files"
    html = ed.flips_html.value
    assert html.count('class="ladr-flip"') == 2 and "maxItems" in html and "/request/files" in html
    assert "2 flipped" in ed.summary.value


def test_errors_show_inline_at_their_lines(recorded):
    lad, runs = recorded
    ed = RequestMatchEditor(lad, "research", trace=runs)
    good = ed.text.value
    ed.text.value = good.replace("type: object\nrequired", "type: objekt\nrequired", 1)
    assert ed.schema is None and ed.errors and ed.errors[0].startswith("line 1:")
    assert 'did you mean "object"' in ed.errors[0]
    assert 'class="ladr-schema-error"' in ed.errors_html.value
    ed.text.value = good + "  broken: [\n"
    assert ed.errors and "line" in ed.errors[0] and ed.flips == []
    ed.text.value = good.replace("required: [request]", "requried: [request]")
    assert ed.errors == [] and any('"requried"' in w and 'did you mean "required"' in w for w in ed.warnings)
    ed.text.value = good
    assert ed.errors_html.value == "" and ed.schema is not None


def test_json_mode_and_switching_formats(recorded):
    lad, runs = recorded
    ed = RequestMatchEditor(lad, "research", trace=runs, format="json")
    assert ed.text.value.lstrip().startswith("{") and ed.errors == []
    ed.text.value = '{"type": "object", "required": ["answer"]}'
    assert len(ed.flips) == 2      # the first retrieval round of each run fails `required`; rounds after it are unknown
    ed.text.value = '{"type": "object",'
    assert ed.errors and ed.errors[0].startswith("line 1: not JSON")
    ed.text.value = '{"type": "object"}'
    ed.format.value = "YAML"
    assert ed.text.value == "type: object" and ed.errors == []


def test_apply_and_to_yaml_rewrite_the_ladder_in_place(recorded):
    lad, runs = recorded
    ed = RequestMatchEditor(lad, "research", trace=runs)
    ed.text.value = ed.text.value.replace("required: [request]", "required: [request]\nminProperties: 1")
    edited = ed.apply()
    assert edited.step("research").retrieve.request_match["minProperties"] == 1
    yaml_text = ed.to_yaml()
    assert "# the request shape the model must use" in yaml_text and "        minProperties: 1\n" in yaml_text
    assert yaml_text.replace("        minProperties: 1\n", "") == LADDER
    ed.apply_button.click()
    assert "applied" in ed.message.value and ed.applied is not None
    ed.export_button.click()
    assert ed.export.value == yaml_text and ed.export.layout.display != "none"
    ed.text.value = "type: objekt"
    with pytest.raises(ConfigError):
        ed.apply()
    ed.revert_button.click()
    assert ed.text.value == ed.original_text and ed.errors == []
    assert "applied" not in ed.message.value and "flip" not in ed.message.value     # no stale Apply line
    assert ed.export.layout.display == "none"


def test_lint_findings_for_the_edited_ladder(recorded):
    lad, runs = recorded
    ed = RequestMatchEditor(lad, "research", trace=runs)
    ed.text.value = "type: object"                          # accepts {} and any final answer in JSON
    codes = {f.code for f in ed.findings}
    assert "loose-request-match" in codes and "loose-request-match" in ed.lint_html.value


def test_it_rejudges_an_evaluation(recorded, slates, tmp_path):
    lad, _ = recorded
    ev = ladr_lab.evaluate(lad, [{"context": "a"}, {"context": "b"}],
                           model=ScriptedModel(lambda m, **h: '{"request": {"files": ["core.md", "faq.md"]}}'
                                               if h["round"] == 1 else "done"),
                           slates={"Knowledge": slates["Knowledge"]}, out=tmp_path / "ev", progress=False)
    ed = RequestMatchEditor(lad, "research", evaluation=ev)
    ed.text.value = ed.text.value.replace("items: { type: string }", "items: { type: string }, maxItems: 1")
    assert sorted(f["trace"] for f in ed.flips) == ["row 1", "row 2"]


def test_a_step_without_the_schema_is_refused(ladder):
    with pytest.raises(ConfigError, match="has no retrieve.requestMatch"):
        RequestMatchEditor(ladder("- id: plain\n"), "plain")


def test_with_many_recorded_calls_it_judges_once_typing_pauses(recorded):
    lad, runs = recorded
    ed = RequestMatchEditor(lad, "research", trace=runs, debounce=30)     # a pause that never comes by itself
    before = list(ed.rows)
    ed.text.value = ed.text.value.replace("items: { type: string }", "items: { type: string }, maxItems: 1")
    assert ed.rows == before and "pause" in ed.summary.value             # waiting, not judging each keystroke
    ed.flush()
    assert len(ed.flips) == 2 and ed._timer is None
    ed.text.value = ed.original_text
    ed.close()                                                            # the waiting re-judge is cancelled
    assert ed._timer is None and len(ed.flips) == 2


def test_set_text_judges_at_once_and_an_undone_edit_is_not_judged_again(recorded):
    lad, runs = recorded
    ed = RequestMatchEditor(lad, "research", trace=runs, debounce=30)
    ed.set_text("type: object\nrequired: [answer]")
    first = ed.rows
    assert len(ed.flips) == 2
    ed.set_text(ed.original_text)
    ed.set_text("type: object\nrequired: [answer]   # a comment changes nothing")
    assert ed.rows is first


def test_a_flip_says_what_it_would_do_with_the_edited_ladder(slates, tmp_path):
    # a strict schema made the round's output the final answer; relaxing it makes that output a request, and
    # the flip names what the request would fetch (not "unknown: the edited ladder is needed")
    strict = LADDER.replace("        required: [request]\n", "        required: [request]\n        additionalProperties: false\n")
    path = tmp_path / "strict.yaml"
    path.write_text(strict)
    lad = ladr_lab.load_ladder(path)
    run = ladr_lab.Run(lad, model=ScriptedModel({"research": ['{"request": {"files": ["core.md"]}, "why": 1}']}),
                       slates={"Knowledge": slates["Knowledge"]})
    run.run()
    ed = RequestMatchEditor(lad, "research", trace=run, slates={"Knowledge": slates["Knowledge"]})
    ed.set_text(ed.text.value.replace("additionalProperties: false\n", ""))
    (flip,) = ed.flips
    assert not flip["old"] and flip["new"]
    assert "unknown" not in flip["effect"].split(";")[0] and "core.md" in flip["effect"]
    assert "core.md" in ed.flips_html.value


def test_the_edited_ladder_is_built_once_per_text(recorded, monkeypatch):
    lad, runs = recorded
    from ladr_lab.widgets import schema_editor
    calls = []
    real = schema_editor.rewrite_schema
    monkeypatch.setattr(schema_editor, "rewrite_schema", lambda *a, **k: calls.append(1) or real(*a, **k))
    ed = RequestMatchEditor(lad, "research", trace=runs)
    ed.set_text(ed.text.value + "\nminProperties: 1")
    assert len(calls) == 2          # the first text and the edited one: re-judging and lint share each build


def test_apply_warns_when_the_schema_is_shared_through_an_anchor(ladder):
    lad = ladder("""
        - id: a
          retrieve:
            to: {slate: Knowledge, folder: docs}
            as: D
            maxRounds: 1
            requestMatch: &rm
              type: object
              required: [request]
        - id: b
          retrieve: {to: {slate: Knowledge, folder: docs}, as: D, maxRounds: 1, requestMatch: *rm}
        """)
    ed = RequestMatchEditor(lad, "a")
    ed.set_text(ed.text.value + "\nminProperties: 1")
    ed.apply_button.click()
    assert ed.applied.step("b").retrieve.request_match["minProperties"] == 1
    import html
    assert "ladr-apply-warning" in ed.message.value and 'step "b"' in html.unescape(ed.message.value)
    assert ed.rewrite.shared_with == ("b",)
    ed_b = RequestMatchEditor(lad, "b")
    ed_b.set_text(ed_b.text.value + "\nminProperties: 1")
    ed_b.apply_button.click()
    assert "own copy" in ed_b.message.value and "minProperties" not in ed_b.applied.step("a").retrieve.request_match


def test_trace_findings_after_an_edit_are_marked_before_your_edit(recorded):
    lad, runs = recorded
    ed = RequestMatchEditor(lad, "research", trace=runs)
    from_traces = [f for f in ed.findings if f.evidence and "seq" in f.evidence[0]]
    assert from_traces and ed.findings_before_edit == []       # unedited: the recorded verdicts are current
    assert "before your edit" not in ed.lint_html.value
    ed.text.value = ed.text.value.replace("items: { type: string }", "items: { type: string }, maxItems: 1")
    marked = ed.findings_before_edit
    assert marked and all(f.evidence and "seq" in f.evidence[0] for f in marked)
    assert "lint, before your edit" in ed.lint_html.value
    ed.revert()
    assert ed.findings_before_edit == [] and "before your edit" not in ed.lint_html.value


def test_a_ref_that_does_not_resolve_and_an_unknown_keyword_at_its_own_line(recorded):
    lad, runs = recorded
    ed = RequestMatchEditor(lad, "research", trace=runs)
    ed.set_text("type: object\nrequried: [request]\nproperties:\n  request: {$ref: '#/$defs/nope'}")
    assert ed.schema is None and len(ed.errors) == 1 and ed.errors[0].startswith("line 4: $ref '#/$defs/nope'")
    assert ed.warnings == ['line 2: unknown keyword "requried" (did you mean "required"?) — JSON Schema ignores it']
    ed.set_text("$schema: 3\ntype: object")             # once an AttributeError inside jsonschema
    assert ed.errors == ["line 1: $schema must be a metaschema URI (a string) (at $schema)"]


def test_suggest_puts_the_fitted_schema_in_the_box_and_its_flips_follow(recorded):
    lad, runs = recorded
    labels = {("1", "research", 1): "request", ("1", "research", 2): "answer", ("2", "research", 1): "request",
              ("2", "research", 2): "answer", ("2", "research", 3): "answer"}     # 3 files: called an answer here
    ed = RequestMatchEditor(lad, "research", trace=runs)
    assert ed.suggest() is None and "labels=" in ed.message.value          # nothing to fit without labels
    sug = ed.suggest(labels, folds=0)
    assert sug.best.f1 == 1.0 and sug.best.form == "wrapped"
    assert sug.best.constraints == ("files: {maxItems: 2}",)
    assert "maxItems: 2" in ed.text.value and ed.schema == sug.schema      # in the box, as YAML
    assert [(f["trace"], f["round"]) for f in ed.flips] == [("run 2", 2)]   # its flip, as an edit's
    assert "why each constraint" in ed.message.value and "rejects the 1 answer(s)" in ed.message.value
    collide = {**labels, ("2", "research", 2): "request", ("1", "research", 1): "answer"}
    text = ed.text.value
    sug = ed.suggest(collide, folds=0)
    assert sug.schema is None and "cannot be separated" in ed.message.value and ed.text.value == text
