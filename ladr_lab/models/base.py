"""The model interface every ladr_lab model keeps: `complete(messages, call=CallInfo) -> Completion`.

A model is anything with a `name`, a `max_concurrency` (how many calls the runtime may have in flight
at once for it), a `complete` method and a `close` method. The runtime describes each call with one
value object, `CallInfo` (as httpx hands a transport one `Request`): who asks (step, node, round,
loop iteration, recursion depth and the `call` steps above), and what the runtime will do with the
answer (the step's requestMatch, the schema or string a gate or write will test). A model reads what
it needs and ignores the rest, so new fields never break old models. `CallInfo.hints()` gives the
same facts as the plain keyword dict of earlier versions (the scripted model's callables get it). When someone
watches the call (a terminal printout, the Stepper), `CallInfo.stream` is a `TokenStream` a model may write its text
to as it is generated and learn there that the call was cancelled (models/stream.py); a model that does not look
at it answers as before.

A model may also be a `Recording` (an optional protocol, `ReplayModel` is one): it answers from a recorded
run, and the engine asks it for the recorded inputs and where the run stopped matching the recording.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .stream import TokenStream

__all__ = ["CallInfo", "Completion", "Model", "Recording", "WrappedModel", "estimate_message_tokens", "estimate_tokens",
           "system_text", "user_text"]


@dataclass(frozen=True)
class Completion:
    """One model answer: its text plus token counts, cost in USD, latency in seconds, model name, and
    where it came from (`provenance`: live, recorded, scripted, offline, edited or cached: the response cache,
    models/cache.py), whether its decoding was constrained (`constrained`, see models/local/), and, from a live model,
    why it stopped (`finish_reason`) and what the call sent (`invocation_parameters`)."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    latency: float = 0.0
    model: str = ""
    provenance: str = "live"
    constrained: str | None = None      # how decoding was constrained (`"request"`: requestMatch JSON or prose), if it was
    finish_reason: str | None = None    # why the model stopped (`stop`, `length`, ...), as its API said
    # what the call sent besides the messages (the model and its options, credentials left out), as OpenInference's
    # `llm.invocation_parameters` records it
    invocation_parameters: dict[str, Any] | None = field(default=None, compare=False)
    # how fast it went, where measured (models/stream.py): seconds to the first token of a streamed call, prompt tokens
    # read per second (llama.cpp's own timing of the tokens it evaluated, or its server's `timings`) and tokens
    # generated per second
    ttft: float | None = None
    prompt_tps: float | None = None
    gen_tps: float | None = None

    @classmethod
    def of_text(cls, text: str, messages: list[dict], *, model: str = "", provenance: str = "live") -> Completion:
        """A completion whose token counts are estimated from its prompt and its text (no cost, no latency)."""
        return cls(text=text, tokens_in=estimate_message_tokens(messages), tokens_out=estimate_tokens(text),
                   model=model, provenance=provenance)


@dataclass(frozen=True)
class CallInfo:
    """What the runtime knows about one model call: who asks, and how the answer will be judged."""

    step: str = ""
    node: int = 1
    nodes: int = 1
    round: int = 1                           # 1-based call number within this node's execution of the step
    iteration: int = 1                       # loop iteration (a jump back starts a new one)
    depth: int = 0                           # recursion depth (0 at the top)
    caller: tuple[str, ...] = ()             # "step/node" of each call step above, outermost first
    forced_final: bool = False
    request_match: dict | None = field(default=None, compare=False)   # when this call may be a retrieval
    retrieve_as: str | None = None           # the retrieved-documents field name, e.g. "RetrievedDocuments"
    output_schema: dict | None = field(default=None, compare=False)   # slateWrite.match or if.jsonMatches
    equals: str | None = None                # the string an `if: {equals: ...}` gate compares the output to
    # where a model that can stream writes the text as it comes, and how it learns the call was cancelled
    # (models/stream.py); None when nobody watches the call: the model answers as it always did
    stream: TokenStream | None = field(default=None, compare=False, repr=False)

    def hints(self) -> dict:
        """The same facts as a plain keyword dict (the scripted model's callables receive it)."""
        return {"step": self.step, "node": self.node, "nodes": self.nodes, "round": self.round,
                "forced_final": self.forced_final, "request_match": self.request_match,
                "retrieve_as": self.retrieve_as, "output_schema": self.output_schema, "equals": self.equals,
                "depth": self.depth, "iteration": self.iteration, "caller": self.caller}

    @property
    def label(self) -> str:
        """`step/node` (prefixed by the callers' labels in a child run), as messages name a call."""
        return "/".join((*self.caller, f"{self.step}/{self.node}"))


