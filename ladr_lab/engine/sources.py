"""Resolving fields and `from:` sources against the state of a run (seed 003's vocabulary).

One vocabulary, one meaning everywhere: `previous` is all survivors of the step executed just before
(inside a group's branch: the step before the group); `{stepId: X}` is X's survivors in the current
loop iteration; `nodeRef`/`node` pick one node (a pruned node is not available: pruned outputs never
flow on). Reading the current step is only possible node by node: its earlier nodes in a sequential
step, or its own output (`nodeRef: current`, or `from: output`) once the node has one.
"""
from __future__ import annotations

from typing import Any

from ..config.model import FieldSpec, Source, Step
from ..errors import NodeDependencyError, SourceResolutionError
from .state import NodeCtx, RunState, StepResult, Survivors, join_survivors

__all__ = ["check_dependencies", "read_slate", "resolve_field", "resolve_source"]


def _where(ctx: NodeCtx, what: str) -> str:
    return f'Step "{ctx.step_id}"' + (f" (if.{ctx.branch})" if ctx.branch else "") + f": {what}"


def _fail(cls, ctx: NodeCtx, what: str, src: Source):
    return cls(_where(ctx, what), ctx.step_id, src.path, node=ctx.node)


def _all(res: StepResult, ctx: NodeCtx, what: str, src: Source, label: str) -> Any:
    if not res.survivors:
        raise _fail(NodeDependencyError, ctx, f'{what} reads {label}, but step "{res.step_id}" left zero survivors',
                    src)
    return res.surviving()     # one survivor too: a JSON-typed metatag gets an array whatever the count


def resolve_source(src: Source, ctx: NodeCtx, state: RunState, store, what: str, max_chars: int | None = None) -> Any:
    """The value of a source: a string, Survivors (all survivors of a step, one or more), or a slate value."""
    if src.kind == "literal":
        return src.text or ""
    if src.kind == "input":
        if src.text not in state.inputs:
            hint = "--input TEXT" if src.text == "context" else f"--input-json '{{\"{src.text}\": ...}}'"
            raise _fail(SourceResolutionError, ctx, f"{what} reads input.{src.text}, which was not given ({hint})", src)
        return state.inputs[src.text]
    if src.kind == "output":
        if ctx.output is None:
            raise _fail(SourceResolutionError, ctx, f"{what} reads from: output before the step produced one", src)
        return ctx.output
    if src.kind == "previous":
        prev = state.previous
        if prev is None:
            raise _fail(SourceResolutionError, ctx, f"{what} reads from: previous, but no step has executed "
                                                    "before this one (previous requires a prior step to have "
                                                    "executed)", src)
        return _all(prev, ctx, what, src, "from: previous")
    if src.kind == "step":
        return _step_value(src, ctx, state, what)
    if src.kind == "slate":
        return read_slate(store, src, max_chars)
    raise _fail(SourceResolutionError, ctx, f"{what} has an unknown source kind {src.kind!r}", src)


def _step_value(src: Source, ctx: NodeCtx, state: RunState, what: str) -> Any:
    sid = src.step_id or ""
    own = sid == ctx.step_id
    res = ctx.own if own else state.results.get(sid)
    one = src.node is not None or src.node_ref in ("current", "previous")
    if not one:
        if own or res is None:
            raise _fail(SourceResolutionError, ctx, f'{what} reads {{stepId: {src.step_id}}}, which requires step '
                                                    f'"{src.step_id}" to have executed in the current loop', src)
        return _all(res, ctx, what, src, f'step "{src.step_id}"')
    k = src.node if src.node is not None else (ctx.node if src.node_ref == "current" else ctx.node - 1)
    if src.node_ref == "previous" and k < 1:
        return ""
    if own and k == ctx.node:
        if ctx.output is None:
            raise _fail(SourceResolutionError, ctx, f'{what} reads node {k} of step "{src.step_id}", which is this '
                                                    "node, before it produced an output", src)
        return ctx.output
    if res is None:
        raise _fail(SourceResolutionError, ctx, f'{what} reads step "{src.step_id}", which requires step '
                                                f'"{src.step_id}" to have executed in the current loop', src)
    n = res.node(k)
    if n is None:
        raise _fail(SourceResolutionError, ctx, f'{what} reads node {k} of step "{src.step_id}", which ran '
                                                f"{len(res.nodes)} node(s)" + (" so far" if own else ""), src)
    if not n.survived:
        raise _fail(NodeDependencyError, ctx, f'{what} reads node {k} of step "{src.step_id}", which was pruned', src)
    return n.output


