"""Experiments end to end with a model that answers by the question: variants × rows, one trace per cell,
assertions per cell, the summary and differences, re-judged variants (copied, replayed, unsettled or live) equal
to the same variants run with the model, and resuming after a kill."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from ladr_lab.config.loader import load_ladder_text
from ladr_lab.errors import LadrError
from ladr_lab.experiments import experiment, load_experiment
from ladr_lab.experiments.results import Experiment
from ladr_lab.models import ScriptedModel

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SMALL = (EXAMPLES / "research_small.yaml").read_text(encoding="utf-8")

# the file each question's answer is in, and what the model asks for (the "hard" row: a wrong file)
FILES = {"dedup": "retrieve/dedup.md", "rounds": "retrieve/max-rounds.md", "hard": "gates/gate-actions.md"}
ROWS = [{"id": "dedup", "context": "How does deduplication work?", "assert": ["fetched: retrieve/dedup.md"]},
        {"id": "rounds", "context": "What does maxRounds do?", "assert": "fetched: retrieve/max-rounds.md"},
        {"id": "hard", "context": "Which file says how to write a verifier?"}]


def _row_of(messages) -> str:
    text = messages[-1]["content"]
    return next(r["id"] for r in ROWS if r["context"] in text)


def _answers(json_answer: bool = False):
    """Round 1: a bare request for the row's file; later: a prose answer naming it (or the answer as JSON)."""
    def answer(messages, call):
        row = _row_of(messages)
        if call.round == 1:
            return json.dumps({"files": [FILES[row]]})
        if json_answer:
            return json.dumps({"answer": f"see {FILES[row]}"})
        return f"The answer is in {FILES[row]}: it says so."
    return answer


def _ladder(text: str = SMALL):
    return load_ladder_text(text, file=str(EXAMPLES / "variant.yaml"), base_dir=EXAMPLES)


TIGHT = SMALL.replace("        required: [files]\n", "        required: [request]\n")      # never matches a bare request
LOOSE = SMALL.replace("        required: [files]\n", "").replace("additionalProperties: false",
                                                                   "additionalProperties: true")


def test_variants_by_rows_one_trace_per_cell_and_assertions(tmp_path):
    model = ScriptedModel(_answers())
    exp = experiment({"a": _ladder(), "b": EXAMPLES / "pitfall_tight.yaml"}, ROWS, model=model, out=tmp_path,
                     asserts=["max-calls: 2", "contains: it says so"], progress=False)
    df = exp.results
    assert list(df["variant"]) == ["a", "b"] * 3 and list(df["row"]) == ["dedup", "dedup", "rounds", "rounds",
                                                                         "hard", "hard"]
    for r in exp.rows:   # one trace per cell, in its variant's folder
        assert r["trace"] == f"{r['variant']}/traces/{r['row']}.jsonl" and (tmp_path / r["trace"]).is_file()
    # `a` retrieves the right file; pitfall_tight wants {"request": ...}: the bare request is its final answer
    a = {r["row"]: r for r in exp.rows if r["variant"] == "a"}
    b = {r["row"]: r for r in exp.rows if r["variant"] == "b"}
    assert a["dedup"]["fetched:retrieve/dedup.md"] is True and a["dedup"]["passed"] is True
    assert b["dedup"]["fetched:retrieve/dedup.md"] is False and b["dedup"]["passed"] is False
    assert b["dedup"]["llm_calls"] == 1 and b["dedup"]["contains:it says so"] is False
    assert "fetched:retrieve/dedup.md" in b["dedup"]["reasons"]
    # a row's own assertion is not checked on other rows: None there, and not counted in the pass rate
    assert "fetched:retrieve/dedup.md" not in a["hard"] and pd.isna(df.loc[4, "fetched:retrieve/dedup.md"])
    s = {r["variant"]: r for r in exp.summary_rows()}
    assert (s["a"]["pass_rate"], s["b"]["pass_rate"]) == (1.0, 0.0) and s["b"]["Δ pass_rate"] == -1.0
    assert s["a"]["calls_mean"] == 2.0 and s["b"]["calls_mean"] == 1.0
    assert s["a"]["contains:it says so"] == 1.0 and s["b"]["max-calls:2"] == 1.0
    diff = exp.differences()
    assert list(diff["row"]) == ["dedup", "rounds", "hard"]
    assert list(diff["passed.a"]) == [True, True, True] and list(diff["passed.b"]) == [False, False, False]
    assert (tmp_path / "results.csv").is_file() and (tmp_path / "summary.csv").is_file()
    manifest = json.loads((tmp_path / "experiment.json").read_text())
    assert [v["name"] for v in manifest["variants"]] == ["a", "b"]


