"""Seed rules the landed core once broke (issue 7), each tested through the sentence of the seed it keeps."""
from __future__ import annotations

import json

import pytest

from ladr_lab.engine import Run
from ladr_lab.models import ScriptedModel
from tests.engine.test_retrieve_loop import req, research


def run_with(lad, script, slates, **kw):
    r = Run(lad, model=ScriptedModel(script), slates=slates, input=kw.pop("input", "in"), **kw)
    r.run()
    return r


def prompt_of(run, i):
    return run.trace.calls()[i].messages[1]["content"]


LOOSE = {"type": "object", "required": ["request"]}


# ---- seed 000/001: "Dedup compares on file path"; "no file appears twice in the results" -----------------
@pytest.mark.parametrize("second", ["core.md/", "./core.md", "core.md//", "./././core.md"])
def test_the_same_file_by_another_spelling_is_already_in_context(ladder, slates, second):
    run = run_with(research(ladder, schema=LOOSE), {"research": [req(files=["core.md", second]), "done"]}, slates)
    fetched = run.trace.calls()[0].fetched
    assert [(f.path, f.status) for f in fetched] == [("core.md", "fetched"), ("core.md", "already_in_context")]
    assert fetched[1].asked == second                         # the trace keeps what the model wrote
    assert f"--- {second} [files] ---\n(already in context)" in prompt_of(run, 1)   # and the model sees it
    assert prompt_of(run, 1).count("CORE-7731") == 1


def test_a_later_round_spelling_a_file_differently_is_deduped(ladder, slates):
    run = run_with(research(ladder, schema=LOOSE),
                   {"research": [req(files=["notes/calculus.md"]), req(files=["notes/calculus.md/"]), "done"]}, slates)
    assert [f.status for c in run.trace.calls()[:2] for f in c.fetched] == ["fetched", "already_in_context"]


def test_dedup_across_modes_uses_the_canonical_path(ladder, slates):
    run = run_with(research(ladder, schema=LOOSE),
                   {"research": [req(files=["notes/algebra.md/"], glob="notes/*.md"), "done"]}, slates)
    got = [(f.path, f.mode, f.status) for f in run.trace.calls()[0].fetched]
    assert got == [("notes/algebra.md", "files", "fetched"), ("notes/algebra.md", "glob", "already_in_context"),
                   ("notes/calculus.md", "glob", "fetched")]


@pytest.mark.parametrize("bad", ["../private/secret.md", "/etc/passwd", ".metatags.json", "notes/../core.md",
                                 "a\x00b"])
def test_refused_spellings_still_answer_not_found(ladder, slates, bad):
    run = run_with(research(ladder, schema=LOOSE), {"research": [req(files=[bad]), "done"]}, slates)
    (f,) = run.trace.calls()[0].fetched
    assert f.status == "not_found"
    assert "SECRET-7731" not in prompt_of(run, 1)


# ---- no model output may end a run -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["index", "tree"])
def test_asking_for_a_folder_level_metatag_answers_with_its_value(ladder, slates, name):
    run = run_with(research(ladder, schema=LOOSE), {"research": [req(metatag={"name": name}), "done"]}, slates)
    assert run.status == "completed"
    (f,) = run.trace.calls()[0].fetched
    assert (f.path, f.mode, f.status) == (name, "metatag", "listed") and f.chars > 0
    assert '"name": "core.md"' in prompt_of(run, 1)


@pytest.mark.parametrize("mode,value,told", [
    ("metatag", "tags", 'metatag takes an object like {"name": "tags"'),
    ("metatag", {"name": 5}, "with a string name (got {\"name\": 5})"),
    ("metatag", {"contains": "x"}, "with a string name"),
    ("glob", {"pattern": "*.md"}, "glob takes a pattern string"),
    ("subfolders", [{"name": "notes"}], "subfolders takes folder names"),
    ("files", [["core.md"]], "files takes path strings"),
    ("similarTo", 7, "similarTo takes a text"),
])
def test_malformed_mode_values_are_told_to_the_model(ladder, slates, mode, value, told):
    run = run_with(research(ladder, schema=LOOSE), {"research": [req(**{mode: value}), "done"]}, slates)
    assert run.status == "completed"
    (f,) = run.trace.calls()[0].fetched
    assert f.status == "no_match" and told in f.note
    assert f"(no match: {f.note})" in prompt_of(run, 1)
    assert "(nothing retrieved)" not in prompt_of(run, 1)


