"""`Run`: one execution of a ladder, drivable one model call at a time (SPEC §1, §3, §4, §5).

A run is a tree of Python generators (see `calls.py`): every node of every step yields the model
calls it needs and receives their completions. So `Run.step()` advances exactly one model call,
`Run.run_step()` to the end of a step and `Run.run()` to the end, in the last case with the calls of
parallel nodes in flight at once (threads; a slow model does not serialize nodes). All bookkeeping
(prompts, fetches, gates, writes, trace events) happens on the caller's thread, in one place, so the
trace is the same whichever way the run is driven.

Watching and stopping a call (models/stream.py): with watchers (`Run(watch=...)`, `run.watchers`), each call gets a
`TokenStream` in its `CallInfo`, which a streaming model writes its text to as it comes; the watchers see it grow.
`cancel()` (from another thread: a Stop button) stops the calls in flight: each is recorded as an `llm_error` event
with `cancelled: true` and the text written so far (`partial`), and stays pending, so the next `step()` makes the
same call again; `run()` and `run_step()` return at once, the run still going.
"""
from __future__ import annotations

import dataclasses
import threading
import time
import traceback
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..config.model import Ladder
from ..display import Displayable
from ..errors import (
    BudgetExhausted,
    CallCancelled,
    LadrError,
    ModelError,
    NodeDependencyError,
    RunArgumentError,
    RunError,
    SourceResolutionError,
    short_repr,
)
from ..models import CallWatcher, Completion, Model, Recording, TokenStream, get_model
from ..models.cache import resolve_cache
from ..slate import SlateStore
from ..trace import Events, InternalFailure, LlmCall, LlmCallFailed, RunEnd, RunStart, StepStart, Trace
from .calls import CallGen, CallRequest
from .executor import Executor, Ledger
from .knowledge import KnowledgeSource
from .retrieve import Limits
from .state import RunState
from .steps import Abort, run_steps

__all__ = ["Run", "RunResult", "run_ladder"]


