"""One node of a step: its fields, the retrieve rounds (one model call each), then its gate and writes."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..config.model import Action, Step
from ..errors import LadrError, ModelError, RunError
from ..models import CallInfo, Completion
from ..round.prompt import FORCED_SPAN, assemble_blocks, render_block, render_field
from ..round.records import SectionSpan
from ..round.verdict import judge
from ..trace import LlmCall, LlmCallFailed
from .calls import CallGen, CallRequest
from .executor import Executor
from .gates import decide
from .knowledge import request_context
from .retrieve import fetch
from .sources import resolve_field
from .state import NodeCtx, NodeOut, StepResult
from .writes import PlannedWrite

__all__ = ["NodeOutcome", "ask", "finish_node", "run_node"]


@dataclass
class NodeOutcome:
    """What a node hands its step: its output, the gate's action, and the writes it planned."""

    out: NodeOut
    action: Action | None = None
    writes: list[PlannedWrite] = field(default_factory=list)


def ask(x: Executor, info: CallInfo, messages: list[dict], step: Step, sections: tuple[SectionSpan, ...] | None = None
        ) -> CallGen[Completion]:
    """Yield one model call and return its Completion; a failed call is recorded and raised."""
    x.ledger.reserve_call()
    req = CallRequest.new(info, messages, x.model_for(step), sections)
    rid, comp = yield [req]
    assert rid == req.id
    if isinstance(comp, BaseException):
        # a failed call is not counted as made; the trace keeps what was asked and why it failed
        x.emit(LlmCallFailed(step=info.step, node=info.node, round=info.round, messages=messages,
                        error=f"{type(comp).__name__}: {comp}"))
        if isinstance(comp, ModelError) and comp.call is None:
            comp.call = info
        raise comp
    x.ledger.record(comp)
    return comp


def run_node(x: Executor, step: Step, node: int, own: StepResult) -> CallGen[NodeOutcome]:
    """One node: fields, the retrieve rounds, then the gate and the planned writes."""
    ctx = NodeCtx(step.id, node, step.nodes, own=own)
    # each field and each round's retrieved block is rendered once; later rounds reuse the text
    blocks = [render_field(f.name, resolve_field(f, ctx, x.state, x.store, x.ladder.knobs, x.limits.entry_chars))
              for f in step.fields]
    parts = [SectionSpan("field", f.name, len(b)) for f, b in zip(step.fields, blocks, strict=True)]
    for source in x.knowledge.get(step.id, ()):
        # a knowledge source bound at run time: its evidence for the step's question is one more field
        episode, conversation = request_context(source, x.run_files, step.id, node, x.caller)
        evidence = source.evidence("\n\n".join(blocks), episode=episode, conversation=conversation)
        blocks.append(render_field(source.name, evidence))
        parts.append(SectionSpan("knowledge", source.name, len(blocks[-1])))
    r = step.retrieve
    folder = x.store.slate(r.slate).folder(r.folder) if r else None
    seen: set[str] = set()
    gate = step.gate
    out_schema = step.slate_write.match if step.slate_write else (gate.json_matches if gate else None)
    rounds_retrieved = 0
    round_ = 0
    while True:
        round_ += 1
        forced = r is not None and round_ > r.max_rounds
        messages = assemble_blocks(step.system_prompt, blocks, forced)
        sections = tuple(parts) + ((FORCED_SPAN,) if forced else ())
        info = CallInfo(step=step.id, node=node, nodes=step.nodes, round=round_, iteration=x.state.iteration,
                        depth=x.depth, caller=x.caller, forced_final=forced,
                        request_match=r.request_match if r and not forced else None,
                        retrieve_as=r.as_ if r else None, output_schema=out_schema,
                        equals=gate.equals if gate else None)
        comp = yield from ask(x, info, messages, step, sections)
        call = LlmCall(step=step.id, node=node, round=round_, iteration=x.state.iteration, messages=messages,
                       output=comp.text, forced_final=forced, request_match=None,
                       model=comp.model or getattr(x.model_for(step), "name", ""), tokens_in=comp.tokens_in,
                       tokens_out=comp.tokens_out, cost=comp.cost, latency=round(comp.latency, 6),
                       provenance=comp.provenance, sections=sections, constrained=comp.constrained,
                       finish_reason=comp.finish_reason, invocation_parameters=comp.invocation_parameters,
                       ttft=_rounded(comp.ttft, 4), prompt_tps=_rounded(comp.prompt_tps, 1),
                       gen_tps=_rounded(comp.gen_tps, 2))
        if r is None:
            x.emit(call)
            break
        if forced:
            x.emit(replace(call, request_match="final",
                           reason="forced final call: its output is final whatever it looks like"))
            break
        verdict = None
        try:
            verdict = judge(comp.text, r.request_match)
            if not verdict.is_request:
                x.emit(replace(call, request_match="final", reason=verdict.reason, verdict=verdict.judgement))
                break
            assert folder is not None                   # a retrieving step's folder (r is not None here)
            entries = fetch(folder, verdict.request or {}, seen, verdict.top_k, x.limits)
        except Exception as exc:
            # every model output reaches the trace, above all the one whose handling failed
            x.emit(replace(call, request_match=None if verdict is None else "retrieval",
                           reason=None if verdict is None else verdict.reason,
                           request=None if verdict is None else verdict.request,
                           verdict=None if verdict is None else verdict.judgement,
                           error=f"{type(exc).__name__}: {exc}"))
            if isinstance(exc, LadrError) and not isinstance(exc, RunError):
                raise RunError(f'Step "{step.id}" node {node} round {round_}: {exc}', step.id, r.path, node=node,
                               call=info) from exc
            if isinstance(exc, RunError) and exc.call is None:
                exc.call = info
            raise
        rounds_retrieved += 1
        blocks.append(render_block(r.as_, rounds_retrieved, entries))
        parts.append(SectionSpan("retrieved", f"{r.as_} {rounds_retrieved}", len(blocks[-1])))
        x.emit(replace(call, request_match="retrieval", reason=verdict.reason, request=verdict.request,
                       top_k=verdict.top_k, fetched=tuple(e.fetched for e in entries if e.recorded), verdict=verdict.judgement))
    return finish_node(x, step, ctx, comp.text)


def _rounded(value: float | None, digits: int) -> float | None:
    """A measured speed or time as the trace keeps it (None when it was not measured)."""
    return None if value is None else round(float(value), digits)


def finish_node(x: Executor, step: Step, ctx: NodeCtx, output: str) -> NodeOutcome:
    """After the node's output is final: its gate and writes (planned, applied by the step)."""
    ctx.output = output
    action, writes = decide(x, step, ctx, output) if (step.gate or step.slate_write) else (None, [])
    survived = action is None or action.kind not in ("prune", "abort")
    return NodeOutcome(NodeOut(ctx.node, output, survived), action, writes)
