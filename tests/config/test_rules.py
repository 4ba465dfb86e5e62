"""Load-time rules, selected by rule code and checked by attribute (issue 7's load-time parts)."""
from __future__ import annotations

import textwrap

import pytest

from ladr_lab.config import iter_problems, load_ladder_text
from ladr_lab.errors import ConfigError

BASE = """\
name: t
slates:
  - title: M
    folders:
      - name: facts
        metatags: { score: number, summary: string }
        files: [core.md]
steps:
"""


def errors(steps_yaml: str) -> list[ConfigError]:
    text = BASE + textwrap.indent(textwrap.dedent(steps_yaml), "  ")
    return [p for p in iter_problems(text, file="l.yaml") if p.severity == "error"]


def by_rule(errs: list[ConfigError], rule: str) -> list[ConfigError]:
    return [e for e in errs if e.rule == rule]


@pytest.mark.parametrize("where", ["requestMatch", "match", "jsonMatches"])
@pytest.mark.parametrize("written", ["'{}'", "{}", '"null"', "''"])
def test_an_empty_schema_is_empty_however_it_is_written(where, written):
    steps = {
        "requestMatch": f"- {{ id: s, retrieve: {{ to: {{ slate: M, folder: facts }}, as: D, maxRounds: 1, "
                        f"requestMatch: {written} }} }}",
        "match": f"- {{ id: s, slateWrite: {{ to: {{ slate: M, folder: facts, file: core.md }}, match: {written} }} }}",
        "jsonMatches": f"- {{ id: s, if: {{ jsonMatches: {written}, then: continue, else: abort }} }}",
    }[where]
    (err,) = errors(steps)
    assert err.rule == "empty-schema" and err.step_id == "s" and err.path[-1] == where
    assert str(err).endswith("must be a non-empty JSON Schema.")


@pytest.mark.parametrize("schema", ['\'{"type": "objekt"}\'', "{ type: objekt }"])
def test_metaschema_checks_run_on_the_parsed_schema(schema):
    (err,) = errors(f"- {{ id: s, if: {{ jsonMatches: {schema}, then: continue, else: abort }} }}")
    assert err.rule == "invalid-schema" and err.path[:4] == ("steps", 0, "if", "jsonMatches")
    assert str(err).startswith('Step "s": if.jsonMatches is not a valid JSON Schema:')


def test_every_metaschema_error_and_bad_patterns_are_reported():
    errs = errors("""
        - id: s
          slateWrite:
            to: { slate: M, folder: facts, file: core.md }
            match: { type: object, minProperties: -1, properties: { a: { pattern: "(" } } }
        """)
    assert [(e.rule, e.path[-1]) for e in errs] == [("invalid-schema", "minProperties"), ("invalid-schema", "pattern")]


def test_previous_names_the_step_before_the_group_in_every_branch():
    errs = errors("""
        - id: g1
          type: group
          steps:
            - { id: a, systemPrompt: a }
            - id: b
              fields: [{ name: P, type: ingest, from: previous }]
        - id: g2
          type: group
          steps:
            - id: c
              if: { equals: x, then: { write: { to: { slate: M, folder: facts, file: core.md }, from: previous } } }
            - id: g3
              type: group
              steps:
                - id: d
                  fields: [{ name: P, type: text, from: previous }]
        - id: e
          type: call
          call: { input: previous }
        """)
    prev = by_rule(errs, "previous-after-group")
    # b: the step before g1 is none, and a (its sibling) is not its previous; c and d: g1 is; e: g2 is
    assert [(e.step_id, e.path[-1]) for e in prev] == [("c", "from"), ("d", "from"), ("e", "input")]
    assert all('right after group step "g1"' in str(e) for e in prev[:2]) and '"g2"' in str(prev[2])
    assert errs == prev


def test_siblings_in_a_group_are_not_each_others_previous():
    assert errors("""
        - { id: first, systemPrompt: x }
        - id: g
          type: group
          steps:
            - id: sub
              type: group
              steps: [{ id: a, systemPrompt: a }]
            - id: b
              fields: [{ name: P, type: ingest, from: previous }]
        """) == []


