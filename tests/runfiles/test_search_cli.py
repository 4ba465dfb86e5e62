"""`ladr-lab search` as SPEC §9 fixes it: a JSON array of pieces, WARNs on standard error, exit codes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ladr_lab.cli import main
from tests.runfiles.helpers import rec

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    return subprocess.run([sys.executable, "-m", "ladr_lab", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env)


def history(run_dir: Path) -> None:
    (run_dir / "Alice.history").write_text(
        rec("18:00:00", "Alice", "has started episode 1.")
        + rec("18:00:01", "Alice", "was told (round 1): where is ACME-7781?", "c1")
        + rec("18:00:02", "Alice", "said (round 1): ACME-7781 is in bay 3\nsecond line", "c1")
        + rec("18:00:03", "Alice", "noted ACME-7781 in another conversation", "c2"))


def test_json_pieces_have_file_line_kind_and_text(tmp_path: Path) -> None:
    history(tmp_path)
    p = cli("search", str(tmp_path), "ACME-7781", "--owner", "Alice", "--episode", "1", "--conversation", "c1",
            "--json")
    assert p.returncode == 0, p.stderr
    pieces = json.loads(p.stdout)
    assert sorted((x["file"], x["line"], x["kind"], x["text"]) for x in pieces) == [
        ("Alice.history", 2, "told", "was told (round 1): where is ACME-7781?"),
        ("Alice.history", 3, "said", "said (round 1): ACME-7781 is in bay 3"),
    ]
    assert p.stderr == ""


def test_scope_top_k_and_episode_filter_form(tmp_path: Path) -> None:
    history(tmp_path)
    p = cli("search", str(tmp_path), "ACME", "--owner", "Alice", "--episode", "episode-2", "--conversation", "c9",
            "--scope", "run", "--top-k", "1", "--json")
    (only,) = json.loads(p.stdout)
    assert only["episode"] == 1
    p = cli("search", str(tmp_path), "ACME", "--owner", "Alice", "--episode", "2", "--conversation", "c1",
            "--scope", "episode", "--json")
    assert json.loads(p.stdout) == []


def test_warns_go_to_standard_error(tmp_path: Path) -> None:
    history(tmp_path)
    (tmp_path / "Alice").mkdir()
    (tmp_path / "Alice" / "b.bin").write_bytes(b"\x00ACME")
    p = cli("search", str(tmp_path), "ACME", "--owner", "Alice", "--json")
    assert p.returncode == 0 and json.loads(p.stdout) == []
    lines = p.stderr.splitlines()
    assert "WARN Alice/b.bin: left out: a NUL byte in its first 8 KiB" in lines
    assert any(line.startswith("WARN Alice: .history and .log records are evidence only") for line in lines)


def test_mask_and_the_text_output(tmp_path: Path) -> None:
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "kiwi AKIAIOSFODNN7EXAMPLE /etc/k", "c"))
    p = cli("search", str(tmp_path), "kiwi", "--owner", "Alice", "--episode", "1", "--conversation", "c", "--mask")
    assert p.returncode == 0
    assert "Alice.history:1  [note, episode" not in p.stdout  # no marker: no episode
    assert "Alice.history:1  [note, c, 2026-10-21 18:00:00]" in p.stdout
    assert "kiwi [masked secret] [masked path]" in p.stdout and "AKIA" not in p.stdout


def test_usage_errors_exit_2_and_a_missing_folder_exits_1(tmp_path: Path, capsys) -> None:
    assert cli("search", str(tmp_path), "x", "--owner", "A", "--episode", "episode-x").returncode == 2
    assert cli("search", str(tmp_path), "x", "--owner", "A", "--top-k", "0").returncode == 2
    assert cli("search", str(tmp_path), "x").returncode == 2  # --owner is required
    assert main(["search", str(tmp_path / "nope"), "x", "--owner", "A"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_index_file_makes_the_next_search_incremental(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    history(run)
    db = tmp_path / "idx.sqlite"
    args = ["search", str(run), "ACME", "--owner", "Alice", "--episode", "1", "--conversation", "c1", "--json",
            "--index", str(db)]
    assert len(json.loads(cli(*args).stdout)) == 2
    with open(run / "Alice.history", "a") as fh:
        fh.write(rec("18:00:09", "Alice", "ACME-7781 moved", "c1"))
    assert len(json.loads(cli(*args).stdout)) == 3


def test_two_real_runs_into_one_folder_then_search(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for question in ("glob mode", "maxRounds reached"):
        p = cli("run", "examples/research.yaml", "--input", question, "--run-dir", str(run), "--json")
        assert p.returncode == 0, p.stderr
    heads = [line.split("] [")[1].split("]")[0] for line in (run / "research.history").read_text().splitlines()
             if line[:1].isdigit()]
    convs = [c for c in dict.fromkeys(heads) if c != "-"]  # in order of appearance: run 1, then run 2
    assert len(convs) == 2 and all(c.endswith("/node-1") for c in convs)
    p = cli("search", str(run), "maxRounds", "--owner", "research", "--episode", "2", "--conversation", convs[1],
            "--scope", "episode", "--top-k", "50", "--json")
    pieces = json.loads(p.stdout)
    assert pieces and {x["episode"] for x in pieces} == {2}
    assert {x["conversation"] for x in pieces} <= {convs[1], "-"}
    assert {x["kind"] for x in pieces} <= {"told", "said", "note"} and "told" in {x["kind"] for x in pieces}


def test_an_index_that_cannot_be_used_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    history(tmp_path)
    junk = tmp_path / "junk.db"
    junk.write_text("not a database\n" * 200)
    for index in (tmp_path / "missing" / "x.db", junk):
        p = cli("search", str(tmp_path), "ACME", "--owner", "Alice", "--index", str(index))
        assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
        assert p.stderr.startswith(f"ladr-lab: cannot use {index} as a run-file index:"), p.stderr


def test_an_episode_past_sqlites_integers_is_a_usage_error_not_a_crash(tmp_path: Path) -> None:
    history(tmp_path)
    for episode in (str(2**63), f"episode-{2**63 + 5}", "9" * 40):
        p = cli("search", str(tmp_path), "ACME", "--owner", "Alice", "--episode", episode, "--conversation", "c1")
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert "no such episode" in p.stderr
    p = cli("search", str(tmp_path), "ACME", "--owner", "Alice", "--episode", str(2**63 - 1), "--conversation", "c1",
            "--json")
    assert p.returncode == 0 and len(json.loads(p.stdout)) == 3  # every record is of another episode


def test_a_marker_past_sqlites_integers_is_not_a_marker(tmp_path: Path) -> None:
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", f"has started episode {2**63}.")
                                            + rec("18:00:01", "Alice", "kiwi", "c"))
    p = cli("search", str(tmp_path), "kiwi", "--owner", "Alice", "--episode", "1", "--conversation", "c", "--json")
    assert p.returncode == 0, p.stderr
    assert [x["episode"] for x in json.loads(p.stdout)] == [None]


def test_a_search_without_episode_says_how_to_search_every_episode(tmp_path: Path) -> None:
    history(tmp_path)
    p = cli("search", str(tmp_path), "ACME", "--owner", "Alice")
    assert p.stdout == "(no evidence)\n"
    warn = next(line for line in p.stderr.splitlines() if "evidence only" in line)
    assert warn.endswith("to search the records of every episode, give an episode the run does not have and the "
                         "conversation '-', e.g. --episode 0 --conversation -)"), warn
    # and what it says is true: the records of every episode are found that way
    p = cli("search", str(tmp_path), "ACME", "--owner", "Alice", "--episode", "0", "--conversation", "-", "--json")
    assert len(json.loads(p.stdout)) == 3
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "has started episode 0.")
                                            + rec("18:00:01", "Alice", "ACME in episode 0", "c1")
                                            + rec("18:00:02", "Alice", "has started episode 1."))
    p = cli("search", str(tmp_path), "ACME", "--owner", "Alice")
    assert "e.g. --episode 2 --conversation -)" in p.stderr, p.stderr


def _stats(p: subprocess.CompletedProcess) -> dict:
    """The counters of `--stats`: index path, bytes read, records added."""
    line = next(x for x in p.stderr.splitlines() if x.startswith("index "))
    path, rest = line[len("index "):].split(": ", 1)
    words = rest.split()
    return {"path": path, "bytes": int(words[words.index("bytes") - 1]),
            "records": int(words[words.index("records") - 1])}


def cached_run(tmp_path: Path, monkeypatch, *, with_history: bool = True) -> tuple[Path, Path]:
    """(the index cache folder, set as LADR_LAB_CACHE_DIR; a run folder, holding `history` unless told not to)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("LADR_LAB_CACHE_DIR", str(cache))
    run = tmp_path / "run"
    run.mkdir()
    if with_history:
        history(run)
    return cache, run


