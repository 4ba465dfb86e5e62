"""Loading and validation: every problem at once, exact wording, YAML positions, suggestions."""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from ladr_lab.config import iter_problems, load_ladder_text
from ladr_lab.errors import ConfigError, ConfigErrors

BASE = """\
name: t
slates:
  - title: Project Memory
    folders:
      - name: facts
        metatags: { summary: string, tags: "string[]" }
        files:
          - name: core.md
            metatags: { verified: boolean }
      - name: lessons
steps:
"""


def problems(steps_yaml: str, base: str = BASE, **kw) -> list[ConfigError]:
    text = base + textwrap.indent(textwrap.dedent(steps_yaml), "  ")
    return [p for p in iter_problems(text, file="l.yaml", **kw) if p.severity == "error"]


def messages(steps_yaml: str, **kw) -> list[str]:
    return [str(p) for p in problems(steps_yaml, **kw)]


def test_seed_wordings_and_positions():
    errs = problems("""
        - id: generate
          fields:
            - name: Lessons
              type: slateRead
              from: { slate: Project Memory, folder: lesson }
            - name: Confidence
              type: slateRead
              from: { slate: Project Memory, folder: facts, file: core.md, metatag: confidence }
            - name: PriorArt
              type: slateRead
              from: { slate: Prior, folder: facts, file: core.md }
        - id: X
          systemPrompt: x
          retrieve:
            to: { slate: Project Memory, folder: facts }
            as: Docs
            maxRounds: 0
            requestMatch: { type: object }
        """)
    msgs = [str(e) for e in errs]
    assert 'Step "generate": slateRead field "Lessons" references non-existent folder "lesson" in slate ' \
           '"Project Memory" (did you mean "lessons"?)' in msgs
    assert 'Step "generate": slateRead field "Confidence" references undeclared metatag "confidence" on file ' \
           '"core.md"' in msgs
    assert 'Step "generate": slateRead field "PriorArt" references non-existent slate "Prior"' in msgs
    assert 'Step "X": retrieve.maxRounds must be > 0 (got 0).' in msgs
    lessons = next(e for e in errs if "Lessons" in str(e))
    assert lessons.step_id == "generate" and lessons.suggestion == "lessons"
    assert lessons.file == "l.yaml" and lessons.line == 17 and lessons.column is not None
    rounds = next(e for e in errs if "maxRounds" in str(e))
    assert rounds.line == 29


def test_file_metatag_schema_is_folder_union_file():
    assert messages("""
        - id: s
          fields:
            - { name: V, type: slateRead, from: { slate: Project Memory, folder: facts, file: core.md, metatag: verified } }
            - { name: S, type: slateRead, from: { slate: Project Memory, folder: facts, file: core.md, metatag: summary } }
            - { name: M, type: slateRead, from: { slate: Project Memory, folder: facts, file: core.md, metatag: modified } }
            - { name: A, type: slateRead, from: { slate: Project Memory, folder: facts, metatag: verified } }
            - { name: T, type: slateRead, from: { slate: Project Memory, folder: facts, metatag: tree, depth: 2 } }
        """) == []
    msgs = messages("""
        - id: s
          fields:
            - { name: N, type: slateRead, from: { slate: Project Memory, folder: facts, metatag: nope } }
            - { name: F, type: slateRead, from: { slate: Project Memory, folder: facts, file: other.md } }
        """)
    assert any('undeclared metatag "nope" in folder "facts"' in m for m in msgs)
    assert any('undeclared file "other.md"' in m for m in msgs)


def test_unknown_keys_wrong_types_and_suggestions():
    errs = problems("""
        - id: s
          systemPromt: hi
          nodes: zero
          type: sequental
          fields:
            - { name: Q, type: txt, from: input.context }
        """)
    msgs = [str(e) for e in errs]
    assert any('unknown key "systemPromt"' in m and 'did you mean "systemPrompt"' in m for m in msgs)
    assert any("nodes must be a whole number >= 1 (got 'zero')" in m for m in msgs)
    assert any('unknown step type "sequental"' in m and '"sequential"' in m for m in msgs)
    assert any('unknown type "txt"' in m and 'did you mean "text"' in m for m in msgs)
    key_err = next(e for e in errs if "systemPromt" in str(e))
    assert (key_err.line, key_err.column) == (14, 5)


def test_malformed_yaml_is_a_config_error_with_a_line():
    with pytest.raises(ConfigError) as info:
        load_ladder_text("name: x\nsteps: [\n  - id: a\n", file="bad.yaml")
    assert "malformed YAML" in str(info.value)
    assert info.value.line is not None and info.value.file == "bad.yaml"


def test_not_a_mapping_and_duplicate_keys():
    assert "must be a YAML mapping" in str(list(iter_problems("- a\n- b\n"))[0])
    dup = list(iter_problems("name: a\nname: b\nsteps: [{id: s}]\n"))
    assert any('duplicate key "name"' in str(p) and p.line == 2 for p in dup)


