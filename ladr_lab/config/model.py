"""Frozen models of a ladder document, as the loader builds them and the engine reads them."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..display import Displayable
from ..slate import FolderSpec

STEP_TYPES = ("normal", "sequential", "group", "call")
FIELD_TYPES = ("text", "slateRead", "nodeInfo", "ingest", "multi_ingest", "knob", "json")
WRITE_POLICIES = ("append", "overwrite", "mergeByKey")
NODE_REFS = ("current", "previous", "accumulate")


@dataclass(frozen=True)
class Source:
    """A `from:` source: previous, output, a literal, a step reference, a slate reference or an input."""

    kind: str                      # previous | output | literal | step | slate | input
    text: str | None = None        # literal text, or input name for kind=input
    step_id: str | None = None
    node_ref: str | None = None    # current | previous | accumulate
    node: int | None = None
    slate: str | None = None
    folder: str | None = None
    file: str | None = None
    metatag: str | None = None
    depth: int | None = None
    path: tuple = ()

    def describe(self) -> str:
        """A short human description, as the trace and error messages show it."""
        if self.kind == "literal":
            return "literal"
        if self.kind == "step":
            extra = f", nodeRef: {self.node_ref}" if self.node_ref else (f", node: {self.node}" if self.node else "")
            return f"{{stepId: {self.step_id}{extra}}}"
        if self.kind == "slate":
            bits = [f"slate: {self.slate}", f"folder: {self.folder}"]
            if self.file:
                bits.append(f"file: {self.file}")
            if self.metatag:
                bits.append(f"metatag: {self.metatag}")
            return "{" + ", ".join(bits) + "}"
        if self.kind == "input":
            return f"input.{self.text}"
        return self.kind


@dataclass(frozen=True)
class Target:
    """Where a write goes: a slate folder's file contents or a file's metatag."""

    slate: str
    folder: str
    file: str | None = None
    metatag: str | None = None

    def describe(self) -> str:
        """`Slate/folder/file[#metatag]`."""
        s = f"{self.slate}/{self.folder}/{self.file or '*'}"
        return s + (f"#{self.metatag}" if self.metatag else "")


@dataclass(frozen=True)
class FieldSpec:
    """One field of a step's prompt."""

    name: str
    type: str
    source: Source | None = None
    value: Any = None
    knob: str | None = None
    path: tuple = ()


@dataclass(frozen=True)
class Retrieve:
    """A step's `retrieve:` block."""

    slate: str
    folder: str
    as_: str
    max_rounds: int
    request_match: dict
    path: tuple = ()


@dataclass(frozen=True)
class WriteSpec:
    """A gated write (`write:` under then/else)."""

    target: Target
    source: Source
    on: str = "append"
    key: str | None = None
    path: tuple = ()


@dataclass(frozen=True)
class Action:
    """A gate branch: continue, abort, prune, jump and/or writes."""

    kind: str                              # continue | abort | prune | jump | write
    jump: str | None = None
    writes: tuple[WriteSpec, ...] = ()
    path: tuple = ()


@dataclass(frozen=True)
class GateSpec:
    """A step's `if:` block (the trace's `Gate` event records what it decided)."""

    equals: str | None
    json_matches: dict | None
    then: Action
    else_: Action
    path: tuple = ()

    @property
    def condition(self) -> str:
        """`equals` or `jsonMatches`."""
        return "equals" if self.json_matches is None else "jsonMatches"


Gate = GateSpec        # its older name (it collided with the trace's `Gate` event)


@dataclass(frozen=True)
class SlateWrite:
    """A step's `slateWrite:` block."""

    target: Target
    match: dict
    on: str = "append"
    field: str | None = None
    key: str | None = None
    path: tuple = ()


@dataclass(frozen=True)
class CallSpec:
    """A `call` step's child-run declaration."""

    ladder: str                         # "self" or a path
    source: Source | None
    max_depth: int = 3
    path: tuple = ()


