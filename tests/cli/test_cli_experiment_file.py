"""`ladr-lab eval EXPERIMENT.yaml`: the experiment a file describes, its options overridden by the flags given (one
value replaced, mapping entries set over the file's, --assert added); `--pass-rate` and the file's passRate set the
exit code; usage errors in assertions and in the experiment file exit 2, as the README says usage errors do; and
`ladr-lab schema --experiment` prints the file's JSON Schema."""
from __future__ import annotations

import json

import pytest

from ladr_lab.cli import main
from ladr_lab.experiments.file_schema import experiment_json_schema

LADDER = "name: t\nsteps:\n  - id: a\n    fields: [{ name: Q, type: text, from: input.context }]\n" \
         "    systemPrompt: PROMPT\n"


@pytest.fixture
def here(tmp_path):
    (tmp_path / "a.yaml").write_text(LADDER.replace("PROMPT", "A."))
    (tmp_path / "b.yaml").write_text(LADDER.replace("PROMPT", "B."))
    # the script answers "yes" to every row; row 4's own assertion wants "no": 3 of 4 cells pass
    (tmp_path / "answers.yaml").write_text('"*": ["yes"]\n')
    rows = "".join(json.dumps({"id": f"q{i}", "context": f"question {i}", **({"assert": "contains: no"} if i == 4
                                                                             else {})}) + "\n" for i in range(1, 5))
    (tmp_path / "rows.jsonl").write_text(rows)
    (tmp_path / "e.yaml").write_text("variants: { a: a.yaml }\ninputs: rows.jsonl\nassert: ['contains: yes']\n"
                                     "model: script:answers.yaml\nconcurrency: 1\nout: out\n")
    return tmp_path