def test_a_request_naming_no_mode_says_so(ladder, slates):
    run = run_with(research(ladder, schema=LOOSE), {"research": [req(file=["core.md"]), "done"]}, slates)
    (f,) = run.trace.calls()[0].fetched
    assert f.status == "no_match" and "names no retrieval mode" in f.note and "(it had: file)" in f.note


def test_the_output_that_broke_a_round_is_in_the_trace(ladder, slates):
    (slates["Knowledge"] / "docs" / ".metatags.json").write_text("{ not json")
    out = req(metatag={"name": "tags", "contains": "x"})
    run = run_with(research(ladder, schema=LOOSE), {"research": [out, "done"]}, slates)
    assert run.status == "error" and run.llm_calls == 1
    (call,) = run.trace.calls()
    assert call.output == out and call.request_match == "retrieval" and "corrupt metatags file" in call.error
    exc = run.exception
    assert exc.step_id == "research" and exc.node == 1 and exc.call.round == 1 and exc.__cause__ is not None
    res = run.result
    assert (res.error_type, res.error_step, res.error_node) == ("RunError", "research", 1)
    assert res.error_where is not None and res.error_where.startswith("<ladder>:")


# ---- seed 003: writes, gates, sources --------------------------------------------------------------------
GATED_WRITE = """
- id: verify
  nodes: 2
  if: { equals: OK, then: continue, else: abort }
  slateWrite: { to: { slate: Memory, folder: facts, file: core.md }, on: append, match: { type: object } }
"""


def test_an_abort_stops_every_node_write_of_the_step(ladder, slates):
    r = run_with(ladder(GATED_WRITE), {"verify/1": ["NO"], "verify/2": ["OK"]}, slates)
    # node 2 said OK, but its slateWrite (no JSON here) and any other write of the step must not fire
    assert r.status == "aborted"
    r2 = run_with(ladder(GATED_WRITE.replace("equals: OK", "jsonMatches: { type: object, required: [ok] }")),
                  {"verify/1": ['{"nope": 1}'], "verify/2": ['{"ok": 1}']}, slates)
    assert r2.status == "aborted"
    assert (slates["Memory"] / "facts" / "core.md").read_text() == "Seed fact."
    writes = r2.trace.writes()
    assert [(w.node, w.status) for w in writes] == [(2, "skipped")] and "the step aborted (node 1)" in writes[0].reason


def test_writes_of_a_step_that_does_not_abort_land_in_node_order(ladder, slates):
    lad = ladder(GATED_WRITE.replace("else: abort", "else: prune").replace("equals: OK", "jsonMatches: { type: object }"))
    r = run_with(lad, {"verify/1": ['{"n": 1}'], "verify/2": ['{"n": 2}']}, slates)
    assert r.status == "completed" and [w.node for w in r.trace.writes()] == [1, 2]
    assert (slates["Memory"] / "facts" / "core.md").read_text() == 'Seed fact.\n\n{"n": 1}\n\n{"n": 2}'


def test_a_metatag_write_to_a_missing_file_is_a_skip_and_the_run_goes_on(ladder, slates):
    lad = ladder("""
        - id: tag
          slateWrite: { to: { slate: Memory, folder: facts, file: missing.md, metatag: summary }, on: overwrite,
                        match: { type: object }, field: s }
        - id: after
        """)
    r = run_with(lad, {"tag": ['{"s": "hello"}'], "after": ["fine"]}, slates)
    assert r.status == "completed" and r.output == "fine"
    (w,) = r.trace.writes()
    assert w.status == "skipped" and "missing.md" in w.reason and w.step == "tag"


