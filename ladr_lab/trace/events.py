"""Typed trace events: one frozen class per event type, with `to_dict()` / `from_dict()`.

The JSONL form is SPEC §9's contract: `{"type", "seq", "t", ...fields}` in a fixed key order. Each
class lists the fields it always has (written even when None, e.g. a gate's `jump`) and the ones it
may have (`_OPTIONAL`: written only when set). `depth` and `caller` close every event of a child
run (a `call` step's recursion) and are left out at the top level. Keys a reader does not know are
kept in `extra` and written back, so reading and rewriting a newer trace loses nothing.

    >>> e = Gate(step="verify", node=1, condition="equals", matched=True, branch="then",
    ...          action="continue", jump=None, reason="output equals 'OK'")
    >>> Event.from_dict(e.to_dict()) == e
    True
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..display import Displayable
from ..round.prompt import split_sections
from ..round.records import Fetched, Judgement, PromptSection, Record, SectionSpan, spans

__all__ = [
    "EVENT_TYPES", "Call", "Event", "Events", "Fetched", "Gate", "InternalFailure", "Judgement", "LlmCall", "LlmCallFailed",
    "PromptSection", "RunEnd",
    "RunStart", "StepEnd", "StepStart", "UnknownEvent", "Write",
]


@dataclass(frozen=True, kw_only=True, repr=False)
class Event(Displayable):
    """Base of every trace event: `seq` (0-based order) and `t` (seconds since the run began) are set
    when the trace records it; `depth` and `caller` locate an event of a child run."""

    TYPE: ClassVar[str] = ""
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    seq: int | None = None
    t: float | None = None
    depth: int = 0
    caller: tuple[str, ...] = ()     # "step/node" of each `call` step above this event, outermost first
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    _BASE: ClassVar[frozenset[str]] = frozenset({"seq", "t", "depth", "caller", "extra"})

    @property
    def type(self) -> str:
        """The event type, as written in the `type` key."""
        return self.TYPE

    @classmethod
    def own_fields(cls) -> tuple[str, ...]:
        """This type's fields in the order the trace writes them."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name not in cls._BASE)

    def _keep(self, name: str, value: Any) -> bool:
        return value is not None or name not in self._OPTIONAL

    def to_dict(self) -> dict:
        """The event as one JSONL line holds it, keys in the contract's order."""
        d: dict[str, Any] = {"type": self.type}
        if self.seq is not None:
            d["seq"] = self.seq
        if self.t is not None:
            d["t"] = self.t
        for name in self.own_fields():
            value = getattr(self, name)
            if self._keep(name, value):
                d[name] = _plain(value)
        if self.depth:
            d["depth"] = self.depth
        if self.caller:
            d["caller"] = list(self.caller)
        d.update(self.extra)
        return d

    @staticmethod
    def from_dict(data: Mapping[str, Any], position: int | None = None) -> Event:
        """The typed event of a dict (a JSONL line); an unknown type becomes an UnknownEvent.

        A field the line lacks (a hand-written or older trace with only SPEC §9's fields) takes a
        usable default: `seq` the line's `position` when given, node, round and iteration 1, a text "", a
        list or mapping empty; a count, a flag or a field that may be absent stays None (unknown)."""
        cls = EVENT_TYPES.get(str(data.get("type")), UnknownEvent)
        names = set(cls.own_fields()) | {"seq", "t", "depth", "caller"}
        kwargs: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for k, v in data.items():
            if k == "type":
                continue
            (kwargs if k in names else extra)[k] = v
        if cls is UnknownEvent:
            kwargs["event_type"] = str(data.get("type"))
        if "caller" in kwargs:
            kwargs["caller"] = tuple(kwargs["caller"] or ())
        if isinstance(kwargs.get("verdict"), Mapping):
            kwargs["verdict"] = Judgement.from_dict(kwargs["verdict"])
        if "fetched" in kwargs and kwargs["fetched"] is not None:
            kwargs["fetched"] = tuple(Fetched.from_dict(f) if isinstance(f, Mapping) else f
                                      for f in kwargs["fetched"])
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in kwargs and f.name not in cls._BASE
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        types = {f.name: f.type for f in dataclasses.fields(cls)}
        for name in missing:          # a trace written by hand or by an older ladr_lab may lack a field
            kwargs[name] = _missing(name, str(types[name]))
        if kwargs.get("iteration", 1) is None:
            kwargs["iteration"] = 1
        if kwargs.get("seq") is None and position is not None:
            kwargs["seq"] = position
        return cls(**kwargs, extra=extra)

    def get(self, name: str, default: Any = None) -> Any:
        """A field or an extra key by name (None-valued fields count as absent), for generic code."""
        value = getattr(self, name, None) if name in self.own_fields() or name in self._BASE else None
        if value is None:
            return self.extra.get(name, default)
        return value

    def __repr__(self) -> str:
        # compact: a model call's repr must not dump its whole prompt (see trace/story.py for the words)
        from .story import describe
        seq = f"#{self.seq} " if self.seq is not None else ""
        return f"{type(self).__name__}({seq}{describe(self).summary()})"

    def to_text(self) -> str:
        """The event as the round printer words it (several lines for a model call)."""
        from .story import describe
        return "\n".join(describe(self).text_lines()) or describe(self).headline()

    def to_html(self) -> str:
        """The event as a static HTML view (a model call with its prompt's sections collapsible)."""
        from .html import event_html
        return event_html(self)


