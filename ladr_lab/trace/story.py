"""The one description of a run's events that every view renders: from typed events to stories of rounds,
gates, writes and steps (the outline of steps, loop iterations, nodes and rounds is `trace/outline.py`).

The command line's round printer (`cli/printer.py`), the static HTML views (`trace/html.py`) and the notebook
widgets (`widgets/`) all render these objects; none of them reads an event's fields to decide what to say.
What a round is called, its tag (retrieval, final, forced final, answer), why it was judged so, the deciding
schema keyword and paths, the parsed request by mode, the fetched entries, tokens, cost, latency and
provenance, the prompt's sections: all of it is decided here once. `text_lines()` is the plain-text form
(what `ladr-lab run` prints); `trace/html.py` holds the HTML form.

    >>> from ladr_lab.trace import Gate
    >>> describe(Gate(step="v", node=1, condition="equals", matched=True, branch="then", action="continue",
    ...               jump=None, reason="output equals 'OK'")).headline()
    "gate v#1: equals → then (continue); output equals 'OK'"
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..round.records import SectionSpan
from ..round.vocabulary import MODES
from .events import (
    Call,
    Event,
    Fetched,
    Gate,
    Judgement,
    LlmCall,
    LlmCallFailed,
    PromptSection,
    RunEnd,
    RunStart,
    StepEnd,
    StepStart,
    Write,
)

__all__ = [
    "CallStory", "EndStory", "ErrorStory", "FetchRow", "GateStory", "OtherStory",
    "RoundStory", "StartStory", "StepStory", "Story", "VerdictStory", "WriteStory", "describe", "round_tag", "speed_bits",
]

OUTPUT_CLIP = 600          # characters of an output the text form prints (as `ladr-lab run` always has)


def _short(text: str, n: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _clip(text: str, n: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= n else text[:n] + f" … [{len(text) - n} more chars]"


def round_tag(e: LlmCall) -> str:
    """How a call was taken: "retrieval", "final", "forced final", or "answer" (a step without retrieve)."""
    return "forced final" if e.forced_final else (e.request_match or "answer")


@dataclass(frozen=True, kw_only=True)
class VerdictStory(Judgement):
    """How an output was judged, told: a recorded Judgement (test, matched or not, extraction rule, form, and
    for a schema failure the deciding keyword with its schema and instance paths) with its words."""

    @classmethod
    def of(cls, j: Judgement | None) -> VerdictStory | None:
        """The story of a recorded Judgement (None stays None)."""
        if j is None:
            return None
        return cls(**{k: getattr(j, k) for k in Judgement._ORDER})

    @property
    def deciding(self) -> str | None:
        """`maxItems at /properties/request/properties/files (instance /request/files)`, for a schema failure."""
        if not self.keyword:
            return None
        return f"`{self.keyword}` at {self.schema_path or '/'} (instance {self.instance_path or '/'})"

    def text(self) -> str:
        """`requestMatch: match (fence, wrapped)` or `requestMatch: no match — `type` at /… (instance /…)`."""
        how = ", ".join(x for x in (self.extraction, self.form) if x)
        head = f"{self.test}: {'match' if self.matched else 'no match'}" + (f" ({how})" if how else "")
        if not self.extraction and not self.matched and self.test != "equals":
            head += " (no JSON found)"
        return head + (f" — {self.deciding}" if self.deciding else "")


@dataclass(frozen=True)
class FetchRow:
    """One retrieved entry as shown: path (and the path as asked), mode, status, size and remarks."""

    path: str
    mode: str
    status: str
    chars: int
    detail: str                 # "(1,234 chars)  (cut: 60,000 bytes)  — note", as the text form prints it
    asked: str | None = None
    note: str | None = None
    score: float | None = None
    truncated: bool = False
    total_bytes: int | None = None

    @classmethod
    def of(cls, f: Fetched) -> FetchRow:
        """The row of one recorded entry."""
        detail = ((f"  ({f.chars} chars)" if f.chars else "")
                  + (f"  (cut: {f.total_bytes:,} bytes)" if f.truncated and f.total_bytes is not None else
                     ("  (cut)" if f.truncated else ""))
                  + (f"  (score {f.score:.3f})" if f.score is not None else "")
                  + (f"  — {f.note}" if f.note else ""))
        return cls(f.path, f.mode, f.status, f.chars or 0, detail, f.asked, f.note, f.score, bool(f.truncated),
                   f.total_bytes)

    def text(self) -> str:
        """`fetched             files      core.md  (120 chars)`."""
        return f"{self.status:<19} {self.mode:<10} {self.path}" + self.detail


class Story:
    """Base of every description: the event it describes, its kind, and its text forms."""

    kind: str = "event"
    event: Event

    @property
    def seq(self) -> int | None:
        """The event's number in the trace."""
        return self.event.seq

    @property
    def depth(self) -> int:
        """Recursion depth (0 at the top; a `call` step's child run is 1 deeper)."""
        return self.event.depth

    def headline(self) -> str:
        """One line saying what happened."""
        return self.kind

    def summary(self) -> str:
        """At most a short line (what an event's `repr` shows)."""
        return _short(self.headline(), 160)

    def text_lines(self) -> list[str]:
        """The plain-text form, one string a line (the first is the headline)."""
        return [self.headline()]


