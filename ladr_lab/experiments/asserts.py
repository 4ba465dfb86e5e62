"""Assertions on an experiment's cells (one ladder variant run on one input row), in promptfoo's words.

An `Assertion` is a kind (`contains`, `regex`, `json-schema`, `fetched`, `max-calls`, `python`, `model-graded`,
...: `KINDS`), a value and a results-column name; `not-KIND` negates any kind, as in promptfoo. `load_asserts`
reads every spelling a notebook, a YAML file or a CSV cell gives (`"contains: dedup"`, several such lines, a
JSON list, a `{"type": ..., "value": ...}` mapping, a callable) and refuses a bad one at once, naming where it
came from. `check_assertion` checks one assertion against a cell (the results row: status, output, llm_calls,
tokens_in, tokens_out, cost, seconds, error) and, for `fetched`, the cell's trace; it never raises for what a
cell holds: an assertion that cannot be checked answers `passed=None` and says why.

Decisions:

- A cell that ended in error with no output fails every content assertion (passed False, "the cell ended in
  error: ..."), negated or not: `not-contains` must not pass on an output that never came. `python` functions
  are still called (they get the whole cell and may judge an error), and so are the budget kinds.
- `regex` compiles with Python's `re` at load time and searches under the same time limit as a ladder's schema
  patterns (`round.validators.search`): a backtracking pattern cannot hang an experiment.
- `is-json` and `json-schema` read the JSON the engine would (`jsonx.extract`: the whole output, a fenced
  ```json block, or the first balanced block); `is-json` with a schema as value is `json-schema`, as in promptfoo.
- `model-graded` with the `offline` model is a deterministic stand-in, not a grader: it passes when at least
  half of the rubric's content words occur in the output, and says so.
"""
from __future__ import annotations

import difflib
import importlib
import inspect
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import LadrError, short_text
from ..jsonx import extract
from ..slate.globbing import DSTAR, compile_glob

if TYPE_CHECKING:
    from ..models.base import Model
    from ..trace import Trace

__all__ = ["ALIASES", "KINDS", "NAME_CHARS", "Assertion", "AssertionResult", "check_all", "check_assertion",
           "load_asserts"]

KINDS: tuple[str, ...] = (
    "contains", "icontains", "regex", "equals", "starts-with",
    "is-json", "json-schema",
    "fetched",
    "max-calls", "max-cost", "max-tokens", "max-seconds", "status",
    "python", "model-graded",
)
# other spellings: name -> (kind, negated)
ALIASES: dict[str, tuple[str, bool]] = {"never-fetched": ("fetched", True), "llm-rubric": ("model-graded", False)}
NAME_CHARS = 40           # longest derived results-column name

_CONTENT = frozenset({"contains", "icontains", "regex", "equals", "starts-with", "is-json", "json-schema",
                      "model-graded"})
_TEXT = frozenset({"contains", "icontains", "regex", "equals", "starts-with", "model-graded"})
_LIMITS = {"max-calls": ("llm_calls", "model calls"), "max-cost": ("cost", "cost (USD)"),
           "max-tokens": (("tokens_in", "tokens_out"), "tokens"), "max-seconds": ("seconds", "seconds")}
_KEYS = ("type", "kind", "value", "name", "threshold", "negate")
_STOP = frozenset("""that this with from have has should must does what when which their there about into than then
them they will would could only also some more most very each other been were being just like such your
answer output response reply mention mentions mentioned explain explains explained says state states stated
include includes including contain contains describe describes correct correctly clearly""".split())


@dataclass(frozen=True)
class Assertion:
    """One check of a cell: a kind of `KINDS`, its value, the results-column name, and whether it is negated."""

    kind: str
    value: Any = None
    name: str = ""
    negate: bool = False
    threshold: float | None = None     # python, model-graded: the least score that passes (default 0.5)

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", _derived_name(self))


@dataclass(frozen=True)
class AssertionResult:
    """What one assertion said of one cell: passed (None: it could not be checked), why in words, a score."""

    passed: bool | None
    reason: str
    score: float | None = None


