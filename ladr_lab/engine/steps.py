"""Steps: the four step types, settling a step (aborts, jumps, survivors, its writes), jumps and loops,
and `call` steps' child runs (SPEC §1, §4)."""
from __future__ import annotations

from ..config.model import Step
from ..errors import BudgetExhausted, RunError
from ..trace import Call, StepEnd, StepStart, Write
from .calls import CallGen, parallel
from .executor import Executor
from .node import NodeOutcome, finish_node, run_node
from .sources import check_dependencies, resolve_source
from .state import NodeCtx, NodeOut, StepResult, join_survivors
from .writes import PlannedWrite, write_value

__all__ = ["Abort", "exec_step", "run_child", "run_steps", "settle"]


class Abort(RunError):
    """A gate said abort."""


def run_steps(x: Executor) -> CallGen[StepResult | None]:
    """Execute the ladder's top-level steps in order, following jumps; return the last step's result."""
    steps = x.ladder.steps
    index = {s.id: i for i, s in enumerate(steps)}
    i = 0
    last: StepResult | None = None
    while i < len(steps):
        step = steps[i]
        res, jump = yield from exec_step(x, step)
        last = res
        if jump is not None:
            if jump not in index:
                raise RunError(f'Step "{step.id}": jump target "{jump}" is not a top-level step', step.id)
            j = index[jump]
            if j <= i:
                # jumping back starts a new loop iteration: {stepId: X} sees this iteration's outputs only
                x.state.iteration += 1
                x.state.results = {}
            i = j
        else:
            i += 1
    return last


def exec_step(x: Executor, step: Step) -> CallGen[tuple[StepResult, str | None]]:
    """Execute one step (all its nodes); return (StepResult, jump target or None)."""
    x.ledger.count_step(step.id)
    x.emit(StepStart(step=step.id, step_type=step.type, nodes=step.nodes, iteration=x.state.iteration))
    check_dependencies(step, x.state)
    res = StepResult(step.id, iteration=x.state.iteration)
    outcomes: list[NodeOutcome] = []
    if step.type == "normal":
        outcomes = yield from parallel(run_node(x, step, k, res) for k in range(1, step.nodes + 1))
    elif step.type == "sequential":
        for k in range(1, step.nodes + 1):
            outcome = yield from run_node(x, step, k, res)
            outcomes.append(outcome)
            res.nodes.append(outcome.out)
    elif step.type == "group":
        base = dict(x.state.results)
        views = [x.state.branch() for _ in step.steps]
        branches = yield from parallel([_branch(x.with_state(v), child) for v, child in zip(views, step.steps, strict=True)])
        for view in views:
            x.state.adopt(view, base)
        for br in branches:
            for n in br.nodes:
                outcomes.append(NodeOutcome(NodeOut(len(outcomes) + 1, n.output, n.survived)))
    elif step.type == "call":
        outcomes = yield from parallel(_call_node(x, step, k) for k in range(1, step.nodes + 1))
    res.nodes = [o.out for o in outcomes]
    jump = settle(x, step, outcomes)
    x.state.results[step.id] = res
    x.state.previous = res
    x.emit(StepEnd(step=step.id, survivors=len(res.survivors), nodes=len(res.nodes), jump=jump,
                   iteration=x.state.iteration))
    return res, jump


def _branch(x: Executor, step: Step) -> CallGen[StepResult]:
    res, jump = yield from exec_step(x, step)
    if jump is not None:
        raise RunError(f'Step "{step.id}": a step inside a group cannot jump (to "{jump}")', step.id)
    return res


def settle(x: Executor, step: Step, outcomes: list[NodeOutcome]) -> str | None:
    """After all nodes: any abort aborts (and none of the step's writes fire); otherwise the planned
    writes are applied in node order; jumping nodes must agree; survivors are the unpruned."""
    aborts = [o.out.node for o in outcomes if o.action is not None and o.action.kind == "abort"]
    planned = sorted((w for o in outcomes for w in o.writes), key=lambda w: w.node)
    if aborts:
        nodes = ", ".join(map(str, aborts))
        for w in planned:
            _record(x, step, w, "skipped", f"the step aborted (node {nodes}): its writes only fire if it does not")
        raise Abort(f'Step "{step.id}": the gate said abort (node {nodes})', step.id)
    for w in planned:
        _apply(x, step, w)
    targets = {o.action.jump for o in outcomes if o.action is not None and o.action.jump}
    if len(targets) > 1:
        raise RunError(f'Step "{step.id}": nodes disagree on the jump target ({", ".join(sorted(targets))})',
                       step.id)
    return targets.pop() if targets else None


def _apply(x: Executor, step: Step, w: PlannedWrite) -> None:
    if w.skip is not None:
        _record(x, step, w, "skipped", w.skip)
        return
    outcome = write_value(x.store, w.target, w.value, w.policy, w.key, w.metatag_type)
    _record(x, step, w, outcome.status, outcome.reason, outcome.chars, outcome.skipped_items)


def _record(x: Executor, step: Step, w: PlannedWrite, status: str, reason: str, chars: int | None = None,
            skipped_items: list | None = None) -> None:
    x.emit(Write(step=step.id, node=w.node, mechanism=w.mechanism, branch=w.branch, target=w.target.describe(),
                 policy=w.policy, source=w.source, status=status, reason=reason, chars=chars,
                 skipped_items=skipped_items, verdict=w.verdict))


def _call_node(x: Executor, step: Step, node: int) -> CallGen[NodeOutcome]:
    """One node of a `call` step: a child run on the node's input; then the step's gate and writes."""
    spec = step.call
    assert spec is not None   # the loader gives every call step its call:
    ctx = NodeCtx(step.id, node, step.nodes)
    text = join_survivors(resolve_source(spec.source, ctx, x.state, x.store, "call.input", x.limits.entry_chars)) \
        if spec.source is not None else x.state.inputs.get("context", "")
    depth = x.depth + 1
    if depth > spec.max_depth:
        x.emit(Call(step=step.id, node=node, status="depth_limit", child_depth=depth, max_depth=spec.max_depth,
                    reason=f"call.maxDepth ({spec.max_depth}) reached: the node passes its input through"))
        return finish_node(x, step, ctx, text)
    if spec.ladder == "self":
        child_ladder = x.ladder
    else:
        from ..config import load_ladder
        child_ladder = load_ladder(x.ladder.base_dir / spec.ladder, knobs=None)
    child = x.child(child_ladder, text, f"{step.id}/{node}")
    x.emit(Call(step=step.id, node=node, status="started", child_depth=depth, ladder=child_ladder.name))
    status, output, error = yield from run_child(child)
    x.emit(Call(step=step.id, node=node, status=status, child_depth=depth, output=output))
    if status == "aborted":
        raise Abort(error or f'Step "{step.id}": the child run aborted', step.id, node=node)
    if status != "completed":
        raise RunError(error or f'Step "{step.id}": the child run ended with {status}', step.id, node=node)
    return finish_node(x, step, ctx, output)


def run_child(x: Executor) -> CallGen[tuple[str, str, str | None]]:
    """Run a child's steps inside the parent's generator tree: (status, output, error). Errors end the
    child, not the parent; exhausting the shared budget ends the whole run."""
    try:
        last = yield from run_steps(x)
    except Abort as exc:
        return "aborted", "", str(exc)
    except BudgetExhausted:
        raise
    except RunError as exc:
        return "error", "", str(exc)
    return "completed", ("\n\n".join(last.survivors) if last else ""), None
