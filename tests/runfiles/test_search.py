"""Seed 004's rules, one test each: readings, dedup, scopes, episodes and conversations, WARNs, files."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from ladr_lab.runfiles import LadrInterpreter, RunFileRetriever, Scope, parse_episode
from ladr_lab.runfiles.index import cut_line
from tests.runfiles.helpers import HostInterpreter, rec, search


def two_episodes(run_dir: Path) -> None:
    """Alice: episode 1 in conv-1 and conv-2, episode 2 in conv-1 and conv-2, a record outside any (-)."""
    (run_dir / "Alice.history").write_text(
        rec("18:00:00", "Alice", "has started episode 1.")
        + rec("18:00:01", "Alice", "zebra one in conv-1", "conv-1")
        + rec("18:00:02", "Alice", "zebra one in conv-2", "conv-2")
        + rec("18:00:03", "Alice", "has started episode 2.")
        + rec("18:00:04", "Alice", "zebra two in conv-1", "conv-1")
        + rec("18:00:05", "Alice", "zebra two in conv-2", "conv-2")
        + rec("18:00:06", "Alice", "zebra two outside any", "-"))


def texts(result) -> list[str]:
    return sorted(p.text for p in result.pieces)


# ---- readings -------------------------------------------------------------------------------------------
def test_without_an_interpreter_every_record_is_a_note(tmp_path: Path) -> None:
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "has started episode 1.")
                                            + rec("18:00:01", "Alice", "told: kiwi", "c")
                                            + rec("18:00:02", "Alice", "said: kiwi too", "c"))
    got = search(tmp_path, "kiwi", episode=1, conversation="c")
    assert [p.kind for p in got.pieces] == ["note", "note"]
    got = search(tmp_path, "kiwi", episode=1, conversation="c", interpreter=HostInterpreter())
    assert sorted(p.kind for p in got.pieces) == ["said", "told"]


def test_debug_and_trace_records_are_left_out(tmp_path: Path) -> None:
    (tmp_path / "Alice.log").write_text("".join(
        rec("18:00:00", "Alice", f"kiwi at {lvl}", "c", level=lvl) for lvl in ("TRACE", "DEBUG", "INFO", "WARN")))
    for interp in (None, HostInterpreter()):
        got = search(tmp_path, "kiwi", episode=1, conversation="c", interpreter=interp)
        assert texts(got) == ["kiwi at INFO", "kiwi at WARN"]


def test_a_host_interpreter_leaves_records_out(tmp_path: Path) -> None:
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "noise", "c"))
    assert search(tmp_path, "noise", episode=1, conversation="c").pieces  # a note without the interpreter
    assert not search(tmp_path, "noise", episode=1, conversation="c", interpreter=HostInterpreter()).pieces


def test_with_a_host_interpreter_the_turn_message_is_not_returned(tmp_path: Path) -> None:
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "told: where is the kiwi", "c")
                                            + rec("18:00:01", "Alice", "told: the kiwi is here", "c"))
    host = search(tmp_path, "kiwi", episode=1, conversation="c", interpreter=HostInterpreter(),
                  turn_message="where is the kiwi")
    assert texts(host) == ["told: the kiwi is here"]
    # without a host interpreter there are no messages, so no turn message either
    plain = search(tmp_path, "kiwi", episode=1, conversation="c", turn_message="where is the kiwi")
    assert len(plain.pieces) == 2


def test_with_a_host_interpreter_a_message_several_files_record_is_given_once(tmp_path: Path) -> None:
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "said: the kiwi is ripe", "c"))
    (tmp_path / "Alice.log").write_text(rec("18:00:00", "Alice", "said: the kiwi is ripe", "c", level="INFO"))
    host = search(tmp_path, "kiwi", episode=1, conversation="c", interpreter=HostInterpreter())
    assert [(p.kind, p.text) for p in host.pieces] == [("said", "said: the kiwi is ripe")]


@pytest.mark.parametrize("interpreter", [None, HostInterpreter(), LadrInterpreter()])
def test_a_note_several_files_record_is_given_once_with_any_interpreter(tmp_path: Path, interpreter) -> None:
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "kiwi note", "c"))
    (tmp_path / "Alice.log").write_text(rec("18:00:00", "Alice", "kiwi note", "c", level="INFO")
                                        + rec("18:00:01", "Alice", "another kiwi note", "c", level="INFO"))
    got = search(tmp_path, "kiwi", episode=1, conversation="c", interpreter=interpreter)
    assert texts(got) == ["another kiwi note", "kiwi note"]


def test_the_same_note_in_another_episode_or_conversation_is_another_record(tmp_path: Path) -> None:
    (tmp_path / "Alice.log").write_text(
        rec("18:00:00", "Alice", "has started episode 1.", "-", level="INFO")
        + rec("18:00:01", "Alice", "round 1: kiwi retrieval", "node-1", level="INFO")
        + rec("18:00:02", "Alice", "round 1: kiwi retrieval", "node-2", level="INFO")
        + rec("18:00:03", "Alice", "has started episode 2.", "-", level="INFO")
        + rec("18:00:04", "Alice", "round 1: kiwi retrieval", "node-1", level="INFO"))
    (tmp_path / "Alice.history").write_text(rec("18:00:04", "Alice", "round 1: kiwi retrieval", "node-1"))
    got = search(tmp_path, "kiwi", episode=2, conversation="node-1", top_k=10)
    # three records (two conversations of episode 1, one of episode 2); the .history copy adds none
    assert sorted((p.episode, p.line) for p in got.pieces) == [(1, 2), (1, 3), (2, 5)]


def test_an_owner_without_files_is_said_not_silent(tmp_path: Path) -> None:
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "kiwi", "c"))
    (tmp_path / "Bob.log").write_text(rec("18:00:00", "Bob", "kiwi", "c", level="INFO"))
    got = search(tmp_path, "kiwi", owner="Alcie", episode=1, conversation="c")
    assert got.pieces == [] and got.warnings == [
        f"Alcie: no Alcie.history, Alcie.log or Alcie/ in {tmp_path} (agents with files there: Alice, Bob)"]
    assert not [w for w in search(tmp_path, "kiwi", episode=1, conversation="c").warnings if "no Alice" in w]


# ---- scopes, episodes, conversations ----------------------------------------------------------------------
def test_scope_run_gives_other_episodes_whatever_their_conversation(tmp_path: Path) -> None:
    two_episodes(tmp_path)
    got = search(tmp_path, "zebra", episode=2, conversation="conv-1", top_k=10)
    assert texts(got) == ["zebra one in conv-1", "zebra one in conv-2", "zebra two in conv-1",
                          "zebra two outside any"]
    assert {(p.text, p.episode) for p in got.pieces} >= {("zebra one in conv-2", 1), ("zebra two in conv-1", 2)}


def test_scope_episode_searches_only_the_current_episode(tmp_path: Path) -> None:
    two_episodes(tmp_path)
    got = search(tmp_path, "zebra", episode="episode-2", conversation="conv-2", scope=Scope.EPISODE, top_k=10)
    assert texts(got) == ["zebra two in conv-2", "zebra two outside any"]
    assert not search(tmp_path, "zebra", conversation="conv-2", scope="episode").pieces
    assert not search(tmp_path, "zebra", episode=2, scope="episode").pieces


def test_records_need_both_an_episode_and_a_conversation_other_files_do_not(tmp_path: Path) -> None:
    two_episodes(tmp_path)
    (tmp_path / "Alice").mkdir()
    (tmp_path / "Alice" / "notes.md").write_text("# notes\n\nzebra facts kept by the host\n")
    for kw in ({}, {"episode": 2}, {"conversation": "conv-1"}):
        got = search(tmp_path, "zebra", **kw, top_k=10)
        assert texts(got) == ["zebra facts kept by the host"], kw
        assert got.pieces[0].file == "Alice/notes.md" and got.pieces[0].line == 3
        assert any("evidence only for a request with both" in w for w in got.warnings)
    # other files are not filtered by conversation
    got = search(tmp_path, "zebra", episode=2, conversation="conv-9", top_k=10)
    assert "zebra facts kept by the host" in texts(got)


def test_records_of_another_run_are_told_apart_by_episode(tmp_path: Path) -> None:
    # a record's episode is that of the latest marker at or before it, across the agent's files by time
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "has started episode 4."))
    (tmp_path / "Alice.log").write_text(rec("17:59:59", "Alice", "kiwi before", "c", level="INFO")
                                        + rec("18:00:00", "Alice", "kiwi same second", "c", level="INFO")
                                        + rec("18:00:01", "Alice", "kiwi after", "c", level="INFO"))
    got = search(tmp_path, "kiwi", episode=4, conversation="c", top_k=10)
    assert {p.text: p.episode for p in got.pieces} == {"kiwi before": None, "kiwi same second": 4, "kiwi after": 4}


def test_own_file_markers_decide_by_position_within_a_second(tmp_path: Path) -> None:
    same = "18:00:00"
    (tmp_path / "Alice.history").write_text(rec(same, "Alice", "has started episode 1.")
                                            + rec(same, "Alice", "has started episode 2."))
    (tmp_path / "Alice.log").write_text(rec(same, "Alice", "has started episode 1.", level="INFO")
                                        + rec(same, "Alice", "kiwi of one", "c", level="INFO")
                                        + rec(same, "Alice", "has started episode 2.", level="INFO")
                                        + rec(same, "Alice", "kiwi of two", "c", level="INFO"))
    got = search(tmp_path, "kiwi", episode=9, conversation="c", top_k=10)
    assert {p.text: p.episode for p in got.pieces} == {"kiwi of one": 1, "kiwi of two": 2}


def test_a_line_in_a_message_that_looks_like_a_record_stays_in_its_record(tmp_path: Path) -> None:
    msg = "was told: look\n2026-10-21 18:00:01 [running] [conv-2] Alice kiwi secret of conv-1"
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "has started episode 1.")
                                            + rec("18:00:01", "Alice", msg, "conv-1"))
    assert not search(tmp_path, "kiwi", episode=1, conversation="conv-2").pieces
    (got,) = search(tmp_path, "kiwi", episode=1, conversation="conv-1").pieces
    assert (got.line, got.piece_line, got.conversation) == (2, 3, "conv-1")


def test_known_limit_an_unindented_stack_trace_line_is_read_as_a_record(tmp_path: Path) -> None:
    (tmp_path / "Alice.log").write_text(
        rec("18:00:00", "Alice", "has started episode 1.", level="INFO")
        + rec("18:00:01", "Alice", "boom", "conv-1", level="ERROR")
        + "java.lang.IllegalStateException: bad\n"
        + "2026-10-21 18:00:01 [running] [conv-2] Alice kiwi from the trace\n"
        + "\tat Host.main(Host.java:9)\n")
    (got,) = search(tmp_path, "kiwi", episode=1, conversation="conv-2").pieces
    assert got.conversation == "conv-2" and got.line == 4


# ---- lines without the conversation field -----------------------------------------------------------------
def test_a_line_without_the_conversation_field_in_the_current_episode_warns_once_per_file(tmp_path: Path) -> None:
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "has started episode 1.")
                                            + rec("18:00:01", "Alice", "kiwi old style", None)
                                            + rec("18:00:02", "Alice", "another kiwi old style", None))
    (tmp_path / "Alice.log").write_text(rec("18:00:01", "Alice", "kiwi old log", None, level="INFO"))
    with RunFileRetriever(tmp_path, "Alice") as r:
        first = r.search("kiwi", episode=1, conversation="c")
        second = r.search("kiwi", episode=1, conversation="c")
        with open(tmp_path / "Alice.history", "a") as fh:      # more such lines, then another episode asked
            fh.write(rec("18:00:03", "Alice", "kiwi old style again", None)
                     + rec("18:00:04", "Alice", "has started episode 2.") + rec("18:00:05", "Alice", "kiwi two", None))
        third = r.search("kiwi", episode=1, conversation="c")
        fourth = r.search("kiwi", episode=2, conversation="c")
    assert first.pieces == [] and second.warnings == [] and third.warnings == [] and fourth.warnings == []
    warns = [w for w in first.warnings if "without the conversation field" in w]
    assert sorted(w.split(":")[0] for w in warns) == ["Alice.history", "Alice.log"]
    assert "2 record(s)" in next(w for w in warns if w.startswith("Alice.history"))


def test_a_run_written_before_the_field_existed(tmp_path: Path) -> None:
    # no field on any line: its other episodes are searched and its current episode's records are not
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "has started episode 1.", None)
                                            + rec("18:00:01", "Alice", "kiwi of one", None)
                                            + rec("18:00:02", "Alice", "has started episode 2.", None)
                                            + rec("18:00:03", "Alice", "kiwi of two", None))
    got = search(tmp_path, "kiwi", episode=2, conversation="c")
    assert texts(got) == ["kiwi of one"]
    assert any("episode 2 without the conversation field" in w for w in got.warnings)


def test_a_line_before_the_first_record_counts_as_one_without_the_field(tmp_path: Path) -> None:
    (tmp_path / "Alice.log").write_text(rec("18:00:00", "Alice", "has started episode 1.", level="INFO"))
    (tmp_path / "Alice.history").write_text("kiwi header line\n" + rec("18:00:01", "Alice", "kiwi record", "c"))
    got = search(tmp_path, "kiwi", episode=1, conversation="c")
    assert texts(got) == ["kiwi record"]
    assert any(w.startswith("Alice.history: 1 record(s) of episode 1 without") for w in got.warnings)


# ---- the request's episode ------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "expected"), [("episode-3", 3), ("episode-03", 3), ("7", 7), (0, 0), (None, None)])
def test_the_current_episode_is_the_decimal_n_of_episode_n(value, expected) -> None:
    assert parse_episode(value) == expected


@pytest.mark.parametrize("value", ["episode-", "episode-x", "episode--1", "Episode-1", "episode-1 ", "episode-\uff13",
                                   "episode-1.0", -1, True])
def test_any_other_episode_value_is_rejected(value) -> None:
    with pytest.raises(ValueError):
        parse_episode(value)


# ---- files ----------------------------------------------------------------------------------------------
def test_a_run_folder_that_is_a_link_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "Alice.history").write_text(rec("18:00:00", "Alice", "kiwi", "c"))
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    assert texts(search(tmp_path / "link", "kiwi", episode=1, conversation="c")) == ["kiwi"]


def test_links_below_are_not_followed_and_outside_files_warn_once(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "Alice").mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    outside.write_text("kiwi secret outside\n")
    (run / "inside.txt").write_text("kiwi inside\n")
    (run / "Alice.history").symlink_to(outside)
    (run / "Alice" / "link.md").symlink_to(run / "inside.txt")
    (run / "Alice" / "dir").symlink_to(tmp_path, target_is_directory=True)
    (run / "Alice" / "own.md").write_text("kiwi own\n")
    with RunFileRetriever(run, "Alice") as r:
        first = r.search("kiwi", episode=1, conversation="c")
        assert texts(first) == ["kiwi own"]
        assert r.search("kiwi", episode=1, conversation="c").warnings == []
    assert sorted(first.warnings) == [
        "Alice.history: left out: its real path lies outside the run folder",
        "Alice/dir: left out: its real path lies outside the run folder",
        "Alice/link.md: left out: a symbolic link (links below the run folder are not followed)",
    ]


def test_a_file_with_a_nul_byte_in_its_first_8_kib_is_left_out(tmp_path: Path) -> None:
    (tmp_path / "Alice").mkdir()
    (tmp_path / "Alice" / "bin.dat").write_bytes(b"kiwi\x00 binary\n")
    (tmp_path / "Alice" / "late.txt").write_bytes(b"x" * 8192 + b"\nkiwi late\x00\n")
    got = search(tmp_path, "kiwi")
    assert [p.file for p in got.pieces] == ["Alice/late.txt"]
    assert got.warnings == ["Alice/bin.dat: left out: a NUL byte in its first 8 KiB"]


def test_a_word_across_the_2000_character_cut_is_found_in_one_piece(tmp_path: Path) -> None:
    line = "lorem " * 332 + "xylophonic" + " tail of the line" * 4  # "xylophonic" starts at 1992: across 2000
    assert line.index("xylophonic") < 2000 < line.index("xylophonic") + len("xylophonic")
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", line, "c"))
    (hit,) = search(tmp_path, "xylophonic", episode=1, conversation="c", top_k=10).pieces
    assert hit.text.rstrip() == line[1992:].rstrip()
    pieces = search(tmp_path, "lorem tail", episode=1, conversation="c", top_k=10).pieces
    assert sorted(len(p.text.rstrip()) for p in pieces) == sorted([1991, len(line) - 1992])  # each <= 2000
    # a word longer than a piece is still cut where it must be, at 2000
    assert [len(x) for x in cut_line("q" * 4500)] == [2000, 2000, 500]
    assert cut_line("ab " * 700) == ["ab " * 666 + "ab", " " + "ab " * 33]


def test_pieces_hold_at_most_2000_characters_of_a_line_and_results_at_most_top_k(tmp_path: Path) -> None:
    long_line = ("kiwi " * 1000).strip()  # 4999 characters: three pieces
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", long_line, "c"))
    got = search(tmp_path, "kiwi", episode=1, conversation="c", top_k=10)
    assert sorted(len(p.text) for p in got.pieces) == [999, 2000, 2000]
    assert texts(got) == sorted([long_line[:2000], long_line[2000:4000], long_line[4000:]])
    assert all(p.line == 1 for p in got.pieces)
    assert len(search(tmp_path, "kiwi", episode=1, conversation="c", top_k=2).pieces) == 2


def test_all_words_rank_before_any_word(tmp_path: Path) -> None:
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "kiwi only", "c")
                                            + rec("18:00:01", "Alice", "kiwi and mango", "c")
                                            + rec("18:00:02", "Alice", "mango only", "c"))
    got = search(tmp_path, "mango kiwi", episode=1, conversation="c", top_k=3)
    assert got.pieces[0].text == "kiwi and mango" and texts(got) == ["kiwi and mango", "kiwi only", "mango only"]
    assert search(tmp_path, '"" OR NEAR(', episode=1, conversation="c").pieces == []  # no operator injection


def test_the_owner_may_be_given_as_the_step_id(tmp_path: Path) -> None:
    from ladr_lab.runfiles import agent_name

    stem = agent_name("a/b")
    (tmp_path / f"{stem}.history").write_text(rec("18:00:00", stem, "kiwi", "c"))
    assert texts(search(tmp_path, "kiwi", owner="a/b", episode=1, conversation="c")) == ["kiwi"]
    assert texts(search(tmp_path, "kiwi", owner=stem, episode=1, conversation="c")) == ["kiwi"]
    assert search(tmp_path, "kiwi", owner="../run", episode=1, conversation="c").pieces == []


def test_a_missing_run_folder_is_a_ladr_error(tmp_path: Path) -> None:
    from ladr_lab.errors import LadrError

    with pytest.raises(LadrError, match="does not exist"):
        RunFileRetriever(tmp_path / "nope", "Alice")


def test_the_dataframe_api(tmp_path: Path) -> None:
    from ladr_lab.runfiles import search_run_files

    two_episodes(tmp_path)
    df = search_run_files(tmp_path, "zebra", owner="Alice", episode=2, conversation="conv-1", top_k=3)
    assert list(df.columns[:4]) == ["file", "line", "kind", "text"] and len(df) == 3
    assert set(df["file"]) == {"Alice.history"} and df["score"].is_monotonic_decreasing
    assert os.path.isdir(tmp_path)


def test_a_run_file_source_renders_evidence_for_a_step(tmp_path: Path) -> None:
    from ladr_lab.runfiles import RunFileSource

    (tmp_path / "Alice.history").write_text(
        rec("18:00:00", "Alice", "has started episode 1.")
        + rec("18:00:01", "Alice", "was told (round 1): where is the kiwi?", "c")
        + rec("18:00:02", "Alice", "said (round 1): the kiwi is in bay 3 near /etc/kiwi", "c"))
    source = RunFileSource(tmp_path, owner="Alice", name="memory", top_k=3, mask=True)
    try:
        # the question is the turn message: the record of being told it is not evidence
        assert source.evidence("where is the kiwi?", episode=1, conversation="c") == \
            "--- memory 1: Alice.history:3, episode 1, c [said] ---\nsaid (round 1): the kiwi is in bay 3 near " \
            "[masked path]"
        assert sorted(p.kind for p in source.pieces("kiwi", episode=1, conversation="c")) == ["said", "told"]
        assert source.evidence("mango", episode=1, conversation="c") == "(no evidence)"
        assert source.evidence("kiwi") == "(no evidence)"  # no episode and conversation: no records
    finally:
        source.close()


def test_a_word_in_half_the_pieces_or_more_gives_the_most_recent_first(tmp_path: Path) -> None:
    # bm25 gives such a word no weight (FTS5 floors its idf), so ranking by it would be a tie
    (tmp_path / "Alice.history").write_text("".join(
        rec(f"18:00:{i:02d}", "Alice", f"kiwi number {i}" + (" mango" if i == 3 else ""), "c") for i in range(6)))
    got = search(tmp_path, "kiwi", episode=1, conversation="c", top_k=3)
    assert [p.text for p in got.pieces] == ["kiwi number 5", "kiwi number 4", "kiwi number 3 mango"]
    # a word bm25 weighs still ranks: the piece with it comes first, then the rest of "any word"
    got = search(tmp_path, "mango kiwi banana", episode=1, conversation="c", top_k=2)
    assert [p.text for p in got.pieces] == ["kiwi number 3 mango", "kiwi number 5"]
