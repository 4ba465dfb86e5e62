"""A suggested requestMatch from labelled outputs (issue 32): valid and accepted by the loader and the lint rules,
its reported figures equal to a recount by tune_request_match, F1 = 1 on outputs drawn from a known schema with
clean labels, collisions reported on contradictory labels, each constraint explained, never refusing the
systemPrompt's example, cross-validated; the next outputs to label; `trace tune --suggest / --next`."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab import suggest_request_match, tune_request_match
from ladr_lab.analysis.lint_rules import looseness, prompt_examples
from ladr_lab.analysis.suggest import build_schema, genson_schema
from ladr_lab.config import iter_schema_problems, load_ladder_text
from ladr_lab.config.rewrite import replace_schema
from ladr_lab.round.verdict import schema_failure
from ladr_lab.trace import Trace

SYSTEM = 'Read the files first: reply with only {"files": ["retrieve/dedup.md"]} and nothing else.'
LADDER = """
name: t
slates:
  - title: Knowledge
    folders:
      - name: docs
steps:
  - id: research
    fields:
      - { name: Question, type: text, from: input.context }
      - { name: Index, type: slateRead, from: { slate: Knowledge, folder: docs, metatag: index } }
    retrieve:
      to: { slate: Knowledge, folder: docs }
      as: Docs
      maxRounds: 3
      requestMatch: { type: object, required: [files] }
    systemPrompt: %s
