"""Cells on Ray (`experiment(..., backend="ray")`): `run_on_ray` runs each cell (`cells.execute`) on a pool of Ray
actor processes, at most `workers` at once, and hands each finished cell to the driver's `on_result` as it finishes.

Decisions:

- Ray is started only when it is not running: `ray.init(address)` (None: a local Ray sized by Ray itself), with
  no dashboard and the workers' output kept out of the notebook (`log_to_driver=False`); a Ray the user started
  (`ray.init(num_cpus=2)`, a cluster address) is used as it is, and left running afterwards, as Ray's own
  libraries do (starting one costs seconds).
- Cells run on a pool of threaded actors: a process per CPU of the cluster (at most one per worker), each with
  `ceil(workers / processes)` threads (`pool_shape`). A cell mostly waits on its model, so `workers` is the
  concurrency, as on the local pool; and each process imports the model's libraries (litellm) once, where a task
  per cell in a fresh worker process paid that import again and again (benchmarks/README.md has the numbers). A
  process that dies (killed, crashed, out of memory) comes back (`max_restarts=-1`), and the cells it was running
  — only those — are sent again by the driver's loop, at most `RESUBMITS` (2) times each, to the least busy
  process; Ray's own actor-task retry stays off (`max_task_retries=0`) so the loop sees each death, counts it and
  stops at a cell that kills its process every time (it ends as an `error` row naming the Ray error, which a
  re-run retries). Running a killed cell again is safe on the experiment's per-cell slate copies (re-copied
  before each run); with shared slates (`isolate_slates=False`, an evaluation's default) a write the killed run
  made stays, as after a resume following a kill.
- A local start that fails is tried once more, lighter (no metrics collection); then the error names the two
  ways that work: `ray start --head --num-cpus=N --include-dashboard=false`, then `--ray auto` (`start_command`).
- Each ladder goes to the object store once (`ray.put`). Workers import `ladr_lab` from where the driver did:
  from a checkout (not from site-packages), its folder is put first on the workers' `PYTHONPATH`
  (`runtime_env`), or a worker started elsewhere would import another copy, or none.
- A rate limit is one actor (`_LimiterActor`, a `models.limited.RateLimiter`) for every worker: a worker's
  `LimiterProxy.acquire` asks it how long to wait and waits in the worker, so the actor never blocks.
- Traces: workers write them into the output folder, which on one machine is the driver's. On a cluster the
  folder should be on a shared file system (slates a ladder writes to, too); without one, a worker on another
  node sends its trace back with the row and the driver writes it where it is missing (`write_trace_if_missing`),
  and a re-judged cell takes its recorded trace along to the worker.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import LadrError
from .cells import CellResult, CellTask, asserts_fingerprint, execute
from .checks import AssertionResult

__all__ = ["LimiterProxy", "READY_SECONDS", "RESUBMITS", "error_row", "import_ray", "pool_shape", "run_on_ray",
           "run_task", "start_command", "start_limiter", "write_trace_if_missing"]

# how many times a cell whose actor process died is sent again (to the restarted process, or another)
RESUBMITS = 2
READY_SECONDS = 120.0      # how long the driver waits for the pool's warm-up before handing cells anyway

_INSTALL = 'pip install "ladr_lab[ray]"'


def import_ray():
    """The `ray` module, or a LadrError saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise LadrError(f'backend="ray" needs Ray, which is not installed: {_INSTALL}') from exc
    return ray


class _LimiterActor:
    """The one rate limiter of a Ray run (made a Ray actor by `start_limiter`)."""

    def __init__(self, rates: Any) -> None:
        from ..models.limited import RateLimiter
        self.limiter = RateLimiter(rates)

    def delay(self, key: str) -> float:
        """Reserve a token for `key`: how long the caller must wait before its call."""
        return self.limiter.delay(key)

    def stats(self) -> dict[str, float]:
        """Tokens granted and seconds of waiting handed out so far."""
        return {"granted": self.limiter.granted, "waited": round(self.limiter.waited, 3)}