@dataclass(frozen=True)
class RoundStory(Story):
    """One model call: where (label), how it was taken (tag) and why, the verdict, the parsed request by mode,
    the fetched entries, the output, tokens, cost, latency, provenance and the prompt's sections."""

    event: LlmCall
    label: str
    tag: str
    why: str | None
    verdict: VerdictStory | None
    request: tuple[tuple[str, Any], ...]
    top_k: int | None
    fetched: tuple[FetchRow, ...]
    output: str
    error: str | None
    tokens_in: int
    tokens_out: int
    cost: float
    latency: float
    provenance: str | None
    model: str
    prompt_chars: int
    sections: tuple[SectionSpan, ...]              # (kind, name, chars) in prompt order
    kind: str = "round"

    @property
    def step(self) -> str:
        """The step id."""
        return self.event.step

    @property
    def node(self) -> int:
        """The node number."""
        return self.event.node

    @property
    def round(self) -> int:
        """The round within the node's execution of the step."""
        return self.event.round

    @property
    def iteration(self) -> int:
        """The loop iteration."""
        return self.event.iteration or 1

    def prompt_sections(self) -> list[PromptSection]:
        """The prompt's sections with their text (read from the event when asked: prompts can be large)."""
        return self.event.prompt_sections()

    def stats(self) -> str:
        """`tokens 1,200 → 35 · $0.0003 · 0.42 s · offline (offline)`."""
        bits = [f"tokens {self.tokens_in:,} → {self.tokens_out:,}", f"prompt {self.prompt_chars:,} chars"]
        if self.cost:
            bits.append(f"${self.cost:.4f}" if self.cost >= 0.0001 else f"${self.cost:.2e}")
        if self.latency:
            bits.append(f"{self.latency:.2f} s")
        bits += speed_bits(self.event)
        who = self.model + (f" ({self.provenance})" if self.provenance and self.provenance != self.model else "")
        if who.strip():
            bits.append(who)
        return " · ".join(bits)

    def request_text(self) -> str:
        """The parsed request, mode by mode: `files ["a.md"]; glob "x/*.md"; topK 3`."""
        bits = [f"{m} {json.dumps(v, ensure_ascii=False)}" for m, v in self.request]
        if self.top_k is not None:
            bits.append(f"topK {self.top_k}")
        return "; ".join(bits)

    def headline(self) -> str:
        return f"── {self.label} → {self.tag}"

    def summary(self) -> str:
        bits = [f"{self.label} → {self.tag}", f"output {_short(self.output, 48)!r} ({len(self.output):,} chars)",
                f"prompt {self.prompt_chars:,} chars"]
        if self.fetched:
            bits.append(f"{len(self.fetched)} fetched")
        if self.error:
            bits.append(f"error {_short(self.error, 60)!r}")
        return ", ".join(bits)

    def text_lines(self, output_chars: int = OUTPUT_CLIP) -> list[str]:
        lines = [self.headline()]
        lines += ["   │ " + ln for ln in _clip(self.output, output_chars).splitlines() or [""]]
        if self.why:
            lines.append(f"   why: {self.why}")
        if self.verdict is not None and self.verdict.deciding and self.verdict.deciding not in (self.why or ""):
            lines.append(f"   deciding: {self.verdict.deciding}")
        lines += ["   " + f.text() for f in self.fetched]
        if self.error:
            lines.append(f"   error while handling this output: {self.error}")
        lines.append("   " + self.stats())
        return lines


