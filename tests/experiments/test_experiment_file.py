"""The experiment file: read with the ladder's located errors (every problem at once, the YAML line and column,
did-you-mean), relative paths from its folder, every key an experiment() argument; its JSON Schema built from the
same tables, published in the package, and in step with the loader; and each example file runs offline."""
from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from ladr_lab.config.reader import load_yaml
from ladr_lab.errors import ConfigError, UsageError
from ladr_lab.experiments import Assertion, ExperimentFileErrors, load_experiment_file
from ladr_lab.experiments.file import (
    KEY_TABLES,
    OUTPUT_KEYS,
    TOP_KEYS,
    is_experiment_file,
    load_experiment_text,
)
from ladr_lab.experiments.file_schema import experiment_json_schema, to_schema_text

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "ladr_lab" / "experiments" / "experiment.schema.json"
EXAMPLES = sorted((ROOT / "examples" / "experiments").glob("*.yaml"))
VALIDATOR = jsonschema.Draft7Validator(experiment_json_schema())
LADDER = "name: t\nsteps:\n  - id: a\n    fields: [{ name: Q, type: text, from: input.context }]\n"


@pytest.fixture
def here(tmp_path):
    (tmp_path / "ladders").mkdir()
    (tmp_path / "ladders" / "a.yaml").write_text(LADDER)
    (tmp_path / "rows.jsonl").write_text('{"id": "q1", "context": "one"}\n')
    (tmp_path / "prev").mkdir()
    return tmp_path


FULL = """\
description: everything
variants:
  a: ladders/a.yaml
  b: { ladder: ladders/a.yaml, knobs: { k: 2 } }
knobSets: { x: { k: 1 } }
knobs: { k: 0 }
inputs: rows.jsonl
assert:
  - status
  - "contains: one"
  - { fetched: a.md, weight: 2, metric: retrieval }
  - { type: python, value: json:dumps, threshold: 0.3 }
threshold: 0.5
passRate: 0.9
repeat: 2
model: script:answers.yaml
modelOptions: { temperature: 0 }
grader: offline
concurrency: 3
rateLimit: { openai: 5/s }
ray: false
rejudge: only
slates: { K: prev }
shareSlates: true
cache: false
out: runs/x
resume: false
retryErrors: false
progress: false
maxFetchChars: 900
maxRoundChars: 5000
filters: { variants: [a-x], rows: ["q*"], sample: 1, seed: 3, failing: prev, errors: prev }
outputs: {}
otel: { content: false, document_chars: 100 }
phoenix: { url: "http://127.0.0.1:6006", dataset: d }
"""


def test_every_key_becomes_an_experiment_argument_with_paths_from_the_files_folder(here, monkeypatch):
    (here / "e.yaml").write_text(FULL)
    monkeypatch.chdir(here / "prev")               # relative paths are the file's, not the current folder's
    spec = load_experiment_file(here / "e.yaml")
    kw = spec.kwargs
    assert kw["ladders"] == {"a": str(here / "ladders" / "a.yaml"),
                             "b": {"ladder": str(here / "ladders" / "a.yaml"), "knobs": {"k": 2}}}
    assert kw["inputs"] == str(here / "rows.jsonl") and kw["out"] == str(here / "runs" / "x")
    assert kw["model"] == f"script:{here / 'answers.yaml'}" and kw["slates"] == {"K": str(here / "prev")}
    assert kw["filter_failing"] == kw["filter_errors"] == str(here / "prev")
    assert [a.kind for a in kw["asserts"]] == ["status", "contains", "fetched", "python"]
    assert all(isinstance(a, Assertion) for a in kw["asserts"]) and kw["asserts"][2].weight == 2.0
    assert {k: kw[k] for k in ("threshold", "repeat", "concurrency", "rejudge", "isolate_slates", "cache", "resume",
                               "retry_errors", "progress", "max_fetch_chars", "max_round_chars", "variants", "rows",
                               "sample", "sample_seed", "knob_sets", "knobs", "grader", "model_options",
                               "rate_limit")} == {
        "threshold": 0.5, "repeat": 2, "concurrency": 3, "rejudge": "only", "isolate_slates": False, "cache": False,
        "resume": False, "retry_errors": False, "progress": False, "max_fetch_chars": 900, "max_round_chars": 5000,
        "variants": ["a-x"], "rows": ["q*"], "sample": 1, "sample_seed": 3, "knob_sets": {"x": {"k": 1}},
        "knobs": {"k": 0}, "grader": "offline", "model_options": {"temperature": 0}, "rate_limit": {"openai": "5/s"}}
    assert spec.pass_rate == 0.9 and spec.outputs == {} and spec.description == "everything"
    assert VALIDATOR.is_valid(load_yaml(FULL)[0])
    # every key of the table is in this file: a key added to the loader without a test of it fails here
    assert set(load_yaml(FULL)[0]) == set(TOP_KEYS)