_ONE = frozenset({"node", "round", "iteration"})
_EMPTY: dict[str, Any] = {"str": ""}     # a count or a flag a line lacks stays None: unknown, not 0 or False


def _missing(name: str, annotation: str) -> Any:
    """The default of a required field a trace line lacks (see `Event.from_dict`)."""
    if "None" in annotation:
        return None
    if name in _ONE:
        return 1
    if annotation == "list":
        return []
    if annotation == "dict":
        return {}
    return _EMPTY.get(annotation)


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, SectionSpan):
        return value.to_list()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True, kw_only=True, repr=False)
class RunStart(Event):
    """The run began: which ladder, which model, its inputs and budget, and when (`started_at`, epoch seconds)."""

    TYPE: ClassVar[str] = "run_start"
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"run_id", "started_at"})
    ladder: str
    model: str
    inputs: dict
    budget: dict
    run_id: str | None = None
    started_at: float | None = None      # wall clock when the run began; older traces lack it


@dataclass(frozen=True, kw_only=True, repr=False)
class StepStart(Event):
    """A step began (once per execution: a loop runs a step again in a new iteration)."""

    TYPE: ClassVar[str] = "step_start"
    step: str
    step_type: str
    nodes: int
    iteration: int = 1


@dataclass(frozen=True, kw_only=True, repr=False)
class LlmCall(Event):
    """One model call: the exact messages, the output, and how the runtime judged it.

    `request_match` is "retrieval" | "final" | None (no retrieve); `reason` says why. A retrieval
    carries the parsed `request`, `top_k` and the `fetched` entries. `error` is set when something
    after the call failed (the output is still here, since it is what one needs to debug that)."""

    TYPE: ClassVar[str] = "llm_call"
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"reason", "request", "top_k", "fetched", "error", "verdict",
                                                    "provenance", "sections", "constrained", "finish_reason",
                                                    "invocation_parameters", "ttft", "prompt_tps", "gen_tps"})
    step: str
    node: int
    round: int
    iteration: int
    messages: list
    output: str
    forced_final: bool
    request_match: str | None
    model: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    latency: float = 0.0
    reason: str | None = None
    request: dict | None = None
    top_k: int | None = None
    fetched: tuple[Fetched, ...] | None = None
    error: str | None = None
    verdict: Judgement | None = None
    provenance: str | None = None    # where the output came from: live | recorded | scripted | offline | edited | cached
    sections: tuple[SectionSpan, ...] | None = None   # the user message's parts, written [kind, name, chars]
    constrained: str | None = None   # decoding constrained by the model: request, answer (+json), grammar (models/constrain.py)
    finish_reason: str | None = None  # why a live model stopped (stop, length, ...), as its API said
    invocation_parameters: dict | None = None   # what a live call sent besides the messages, credentials left out
    # how fast the call went, where measured (models/base.py's Completion): seconds to the first token of a streamed
    # call, prompt tokens read per second, tokens generated per second
    ttft: float | None = None
    prompt_tps: float | None = None
    gen_tps: float | None = None

    def __post_init__(self) -> None:
        # a trace (or a caller) gives `[kind, name, chars]` lists: held as spans, written back as the same lists
        if isinstance(self.sections, (list, tuple)):
            try:
                object.__setattr__(self, "sections", spans(self.sections))
            except (TypeError, ValueError):   # a malformed hand-written line: kept as read, as before
                pass

    def _keep(self, name: str, value: Any) -> bool:
        if name == "top_k":          # written (null included) exactly when the call was a retrieval
            return self.request_match == "retrieval"
        return super()._keep(name, value)

    @property
    def prompt_chars(self) -> int:
        """Characters of every message's content."""
        return sum(len(m.get("content") or "") for m in self.messages if isinstance(m, dict))

    def prompt_sections(self) -> list[PromptSection]:
        """The prompt as named parts: the system prompt, each field, each retrieved block, the forced-final
        line (from `sections`; a trace without them gives the system and the whole user message)."""
        return split_sections(self.messages, self.sections)