GROUP_PREVIOUS = """
- id: before
- id: fan
  type: group
  steps:
    - id: left
      fields: [{ name: P, type: ingest, from: previous }]
      if: { equals: never, then: continue, else: { write: { to: { slate: Memory, folder: facts, file: left.md },
                                                            from: previous, on: overwrite } } }
    - id: right
      fields: [{ name: P, type: ingest, from: previous }]
      if: { equals: never, then: continue, else: { write: { to: { slate: Memory, folder: facts, file: right.md },
                                                            from: previous, on: overwrite } } }
- id: after
  fields: [{ name: L, type: ingest, from: { stepId: left } }, { name: R, type: ingest, from: { stepId: right } }]
"""


def test_previous_inside_a_group_is_the_step_before_the_group_for_fields_and_writes(ladder, slates):
    r = run_with(ladder(GROUP_PREVIOUS), {"before": ["BEFORE"], "left": ["L-out"], "right": ["R-out"],
                                          "after": ["done"]}, slates)
    assert r.status == "completed", r.error
    for branch in ("left", "right"):
        assert "P:\nBEFORE" in r.trace.calls(branch)[0].messages[1]["content"]
        assert (slates["Memory"] / "facts" / f"{branch}.md").read_text() == "BEFORE"
    assert "L:\nL-out\n\nR:\nR-out" in r.trace.calls("after")[0].messages[1]["content"]


def test_a_branch_does_not_see_its_sibling(ladder, slates):
    lad = ladder("""
        - id: fan
          type: group
          steps:
            - id: a
            - id: b
              fields: [{ name: A, type: ingest, from: { stepId: a } }]
        """)
    r = run_with(lad, {"a": ["A"], "b": ["never"]}, slates)
    assert r.status == "error" and 'requires step "a" to have executed' in r.error


def test_a_fully_pruned_previous_step_costs_no_model_call(ladder, slates):
    lad = ladder("""
        - id: verify
          nodes: 2
          if: { equals: OK, then: continue, else: prune }
        - id: record
          if: { equals: x, then: continue, else: { write: { to: { slate: Memory, folder: facts, file: log.md },
                                                           from: previous, on: append } } }
        """)
    r = run_with(lad, {"verify": ["no", "no"], "record": ["never called"]}, slates)
    assert r.status == "error" and r.error.startswith("NodeDependencyError: ")
    assert r.llm_calls == 2 and r.trace.calls("record") == []
    assert "the step does not run" in r.error and r.exception.step_id == "record"


def test_merge_by_key_replaces_every_existing_entry_with_the_key(ladder, slates):
    reg = slates["Memory"] / "registry" / "entities.md"
    reg.write_text(json.dumps([{"id": "a", "v": 1}, {"id": "b", "v": 1}, {"id": "a", "v": 2}]))
    lad = ladder("""
        - id: merge
          slateWrite: { to: { slate: Memory, folder: registry, file: entities.md }, on: mergeByKey, key: id,
                        match: { type: array } }
        """)
    r = run_with(lad, {"merge": ['[{"id": "a", "v": 9}, {"id": "c", "v": 1}, {"id": "c", "v": 2}]']}, slates)
    assert r.status == "completed"
    assert json.loads(reg.read_text()) == [{"id": "a", "v": 9}, {"id": "b", "v": 1}, {"id": "c", "v": 2}]


@pytest.mark.parametrize("src,expect", [
    ("{ stepId: s }", 'requires step "s" to have executed in the current loop'),
    ("{ stepId: s, nodeRef: accumulate }", 'requires step "s" to have executed in the current loop'),
    ("{ stepId: s, nodeRef: current }", "which is this node, before it produced an output"),
])
def test_reading_the_current_step_is_the_seed_error(ladder, slates, src, expect):
    lad = ladder(f"""
        - id: s
          fields: [{{ name: Own, type: ingest, from: {src} }}]
        """)
    r = run_with(lad, {"s": ["never"]}, slates)
    assert r.status == "error" and expect in r.error and r.llm_calls == 0


