"""Step and field rules: steps, fields, retrieve and calls (gates and writes are in `writes.py`).

Every independent problem of a block is its own rule, so one pass reports them all.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import ConfigError, short_repr, short_text
from .model import FIELD_TYPES, STEP_TYPES
from .references import ref_problems
from .rules import Doc, Site, StepScope, children, problem, rule, suggest, typename, whole, yaml_word


def step_scopes(doc: Doc) -> None:
    """Work out every step's scope once: id, type, enclosing group, and what `previous` names there.

    A group's branches are independent: inside any branch, at any depth, `previous` is the step
    executed before the group, never a sibling branch (docs/DECISIONS.md).
    """
    def walk(raw: Any, path: tuple, group: str | None, after_group: str | None) -> None:
        if not isinstance(raw, list):
            return
        before = after_group  # what `previous` names for the first step of this list
        for i, s in enumerate(raw):
            if not isinstance(s, dict):
                continue
            sid = s.get("id") if isinstance(s.get("id"), str) and s["id"].strip() else None
            stype = s.get("type", "normal")
            stype = stype if isinstance(stype, str) and stype in STEP_TYPES else "normal"
            scope = StepScope(id=sid, key=sid if sid is not None else f"#{i}", raw=s, path=path + (i,),
                              type=stype, group=group, after_group=before)
            doc.scopes[scope.path] = scope
            doc.steps.setdefault(scope.key, scope)
            if stype == "group":
                walk(s.get("steps"), scope.path + ("steps",), scope.key, before)
            if group is None:  # top level: the next step runs after this one; branches all run after `before`
                before = scope.key if stype == "group" else None
    walk(doc.data.get("steps"), ("steps",), None, None)


# ---- step lists ------------------------------------------------------------------------------------------
@rule("steps", "no-steps")
def _no_steps(site: Site) -> Iterator[ConfigError]:
    if not isinstance(site.raw, list) or not site.raw:
        yield problem("steps must be a non-empty list")


@rule("steps", "wrong-type")
def _step_items(site: Site) -> Iterator[ConfigError]:
    for i, s in enumerate(site.raw if isinstance(site.raw, list) else []):
        if not isinstance(s, dict):
            yield problem(f"a step must be a mapping (got {typename(s)})", at=(i,))


@children("steps")
def _below_steps(site: Site) -> Iterator[Site]:
    for i, s in enumerate(site.raw if isinstance(site.raw, list) else []):
        if isinstance(s, dict):
            yield site.at("step", s, (i,), step=site.doc.scopes[site.path + (i,)])


# ---- steps -----------------------------------------------------------------------------------------------
@rule("step", "step-id")
def _step_id(site: Site) -> Iterator[ConfigError]:
    if site.scope.id is None:
        yield problem("a step needs an id (a non-empty string)")


@rule("step", "duplicate-step-id")
def _duplicate_id(site: Site) -> Iterator[ConfigError]:
    first = site.doc.steps.get(site.scope.key)
    if site.scope.id is not None and first is not None and first.path != site.path:
        yield problem("id is used by another step too", at=("id",))


@rule("step", "step-type")
def _step_type(site: Site) -> Iterator[ConfigError]:
    stype = site.raw.get("type", "normal")
    if not isinstance(stype, str) or stype not in STEP_TYPES:
        yield problem(f'unknown step type "{short_text(stype)}"; use one of ' + ", ".join(STEP_TYPES), at=("type",),
                      suggestion=suggest(stype, STEP_TYPES))


def node_count(raw: Any) -> Any:
    """`nodes:` as a number when written as digits ("3"), else as written."""
    if isinstance(raw, str) and raw.strip().isdecimal():
        try:
            return int(raw)
        except ValueError:      # more digits than Python turns into an int (4,300): left as written
            return raw
    return raw


@rule("step", "nodes-value")
def _nodes(site: Site) -> Iterator[ConfigError]:
    nodes = node_count(site.raw.get("nodes", 1))
    if isinstance(nodes, str) and nodes.strip().isdecimal():
        yield problem(f"nodes is a {len(nodes.strip()):,}-digit number: far more than a run can start", at=("nodes",))
    elif not whole(nodes):
        yield problem(f"nodes must be a whole number >= 1 (got {short_repr(nodes)})", at=("nodes",))


MAX_UNBUDGETED_NODES = 10_000


def _count(n: int) -> str:
    """A node count as messages say it: 100,000,000 (a number too long to print is described)."""
    return f"{n:,}" if n.bit_length() < 1000 else short_repr(n)


def _max_llm_calls(site: Site) -> int | None:
    budget = site.doc.data.get("executionBudget") if isinstance(site.doc.data, dict) else None
    cap = budget.get("maxLlmCalls") if isinstance(budget, dict) else None
    return cap if whole(cap) else None


@rule("step", "nodes-unbounded")
def _nodes_unbounded(site: Site) -> Iterator[ConfigError]:
    # every node of a step starts at once: with no budget to stop them, 10^20 nodes is a hang, not a run
    nodes = node_count(site.raw.get("nodes", 1))
    if whole(nodes, MAX_UNBUDGETED_NODES + 1) and _max_llm_calls(site) is None:
        yield problem(f"nodes is {_count(nodes)}: above {MAX_UNBUDGETED_NODES:,} a step needs an "
                      "executionBudget.maxLlmCalls to stop it", at=("nodes",))


@rule("step", "nodes-over-budget")
def _nodes_over_budget(site: Site) -> Iterator[ConfigError]:
    nodes, cap = node_count(site.raw.get("nodes", 1)), _max_llm_calls(site)
    if cap is not None and whole(nodes, cap + 1):
        yield problem(f"nodes is {_count(nodes)}, more than executionBudget.maxLlmCalls ({cap:,}): the step alone "
                      "exhausts the budget (at most that many nodes run)", at=("nodes",), severity="warning")


@rule("step", "wrong-type")
def _step_types(site: Site) -> Iterator[ConfigError]:
    raw = site.raw
    fields = raw.get("fields")
    if fields is not None and not isinstance(fields, list):
        yield problem("fields must be a list", at=("fields",))
    for i, f in enumerate(fields if isinstance(fields, list) else []):
        if not isinstance(f, dict):
            yield problem(f"fields[{i}] must be a mapping", at=("fields", i))
    if raw.get("systemPrompt") is not None and not isinstance(raw["systemPrompt"], str):
        yield problem("systemPrompt must be a string" + yaml_word(site, ("systemPrompt",)),
                      at=("systemPrompt",))
    if "retrieve" in raw and not isinstance(raw["retrieve"], dict):
        yield problem("retrieve must be a mapping", at=("retrieve",))
    if "if" in raw and not isinstance(raw["if"], dict):
        yield problem("if must be a mapping with equals or jsonMatches, then and else", at=("if",))
    if "slateWrite" in raw and not isinstance(raw["slateWrite"], dict):
        yield problem("slateWrite must be a mapping", at=("slateWrite",))
    if raw.get("model") is not None and not isinstance(raw["model"], str):
        yield problem("model must be a string" + yaml_word(site, ("model",)), at=("model",))


@rule("step", "field-name")
def _field_names(site: Site) -> Iterator[ConfigError]:
    fields = site.raw.get("fields")
    for i, f in enumerate(fields if isinstance(fields, list) else []):
        if isinstance(f, dict) and not _field_name(f):
            yield problem(f"fields[{i}] needs a name", at=("fields", i))


def _field_name(f: dict) -> str | None:
    name = f.get("name")
    return name if isinstance(name, str) and name.strip() else None


@rule("step", "duplicate-field")
def _duplicate_fields(site: Site) -> Iterator[ConfigError]:
    fields = site.raw.get("fields")
    seen: set[str] = set()
    for i, f in enumerate(fields if isinstance(fields, list) else []):
        name = _field_name(f) if isinstance(f, dict) else None
        if name is None:
            continue
        if name in seen:
            yield problem(f'field "{name}" is declared twice', at=("fields", i, "name"), field=name)
        seen.add(name)


@rule("step", "retrieve-step-type")
def _retrieve_step_type(site: Site) -> Iterator[ConfigError]:
    if "retrieve" in site.raw and site.scope.type not in ("normal", "sequential"):
        yield problem(f"retrieve is only valid on normal or sequential steps (this is a {site.scope.type} step)",
                      at=("retrieve",))


@rule("step", "group-gate")
def _group_gate(site: Site) -> Iterator[ConfigError]:
    if site.scope.type == "group" and "if" in site.raw:
        yield problem("if: is not valid on a group step: a group has no output of its own to test; put the gate "
                      "on a step after the group", at=("if",))


@rule("step", "group-write")
def _group_write(site: Site) -> Iterator[ConfigError]:
    if site.scope.type == "group" and "slateWrite" in site.raw:
        yield problem("slateWrite: is not valid on a group step: a group has no output of its own to write; put "
                      "the slateWrite on a step after the group", at=("slateWrite",))


@rule("step", "group-steps")
def _group_steps(site: Site) -> Iterator[ConfigError]:
    if site.scope.type != "group" and "steps" in site.raw:
        yield problem("steps: is only valid on a group step", at=("steps",))


@rule("step", "call-block")
def _call_block(site: Site) -> Iterator[ConfigError]:
    if site.scope.type == "call" and not isinstance(site.raw.get("call"), dict):
        yield problem("a call step needs call: {ladder: self|PATH, input: SOURCE, maxDepth: N}", at=("call",),
                      rule="call-block")
    elif site.scope.type != "call" and "call" in site.raw:
        yield problem("call: is only valid on a call step", at=("call",))


@rule("step", "ignored-prompt")
def _ignored_prompt(site: Site) -> Iterator[ConfigError]:
    fields, prompt = site.raw.get("fields"), site.raw.get("systemPrompt")
    if site.scope.type in ("group", "call") and (fields or prompt):
        yield problem(f"a {site.scope.type} step makes no model call of its own; its fields and systemPrompt "
                      "are ignored", severity="warning")


@children("step")
def _below_step(site: Site) -> Iterator[Site]:
    raw = site.raw
    fields = raw.get("fields")
    for i, f in enumerate(fields if isinstance(fields, list) else []):
        name = _field_name(f) if isinstance(f, dict) else None
        if name is not None:
            yield site.at("field", f, ("fields", i), field=name)
    if isinstance(raw.get("retrieve"), dict):
        yield site.at("retrieve", raw["retrieve"], ("retrieve",))
    if isinstance(raw.get("if"), dict):
        yield site.at("if", raw["if"], ("if",))
    if isinstance(raw.get("slateWrite"), dict):
        yield site.at("slateWrite", raw["slateWrite"], ("slateWrite",), what="slateWrite")
    if site.scope.type == "call" and isinstance(raw.get("call"), dict):
        yield site.at("call", raw["call"], ("call",))
    if site.scope.type == "group":
        yield site.at("steps", raw.get("steps"), ("steps",))


# ---- fields ----------------------------------------------------------------------------------------------
def _ftype(site: Site) -> str | None:
    ftype = site.raw.get("type")
    return ftype if isinstance(ftype, str) and ftype in FIELD_TYPES else None


def knob_name(raw: dict) -> Any:
    """The knob a `knob` field reads: `knob: NAME` (or `from: knobs.NAME`)."""
    knob = raw.get("knob") or raw.get("from")
    if isinstance(knob, str) and knob.startswith("knobs."):
        knob = knob[6:]
    return knob


@rule("field", "field-type")
def _field_type(site: Site) -> Iterator[ConfigError]:
    if _ftype(site) is None:
        ftype = site.raw.get("type")
        yield problem(f'field "{site.field}" has unknown type "{short_text(ftype)}"; use one of ' + ", ".join(FIELD_TYPES),
                      at=("type",), suggestion=suggest(ftype, FIELD_TYPES))


@rule("field", "field-needs-source")
def _field_source(site: Site) -> Iterator[ConfigError]:
    raw, ftype, name = site.raw, _ftype(site), site.field
    if ftype == "text" and "from" not in raw and "value" not in raw:
        yield problem(f'text field "{name}" needs from: (input.context, input.NAME) or value:')
    elif ftype == "slateRead" and not isinstance(raw.get("from"), dict):
        yield problem(f'slateRead field "{name}" needs from: {{slate, folder, file?, metatag?}}')
    elif ftype in ("ingest", "multi_ingest") and "from" not in raw:
        yield problem(f'{ftype} field "{name}" needs from:')
    elif ftype == "knob" and (not isinstance(knob_name(raw), str) or not knob_name(raw)):
        yield problem(f'knob field "{name}" needs knob: NAME')
    elif ftype == "json" and "value" not in raw:
        yield problem(f'json field "{name}" needs value:')


@rule("field", "ingest-output")
def _ingest_output(site: Site) -> Iterator[ConfigError]:
    ftype = _ftype(site)
    if ftype in ("ingest", "multi_ingest") and site.raw.get("from") == "output":
        yield problem(f'{ftype} field "{site.field}" cannot read from: output (the step has not run yet)',
                      at=("from",))


@children("field")
def _below_field(site: Site) -> Iterator[Site]:
    raw, ftype = site.raw, _ftype(site)
    what = f'{ftype} field "{site.field}"'
    if ftype == "text" and "from" in raw:
        yield site.at("source", raw["from"], ("from",), what=what, inputs=True)
    elif ftype in ("ingest", "multi_ingest") and "from" in raw:
        yield site.at("source", raw["from"], ("from",), what=what)
    elif ftype == "slateRead" and isinstance(raw.get("from"), dict):
        yield site.at("slate-read", raw["from"], ("from",), what=what)


# ---- retrieve --------------------------------------------------------------------------------------------
@rule("retrieve", "max-rounds")
def _max_rounds(site: Site) -> Iterator[ConfigError]:
    mr = site.raw.get("maxRounds")
    if mr is None:
        yield problem("retrieve.maxRounds is required (a whole number > 0).")
    elif not isinstance(mr, int) or isinstance(mr, bool):
        yield problem(f"retrieve.maxRounds must be a whole number (got {short_repr(mr)}).", at=("maxRounds",))
    elif mr <= 0:
        yield problem(f"retrieve.maxRounds must be > 0 (got {short_repr(mr)}).", at=("maxRounds",))


@rule("retrieve", "retrieve-as")
def _retrieve_as(site: Site) -> Iterator[ConfigError]:
    as_ = site.raw.get("as")
    if not isinstance(as_, str) or not as_.strip():
        yield problem("retrieve.as must be a non-empty field name.", at=("as",) if "as" in site.raw else ())


@rule("retrieve", "retrieve-to")
def _retrieve_to(site: Site) -> Iterator[ConfigError]:
    if not isinstance(site.raw.get("to"), dict):
        yield problem("retrieve.to must be {slate: ..., folder: ...}", at=("to",) if "to" in site.raw else ())


@children("retrieve")
def _below_retrieve(site: Site) -> Iterator[Site]:
    if isinstance(site.raw.get("to"), dict):
        yield site.at("retrieve-to", site.raw["to"], ("to",), what="retrieve.to")
    yield site.at("schema", site.raw.get("requestMatch"), ("requestMatch",), what="retrieve.requestMatch")


@rule("retrieve-to", "unknown-slate")
def _retrieve_to_ref(site: Site) -> Iterator[ConfigError]:
    yield from ref_problems(site.doc, "retrieve.to", site.raw, reading=False)


# ---- calls -----------------------------------------------------------------------------------------------
@rule("call", "call-ladder")
def _call_ladder(site: Site) -> Iterator[ConfigError]:
    lad = site.raw.get("ladder", "self")
    if not isinstance(lad, str) or not lad:
        yield problem('call.ladder must be "self" or a path', at=("ladder",))


@rule("call", "call-max-depth")
def _call_max_depth(site: Site) -> Iterator[ConfigError]:
    md = site.raw.get("maxDepth", 3)
    if not whole(md):
        yield problem(f"call.maxDepth must be a whole number >= 1 (got {short_repr(md)})", at=("maxDepth",))


@children("call")
def _below_call(site: Site) -> Iterator[Site]:
    if "input" in site.raw:
        yield site.at("source", site.raw["input"], ("input",), what="call.input", inputs=True)

__all__ = ["knob_name", "node_count", "step_scopes"]