@runtime_checkable
class Model(Protocol):
    """Anything that turns a system+user message list into a Completion."""

    name: str
    max_concurrency: int

    def complete(self, messages: list[dict], call: CallInfo | None = None) -> Completion:
        """Answer `messages`; `call` describes the call (step, node, round, schemas...)."""
        ...

    def close(self) -> None:
        """Release what the model holds (connections, files); a closed model is not called again."""
        ...


@runtime_checkable
class Recording(Protocol):
    """A model that answers from a recorded run (optional, beside `Model`): the engine checks
    `isinstance(model, Recording)` and then reads these members, whatever the class is."""

    answers_every_step: bool
    """True when the run must ask this model for every step's calls, also a step that declares its own
    `model:` (the recording holds that step's outputs too: calling the step's model would not be a replay)."""

    recorded_inputs: dict | None
    """The inputs of the recorded run (None when the recording has none): a run given no inputs uses them."""

    divergence: dict | None
    """The first call where the run stopped matching the recording, as a dict `{step, node, round,
    iteration, occurrence, message_index, role, diff}` (None while it matches); `RunResult.divergence`."""

    def unserved_divergence(self) -> dict | None:
        """Asked once the run has ended: the recorded calls the run never asked for, as a divergence (with
        `unserved`, how many), or None when it diverged already or asked for every recorded call."""
        ...


def estimate_tokens(text: str) -> int:
    """A model-free token estimate, `max(1, ceil(chars / 4))`, used by models without a tokenizer."""
    return max(1, math.ceil(len(text or "") / 4))


def estimate_message_tokens(messages: list[dict]) -> int:
    """The token estimate of every message's content taken together."""
    return estimate_tokens("".join(_content_text(m.get("content")) for m in messages or []))


def _content_text(content) -> str:
    # OpenAI-style content may be a list of parts; only the text parts count.
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def user_text(messages: list[dict]) -> str:
    """The text of the last user message (empty when there is none)."""
    for m in reversed(messages or []):
        if m.get("role") == "user":
            return _content_text(m.get("content"))
    return ""


def system_text(messages: list[dict]) -> str:
    """The text of the system messages joined by blank lines."""
    return "\n\n".join(_content_text(m.get("content")) for m in messages or [] if m.get("role") == "system")


class WrappedModel:
    """A model that answers through another (`model`): the rate-limited one, the cached one. It takes the wrapped
    model's name and concurrency, passes its check on, closes it when it owns it, and answers any other attribute
    the engine may read (stats, options) from it — but the names in `HIDDEN`, which are the wrapper's own."""

    HIDDEN: tuple[str, ...] = ("model",)

    def __init__(self, model: Any, *, owns: bool = True) -> None:
        self.model = model
        self.owns = owns
        self.name = getattr(model, "name", type(model).__name__)
        self.max_concurrency = getattr(model, "max_concurrency", 1)

    def check(self) -> None:
        """The wrapped model's own check before a run (a missing key), when it has one."""
        check = getattr(self.model, "check", None)
        if callable(check):
            check()

    def close(self) -> None:
        """Close the wrapped model when this wrapper owns it."""
        if self.owns and callable(getattr(self.model, "close", None)):
            self.model.close()

    def __getattr__(self, name: str) -> Any:
        if name in type(self).HIDDEN:
            raise AttributeError(name)
        return getattr(self.model, name)