def test_a_sequential_step_reads_its_own_earlier_node(ladder, slates):
    lad = ladder("""
        - id: s
          type: sequential
          nodes: 2
          fields: [{ name: Prev, type: ingest, from: { stepId: s, nodeRef: previous } },
                   { name: First, type: ingest, from: { stepId: s, node: 1 } }]
        """)
    r = Run(lad, model=ScriptedModel({"s/1": ["one"], "s/2": ["two"]}), slates=slates)
    r.run()
    assert r.status == "error"   # node 1 reads node 1 of itself before it has an output
    lad2 = ladder("""
        - id: s
          type: sequential
          nodes: 2
          fields: [{ name: Prev, type: ingest, from: { stepId: s, nodeRef: previous } }]
        """)
    r2 = run_with(lad2, {"s/1": ["one"], "s/2": ["two"]}, slates)
    assert r2.status == "completed" and "Prev:\none" in r2.trace.calls("s", 2)[0].messages[1]["content"]


def test_reading_a_pruned_node_by_number_is_a_dependency_error(ladder, slates):
    lad = ladder("""
        - id: v
          nodes: 2
          if: { equals: OK, then: continue, else: prune }
        - id: w
          fields: [{ name: Two, type: ingest, from: { stepId: v, node: 2 } }]
        """)
    r = run_with(lad, {"v/1": ["OK"], "v/2": ["bad"], "w": ["never"]}, slates)
    assert r.status == "error" and "node 2 of step \"v\", which was pruned" in r.error and r.llm_calls == 2


# ---- decisions of issue 7 item 12 ------------------------------------------------------------------------
def test_metatag_writes_enforce_the_declared_type(ladder, slates):
    lad = ladder("""
        - id: score
          slateWrite: { to: { slate: Memory, folder: facts, file: core.md, metatag: score }, on: overwrite,
                        match: { type: object }, field: s }
        """)
    bad = run_with(lad, {"score": ['{"s": "high"}']}, slates)
    (w,) = bad.trace.writes()
    assert w.status == "skipped" and 'declared number' in w.reason
    assert "score" not in json.loads((slates["Memory"] / "facts" / ".metatags.json").read_text()
                                     if (slates["Memory"] / "facts" / ".metatags.json").exists() else "{}").get(
        "core.md", {})
    good = run_with(lad, {"score": ['{"s": 0.75}']}, slates)
    assert good.trace.writes()[0].status == "written"
    meta = json.loads((slates["Memory"] / "facts" / ".metatags.json").read_text())
    assert meta["core.md"]["score"] == 0.75


def test_a_gated_numeric_text_becomes_a_number_metatag(ladder, slates):
    lad = ladder("""
        - id: score
          if: { equals: never, then: continue, else: { write: { to: { slate: Memory, folder: facts, file: core.md,
                                                                       metatag: score }, from: output, on: overwrite } } }
        """)
    r = run_with(lad, {"score": ["0.5"]}, slates)
    assert r.trace.writes()[0].status == "written"
    assert json.loads((slates["Memory"] / "facts" / ".metatags.json").read_text())["core.md"]["score"] == 0.5


def test_a_json_array_of_strings_is_written_as_json_like_any_value(ladder, slates):
    lad = ladder("""
        - id: list
          slateWrite: { to: { slate: Memory, folder: facts, file: list.md }, on: overwrite,
                        match: { type: object }, field: items }
        """)
    run_with(lad, {"list": ['{"items": ["a", "b"]}']}, slates)
    assert json.loads((slates["Memory"] / "facts" / "list.md").read_text()) == ["a", "b"]


def test_survivors_to_a_file_are_joined_and_to_a_string_list_metatag_are_an_array(ladder, slates):
    lad = ladder("""
        - id: many
          nodes: 2
        - id: keep
          if: { equals: never, then: continue, else: { write: [
                 { to: { slate: Memory, folder: facts, file: core.md }, from: previous, on: overwrite },
                 { to: { slate: Memory, folder: facts, file: core.md, metatag: tags }, from: previous,
                   on: overwrite } ] } }
        """)
    r = run_with(lad, {"many/1": ["alpha"], "many/2": ["beta"], "keep": ["x"]}, slates)
    assert [w.status for w in r.trace.writes()] == ["written", "written"]
    assert (slates["Memory"] / "facts" / "core.md").read_text() == "alpha\n\nbeta"
    assert json.loads((slates["Memory"] / "facts" / ".metatags.json").read_text())["core.md"]["tags"] == ["alpha", "beta"]