def test_every_problem_at_once_with_its_line_column_and_did_you_mean(here):
    text = ("varaints: { a: ladders/a.yaml }\n"            # 1: misspelt
            "inputs: rows.jsonl\n"
            "assert:\n"
            "  - contians: one\n"                           # 4: a misspelt kind as a key
            "  - { type: contains, value: x, wieght: 2 }\n"  # 5: a misspelt assertion key
            "  - max-calls: three\n"                        # 6: a bad value
            "threshold: 1.5\n"                              # 7: out of range
            "rejudge: sometimes\n"                          # 8
            "filters: { smaple: 3 }\n")                     # 9
    with pytest.raises(ExperimentFileErrors) as info:
        load_experiment_text(text, file="e.yaml", base_dir=here)
    problems = list(info.value)
    got = [(p.line, p.rule) for p in problems]
    assert got == [(1, "unknown-key"), (1, "missing-key"), (4, "unknown-key"), (5, "unknown-key"),
                   (6, "bad-assertion"), (7, "bad-value"), (8, "bad-value"), (9, "unknown-key")], got
    by = {p.line: p for p in problems if p.rule != "missing-key"}
    assert by[1].suggestion == "variants" and by[1].column == 1 and 'did you mean "variants"' in str(by[1])
    assert by[4].suggestion == "contains" and by[4].column == 5
    assert by[5].suggestion == "weight" and "did you mean" in str(by[5])
    assert "needs a whole number >= 0, got 'three'" in str(by[6])
    assert by[8].suggestion is None or by[8].suggestion in ("only", "auto", "off")
    assert by[9].suggestion == "sample"
    assert all(p.file == "e.yaml" for p in problems)
    assert isinstance(info.value, UsageError) and isinstance(info.value, ConfigError)
    assert "problem(s) in experiment file" in str(info.value)


def test_missing_files_and_names_are_located(here):
    text = "variants:\n  a: ladders/nope.yaml\n  'bad name': ladders/a.yaml\ninputs: nope.csv\n" \
           "filters: { variants: [a, c], failing: no-such-folder }\n"
    with pytest.raises(ExperimentFileErrors) as info:
        load_experiment_text(text, file="e.yaml", base_dir=here)
    said = {(p.line, p.message.split(":")[0]) for p in info.value}
    assert (2, 'variant "a"') in said and any(line == 3 for line, _ in said) and (4, "inputs") in said
    assert any(p.line == 5 and 'no variant "c"' in p.message for p in info.value)
    assert any(p.line == 5 and "no folder" in p.message for p in info.value)


def test_yaml_that_is_not_a_mapping_or_not_yaml_is_a_located_problem(here):
    with pytest.raises(ExperimentFileErrors) as info:
        load_experiment_text("variants: [a\n", file="e.yaml", base_dir=here)
    (p,) = info.value
    assert p.rule == "yaml-syntax" and p.line is not None
    with pytest.raises(ExperimentFileErrors, match="must be a YAML mapping"):
        load_experiment_text("- a\n", file="e.yaml", base_dir=here)


def test_inline_rows_and_their_own_assertions(here):
    (here / "e.yaml").write_text("variants: [ladders/a.yaml]\ninputs:\n  - { id: q1, context: one, assert: "
                                 "[{ contains: one, weight: 2 }] }\n  - { id: q2, context: two }\n"
                                 "out: o\n")
    spec = load_experiment_file(here / "e.yaml")
    assert spec.kwargs["ladders"] == [str(here / "ladders" / "a.yaml")]
    rows = spec.kwargs["inputs"]
    assert rows[0]["assert"][0].weight == 2.0 and "assert" not in rows[1]
    exp = spec.run(model="offline", progress=False)
    assert [c.row for c in exp.cells] == ["q1", "q2"] and exp.cells[0].check("contains:one") is not None
    bad = "variants: [ladders/a.yaml]\ninputs:\n  - { id: q1, assert: [ contians: one ] }\n"
    with pytest.raises(ExperimentFileErrors) as info:
        load_experiment_text(bad, file="e.yaml", base_dir=here)
    assert [p.line for p in info.value] == [3]


