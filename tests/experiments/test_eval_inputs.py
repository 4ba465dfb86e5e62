"""eval: the input columns a ladder reads, a missing column said once, and the most common row error."""
from __future__ import annotations

import pytest

from ladr_lab.config import load_ladder_text
from ladr_lab.errors import LadrError
from ladr_lab.experiments import evaluate
from ladr_lab.experiments.inputs import input_columns

LADDER = """\
name: cols
model: offline
steps:
  - id: s
    fields:
      - { name: Question, type: text, from: input.context }
      - { name: Tone, type: text, from: input.tone }
"""


def test_the_columns_a_ladder_reads():
    assert input_columns(load_ladder_text(LADDER)) == ["context", "tone"]


def test_a_missing_column_names_the_expected_and_the_given_columns(tmp_path):
    csv = tmp_path / "in.csv"
    csv.write_text("id,question,tone\na,hi,dry\n", encoding="utf-8")
    with pytest.raises(LadrError) as info:
        evaluate(load_ladder_text(LADDER), csv, out=tmp_path / "out", progress=False)
    text = str(info.value)
    assert "no column context" in text and "context, tone" in text and "question, tone" in text
    assert "--input" not in text


def test_a_row_without_a_column_is_that_rows_error_and_the_summary_names_the_most_common(tmp_path):
    rows = [{"id": "a", "context": "q", "tone": "x"}, {"id": "b", "context": "q"}, {"id": "c", "context": "q"}]
    ev = evaluate(load_ladder_text(LADDER), rows, out=tmp_path / "out", progress=False, concurrency=1)
    assert ev.counts() == {"completed": 1, "error": 2}
    summary = ev.format()
    assert "2 of 3 rows failed; most common error (2×)" in summary
    assert "the ladder reads input column(s) context, tone" in summary and "--input" not in summary


def test_model_options_reach_every_row_and_a_change_of_them_runs_the_rows_again(tmp_path):
    from ladr_lab.errors import ModelError

    rows = [{"id": "a", "context": "q1", "tone": "dry"}, {"id": "b", "context": "q2", "tone": "warm"}]
    with pytest.raises(ModelError, match='model "offline" takes no options'):     # said once, before any row
        evaluate(load_ladder_text(LADDER), rows, out=tmp_path / "refused", progress=False, model_options={"seed": 1})
    assert not (tmp_path / "refused").exists()
    out = tmp_path / "out"
    opts = {"mock_response": "an answer", "temperature": 0.2}
    first = evaluate(load_ladder_text(LADDER), rows, model="gpt-4o-mini", out=out, progress=False, model_options=opts)
    assert [r["status"] for r in first.rows] == ["completed", "completed"]
    assert {r["output"] for r in first.rows} == {"an answer"}
    again = evaluate(load_ladder_text(LADDER), rows, model="gpt-4o-mini", out=out, progress=False, model_options=opts)
    assert [r["fingerprint"] for r in again.rows] == [r["fingerprint"] for r in first.rows]    # resumed, not rerun
    other = evaluate(load_ladder_text(LADDER), rows, model="gpt-4o-mini", out=out, progress=False,
                     model_options={**opts, "mock_response": "another answer"})
    assert {r["output"] for r in other.rows} == {"another answer"}      # new options: every row ran again