def test_a_call_step_gates_and_writes_its_child_output(ladder, slates, tmp_path):
    child = tmp_path / "child.yaml"
    child.write_text("name: child\nsteps:\n  - id: inner\n")
    lad = ladder(f"""
        - id: delegate
          type: call
          call: {{ ladder: {child}, maxDepth: 2 }}
          if: {{ jsonMatches: {{ type: object, required: [ok] }}, then: continue, else: abort }}
          slateWrite: {{ to: {{ slate: Memory, folder: facts, file: core.md }}, on: overwrite, match: {{ type: object }} }}
        """)
    good = run_with(lad, {"inner": ['{"ok": true}']}, slates)
    assert good.status == "completed" and good.trace.of_type("gate")[0].matched is True
    assert json.loads((slates["Memory"] / "facts" / "core.md").read_text()) == {"ok": True}
    bad = run_with(lad, {"inner": ['{"no": 1}']}, slates)
    assert bad.status == "aborted" and bad.trace.writes() == []     # an aborting node runs no slateWrite
    assert json.loads((slates["Memory"] / "facts" / "core.md").read_text()) == {"ok": True}


# ---- property: no model output may end a run -------------------------------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_json = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=8),
                               st.sampled_from(["core.md", "./notes//algebra.md", "notes/", "..", "index", "tree",
                                                "tags", "*.md", "**", ".metatags.json"])),
                     lambda inner: st.one_of(st.lists(inner, max_size=3),
                                             st.dictionaries(st.sampled_from(["name", "contains", "similarTo",
                                                                              "depth", "x"]), inner, max_size=3)),
                     max_leaves=8)
_requests = st.dictionaries(st.sampled_from(["files", "subfolders", "metatag", "glob", "similarTo", "topK",
                                             "file", "query"]), _json, max_size=4)
STATUSES = {"fetched", "not_found", "already_in_context", "listed", "no_match", "left_out"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requests=st.lists(_requests, min_size=1, max_size=4), rounds=st.integers(1, 3))
def test_whatever_a_model_asks_the_run_completes_within_its_bounds(ladder, slates, requests, rounds):
    outs = [json.dumps({"request": r}) for r in requests] + ["final"]
    run = Run(research(ladder, rounds=rounds, schema=LOOSE), model=ScriptedModel({"research": outs}), input="q",
              slates=slates, max_fetch_chars=2_000, max_round_chars=5_000)
    res = run.run()
    assert res.status == "completed", res.error
    calls = run.trace.calls()
    assert len(calls) <= rounds + 1
    for c in calls:
        for f in c.fetched or ():
            assert f.status in STATUSES and f.chars <= 2_000 + 200
        assert sum(f.chars for f in c.fetched or ()) <= 5_000 + 200
        assert "SECRET-7731" not in c.messages[1]["content"]


# ---- issue 16 items 9-12 ---------------------------------------------------------------------------------
# seed 000: "The runtime reads each named file from the declared slate/folder"; a model that sees folder
# `docs` in its prompt writes `docs/core.md`, and a name copied from a macOS folder arrives in NFD
@pytest.mark.parametrize("asked", ["docs/core.md", "./docs/core.md", "docs//core.md/"])
def test_a_path_starting_with_the_folders_own_name_resolves_inside_it(ladder, slates, asked):
    run = run_with(research(ladder, schema=LOOSE), {"research": [req(files=[asked, "core.md"]), "done"]}, slates)
    fetched = run.trace.calls()[0].fetched
    assert [(f.path, f.status, f.asked) for f in fetched] == [("core.md", "fetched", asked),
                                                              ("core.md", "already_in_context", None)]
    assert prompt_of(run, 1).count("CORE-7731") == 1 and f"--- {asked} [files] ---\n# Core" in prompt_of(run, 1)


