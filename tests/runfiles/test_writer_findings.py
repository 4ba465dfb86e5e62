"""The writer where it disagreed with seed 004, one test a finding (each failed on the landed writer)."""
from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ladr_lab.runfiles import RunFileRetriever, RunFilesWriter, Scope, agent_name, parse_file

TS = datetime(2026, 10, 21, 18, 0, 0)


def one_run(run_dir: Path, run_id: str, text: str, *, step: str = "Alice", iterations=(1,)) -> RunFilesWriter:
    writer = RunFilesWriter(run_dir, clock=lambda: TS, run_id=run_id)
    for it in iterations:
        writer({"type": "step_start", "step": step, "step_type": "normal", "nodes": 1, "iteration": it})
        writer({"type": "llm_call", "step": step, "node": 1, "round": 1, "iteration": it,
                "messages": [{"role": "user", "content": f"{text} asked in iteration {it}"}],
                "output": f"{text} answered in iteration {it}", "forced_final": False, "request_match": None})
        writer({"type": "step_end", "step": step, "survivors": 1, "iteration": it})
    writer({"type": "run_end", "status": "completed"})
    return writer


def test_episodes_continue_across_runs_into_the_same_folder(tmp_path: Path) -> None:
    one_run(tmp_path, "R1", "kiwi", iterations=(1, 2))
    one_run(tmp_path, "R2", "mango", iterations=(1,))
    markers = [r.message for r in parse_file(tmp_path / "Alice.history") if "started episode" in r.message]
    assert markers == ["has started episode 1.", "has started episode 2.", "has started episode 3."]
    log_markers = [r.message for r in parse_file(tmp_path / "Alice.log") if "started episode" in r.message]
    assert log_markers == markers


def test_conversation_ids_are_unique_to_their_run_and_node(tmp_path: Path) -> None:
    w1 = one_run(tmp_path, "R1", "kiwi")
    w2 = RunFilesWriter(tmp_path)  # the default run id: time and random digits
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", w2.run_id) and w2.run_id != w1.run_id
    w2.run_id = "R2"
    one_run(tmp_path, "R2", "kiwi")
    convs = {r.conversation for r in parse_file(tmp_path / "Alice.history")} - {"-"}
    assert convs == {"R1/node-1", "R2/node-1"}
    # Scope.EPISODE with a conversation now tells the two runs apart
    with RunFileRetriever(tmp_path, "Alice") as r:
        got = r.search("kiwi", episode=2, conversation="R2/node-1", scope=Scope.EPISODE, top_k=10)
    assert {p.conversation for p in got.pieces} == {"R2/node-1"} and len(got.pieces) == 2


@pytest.mark.parametrize("ending", ["", "\r"])   # readers split at \n only: a bare \r ends no line
def test_every_record_starts_at_a_line_start(tmp_path: Path, ending: str) -> None:
    (tmp_path / "Alice.history").write_bytes(
        ("2026-10-21 17:00:00 [running] [-] Alice a line cut short" + ending).encode())
    one_run(tmp_path, "R1", "kiwi")
    recs = parse_file(tmp_path / "Alice.history")
    assert recs[0].message.rstrip("\r") == "a line cut short"
    assert [r.message for r in recs[1:]] == ["has started episode 1.", "was told (round 1): kiwi asked in iteration 1",
                                             "said (round 1): kiwi answered in iteration 1", "has finished episode 1."]
    assert recs[1].line == 2


def test_parallel_child_runs_each_have_their_own_agent_episode_and_conversation(tmp_path: Path) -> None:
    writer = RunFilesWriter(tmp_path, clock=lambda: TS, run_id="R")

    def child(caller_node: int, kind: str, **kw) -> dict:
        return {"type": kind, "step": "inner", "depth": 1, "caller": [f"outer/{caller_node}"], "iteration": 1, **kw}

    writer({"type": "step_start", "step": "outer", "step_type": "call", "nodes": 2, "iteration": 1})
    for n in (1, 2):
        writer({"type": "call", "step": "outer", "node": n, "status": "started", "child_depth": 1})
        writer(child(n, "step_start", step_type="normal", nodes=1))
    # interleaved: child 2 finishes first, child 1's records come after child 2's markers
    for n in (2, 1):
        writer(child(n, "llm_call", node=1, round=1, messages=[{"role": "user", "content": f"q{n}"}],
                     output=f"kiwi from child {n}", forced_final=False, request_match=None))
        writer(child(n, "step_end", survivors=1))
        writer({"type": "call", "step": "outer", "node": n, "status": "completed", "child_depth": 1})
    writer({"type": "step_end", "step": "outer", "survivors": 2, "iteration": 1})
    writer({"type": "run_end", "status": "completed"})
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["inner@outer#1.history", "inner@outer#1.log", "inner@outer#2.history", "inner@outer#2.log",
                     "outer.history", "outer.log"]
    for n in (1, 2):
        agent = agent_name("inner", [("outer", n)])
        recs = parse_file(tmp_path / f"{agent}.history")
        assert {r.agent for r in recs} == {agent}
        assert [r.message for r in recs if r.message.startswith("said")] == [f"said (round 1): kiwi from child {n}"]
        with RunFileRetriever(tmp_path, agent) as r:
            (p,) = r.search("kiwi", episode=1, conversation="R/node-1", scope="episode").pieces
        assert (p.episode, p.conversation, p.text) == (1, "R/node-1", f"said (round 1): kiwi from child {n}")
    assert writer.warnings == []