def _cmp(exp: Experiment) -> list[dict]:
    keep = ("variant", "row", "status", "output", "llm_calls", "tokens_in", "tokens_out", "passed", "writes",
            "gates")
    return [{k: r.get(k) for k in keep} for r in exp.rows]


@pytest.mark.parametrize("json_answer", [False, True])
def test_rejudged_cells_equal_cells_run_with_the_model(tmp_path, json_answer):
    """A variant that differs only in requestMatch is not run again, and its cells are what running it gives:
    TIGHT makes every round-1 request the final answer (replayed: fewer calls); LOOSE takes the JSON answer as
    one more request (replayed until the recording ends, then live)."""
    variants = {"a": _ladder(), "tight": _ladder(TIGHT), "loose": _ladder(LOOSE), "same": _ladder(
        SMALL.replace("maxItems: 3", "maxItems: 5"))}
    calls = []

    def counted(messages, call):
        calls.append(call.round)
        return _answers(json_answer)(messages, call)

    rejudged = experiment(variants, ROWS, model=ScriptedModel(counted, reads_schemas=False), out=tmp_path / "r",
                          progress=False)
    n_rejudged = len(calls)
    run = experiment(variants, ROWS, model=ScriptedModel(_answers(json_answer)), out=tmp_path / "o",
                     rejudge="off", progress=False)
    assert _cmp(rejudged) == _cmp(run)
    src = {(r["variant"], r["row"]): r["source"] for r in rejudged.rows}
    assert src[("a", "dedup")] == "run" and src[("same", "dedup")] == "same as a: no verdict changes"
    assert src[("tight", "dedup")] == "re-judged from a"
    # the JSON answer is one more request under LOOSE: the recording ends there, the rest is live
    assert src[("loose", "dedup")] == ("re-judged from a, 1 call(s) live" if json_answer else
                                       "same as a: no verdict changes")
    assert all(r["source"] == "run" for r in run.rows)
    # the model was called for `a` only, plus the loose variant's calls past the recording
    assert n_rejudged == 3 * 2 + (3 if json_answer else 0)
    assert {r["variant"]: r["rejudged"] for r in rejudged.summary_rows()} == {"a": 0, "tight": 3, "loose": 3,
                                                                              "same": 3}


def test_rejudge_only_never_calls_the_model_and_says_unsettled(tmp_path):
    variants = {"a": _ladder(), "loose": _ladder(LOOSE)}
    experiment(variants, ROWS, model=ScriptedModel(_answers(True), reads_schemas=False), out=tmp_path, progress=False)

    def refuse(messages, call):
        raise AssertionError("the model was called")
    exp = experiment(variants, ROWS, model=ScriptedModel(refuse, reads_schemas=False), out=tmp_path, rejudge="only",
                     progress=False)
    loose = [r for r in exp.rows if r["variant"] == "loose"]
    assert [r["status"] for r in loose] == ["unsettled"] * 3
    assert all("recording does not have" in r["error"] for r in loose)
    assert {r["variant"]: r["unsettled"] for r in exp.summary_rows()} == {"a": 0, "loose": 3}