def test_the_folder_name_prefix_never_hides_a_real_subfolder_or_leaves_the_folder(ladder, slates):
    docs = slates["Knowledge"] / "docs"
    (docs / "docs").mkdir()
    (docs / "docs" / "core.md").write_text("INNER")
    run = run_with(research(ladder, schema=LOOSE),
                   {"research": [req(files=["docs/core.md", "docs/../private/secret.md", "private/secret.md",
                                            "docs/nope.md"]), "done"]}, slates)
    got = [(f.path, f.status) for f in run.trace.calls()[0].fetched]
    assert got == [("docs/core.md", "fetched"), ("docs/../private/secret.md", "not_found"),
                   ("private/secret.md", "not_found"), ("docs/nope.md", "not_found")]
    assert "INNER" in prompt_of(run, 1) and "SECRET-7731" not in prompt_of(run, 1)


def test_the_folder_name_prefix_works_for_subfolders_and_globs(ladder, slates):
    run = run_with(research(ladder, schema=LOOSE),
                   {"research": [req(subfolders=["docs/notes", "docs"], glob="docs/notes/*.md"), "done"]}, slates)
    got = [(f.path, f.mode, f.status) for f in run.trace.calls()[0].fetched]
    assert got == [("notes/", "subfolders", "listed"), ("/", "subfolders", "listed"),
                   ("notes/algebra.md", "glob", "fetched"), ("notes/calculus.md", "glob", "fetched")]


@pytest.mark.parametrize("on_disk, asked", [("NFC", "NFD"), ("NFD", "NFC"), ("NFD", "NFD")])
def test_a_name_in_another_unicode_normal_form_resolves(ladder, slates, on_disk, asked):
    import unicodedata
    docs = slates["Knowledge"] / "docs"
    name = unicodedata.normalize(on_disk, "notes/café.md")
    (docs / name).write_text("CAFE-1")
    wanted = unicodedata.normalize(asked, "notes/café.md")
    again = unicodedata.normalize("NFC" if asked == "NFD" else "NFD", "notes/café.md")
    run = run_with(research(ladder, schema=LOOSE), {"research": [req(files=[wanted, again]), "done"]}, slates)
    fetched = run.trace.calls()[0].fetched
    assert [(f.path, f.status) for f in fetched] == [(name, "fetched"), (name, "already_in_context")]
    assert fetched[0].asked == (None if wanted == name else wanted)
    assert prompt_of(run, 1).count("CAFE-1") == 1


# seed 000, "Uses standard glob matching": `./` and `//` are nothing to standard glob
@pytest.mark.parametrize("pattern, expected", [
    ("./*.md", ["core.md", "faq.md", "glossary.md", "report-2024.md", "report-2025.md"]),
    ("notes//*.md", ["notes/algebra.md", "notes/calculus.md"]),
    ("./notes/./*.md", ["notes/algebra.md", "notes/calculus.md"]),
    ("notes/*.md/", ["notes/algebra.md", "notes/calculus.md"]),
])
def test_glob_patterns_are_canonicalised_like_requested_paths(ladder, slates, pattern, expected):
    run = run_with(research(ladder, schema=LOOSE), {"research": [req(glob=pattern), "done"]}, slates)
    assert [(f.path, f.status) for f in run.trace.calls()[0].fetched] == [(p, "fetched") for p in expected]


@pytest.mark.parametrize("pattern", ["../private/*", "notes/../../private/*", "/etc/*", "./../*", "../docs/*.md"])
def test_a_glob_that_would_leave_the_folder_matches_nothing(ladder, slates, pattern):
    run = run_with(research(ladder, schema=LOOSE), {"research": [req(glob=pattern), "done"]}, slates)
    (f,) = run.trace.calls()[0].fetched
    assert (f.status, f.mode) == ("no_match", "glob") and "SECRET-7731" not in prompt_of(run, 1)


# seed 003: "For to.metatag of a JSON-typed metatag: survivors are written as a JSON array"
SURVIVORS_TO_METATAG = """
- id: many
  nodes: %d
  if: { equals: drop, then: prune, else: continue }
- id: keep
  if: { equals: never, then: continue, else: { write: [
         { to: { slate: Memory, folder: facts, file: core.md, metatag: tags }, from: previous, on: %s },
         { to: { slate: Memory, folder: registry, file: entities.md, metatag: items }, from: previous, on: %s } ] } }
"""


def _meta(slates, folder, name):
    return json.loads((slates["Memory"] / folder / ".metatags.json").read_text())[name]


