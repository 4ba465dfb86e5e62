"""Tuning a retrieve step's `requestMatch` over a data set: every recorded output of its retrieve rounds (in an
evaluation, a folder of traces, a list of runs) judged by each variant of the schema, with no model call, and,
where outputs are labelled "request" or "answer", the precision and recall of request detection per variant.

Each distinct output is extracted once (`round.verdict.extraction`) and each distinct (schema, output) judged
once (`round.verdict.Judge`, whose verdicts are the engine's), so a few variants over hundreds of rows take a
fraction of a second, and a new label only recounts (`SchemaTuning.set_label`). The variant "recorded" is what
the run decided: a forced final call counts as an answer there (the runtime took it as final), while every
variant judges it like any other output (a request-shaped forced output is a model mistake a schema should
still detect).
"""
from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.keywords import dialect_keywords
from ..config.model import Ladder
from ..display import Displayable
from ..errors import LadrError
from ..round.verdict import Judge, extraction
from ..round.vocabulary import MODES
from ..trace import LlmCall, RunStart, Trace
from .edits import Edits
from .labels import ANSWER, REQUEST, Key, input_labels, save_label_sheet, to_label, to_labels

RECORDED = "recorded"
# the third verdict: JSON that matches requestMatch and names no retrieval mode (a bare array, `{"note": ...}`): the
# runtime takes it as a request, and the round fetches nothing (`trace rejudge` shows it as `(request) (no_match)`)
NO_MATCH = "no_match"
NO_LABELS_HINT = ("no labels yet, so no precision or recall: label each output request or answer — "
                  "`ladr-lab trace tune ... --write-labels labels.csv` writes every output with a blank label column "
                  "to fill in, then `--labels labels.csv` (in Python: tuning.save_label_sheet(path), labels=path; or "
                  "click them in the TuningView; or give the inputs a `labels` column)")
COLUMNS = ("variant", "row", "step", "node", "round", "iteration", "forced", "output", "verdict", "label", "correct",
           "keyword", "schema_path", "instance_path", "extraction", "reason")
SCORE_COLUMNS = ("variant", "outputs", "judged", "labelled", "requests", "tp", "fp", "fn", "tn", "precision",
                 "recall", "f1", "accuracy")


@dataclass(frozen=True)
class RoundOutput:
    """One recorded output of a retrieve round: where it is (row, step, node, round, iteration), whether it was
    the forced final call, its text, and the verdict the run made of it."""

    row: str
    step: str
    node: int
    round: int
    iteration: int
    forced: bool
    output: str
    recorded: Judged

    @property
    def key(self) -> Key:
        """(row, step, node, round, iteration): how labels name it."""
        return (self.row, self.step, self.node, self.round, self.iteration)


@dataclass(frozen=True)
class Judged:
    """How one variant judges one output: "request", "answer" or None (the variant says nothing of this
    step), and why (the deciding keyword and paths of a failed match, the extraction rule, the reason)."""

    verdict: str | None
    keyword: str | None = None
    schema_path: str | None = None
    instance_path: str | None = None
    extraction: str | None = None
    reason: str = ""


# ---- reading the source -------------------------------------------------------------------------------------

