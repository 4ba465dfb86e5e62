"""Assertions on an experiment's cells (one ladder variant run on one input row), in promptfoo's words: reading
them, in every spelling, and the two entry points that check them.

An `Assertion` is a kind (`contains`, `regex`, `json-schema`, `fetched`, `max-calls`, `python`, `model-graded`,
`similar`, `levenshtein`, ...: `checks.KINDS`), a value and a results-column name, with promptfoo's `weight` (in the
cell's weighted score), `metric` (a named score several assertions feed) and `threshold`; `not-KIND` negates any
kind, as in promptfoo. `load_asserts` reads every spelling a notebook, a YAML file or a CSV cell gives
(`"contains: dedup"`, several such lines, a JSON list, a `{"type": ..., "value": ...}` mapping, YAML's own
`{contains: dedup}`, a callable) and refuses a bad one at once with a `UsageError` naming where it came from (the
command line exits 2 for it). It accepts the kinds `checks.CHECKS` holds and reads each one's value by the shape its `Check` names
(text, a regex, a JSON Schema, a number, a status, a function). `check_assertion` and `check_all` read their
assertions, then check them against a cell with `checks.check`, which never raises for what a cell holds.

This module imports `checks` (the registry of kinds), never the other way round at run time.

Decisions:

- `regex` compiles with Python's `re` at load time (the check searches under a time limit: see `checks`).
- `is-json` with a schema as value is `json-schema`, as in promptfoo; without one it only asks for JSON.
- A value that is NaN (an empty CSV cell read by pandas) is no value.
- `python: module:function` imports the module from `sys.path`, else from the current folder, else from the
  experiment file's folder (`base_dir`), without changing `sys.path`; `python: file.py:function` (a value whose
  module part ends in `.py` or holds a `/`) loads that file, relative to the experiment file's folder when it was
  written in one, else to the current folder; it is loaded again when the file changed.
"""
from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LadrError, UsageError
from .checks import CHECKS, AssertionResult, _grader, _positional, _short, check

if TYPE_CHECKING:
    from ..models.base import Model
    from ..trace import Trace

__all__ = ["ALIASES", "KEYS", "NAME_CHARS", "Assertion", "check_all", "check_assertion", "load_asserts"]

# other spellings: name -> (kind, negated)
ALIASES: dict[str, tuple[str, bool]] = {"never-fetched": ("fetched", True), "llm-rubric": ("model-graded", False)}
NAME_CHARS = 40           # longest derived results-column name

# the keys of an assertion written as a mapping, each with the sentence the experiment file's JSON Schema shows
KEYS: dict[str, str] = {
    "type": "The kind: contains, regex, fetched, max-calls, python, similar, ... (not-KIND negates it).",
    "kind": "Another spelling of type.",
    "value": "The kind's value: a text, a regex, a JSON Schema, a number, a path or glob, module:function.",
    "name": "The results column's name (derived from the kind and value when not given).",
    "threshold": "python, model-graded: the least score that passes (0.5); similar: the least similarity (0.75); "
                 "levenshtein: the most edits (5).",
    "negate": "true: the assertion passes when the check fails (as not-KIND).",
    "weight": "How much it counts in the cell's weighted score (default 1; 0: reported, never fails the cell).",
    "metric": "A named score this assertion feeds (several assertions may feed one); the summary averages it.",
    "provider": "similar: the embedder (hashing, st:MODEL, litellm:MODEL; default hashing, as similarTo's).",
}
_KEYS = tuple(KEYS)


@dataclass(frozen=True)
class Assertion:
    """One check of a cell: a kind of `checks.KINDS`, its value, the results-column name, whether it is negated,
    and how it scores: its `weight` in the cell's weighted score and the named `metric` it feeds."""

    kind: str
    value: Any = None
    name: str = ""
    negate: bool = False
    threshold: float | None = None     # python, model-graded: the least score that passes (default 0.5); similar,
    #                                    levenshtein: their own (checks.Check.threshold)
    weight: float = 1.0
    metric: str | None = None
    provider: str | None = None        # similar: the embedder's name (None: the offline hashing one)

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", _derived_name(self))

    @property
    def scored(self) -> bool:
        """Whether it asks for more than pass/fail: a weight other than 1, or a metric."""
        return self.weight != 1 or bool(self.metric)


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
    raise UsageError(f'{_at(where)}unknown assertion kind "{_short(word.strip())}"{hint}; the kinds are '
                    f"{', '.join(CHECKS)}, each also as not-KIND")


