"""The span tree of a trace, in plain Python: run → step → node → round (the model call) → fetch, with the
gates, writes and child runs (`call` steps) under their node; no OpenTelemetry is imported here.

Times come from the events' `t` (seconds since the run began) plus `start` (the run's wall-clock start): a
round ends at its event's `t` and began `latency` seconds before (not before its step began, nor before the
node's previous round ended); a node spans its children; a step spans its `step_start` to its `step_end`, and a
group's inner steps nest under the group's step. Attribute names are OpenInference's and OpenTelemetry GenAI's where they
have one, ladr_lab's own under `ladr.` (docs/otel.md has the table).

A fetch span's documents carry their content as the model read it: the trace does not store it twice, so it is read
back from the prompt of the node's next call, where the round's `<as> <k>:` block shows it (`round/grammar.py`). A
round whose documents reached no prompt (the run stopped first) has none. A round's span id may be given
(`ids`, keyed by `round_key`): a live export chose it before the model call, so that spans made during the call (an
instrumented litellm's) have the round as their parent.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..round.grammar import ParsedEntry, norm_path, parse_prompt
from ..round.records import Fetched
from ..trace import (
    Call,
    Event,
    Gate,
    InternalFailure,
    LlmCall,
    LlmCallFailed,
    RunEnd,
    RunStart,
    StepEnd,
    StepStart,
    Write,
)
from ..trace.providers import provider_of

__all__ = ["CONTENT", "KIND", "MAX_DOCUMENTS", "PREFIX", "RoundKey", "SpanPlan", "plan_spans", "provider_of",
           "round_key"]

PREFIX = "ladr."
KIND = "openinference.span.kind"
CONTENT = ".document.content"    # the suffix of a document's content attribute (export.py caps and hides it)
MAX_DOCUMENTS = 32          # retrieval.documents.I.* entries a fetch span carries; ladr.fetched.count is the true number
AttrValue = str | bool | int | float | list[str]
RoundKey = tuple[tuple[str, ...], str, int, int, int]
# the statuses whose entry delivered text to the prompt: their content is the document's
_DELIVERED = ("fetched", "listed")


def round_key(caller: tuple[str, ...], step: str, iteration: int, node: int, round_: int) -> RoundKey:
    """Which round a span is: (callers, step, loop iteration, node, round), as a `CallInfo` and an `llm_call` say."""
    return (tuple(caller), step, int(iteration), int(node), int(round_))


@dataclass
class SpanPlan:
    """One span to be made: its name, parent (an index into the plan, or None), times (epoch seconds),
    attributes, events (name, time, attributes) and whether it ended in error."""

    name: str
    parent: int | None
    start: float
    end: float
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    events: list[tuple[str, float, dict[str, AttrValue]]] = field(default_factory=list)
    error: str | None = None
    span_id: int | None = None      # chosen before the span is made (a live round's), else the tracer's own

    def widen(self, start: float, end: float) -> None:
        """Stretch the span to cover [start, end]."""
        self.start, self.end = min(self.start, start), max(self.end, end)


class _Planner:
    """Walks the events once, opening spans as they are first needed (a parent always before its children)."""

    def __init__(self, start: float, ids: dict[RoundKey, int] | None = None) -> None:
        self.t0 = start
        self.ids = ids or {}
        self.retrievals: dict[int, int] = {}    # node span -> retrieval rounds so far (the k of its `<as> <k>:` blocks)
        # node span -> its fetch spans whose documents' content the node's next prompt shows: (span, k, entries)
        self.unread: dict[int, list[tuple[int, int, tuple[Fetched, ...]]]] = {}
        self.spans: list[SpanPlan] = []
        self.run: int | None = None
        self.steps: dict[tuple, int] = {}       # (caller, step) -> the open step span
        self.nodes: dict[tuple, int] = {}       # (caller, step, iteration, node) -> node span
        self.calls: dict[tuple, int] = {}       # (caller, step, node) -> the open `call` span (a child run)
        self.groups: dict[tuple, list[int]] = {}  # caller -> the open `group` step spans, innermost last
        self.last_end: dict[int, float] = {}    # node span -> when its latest round (or fetch) ended
        self.model = ""                         # the run's model name (run_start), for a round's provider

    def add(self, plan: SpanPlan) -> int:
        self.spans.append(plan)
        if plan.parent is not None:
            self._widen_up(plan.parent, plan.start, plan.end)
        return len(self.spans) - 1

    def _widen_up(self, i: int | None, start: float, end: float) -> None:
        while i is not None:
            self.spans[i].widen(start, end)
            i = self.spans[i].parent

    def at(self, e: Event) -> float:
        return self.t0 + (e.t or 0.0)

    def run_span(self, e: Event) -> int:
        if self.run is None:
            self.run = self.add(SpanPlan("run", None, self.at(e), self.at(e), {KIND: "CHAIN"}))
        return self.run

    def scope(self, e: Event) -> int:
        """The span a step of this event's run hangs under: the run, or the `call` span of a child run."""
        if not e.caller:
            return self.run_span(e)
        step, _, node = e.caller[-1].rpartition("/")
        key = (e.caller[:-1], step, int(node) if node.isdigit() else 1)
        if key not in self.calls:
            parent = self.node(e.caller[:-1], step, None, key[2], e)
            self.calls[key] = self.add(SpanPlan(f"call {step}", parent, self.at(e), self.at(e), {KIND: "CHAIN"}))
        return self.calls[key]

    def step(self, caller: tuple, step: str, e: Event) -> int:
        key = (caller, step)
        if key not in self.steps:          # an event of a step whose step_start the trace lacks
            self.steps[key] = self.add(SpanPlan(f"step {step}", self.scope(e), self.at(e), self.at(e),
                                                {KIND: "CHAIN", PREFIX + "step": step}))
        return self.steps[key]

    def node(self, caller: tuple, step: str, iteration: int | None, node: int, e: Event) -> int:
        parent = self.step(caller, step, e)
        if iteration is None:
            iteration = int(self.spans[parent].attributes.get(PREFIX + "iteration", 1))  # type: ignore[arg-type]
        key = (caller, step, iteration, node)
        if key not in self.nodes:
            self.nodes[key] = self.add(SpanPlan(f"node {step}/{node}", parent, self.at(e), self.at(e),
                                                {KIND: "CHAIN", PREFIX + "step": step, PREFIX + "node": node,
                                                 PREFIX + "iteration": iteration}))
        return self.nodes[key]

    def feed(self, e: Event) -> None:
        if isinstance(e, RunStart):
            i = self.run_span(e) if not e.caller else None
            if i is not None:
                self.spans[i].name = f"run {e.ladder}"
                self.spans[i].attributes.update(_run_start(e))
                self.model = e.model
        elif isinstance(e, StepStart):
            groups = self.groups.setdefault(e.caller, [])
            parent = groups[-1] if groups else self.scope(e)
            i = self.steps[(e.caller, e.step)] = self.add(SpanPlan(
                f"step {e.step}", parent, self.at(e), self.at(e),
                {KIND: "CHAIN", PREFIX + "step": e.step, PREFIX + "step.type": e.step_type,
                 PREFIX + "step.nodes": e.nodes, PREFIX + "iteration": e.iteration, **_depth(e)}))
            if e.step_type == "group":
                groups.append(i)
        elif isinstance(e, StepEnd):
            i = self.step(e.caller, e.step, e)
            self._widen_up(i, self.at(e), self.at(e))
            self.spans[i].attributes.update({PREFIX + "step.survivors": e.survivors,
                                             **({PREFIX + "step.jump": e.jump} if e.jump else {})})
            self.steps.pop((e.caller, e.step), None)
            groups = self.groups.get(e.caller, [])
            if i in groups:
                groups.remove(i)
        elif isinstance(e, LlmCall):
            self.round(e)
        elif isinstance(e, LlmCallFailed):
            parent = self.node(e.caller, e.step, None, e.node, e)
            self.read_documents(parent, e.messages, None)
            iteration = int(self.spans[parent].attributes.get(PREFIX + "iteration", 1))  # type: ignore[arg-type]
            attrs: dict[str, AttrValue] = {KIND: "LLM", PREFIX + "step": e.step, PREFIX + "node": e.node,
                                           PREFIX + "round": e.round, **_messages(e.messages),
                                           **_provider(provider_of(self.model))}
            i = self.add(SpanPlan(f"round {e.round}", parent, self.at(e), self.at(e), attrs,
                                  span_id=self.ids.get(round_key(e.caller, e.step, iteration, e.node, e.round))))
            self.spans[i].error = e.error
            self.last_end[parent] = max(self.last_end.get(parent, self.at(e)), self.at(e))
        elif isinstance(e, Gate):
            parent = self.node(e.caller, e.step, None, e.node, e)
            attrs = {KIND: "GUARDRAIL", **_where(e), PREFIX + "gate.condition": e.condition,
                                           PREFIX + "gate.matched": e.matched, PREFIX + "gate.branch": e.branch,
                                           PREFIX + "gate.action": e.action, PREFIX + "gate.reason": e.reason,
                                           PREFIX + "verdict.reason": e.reason,
                                           **({PREFIX + "gate.jump": e.jump} if e.jump else {}), **_verdict(e.verdict)}
            self.add(SpanPlan(f"gate {e.condition}", parent, self.at(e), self.at(e), attrs))
        elif isinstance(e, Write):
            parent = self.node(e.caller, e.step, None, e.node, e)
            attrs = {KIND: "CHAIN", **_where(e), PREFIX + "write.target": e.target, PREFIX + "write.policy": e.policy,
                     PREFIX + "write.mechanism": e.mechanism, PREFIX + "write.status": e.status,
                     **({PREFIX + "write.reason": e.reason} if e.reason else {}),
                     **({PREFIX + "write.chars": e.chars} if e.chars is not None else {}),
                     **({PREFIX + "write.branch": e.branch} if e.branch else {}), **_verdict(e.verdict)}
            self.add(SpanPlan(f"write {e.target}", parent, self.at(e), self.at(e), attrs))
        elif isinstance(e, Call):
            self.call(e)
        elif isinstance(e, RunEnd) and not e.caller:
            i = self.run_span(e)
            self._widen_up(i, self.at(e), self.at(e))
            attrs = {PREFIX + "run.status": e.status, PREFIX + "run.llm_calls": e.llm_calls,
                     PREFIX + "run.steps": e.steps, "output.value": e.output, "output.mime_type": "text/plain"}
            self.spans[i].attributes.update(attrs)
            if e.status == "error":
                self.spans[i].error = e.error or e.status
            elif e.error:
                self.spans[i].attributes[PREFIX + "run.error"] = e.error
        elif isinstance(e, InternalFailure):
            i = self.run_span(e)
            self.spans[i].events.append(("ladr.internal_error", self.at(e), {"exception.stacktrace": e.traceback}))

    def read_documents(self, node: int, messages: list, sections: Any) -> None:
        """Give the node's fetch spans still waiting for it their documents' content, read from this prompt."""
        waiting = self.unread.pop(node, None)
        if not waiting:
            return
        user = next((str(m.get("content") or "") for m in reversed(messages)
                     if isinstance(m, dict) and m.get("role") == "user"), "")
        blocks = _blocks_of(user, sections)
        for span, k, fetched in waiting:
            shown = blocks(k)
            if shown is not None:
                for j, content in enumerate(_contents(fetched[:MAX_DOCUMENTS], shown)):
                    if content is not None:
                        self.spans[span].attributes[f"retrieval.documents.{j}{CONTENT}"] = content

    def round(self, e: LlmCall) -> None:
        parent = self.node(e.caller, e.step, e.iteration, e.node, e)
        self.read_documents(parent, e.messages, e.sections)
        end = self.at(e)
        attrs: dict[str, AttrValue] = {
            KIND: "LLM", "llm.model_name": e.model, **_provider(provider_of(e.model) or provider_of(self.model)),
            "gen_ai.operation.name": "chat", "gen_ai.request.model": e.model,
            **_messages(e.messages),
            "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": e.output,
            "output.value": e.output, "output.mime_type": "text/plain",
            "llm.token_count.prompt": e.tokens_in, "llm.token_count.completion": e.tokens_out,
            "llm.token_count.total": e.tokens_in + e.tokens_out,
            "gen_ai.usage.input_tokens": e.tokens_in, "gen_ai.usage.output_tokens": e.tokens_out,
            "llm.cost.total": e.cost, PREFIX + "cost": e.cost, PREFIX + "latency": e.latency,
            PREFIX + "step": e.step, PREFIX + "node": e.node, PREFIX + "round": e.round,
            PREFIX + "iteration": e.iteration, PREFIX + "forced_final": e.forced_final,
            PREFIX + "verdict": e.request_match or "none", **_depth(e), **_verdict(e.verdict)}
        if e.finish_reason:
            attrs["llm.finish_reason"] = e.finish_reason
        if e.invocation_parameters is not None:
            attrs["llm.invocation_parameters"] = json.dumps(e.invocation_parameters, ensure_ascii=False, default=str)
        if e.reason:
            attrs[PREFIX + "verdict.reason"] = e.reason
        if e.provenance:
            attrs[PREFIX + "provenance"] = e.provenance
        if e.request is not None:
            attrs[PREFIX + "request"] = json.dumps(e.request, ensure_ascii=False, default=str)
        if e.fetched:
            attrs[PREFIX + "fetched.paths"] = [f.path for f in e.fetched]
        # a call began `latency` before its event, but not before its step, nor before the node's previous round ended
        step = self.spans[parent].parent
        floor = self.spans[step].start if step is not None else end
        floor = min(end, max(floor, self.last_end.get(parent, floor)))
        i = self.add(SpanPlan(f"round {e.round}", parent, max(floor, end - max(0.0, e.latency or 0.0)), end, attrs,
                              span_id=self.ids.get(round_key(e.caller, e.step, e.iteration, e.node, e.round))))
        self.last_end[parent] = end
        if e.error:
            self.spans[i].error = e.error
        elif e.request_match == "retrieval":      # the node's next prompt shows this round's block
            self.retrievals[parent] = self.retrievals.get(parent, 0) + 1
        if e.fetched:
            docs: dict[str, AttrValue] = {KIND: "RETRIEVER", "input.value": attrs[PREFIX + "request"],
                                          "input.mime_type": "application/json"} if e.request is not None else \
                {KIND: "RETRIEVER"}
            docs.update(_where(e))
            docs[PREFIX + "fetched.count"] = len(e.fetched)
            for j, f in enumerate(e.fetched[:MAX_DOCUMENTS]):
                docs[f"retrieval.documents.{j}.document.id"] = f.path
                docs[f"retrieval.documents.{j}.document.metadata"] = json.dumps(
                    {"mode": f.mode, "status": f.status, "chars": f.chars}, ensure_ascii=False)
                if f.score is not None:
                    docs[f"retrieval.documents.{j}.document.score"] = f.score
            docs.update({PREFIX + "fetched.paths": [f.path for f in e.fetched],
                         PREFIX + "fetched.modes": [f.mode for f in e.fetched],
                         PREFIX + "fetched.statuses": [f.status for f in e.fetched],
                         PREFIX + "fetched.chars": sum(f.chars for f in e.fetched)})
            fetch = self.add(SpanPlan("fetch", i, end, end, docs))
            if not e.error and e.request_match == "retrieval":
                self.unread.setdefault(parent, []).append((fetch, self.retrievals[parent], tuple(e.fetched)))

    def call(self, e: Call) -> None:
        key = (e.caller, e.step, e.node)
        if e.status == "started" and key not in self.calls:
            parent = self.node(e.caller, e.step, None, e.node, e)
            self.calls[key] = self.add(SpanPlan(f"call {e.ladder or e.step}", parent, self.at(e), self.at(e),
                                                {KIND: "CHAIN"}))
        i = self.calls.get(key)
        if i is None:                     # depth_limit: the child never ran
            parent = self.node(e.caller, e.step, None, e.node, e)
            i = self.add(SpanPlan(f"call {e.step}", parent, self.at(e), self.at(e), {KIND: "CHAIN"}))
        self._widen_up(i, self.at(e), self.at(e))
        attrs: dict[str, AttrValue] = {PREFIX + "call.status": e.status, PREFIX + "call.child_depth": e.child_depth,
                 **({PREFIX + "call.ladder": e.ladder} if e.ladder else {}),
                 **({"output.value": e.output} if e.output is not None else {}),
                 **({PREFIX + "call.reason": e.reason} if e.reason else {})}
        self.spans[i].attributes.update(attrs)
        if e.status == "error":
            self.spans[i].error = e.reason or "the child run ended in an error"
        if e.status not in ("started",):
            self.calls.pop(key, None)