@dataclass(frozen=True, kw_only=True, repr=False)
class LlmCallFailed(Event):
    """A model call that failed (not counted in llm_calls): what was asked and the error. A call stopped while it ran
    (`Run.cancel()`, the Stepper's Stop) is one with `cancelled: true`, the text it had written (`partial`) and the
    seconds it ran (`latency`); it stays pending, so the run's next call is the same one again."""

    TYPE: ClassVar[str] = "llm_error"
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"iteration", "cancelled", "partial", "latency"})
    step: str
    node: int
    round: int
    messages: list
    error: str
    iteration: int | None = None
    cancelled: bool | None = None
    partial: str | None = None
    latency: float | None = None


@dataclass(frozen=True, kw_only=True, repr=False)
class Gate(Event):
    """A node's `if:` decided: condition, matched or not, the branch and action taken, and why."""

    TYPE: ClassVar[str] = "gate"
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"verdict"})
    step: str
    node: int
    condition: str
    matched: bool
    branch: str
    action: str
    jump: str | None
    reason: str
    verdict: Judgement | None = None


@dataclass(frozen=True, kw_only=True, repr=False)
class Write(Event):
    """A write was made or skipped: target, policy, mechanism (slateWrite | gate) and why."""

    TYPE: ClassVar[str] = "write"
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"branch", "source", "chars", "skipped_items", "verdict"})
    step: str
    node: int
    mechanism: str
    branch: str | None = None
    target: str
    policy: str
    source: str | None = None
    status: str
    reason: str = ""
    chars: int | None = None
    skipped_items: list | None = None
    verdict: Judgement | None = None     # slateWrite: how the output was judged against `match`


@dataclass(frozen=True, kw_only=True, repr=False)
class Call(Event):
    """A `call` step's child run: started, ended (with its status and output), or `depth_limit`."""

    TYPE: ClassVar[str] = "call"
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"max_depth", "reason", "ladder", "output"})
    step: str
    node: int
    status: str
    child_depth: int
    max_depth: int | None = None
    reason: str | None = None
    ladder: str | None = None
    output: str | None = None


@dataclass(frozen=True, kw_only=True, repr=False)
class StepEnd(Event):
    """A step ended: how many nodes survived, and the jump it takes (if any)."""

    TYPE: ClassVar[str] = "step_end"
    step: str
    survivors: int
    nodes: int
    jump: str | None
    iteration: int = 1


@dataclass(frozen=True, kw_only=True, repr=False)
class RunEnd(Event):
    """The run ended: status, output, error, and the counts. Always the last event."""

    TYPE: ClassVar[str] = "run_end"
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"error_type", "error_step", "edited_calls"})
    status: str
    output: str
    error: str | None
    llm_calls: int
    steps: int
    error_type: str | None = None
    error_step: str | None = None
    edited_calls: int | None = None   # of llm_calls, the calls answered by hand (`Run.step(output=...)`)


@dataclass(frozen=True, kw_only=True, repr=False)
class InternalFailure(Event):
    """A bug of ladr_lab's own ended the run; the traceback is kept for the report."""

    TYPE: ClassVar[str] = "internal_error"
    traceback: str


@dataclass(frozen=True, kw_only=True, repr=False)
class UnknownEvent(Event):
    """An event of a type this version does not know (kept whole, written back as it was)."""

    event_type: str = "unknown"

    @property
    def type(self) -> str:
        """The event type read from the trace."""
        return self.event_type

    @classmethod
    def own_fields(cls) -> tuple[str, ...]:
        """No fields of its own: everything is in `extra`."""
        return ()


class Events(Displayable, list):
    """A list of events (what `Run.step()` returns) that displays as its rounds, gates and writes."""

    def __repr__(self) -> str:
        if len(self) <= 1:
            return f"Events([{', '.join(map(repr, self))}])"
        return "Events([\n  " + ",\n  ".join(map(repr, self)) + ",\n])"

    def to_text(self) -> str:
        """Each event as the round printer words it."""
        from .story import describe
        lines = [ln for e in self for ln in describe(e).text_lines()]
        return "\n".join(lines) if lines else f"{len(self)} event(s)"

    def to_html(self) -> str:
        """The events as a static HTML view: model calls with their prompts, gates, writes, the run's end."""
        from .html import events_html
        return events_html(self)


EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls for cls in (RunStart, StepStart, LlmCall, LlmCallFailed, Gate, Write, Call, StepEnd, RunEnd,
                              InternalFailure)
}