"""


def trace_of(outputs: list[str], system: str = SYSTEM, step: str = "research") -> Trace:
    """A recorded run whose retrieve step gave these outputs, round after round (no model, no engine)."""
    events: list[dict] = [{"type": "run_start", "ladder": "t", "model": "m", "inputs": {}, "budget": {}}]
    for n, out in enumerate(outputs, 1):
        events.append({"type": "llm_call", "step": step, "node": 1, "round": n, "iteration": 1,
                       "messages": [{"role": "system", "content": system}] if n == 1 else [], "output": out,
                       "forced_final": False, "request_match": "retrieval", "model": "m"})
    return Trace.of(events)


def data_set(rows: dict[str, list[tuple[str, str]]], system: str = SYSTEM):
    """(traces, labels) from {row: [(output, label), ...]}."""
    traces = [(row, trace_of([o for o, _ in outs], system)) for row, outs in rows.items()]
    labels = {(row, "research", n): lab for row, outs in rows.items() for n, (_, lab) in enumerate(outs, 1)}
    return traces, labels


def small_rows(n: int = 12) -> dict[str, list[tuple[str, str]]]:
    rows = {}
    for i in range(n):
        outs = [(json.dumps({"files": [f"retrieve/f{i}.md"]}), "request"),
                (json.dumps({"answer": f"it is {i}", "id": i}), "answer"),
                (f"Plain prose answer {i}, from retrieve/f{i}.md.", "answer")]
        rows[f"q{i:02}"] = outs
    return rows


def score_of(tuning, name):
    return next(r for r in tuning.score_rows() if r["variant"] == name)


# ---- the suggestion on a plain data set ---------------------------------------------------------------------

def test_the_suggestion_separates_requests_from_json_answers_and_says_why():
    traces, labels = data_set(small_rows())
    s = suggest_request_match(traces, labels=labels)
    assert s.separable and s.schema is not None
    assert s.schema == {"type": "object", "required": ["files"], "properties": {"files": {}}}       # the simplest that does the work
    assert (s.best.tp, s.best.fp, s.best.fn, s.best.tn) == (12, 0, 0, 24)
    (e,) = s.best.explanations
    # the JSON answers are the ones it separates; the prose answers are answers under any schema
    assert e.text.startswith("`required: [files]` rejects the 12 answer(s) that lack `files`")
    assert len(e.answers) == 12 and not e.requests
    assert "rejects the 12 answer(s)" in s.to_text() and "cross-validated (5 folds" in s.to_text()


def test_reported_figures_equal_a_recount_by_tune_request_match():
    traces, labels = data_set(small_rows())
    s = suggest_request_match(traces, labels=labels)
    t = tune_request_match(traces, s.variants(), labels=labels)
    for f in s.frontier:
        r = score_of(t, f.name)
        assert (r["tp"], r["fp"], r["fn"], r["tn"]) == (f.tp, f.fp, f.fn, f.tn)
        assert r["precision"] == f.precision and r["recall"] == f.recall


def test_a_closed_key_set_is_explained_by_the_keys_the_answers_carry():
    # the answers carry `files` too (a citation list): required cannot separate them, a closed key set can
    rows = {}
    for i in range(8):
        rows[f"q{i}"] = [(json.dumps({"files": [f"a/{i}.md"]}), "request"),
                         (json.dumps({"files": [f"a/{i}.md"], "answer": "yes"}), "answer")]
    traces, labels = data_set(rows)
    s = suggest_request_match(traces, labels=labels)
    assert s.best.f1 == 1.0
    texts = " ".join(e.text for e in s.best.explanations)
    assert "that carry `answer`" in texts
    assert s.schema["additionalProperties"] is False or s.schema.get("maxProperties") == 1


def test_contradictory_labels_are_reported_as_collisions_not_a_bad_schema():
    rows = small_rows(6)
    rows["dup"] = [(json.dumps({"files": ["retrieve/f1.md"]}), "answer")]     # the same JSON as q01's request
    traces, labels = data_set(rows)
    s = suggest_request_match(traces, labels=labels)
    assert not s.separable and s.schema is None and s.best is None
    (c,) = [c for c in s.collisions if c.kind == "same JSON"]
    assert c.requests == (("q01", "research", 1, 1, 1),) and c.answers == (("dup", "research", 1, 1, 1),)
    assert "cannot be separated" in s.to_text() and "q01" in s.to_text()
    with pytest.raises(Exception, match="collision"):
        s.save("/tmp/never-written.json")


def test_answers_that_have_every_request_feature_collide_by_shape():
    rows = small_rows(6)
    # an answer labelled so, though it is shaped exactly as the requests are (no schema of the family keeps the
    # requests and refuses it)
    rows["odd"] = [(json.dumps({"files": ["retrieve/f9.md"]}), "answer")]
    traces, labels = data_set(rows)
    s = suggest_request_match(traces, labels=labels)
    assert [c.kind for c in s.collisions] == ["shape"]
    assert s.collisions[0].answers == (("odd", "research", 1, 1, 1),)


def test_requests_that_name_no_mode_are_unreachable_not_fitted():
    rows = small_rows(6)
    rows["bare"] = [('```json\n["retrieve/dedup.md"]\n```', "request")]       # a bare list: fetches nothing
    traces, labels = data_set(rows)
    s = suggest_request_match(traces, labels=labels)
    assert s.unreachable == [("bare", "research", 1, 1, 1)]
    assert s.schema == {"type": "object", "required": ["files"], "properties": {"files": {}}}
    assert "no schema can make fetch" in s.to_text()


def test_the_prompt_example_is_fitted_as_a_request_so_no_constraint_refuses_it():
    # every request asks for one file, the prompt's example for two: maxItems 1 would refuse the example; the
    # family is fitted to the example too, so it offers maxItems 2, which still rejects the three-file answers
    system = 'Reply {"files": ["a.md", "b.md"]} to read, then answer.'
    rows = {}
    for i in range(8):
        rows[f"q{i}"] = [(json.dumps({"files": [f"x{i}.md"]}), "request"),
                         (json.dumps({"files": [f"x{i}.md", "y.md", "z.md"]}), "answer")]
    traces, labels = data_set(rows, system)
    s = suggest_request_match(traces, labels=labels)
    assert s.best.f1 == 1.0 and "files: {maxItems: 2}" in s.best.constraints
    for f in s.frontier:
        assert "files: {maxItems: 1}" not in f.constraints
        for example in prompt_examples(system):
            assert schema_failure(example, f.schema) is None
    # with no example to keep, maxItems 1 does the work
    s2 = suggest_request_match(traces, labels=labels, system_prompt="")
    assert s2.best.f1 == 1.0 and "files: {maxItems: 1}" in s2.best.constraints


def test_an_example_that_names_no_mode_is_kept_by_leaving_out_what_refuses_it():
    system = 'Reply {"request": "the file you want"} to read.'        # a request key, but no mode: not fitted
    rows = {f"q{i}": [(json.dumps({"files": [f"x{i}.md"]}), "request"), (json.dumps({"answer": f"a{i}"}), "answer")]
            for i in range(6)}
    traces, labels = data_set(rows, system)
    s = suggest_request_match(traces, labels=labels, folds=0)
    assert ("required: [files]", "it refuses the systemPrompt's request example") in s.left_out
    for f in s.frontier:
        assert schema_failure({"request": "the file you want"}, f.schema) is None


def test_the_wrapped_form_is_fitted_from_wrapped_requests():
    rows = {}
    for i in range(6):
        rows[f"q{i}"] = [(json.dumps({"request": {"files": [f"d/{i}.md"]}, "topK": 3}), "request"),
                         (json.dumps({"result": "done", "request": "was answered"}), "answer"),
                         (json.dumps({"request": {"note": "x"}}), "answer")]
    traces, labels = data_set(rows, 'Emit {"request": {"files": ["d/1.md"]}}')
    s = suggest_request_match(traces, labels=labels)
    assert s.best.form == "wrapped" and s.best.f1 == 1.0
    assert s.schema["required"] == ["request"]


def test_cross_validation_folds_are_fitted_without_their_labels():
    traces, labels = data_set(small_rows(10))
    s = suggest_request_match(traces, labels=labels, folds=5)
    assert len(s.folds) == 5
    assert sum(f.held_out for f in s.folds) == len(labels)
    cv = s.cross_validated()
    assert (cv["tp"] + cv["fn"], cv["fp"] + cv["tn"]) == (10, 20)
    assert cv["f1"] == 1.0
    assert suggest_request_match(traces, labels=labels, folds=0).folds == []


def test_next_to_label_prefers_what_the_visited_schemas_disagree_on():
    rows = small_rows(6)
    rows["new"] = [(json.dumps({"files": ["a.md"], "answer": "both"}), "answer")]
    traces, labels = data_set(rows)
    del labels[("new", "research", 1)]
    s = suggest_request_match(traces, labels=labels)
    (first,) = s.next_to_label(1)
    assert (first.row, first.round) == ("new", 1)          # the only one unlabelled
    # unlabelled everything: one per distinct JSON value, JSON before prose
    nothing = suggest_request_match(traces, labels={}, folds=0)
    picked = nothing.next_to_label(3)
    assert len(picked) == 3 and len({o.output for o in picked}) == 3
    assert nothing.schema is None and "no labels" in nothing.to_dict()["why_none"]


def test_genson_baseline_is_the_positive_only_schema():
    pytest.importorskip("genson")
    schema = genson_schema([{"files": ["a.md"]}, {"files": ["b.md", "c.md"]}])
    assert schema["required"] == ["files"] and schema["properties"]["files"]["type"] == "array"


# ---- properties ---------------------------------------------------------------------------------------------

MODES_USED = ("files", "glob", "subfolders")
KEYS = st.sampled_from(["answer", "result", "id", "note", "source", "files", "glob"])
SCALARS = st.one_of(st.integers(-5, 50), st.text("abc./ ", max_size=8), st.booleans())
PATHS = st.lists(st.from_regex(r"[a-z]{1,6}/[a-z]{1,6}\.md", fullmatch=True), min_size=1, max_size=3)


@st.composite
def known_schema_data(draw):
    """Outputs drawn around a known schema of the family, labelled by it (clean labels)."""
    form = draw(st.sampled_from(["bare", "wrapped"]))
    mode = draw(st.sampled_from(MODES_USED))
    closed = draw(st.booleans())
    max_items = draw(st.integers(1, 3))
    inner = {"type": "object", "required": [mode],
             "properties": {mode: {"type": "array", "items": {"type": "string"}, "maxItems": max_items}}}
    if closed:
        inner["additionalProperties"] = False
    truth = inner if form == "bare" else {"type": "object", "required": ["request"], "properties": {"request": inner}}
    outputs = []
    for _ in range(draw(st.integers(6, 14))):
        kind = draw(st.sampled_from(["request", "json", "prose", "near"]))
        if kind == "request":
            req = {mode: draw(PATHS)[:max_items]}
            value = req if form == "bare" else {"request": req}
        elif kind == "near":            # a request's key with something the schema refuses
            req = {mode: draw(PATHS), draw(KEYS): draw(SCALARS)}
            value = req if form == "bare" else {"request": req}
        elif kind == "json":
            value = draw(st.dictionaries(KEYS, SCALARS, min_size=1, max_size=3))
        else:
            value = None
        outputs.append("The answer is in the handbook." if value is None else json.dumps(value))
    return truth, outputs


def label_by(schema, outputs):
    from ladr_lab.round.verdict import judge
    out = []
    for o in outputs:
        v = judge(o, schema)
        req = v.request if v.is_request else None
        out.append("request" if v.is_request and req and any(m in req for m in MODES_USED) else "answer")
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(known_schema_data())
def test_outputs_from_a_known_schema_with_clean_labels_are_recovered_with_f1_one(data):
    truth, outputs = data
    labels = label_by(truth, outputs)
    if "request" not in labels:
        return
    rows = {f"r{i}": [(o, lab)] for i, (o, lab) in enumerate(zip(outputs, labels, strict=True))}
    traces, lab = data_set(rows, system="")
    s = suggest_request_match(traces, labels=lab, folds=0, system_prompt="")
    assert not s.collisions, s.to_text()
    assert s.best is not None and s.best.f1 == 1.0, s.to_text()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(known_schema_data(), st.lists(st.booleans(), min_size=14, max_size=14))
def test_every_suggested_schema_is_valid_accepted_by_loader_and_lint_and_recounts(data, flips):
    truth, outputs = data
    labels = label_by(truth, outputs)
    labels = [("answer" if lab == "request" else "request") if flip and i % 4 == 0 else lab
              for i, (lab, flip) in enumerate(zip(labels, flips, strict=False))]
    rows = {f"r{i}": [(o, lab)] for i, (o, lab) in enumerate(zip(outputs, labels, strict=True))}
    system = 'Reply {"files": ["a/b.md"]} to read.'
    traces, lab = data_set(rows, system)
    s = suggest_request_match(traces, labels=lab, folds=3)
    ladder = load_ladder_text(LADDER % json.dumps(system))
    recount = tune_request_match(traces, s.variants(), labels=lab) if s.frontier else None
    for f in s.frontier:
        assert not [p for p in iter_schema_problems(f.schema) if p.severity == "error"]
        replace_schema(ladder, "research", f.schema)            # the loader accepts it (ConfigErrors otherwise)
        assert looseness(f.schema) is None
        assert all(schema_failure(e, f.schema) is None for e in prompt_examples(system))
        r = score_of(recount, f.name)
        assert (r["tp"], r["fp"], r["fn"], r["tn"]) == (f.tp, f.fp, f.fn, f.tn)
    if s.collisions:
        assert s.schema is None


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["bare", "wrapped"]), st.lists(st.sampled_from(["required", "closed", "max"]), unique=True))
def test_the_schema_of_a_conjunction_accepts_what_each_constraint_accepts(form, kinds):
    # the search's shortcut: a schema of several constraints accepts a value exactly when each alone does
    from ladr_lab.analysis.suggest import _family
    fam = _family(form, [{"files": ["a.md"]} if form == "bare" else {"request": {"files": ["a.md"]}}])
    picked = [c for c in fam if (c.kind == "required" and "required" in kinds) or (c.kind == "closed" and "closed" in kinds)
              or (c.kind == "max-items" and "max" in kinds)]
    probes = [{"files": ["a.md", "b.md"]}, {"files": ["a.md"], "x": 1}, {"x": 1}, {"request": {"files": ["a"]}},
              {"request": {"files": ["a", "b"], "y": 2}}, {"request": {}}, {}]
    whole = build_schema(form, picked)
    for p in probes:
        each = all(schema_failure(p, build_schema(form, [c])) is None for c in picked) and \
            schema_failure(p, build_schema(form, [])) is None
        assert (schema_failure(p, whole) is None) == each


# ---- the command line -----------------------------------------------------------------------------------------

def write_traces(folder: Path, rows) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for row, outs in rows.items():
        trace_of([o for o, _ in outs]).to_jsonl(folder / f"{row}.jsonl")
    return folder


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ladr_lab", *args], capture_output=True, text=True, timeout=120)


def test_trace_tune_suggest_writes_a_variant_that_scores_the_same(tmp_path):
    rows = small_rows(8)
    folder = write_traces(tmp_path / "traces", rows)
    _, labels = data_set(rows)
    csv = tmp_path / "labels.csv"
    from ladr_lab import save_labels
    save_labels(labels, csv)
    out = tmp_path / "suggested.json"
    r = cli("trace", "tune", str(folder), "--labels", str(csv), "--suggest", "--suggest-out", str(out), "--folds", "2")
    assert r.returncode == 0, r.stderr
    assert "suggested requestMatch for step research" in r.stdout and "rejects the 8 answer(s)" in r.stdout
    assert json.loads(out.read_text()) == {"type": "object", "required": ["files"], "properties": {"files": {}}}
    r2 = cli("trace", "tune", str(folder), "--labels", str(csv), "--variant", f"suggested={out}", "--json")
    scores = {s["variant"]: s for s in json.loads(r2.stdout)["scores"]}
    assert (scores["suggested"]["tp"], scores["suggested"]["fp"]) == (8, 0) and scores["suggested"]["f1"] == 1.0


def test_trace_tune_next_lists_unlabelled_outputs_and_json_says_why_none(tmp_path):
    rows = small_rows(4)
    rows["dup"] = [(json.dumps({"files": ["retrieve/f1.md"]}), "answer")]
    folder = write_traces(tmp_path / "traces", rows)
    _, labels = data_set(rows)
    labels.pop(("q03", "research", 2))
    csv = tmp_path / "labels.csv"
    from ladr_lab import save_labels
    save_labels(labels, csv)
    r = cli("trace", "tune", str(folder), "--labels", str(csv), "--next", "1", "--suggest", "--json")
    assert r.returncode == 1                     # nothing suggested: the labels collide
    got = json.loads(r.stdout)
    assert got["suggestion"]["schema"] is None and got["suggestion"]["collisions"][0]["kind"] == "same JSON"
    assert [(n["row"], n["round"]) for n in got["next"]] == [("q03", 2)]
    r = cli("trace", "tune", str(folder), "--next", "0")
    assert r.returncode == 1 and "--next 0" in r.stderr
    r = cli("trace", "tune", str(folder))
    assert r.returncode == 1 and "--suggest" in r.stderr


def test_nan_free_json_of_a_suggestion():
    traces, labels = data_set(small_rows(4))
    d = suggest_request_match(traces, labels=labels, folds=2).to_dict()
    text = json.dumps(d, allow_nan=False)
    assert d["best"]["f1"] == 1.0 and "NaN" not in text and not math.isnan(d["cross_validated"]["f1"])


def test_the_two_forms_keep_their_constraints_apart():
    # the bare and the wrapped family both have `required: [files]` on the request object: each is judged in its
    # own form (the same constraint judged in the wrong form refused every bare request: F1 0.05 on real data)
    rows = small_rows(8)
    rows["w"] = [(json.dumps({"request": {"files": ["retrieve/w.md"]}}), "request")]
    traces, labels = data_set(rows, system="")
    s = suggest_request_match(traces, labels=labels, folds=0, system_prompt="")
    assert s.best.form == "both" and (s.best.tp, s.best.fn) == (9, 0)
    bare, wrapped = s.best.schema["anyOf"]
    assert bare["required"] == ["files"] and wrapped["properties"]["request"]["type"] == "object"
    assert all(f.tp == 1 for f in s.frontier if f.form == "wrapped")
    assert all(f.tp == 8 for f in s.frontier if f.form == "bare")


def test_the_recorded_system_prompt_is_kept_by_the_tuning_and_its_example_honoured():
    system = 'Reply {"request": {"files": ["a.md"]}} to read.'         # the wrapped form is the prompt's
    rows = {f"q{i}": [(json.dumps({"files": [f"x{i}.md"]}), "request"), ("Prose.", "answer")] for i in range(5)}
    traces, labels = data_set(rows, system)
    t = tune_request_match(traces, {}, labels=labels)
    assert t.prompts == {"research": system}
    s = suggest_request_match(t, folds=0)                 # a SchemaTuning: the prompt comes with it
    assert s.examples == [{"request": {"files": ["a.md"]}}]
    # every bare constraint that keeps the schema from being loose refuses the wrapped example: the suggestion
    # joins the bare requests' schema with the example's form
    assert s.schema is not None and schema_failure(s.examples[0], s.schema) is None
    assert s.best.form == "both" and s.best.tp == 5


def test_next_to_label_asks_for_the_missing_label_and_skips_json_already_labelled():
    rows = {f"q{i}": [(json.dumps({"files": ["same.md"]}), "request"), (f"Prose answer {i}.", "answer"),
                      (json.dumps({"answer": f"a{i}"}), "answer")] for i in range(5)}
    traces, labels = data_set(rows)
    given = {("q0", "research", 1): "request"}
    s = suggest_request_match(traces, labels=given, folds=0)
    first = s.next_to_label(3)
    # no answer labelled yet: what the suggestion takes for answers comes first; the other copies of q0's JSON last
    assert all(o.round in (2, 3) for o in first[:2])
    assert all(not (o.round == 1) for o in s.next_to_label(8)[:8])


def test_the_suggestion_as_an_experiment_variant_is_rejudged_without_a_model_call(tmp_path):
    from ladr_lab import experiment, load_ladder
    from ladr_lab.models import ScriptedModel
    root = Path(__file__).resolve().parents[2]
    lad = load_ladder(root / "examples" / "research_small.yaml")
    rows = [{"id": f"q{i}", "context": f"question {i}"} for i in range(3)]

    def answers(messages, call):
        return '{"files": ["retrieve/dedup.md"]}' if call.round == 1 else '{"answer": "Dedup is per step."}'
    exp = experiment({"base": lad}, rows, model=ScriptedModel(answers, reads_schemas=False), out=tmp_path / "e",
                     progress=False)
    labels = {(f"q{i}", "research", r): ("request" if r == 1 else "answer") for i in range(3) for r in (1, 2)}
    s = suggest_request_match(exp.traces("base"), labels=labels, folds=0)
    assert s.schema == {"type": "object", "required": ["files"], "properties": {"files": {}}}

    def refuse(messages, call):
        raise AssertionError("the model was called")
    again = experiment({"base": lad, "suggested": s.to_ladder(lad)}, rows,
                       model=ScriptedModel(refuse, reads_schemas=False), out=tmp_path / "e", rejudge="only",
                       progress=False)
    cells = [r for r in again.rows if r["variant"] == "suggested"]
    assert len(cells) == 3 and all(r["status"] == "completed" for r in cells)
    assert all(r["source"] != "run" for r in cells)


def test_requests_written_both_ways_get_an_anyof_of_the_two_forms():
    rows = {}
    for i in range(6):
        rows[f"q{i}"] = [(json.dumps({"files": [f"a/{i}.md"]}), "request"),
                         (json.dumps({"request": {"glob": f"d{i}/*.md"}}), "request"),
                         (json.dumps({"answer": f"a{i}", "source": f"a/{i}.md"}), "answer")]
    traces, labels = data_set(rows, system="")
    s = suggest_request_match(traces, labels=labels, folds=0, system_prompt="")
    assert not s.collisions and s.best is not None
    # each form alone misses the other form's 6 requests; their anyOf takes all 12 and no answer
    assert s.best.form == "both" and (s.best.tp, s.best.fp, s.best.fn) == (12, 0, 0)
    assert set(s.schema) == {"anyOf"} and len(s.schema["anyOf"]) == 2
    assert all(t.startswith(("bare form: ", "wrapped form: ")) for t in s.best.constraints)
    head = s.best.explanations[0]
    assert head.constraint == "anyOf" and len(head.requests) == 12 and "both ways" in head.text
    assert "bare form alone takes 6" in head.text and "wrapped form alone takes 6" in head.text
    assert "no folds asked" in s.to_text()
    # the figures are the Judge's, not the bit counts': a recount agrees
    t = tune_request_match(traces, {"s": s.schema}, labels=labels)
    row = next(r for r in t.score_rows() if r["variant"] == "s")
    assert (row["tp"], row["fp"], row["fn"]) == (12, 0, 0)
    # the schemas of one form stay on offer (simpler, lower recall)
    assert {f.form for f in s.frontier} >= {"both"}
    assert all(f.form != "both" or f.recall >= g.recall for f in s.frontier for g in s.frontier if g.form != "both")


def test_the_examples_form_joins_the_labelled_form_when_the_model_writes_the_other():
    system = 'Reply {"request": {"files": ["a.md"]}} to read.'         # the wrapped form is the prompt's
    rows = {f"q{i}": [(json.dumps({"files": [f"x{i}.md"]}), "request"), ("Prose.", "answer"),
                      (json.dumps({"answer": f"a{i}"}), "answer")] for i in range(5)}
    traces, labels = data_set(rows, system)
    s = suggest_request_match(traces, labels=labels, folds=0)
    # a bare schema alone refuses the prompt's example: the suggestion is the anyOf that also takes the example
    assert s.best is not None and s.best.form == "both" and s.best.f1 == 1.0
    assert schema_failure({"request": {"files": ["a.md"]}}, s.schema) is None
    assert all(schema_failure({"request": {"files": ["a.md"]}}, f.schema) is None for f in s.frontier)


# ---- a stranger's review (issue 32): what a real model and a real user give ------------------------------------

def test_on_collisions_the_frontier_is_not_named_as_suggestions():
    rows = small_rows(6)
    rows["dup"] = [(json.dumps({"files": ["retrieve/f1.md"]}), "answer")]
    traces, labels = data_set(rows)
    s = suggest_request_match(traces, labels=labels, folds=0)
    assert s.schema is None and s.frontier
    assert all(f.name.startswith("frontier-") for f in s.frontier)
    assert not any(n.startswith("suggested") for n in s.tuning.variants)


def test_requests_with_a_null_or_a_list_suggest_without_a_traceback_and_say_whether_constrain_holds_them():
    from ladr_lab.errors import LadrError
    from ladr_lab.models.constrain import lower_schema
    rows = {}
    for i in range(8):
        files = None if i % 2 else [f"a/{i}.md"]
        rows[f"q{i}"] = [(json.dumps({"files": files}), "request"), (json.dumps({"answer": f"a{i}"}), "answer")]
    traces, labels = data_set(rows, system="")
    s = suggest_request_match(traces, labels=labels, folds=0, system_prompt="")
    assert s.best is not None and s.best.f1 == 1.0
    for f in s.frontier:
        try:
            lower_schema(json.loads(json.dumps(f.schema)), "requestMatch", "")
            holds = True
        except LadrError:
            holds = False
        assert holds is (f.constrain is None), (f.schema, f.constrain)
    # a required key is named under properties too, so `constrain: request` can hold the simplest schema
    assert s.best.constrain is None and s.best.schema["properties"]["files"] == {}


def test_a_model_writing_bare_with_a_wrapped_example_is_explained_as_such():
    system = 'Reply {"request": {"files": ["a.md"]}} to read.'
    rows = {f"q{i}": [(json.dumps({"files": [f"x{i}.md"]}), "request"), (json.dumps({"answer": f"a{i}"}), "answer")]
            for i in range(5)}
    traces, labels = data_set(rows, system)
    s = suggest_request_match(traces, labels=labels, folds=0)
    head = s.best.explanations[0].text
    assert "writes its requests bare" in head and "there for the systemPrompt's request example" in head
    assert "both ways" not in head


@pytest.mark.parametrize("k", [1, -3])
def test_folds_of_one_or_fewer_than_zero_are_refused(k, tmp_path):
    from ladr_lab.errors import LadrError
    traces, labels = data_set(small_rows(4))
    with pytest.raises(LadrError, match="2 or more"):
        suggest_request_match(traces, labels=labels, folds=k)
    folder = write_traces(tmp_path / "traces", small_rows(4))
    r = cli("trace", "tune", str(folder), "--suggest", "--folds", str(k))
    assert r.returncode != 0 and "2 or more" in r.stderr and "Traceback" not in r.stderr


def test_suggest_out_needs_suggest_and_a_bad_path_is_one_line(tmp_path):
    rows = small_rows(6)
    folder = write_traces(tmp_path / "traces", rows)
    _, labels = data_set(rows)
    from ladr_lab import save_labels
    csv = save_labels(labels, tmp_path / "labels.csv")
    r = cli("trace", "tune", str(folder), "--labels", str(csv), "--suggest-out", str(tmp_path / "s.json"))
    assert r.returncode != 0 and "give --suggest too" in r.stderr
    for bad in (tmp_path / "no" / "such" / "s.json", tmp_path):
        r = cli("trace", "tune", str(folder), "--labels", str(csv), "--suggest", "--suggest-out", str(bad))
        assert r.returncode != 0 and "cannot write it" in r.stderr and "Traceback" not in r.stderr


def test_a_labels_sheet_of_another_run_is_said_to_be_one(tmp_path):
    rows = small_rows(6)
    folder = write_traces(tmp_path / "a", rows)
    t = tune_request_match(folder, {})
    sheet = t.save_label_sheet(tmp_path / "sheet.csv")
    text = sheet.read_text()
    lines = text.splitlines()
    lines[1:] = [line.replace(",,", ",request,", 1) for line in lines[1:]]   # every output labelled request
    sheet.write_text("\n".join(lines) + "\n")
    same = tune_request_match(folder, {}, labels=sheet)
    assert same.labels and same.relabelled_outputs == []
    other_rows = {row: [(out.replace("retrieve/", "other/"), lab) for out, lab in outs] for row, outs in rows.items()}
    other = tune_request_match(write_traces(tmp_path / "b", other_rows), {}, labels=sheet)
    changed = sum(out != out.replace("retrieve/", "other/") for outs in rows.values() for out, _ in outs)
    assert len(other.relabelled_outputs) == changed > 0
    assert "a labels sheet of another run?" in other.to_text()


def test_a_spreadsheets_csv_with_a_bom_and_capitalised_columns_loads(tmp_path):
    from ladr_lab import load_labels
    p = tmp_path / "labels.csv"
    p.write_bytes("\ufeffRow,Step,Node,Round,Iteration,Label\nq1,research,1,2,1,Answer\n".encode())
    assert load_labels(p) == {("q1", "research", 1, 2, 1): "answer"}
