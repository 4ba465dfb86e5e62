"""The engine's generator protocol: node code yields the model calls it needs and is sent the answers.

Every node of every step is a generator of type `CallGen[T]`: it yields a list of `CallRequest`s (the
calls it is waiting on), is sent `(request_id, Completion | BaseException)` for one of them, and
returns its result `T`. `parallel()` runs several such generators side by side, so a run can advance
one model call at a time (`Run.step`) or keep every independent call in flight (`Run.run`).
"""
from __future__ import annotations

import itertools
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..display import Displayable
from ..errors import LadrError
from ..models import CallInfo, Completion, Model
from ..round.prompt import split_sections
from ..round.records import PromptSection, SectionSpan, spans

__all__ = ["Answer", "CallGen", "CallRequest", "parallel"]

_T = TypeVar("_T")
Answer = tuple[int, Completion | BaseException]
CallGen = Generator[list["CallRequest"], Answer, _T]

_ids = itertools.count(1)


@dataclass(repr=False)
class CallRequest(Displayable):
    """One model call the run is waiting for: who asks (`info`), the exact messages, the model, and the user
    message's sections (a `SectionSpan` each, which the trace records as `[kind, name, chars]`)."""

    id: int
    info: CallInfo
    messages: list[dict]
    model: Model
    sections: tuple[SectionSpan, ...] | None = None

    @classmethod
    def new(cls, info: CallInfo, messages: list[dict], model: Model, sections=None) -> CallRequest:
        """A request with a fresh id (ids grow, so the smallest pending id is the oldest call)."""
        return cls(next(_ids), info, messages, model, spans(sections) if sections else None)

    def prompt_sections(self) -> list[PromptSection]:
        """The prompt as named parts (system prompt, fields, retrieved blocks, the forced-final line)."""
        return split_sections(self.messages, self.sections)

    @property
    def prompt_chars(self) -> int:
        """Characters of every message's content."""
        return sum(len(m.get("content") or "") for m in self.messages if isinstance(m, dict))

    def __repr__(self) -> str:
        forced = ", forced final" if self.info.forced_final else ""
        return (f"<CallRequest #{self.id} {self.info.label} round {self.round}{forced}: "
                f"{self.prompt_chars:,} prompt chars to {getattr(self.model, 'name', '?')}>")

    def to_text(self) -> str:
        """Who asks, and the prompt section by section (each cut to a screenful)."""
        from .html import request_text
        return request_text(self)

    def to_html(self) -> str:
        """Who asks and the exact prompt, its sections collapsible, as a static HTML view."""
        from .html import request_html
        return request_html(self)

    @property
    def step(self) -> str:
        """The step id."""
        return self.info.step

    @property
    def node(self) -> int:
        """The node number (1-based)."""
        return self.info.node

    @property
    def round(self) -> int:
        """The call's round within the node's execution of the step."""
        return self.info.round

    @property
    def depth(self) -> int:
        """Recursion depth of the run making the call."""
        return self.info.depth


def parallel(gens: Iterable[CallGen[Any]]) -> CallGen[list[Any]]:
    """Advance several call-yielding generators side by side; return their results in order.

    `gens` is consumed lazily and each generator is started as it is taken, so a step of 10^8 nodes under a
    budget of 5 calls creates six: once a branch fails to start (the budget is exhausted), no further
    branch is created. An error in one branch lets the started ones finish (their in-flight calls are not
    wasted) and is then raised.
    """
    pending: dict[int, list[CallRequest]] = {}
    results: dict[int, Any] = {}
    error: BaseException | None = None
    active: dict[int, CallGen[Any]] = {}
    for i, g in enumerate(gens):
        try:
            pending[i] = next(g)
            active[i] = g
        except StopIteration as stop:
            results[i] = stop.value
        except LadrError as exc:
            error = exc
            break
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
    return [results[i] for i in range(len(results))]