def test_resume_runs_only_unfinished_cells_and_rechecks_changed_assertions(tmp_path):
    calls = []

    def counted(messages, call):
        calls.append(1)
        return _answers()(messages, call)
    lad = {"a": _ladder(), "b": EXAMPLES / "pitfall_tight.yaml"}
    experiment(lad, ROWS, model=ScriptedModel(counted), out=tmp_path, progress=False)
    first = len(calls)
    # a cut last line (a kill mid-write) and a removed cell: only that cell runs again
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    kept = [ln for ln in lines if not (json.loads(ln)["variant"] == "a" and json.loads(ln)["row"] == "hard")]
    (tmp_path / "results.jsonl").write_text("\n".join(kept) + "\n" + kept[0][:40])
    exp = experiment(lad, ROWS, model=ScriptedModel(counted), out=tmp_path, progress=False,
                     asserts="contains: gate-actions")
    assert len(calls) - first == 2            # the one cell `a/hard`: two calls
    assert len(exp.rows) == 6 and exp.cell("a", "hard")["contains:gate-actions"] is True
    # the new assertion was checked on the kept cells too, without running them
    assert exp.cell("b", "dedup")["contains:gate-actions"] is False


_KILLED = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {repo!r})
    from ladr_lab.experiments import experiment
    from ladr_lab.models import ScriptedModel
    def slow(messages, call):
        time.sleep(0.3)
        return "Final answer." if call.round > 1 else json.dumps({{"files": ["retrieve/dedup.md"]}})
    rows = [{{"id": f"r{{i}}", "context": f"question {{i}}"}} for i in range(8)]
    experiment({{"a": {ladder!r}}}, rows, model=ScriptedModel(slow), out={out!r}, concurrency=1, progress=False)
