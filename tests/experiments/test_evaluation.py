"""Evaluation over many inputs: failing rows, concurrency, resumption, inputs files, slates, re-judging it whole."""
from __future__ import annotations

import json
import threading
import time

import pandas as pd
import pytest

from ladr_lab import LadrError, ScriptedModel, evaluate, load_evaluation
from ladr_lab.models import Completion

STEPS = """
- id: answer
  fields: [{ name: Q, type: text, from: input.context }]
  if:
    jsonMatches: { type: object, required: [ok] }
    then: continue
    else: prune
  slateWrite:
    to: { slate: Memory, folder: facts, file: log.md }
    match: { type: object, required: [ok] }
"""


def question(messages) -> str:
    return messages[-1]["content"].split("Q:\n", 1)[1].strip()


def answering(fail=(), interrupt=(), delay=0.0, seen=None):
    """A model that answers {"ok": <question>} and fails or interrupts on chosen questions."""
    lock = threading.Lock()
    state = {"now": 0, "max": 0}

    def answer(messages, call):
        q = question(messages)
        if seen is not None:
            seen.append(q)
        if q in interrupt:
            raise KeyboardInterrupt
        if q in fail:
            raise RuntimeError(f"model down for {q}")
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(delay)
        with lock:
            state["now"] -= 1
        return Completion(json.dumps({"ok": q}), 3, 2, cost=0.01)
    model = ScriptedModel(answer, max_concurrency=1)
    model.state = state
    return model


def frame(n: int) -> pd.DataFrame:
    return pd.DataFrame({"context": [f"q{i}" for i in range(1, n + 1)]})


def test_a_failing_row_never_stops_the_others(ladder, slates, tmp_path):
    ev = evaluate(ladder(STEPS), frame(4), model=answering(fail={"q2"}), out=tmp_path / "ev",
                  slates=slates, progress=False, concurrency=2)
    df = ev.results
    assert list(df["row"]) == ["1", "2", "3", "4"] and list(df["input.context"]) == ["q1", "q2", "q3", "q4"]
    assert list(df["status"]) == ["completed", "error", "completed", "completed"]
    bad = df[df["row"] == "2"].iloc[0]
    assert "model down for q2" in bad["error"] and bad["error_type"] == "ModelError" and bad["llm_calls"] == 0
    good = df[df["row"] == "1"].iloc[0]
    assert good["output"] == '{"ok": "q1"}' and good["llm_calls"] == 1 and good["cost"] == pytest.approx(0.01)
    assert good["gates"] == "answer#1:then→continue" and good["writes"] == 1
    assert (tmp_path / "ev" / "traces" / "3.jsonl").is_file() and (tmp_path / "ev" / "results.csv").is_file()
    assert ev.counts() == {"completed": 3, "error": 1}
    # shared slates: every row appended to the one bound file
    assert (slates["Memory"] / "facts" / "log.md").read_text().count('"ok"') == 3


def test_concurrency_is_bounded_and_used(ladder, slates, tmp_path):
    model = answering(delay=0.05)
    model.max_concurrency = 8
    ev = evaluate(ladder(STEPS), frame(8), model=model, out=tmp_path / "ev", slates=slates, progress=False,
                  concurrency=3)
    assert ev.counts() == {"completed": 8}
    assert 2 <= model.state["max"] <= 3


def test_an_interrupted_evaluation_resumes_without_redoing_finished_rows(ladder, slates, tmp_path):
    out = tmp_path / "ev"
    lad = ladder(STEPS)
    with pytest.raises(KeyboardInterrupt):
        evaluate(lad, frame(5), model=answering(interrupt={"q3"}), out=out, slates=slates, progress=False,
                 concurrency=1)
    assert [r["row"] for r in load_evaluation(out).rows] == ["1", "2"]
    seen: list[str] = []
    ev = evaluate(lad, frame(5), model=answering(seen=seen), out=out, slates=slates, progress=False, concurrency=1)
    assert seen == ["q3", "q4", "q5"] and ev.counts() == {"completed": 5}
    assert list(ev.results["row"]) == ["1", "2", "3", "4", "5"]
    # nothing left to do: no model call at all; an edited ladder runs every row again
    seen.clear()
    evaluate(lad, frame(5), model=answering(seen=seen), out=out, slates=slates, progress=False)
    assert seen == []
    evaluate(ladder(STEPS.replace("Q, type", "Q,  type")), frame(5), model=answering(seen=seen), out=out,
             slates=slates, progress=False, concurrency=1)
    assert sorted(seen) == ["q1", "q2", "q3", "q4", "q5"]


def test_inputs_from_csv_and_jsonl_with_ids(ladder, slates, tmp_path):
    csv = tmp_path / "in.csv"
    csv.write_text("id,input,topic\nalpha,first,007\nbeta,second,\n")
    ev = evaluate(ladder(STEPS), csv, model=answering(), out=tmp_path / "a", slates=slates, progress=False)
    df = ev.results
    assert list(df["row"]) == ["alpha", "beta"] and list(df["input.topic"]) == ["007", ""]
    assert list(df["output"]) == ['{"ok": "first"}', '{"ok": "second"}']
    jl = tmp_path / "in.jsonl"
    jl.write_text('{"context": "x"}\n\n{"context": "y", "id": 7}\n')
    assert [r["row"] for r in evaluate(ladder(STEPS), jl, model=answering(), out=tmp_path / "b", slates=slates,
                                        progress=False).rows] == ["1", "7"]
    with pytest.raises(LadrError, match="unique"):
        evaluate(ladder(STEPS), [{"id": 1, "context": "a"}, {"id": 1, "context": "b"}], out=tmp_path / "c")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("[1, 2]\n")
    with pytest.raises(LadrError, match="JSON object"):
        evaluate(ladder(STEPS), bad, out=tmp_path / "d")


def test_isolated_slates_give_each_row_its_own_copy(ladder, slates, tmp_path):
    out = tmp_path / "ev"
    evaluate(ladder(STEPS), frame(2), model=answering(), out=out, slates=slates, progress=False, isolate_slates=True)
    assert not (slates["Memory"] / "facts" / "log.md").exists()
    for row in ("1", "2"):
        copy = out / "slates" / row / "Memory" / "facts"
        assert (copy / "log.md").read_text().count('"ok"') == 1 and (copy / "core.md").read_text() == "Seed fact."


def test_an_evaluation_is_rejudged_as_a_whole(ladder, slates, tmp_path):
    ev = evaluate(ladder(STEPS), frame(3), model=answering(), out=tmp_path / "ev", slates=slates, progress=False)
    strict = STEPS.replace("required: [ok] }\n    then", "required: [ok], properties: { ok: { const: q2 } } }\n    then")
    table = ev.rejudge(ladder(strict))
    assert list(table["row"]) == ["1", "2", "3"] and list(table["flips"]) == [1, 0, 1]
    first = table[table["row"] == "1"].iloc[0]
    assert "jsonMatches True→False (const at /properties/ok)" in first["first_flip"]
    assert "prune" in first["effect"] and first["steps"] == "answer"
    assert list(load_evaluation(tmp_path / "ev").rejudge(ladder(strict))["flips"]) == [1, 0, 1]