def _is_trace_file(path: Path) -> bool:
    """Whether a .jsonl file is a trace: its first line is a run's first event."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = json.loads(fh.readline() or "null")
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and first.get("type") == "run_start"


def _folder_traces(folder: Path) -> list[tuple[str, Any]]:
    """A folder of trace files (`traces/*.jsonl` or `*.jsonl`), by file name. A batch run's folder is not read here
    (its rows' ids and order are in a file only `experiments` reads): it is refused, saying what reads it."""
    files = [p for p in sorted(folder.glob("*.jsonl")) if p.is_file()]
    batch = any(not _is_trace_file(p) for p in files) or any(folder.glob("*/traces/*.jsonl"))
    if batch:
        raise LadrError(f"{folder} is a batch run's folder (an evaluation's or an experiment's): pass "
                        "ladr_lab.load_results(folder) — or load_evaluation / load_experiment — which gives its rows "
                        "by id, in input order")
    files = sorted((folder / "traces").glob("*.jsonl")) or files
    return [(p.stem, p) for p in files]


def iter_sources(source: Any) -> list[tuple[str, Trace]]:
    """(row id, Trace) of a source: anything with `.traces()` (an Evaluation, an Experiment), a folder of trace
    files (`traces/*.jsonl` or `*.jsonl`, by file name; a batch run's folder is refused, naming
    `ladr_lab.load_results`, which reads it), a trace file, a Trace or a Run, or a list of those or of (row id,
    one of those)."""
    pairs: list[tuple[str, Any]]
    if hasattr(source, "traces") and callable(source.traces):
        pairs = [(str(r), t) for r, t in source.traces()]
    elif isinstance(source, (str, Path)):
        path = Path(source)
        if path.is_dir():
            pairs = _folder_traces(path)
            if not pairs:
                raise LadrError(f"{path} holds no traces (traces/*.jsonl or *.jsonl)")
        elif path.is_file():
            pairs = [(path.stem, path)]
        else:
            raise LadrError(f"{path} does not exist: give a folder of traces or a trace file (or an "
                            "Evaluation or Experiment: anything with .traces())")
    elif isinstance(source, Trace) or isinstance(getattr(source, "trace", None), Trace):
        pairs = [("1", source)]
    elif isinstance(source, (list, tuple)):
        pairs = []
        for n, item in enumerate(source, 1):
            if isinstance(item, tuple) and len(item) == 2:
                pairs.append((str(item[0]), item[1]))
            else:
                pairs.append((Path(item).stem if isinstance(item, (str, Path)) else str(n), item))
    else:
        raise LadrError("tune_request_match reads an Evaluation or Experiment (anything with .traces()), a folder "
                        f"of traces, a trace file, a Trace, a Run, or a list of them, not {type(source).__name__}")
    out = [(row, t if isinstance(t, Trace) else Trace.of(t)) for row, t in pairs]
    dup = sorted(r for r, n in Counter(r for r, _ in out).items() if n > 1)
    if dup:
        raise LadrError(f"row ids must be unique (repeated: {', '.join(dup[:5])})")
    return out


def _names_mode(request: Any) -> bool:
    """Whether a matched request object names a retrieval mode (else the round fetches nothing)."""
    return isinstance(request, Mapping) and any(m in request for m in MODES)


def _recorded(e: LlmCall) -> Judged:
    j = e.verdict
    retrieval = e.request_match == "retrieval"
    return Judged((REQUEST if _names_mode(e.request) else NO_MATCH) if retrieval else ANSWER,
                   j.keyword if j is not None else None, j.schema_path if j is not None else None,
                   j.instance_path if j is not None else None, j.extraction if j is not None else None,
                   e.reason or "")


def system_prompts(traces: list[tuple[str, Trace]]) -> dict[str, str]:
    """The system message each retrieve step's first recorded call was sent, by step (what a suggestion checks the
    prompt's request example against)."""
    out: dict[str, str] = {}
    for _row, trace in traces:
        for e in trace.events:
            if isinstance(e, LlmCall) and not e.caller and e.step not in out:
                for m in e.messages:
                    if isinstance(m, Mapping) and m.get("role") == "system":
                        out[e.step] = str(m.get("content") or "")
                        break
    return out


def collect_outputs(traces: list[tuple[str, Trace]], step: str | None = None) -> tuple[list[RoundOutput], dict[str, Any]]:
    """The outputs of every retrieve round of the run's own steps (not of child runs), in row order and, within a
    row, by step (in the order the run reached them), iteration, node and round; and each row's `labels` input."""
    outputs: list[RoundOutput] = []
    carried: dict[str, Any] = {}
    for row, trace in traces:
        mine: list[RoundOutput] = []
        order: dict[str, int] = {}
        for e in trace.events:
            if isinstance(e, RunStart) and not e.caller and isinstance(e.inputs, Mapping) and "labels" in e.inputs:
                carried[row] = e.inputs["labels"]
            if not isinstance(e, LlmCall) or e.caller or (step is not None and e.step != step):
                continue
            if e.request_match not in ("retrieval", "final") and not e.forced_final:
                continue        # a step without retrieve (or a call whose judging failed)
            order.setdefault(e.step, len(order))
            mine.append(RoundOutput(row, e.step, e.node, e.round, e.iteration or 1, bool(e.forced_final), e.output,
                               _recorded(e)))
        mine.sort(key=lambda o: (order[o.step], o.iteration, o.node, o.round))
        outputs.extend(mine)
    return outputs, carried


# ---- variants ----------------------------------------------------------------------------------------------

def _edits(name: str, value: Any, step: str | None, steps: list[str]) -> Edits:
    """What a variant judges each step's outputs against: a Ladder or ladder path, a `{step_id: schema}`
    mapping, or one schema (a mapping or JSON text) for `step` or the only retrieve step."""
    if isinstance(value, Edits):
        return value
    if isinstance(value, Ladder):
        return Edits(value)
    if isinstance(value, Path) or (isinstance(value, str) and not value.lstrip().startswith("{")):
        return Edits(value)
    if not isinstance(value, (Mapping, str)):
        raise LadrError(f"variant {name!r}: give a schema (a mapping or JSON text), {{step_id: schema}}, a Ladder "
                        f"or a ladder path, not {type(value).__name__}")
    if isinstance(value, Mapping) and value and not set(value) & dialect_keywords({}) \
            and all(isinstance(v, (Mapping, str)) for v in value.values()):
        # no JSON Schema keyword among its keys: {step_id: schema}
        if not set(value) & set(steps):
            raise LadrError(f"variant {name!r} names the step(s) {', '.join(map(str, value))}, and these traces' "
                            f"retrieve steps are {', '.join(steps) or 'none'}")
        return Edits(value)
    target = step or (steps[0] if len(steps) == 1 else None)
    if target is None:
        raise LadrError(f"variant {name!r} is one schema, and these traces have "
                        + (f"the retrieve steps {', '.join(steps)}: say which (step=\"ID\" in Python, --step ID on "
                           f"the command line) or give {{step_id: schema}}"
                           if steps else "no retrieve rounds: nothing to judge it against"))
    return Edits({target: value})


class _Judging:
    """One variant's verdicts, each distinct (step, output) judged once."""

    def __init__(self, edits: Edits, judge: Judge) -> None:
        self.edits = edits
        self.judge = judge
        self.seen: dict[tuple[str, str], Judged] = {}
        self.schemas: dict[str, tuple[bool, dict | None]] = {}

    def __call__(self, o: RoundOutput) -> Judged:
        got = self.seen.get((o.step, o.output))
        if got is not None:
            return got
        if o.step not in self.schemas:
            self.schemas[o.step] = self.edits.request_match(o.step)
        covered, schema = self.schemas[o.step]
        if not covered or schema is None:
            got = Judged(None, reason=f"this variant gives step {o.step} no requestMatch"
                          + ("" if covered else " (it does not name the step)"))
        else:
            # old=True: one full pass that also yields the deciding error of a failure
            valid = self.judge.matches("requestMatch", schema, o.output, True)
            v = self.judge.request(schema, o.output, valid=valid)
            j = v.judgement
            verdict, reason = ANSWER, v.reason
            if v.is_request:
                verdict = REQUEST if _names_mode(v.request) else NO_MATCH
                if verdict == NO_MATCH:
                    reason += ("; it names no retrieval mode, so the round would fetch nothing (no_match): "
                               "a request only if the label says answer is wrong, never a useful one")
            got = Judged(verdict, j.keyword, j.schema_path, j.instance_path, j.extraction, reason)
        self.seen[(o.step, o.output)] = got
        return got


# ---- the result --------------------------------------------------------------------------------------------

def _ratio(a: int, b: int) -> float:
    return a / b if b else math.nan


def _correct(v: Judged, label: str | None) -> bool | None:
    return None if label is None or v.verdict is None else v.verdict == label


@dataclass
class SchemaTuning(Displayable):
    """Each recorded retrieve-round output judged by each requestMatch variant (the first, "recorded", is what
    the run decided), with the labels given: `table()`, `scores()`, `wrong(variant)`, `disagreements()`;
    `set_label` changes a label and the scores follow (nothing is judged again)."""

    outputs: list[RoundOutput]
    verdicts: dict[str, list[Judged]]
    labels: dict[Key, str] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)     # each step's recorded system message
    labelled_texts: dict[Key, str] = field(default_factory=dict)   # the text a labels sheet gave each labelled output

    @property
    def variants(self) -> list[str]:
        """The variant names, "recorded" first, then in the order given."""
        return list(self.verdicts)

    @property
    def relabelled_outputs(self) -> list[Key]:
        """The labels whose sheet gave the output's text (`--write-labels` sheets do) and a different one than was
        recorded: a sheet of another run, or outputs recorded again since (whitespace aside), sorted."""
        if not self.labelled_texts:
            return []
        recorded = {o.key: o.output for o in self.outputs}
        return sorted(k for k, text in self.labelled_texts.items()
                      if k in recorded and " ".join(text.split()) != " ".join(recorded[k].split()))

    @property
    def stray_labels(self) -> list[Key]:
        """The labels that name no recorded output (a typo, or a round the run never made), sorted."""
        keys = {o.key for o in self.outputs}
        return sorted(k for k in self.labels if k not in keys)

    def label_of(self, o: RoundOutput) -> str | None:
        """The label of an output ("request", "answer"), or None."""
        return self.labels.get(o.key)

    def set_label(self, row: str, step: str, round: int, label: Any, *, node: int = 1, iteration: int = 1) -> None:
        """Label one output ("request", "answer", or None / "" / "-" to clear it)."""
        key = (str(row), str(step), int(node), int(round), int(iteration))
        got = to_label(label, f"row {row} (step {step}, round {round})")
        if got is None:
            self.labels.pop(key, None)
        else:
            self.labels[key] = got

    def add_variant(self, name: str, value: Any, *, step: str | None = None) -> None:
        """Judge every output by one more variant (a schema for `step` or the only retrieve step, `{step_id:
        schema}`, a Ladder or a ladder path), as `tune_request_match` judges its variants; a name taken is judged
        again ("recorded" excepted)."""
        if not isinstance(name, str) or not name or name == RECORDED:
            raise LadrError(f"a variant's name is a non-empty string other than {RECORDED!r}, not {name!r}")
        steps = sorted({o.step for o in self.outputs})
        judging = _Judging(_edits(name, value, step, steps), Judge())
        self.verdicts[name] = [judging(o) for o in self.outputs]

    def save_label_sheet(self, path: str | Path) -> Path:
        """Write every output to a CSV to label by hand (row, step, node, round, iteration, label — blank where
        unlabelled —, what the run decided, the output); fill the label column with request or answer and read
        it back with `labels=PATH` (`--labels PATH`)."""
        return save_label_sheet(((o.key, self.label_of(o), {"recorded": o.recorded.verdict, "output": o.output})
                                 for o in self.outputs), path)

    def _check(self, variant: str) -> None:
        if variant not in self.verdicts:
            raise LadrError(f"no variant {variant!r}: the variants are {', '.join(self.verdicts)}")

    def table_rows(self, variant: str | None = None) -> list[dict]:
        """`table` as plain dicts."""
        names = self.variants if variant is None else [variant]
        for n in names:
            self._check(n)
        rows = []
        for name in names:
            for o, v in zip(self.outputs, self.verdicts[name], strict=True):
                label = self.label_of(o)
                rows.append({"variant": name, "row": o.row, "step": o.step, "node": o.node, "round": o.round,
                             "iteration": o.iteration, "forced": o.forced, "output": o.output, "verdict": v.verdict,
                             "label": label or "", "correct": _correct(v, label), "keyword": v.keyword,
                             "schema_path": v.schema_path, "instance_path": v.instance_path,
                             "extraction": v.extraction, "reason": v.reason})
        return rows

    def table(self, variant: str | None = None):
        """A pandas DataFrame with one row per (variant, output): where the output is, `forced`, the output, the
        `verdict` ("request" / "answer", or "no_match": taken as a request that names no mode and fetches nothing;
        None where the variant does not judge the step), `label` ("" when
        unlabelled), `correct` (None when unlabelled), and why (`keyword`, `schema_path`, `instance_path` of a
        failed match, `extraction`, `reason`)."""
        import pandas as pd
        return pd.DataFrame(self.table_rows(variant), columns=list(COLUMNS))

    def score_rows(self) -> list[dict]:
        """`scores` as plain dicts."""
        out = []
        for name, verdicts in self.verdicts.items():
            tp = fp = fn = tn = judged = requests = labelled = 0
            for o, v in zip(self.outputs, verdicts, strict=True):
                if v.verdict is None:
                    continue
                judged += 1
                requests += v.verdict in (REQUEST, NO_MATCH)
                label = self.label_of(o)
                if label is None:
                    continue
                labelled += 1
                if v.verdict == REQUEST:
                    tp, fp = (tp + 1, fp) if label == REQUEST else (tp, fp + 1)
                elif v.verdict == NO_MATCH:
                    # taken as a request that fetches nothing: an answer lost (fp), or a request that fails (fn)
                    fn, fp = (fn + 1, fp) if label == REQUEST else (fn, fp + 1)
                else:
                    fn, tn = (fn + 1, tn) if label == REQUEST else (fn, tn + 1)
            precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
            f1 = math.nan if math.isnan(precision) or math.isnan(recall) else \
                (0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall))
            out.append({"variant": name, "outputs": len(self.outputs), "judged": judged, "labelled": labelled,
                        "requests": requests, "tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": precision,
                        "recall": recall, "f1": f1, "accuracy": _ratio(tp + tn, labelled)})
        return out

    def scores(self):
        """A pandas DataFrame with one row per variant: outputs, judged, labelled, requests (taken as a request,
        labelled or not, "no_match" ones included), tp / fp / fn / tn of request detection on the labelled outputs, precision, recall, f1
        and accuracy (NaN when undefined: precision when the variant judged no labelled output a request, recall
        when no output is labelled a request)."""
        import pandas as pd
        return pd.DataFrame(self.score_rows(), columns=list(SCORE_COLUMNS))

    def wrong(self, variant: str):
        """The labelled outputs `variant` judges against their label (a DataFrame shaped as `table`)."""
        import pandas as pd
        self._check(variant)
        return pd.DataFrame([r for r in self.table_rows(variant) if r["correct"] is False], columns=list(COLUMNS))

    def compared(self) -> list[str]:
        """The variants `disagreements` compares: the given ones, with "recorded" when fewer than two were given."""
        given = [n for n in self.verdicts if n != RECORDED]
        return given if len(given) >= 2 else self.variants

    def wide_rows(self, disagree: bool = False) -> list[dict]:
        """One dict per output: where it is, forced, label, the output, and each variant's verdict under its name
        (`disagree`: only the outputs the `compared()` variants judge differently)."""
        names = self.compared()
        rows = []
        for i, o in enumerate(self.outputs):
            verdicts = {n: self.verdicts[n][i].verdict for n in self.variants}
            if disagree and len({verdicts[n] for n in names}) < 2:
                continue
            rows.append({"row": o.row, "step": o.step, "node": o.node, "round": o.round, "iteration": o.iteration,
                         "forced": o.forced, "label": self.label_of(o) or "", "output": o.output, **verdicts})
        return rows

    def disagreements(self):
        """The outputs the variants judge differently (the given variants, and "recorded" too when fewer than
        two were given): a DataFrame with one row per output and a column per variant holding its verdict."""
        import pandas as pd
        return pd.DataFrame(self.wide_rows(disagree=True), columns=[
            "row", "step", "node", "round", "iteration", "forced", "label", "output", *self.variants])

    def __repr__(self) -> str:
        return (f"<SchemaTuning: {len(self.outputs)} output(s), {len(self.labels)} label(s), "
                f"variants {', '.join(self.variants)}>")

    def to_text(self) -> str:
        """The scores as a plain table."""
        def num(x: float) -> str:
            return "-" if math.isnan(x) else f"{x:.2f}"
        lines = [f"{len(self.outputs)} output(s) of retrieve rounds, {len(self.labels)} label(s)"
                 + (f" ({len(self.stray_labels)} naming no recorded output)" if self.stray_labels else "")]
        k = self.relabelled_outputs
        if k:
            lines.append(f"warning: {len(k)} label(s) were given to another text than the output recorded there (row "
                         f"{k[0][0]} round {k[0][3]}{', …' if len(k) > 1 else ''}): a labels sheet of another run? "
                         "(its output column differs)")
        if not self.labels and self.outputs:
            lines.append(NO_LABELS_HINT)
        width = max([len(n) for n in self.variants] + [7])
        lines.append(f"{'variant':<{width}}  requests  tp  fp  fn  tn  precision  recall    f1  accuracy")
        for s in self.score_rows():
            lines.append(f"{s['variant']:<{width}}  {s['requests']:>8}  {s['tp']:>2}  {s['fp']:>2}  {s['fn']:>2}  "
                         f"{s['tn']:>2}  {num(s['precision']):>9}  {num(s['recall']):>6}  {num(s['f1']):>4}  "
                         f"{num(s['accuracy']):>8}")
        return "\n".join(lines)

    def to_html(self) -> str:
        """The scores per variant and the outputs with each variant's verdict (bounded), as static HTML."""
        from .html import tuning_html
        return tuning_html(self)