""")


def test_resume_after_a_kill_in_the_middle(tmp_path):
    out = tmp_path / "exp"
    script = _KILLED.format(repo=str(REPO), ladder=str(EXAMPLES / "research_small.yaml"), out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not results.is_file() or len(results.read_text().splitlines()) < 2):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len([ln for ln in results.read_text().splitlines() if ln.strip()])
    assert 2 <= done < 8
    calls = []
    lock = threading.Lock()

    def counted(messages, call):
        with lock:
            calls.append(1)
        return "Final answer." if call.round > 1 else json.dumps({"files": ["retrieve/dedup.md"]})
    rows = [{"id": f"r{i}", "context": f"question {i}"} for i in range(8)]
    exp = experiment({"a": EXAMPLES / "research_small.yaml"}, rows, model=ScriptedModel(counted), out=out,
                     progress=False)
    assert len(calls) == 2 * (8 - done)      # only the cells the kill left unfinished ran
    assert [r["row"] for r in exp.rows] == [f"r{i}" for i in range(8)]
    assert all(r["status"] == "completed" for r in exp.rows)
    assert len(load_experiment(out).rows) == 8


def test_knob_sets_name_variants_and_change_the_prompt(tmp_path):
    exp = experiment(EXAMPLES / "research_small.yaml", ROWS[:1], model=ScriptedModel(_answers()), out=tmp_path,
                     knob_sets={"dedup": {"example": "retrieve/dedup.md"}, "gates": {"example": "gates/x.md"}},
                     progress=False)
    assert exp.variants == ["dedup", "gates"]
    prompts = [exp.trace(v, "dedup").calls()[0].messages[0]["content"] for v in exp.variants]
    assert '"retrieve/dedup.md"' in prompts[0] and '"gates/x.md"' in prompts[1]
    assert all(r["source"] == "run" for r in exp.rows)      # a knob in the prompt: each variant runs


def test_bad_arguments_are_clear_errors(tmp_path):
    with pytest.raises(LadrError, match="rejudge='sometimes'"):
        experiment(_ladder(), ROWS, rejudge="sometimes", out=tmp_path)
    with pytest.raises(LadrError, match="backend='spark'"):
        experiment(_ladder(), ROWS, backend="spark", out=tmp_path)
    with pytest.raises(LadrError, match="variant name"):
        experiment({"a b": _ladder()}, ROWS, out=tmp_path)
    with pytest.raises(LadrError, match="give the model by name"):
        experiment(_ladder(), ROWS, backend="ray", model=ScriptedModel(["x"]), out=tmp_path)
    with pytest.raises(LadrError, match="row hard.*unknown assertion kind"):
        experiment(_ladder(), [*ROWS[:2], {**ROWS[2], "assert": "contians: x"}], out=tmp_path)
    with pytest.raises(LadrError, match="no column context"):
        experiment(_ladder(), [{"id": "x", "question": "?"}], out=tmp_path)


def test_tune_scores_request_match_variants_on_the_rows_labels_without_a_model(tmp_path):
    rows = [{**r, "labels": ["request", "answer"]} for r in ROWS]
    exp = experiment({"a": _ladder()}, rows, model=ScriptedModel(_answers(True)), out=tmp_path, progress=False)
    assert exp.results["input.labels"].tolist() == [["request", "answer"]] * 3

    strict = {"type": "object", "required": ["files"], "properties": {"files": {"type": "array"}}}
    tight = {"type": "object", "required": ["request"]}
    loose = {"type": "object"}          # also takes the JSON answer {"answer": ...} as a request
    scores = {r["variant"]: r for r in exp.tune({"strict": strict, "tight": tight, "loose": loose}).score_rows()}
    assert (scores["strict"]["tp"], scores["strict"]["fp"], scores["strict"]["fn"]) == (3, 0, 0)
    assert (scores["tight"]["tp"], scores["tight"]["fn"], scores["tight"]["recall"]) == (0, 3, 0.0)
    assert (scores["loose"]["tp"], scores["loose"]["fp"], scores["loose"]["precision"]) == (3, 3, 0.5)


def test_with_a_model_that_reads_the_schemas_every_variant_runs_and_says_why(tmp_path):
    """The offline model shapes its request by requestMatch: re-judging its recorded requests against a renamed
    mode would give another answer than running it, so the variant runs (a note says why)."""
    renamed = _ladder(SMALL.replace("required: [files]", "required: [paths]").replace(
        "          files: { type: array", "          paths: { type: array"))
    exp = experiment({"a": _ladder(), "paths": renamed}, ROWS[:1], out=tmp_path / "auto", progress=False)
    ran = experiment({"a": _ladder(), "paths": renamed}, ROWS[:1], out=tmp_path / "off", rejudge="off",
                     progress=False)
    assert _cmp(exp) == _cmp(ran) and all(r["source"] == "run" for r in exp.rows)
    assert exp.notes and "offline model shapes its requests" in exp.notes[0] and "note: " in exp.format()
    assert load_experiment(tmp_path / "auto").notes == exp.notes
    # and a scripted callable is taken to read them unless it says it does not
    assert ScriptedModel(_answers()).reads_schemas and not ScriptedModel(_answers(), reads_schemas=False).reads_schemas
    assert not ScriptedModel(["x"]).reads_schemas


def test_a_ladder_that_writes_is_re_judged_on_its_own_slate_copies_without_a_call(tmp_path):
    """entity_store writes to the Memory slate: each cell writes to its own copy, so a variant that only changes
    the write's `match` replays against the slate its base saw (no live call), equals running it, and the real
    slate is never touched."""
    import shutil
    memory = tmp_path / "memory"
    shutil.copytree(REPO / "sample_slates" / "memory", memory)
    before = (memory / "registry" / "entities.md").read_text()
    text = (EXAMPLES / "entity_store.yaml").read_text()
    strict = text.replace("        minItems: 1\n", "        minItems: 2\n")
    variants = {"a": _ladder(text), "two": _ladder(strict)}

    def answer(messages, call):
        return '[{"id": "retrieve", "name": "Retrieve", "kind": "primitive"}]'
    rows = [{"id": "r1", "context": "retrieve is a step block"}]
    got = experiment(variants, rows, model=ScriptedModel(answer, reads_schemas=False), slates={"Memory": memory},
                     out=tmp_path / "r", progress=False)
    ran = experiment(variants, rows, model=ScriptedModel(answer, reads_schemas=False), slates={"Memory": memory},
                     out=tmp_path / "o", rejudge="off", progress=False)
    assert _cmp(got) == _cmp(ran)
    assert [r["writes"] for r in got.rows] == [1, 0]            # minItems 2 rejects the one-item write
    assert got.cell("two", "r1")["source"] == "re-judged from a" and got.cell("two", "r1")["live_calls"] == 0
    assert (memory / "registry" / "entities.md").read_text() == before


def test_reading_back_keeps_only_the_current_variants_and_rows(tmp_path):
    experiment({"a": _ladder(), "b": EXAMPLES / "pitfall_tight.yaml"}, ROWS, model=ScriptedModel(_answers()),
               out=tmp_path, progress=False)
    exp = experiment({"a": _ladder()}, ROWS[:2], model=ScriptedModel(_answers()), out=tmp_path, progress=False)
    back = load_experiment(tmp_path)
    assert back.variants == ["a"] and [(r["variant"], r["row"]) for r in back.rows] == [("a", "dedup"),
                                                                                        ("a", "rounds")]
    assert len(exp.rows) == 2


def test_a_rows_assertion_named_like_a_common_one_is_kept_apart(tmp_path):
    rows = [{**ROWS[0], "assert": [{"type": "contains", "value": "dedup", "name": "mentions"},
                                   {"type": "max-calls", "value": 2}]}]
    exp = experiment({"a": _ladder()}, rows, model=ScriptedModel(_answers()), out=tmp_path, progress=False,
                     asserts=[{"type": "contains", "value": "xyz", "name": "mentions"}, "max-calls: 2"])
    cell = exp.cell("a", "dedup")
    assert cell["asserts"] == ["mentions", "max-calls:2", "mentions (row)"]
    assert (cell["mentions"], cell["mentions (row)"]) == (False, True)


def test_a_row_id_of_dots_never_names_the_folder_above():
    from ladr_lab.experiments.cells import safe_name
    assert safe_name("..") == "_.." and safe_name(".") == "_." and safe_name("../x") == ".._x"


def test_rejudge_only_never_runs_a_cell_whose_base_failed(tmp_path):
    def fails_on_hard(messages, call):
        if _row_of(messages) == "hard":
            raise RuntimeError("the provider is down")
        return _answers()(messages, call)
    variants = {"a": _ladder(), "tight": _ladder(TIGHT)}
    exp = experiment(variants, ROWS, model=ScriptedModel(fails_on_hard, reads_schemas=False), out=tmp_path,
                     rejudge="only", progress=False)
    cell = exp.cell("tight", "hard")
    assert exp.cell("a", "hard")["status"] == "error"
    assert cell["status"] == "unsettled" and "a/hard has no recording to re-judge" in cell["error"]
    assert exp.cell("tight", "dedup")["source"] == "re-judged from a"


def test_rejudge_auto_goes_live_with_the_model_the_ladder_names(tmp_path):
    """No `model=`: the ladder's own `model: script:PATH` runs the base variant, and the cells of a variant whose
    verdicts flip go live with that same model (they were `unsettled` with 0 calls when only a model given on the
    command line could answer live)."""
    script = tmp_path / "answers.yaml"
    script.write_text(json.dumps({"research": [json.dumps({"files": ["retrieve/dedup.md"]}),
                                               json.dumps({"answer": "see retrieve/dedup.md: it says so"}),
                                               "The answer is in retrieve/dedup.md: it says so."]}))
    named = SMALL.replace("model: offline", f"model: script:{script}")
    assert f"model: script:{script}" in named
    variants = {"a": _ladder(named), "loose": _ladder(named.replace("        required: [files]\n", "").replace(
        "additionalProperties: false", "additionalProperties: true"))}
    exp = experiment(variants, ROWS, out=tmp_path / "exp", progress=False)
    assert exp.notes == []                         # a script answers from its list: re-judging is exact
    a = {c.row: c for c in exp.cells if c.variant == "a"}
    loose = {c.row: c for c in exp.cells if c.variant == "loose"}
    assert all(c.status == "completed" and c.llm_calls == 2 for c in a.values())
    for rid, c in loose.items():   # the JSON answer is one more request under loose: the rest is the script, live
        assert c.status == "completed", (rid, c.status, c.error)
        assert c.source.kind == "rejudged" and c.source.base == "a" and c.live_calls and c.live_calls > 0
        assert c.source.text == f"re-judged from a, {c.live_calls} call(s) live"
        # the live call was the ladder's script (a fresh copy of it, so from its first answer): no other model
        assert c.output == json.dumps({"files": ["retrieve/dedup.md"]}) and c.llm_calls == 3
