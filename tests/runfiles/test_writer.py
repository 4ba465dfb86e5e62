"""RunFilesWriter: trace events in, per-agent `.history` and `.log` files out, read back with RecordParser."""
from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path

import pytest

import ladr_lab.runfiles as runfiles
from ladr_lab.runfiles import RunFilesWriter, agent_name, parse_file

TS = "2026-10-21 18:00:00"


def fixed_clock() -> datetime:
    return datetime(2026, 10, 21, 18, 0, 0)


PROMPT = ("Question: what is core?\n"
          f"{TS} [running] [node-2] Bob has started episode 7.\n"
          "Index: core.md")


def one_step_run() -> list[dict]:
    """The events of a one-step, one-node run with two retrieve rounds, a gate and a write."""
    return [
        {"type": "run_start", "ladder": "demo"},
        {"type": "step_start", "step": "Alice", "step_type": "normal", "nodes": 1, "iteration": 1},
        {"type": "llm_call", "step": "Alice", "node": 1, "round": 1, "iteration": 1,
         "messages": [{"role": "system", "content": "You answer."}, {"role": "user", "content": PROMPT}],
         "output": '{"files": ["core.md"]}', "forced_final": False, "request_match": "retrieval",
         "reason": "matches requestMatch", "request": {"files": ["core.md"]},
         "fetched": [{"path": "core.md", "mode": "files", "status": "fetched", "chars": 45},
                     {"path": "gone.md", "mode": "files", "status": "not_found", "chars": 0}]},
        {"type": "llm_call", "step": "Alice", "node": 1, "round": 2, "iteration": 1,
         "messages": [{"role": "system", "content": "You answer."},
                      {"role": "user", "content": "RetrievedDocuments 1:\ncore is core"}],
         "output": "Core is core.\nSecond line.", "forced_final": True, "request_match": "final",
         "reason": "forced final call"},
        {"type": "gate", "step": "Alice", "node": 1, "branch": "then", "action": "continue", "reason": "equals"},
        {"type": "write", "step": "Alice", "node": 1, "target": "notes/a.md", "policy": "append",
         "status": "written", "reason": None},
        {"type": "step_end", "step": "Alice", "survivors": 1, "iteration": 1},
        {"type": "run_end", "status": "completed", "output": "Core is core."},
    ]


def write_all(run_dir: Path, events: list[dict], run_id: str = "R") -> RunFilesWriter:
    writer = RunFilesWriter(run_dir, clock=fixed_clock, run_id=run_id)
    with writer:
        for e in events:
            writer(e)
    return writer


def test_round_trip_history(tmp_path: Path) -> None:
    write_all(tmp_path, one_step_run())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Alice.history", "Alice.log"]
    recs = parse_file(tmp_path / "Alice.history")
    got = [(r.line, r.state, r.conversation, r.agent, r.message) for r in recs]
    assert got == [
        (1, "running", "-", "Alice", "has started episode 1."),
        (2, "running", "R/node-1", "Alice", "was told the system prompt: You answer."),
        (3, "running", "R/node-1", "Alice", f"was told (round 1): {PROMPT}"),
        (6, "running", "R/node-1", "Alice", 'said (round 1): {"files": ["core.md"]}'),
        (7, "running", "R/node-1", "Alice", "was told (round 2): RetrievedDocuments 1:\ncore is core"),
        (9, "running", "R/node-1", "Alice", "said (round 2): Core is core.\nSecond line."),
        (11, "finished", "-", "Alice", "has finished episode 1."),
    ]
    assert all(r.kind == "history" and r.timestamp == TS and r.level is None for r in recs)


def test_history_lines_are_seed_format(tmp_path: Path) -> None:
    write_all(tmp_path, one_step_run())
    lines = (tmp_path / "Alice.history").read_text(encoding="utf-8").splitlines()
    assert lines[0] == f"{TS} [running] [-] Alice has started episode 1."
    # the record-looking line of the prompt is written indented and stays in its record
    assert lines[3] == f"  {TS} [running] [node-2] Bob has started episode 7."
    assert lines[-1] == f"{TS} [finished] [-] Alice has finished episode 1."
    assert not any(r.agent == "Bob" for r in parse_file(tmp_path / "Alice.history"))