def test_child_events_without_callers_are_placed_by_the_running_call(tmp_path: Path) -> None:
    writer = RunFilesWriter(tmp_path, clock=lambda: TS, run_id="R")
    writer({"type": "call", "step": "outer", "node": 2, "status": "started", "child_depth": 1})
    writer({"type": "step_start", "step": "inner", "step_type": "normal", "nodes": 1, "iteration": 1, "depth": 1})
    writer({"type": "call", "step": "outer", "node": 2, "status": "completed", "child_depth": 1})
    assert (tmp_path / "inner@outer#2.history").exists() and writer.warnings == []
    # two at once and no caller: they cannot be told apart, and the writer says so
    for n in (1, 2):
        writer({"type": "call", "step": "outer", "node": n, "status": "started", "child_depth": 1})
    writer({"type": "step_start", "step": "inner", "step_type": "normal", "nodes": 1, "iteration": 1, "depth": 1})
    writer.close()
    assert (tmp_path / "inner@outer#%2A.history").exists()
    assert writer.warnings and "cannot be told apart" in writer.warnings[0]


def test_distinct_step_ids_write_distinct_files_named_as_in_their_records(tmp_path: Path) -> None:
    ids = ["a/b", "a b", "a_b", "\u65e5\u672c", ".."]
    for sid in ids:
        one_run(tmp_path, "R", f"kiwi {sid}", step=sid)
    stems = [agent_name(s) for s in ids]
    assert len(set(stems)) == len(ids)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(s + x for s in stems for x in (".history", ".log"))
    for sid, stem in zip(ids, stems, strict=True):
        recs = parse_file(tmp_path / f"{stem}.history")
        assert {r.agent for r in recs} == {stem}
        assert any(r.message == f"said (round 1): kiwi {sid} answered in iteration 1" for r in recs)


def test_timestamps_are_local_time_by_default_and_utc_on_request(tmp_path: Path) -> None:
    local = RunFilesWriter(tmp_path / "l")
    utc = RunFilesWriter(tmp_path / "u", utc=True)
    before_local, before_utc = datetime.now(), datetime.now(timezone.utc)
    for w in (local, utc):
        w({"type": "step_start", "step": "s", "step_type": "normal", "nodes": 1, "iteration": 1})
        w.close()
    (lr,) = parse_file(tmp_path / "l" / "s.history")
    (ur,) = parse_file(tmp_path / "u" / "s.history")
    fmt = "%Y-%m-%d %H:%M:%S"
    assert abs((datetime.strptime(lr.timestamp, fmt) - before_local.replace(microsecond=0)).total_seconds()) < 5
    assert abs((datetime.strptime(ur.timestamp, fmt) - before_utc.replace(tzinfo=None, microsecond=0))
               .total_seconds()) < 5


def test_the_writer_reads_typed_events_and_dicts_alike(tmp_path: Path) -> None:
    from ladr_lab.trace import StepStart

    typed = RunFilesWriter(tmp_path / "typed", clock=lambda: TS, run_id="R")
    typed(StepStart(step="s", step_type="normal", nodes=1, iteration=1))
    typed.close()
    plain = RunFilesWriter(tmp_path / "plain", clock=lambda: TS, run_id="R")
    plain({"type": "step_start", "step": "s", "step_type": "normal", "nodes": 1, "iteration": 1})
    plain.close()
    assert parse_file(tmp_path / "typed" / "s.history")[0].message == "has started episode 1."
    assert (tmp_path / "typed" / "s.log").read_text() == (tmp_path / "plain" / "s.log").read_text()


def test_current_gives_a_step_its_episode_and_conversation(tmp_path: Path) -> None:
    writer = one_run(tmp_path, "R", "kiwi", iterations=(1, 2))
    assert writer.current("Alice", 3) == (2, "R/node-3")
    assert writer.current("Alice", 1, caller=["outer/2"]) == (None, "R/node-1")  # another agent: no episode yet
    assert writer.current("nobody") == (None, "-")


def test_the_engine_run_id_names_the_conversations(tmp_path: Path) -> None:
    writer = RunFilesWriter(tmp_path, clock=lambda: TS)
    writer({"type": "run_start", "ladder": "demo", "run_id": "3f2a9c1b0d4e"})
    writer({"type": "llm_call", "step": "s", "node": 2, "round": 1, "iteration": 1,
            "messages": [{"role": "user", "content": "u"}], "output": "o", "forced_final": False,
            "request_match": None})
    writer.close()
    assert {r.conversation for r in parse_file(tmp_path / "s.history")} == {"-", "3f2a9c1b0d4e/node-2"}


def test_a_caller_step_id_with_a_slash_keeps_its_node(tmp_path: Path) -> None:
    writer = RunFilesWriter(tmp_path, clock=lambda: TS, run_id="R")
    writer({"type": "step_start", "step": "inner", "step_type": "normal", "nodes": 1, "iteration": 1, "depth": 2,
            "caller": ["a/b/3", "outer/1"]})
    writer.close()
    assert (tmp_path / f"{agent_name('inner', [('a/b', 3), ('outer', 1)])}.history").exists()
