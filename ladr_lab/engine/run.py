"""The executor as a state machine (SPEC §1, §3, §4, §5).

A run is a tree of Python generators: every node of every step is a generator that *yields the model
calls it needs* and receives their completions. Generators compose with `yield from` and `_parallel`,
so `Run.step()` can advance exactly one model call, `Run.run_step()` to the end of a step and `Run.run()`
to the end, in the last case with the calls of parallel nodes in flight at once (threads; a slow model
does not serialize nodes). All bookkeeping (prompts, fetches, gates, writes, trace events) happens on the
caller's thread, in one place, so the trace is the same whichever way the run is driven.
"""
from __future__ import annotations

import itertools
import threading
import time
import traceback
from collections.abc import Generator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.model import Action, Ladder, Step
from ..errors import (
    BudgetExhausted,
    LadrError,
    ModelError,
    NodeDependencyError,
    RunError,
    SourceResolutionError,
)
from ..jsonx import extract
from ..models import Completion, Model, get_model
from ..slate import SlateStore
from ..trace import Trace
from .prompt import assemble_blocks, render_block, render_field
from .retrieve import fetch, judge, schema_problem
from .sources import NodeCtx, NodeOut, StepResult, join_survivors, resolve_field, resolve_source
from .writes import schema_matched_value, write_value

_ids = itertools.count(1)


@dataclass
class CallRequest:
    """One model call the run is waiting for: who asks, the exact messages, and the hints."""

    id: int
    step: str
    node: int
    round: int
    messages: list[dict]
    hints: dict
    model: Model
    depth: int = 0


@dataclass
class _Shared:
    """What a run shares with its child runs: the budget counters, the store, the trace."""

    max_llm_calls: int | None
    max_steps: int | None
    llm_calls: int = 0
    reserved: int = 0
    steps: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reserve_call(self) -> None:
        with self.lock:
            if self.max_llm_calls is not None and self.reserved >= self.max_llm_calls:
                raise BudgetExhausted(f"executionBudget.maxLlmCalls ({self.max_llm_calls}) reached")
            self.reserved += 1

    def count_step(self, step_id: str) -> None:
        with self.lock:
            if self.max_steps is not None and self.steps >= self.max_steps:
                raise BudgetExhausted(f'executionBudget.maxSteps ({self.max_steps}) reached before step "{step_id}"',
                                      step_id)
            self.steps += 1


class _Abort(RunError):
    """A gate said abort."""


@dataclass
class _State:
    inputs: dict
    results: dict[str, StepResult] = field(default_factory=dict)
    previous: StepResult | None = None
    iteration: int = 1


@dataclass
class RunResult:
    """The summary of a finished run (the CLI's --json line)."""

    status: str
    output: str
    llm_calls: int
    error: str | None
    steps: int = 0
    cost: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0

    def to_dict(self) -> dict:
        """The summary as a JSON-ready dict."""
        return dict(self.__dict__)


def _parallel(gens: list[Generator]) -> Generator:
    """Advance several call-yielding generators side by side; return their results in order.

    Each generator yields the list of CallRequests it is waiting on and is sent `(request_id, completion)`.
    An error in one branch lets the others finish (their in-flight calls are not wasted) and is then raised.
    """
    pending: dict[int, list[CallRequest]] = {}
    results: list[Any] = [None] * len(gens)
    error: BaseException | None = None
    active: dict[int, Generator] = {}
    for i, g in enumerate(gens):
        try:
            pending[i] = next(g)
            active[i] = g
        except StopIteration as stop:
            results[i] = stop.value
        except LadrError as exc:
            error = error or exc
    while active:
        reqs = [r for i in sorted(active) for r in pending[i]]
        rid, comp = yield reqs
        owner = next(i for i in active if any(r.id == rid for r in pending[i]))
        try:
            pending[owner] = active[owner].send((rid, comp))
        except StopIteration as stop:
            results[owner] = stop.value
            del active[owner], pending[owner]
        except LadrError as exc:
            error = error or exc
            del active[owner], pending[owner]
    if error is not None:
        raise error
    return results