def test_round_trip_log(tmp_path: Path) -> None:
    write_all(tmp_path, one_step_run())
    recs = parse_file(tmp_path / "Alice.log")
    info = [(r.line, r.state, r.conversation, r.message) for r in recs if r.level == "INFO"]
    assert info == [
        (1, "running", "-", "has started episode 1."),
        (2, "running", "-", "step started: normal, 1 node, iteration 1"),
        (3, "running", "R/node-1", "round 1: retrieval \u2014 matches requestMatch"),
        (4, "running", "R/node-1", "fetched core.md [files] 45 chars"),
        (5, "running", "R/node-1", "fetched gone.md [files] 0 chars (not_found)"),
        (8, "running", "R/node-1", "round 2: final (forced) \u2014 forced final call"),
        (10, "running", "R/node-1", "gate then: continue \u2014 equals"),
        (11, "running", "R/node-1", "write notes/a.md (append): written"),
        (12, "finished", "-", "step finished: 1 survived"),
        (13, "finished", "-", "has finished episode 1."),
    ]
    assert all(r.kind == "log" and r.agent == "Alice" for r in recs)
    assert [r.line for r in recs] == list(range(1, 14))  # JSON keeps every DEBUG record on one line


def test_debug_records_hold_the_raw_messages(tmp_path: Path) -> None:
    events = one_step_run()
    write_all(tmp_path, events)
    debug = [r for r in parse_file(tmp_path / "Alice.log") if r.level == "DEBUG"]
    assert [r.message.split(":", 1)[0] for r in debug] == ["request", "messages", "messages"]
    assert json.loads(debug[0].message.split(": ", 1)[1]) == {"files": ["core.md"]}
    assert json.loads(debug[1].message.split(": ", 1)[1]) == events[2]["messages"]
    assert json.loads(debug[2].message.split(": ", 1)[1]) == events[3]["messages"]
    assert all(r.conversation == "R/node-1" for r in debug)


def test_log_level_padding(tmp_path: Path) -> None:
    write_all(tmp_path, one_step_run())
    lines = (tmp_path / "Alice.log").read_text(encoding="utf-8").splitlines()
    assert lines[0] == f"{TS} INFO  [running] [-] Alice has started episode 1."
    assert any(line.startswith(f"{TS} DEBUG [running] [R/node-1] Alice messages: [") for line in lines)
    assert all(re.match(rf"{TS} (INFO  |DEBUG )\[", line) for line in lines)


def test_files_appear_only_on_the_first_record(tmp_path: Path) -> None:
    run_dir = tmp_path / "run" / "deep"
    writer = RunFilesWriter(run_dir, clock=fixed_clock)
    writer({"type": "run_start", "ladder": "demo"})
    writer({"type": "internal_error", "traceback": "x"})
    assert not run_dir.exists()
    writer({"type": "step_start", "step": "Alice", "step_type": "normal", "nodes": 1, "iteration": 1})
    assert sorted(p.name for p in run_dir.iterdir()) == ["Alice.history", "Alice.log"]
    writer.close()


def test_records_are_flushed_as_events_come(tmp_path: Path) -> None:
    writer = RunFilesWriter(tmp_path, clock=fixed_clock)
    events = one_step_run()
    writer(events[1])
    assert len(parse_file(tmp_path / "Alice.history")) == 1
    writer(events[2])
    assert len(parse_file(tmp_path / "Alice.history")) == 4
    assert any(r.level == "DEBUG" for r in parse_file(tmp_path / "Alice.log"))
    writer.close()


def test_hostile_step_id_stays_inside_run_dir(tmp_path: Path) -> None:
    run_dir = tmp_path / "a" / "run"
    hostile = "../../etc/x"
    write_all(run_dir, [
        {"type": "step_start", "step": hostile, "step_type": "normal", "nodes": 1, "iteration": 1},
        {"type": "llm_call", "step": hostile, "node": 1, "round": 1, "iteration": 1,
         "messages": [{"role": "user", "content": "hi"}], "output": "ok", "forced_final": False,
         "request_match": None},
        {"type": "step_end", "step": hostile, "survivors": 1, "iteration": 1},
        {"type": "run_end", "status": "completed"},
    ])
    everything = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    name = agent_name(hostile)
    assert name == "%2E.%2F..%2Fetc%2Fx" and "/" not in name and not name.startswith(".")
    assert everything == ["a", "a/run", f"a/run/{name}.history", f"a/run/{name}.log"]
    recs = parse_file(run_dir / f"{name}.history")
    assert {r.agent for r in recs} == {name}
    assert recs[1].message == "was told (round 1): hi"