def test_retrieve_rules():
    msgs = messages("""
        - id: r
          retrieve:
            to: { slate: Project Memory, folder: fact }
            as: ""
            maxRounds: -2
            requestMatch: {}
        - id: r2
          retrieve:
            to: { slate: Project Memory, folder: facts }
            as: Docs
            maxRounds: 2
            requestMatch: { type: objekt }
        - id: r3
          retrieve:
            to: { slate: Project Memory, folder: facts }
            as: Docs
            maxRounds: 2
            requestMatch: '{"type": "object", '
        """)
    assert 'Step "r": retrieve.maxRounds must be > 0 (got -2).' in msgs
    assert 'Step "r": retrieve.as must be a non-empty field name.' in msgs
    assert 'Step "r": retrieve.requestMatch must be a non-empty JSON Schema.' in msgs
    assert any(m.startswith('Step "r": retrieve.to references non-existent folder "fact"') for m in msgs)
    assert any(m.startswith('Step "r2": retrieve.requestMatch is not a valid JSON Schema') for m in msgs)
    assert any(m.startswith('Step "r3": retrieve.requestMatch is not valid JSON') for m in msgs)


def test_write_rules():
    msgs = messages("""
        - id: w1
          slateWrite:
            to: { slate: Project Memory, folder: facts, file: core.md }
            on: mergeByKey
            match: { type: array }
        - id: w2
          slateWrite:
            to: { slate: Project Memory, folder: facts, file: core.md }
            on: append
            key: id
            match: { type: object }
        - id: w3
          slateWrite:
            to: { slate: Project Memory, folder: facts, file: core.md }
            match: {}
        - id: w4
          if:
            equals: RECORD
            then:
              write: { to: { slate: Memory, folder: facts, file: core.md }, from: output }
            else:
              write: { to: { slate: Project Memory, folder: facts, file: core.md }, from: { stepId: nope } }
        """)
    assert 'Step "w1": slateWrite on: mergeByKey requires key.' in msgs
    assert 'Step "w2": slateWrite.key is only valid when on: mergeByKey (got on: append).' in msgs
    assert 'Step "w3": slateWrite.match must be a non-empty JSON Schema.' in msgs
    assert 'Step "w4": if.then write.to references non-existent slate "Memory" (did you mean "Project Memory"?)' in msgs
    assert any(m.startswith('Step "w4": if.else write references unknown step "nope"') for m in msgs)


def test_previous_after_group_and_unknown_jump():
    msgs = messages("""
        - id: g
          type: group
          steps:
            - { id: a, systemPrompt: a }
            - { id: b, systemPrompt: b }
        - id: after
          fields:
            - { name: P, type: ingest, from: previous }
          if:
            equals: x
            then: { jump: { stepId: nowhere } }
            else: continue
        """)
    assert any('from: previous right after group step "g"' in m for m in msgs)
    assert any('if.then jumps to unknown step "nowhere"' in m for m in msgs)


def test_knobs_are_typed_and_overridable():
    text = BASE.replace("name: t\n", "name: t\nknobs: { n: 2, who: Ann }\n") + textwrap.indent(textwrap.dedent("""
        - id: s
          nodes: "{{knobs.n}}"
          systemPrompt: "Hello {{knobs.who}}"
        """), "  ")
    ladder = load_ladder_text(text)
    assert ladder.steps[0].nodes == 2 and ladder.steps[0].system_prompt == "Hello Ann"
    assert load_ladder_text(text, knobs={"n": 5}).steps[0].nodes == 5
    with pytest.raises(ConfigErrors) as info:
        load_ladder_text(text.replace("knobs.who", "knobs.wha"))
    assert 'unknown knob "wha"' in str(info.value) and 'did you mean "who"' in str(info.value)


def test_unquoted_on_key_is_read_as_on():
    ladder = load_ladder_text(BASE + textwrap.indent(textwrap.dedent("""
        - id: w
          slateWrite:
            to: { slate: Project Memory, folder: facts, file: core.md }
            on: overwrite
            match: { type: object }
        """), "  "))
    assert ladder.steps[0].slate_write.on == "overwrite"


def test_load_ladder_raises_all_problems_at_once():
    with pytest.raises(ConfigErrors) as info:
        load_ladder_text(BASE + "  - id: a\n    nodes: 0\n  - id: a\n    type: nope\n")
    errs = list(info.value)
    assert len(errs) >= 3
    assert isinstance(info.value, ValueError)
    assert errs == sorted(errs, key=lambda e: (e.line or 0, e.column or 0))


