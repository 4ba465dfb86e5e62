"""One cell of a batch run (an `evaluate` row or an experiment's variant × row): the picklable `CellSpec` it runs
from, the typed `CellResult` it ends as, and the functions that run it — `run_cell` (the ladder run) and `execute`
(the run, then its assertions) — on a thread of the local pool or in a Ray worker alike.

A cell writes its trace to `<out>/<trace>` and returns its `CellResult` (status, output, calls, tokens, cost, gate
outcomes, writes, error, seconds); a failure of any kind is that cell's status `error` (`CellResult.failed`), never
an exception. A re-judged cell (`replay` set) runs the ladder against another run's recorded outputs
(`models.ReplayModel`): the engine judges them with this ladder's schemas and no model is called, until the run
asks for a call the recording does not have; then `then` answers live, or (no `then`) the cell is `unsettled`.

`CellResult.to_dict()` is the cell's line in the folder's results file (`folder.py` reads and writes it), and
`CellResult.from_dict` reads one back, whichever version of ladr_lab wrote it: keys it does not know are kept.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..config.model import Ladder
from ..errors import LadrError
from ..trace import Gate, LlmCall, Trace, Write

if TYPE_CHECKING:
    from .assertions import Assertion
    from .checks import AssertionResult

__all__ = ["RUN_COLUMNS", "UNSETTLED", "CellResult", "CellSource", "CellSpec", "CellTask", "asserts_fingerprint",
           "check_cell", "execute", "fingerprint", "run_cell", "safe_name"]

UNSETTLED = "unsettled"


def safe_name(rid: str) -> str:
    """A row id (or variant name) as a file name: letters, digits, '.', '_' and '-' only, and never `.` or `..`
    (a folder of its own, not the one above)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", rid)[:120] or "_"
    return "_" + name if set(name) == {"."} else name


def fingerprint(ladder: Ladder, knobs: Mapping[str, Any] | None, model_name: str, inputs: Mapping[str, Any],
                model_options: Mapping[str, Any] | None = None) -> str:
    """What a finished cell's run depends on: a resumed batch runs the cell again when it changed."""
    doc = {"ladder": ladder.text, "knobs": dict(knobs or {}), "model": model_name, "inputs": dict(inputs)}
    if model_options:          # only when given: rows finished before model options existed keep their fingerprint
        doc["model_options"] = dict(model_options)
    data = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CellSpec:
    """Everything one cell needs besides its ladder, picklable (a Ray task receives it)."""

    row: str
    pos: int
    fields: Mapping[str, Any]
    out: str                                   # the output folder
    trace: str                                 # the trace file, relative to `out`
    fingerprint: str
    slates: Mapping[str, str] = field(default_factory=dict)   # title -> folder, as bound
    isolate: tuple[str, ...] = ()              # titles copied to `<out>/<isolate_dir>/<title>` before the run
    isolate_dir: str = ""
    model: Any = None                          # a model name, a Model (local pool only), or None: the ladder's
    model_options: Mapping[str, Any] | None = None
    expected: tuple[str, ...] = ()             # the input columns the ladder reads
    max_fetch_chars: int | None = None
    max_round_chars: int | None = None
    variant: str | None = None
    replay: str | None = None                  # a recorded trace this cell re-judges (no model call)
    then: Any = None                           # who answers live after a re-judged cell's divergence (None: nobody)
    limit_key: str | None = None               # the provider a rate limiter counts this cell's live calls under
    cache: str | bool = False                  # the response cache's folder (models/cache.py), or False: none
    repeat: int = 1                            # which run of the cell this is (`repeat=N`: 1..N)
    otel: Mapping[str, Any] | None = None      # export the cell's run as spans: OtelExport's options (telemetry.py)


# ---- where a cell's result came from ---------------------------------------------------------------------------

_REJUDGED = re.compile(r"re-judged from (?P<base>.+?)(?:, (?P<live>\d+) call\(s\) live)?")
_COPIED = re.compile(r"same as (?P<base>.+?): no verdict changes")
_RUN_BECAUSE = re.compile(r"run \((?P<why>.*)\)")
_BASE_IN_WHY = re.compile(r"the base cell (?P<base>[^/]+)/.* has no recording")   # a variant name has no "/"