@pytest.mark.parametrize("key", ["[id]", "5", "''", "{a: 1}", "true"])
def test_a_key_is_a_field_name(key):
    errs = errors(f"""
        - id: w
          slateWrite:
            to: {{ slate: M, folder: facts, file: core.md }}
            on: mergeByKey
            key: {key}
            match: {{ type: array }}
          if:
            equals: x
            then: {{ write: {{ to: {{ slate: M, folder: facts, file: core.md }}, from: output, on: mergeByKey,
                              key: {key} }} }}
        """)
    assert [(e.rule, e.step_id, e.path[-2:]) for e in errs] == [
        ("key-type", "w", ("slateWrite", "key")), ("key-type", "w", ("write", "key"))]
    assert "key must be a field name (a non-empty string)" in str(errs[0])


def test_a_missing_key_and_a_key_without_merge_keep_their_seed_wording():
    errs = errors("""
        - id: w
          slateWrite: { to: { slate: M, folder: facts, file: core.md }, on: mergeByKey, match: { type: array } }
        - id: v
          slateWrite: { to: { slate: M, folder: facts, file: core.md }, key: id, match: { type: array } }
        """)
    assert [(e.rule, str(e)) for e in errs] == [
        ("key-required", 'Step "w": slateWrite on: mergeByKey requires key.'),
        ("key-without-merge", 'Step "v": slateWrite.key is only valid when on: mergeByKey (got on: append).')]


def test_gates_and_writes_on_group_steps_are_refused_and_on_call_steps_allowed():
    errs = errors("""
        - id: g
          type: group
          steps: [{ id: a, systemPrompt: a }]
          if: { equals: x, then: continue, else: abort }
          slateWrite: { to: { slate: M, folder: facts, file: core.md }, match: { type: object } }
        - id: c
          type: call
          call: { ladder: self }
          if: { equals: x, then: continue, else: abort }
          slateWrite: { to: { slate: M, folder: facts, file: core.md }, match: { type: object } }
        """)
    assert [(e.rule, e.step_id, e.path[-1]) for e in errs] == [("group-gate", "g", "if"),
                                                              ("group-write", "g", "slateWrite")]
    assert "put the gate on a step after the group" in str(errs[0])
    ladder = load_ladder_text(BASE + "  - { id: c, type: call, call: { ladder: self }, if: { equals: x } }\n")
    assert ladder.steps[0].gate.equals == "x"


@pytest.mark.parametrize("metatag", ["index", "tree"])
def test_index_and_tree_are_folder_level(metatag):
    errs = errors(f"""
        - id: r
          systemPrompt: x
          fields:
            - {{ name: I, type: slateRead, from: {{ slate: M, folder: facts, file: core.md, metatag: {metatag} }} }}
            - {{ name: J, type: ingest, from: {{ slate: M, folder: facts, file: core.md, metatag: {metatag} }} }}
            - {{ name: K, type: slateRead, from: {{ slate: M, folder: facts, metatag: {metatag} }} }}
            - {{ name: L, type: slateRead, from: {{ slate: M, folder: facts, file: core.md, metatag: modified }} }}
        """)
    assert [(e.rule, e.field) for e in errs] == [("folder-level-metatag", "I"), ("folder-level-metatag", "J")]
    assert f'reads metatag "{metatag}" of file "core.md", but {metatag} is folder-level; drop file:' in str(errs[0])


def test_jumps_from_and_into_groups_are_refused_at_load_time():
    errs = errors("""
        - id: g
          type: group
          steps:
            - id: inner
              if: { equals: x, then: continue, else: { jump: { stepId: top } } }
        - id: top
          if: { equals: x, then: { jump: { stepId: inner } }, else: { jump: { stepId: top } } }
        """)
    assert [(e.rule, e.step_id) for e in errs] == [("jump-in-group", "inner"), ("jump-into-group", "top")]
    assert str(errs[0]).startswith('Step "inner": if.else jumps to "top" from inside group "g"')
    assert str(errs[1]).startswith('Step "top": if.then jumps to step "inner" inside group "g"')


