"""Reading YAML: hostile documents are one located problem each, ordinary aliases keep working."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab.config import check_text, iter_problems, load_ladder, load_ladder_text
from ladr_lab.config.reader import MAX_ALIAS_NODES, MAX_DEPTH, load_yaml
from ladr_lab.errors import ConfigError, ConfigErrors

ROOT = Path(__file__).resolve().parents[2]

LAUGHS = "name: lol\na0: &a0 [lol]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 10)) + "steps: [{id: s}]\n"
HOSTILE = {
    "recursive-seq": ("name: x\nsteps: &s [*s]\n", "yaml-recursive-alias", (2, 12)),
    "recursive-map": ("name: x\nsteps: [{id: a, fields: &f {x: *f}}]\n", "yaml-recursive-alias", (2, 32)),
    "billion-laughs": (LAUGHS, "yaml-alias-limit", None),
    "deep-seq": ("name: x\nsteps: " + "[" * 5000 + "]" * 5000 + "\n", "yaml-depth-limit", (2, 7 + MAX_DEPTH)),  # the root mapping is level 1
    "deep-flow-map": ("name: x\nsteps: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n", "yaml-depth-limit", None),
    "deep-block-map": ("name: x\nsteps:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(3000)), "yaml-depth-limit",
                       None),
}


def _one(problems: list[ConfigError], rule: str) -> ConfigError:
    assert len(problems) == 1, [p.format() for p in problems]
    (p,) = problems
    assert p.rule == rule and p.severity == "error" and p.line is not None and p.column is not None
    return p


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_yaml_is_one_problem_from_every_entry_point(name, tmp_path):
    text, rule, where = HOSTILE[name]
    p = _one(list(iter_problems(text, file="h.yaml")), rule)
    assert p.file == "h.yaml" and p.format().startswith(f"h.yaml:{p.line}:{p.column}: error: ")
    if where:
        assert (p.line, p.column) == where
    with pytest.raises(ConfigError) as info:
        load_ladder_text(text)
    assert _one(list(info.value) if isinstance(info.value, ConfigErrors) else [info.value], rule)
    f = tmp_path / "h.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_ladder(f)
    assert info.value.rule == rule and info.value.file == str(f)


@pytest.mark.parametrize("command", ["validate", "run"])
def test_hostile_yaml_through_the_command_line(command, tmp_path, capsys):
    from ladr_lab.cli import main
    for name, (text, _, _) in HOSTILE.items():
        f = tmp_path / f"{name}.yaml"
        f.write_text(text)
        args = [command, str(f)] + (["--model", "offline"] if command == "run" else [])
        assert main(args) == 1
        out = capsys.readouterr().out
        assert out.startswith(f"{f}:") and out.count(": error: ") == 1, out
    # and once as a real process: exit code 1, the one problem line, no traceback
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    args = [command, str(tmp_path / "billion-laughs.yaml")] + (["--model", "offline"] if command == "run" else [])
    p = subprocess.run([sys.executable, "-m", "ladr_lab", *args], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr and "yaml" in p.stdout.lower()


def test_limits_sit_exactly_where_documented():
    nest = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert load_yaml(nest)[0] is not None
    with pytest.raises(ConfigError) as info:
        load_yaml("[" + nest + "]")
    assert info.value.rule == "yaml-depth-limit"
    # an alias to a list of n scalars adds n + 1 nodes
    n = 99
    anchor = "a: &a [" + ", ".join(["x"] * n) + "]\n"
    uses = MAX_ALIAS_NODES // (n + 1)
    ok = anchor + "b: [" + ", ".join(["*a"] * uses) + "]\n"
    assert len(load_yaml(ok)[0]["b"]) == uses
    with pytest.raises(ConfigError) as info:
        load_yaml(ok.replace("b: [", "b: [*a, "))
    assert info.value.rule == "yaml-alias-limit"
    # an alias that would nest past the limit where it is used is refused too
    deep = "a: &a " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\nb: [[*a]]\n"
    with pytest.raises(ConfigError) as info:
        load_yaml(deep)
    assert info.value.rule == "yaml-depth-limit"


def test_a_shared_schema_written_once_is_used_by_every_step():
    text = """\