# ---- loading -----------------------------------------------------------------------------------------------

def _at(where: str) -> str:
    return f"{where}: " if where else ""


def _short(value: Any, limit: int = 60) -> str:
    return short_text(value, limit)


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
    if text in KINDS:
        return text, negate
    if text in ALIASES:
        kind, neg = ALIASES[text]
        return kind, neg != negate
    known = [*KINDS, *ALIASES]
    near = difflib.get_close_matches(text, known, n=1, cutoff=0.6)
    hint = f' (did you mean "{"not-" if negate else ""}{near[0]}"?)' if near else ""
    raise LadrError(f'{_at(where)}unknown assertion kind "{_short(word.strip())}"{hint}; the kinds are '
                    f"{', '.join(KINDS)}, each also as not-KIND")


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


def _positional(fn: Callable) -> int:
    """How many positional arguments (output, cell, trace) `fn` takes: 1, 2 or 3."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return 1
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 3
    plain = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in plain if p.default is p.empty]
    return max(len(required), min(len(plain), 3))


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


def _checked(a: Assertion, where: str) -> Assertion:
    """The assertion with its value validated and converted (numbers, schema, function), or a LadrError."""
    text = f'assertion "{a.name}"'
    kind, value = a.kind, a.value
    if kind not in KINDS:
        kind, neg = _kind_of(kind, where)
        a = replace(a, kind=kind, negate=a.negate != neg)
    if isinstance(value, float) and math.isnan(value):
        value = None
    if kind in _TEXT or kind == "fetched":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or value == "":
            raise LadrError(f"{_at(where)}{text} needs a non-empty text value, got {_short(repr(value))}")
        if kind == "regex":
            try:
                re.compile(value)
            except re.error as exc:
                raise LadrError(f"{_at(where)}{text}: {value!r} is not a valid regular expression ({exc})") from None
    elif kind == "json-schema" or (kind == "is-json" and value not in (None, "")):
        value = _schema(text, value, where)
    elif kind == "is-json":
        value = None
    elif kind in _LIMITS:
        value = _number(text, value, where, whole=kind in ("max-calls", "max-tokens"))
    elif kind == "status":
        value = "completed" if value in (None, "") else str(value).strip()
    elif kind == "python":
        value = _function(text, value, where)
    if a.threshold is not None:
        threshold = _number(f"{text}'s threshold", a.threshold, where, whole=False)
        a = replace(a, threshold=float(threshold))
    return a if value is a.value and kind == a.kind else replace(a, value=value)


def _from_text(line: str, where: str) -> Assertion:
    head, sep, rest = line.partition(":")
    if not head.strip() or " " in head.strip():
        near = difflib.get_close_matches(head.strip().split(" ")[0].lower(), [*KINDS, *ALIASES], n=1, cutoff=0.6)
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
        raise LadrError(f'{_at(where)}an assertion needs a "type" (one of {", ".join(KINDS)}), got {_short(repr(word))}')
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

def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _output(cell: Mapping[str, Any]) -> str:
    out = cell.get("output")
    return out if isinstance(out, str) else ("" if not _present(out) else str(out))


def _errored(cell: Mapping[str, Any]) -> str | None:
    """Why the cell has no output to check (it ended in error before one), or None."""
    if cell.get("status") == "error" and not _output(cell):
        err = cell.get("error")
        return f"the cell ended in error: {_short(err, 200) if _present(err) and err else 'no error text'}"
    return None


def _quote(value: str) -> str:
    return repr(_short(value, 60))


def _text_check(a: Assertion, out: str) -> AssertionResult:
    v = a.value
    if a.kind == "contains":
        ok = v in out
        return AssertionResult(ok, f"output {'contains' if ok else 'does not contain'} {_quote(v)}")
    if a.kind == "icontains":
        ok = v.lower() in out.lower()
        return AssertionResult(ok, f"output {'contains' if ok else 'does not contain'} {_quote(v)} (ignoring case)")
    if a.kind == "starts-with":
        ok = out.startswith(v)
        return AssertionResult(ok, f"output {'starts' if ok else 'does not start'} with {_quote(v)}")
    if a.kind == "equals":
        ok = out.strip() == v.strip()
        return AssertionResult(ok, f"output {'equals' if ok else 'does not equal'} {_quote(v)}")
    from ..round.validators import PatternTimeout, search
    try:
        ok = search(v, out)
    except PatternTimeout:
        return AssertionResult(None, f"regex {_quote(v)} took too long on this output (catastrophic backtracking?)")
    except Exception as exc:      # a pattern Python's re takes but the timed engine does not
        return AssertionResult(None, f"regex {_quote(v)} cannot be applied: {exc}")
    return AssertionResult(ok, f"output {'matches' if ok else 'does not match'} regex {_quote(v)}")


def _json_check(a: Assertion, out: str) -> AssertionResult:
    found = extract(out)
    if not found:
        return AssertionResult(False, "no JSON found in the output")
    if a.value is None:
        return AssertionResult(True, f"JSON found ({found.method})")
    from ..round.verdict import schema_problem
    try:
        problem = schema_problem(found.value, a.value)
    except LadrError as exc:
        return AssertionResult(None, str(exc))
    if problem is None:
        return AssertionResult(True, f"JSON found ({found.method}) and it matches the schema")
    return AssertionResult(False, f"JSON found ({found.method}) but it does not match the schema: {problem}")


def _limit_check(a: Assertion, cell: Mapping[str, Any]) -> AssertionResult:
    keys, words = _LIMITS[a.kind]
    if a.kind == "max-seconds" and not str(cell.get("source") or "run").startswith("run"):
        # a re-judged cell took no model time of its own: its recorded model time stands for the run's
        keys, words = "latency", "seconds (recorded model time: the cell was re-judged)"
    values: list[Any] = [cell.get(k) for k in (keys if isinstance(keys, tuple) else (keys,))]
    if not all(_present(v) for v in values):
        return AssertionResult(None, f"the cell has no {' + '.join(keys) if isinstance(keys, tuple) else keys}")
    try:
        got = sum((float(v) for v in values), 0.0)
    except (TypeError, ValueError):
        return AssertionResult(None, f"the cell's {words} is not a number: {_short(repr(values))}")
    shown = f"{got:g}"
    ok = got <= a.value
    return AssertionResult(ok, f"{shown} {words} {'≤' if ok else '>'} {a.value:g}", score=got)


def _canonical(path: str) -> str:
    parts = [p for p in path.strip().replace("\\", "/").split("/") if p not in ("", ".")]
    return "/".join(parts)


def _glob_matches(comps: list, parts: list[str]) -> bool:
    if not comps:
        return not parts
    head, rest = comps[0], comps[1:]
    if head == DSTAR:
        return any(_glob_matches(rest, parts[i:]) for i in range(len(parts) + 1))
    if not parts:
        return False
    ok = parts[0] == head.literal if head.literal is not None else head.match(parts[0]) is not None
    return ok and _glob_matches(rest, parts[1:])


def _path_matcher(value: str) -> Callable[[str], bool]:
    want = _canonical(value)
    if not re.search(r"[*?\[]", want):
        return lambda path: _canonical(path) == want
    comps = compile_glob(want)
    if comps is None:
        return lambda path: False
    return lambda path: _glob_matches(comps, _canonical(path).split("/"))


def _fetched_check(a: Assertion, trace: Any) -> AssertionResult:
    if trace is None:
        return AssertionResult(None, "no trace to check retrieval against")
    from ..trace import Trace
    try:
        calls = Trace.of(trace).calls()
    except LadrError as exc:      # a trace file that cannot be read leaves the assertion unchecked
        return AssertionResult(None, f"the trace cannot be read: {exc}")
    matches = _path_matcher(a.value)
    steps = {c.step for c in calls}
    fetched, asked = [], []
    for c in calls:
        for f in c.fetched or ():
            if f.status == "fetched":
                fetched.append(f.path)
                if matches(f.path):
                    where = f"round {c.round}" + (f" of {c.step}" if len(steps) > 1 else "")
                    return AssertionResult(True, f"fetched {f.path} in {where}")
            elif matches(f.path) or (f.asked and matches(f.asked)):
                asked.append(f"{f.status.replace('_', ' ')} in round {c.round}")
    if asked:
        return AssertionResult(False, f"never fetched {_short(a.value)}: asked for it, {asked[0]}")
    seen = ", ".join(dict.fromkeys(fetched))
    return AssertionResult(False, f"never fetched {_short(a.value)} (fetched: {_short(seen, 120) if seen else 'nothing'})")


def _outcome(raw: Any, threshold: float | None, who: str) -> AssertionResult:
    """A python check's return value (bool, score, (bool, reason), or {pass, reason, score}) as a result."""
    limit = 0.5 if threshold is None else threshold
    if isinstance(raw, bool) or type(raw).__name__ == "bool_":
        ok = bool(raw)
        return AssertionResult(ok, f"{who} returned {ok}")
    if isinstance(raw, (int, float)):
        score = float(raw)
        if math.isnan(score):
            return AssertionResult(None, f"{who} returned NaN")
        return AssertionResult(score >= limit, f"{who} scored {score:g} ({'≥' if score >= limit else '<'} {limit:g})",
                               score=score)
    if isinstance(raw, tuple) and len(raw) == 2 and isinstance(raw[0], bool):
        return AssertionResult(raw[0], f"{who}: {raw[1]}")
    if isinstance(raw, Mapping) and ("pass" in raw or "score" in raw):
        given = raw.get("score")
        graded = float(given) if isinstance(given, (int, float)) and not isinstance(given, bool) else None
        reason = raw.get("reason")
        said = f"{who}: {reason}" if reason else f"{who} returned pass={raw.get('pass')}"
        if graded is None and "pass" not in raw:
            return AssertionResult(None, f"{who} returned a score that is not a number: {_short(repr(raw))}")
        ok = bool(raw["pass"]) if "pass" in raw else graded is not None and graded >= limit
        if ok and threshold is not None and graded is not None and graded < threshold:
            ok, said = False, f"{said} (score {graded:g} < threshold {threshold:g})"
        return AssertionResult(ok, said, score=graded)
    return AssertionResult(None, f"{who} returned {_short(repr(raw))}: return a bool, a score, (bool, reason) or "
                                 "{pass, reason, score}")


