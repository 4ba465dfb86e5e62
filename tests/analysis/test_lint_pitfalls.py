"""Lint: each pitfall of seed 001 found on a ladder built to show it, and nothing on the examples."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ladr_lab import Run, ScriptedModel, lint
from tests.conftest import FULL_REQUEST, SLATES_YAML

ROOT = Path(__file__).resolve().parents[2]

RETRIEVE = """
  - id: %(id)s
    nodes: %(nodes)s
    fields:
      - { name: Question, type: text, from: input.context }
%(index)s
    retrieve:
      to: { slate: Knowledge, folder: docs }
      as: Docs
      maxRounds: %(rounds)s
      requestMatch: %(schema)s
"""
INDEX = "      - { name: FileIndex, type: slateRead, from: { slate: Knowledge, folder: docs, metatag: index } }"


def ladder_text(*steps: dict, budget: str = "{ maxLlmCalls: 40 }") -> str:
    body = "".join(RETRIEVE % {"id": "research", "nodes": 1, "index": INDEX, "rounds": 3,
                               "schema": json.dumps(FULL_REQUEST), **s} for s in steps)
    return f"name: t\nexecutionBudget: {budget}\n" + SLATES_YAML + "steps:\n" + body


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "l.yaml"
    p.write_text(text)
    return p


def codes(report) -> list[str]:
    return sorted({f.code for f in report.findings})


@pytest.mark.parametrize("path", sorted(p for p in (ROOT / "examples").glob("*.yaml") if not p.name.startswith("pitfall_")),
                         ids=lambda p: p.name)
def test_the_examples_avoid_every_pitfall(path):
    report = lint(path)
    assert report.ok and report.findings == [], report.format()


def test_the_pitfall_examples_show_their_pitfall_to_lint():
    """examples/pitfall_*.yaml are seed 001's pitfalls on purpose (for a real model, notebooks/07_real_model.ipynb):
    lint finds the loose schema statically, and the tight one both statically (the prompt's example fails it) and from
    the local model's recorded run, where it never matched."""
    assert "loose-request-match" in codes(lint(ROOT / "examples" / "pitfall_loose.yaml"))
    tight = ROOT / "examples" / "pitfall_tight.yaml"
    static = codes(lint(tight))
    assert "prompt-example-unmatched" in static and "request-never-matches" not in static
    assert "request-never-matches" in codes(lint(tight, traces=[ROOT / "notebooks" / "recorded" / "tight.jsonl"]))


def test_a_careful_ladder_is_clean(tmp_path):
    assert lint(write(tmp_path, ladder_text({}))).findings == []


@pytest.mark.parametrize("schema, why", [
    ({"type": "object", "properties": {"request": {"type": "object"}}}, "has no `required`"),
    ({"type": "object", "required": [], "properties": {"request": {"type": "object"}}}, "has no `required`"),
    ({"anyOf": [{"required": ["request"]}, {"type": "object"}]}, "any JSON object matches"),
    ({"type": "object", "required": ["answer"]}, "final-looking object"),
])
def test_a_loose_request_match_is_found_statically(tmp_path, schema, why):
    text = ladder_text({"schema": json.dumps(schema)})
    report = lint(write(tmp_path, text))
    (f,) = report.findings
    assert (f.code, f.step, f.severity) == ("loose-request-match", "research", "warning")
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if "requestMatch:" in ln)
    assert why in f.message and "required: [request]" in f.fix and f.line == line


def test_a_retrieve_step_without_index_field(tmp_path):
    report = lint(write(tmp_path, ladder_text({"index": ""})))
    assert codes(report) == ["no-index-field"] and "Knowledge/docs" in report.findings[0].message
    tree = INDEX.replace("metatag: index", "metatag: tree, depth: 2")
    assert lint(write(tmp_path, ladder_text({"index": tree}))).findings == []