@dataclass(frozen=True)
class GateStory(Story):
    """A node's `if:` decision, told: a recorded Gate event (the condition, matched or not, the branch and
    action, and why) with its words; a field a hand-written trace lacks reads "?" (the reason "")."""

    event: Gate
    kind: str = "gate"

    @property
    def label(self) -> str:
        """`step#node`."""
        return f"{_or(self.event.step)}#{_or(self.event.node)}"

    @property
    def condition(self) -> str:
        """The `if:` condition tested (`equals`, `jsonMatches`, ...)."""
        return _or(self.event.condition)

    @property
    def matched(self) -> bool:
        """Whether the condition held."""
        return bool(self.event.matched)

    @property
    def branch(self) -> str:
        """The branch taken: `then` or `else`."""
        return _or(self.event.branch)

    @property
    def action(self) -> str:
        """The branch's action: `continue`, `prune`, `jump` or `abort`."""
        return _or(self.event.action)

    @property
    def jump(self) -> str | None:
        """The step jumped to, for a `jump`."""
        return self.event.jump

    @property
    def reason(self) -> str:
        """Why the gate decided so."""
        return self.event.reason or ""

    @cached_property
    def verdict(self) -> VerdictStory | None:
        """The judgement of the output the gate tested, told (None when it was not judged)."""
        return VerdictStory.of(self.event.verdict)

    def outcome(self) -> str:
        """`then (jump → research)`."""
        return f"{self.branch} ({self.action}" + (f" → {self.jump}" if self.jump else "") + ")"

    def headline(self) -> str:
        return f"gate {self.label}: {self.condition} → {self.outcome()}; {self.reason}"

    def text_lines(self) -> list[str]:
        return ["◆ " + self.headline()]


@dataclass(frozen=True)
class WriteStory(Story):
    """A write made or skipped: its target, policy, mechanism (and branch), source, status and why."""

    event: Write
    label: str
    target: str
    policy: str
    mechanism: str
    branch: str | None
    source: str | None
    status: str
    reason: str
    chars: int | None
    verdict: VerdictStory | None
    kind: str = "write"

    @property
    def written(self) -> bool:
        """True when the write was made."""
        return self.status == "written"

    def headline(self) -> str:
        how = self.mechanism + (f" {self.branch}" if self.branch else "")
        return f"write {self.target} ({self.policy}, {how}): {self.status}" + (f" — {self.reason}" if self.reason else "")

    def text_lines(self) -> list[str]:
        return ["✎ " + self.headline()]


@dataclass(frozen=True)
class StepStory(Story):
    """A step began (StepStart) or ended (StepEnd)."""

    event: StepStart | StepEnd
    step: str
    iteration: int
    started: bool
    kind: str = "step"

    def headline(self) -> str:
        e = self.event
        it = f", iteration {self.iteration}" if self.iteration > 1 else ""
        if isinstance(e, StepStart):
            return f"step {e.step} ({e.step_type}, {e.nodes} node{'s' if e.nodes != 1 else ''}{it})"
        return (f"step {e.step} ended: {e.survivors} of {e.nodes} node(s) survived{it}"
                + (f", jump → {e.jump}" if e.jump else ""))

    def text_lines(self) -> list[str]:
        return ["▶ " + self.headline()] if self.started else []


@dataclass(frozen=True)
class CallStory(Story):
    """A `call` step's child run started, ended, or hit the depth limit."""

    event: Call
    kind: str = "call"

    def headline(self) -> str:
        e = self.event
        return f"call {e.step}#{e.node}: {e.status} (depth {e.child_depth})" + (f"; {e.reason}" if e.reason else "")

    def text_lines(self) -> list[str]:
        return ["↳ " + self.headline()]


@dataclass(frozen=True)
class ErrorStory(Story):
    """A model call that failed (not counted as made)."""

    event: LlmCallFailed
    kind: str = "llm_error"

    def headline(self) -> str:
        e = self.event
        if e.cancelled:
            ran = f" after {e.latency:.1f} s" if e.latency else ""
            return (f"■ {e.step} · node {e.node} · round {e.round}: stopped{ran}, {len(e.partial or ''):,} characters "
                    "written (cancelled: not counted as a call; it stayed pending, to be made again)")
        return f"✗ {e.step} · node {e.node} · round {e.round}: the model call failed: {e.error}"


@dataclass(frozen=True)
class StartStory(Story):
    """The run began."""

    event: RunStart
    kind: str = "run_start"

    def headline(self) -> str:
        e = self.event
        inputs = json.dumps(e.inputs, ensure_ascii=False, default=str)
        return (f"run of {e.ladder} with {e.model}" + (f" (run {e.run_id})" if e.run_id else "")
                + f"; inputs: {inputs if len(inputs) <= 200 else inputs[:200] + '…'}")

    def text_lines(self) -> list[str]:
        return []            # `ladr-lab show` prints the headline itself; a live run has the command line


@dataclass(frozen=True)
class EndStory(Story):
    """The run ended: status, model calls, and the error."""

    event: RunEnd
    kind: str = "run_end"

    def headline(self) -> str:
        e = self.event
        return (f"{_or(e.status)} after {_or(e.llm_calls)} model call(s)" + _by_hand(e.edited_calls)
                + (f": {e.error}" if e.error else ""))

    def text_lines(self) -> list[str]:
        return [] if self.event.depth else ["■ " + self.headline()]


@dataclass(frozen=True)
class OtherStory(Story):
    """Any other event (an internal error, a type this version does not know)."""

    event: Event
    kind: str = "other"

    def headline(self) -> str:
        return self.event.type

    def text_lines(self) -> list[str]:
        return []


