"""A suggested requestMatch, from labelled outputs: a family of schemas built from what the request-labelled outputs
contain (the form, required keys, a closed key set, property types, small enums, array bounds, path patterns,
property counts, an anyOf over the request modes), searched greedily, each candidate judged by the engine's own
`Judge`; the precision/recall frontier, simplest first, each constraint explained by the labelled outputs it
rejects, cross-validated on labels it was not fitted to, never refusing the systemPrompt's request example nor
loose (the lint rules), and, where the labels contradict each other, the outputs that collide instead of a schema.

The family is a conjunction: a schema accepts a value exactly when the form's base schema and every constraint,
each on its own, accept it (keywords in one schema object are ANDed, and each constraint adds its own). So each
constraint is validated once over the distinct values (cached across calls), and a candidate's verdicts are bit
operations; the schemas shown are then judged again as variants of the SchemaTuning, by `Judge`, and those are
the figures reported (a property test checks that the two agree). docs/analysis.md, "Suggest".
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..display import Displayable
from ..errors import LadrError
from ..round.verdict import Judge, extraction
from ..round.vocabulary import MODES
from .labels import ANSWER, REQUEST, Key
from .lint_rules import FINAL_LOOKING, prompt_examples
from .tuning import RoundOutput, SchemaTuning, tune_request_match

__all__ = ["Collision", "Constraint", "Explanation", "Fold", "Suggestion", "SuggestedSchema", "build_schema",
           "genson_schema", "suggest_request_match"]

SUGGESTED = "suggested"
ENUM_MAX = 3                # a property whose requests hold at most this many distinct scalars may be an enum
PARTIAL = 0.5               # a key in at least this share of the requests (not all) is a candidate `required`
LOOSE_PROBES: tuple[dict, ...] = ({}, *FINAL_LOOKING)     # what the lint's `loose-request-match` tries: never accepted by a suggestion
COSTS = {"required": 1, "any-mode": 2, "closed": 1, "type": 1, "items-type": 1, "min-items": 1, "max-items": 1,
         "min-properties": 2, "max-properties": 2, "pattern": 3, "enum": 3}
_BASE_TEXT = {"bare": "any object", "wrapped": "an object `request`"}
BOTH = "both"               # the form of an anyOf of a bare and a wrapped schema (requests written both ways)
ANY_OF_COST = 1             # what joining the two forms adds: a single form is preferred where it does as well
_JUDGE = Judge()            # kept across calls: a new label re-validates nothing already seen
_SCHEMAS: dict[str, dict] = {}      # canonical text -> one dict, so the Judge's cache (by id) hits across calls


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _shared(schema: dict) -> dict:
    """The one dict for this schema's text (the Judge caches by identity)."""
    global _JUDGE
    key = _canon(schema)
    got = _SCHEMAS.get(key)
    if got is None:
        if len(_SCHEMAS) > 4096:        # bounded: a notebook that suggests all day keeps its memory
            _SCHEMAS.clear()
            _JUDGE = Judge()
        got = _SCHEMAS[key] = schema
    return got


# ---- constraints and schemas ----------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Constraint:
    """One constraint of the family: where it applies ("top" or "request", then property names, "*" for an
    array's items), the keywords it adds there, its cost (simplicity), how it reads, and what a value it
    rejects is like ("that lack `files`")."""

    kind: str
    where: tuple[str, ...]
    keywords: tuple[tuple[str, Any], ...]
    text: str
    rejects_what: str

    @property
    def cost(self) -> int:
        """How much it adds to a schema (a required key 1, a pattern or an enum 3): the frontier is simplest first."""
        return COSTS.get(self.kind, 1)

    def key(self) -> str:
        """A stable identity (kind, place, keywords)."""
        return _canon([self.kind, list(self.where), [list(k) for k in self.keywords]])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Constraint) and other.key() == self.key()

    def __hash__(self) -> int:
        return hash(self.key())


_ORDER = ("$schema", "type", "required", "additionalProperties", "minProperties", "maxProperties", "properties",
          "anyOf", "enum", "minItems", "maxItems", "items", "pattern")


def _tidy(node: Any) -> Any:
    if isinstance(node, dict):
        keys = sorted(node, key=lambda k: (_ORDER.index(k) if k in _ORDER else len(_ORDER), k))
        return {k: _tidy(node[k]) for k in keys}
    if isinstance(node, list):
        return [_tidy(v) for v in node]
    return node


def build_schema(form: str, constraints: list[Constraint] | tuple[Constraint, ...]) -> dict:
    """The requestMatch of the `form` ("bare" or "wrapped") with these constraints: the base (an object; wrapped:
    with an object `request`) and each constraint's keywords added at its place."""
    req: dict = {"type": "object"}
    top: dict = req if form == "bare" else {"type": "object", "required": ["request"], "properties": {"request": req}}
    for c in constraints:
        node = top if c.where[0] == "top" else req
        for seg in c.where[1:]:
            node = node.setdefault("items", {}) if seg == "*" else node.setdefault("properties", {}).setdefault(seg, {})
        for name, value in c.keywords:
            if name == "required":
                node["required"] = [*node.get("required", []), *[k for k in value if k not in node.get("required", [])]]
                props = node.setdefault("properties", {})   # named there too: `constrain: request` (llama.cpp's
                for k in value:                              # converter) cannot hold a required key it does not list
                    props.setdefault(k, {})
            elif name == "properties":
                props = node.setdefault("properties", {})
                for k in value:
                    props.setdefault(k, {})
            else:
                node[name] = value
    return _tidy(top)


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _type_keyword(types: set[str]) -> Any:
    if "number" in types and "integer" in types:
        types = types - {"integer"}
    got = sorted(types)
    return got[0] if len(got) == 1 else got


def _path_pattern(strings: list[str]) -> str | None:
    """`^[^/\\s]\\S*\\.EXT$` when every string is a relative path with one extension, `^[^/\\s]\\S*$` when they are
    relative paths without spaces, else None."""
    if not strings or not all(s and not s.startswith("/") and not re.search(r"\s", s) for s in strings):
        return None
    exts = {s.rsplit(".", 1)[1] for s in strings if "." in s.rsplit("/", 1)[-1]}
    if len(exts) == 1 and all("." in s.rsplit("/", 1)[-1] for s in strings):
        ext = next(iter(exts))
        if re.fullmatch(r"[A-Za-z0-9]{1,8}", ext):
            return rf"^[^/\s]\S*\.{ext}$"
    return r"^[^/\s]\S*$"