def test_a_metatag_listing_names_the_files_so_it_counts_as_a_listing(tmp_path):
    """issue 31: a `metatag: summary` field shows `{file, value}` for each file (the 1.5B picked the right note from
    it), so it is a listing; one file read by name (`file:`) or a listing of another folder is not."""
    summary = INDEX.replace("FileIndex", "Files").replace("metatag: index", "metatag: summary")
    assert lint(write(tmp_path, ladder_text({"index": summary}))).findings == []
    one_file = INDEX.replace("metatag: index", "file: core.md")
    assert codes(lint(write(tmp_path, ladder_text({"index": one_file})))) == ["no-index-field"]
    other = INDEX.replace("folder: docs", "folder: private")
    assert "no-index-field" in codes(lint(write(tmp_path, ladder_text({"index": other}))))


def test_max_rounds_high_and_fan_out_cost(tmp_path):
    report = lint(write(tmp_path, ladder_text({"rounds": 20}, {"id": "fan", "nodes": 5, "rounds": 4},
                                              budget="{ maxLlmCalls: 24 }")))
    assert codes(report) == ["fan-out-cost", "max-rounds-high"]
    assert [f.step for f in report.by_code("max-rounds-high")] == ["research"]
    (fan,) = report.by_code("fan-out-cost")
    assert fan.step == "fan" and "5 nodes × (maxRounds 4 + 1) = up to 25" in fan.message
    unbounded = lint(write(tmp_path, ladder_text({"nodes": 3}, budget="{ maxSteps: 5 }")))
    assert codes(unbounded) == ["fan-out-cost"] and "no executionBudget.maxLlmCalls" in unbounded.findings[0].message
    # the pitfall is fan-out (seed 001): one node over the budget is not it (docs/analysis.md says so too)
    single = lint(write(tmp_path, ladder_text({"rounds": 8}, budget="{ maxLlmCalls: 4 }")))
    assert "fan-out-cost" not in codes(single)


def test_schema_typos_are_lint_findings_too(tmp_path):
    schema = dict(FULL_REQUEST, requried=["request"])
    (f,) = lint(write(tmp_path, ladder_text({"schema": json.dumps(schema)}))).findings
    assert f.code == "unknown-schema-keyword" and f.fix == 'write "required" instead of "requried"'


def test_an_invalid_ladder_reports_its_errors(tmp_path):
    report = lint(write(tmp_path, ladder_text({"rounds": 0})))
    assert not report.ok and report.findings == [] and [p.rule for p in report.problems] == ["max-rounds"]
    assert not lint(tmp_path / "missing.yaml").ok


# ---- from traces --------------------------------------------------------------------------------------
def traced(tmp_path: Path, slates, text: str, script: dict, name: str = "t.jsonl") -> Path:
    lad = write(tmp_path, text)
    out = tmp_path / name
    Run(lad, model=ScriptedModel(script), input="q", slates=slates, trace_out=out).run()
    return out


def req(*files: str) -> str:
    return json.dumps({"request": {"files": list(files)}})


def test_a_final_answer_taken_as_request_and_a_forced_final_that_still_matched(tmp_path, slates):
    loose = {"type": "object", "properties": {"request": {"type": "object"}}}
    text = ladder_text({"schema": json.dumps(loose), "rounds": 2})
    t = traced(tmp_path, slates, text, {"research": ['{"answer": "A"}', req("core.md"), '{"answer": "B"}']})
    report = lint(write(tmp_path, text), [t])
    taken = report.by_code("final-taken-as-request")[0]
    assert [(e["seq"], e["round"]) for e in taken.evidence] == [(2, 1)] and taken.evidence[0]["trace"] == str(t)
    assert [e["round"] for e in report.by_code("forced-final-matched")[0].evidence] == [3]
    # the forced final follows from the wasted round: counted there, not advised as "raise maxRounds"
    assert report.by_code("max-rounds-low") == [] and "1 forced final call(s) follow" in taken.message
    assert "#2 (node 1, round 1)" in taken.format()


def test_a_request_match_the_model_never_satisfies(tmp_path, slates):
    text = ladder_text({})
    t = traced(tmp_path, slates, text, {"research": ['{"request": {"file": ["core.md"]}}']})
    (f,) = [f for f in lint(write(tmp_path, text), [t]).findings]
    assert f.code == "request-never-matches" and "the step never retrieved" in f.message
    assert "`additionalProperties` at /properties/request" in f.message and f.evidence[0]["round"] == 1


