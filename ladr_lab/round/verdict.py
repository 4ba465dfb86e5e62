"""Judging an output: as a retrieval request (requestMatch), against a gate's condition, against a
slateWrite's match. Each judgement is data (`Judgement`: the extraction rule, matched or not, the form,
and for a schema failure the deciding keyword with its schema and instance paths) plus the same in words
(`reason`). Re-judging a recorded run asks these very functions, through `Judge` (which extracts each
output once and validates each distinct value once per schema), so a verdict can be replayed against an
edited schema without the model, and fails as the engine's does (a `$ref` that does not resolve is a
`LadrError` either way)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..errors import LadrError
from ..jsonx import Extraction, extract
from .records import Judgement
from .validators import make_validator

__all__ = ["Judge", "Verdict", "extraction", "judge", "judge_equals", "judge_extraction", "judge_json",
           "judge_json_extraction", "schema_failure", "schema_problem", "validator"]

_VALIDATORS: dict[int, Any] = {}


def validator(schema: dict):
    """A cached jsonschema validator for a schema (schemas are checked at load time)."""
    key = id(schema)
    v = _VALIDATORS.get(key)
    if v is None or v.schema is not schema:
        v = make_validator(schema)      # never fetches a $ref; patterns run under a time limit
        if len(_VALIDATORS) >= 1024:      # a schema editor makes a new schema per keystroke: stay bounded
            _VALIDATORS.clear()
        _VALIDATORS[key] = v
    return v


def _pointer(parts) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _inapplicable(exc: BaseException) -> LadrError | None:
    """The LadrError saying why a schema cannot be applied, when `exc` (raised applying it) says so, else None."""
    from referencing.exceptions import Unresolvable
    if isinstance(exc, Unresolvable):  # the load-time check refuses these; a schema built in Python may still hold one
        return LadrError(f"the schema cannot be applied: $ref {exc.ref!r} does not resolve inside it (a ladder's "
                         "schemas never fetch other documents)")
    if isinstance(exc, RecursionError):
        return LadrError("the schema cannot be applied: its $refs lead back to themselves without end")
    return None


@contextmanager
def _applying() -> Iterator[None]:
    """Apply a schema, turning what makes it inapplicable into a LadrError that says so."""
    try:
        yield
    except Exception as exc:
        err = _inapplicable(exc)
        if err is None:
            raise
        raise err from None


def _best_error(v, value: Any):
    from jsonschema.exceptions import best_match
    return best_match(v.iter_errors(value))


def schema_failure(value: Any, schema: dict, valid: bool | None = None, error=None):
    """jsonschema's best error of `value` against `schema`, or None when it validates (`valid`, `error`: what
    the caller already knows, so nothing is validated twice)."""
    if error is not None:
        return error
    v = validator(schema)
    with _applying():
        if valid if valid is not None else v.is_valid(value):
            return None
        return _best_error(v, value)


def _error_text(err) -> str:
    where = "/".join(str(p) for p in err.absolute_path)
    return f"{err.message} (at {where or 'the top level'})"


def schema_problem(value: Any, schema: dict) -> str | None:
    """The best error of `value` against `schema` as text, or None when it validates."""
    err = schema_failure(value, schema)
    return None if err is None else _error_text(err)


def _failed(test: str, method: str | None, err) -> Judgement:
    path = list(err.schema_path)
    keyword = str(err.validator)
    if path and path[-1] == keyword:
        path = path[:-1]
    return Judgement(test=test, matched=False, extraction=method, keyword=keyword, schema_path=_pointer(path),
                     instance_path=_pointer(err.path), message=err.message)


@dataclass(frozen=True)
class Verdict:
    """Why a round's output was taken as a retrieval request or as the final answer."""

    is_request: bool
    request: dict | None
    top_k: int | None
    reason: str
    judgement: Judgement
    json_value: Any = None

    @property
    def method(self) -> str | None:
        """The extraction rule that found the JSON (None when there was none)."""
        return self.judgement.extraction


def _why_bare(schema: dict, obj: Any) -> str:
    required = schema.get("required") if isinstance(schema, dict) else None
    if not required:
        # "any JSON object" only when nothing else narrows the object: a closed or counted schema is not loose
        narrow = []
        if isinstance(schema, dict) and schema.get("additionalProperties") is False:
            narrow.append("only the declared properties")
        if isinstance(schema, dict) and ("minProperties" in schema or "maxProperties" in schema):
            bounds = [f"{k} {schema[k]}" for k in ("minProperties", "maxProperties") if k in schema]
            narrow.append(" and ".join(bounds))
        if narrow:
            return "the schema has no `required` but allows " + ", with ".join(narrow) + ", and this object keeps to them"
        return "the schema has no `required`, so any JSON object matches"
    return "it has the required " + ", ".join(f"`{k}`" for k in required)


def judge(output: str, schema: dict) -> Verdict:
    """Extract the first JSON block and test it against requestMatch (seeds 000, 001; SPEC §3)."""
    return judge_extraction(extract(output), schema)