class LimiterProxy:
    """A worker's handle on the shared limiter actor, with `RateLimiter`'s `delay` and `acquire` (picklable)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def delay(self, key: str) -> float:
        """Reserve a token for `key` from the actor: the seconds to wait before the call."""
        import ray
        return float(ray.get(self.actor.delay.remote(key)))

    def acquire(self, key: str) -> float:
        """Block (here, not in the actor) until `key` may make one call; returns the seconds waited."""
        wait = self.delay(key)
        if wait > 0:
            time.sleep(wait)
        return wait

    def stats(self) -> dict[str, float]:
        """The actor's tokens granted and seconds of waiting handed out."""
        import ray
        return ray.get(self.actor.stats.remote())


def start_limiter(rate_limit: Any, *, concurrency: int = 8) -> LimiterProxy:
    """Start the shared rate-limiter actor for `rate_limit` ({provider: "60/min"} or one rate) and return its proxy."""
    ray = import_ray()
    from ..models.limited import RateLimiter
    RateLimiter(rate_limit)    # a bad rate is refused here, in the driver, not as every cell's error
    actor_cls = ray.remote(_LimiterActor)
    options: dict[str, Any] = {"num_cpus": 0, "max_concurrency": max(16, 2 * concurrency)}
    env = _runtime_env()
    if env is not None:
        options["runtime_env"] = env
    actor = actor_cls.options(**options).remote(rate_limit)
    return LimiterProxy(actor)


def _node_id() -> str | None:
    import ray
    try:
        return ray.get_runtime_context().get_node_id()
    except Exception:       # not in a Ray process: no node to tell apart
        return None


def run_task(task: CellTask, ladder: Any, limiter: Any = None, driver_node: str | None = None,
             files: Mapping[str, str] | None = None) -> tuple[CellResult, str | None]:
    """Run one cell in a worker: its result, and its trace's text when the worker is not on the driver's node."""
    for path, recorded in (files or {}).items():     # a re-judged cell's recording, where this node lacks it
        write_trace_if_missing(path, recorded)
    cell = execute(task, ladder, limiter=limiter)
    text: str | None = None
    if driver_node is not None and _node_id() != driver_node and cell.trace:
        written = Path(task.spec.out) / cell.trace
        if written.is_file():
            text = written.read_text(encoding="utf-8", errors="backslashreplace")
    return cell, text


def write_trace_if_missing(path: str | Path, text: str | None) -> bool:
    """Write `text` to `path` (atomically) when there is text and no file there yet; True when written."""
    path = Path(path)
    if text is None or path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return True


def _runtime_env() -> dict | None:
    """Workers import this ladr_lab: its folder first on their PYTHONPATH, unless it is installed."""
    parent = Path(__file__).resolve().parents[2]       # the folder holding the ladr_lab package
    if parent.name in ("site-packages", "dist-packages"):
        return None
    # ${PYTHONPATH} is Ray's spelling of the worker's own value: kept after ours when the driver has one too
    rest = f"{os.pathsep}${{PYTHONPATH}}" if os.environ.get("PYTHONPATH") else ""
    return {"env_vars": {"PYTHONPATH": f"{parent}{rest}"}}


_LIGHTER = {"enable_metrics_collection": False}    # Ray's RayConfig (ray_config_def.h): no metrics pipeline


def _init(ray, address: str | None, workers: int = 8) -> None:
    """Start (address None) or reach Ray, unless it is running. A local start that fails (on loaded cores Ray's
    agents can time out) is tried once more, lighter: no metrics collection, on top of no dashboard; then a
    LadrError gives the two ways that work: a Ray started by hand, and `--ray ADDRESS`."""
    if ray.is_initialized():
        return
    import logging
    kwargs: dict[str, Any] = {"address": address, "ignore_reinit_error": True, "log_to_driver": False,
                              "logging_level": logging.WARNING}
    if address is None:
        kwargs["include_dashboard"] = False
    tries = [kwargs] if address is not None else [kwargs, {**kwargs, "_system_config": dict(_LIGHTER)}]
    errors = []
    for attempt in tries:
        try:
            ray.init(**attempt)
            return
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}".strip().splitlines()[0])
            try:
                ray.shutdown()       # what the failed start left behind, before the next try
            except Exception:        # nothing was started
                pass
    if address is not None:
        raise LadrError(f"could not reach Ray at {address}: {errors[-1]}; is it running? "
                        f"Start it with `{start_command(workers)}`, or give its address (--ray ADDRESS, "
                        f"ray_address=)") from None
    raise LadrError(f"could not start a local Ray (tried twice, the second time without metrics collection): "
                    f"{errors[-1]}. Start one apart, once, and use it: `{start_command(workers)}`, then "
                    f"`--ray auto` (or `--ray 127.0.0.1:6379`; ray_address='auto' in Python)") from None