def test_child_run_steps_are_agents_named_by_their_call(tmp_path: Path) -> None:
    write_all(tmp_path, [
        {"type": "step_start", "step": "outer", "step_type": "call", "nodes": 1, "iteration": 1},
        {"type": "call", "step": "outer", "node": 1, "status": "started", "child_depth": 1},
        {"type": "step_start", "step": "outer", "step_type": "normal", "nodes": 2, "iteration": 1, "depth": 1},
        {"type": "llm_call", "step": "outer", "node": 2, "round": 1, "iteration": 1, "depth": 1,
         "messages": [{"role": "user", "content": "inner"}], "output": "x", "forced_final": False,
         "request_match": None},
        {"type": "gate", "step": "outer", "node": 2, "branch": "else", "action": "prune", "reason": "no",
         "depth": 1},
        {"type": "step_end", "step": "outer", "survivors": 1, "iteration": 1, "depth": 1},
        {"type": "call", "step": "outer", "node": 1, "status": "completed", "child_depth": 1},
        {"type": "step_end", "step": "outer", "survivors": 1, "iteration": 1},
        {"type": "run_end", "status": "completed"},
    ])
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["outer.history", "outer.log", "outer@outer#1.history", "outer@outer#1.log"]
    inner = parse_file(tmp_path / "outer@outer#1.history")
    assert [(r.agent, r.conversation, r.message) for r in inner] == [
        ("outer@outer#1", "-", "has started episode 1."),
        ("outer@outer#1", "R/node-2", "was told (round 1): inner"),
        ("outer@outer#1", "R/node-2", "said (round 1): x"),
        ("outer@outer#1", "-", "has finished episode 1."),
    ]
    log = parse_file(tmp_path / "outer@outer#1.log")
    assert any(r.message == "round 1: answer" for r in log)
    assert any(r.message == "gate else: prune \u2014 no" and r.conversation == "R/node-2" for r in log)
    outer = [r.message for r in parse_file(tmp_path / "outer.history")]
    assert outer == ["has started episode 1.", "has finished episode 1."]
    calls = [r.message for r in parse_file(tmp_path / "outer.log") if r.message.startswith("call ")]
    assert calls == ["call started: child agents <step>@outer#1", "call completed"]


def test_episodes_follow_iterations(tmp_path: Path) -> None:
    def start(it: int) -> dict:
        return {"type": "step_start", "step": "draft", "step_type": "normal", "nodes": 1, "iteration": it}

    def end(it: int) -> dict:
        return {"type": "step_end", "step": "draft", "survivors": 1, "iteration": it}

    write_all(tmp_path, [start(1), end(1), start(1), end(1), start(2),
                         {"type": "write", "step": "draft", "node": 1, "target": "t", "policy": "overwrite",
                          "status": "skipped", "reason": "no JSON found"},
                         end(2)])
    recs = parse_file(tmp_path / "draft.history")
    assert [(r.state, r.message) for r in recs] == [
        ("running", "has started episode 1."),
        ("finished", "has finished episode 1."),
        ("finished", "has finished episode 1."),
        ("running", "has started episode 2."),
        ("finished", "has finished episode 2."),
    ]
    log = parse_file(tmp_path / "draft.log")
    skipped = [r for r in log if r.message.startswith("write ")]
    assert [(r.state, r.conversation, r.message) for r in skipped] == \
        [("running", "R/node-1", "write t (overwrite): skipped \u2014 no JSON found")]
    assert [r.message for r in log if r.message.startswith("step started")] == \
        ["step started: normal, 1 node, iteration 1"] * 2 + ["step started: normal, 1 node, iteration 2"]