def _run_start(e: RunStart) -> dict[str, AttrValue]:
    attrs: dict[str, AttrValue] = {PREFIX + "ladder": e.ladder, PREFIX + "model": e.model,
                                   "input.value": json.dumps(e.inputs, ensure_ascii=False, default=str),
                                   "input.mime_type": "application/json"}
    if e.run_id:
        attrs[PREFIX + "run.id"] = e.run_id
        attrs["session.id"] = e.run_id
    return attrs


def _where(e: Gate | Write | LlmCall) -> dict[str, AttrValue]:
    return {PREFIX + "step": e.step, PREFIX + "node": e.node}


def _depth(e: Event) -> dict[str, AttrValue]:
    return {PREFIX + "depth": e.depth, PREFIX + "caller": list(e.caller)} if e.depth else {}


def _messages(messages: list) -> dict[str, AttrValue]:
    """The messages as `llm.input_messages.*`, and `input.value` as the last user message only (not all again)."""
    attrs: dict[str, AttrValue] = {}
    last_user: str | None = None
    for i, m in enumerate(messages):
        if isinstance(m, dict):
            attrs[f"llm.input_messages.{i}.message.role"] = str(m.get("role") or "")
            attrs[f"llm.input_messages.{i}.message.content"] = str(m.get("content") or "")
            if m.get("role") == "user":
                last_user = str(m.get("content") or "")
    if last_user is not None:
        attrs["input.value"] = last_user
        attrs["input.mime_type"] = "text/plain"
    return attrs