def test_rounds_that_brought_nothing_new(tmp_path, slates):
    text = ladder_text({})
    t = traced(tmp_path, slates, text, {"research": [req("core.md"), req("core.md", "nope.md"), "done"]})
    (f,) = lint(write(tmp_path, text), [t]).findings
    assert f.code == "rounds-nothing-new" and [e["round"] for e in f.evidence] == [2]
    assert f.evidence[0]["statuses"] == ["already_in_context", "not_found"]


def test_max_rounds_unused_across_traces(tmp_path, slates):
    text = ladder_text({"rounds": 6})
    t1 = traced(tmp_path, slates, text, {"research": [req("core.md"), "done"]}, "a.jsonl")
    t2 = traced(tmp_path, slates, text, {"research": [req("faq.md"), req("glossary.md"), "done"]}, "b.jsonl")
    report = lint(write(tmp_path, text), [t1, t2])
    (f,) = report.findings
    assert (f.code, f.severity) == ("max-rounds-unused", "info") and "at most 2 of maxRounds 6" in f.message
    assert "lower retrieve.maxRounds to 3" in f.fix and report.ok    # info does not fail lint


def test_a_run_that_hit_the_budget(tmp_path, slates):
    text = ladder_text({"nodes": 2, "rounds": 1}, budget="{ maxLlmCalls: 3 }")
    t = traced(tmp_path, slates, text, {"research": [req("core.md"), req("faq.md"), "a", "b"]})
    report = lint(write(tmp_path, text), [t])
    assert "budget-exhausted" in codes(report) and "fan-out-cost" in codes(report)
    assert report.by_code("budget-exhausted")[0].evidence[0]["llm_calls"] == 3


# issue 16 item 8: a learner follows a fix literally; "raise maxRounds" where the rounds were wasted wastes more
def test_max_rounds_low_is_not_advised_when_wasted_rounds_explain_the_forced_final(tmp_path, slates):
    loose = {"type": "object", "properties": {"request": {"type": "object"}}}
    text = ladder_text({"schema": json.dumps(loose), "rounds": 3})
    t = traced(tmp_path, slates, text, {"research": ['{"answer": "A"}', req("core.md"), req("core.md"),
                                                     req("faq.md")]})
    report = lint(write(tmp_path, text), [t])
    assert "final-taken-as-request" in codes(report) and "rounds-nothing-new" in codes(report)
    assert report.by_code("max-rounds-low") == []
    taken = report.by_code("final-taken-as-request")[0]
    assert "1 forced final call(s) follow" in taken.message and "raising maxRounds" in taken.message
    # a forced final with no wasted round in its execution is still max-rounds-low
    t2 = traced(tmp_path, slates, ladder_text({"rounds": 1}), {"research": [req("core.md"), req("faq.md")]}, "b.jsonl")
    assert [e["round"] for e in lint(write(tmp_path, ladder_text({"rounds": 1})), [t2]).by_code("max-rounds-low")[0]
            .evidence] == [2]


def test_a_system_prompt_example_that_requestmatch_refuses(tmp_path):
    prompt = ('To retrieve, emit exactly:\\n{"request": {"files": ["core.md"]}}\\n'
              'or {"request": {"file": "core.md"}}\\nWhen done, answer {"answer": "..."} in prose.')
    text = ladder_text({}) + "    systemPrompt: '" + prompt.replace("\\n", " ") + "'\n"
    report = lint(write(tmp_path, text))
    (f,) = report.by_code("prompt-example-unmatched")
    assert '{"request": {"file": "core.md"}}' in f.message and "additionalProperties" in f.message
    assert f.fix and f.line is not None
    good = ladder_text({}) + '    systemPrompt: "Emit {\\"request\\": {\\"files\\": [\\"a.md\\"]}} to retrieve."\n'
    assert lint(write(tmp_path, good)).by_code("prompt-example-unmatched") == []