@pytest.mark.parametrize("kind", [str, Path])
def test_paths_may_be_str_or_path(kind, tmp_path):
    from ladr_lab import Run, ScriptedModel
    from ladr_lab.config import check_text
    (tmp_path / "slates" / "facts").mkdir(parents=True)
    (tmp_path / "slates" / "facts" / "core.md").write_text("CORE-1")
    text = BASE.replace("  - title: Project Memory\n", "  - title: Project Memory\n    path: slates\n") + \
        "  - id: s\n    fields:\n      - { name: C, type: slateRead, from: { slate: Project Memory, folder: facts, " \
        "file: core.md } }\n"
    ladder = load_ladder_text(text, file=kind(tmp_path / "l.yaml"), base_dir=kind(tmp_path))
    assert isinstance(ladder.base_dir, Path) and ladder.base_dir == tmp_path and ladder.file == str(tmp_path / "l.yaml")
    res = Run(ladder, model=ScriptedModel(["done"])).run()
    assert res.status == "completed"
    checked, problems = check_text(text, file=kind("l.yaml"), base_dir=kind(tmp_path))
    assert checked is not None and checked.base_dir == tmp_path and problems == []
    assert list(iter_problems(text + "    nodes: 0\n", file=kind("l.yaml"), base_dir=kind(tmp_path)))[0].file == "l.yaml"
    (tmp_path / "l.yaml").write_text(text)
    from ladr_lab.config import load_ladder
    assert load_ladder(kind(tmp_path / "l.yaml")).base_dir == tmp_path
    assert load_ladder_text(text).base_dir == Path(".")


def _read_in_thread(path) -> list:
    """read_ladder_file(path) on a thread: [the ConfigError or text], or [] if it is still blocked after 5 s."""
    import threading

    from ladr_lab.config.loader import read_ladder_file
    got: list = []

    def read():
        try:
            got.append(read_ladder_file(path))
        except ConfigError as exc:
            got.append(exc)
    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(5)
    return got


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path):
    fifo = tmp_path / "ladder.yaml"
    os.mkfifo(fifo)
    got = _read_in_thread(fifo)
    if not got:                                     # unblock the reader the old code left waiting
        with open(fifo, "w"):
            pass
    assert got and isinstance(got[0], ConfigError)
    assert got[0].rule == "unreadable-file" and got[0].file == str(fifo) and "a FIFO" in str(got[0])


@pytest.mark.parametrize("where", ["directory", "/dev/zero"])
def test_a_directory_or_a_device_is_refused(tmp_path, where):
    path = tmp_path if where == "directory" else Path(where)
    if not path.exists():
        pytest.skip(f"no {where} here")
    (err,) = _read_in_thread(path)
    assert isinstance(err, ConfigError) and err.rule == "unreadable-file" and "not a regular file" in str(err)


def test_a_file_past_the_size_bound_is_refused_without_reading_it_all(tmp_path, monkeypatch):
    from ladr_lab.config import loader
    big = tmp_path / "big.yaml"
    with open(big, "wb") as fh:                     # sparse: 1 GB that costs no disk, would cost 1 GB to read
        fh.write(b"name: x\n")
        fh.truncate(1024 ** 3)
    (err,) = _read_in_thread(big)
    assert isinstance(err, ConfigError) and err.rule == "unreadable-file" and "larger than 16 MB" in str(err)
    monkeypatch.setattr(loader, "MAX_LADDER_BYTES", 20)
    small = tmp_path / "small.yaml"
    small.write_text("name: x\nsteps: [{id: s}]\n")
    with pytest.raises(ConfigError, match="larger than"):
        loader.read_ladder_file(small)


def test_ladder_of_passes_a_ladder_through_and_loads_a_path(tmp_path):
    """`Ladder.of` (as `Trace.of`): a Ladder is returned itself; a str or Path is loaded as `load_ladder` does."""
    from ladr_lab.analysis.positions import as_ladder
    from ladr_lab.config import Ladder, load_ladder
    text = BASE + "  - id: s\n    fields:\n      - { name: Q, type: text, from: input.context }\n"
    ladder = load_ladder_text(text)
    assert Ladder.of(ladder) is ladder
    (tmp_path / "l.yaml").write_text(text)
    for path in (tmp_path / "l.yaml", str(tmp_path / "l.yaml")):
        loaded = Ladder.of(path)
        again = load_ladder(path)
        assert isinstance(loaded, Ladder) and (loaded.file, loaded.text, loaded.steps, loaded.base_dir) == \
            (again.file, again.text, again.steps, again.base_dir) == (str(path), text, ladder.steps, tmp_path)
    assert as_ladder(ladder) is ladder and as_ladder(tmp_path / "l.yaml").text == text     # the older name


def test_ladder_of_a_bad_path_raises_the_loaders_error(tmp_path):
    from ladr_lab.config import Ladder, load_ladder
    with pytest.raises(ConfigError) as missing:
        Ladder.of(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError) as also:
        load_ladder(tmp_path / "absent.yaml")
    assert missing.value.rule == also.value.rule == "unreadable-file" and str(missing.value) == str(also.value)
    (tmp_path / "bad.yaml").write_text(BASE + "  - id: s\n    nodes: 0\n")
    with pytest.raises(ConfigErrors):
        Ladder.of(tmp_path / "bad.yaml")
    with pytest.raises(TypeError, match="Ladder.of takes a Ladder or a ladder path, not int"):
        Ladder.of(3)  # type: ignore[arg-type]