@pytest.mark.parametrize("outputs", [["alpha"], ["alpha", "drop"], ["drop", "alpha", "drop"]])
def test_one_survivor_to_a_json_typed_metatag_is_a_one_element_array(ladder, slates, outputs):
    (slates["Memory"] / "registry" / "entities.md").write_text("[]")
    script = {f"many/{i}": [o] for i, o in enumerate(outputs, 1)} | {"keep": ["x"]}
    r = run_with(ladder(SURVIVORS_TO_METATAG % (len(outputs), "overwrite", "overwrite")), script, slates)
    assert [w.status for w in r.trace.writes()] == ["written", "written"], [w.reason for w in r.trace.writes()]
    assert _meta(slates, "facts", "core.md")["tags"] == ["alpha"]
    assert _meta(slates, "registry", "entities.md")["items"] == ["alpha"]


def test_survivors_to_an_object_metatag_are_an_array_of_their_json_values(ladder, slates):
    (slates["Memory"] / "registry" / "entities.md").write_text("[]")
    lad = ladder(SURVIVORS_TO_METATAG % (1, "overwrite", "overwrite"))
    run_with(lad, {"many": ['{"id": "a"}'], "keep": ["x"]}, slates)
    assert _meta(slates, "registry", "entities.md")["items"] == [{"id": "a"}]
    lad3 = ladder(SURVIVORS_TO_METATAG % (3, "overwrite", "overwrite"))
    run_with(lad3, {"many/1": ['{"id": "a"}'], "many/2": ["drop"], "many/3": ["plain"], "keep": ["x"]}, slates)
    assert _meta(slates, "registry", "entities.md")["items"] == [{"id": "a"}, "plain"]


def test_appending_survivors_to_json_typed_metatags_appends_each(ladder, slates):
    (slates["Memory"] / "registry" / "entities.md").write_text("[]")
    (slates["Memory"] / "facts" / ".metatags.json").write_text('{"core.md": {"tags": ["old"]}}')
    (slates["Memory"] / "registry" / ".metatags.json").write_text('{"entities.md": {"items": {"id": "z"}}}')
    lad = ladder(SURVIVORS_TO_METATAG % (2, "append", "append"))
    run_with(lad, {"many/1": ['{"id": "a"}'], "many/2": ["drop"], "keep": ["x"]}, slates)
    # seed 003: "appended to the existing array (or wraps both values in a new array if ... a scalar)"
    assert _meta(slates, "facts", "core.md")["tags"] == ["old", '{"id": "a"}']
    assert _meta(slates, "registry", "entities.md")["items"] == [{"id": "z"}, {"id": "a"}]


def test_a_survivor_that_is_a_json_list_of_strings_gives_its_strings_to_a_string_list_metatag(ladder, slates):
    (slates["Memory"] / "registry" / "entities.md").write_text("[]")
    lad = ladder(SURVIVORS_TO_METATAG % (2, "overwrite", "overwrite"))
    run_with(lad, {"many/1": ['["a", "b"]'], "many/2": ["c"], "keep": ["x"]}, slates)
    assert _meta(slates, "facts", "core.md")["tags"] == ["a", "b", "c"]
    run_with(lad, {"many/1": ['["a", "b"]'], "many/2": ["drop"], "keep": ["x"]}, slates)
    assert _meta(slates, "facts", "core.md")["tags"] == ["a", "b"]


# seed 001: "Multiple investigators each research independently" — a finding is labelled with its node
def test_multi_ingest_labels_each_survivor_with_its_node(ladder, slates):
    lad = ladder("""
        - id: investigate
          nodes: 3
          if: { equals: pruned, then: prune, else: continue }
        - id: collect
          fields: [{ name: Findings, type: multi_ingest, from: { stepId: investigate, nodeRef: accumulate } }]
        """)
    r = run_with(lad, {"investigate/1": ["F-one"], "investigate/2": ["pruned"], "investigate/3": ["F-three"],
                       "collect": ["done"]}, slates)
    prompt = prompt_of(r, 3)
    assert "--- node 1 ---\nF-one\n\n--- node 3 ---\nF-three" in prompt and "--- node 2 ---" not in prompt