def _name(where: tuple[str, ...]) -> str:
    return "/".join(where[1:]) or ("the top level" if where[0] == "top" else "the request")


def _object_constraints(where: tuple[str, ...], objs: list[dict], depth: int, top_level: bool) -> list[Constraint]:
    """The constraints of the objects at `where` (every object the requests have there)."""
    out: list[Constraint] = []
    n = len(objs)
    counts = Counter(k for o in objs for k in o)
    keys = list(dict.fromkeys(k for o in objs for k in o))
    place = _name(where)
    if not (top_level and where[0] == "top"):
        for k in keys:
            if counts[k] == n or (counts[k] >= PARTIAL * n and n >= 4):
                out.append(Constraint("required", where, (("required", [k]),), f"required: [{k}]"
                                      + ("" if len(where) == 1 else f" in {place}"), f"that lack `{k}`"))
        modes = [m for m in keys if m in MODES]
        if where == ("request",) and len(modes) >= 2 and not any(counts[m] == n for m in modes):
            out.append(Constraint("any-mode", where, (("anyOf", [{"required": [m]} for m in modes]),),
                                  "anyOf: " + " | ".join(f"required: [{m}]" for m in modes),
                                  f"that name none of {', '.join(modes)}"))
    if keys:
        out.append(Constraint("closed", where, (("additionalProperties", False), ("properties", keys)),
                              f"additionalProperties: false{'' if len(where) == 1 else ' in ' + place} "
                              f"(only {', '.join(keys)})", "that carry"))
    sizes = [len(o) for o in objs]
    if min(sizes) >= 1 and not (top_level and where[0] == "top"):
        out.append(Constraint("min-properties", where, (("minProperties", min(sizes)),),
                              f"minProperties: {min(sizes)}" + ("" if len(where) == 1 else f" in {place}"),
                              f"with fewer than {min(sizes)} key(s)"))
    if not (top_level and where[0] == "top"):
        out.append(Constraint("max-properties", where, (("maxProperties", max(sizes)),),
                              f"maxProperties: {max(sizes)}" + ("" if len(where) == 1 else f" in {place}"),
                              f"with more than {max(sizes)} key(s)"))
    for k in keys:
        if top_level and where[0] == "top" and k == "request":
            continue
        values = [o[k] for o in objs if k in o]
        out += _value_constraints((*where, k), values, depth)
    return out


def _value_constraints(where: tuple[str, ...], values: list[Any], depth: int) -> list[Constraint]:
    """The constraints of one property's values."""
    out: list[Constraint] = []
    prop = "/".join(where[1:])
    types = {_json_type(v) for v in values}
    tk = _type_keyword(types)
    shown = tk if isinstance(tk, str) else " or ".join(tk)
    out.append(Constraint("type", where, (("type", tk),), f"{prop}: {{type: {shown}}}", f"whose `{prop}` is not {shown}"))
    scalars = [v for v in values if isinstance(v, (str, int, bool)) and not isinstance(v, float)]
    distinct = list(dict.fromkeys(scalars))
    if len(scalars) == len(values) and 1 <= len(distinct) <= ENUM_MAX and len(values) >= 2 * len(distinct) \
            and not all(isinstance(v, str) and "/" in v for v in distinct):
        out.append(Constraint("enum", where, (("enum", distinct),), f"{prop}: {{enum: {_canon(distinct)}}}",
                              f"whose `{prop}` is none of {', '.join(map(str, distinct))}"))
    strings = [v for v in values if isinstance(v, str)]
    if types == {"string"}:
        pat = _path_pattern(strings)
        if pat is not None and any("/" in s or "." in s for s in strings):
            out.append(Constraint("pattern", where, (("pattern", pat),), f"{prop}: {{pattern: {pat!r}}}",
                                  f"whose `{prop}` does not match {pat}"))
    if types == {"array"}:
        lens = [len(v) for v in values]
        if min(lens) >= 1:
            out.append(Constraint("min-items", where, (("minItems", min(lens)),), f"{prop}: {{minItems: {min(lens)}}}",
                                  f"with fewer than {min(lens)} item(s) in `{prop}`"))
        out.append(Constraint("max-items", where, (("maxItems", max(lens)),), f"{prop}: {{maxItems: {max(lens)}}}",
                              f"with more than {max(lens)} item(s) in `{prop}`"))
        items = [i for v in values for i in v]
        if items:
            itypes = {_json_type(i) for i in items}
            it = _type_keyword(itypes)
            ishown = it if isinstance(it, str) else " or ".join(it)
            out.append(Constraint("items-type", (*where, "*"), (("type", it),), f"{prop}: {{items: {{type: {ishown}}}}}",
                                  f"with an item of `{prop}` that is not {ishown}"))
            if itypes == {"string"}:
                pat = _path_pattern(items)
                if pat is not None:
                    out.append(Constraint("pattern", (*where, "*"), (("pattern", pat),),
                                          f"{prop}: {{items: {{pattern: {pat!r}}}}}",
                                          f"with an item of `{prop}` that does not match {pat}"))
    if types == {"object"} and depth < 2:
        out += _object_constraints(where, [v for v in values if isinstance(v, dict)], depth + 1, False)
    return out


def _family(form: str, values: list[Any]) -> list[Constraint]:
    """Every constraint of the form's family, fitted to the request values given (each accepts all of them)."""
    if form == "wrapped":
        reqs = [v["request"] for v in values]
        out = _object_constraints(("request",), reqs, 0, False)
        out += _object_constraints(("top",), values, 0, True)
    else:
        out = _object_constraints(("request",), values, 0, False)
    seen: set[str] = set()
    unique = []
    for c in out:
        if c.key() not in seen:
            seen.add(c.key())
            unique.append(c)
    return unique


def _form(value: Any) -> str:
    return "wrapped" if isinstance(value, dict) and isinstance(value.get("request"), dict) else "bare"