def _search(run: Path, *extra: str) -> subprocess.CompletedProcess:
    p = cli("search", str(run), "ACME", "--owner", "Alice", "--episode", "1", "--conversation", "c1", "--json",
            "--stats", *extra)
    assert p.returncode == 0, p.stderr
    return p


def test_the_index_is_cached_per_user_and_the_second_search_reads_nothing_new(tmp_path: Path, monkeypatch) -> None:
    cache, run = cached_run(tmp_path, monkeypatch)
    first = _search(run)
    size = (run / "Alice.history").stat().st_size
    assert _stats(first)["bytes"] == size and len(json.loads(first.stdout)) == 2
    (db,) = (cache / "runfiles").glob("*.sqlite")  # beside it, at most its (empty) rollback journal
    assert _stats(first)["path"] == str(db) and db.name.startswith("run.Alice.") and db.suffix == ".sqlite"
    assert (cache / "runfiles").stat().st_mode & 0o077 == 0  # private: an index holds the run files' text
    second = _search(run)
    assert _stats(second) == {"path": str(db), "bytes": 0, "records": 0}
    assert second.stdout == first.stdout
    line = rec("18:00:09", "Alice", "ACME-7781 moved", "c1")
    with open(run / "Alice.history", "a") as fh:
        fh.write(line)
    third = _search(run)
    assert _stats(third)["bytes"] == len(line.encode()) and _stats(third)["records"] == 1
    assert "ACME-7781 moved" in {x["text"] for x in json.loads(third.stdout)}
    # the run folder by its real path: a link to it shares the cache file
    (tmp_path / "link").symlink_to(run)
    assert _stats(_search(tmp_path / "link")) == {"path": str(db), "bytes": 0, "records": 0}


