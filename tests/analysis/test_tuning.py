"""Tuning requestMatch over a data set: every recorded retrieve-round output judged by each variant, scored
against labels (from a mapping, a CSV, the rows' own `labels` input), with no model call."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab import LadrError, Run, ScriptedModel, evaluate, load_labels, save_labels, tune_request_match
from ladr_lab.analysis.tuning import RECORDED

STRICT = {"type": "object", "required": ["files"],
          "properties": {"files": {"type": "array", "items": {"type": "string"}}}}
LOOSE = {"type": "object"}                                        # no `required`: any JSON object is a request
TIGHT = {"type": "object", "required": ["request"]}               # only the wrapped form
VARIANTS = {"strict": STRICT, "loose": LOOSE, "tight": TIGHT}

STEP = """
- id: research
  fields:
    - { name: Question, type: text, from: input.context }
  retrieve:
    to: { slate: Knowledge, folder: docs }
    as: Docs
    maxRounds: %d
    requestMatch: %s
  systemPrompt: Research.
"""

# what the model says, by row, round after round; the labels say what each output really is
SCRIPT = {
    "r1": ['{"files": ["core.md"]}', "Plain prose answer."],
    "r2": ['{"answer": "42"}'],
    "r3": ['{"files": ["faq.md"]}', "Answer: see the faq."],
    "r4": ['{"request": {"files": ["core.md"]}}'],        # a request strict does not recognise: the run ended
}
LABELS = {"r1": '["request", "answer"]', "r2": '["a"]', "r3": '{"research/1": "req", "research/2": "final"}',
          "r4": '["request"]'}


def scripted(script):
    def answer(messages, call):
        row = next(r for r in script if f"<<{r}>>" in messages[-1]["content"])
        return script[row][call.round - 1]
    return ScriptedModel(answer)


@pytest.fixture
def lad(ladder):
    return ladder(STEP % (2, json.dumps(STRICT)))


@pytest.fixture
def ev(lad, slates, tmp_path):
    inputs = [{"id": r, "context": f"question <<{r}>>", "labels": LABELS[r]} for r in SCRIPT]
    return evaluate(lad, inputs, model=scripted(SCRIPT), slates=slates, out=tmp_path / "ev", progress=False,
                    concurrency=1)


def score(t, variant):
    return next(s for s in t.score_rows() if s["variant"] == variant)


def test_precision_and_recall_per_variant_are_the_ones_counted_by_hand(ev):
    t = tune_request_match(ev, VARIANTS)
    assert t.variants == [RECORDED, "strict", "loose", "tight"]
    where = [(o.row, o.round) for o in t.outputs]
    assert where == [("r1", 1), ("r1", 2), ("r2", 1), ("r3", 1), ("r3", 2), ("r4", 1)]
    # labels from the rows' `labels` input:       R          A          A          R          A          R
    # strict (required files): R A A R A A  -> tp 2, fp 0, fn 1 (r4's wrapped request), tn 3
    # loose (no required):     R A R R A R  -> tp 3, fp 1 (r2's JSON answer), fn 0, tn 2
    # tight (required request): A A A A A R -> tp 1, fp 0, fn 2 (the bare requests), tn 3
    expected = {"strict": (2, 0, 1, 3, 1.0, 2 / 3, 0.8, 5 / 6),
                "loose": (3, 1, 0, 2, 0.75, 1.0, 2 * 0.75 / 1.75, 5 / 6),
                "tight": (1, 0, 2, 3, 1.0, 1 / 3, 0.5, 4 / 6)}
    for name, (tp, fp, fn, tn, p, r, f1, acc) in expected.items():
        s = score(t, name)
        assert (s["tp"], s["fp"], s["fn"], s["tn"], s["labelled"], s["outputs"]) == (tp, fp, fn, tn, 6, 6), name
        assert (s["precision"], s["recall"], s["f1"], s["accuracy"]) == pytest.approx((p, r, f1, acc)), name
    # the run was made with the strict schema: the recorded verdicts are strict's
    assert score(t, RECORDED)["tp"] == 2 and score(t, RECORDED)["fn"] == 1
    assert list(t.scores().columns)[:5] == ["variant", "outputs", "judged", "labelled", "requests"]


def test_wrong_names_the_outputs_a_variant_misjudges_and_why(ev):
    t = tune_request_match(ev, VARIANTS)
    loose = t.wrong("loose")
    # r2's `{"answer": "42"}` matches the loose schema and names no mode: a request that fetches nothing
    assert loose[["row", "round", "verdict", "label"]].values.tolist() == [["r2", 1, "no_match", "answer"]]
    assert "names no retrieval mode, so the round would fetch nothing (no_match)" in loose.reason.iloc[0]
    tight = t.wrong("tight")
    assert tight[["row", "round"]].values.tolist() == [["r1", 1], ["r3", 1]]
    assert set(tight.keyword) == {"required"} and set(tight.schema_path) == {""}
    assert "does not match requestMatch" in tight.reason.iloc[0] and "'request' is a required property" in \
        tight.reason.iloc[0]
    strict = t.wrong("strict")
    assert strict[["row", "keyword", "instance_path"]].values.tolist() == [["r4", "required", ""]]
    with pytest.raises(LadrError, match="no variant 'nope'.*recorded, strict, loose, tight"):
        t.wrong("nope")


def test_the_table_is_long_ordered_and_complete(ev):
    t = tune_request_match(ev, VARIANTS)
    df = t.table()
    assert len(df) == 4 * 6 and list(df.variant.unique()) == [RECORDED, "strict", "loose", "tight"]
    one = t.table("loose")
    assert one.verdict.tolist() == ["request", "answer", "no_match", "request", "answer", "request"]
    assert one.correct.tolist() == [True, True, False, True, True, True]
    assert one.output.iloc[3] == '{"files": ["faq.md"]}' and not one.forced.any()
    assert one.label.tolist() == ["request", "answer", "answer", "request", "answer", "request"]
    prose = t.table("strict").iloc[1]
    assert pd.isna(prose.keyword) and prose.reason.startswith("no JSON found")


def test_disagreements_list_the_outputs_the_variants_judge_differently(ev):
    t = tune_request_match(ev, VARIANTS)
    d = t.disagreements()
    # the prose answers (r1/2, r3/2) are answers for all three; every other output splits them
    assert d[["row", "round"]].values.tolist() == [["r1", 1], ["r2", 1], ["r3", 1], ["r4", 1]]
    assert d.loc[d.row == "r2", ["strict", "loose", "tight"]].values.tolist() == [["answer", "no_match", "answer"]]
    # with one variant given, it is compared with what the run decided
    solo = tune_request_match(ev, {"loose": LOOSE})
    assert solo.compared() == [RECORDED, "loose"]
    assert solo.disagreements()[["row", "round"]].values.tolist() == [["r2", 1], ["r4", 1]]


def test_the_recorded_baseline_is_the_engines_verdict_and_equals_rejudging_with_its_schema(ev, lad):
    t = tune_request_match(ev, {"same ladder": lad, "same schema": STRICT})
    engine = [c.request_match for _, tr in ev.traces() for c in tr.calls("research")]
    assert [v.verdict for v in t.verdicts[RECORDED]] == \
        ["request" if m == "retrieval" else "answer" for m in engine]
    for name in ("same ladder", "same schema"):
        assert [v.verdict for v in t.verdicts[name]] == [v.verdict for v in t.verdicts[RECORDED]]
        assert [v.keyword for v in t.verdicts[name]] == [v.keyword for v in t.verdicts[RECORDED]]
    assert t.disagreements().empty


def test_an_output_folder_and_a_ladder_path_work_as_the_objects_do(ev, lad, tmp_path):
    path = tmp_path / "strict.yaml"
    path.write_text(lad.text)
    from_folder = tune_request_match(ev.out, {"file": path, "loose": json.dumps(LOOSE)})
    from_object = tune_request_match(ev, {"file": STRICT, "loose": LOOSE})
    assert from_folder.score_rows() == from_object.score_rows()
    assert [o.row for o in from_folder.outputs] == ["r1", "r1", "r2", "r3", "r3", "r4"]
    # a folder of bare trace files: rows named by file
    bare = tune_request_match(ev.out / "traces", {"loose": LOOSE})
    assert sorted({o.row for o in bare.outputs}) == ["r1", "r2", "r3", "r4"]
    single = tune_request_match(ev.trace("r4"), {"tight": TIGHT})
    assert [(o.row, v.verdict) for o, v in zip(single.outputs, single.verdicts["tight"], strict=True)] == \
        [("1", "request")]


def test_forced_final_calls_are_judged_and_kept_apart(ladder, slates):
    lad = ladder(STEP % (1, json.dumps(STRICT)))
    # round 2 is the forced final call: the model still asks, the runtime takes it as the answer
    run = Run(lad, model=scripted({"f": ['{"files": ["core.md"]}', '{"files": ["faq.md"]}']}),
              input="<<f>>", slates=slates)
    run.run()
    t = tune_request_match([("f", run)], {"strict": STRICT}, labels={("f", "research", 1): "request",
                                                                     ("f", "research", 2): "request"})
    df = t.table()
    assert df.forced.tolist() == [False, True, False, True]
    assert df.verdict.tolist() == ["request", "answer", "request", "request"]
    assert (score(t, RECORDED)["fn"], score(t, "strict")["fn"]) == (1, 0)     # the forced request counts
    assert "forced final call" in df.reason.iloc[1]


def test_labels_csv_round_trips_and_explicit_labels_win_over_the_rows(ev, tmp_path):
    t = tune_request_match(ev, VARIANTS)
    path = save_labels(t, tmp_path / "labels" / "l.csv")
    text = path.read_text().splitlines()
    assert text[0] == "row,step,node,round,iteration,label" and text[1] == "r1,research,1,1,1,request"
    assert load_labels(path) == t.labels and len(t.labels) == 6
    assert not list(path.parent.glob("*.tmp"))
    # a DataFrame without node: node 1; it overrides r2's input label
    frame = pd.DataFrame({"row": ["r2"], "step": ["research"], "round": [1], "label": ["request"]})
    t2 = tune_request_match(ev, VARIANTS, labels=frame)
    assert t2.labels[("r2", "research", 1, 1, 1)] == "request"
    assert score(t2, "loose")["fp"] == 0 and score(t2, "strict")["fn"] == 2
    # a CSV path, and mapping keys with a node
    (tmp_path / "one.csv").write_text("row,step,round,label\nr4,research,1,answer\n")
    assert tune_request_match(ev, VARIANTS, labels=tmp_path / "one.csv").labels[("r4", "research", 1, 1, 1)] == "answer"
    t3 = tune_request_match(ev, VARIANTS, labels={("r4", "research", 1, 1): False})
    assert t3.labels[("r4", "research", 1, 1, 1)] == "answer"


def test_a_label_nobody_can_read_is_an_error_naming_its_row(ev, tmp_path):
    with pytest.raises(LadrError, match=r"row r2 \(step research, round 1\): label 'maybe' is neither"):
        tune_request_match(ev, VARIANTS, labels={("r2", "research", 1): "maybe"})
    (tmp_path / "bad.csv").write_text("row,step,round,label\nr1,research,1,request\nr3,research,2,yes\n")
    with pytest.raises(LadrError, match=r"row r3 \(labels file .*bad.csv, line 2\): label 'yes'"):
        load_labels(tmp_path / "bad.csv")
    (tmp_path / "cols.csv").write_text("row,step,label\nr1,research,request\n")
    with pytest.raises(LadrError, match="no column round"):
        load_labels(tmp_path / "cols.csv")


def test_a_bad_label_in_a_rows_input_names_that_row(lad, slates, tmp_path):
    inputs = [{"id": "r1", "context": "<<r1>>", "labels": '["request", "perhaps"]'}]
    ev = evaluate(lad, inputs, model=scripted({"r1": SCRIPT["r1"]}), slates=slates, out=tmp_path / "e",
                  progress=False)
    with pytest.raises(LadrError, match=r"row r1 \(labels input, round 2\): label 'perhaps'"):
        tune_request_match(ev, VARIANTS)


def test_a_labels_list_with_two_retrieve_steps_and_a_bare_schema_are_ambiguous(ladder, slates):
    two = ladder((STEP % (1, json.dumps(STRICT))) + (STEP % (1, json.dumps(STRICT))).replace("id: research",
                                                                                             "id: check"))
    run = Run(two, model=ScriptedModel(["done", "done"]), inputs={"context": "q", "labels": '["answer"]'},
              slates=slates)
    run.run()
    with pytest.raises(LadrError, match=r"variant 'loose' is one schema.*retrieve steps check, research: say which \(step=\"ID\" in Python, "
                                         r"--step ID on the command line\)"):
        tune_request_match([run.trace], {"loose": LOOSE}, labels={})
    with pytest.raises(LadrError, match="row 1: a list of labels is for one retrieve step.*check, research"):
        tune_request_match([run.trace], {"loose": {"research": LOOSE}})
    t = tune_request_match([run.trace], {"loose": LOOSE}, step="check")
    assert [(o.step, o.round) for o in t.outputs] == [("check", 1)] and t.labels == {("1", "check", 1, 1, 1): "answer"}
    plain = Run(two, model=ScriptedModel(["done", "done"]), input="q", slates=slates)
    plain.run()
    both = tune_request_match([plain.trace], {"split": {"research": LOOSE, "check": TIGHT}},
                              labels={("1", "research", 1): "answer"})
    assert [o.step for o in both.outputs] == ["research", "check"] and both.stray_labels == []
    with pytest.raises(LadrError, match="step 'nowhere' has no retrieve rounds.*check, research"):
        tune_request_match([run.trace], {"loose": LOOSE}, step="nowhere")
    with pytest.raises(LadrError, match=r"names the step\(s\) reserch"):
        tune_request_match([run.trace], {"typo": {"reserch": LOOSE}})


def test_a_variant_that_does_not_judge_a_step_scores_only_what_it_judges(ladder, slates):
    two = ladder((STEP % (1, json.dumps(STRICT))) + (STEP % (1, json.dumps(STRICT))).replace("id: research",
                                                                                             "id: check"))
    run = Run(two, model=ScriptedModel(['{"files": []}', "done", "done"]), input="q", slates=slates)
    run.run()
    t = tune_request_match([run.trace], {"only research": {"research": LOOSE}},
                           labels={("1", "research", 1): "request", ("1", "check", 1): "answer"})
    verdicts = [v.verdict for v in t.verdicts["only research"]]
    assert verdicts == ["request", "answer", None]
    s = score(t, "only research")
    assert (s["outputs"], s["judged"], s["labelled"], s["tp"], s["tn"]) == (3, 2, 1, 1, 0)
    assert "does not name the step" in t.verdicts["only research"][2].reason


def test_undefined_scores_are_nan_not_zero(ev):
    t = tune_request_match(ev, {"never": {"type": "array"}})      # no output is a JSON array
    s = score(t, "never")
    assert s["requests"] == 0 and math.isnan(s["precision"]) and s["recall"] == 0 and math.isnan(s["f1"])
    unlabelled = tune_request_match(ev, {"never": {"type": "array"}}, labels=None)
    unlabelled.labels.clear()
    s = score(unlabelled, "never")
    assert s["labelled"] == 0 and math.isnan(s["accuracy"]) and math.isnan(s["recall"])


def test_set_label_changes_the_scores_without_judging_again(ev):
    t = tune_request_match(ev, VARIANTS)
    before = t.verdicts["loose"]
    t.set_label("r2", "research", 1, "request")
    # relabelled a request, r2's JSON still fetches nothing under loose (no_match): a missed request, not a hit
    assert (score(t, "loose")["fp"], score(t, "loose")["tp"], score(t, "loose")["fn"]) == (0, 3, 1)
    assert t.verdicts["loose"] is before
    t.set_label("r2", "research", 1, None)
    assert score(t, "loose")["labelled"] == 5
    t.set_label("r9", "research", 1, "answer")
    assert t.stray_labels == [("r9", "research", 1, 1, 1)] and "naming no recorded output" in t.to_text()


def test_it_displays_as_scores_and_the_outputs_that_split_the_variants(ev):
    t = tune_request_match(ev, VARIANTS)
    bundle = t._repr_mimebundle_()
    html = bundle["text/html"]
    assert "ladr-tuning-scores" in html and "where strict and loose and tight disagree (4)" in html
    assert html.count("<tr") == 1 + 4 + 1 + 4        # scores head + 4 variants, outputs head + 4 rows
    text = bundle["text/plain"]
    assert "loose" in text and " 0.75 " in text and "6 output(s)" in text


def test_no_model_is_ever_called(ev, monkeypatch):
    """Re-judging needs no model: no model is made, no run is started, every model class refuses to answer,
    and litellm is never imported."""
    import ladr_lab.models.registry as registry
    from ladr_lab.engine import run as engine_run
    from ladr_lab.models import LiteLLMModel, OfflineModel

    def refuse(*a, **k):
        raise AssertionError("a model was asked for")
    monkeypatch.setattr(registry, "get_model", refuse)
    monkeypatch.setattr(engine_run.Run, "__init__", refuse)
    for cls in (ScriptedModel, LiteLLMModel, OfflineModel):
        monkeypatch.setattr(cls, "complete", refuse)
    t = tune_request_match(ev.out, VARIANTS)
    assert score(t, "loose")["tp"] == 3
    code = ("import sys; from ladr_lab import tune_request_match as t; "
            f"t({str(ev.out)!r}, {{'l': {{'type': 'object'}}}}).scores(); print('litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]


def test_variant_names_and_values_are_checked(ev):
    with pytest.raises(LadrError, match='"recorded" names what the run decided'):
        tune_request_match(ev, {"recorded": STRICT})
    with pytest.raises(LadrError, match="give a schema"):
        tune_request_match(ev, {"n": 3})
    with pytest.raises(LadrError, match="must be a non-empty JSON Schema|is not a valid JSON Schema"):
        tune_request_match(ev, {"bad": {"type": "objekt"}})
    with pytest.raises(LadrError, match="does not exist"):
        tune_request_match(ev.out / "missing", VARIANTS)


# ---- properties ---------------------------------------------------------------------------------------------

_JSON_OBJECTS = st.dictionaries(st.sampled_from(["files", "request", "answer", "topK"]),
                                st.one_of(st.integers(0, 3), st.lists(st.sampled_from(["a.md", "b.md"]),
                                                                      max_size=2), st.text(max_size=3)),
                                max_size=3)
_OUTPUTS = st.one_of(_JSON_OBJECTS.map(json.dumps), st.sampled_from(["Plain prose.", "[1, 2]", "42", ""]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_OUTPUTS, st.sampled_from(["request", "answer", None])), min_size=1, max_size=8))
def test_counts_add_up_and_the_any_object_schema_finds_every_json_object_request(rows, ladder, slates):
    lad = ladder(STEP % (3, json.dumps({"type": "object", "required": ["never"]})))
    traces, labels = [], {}
    for n, (output, label) in enumerate(rows, 1):
        run = Run(lad, model=ScriptedModel([output]), input="q", slates=slates)
        run.run()
        traces.append((f"x{n}", run.trace))
        if label is not None:
            labels[(f"x{n}", "research", 1)] = label
    t = tune_request_match(traces, {"any object": {"type": "object"}, **VARIANTS}, labels=labels)
    # a JSON object the any-object schema takes is a request when it names a mode ("files", or "request" holding
    # one), else a request that fetches nothing (no_match)
    def names_mode(text: str) -> bool:
        obj = json.loads(text)
        inner = obj["request"] if isinstance(obj.get("request"), dict) else obj
        return "files" in inner
    objects = {o.key for o in t.outputs if o.output.startswith("{") and names_mode(o.output)}
    empty = {o.key for o in t.outputs if o.output.startswith("{") and not names_mode(o.output)}
    assert {o.key for o, v in zip(t.outputs, t.verdicts["any object"], strict=True) if v.verdict == "no_match"} == empty
    for s in t.score_rows():
        assert s["tp"] + s["fp"] + s["fn"] + s["tn"] == s["labelled"] == len(labels)
        assert s["tp"] + s["fp"] <= s["requests"] <= s["judged"] == len(rows)
    found = {name: {o.key for o, v in zip(t.outputs, t.verdicts[name], strict=True)
                    if v.verdict == "request" and t.labels.get(o.key) == "request" and o.key in objects}
             for name in t.variants}
    assert all(found[name] <= found["any object"] for name in t.variants)
    assert found["any object"] == {k for k in objects if t.labels.get(k) == "request"}


# issue 31: a bare JSON array a variant accepts was a "request" to `trace tune` while `trace rejudge` said it fetches
# nothing; one meaning in both: a request that names no mode fetches nothing (no_match), and scores as such
def test_a_json_array_a_variant_accepts_is_a_request_that_fetches_nothing_in_tune_and_rejudge(ladder, slates):
    from ladr_lab import rejudge
    lad = ladder(STEP % (2, json.dumps(STRICT)))
    either = ladder(STEP % (2, json.dumps({"type": ["object", "array"]})))
    traces = []
    for row, output in (("arr", '["core.md"]'), ("obj", '{"files": ["core.md"]}')):
        run = Run(lad, model=ScriptedModel([output, "Done."]), input="q", slates=slates)
        run.run()
        traces.append((row, run.trace))
    t = tune_request_match(traces, {"either": either}, labels={("arr", "research", 1): "request",
                                                                ("obj", "research", 1): "request"})
    first = {r["row"]: r for r in t.table_rows("either") if r["round"] == 1}
    assert first["arr"]["verdict"] == "no_match" and first["obj"]["verdict"] == "request"
    assert "a JSON array: it names no retrieval mode, so the round fetches nothing" in first["arr"]["reason"]
    s = score(t, "either")
    assert (s["requests"], s["tp"], s["fn"], s["fp"]) == (2, 1, 1, 0)    # the array is a missed request, not a hit
    (flip,) = [r for r in rejudge(traces[0][1], either, slates=slates) if r["flipped"]]
    assert flip["form"] == "bare" and [f["status"] for f in flip["fetch"]] == ["no_match"]
    # labelled an answer instead, taking it as a request loses the answer: a false positive
    t.set_label("arr", "research", 1, "answer")
    assert (score(t, "either")["fp"], score(t, "either")["tn"]) == (1, 0)


def test_with_no_labels_it_says_how_to_add_them_and_writes_a_sheet_that_reads_back(lad, slates, tmp_path):
    from ladr_lab.analysis.labels import load_labels
    traces = []
    for row, script in SCRIPT.items():
        run = Run(lad, model=ScriptedModel(script), input="q", slates=slates)
        run.run()
        traces.append((row, run.trace))
    t = tune_request_match(traces, VARIANTS)
    assert not t.labels and "--write-labels labels.csv" in t.to_text() and "--labels labels.csv" in t.to_text()
    sheet = t.save_label_sheet(tmp_path / "labels.csv")
    lines = sheet.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "row,step,node,round,iteration,label,recorded,output" and len(lines) == 1 + len(t.outputs)
    assert load_labels(sheet) == {}                                       # blank labels: nothing labelled yet
    filled = [line.replace(",,request,", ",request,request,", 1) for line in lines]
    sheet.write_text("\n".join(filled) + "\n", encoding="utf-8")
    got = load_labels(sheet)
    assert got and set(got.values()) == {"request"} and len(got) == sum(",request,request," in ln for ln in filled)
    labelled = tune_request_match(traces, VARIANTS, labels=sheet)
    assert "no labels yet" not in labelled.to_text() and score(labelled, RECORDED)["tp"] == len(got)


def test_trace_tune_writes_labels_and_names_its_step_flag(ev, tmp_path):
    from ladr_lab.cli import main
    sheet = tmp_path / "l.csv"
    schema = tmp_path / "loose.json"
    schema.write_text(json.dumps(LOOSE), encoding="utf-8")
    assert main(["trace", "tune", str(ev.out), "--variant", f"loose={schema}", "--write-labels", str(sheet)]) == 0
    assert sheet.read_text(encoding="utf-8").startswith("row,step,node,round,iteration,label")
