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

    rejudged = experiment(variants, ROWS, model=ScriptedModel(counted), out=tmp_path / "r", progress=False)
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
    experiment(variants, ROWS, model=ScriptedModel(_answers(True)), out=tmp_path, progress=False)

    def refuse(messages, call):
        raise AssertionError("the model was called")
    exp = experiment(variants, ROWS, model=ScriptedModel(refuse), out=tmp_path, rejudge="only", progress=False)
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