def test_another_owner_or_masking_gets_another_cache_file_and_no_cache_writes_none(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    cache, run = cached_run(tmp_path, monkeypatch)
    (run / "Bob.history").write_text(rec("18:00:00", "Bob", "ACME for Bob", "c1"))
    plain = _stats(_search(run))["path"]
    masked = _stats(_search(run, "--mask"))["path"]
    p = cli("search", str(run), "ACME", "--owner", "Bob", "--episode", "1", "--conversation", "c1", "--stats")
    bob = _stats(p)["path"]
    assert len({plain, masked, bob}) == 3 and ".masked." in masked
    assert sorted(p.name for p in (cache / "runfiles").glob("*.sqlite")) == sorted(Path(x).name for x in (plain, masked, bob))
    for f in (cache / "runfiles").iterdir():
        f.unlink()
    p = _search(run, "--no-cache")
    assert _stats(p)["path"] == "(temporary)" and len(json.loads(p.stdout)) == 2
    assert list((cache / "runfiles").iterdir()) == []


def test_the_index_can_live_in_the_run_folder(tmp_path: Path, monkeypatch) -> None:
    cache, run = cached_run(tmp_path, monkeypatch)
    first = _stats(_search(run, "--index-in-run-dir"))
    assert Path(first["path"]).parent == run / ".ladr_lab" and Path(first["path"]).name.startswith(".")
    assert not cache.exists()
    assert _stats(_search(run, "--index-in-run-dir"))["bytes"] == 0
    assert cli("search", str(run), "x", "--owner", "Alice", "--no-cache", "--index", "f").returncode == 2


def test_two_searches_at_once_share_the_cache_without_corrupting_it(tmp_path: Path, monkeypatch) -> None:
    cache, run = cached_run(tmp_path, monkeypatch, with_history=False)
    with open(run / "Alice.history", "w") as fh:
        fh.write(rec("18:00:00", "Alice", "has started episode 1."))
        for i in range(20000):
            fh.write(rec("18:00:01", "Alice", f"note {i} ACME-{i} kiwi", "c1"))
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    args = [sys.executable, "-m", "ladr_lab", "search", str(run), "ACME-19999", "--owner", "Alice", "--episode", "1",
            "--conversation", "c1", "--json", "--stats"]
    procs = [subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    got = [json.loads(out) for out, _ in outs]
    assert all(g == got[0] for g in got) and "note 19999 ACME-19999 kiwi" in {x["text"] for x in got[0]}
    reads = sorted(_stats(subprocess.CompletedProcess(args, 0, out, err))["records"] for out, err in outs)
    assert reads[:2] == [0, 0] and reads[2] == 20001  # one process built it, the others read nothing new
    p = _search(run)
    assert _stats(p)["bytes"] == 0


def test_a_cache_that_cannot_be_used_falls_back_to_a_temporary_index(tmp_path: Path, monkeypatch) -> None:
    run = tmp_path / "run"
    run.mkdir()
    history(run)
    (tmp_path / "not-a-folder").write_text("x")
    monkeypatch.setenv("LADR_LAB_CACHE_DIR", str(tmp_path / "not-a-folder"))
    p = _search(run)
    assert len(json.loads(p.stdout)) == 2 and _stats(p)["path"] == "(temporary)"
    assert "WARN the index cache cannot be used" in p.stderr and "Traceback" not in p.stderr