def _python_check(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any) -> AssertionResult:
    fn = a.value
    who = getattr(fn, "__name__", "the function")
    args = (out, cell, trace)[: _positional(fn)]
    try:
        raw = fn(*args)
    except Exception as exc:      # a user's check must never stop the experiment
        return AssertionResult(False, f"{who} raised {type(exc).__name__}: {_short(str(exc), 200)}")
    return _outcome(raw, a.threshold, who)


def _content_words(rubric: str) -> list[str]:
    return list(dict.fromkeys(w for w in re.findall(r"[a-z][a-z'-]*[a-z]", rubric.lower())
                              if len(w) >= 4 and w not in _STOP))


def _stand_in(a: Assertion, out: str) -> AssertionResult:
    """The offline model's deterministic stand-in for a grader: the share of the rubric's content words found."""
    words = _content_words(a.value)
    if not words:
        return AssertionResult(None, "offline stand-in: the rubric has no content words to look for")
    text = out.lower()
    missing = [w for w in words if w not in text]
    score = (len(words) - len(missing)) / len(words)
    limit = 0.5 if a.threshold is None else a.threshold
    ok = score >= limit
    said = f"missing: {', '.join(missing)}" if missing else "every content word found"
    return AssertionResult(ok, f"offline stand-in (not a grader): {len(words) - len(missing)}/{len(words)} rubric "
                               f"words in the output; {said}", score=score)


