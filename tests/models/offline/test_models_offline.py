"""OfflineModel: reads the assembled prompt, requests fitting files in the schema's shape, answers
extractively with citations, fills output schemas, and is deterministic."""
from __future__ import annotations

import json

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab.models import CallInfo, OfflineModel
from ladr_lab.models.offline.reading import read_prompt
from ladr_lab.models.offline.words import stem, terms

EXHAUSTED = "Retrieval budget exhausted. Produce your final answer now."
SYSTEM = 'Research the Question. Use FileIndex to find relevant docs. Emit {"request": {...}} to retrieve.'

INDEX = [
    {"name": "changelog.md", "size": 310},
    {"name": "core.md", "size": 45},
    {"name": "faq.md", "size": 29},
    {"name": "glossary.md", "size": 812},
    {"name": "install-guide.md", "size": 120},
    {"name": "overview.md", "size": 200},
    {"name": "release_notes_2024.md", "size": 90},
    {"name": "notes/", "size": 72, "files": 2},
]

WRAPPED = yaml.safe_load(
    """
type: object
required: [request]
additionalProperties: false
properties:
  request:
    type: object
    additionalProperties: false
    properties:
      files: {type: array, items: {type: string}}
      subfolders: {type: array, items: {type: string}}
      metatag: {type: object, properties: {name: {type: string}, contains: {type: string}, similarTo: {type: string}}}
      glob: {type: string}
"""
)
BARE = yaml.safe_load("{type: object, required: [files], properties: {files: {type: array, items: {type: string}}}}")
METATAG_ONLY = yaml.safe_load(
    "{type: object, properties: {request: {type: object, properties: {metatag: {type: object,"
    " properties: {name: {type: string, enum: [tags]}, contains: {type: string}}}}}}}"
)

GLOSSARY = """# Glossary

**Slate** — a declared store of memory: a directory whose folders hold files with metatags.

**Metatag** — typed metadata attached to a file: `string`, `string[]`, `number`, `boolean` or `object`.

**Round** — one model call inside a retrieve loop.
"""
CORE = "Ladders are YAML pipelines. Each step reads fields and may retrieve."


def user(question, *, index=INDEX, blocks=(), forced=False, extra=()):
    parts = [f"Question:\n{question}", "FileIndex:\n" + json.dumps(index, indent=2, ensure_ascii=False)]
    parts += [f"{name}:\n{value}" for name, value in extra]
    for k, entries in enumerate(blocks, 1):
        body = "\n\n".join(f"--- {path} [{mode}] ---\n{content}" for path, mode, content in entries)
        parts.append(f"RetrievedDocuments {k}:\n{body}")
    if forced:
        parts.append(EXHAUSTED)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def run(messages, **hints):
    hints = {"step": "research", "node": 1, "nodes": 1, "round": 1, "retrieve_as": "RetrievedDocuments", **hints}
    return OfflineModel().complete(messages, call=CallInfo(**hints)).text


# ------------------------------------------------------------------ requests


def test_first_round_requests_the_fitting_file_in_the_wrapped_shape():
    out = run(user("What does the glossary say about slates?"), request_match=WRAPPED)
    obj = json.loads(out)
    jsonschema.validate(obj, WRAPPED)
    assert obj == {"request": {"files": ["glossary.md"]}}
    assert out == json.dumps(obj, separators=(",", ":"))  # compact JSON, nothing else


def test_bare_schema_gets_the_bare_form():
    obj = json.loads(run(user("Where is the glossary?"), request_match=BARE))
    jsonschema.validate(obj, BARE)
    assert obj == {"files": ["glossary.md"]}


def test_metatag_only_schema_gets_a_metatag_request_named_tags():
    obj = json.loads(run(user("Explain metatags"), request_match=METATAG_ONLY))
    jsonschema.validate(obj, METATAG_ONLY)
    assert obj["request"]["metatag"]["name"] == "tags"
    assert obj["request"]["metatag"]["contains"] in "metatags"
    assert set(obj["request"]) == {"metatag"}


def test_metatag_listing_values_steer_the_choice():
    listing = json.dumps([{"file": "core.md", "value": "Definitions of every term used in slates"},
                          {"file": "faq.md", "value": "Common questions"}], indent=2)
    obj = json.loads(run(user("Which definitions exist?", extra=[("Summaries", listing)]), request_match=WRAPPED))
    assert obj == {"request": {"files": ["core.md"]}}