@dataclass
class RunResult(Displayable):
    """The summary of a finished run (the CLI's --json line): status, output, counts, and the error as data."""

    status: str
    output: str
    llm_calls: int
    error: str | None
    steps: int = 0
    cost: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    error_type: str | None = None       # the exception's class name, e.g. "NodeDependencyError"
    error_step: str | None = None       # the step that failed (or aborted)
    error_node: int | None = None
    error_path: list | None = None      # where in the ladder document the failing construct is declared
    error_where: str | None = None      # the same as FILE:LINE:COLUMN
    divergence: dict | None = None      # a replay's first divergence from its recording
    live_calls: int | None = None       # a replay's calls answered by a live model (0: all from the recording)
    edited_calls: int = 0               # of llm_calls, the calls answered by hand (forks: `Run.step(output=...)`)
    cached_calls: int = 0               # of llm_calls, the calls answered from the response cache (no model called)

    def to_dict(self) -> dict:
        """The summary as a JSON-ready dict."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_text(self) -> str:
        """Status, counts, the error and the output, as plain text."""
        from .html import result_text
        return result_text(self)

    def to_html(self) -> str:
        """The summary as a static HTML view."""
        from .html import result_html
        return result_html(self)

    def __call__(self) -> RunResult:
        # `Run.result` was a method before it became a property; calling it still works for one release.
        warnings.warn("Run.result is a property now: write run.result, not run.result()", DeprecationWarning,
                      stacklevel=2)
        return self


def _bound(name: str, value: object, default: int) -> int:
    """A character bound given to Run(): None means the default; anything but a whole number >= 1 is refused."""
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise RunArgumentError(f"{name} must be a whole number >= 1 or None for the default ({default:,}); "
                               f"got {short_repr(value)}")
    return value


class Run(Displayable):
    """One execution of a ladder, drivable one model call at a time (`step`), a step at a time (`run_step`)
    or to the end (`run`). As a notebook cell's value it shows its status, the next prompt and the rounds so far.

    `max_fetch_chars` bounds one retrieved entry (and a slateRead of a whole file), `max_round_chars` one
    round's retrieved block (see `engine.retrieve.Limits` for the defaults and why). `model_options` (temperature,
    seed, grammar, constrain, ...: models/options.py) go to the run's model when it is made from a name; a model
    that does not take one refuses it at once. A step's own `model:` is made without them. `otel=True` (or an
    `otel.OtelExport`) exports the run as OpenTelemetry spans when it ends (docs/otel.md; the `otel` extra).
    `cache` is the response cache of live models' answers (models/cache.py): True (the default) the per-user one,
    a folder, a `ResponseCache`, or False for none; a cached answer is marked `cached` in the trace. `watch` (a
    `CallWatcher` or several; `watchers` holds them) follows each model call's text as it is generated (a model that
    can stream writes it as it comes; another, all at once when it returns); `cancel()` stops the calls in flight."""

    def __init__(self, ladder: Ladder | str | Path, *, model: str | Model | None = None, input: str | None = None,
                 inputs: dict | None = None, slates: Mapping[str, str | Path] | None = None,
                 store: SlateStore | None = None, trace: Trace | None = None, trace_out: str | Path | None = None,
                 run_dir: str | Path | None = None, tracer=None, max_workers: int | None = None,
                 max_fetch_chars: int | None = None, max_round_chars: int | None = None,
                 knowledge: Mapping[str, Sequence[KnowledgeSource]] | None = None,
                 model_options: Mapping[str, Any] | None = None, otel: Any = False, cache: Any = True,
                 watch: CallWatcher | Iterable[CallWatcher] | None = None) -> None:
        defaults = Limits()
        self.limits = Limits(entry_chars=_bound("max_fetch_chars", max_fetch_chars, defaults.entry_chars),
                             round_chars=_bound("max_round_chars", max_round_chars, defaults.round_chars))
        self.ladder = ladder = Ladder.of(ladder)
        self.inputs = dict(inputs or {})
        if input is not None:
            self.inputs["context"] = input
        self.depth = 0
        self.run_id = uuid.uuid4().hex[:12]
        self.store = store or SlateStore()
        self._own_models: list[Model] = []
        model_spec = model if model is not None else (ladder.model or "offline")
        self.cache = resolve_cache(cache)
        self.model = get_model(model_spec, base_dir=ladder.base_dir, options=model_options, cache=self.cache)
        if not hasattr(model_spec, "complete"):
            self._own_models.append(self.model)
        self.trace = trace or Trace(trace_out)     # after the model: a model refused leaves no empty trace behind
        if not self.inputs and isinstance(self.model, Recording) and self.model.recorded_inputs:
            self.inputs = dict(self.model.recorded_inputs)   # a replay reuses the recorded inputs unless new ones are given
        if tracer is not None:
            self.trace.add_listener(tracer)
        self.otel = None
        if otel:        # True, or an OtelExport of the caller's: the run is exported as spans when it ends
            from ..otel import OtelExport
            self.otel = otel if isinstance(otel, OtelExport) else OtelExport()
            self.trace.add_listener(self.otel)
        self._bind_slates(slates or {})
        self.run_dir = Path(run_dir) if run_dir else None
        self.run_files = None
        if self.run_dir is not None:
            from ..runfiles import RunFilesWriter
            self.run_files = RunFilesWriter(self.run_dir)
            self.trace.add_listener(self.run_files)
        self.knowledge = {sid: list(sources) for sid, sources in (knowledge or {}).items()}
        unbound = sorted(set(self.knowledge) - {s.id for s in ladder.all_steps()})
        if unbound:
            raise RunError(f'knowledge is bound to unknown step(s): {", ".join(unbound)}')
        self.max_workers = max_workers
        self.ledger = Ledger(ladder.budget.max_llm_calls, ladder.budget.max_steps)
        self._models: dict[str, Model] = {}
        self.state = RunState(self.inputs)
        self._x = Executor(ladder, store=self.store, trace=self.trace, ledger=self.ledger, model=self.model,
                           models=self._models, state=self.state, limits=self.limits, knowledge=self.knowledge,
                           run_files=self.run_files, cache=self.cache)
        self.status = "pending"
        self.output = ""
        self.error: str | None = None
        self.error_step: str | None = None
        self.exception: BaseException | None = None
        self._gen: CallGen[None] | None = None
        self._pending: list[CallRequest] = []
        self._started = False
        self.stopped_before: str | None = None     # the breakpoint step `run(stop_before=...)` stopped at
        self.watchers: list[CallWatcher] = [] if watch is None else \
            [watch] if isinstance(watch, CallWatcher) else list(watch)
        self._inflight: dict[int, TokenStream] = {}        # request id -> its stream, while the call runs
        self._inflight_lock = threading.Lock()
        self._stopping = False                              # cancel() asked run()/run_step() to return

    # ---- setup -----------------------------------------------------------------------------------------
    def _bind_slates(self, overrides: Mapping[str, str | Path]) -> None:
        # a slate that could only be read as empty is a RunError here, before the first call (binding.py);
        # `slate_notes` says which slates and folders do not exist yet (`ladr-lab run` prints them)
        from .binding import bind_slates
        self.slate_notes: list[str] = bind_slates(self.ladder, self.store, overrides)

    # ---- public driving API ----------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        """True once the run has ended (whatever its status)."""
        return self._started and self._gen is None

    @property
    def pending(self) -> list[CallRequest]:
        """The model calls the run is waiting on (starting the run if needed), oldest first: the order `step()`
        makes them (round k of every node before round k+1 of any), so `pending[0]` is the next `step()`'s
        call; empty when done."""
        self._start()
        return sorted(self._pending, key=lambda r: r.id)

    @property
    def llm_calls(self) -> int:
        """Model calls made so far (children included)."""
        return self.ledger.llm_calls

    def step(self, output: str | None = None, *, call: CallRequest | None = None, node: int | None = None) -> Events:
        """Make exactly one model call and return the events it produced: `pending[0]` (the oldest pending
        call), or the call chosen with `call` (an item of `run.pending`) or `node` (that node's oldest one).

        With `output`, the chosen call is answered by that text instead of the model (a fork): it is judged
        and delivered like a model output, and the trace marks it `provenance: "edited"`."""
        self._stopping = False
        return self._step(output, call=call, node=node)

    def _step(self, output: str | None = None, *, call: CallRequest | None = None, node: int | None = None) -> Events:
        """`step()`, without clearing a `cancel()` that came before it (run() and run_step() step through this)."""
        mark = len(self.trace.events)
        self.stopped_before = None
        self._start()
        if call is not None and node is not None:
            raise RunError("step(): choose the call with either call= or node=, not both")
        if self.done and (output is not None or call is not None or node is not None):
            raise RunError(f"the run has ended (status {self.status}): there is no pending call to "
                           + ("answer" if output is not None else "make"))
        if self._pending:
            req = call if call is not None else self._choose(node)
            if req not in self._pending:
                raise RunError(f"call #{req.id} ({req.step} node {req.node} round {req.round}) is not pending")
            if output is None:
                self._answer(req, self._execute(req))
            else:
                text = str(output)
                self._deliver(req, Completion.of_text(text, req.messages, model="edited", provenance="edited"))
        return Events(self.trace.events[mark:])

    def _choose(self, node: int | None) -> CallRequest:
        """The oldest pending call (of `node`, when given)."""
        pending = self.pending
        if node is None:
            return pending[0]
        found = next((r for r in pending if r.node == node), None)
        if found is None:
            waiting = ", ".join(f"{r.step} node {r.node} round {r.round}" for r in pending)
            raise RunError(f"there is no pending call of node {node} (pending: {waiting})")
        return found

    def run_step(self) -> Events:
        """Advance until the step now executing has ended; return the events produced (they end with the
        next step's `step_start` when the run goes on, since the run then waits at that step's first call)."""
        mark = len(self.trace.events)
        self._stopping = False
        self._start()
        while not self.done:
            self._step()
            if self._stopping or any(e.type in ("step_end", "run_end") and e.depth == self.depth
                                     for e in self.trace.events[mark:]):
                break
        return Events(self.trace.events[mark:])

    def run(self, stop_before: str | Iterable[str] = ()) -> RunResult:
        """Run to the end, with parallel nodes' calls in flight at once; return the summary.

        `stop_before` (step ids, or one id) are breakpoints, as LangGraph's interrupt_before: the run stops
        where its next call would be the first call of a step named there (at recursion depth 0; a group's
        steps count) and `stopped_before` names that step. Run again to go on: a step already started does
        not stop the run, so the next `run()` continues past it (to the next breakpoint or the end)."""
        stops = {stop_before} if isinstance(stop_before, str) else set(stop_before)
        mark = len(self.trace.events)
        self.stopped_before = None
        self._stopping = False
        self._start()
        if self._stop(stops, mark):
            return self.result
        workers = self.max_workers or max(1, int(getattr(self.model, "max_concurrency", 1) or 1))
        if workers <= 1:
            while not self.done and not self._stopping:
                seen = len(self.trace.events)
                self._step()
                if self._stopping or self._stop(stops, seen):
                    break
            return self.result
        inflight: dict[int, Future] = {}
        stopping = False
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ladr-node") as pool:
            while not self.done:
                for req in self._pending:
                    if req.id not in inflight and not stopping and not self._stopping:
                        inflight[req.id] = pool.submit(self._execute, req)
                if not inflight:
                    break
                finished, _ = wait(list(inflight.values()), return_when=FIRST_COMPLETED)
                for rid in sorted(r for r, f in inflight.items() if f in finished):
                    fut = inflight.pop(rid)
                    pending = next((r for r in self._pending if r.id == rid), None)
                    if pending is not None and not self.done:
                        seen = len(self.trace.events)
                        self._answer(pending, fut.result())
                        # a step starts when no call is in flight (a group's steps start together), so a
                        # breakpoint stops here exactly where stepping one call at a time would
                        stopping = self._stopping or self._stop(stops, seen) or stopping
        return self.result

    def cancel(self) -> int:
        """Stop the model calls in flight (from another thread: the Stepper's Stop): each is recorded as a cancelled
        `llm_error` and stays pending, and `run()`/`run_step()` return once it has stopped, the run still going (the
        next `step()` makes the same call again). A model that streams stops at its next piece of text; one that does
        not is stopped when it returns (its answer is dropped). Returns how many calls were in flight."""
        self._stopping = True
        with self._inflight_lock:
            streams = list(self._inflight.values())
        for s in streams:
            s.cancel()
        return len(streams)

    @property
    def in_flight(self) -> list[TokenStream]:
        """The streams of the calls being made now (oldest first)."""
        with self._inflight_lock:
            return [self._inflight[k] for k in sorted(self._inflight)]

    def _stop(self, stops: set[str], mark: int) -> bool:
        """Whether a breakpoint step started among the events since `mark` (the run still going): if so,
        `stopped_before` names it (the last one, when several started)."""
        if not stops or self.done:
            return False
        hit = [e.step for e in self.trace.events[mark:] if isinstance(e, StepStart) and e.step in stops and not e.depth]
        if hit:
            self.stopped_before = hit[-1]
        return bool(hit)

    @property
    def result(self) -> RunResult:
        """The summary of the run as it stands."""
        exc = self.exception
        info = exc.to_dict() if isinstance(exc, RunError) else {}
        path = info.get("path") or None
        call = getattr(exc, "call", None)      # a ModelError (or a RunError) keeps the call it failed in
        node = info.get("node") if info.get("node") is not None else getattr(call, "node", None)
        step = self.error_step if self.error_step is not None else getattr(call, "step", None)
        return RunResult(status=self.status, output=self.output, llm_calls=self.ledger.llm_calls, error=self.error,
                         steps=self.ledger.steps, cost=round(self.ledger.cost, 8), tokens_in=self.ledger.tokens_in,
                         tokens_out=self.ledger.tokens_out, error_type=type(exc).__name__ if exc else None,
                         error_step=step, error_node=node, error_path=path,
                         error_where=self.ladder.where(tuple(path)) if path else None,
                         divergence=self._divergence(),
                         live_calls=self._live_calls(), edited_calls=self._edited_calls(),
                         cached_calls=self._cached_calls())

    def _edited_calls(self) -> int:
        """Calls answered by hand (forks): they count in llm_calls and maxLlmCalls, as the calls they replace."""
        return sum(1 for e in self.trace.events if isinstance(e, LlmCall) and e.provenance == "edited")

    def _cached_calls(self) -> int:
        """Calls answered from the response cache: they count in llm_calls and maxLlmCalls, no model was called."""
        return sum(1 for e in self.trace.events if isinstance(e, LlmCall) and e.provenance == "cached")

    def _divergence(self) -> dict | None:
        """A replay's (a `Recording`'s) first divergence; once the run has ended, recorded calls it never asked
        for are one. None when the run is no replay."""
        if not isinstance(self.model, Recording):
            return None
        found = self.model.divergence
        if found is None and self.done:
            found = self.model.unserved_divergence()
        return found

    def _live_calls(self) -> int | None:
        """A replay's (a `Recording`'s) calls not answered from the recording (None when the run is no replay):
        every call answered by another model counts, a hand-typed answer (a fork) or a cached one does not."""
        if not isinstance(self.model, Recording):
            return None
        return sum(1 for e in self.trace.events
                   if isinstance(e, LlmCall) and e.provenance not in ("recorded", "edited", "cached")
                   and e.error is None)

    def __repr__(self) -> str:
        nxt = ""
        pending = getattr(self, "_pending", None)         # a repr may be asked for while __init__ fails
        if getattr(self, "_started", False) and pending:
            r = min(pending, key=lambda q: q.id)        # pending[0], without sorting them all
            nxt = f", next: {r.step} node {r.node} round {r.round}"
        ledger = getattr(self, "ledger", None)
        calls = ledger.llm_calls if ledger is not None else 0
        return (f"<Run of {self.ladder.name}: {getattr(self, 'status', 'pending')}, "
                f"{calls} model call{'s' if calls != 1 else ''}{nxt}>")

    def to_text(self) -> str:
        """Status, the next call, and the rounds so far, as plain text."""
        from .html import run_text
        return run_text(self)

    def to_html(self) -> str:
        """Status, the next prompt (its sections collapsible) and the rounds so far, as a static HTML view.
        Showing a run does not start it: a run not yet started shows its ladder and inputs."""
        from .html import run_html
        return run_html(self)

    def close(self) -> None:
        """Release the models this run created: its own and those steps' `model:` made for themselves (a model
        passed in is the caller's to close)."""
        made = list(self._own_models) + [m for m in self._models.values() if m not in self._own_models]
        self._own_models = []
        self._models.clear()          # a step that runs again after close() makes its model again
        for m in made:
            close = getattr(m, "close", None)
            if close is not None:
                close()

    # ---- the machinery -------------------------------------------------------------------------------
    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        self.status = "running"
        self._gen = self._top()
        self._advance(None)

    def _advance(self, value) -> None:
        assert self._gen is not None
        try:
            self._pending = self._gen.send(value) if value is not None else next(self._gen)
        except StopIteration:
            self._pending = []
            self._gen = None

    def _deliver(self, req: CallRequest, comp: Completion | BaseException) -> None:
        self._advance((req.id, comp))

    def _answer(self, req: CallRequest, result: Completion | BaseException) -> None:
        """Deliver a call's result to its node; a cancelled call is recorded and stays pending instead."""
        if not isinstance(result, CallCancelled):
            self._deliver(req, result)
            return
        self._stopping = True
        info = req.info
        event = LlmCallFailed(step=info.step, node=info.node, round=info.round, messages=req.messages,
                              error=f"{type(result).__name__}: {result}", cancelled=True, partial=result.partial,
                              iteration=info.iteration, latency=result.latency)
        if info.depth:
            event = dataclasses.replace(event, depth=info.depth, caller=info.caller)
        self.trace.emit(event)

    def _execute(self, req: CallRequest) -> Completion | BaseException:
        """Make one model call (inside its round's span when the run is exported: docs/otel.md); errors are returned,
        not raised, so they surface inside the node."""
        if self.otel is not None:
            with self.otel.model_call(req.info):
                return self._call(req)
        return self._call(req)

    def _call(self, req: CallRequest) -> Completion | BaseException:
        """One model call. With watchers, the call streams to them (models/stream.py); a cancelled call returns
        CallCancelled, whatever the model did."""
        t0 = time.perf_counter()
        name = getattr(req.model, "name", "?")
        stream = TokenStream(req.info, self.watchers, model=name)
        info = dataclasses.replace(req.info, stream=stream) if self.watchers else req.info
        with self._inflight_lock:
            self._inflight[req.id] = stream
        if self._stopping:            # cancel() came between the run's check and this call: it stops this one too
            stream.cancel()
        result: Completion | BaseException
        try:
            stream.start()
            comp = req.model.complete(req.messages, call=info)
            if isinstance(comp, str):
                comp = Completion(text=comp)
            if not comp.latency:
                comp = dataclasses.replace(comp, latency=time.perf_counter() - t0)
            result = _timed(comp, stream) if self.watchers else comp
        except LadrError as exc:
            result = exc
        except Exception as exc:  # a model's own failure becomes a ModelError naming the model
            err = ModelError(f"model {name} failed: {type(exc).__name__}: {exc}")
            err.__cause__ = exc
            err.call = req.info
            result = err
        finally:
            with self._inflight_lock:
                self._inflight.pop(req.id, None)
        if stream.cancelled:          # stopped: whatever came back (an answer, an error its closed socket made)
            result = _cancelled(stream, result, time.perf_counter() - t0)
        elif isinstance(result, Completion) and self.watchers and not stream.text and result.text:
            stream.whole = True           # a model that does not stream: its whole answer at once
            stream.write(result.text)
        stream.end(result)
        return result

    def _top(self) -> CallGen[None]:
        """The whole run; never raises: every ending becomes a status and a run_end event."""
        x = self._x
        x.emit(RunStart(ladder=self.ladder.name, model=getattr(self.model, "name", "?"), inputs=self.inputs,
                        budget={"maxLlmCalls": self.ledger.max_llm_calls, "maxSteps": self.ledger.max_steps},
                        run_id=self.run_id, started_at=round(time.time(), 6)))
        try:
            last = yield from run_steps(x)
            self.status = "completed"
            self.output = "\n\n".join(last.survivors) if last else ""
        except Abort as exc:
            self._failed("aborted", exc, str(exc))
        except BudgetExhausted as exc:
            self._failed("budget_exhausted", exc, str(exc))
        except LadrError as exc:
            named = isinstance(exc, (NodeDependencyError, SourceResolutionError, ModelError))
            message = f"{type(exc).__name__}: {exc}" if named else str(exc)
            where = self.ladder.where(getattr(exc, "path", ()))
            self._failed("error", exc, message + (f" (declared at {where})" if where else ""))
        except Exception as exc:  # a bug of ours: keep the run's record whole and say so plainly
            self._failed("error", exc, f"internal error: {type(exc).__name__}: {exc}")
            x.emit(InternalFailure(traceback=traceback.format_exc()))
        x.emit(RunEnd(status=self.status, output=self.output, error=self.error, llm_calls=self.ledger.llm_calls,
                      steps=self.ledger.steps, error_type=type(self.exception).__name__ if self.exception else None,
                      error_step=self.error_step, edited_calls=self._edited_calls() or None))
        self.trace.close()
        self.close()

    def _failed(self, status: str, exc: BaseException, message: str) -> None:
        self.status, self.error, self.exception = status, message, exc
        self.error_step = getattr(exc, "step_id", None)
        if self.error_step is None:
            self.error_step = getattr(getattr(exc, "call", None), "step", None)
        if status != "error":
            self.output = "\n\n".join(self.state.previous.survivors) if self.state.previous else ""