def test_llm_call_without_step_start_still_opens_its_episode(tmp_path: Path) -> None:
    write_all(tmp_path, [{"type": "llm_call", "step": "s", "node": 1, "round": 2, "iteration": 3,
                          "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "u"}],
                          "output": None, "forced_final": False, "request_match": "final"}])
    recs = parse_file(tmp_path / "s.history")
    # round 2: no system prompt; no output: nothing said; iteration 3 is the agent's first episode in the folder
    assert [r.message for r in recs] == ["has started episode 1.", "was told (round 2): u"]
    assert "iteration" not in recs[0].message


def test_run_end_warns_about_steps_left_running(tmp_path: Path) -> None:
    writer = write_all(tmp_path, [
        {"type": "step_start", "step": "s", "step_type": "normal", "nodes": 1, "iteration": 1},
        {"type": "run_end", "status": "aborted", "error": "the gate said abort", "depth": 1},  # a child's: ignored
        {"type": "run_end", "status": "aborted", "error": "the gate said abort"},
    ])
    last = parse_file(tmp_path / "s.log")[-1]
    assert (last.level, last.state, last.message) == \
        ("WARN", "running", "run ended (aborted) before the step finished: the gate said abort")
    assert (tmp_path / "s.log").read_text().splitlines()[-1].startswith(f"{TS} WARN  [running] [-] s run ended")
    assert writer.errors == []


def test_writing_after_close_appends(tmp_path: Path) -> None:
    events = one_step_run()
    writer = write_all(tmp_path, events)  # run_end closed the files
    writer(events[1] | {"iteration": 2})
    writer.close()
    recs = parse_file(tmp_path / "Alice.history")
    assert recs[-1].message == "has started episode 2." and recs[0].line == 1


def test_a_planted_link_is_not_followed(tmp_path: Path) -> None:
    if not hasattr(os, "O_NOFOLLOW"):
        pytest.skip("no O_NOFOLLOW here")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    try:
        (run_dir / "Alice.history").symlink_to(outside)
    except OSError:
        pytest.skip("cannot create links here")
    writer = write_all(run_dir, one_step_run())
    assert outside.read_text() == "keep\n"
    assert len(writer.errors) == 1 and "Alice.history" in writer.errors[0]
    assert parse_file(run_dir / "Alice.log")[0].message == "has started episode 1."


def test_nul_in_output_is_made_visible(tmp_path: Path) -> None:
    write_all(tmp_path, [{"type": "llm_call", "step": "s", "node": 1, "round": 1, "iteration": 1,
                          "messages": [{"role": "user", "content": "a\x00b"}], "output": "c\x00d",
                          "forced_final": False, "request_match": None}])
    for p in tmp_path.iterdir():
        assert b"\x00" not in p.read_bytes()
    assert parse_file(tmp_path / "s.history")[-1].message == "said (round 1): c\u2400d"


def test_default_clock_writes_a_timestamp(tmp_path: Path) -> None:
    writer = RunFilesWriter(tmp_path)
    writer({"type": "step_start", "step": "s", "step_type": "normal", "nodes": 1, "iteration": 1})
    writer.close()
    (rec,) = parse_file(tmp_path / "s.history")
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", rec.timestamp)
    assert writer.agents == ["s"]
    assert writer.paths("s") == (tmp_path / "s.history", tmp_path / "s.log")


def test_exports_and_docstrings() -> None:
    import types

    public = sorted(n for n, v in vars(runfiles).items() if not n.startswith("_") and n != "annotations"
                    and not isinstance(v, types.ModuleType))
    assert runfiles.__all__ == sorted(runfiles.__all__)
    assert set(runfiles.__all__) == set(public)
    for name in runfiles.__all__:
        obj = getattr(runfiles, name)
        if callable(obj):
            assert obj.__doc__ and obj.__doc__.strip(), name


def test_a_writer_dropped_without_close_closes_its_files(tmp_path: Path) -> None:
    import gc

    writer = RunFilesWriter(tmp_path, clock=fixed_clock)
    writer(one_step_run()[1])
    del writer
    gc.collect()  # a ResourceWarning here would fail the test (filterwarnings=error)
    assert parse_file(tmp_path / "Alice.history")[0].message == "has started episode 1."