def start_command(workers: int = 8) -> str:
    """The command that starts a light local Ray by hand (a CPU per worker process, as `pool_shape` gives)."""
    cpus = max(1, min(workers, os.cpu_count() or 1))
    return f"ray start --head --num-cpus={cpus} --include-dashboard=false --disable-usage-stats"


def _ray_error(exc: BaseException) -> tuple[str, str]:
    """(error type, one-line message) of a task's failure: the cell's own exception when Ray carries one."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        exc = cause
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    first = lines[0].strip() if lines else ""
    name = type(exc).__name__
    return name, f"the Ray task failed: {name}" + (f": {first}" if first else "")


def error_row(task: CellTask, exc: BaseException, seconds: float) -> CellResult:
    """The cell whose Ray task failed: status error naming the Ray error, its assertions unchecked (one of them may
    be what failed, so the driver does not run them)."""
    error_type, message = _ray_error(exc)
    cell = CellResult.failed(task.spec, message, error_type=error_type, source=task.source, seconds=seconds)
    if task.source is None:        # a plain evaluation row: never checked
        return cell
    return cell.with_checks({a.name: AssertionResult(None, "not checked: the cell's Ray task failed")
                             for a in task.asserts}, asserts_fingerprint(task.asserts, task.grader, task.threshold))


class _CellRunner:
    """One process of the runner pool (made a threaded Ray actor by `run_on_ray`): it runs cells on its threads,
    so the model's libraries (litellm) are imported once per process, not once per cell or per worker: in
    `__init__`, for the `(model name, options)` pairs the driver names, before the first cell is handed over."""

    def __init__(self, models: tuple = ()) -> None:
        from ..models import warm_up
        warm_up(models)

    def ready(self) -> bool:
        """True once `__init__` has run (the driver waits for it before handing cells out)."""
        return True

    def run(self, task: CellTask, ladder: Any, limiter: Any = None, driver_node: str | None = None,
            files: Mapping[str, str] | None = None) -> tuple[CellResult, str | None]:
        """One cell: `run_task` on one of this process's threads."""
        return run_task(task, ladder, limiter, driver_node, files)


