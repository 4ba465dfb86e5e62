"""The ladder JSON Schema: built from the loader's tables, published as package data, and in step with the loader.

Every valid ladder in the repository (examples, the docs' blocks, the handbook's) validates, with jsonschema and
with the check-jsonschema command; a misspelt key anywhere in them is rejected by the schema as by the loader.
"""
from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from ladr_lab.cli import main
from ladr_lab.config import check_text
from ladr_lab.config.jsonschema import DRAFT, ladder_json_schema, to_schema_text
from ladr_lab.config.reader import load_yaml
from ladr_lab.config.shape import KEY_TABLES

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "ladr_lab" / "config" / "ladder.schema.json"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
DOC_BLOCKS = [(doc, block) for doc in (ROOT / "docs" / "ladders.md", ROOT / "sample_slates" / "knowledge" / "docs"
                                       / "quickstart.md")
              for block in re.findall(r"^```yaml\n(.*?)^```", doc.read_text(), re.S | re.M) if "steps:" in block]
VALIDATOR = jsonschema.Draft7Validator(ladder_json_schema())


def _raw(text: str):
    return load_yaml(text, None)[0]


def _loader_errors(text: str, base: Path) -> list:
    return [p for p in check_text(text, base_dir=base)[1] if p.severity == "error"]


def test_the_published_file_is_the_generated_schema():
    # regenerate with: ladr-lab schema --out ladr_lab/config/ladder.schema.json
    assert PUBLISHED.read_text(encoding="utf-8") == to_schema_text()
    data = (ROOT / "pyproject.toml").read_text()
    line = next(x for x in data.splitlines() if x.startswith("ladr_lab = ["))
    assert '"config/ladder.schema.json"' in line and '"py.typed"' in line


def test_the_schema_is_a_valid_draft_07_schema():
    schema = ladder_json_schema()
    assert schema["$schema"] == DRAFT
    jsonschema.Draft7Validator.check_schema(schema)


def test_the_command_prints_and_writes_it(tmp_path, capsys):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == ladder_json_schema()
    assert main(["schema", "--out", str(tmp_path / "s.json")]) == 0
    assert (tmp_path / "s.json").read_text() == to_schema_text()