def _eval(capsys, *args) -> tuple[int, dict]:
    code = main(["eval", *args, "--no-progress", "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out.splitlines()[-1]) if out.strip() else {}


def test_the_file_runs_with_paths_from_its_folder(here, capsys, monkeypatch):
    monkeypatch.chdir(here.parent)
    code, doc = _eval(capsys, str(here / "e.yaml"))
    assert doc["variants"] == ["a"] and doc["cells"] == 4 and doc["failed"] == 1
    assert code == 1                                       # the default rule: a failed assertion exits 1
    assert doc["out"] == str(here / "out") and (here / "out" / "results.jsonl").is_file()
    assert doc["pass_rate"] == 0.75


@pytest.mark.parametrize("bar, code", [("0.75", 0), ("0.7", 0), ("0.76", 1), ("1", 1), ("0", 0)])
def test_pass_rate_exits_0_at_or_above_it(here, capsys, bar, code):
    got, doc = _eval(capsys, str(here / "e.yaml"), "--pass-rate", bar, "--out", str(here / f"o{bar}"))
    assert got == code and doc["pass_rate"] == 0.75 and doc["pass_rate_required"] == float(bar)


def test_the_files_pass_rate_and_a_flag_over_it(here, capsys):
    (here / "e2.yaml").write_text((here / "e.yaml").read_text() + "passRate: 0.5\n")
    assert _eval(capsys, str(here / "e2.yaml"), "--out", str(here / "x"))[0] == 0
    assert _eval(capsys, str(here / "e2.yaml"), "--out", str(here / "y"), "--pass-rate", "0.9")[0] == 1


def test_pass_rate_on_a_plain_evaluation_counts_completed_rows(here, capsys):
    (here / "bad.jsonl").write_text('{"id": "ok", "context": "x"}\n{"id": "nocol"}\n')
    args = [str(here / "a.yaml"), "--inputs", str(here / "bad.jsonl"), "--model", "offline"]
    assert _eval(capsys, *args, "--out", str(here / "p"))[0] == 1          # a row did not complete
    code, doc = _eval(capsys, *args, "--out", str(here / "q"), "--pass-rate", "0.5")
    assert code == 0 and doc["pass_rate"] == 0.5 and doc["rows"] == 2


def test_flags_override_the_file(here, capsys):
    """--model, --out and --rows replace the file's; --knob sets entries over its knobs; --assert adds one."""
    (here / "e3.yaml").write_text("variants: { a: a.yaml, b: b.yaml }\ninputs: rows.jsonl\n"
                                  "assert: ['contains: yes']\nmodel: script:answers.yaml\nout: out\n"
                                  "knobs: { x: 1, y: 2 }\nfilters: { rows: [q1, q2, q3] }\n")
    code, doc = _eval(capsys, str(here / "e3.yaml"), "--model", "offline", "--out", str(here / "over"),
                      "--rows", "q4", "--variants", "b", "--knob", "y=3", "--assert", "max-calls: 5")
    assert doc["variants"] == ["b"] and doc["cells"] == 1 and doc["out"] == str(here / "over")
    line = json.loads((here / "over" / "results.jsonl").read_text().splitlines()[0])
    assert line["row"] == "q4" and line["asserts"] == ["contains:yes", "max-calls:5", "contains:no"]
    assert line["output"] != "yes"                       # the offline model answered, not the script
    manifest = json.loads((here / "over" / "experiment.json").read_text())
    assert manifest["variants"][0]["knobs"] == {"x": 1, "y": 3} and manifest["model"] == "offline"


def test_a_typo_in_an_assertion_kind_exits_2(here, capsys):
    """Before, an unknown kind exited 1, as a failed experiment does; it is a usage error, as the README says."""
    code = main(["eval", str(here / "a.yaml"), str(here / "b.yaml"), "--inputs", str(here / "rows.jsonl"), "--out",
                 str(here / "x"), "--no-progress", "--assert", "contians: yes"])
    err = capsys.readouterr().err
    assert code == 2 and 'did you mean "contains"' in err and "Traceback" not in err
    code, doc = _eval(capsys, str(here / "a.yaml"), "--inputs", str(here / "rows.jsonl"), "--out", str(here / "y"),
                      "--assert", "max-calls: three")
    assert code == 2 and "needs a whole number" in doc["error"]
    (here / "typo.jsonl").write_text('{"id": "q1", "context": "x", "assert": "contians: x"}\n')
    code = main(["eval", str(here / "a.yaml"), "--inputs", str(here / "typo.jsonl"), "--out", str(here / "z"),
                 "--no-progress"])
    assert code == 2


def test_an_experiment_files_problems_exit_2_each_with_its_line(here, capsys):
    (here / "bad.yaml").write_text("variants: { a: a.yaml }\ninputs: rows.jsonl\ntreshold: 0.5\n"
                                   "assert: ['contians: x']\n")
    code = main(["eval", str(here / "bad.yaml"), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 2
    assert f"{here / 'bad.yaml'}:3:1: error: unknown key \"treshold\" in experiment file (did you mean " \
           '"threshold"?)' in out
    assert f"{here / 'bad.yaml'}:4:" in out and "contians" in out
    code, doc = _eval(capsys, str(here / "bad.yaml"))
    assert code == 2 and doc["error"].startswith("invalid experiment file: ") and len(doc["problems"]) == 2
    assert [p["line"] for p in doc["problems"]] == [3, 4]


def test_what_the_command_line_says_about_misuse(here, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["eval", str(here / "e.yaml"), str(here / "a.yaml"), "--no-progress"])
    assert exc.value.code == 2 and "an experiment file is given alone" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["eval", str(here / "a.yaml"), "--out", str(here / "x")])
    assert exc.value.code == 2 and "--inputs is required" in capsys.readouterr().err
    (here / "noout.yaml").write_text("variants: [a.yaml]\ninputs: rows.jsonl\n")
    with pytest.raises(SystemExit) as exc:
        main(["eval", str(here / "noout.yaml")])
    assert exc.value.code == 2 and "give --out DIR" in capsys.readouterr().err
    for bad in (["--pass-rate", "1.5"], ["--threshold", "x"], ["--repeat", "0"], ["-n", "0"]):
        with pytest.raises(SystemExit) as exc:
            main(["eval", str(here / "e.yaml"), *bad])
        assert exc.value.code == 2, bad


def test_scores_repeats_and_filters_from_the_command_line(here, capsys):
    code, doc = _eval(capsys, str(here / "a.yaml"), str(here / "b.yaml"), "--inputs", str(here / "rows.jsonl"),
                      "--out", str(here / "x"), "--model", "offline", "--assert", "max-calls: 0",
                      "--assert", "status", "--threshold", "0.5", "--repeat", "2", "-n", "2", "--sample-seed", "1",
                      "--variants", "a")
    # max-calls: 0 fails (1 call), status passes: score 1/2 ≥ 0.5 → every cell passes
    assert code == 0 and doc["variants"] == ["a"] and doc["cells"] == 4 and doc["failed"] == 0
    s = doc["summary"][0]
    assert s["score_mean"] == 0.5 and s["agree_pass"] == 1.0 and s["flaky"] == 0
    assert any("a sample of 2 of 4 row(s) (seed 1)" in n for n in doc["notes"])


def test_the_progress_bar_shows_the_running_pass_rate(here, capsys):
    code = main(["eval", str(here / "e.yaml"), "--out", str(here / "bar")])
    err = capsys.readouterr().err
    assert code == 1 and "passed 3/4 (75%)" in err


def test_schema_experiment_prints_and_writes_the_files_schema(tmp_path, capsys):
    assert main(["schema", "--experiment"]) == 0
    assert json.loads(capsys.readouterr().out) == experiment_json_schema()
    assert main(["schema", "--experiment", "--out", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text())["title"] == "ladr_lab experiment"


def test_the_files_outputs_set_the_output_flags_not_given(here, monkeypatch):
    """`outputs:` takes the kinds OUTPUT_KEYS names; a face that writes one adds its kind there and its flag
    (`--KIND FILE`) is set from the file unless given."""
    import argparse

    from ladr_lab.cli.eval import _over_file
    from ladr_lab.experiments import file
    from ladr_lab.experiments.file import load_experiment_file
    monkeypatch.setitem(file.OUTPUT_KEYS, "report", "A report written after the run.")
    (here / "o.yaml").write_text((here / "e.yaml").read_text() + "outputs: { report: reports/r.txt }\n")
    spec = load_experiment_file(here / "o.yaml")
    assert spec.outputs == {"report": here / "reports" / "r.txt"}
    parser = argparse.ArgumentParser()
    from ladr_lab.cli import eval as eval_cli
    sub = parser.add_subparsers()
    eval_cli.add_parser(sub)
    a = parser.parse_args(["eval", str(here / "o.yaml")])
    a.report = None
    _over_file(a, spec)
    assert a.report == str(here / "reports" / "r.txt")
    a.report = "given.txt"
    _over_file(a, spec)
    assert a.report == "given.txt"


def test_outputs_in_the_files_out_folder_move_with_out(here, capsys):
    """`ladr-lab eval e.yaml --out OTHER`: a report the file puts in its own out: folder is written in OTHER, so
    the run elsewhere does not write over (and mislabel) the reports of the file's folder; one outside it stays."""
    (here / "r.yaml").write_text((here / "e.yaml").read_text()
                                 + "outputs: { html: out/report.html, junit: ci/junit.xml }\n")
    code, doc = _eval(capsys, str(here / "r.yaml"), "--out", str(here / "other"))
    assert doc["html"] == str(here / "other" / "report.html") and (here / "other" / "report.html").is_file()
    assert doc["junit"] == str(here / "ci" / "junit.xml")
    assert not (here / "out").exists()                        # nothing written in the file's own out: folder
    code, doc = _eval(capsys, str(here / "r.yaml"))
    assert doc["html"] == str(here / "out" / "report.html") and (here / "out" / "report.html").is_file()