def test_every_independent_problem_of_a_block_in_one_pass():
    text = BASE.replace("  - title: M\n", "  - title: M\n    path: 5\n    folders: [{ name: facts, metatags: "
                        "{ score: numbr, index: string } }, {}, { name: facts }]\n  - title: N\n") + textwrap.indent(
        textwrap.dedent("""
        - id: verify
          nodes: 0
          systemPromt: x
          fields:
            - { name: Q, type: txt }
            - { name: Q, type: text, from: { stepId: nope, nodeRef: curent } }
          retrieve: { to: { slate: M, folder: fact }, as: "", maxRounds: 0, requestMatch: { type: objekt } }
          if:
            jsonMatches: { type: object, properties: { score: { minimum: "0.6" } } }
            then:
              write:
                - { to: { slate: M, folder: facts, file: core.md }, from: output, "on": apend }
                - { to: { slate: Memory, folder: facts, file: core.md }, from: output, key: 3 }
            else: { jump: { stepId: verifi } }
          slateWrite: { to: { slate: M, folder: facts, file: ../x.md }, "on": mergeByKey, match: '{}' }
        """), "  ")
    errs = [p for p in iter_problems(text) if p.severity == "error"]
    got = sorted((e.rule, e.step_id) for e in errs)
    assert got == sorted([
        ("wrong-type", None),                  # slate path: 5
        ("metatag-type", None),                # numbr
        ("system-metatag", None),              # index declared
        ("folder-name", None),                 # {}
        ("duplicate-folder", None),            # facts twice
        ("nodes-value", "verify"),
        ("unknown-key", "verify"),             # systemPromt
        ("field-type", "verify"),              # txt
        ("duplicate-field", "verify"),
        ("unknown-step", "verify"),            # nope
        ("node-ref", "verify"),                # curent
        ("unknown-folder", "verify"),          # retrieve.to fact
        ("retrieve-as", "verify"),
        ("max-rounds", "verify"),
        ("invalid-schema", "verify"),          # requestMatch objekt
        ("invalid-schema", "verify"),          # jsonMatches minimum "0.6"
        ("write-policy", "verify"),            # apend
        ("unknown-slate", "verify"),           # Memory
        ("key-without-merge", "verify"),       # key with append
        ("key-type", "verify"),                # key: 3
        ("unknown-jump-target", "verify"),     # verifi
        ("unsafe-name", "verify"),             # ../x.md
        ("key-required", "verify"),            # mergeByKey without key
        ("empty-schema", "verify"),            # match '{}'
    ]), [e.format() for e in errs]
    assert errs == sorted(errs, key=lambda e: (e.line, e.column))
    typo = next(e for e in errs if e.rule == "unknown-jump-target")
    assert typo.suggestion == "verify" and str(typo).endswith('(did you mean "verify"?)')


@pytest.mark.parametrize("src, suggestion", [("previous.output", "previous"), ("output.text", "output"),
                                             ("knobs.topic", "{{knobs.topic}}")])
def test_a_literal_spelled_like_a_reference_is_a_warning_with_a_did_you_mean(src, suggestion):
    text = ("name: p\nsteps:\n  - id: a\n  - id: b\n    fields:\n"
            f"      - {{ name: Prev, type: text, from: {src} }}\n"
            "      - { name: Q, type: text, from: input.context }\n"
            "    if: { equals: x, then: { write: { to: { slate: S, folder: f, file: a.md }, from: input.context } },"
            " else: continue }\n"
            "slates: [{ title: S, path: /tmp, folders: [{ name: f, files: [{ name: a.md }] }] }]\n")
    found = [p for p in iter_problems(text) if p.rule == "source-form"]
    (prev, write) = found
    assert prev.severity == "warning" and prev.suggestion == suggestion and f'"{src}" is not a source' in prev.message
    assert prev.line == 6
    # input.NAME is a source of a text field, but a literal in a gated write
    assert write.severity == "warning" and "input.NAME is read only by" in write.message
    assert not [p for p in iter_problems(text.replace(src, "Plain words. Or v1.2")) if p.rule == "source-form"
                and p.line == 6]


def _all(text: str, knobs: dict | None = None) -> list[ConfigError]:
    return list(iter_problems(text, file="l.yaml", knobs=knobs))


@pytest.mark.parametrize("nodes", ["100000000", "'{{knobs.n}}'"])
def test_huge_nodes_without_a_budget_is_refused_and_within_a_budget_warned(nodes):
    knobs = {"n": 99_999_999_999_999_999_999} if "knobs" in nodes else None
    text = f"name: t\nknobs: {{n: 1}}\nsteps:\n  - {{ id: a, nodes: {nodes}, systemPrompt: x }}\n"
    (err,) = [p for p in _all(text, knobs) if p.severity == "error"]
    assert err.rule == "nodes-unbounded" and "executionBudget.maxLlmCalls" in str(err)
    budgeted = text.replace("steps:", "executionBudget: {maxLlmCalls: 5}\nsteps:")
    problems = _all(budgeted, knobs)
    assert [(p.rule, p.severity) for p in problems] == [("nodes-over-budget", "warning")]
    assert "maxLlmCalls (5)" in str(problems[0])


