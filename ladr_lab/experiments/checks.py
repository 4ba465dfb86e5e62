"""The kinds of assertion, one entry each: `CHECKS` maps a kind to its `Check`, and `KINDS` lists them.

A `Check` says everything a kind is: the function that checks it, the shape of its value (which
`assertions.load_asserts` reads and validates), and what the check needs of a cell: its output (`content`), its
trace (`needs_trace`) or a grader model (`needs_grader`). A new kind is one entry here; `load_asserts` accepts
every kind `CHECKS` holds and `check_all` runs it (tests/experiments/test_checks.py holds the two together).

`check` checks one already-read assertion against a cell (the results row: status, output, llm_calls,
tokens_in, tokens_out, cost, seconds, error) and never raises for what a cell holds: an assertion that cannot be
checked answers `passed=None` and says why. The public entry points are `assertions.check_assertion` and
`assertions.check_all`, which read their assertions first.

Decisions:

- A cell that ended in error with no output fails every content assertion (passed False, "the cell ended in
  error: ..."), negated or not: `not-contains` must not pass on an output that never came. `python` functions
  are still called (they get the whole cell and may judge an error), and so are the budget kinds.
- `regex` searches under the same time limit as a ladder's schema patterns (`round.validators.search`): a
  backtracking pattern cannot hang an experiment.
- `is-json` and `json-schema` read the JSON the engine would (`jsonx.extract`: the whole output, a fenced
  ```json block, or the first balanced block).
- `fetched` matches paths as the slate's `glob` mode does (`slate.globbing.match_glob`).
- `model-graded` with the `offline` model is a deterministic stand-in, not a grader: it passes when at least
  half of the rubric's content words occur in the output, and says so.
- `similar` embeds the value and the output with the embedder `similarTo` uses by default (`slate.get_embedder`:
  the offline hashing embedder, no download), or the one the assertion's `provider` names (`st:MODEL`,
  `litellm:MODEL`), made once per process; the score is the cosine similarity, passing at >= the threshold (0.75,
  promptfoo's default). `levenshtein` is promptfoo's: the edit distance between the stripped output and the stripped
  value (rapidfuzz, bit-parallel), passing at <= the threshold (default 5).
- A kind whose result's `score` is a 0..1 grade (`Check.graded`: python, model-graded, similar) gives that score to
  the cell's weighted score (`scoring.py`); every other kind counts 1 for a pass and 0 for a fail.
"""
from __future__ import annotations

import inspect
import math
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import LadrError, short_text
from ..jsonx import extract
from ..slate.globbing import match_glob
from .cells import CellSource

if TYPE_CHECKING:
    from .assertions import Assertion

__all__ = ["CHECKS", "KINDS", "LEVENSHTEIN_THRESHOLD", "SIMILAR_THRESHOLD", "AssertionResult", "Check", "check"]

_STOP = frozenset("""that this with from have has should must does what when which their there about into than then
them they will would could only also some more most very each other been were being just like such your
answer output response reply mention mentions mentioned explain explains explained says state states stated
include includes including contain contains describe describes correct correctly clearly""".split())


@dataclass(frozen=True)
class AssertionResult:
    """What one assertion said of one cell: passed (None: it could not be checked), why in words, a score."""

    passed: bool | None
    reason: str
    score: float | None = None


CheckFn = Callable[["Assertion", str, Mapping[str, Any], Any, Any], AssertionResult]


@dataclass(frozen=True)
class Check:
    """One kind of assertion: `fn(assertion, output, cell, trace, grader)` checks it, `value` names the shape of
    its value (`assertions` reads it: "text", "regex", "json" (an optional JSON Schema), "schema", "count" (a whole
    number >= 0), "number" (>= 0), "status" or "function"), and the flags say what the check needs: the cell's
    output (`content`: a cell that ended in error without one fails it), its trace, a grader model. A check that
    does not declare the trace or the grader is given None for it. `graded`: its result's `score` is a 0..1 grade
    that the cell's weighted score uses (other kinds count a pass 1, a fail 0); `threshold` its default threshold."""

    fn: CheckFn
    value: str = "text"
    content: bool = True
    needs_trace: bool = False
    needs_grader: bool = False
    graded: bool = False
    threshold: float | None = None


