"""Assertions on an experiment's cells (one ladder variant run on one input row), in promptfoo's words: reading
them, in every spelling, and the two entry points that check them.

An `Assertion` is a kind (`contains`, `regex`, `json-schema`, `fetched`, `max-calls`, `python`, `model-graded`,
...: `checks.KINDS`), a value and a results-column name; `not-KIND` negates any kind, as in promptfoo. `load_asserts`
reads every spelling a notebook, a YAML file or a CSV cell gives (`"contains: dedup"`, several such lines, a
JSON list, a `{"type": ..., "value": ...}` mapping, a callable) and refuses a bad one at once, naming where it
came from. It accepts the kinds `checks.CHECKS` holds and reads each one's value by the shape its `Check` names
(text, a regex, a JSON Schema, a number, a status, a function). `check_assertion` and `check_all` read their
assertions, then check them against a cell with `checks.check`, which never raises for what a cell holds.

This module imports `checks` (the registry of kinds), never the other way round at run time.

Decisions:

- `regex` compiles with Python's `re` at load time (the check searches under a time limit: see `checks`).
- `is-json` with a schema as value is `json-schema`, as in promptfoo; without one it only asks for JSON.
- A value that is NaN (an empty CSV cell read by pandas) is no value.
"""
from __future__ import annotations

import difflib
import importlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import LadrError
from .checks import CHECKS, AssertionResult, _grader, _positional, _short, check

if TYPE_CHECKING:
    from ..models.base import Model
    from ..trace import Trace

__all__ = ["ALIASES", "NAME_CHARS", "Assertion", "check_all", "check_assertion", "load_asserts"]

# other spellings: name -> (kind, negated)
ALIASES: dict[str, tuple[str, bool]] = {"never-fetched": ("fetched", True), "llm-rubric": ("model-graded", False)}
NAME_CHARS = 40           # longest derived results-column name

_KEYS = ("type", "kind", "value", "name", "threshold", "negate")


@dataclass(frozen=True)
class Assertion:
    """One check of a cell: a kind of `checks.KINDS`, its value, the results-column name, and whether it is
    negated."""

    kind: str
    value: Any = None
    name: str = ""
    negate: bool = False
    threshold: float | None = None     # python, model-graded: the least score that passes (default 0.5)

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", _derived_name(self))


# ---- names -------------------------------------------------------------------------------------------------

def _at(where: str) -> str:
    return f"{where}: " if where else ""


def _derived_name(a: Assertion) -> str:
    head = ("not-" if a.negate else "") + a.kind
    v = a.value
    if a.kind == "python":
        v = getattr(v, "__name__", None) or (v if isinstance(v, str) else type(v).__name__)
    elif isinstance(v, (dict, list)):
        v = json.dumps(v, separators=(",", ":"), sort_keys=True)
    text = head if v is None or v == "" else f"{head}:{v}"
    text = " ".join(str(text).split())
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…"


def _unique(asserts: list[Assertion]) -> list[Assertion]:
    seen: set[str] = set()
    out = []
    for a in asserts:
        name, n = a.name, 1
        while name in seen:
            n += 1
            suffix = f"#{n}"
            base = a.name if len(a.name) + len(suffix) <= NAME_CHARS else a.name[: NAME_CHARS - len(suffix) - 1] + "…"
            name = base + suffix
        seen.add(name)
        out.append(a if name == a.name else replace(a, name=name))
    return out


def _kind_of(word: str, where: str) -> tuple[str, bool]:
    """(kind, negated) of a kind as written: a kind, an alias, either with `not-` before it."""
    text = word.strip().lower()
    negate = False
    if text.startswith("not-"):
        negate, text = True, text[4:]
    if text in CHECKS:
        return text, negate
    if text in ALIASES:
        kind, neg = ALIASES[text]
        return kind, neg != negate
    known = [*CHECKS, *ALIASES]
    near = difflib.get_close_matches(text, known, n=1, cutoff=0.6)
    hint = f' (did you mean "{"not-" if negate else ""}{near[0]}"?)' if near else ""
    raise LadrError(f'{_at(where)}unknown assertion kind "{_short(word.strip())}"{hint}; the kinds are '
                    f"{', '.join(CHECKS)}, each also as not-KIND")


# ---- values: the shapes a kind's value may have --------------------------------------------------------------

