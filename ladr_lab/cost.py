"""Cost before running: the worst-case number of model calls of a ladder (`ladr-lab validate` prints it).

A step costs `nodes × (maxRounds + 1)` calls when it retrieves, `nodes` otherwise; a group the sum of its
branches; a call step `nodes ×` its child ladder's worst case one level deeper (0 past `maxDepth`).
Jumps make a control graph; the worst case is the costliest path of at most `executionBudget.maxSteps`
step executions (a loop with no maxSteps is unbounded).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .config.model import Ladder, Step

UNBOUNDED = float("inf")


@dataclass
class CostReport:
    """Per-step and whole-ladder worst-case model calls, next to the budget."""

    ladder: str
    per_step: list[tuple[str, float, str]] = field(default_factory=list)   # (step id, calls, formula)
    worst: float = 0
    max_llm_calls: int | None = None
    loops: bool = False

    @property
    def exceeds_budget(self) -> bool:
        """True when the worst case is more than executionBudget.maxLlmCalls allows."""
        return self.max_llm_calls is not None and self.worst > self.max_llm_calls

    def format(self) -> str:
        """The table `ladr-lab validate` prints."""
        def n(x: float) -> str:
            return "unbounded" if x == UNBOUNDED else str(int(x))
        lines = ["Worst-case model calls:"]
        width = max([len(s) for s, _, _ in self.per_step] + [4])
        for sid, calls, formula in self.per_step:
            lines.append(f"  {sid:<{width}}  {n(calls):>9}  {formula}")
        budget = "none" if self.max_llm_calls is None else str(self.max_llm_calls)
        lines.append(f"  {'ladder':<{width}}  {n(self.worst):>9}  "
                     + ("(through loops, as far as maxSteps allows) " if self.loops else "")
                     + f"vs executionBudget.maxLlmCalls = {budget}")
        if self.exceeds_budget:
            lines.append(f"warning: the worst case ({n(self.worst)}) exceeds executionBudget.maxLlmCalls "
                         f"({self.max_llm_calls}); the run would stop with status budget_exhausted")
        elif self.worst == UNBOUNDED:
            lines.append("warning: a loop with no executionBudget.maxSteps or maxLlmCalls can run without end")
        return "\n".join(lines)


def step_cost(step: Step, ladder: Ladder, depth: int = 0) -> tuple[float, str]:
    """Worst-case calls of one execution of a step, and the formula that gives it."""
    if step.type == "group":
        parts = [step_cost(c, ladder, depth)[0] for c in step.steps]
        return sum(parts), "sum of branches " + " + ".join(str(int(p)) if p != UNBOUNDED else "∞" for p in parts)
    if step.type == "call" and step.call is not None:
        if depth + 1 > step.call.max_depth:
            return 0, "maxDepth reached"
        child = ladder if step.call.ladder == "self" else _load_child(ladder, step.call.ladder)
        inner = ladder_worst(child, depth + 1) if child is not None else 0
        return step.nodes * inner, f"{step.nodes} × child ladder at depth {depth + 1}"
    if step.retrieve is not None:
        return step.nodes * (step.retrieve.max_rounds + 1), f"{step.nodes} × ({step.retrieve.max_rounds} + 1)"
    return step.nodes, f"{step.nodes} × 1"


def _load_child(ladder: Ladder, rel: str) -> Ladder | None:
    from .config import load_ladder
    try:
        return load_ladder(ladder.base_dir / rel)
    except Exception:  # validation of the child reports its own problems
        return None


def _control_graph(ladder: Ladder) -> tuple[list[set[int]], bool]:
    """Successors of each top-level step (next, and gate jump targets) and whether any edge goes back."""
    steps = ladder.steps
    index = {s.id: i for i, s in enumerate(steps)}
    succ: list[set[int]] = []
    for i, s in enumerate(steps):
        nxt = {i + 1}
        if s.gate:
            nxt |= {index[a.jump] for a in (s.gate.then, s.gate.else_) if a.jump in index}
        succ.append(nxt)
    loops = any(j <= i for i, ns in enumerate(succ) for j in ns)
    return succ, loops


def ladder_worst(ladder: Ladder, depth: int = 0) -> float:
    """The costliest path through the ladder's control graph within maxSteps."""
    steps = ladder.steps
    costs = [step_cost(s, ladder, depth)[0] for s in steps]
    succ, loops = _control_graph(ladder)
    max_steps = ladder.budget.max_steps
    if loops and max_steps is None:
        return UNBOUNDED
    horizon = len(steps)
    if max_steps is not None:
        horizon = max_steps if loops else min(horizon, max_steps)
    # best[i] = the costliest run of at most k step executions starting at step i, for k = 1..horizon
    best = [0.0] * (len(steps) + 1)
    for _ in range(horizon):
        best = [costs[i] + max(best[j] for j in succ[i]) for i in range(len(steps))] + [0.0]
    return best[0] if steps else 0


def cost_report(ladder: Ladder) -> CostReport:
    """The worst-case report of a validated ladder."""
    rep = CostReport(ladder=ladder.name, max_llm_calls=ladder.budget.max_llm_calls)
    for s in ladder.steps:
        calls, formula = step_cost(s, ladder)
        rep.per_step.append((s.id, calls, formula))
    rep.worst = ladder_worst(ladder)
    rep.loops = _control_graph(ladder)[1]
    return rep