@dataclass(frozen=True)
class CellSource:
    """Where a cell's result came from: `run` (the ladder ran with the model; `why`, when a re-judged variant's cell
    had to run), `rejudged` (replayed from the `base` variant's recording; `live_calls` answered live once the
    recording ended) or `copied` (the base cell's result: the variant's schemas flip none of its verdicts)."""

    kind: Literal["run", "rejudged", "copied"] = "run"
    base: str | None = None
    live_calls: int = 0
    why: str = ""
    raw: str | None = field(default=None, compare=False, repr=False)   # a text this version does not know, kept

    @property
    def rejudged(self) -> bool:
        """Whether the cell was re-judged (or copied) from another variant's run rather than run itself."""
        return self.kind != "run"

    @property
    def text(self) -> str:
        """The `source` column: `run`, `run (why)`, `re-judged from B[, N call(s) live]`, `same as B: no verdict
        changes`."""
        if self.raw is not None:
            return self.raw
        if self.kind == "copied":
            return f"same as {self.base}: no verdict changes"
        if self.kind == "rejudged":
            return f"re-judged from {self.base}" + (f", {self.live_calls} call(s) live" if self.live_calls else "")
        return f"run ({self.why})" if self.why else "run"

    @classmethod
    def parse(cls, text: Any) -> CellSource:
        """The source a `source` column's text says (None or empty: `run`); its `text` is that text again."""
        if text is None or text == "" or text == "run":
            return cls()
        text = str(text)
        got = cls._read(text)
        return got if got.text == text else dataclasses.replace(got, raw=text)

    @classmethod
    def _read(cls, text: str) -> CellSource:
        m = _REJUDGED.fullmatch(text)
        if m:
            return cls("rejudged", m["base"], int(m["live"] or 0))
        m = _COPIED.fullmatch(text)
        if m:
            return cls("copied", m["base"])
        m = _RUN_BECAUSE.fullmatch(text)
        if m:
            base = _BASE_IN_WHY.fullmatch(m["why"])
            return cls("run", base["base"] if base else None, why=m["why"])
        # a text of another version: runs start with "run", as they always have
        return cls("run" if text.startswith("run") else "rejudged", raw=text)


# ---- a cell's result -------------------------------------------------------------------------------------------

# a run's own columns, in their order in a results line (the inputs, `input.NAME`, come after row and variant)
RUN_COLUMNS = ("status", "output", "llm_calls", "tokens_in", "tokens_out", "cost", "gates", "writes", "latency",
               "error", "error_type", "error_step")
_TAIL = ("seconds", "trace", "fingerprint", "pos")
_CHECK_KEYS = ("passed", "reasons", "asserts", "asserts_fp")
# an experiment's scoring (weights, metrics, a cell threshold: scoring.py), on the lines of cells checked with it only
_SCORE_KEYS = ("score", "scores", "weights", "threshold", "metrics")