# ---- values: the shapes a kind's value may have --------------------------------------------------------------

def _number(a_text: str, value: Any, where: str, whole: bool) -> float | int:
    bad = UsageError(f"{_at(where)}{a_text} needs a {'whole ' if whole else ''}number >= 0, got {_short(repr(value))}")
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
            raise UsageError(f"{_at(where)}{a_text}: the schema is not valid JSON ({exc})") from None
    if not isinstance(value, dict) or not value:
        raise UsageError(f"{_at(where)}{a_text} needs a JSON Schema (a non-empty mapping), got {_short(repr(value))}")
    problems = list(metaschema_errors(value)) or reference_problems(value)
    if problems:
        at, message = problems[0]
        spot = f" (at {'/'.join(map(str, at))})" if at else ""
        raise UsageError(f"{_at(where)}{a_text}: not a valid JSON Schema: {message}{spot}")
    return value


_LOADING = threading.Lock()


def _file_module(path: Path, a_text: str, where: str) -> Any:
    """The module a `file.py` holds, loaded under a name of its own (again when the file changed since)."""
    real = path.resolve()
    name = f"ladr_lab_checks_{real.stem}_{hashlib.sha256(str(real).encode()).hexdigest()[:10]}"
    try:
        stamp = real.stat().st_mtime_ns
    except OSError as exc:
        raise UsageError(f"{_at(where)}{a_text}: cannot read {path} ({exc.strerror or exc})") from None
    with _LOADING:
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__ladr_stamp__", None) == stamp:
            return mod
        spec = importlib.util.spec_from_file_location(name, real)
        if spec is None or spec.loader is None:
            raise UsageError(f"{_at(where)}{a_text}: {path} is not a Python file")
        mod = importlib.util.module_from_spec(spec)
        mod.__ladr_stamp__ = stamp  # type: ignore[attr-defined]
        sys.modules[name] = mod             # a function of it pickles by reference (the local pool, a resume)
        try:
            spec.loader.exec_module(mod)
        except Exception as exc:            # the user's file: any error it raises is said, not raised
            sys.modules.pop(name, None)
            raise UsageError(f"{_at(where)}{a_text}: importing {path} raised {type(exc).__name__}: "
                             f"{_short(str(exc), 200)}") from None
        return mod