def judge_extraction(ext: Extraction, schema: dict, valid: bool | None = None, error=None) -> Verdict:
    """`judge` for an output whose JSON was already extracted (re-judging extracts each output once);
    `valid` is whether the value validates and `error` its best error, when the caller knows them already."""
    if not ext.found:
        return Verdict(False, None, None, "no JSON found in the output, so it is the final answer",
                       Judgement(test="requestMatch", matched=False))
    err = schema_failure(ext.value, schema, valid, error)
    if err is not None:
        return Verdict(False, None, None,
                       f"JSON found ({ext.method}) but it does not match requestMatch: {_error_text(err)}",
                       _failed("requestMatch", ext.method, err), ext.value)
    obj = ext.value
    req = obj.get("request") if isinstance(obj, dict) and isinstance(obj.get("request"), dict) else obj
    top_k = None
    for holder in (obj, req):
        if isinstance(holder, dict) and isinstance(holder.get("topK"), int) and not isinstance(holder.get("topK"), bool):
            top_k = holder["topK"]
    if not isinstance(obj, dict):
        # an array or a scalar the schema allows: taken as a request, which names no mode and so fetches nothing
        kind = "a JSON array" if isinstance(obj, list) else "a JSON value that is no object"
        return Verdict(True, {}, top_k, f"JSON found ({ext.method}) and it matches requestMatch ({kind}: it names "
                       "no retrieval mode, so the round fetches nothing)",
                       Judgement(test="requestMatch", matched=True, extraction=ext.method, form="bare"), ext.value)
    if not isinstance(req, dict):
        req = {}
    form = "wrapped" if req is not obj else "bare"
    why = "wrapped form" if form == "wrapped" else f"bare form: {_why_bare(schema, obj)}"
    return Verdict(True, req, top_k, f"JSON found ({ext.method}) and it matches requestMatch ({why})",
                   Judgement(test="requestMatch", matched=True, extraction=ext.method, form=form), ext.value)


def judge_json(output: str, schema: dict, test: str) -> tuple[Judgement, str, Any]:
    """An output against a JSON Schema (`test` is "jsonMatches" or "match"): judgement, reason, value."""
    return judge_json_extraction(extract(output), schema, test)


def judge_json_extraction(ext: Extraction, schema: dict, test: str, valid: bool | None = None, error=None
                          ) -> tuple[Judgement, str, Any]:
    """`judge_json` for an output whose JSON was already extracted (`valid`, `error`: as in `judge_extraction`)."""
    if not ext.found:
        return Judgement(test=test, matched=False), "no JSON found in the output", None
    err = schema_failure(ext.value, schema, valid, error)
    if err is None:
        return (Judgement(test=test, matched=True, extraction=ext.method),
                f"JSON found ({ext.method}) and it matches {_label(test)}", ext.value)
    return (_failed(test, ext.method, err),
            f"JSON found ({ext.method}) but it does not match {_label(test)}: {_error_text(err)}", ext.value)


def _label(test: str) -> str:
    return "slateWrite.match" if test == "match" else test


def _equals(output: str, equals: str) -> bool:
    return output.strip() == equals.strip()


def judge_equals(output: str, equals: str) -> tuple[Judgement, str]:
    """An output against an `equals:` gate: the stripped output equals the string."""
    ok = _equals(output, equals)
    return (Judgement(test="equals", matched=ok),
            f"output {'equals' if ok else 'does not equal'} {equals!r}")


@lru_cache(maxsize=8192)
def extraction(output: str) -> Extraction:
    """`jsonx.extract` of an output, kept: re-judging the same outputs against the next edit is the common case."""
    return extract(output)


class Judge:
    """The verdicts of many outputs against tests, each output extracted once and each distinct (schema, JSON
    value) validated once; what it decides is what `judge`, `judge_json` and `judge_equals` decide.

    An output that matched before (`old`) is checked by one full pass that also yields jsonschema's best
    error, so a flip to "no match" costs nothing more (a valid value is traversed whole by `is_valid` too);
    one that failed before is checked by `is_valid`, which stops at the first error, and a flip to "match"
    needs no error (its deciding keyword is the recorded one)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, int], tuple[bool, Any]] = {}
        self._keep: list = []       # keeps the schemas alive while their ids key the cache

    def matches(self, test: str, arg: Any, output: str, old: bool | None = None) -> bool:
        """Whether `output` passes `test` ("equals", or a schema test: requestMatch, jsonMatches, match)."""
        if test == "equals":
            return _equals(output, str(arg))
        ext = extraction(output)
        if not ext.found:
            return False
        key = (id(arg), id(ext))
        got = self._seen.get(key)
        if got is None:
            v = validator(arg)
            try:        # inline, not `with _applying()`: this runs once per output of a re-judged trace
                if old:
                    err = _best_error(v, ext.value)
                    got = (err is None, err)
                else:
                    got = (v.is_valid(ext.value), None)
            except Exception as exc:
                why = _inapplicable(exc)
                if why is None:
                    raise
                raise why from None
            self._keep.append((arg, ext))
            self._seen[key] = got
        return got[0]

    def error(self, arg: Any, output: str):
        """The best error found while judging `output` against `arg`, if that pass computed one."""
        got = self._seen.get((id(arg), id(extraction(output))))
        return got[1] if got else None

    def request(self, schema: dict, output: str, valid: bool | None = None) -> Verdict:
        """`judge` of `output` against requestMatch `schema`, reusing what `matches` found (`valid`)."""
        return judge_extraction(extraction(output), schema, valid=valid, error=self.error(schema, output))

    def json(self, test: str, arg: Any, output: str, valid: bool | None = None) -> tuple[Judgement, str, Any]:
        """`judge_json` (or, for "equals", `judge_equals`) of `output`: judgement, reason and the JSON value."""
        if test == "equals":
            return (*judge_equals(output, str(arg)), None)
        return judge_json_extraction(extraction(output), arg, test, valid=valid, error=self.error(arg, output))