def test_an_experiment_file_is_told_from_a_ladder(here):
    (here / "e.yaml").write_text("variants: [ladders/a.yaml]\ninputs: rows.jsonl\n")
    (here / "only_inputs.yml").write_text("inputs: rows.jsonl\n")
    assert is_experiment_file(here / "e.yaml") and is_experiment_file(here / "only_inputs.yml")
    assert not is_experiment_file(here / "ladders" / "a.yaml")
    assert not is_experiment_file(here / "rows.jsonl") and not is_experiment_file(here / "missing.yaml")
    (here / "odd.yaml").write_text("steps: []\nvariants: x\n")       # has steps: a ladder, whatever else
    assert not is_experiment_file(here / "odd.yaml")


# ---- the JSON Schema ----------------------------------------------------------------------------------------

def test_the_published_file_is_the_generated_schema():
    # regenerate with: ladr-lab schema --experiment --out ladr_lab/experiments/experiment.schema.json
    assert PUBLISHED.read_text(encoding="utf-8") == to_schema_text()
    line = next(x for x in (ROOT / "pyproject.toml").read_text().splitlines() if x.startswith("ladr_lab = ["))
    assert '"experiments/experiment.schema.json"' in line
    jsonschema.Draft7Validator.check_schema(experiment_json_schema())


def _closed(node, path=()):
    if isinstance(node, dict):
        if node.get("additionalProperties") is False and "properties" in node:
            yield path, node
        for k, v in node.items():
            yield from _closed(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _closed(v, path + (i,))


def test_every_part_takes_exactly_the_keys_the_loader_takes_with_their_sentences():
    tables = [dict(t) for t in KEY_TABLES.values()]
    used = [{k: v["description"] for k, v in node["properties"].items()} for _, node in _closed(experiment_json_schema())]
    assert all(u in tables for u in used) and all(t in used for t in tables)
    assert all(text.strip() for t in tables for text in t.values())


def test_every_example_file_validates_and_loads():
    assert EXAMPLES
    for path in EXAMPLES:
        errors = [e.message for e in VALIDATOR.iter_errors(load_yaml(path.read_text())[0])]
        assert not errors, (path.name, errors)
        load_experiment_file(path)


def test_a_misspelt_key_anywhere_is_rejected_by_both(here):
    data = load_yaml(FULL)[0]
    checked = 0
    for where in [(), ("filters",), ("variants", "b")]:
        doc = copy.deepcopy(data)
        target = doc
        for k in where:
            target = target[k]
        key = next(iter(target))
        target[key + "x"] = target[key]
        assert not VALIDATOR.is_valid(doc), where
        with pytest.raises(ExperimentFileErrors) as info:
            load_experiment_text(json.dumps(doc), file="e.yaml", base_dir=here)
        assert "unknown-key" in {p.rule for p in info.value}, where
        checked += 1
    bad_kind = copy.deepcopy(data)
    bad_kind["assert"].append({"contians": "x"})
    assert not VALIDATOR.is_valid(bad_kind) and checked == 3


@pytest.mark.skipif(shutil.which("check-jsonschema") is None, reason="check-jsonschema is not installed")
def test_check_jsonschema_accepts_the_examples_and_rejects_a_typo(tmp_path):
    p = subprocess.run(["check-jsonschema", "--schemafile", str(PUBLISHED), *map(str, EXAMPLES)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(EXAMPLES[0].read_text().replace("threshold:", "treshold:", 1))
    p = subprocess.run(["check-jsonschema", "--schemafile", str(PUBLISHED), str(bad)], capture_output=True, text=True)
    assert p.returncode == 1 and "treshold" in p.stdout, p.stdout


def test_outputs_has_a_table_to_grow():
    """`outputs:` takes the kinds OUTPUT_KEYS names (none yet); a key it lacks is an unknown key, located."""
    assert isinstance(OUTPUT_KEYS, dict) and KEY_TABLES["outputs"] is OUTPUT_KEYS
    schema = experiment_json_schema()["properties"]["outputs"]
    assert schema["additionalProperties"] is False and set(schema["properties"]) == set(OUTPUT_KEYS)


# ---- the examples run -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_each_example_runs_offline(path, tmp_path):
    spec = load_experiment_file(path)
    exp = spec.run(out=tmp_path / "out", progress=False, cache=False)
    assert exp.cells and not exp.interrupted and exp.counts().get("error", 0) == 0
    rate = exp.pass_rate()
    assert spec.pass_rate is None or rate >= spec.pass_rate, (path.name, rate)