def read_slate(store, src: Source, max_chars: int | None = None) -> Any:
    """slateRead semantics: file contents (cut at `max_chars`, saying so), a file's metatag, a metatag
    across the folder, index or tree."""
    folder = store.slate(src.slate).folder(src.folder)
    if src.metatag is None:
        file = src.file or ""
        if max_chars is None:
            return folder.read_text(file) or ""
        from .retrieve import bounded_text
        return bounded_text(folder, file, max_chars)[0] or ""
    if src.file is not None:
        return folder.get_metatag(src.file, src.metatag)
    if src.metatag == "index":
        return folder.index()
    if src.metatag == "tree":
        return folder.tree(src.depth)
    return folder.metatag_values(src.metatag)



def resolve_field(f: FieldSpec, ctx: NodeCtx, state: RunState, store, knobs: dict, max_chars: int | None = None) -> Any:
    """The value of one field for one node."""
    what = f'{f.type} field "{f.name}"'
    src = f.source
    if f.type == "nodeInfo":
        return {"node": ctx.node, "nodes": ctx.nodes}
    if f.type == "knob":
        if f.knob not in knobs:
            raise SourceResolutionError(f'Step "{ctx.step_id}": knob field "{f.name}" reads knob "{f.knob}", '
                                        "which is not set", ctx.step_id, f.path, node=ctx.node)
        return knobs[f.knob]
    if f.type == "json":
        return f.value
    if src is None:
        if f.type == "text":
            return "" if f.value is None else (f.value if isinstance(f.value, str) else str(f.value))
        raise SourceResolutionError(f'Step "{ctx.step_id}": {what} has no from:', ctx.step_id, f.path, node=ctx.node)
    if f.type == "slateRead":
        return read_slate(store, src, max_chars)
    if f.type in ("text", "ingest"):
        return join_survivors(resolve_source(src, ctx, state, store, what, max_chars))
    if f.type == "multi_ingest":
        v = resolve_source(src, ctx, state, store, what, max_chars)
        items = v if isinstance(v, Survivors) else Survivors([v])
        if len(items) == 1:
            return items[0] if isinstance(items[0], str) else join_survivors(items[0])
        # labelled with each survivor's own node number: after node 2 is pruned, node 3 stays "node 3"
        return "\n\n".join(f"--- node {k} ---\n{join_survivors(t)}" for k, t in zip(items.nodes, items, strict=True))
    raise SourceResolutionError(f'Step "{ctx.step_id}": field "{f.name}" has unknown type {f.type!r}', ctx.step_id,
                                f.path, node=ctx.node)


def check_dependencies(step: Step, state: RunState) -> None:
    """Before a step makes any model call: a step that reads all survivors of a step that left none
    does not run (seed 003: "Previous step had 0 survivors (all pruned): the step doesn't run")."""
    sources: list[tuple[Source, str, str | None]] = [(f.source, f'{f.type} field "{f.name}"', None)
                                                     for f in step.fields if f.source is not None]
    if step.gate is not None:
        for branch, act in (("then", step.gate.then), ("else", step.gate.else_)):
            sources += [(w.source, f"if.{branch} write", branch) for w in act.writes]
    if step.call is not None and step.call.source is not None:
        sources.append((step.call.source, "call.input", None))
    for src, what, where in sources:
        if src.kind == "previous":
            res = state.previous
        elif src.kind == "step" and src.node is None and src.node_ref in (None, "accumulate") \
                and src.step_id != step.id:
            res = state.results.get(src.step_id or "")
        else:
            continue
        if res is not None and not res.survivors:
            label = "from: previous" if src.kind == "previous" else f'step "{src.step_id}"'
            ctx = NodeCtx(step.id, 0, step.nodes, branch=where)
            raise NodeDependencyError(_where(ctx, f'{what} reads {label}, but step "{res.step_id}" left zero '
                                                  "survivors, so the step does not run"), step.id, src.path)