def _short(value: Any, limit: int = 60) -> str:
    return short_text(value, limit)


def _quote(value: str) -> str:
    return repr(_short(value, 60))


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


def _was_rejudged(cell: Mapping[str, Any]) -> bool:
    """Whether the cell was re-judged (or copied) from a recorded run rather than run, as its `source` says."""
    return CellSource.parse(cell.get("source")).rejudged


# ---- the output as text ------------------------------------------------------------------------------------

def _contains(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
    ok = a.value in out
    return AssertionResult(ok, f"output {'contains' if ok else 'does not contain'} {_quote(a.value)}")


def _icontains(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
    ok = a.value.lower() in out.lower()
    return AssertionResult(ok, f"output {'contains' if ok else 'does not contain'} {_quote(a.value)} (ignoring case)")


def _starts_with(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
    ok = out.startswith(a.value)
    return AssertionResult(ok, f"output {'starts' if ok else 'does not start'} with {_quote(a.value)}")


def _equals(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
    ok = out.strip() == a.value.strip()
    return AssertionResult(ok, f"output {'equals' if ok else 'does not equal'} {_quote(a.value)}")


def _regex(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
    from ..round.validators import PatternTimeout, search
    v = a.value
    try:
        ok = search(v, out)
    except PatternTimeout:
        return AssertionResult(None, f"regex {_quote(v)} took too long on this output (catastrophic backtracking?)")
    except Exception as exc:      # a pattern Python's re takes but the timed engine does not
        return AssertionResult(None, f"regex {_quote(v)} cannot be applied: {exc}")
    return AssertionResult(ok, f"output {'matches' if ok else 'does not match'} regex {_quote(v)}")


def _json(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
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


# ---- the cell's budget and status --------------------------------------------------------------------------

def _limit(keys: str | tuple[str, ...], words: str, *, rejudged: tuple[str, str] | None = None) -> CheckFn:
    """The check of a budget: the cell's `keys` (summed) at most the assertion's value. `rejudged`: the column
    and words read instead for a re-judged cell."""

    def check(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
        k, w = rejudged if rejudged is not None and _was_rejudged(cell) else (keys, words)
        names = k if isinstance(k, tuple) else (k,)
        values: list[Any] = [cell.get(n) for n in names]
        if not all(_present(v) for v in values):
            return AssertionResult(None, f"the cell has no {' + '.join(names)}")
        try:
            got = sum((float(v) for v in values), 0.0)
        except (TypeError, ValueError):
            return AssertionResult(None, f"the cell's {w} is not a number: {_short(repr(values))}")
        ok = got <= a.value
        return AssertionResult(ok, f"{got:g} {w} {'≤' if ok else '>'} {a.value:g}", score=got)

    return check


def _status(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
    got = cell.get("status")
    ok = got == a.value
    return AssertionResult(ok, f"status is {got!r}" + ("" if ok else f", not {a.value!r}"))


# ---- retrieval ---------------------------------------------------------------------------------------------

def _canonical(path: str) -> str:
    """A path as users and models write it (`./a.md`, `/a.md`, `a\\b.md`) in its canonical form."""
    parts = [p for p in path.strip().replace("\\", "/").split("/") if p not in ("", ".")]
    return "/".join(parts)


def _path_matcher(value: str) -> Callable[[str], bool]:
    want = _canonical(value)
    if not re.search(r"[*?\[]", want):
        return lambda path: _canonical(path) == want
    return lambda path: match_glob(want, _canonical(path))


def _fetched(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
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


# ---- python functions and graders --------------------------------------------------------------------------

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


def _python(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
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
    """The grader model: a model as given, or the model a name makes (`models.get_model`)."""
    if grader is None or hasattr(grader, "complete"):
        return grader
    from ..models import get_model
    return get_model(grader)


def _graded(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
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


# ---- similarity ----------------------------------------------------------------------------------------------

_EMBEDDERS: dict[str, Any] = {}
_EMBEDDERS_LOCK = threading.Lock()
SIMILAR_THRESHOLD = 0.75          # promptfoo's default
LEVENSHTEIN_THRESHOLD = 5         # promptfoo's default


def _embedder(name: str | None) -> Any:
    """The embedder `name` chooses (None: the offline hashing one `similarTo` uses by default), made once per
    process: a sentence-transformers model loads once, not once per cell."""
    key = name or "hashing"
    with _EMBEDDERS_LOCK:
        found = _EMBEDDERS.get(key)
        if found is None:
            if key.startswith("litellm:"):
                from ..models import embedding  # noqa: F401   # registers the litellm embedder with the slate
            from ..slate.embed import get_embedder
            found = _EMBEDDERS[key] = get_embedder(name)
        return found


def _cosine(u: list[float], v: list[float]) -> float:
    dot = sum(a * b for a, b in zip(u, v, strict=False))
    norm = math.hypot(*u) * math.hypot(*v)
    return dot / norm if norm else 0.0


def _similar(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
    limit = SIMILAR_THRESHOLD if a.threshold is None else a.threshold
    try:
        embedder = _embedder(a.provider)
        want, got = embedder.embed([a.value, out])
    except LadrError as exc:        # a model that is not installed, a provider that failed: unchecked, said why
        return AssertionResult(None, f"the embedder {a.provider or 'hashing'} failed: {exc}")
    except Exception as exc:        # an embedder's own failure never stops the experiment
        return AssertionResult(None, f"the embedder {a.provider or 'hashing'} failed: {type(exc).__name__}: "
                                     f"{_short(str(exc), 200)}")
    sim = _cosine(want, got)
    ok = sim >= limit
    return AssertionResult(ok, f"similarity {sim:.3f} {'≥' if ok else '<'} {limit:g} to {_quote(a.value)} "
                               f"({getattr(embedder, 'name', 'embedder')})", score=sim)


def _levenshtein(a: Assertion, out: str, cell: Mapping[str, Any], trace: Any, grader: Any) -> AssertionResult:
    from rapidfuzz.distance import Levenshtein
    limit = LEVENSHTEIN_THRESHOLD if a.threshold is None else a.threshold
    distance = Levenshtein.distance(out.strip(), a.value.strip())
    ok = distance <= limit
    return AssertionResult(ok, f"edit distance {distance} {'≤' if ok else '>'} {limit:g} from {_quote(a.value)}",
                           score=float(distance))


# ---- the registry ------------------------------------------------------------------------------------------

CHECKS: dict[str, Check] = {
    "contains": Check(_contains),
    "icontains": Check(_icontains),
    "regex": Check(_regex, value="regex"),
    "equals": Check(_equals),
    "starts-with": Check(_starts_with),
    "is-json": Check(_json, value="json"),
    "json-schema": Check(_json, value="schema"),
    "fetched": Check(_fetched, content=False, needs_trace=True),
    "max-calls": Check(_limit("llm_calls", "model calls"), value="count", content=False),
    "max-cost": Check(_limit("cost", "cost (USD)"), value="number", content=False),
    "max-tokens": Check(_limit(("tokens_in", "tokens_out"), "tokens"), value="count", content=False),
    # a re-judged cell took no model time of its own: its recorded model time stands for the run's
    "max-seconds": Check(_limit("seconds", "seconds",
                                rejudged=("latency", "seconds (recorded model time: the cell was re-judged)")),
                         value="number", content=False),
    "status": Check(_status, value="status", content=False),
    "python": Check(_python, value="function", content=False, needs_trace=True, graded=True),
    "model-graded": Check(_graded, needs_grader=True, graded=True),
    "similar": Check(_similar, graded=True, threshold=SIMILAR_THRESHOLD),
    "levenshtein": Check(_levenshtein, threshold=LEVENSHTEIN_THRESHOLD),
}
KINDS: tuple[str, ...] = tuple(CHECKS)


def check(a: Assertion, cell: Mapping[str, Any], trace: Any = None, grader: Any = None) -> AssertionResult:
    """Check one assertion whose value `assertions.load_asserts` has already read against a cell: its kind's
    `Check`, given what it needs, and negated for `not-KIND`."""
    entry = CHECKS[a.kind]
    why = _errored(cell) if entry.content else None
    if why is not None:
        return AssertionResult(False, why)
    result = entry.fn(a, _output(cell), cell, trace if entry.needs_trace else None,
                      grader if entry.needs_grader else None)
    if not a.negate or result.passed is None:
        return result
    passed = not result.passed
    return AssertionResult(passed, f"{result.reason}: not-{a.kind} {'passes' if passed else 'fails'}", result.score)