_GRADER_SYSTEM = ("You grade an output against a rubric. Reply with only a JSON object: "
                  '{"pass": true or false, "reason": "one sentence", "score": a number from 0 to 1}.')


def _grader(grader: Any) -> Any:
    if grader is None or hasattr(grader, "complete"):
        return grader
    from ..models import get_model
    return get_model(grader)


def _graded(a: Assertion, out: str, grader: Any) -> AssertionResult:
    if grader is None:
        return AssertionResult(None, 'no grader model was given: check with grader="offline" for the deterministic '
                                     "stand-in, or a model name")
    try:
        model = _grader(grader)
    except LadrError as exc:
        return AssertionResult(None, f"the grader could not be made: {exc}")
    from ..models import OfflineModel
    if isinstance(model, OfflineModel):
        return _stand_in(a, out)
    from ..models import CallInfo
    messages = [{"role": "system", "content": _GRADER_SYSTEM},
                {"role": "user", "content": f"Rubric:\n{a.value}\n\nOutput:\n{out}"}]
    name = getattr(model, "name", type(model).__name__)
    try:
        text = model.complete(messages, CallInfo(step="grader")).text
    except Exception as exc:       # a grader that fails leaves the cell unchecked, never the experiment stopped
        return AssertionResult(None, f"the grader {name} failed: {type(exc).__name__}: {_short(str(exc), 200)}")
    verdict = extract(text or "").value
    if not isinstance(verdict, dict) or not isinstance(verdict.get("pass"), bool):
        return AssertionResult(None, f'the grader {name} gave no {{"pass": ..., "reason": ...}} verdict: '
                                     f"{_short(text, 200)!r}")
    return _outcome(verdict, a.threshold, f"grader {name}")