def test_scoring_subfolder_is_browsed_then_its_files_are_picked():
    q = "What do the notes say about deployment?"
    first = json.loads(run(user(q), request_match=WRAPPED))
    assert first["request"]["subfolders"] == ["notes"]
    assert first["request"].get("files", []) == ["release_notes_2024.md"]  # "notes" is in its name too
    listing = json.dumps([{"name": "deployment.md", "size": 40}, {"name": "misc.md", "size": 9}], indent=2)
    second = json.loads(run(user(q, blocks=[[("notes", "subfolders", listing)]]), request_match=WRAPPED, round=2))
    assert second["request"]["files"][0] == "notes/deployment.md"


def test_nothing_scores_browses_subfolders_when_the_schema_allows():
    obj = json.loads(run(user("Which knobs exist?"), request_match=WRAPPED))
    assert obj == {"request": {"subfolders": ["notes"]}}


def test_requests_the_top_three_scoring_files_at_most():
    index = [{"name": f"retrieve-mode-{m}.md", "size": 10} for m in ("files", "glob", "metatag", "subfolders")]
    obj = json.loads(run(user("How do retrieve modes work?", index=index), request_match=WRAPPED))
    assert len(obj["request"]["files"]) == 3


@pytest.mark.parametrize("cap", [1, 2])
def test_a_max_items_below_what_it_wants_trims_the_request_to_the_top_files(cap):
    """requestMatch's `maxItems: 2` below the three files it wants: it asks for the top two, not for nothing
    (issue 31: with `maxItems: 2` it made one call and echoed the question)."""
    index = [{"name": f"retrieve-mode-{m}.md", "size": 10} for m in ("files", "glob", "metatag", "subfolders")]
    capped = yaml.safe_load(f"{{type: object, required: [files], additionalProperties: false, properties: "
                            f"{{files: {{type: array, items: {{type: string}}, minItems: 1, maxItems: {cap}}}}}}}")
    wanted = json.loads(run(user("How do retrieve modes work?", index=index), request_match=BARE))["files"]
    obj = json.loads(run(user("How do retrieve modes work?", index=index), request_match=capped))
    jsonschema.validate(obj, capped)
    assert len(wanted) == 3 and obj == {"files": wanted[:cap]}


def test_answers_when_the_last_round_said_already_in_context():
    msgs = user("What is in the glossary?", blocks=[[("glossary.md", "files", "(already in context)")]])
    out = run(msgs, request_match=WRAPPED)
    assert not out.lstrip().startswith("{")


def test_answers_instead_of_asking_again_for_what_it_has():
    msgs = user("What does the glossary say about slates?", blocks=[[("glossary.md", "files", GLOSSARY)]])
    out = run(msgs, request_match=WRAPPED, round=2)
    assert "[glossary.md]" in out
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_json_or_none(out), WRAPPED)


def test_no_candidate_validates_means_an_answer():
    schema = {"type": "object", "required": ["request"],
              "properties": {"request": {"type": "object", "required": ["sql"]}}}
    out = run(user("What does the glossary say?"), request_match=schema)
    assert _json_or_none(out) is None


# ------------------------------------------------------------------ answers


def test_answer_after_retrieval_is_cited_prose_drawn_from_the_content():
    msgs = user("What is a slate?", blocks=[[("glossary.md", "files", GLOSSARY), ("core.md", "files", CORE)]])
    out = run(msgs, request_match=WRAPPED, round=2)
    assert _json_or_none(out) is None and "{" not in out
    assert "a declared store of memory" in out
    assert "[glossary.md]" in out


def test_forced_final_never_requests():
    msgs = user("What does the glossary say about slates?", forced=True)
    out = run(msgs, request_match=None, forced_final=True)
    assert _json_or_none(out) is None
    # the exhausted line alone (no hint) is enough too
    out2 = run(msgs, request_match=WRAPPED)
    assert _json_or_none(out2) is None


def test_nothing_relevant_is_said_plainly_and_cites_what_was_read():
    msgs = user("Who won the 1998 world cup?", blocks=[[("core.md", "files", CORE)]], forced=True)
    out = run(msgs, forced_final=True)
    assert "nothing" in out.lower() and "[core.md]" in out


def test_step_without_retrieve_answers_from_its_other_fields():
    msgs = [{"role": "system", "content": "Summarize."},
            {"role": "user", "content": "Topic:\nmetatags\n\nFindings:\n" + GLOSSARY}]
    out = OfflineModel().complete(msgs, call=CallInfo(step="summarize", node=1)).text
    assert "Metatag" in out and "[Findings]" in out