class Run:
    """One execution of a ladder, drivable one model call at a time (`step`), a step at a time (`run_step`)
    or to the end (`run`)."""

    def __init__(self, ladder: Ladder | str | Path, *, model: str | Model | None = None, input: str | None = None,
                 inputs: dict | None = None, slates: dict[str, str | Path] | None = None,
                 store: SlateStore | None = None, trace: Trace | None = None, trace_out: str | Path | None = None,
                 run_dir: str | Path | None = None, tracer=None, max_workers: int | None = None,
                 _parent: Run | None = None, _depth: int = 0) -> None:
        if isinstance(ladder, (str, Path)):
            from ..config import load_ladder
            ladder = load_ladder(ladder)
        self.ladder = ladder
        self.inputs = dict(inputs or {})
        if input is not None:
            self.inputs["context"] = input
        self.depth = _depth
        self.parent = _parent
        base = ladder.base_dir
        if _parent is not None:
            self.store = _parent.store
            self.trace = _parent.trace
            self._shared = _parent._shared
            self.model = _parent.model if model is None else get_model(model, base_dir=base)
            self._models = _parent._models
        else:
            self.store = store or SlateStore()
            self.trace = trace or Trace(trace_out)
            self._shared = _Shared(ladder.budget.max_llm_calls, ladder.budget.max_steps)
            self.model = get_model(model if model is not None else (ladder.model or "offline"), base_dir=base)
            self._models: dict[str, Model] = {}
        if tracer is not None:
            self.trace.add_listener(tracer)
        self._bind_slates(slates or {})
        self.run_dir = Path(run_dir) if run_dir else None
        if self.run_dir is not None and _parent is None:
            from ..runfiles import RunFilesWriter
            self.trace.add_listener(RunFilesWriter(self.run_dir))
        self.max_workers = max_workers
        self.state = _State(self.inputs)
        self.status = "pending"
        self.output = ""
        self.error: str | None = None
        self.error_step: str | None = None
        self._gen: Generator | None = None
        self._pending: list[CallRequest] = []
        self._started = False
        self._cost = 0.0
        self._tokens = [0, 0]

    # ---- setup -----------------------------------------------------------------------------------------
    def _bind_slates(self, overrides: dict[str, str | Path]) -> None:
        for decl in self.ladder.slates:
            if decl.title in self.store.titles() and decl.title not in overrides:
                continue  # a child run shares its parent's binding
            where = overrides.get(decl.title)
            if where is None:
                if decl.path is None:
                    raise RunError(f'slate "{decl.title}" has no path: declare path: in the ladder or bind it with '
                                   f'--slate "{decl.title}=DIR"')
                where = (self.ladder.base_dir / decl.path)
            self.store.bind(decl.title, Path(where), list(decl.folders))
        unknown = set(overrides) - {d.title for d in self.ladder.slates}
        if unknown and self.parent is None:
            raise RunError(f'--slate names undeclared slate(s): {", ".join(sorted(unknown))}')

    def _model_for(self, step: Step) -> Model:
        if step.model is None:
            return self.model
        if step.model not in self._models:
            self._models[step.model] = get_model(step.model, base_dir=self.ladder.base_dir)
        return self._models[step.model]

    # ---- public driving API ----------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        """True once the run has ended (whatever its status)."""
        return self._started and self._gen is None

    @property
    def pending(self) -> list[CallRequest]:
        """The model calls the run is waiting on (starting the run if needed); empty when done."""
        self._start()
        return list(self._pending)

    @property
    def llm_calls(self) -> int:
        """Model calls made so far (children included)."""
        return self._shared.llm_calls

    def step(self) -> list[dict]:
        """Make exactly one model call (the oldest pending one) and return the events it produced."""
        mark = len(self.trace.events)
        self._start()
        if self._pending:
            req = min(self._pending, key=lambda r: r.id)  # oldest first: round k of every node before round k+1
            self._deliver(req, self._execute(req))
        return self.trace.events[mark:]

    def run_step(self) -> list[dict]:
        """Advance until the step now executing has ended; return the events produced (they end with the
        next step's `step_start` when the run goes on, since the run then waits at that step's first call)."""
        mark = len(self.trace.events)
        self._start()
        while not self.done:
            self.step()
            if any(e["type"] in ("step_end", "run_end") and e.get("depth", 0) == self.depth
                   for e in self.trace.events[mark:]):
                break
        return self.trace.events[mark:]

    def run(self) -> RunResult:
        """Run to the end, with parallel nodes' calls in flight at once; return the summary."""
        self._start()
        workers = self.max_workers or max(1, int(getattr(self.model, "max_concurrency", 1) or 1))
        if workers <= 1:
            while not self.done:
                self.step()
            return self.result()
        inflight: dict[int, Future] = {}
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ladr-node") as pool:
            while not self.done:
                for req in self._pending:
                    if req.id not in inflight:
                        inflight[req.id] = pool.submit(self._execute, req)
                if not inflight:
                    break
                finished, _ = wait(list(inflight.values()), return_when=FIRST_COMPLETED)
                for rid in sorted(r for r, f in inflight.items() if f in finished):
                    fut = inflight.pop(rid)
                    req = next((r for r in self._pending if r.id == rid), None)
                    if req is not None and not self.done:
                        self._deliver(req, fut.result())
        return self.result()

    def result(self) -> RunResult:
        """The summary of the run as it stands."""
        return RunResult(status=self.status, output=self.output, llm_calls=self._shared.llm_calls,
                         error=self.error, steps=self._shared.steps, cost=round(self._cost, 8),
                         tokens_in=self._tokens[0], tokens_out=self._tokens[1])

    # ---- the machinery -------------------------------------------------------------------------------
    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        self.status = "running"
        self._gen = self._top()
        self._advance(None)

    def _advance(self, value) -> None:
        try:
            self._pending = self._gen.send(value) if value is not None else next(self._gen)
        except StopIteration:
            self._pending = []
            self._gen = None

    def _deliver(self, req: CallRequest, comp: Completion | BaseException) -> None:
        self._advance((req.id, comp))

    def _execute(self, req: CallRequest) -> Completion | BaseException:
        """Make one model call; errors are returned, not raised, so they surface inside the node."""
        t0 = time.perf_counter()
        try:
            comp = req.model.complete(req.messages, **req.hints)
            if isinstance(comp, str):
                comp = Completion(text=comp)
            if not comp.latency:
                comp = Completion(comp.text, comp.tokens_in, comp.tokens_out, comp.cost,
                                  time.perf_counter() - t0, comp.model)
            return comp
        except LadrError as exc:
            return exc
        except Exception as exc:  # a model's own failure becomes a ModelError naming the model
            return ModelError(f"model {getattr(req.model, 'name', '?')} failed: {type(exc).__name__}: {exc}")

    def _emit(self, event: dict) -> dict:
        if self.depth:
            event.setdefault("depth", self.depth)
        return self.trace.emit(event)

    def _top(self) -> Generator:
        """The whole run; never raises: every ending becomes a status and a run_end event."""
        self._emit({"type": "run_start", "ladder": self.ladder.name, "model": getattr(self.model, "name", "?"),
                    "inputs": self.inputs, "budget": {"maxLlmCalls": self._shared.max_llm_calls,
                                                      "maxSteps": self._shared.max_steps}})
        try:
            last = yield from self._steps()
            self.status = "completed"
            self.output = "\n\n".join(last.survivors) if last else ""
        except _Abort as exc:
            self.status, self.error, self.error_step = "aborted", str(exc), exc.step_id
            self.output = self._last_output()
        except BudgetExhausted as exc:
            self.status, self.error, self.error_step = "budget_exhausted", str(exc), exc.step_id
            self.output = self._last_output()
        except LadrError as exc:
            named = isinstance(exc, (NodeDependencyError, SourceResolutionError, ModelError))
            self.status, self.error = "error", (f"{type(exc).__name__}: {exc}" if named else str(exc))
            where = self.ladder.where(getattr(exc, "path", ()))
            if where:
                self.error += f" (declared at {where})"
            self.error_step = getattr(exc, "step_id", None)
        except Exception as exc:  # a bug of ours: keep the run's record whole and say so plainly
            self.status, self.error = "error", f"internal error: {type(exc).__name__}: {exc}"
            self._emit({"type": "internal_error", "traceback": traceback.format_exc()})
        self._emit({"type": "run_end", "status": self.status, "output": self.output, "error": self.error,
                    "llm_calls": self._shared.llm_calls, "steps": self._shared.steps})
        if self.parent is None:
            self.trace.close()
        return self.result()

    def _last_output(self) -> str:
        return "\n\n".join(self.state.previous.survivors) if self.state.previous else ""

    def _steps(self) -> Generator:
        steps = self.ladder.steps
        index = {s.id: i for i, s in enumerate(steps)}
        i = 0
        last: StepResult | None = None
        while i < len(steps):
            step = steps[i]
            res, jump = yield from self._exec_step(step)
            last = res
            if jump is not None:
                if jump not in index:
                    raise RunError(f'Step "{step.id}": jump target "{jump}" is not a top-level step', step.id)
                j = index[jump]
                if j <= i:
                    # jumping back starts a new loop iteration: {stepId: X} sees this iteration's outputs only
                    self.state.iteration += 1
                    self.state.results = {}
                i = j
            else:
                i += 1
        return last

    def _exec_step(self, step: Step) -> Generator:
        """Execute one step (all its nodes); return (StepResult, jump target or None)."""
        self._shared.count_step(step.id)
        self._emit({"type": "step_start", "step": step.id, "step_type": step.type, "nodes": step.nodes,
                    "iteration": self.state.iteration})
        res = StepResult(step.id, iteration=self.state.iteration)
        outcomes: list[tuple[NodeOut, Action | None]] = []
        if step.type == "normal":
            outcomes = yield from _parallel([self._node(step, k, res) for k in range(1, step.nodes + 1)])
        elif step.type == "sequential":
            for k in range(1, step.nodes + 1):
                out = yield from self._node(step, k, res)
                outcomes.append(out)
                res.nodes.append(out[0])
        elif step.type == "group":
            branches = yield from _parallel([self._branch(child) for child in step.steps])
            for br in branches:
                for n in br.nodes:
                    outcomes.append((NodeOut(len(outcomes) + 1, n.output, n.survived), None))
        elif step.type == "call":
            outcomes = yield from _parallel([self._call_node(step, k) for k in range(1, step.nodes + 1)])
        res.nodes = [o[0] for o in outcomes]
        jump = self._settle(step, outcomes)
        self.state.results[step.id] = res
        self.state.previous = res
        self._emit({"type": "step_end", "step": step.id, "survivors": len(res.survivors), "nodes": len(res.nodes),
                    "jump": jump, "iteration": self.state.iteration})
        return res, jump

    def _branch(self, step: Step) -> Generator:
        res, jump = yield from self._exec_step(step)
        if jump is not None:
            raise RunError(f'Step "{step.id}": a step inside a group cannot jump (to "{jump}")', step.id)
        return res

    def _settle(self, step: Step, outcomes: list[tuple[NodeOut, Action | None]]) -> str | None:
        """After all nodes: any abort aborts; jumping nodes must agree; survivors are the unpruned."""
        actions = [a for _, a in outcomes if a is not None]
        aborts = [o.node for o, a in outcomes if a is not None and a.kind == "abort"]
        if aborts:
            raise _Abort(f'Step "{step.id}": the gate said abort (node {", ".join(map(str, aborts))})', step.id)
        targets = {a.jump for a in actions if a.jump}
        if len(targets) > 1:
            raise RunError(f'Step "{step.id}": nodes disagree on the jump target ({", ".join(sorted(targets))})',
                           step.id)
        return targets.pop() if targets else None

    # ---- one node ------------------------------------------------------------------------------------
    def _ask(self, step: Step, node: int, round_: int, messages: list[dict], hints: dict) -> Generator:
        self._shared.reserve_call()
        req = CallRequest(next(_ids), step.id, node, round_, messages, hints, self._model_for(step), self.depth)
        rid, comp = yield [req]
        assert rid == req.id
        if isinstance(comp, BaseException):
            # a failed call is not counted as made; the trace keeps what was asked and why it failed
            self._emit({"type": "llm_error", "step": step.id, "node": node, "round": round_, "messages": messages,
                        "error": f"{type(comp).__name__}: {comp}"})
            raise comp
        with self._shared.lock:
            self._shared.llm_calls += 1
        self._cost += comp.cost or 0.0
        self._tokens[0] += comp.tokens_in or 0
        self._tokens[1] += comp.tokens_out or 0
        return comp

    def _node(self, step: Step, node: int, own: StepResult) -> Generator:
        """One node: fields, the retrieve rounds, then the gate and the writes; returns (NodeOut, Action)."""
        ctx = NodeCtx(step.id, node, step.nodes, own=own)
        # each field and each round's retrieved block is rendered once; later rounds reuse the text
        blocks = [render_field(f.name, resolve_field(f, ctx, self.state, self.store, self.ladder.knobs))
                  for f in step.fields]
        r = step.retrieve
        folder = self.store.slate(r.slate).folder(r.folder) if r else None
        retrieved: list[list[dict]] = []
        seen: set[str] = set()
        gate = step.gate
        out_schema = step.slate_write.match if step.slate_write else (gate.json_matches if gate else None)
        round_ = 0
        while True:
            round_ += 1
            forced = r is not None and round_ > r.max_rounds
            messages = assemble_blocks(step.system_prompt, blocks, forced)
            hints = {"step": step.id, "node": node, "nodes": step.nodes, "round": round_, "forced_final": forced,
                     "request_match": r.request_match if r and not forced else None,
                     "retrieve_as": r.as_ if r else None, "output_schema": out_schema,
                     "equals": gate.equals if gate else None, "depth": self.depth,
                     "iteration": self.state.iteration}
            comp = yield from self._ask(step, node, round_, messages, hints)
            ev = {"type": "llm_call", "step": step.id, "node": node, "round": round_, "iteration": self.state.iteration,
                  "messages": messages, "output": comp.text, "forced_final": forced, "request_match": None,
                  "model": comp.model or getattr(self._model_for(step), "name", ""), "tokens_in": comp.tokens_in,
                  "tokens_out": comp.tokens_out, "cost": comp.cost, "latency": round(comp.latency, 6)}
            if r is None:
                self._emit(ev)
                break
            if forced:
                ev.update(request_match="final", reason="forced final call: its output is final whatever it looks like")
                self._emit(ev)
                break
            verdict = judge(comp.text, r.request_match)
            if not verdict.is_request:
                ev.update(request_match="final", reason=verdict.reason)
                self._emit(ev)
                break
            entries = fetch(folder, verdict.request, seen, verdict.top_k)
            retrieved.append(entries)
            blocks.append(render_block(r.as_, len(retrieved), entries))
            ev.update(request_match="retrieval", reason=verdict.reason, request=verdict.request, top_k=verdict.top_k,
                      fetched=[{k: v for k, v in e.items() if k != "content"} for e in entries])
            self._emit(ev)
        output = comp.text
        ctx.output = output
        action = self._gate(step, ctx, output) if gate else None
        survived = action is None or action.kind not in ("prune", "abort")
        if step.slate_write is not None and (action is None or action.kind not in ("abort", "prune")):
            self._slate_write(step, ctx, output)
        return NodeOut(node, output, survived), action

    def _gate(self, step: Step, ctx: NodeCtx, output: str) -> Action:
        gate = step.gate
        if gate.json_matches is None:
            ok = output.strip() == gate.equals.strip()
            why = f"output {'equals' if ok else 'does not equal'} {gate.equals!r}"
        else:
            ext = extract(output)
            if not ext.found:
                ok, why = False, "no JSON found in the output"
            else:
                problem = schema_problem(ext.value, gate.json_matches)
                ok = problem is None
                why = f"JSON found ({ext.method}) and it matches jsonMatches" if ok else \
                    f"JSON found ({ext.method}) but it does not match jsonMatches: {problem}"
        branch = "then" if ok else "else"
        action = gate.then if ok else gate.else_
        self._emit({"type": "gate", "step": step.id, "node": ctx.node, "condition": gate.condition, "matched": ok,
                    "branch": branch, "action": action.kind, "jump": action.jump, "reason": why})
        ctx.branch = branch
        for w in action.writes:
            value = resolve_source(w.source, ctx, self.state, self.store, f"if.{branch} write")
            mtype = self._metatag_type(w.target)
            if w.target.metatag is None or mtype == "string":
                if w.on != "mergeByKey":
                    value = join_survivors(value)
            outcome = write_value(self.store, w.target, value, w.on, w.key, mtype)
            self._emit({"type": "write", "step": step.id, "node": ctx.node, "mechanism": "gate", "branch": branch,
                        "target": w.target.describe(), "policy": w.on, "source": w.source.describe(),
                        "status": outcome.status, "reason": outcome.reason, "chars": outcome.chars,
                        "skipped_items": outcome.skipped_items})
        ctx.branch = None
        return action

    def _metatag_type(self, target) -> str | None:
        if target.metatag is None:
            return None
        decl = self.ladder.slate(target.slate)
        fspec = decl.folder(target.folder) if decl else None
        return fspec.effective_schema(target.file).get(target.metatag) if fspec else None

    def _slate_write(self, step: Step, ctx: NodeCtx, output: str) -> None:
        sw = step.slate_write
        value, why = schema_matched_value(output, sw.match, sw.field)
        base = {"type": "write", "step": step.id, "node": ctx.node, "mechanism": "slateWrite",
                "target": sw.target.describe(), "policy": sw.on}
        if why is not None:
            self._emit({**base, "status": "skipped", "reason": why})
            return
        outcome = write_value(self.store, sw.target, value, sw.on, sw.key, self._metatag_type(sw.target))
        self._emit({**base, "status": outcome.status, "reason": outcome.reason, "chars": outcome.chars,
                    "skipped_items": outcome.skipped_items})

    # ---- recursion ---------------------------------------------------------------------------------
    def _call_node(self, step: Step, node: int) -> Generator:
        spec = step.call
        ctx = NodeCtx(step.id, node, step.nodes)
        text = join_survivors(resolve_source(spec.source, ctx, self.state, self.store, "call.input")) \
            if spec.source is not None else self.inputs.get("context", "")
        depth = self.depth + 1
        if depth > spec.max_depth:
            self._emit({"type": "call", "step": step.id, "node": node, "status": "depth_limit",
                        "child_depth": depth, "max_depth": spec.max_depth,
                        "reason": f"call.maxDepth ({spec.max_depth}) reached: the node passes its input through"})
            return NodeOut(node, text), None
        if spec.ladder == "self":
            child_ladder = self.ladder
        else:
            from ..config import load_ladder
            child_ladder = load_ladder(self.ladder.base_dir / spec.ladder, knobs=None)
        child = Run(child_ladder, input=text, _parent=self, _depth=depth)
        self._emit({"type": "call", "step": step.id, "node": node, "status": "started", "child_depth": depth,
                    "ladder": child_ladder.name})
        yield from child._steps_as_child()
        self._emit({"type": "call", "step": step.id, "node": node, "status": child.status, "child_depth": depth,
                    "output": child.output})
        if child.status == "aborted":
            raise _Abort(child.error or f'Step "{step.id}": the child run aborted', step.id)
        if child.status != "completed":
            raise RunError(child.error or f'Step "{step.id}": the child run ended with {child.status}', step.id)
        return NodeOut(node, child.output), None

    def _steps_as_child(self) -> Generator:
        """Run this child's steps inside the parent's generator tree; errors end the child, not the parent."""
        self._started = True
        self.status = "running"
        try:
            last = yield from self._steps()
            self.status, self.output = "completed", ("\n\n".join(last.survivors) if last else "")
        except _Abort as exc:
            self.status, self.error = "aborted", str(exc)
        except BudgetExhausted:
            raise  # the budget is shared: exhausting it ends the whole run
        except NodeDependencyError as exc:
            self.status, self.error = "error", str(exc)
        except RunError as exc:
            self.status, self.error = "error", str(exc)


def run_ladder(ladder: Ladder, **kwargs) -> Run:
    """Create a Run, run it to the end and return it."""
    r = Run(ladder, **kwargs)
    r.run()
    return r

