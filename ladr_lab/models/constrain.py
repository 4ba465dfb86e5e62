"""`constrain: request`: the GBNF grammar that lets a local model emit a JSON object valid against a step's
requestMatch, or prose, and never a malformed request (issue 19; the model that uses it lands with `model: local`).

llama.cpp's JSON-Schema converter (`llama_cpp.llama_grammar.SchemaConverter`) writes the JSON half. It honours a
node's keywords only in some combinations and ignores the rest, which would make the grammar looser than the schema;
so the schema is first lowered into what it honours in full: annotations dropped, `minProperties: 1` (on an object
with optional properties) written as a choice of which property is there, and a small integer range
(`minimum`..`maximum`, at most 256 values) as its list of values. Any other keyword, or a combination the converter
would read only in part, is refused with a ModelError naming it and where it is. Strings never hold raw control
characters (JSON does not allow them). Prose is text that starts with neither `{`, `[`, whitespace nor a backtick
and holds no `{` or backtick, so it can hold neither a fenced nor an embedded JSON request.
`check_constrained` is the safety net: a constrained output that is JSON must be valid against requestMatch.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import ModelError
from .base import CallInfo

__all__ = ["MAX_ENUM_RANGE", "PROSE", "CallConstraint", "check_constrained", "constrained_grammar", "lower_schema"]

_ANNOTATIONS = frozenset({"title", "description", "$schema", "$id", "$comment", "examples", "default", "readOnly",
                          "writeOnly", "deprecated"})
# the keyword sets llama.cpp's JSON-Schema converter honours in full, by the kind of node (it reads one branch of a
# node and ignores the rest, so a node holding more than its kind's set would get a grammar looser than the schema)
_KINDS = (
    ("$ref", {"$ref"}),
    ("anyOf", {"anyOf", "type"}), ("oneOf", {"oneOf", "type"}),
    ("const", {"const", "type"}), ("enum", {"enum", "type"}),
    ("properties", {"type", "properties", "required", "additionalProperties"}),
    ("items", {"type", "items", "minItems", "maxItems"}), ("prefixItems", {"type", "prefixItems"}),
    ("pattern", {"type", "pattern"}), ("minLength", {"type", "minLength", "maxLength"}),
    ("maxLength", {"type", "minLength", "maxLength"}),
)
_PLAIN_TYPES = {"string", "number", "integer", "boolean", "null", "object", "array"}
MAX_ENUM_RANGE = 256   # an integer range up to this many values is written as their list
PROSE = 'prose ::= [^{\\[ \\t\\r\\n`\\x00] [^{`\\x00]*\n'


def constrained_grammar(schema: dict | None, where: str = "requestMatch", *, json_answer: bool = False) -> str:
    """The GBNF grammar of `constrain="request"`: a JSON object valid against `schema` (the requestMatch; None on a
    call that may not retrieve, such as the forced final) or an answer: prose, and, with `json_answer` (the step tests
    its output as JSON: slateWrite.match or if.jsonMatches), any JSON object. ModelError naming the keyword and where
    it is when `schema` holds one the grammar cannot express."""
    from llama_cpp.llama_grammar import SchemaConverter

    conv = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    choices = []
    if schema is not None:
        lowered = lower_schema(json.loads(json.dumps(schema)), where, "")
        try:
            choices.append(conv.visit(conv.resolve_refs(lowered, "request"), "request"))
        except (AssertionError, ValueError, KeyError, TypeError, NotImplementedError) as exc:
            raise ModelError(f"constrain: request cannot turn {where} into a grammar: {exc}") from exc
    if json_answer:      # any object, not the gate's or write's schema: that would decide the test for the model
        choices.append(conv.visit({"type": "object"}, "answer"))
    text = conv.format_grammar().replace('char ::= [^"\\\\]', 'char ::= [^"\\\\\\x00-\\x1F\\x7F]')  # JSON: no raw control chars
    lines = [line for line in text.splitlines() if not line.startswith("root ::=")]
    return "\n".join([*lines, "root ::= " + " | ".join([*choices, "prose"]), PROSE.rstrip("\n")]) + "\n"


@dataclass(frozen=True)
class CallConstraint:
    """How one call is constrained: its grammar, `kind` ("request" when it may retrieve, else "answer"; "+json" when
    any JSON object may be the answer too), the requestMatch a JSON output must satisfy to be a request, and whether
    any JSON object may be the answer."""

    grammar: str
    kind: str
    request_match: dict | None
    json_answer: bool

    @classmethod
    def of(cls, call: CallInfo) -> CallConstraint:
        """The constraint of `call` under `constrain="request"`."""
        may_request = call.request_match is not None and not call.forced_final
        schema = call.request_match if may_request else None
        json_answer = call.output_schema is not None and call.output_schema is not False
        grammar = constrained_grammar(schema, f'step "{call.step}" requestMatch', json_answer=json_answer)
        kind = ("request" if may_request else "answer") + ("+json" if json_answer else "")
        return cls(grammar, kind, schema, json_answer)

    def check(self, text: str, name: str) -> None:
        """A constrained output that looks like JSON must be what the grammar promised (a gap in it is an error)."""
        check_constrained(text, self.request_match, name, json_answer=self.json_answer)


def lower_schema(node: Any, where: str, at: str) -> Any:
    """`node` rewritten into what the converter honours in full (annotations dropped, `minProperties: 1` as a choice
    of which property is there, a small integer range as its values); ModelError for anything else."""
    if isinstance(node, bool):
        return {} if node else {"enum": []}
    if not isinstance(node, dict):
        raise ModelError(f"constrain: request: {where}{at or '/'} is not a schema")
    node = {k: v for k, v in node.items() if k not in _ANNOTATIONS}
    for key in ("properties", "$defs", "definitions"):
        if isinstance(node.get(key), dict):
            node[key] = {name: lower_schema(sub, where, f"{at}/{key}/{name}") for name, sub in node[key].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            node[key] = lower_schema(node[key], where, f"{at}/{key}")
    for key in ("anyOf", "oneOf", "prefixItems"):
        if isinstance(node.get(key), list):
            node[key] = [lower_schema(sub, where, f"{at}/{key}/{i}") for i, sub in enumerate(node[key])]
    if node.get("minProperties") == 0:
        node.pop("minProperties")
    if node.get("minProperties") == 1 and isinstance(node.get("properties"), dict) and not node.get("required"):
        node.pop("minProperties")
        return {"anyOf": [{**node, "required": [name]} for name in node["properties"]]}
    if node.get("type") == "integer" and ({"minimum", "maximum"} & node.keys()):
        lo, hi = node.pop("minimum", None), node.pop("maximum", None)
        if isinstance(lo, int) and isinstance(hi, int) and 0 <= hi - lo < MAX_ENUM_RANGE and not {"exclusiveMinimum", "exclusiveMaximum"} & node.keys():
            node = {k: v for k, v in node.items() if k != "type"}
            return {**node, "enum": list(range(lo, hi + 1))}
        raise ModelError(f'constrain: request cannot express an integer range "minimum"/"maximum" at {where}{at or "/"} '
                         f"wider than {MAX_ENUM_RANGE} values or open-ended: leave constrain out, or bound it")
    keys = node.keys() - {"$defs", "definitions"}
    types = node.get("type")
    if isinstance(types, list):     # the converter makes a choice of bare types of a list, dropping the node's other keys
        if keys <= {"type"} and all(isinstance(x, str) and x in _PLAIN_TYPES for x in types):
            return node
        raise ModelError(f'constrain: request cannot express "type": {json.dumps(types)} with other keywords at '
                         f"{where}{at or '/'} (llama.cpp's grammar keeps only the types of a list): leave constrain "
                         "out, or give each type its own branch of an anyOf")
    for kind, allowed in _KINDS:
        if kind in keys:
            if keys <= allowed:
                return node
            extra = sorted(keys - allowed)[0]
            break
    else:
        if keys <= {"type"} and (not keys or (isinstance(types, str) and types in _PLAIN_TYPES)):
            return node
        extra = sorted(keys - {"type"})[0] if keys - {"type"} else "type"
    raise ModelError(f'constrain: request cannot express the keyword "{extra}" at {where}{at or "/"} (llama.cpp\'s '
                     f"grammar would let through what requestMatch refuses): leave constrain out, or drop it")


def check_constrained(text: str, schema: dict | None, name: str, *, json_answer: bool = False) -> None:
    """A constrained output that looks like JSON must be valid against requestMatch (`schema`), or, with
    `json_answer`, be a JSON object: the grammar promised it."""
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return
    from ..round.validators import make_validator

    try:
        value = json.loads(stripped)
    except ValueError as exc:
        raise ModelError(f'model "{name}": a constrained output starts like JSON but does not parse (a gap in the '
                         f"grammar; please report it): {exc}") from exc
    if json_answer and isinstance(value, dict):
        return
    if schema is None:
        raise ModelError(f'model "{name}": a constrained output is JSON where only an answer was allowed (a gap in the '
                         f"grammar; please report it)")
    errors = list(make_validator(schema).iter_errors(value))
    if errors:
        raise ModelError(f'model "{name}": a constrained output is JSON that requestMatch refuses (a gap in the '
                         f"grammar; please report it): {errors[0].message[:300]}")