def _closed_objects(node, path=()):
    if isinstance(node, dict):
        if node.get("additionalProperties") is False and "properties" in node:
            yield path, node
        for k, v in node.items():
            yield from _closed_objects(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _closed_objects(v, path + (i,))


def test_every_construct_takes_exactly_the_keys_the_loader_takes_with_their_sentences():
    closed = list(_closed_objects(ladder_json_schema()))
    tables = [dict(t) for t in KEY_TABLES.values()]
    for path, node in closed:
        props = {k: v["description"] for k, v in node["properties"].items()}
        assert props in tables, path
    used = [{k: v["description"] for k, v in node["properties"].items()} for _, node in closed]
    assert all(t in used for t in tables)
    assert all(text.strip() for t in tables for text in t.values())


def test_every_example_validates():
    assert len(EXAMPLES) >= 10
    for path in EXAMPLES:
        text = path.read_text()
        assert not _loader_errors(text, path.parent), path
        errors = [e.message for e in VALIDATOR.iter_errors(_raw(text))]
        assert not errors, (path.name, errors)


def test_every_ladder_in_the_docs_validates():
    assert len(DOC_BLOCKS) >= 7
    for doc, block in DOC_BLOCKS:
        assert not _loader_errors(block, doc.parent), block
        assert VALIDATOR.is_valid(_raw(block)), block


@pytest.mark.skipif(shutil.which("check-jsonschema") is None, reason="check-jsonschema is not installed "
                    "(pip install check-jsonschema)")
def test_check_jsonschema_accepts_every_example():
    p = subprocess.run(["check-jsonschema", "--schemafile", str(PUBLISHED), *map(str, EXAMPLES)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.skipif(shutil.which("check-jsonschema") is None, reason="check-jsonschema is not installed")
def test_check_jsonschema_rejects_a_typo_with_its_path(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "examples" / "research.yaml").read_text().replace("retrieve:", "retreive:", 1))
    p = subprocess.run(["check-jsonschema", "--schemafile", str(PUBLISHED), str(bad)], capture_output=True, text=True)
    assert p.returncode == 1 and "retreive" in p.stdout, p.stdout


def _mappings(node, path=()):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _mappings(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _mappings(v, path + (i,))


SCHEMA_VALUES = ("requestMatch", "jsonMatches", "match", "knobs", "value")


def test_a_misspelt_key_anywhere_in_an_example_is_rejected_by_both():
    checked = 0
    for path in EXAMPLES:
        data = _raw(path.read_text())
        for where, mapping in _mappings(data):
            if any(k in SCHEMA_VALUES for k in where) or not mapping or "metatags" in where[-1:] \
                    or where[-1:] == ("files",) or (where[-2:-1] == ("metatags",)):
                continue           # inside a JSON Schema, knobs, a literal or a metatag declaration: any key goes
            doc = copy.deepcopy(data)
            target = doc
            for k in where:
                target = target[k]
            key = next(iter(mapping))
            target[str(key) + "x"] = target[key]      # a typo beside the real key: nothing else is missing
            text = json.dumps(doc)
            rules = {p.rule for p in _loader_errors(text, path.parent)}
            assert "unknown-key" in rules, (path.name, where, key)
            assert not VALIDATOR.is_valid(doc), (path.name, where, key)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("text, rule", [
    ("name: x\nsteps: [{ id: a, type: grop }]\n", "step-type"),
    ("name: x\nsteps: [{ id: a, fields: [{ name: Q, type: txt, from: input.context }] }]\n", "field-type"),
    ("name: x\nsteps: [{ id: a, retrieve: { to: { slate: S, folder: f }, as: R, maxRounds: 0, "
     "requestMatch: { type: object } } }]\n", "max-rounds"),
    ("name: x\nsteps: [{ id: a, if: { equals: OK, then: stop } }]\n", "unknown-action"),
    ("name: x\nsteps: [{ id: a, if: { then: abort } }]\n", "gate-condition"),
    ("name: x\nsteps: [{ id: a, slateWrite: { to: { slate: S, folder: f, file: x.md }, on: merge, "
     "match: { type: array } } }]\n", "write-policy"),
    ("name: x\nsteps: [{ id: a, slateWrite: { to: { slate: S, folder: f, file: x.md }, on: mergeByKey, "
     "match: { type: array } } }]\n", "key-required"),
    ("name: x\nslates: [{ title: S, path: ., folders: [{ name: f, metatags: { n: integer } }] }]\n"
     "steps: [{ id: a }]\n", "metatag-type"),
    ("name: x\nslates: [{ title: S, path: ., folders: [{ name: f, metatags: { index: string } }] }]\n"
     "steps: [{ id: a }]\n", "system-metatag"),
    ("name: x\nsteps: []\n", "no-steps"),
    ("steps: [{ id: a }]\n", "ladder-name"),
    ("name: x\nexecutionBudget: { maxLlmCalls: 0 }\nsteps: [{ id: a }]\n", "budget-value"),
    ("name: x\nsteps: [{ id: a, nodes: 0 }]\n", "nodes-value"),
    ("name: x\nsteps: [{ id: a, fields: [{ name: P, type: ingest, from: { stepId: a, nodeRef: all } }] }]\n",
     "node-ref"),
])
def test_what_the_loader_rejects_for_its_shape_the_schema_rejects(text, rule, tmp_path):
    assert rule in {p.rule for p in _loader_errors(text, tmp_path)}
    assert not VALIDATOR.is_valid(_raw(text))


def test_knob_templates_stand_where_numbers_and_words_do(tmp_path):
    text = ('name: x\nknobs: { n: 2, kind: normal, rounds: 1 }\nsteps:\n'
            '  - { id: a, nodes: "{{knobs.n}}", type: "{{ knobs.kind }}" }\n')
    assert not _loader_errors(text, tmp_path)
    assert VALIDATOR.is_valid(_raw(text))
    assert not VALIDATOR.is_valid(_raw(text.replace("{{knobs.n}}", "{{n}}")))