@dataclass(frozen=True)
class CellResult:
    """One finished cell: its row (and variant: None in an `evaluate` folder), its inputs, what its run ended as,
    where that came from (`source`; None: a plain evaluation row, which has no such column) and its assertions'
    results (`checks`, by name; None: a row that was never checked, as in an evaluation)."""

    row: str
    variant: str | None = None
    inputs: Mapping[str, Any] = field(default_factory=dict)
    status: str = "error"
    output: Any = ""
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    gates: str = ""
    writes: int = 0
    latency: float = 0.0
    error: str | None = None
    error_type: str | None = None
    error_step: str | None = None
    live_calls: int | None = None          # a re-judged cell's calls answered live (None: not a re-judged cell)
    retried: int = 0                       # how many earlier runs of this cell ended in an error (a re-run's retry)
    repeat: int = 1                        # which run of its (variant, row) this is, with `repeat=N` (1..N)
    seconds: float = 0.0
    trace: str = ""                        # the trace file, relative to the output folder ("" when none)
    fingerprint: str | None = None
    pos: int = 0
    source: CellSource | None = None
    checks: Mapping[str, AssertionResult] | None = None
    asserts_fp: str | None = None
    # scoring (scoring.py), set when the cell was checked with weights, metrics or a threshold (`scored`)
    scored: bool = False
    weights: Mapping[str, float] = field(default_factory=dict)     # the assertions whose weight is not 1
    threshold: float | None = None                                 # the cell threshold on the weighted score
    scores: Mapping[str, float] = field(default_factory=dict)      # each checked assertion's 0..1 score
    metrics: Mapping[str, float] = field(default_factory=dict)     # each named metric's score in this cell
    otel_trace: str | None = None          # the OpenTelemetry trace id its run was exported as (None: not exported)
    extra: Mapping[str, Any] = field(default_factory=dict)   # columns this version does not know, kept as read
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)   # a line's key order, as read

    # ---- what it says ----------------------------------------------------------------------------------------
    @property
    def passed(self) -> bool | None:
        """Every assertion passed (True), one failed (False), or None: no assertions, or one could not be checked;
        with weights or a threshold, scoring.py's rules (weight 0 never fails a cell; a threshold on the weighted
        score decides)."""
        from .scoring import cell_verdict
        return cell_verdict(self.checks or {}, self.weights, self.threshold, self.scores)

    @property
    def score(self) -> float | None:
        """The weighted score of the checked assertions, 0..1 (None: none was checked)."""
        from .scoring import cell_score
        return cell_score(self.checks or {}, self.weights, self.scores)

    @property
    def rejudged(self) -> bool:
        """Whether the cell was re-judged or copied from another variant's run rather than run."""
        return self.source is not None and self.source.rejudged

    @property
    def asserts(self) -> list[str]:
        """The names of the assertions checked on this cell, in order."""
        return list(self.checks or ())

    def check(self, name: str) -> bool | None:
        """One assertion's result (None: not checked, or no such assertion on this cell)."""
        got = (self.checks or {}).get(name)
        return None if got is None else got.passed

    def reasons(self) -> dict[str, str]:
        """Why each assertion that did not pass did not."""
        return {n: r.reason for n, r in (self.checks or {}).items() if r.passed is not True}

    # ---- making one ------------------------------------------------------------------------------------------
    @classmethod
    def failed(cls, spec: CellSpec, error: str, *, error_type: str | None = None, error_step: str | None = None,
               status: str = "error", source: CellSource | None = None, seconds: float = 0.0,
               trace: str | None = None, fingerprint: str | None = None) -> CellResult:
        """A cell that has no run to show: an error before or around its run (status `error`), or a re-judged cell
        with nothing to re-judge (`unsettled`); nothing called, nothing counted."""
        return cls(row=spec.row, variant=spec.variant, inputs=dict(spec.fields), status=status, error=error,
                   error_type=error_type, error_step=error_step, seconds=round(seconds, 3), repeat=spec.repeat,
                   trace=spec.trace if trace is None else trace,
                   fingerprint=spec.fingerprint if fingerprint is None else fingerprint, pos=spec.pos, source=source)

    def with_checks(self, checks: Mapping[str, AssertionResult], asserts_fp: str | None) -> CellResult:
        """The cell with these assertion results."""
        return dataclasses.replace(self, checks=dict(checks), asserts_fp=asserts_fp)

    def replace(self, **changes: Any) -> CellResult:
        """A copy with some fields changed (`dataclasses.replace`); its line takes the canonical key order."""
        return dataclasses.replace(self, **changes, order=())

    # ---- its line in the results file ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The cell as its results line (`folder.RESULTS`): row, variant, `input.NAME`…, the run's columns, live_calls,
        retried (when it is not 0), seconds, trace, fingerprint, pos, then (an experiment's cells) source, a column
        per assertion, passed, reasons, asserts and asserts_fp."""
        d: dict[str, Any] = {"row": self.row}
        if self.variant is not None:
            d["variant"] = self.variant
        d.update({f"input.{k}": v for k, v in self.inputs.items()})
        d.update({k: getattr(self, k) for k in RUN_COLUMNS})
        if self.live_calls is not None:
            d["live_calls"] = self.live_calls
        if self.retried:           # only on a retried cell's line: other lines keep the keys they always had
            d["retried"] = self.retried
        if self.repeat != 1:       # only on repeats 2..N: a line of a run without repeats is as it was
            d["repeat"] = self.repeat
        if self.otel_trace:        # only on an exported cell's line
            d["otel_trace"] = self.otel_trace
        d.update({k: getattr(self, k) for k in _TAIL})
        if self.source is not None:
            d["source"] = self.source.text
        if self.checks is not None:
            d.update({n: r.passed for n, r in self.checks.items()})
            d.update(passed=self.passed, reasons=self.reasons(), asserts=self.asserts, asserts_fp=self.asserts_fp)
            if self.scored:        # only when weights, metrics or a threshold were asked for
                d.update(score=self.score, scores=dict(self.scores), weights=dict(self.weights),
                         threshold=self.threshold, metrics=dict(self.metrics))
        for k, v in self.extra.items():
            d.setdefault(k, v)
        if self.order and set(self.order) == set(d):    # a line read back is written back byte for byte
            d = {k: d[k] for k in self.order}
        return d

    def to_report(self, out: str | Path | None = None) -> dict[str, Any]:
        """The cell as `ladr-lab eval --json` lists it: its results line without what only resuming reads
        (fingerprint, pos, asserts_fp), the inputs under `inputs`, each assertion under `checks` (name, passed,
        reason, and score when it has one) instead of a column each, and `trace` joined to the folder `out`."""
        line = self.to_dict()
        skip = {"fingerprint", "pos", "asserts_fp", "asserts", "reasons", *self.asserts}
        d: dict[str, Any] = {k: v for k, v in line.items() if k not in skip and not k.startswith("input.")}
        d["inputs"] = dict(self.inputs)
        if self.checks is not None:
            d["checks"] = [{"name": n, "passed": r.passed, "reason": r.reason,
                            **({"score": r.score} if r.score is not None else {})} for n, r in self.checks.items()]
        if self.trace and out is not None:
            d["trace"] = str(Path(out) / self.trace)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CellResult:
        """A cell read back from its results line (`to_dict` gives the same line back)."""
        from .checks import AssertionResult
        d = dict(d)
        names = [str(n) for n in d.get("asserts") or ()] if "asserts" in d else None
        checks = None
        if names is not None:
            why = d.get("reasons") or {}
            checks = {n: AssertionResult(d.get(n), str(why.get(n, "") if isinstance(why, Mapping) else ""))
                      for n in names}
        known = {"row", "variant", *RUN_COLUMNS, "live_calls", "retried", "repeat", "otel_trace", *_TAIL, "source",
                 *_CHECK_KEYS, *(names or ())}
        kw: dict[str, Any] = {k: d[k] for k in (*RUN_COLUMNS, *_TAIL, "live_calls", "retried", "repeat", "otel_trace")
                              if k in d}
        if checks is not None and "score" in d:
            known.update(_SCORE_KEYS)
            kw.update(scored=True, weights=_floats(d.get("weights")), scores=_floats(d.get("scores")),
                      metrics=_floats(d.get("metrics")),
                      threshold=float(d["threshold"]) if isinstance(d.get("threshold"), (int, float)) else None)
        return cls(row=str(d.get("row")), variant=None if d.get("variant") is None else str(d["variant"]),
                   inputs={k[len("input."):]: v for k, v in d.items() if k.startswith("input.")},
                   source=CellSource.parse(d["source"]) if "source" in d else None, checks=checks,
                   asserts_fp=d.get("asserts_fp"),
                   extra={k: v for k, v in d.items() if k not in known and not k.startswith("input.")},
                   order=tuple(d), **kw)

    @classmethod
    def of(cls, cell: CellResult | Mapping[str, Any]) -> CellResult:
        """A CellResult as it is, or one read from a results line (a dict)."""
        return cell if isinstance(cell, CellResult) else cls.from_dict(cell)

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """The columns every cell has, in order (the inputs, a column per assertion and `passed` aside)."""
        return ("row", "variant", *RUN_COLUMNS, "live_calls", "retried", "repeat", "otel_trace", *_TAIL, "source", *_CHECK_KEYS,
                *_SCORE_KEYS)


def _floats(value: Any) -> dict[str, float]:
    """A results line's {name: number} mapping (scores, weights, metrics), numbers only."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): float(v) for k, v in value.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


# ---- running one -----------------------------------------------------------------------------------------------

def _gates(trace: Trace) -> str:
    return "; ".join(f"{e.step}#{e.node}:{e.branch}→{e.action}" + (f"→{e.jump}" if e.jump else "")
                     for e in trace.events if isinstance(e, Gate))


def _bind(spec: CellSpec) -> dict[str, Path]:
    bound = {t: Path(p) for t, p in spec.slates.items()}
    for title in spec.isolate:
        if bound.get(title) is not None:
            copy = Path(spec.out) / spec.isolate_dir / safe_name(title)
            if copy.exists():
                shutil.rmtree(copy)
            if bound[title].is_dir():
                shutil.copytree(bound[title], copy, ignore=shutil.ignore_patterns(".ladr"))
            bound[title] = copy
    return bound


def _model(spec: CellSpec, ladder: Ladder, limiter):
    """The model this cell runs with, and whether the cell owns it (closes it afterwards)."""
    from ..models import get_model
    from ..models.limited import LimitedModel
    from ..models.replay import ReplayModel
    live = spec.then if spec.replay else spec.model
    owned = live is None or isinstance(live, str)
    if spec.replay and live is None:
        model = None
    else:
        model = get_model(live if live is not None else ladder.model, base_dir=ladder.base_dir,
                          options=spec.model_options if owned else None)
        if limiter is not None:
            model = LimitedModel(model, limiter, spec.limit_key or model.name, owns=owned)
            owned = True
    if spec.replay:    # closing a replay closes its live model: only when this cell made that model
        if model is not None and spec.cache:     # the live calls after a divergence answer through the cache too
            from ..models.cache import with_cache
            model = with_cache(model, _cache(spec), owns=owned)
            owned = True
        return ReplayModel(spec.replay, then=model), owned or model is None
    return model, owned


def _cache(spec: CellSpec) -> Any:
    """The response cache this cell's live calls answer through: repeat 1 the folder's own entries, repeat n its own
    (`ResponseCache.for_repeat`), so repeats are fresh samples and a re-run of the experiment replays each."""
    if not isinstance(spec.cache, str) or spec.repeat == 1:
        return spec.cache
    from ..models.cache import ResponseCache
    return ResponseCache.at(spec.cache).for_repeat(spec.repeat)


def run_cell(spec: CellSpec, ladder: Ladder, *, limiter=None, otel: Any = None) -> CellResult:
    """Run one cell and return its result; the trace goes to `<out>/<trace>` (and, with `otel`, an OtelExport, its
    spans wait there for the cell's assertion results: `telemetry.export_cell`)."""
    from ..engine import Run
    t0 = time.perf_counter()
    model = None
    owned = False
    try:
        lacks = [c for c in spec.expected if c not in spec.fields]
        if lacks:    # this row only (a JSONL line without the key): its own error, naming the columns
            raise LadrError(f"this row has no {', '.join(lacks)}: the ladder reads input column(s) "
                            f"{', '.join(spec.expected)}; this row has {', '.join(sorted(spec.fields)) or 'none'}")
        bound = _bind(spec)
        model, owned = _model(spec, ladder, limiter)
        run = Run(ladder, model=model, inputs=dict(spec.fields), slates=bound, trace_out=Path(spec.out) / spec.trace,
                  max_fetch_chars=spec.max_fetch_chars, max_round_chars=spec.max_round_chars, cache=_cache(spec),
                  otel=otel if otel is not None else False)
        try:
            res = run.run()
        finally:       # an interrupt leaves the run unfinished: still close its trace file and models
            run.trace.close()
            run.close()
        status, error = res.status, res.error
        if spec.replay and res.error_type == "ReplayDivergence":
            # the edited judging sends the run where the recording has no output: only a model can say more
            status, error = UNSETTLED, f"re-judging needs a call the recording does not have: {res.error}"
        cell = CellResult(
            row=spec.row, variant=spec.variant, inputs=dict(spec.fields), status=status, output=res.output,
            llm_calls=res.llm_calls, tokens_in=res.tokens_in, tokens_out=res.tokens_out, cost=res.cost,
            gates=_gates(run.trace),
            writes=sum(1 for e in run.trace.events if isinstance(e, Write) and e.status == "written"),
            latency=round(sum(e.latency or 0.0 for e in run.trace.events if isinstance(e, LlmCall)), 3),
            error=error, error_type=res.error_type, error_step=res.error_step,
            live_calls=(res.live_calls or 0) if spec.replay else None, trace=spec.trace,
            fingerprint=spec.fingerprint, pos=spec.pos, repeat=spec.repeat)
    except Exception as exc:  # one cell's failure is that cell's result, never the whole batch's end
        cell = CellResult.failed(spec, f"{type(exc).__name__}: {exc}", error_type=type(exc).__name__,
                                 error_step=getattr(exc, "step_id", None))
    finally:
        if owned and model is not None:
            model.close()
    return cell.replace(seconds=round(time.perf_counter() - t0, 3))


# ---- a cell with assertions --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CellTask:
    """A cell to run: its spec, its variant's name (the key of its ladder), its assertions and the grader of
    model-graded ones (a model name; None: unchecked, see `runner.default_grader`), and where its result comes
    from (a re-judged cell's base; None: a plain evaluation row, which is not checked at all)."""

    spec: CellSpec
    variant: str | None
    asserts: tuple[Assertion, ...] = ()
    grader: str | None = None
    source: CellSource | None = field(default_factory=CellSource)
    threshold: float | None = None             # the cell threshold on the weighted score (scoring.py)


def asserts_fingerprint(asserts: tuple[Assertion, ...], grader: str | None, threshold: float | None = None) -> str:
    """What a cell's assertion results depend on besides its run: a changed assertion is re-checked, not re-run."""
    def one(a: Assertion) -> list:
        fp = [a.kind, a.value if not callable(a.value) else
              f"{getattr(a.value, '__module__', '')}:{getattr(a.value, '__qualname__', 'fn')}",
              a.name, a.negate, a.threshold]
        # weights, metrics and providers only when used: cells checked before they existed keep their fingerprint
        return fp + [a.weight, a.metric, a.provider] if a.scored or a.provider else fp

    doc: list = [one(a) for a in asserts] + [grader]
    if threshold is not None:
        doc.append({"threshold": threshold})
    data = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def check_cell(cell: CellResult, asserts: tuple[Assertion, ...], out: str | Path, *, grader=None,
               threshold: float | None = None) -> CellResult:
    """The cell with its assertions checked (each True, False, or None when it could not be checked, and why), and,
    with weights, metrics or a cell `threshold`, scored (scoring.py)."""
    from .assertions import check_all
    from .scoring import metric_scores, unit_score
    results: dict[str, AssertionResult] = {}
    if asserts:
        trace = None
        path = Path(out) / cell.trace
        if cell.trace and path.is_file():
            trace = Trace.of(path)
        plain = cell.replace(checks=None, asserts_fp=None, scored=False, weights={}, threshold=None, scores={},
                             metrics={}).to_dict()
        results = check_all(asserts, plain, trace, grader=grader)
    checked = cell.with_checks(results, asserts_fingerprint(asserts, grader, threshold))
    if threshold is None and not any(a.scored for a in asserts):
        return checked.replace(scored=False, weights={}, threshold=None, scores={}, metrics={})
    scores = {a.name: s for a in asserts if (r := results.get(a.name)) is not None
              and (s := unit_score(a, r)) is not None}
    return checked.replace(scored=True, weights={a.name: a.weight for a in asserts if a.weight != 1},
                           threshold=threshold, scores=scores, metrics=metric_scores(asserts, results, scores))


def execute(task: CellTask, ladder: Ladder, *, limiter=None) -> CellResult:
    """Run the cell, then check its assertions (an experiment's cell; a plain evaluation row is only run); with
    `spec.otel`, export its run as spans tagged with the cell's variant, row and assertion results."""
    from .telemetry import cell_export, export_cell
    otel = cell_export(task.spec)
    cell = run_cell(task.spec, ladder, limiter=limiter, otel=otel)
    if task.source is not None:
        source = task.source
        if task.spec.replay and cell.live_calls:
            source = dataclasses.replace(source, live_calls=cell.live_calls)
        cell = check_cell(cell.replace(source=source), task.asserts, task.spec.out, grader=task.grader,
                          threshold=task.threshold)
    return export_cell(otel, cell, task.spec)
