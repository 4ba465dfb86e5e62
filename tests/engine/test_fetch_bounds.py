"""A fetch has a size bound (issue 6): a huge file costs a bounded read, the cut is said in the entry and
recorded in the trace, one round's block is bounded too, and a held store never shows a stale listing."""
from __future__ import annotations

import json

from ladr_lab.engine import Run
from ladr_lab.models import ScriptedModel
from ladr_lab.slate import SlateStore
from tests.engine.test_retrieve_loop import req, research

LOOSE = {"type": "object", "required": ["request"]}


def test_a_huge_file_is_cut_in_the_prompt_and_the_trace_says_so(ladder, slates):
    big = slates["Knowledge"] / "docs" / "dump.sql"
    with open(big, "wb") as fh:                      # 200 MB, sparse: costs no disk, would cost 200 MB to read
        fh.write(b"INSERT INTO t VALUES (1);\n" * 10)
        fh.truncate(200 * 1024 * 1024)
    run = Run(research(ladder, schema=LOOSE), model=ScriptedModel({"research": [req(files=["dump.sql"]), "ok"]}),
              slates=slates, input="q", max_fetch_chars=1_000)
    run.run()
    (f,) = run.trace.calls()[0].fetched
    assert f.status == "fetched" and f.truncated is True and f.total_bytes == 200 * 1024 * 1024
    assert f.chars < 1_100
    prompt = run.trace.calls()[1].messages[1]["content"]
    assert "[cut: showing the first 1,000 characters of a 209,715,200-byte file]" in prompt
    assert run.trace.calls()[1].prompt_chars < 3_000


def test_a_round_block_is_bounded_and_what_is_left_out_can_be_asked_again(ladder, slates):
    docs = slates["Knowledge"] / "docs"
    for i in range(3):
        (docs / f"part{i}.md").write_text(f"PART{i} " + "x" * 600)
    outs = [req(files=["part0.md", "part1.md", "part2.md"]), req(files=["part2.md"]), "done"]
    run = Run(research(ladder, schema=LOOSE), model=ScriptedModel({"research": outs}), slates=slates, input="q",
              max_fetch_chars=1_000, max_round_chars=1_300)
    run.run()
    first, second = run.trace.calls()[0].fetched, run.trace.calls()[1].fetched
    assert [(f.path, f.status) for f in first] == [("part0.md", "fetched"), ("part1.md", "fetched"),
                                                   ("part2.md", "left_out")]
    assert first[1].truncated is None and sum(f.chars for f in first) <= 1_300     # whole files, then no stub
    assert "reached its 1,300-character bound" in first[2].note
    assert [(f.path, f.status) for f in second] == [("part2.md", "fetched")]   # not marked as in context
    prompt = run.trace.calls()[1].messages[1]["content"]
    assert "--- (1 more) [files] ---\n(1 more left out: this round's retrieved block reached its 1,300" in prompt


def _block(run, call: int) -> str:
    """The text of the last retrieved block in the prompt of the `call`-th model call."""
    prompt = run.trace.calls()[call].messages[1]["content"]
    return prompt[prompt.rindex("RetrievedDocuments "):]


def test_headers_and_status_entries_are_charged_to_the_round_and_the_rest_collapse_into_one_entry(ladder, slates):
    many = slates["Knowledge"] / "docs" / "many"
    many.mkdir()
    for i in range(400):
        (many / f"f{i:04d}_with_a_rather_long_name.md").write_text("x")
    missing = [f"nope{i}.md" for i in range(300)]
    last = "many/f0399_with_a_rather_long_name.md"
    outs = [req(glob="many/*"), req(files=missing), req(files=[last]), "done"]
    run = Run(research(ladder, rounds=3, schema=LOOSE), model=ScriptedModel({"research": outs}), slates=slates,
              input="q", max_round_chars=2_000)
    run.run()
    first = run.trace.calls()[0].fetched
    assert len(first) == 400                                   # the trace records every match
    shown = [f for f in first if f.status == "fetched"]
    left = [f for f in first if f.status == "left_out"]
    assert shown and left and len(shown) + len(left) == 400
    assert all("reached its 2,000-character bound" in f.note for f in left)
    block = _block(run, 1)
    assert block.count("[glob] ---") == len(shown) + 1         # the shown files and one summary entry
    assert block.endswith(f"--- ({len(left)} more) [glob] ---\n({len(left)} more left out: this round's retrieved "
                          "block reached its 2,000-character bound; ask for them again in a later round)")
    body = block.split("\n", 1)[1]
    assert len(body) - len(body.rsplit("\n\n", 1)[1]) <= 2_000  # entries within the bound, summary on top
    not_found = _block(run, 2)                                  # "(not found)" entries are charged too
    assert len(not_found) < 2_300 and "more left out" in not_found
    assert last in {f.path for f in left}
    assert [(f.path, f.status) for f in run.trace.calls()[2].fetched] == [(last, "fetched")]   # asked again


def test_a_listing_in_a_full_block_is_left_out_not_a_bare_cut_note(ladder, slates):
    docs = slates["Knowledge"] / "docs"
    (docs / "big.md").write_text("b" * 5_000)
    (docs / "sub").mkdir()
    for i in range(50):
        (docs / "sub" / f"file{i:03d}.md").write_text("s")
    outs = [req(files=["big.md"], subfolders=["sub"]), "done"]
    run = Run(research(ladder, schema=LOOSE), model=ScriptedModel({"research": outs}), slates=slates, input="q",
              max_round_chars=1_500, max_fetch_chars=1_400)
    run.run()
    first = run.trace.calls()[0].fetched
    assert [(f.path, f.status) for f in first] == [("big.md", "fetched"), ("sub/", "left_out")]
    assert "-character listing]" not in _block(run, 1)


def test_a_slate_read_of_a_whole_file_has_the_same_bound(ladder, slates):
    (slates["Memory"] / "facts" / "core.md").write_text("y" * 5_000)
    lad = ladder("""
        - id: s
          fields: [{ name: Core, type: slateRead, from: { slate: Memory, folder: facts, file: core.md } }]
        """)
    run = Run(lad, model=ScriptedModel(["ok"]), slates=slates, max_fetch_chars=100)
    run.run()
    prompt = run.trace.calls()[0].messages[1]["content"]
    assert prompt.startswith("Core:\n" + "y" * 100 + "\n[cut: showing the first 100 characters of a 5,000-byte file]")


def test_a_store_held_across_runs_sees_edits_made_in_place_by_another_program(ladder, slates):
    lad = ladder("""
        - id: s
          fields: [{ name: Index, type: slateRead, from: { slate: Knowledge, folder: docs, metatag: index } }]
        """)
    store = SlateStore()
    first = Run(lad, model=ScriptedModel(["a"]), slates=slates, store=store)
    first.run()
    core = slates["Knowledge"] / "docs" / "core.md"
    with open(core, "r+", encoding="utf-8") as fh:        # edited in place: no directory entry changes
        fh.seek(0, 2)
        fh.write("\nappended by an editor")
    again = Run(lad, model=ScriptedModel(["b"]), slates=slates, store=store)
    again.run()
    assert again.store is store
    index = json.loads(again.trace.calls()[0].messages[1]["content"].split("\n", 1)[1])
    size = next(e["size"] for e in index if e["name"] == "core.md")
    assert size == core.stat().st_size