def _module(module: str, bases: list[Path], a_text: str, where: str) -> Any:
    """`module` from sys.path, else from the first of `bases` (the current folder, the experiment file's) that
    holds it; the folder is never added to sys.path."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name not in (top, module):      # the module was found, and failed importing something of its own
            raise UsageError(f"{_at(where)}{a_text}: importing {module!r} failed ({exc})") from None
        missing = exc
    except Exception as exc:                   # the user's module: whatever it raises is said, not raised
        raise UsageError(f"{_at(where)}{a_text}: importing {module!r} raised {type(exc).__name__}: "
                         f"{_short(str(exc), 200)}") from None
    top = module.split(".")[0]
    with _LOADING:
        for base in bases:
            spec = importlib.machinery.PathFinder.find_spec(top, [str(base)])
            if spec is None or spec.loader is None:
                continue
            mod = importlib.util.module_from_spec(spec)
            sys.modules[top] = mod
            try:
                spec.loader.exec_module(mod)
                return importlib.import_module(module)
            except Exception as exc:           # the user's module: whatever it raises is said, not raised
                sys.modules.pop(top, None)
                raise UsageError(f"{_at(where)}{a_text}: importing {module!r} from {base} raised "
                                 f"{type(exc).__name__}: {_short(str(exc), 200)}") from None
    looked = ", ".join(str(b) for b in bases)
    raise UsageError(f"{_at(where)}{a_text}: cannot import module {module!r} ({missing}; looked on sys.path and in "
                     f"{looked})") from None


def _import_function(text: str, base_dir: Path | None, a_text: str, where: str) -> Callable:
    """`module:function` or `file.py:function` (see the module docstring for where each is looked for)."""
    target, sep, attr = text.strip().rpartition(":")
    if not sep or not target or not attr:
        raise UsageError(f'{_at(where)}{a_text} needs a callable or "module:function" (or "file.py:function"), got '
                         f"{_short(repr(text))}")
    cwd = Path(os.getcwd())
    if target.endswith(".py") or "/" in target or os.sep in target:
        path = Path(target).expanduser()
        if not path.is_absolute():
            path = (base_dir if base_dir is not None else cwd) / path
        if not path.is_file():
            raise UsageError(f"{_at(where)}{a_text}: no file {path}")
        mod, what = _file_module(path, a_text, where), str(path)
    else:
        bases = list(dict.fromkeys([cwd, *([base_dir] if base_dir is not None else [])]))
        mod, what = _module(target, bases, a_text, where), f"module {target!r}"
    try:
        return getattr(mod, attr)
    except AttributeError:
        raise UsageError(f"{_at(where)}{a_text}: {what} has no {attr!r}") from None


def _function(a_text: str, value: Any, where: str, base_dir: Path | None = None) -> Callable:
    if isinstance(value, str):
        value = _import_function(value, base_dir, a_text, where)
    if not callable(value):
        raise UsageError(f"{_at(where)}{a_text} needs a callable, got {_short(repr(value))}")
    n = _positional(value)
    if not 1 <= n <= 3:
        raise UsageError(f"{_at(where)}{a_text}: {getattr(value, '__name__', value)!s} must take 1 to 3 positional "
                         f"arguments (output, cell, trace), it takes {n}")
    return value


def _text(a_text: str, value: Any, where: str) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or value == "":
        raise UsageError(f"{_at(where)}{a_text} needs a non-empty text value, got {_short(repr(value))}")
    return value


def _regex(a_text: str, value: Any, where: str) -> str:
    value = _text(a_text, value, where)
    try:
        re.compile(value)
    except re.error as exc:
        raise UsageError(f"{_at(where)}{a_text}: {value!r} is not a valid regular expression ({exc})") from None
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


def _checked(a: Assertion, where: str, base_dir: Path | None = None) -> Assertion:
    """The assertion with its value read as its kind's `Check.value` shape says (numbers, schema, function) and its
    threshold, weight, metric and provider checked, or a UsageError."""
    text = f'assertion "{a.name}"'
    kind, value = a.kind, a.value
    if kind not in CHECKS:
        kind, neg = _kind_of(kind, where)
        a = replace(a, kind=kind, negate=a.negate != neg)
    if isinstance(value, float) and math.isnan(value):
        value = None
    shape = CHECKS[kind].value
    value = _function(text, value, where, base_dir) if shape == "function" else _VALUES[shape](text, value, where)
    changes: dict[str, Any] = {}
    if a.threshold is not None:
        changes["threshold"] = float(_number(f"{text}'s threshold", a.threshold, where, whole=False))
    if a.weight != 1:
        changes["weight"] = float(_number(f"{text}'s weight", a.weight, where, whole=False))
    if a.metric is not None and (not isinstance(a.metric, str) or not a.metric.strip()):
        raise UsageError(f"{_at(where)}{text}'s metric must be a non-empty name, got {_short(repr(a.metric))}")
    if a.provider is not None:
        if kind != "similar":
            raise UsageError(f"{_at(where)}{text}: provider names the embedder of a similar assertion; "
                             f"{kind} takes none")
        if not isinstance(a.provider, str) or not a.provider.strip():
            raise UsageError(f"{_at(where)}{text}'s provider must be an embedder name, got {_short(repr(a.provider))}")
    if value is not a.value or kind != a.kind:
        changes["value"] = value
    return replace(a, **changes) if changes else a


# ---- spellings ---------------------------------------------------------------------------------------------

_THRESHOLD_IN_KIND = re.compile(r"(?P<kind>[A-Za-z-]+)\((?P<threshold>[^()]*)\)")


def _from_text(line: str, where: str) -> Assertion:
    head, sep, rest = line.partition(":")
    if not head.strip() or " " in head.strip():
        near = difflib.get_close_matches(head.strip().split(" ")[0].lower(), [*CHECKS, *ALIASES], n=1, cutoff=0.6)
        hint = f' (did you mean "{near[0]}: ..."?)' if near else ""
        raise UsageError(f'{_at(where)}"{_short(line)}" is not an assertion: write KIND: VALUE, e.g. '
                        f'"contains: dedup"{hint}')
    m = _THRESHOLD_IN_KIND.fullmatch(head.strip())     # promptfoo's `similar(0.8): text`, `levenshtein(3): text`
    kind, negate = _kind_of(m["kind"] if m else head, where)
    value = rest.strip() if sep else None
    threshold: Any = m["threshold"] if m else None      # a number as text: checked as the threshold is
    return Assertion(kind=kind, value=value or None, negate=negate, threshold=threshold)


def _kind_key(key: Any) -> bool:
    """Whether a mapping key is a kind as written (`contains`, `not-regex`, `llm-rubric`): YAML's `{contains: x}`."""
    if not isinstance(key, str):
        return False
    text = key.strip().lower()
    text = text[4:] if text.startswith("not-") else text
    return text in CHECKS or text in ALIASES