# issue 16 item 8: a learner shows only `index` (one level) while every file is in a subfolder: no file name shown
FILES_ONLY = {"type": "object", "required": ["request"], "additionalProperties": False,
              "properties": {"request": {"type": "object", "required": ["files"], "additionalProperties": False,
                                         "properties": {"files": {"type": "array", "items": {"type": "string"}}}}}}
TREE2 = INDEX + "\n      - { name: FolderTree, type: slateRead, from: { slate: Knowledge, folder: docs, metatag: tree, " \
    "depth: 2 } }"


def test_a_listing_that_shows_only_subfolders(tmp_path):
    root = tmp_path / "kn"
    for rel in ("garden/roses.md", "recipes/soup.md"):
        (root / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / rel).write_text("x")
    path = write(tmp_path, ladder_text({"schema": json.dumps(FILES_ONLY)}))
    (f,) = lint(path, slates={"Knowledge": root}).by_code("listing-hides-files")
    assert "FileIndex" in f.message and "index shows only subfolders garden/, recipes/ and no file" in f.message
    assert "metatag: tree, depth: 2" in f.fix and f.line == path.read_text().splitlines().index(INDEX) + 1
    assert lint(path).by_code("listing-hides-files") == []             # no path, no override: no slate to look at
    tree = write(tmp_path, ladder_text({"schema": json.dumps(FILES_ONLY), "index": TREE2}))
    assert lint(tree, slates={"Knowledge": root}).by_code("listing-hides-files") == []
    browse = write(tmp_path, ladder_text({}))                          # FULL_REQUEST accepts subfolders
    assert lint(browse, slates={"Knowledge": root}).by_code("listing-hides-files") == []
    (root / "docs" / "top.md").write_text("x")                         # a file index does show
    assert lint(path, slates={"Knowledge": root}).by_code("listing-hides-files") == []


# issue 31: the 0.5B asked three times for `folder/note.md`, the placeholder of the teacher's own systemPrompt
@pytest.mark.parametrize("asked", ["folder/note.md", "./folder/note.md", "folder/note.md/"])
def test_requests_that_copy_the_prompts_example_path_are_named_with_that_fix(tmp_path, slates, asked):
    prompt = 'Reply with only this JSON to read files, for example {"request": {"files": ["folder/note.md"]}}'
    text = ladder_text({"rounds": 2}).replace("    retrieve:\n", f"    systemPrompt: '{prompt}'\n    retrieve:\n", 1)
    t = traced(tmp_path, slates, text, {"research": [req(asked), req(asked), req(asked)]})
    report = lint(write(tmp_path, text), [t])
    (f,) = report.by_code("request-copies-example")
    assert [e["round"] for e in f.evidence] == [1, 2] and f.evidence[0]["paths"] == ["folder/note.md"]
    assert "`folder/note.md`" in f.message and "not in the slate" in f.message
    assert "real file of the slate" in f.fix and "`folder/note.md`" in f.fix
    # the rounds are explained by the copied example: not also "show FileIndex / FolderTree" (already shown),
    # nor "raise maxRounds" for the forced final they led to
    assert report.by_code("rounds-nothing-new") == [] and report.by_code("max-rounds-low") == []
    assert "1 forced final call(s) follow" in f.message


def test_a_missing_path_the_prompt_does_not_show_is_no_copied_example(tmp_path, slates):
    prompt = 'For example {"request": {"files": ["folder/note.md"]}}'
    text = ladder_text({}).replace("    retrieve:\n", f"    systemPrompt: '{prompt}'\n    retrieve:\n", 1)
    # `note.md` is part of the example's path, not the example's path: not found, but not copied
    t = traced(tmp_path, slates, text, {"research": [req("note.md"), "done"]})
    report = lint(write(tmp_path, text), [t])
    assert report.by_code("request-copies-example") == [] and "rounds-nothing-new" in codes(report)
    # a round that also fetched a real file is not a copy of the example
    t2 = traced(tmp_path, slates, text, {"research": [req("folder/note.md", "core.md"), "done"]}, "b.jsonl")
    assert lint(write(tmp_path, text), [t2]).by_code("request-copies-example") == []
