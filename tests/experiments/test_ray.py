"""The Ray backend: the same results and traces as the local pool, resuming, a cell whose Ray task fails, the
shared rate limiter, and the driver writing back traces a worker on another node kept."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

if os.environ.get("LADR_REQUIRE_RAY"):      # CI installs the ray extra: there, its absence is a failure
    import ray
else:
    ray = pytest.importorskip("ray", reason='Ray is not installed (pip install "ladr_lab[ray]"; CI installs it)')

from ladr_lab.config import load_ladder_text
from ladr_lab.errors import ModelError
from ladr_lab.experiments import experiment, ray_backend
from ladr_lab.experiments.cells import CellTask
from ladr_lab.experiments.ray_backend import run_task, start_limiter, write_trace_if_missing
from ladr_lab.models.limited import RateLimiter

STEP_A = """
  - id: answer
    fields: [{ name: Q, type: text, from: input.context }]
"""
STEP_B = """
  - id: reply
    fields: [{ name: Q, type: text, from: input.context }]
"""
ROWS = [{"context": "What is maxRounds?"}, {"context": "What is a slate?"}, {"context": "Why gates?"}]
TIMING = ["seconds", "latency"]
VOLATILE = ("t", "latency", "run_id", "started_at")


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    """One small local Ray for the whole module (starting one costs seconds)."""
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()


@pytest.fixture
def variants():
    """Two one-step variants (no slates): the model's answer is the cell's output."""
    return {"a": load_ladder_text("name: a\nsteps:" + STEP_A), "b": load_ladder_text("name: b\nsteps:" + STEP_B)}


@pytest.fixture
def script(tmp_path) -> str:
    path = tmp_path / "script.yaml"
    path.write_text("answer: ['A answers: see concepts/slates.md']\nreply: ['{\"ok\": \"B answers\"}']\n")
    return f"script:{path}"


def _table(exp):
    df = exp.results
    return df.drop(columns=[c for c in (*TIMING, "trace") if c in df.columns]).to_dict("records")


def _events(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        ev = json.loads(line)
        out.append({k: v for k, v in ev.items() if k not in VOLATILE})
    return out


def _traces(out: Path) -> dict[str, list[dict]]:
    return {str(p.relative_to(out)): _events(p) for p in sorted(out.glob("*/traces/*.jsonl"))}


@pytest.mark.parametrize("model", ["script", "offline"])
def test_ray_and_the_local_pool_give_the_same_results_and_traces(model, variants, script, tmp_path):
    name = script if model == "script" else "offline"
    local = experiment(variants, ROWS, model=name, out=tmp_path / "local", asserts="contains: answers",
                       progress=False, concurrency=2)
    on_ray = experiment(variants, ROWS, model=name, out=tmp_path / "ray", asserts="contains: answers",
                        progress=False, concurrency=2, backend="ray")
    rows = _table(on_ray)
    assert rows == _table(local)
    assert len(rows) == 6 and {r["status"] for r in rows} == {"completed"}
    if model == "script":     # the variants answer differently, so a swapped or shared row would show
        assert [r["output"] for r in rows] == ["A answers: see concepts/slates.md", '{"ok": "B answers"}'] * 3
    assert len({r["output"] for r in rows}) > 1
    traces = _traces(tmp_path / "ray")
    assert len(traces) == 6 and traces == _traces(tmp_path / "local")


def test_a_second_run_on_the_same_folder_runs_nothing(variants, script, tmp_path):
    out = tmp_path / "exp"
    first = experiment(variants, ROWS, model=script, out=out, progress=False, backend="ray")
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 6
    calls = []
    original = ray_backend.run_on_ray

    def spy(tasks, *a, **k):
        calls.append(len(list(tasks)))
        return original(tasks, *a, **k)
    ray_backend.run_on_ray = spy
    try:
        again = experiment(variants, ROWS, model=script, out=out, progress=False, backend="ray")
    finally:
        ray_backend.run_on_ray = original
    assert (out / "results.jsonl").read_text().splitlines() == lines and calls == []
    assert _table(again) == _table(first)


def test_a_cell_whose_ray_task_dies_is_an_error_row_and_the_others_finish(variants, script, tmp_path):
    def crash_on_boom(output, cell):
        if cell.get("input.context") == "boom":
            os._exit(3)          # the worker process dies: Ray reports a crashed worker, not an exception
        return True
    rows = [*ROWS[:2], {"context": "boom"}]
    exp = experiment({"a": variants["a"]}, rows, model=script, out=tmp_path / "exp", asserts=crash_on_boom,
                     progress=False, backend="ray", concurrency=2)
    df = exp.results.set_index("row")
    assert list(df["status"]) == ["completed", "completed", "error"]
    assert list(df["passed"][:2]) == [True, True] and df.loc["3", "passed"] is None
    err = df.loc["3", "error"]
    assert err.startswith("the Ray task failed: ") and "Error" in df.loc["3", "error_type"], err
    assert "Traceback" not in err and "\n" not in err


def test_a_failing_model_is_the_cells_own_error_on_ray_too(variants, tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("other: [x]\n")      # no output for step "answer": the cell fails with ScriptExhausted
    exp = experiment({"a": variants["a"]}, ROWS[:1], model=f"script:{empty}", out=tmp_path / "exp",
                     progress=False, backend="ray")
    row = exp.results.iloc[0]
    assert row["status"] == "error" and row["error_type"] == "ScriptExhausted" and 'no outputs for "answer/1"' in row["error"]


def test_the_limiter_actor_hands_out_the_local_limiters_delays():
    proxy = start_limiter("5/s")
    local = RateLimiter("5/s")
    try:
        remote_delays = [proxy.delay("openai") for _ in range(8)]
    finally:
        ray.kill(proxy.actor)
    local_delays = [local.delay("openai") for _ in range(8)]
    expected = [0.0] * 5 + [0.2, 0.4, 0.6]     # a burst of the bucket, then one token each 1/5 s
    assert remote_delays == pytest.approx(expected, abs=0.1)
    assert local_delays == pytest.approx(expected, abs=0.1)


def test_a_bad_rate_is_refused_in_the_driver_before_any_actor():
    with pytest.raises(ModelError, match="rate limit 'fast': give calls per period"):
        start_limiter("fast")


def test_a_rate_limited_run_on_ray_waits_for_the_shared_limiter(variants, script, tmp_path, monkeypatch):
    seen = []
    original = ray_backend.run_on_ray

    def spy(*a, **k):
        seen.append(original(*a, **k))
        return seen[-1]
    monkeypatch.setattr(ray_backend, "run_on_ray", spy)
    out = tmp_path / "exp"
    rows = [{"context": f"q{i}"} for i in range(6)]
    exp = experiment({"a": variants["a"]}, rows, model=script, out=out, progress=False, backend="ray",
                     concurrency=2, rate_limit="2/s")
    assert list(exp.results["status"]) == ["completed"] * 6
    assert seen and seen[0]["limiter"]["granted"] == 6      # every call asked the one actor
    # a bucket of 2, refilled at 2/s: the sixth call is 2 s after the first, whichever worker makes it
    done = sorted(p.stat().st_mtime for p in (out / "a" / "traces").glob("*.jsonl"))
    assert done[-1] - done[0] >= 1.5


def test_a_worker_on_another_node_sends_its_trace_and_the_driver_writes_it_where_missing(variants, tmp_path):
    from ladr_lab.experiments.cells import CellSpec
    spec = CellSpec(row="1", pos=1, fields={"context": "q"}, out=str(tmp_path), trace="a/traces/1.jsonl",
                    fingerprint="f", model="offline", expected=("context",), variant="a")
    task = CellTask(spec, "a")
    cell, text = run_task(task, variants["a"], None, driver_node="another-node")
    trace = tmp_path / "a" / "traces" / "1.jsonl"
    assert cell.status == "completed" and text == trace.read_text()
    same_node = run_task(task, variants["a"], None, driver_node=ray.get_runtime_context().get_node_id())
    assert same_node[1] is None       # one file system: nothing to send
    trace.unlink()                     # the driver's side of a cluster without a shared file system
    assert write_trace_if_missing(trace, text) is True and trace.read_text() == text
    assert write_trace_if_missing(trace, "other") is False and trace.read_text() == text
    assert write_trace_if_missing(tmp_path / "none.jsonl", None) is False and not (tmp_path / "none.jsonl").exists()


def test_without_ray_the_backend_says_how_to_install_it(monkeypatch):
    import builtins

    from ladr_lab.errors import LadrError
    real = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(LadrError, match=r'backend="ray" needs Ray, which is not installed: pip install "ladr_lab\[ray\]"'):
        ray_backend.run_on_ray([], {}, on_result=print)


def test_the_pool_has_a_process_per_cpu_and_shares_the_workers_over_threads():
    from ladr_lab.experiments.ray_backend import pool_shape
    assert pool_shape(2.0, 8) == (2, 4)
    assert pool_shape(2.0, 32) == (2, 16)
    assert pool_shape(2.0, 1) == (1, 1)
    assert pool_shape(16.0, 3) == (3, 1)
    assert pool_shape(0.5, 5) == (1, 5)
    for cpus in (1.0, 2.0, 3.0, 64.0):
        for workers in range(1, 40):
            p, t = pool_shape(cpus, workers)
            assert p * t >= workers and p * (t - 1) < workers      # room for every worker, no idle thread row


def test_every_cell_of_a_run_uses_one_of_the_pool_processes(variants, script, tmp_path):
    """Cells run on the pool's processes (a process per CPU here: 2), so the model's libraries load once per
    process; the assertion reports the process each cell ran in."""
    from ladr_lab.experiments.assertions import load_asserts
    from ladr_lab.experiments.runner import _spec
    from ladr_lab.experiments.variants import load_variants

    def pid_of(output, cell):
        import ladr_lab
        return {"pass": False, "reason": f"{os.getpid()} {ladr_lab.__file__}"}
    v = load_variants({"a": variants["a"]})[0]
    asserts = tuple(load_asserts(pid_of))
    tasks = [CellTask(_spec(v.name, v.ladder, v.knobs, tmp_path, f"r{i}", i, {"context": f"q{i}"}, script, None,
                            None, False, None, None), "a", asserts) for i in range(8)]
    cells: list = []
    info = ray_backend.run_on_ray(tasks, {"a": v.ladder}, workers=4, on_result=cells.append)
    assert info["cells"] == 8 and (info["processes"], info["threads"]) == (2, 2)
    assert len(cells) == 8 and all(c.status == "completed" for c in cells)
    import ladr_lab
    seen = {tuple(next(iter(c.reasons().values())).split()[-2:]) for c in cells}
    pids = {pid for pid, _ in seen}
    assert 1 <= len(pids) <= 2 and str(os.getpid()) not in pids
    assert {path for _, path in seen} == {ladr_lab.__file__}      # the workers run this checkout's code


class _FakeRay:
    """A `ray` whose local start fails the first `fails` times."""

    def __init__(self, fails: int) -> None:
        self.fails, self.calls, self.shutdowns = fails, [], 0

    def is_initialized(self) -> bool:
        return False

    def init(self, **kw):
        self.calls.append(kw)
        if len(self.calls) <= self.fails:
            raise RuntimeError("Failed to start the metrics agent: timed out after 30 s\nmore detail")

    def shutdown(self):
        self.shutdowns += 1


def test_a_failed_local_start_is_tried_once_more_lighter():
    fake = _FakeRay(fails=1)
    ray_backend._init(fake, None)
    assert len(fake.calls) == 2 and fake.shutdowns == 1
    first, second = fake.calls
    assert first["include_dashboard"] is False and "_system_config" not in first
    assert second["include_dashboard"] is False and second["_system_config"] == {"enable_metrics_collection": False}


def test_a_local_start_that_fails_twice_says_the_two_commands_that_work():
    from ladr_lab.errors import LadrError
    fake = _FakeRay(fails=2)
    with pytest.raises(LadrError) as err:
        ray_backend._init(fake, None, workers=8)
    msg = str(err.value)
    assert len(fake.calls) == 2 and "metrics agent: timed out" in msg and "more detail" not in msg
    cpus = min(8, os.cpu_count() or 1)
    assert f"ray start --head --num-cpus={cpus} --include-dashboard=false" in msg
    assert "--ray auto" in msg and "--ray 127.0.0.1:6379" in msg
    # an address is not started: one try, and the error says how to start one there
    fake = _FakeRay(fails=5)
    with pytest.raises(LadrError, match="could not reach Ray at 10.0.0.1:6379.*ray start --head"):
        ray_backend._init(fake, "10.0.0.1:6379")
    assert len(fake.calls) == 1


def test_the_start_command_uses_flags_the_installed_ray_has():
    import shutil
    import subprocess
    ray_cli = shutil.which("ray")
    if ray_cli is None:
        pytest.skip("no `ray` command on PATH")
    helptext = subprocess.run([ray_cli, "start", "--help"], capture_output=True, text=True, timeout=120).stdout
    for flag in ray_backend.start_command(2).split()[2:]:
        assert flag.split("=")[0] in helptext, flag


def test_a_killed_actor_fails_only_its_cells_and_they_are_sent_again(variants, script, tmp_path):
    """One cell kills its own Ray worker process the first time it runs (a marker file says it did): the cells
    that process was running are sent again, and every cell completes, once each in the results file."""
    marker = tmp_path / "killed-once"

    def kill_once(output, cell):
        if cell.get("input.context") == "q3" and not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), 9)           # the actor's process dies under its running cells
        return True
    rows = [{"context": f"q{i}"} for i in range(8)]
    out = tmp_path / "exp"
    seen = []
    original = ray_backend.run_on_ray

    def spy(*a, **k):
        seen.append(original(*a, **k))
        return seen[-1]
    ray_backend.run_on_ray = spy
    try:
        exp = experiment({"a": variants["a"]}, rows, model=script, out=out, asserts=kill_once, progress=False,
                         backend="ray", concurrency=4)
    finally:
        ray_backend.run_on_ray = original
    assert marker.exists()
    assert [c.status for c in exp.cells] == ["completed"] * 8 and all(c.passed for c in exp.cells)
    assert seen and 1 <= seen[0]["resubmitted"] <= 4      # the killed process's cells, and only those
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(d["row"] for d in lines) == sorted(str(i) for i in range(1, 9))     # each cell once