def pool_shape(cpus: float, workers: int) -> tuple[int, int]:
    """(processes, threads each) for `workers` cells at once on `cpus` CPUs: a process per CPU (at most one per
    worker), the workers shared out over their threads — a cell mostly waits on its model."""
    processes = max(1, min(workers, int(cpus) or 1))
    return processes, -(-workers // processes)


def _cluster_cpus(ray) -> float:
    try:
        return float(ray.cluster_resources().get("CPU", 1.0))
    except Exception:
        return 1.0


def run_on_ray(tasks: Iterable[CellTask], ladders: Mapping[str | None, Any], *, address: str | None = None,
               workers: int = 8, rate_limit: Any = None,
               on_result: Callable[[CellResult], None]) -> dict[str, Any]:
    """Run every task on a pool of Ray actor processes (at most `workers` cells at once), calling
    `on_result(cell)` in the driver as each finishes; a cell whose process died is sent again (at most `RESUBMITS`
    times), then is an error row. Returns {"cells": count, "processes", "threads", "limiter": the shared limiter's
    stats or None, "resubmitted": cells sent again}."""
    if workers < 1:
        raise ValueError("workers must be at least 1")
    ray = import_ray()
    tasks = list(tasks)
    if not tasks:
        return {"cells": 0, "limiter": None}
    _init(ray, address, workers)
    limiter = start_limiter(rate_limit, concurrency=workers) if rate_limit is not None else None
    cpus = _cluster_cpus(ray)
    processes, threads = pool_shape(cpus, workers)
    # an actor whose process dies comes back for the next cells (max_restarts); Ray itself never runs a cell
    # again (max_task_retries=0): the loop below sends a cell whose process died once more, at most RESUBMITS times
    options: dict[str, Any] = {"num_cpus": max(0.0001, min(1.0, int(cpus / processes * 10000) / 10000)),
                               "max_concurrency": threads, "max_restarts": -1, "max_task_retries": 0}
    env = _runtime_env()
    if env is not None:
        options["runtime_env"] = env
    runner_cls = ray.remote(_CellRunner)
    warm: dict[str, Any] = {}
    for t in tasks:     # the models the cells will call: each process imports their library before its first cell
        name = t.spec.then if t.spec.replay else (t.spec.model if t.spec.model is not None
                                                  else ladders[t.variant].model)
        if isinstance(name, str):
            warm.setdefault(name, t.spec.model_options)
    pool = [runner_cls.options(**options).remote(tuple(warm.items())) for _ in range(processes)]
    try:    # the warm-up done, in every process; bounded: a process that cannot be scheduled never says ready
        ray.get([actor.ready.remote() for actor in pool], timeout=READY_SECONDS)
    except Exception:   # a process that could not start (or not in time): its cells say so, as before
        pass
    load = [0] * processes
    refs = {name: ray.put(ladders[name]) for name in sorted({t.variant for t in tasks}, key=str)}
    driver = _node_id()
    pending = iter(tasks)
    again: list[CellTask] = []                  # cells whose process died, to send once more (first)
    sent: dict[int, int] = {}                   # id(task) -> times it was sent again
    in_flight: dict[Any, tuple[CellTask, float, int]] = {}
    died = _died(ray)

    def submit() -> None:
        while len(in_flight) < workers:
            task = again.pop(0) if again else next(pending, None)
            if task is None:
                return
            files = None
            if task.spec.replay and Path(task.spec.replay).is_file():
                files = {task.spec.replay: Path(task.spec.replay).read_text(encoding="utf-8",
                                                                            errors="backslashreplace")}
            k = min(range(processes), key=load.__getitem__)      # the least busy process
            ref = pool[k].run.remote(task, refs[task.variant], limiter, driver, files)
            load[k] += 1
            in_flight[ref] = (task, time.perf_counter(), k)

    done = 0
    resubmitted = 0
    stats = None
    try:
        submit()
        while in_flight:
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in ready:
                task, t0, k = in_flight.pop(ref)
                load[k] -= 1
                try:
                    cell, text = ray.get(ref)
                except died as exc:        # its process died (killed, crashed, its node lost): send it again
                    if sent.get(id(task), 0) < RESUBMITS:
                        sent[id(task)] = sent.get(id(task), 0) + 1
                        resubmitted += 1
                        again.append(task)
                        continue
                    cell, text = error_row(task, exc, time.perf_counter() - t0), None
                except Exception as exc:   # a cancelled task, a Ray error: this cell's error, not the run's
                    cell, text = error_row(task, exc, time.perf_counter() - t0), None
                write_trace_if_missing(Path(task.spec.out) / cell.trace, text)
                on_result(cell)
                done += 1
            submit()
        if limiter is not None:
            stats = limiter.stats()
    except BaseException:
        # Ctrl-C (or a failing on_result): start nothing more, cancel what runs, and say so by raising
        for ref in in_flight:
            try:
                ray.cancel(ref)
            except Exception:   # already finished or gone
                pass
        raise
    finally:
        for actor in [*pool, *([limiter.actor] if limiter is not None else [])]:
            try:
                ray.kill(actor)
            except Exception:   # already gone
                pass
    return {"cells": done, "processes": processes, "threads": threads, "limiter": stats, "resubmitted": resubmitted}


def _died(ray) -> tuple[type[BaseException], ...]:
    """The errors of a task whose process died under it (not the cell's own failure, which is its result)."""
    exc = ray.exceptions
    return tuple(c for c in (getattr(exc, n, None) for n in ("RayActorError", "WorkerCrashedError", "NodeDiedError"))
                 if isinstance(c, type))
