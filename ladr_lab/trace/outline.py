"""The outline of a run: steps → loop iterations → nodes → rounds, gates, writes and child runs, built from
the stories of `trace/story.py` at once (`Outline.of(events)`) or event by event as a run goes (`add`).

The static HTML views (`trace/html.py`) and the notebook widgets (`widgets/trace_view.py`) fold a run by it.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .events import Call, Event, Gate, LlmCall, LlmCallFailed, StepEnd, StepStart, Write
from .story import (
    CallStory,
    EndStory,
    ErrorStory,
    GateStory,
    RoundStory,
    StartStory,
    StepStory,
    Story,
    WriteStory,
    describe,
)

__all__ = ["NodeOutline", "Outline", "StepOutline"]


@dataclass
class NodeOutline:
    """One node's execution of a step: its rounds, its gate, its writes and its child runs, in order."""

    node: int
    rounds: list[RoundStory] = field(default_factory=list)
    gates: list[GateStory] = field(default_factory=list)
    writes: list[WriteStory] = field(default_factory=list)
    calls: list[CallStory] = field(default_factory=list)
    errors: list[ErrorStory] = field(default_factory=list)

    @property
    def final(self) -> RoundStory | None:
        """The node's last round (its output is the node's output once the node is done)."""
        return self.rounds[-1] if self.rounds else None

    def headline(self) -> str:
        """`node 2: 3 rounds → final; gate then (continue); 1 write`."""
        bits = [f"node {self.node}: {len(self.rounds)} round{'s' if len(self.rounds) != 1 else ''}"]
        if self.final is not None:
            bits[0] += f" → {self.final.tag}"
        bits += [f"gate {g.outcome()}" for g in self.gates]
        if self.writes:
            made = sum(w.written for w in self.writes)
            bits.append(f"{made} of {len(self.writes)} write(s) made")
        bits += [c.headline() for c in self.calls if c.event.status != "started"]
        bits += ["model call failed" for _ in self.errors]
        return "; ".join(bits)


@dataclass
class StepOutline:
    """One execution of a step (a loop runs it again in a new iteration): its nodes and how it ended."""

    step: str
    iteration: int
    caller: tuple[str, ...]
    depth: int
    step_type: str = "normal"
    nodes_declared: int = 1
    nodes: dict[int, NodeOutline] = field(default_factory=dict)
    end: StepStory | None = None
    first_seq: int | None = None
    run_end: EndStory | None = None        # the run ended while this step had not (an error, a budget)

    @property
    def key(self) -> tuple:
        """(caller, step, iteration): what tells executions apart."""
        return (self.caller, self.step, self.iteration)

    def node(self, n: int) -> NodeOutline:
        """The node's outline (made on first use)."""
        got = self.nodes.get(n)
        if got is None:
            got = self.nodes[n] = NodeOutline(n)
        return got

    def rounds(self) -> list[RoundStory]:
        """Every round of every node, in node order."""
        return [r for n in sorted(self.nodes) for r in self.nodes[n].rounds]

    @property
    def label(self) -> str:
        """`research` (`· iteration 2`; `call#1 > child` in a child run)."""
        text = self.step + (f" · iteration {self.iteration}" if self.iteration != 1 else "")
        return (" > ".join(self.caller) + " > " + text) if self.caller else text

    def headline(self) -> str:
        """`research (normal, 1 node): 3 rounds, 4,210 tokens; 1 of 1 survived`."""
        rounds = self.rounds()
        tokens = sum(r.tokens_in + r.tokens_out for r in rounds)
        head = (f"{self.label} ({self.step_type}, {self.nodes_declared} node{'s' if self.nodes_declared != 1 else ''}): "
                f"{len(rounds)} round{'s' if len(rounds) != 1 else ''}, {tokens:,} tokens")
        writes = [w for n in self.nodes.values() for w in n.writes]
        if writes:
            head += f", {sum(w.written for w in writes)} of {len(writes)} write(s) made"
        if self.end is not None:
            e = self.end.event
            assert isinstance(e, StepEnd)
            head += f"; {e.survivors} of {e.nodes} survived" + (f", jump → {e.jump}" if e.jump else "")
        elif self.run_end is not None:
            status = self.run_end.event.status
            head += "; ended by the run's error" if status == "error" else f"; ended with the run ({status})"
        else:
            head += "; running"
        return head