def _names_mode(value: Any) -> bool:
    req = value.get("request") if isinstance(value, dict) and isinstance(value.get("request"), dict) else value
    return isinstance(req, dict) and any(m in req for m in MODES)


# ---- the data: distinct values, masks over outputs --------------------------------------------------------------

def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class _Data:
    """One step's outputs as bit masks: which have JSON, which name a mode, each distinct value's outputs; the
    probes (the lint's loose probes and the systemPrompt's examples) as values of their own."""

    def __init__(self, outputs: list[RoundOutput], examples: list[Any]) -> None:
        self.outputs = outputs
        self.values: list[Any] = []
        self.texts: list[str] = []           # an output (or a probe's JSON) holding each value, for the Judge
        self.value_bits: list[int] = []
        self.value_of: list[int | None] = []
        index: dict[str, int] = {}
        self.has_json = self.mode = 0
        for i, o in enumerate(outputs):
            ext = extraction(o.output)
            if not ext.found:
                self.value_of.append(None)
                continue
            key = _canon(ext.value)
            j = index.get(key)
            if j is None:
                j = index[key] = len(self.values)
                self.values.append(ext.value)
                self.texts.append(o.output)
                self.value_bits.append(0)
            self.value_bits[j] |= 1 << i
            self.value_of.append(j)
            self.has_json |= 1 << i
            if _names_mode(ext.value):
                self.mode |= 1 << i
        self.probes = [_canon(p) for p in LOOSE_PROBES]
        self.example_values = list(examples)
        self.examples = [_canon(e) for e in examples]
        self._cache: dict[str, tuple[int, int, int]] = {}

    def rejects(self, schema: dict) -> tuple[int, int, int]:
        """(outputs, loose probes, examples) the schema rejects, as masks (outputs without JSON count as rejected)."""
        key = _canon(schema)
        got = self._cache.get(key)
        if got is not None:
            return got
        s = _shared(schema)
        out = 0
        for j, text in enumerate(self.texts):
            if not _JUDGE.matches("requestMatch", s, text):
                out |= self.value_bits[j]
        out |= ((1 << len(self.outputs)) - 1) & ~self.has_json
        probes = sum(1 << n for n, p in enumerate(self.probes) if not _JUDGE.matches("requestMatch", s, p))
        examples = sum(1 << n for n, e in enumerate(self.examples) if not _JUDGE.matches("requestMatch", s, e))
        got = self._cache[key] = (out, probes, examples)
        return got


@dataclass(frozen=True)
class _Counts:
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else math.nan

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else math.nan

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        if math.isnan(p) or math.isnan(r):
            return math.nan
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def _count(accept: int, mode: int, req: int, ans: int) -> _Counts:
    """Request detection, counted as SchemaTuning counts it: an accepted output naming no mode (no_match) is fp on
    an answer and fn on a request."""
    tp = (accept & mode & req).bit_count()
    fp = (accept & ans).bit_count()
    return _Counts(tp, fp, req.bit_count() - tp, ans.bit_count() - fp)


def _f1(c: _Counts) -> float:
    f = c.f1
    return -1.0 if math.isnan(f) else f


@dataclass
class _State:
    """A candidate schema: one form and its constraints, or (form `both`) an anyOf of a bare and a wrapped one
    (`parts`; `constraints` then both parts'); what it accepts, probes accepted, examples refused (masks)."""

    form: str
    constraints: tuple[Constraint, ...]
    accept: int
    probes_accepted: int
    examples_refused: int
    parts: tuple[_State, ...] = ()

    @property
    def loose(self) -> bool:
        """Whether it accepts one of lint's loose probes ({} or a final-looking object)."""
        return self.probes_accepted != 0

    @property
    def examples_ok(self) -> bool:
        """Whether it accepts every request example of the systemPrompt."""
        return self.examples_refused == 0

    @property
    def cost(self) -> int:
        if self.parts:
            return sum(p.cost for p in self.parts) + ANY_OF_COST
        return sum(c.cost for c in self.constraints)

    def ident(self) -> str:
        """The same schema, the same text (the order of constraints aside)."""
        if self.parts:
            return _canon([BOTH, *[p.ident() for p in self.parts]])
        return _canon([self.form, sorted(c.key() for c in self.constraints)])

    def schema(self) -> dict:
        """The requestMatch it stands for."""
        if self.parts:
            return {"anyOf": [p.schema() for p in self.parts]}
        return build_schema(self.form, self.constraints)

    def texts(self) -> tuple[str, ...]:
        """Its constraints as they read (in an anyOf, each said with its form)."""
        if self.parts:
            return tuple(f"{p.form} form: {x}" for p in self.parts for x in (p.texts() or (_BASE_TEXT[p.form],)))
        return tuple(c.text for c in self.constraints)