def _provider(provider: str | None) -> dict[str, AttrValue]:
    return {"llm.provider": provider, "llm.system": provider, "gen_ai.system": provider} if provider else {}


def _verdict(v: Any) -> dict[str, AttrValue]:
    if v is None:
        return {}
    attrs: dict[str, AttrValue] = {PREFIX + "verdict.test": v.test, PREFIX + "verdict.matched": bool(v.matched)}
    for name in ("keyword", "extraction", "message"):
        value = getattr(v, name, None)
        if value:
            attrs[f"{PREFIX}verdict.{name}"] = str(value)
    return attrs


def _blocks_of(user: str, sections: Any) -> Callable[[int], tuple[ParsedEntry, ...] | None]:
    """A reader of the user message's `<as> <k>:` blocks (None: the prompt has no k-th). With the recorded sections
    (`[kind, name, chars]`, which the engine writes) only the block itself is parsed; without them (an old or a
    hand-written trace), the whole message, once."""
    spans: dict[int, tuple[str, str]] = {}
    try:
        pos = 0
        for kind, name, chars in sections or ():
            label, _, k = str(name).rpartition(" ")
            if kind == "retrieved" and k.isdigit():
                spans[int(k)] = (label, user[pos:pos + int(chars)])
            pos += int(chars) + 2         # the blocks are joined by a blank line (round/prompt.py's SEPARATOR)
    except (TypeError, ValueError):       # malformed sections: read the whole message
        spans = {}
    whole: list[tuple[tuple[ParsedEntry, ...], ...]] = []

    def block(k: int) -> tuple[ParsedEntry, ...] | None:
        if k in spans:
            label, text = spans[k]
            head, _, body = text.partition("\n")
            if head == f"{label} {k}:":     # parsed alone, as the first block of a message
                found = parse_prompt(f"{label} 1:\n{body}", label).blocks
                return found[0] if found else None
        if not whole:
            whole.append(parse_prompt(user).blocks)
        return whole[0][k - 1] if k <= len(whole[0]) else None

    return block


def _contents(fetched: tuple[Fetched, ...], shown: tuple[ParsedEntry, ...]) -> list[str | None]:
    """Each recorded entry's content as the prompt shows it (None: it delivered none), matched in order by path: an
    entry past the round's bound (`left_out`) is not shown, and the round's closing summary is shown, not recorded."""
    out: list[str | None] = []
    pos = 0
    for f in fetched:
        if f.status == "left_out":
            out.append(None)
            continue
        want = {norm_path(f.asked or f.path), norm_path(f.path)}
        j = next((i for i in range(pos, len(shown)) if shown[i].path in want), None)
        if j is None:
            out.append(None)
            continue
        pos = j + 1
        out.append(shown[j].content if f.status in _DELIVERED else None)
    return out


def plan_spans(events: Iterable[Event], start: float, ids: dict[RoundKey, int] | None = None) -> list[SpanPlan]:
    """The spans of a run's events, parents before children, timed from `start` (the run's epoch seconds); a round
    whose `round_key` is in `ids` gets that span id."""
    planner = _Planner(start, ids)
    for e in events:
        planner.feed(e)
    return planner.spans