def _unnegated(a: Assertion, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
    out = _output(cell)
    if a.kind in _TEXT - {"model-graded"}:
        return _text_check(a, out)
    if a.kind in ("is-json", "json-schema"):
        return _json_check(a, out)
    if a.kind == "fetched":
        return _fetched_check(a, trace)
    if a.kind in _LIMITS:
        return _limit_check(a, cell)
    if a.kind == "status":
        got = cell.get("status")
        ok = got == a.value
        return AssertionResult(ok, f"status is {got!r}" + ("" if ok else f", not {a.value!r}"))
    if a.kind == "python":
        return _python_check(a, out, cell, trace)
    return _graded(a, out, grader)


def _check(a: Assertion, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
    """Check one assertion whose value `load_asserts` has already checked."""
    why = _errored(cell) if a.kind in _CONTENT else None
    if why is not None:
        return AssertionResult(False, why)
    result = _unnegated(a, cell, trace, grader)
    if not a.negate or result.passed is None:
        return result
    passed = not result.passed
    return AssertionResult(passed, f"{result.reason}: not-{a.kind} {'passes' if passed else 'fails'}", result.score)


def check_assertion(a: Assertion, cell: Mapping[str, Any], trace: Trace | None = None, *,
                    grader: Model | str | None = None) -> AssertionResult:
    """Check one assertion against a cell (and its trace, for `fetched`; `grader` for `model-graded`)."""
    if not isinstance(a, Assertion):
        raise LadrError(f"check_assertion takes an Assertion (see load_asserts), not {type(a).__name__}")
    return _check(_checked(a, ""), cell, trace, grader)


def check_all(asserts: Any, cell: Mapping[str, Any], trace: Trace | None = None, *,
              grader: Model | str | None = None) -> dict[str, AssertionResult]:
    """Check every assertion (anything `load_asserts` reads) against a cell: results by name, in order."""
    loaded = load_asserts(asserts)
    if grader is not None and any(a.kind == "model-graded" for a in loaded):
        try:
            grader = _grader(grader)       # made once for the cell, not once per assertion
        except LadrError:
            pass                           # each model-graded result says why
    return {a.name: _check(a, cell, trace, grader) for a in loaded}