def tune_request_match(source: Any, variants: Mapping[str, Any], *, labels: Any = None,
                       step: str | None = None) -> SchemaTuning:
    """Judge every recorded output of a data set's retrieve rounds by each requestMatch variant, with no model
    call: a SchemaTuning (tables, and precision and recall of request detection where outputs are labelled).

    `source`: an Evaluation or Experiment (anything with `.traces()`), a folder of traces, a trace file, a Trace, a Run, or a
    list of them (or of (row id, one of them)). `variants`: {name: one schema (for `step`, or the only retrieve
    step) | {step_id: schema} | a Ladder | a ladder path}. `labels`: {(row, step, round) or (row, step, node,
    round): "request" | "answer"}, a DataFrame or CSV path (row, step, round, label; node optional), added to
    (and winning over) the labels rows carry in a `labels` input. `step`: only this step's rounds."""
    if not isinstance(variants, Mapping):
        raise LadrError("variants is a mapping {name: schema, {step_id: schema}, Ladder or ladder path}")
    traces = iter_sources(source)
    outputs, carried = collect_outputs(traces, step)
    steps = sorted({o.step for o in outputs})
    if step is not None and not outputs and traces:
        seen = sorted({e.step for _, t in traces for e in t.events if isinstance(e, LlmCall) and not e.caller and
                       (e.request_match in ("retrieval", "final") or e.forced_final)})
        raise LadrError(f"step {step!r} has no retrieve rounds in these traces (retrieve steps: "
                        f"{', '.join(seen) or 'none'})")
    judge = Judge()
    verdicts: dict[str, list[Judged]] = {RECORDED: [o.recorded for o in outputs]}
    for name in variants:
        if not isinstance(name, str) or not name:
            raise LadrError(f"variant names are non-empty strings, not {name!r}")
        if name == RECORDED:
            raise LadrError(f'"{RECORDED}" names what the run decided; give your variant another name')
        verdicts[name] = []
    for o in outputs:               # extract each distinct output once, before any is judged
        extraction(o.output)
    for name, value in variants.items():
        judging = _Judging(_edits(name, value, step, steps), judge)
        verdicts[name] = [judging(o) for o in outputs]
    got: dict[Key, str] = {}
    for row, value in carried.items():
        got.update(input_labels(row, value, step, steps))
    sheet = to_labels(labels)
    got.update(sheet)
    return SchemaTuning(outputs, verdicts, got, system_prompts(traces), dict(getattr(sheet, "outputs", {})))


__all__ = ["COLUMNS", "NO_LABELS_HINT", "NO_MATCH", "RECORDED", "SCORE_COLUMNS", "Judged", "RoundOutput", "SchemaTuning", "collect_outputs",
           "iter_sources", "system_prompts", "tune_request_match"]
