"""One cell of an evaluation or an experiment: one ladder run on one input row, as a picklable `CellSpec` and the
function that runs it (`run_cell`) on a thread of the local pool or in a Ray worker alike.

A cell writes its trace to `<out>/<trace>` and returns its result row (status, output, calls, tokens, cost,
gate outcomes, writes, error, seconds); a failure of any kind is that row's status `error`, never an exception.
A re-judged cell (`replay` set) runs the ladder against another run's recorded outputs (`models.ReplayModel`):
the engine judges them with this ladder's schemas and no model is called, until the run asks for a call the
recording does not have; then `then` answers live, or (no `then`) the cell is `unsettled`.
"""
from __future__ import annotations

import re
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.model import Ladder
from ..errors import LadrError
from ..trace import Gate, LlmCall, Trace, Write

__all__ = ["CellSpec", "UNSETTLED", "run_cell", "run_pool", "safe_name"]

UNSETTLED = "unsettled"


def safe_name(rid: str) -> str:
    """A row id (or variant name) as a file name: letters, digits, '.', '_' and '-' only, and never `.` or `..`
    (a folder of its own, not the one above)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", rid)[:120] or "_"
    return "_" + name if set(name) == {"."} else name


@dataclass(frozen=True)
class CellSpec:
    """Everything one cell needs besides its ladder, picklable (a Ray task receives it)."""

    row: str
    pos: int
    fields: Mapping[str, Any]
    out: str                                   # the output folder
    trace: str                                 # the trace file, relative to `out`
    fingerprint: str
    slates: Mapping[str, str] = field(default_factory=dict)   # title -> folder, as bound
    isolate: tuple[str, ...] = ()              # titles copied to `<out>/<isolate_dir>/<title>` before the run
    isolate_dir: str = ""
    model: Any = None                          # a model name, a Model (local pool only), or None: the ladder's
    model_options: Mapping[str, Any] | None = None
    expected: tuple[str, ...] = ()             # the input columns the ladder reads
    max_fetch_chars: int | None = None
    max_round_chars: int | None = None
    variant: str | None = None
    replay: str | None = None                  # a recorded trace this cell re-judges (no model call)
    then: Any = None                           # who answers live after a re-judged cell's divergence (None: nobody)
    limit_key: str | None = None               # the provider a rate limiter counts this cell's live calls under


def _gates(trace: Trace) -> str:
    return "; ".join(f"{e.step}#{e.node}:{e.branch}→{e.action}" + (f"→{e.jump}" if e.jump else "")
                     for e in trace.events if isinstance(e, Gate))


def _bind(spec: CellSpec) -> dict[str, Path]:
    bound = {t: Path(p) for t, p in spec.slates.items()}
    for title in spec.isolate:
        if bound.get(title) is not None:
            copy = Path(spec.out) / spec.isolate_dir / safe_name(title)
            if copy.exists():
                shutil.rmtree(copy)
            if bound[title].is_dir():
                shutil.copytree(bound[title], copy, ignore=shutil.ignore_patterns(".ladr"))
            bound[title] = copy
    return bound


def _model(spec: CellSpec, ladder: Ladder, limiter):
    """The model this cell runs with, and whether the cell owns it (closes it afterwards)."""
    from ..models import get_model
    from ..models.limited import LimitedModel
    from ..models.replay import ReplayModel
    live = spec.then if spec.replay else spec.model
    owned = live is None or isinstance(live, str)
    if spec.replay and live is None:
        model = None
    else:
        model = get_model(live if live is not None else ladder.model, base_dir=ladder.base_dir,
                          options=spec.model_options if owned else None)
        if limiter is not None:
            model = LimitedModel(model, limiter, spec.limit_key or model.name, owns=owned)
            owned = True
    if spec.replay:    # closing a replay closes its live model: only when this cell made that model
        return ReplayModel(spec.replay, then=model), owned or model is None
    return model, owned


def run_cell(spec: CellSpec, ladder: Ladder, *, limiter=None) -> dict[str, Any]:
    """Run one cell and return its result row; the trace goes to `<out>/<trace>`."""
    from ..engine import Run
    t0 = time.perf_counter()
    row: dict[str, Any] = {"row": spec.row}
    if spec.variant is not None:
        row["variant"] = spec.variant
    row.update({f"input.{k}": v for k, v in spec.fields.items()})
    model = None
    owned = False
    try:
        lacks = [c for c in spec.expected if c not in spec.fields]
        if lacks:    # this row only (a JSONL line without the key): its own error, naming the columns
            raise LadrError(f"this row has no {', '.join(lacks)}: the ladder reads input column(s) "
                            f"{', '.join(spec.expected)}; this row has {', '.join(sorted(spec.fields)) or 'none'}")
        bound = _bind(spec)
        model, owned = _model(spec, ladder, limiter)
        run = Run(ladder, model=model, inputs=dict(spec.fields), slates=bound, trace_out=Path(spec.out) / spec.trace,
                  max_fetch_chars=spec.max_fetch_chars, max_round_chars=spec.max_round_chars)
        try:
            res = run.run()
        finally:       # an interrupt leaves the run unfinished: still close its trace file and models
            run.trace.close()
            run.close()
        row.update(status=res.status, output=res.output, llm_calls=res.llm_calls, tokens_in=res.tokens_in,
                   tokens_out=res.tokens_out, cost=res.cost, gates=_gates(run.trace),
                   writes=sum(1 for e in run.trace.events if isinstance(e, Write) and e.status == "written"),
                   latency=round(sum(e.latency or 0.0 for e in run.trace.events if isinstance(e, LlmCall)), 3),
                   error=res.error, error_type=res.error_type, error_step=res.error_step)
        if spec.replay:
            row["live_calls"] = res.live_calls or 0
            if res.error_type == "ReplayDivergence":
                # the edited judging sends the run where the recording has no output: only a model can say more
                row.update(status=UNSETTLED, error=f"re-judging needs a call the recording does not have: "
                                                   f"{res.error}")
    except Exception as exc:  # one cell's failure is that cell's result, never the whole batch's end
        row.update(status="error", output="", llm_calls=0, tokens_in=0, tokens_out=0, cost=0.0, gates="",
                   writes=0, latency=0.0, error=f"{type(exc).__name__}: {exc}", error_type=type(exc).__name__,
                   error_step=getattr(exc, "step_id", None))
    finally:
        if owned and model is not None:
            model.close()
    row.update(seconds=round(time.perf_counter() - t0, 3), trace=spec.trace, fingerprint=spec.fingerprint,
               pos=spec.pos)
    return row


def run_pool(fn, jobs, *, concurrency: int, on_result, name: str) -> None:
    """Run `fn(*job)` for every job on `concurrency` threads, calling `on_result(result)` in this thread as each
    finishes. On Ctrl-C (or any exception) no new job starts, the pool is left without waiting, and it re-raises:
    a job in flight records itself or not, as `fn` does."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=name)
    pending = {pool.submit(fn, *job) for job in jobs}
    interrupted = False
    try:
        while pending:
            ready, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in ready:
                on_result(fut.result())
    except BaseException:
        interrupted = True
        for fut in pending:
            fut.cancel()
        raise
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=True)
