"""Where each event of a recorded run sits (step, node, loop iteration, round, the `call` steps above), and
the two things every analysis reads: a trace (a Trace or a JSONL path) and a ladder (a Ladder or a path).

Model calls carry their loop iteration; gates, writes and `call` events do not, so the iteration of those
is the one of their step's latest `step_start` (per caller: a child run counts its own iterations).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config.model import Ladder
from ..trace import Event, LlmCall, StepStart


@dataclass(frozen=True, order=True)
class Where:
    """The place of an event in a run: the `call` steps above it, step, loop iteration, node and round."""

    caller: tuple[str, ...]
    step: str
    iteration: int
    node: int | None = None
    round: int | None = None

    @property
    def execution(self) -> tuple:
        """One node's execution of a step: (caller, step, iteration, node)."""
        return (self.caller, self.step, self.iteration, self.node)

    def label(self) -> str:
        """`step · node 2 · round 3` (with the iteration and the callers when they are not the default)."""
        bits = [self.step]
        if self.node is not None:
            bits.append(f"node {self.node}")
        if self.round is not None:
            bits.append(f"round {self.round}")
        if self.iteration != 1:
            bits.append(f"iteration {self.iteration}")
        text = " · ".join(bits)
        return (" > ".join(self.caller) + " > " + text) if self.caller else text


def where(event: Event, iterations: dict[tuple, int]) -> Where | None:
    """The Where of an event that belongs to a step (None for run_start, run_end, ...)."""
    step = getattr(event, "step", None)      # attributes, not Event.get: this runs once per event
    if step is None:
        return None
    caller = tuple(event.caller)
    if isinstance(event, LlmCall):
        return Where(caller, step, event.iteration or 1, event.node, event.round)
    return Where(caller, step, iterations.get((caller, step), 1), getattr(event, "node", None))


def iter_located(events: Iterable[Event]) -> Iterator[tuple[Where | None, Event]]:
    """Each event with its Where, in order."""
    iterations: dict[tuple, int] = {}
    for e in events:
        if isinstance(e, StepStart):
            iterations[(tuple(e.caller), e.step)] = e.iteration or 1
        yield where(e, iterations), e


def trace_label(trace: Any) -> str:
    """How reports name a trace: its path, or "trace"."""
    return str(trace) if isinstance(trace, (str, Path)) else "trace"


as_ladder = Ladder.of       # the older name of `Ladder.of`: a Ladder, or a ladder file loaded and validated


__all__ = ["Where", "as_ladder", "iter_located", "trace_label", "where"]