class _Fit:
    """The family fitted to one set of labels (masks `req`, `ans` over the outputs): its constraints, what each
    rejects, the greedy path, the states visited."""

    def __init__(self, data: _Data, req: int, ans: int) -> None:
        self.data = data
        self.req, self.ans = req, ans
        self.families: dict[str, list[Constraint]] = {}
        self.left_out: list[tuple[Constraint, str]] = []
        self.base: dict[str, tuple[int, int, int]] = {}
        self.rej: dict[str, tuple[int, int, int]] = {}
        self.states: list[_State] = []
        reachable = req & data.mode
        by_form: dict[str, list[Any]] = {}
        self.form_req: dict[str, int] = {}      # the labelled requests of each form, as a mask
        for i in _bits(reachable):
            j = data.value_of[i]
            if j is not None:
                form = _form(data.values[j])
                by_form.setdefault(form, []).append(data.values[j])
                self.form_req[form] = self.form_req.get(form, 0) | 1 << i
        # the systemPrompt's examples are requests too: each form's constraints are fitted to its own examples
        # (so none refuses them), and the example's form is on offer even when no labelled request uses it
        own: dict[str, int] = {}
        if by_form:
            for n, e in enumerate(data.example_values):
                if _names_mode(e):
                    by_form.setdefault(_form(e), []).append(e)
                own[_form(e)] = own.get(_form(e), 0) | 1 << n
        for form, values in by_form.items():
            distinct = list({_canon(v): v for v in values}.values())
            base = data.rejects(build_schema(form, []))
            self.base[form] = base
            kept = []
            for c in _family(form, distinct):
                r = data.rejects(build_schema(form, [c]))
                if r[2] & ~base[2] & own.get(form, 0):      # an example of its own form (one naming no mode)
                    self.left_out.append((c, "it refuses the systemPrompt's request example"))
                    continue
                self.rej[form + c.key()] = r
                kept.append(c)
            self.families[form] = kept
        for form in self.families:
            self._greedy(form)
        self._join()

    def state(self, form: str, constraints: tuple[Constraint, ...]) -> _State:
        """A candidate: what it accepts (outputs), whether it is loose, whether it takes every prompt example."""
        out, probes, examples = self.base[form]
        for c in constraints:
            r = self.rej[form + c.key()]
            out, probes, examples = out | r[0], probes | r[1], examples | r[2]
        full = (1 << len(self.data.probes)) - 1
        return _State(form, constraints, ((1 << len(self.data.outputs)) - 1) & ~out, full & ~probes, examples)

    def _join(self) -> None:
        """Requests written both ways (bare and wrapped in `request`): the anyOf of a bare and a wrapped candidate,
        each pair of the two greedy paths that is not loose (a schema of one form misses the other's requests, or
        a single form's schema refuses the example of the other form)."""
        if len(self.families) < 2:
            return
        singles = {form: [s for s in self.states if s.form == form and not s.loose] for form in ("bare", "wrapped")}
        seen: set[str] = set()
        for a in singles["bare"]:
            for b in singles["wrapped"]:
                joined = _State(BOTH, a.constraints + b.constraints, a.accept | b.accept,
                                a.probes_accepted | b.probes_accepted, a.examples_refused & b.examples_refused,
                                (a, b))
                if joined.ident() not in seen:
                    seen.add(joined.ident())
                    self.states.append(joined)

    def counts(self, s: _State) -> _Counts:
        """The state's request detection on this fit's labels."""
        return _count(s.accept, self.data.mode, self.req, self.ans)

    def _rank(self, s: _State) -> tuple:
        return (not s.loose, _f1(self.counts(s)))

    def _greedy(self, form: str) -> None:
        """Add, one at a time, the constraint that most improves (not loose, F1), the cheapest among equals; each
        state on the way is a candidate; then drop the constraints whose removal changes nothing."""
        cur: tuple[Constraint, ...] = ()
        s = self.state(form, cur)
        self.states.append(s)
        pool = list(self.families[form])
        while True:
            best = None
            for c in pool:
                if c in cur:
                    continue
                t = self.state(form, (*cur, c))
                rank = (*self._rank(t), -c.cost, (self.ans & ~t.accept).bit_count())
                if best is None or rank > best[0]:
                    best = (rank, c, t)
            if best is None or best[0][:2] <= self._rank(s):
                break
            cur, s = (*cur, best[1]), best[2]
            self.states.append(s)
        pruned = self.prune(s)
        if pruned.constraints != s.constraints:
            self.states.append(pruned)

    def prune(self, s: _State) -> _State:
        """The state without each constraint (most costly first) whose removal keeps its verdicts on the labelled
        outputs and keeps it from being loose: where two constraints do the same work, the simpler stays."""
        cur = s.constraints
        target = (self.counts(s), s.loose)
        for c in sorted(s.constraints, key=lambda c: -c.cost):
            trial = tuple(d for d in cur if d is not c)
            t = self.state(s.form, trial)
            if (self.counts(t), t.loose) == target:
                cur = trial
        return self.state(s.form, cur)

    def best(self) -> _State | None:
        """The chosen state: not loose, the highest F1, then the fewest constraints (None when none is)."""
        ok = [s for s in self.states if not s.loose and s.examples_ok]
        if not ok:
            return None
        return max(ok, key=lambda s: (_f1(self.counts(s)), -s.cost, -len(s.constraints)))

    def tightest(self, form: str) -> _State:
        """Every constraint of the form's family that rejects none of its labelled requests: the narrowest schema
        of the form keeping them all."""
        mine = self.form_req.get(form, 0)
        keep = tuple(c for c in self.families[form] if not (self.rej[form + c.key()][0] & mine))
        return self.state(form, keep)


# ---- the result --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Explanation:
    """What one constraint of a suggested schema does on the labelled outputs: the answers and requests it rejects
    (keys), how many of them no other constraint rejects, and the sentence."""

    constraint: str
    answers: tuple[Key, ...]
    requests: tuple[Key, ...]
    alone: int
    text: str


@dataclass(frozen=True)
class SuggestedSchema:
    """One schema of the frontier: its name (a variant of the tuning), the schema, its constraints, request
    detection on the labels (recounted by the Judge), its cost, and what each constraint does."""

    name: str
    form: str
    schema: dict
    constraints: tuple[str, ...]
    tp: int
    fp: int
    fn: int
    tn: int
    cost: int
    explanations: tuple[Explanation, ...]
    constrain: str | None = None      # why `constrain: request` cannot turn it into a grammar (None: it can)

    @property
    def precision(self) -> float:
        """tp / (tp + fp) (NaN when nothing is judged a request)."""
        return _Counts(self.tp, self.fp, self.fn, self.tn).precision

    @property
    def recall(self) -> float:
        """tp / (tp + fn) (NaN when nothing is labelled a request)."""
        return _Counts(self.tp, self.fp, self.fn, self.tn).recall

    @property
    def f1(self) -> float:
        """The harmonic mean of precision and recall."""
        return _Counts(self.tp, self.fp, self.fn, self.tn).f1


@dataclass(frozen=True)
class Collision:
    """Labelled outputs no schema of the family tells apart: `kind` "same JSON" (a request and an answer with
    identical JSON) or "shape" (answers every schema of the family that keeps all the requests accepts), the
    requests and answers involved, and an example of the JSON."""

    kind: str
    requests: tuple[Key, ...]
    answers: tuple[Key, ...]
    value: str


@dataclass(frozen=True)
class Fold:
    """One cross-validation fold: the labels held out, and how the schema fitted to the others judged them."""

    fold: int
    held_out: int
    schema: dict | None
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def f1(self) -> float:
        """F1 on the held-out labels (NaN when undefined)."""
        return _Counts(self.tp, self.fp, self.fn, self.tn).f1