@dataclass(frozen=True)
class Step:
    """One step of a ladder."""

    id: str
    type: str = "normal"
    nodes: int = 1
    fields: tuple[FieldSpec, ...] = ()
    system_prompt: str = ""
    retrieve: Retrieve | None = None
    gate: GateSpec | None = None
    slate_write: SlateWrite | None = None
    steps: tuple[Step, ...] = ()
    call: CallSpec | None = None
    model: str | None = None
    path: tuple = ()


@dataclass(frozen=True)
class SlateDecl:
    """A declared slate: title, optional path, declared folders."""

    title: str
    path: str | None
    folders: tuple[FolderSpec, ...]

    def folder(self, name: str) -> FolderSpec | None:
        """The declared folder named `name`, if any."""
        for f in self.folders:
            if f.name == name:
                return f
        return None


@dataclass(frozen=True)
class Budget:
    """executionBudget: hard caps on model calls and step executions."""

    max_llm_calls: int | None = None
    max_steps: int | None = None


@dataclass(frozen=True)
class Ladder(Displayable):
    """A validated ladder document (in a notebook it shows its slates, steps, warnings and YAML source)."""

    name: str
    steps: tuple[Step, ...]
    slates: tuple[SlateDecl, ...] = ()
    model: str | None = None
    knobs: dict = field(default_factory=dict)
    budget: Budget = Budget()
    file: str | None = None
    base_dir: Path = Path(".")
    text: str = ""
    raw: Any = None
    warnings: tuple = ()
    positions: Any = None

    @classmethod
    def of(cls, source: Ladder | str | os.PathLike) -> Ladder:
        """The Ladder of a Ladder (returned itself) or of a ladder file's path (loaded and validated by
        `load_ladder`, which raises its ConfigError or ConfigErrors for a file it cannot read or accept)."""
        if isinstance(source, Ladder):
            return source
        if isinstance(source, (str, os.PathLike)):
            from .loader import load_ladder
            return load_ladder(source)
        raise TypeError(f"Ladder.of takes a Ladder or a ladder path, not {type(source).__name__}")

    def __repr__(self) -> str:
        # the dataclass repr would print the whole document text, its parsed form and positions
        steps = [s.id for s in self.steps]
        return f"Ladder({self.name!r}, steps={steps!r}" + (f", file={self.file!r})" if self.file else ")")

    def to_text(self) -> str:
        """The ladder in a few lines: one per step."""
        from .html import ladder_text
        return ladder_text(self)

    def to_html(self) -> str:
        """The ladder as a static HTML view."""
        from .html import ladder_html
        return ladder_html(self)

    def where(self, path: tuple) -> str | None:
        """`file:line:column` of a document path, when known."""
        if self.positions is None or not path:
            return None
        lc = self.positions.of(tuple(path))
        return None if lc is None else f"{self.file or '<ladder>'}:{lc[0]}:{lc[1]}"

    def step(self, step_id: str) -> Step | None:
        """The step with this id, searching group children too."""
        for s in self.all_steps():
            if s.id == step_id:
                return s
        return None

    def all_steps(self) -> list[Step]:
        """Every step, depth first, group children after their group."""
        out: list[Step] = []

        def walk(steps):
            for s in steps:
                out.append(s)
                walk(s.steps)
        walk(self.steps)
        return out

    def written_targets(self) -> set[tuple[str, str]]:
        """(slate title, folder) of every write a step declares: each slateWrite and each gated write."""
        out: set[tuple[str, str]] = set()
        for s in self.all_steps():
            if s.slate_write is not None:
                out.add((s.slate_write.target.slate, s.slate_write.target.folder))
            if s.gate is not None:
                out.update((w.target.slate, w.target.folder) for a in (s.gate.then, s.gate.else_) for w in a.writes)
        return out

    def slate(self, title: str) -> SlateDecl | None:
        """The declared slate with this title, if any."""
        for s in self.slates:
            if s.title == title:
                return s
        return None