def _number(a_text: str, value: Any, where: str, whole: bool) -> float | int:
    bad = LadrError(f"{_at(where)}{a_text} needs a {'whole ' if whole else ''}number >= 0, got {_short(repr(value))}")
    if isinstance(value, bool) or value is None:
        raise bad
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise bad from None
    if not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
        raise bad
    if whole:
        if value != int(value):
            raise bad
        return int(value)
    return value


def _schema(a_text: str, value: Any, where: str) -> dict:
    from ..config.schemas import metaschema_errors, reference_problems
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise LadrError(f"{_at(where)}{a_text}: the schema is not valid JSON ({exc})") from None
    if not isinstance(value, dict) or not value:
        raise LadrError(f"{_at(where)}{a_text} needs a JSON Schema (a non-empty mapping), got {_short(repr(value))}")
    problems = list(metaschema_errors(value)) or reference_problems(value)
    if problems:
        at, message = problems[0]
        spot = f" (at {'/'.join(map(str, at))})" if at else ""
        raise LadrError(f"{_at(where)}{a_text}: not a valid JSON Schema: {message}{spot}")
    return value


def _function(a_text: str, value: Any, where: str) -> Callable:
    if isinstance(value, str):
        module, sep, attr = value.strip().partition(":")
        if not sep or not module or not attr:
            raise LadrError(f'{_at(where)}{a_text} needs a callable or "module:function", got {_short(repr(value))}')
        try:
            fn = getattr(importlib.import_module(module), attr)
        except ImportError as exc:
            raise LadrError(f"{_at(where)}{a_text}: cannot import module {module!r} ({exc})") from None
        except AttributeError:
            raise LadrError(f"{_at(where)}{a_text}: module {module!r} has no {attr!r}") from None
        value = fn
    if not callable(value):
        raise LadrError(f"{_at(where)}{a_text} needs a callable, got {_short(repr(value))}")
    n = _positional(value)
    if not 1 <= n <= 3:
        raise LadrError(f"{_at(where)}{a_text}: {getattr(value, '__name__', value)!s} must take 1 to 3 positional "
                        f"arguments (output, cell, trace), it takes {n}")
    return value


def _text(a_text: str, value: Any, where: str) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or value == "":
        raise LadrError(f"{_at(where)}{a_text} needs a non-empty text value, got {_short(repr(value))}")
    return value


def _regex(a_text: str, value: Any, where: str) -> str:
    value = _text(a_text, value, where)
    try:
        re.compile(value)
    except re.error as exc:
        raise LadrError(f"{_at(where)}{a_text}: {value!r} is not a valid regular expression ({exc})") from None
    return value


def _optional_schema(a_text: str, value: Any, where: str) -> dict | None:
    return None if value in (None, "") else _schema(a_text, value, where)


def _status(a_text: str, value: Any, where: str) -> str:
    return "completed" if value in (None, "") else str(value).strip()


# the shapes a kind's value may have (`Check.value`): how each is read and validated
_VALUES: dict[str, Callable[[str, Any, str], Any]] = {
    "text": _text,
    "regex": _regex,
    "json": _optional_schema,
    "schema": _schema,
    "count": lambda a_text, value, where: _number(a_text, value, where, whole=True),
    "number": lambda a_text, value, where: _number(a_text, value, where, whole=False),
    "status": _status,
    "function": _function,
}


def _checked(a: Assertion, where: str) -> Assertion:
    """The assertion with its value read as its kind's `Check.value` shape says (numbers, schema, function), or
    a LadrError."""
    text = f'assertion "{a.name}"'
    kind, value = a.kind, a.value
    if kind not in CHECKS:
        kind, neg = _kind_of(kind, where)
        a = replace(a, kind=kind, negate=a.negate != neg)
    if isinstance(value, float) and math.isnan(value):
        value = None
    value = _VALUES[CHECKS[kind].value](text, value, where)
    if a.threshold is not None:
        threshold = _number(f"{text}'s threshold", a.threshold, where, whole=False)
        a = replace(a, threshold=float(threshold))
    return a if value is a.value and kind == a.kind else replace(a, value=value)


# ---- spellings ---------------------------------------------------------------------------------------------

def _from_text(line: str, where: str) -> Assertion:
    head, sep, rest = line.partition(":")
    if not head.strip() or " " in head.strip():
        near = difflib.get_close_matches(head.strip().split(" ")[0].lower(), [*CHECKS, *ALIASES], n=1, cutoff=0.6)
        hint = f' (did you mean "{near[0]}: ..."?)' if near else ""
        raise LadrError(f'{_at(where)}"{_short(line)}" is not an assertion: write KIND: VALUE, e.g. '
                        f'"contains: dedup"{hint}')
    kind, negate = _kind_of(head, where)
    value = rest.strip() if sep else None
    return Assertion(kind=kind, value=value or None, negate=negate)