def _where(k: Key) -> str:
    row, step, node, rnd, it = k
    return f"row {row} round {rnd}" + (f" node {node}" if node != 1 else "") + (f" iteration {it}" if it != 1 else "")


def _some(keys: list[Key], n: int = 3) -> str:
    return ", ".join(_where(k) for k in keys[:n]) + (f", … ({len(keys)} in all)" if len(keys) > n else "")


@dataclass
class Suggestion(Displayable):
    """A suggested requestMatch for one step (`schema`, `best`), the frontier of schemas it chose from (simplest
    first), why each constraint is there, the cross-validation folds, the collisions, and the tuning (a
    SchemaTuning whose variants include the frontier's schemas, `suggested` the chosen one)."""

    step: str
    tuning: SchemaTuning
    frontier: list[SuggestedSchema]
    best: SuggestedSchema | None
    collisions: list[Collision]
    unreachable: list[Key]
    left_out: list[tuple[str, str]]
    examples: list[Any]
    folds: list[Fold] = field(default_factory=list)
    candidates: list[dict] = field(default_factory=list)
    _data: Any = None
    _fit: Any = None

    @property
    def schema(self) -> dict | None:
        """The suggested requestMatch (None when the labels cannot be separated, or there is nothing to fit)."""
        return self.best.schema if self.best is not None else None

    @property
    def separable(self) -> bool:
        """Whether a schema of the family tells every labelled request (that names a mode) from every answer."""
        return not self.collisions

    def cross_validated(self) -> dict[str, float]:
        """tp, fp, fn, tn, precision, recall and f1 over every fold's held-out labels (NaN when undefined)."""
        c = _Counts(sum(f.tp for f in self.folds), sum(f.fp for f in self.folds), sum(f.fn for f in self.folds),
                    sum(f.tn for f in self.folds))
        return {"folds": len(self.folds), "tp": c.tp, "fp": c.fp, "fn": c.fn, "tn": c.tn, "precision": c.precision,
                "recall": c.recall, "f1": c.f1}

    def variants(self) -> dict[str, dict]:
        """The frontier's schemas by name (`suggested` the chosen one): give them to `tune_request_match`."""
        return {s.name: s.schema for s in self.frontier}

    def next_to_label(self, n: int = 1) -> list[RoundOutput]:
        """The `n` unlabelled outputs whose label would most change the suggestion: where the schemas the search
        visited disagree most; then outputs of a JSON shape no label covers yet; then those whose JSON recurs most."""
        return [self.tuning.outputs[i] for i in _next(self._data, self._fit, n)]

    def save(self, path: str | Path) -> Path:
        """Write the suggested schema as JSON (for `trace tune --variant suggested=PATH`, or a ladder)."""
        if self.schema is None:
            raise LadrError("no schema was suggested: " + self.why_none())
        path = Path(path)
        path.write_text(json.dumps(self.schema, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return path

    def to_ladder(self, ladder: Any):
        """The ladder with this step's requestMatch replaced by the suggestion (an experiment re-judges it
        without a model call: it differs only in requestMatch)."""
        from ..config import Ladder
        from ..config.rewrite import replace_schema
        if self.schema is None:
            raise LadrError("no schema was suggested: " + self.why_none())
        return replace_schema(Ladder.of(ladder), self.step, self.schema)

    def to_dict(self) -> dict:
        """The suggestion as JSON-ready data: step, schema, separable, the chosen schema's scores and
        explanations, the cross-validated figures and folds, the frontier, the collisions, the unreachable
        requests, the constraints left out (NaN as None)."""
        def clean(x: Any) -> Any:
            return None if isinstance(x, float) and math.isnan(x) else x

        def entry(f: SuggestedSchema) -> dict:
            return {"name": f.name, "form": f.form, "schema": f.schema, "constraints": list(f.constraints),
                    "tp": f.tp, "fp": f.fp, "fn": f.fn, "tn": f.tn, "precision": clean(f.precision),
                    "recall": clean(f.recall), "f1": clean(f.f1), "cost": f.cost,
                    "explanations": [e.text for e in f.explanations], "constrain": f.constrain}
        return {"step": self.step, "schema": self.schema, "separable": self.separable,
                "labels": len(self.tuning.labels), "outputs": len(self.tuning.outputs),
                "best": entry(self.best) if self.best is not None else None,
                "cross_validated": {k: clean(v) for k, v in self.cross_validated().items()} if self.folds else None,
                "folds": [{"fold": f.fold, "held_out": f.held_out, "tp": f.tp, "fp": f.fp, "fn": f.fn, "tn": f.tn,
                           "f1": clean(f.f1), "schema": f.schema} for f in self.folds],
                "frontier": [entry(f) for f in self.frontier],
                "collisions": [{"kind": c.kind, "requests": [list(k) for k in c.requests],
                                "answers": [list(k) for k in c.answers], "value": c.value} for c in self.collisions],
                "unreachable": [list(k) for k in self.unreachable],
                "left_out": [{"constraint": t, "why": w} for t, w in self.left_out],
                "why_none": None if self.schema is not None else self.why_none()}

    def why_none(self) -> str:
        """Why no schema was suggested (collisions, no labels, the example refused, nothing reachable)."""
        if self.collisions:
            return f"{len(self.collisions)} collision(s): labelled outputs no schema of the family tells apart"
        if not self.tuning.labels:
            return "no labels"
        if self._fit is not None and self._fit.families:
            return ("every schema of the family that is not loose refuses the systemPrompt's request example (see "
                    "left out): make the example the shape the model writes, or label more")
        return "no labelled request names a retrieval mode (nothing a schema could make fetch)"

    def __repr__(self) -> str:
        return (f"<Suggestion for step {self.step}: {len(self.frontier)} schema(s) on the frontier, "
                + ("none chosen" if self.best is None else f"chosen F1 {self.best.f1:.2f}") + ">")

    def to_text(self) -> str:
        """The suggestion, its constraints explained, the folds, the collisions, as plain text."""
        return _text(self)

    def to_html(self) -> str:
        """The frontier chart and table, the suggested schema with its constraints explained, the folds and the
        collisions, as static HTML."""
        from .html import suggestion_html
        return suggestion_html(self)


def _num(x: float) -> str:
    return "-" if isinstance(x, float) and math.isnan(x) else f"{x:.2f}"


def _text(s: Suggestion) -> str:
    lines = [f"suggested requestMatch for step {s.step} ({len(s.tuning.labels)} label(s), "
             f"{len(s.tuning.outputs)} output(s))"]
    if s.collisions:
        lines.append("the labels cannot be separated by any schema of the family: these outputs collide")
        for c in s.collisions:
            lines.append(f"  {c.kind}: request(s) {_some(list(c.requests)) or '-'}; answer(s) {_some(list(c.answers))}"
                         f"  JSON {c.value[:100]}")
    if s.unreachable:
        lines.append(f"{len(s.unreachable)} request-labelled output(s) no schema can make fetch (no JSON, or JSON "
                     f"that names no retrieval mode): {_some(s.unreachable)}")
    for text, why in s.left_out:
        lines.append(f"left out: {text}: {why}")
    if s.best is not None:
        lines.append(json.dumps(s.best.schema, indent=2, ensure_ascii=False))
        lines.append(f"on the labels: precision {_num(s.best.precision)}, recall {_num(s.best.recall)}, F1 "
                     f"{_num(s.best.f1)} (tp {s.best.tp}, fp {s.best.fp}, fn {s.best.fn}, tn {s.best.tn})")
        for e in s.best.explanations:
            lines.append(f"  - {e.text}")
        if s.best.constrain:
            lines.append(f"note: {s.best.constrain}")
    elif not s.collisions:
        lines.append("no schema suggested: " + s.why_none())
    if not s.folds and s.tuning.labels:
        lines.append("not cross-validated: " + ("fewer than two labelled outputs" if len(s.tuning.labels) < 2 else
                                                "the labels collide" if s.collisions else "no folds asked (folds=0)"))
    if s.folds:
        cv = s.cross_validated()
        lines.append(f"cross-validated ({cv['folds']} folds, each fitted without its labels): precision "
                     f"{_num(cv['precision'])}, recall {_num(cv['recall'])}, F1 {_num(cv['f1'])}; per fold F1 "
                     + " ".join(_num(f.f1) for f in s.folds))
    if len(s.frontier) > 1:
        lines.append("frontier (simplest first): " + "; ".join(
            f"{f.name} P {_num(f.precision)} R {_num(f.recall)} ({len(f.constraints)} constraint(s))"
            for f in s.frontier))
    return "\n".join(lines)


# ---- explanations, collisions, folds, next ------------------------------------------------------------------------

def _explain(fit: _Fit, st: _State, keys: list[Key]) -> tuple[Explanation, ...]:
    """What each constraint rejects; in an anyOf, within its form's part, of what the other part does not accept."""
    if st.parts:
        a, b = st.parts
        reqs = fit.req & fit.data.mode
        only = {p.form: [keys[i] for i in _bits(p.accept & ~q.accept & reqs)] for p, q in ((a, b), (b, a))}
        said = "; ".join(f"the {form} form alone takes {len(ks)} labelled request(s) ({_some(ks)})"
                         for form, ks in only.items() if ks)
        writes = [form for form, ks in only.items() if ks]
        if len(writes) == 2:
            text = f"`anyOf` of the bare and the wrapped form: the model writes its requests both ways: {said}"
        elif writes:
            other = "wrapped" if writes[0] == "bare" else "bare"
            text = (f"`anyOf` of the bare and the wrapped form: the model writes its requests {writes[0]} ({said}); "
                    f"the {other} form is there for the systemPrompt's request example, which is written {other}")
        else:
            text = "`anyOf` of the bare and the wrapped form: each takes requests the other takes too"
        head = Explanation("anyOf", (), tuple(k for ks in only.values() for k in ks), 0, text)
        return ((head,) + _explain_part(fit, a, keys, b.accept, f"{a.form} form: ")
                + _explain_part(fit, b, keys, a.accept, f"{b.form} form: "))
    return _explain_part(fit, st, keys, 0, "")


def _explain_part(fit: _Fit, st: _State, keys: list[Key], other: int, prefix: str) -> tuple[Explanation, ...]:
    data = fit.data
    base_accept = ((1 << len(data.outputs)) - 1) & ~fit.base[st.form][0] & ~other
    out = []
    for c in st.constraints:
        mine = fit.rej[st.form + c.key()][0] & base_accept
        others = 0
        for d in st.constraints:
            if d is not c:
                others |= fit.rej[st.form + d.key()][0]
        answers = [keys[i] for i in _bits(mine & fit.ans)]
        requests = [keys[i] for i in _bits(mine & fit.req & data.mode)]
        alone = (mine & ~others & (fit.ans | fit.req)).bit_count()
        what = c.rejects_what
        if c.kind == "closed":
            allowed = set(dict(c.keywords)["properties"])
            extra: list[str] = []
            for i in _bits(mine & fit.ans):
                j = data.value_of[i]
                node = _at(data.values[j], c.where) if j is not None else None
                if isinstance(node, dict):
                    extra += [k for k in node if k not in allowed and k not in extra]
            what = "that carry " + (", ".join(f"`{k}`" for k in extra[:5]) or "other keys")
        if answers:
            text = (f"`{c.text}` rejects the {len(answers)} answer(s) {what} ({_some(answers)})"
                    + (f"; {alone} labelled output(s) only it rejects" if alone and alone != len(answers) else "")
                    + ("; another constraint rejects each of them too: it is there so the schema is not loose "
                       "(without it, {} would be taken as a request: lint's loose-request-match)" if not alone else ""))
        else:
            text = ("`" + c.text + "` rejects no labelled answer: it is there so the schema is not loose (without "
                    "it, {} or a final-looking object such as {\"answer\": ...} would be taken as a request: lint's "
                    "loose-request-match)")
        if requests:
            text += f"; it also rejects {len(requests)} request(s) ({_some(requests)})"
        out.append(Explanation(prefix + c.text, tuple(answers), tuple(requests), alone, prefix + text))
    return tuple(out)


def _at(value: Any, where: tuple[str, ...]) -> Any:
    node = value.get("request") if where[0] == "request" and _form(value) == "wrapped" else value
    for seg in where[1:]:
        if seg == "*" or not isinstance(node, dict):
            return None
        node = node.get(seg)
    return node


def _collisions(data: _Data, fit: _Fit, keys: list[Key]) -> list[Collision]:
    out: list[Collision] = []
    by_value: dict[int, tuple[list[Key], list[Key]]] = {}
    leaked_keys: tuple[Key, ...]
    for i in _bits((fit.req | fit.ans) & data.has_json):
        j = data.value_of[i]
        assert j is not None
        pair = by_value.setdefault(j, ([], []))
        pair[0 if (fit.req >> i) & 1 else 1].append(keys[i])
    same = set()
    for j, (reqs, answers) in by_value.items():
        if reqs and answers and _names_mode(data.values[j]):
            out.append(Collision("same JSON", tuple(reqs), tuple(answers), _canon(data.values[j])))
            same.add(j)
    for form in fit.families:
        if not fit.form_req.get(form):        # a form only the systemPrompt's example writes: nothing to keep
            continue
        tight = fit.tightest(form)
        leaked = [i for i in _bits(tight.accept & fit.ans) if data.value_of[i] not in same]
        if leaked:
            leaked_keys = tuple(keys[i] for i in leaked)
            j = data.value_of[leaked[0]]
            out.append(Collision("shape", (), leaked_keys, _canon(data.values[j]) if j is not None else ""))
    return out


def _masks(outputs: list[RoundOutput], labels: Mapping[Key, str]) -> tuple[int, int]:
    req = ans = 0
    for i, o in enumerate(outputs):
        got = labels.get(o.key)
        if got == REQUEST:
            req |= 1 << i
        elif got == ANSWER:
            ans |= 1 << i
    return req, ans


def _folds(data: _Data, req: int, ans: int, k: int) -> list[Fold]:
    """Stratified k-fold: the labelled outputs, requests then answers, each in output order, dealt round-robin (so
    each fold holds its share of each label, as far as there are enough); each fold's schema fitted on the other
    folds' labels and judged on its own (none with fewer than two labelled outputs)."""
    order = _bits(req) + _bits(ans)
    k = min(k, len(order))
    if k < 2:
        return []
    out = []
    for f in range(k):
        held = sum(1 << i for n, i in enumerate(order) if n % k == f)
        fit = _Fit(data, req & ~held, ans & ~held)
        st = fit.best()
        if st is None:
            c = _Counts(0, 0, (req & held).bit_count(), (ans & held).bit_count())
        else:
            c = _count(st.accept, data.mode, req & held, ans & held)
        out.append(Fold(f + 1, held.bit_count(), st.schema() if st else None,
                        c.tp, c.fp, c.fn, c.tn))
    return out


def _next(data: _Data, fit: _Fit, n: int) -> list[int]:
    """Unlabelled outputs by how much their label would change the fit: first, while one label is missing, the
    outputs the current suggestion judges as that missing one (with no label at all, JSON that names a mode); then
    a JSON shape (key set, or prose) no labelled output has (a shape never labelled is one every schema fitted so
    far judges alike, so disagreement alone never reaches it); then the disagreement of the schemas the search
    visited and each form's narrowest (vote share nearest one half); then how often their JSON recurs; one per distinct
    JSON value (and one prose output per call); an output whose JSON is already labelled elsewhere comes last (every
    schema judges it as it judges that one)."""
    labelled = fit.req | fit.ans
    committee = [s.accept & data.mode for s in fit.states if not s.loose]
    committee += [fit.tightest(form).accept & data.mode for form in fit.families]
    best = fit.best()
    guess = best.accept & data.mode if best is not None else data.mode
    shapes = {_shape(data.values[j]) if j is not None else "prose"
              for i in _bits(labelled) for j in [data.value_of[i]]}
    known = {data.value_of[i] for i in _bits(labelled & data.has_json)}   # a JSON value labelled once is known
    scored = []
    for i in range(len(data.outputs)):
        if (labelled >> i) & 1:
            continue
        j = data.value_of[i]
        as_request = bool((guess >> i) & 1)
        missing = (not fit.req and as_request) or (bool(fit.req) and not fit.ans and not as_request)
        votes = sum((a >> i) & 1 for a in committee)
        share = votes / len(committee) if committee else 0.5
        disagree = min(share, 1 - share)
        novel = (_shape(data.values[j]) if j is not None else "prose") not in shapes
        recur = data.value_bits[j].bit_count() if j is not None else 1
        scored.append((j is not None and j in known, not missing, not novel, -disagree, -recur, i, j))
    scored.sort()
    out, taken = [], set()
    for known_value, *_, i, j in scored:
        key = j if j is not None else "prose"
        if key in taken or known_value:
            continue
        taken.add(key)
        out.append(i)
        if len(out) >= n:
            break
    if len(out) < n:        # fewer distinct values than asked: the rest in the same order
        out += [i for *_, i, _j in scored if i not in out][:n - len(out)]
    return out


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        inner = value.get("request") if isinstance(value.get("request"), dict) else None
        return _canon(sorted(value)) + (_canon(sorted(inner)) if inner is not None else "")
    return _json_type(value)


# ---- the entry point -----------------------------------------------------------------------------------------------

def _system_prompt(tuning: SchemaTuning, ladder: Any, step: str) -> str | None:
    if ladder is not None:
        from ..config import Ladder
        s = Ladder.of(ladder).step(step)
        if s is None:
            raise LadrError(f"the ladder has no step {step!r}")
        return getattr(s, "system_prompt", None)
    return tuning.prompts.get(step)


def suggest_request_match(source: Any, *, labels: Any = None, step: str | None = None, ladder: Any = None,
                          variants: Mapping[str, Any] | None = None, folds: int = 5,
                          system_prompt: str | None = None) -> Suggestion:
    """Suggest a requestMatch for a retrieve step from its recorded outputs and their labels (see the module).

    `source`: what `tune_request_match` reads (an Evaluation or Experiment, traces, a folder of them), or a
    SchemaTuning (its outputs, labels and variants). `labels`: as for `tune_request_match` (added to a tuning's).
    `step`: the retrieve step (needed when the traces have several). `ladder`: the ladder whose step's systemPrompt
    holds the request example a suggestion must accept (default: the system message recorded in the traces;
    `system_prompt=` gives the text itself). `variants`: hand-written schemas to score beside the suggestions.
    `folds`: k of the cross-validation (0: none)."""
    from .tuning import iter_sources
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 0 or folds == 1:
        raise LadrError(f"folds={folds!r}: give the cross-validation's folds, 2 or more (0: none)")
    traces = None
    if isinstance(source, SchemaTuning):
        base = source
        if labels is not None:
            from .labels import to_labels
            sheet = to_labels(labels)
            base = SchemaTuning(base.outputs, dict(base.verdicts), {**base.labels, **sheet}, dict(base.prompts),
                                {**base.labelled_texts, **getattr(sheet, "outputs", {})})
    else:
        traces = iter_sources(source)
        base = tune_request_match(traces, dict(variants or {}), labels=labels, step=step)
    steps = sorted({o.step for o in base.outputs})
    if step is None:
        if len(steps) != 1:
            raise LadrError("these outputs come from " + (f"the retrieve steps {', '.join(steps)}: say which with "
                            "step=\"ID\" (--step ID)" if steps else "no retrieve step: nothing to suggest for"))
        step = steps[0]
    elif step not in steps:
        raise LadrError(f"step {step!r} has no retrieve rounds here (retrieve steps: {', '.join(steps) or 'none'})")
    idx = [i for i, o in enumerate(base.outputs) if o.step == step]
    outputs = [base.outputs[i] for i in idx]
    tuning = SchemaTuning(outputs, {n: [v[i] for i in idx] for n, v in base.verdicts.items()},
                          {k: v for k, v in base.labels.items() if k[1] == step}, dict(base.prompts),
                          {k: v for k, v in base.labelled_texts.items() if k[1] == step})
    if variants and isinstance(source, SchemaTuning):
        for name, value in variants.items():
            tuning.add_variant(name, value, step=step)
    prompt = system_prompt if system_prompt is not None else _system_prompt(base, ladder, step)
    examples = prompt_examples(prompt) if prompt else []
    data = _Data(outputs, examples)
    keys = [o.key for o in outputs]
    req, ans = _masks(outputs, tuning.labels)
    fit = _Fit(data, req, ans)
    collisions = _collisions(data, fit, keys) if (req and ans) else []
    unreachable = [keys[i] for i in _bits(req & ~data.mode)]
    # the frontier: states not loose and taking every example, not dominated in (precision, recall), simplest first
    pool: dict[str, tuple[_State, _Counts]] = {}
    for st in fit.states:
        if st.loose or not st.examples_ok:
            continue
        pool.setdefault(st.ident(), (st, fit.counts(st)))
    items = list(pool.values())
    candidates = [{"form": st.form, "constraints": list(st.texts()), "precision": c.precision,
                   "recall": c.recall, "cost": st.cost} for st, c in items]

    def dominated(a: tuple[_State, _Counts]) -> bool:
        pa, ra = _nz(a[1].precision), _nz(a[1].recall)
        for b in items:
            if b is a:
                continue
            pb, rb = _nz(b[1].precision), _nz(b[1].recall)
            if pb >= pa and rb >= ra and ((pb, rb) != (pa, ra) or b[0].cost < a[0].cost):
                return True
        return False
    front = sorted((x for x in items if not dominated(x)), key=lambda x: (x[0].cost, -_f1(x[1])))
    chosen = fit.best() if not collisions else None
    frontier: list[SuggestedSchema] = []
    n = 0
    for st, _c in front:
        is_best = chosen is not None and st.ident() == chosen.ident()
        n += not is_best
        # with nothing chosen (the labels collide) the frontier is there to look at, not named as suggestions
        name = SUGGESTED if is_best else f"{SUGGESTED if chosen is not None else 'frontier'}-{n}"
        schema = st.schema()
        tuning.add_variant(name, schema, step=step)
        score = next(r for r in tuning.score_rows() if r["variant"] == name)
        frontier.append(SuggestedSchema(name, st.form, schema, st.texts(), score["tp"],
                                        score["fp"], score["fn"], score["tn"], st.cost, _explain(fit, st, keys),
                                        _constrain_problem(schema)))
    if chosen is not None and not any(f.name == SUGGESTED for f in frontier):
        # the best of the states dominated nothing away (e.g. a tie broken by cost): it heads the frontier
        schema = chosen.schema()
        tuning.add_variant(SUGGESTED, schema, step=step)
        score = next(r for r in tuning.score_rows() if r["variant"] == SUGGESTED)
        frontier.insert(0, SuggestedSchema(SUGGESTED, chosen.form, schema, chosen.texts(),
                                           score["tp"], score["fp"], score["fn"], score["tn"], chosen.cost,
                                           _explain(fit, chosen, keys), _constrain_problem(schema)))
    best = next((f for f in frontier if f.name == SUGGESTED), None)
    return Suggestion(step, tuning, frontier, best, collisions, unreachable,
                      [(c.text, why) for c, why in fit.left_out], examples,
                      _folds(data, req, ans, folds) if folds and not collisions else [], candidates, data, fit)


def _constrain_problem(schema: dict) -> str | None:
    """Why `constrain: request` would refuse this schema (llama.cpp's converter cannot hold it in full), or None."""
    from ..models.constrain import lower_schema
    try:
        lower_schema(json.loads(json.dumps(schema)), "requestMatch", "")
    except LadrError as exc:
        return str(exc)
    except Exception as exc:        # a shape the lowering does not know: said, never raised through a suggestion
        return f"constrain: request could not check this schema ({type(exc).__name__}: {exc})"
    return None


def _nz(x: float) -> float:
    return -1.0 if math.isnan(x) else x


def genson_schema(values: list[Any]) -> dict | None:
    """genson's schema of the given JSON values (the request-labelled outputs'), as the baseline that infers from
    positive examples only; None when genson is not installed (`pip install genson`, in the dev extra)."""
    try:
        from genson import SchemaBuilder
    except ImportError:
        return None
    b = SchemaBuilder()
    for v in values:
        b.add_object(v)
    out = b.to_schema()
    out.pop("$schema", None)
    return out
