"""ConfigError as data: rule codes, to_dict, pickling, and rules added from outside the loader."""
from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ladr_lab.config import iter_problems, load_ladder_text
from ladr_lab.config.rules import CODES, RULES, problem, rule
from ladr_lab.errors import ConfigErrors

ROOT = Path(__file__).resolve().parents[2]
BAD = """\
name: t
slates:
  - title: Project Memory
    folders: [{ name: lessons }]
steps:
  - id: research
    fields:
      - { name: Lessons, type: slateRead, from: { slate: Project Memory, folder: lesson } }
    retrieve: { to: { slate: Project Memory, folder: lessons }, as: D, maxRounds: 0, requestMatch: { type: object } }
"""


def test_errors_name_their_rule_and_carry_their_context():
    errs = list(iter_problems(BAD, file="bad.yaml"))
    assert [e.rule for e in errs] == ["unknown-folder", "max-rounds"]
    folder, rounds = errs
    assert folder.step_id == "research" and folder.field == "Lessons" and folder.suggestion == "lessons"
    assert folder.path == ("steps", 0, "fields", 0, "from", "folder") and (folder.line, folder.column) == (8, 82)
    assert str(folder) == ('Step "research": slateRead field "Lessons" references non-existent folder "lesson" in '
                           'slate "Project Memory" (did you mean "lessons"?)')
    assert str(folder).count("did you mean") == 1
    assert rounds.step_id == "research" and rounds.path[-1] == "maxRounds"
    assert str(rounds) == 'Step "research": retrieve.maxRounds must be > 0 (got 0).'


def test_to_dict_has_every_field_and_the_path_as_a_list():
    (err, _) = iter_problems(BAD, file="bad.yaml")
    d = err.to_dict()
    assert d == {"message": str(err), "severity": "error", "rule": "unknown-folder", "step": "research",
                 "field": "Lessons", "path": ["steps", 0, "fields", 0, "from", "folder"], "file": "bad.yaml",
                 "line": 8, "column": 82, "suggestion": "lessons"}
    assert json.loads(json.dumps(d)) == d
    with pytest.raises(ConfigErrors) as info:
        load_ladder_text(BAD)
    many = info.value.to_dict()
    assert [p["rule"] for p in many["problems"]] == ["unknown-folder", "max-rounds"] and many["rule"] == "unknown-folder"


def test_errors_pickle_and_unpickle():
    with pytest.raises(ConfigErrors) as info:
        load_ladder_text(BAD, file="bad.yaml")
    many = pickle.loads(pickle.dumps(info.value))
    assert isinstance(many, ConfigErrors) and isinstance(many, ValueError)
    assert [e.to_dict() for e in many] == [e.to_dict() for e in info.value]
    assert str(many) == str(info.value) and many.step_id == "research" and many.rule == "unknown-folder"
    one = pickle.loads(pickle.dumps(info.value.errors[1]))
    assert one.to_dict() == info.value.errors[1].to_dict() and one.args == info.value.errors[1].args


def test_every_code_is_documented_and_every_rule_has_a_known_code():
    doc = (ROOT / "docs" / "config.md").read_text()
    documented = re.findall(r"^\| `([a-z0-9-]+)` \|", doc, flags=re.M)
    assert documented == list(CODES)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", c) for c in CODES)
    assert {code for rules in RULES.values() for code, _ in rules} <= set(CODES)


def test_a_new_rule_is_one_generator_and_the_walker_locates_it():
    @rule("step", "ignored-prompt")
    def shouting_ids(site):
        if site.step.id and site.step.id.isupper():
            yield problem("ids are lower case here", at=("id",), severity="warning")
    try:
        (warn,) = iter_problems("name: x\nsteps:\n  - id: LOUD\n")
    finally:
        RULES["step"].remove(("ignored-prompt", shouting_ids))
    assert (warn.rule, warn.step_id, warn.path, warn.line, warn.column) == ("ignored-prompt", "LOUD",
                                                                             ("steps", 0, "id"), 3, 9)
    assert str(warn) == 'Step "LOUD": ids are lower case here' and warn.severity == "warning"
    assert list(iter_problems("name: x\nsteps:\n  - id: LOUD\n")) == []


def test_a_lint_keeps_its_own_registry():
    lint = {kind: list(rules) for kind, rules in RULES.items()}

    @rule("retrieve", "max-rounds", registry=lint)
    def costly(site):
        if isinstance(site.raw.get("maxRounds"), int) and site.raw["maxRounds"] > 5:
            yield problem("retrieve.maxRounds above 5 is costly", at=("maxRounds",), severity="warning")
    text = BAD.replace("maxRounds: 0", "maxRounds: 9")
    plain = list(iter_problems(text))
    linted = list(iter_problems(text, registry=lint))
    assert [e.rule for e in plain] == ["unknown-folder"]
    assert [(e.rule, e.severity, e.step_id, e.path[-1]) for e in linted] == [
        ("unknown-folder", "error", "research", "folder"), ("max-rounds", "warning", "research", "maxRounds")]
    assert costly not in [fn for _, fn in RULES["retrieve"]]


def test_unknown_codes_cannot_be_registered():
    with pytest.raises(KeyError):
        rule("step", "no-such-code")


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    return subprocess.run([sys.executable, "-m", "ladr_lab", *args], capture_output=True, text=True, timeout=60,
                          env=env, cwd=ROOT)


def test_validate_json_prints_to_dict(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(BAD)
    p = _cli("validate", str(f), "--json")
    assert p.returncode == 1
    out = json.loads(p.stdout)
    expected = [e.to_dict() for e in iter_problems(BAD, file=str(f))]
    assert out == {"ok": False, "problems": expected}


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_knob_without_equals_is_a_usage_error(command, capsys, monkeypatch):
    from ladr_lab.cli import main
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as info:
        main([command, "examples/research.yaml", "--knob", "investigators"])
    assert info.value.code == 2 and "--knob takes NAME=VALUE" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main([command, "examples/research.yaml", "--slate", "Knowledge"])
    assert info.value.code == 2


def test_knob_values_are_read_by_the_guarded_reader():
    from ladr_lab.cli._common import _kv
    assert _kv(["n=3", "who=Ann", "deep=" + "[" * 3000, "empty=", "m={a: 1}"], "--knob") == {
        "n": 3, "who": "Ann", "deep": "[" * 3000, "empty": "", "m": {"a": 1}}