def _timed(comp: Completion, stream: TokenStream) -> Completion:
    """The completion with what the stream measured, where the model said nothing: seconds to the first token, and
    tokens generated per second after it. Prompt speed is left to models that measure it (llama.cpp's counters, its
    server's `timings`): seen from here, a remote model's time to first token is mostly the network and its queue."""
    ttft = comp.ttft if comp.ttft is not None else stream.ttft
    gen_tps = comp.gen_tps
    if gen_tps is None and stream.first_at is not None and stream.last_at is not None:
        span = stream.last_at - stream.first_at
        if comp.tokens_out > 1 and stream.pieces > 1 and span > 0:
            gen_tps = (comp.tokens_out - 1) / span
    if (ttft, gen_tps) == (comp.ttft, comp.gen_tps):
        return comp
    return dataclasses.replace(comp, ttft=ttft, gen_tps=gen_tps)


def _cancelled(stream: TokenStream, result: Completion | BaseException, latency: float) -> CallCancelled:
    """The CallCancelled a stopped call ends as, carrying the text written before it stopped (`partial`)."""
    exc = result if isinstance(result, CallCancelled) else CallCancelled(stream.stopped_message())
    if not isinstance(result, CallCancelled) and isinstance(result, BaseException):
        exc.__cause__ = result
    exc.partial = stream.text
    exc.latency = round(latency, 6)
    exc.call = stream.info
    return exc


def run_ladder(ladder: Ladder, **kwargs) -> Run:
    """Create a Run, run it to the end and return it."""
    r = Run(ladder, **kwargs)
    r.run()
    return r