def _by_hand(edited: int | None) -> str:
    # a fork takes a model call's place (and its slot of maxLlmCalls) but no model answered it: say so
    return f", {edited} answered by hand" if edited else ""


def _or(value: Any) -> str:
    # a hand-written or cut trace may lack a field: say "?" rather than "None" (or fail)
    return "?" if value is None or value == "" else str(value)


def _label(step: str, node: int | None = None, round: int | None = None, iteration: int = 1) -> str:
    bits = [_or(step)] + ([f"node {node}"] if node is not None else []) + ([f"round {round}"] if round is not None else [])
    if iteration and iteration != 1:
        bits.append(f"iteration {iteration}")
    return " · ".join(bits)


CONSTRAINED = {"request": "the model's decoding was constrained to a JSON object valid against requestMatch, or prose",
               "request+json": "the model's decoding was constrained to a JSON object valid against requestMatch, "
                               "any JSON object as the answer (the step tests its output as JSON), or prose",
               "answer": "the model's decoding was constrained to an answer: prose",
               "answer+json": "the model's decoding was constrained to an answer: prose or a JSON object",
               "grammar": "the model's decoding followed the grammar given in its options"}


CACHED = "(answer from the response cache, not a fresh call)"


def _why(e: LlmCall) -> str | None:
    """The call's reason, and, when the model constrained its decoding, that it did (a constrained output cannot be a
    malformed request: the lesson of an unconstrained run is that it can); a cached answer says so (`CACHED`), so it
    is never mistaken for a fresh call."""
    why = e.reason
    if e.constrained:
        note = CONSTRAINED.get(e.constrained, f"the model's decoding was constrained ({e.constrained})")
        why = f"{why} [{note}]" if why else f"[{note}]"
    if e.provenance == "cached":
        why = f"{why} {CACHED}" if why else CACHED
    return why


def _request(req: dict | None) -> tuple[tuple[str, Any], ...]:
    if not isinstance(req, dict):
        return ()
    known = [(m, req[m]) for m in MODES if m in req]
    return tuple(known + [(k, v) for k, v in req.items() if k not in MODES and k != "topK"])


def speed_bits(e: LlmCall) -> list[str]:
    """How fast a call went, where measured: `prompt 850 tok/s`, `generated 12.3 tok/s`, `first token 0.84 s`."""
    bits = []
    if e.prompt_tps:
        bits.append(f"prompt {_rate(e.prompt_tps)} tok/s")
    if e.gen_tps:
        bits.append(f"generated {_rate(e.gen_tps)} tok/s")
    if e.ttft is not None:
        bits.append(f"first token {e.ttft:.2f} s")
    return bits


def _rate(tps: float) -> str:
    return f"{tps:,.0f}" if tps >= 100 else f"{tps:.1f}"


def describe(e: Event, iteration: int | None = None) -> Story:
    """The story of one event (`iteration`: of a gate or write, which do not record it; default 1)."""
    if isinstance(e, LlmCall):
        sections = tuple(SectionSpan(str(k), str(n), int(c)) for k, n, c in (e.sections or ()))
        return RoundStory(event=e, label=_label(e.step, e.node, e.round, e.iteration or 1), tag=round_tag(e),
                          why=_why(e), verdict=VerdictStory.of(e.verdict), request=_request(e.request),
                          top_k=e.top_k, fetched=tuple(FetchRow.of(f) for f in e.fetched or ()),
                          output=e.output or "", error=e.error, tokens_in=e.tokens_in or 0,
                          tokens_out=e.tokens_out or 0, cost=e.cost or 0.0, latency=e.latency or 0.0,
                          provenance=e.provenance, model=e.model or "", prompt_chars=e.prompt_chars,
                          sections=sections)
    if isinstance(e, Gate):
        return GateStory(event=e)
    if isinstance(e, Write):
        return WriteStory(event=e, label=f"{_or(e.step)}#{_or(e.node)}", target=_or(e.target), policy=_or(e.policy),
                          mechanism=_or(e.mechanism), branch=e.branch, source=e.source, status=_or(e.status),
                          reason=e.reason or "", chars=e.chars, verdict=VerdictStory.of(e.verdict))
    if isinstance(e, (StepStart, StepEnd)):
        return StepStory(event=e, step=e.step, iteration=e.iteration or 1, started=isinstance(e, StepStart))
    if isinstance(e, Call):
        return CallStory(event=e)
    if isinstance(e, LlmCallFailed):
        return ErrorStory(event=e)
    if isinstance(e, RunStart):
        return StartStory(event=e)
    if isinstance(e, RunEnd):
        return EndStory(event=e)
    return OtherStory(event=e)