def test_existing_citations_are_kept_not_doubled():
    findings = "Slates are folders of files [glossary.md]. Rounds are model calls [core.md]."
    msgs = [{"role": "system", "content": "Synthesize."},
            {"role": "user", "content": f"Question:\nWhat are slates?\n\nFindings:\n{findings}"}]
    out = OfflineModel().complete(msgs).text
    assert out == "Slates are folders of files [glossary.md]."


def test_output_schema_gives_json_that_validates():
    schema = {
        "type": "object",
        "required": ["finding", "confidence", "sources"],
        "additionalProperties": False,
        "properties": {
            "finding": {"type": "string", "minLength": 20},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "sources": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "verified": {"type": "boolean"},
            "kind": {"type": "string", "enum": ["definition", "howto"]},
        },
    }
    msgs = user("What is a slate?", blocks=[[("glossary.md", "files", GLOSSARY)]], forced=True)
    out = run(msgs, forced_final=True, output_schema=schema)
    obj = json.loads(out)
    jsonschema.validate(obj, schema)
    assert obj["confidence"] == 0.9 and obj["sources"] == ["glossary.md"]
    assert "declared store of memory" in obj["finding"]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "required": ["score"], "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}}},
        {"type": "object", "required": ["p"], "properties": {"p": {"type": "number", "exclusiveMaximum": 0.5}}},
        {"type": "array", "items": {"type": "string"}, "minItems": 3, "uniqueItems": True},
        {"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": {
            "type": "object", "required": ["key", "value"],
            "properties": {"key": {"type": "string"}, "value": {"type": "string", "maxLength": 12}}}}}},
        {"$defs": {"v": {"type": "string", "enum": ["SUPPORTED", "REFUTED"]}},
         "type": "object", "required": ["verdict"], "properties": {"verdict": {"$ref": "#/$defs/v"}}},
        {"anyOf": [{"type": "object", "required": ["ok"], "properties": {"ok": {"const": True}}}, {"type": "null"}]},
        {"type": "string", "pattern": "^[a-z]+$"},
    ],
)
def test_various_output_schemas_validate(schema):
    msgs = user("What is a slate?", blocks=[[("glossary.md", "files", GLOSSARY)]])
    out = run(msgs, output_schema=schema)
    jsonschema.validate(json.loads(out), schema)


def test_impossible_output_schema_falls_back_to_prose():
    schema = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string", "minLength": 5, "maxLength": 2}}}
    out = run(user("What is a slate?", blocks=[[("glossary.md", "files", GLOSSARY)]]), output_schema=schema)
    assert "[glossary.md]" in out


def test_equals_is_answered_when_there_is_no_other_cue():
    msgs = [{"role": "system", "content": "Say DONE when finished."}, {"role": "user", "content": "Draft:\nsome text"}]
    assert OfflineModel().complete(msgs, call=CallInfo(equals="DONE")).text == "DONE"