def _from_mapping(spec: Mapping, where: str) -> Assertion:
    spec = dict(spec)
    if "type" not in spec and "kind" not in spec:
        # YAML's own spelling: `- contains: dedup`, `- {fetched: a.md, weight: 2}`: one key is the kind
        kinds = [k for k in spec if _kind_key(k) and k not in _KEYS]
        if len(kinds) == 1 and "value" not in spec:
            word = kinds[0]
            spec = {"type": word, "value": spec.pop(word), **spec}
        elif len(kinds) > 1:
            raise UsageError(f"{_at(where)}an assertion names two kinds ({', '.join(map(str, kinds))}): give one per "
                             "assertion")
    unknown = [str(k) for k in spec if k not in _KEYS]
    if unknown:
        near = difflib.get_close_matches(unknown[0], [*_KEYS, *CHECKS], n=1, cutoff=0.6)
        hint = f' (did you mean "{near[0]}"?)' if near else ""
        raise UsageError(f'{_at(where)}unknown key "{_short(unknown[0])}" in an assertion{hint}; the keys are '
                         f"{', '.join(_KEYS)}, or KIND: VALUE")
    if "type" in spec and "kind" in spec:
        raise UsageError(f"{_at(where)}an assertion has both type and kind: give one")
    word = spec.get("type", spec.get("kind"))
    if not isinstance(word, str) or not word.strip():
        raise UsageError(f'{_at(where)}an assertion needs a "type" (one of {", ".join(CHECKS)}), got {_short(repr(word))}')
    kind, negate = _kind_of(word, where)
    if "negate" in spec:
        if not isinstance(spec["negate"], bool):
            raise UsageError(f"{_at(where)}an assertion's negate must be true or false, got {_short(repr(spec['negate']))}")
        negate = negate != spec["negate"]
    name = spec.get("name") or ""
    if not isinstance(name, str):
        raise UsageError(f"{_at(where)}an assertion's name must be text, got {_short(repr(name))}")
    weight = spec.get("weight", 1.0)
    return Assertion(kind=kind, value=spec.get("value"), name=name.strip(), negate=negate,
                     threshold=spec.get("threshold"), weight=1.0 if weight is None else weight,
                     metric=spec.get("metric"), provider=spec.get("provider"))


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
                raise UsageError(f"{_at(where)}assertions that start with {text[0]!r} are read as JSON, and this is not "
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
                raise UsageError(f"{_at(where)}an assertion list holds a list: give each assertion as text, a mapping or "
                                "a callable")
            yield from _iter_specs(item, where)
    else:
        raise UsageError(f"{_at(where)}assertions are text, a mapping, a callable or a list of them, not "
                        f"{type(spec).__name__}")


def load_asserts(spec: Any, *, where: str = "", base_dir: str | Path | None = None) -> list[Assertion]:
    """The assertions a spec gives (text, several lines, JSON, a mapping, a callable, an Assertion or a list),
    checked, with unique names; a UsageError naming `where` for anything wrong. `base_dir`: the folder of the
    experiment file they were written in (where a `python:` module or `file.py` is looked for, see above)."""
    base = Path(base_dir) if base_dir is not None else None
    return _unique([_checked(a, where, base) for a in _iter_specs(spec, where)])


# ---- checking ----------------------------------------------------------------------------------------------

def check_assertion(a: Assertion, cell: Mapping[str, Any], trace: Trace | None = None, *,
                    grader: Model | str | None = None) -> AssertionResult:
    """Check one assertion against a cell (and its trace, for `fetched`; `grader` for `model-graded`)."""
    if not isinstance(a, Assertion):
        raise UsageError(f"check_assertion takes an Assertion (see load_asserts), not {type(a).__name__}")
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
