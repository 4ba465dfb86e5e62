"""`ladr-lab eval` names the columns a ladder expects and the most common row error; `trace rejudge` against a
ladder that has none of the trace's steps says so and exits 1."""
from __future__ import annotations

from ladr_lab.cli import main

LADDER = """\
name: cols
model: offline
steps:
  - id: research
    fields:
      - { name: Question, type: text, from: input.context }
"""


def test_eval_with_a_missing_column_names_the_expected_columns(tmp_path, capsys):
    (tmp_path / "l.yaml").write_text(LADDER, encoding="utf-8")
    (tmp_path / "in.csv").write_text("id,question\na,hi\nb,ho\n", encoding="utf-8")
    code = main(["eval", str(tmp_path / "l.yaml"), "--inputs", str(tmp_path / "in.csv"), "--out",
                 str(tmp_path / "ev"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    assert "no column context" in err and "reads input column(s) context" in err and "has question" in err
    assert "--input" not in err and "Traceback" not in err


def test_eval_summary_prints_the_most_common_row_error(tmp_path, capsys):
    (tmp_path / "l.yaml").write_text(LADDER.replace("input.context", "input.tone").replace(
        "Question, type: text, from: input.tone }", "Question, type: text, from: input.context }\n"
        "      - { name: Tone, type: text, from: input.tone }"), encoding="utf-8")
    (tmp_path / "in.jsonl").write_text('{"id": "a", "context": "q", "tone": "t"}\n{"id": "b", "context": "q"}\n'
                                       '{"id": "c", "context": "q"}\n', encoding="utf-8")
    code = main(["eval", str(tmp_path / "l.yaml"), "--inputs", str(tmp_path / "in.jsonl"), "--out",
                 str(tmp_path / "ev"), "--no-progress", "--concurrency", "1"])
    out = capsys.readouterr().out
    assert code == 1 and "2 of 3 rows failed; most common error (2×)" in out and "context, tone" in out


def test_trace_rejudge_against_a_ladder_without_the_traces_steps_says_so(tmp_path, capsys):
    (tmp_path / "l.yaml").write_text(LADDER, encoding="utf-8")
    trace = tmp_path / "t.jsonl"
    assert main(["run", str(tmp_path / "l.yaml"), "--input", "q", "--trace-out", str(trace), "--json"]) == 0
    (tmp_path / "other.yaml").write_text(LADDER.replace("id: research", "id: summarize"), encoding="utf-8")
    capsys.readouterr()
    code = main(["trace", "rejudge", str(trace), "--ladder", str(tmp_path / "other.yaml")])
    io = capsys.readouterr()
    text = io.out + io.err
    assert code == 1 and "0 flipped" not in text
    assert "none of the steps" in text and "the trace has research" in text and "the ladder has summarize" in text