class Outline:
    """A run as steps → loop iterations → nodes → rounds, gates and writes; built at once (`of`) or event by
    event as a run goes (`add`), for views that update live."""

    def __init__(self) -> None:
        self.start: StartStory | None = None
        self.end: EndStory | None = None
        self.steps: list[StepOutline] = []
        self.rounds: list[RoundStory] = []
        self._by_key: dict[tuple, StepOutline] = {}
        self._current: dict[tuple, int] = {}       # (caller, step) -> its latest iteration

    @classmethod
    def of(cls, events: Iterable[Event]) -> Outline:
        """The outline of recorded events."""
        out = cls()
        for e in events:
            out.add(e)
        return out

    def _block(self, e: Event, step: str, iteration: int | None = None) -> StepOutline:
        caller = tuple(e.caller)
        it = iteration if iteration is not None else self._current.get((caller, step), 1)
        key = (caller, step, it)
        block = self._by_key.get(key)
        if block is None:
            block = StepOutline(step=step, iteration=it, caller=caller, depth=e.depth, first_seq=e.seq)
            self._by_key[key] = block
            self.steps.append(block)
        return block

    def add(self, e: Event) -> tuple[StepOutline | None, Story]:
        """Add one event; return the step block it changed (None for run-level events) and its story."""
        if isinstance(e, StepStart):
            self._current[(tuple(e.caller), e.step)] = e.iteration or 1
            block = self._block(e, e.step, e.iteration or 1)
            block.step_type, block.nodes_declared = e.step_type, e.nodes
            return block, describe(e)
        if isinstance(e, LlmCall):
            story = describe(e)
            assert isinstance(story, RoundStory)
            block = self._block(e, e.step, e.iteration or 1)
            block.node(e.node).rounds.append(story)
            self.rounds.append(story)
            return block, story
        if isinstance(e, (Gate, Write, Call, LlmCallFailed)):
            block = self._block(e, e.step)
            story = describe(e, block.iteration)
            node = block.node(e.node)
            if isinstance(story, GateStory):
                node.gates.append(story)
            elif isinstance(story, WriteStory):
                node.writes.append(story)
            elif isinstance(story, CallStory):
                node.calls.append(story)
            elif isinstance(story, ErrorStory):
                node.errors.append(story)
            return block, story
        if isinstance(e, StepEnd):
            block = self._block(e, e.step, e.iteration or 1)
            story = describe(e)
            assert isinstance(story, StepStory)
            block.end = story
            return block, story
        story = describe(e)
        if isinstance(story, StartStory) and not e.depth:
            self.start = story
        elif isinstance(story, EndStory):
            if not e.depth:
                self.end = story
            # the steps this run (or child run) left unfinished ended with it: they are not running any more
            caller = tuple(e.caller)
            for block in self.steps:
                if block.end is None and block.run_end is None and (not e.depth or block.caller[:len(caller)] == caller):
                    block.run_end = story
        return None, story

    def totals(self) -> dict[str, Any]:
        """Rounds, tokens in and out, cost, and writes made / skipped over the whole run so far."""
        writes = [w for s in self.steps for n in s.nodes.values() for w in n.writes]
        return {"rounds": len(self.rounds), "tokens_in": sum(r.tokens_in for r in self.rounds),
                "tokens_out": sum(r.tokens_out for r in self.rounds), "cost": sum(r.cost for r in self.rounds),
                "prompt_chars": sum(r.prompt_chars for r in self.rounds),
                "written": sum(w.written for w in writes), "skipped": sum(not w.written for w in writes),
                "steps": len(self.steps)}