def test_same_prompt_same_output_and_tokens_are_estimated():
    msgs = user("What does the glossary say about slates?", blocks=[[("glossary.md", "files", GLOSSARY)]])
    a = OfflineModel().complete(msgs, call=CallInfo(request_match=WRAPPED, retrieve_as="RetrievedDocuments"))
    b = OfflineModel().complete(msgs, call=CallInfo(request_match=WRAPPED, retrieve_as="RetrievedDocuments", step="other", round=3))
    assert a == b
    chars = len(msgs[0]["content"]) + len(msgs[1]["content"])
    assert a.tokens_in == -(-chars // 4) and a.model == "offline" and a.latency == 0.0


# ------------------------------------------------------------------ parsing


def test_parser_finds_sections_blocks_and_listings_without_the_as_hint():
    listing = json.dumps([{"name": "a.md", "size": 3}, {"name": "deep/", "size": 9, "files": 1}], indent=2)
    text = user("Q?", blocks=[[("core.md", "files", CORE), ("nope.md", "files", "(not found)")],
                              [("notes", "subfolders", listing)]], forced=True)[1]["content"]
    p = read_prompt("sys", text)
    assert p.forced and p.question == "Q?"
    assert [s.name for s in p.sections] == ["Question", "FileIndex"]
    assert [[e.status for e in b] for b in p.blocks] == [["fetched", "not_found"], ["listed"]]
    assert "notes/a.md" in p.files and "notes/deep" in p.subfolders
    assert p.seen == {"core.md", "nope.md"} and p.browsed == {"notes"}


def test_parser_flattens_a_tree_field():
    tree = [{"name": "core.md", "size": 4},
            {"name": "notes/", "size": 9, "children": [{"name": "calculus.md", "size": 9}]}]
    p = read_prompt("", f"Question:\ncalculus\n\nFolderTree:\n{json.dumps(tree, indent=2)}")
    assert list(p.files) == ["core.md", "notes/calculus.md"]
    assert "notes" in p.known_children


def test_tree_children_are_requested_directly_without_browsing():
    tree = [{"name": "core.md", "size": 4},
            {"name": "notes/", "size": 9, "children": [{"name": "calculus.md", "size": 9}]}]
    msgs = [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Query:\nExplain calculus\n\nFolderTree:\n{json.dumps(tree, indent=2)}"}]
    obj = json.loads(OfflineModel().complete(msgs, call=CallInfo(request_match=WRAPPED)).text)
    assert obj == {"request": {"files": ["notes/calculus.md"]}}


def test_light_stemming():
    assert stem("metatags") == stem("metatag")
    assert stem("retrieval") == stem("retrieving") == stem("retrieves")
    assert terms("What are the glossaries?") == [stem("glossary")]


def _json_or_none(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def test_parallel_nodes_read_different_files():
    from ladr_lab.models import OfflineModel
    from ladr_lab.round.prompt import assemble_messages
    index = [{"name": f"retrieve-{w}.md", "size": 100} for w in ("dedup", "rounds", "modes", "glob", "files", "tree")]
    msgs = assemble_messages("Research.", [("Question", "How does retrieve work?"), ("FileIndex", index)])
    schema = {"type": "object", "required": ["files"], "properties": {"files": {"type": "array"}}}
    model = OfflineModel()
    asked = [json.loads(model.respond(msgs, request_match=schema, node=k, nodes=3))["files"] for k in (1, 2, 3)]
    assert all(asked) and len({f for files in asked for f in files}) == sum(len(f) for f in asked)
    single = json.loads(model.respond(msgs, request_match=schema))["files"]
    assert len(single) == 3


# ------------------------------------------------------------------ what it read answers (issue 16, item 13)

PANCAKES = "# Pancakes\n\nMix flour, eggs and milk into a smooth batter. Cook on a hot griddle until golden.\n"
PANCAKE_LADDER = """\
name: my-notes
model: offline
slates:
  - title: Notes
    path: slate
    folders:
      - name: docs
steps:
  - id: research
    fields:
      - { name: Question,  type: text,      from: input.context }
      - { name: FileIndex, type: slateRead, from: { slate: Notes, folder: docs, metatag: index } }
    retrieve:
      to: { slate: Notes, folder: docs }
      as: RetrievedDocuments
      maxRounds: 3
      requestMatch:
        type: object
        required: [request]
        additionalProperties: false
        properties:
          request:
            type: object
            minProperties: 1
            additionalProperties: false
            properties:
              files:      { type: array, items: { type: string } }
              subfolders: { type: array, items: { type: string } }
              glob:       { type: string }
    systemPrompt: Answer the Question from the documents; cite them by path.
"""


def test_pancakes_read_by_its_name_is_quoted_not_reported_as_nothing(tmp_path):
    """A learner's slate: the file was chosen because its name shares the question's word; its body
    (a heading, then the method) answers the question, so the answer quotes it with the citation."""
    from ladr_lab import Run, load_ladder_text
    docs = tmp_path / "slate" / "docs"
    for rel, text in {"recipes/pancakes.md": PANCAKES,
                      "recipes/soup.md": "# Soup\n\nRoast tomatoes with garlic, then blend them with stock.\n",
                      "garden/roses.md": "# Roses\n\nPrune roses in late winter and water them weekly.\n"}.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(text)
    ladder = load_ladder_text(PANCAKE_LADDER, base_dir=tmp_path)
    run_ = Run(ladder, input="How do I make pancakes?")
    result = run_.run()
    fetches = run_.trace.to_dataframe("fetches")
    assert fetches[fetches.status == "fetched"].path.tolist() == ["recipes/pancakes.md"]
    assert "found nothing" not in result.output.lower()
    assert "Mix flour, eggs and milk into a smooth batter [recipes/pancakes.md]." in result.output
    assert "Cook on a hot griddle until golden [recipes/pancakes.md]." in result.output


# Content words whose stems are disjoint: the question draws from ASK, every other word from OTHER.
ASK = ["pancakes", "griddle", "compost", "telescope", "harvest", "violins"]
OTHER = ["river", "mountain", "granite", "harbor", "lantern", "meadow", "copper", "orchard", "glacier", "pebble"]
FILLER = st.lists(st.sampled_from(OTHER), min_size=3, max_size=6).map(lambda ws: " ".join(ws).capitalize() + ".")


def _with_word(word: str):
    """Bodies in which `word` occurs once, in every place a learner's file puts it."""
    return st.sampled_from([
        f"The {word} matters a great deal here.",            # a sentence
        f"# {word.capitalize()}",                            # a heading only
        f"- {word}",                                         # a short bullet
        f"{word.capitalize()}:",                             # a short label line
        f"```\n{word}\n```",                                 # inside a code block
    ])


@st.composite
def _fetched_files(draw):
    word = draw(st.sampled_from(ASK))
    n = draw(st.integers(1, 4))
    target = draw(st.integers(0, n - 1))
    files = []
    for i in range(n):
        body = draw(st.lists(FILLER, min_size=0, max_size=3))
        if i == target:
            body.insert(draw(st.integers(0, len(body))), draw(_with_word(word)))
        elif not body:
            body = [draw(FILLER)]
        name = "/".join(draw(st.lists(st.sampled_from(OTHER), min_size=1, max_size=2, unique=True))) + f"-{i}.md"
        files.append((name, "\n\n".join(body)))
    return word, files, files[target][0]


@settings(max_examples=150, deadline=None)
@given(_fetched_files(), st.booleans())
def test_a_fetched_file_sharing_a_question_word_is_cited_in_the_answer(case, forced):
    """Whenever a fetched file shares a content word with the question (in a sentence, a heading, a
    bullet, a label or code), the final answer cites that file instead of saying it found nothing."""
    word, files, target = case
    msgs = user(f"How do I use the {word}?", index=[{"name": p, "size": len(t)} for p, t in files],
                blocks=[[(p, "files", t) for p, t in files]], forced=forced)
    out = run(msgs, request_match=None if forced else WRAPPED, forced_final=forced, round=2)
    assert _json_or_none(out) is None
    assert f"[{target}]" in out and "found nothing" not in out.lower()
    for path, _ in files:
        if path != target:
            assert f"[{path}]" not in out   # a file sharing no word is not cited as an answer


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(FILLER, min_size=1, max_size=3), min_size=1, max_size=4), st.sampled_from(ASK))
def test_nothing_shared_is_still_said_plainly(bodies, word):
    """Only when nothing read shares a question word does the answer say it found nothing."""
    files = [(f"{OTHER[i]}.md", "\n\n".join(b)) for i, b in enumerate(bodies)]
    msgs = user(f"How do I use the {word}?", blocks=[[(p, "files", t) for p, t in files]], forced=True)
    out = run(msgs, forced_final=True)
    assert out.startswith("I found nothing that answers this")
    assert all(f"[{p}]" in out for p, _ in files)


def test_a_file_named_for_the_question_is_answered_from_its_opening():
    """The file's name (the overlap it was chosen by) shares the word; its text never says it."""
    msgs = user("How do I make pancakes?", index=[{"name": "recipes/", "size": 90, "files": 1}],
                blocks=[[("recipes/pancakes.md", "files", "Mix flour and eggs well. Then fry each one. Serve them warm with syrup.")]],
                forced=True)
    out = run(msgs, forced_final=True)
    assert out == ("Mix flour and eggs well [recipes/pancakes.md]. Then fry each one [recipes/pancakes.md]."
                   " Serve them warm with syrup [recipes/pancakes.md].")


@pytest.mark.parametrize("round_chars", [1500, 3000])
def test_a_full_round_s_left_out_entries_are_never_cited_as_evidence(round_chars):
    """When a round reaches its size bound, entries say "(left out: ...)" and a summary "(N more left out:
    ...)"; the offline model reads both as left out (the grammar's `left_out`), never as a file's words."""
    from pathlib import Path

    from ladr_lab import Run
    from ladr_lab.round.grammar import parse_prompt

    ladder = Path(__file__).resolve().parents[3] / "examples" / "research.yaml"
    run = Run(ladder, input="How does deduplication work across retrieval rounds?", max_round_chars=round_chars)
    result = run.run()
    prompts = [e.messages[-1]["content"] for e in run.trace.events if e.type == "llm_call"]
    assert any("left out" in p for p in prompts), "the bound did not bite: the test shows nothing"
    for p in prompts:
        for block in parse_prompt(p).blocks:
            for entry in block:
                if "left out" in entry.content[:40]:
                    assert entry.status == "left_out", entry
    assert "left out" not in result.output and "more)]" not in result.output
