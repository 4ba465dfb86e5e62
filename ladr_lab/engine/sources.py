"""Resolving fields and `from:` sources against the state of a run (seed 003's vocabulary)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..config.model import FieldSpec, Source
from ..errors import NodeDependencyError, SourceResolutionError


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

    def node(self, k: int) -> NodeOut | None:
        """Node k (1-based), if it ran."""
        for n in self.nodes:
            if n.node == k:
                return n
        return None


@dataclass
class NodeCtx:
    """What a source is resolved relative to: the step, the node and the step's own outputs so far."""

    step_id: str
    node: int
    nodes: int
    own: StepResult | None = None      # the current step's earlier nodes (sequential steps)
    output: str | None = None          # this node's own final output (gates and writes)
    branch: str | None = None          # then / else, for error messages


def _where(ctx: NodeCtx, what: str) -> str:
    return f'Step "{ctx.step_id}"' + (f" (if.{ctx.branch})" if ctx.branch else "") + f": {what}"


def resolve_source(src: Source, ctx: NodeCtx, state, store, what: str) -> Any:
    """The value of a source: a string, or a list of strings for several survivors, or a slate value."""
    if src.kind == "literal":
        return src.text or ""
    if src.kind == "input":
        if src.text not in state.inputs:
            hint = "--input TEXT" if src.text == "context" else f"--input-json '{{\"{src.text}\": ...}}'"
            raise SourceResolutionError(_where(ctx, f"{what} reads input.{src.text}, which was not given ({hint})"),
                                        ctx.step_id, src.path)
        return state.inputs[src.text]
    if src.kind == "output":
        if ctx.output is None:
            raise SourceResolutionError(_where(ctx, f"{what} reads from: output before the step produced one"),
                                        ctx.step_id, src.path)
        return ctx.output
    if src.kind == "previous":
        prev = state.previous
        if prev is None:
            raise SourceResolutionError(_where(ctx, f"{what} reads from: previous, but no step has executed "
                                                    "before this one"), ctx.step_id, src.path)
        if not prev.survivors:
            raise NodeDependencyError(_where(ctx, f'{what} reads from: previous, but step "{prev.step_id}" left '
                                                  "zero survivors"), ctx.step_id, src.path)
        return prev.survivors if len(prev.survivors) > 1 else prev.survivors[0]
    if src.kind == "step":
        if src.step_id == ctx.step_id:
            res = ctx.own
        else:
            res = state.results.get(src.step_id)
        if res is None:
            raise SourceResolutionError(_where(ctx, f'{what} reads step "{src.step_id}", which has not executed '
                                                    "in the current loop iteration"), ctx.step_id, src.path)
        if src.node is not None or src.node_ref in ("current", "previous"):
            k = src.node if src.node is not None else (ctx.node if src.node_ref == "current" else ctx.node - 1)
            if src.node_ref == "previous" and k < 1:
                return ""
            n = res.node(k)
            if n is None:
                raise SourceResolutionError(_where(ctx, f'{what} reads node {k} of step "{src.step_id}", which '
                                                        f"ran {len(res.nodes)} node(s)"), ctx.step_id, src.path)
            return n.output
        if src.step_id != ctx.step_id and not res.survivors:
            raise NodeDependencyError(_where(ctx, f'{what} reads step "{src.step_id}", which left zero survivors'),
                                      ctx.step_id, src.path)
        surv = res.survivors
        return surv if len(surv) != 1 else surv[0]
    if src.kind == "slate":
        return read_slate(store, src)
    raise SourceResolutionError(_where(ctx, f"{what} has an unknown source kind {src.kind!r}"), ctx.step_id, src.path)


def read_slate(store, src: Source) -> Any:
    """slateRead semantics: file contents, a file's metatag, a metatag across the folder, index or tree."""
    folder = store.slate(src.slate).folder(src.folder)
    if src.metatag is None:
        return folder.read_text(src.file) or ""
    if src.file is not None:
        return folder.get_metatag(src.file, src.metatag)
    if src.metatag == "index":
        return folder.index()
    if src.metatag == "tree":
        return folder.tree(src.depth)
    return folder.metatag_values(src.metatag)


def join_survivors(value: Any) -> str:
    """A source value as text: several survivors joined with a blank line."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n\n".join(value)
    if isinstance(value, str):
        return value
    import json
    return json.dumps(value, ensure_ascii=False)


def resolve_field(f: FieldSpec, ctx: NodeCtx, state, store, knobs: dict) -> Any:
    """The value of one field for one node."""
    what = f'{f.type} field "{f.name}"'
    if f.type == "text":
        if f.source is None:
            return "" if f.value is None else (f.value if isinstance(f.value, str) else str(f.value))
        return join_survivors(resolve_source(f.source, ctx, state, store, what))
    if f.type == "slateRead":
        return read_slate(store, f.source)
    if f.type == "nodeInfo":
        return {"node": ctx.node, "nodes": ctx.nodes}
    if f.type == "ingest":
        return join_survivors(resolve_source(f.source, ctx, state, store, what))
    if f.type == "multi_ingest":
        v = resolve_source(f.source, ctx, state, store, what)
        items = v if isinstance(v, list) else [v]
        if len(items) == 1:
            return items[0] if isinstance(items[0], str) else join_survivors(items[0])
        return "\n\n".join(f"--- node {i} ---\n{join_survivors(t)}" for i, t in enumerate(items, start=1))
    if f.type == "knob":
        if f.knob not in knobs:
            raise SourceResolutionError(f'Step "{ctx.step_id}": knob field "{f.name}" reads knob "{f.knob}", '
                                        "which is not set", ctx.step_id, f.path)
        return knobs[f.knob]
    if f.type == "json":
        return f.value
    raise SourceResolutionError(f'Step "{ctx.step_id}": field "{f.name}" has unknown type {f.type!r}', ctx.step_id, f.path)
