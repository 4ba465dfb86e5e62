"""`ladr-lab eval` with several ladders, knob sets or assertions runs an experiment: variants named by file stem
or NAME=FILE, exit 1 when an assertion fails, a JSON summary without NaN, usage errors for bad options; one ladder
and no experiment option is the plain evaluation, as before."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ladr_lab.cli import main
from ladr_lab.cli.eval import _rate_limit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMALL, TIGHT = str(EXAMPLES / "research_small.yaml"), str(EXAMPLES / "pitfall_tight.yaml")


@pytest.fixture
def inputs(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "q1", "context": "How does deduplication work across retrieval rounds?"}\n'
                    '{"id": "q2", "context": "What does maxRounds do?", "assert": "max-calls: 1"}\n',
                    encoding="utf-8")
    return path


def _eval(args, inputs, out, capsys) -> tuple[int, dict]:
    code = main(["eval", *args, "--inputs", str(inputs), "--out", str(out), "--no-progress", "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_two_ladders_are_two_variants_named_by_stem_or_name(tmp_path, inputs, capsys):
    code, doc = _eval([SMALL, f"tight={TIGHT}"], inputs, tmp_path / "x", capsys)
    assert doc["variants"] == ["research_small", "tight"] and doc["cells"] == 4
    # the offline model needs two calls on q2: its own `max-calls: 1` fails, so the command exits 1
    assert code == 1 and doc["failed"] == 2
    s = {r["variant"]: r for r in doc["summary"]}
    assert s["research_small"]["pass_rate"] == 0.0 and s["research_small"]["cells"] == 2
    rows = [json.loads(x) for x in (tmp_path / "x" / "results.jsonl").read_text().splitlines()]
    assert {(r["variant"], r["row"]) for r in rows} == {(v, q) for v in ("research_small", "tight")
                                                        for q in ("q1", "q2")}


def test_a_passing_assertion_exits_0_and_knob_sets_are_variants(tmp_path, inputs, capsys):
    (tmp_path / "in2.jsonl").write_text(inputs.read_text().splitlines()[0] + "\n", encoding="utf-8")
    code, doc = _eval([SMALL, "--knob-set", "one:example=retrieve/dedup.md", "--knob-set",
                       "two:example=gates/gate-actions.md", "--assert", "max-calls: 3", "--assert", "status"],
                      tmp_path / "in2.jsonl", tmp_path / "x", capsys)
    assert code == 0 and doc["variants"] == ["one", "two"] and doc["failed"] == 0
    assert all(r["pass_rate"] == 1.0 for r in doc["summary"])
    # an assertion named like a result column (`status`) keeps out of its way
    rows = [json.loads(x) for x in (tmp_path / "x" / "results.jsonl").read_text().splitlines()]
    assert {r["status"] for r in rows} == {"completed"} and all(r["assert:status"] is True for r in rows)


def test_summary_json_has_null_not_nan_without_assertions(tmp_path, capsys):
    (tmp_path / "in.csv").write_text("id,context\nq1,What does maxRounds do?\n", encoding="utf-8")
    code, doc = _eval([SMALL, TIGHT], tmp_path / "in.csv", tmp_path / "x", capsys)
    assert code == 0 and doc["summary"][0]["pass_rate"] is None


def test_one_ladder_with_an_assert_column_is_an_experiment(tmp_path, inputs, capsys):
    code, doc = _eval([SMALL], inputs, tmp_path / "x", capsys)
    assert doc["variants"] == ["research_small"] and (tmp_path / "x" / "experiment.json").is_file()
    assert code == 1 and doc["failed"] == 1


def test_one_ladder_alone_is_the_plain_evaluation(tmp_path, capsys):
    (tmp_path / "in.csv").write_text("id,context\nq1,What does maxRounds do?\n", encoding="utf-8")
    code, doc = _eval([SMALL], tmp_path / "in.csv", tmp_path / "x", capsys)
    assert code == 0 and doc["rows"] == 1 and not (tmp_path / "x" / "experiment.json").exists()
    assert (tmp_path / "x" / "traces" / "q1.jsonl").is_file()


def test_bad_experiment_options_are_usage_or_clear_errors(tmp_path, inputs, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["eval", SMALL, TIGHT, "--inputs", str(inputs), "--out", str(tmp_path / "x"), "--knob-set", "nocolon"])
    assert exc.value.code == 2 and "--knob-set takes NAME:K=V" in capsys.readouterr().err
    code = main(["eval", SMALL, TIGHT, "--inputs", str(inputs), "--out", str(tmp_path / "y"), "--no-progress",
                 "--assert", "contians: x"])
    err = capsys.readouterr().err
    assert code != 0 and "unknown assertion kind" in err and "contains" in err and "Traceback" not in err


def test_rate_limit_option_reads_one_rate_or_rates_by_provider():
    assert _rate_limit([]) is None
    assert _rate_limit(["60/min"]) == {"*": "60/min"}
    assert _rate_limit(["openai=5/s", "anthropic=50/min"]) == {"openai": "5/s", "anthropic": "50/min"}


def test_a_variant_name_given_twice_is_a_clear_error(tmp_path, inputs, capsys):
    code = main(["eval", f"a={SMALL}", f"a={TIGHT}", "--inputs", str(inputs), "--out", str(tmp_path / "x"),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and "variant name 'a' is given twice" in err and "Traceback" not in err