name: shared
slates:
  - title: K
    folders: [{name: docs}]
steps:
  - id: a
    retrieve:
      to: { slate: K, folder: docs }
      as: Docs
      maxRounds: 2
      requestMatch: &req
        type: object
        required: [request]
        properties: { request: { type: object } }
  - id: b
    retrieve: { to: { slate: K, folder: docs }, as: Docs, maxRounds: 0, requestMatch: *req }
  - id: c
    slateWrite: { to: { slate: K, folder: docs, file: x.md }, match: *req }
"""
    errs = [p for p in iter_problems(text) if p.severity == "error"]
    assert [(e.rule, e.step_id, e.line) for e in errs] == [("max-rounds", "b", 16)]
    ladder = load_ladder_text(text.replace("maxRounds: 0", "maxRounds: 1"))
    a, b, c = ladder.steps
    assert a.retrieve.request_match == b.retrieve.request_match == c.slate_write.match
    assert a.retrieve.request_match is not b.retrieve.request_match  # copies, not one shared mutable object
    # a problem inside an aliased schema points at the anchor's text, where it can be fixed
    bad = text.replace("properties: { request: { type: object } }", "properties: { request: { type: objekt } }")
    errs = [p for p in iter_problems(bad) if p.rule == "invalid-schema"]
    assert {e.step_id for e in errs} == {"a", "b", "c"} and {e.line for e in errs} == {14}


def test_yaml_details_kept_from_before():
    # keys verbatim (on: stays "on"), duplicate keys and merge keys are errors, one document only
    data, pos = load_yaml("on: 1\nyes: 2\n")
    assert data == {"on": 1, "yes": 2} and pos.of(("yes",), key=True) == (2, 1)
    with pytest.raises(ConfigErrors) as info:
        load_yaml("a: 1\na: 2\nb: {<<: {c: 1}}\n")
    assert [(e.rule, e.line) for e in info.value] == [("duplicate-key", 2), ("yaml-merge-key", 3)]
    assert info.value.errors[0].path == ("a",)
    with pytest.raises(ConfigError) as info:
        load_yaml("a: 1\n---\nb: 2\n")
    assert info.value.rule == "yaml-syntax" and info.value.line == 2
    with pytest.raises(ConfigError) as info:
        load_yaml("a: *nowhere\n")
    assert info.value.rule == "yaml-syntax" and "undefined alias" in str(info.value)


def test_odd_scalars():
    data, _ = load_yaml("d: 2026-13-45\ne: 2026-01-02\nn: .nan\nb: !!binary aGk=\ns: !!set {x}\n")
    assert data["d"] == "2026-13-45"            # looks like a date, is not one: the text
    assert str(data["e"]) == "2026-01-02" and data["b"] == b"hi" and data["s"] == {"x": None}
    for bad in ("a: !!int abc\n", "a: !custom x\n", "a: \x00\n", "a: \x07\n"):
        with pytest.raises(ConfigError) as info:
            load_yaml(bad)
        assert info.value.rule == "yaml-syntax" and info.value.line == 1, bad


def test_unreadable_and_non_utf8_files(tmp_path):
    f = tmp_path / "latin1.yaml"
    f.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        load_ladder(f)
    assert info.value.rule == "unreadable-file" and "not UTF-8" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load_ladder(tmp_path / "missing.yaml")
    assert info.value.rule == "unreadable-file"
    ladder, problems = check_text("name: x\nsteps: [{id: s}]\n")
    assert ladder is not None and problems == []


@settings(max_examples=40, deadline=None)
@given(st.recursive(st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none()),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(min_size=1, max_size=4),
                                                                                inner, max_size=3), max_leaves=20))
def test_reader_reads_what_pyyaml_writes(value):
    import yaml
    text = yaml.safe_dump({"v": value}, sort_keys=False)
    assert load_yaml(text)[0] == yaml.safe_load(text)