def test_nodes_within_the_budget_and_below_the_bound_are_not_flagged():
    text = "name: t\nexecutionBudget: {maxLlmCalls: 5}\nsteps:\n  - { id: a, nodes: 5, systemPrompt: x }\n"
    assert _all(text) == []
    assert _all("name: t\nsteps:\n  - { id: a, nodes: 10000, systemPrompt: x }\n") == []


LONG = "[" * 5000


@pytest.mark.parametrize("snippet", [
    "- { id: a, nodes: 'LONG' }",
    "- { id: a, type: 'LONG' }",
    "- { id: a, fields: [{ name: F, type: 'LONG' }] }",
    "- { id: a, retrieve: { to: { slate: M, folder: facts }, as: D, maxRounds: 'LONG', requestMatch: {type: object} } }",
    "- { id: a, if: { equals: x, then: 'LONG', else: continue } }",
    "- { id: a, slateWrite: { to: { slate: M, folder: facts, file: core.md }, on: 'LONG', match: {type: object} } }",
    "- { id: a, slateWrite: { to: { slate: M, folder: facts, file: core.md }, on: mergeByKey, key: ['LONG'], "
    "match: {type: object} } }",
    "- { id: a, type: call, call: { ladder: self, maxDepth: 'LONG' } }",
    "- { id: a }\n- { id: b, fields: [{ name: F, type: text, from: { stepId: a, nodeRef: 'LONG' } }] }",
    "- { id: a }\n- { id: b, fields: [{ name: F, type: text, from: { stepId: a, node: 'LONG' } }] }",
])
def test_an_offending_value_is_echoed_at_most_80_characters(snippet):
    errs = errors(snippet.replace("LONG", LONG))
    assert errs, snippet
    for e in errs:
        assert len(str(e)) < 300 and "[[[[" in str(e) and "…" in str(e), str(e)[:400]


def test_a_budget_value_and_a_metatag_type_are_echoed_short_too():
    text = (f"name: t\nexecutionBudget: {{ maxLlmCalls: '{LONG}' }}\nslates:\n  - title: M\n    folders:\n"
            f"      - {{ name: f, metatags: {{ x: '{LONG}' }} }}\nsteps:\n  - {{ id: a }}\n")
    errs = [p for p in iter_problems(text) if p.severity == "error"]
    assert {e.rule for e in errs} == {"budget-value", "metatag-type"}
    assert all(len(str(e)) < 300 and "…" in str(e) for e in errs)


@pytest.mark.parametrize("knob", [None, "1" + "0" * 5000])
def test_nodes_with_more_digits_than_python_reads_is_one_clear_problem(knob):
    nodes = "'{{knobs.n}}'" if knob else "1" + "0" * 5000
    text = f"name: t\nknobs: {{n: 1}}\nsteps:\n  - {{ id: a, nodes: {nodes}, systemPrompt: x }}\n"
    (err,) = _all(text, {"n": knob} if knob else None)
    assert err.rule == "nodes-value" and "5,001-digit number" in str(err) and len(str(err)) < 200


@pytest.mark.parametrize("word,value", [("YES", "true"), ("no", "false"), ("On", "true"), ("off", "false")])
def test_an_unquoted_yaml_boolean_word_where_a_string_belongs_says_so(word, value):
    text = (f"name: t\nmodel: {word}\nsteps:\n  - id: a\n    systemPrompt: {word}\n"
            f"    if: {{ equals: {word}, then: continue, else: abort }}\n")
    errs = [p for p in iter_problems(text) if p.severity == "error"]
    assert len(errs) == 3
    for e in errs:
        assert str(e).endswith(f'must be a string; YAML read {word} as {value}: quote it ("{word}")'), str(e)
    quoted = text.replace(f" {word}", f" '{word}'")
    assert [p for p in iter_problems(quoted) if p.severity == "error"] == []


def test_a_literal_true_where_a_string_belongs_gets_no_yaml_hint():
    (e,) = errors("- { id: a, if: { equals: true, then: continue, else: abort } }")
    assert str(e).endswith("if.equals must be a string")
