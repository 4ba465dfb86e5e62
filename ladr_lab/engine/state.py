"""What a run knows as it goes: each step's node outputs, the loop iteration, the step executed last."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NodeCtx", "NodeOut", "RunState", "StepResult", "Survivors", "join_survivors"]


class Survivors(list):
    """The surviving outputs of a step, as a `from:` source without a node yields them (seed 003's
    default, "all survivors"): written to a file they are joined with a blank line, to a JSON-typed
    metatag they are a JSON array (one survivor included). A plain list is a JSON array value (e.g. from
    slateWrite.match). `nodes` holds each survivor's node number (1-based), so labels name the node."""

    def __init__(self, items=(), nodes=None) -> None:
        super().__init__(items)
        self.nodes: list[int] = list(nodes) if nodes is not None else list(range(1, len(self) + 1))



def join_survivors(value: Any) -> str:
    """A source value as text: several survivors joined with a blank line, other values as JSON."""
    if isinstance(value, Survivors):
        return "\n\n".join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in value)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


@dataclass
class NodeOut:
    """One node's final output and whether it survived its gate."""

    node: int
    output: str
    survived: bool = True


@dataclass
class StepResult:
    """The outcome of one execution of a step."""

    step_id: str
    nodes: list[NodeOut] = field(default_factory=list)
    iteration: int = 1

    @property
    def survivors(self) -> list[str]:
        """Outputs of the nodes that survived, in node order."""
        return [n.output for n in sorted(self.nodes, key=lambda n: n.node) if n.survived]

    def surviving(self) -> Survivors:
        """The survivors' outputs with their node numbers."""
        kept = [n for n in sorted(self.nodes, key=lambda n: n.node) if n.survived]
        return Survivors([n.output for n in kept], [n.node for n in kept])

    def node(self, k: int) -> NodeOut | None:
        """Node k (1-based), if it ran."""
        for n in self.nodes:
            if n.node == k:
                return n
        return None


@dataclass
class RunState:
    """The results a `from:` source resolves against: this iteration's step results and `previous`."""

    inputs: dict
    results: dict[str, StepResult] = field(default_factory=dict)
    previous: StepResult | None = None
    iteration: int = 1

    def branch(self) -> RunState:
        """The view of one branch of a group: it sees what ran before the group (its `previous` is the
        step before the group) and none of its sibling branches (they are independent)."""
        return RunState(self.inputs, dict(self.results), self.previous, self.iteration)

    def adopt(self, branch: RunState, base: dict[str, StepResult]) -> None:
        """Take in the step results a finished branch added (not what it inherited)."""
        for sid, res in branch.results.items():
            if base.get(sid) is not res:
                self.results[sid] = res


@dataclass
class NodeCtx:
    """What a source is resolved relative to: the step, the node and the step's own outputs so far."""

    step_id: str
    node: int
    nodes: int
    own: StepResult | None = None      # the current step's earlier nodes (sequential steps)
    output: str | None = None          # this node's own final output (gates and writes)
    branch: str | None = None          # then / else, for error messages
