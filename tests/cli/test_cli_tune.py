"""`ladr-lab trace tune`: requestMatch variants scored on an experiment's (or evaluation's) recorded outputs with no
model call — precision and recall against the rows' labels, the outputs a variant gets wrong, clear errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ladr_lab.cli import main
from ladr_lab.experiments import experiment
from ladr_lab.models import ScriptedModel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROWS = [{"id": f"q{i}", "context": f"question {i}", "labels": ["request", "answer"]} for i in range(3)]


def _answers(messages, call):
    return '{"files": ["retrieve/dedup.md"]}' if call.round == 1 else '{"answer": "see retrieve/dedup.md"}'


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("tune") / "exp"
    experiment({"small": EXAMPLES / "research_small.yaml"}, ROWS, model=ScriptedModel(_answers), out=out,
               progress=False)
    return out


def _schemas(tmp_path) -> list[str]:
    (tmp_path / "strict.json").write_text('{"type": "object", "required": ["files"]}')
    (tmp_path / "loose.yaml").write_text("type: object\n")      # also takes the JSON answer as a request
    return ["--variant", f"strict={tmp_path / 'strict.json'}", "--variant", f"loose={tmp_path / 'loose.yaml'}"]


def test_scores_each_variant_on_the_rows_labels(folder, tmp_path, capsys):
    code = main(["trace", "tune", str(folder), *_schemas(tmp_path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    s = {r["variant"]: r for r in doc["scores"]}
    assert code == 0 and doc["outputs"] == 6 and doc["labels"] == 6
    assert (s["strict"]["tp"], s["strict"]["fp"], s["strict"]["precision"], s["strict"]["recall"]) == (3, 0, 1.0, 1.0)
    assert (s["loose"]["tp"], s["loose"]["fp"], s["loose"]["precision"]) == (3, 3, 0.5)
    assert doc["wrong"] == {"recorded": 0, "strict": 0, "loose": 3}


def test_lists_what_a_variant_gets_wrong_in_words(folder, tmp_path, capsys):
    assert main(["trace", "tune", str(folder), *_schemas(tmp_path), "--wrong", "loose"]) == 0
    out = capsys.readouterr().out
    assert "precision" in out and "3 labelled output(s) loose judges against their label" in out
    assert "q0 research/1 r2: no_match (labelled answer)" in out   # {"answer": ...}: names no mode


def test_a_ladder_file_is_a_variant_too(folder, capsys):
    code = main(["trace", "tune", str(folder), "--variant", f"tight={EXAMPLES / 'pitfall_tight.yaml'}", "--json"])
    s = {r["variant"]: r for r in json.loads(capsys.readouterr().out)["scores"]}
    assert code == 0 and (s["tight"]["tp"], s["tight"]["fn"]) == (0, 3)


def test_bad_arguments_are_usage_or_clear_errors(folder, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["trace", "tune", str(folder), "--variant", "nofile"])
    assert exc.value.code == 2 and "--variant takes NAME=FILE" in capsys.readouterr().err
    assert main(["trace", "tune", str(folder), "--variant", f"x={tmp_path / 'missing.json'}"]) == 1
    assert "--variant x: cannot read" in capsys.readouterr().err
    assert main(["trace", "tune", str(folder), *_schemas(tmp_path), "--of", "big"]) == 1
    assert "--of 'big': the experiment's variants are small" in capsys.readouterr().err