def _from_mapping(spec: Mapping, where: str) -> Assertion:
    unknown = [str(k) for k in spec if k not in _KEYS]
    if unknown:
        near = difflib.get_close_matches(unknown[0], _KEYS, n=1, cutoff=0.6)
        hint = f' (did you mean "{near[0]}"?)' if near else ""
        raise LadrError(f'{_at(where)}unknown key "{_short(unknown[0])}" in an assertion{hint}; the keys are '
                        f"{', '.join(_KEYS)}")
    if "type" in spec and "kind" in spec:
        raise LadrError(f"{_at(where)}an assertion has both type and kind: give one")
    word = spec.get("type", spec.get("kind"))
    if not isinstance(word, str) or not word.strip():
        raise LadrError(f'{_at(where)}an assertion needs a "type" (one of {", ".join(CHECKS)}), got {_short(repr(word))}')
    kind, negate = _kind_of(word, where)
    if "negate" in spec:
        if not isinstance(spec["negate"], bool):
            raise LadrError(f"{_at(where)}an assertion's negate must be true or false, got {_short(repr(spec['negate']))}")
        negate = negate != spec["negate"]
    name = spec.get("name") or ""
    if not isinstance(name, str):
        raise LadrError(f"{_at(where)}an assertion's name must be text, got {_short(repr(name))}")
    return Assertion(kind=kind, value=spec.get("value"), name=name.strip(), negate=negate,
                     threshold=spec.get("threshold"))


def _iter_specs(spec: Any, where: str) -> Iterable[Assertion]:
    if spec is None or (isinstance(spec, float) and math.isnan(spec)):
        return
    if isinstance(spec, Assertion):
        yield spec
    elif isinstance(spec, str):
        text = spec.strip()
        if text[:1] in ("[", "{"):
            try:
                value = json.loads(text)
            except ValueError as exc:
                raise LadrError(f"{_at(where)}assertions that start with {text[0]!r} are read as JSON, and this is not "
                                f"valid JSON ({exc})") from None
            yield from _iter_specs(value, where)
            return
        for line in text.splitlines():
            if line.strip() and not line.strip().startswith("#"):
                yield _from_text(line.strip(), where)
    elif isinstance(spec, Mapping):
        yield _from_mapping(spec, where)
    elif callable(spec):
        yield Assertion(kind="python", value=spec)
    elif isinstance(spec, (list, tuple)):
        for item in spec:
            if isinstance(item, (list, tuple)):
                raise LadrError(f"{_at(where)}an assertion list holds a list: give each assertion as text, a mapping or "
                                "a callable")
            yield from _iter_specs(item, where)
    else:
        raise LadrError(f"{_at(where)}assertions are text, a mapping, a callable or a list of them, not "
                        f"{type(spec).__name__}")


def load_asserts(spec: Any, *, where: str = "") -> list[Assertion]:
    """The assertions a spec gives (text, several lines, JSON, a mapping, a callable, an Assertion or a list),
    checked, with unique names; a LadrError naming `where` for anything wrong."""
    return _unique([_checked(a, where) for a in _iter_specs(spec, where)])


# ---- checking ----------------------------------------------------------------------------------------------

def check_assertion(a: Assertion, cell: Mapping[str, Any], trace: Trace | None = None, *,
                    grader: Model | str | None = None) -> AssertionResult:
    """Check one assertion against a cell (and its trace, for `fetched`; `grader` for `model-graded`)."""
    if not isinstance(a, Assertion):
        raise LadrError(f"check_assertion takes an Assertion (see load_asserts), not {type(a).__name__}")
    return check(_checked(a, ""), cell, trace, grader)


def check_all(asserts: Any, cell: Mapping[str, Any], trace: Trace | None = None, *,
              grader: Model | str | None = None) -> dict[str, AssertionResult]:
    """Check every assertion (anything `load_asserts` reads) against a cell: results by name, in order."""
    loaded = load_asserts(asserts)
    if grader is not None and any(CHECKS[a.kind].needs_grader for a in loaded):
        try:
            grader = _grader(grader)       # made once for the cell, not once per assertion
        except LadrError:
            pass                           # each model-graded result says why
    return {a.name: check(a, cell, trace, grader) for a in loaded}
