"""The model interface every ladr_lab model keeps: `complete(messages, **hints) -> Completion`.

A model is anything with a `name`, a `max_concurrency` (how many calls the runtime may have in flight
at once for it) and a `complete` method. The runtime passes these keyword hints, and a model must
accept and ignore the ones it does not use (so new hints never break old models):

- `step` (step id), `node` (1-based), `nodes` (node count), `round` (1-based call number within this
  node's step execution), `forced_final` (bool)
- `request_match`: the step's requestMatch JSON Schema when the step has `retrieve:` and this call is
  not forced final, else None; `retrieve_as`: the retrieved-documents field name, e.g.
  "RetrievedDocuments"
- `output_schema`: a JSON Schema the final output will be matched against (slateWrite.match or
  if.jsonMatches), if any; `equals`: the string an `if: {equals: ...}` gate compares the output to
- `depth` (recursion depth, 0 at top), `iteration` (loop iteration)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Completion", "Model", "estimate_message_tokens", "estimate_tokens", "system_text", "user_text"]


@dataclass(frozen=True)
class Completion:
    """One model answer: its text plus token counts, cost in USD, latency in seconds and model name."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    latency: float = 0.0
    model: str = ""


@runtime_checkable
class Model(Protocol):
    """Anything that turns a system+user message list into a Completion."""

    name: str
    max_concurrency: int

    def complete(self, messages: list[dict], **hints) -> Completion:
        """Answer `messages`; `hints` describe the call (step, node, round, schemas...)."""
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
