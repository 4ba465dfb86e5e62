"""Gates (`if:` / `then:` / `else:`, SPEC §4) and the writes a node plans: what fires, and why."""
from __future__ import annotations

from ..config.model import Action, GateSpec, Step
from ..round.verdict import judge_equals, judge_json
from ..trace import Gate, Judgement
from .executor import Executor
from .sources import resolve_source
from .state import NodeCtx, join_survivors
from .writes import PlannedWrite, schema_matched_value

__all__ = ["decide", "gate_verdict", "metatag_type"]


def gate_verdict(gate: GateSpec, output: str) -> tuple[Judgement, str]:
    """Whether the output meets the gate's condition (as data), and why (as the trace says it)."""
    if gate.json_matches is None:
        return judge_equals(output, gate.equals or "")
    judgement, why, _ = judge_json(output, gate.json_matches, "jsonMatches")
    return judgement, why


def metatag_type(x: Executor, target) -> str | None:
    """The declared type of a write target's metatag (None for file contents)."""
    if target.metatag is None:
        return None
    decl = x.ladder.slate(target.slate)
    fspec = decl.folder(target.folder) if decl else None
    return fspec.effective_schema(target.file).get(target.metatag) if fspec else None


def decide(x: Executor, step: Step, ctx: NodeCtx, output: str) -> tuple[Action | None, list[PlannedWrite]]:
    """Run the node's gate (if any) and plan its writes: the branch's gated writes, then slateWrite
    unless the node prunes or aborts. Nothing is written yet: the step applies the plan."""
    planned: list[PlannedWrite] = []
    action = None
    gate = step.gate
    if gate is not None:
        judgement, why = gate_verdict(gate, output)
        ok = judgement.matched
        branch = "then" if ok else "else"
        action = gate.then if ok else gate.else_
        x.emit(Gate(step=step.id, node=ctx.node, condition=gate.condition, matched=ok, branch=branch,
                         action=action.kind, jump=action.jump, reason=why, verdict=judgement))
        ctx.branch = branch
        for w in action.writes:
            value = resolve_source(w.source, ctx, x.state, x.store, f"if.{branch} write")
            mtype = metatag_type(x, w.target)
            if w.target.metatag is None and w.on != "mergeByKey":
                value = join_survivors(value)
            planned.append(PlannedWrite(ctx.node, "gate", w.target, w.on, w.key, value, mtype, branch,
                                        w.source.describe()))
        ctx.branch = None
    sw = step.slate_write
    if sw is not None and (action is None or action.kind not in ("abort", "prune")):
        value, skip, verdict = schema_matched_value(output, sw.match, sw.field)
        planned.append(PlannedWrite(ctx.node, "slateWrite", sw.target, sw.on, sw.key, value,
                                    metatag_type(x, sw.target), skip=skip, verdict=verdict))
    return action, planned
