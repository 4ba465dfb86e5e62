"""Document → frozen models, for a document the rules found no error in (so nothing here checks again)."""
from __future__ import annotations

from typing import Any

from .model import (
    Action,
    Budget,
    CallSpec,
    FieldSpec,
    GateSpec,
    Retrieve,
    SlateWrite,
    Source,
    Step,
    Target,
    WriteSpec,
)
from .references import jump_target
from .schemas import parse_schema
from .steps import knob_name, node_count
from .writes import write_items, write_policy


def build_budget(data: dict) -> Budget:
    """executionBudget as a Budget (no caps when absent)."""
    eb = data.get("executionBudget") or {}
    return Budget(max_llm_calls=eb.get("maxLlmCalls"), max_steps=eb.get("maxSteps"))


def build_steps(raw: list, path: tuple) -> tuple[Step, ...]:
    """A list of steps (the ladder's, or a group's branches)."""
    return tuple(_step(s, path + (i,)) for i, s in enumerate(raw))


def _step(raw: dict, p: tuple) -> Step:
    stype = raw.get("type", "normal")
    prompt = raw.get("systemPrompt")
    return Step(
        id=raw["id"], type=stype, nodes=node_count(raw.get("nodes", 1)),
        fields=tuple(_field(f, p + ("fields", i)) for i, f in enumerate(raw.get("fields") or ())),
        system_prompt=prompt if isinstance(prompt, str) else "",
        retrieve=_retrieve(raw["retrieve"], p + ("retrieve",)) if "retrieve" in raw else None,
        gate=_gate(raw["if"], p + ("if",)) if "if" in raw else None,
        slate_write=_slate_write(raw["slateWrite"], p + ("slateWrite",)) if "slateWrite" in raw else None,
        steps=build_steps(raw["steps"], p + ("steps",)) if stype == "group" else (),
        call=_call(raw["call"], p + ("call",)) if stype == "call" else None,
        model=raw.get("model"), path=p,
    )


def _field(raw: dict, p: tuple) -> FieldSpec:
    ftype = raw["type"]
    src, knob = None, None
    if ftype == "text" and "from" in raw:
        src = source(raw["from"], p + ("from",), inputs=True)
    elif ftype in ("ingest", "multi_ingest"):
        src = source(raw["from"], p + ("from",))
    elif ftype == "slateRead":
        src = source(raw["from"], p + ("from",))
    elif ftype == "knob":
        knob = knob_name(raw)
    return FieldSpec(name=raw["name"], type=ftype, source=src, value=raw.get("value"), knob=knob, path=p)


def source(raw: Any, path: tuple, *, inputs: bool = False) -> Source:
    """A `from:` source (seed 003's vocabulary, plus `input.NAME` where `inputs` allows it)."""
    if isinstance(raw, str):
        if raw in ("previous", "output"):
            return Source(raw, path=path)
        if inputs and (raw == "input" or raw.startswith("input.")):
            name = raw.split(".", 1)[1] if "." in raw else "context"
            return Source("input", text=name or "context", path=path)
        return Source("literal", text=raw, path=path)
    if not isinstance(raw, dict):
        return Source("literal", text=str(raw), path=path)
    if "stepId" in raw:
        return Source("step", step_id=str(raw["stepId"]), node_ref=raw.get("nodeRef"), node=raw.get("node"),
                      path=path)
    return Source("slate", slate=raw["slate"], folder=raw["folder"].strip("/"), file=raw.get("file"),
                  metatag=raw.get("metatag"), depth=raw.get("depth"), path=path)


def _schema(raw) -> dict:
    schema = parse_schema(raw)
    assert schema is not None   # the schema rules found no problem, so it parsed
    return schema


def _retrieve(raw: dict, p: tuple) -> Retrieve:
    return Retrieve(slate=raw["to"]["slate"], folder=raw["to"]["folder"].strip("/"), as_=raw["as"].strip(),
                    max_rounds=raw["maxRounds"], request_match=_schema(raw["requestMatch"]), path=p)


def _target(raw: dict) -> Target:
    return Target(slate=raw["slate"], folder=raw["folder"].strip("/"), file=raw.get("file"),
                  metatag=raw.get("metatag"))


def _slate_write(raw: dict, p: tuple) -> SlateWrite:
    return SlateWrite(target=_target(raw["to"]), match=_schema(raw["match"]), on=write_policy(raw),
                      field=raw.get("field"), key=raw.get("key"), path=p)


def _gate(raw: dict, p: tuple) -> GateSpec:
    equals = str(raw["equals"]) if "equals" in raw else None
    json_matches = parse_schema(raw["jsonMatches"]) if "jsonMatches" in raw else None
    return GateSpec(equals=equals, json_matches=json_matches, then=_action(raw.get("then", "continue"), p + ("then",)),
                else_=_action(raw.get("else", "continue"), p + ("else",)), path=p)


def _action(raw: Any, p: tuple) -> Action:
    if isinstance(raw, str):
        return Action(kind=raw, path=p)
    jump = jump_target(raw.get("jump"))
    writes = tuple(WriteSpec(target=_target(w["to"]), source=source(w["from"], p + at + ("from",)),
                             on=write_policy(w), key=w.get("key"), path=p + at) for at, w in write_items(raw))
    return Action(kind="jump" if jump else "write", jump=jump, writes=writes, path=p)


def _call(raw: dict, p: tuple) -> CallSpec:
    src = source(raw["input"], p + ("input",), inputs=True) if "input" in raw else None
    return CallSpec(ladder=raw.get("ladder", "self"), source=src, max_depth=raw.get("maxDepth", 3), path=p)

__all__ = ["build_budget", "build_steps", "source"]
