"""A batch run's results, read from its output folder (`folder.py`): an `Experiment` — a cell (`CellResult`) per
variant × input row, a column per assertion, a summary per variant and the differences between variants — and an
`Evaluation`, the experiment of one ladder with no assertions (`evaluate`), whose table is a row per input.

`rows` is the cells as their results lines (dicts, as the results file holds them); `cells` the typed records.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..display import Displayable
from ..errors import LadrError
from ..trace import Trace
from .cells import CellResult
from .folder import RESULTS, SUMMARY, TABLE, latest_cells, read_manifest
from .inputs import most_common_error

__all__ = ["COLUMNS", "EVALUATION_COLUMNS", "HIDDEN", "Evaluation", "Experiment", "is_evaluation_folder",
           "is_results_folder",
           "load_evaluation", "load_experiment", "load_results"]

# the experiment's table, in its column order (a column per assertion after `passed`, the inputs after those)
COLUMNS = ("variant", "row", "status", "passed", "output", "llm_calls", "tokens_in", "tokens_out", "cost",
           "latency", "seconds", "source", "gates", "writes", "error", "error_type", "error_step", "trace")
# the cell's fields the table leaves out: what resuming and the views read
HIDDEN = tuple(c for c in CellResult.columns() if c not in COLUMNS)
# an evaluation's table: a row per input (the inputs after `row`)
EVALUATION_COLUMNS = ("row", "status", "output", "llm_calls", "tokens_in", "tokens_out", "cost", "gates", "writes",
                      "error", "error_type", "error_step", "latency", "seconds", "trace")


def _quantile(values: list[float], q: float) -> float:
    """The q-quantile with linear interpolation (pandas' and numpy's default)."""
    if not values:
        return math.nan
    xs = sorted(values)
    k = (len(xs) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class Experiment(Displayable):
    """An experiment's cells (in input order, variants in their order) and its output folder. `rows` (results
    lines, dicts) or `cells` (CellResult) may be given; both are kept. `retried`: how many error cells of the last
    run into the folder this run ran again (None, as read back from a folder: the cells whose line says so)."""

    def __init__(self, out: str | Path, rows: Iterable[CellResult | Mapping[str, Any]] = (),
                 variants: Iterable[str] = (), interrupted: bool = False, notes: Iterable[str] = (),
                 retried: int | None = None) -> None:
        self.out = Path(out)
        self.cells: list[CellResult] = [CellResult.of(r) for r in rows]
        self.variants: list[str] = list(variants)
        self.interrupted = interrupted
        self.notes: list[str] = list(notes)
        # what the run that returned this did (given), or, read back from a folder, the cells that ever ran again
        self.retried: int = sum(c.retried > 0 for c in self.cells) if retried is None else retried
        self._retried_by_this_run = retried is not None
        self._rows: list[dict] | None = None
        self._traces: dict[tuple[str | None, str, int], Trace] = {}
        self.phoenix: Any = None                  # what `upload_to_phoenix` made (a phoenix.PhoenixUpload)
        self.phoenix_error: str | None = None     # why it could not (the results are saved all the same)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        keys = ("out", "cells", "variants", "interrupted", "notes")     # `retried` says what a run did
        return all(getattr(self, k) == getattr(other, k) for k in keys)

    __hash__ = None      # type: ignore[assignment]   # mutable, as the dataclass it was

    @property
    def rows(self) -> list[dict]:
        """The cells as their results lines (one dict each, as the results file holds them)."""
        if self._rows is None:
            self._rows = [c.to_dict() for c in self.cells]
        return self._rows

    # ---- Phoenix -----------------------------------------------------------------------------------------
    def to_phoenix(self, url: str | None = None, *, dataset: str | None = None, name: str | None = None) -> Any:
        """Upload to Phoenix: a dataset of the rows and an experiment per variant of the recorded cells, with their
        assertion results as evaluations (`phoenix.upload`; needs arize-phoenix-client); return what was made."""
        from .phoenix import upload
        self.phoenix = upload(self, url=url, dataset=dataset, name=name)
        return self.phoenix

    def upload_to_phoenix(self, options: Mapping[str, Any]) -> None:
        """`to_phoenix` with `experiment(phoenix=...)`'s options; a failure is kept in `phoenix_error`, not raised
        (the experiment ran and its folder is whole)."""
        from ..errors import LadrError
        try:
            self.to_phoenix(options.get("url"), dataset=options.get("dataset"))
        except LadrError as exc:
            self.phoenix_error = str(exc)

    # ---- tables ------------------------------------------------------------------------------------------
    def assertion_names(self) -> list[str]:
        """Every assertion column, in the order first met."""
        return list(dict.fromkeys(n for c in self.cells for n in c.asserts))

    @property
    def results(self):
        """The results as a pandas DataFrame: one row per cell, a column per assertion."""
        return self.to_dataframe()

    def to_dataframe(self):
        """The results as a pandas DataFrame (input fields as `input.NAME`), a row per cell; with scores a `score`
        column and one per metric (`metric.NAME`), with repeats `repeat`, `agree_pass` and `agree_output` (how far the
        runs of the cell's variant and row agree: scoring.agreement)."""
        import pandas as pd
        names = self.assertion_names()
        inputs = sorted({f"input.{k}" for c in self.cells for k in c.inputs})
        scored = [*(["score"] if self.scored else []), *(f"metric.{m}" for m in self.metric_names())]
        repeats = ["repeat", "agree_pass", "agree_output"] if self.repeats > 1 else []
        cols = [*COLUMNS[:2], *repeats[:1], *COLUMNS[2:4], *scored, *names, *inputs, *COLUMNS[4:], *repeats[1:]]
        rows = [{k: v for k, v in r.items() if k not in HIDDEN} for r in self.rows]
        if scored or repeats:
            agree = self.agreement_by_cell() if repeats else {}
            for r, c in zip(rows, self.cells, strict=True):
                if self.scored:
                    r["score"] = c.score
                r.update({f"metric.{m}": v for m, v in c.metrics.items()})
                if repeats:
                    got = agree.get((c.variant, c.row), {})
                    r.update(repeat=c.repeat, agree_pass=got.get("agree_pass"), agree_output=got.get("agree_output"))
        return pd.DataFrame(rows, columns=cols)

    # ---- scores and repeats ----------------------------------------------------------------------------------
    @property
    def scored(self) -> bool:
        """Whether the cells were checked with weights, metrics or a threshold (they have a weighted score)."""
        return any(c.scored for c in self.cells)

    @property
    def repeats(self) -> int:
        """How many times each cell was run (`repeat=N`; 1 without repeats)."""
        return max((c.repeat for c in self.cells), default=1)

    def metric_names(self) -> list[str]:
        """The named metrics the assertions feed, in the order first met."""
        return list(dict.fromkeys(m for c in self.cells for m in c.metrics))

    def pass_rate(self) -> float | None:
        """The share of cells that passed, over every cell (repeats included): what `--pass-rate` compares
        (scoring.good: an error, failed or unchecked cell is not a pass; a cell without assertions passes when it
        completed); None without cells."""
        from .scoring import pass_rate
        return pass_rate(self.cells)

    def agreement_by_cell(self) -> dict[tuple[str | None, str], dict]:
        """For each (variant, row) run more than once: repeats, agree_pass, agree_output (scoring.agreement)."""
        from .scoring import agreement
        return agreement(self.cells)

    def agreement(self):
        """How far the repeated runs of each cell agree: a DataFrame with a row per (variant, row) — repeats, how
        many passed, agree_pass (the share of runs that say what most say of pass/fail) and agree_output (the share
        with the most common output)."""
        import pandas as pd
        return pd.DataFrame(self.agreement_rows(),
                            columns=["variant", "row", "repeats", "passed", "agree_pass", "agree_output"])

    def agreement_rows(self) -> list[dict]:
        """`agreement` as plain dicts."""
        by = self.agreement_by_cell()
        out = []
        for (v, rid), got in by.items():
            runs = [c for c in self.cells if c.variant == v and c.row == rid]
            out.append({"variant": v, "row": rid, "repeats": got["repeats"],
                        "passed": sum(c.passed is True for c in runs), "agree_pass": got["agree_pass"],
                        "agree_output": got["agree_output"]})
        return out

    def _variant_names(self) -> list[str]:
        return self.variants or sorted({str(c.variant) for c in self.cells})

    def summary(self):
        """One row per variant: cells, completed, passed, unchecked (cells with assertions none failed but one could not
        check), pass rate (passed / cells with assertions), each assertion's pass
        rate, mean calls, tokens, cost, latency p50/p95 (the model's seconds per cell, as recorded: a re-judged
        cell has its base cell's), cells re-judged rather than run,
        and the pass rate's difference from the first variant (`Δ pass_rate`); with scores the mean weighted score
        (`score_mean`) and each metric's mean (`metric.NAME`), with repeats the mean agreement of a cell's runs
        (`agree_pass`, `agree_output`) and the cells whose runs disagree on pass/fail (`flaky`)."""
        import pandas as pd
        return pd.DataFrame(self.summary_rows())

    def summary_rows(self) -> list[dict]:
        """`summary` as plain dicts."""
        names = self.assertion_names()
        agree = self.agreement_by_cell() if self.repeats > 1 else {}
        out = []
        for v in self._variant_names():
            cells = [c for c in self.cells if c.variant == v]
            judged = [c for c in cells if c.asserts]       # cells with assertions, checked or not
            secs = [float(c.latency or 0) for c in cells if c.status != "error"]
            row: dict[str, Any] = {
                "variant": v, "cells": len(cells),
                "completed": sum(c.status == "completed" for c in cells),
                "errors": sum(c.status == "error" for c in cells),
                "unsettled": sum(c.status == "unsettled" for c in cells),
                "passed": sum(c.passed is True for c in cells),
                "unchecked": sum(c.passed is None for c in judged),
                "pass_rate": (sum(c.passed is True for c in judged) / len(judged)) if judged else math.nan}
            for n in names:
                checked = [c for c in cells if c.check(n) is not None]
                row[n] = (sum(c.check(n) is True for c in checked) / len(checked)) if checked else math.nan
            row.update({
                "calls_mean": (sum(int(c.llm_calls or 0) for c in cells) / len(cells)) if cells else math.nan,
                "tokens_in": sum(int(c.tokens_in or 0) for c in cells),
                "tokens_out": sum(int(c.tokens_out or 0) for c in cells),
                "cost": round(sum(float(c.cost or 0) for c in cells), 6),
                "p50_s": _quantile(secs, 0.5), "p95_s": _quantile(secs, 0.95),
                "rejudged": sum(c.rejudged for c in cells)})
            if self.scored:
                got = [c.score for c in cells if c.score is not None]
                row["score_mean"] = round(sum(got) / len(got), 6) if got else math.nan
            for m in self.metric_names():
                got = [c.metrics[m] for c in cells if m in c.metrics]
                row[f"metric.{m}"] = round(sum(got) / len(got), 6) if got else math.nan
            if self.repeats > 1:
                groups = [g for (gv, _), g in agree.items() if gv == v]
                row["agree_pass"] = round(sum(g["agree_pass"] for g in groups) / len(groups), 6) if groups else math.nan
                row["agree_output"] = round(sum(g["agree_output"] for g in groups) / len(groups), 6) if groups \
                    else math.nan
                row["flaky"] = sum(g["agree_pass"] < 1 for g in groups)
            out.append(row)
        if out:
            first = out[0]["pass_rate"]
            for row in out:
                row["Δ pass_rate"] = row["pass_rate"] - first
        return out

    def differences(self, a: str | None = None, b: str | None = None):
        """The rows where variants `a` and `b` (default: the first two) differ in pass/fail, status or output: a
        DataFrame with both sides and the assertions whose result differs."""
        import pandas as pd
        a, b = a or self._pair()[0], b or self._pair()[1]
        return pd.DataFrame(self.difference_rows(a, b),
                            columns=["row", "differs", f"passed.{a}", f"passed.{b}", "assertions", f"status.{a}",
                                     f"status.{b}", f"output.{a}", f"output.{b}"])

    def _pair(self) -> tuple[str, str]:
        vs = self._variant_names()
        if len(vs) < 2:
            return (vs[0] if vs else "", vs[0] if vs else "")
        return vs[0], vs[1]

    def difference_rows(self, a: str | None = None, b: str | None = None) -> list[dict]:
        """`differences` as plain dicts."""
        a, b = a or self._pair()[0], b or self._pair()[1]
        for name in (a, b):
            if name not in (self.variants or [str(c.variant) for c in self.cells]):
                raise KeyError(f"no variant {name!r} (variants: {', '.join(self.variants)})")
        by = {(c.variant, c.row): c for c in self.cells if c.repeat == 1}    # a repeated cell: its first run
        out = []
        for rid in self.row_ids():
            ca, cb = by.get((a, rid)), by.get((b, rid))
            if ca is None or cb is None:
                continue
            what = [key for key, x, y in (("passed", ca.passed, cb.passed), ("status", ca.status, cb.status),
                                          ("output", ca.output, cb.output)) if x != y]
            if not what:
                continue
            names = [n for n in dict.fromkeys([*ca.asserts, *cb.asserts]) if ca.check(n) != cb.check(n)]
            out.append({"row": rid, "differs": ", ".join(what), f"passed.{a}": ca.passed,
                        f"passed.{b}": cb.passed, "assertions": ", ".join(names),
                        f"status.{a}": ca.status, f"status.{b}": cb.status,
                        f"output.{a}": ca.output, f"output.{b}": cb.output})
        return out

    def save_tables(self) -> None:
        """Write results.csv and summary.csv into the output folder."""
        self.to_dataframe().to_csv(self.out / TABLE, index=False)
        self.summary().to_csv(self.out / SUMMARY, index=False)

    # ---- reports: for CI and for people --------------------------------------------------------------------
    def cell_reports(self) -> list[dict]:
        """Every cell as `--json` lists it (`CellResult.to_report`: status, passed, each check, output, the trace's
        path, ...), in the run's order."""
        return [c.to_report(self.out) for c in self.cells]

    def to_junit(self) -> str:
        """The run as a JUnit XML report: a test suite per variant, a test case per cell (`junit.py`)."""
        from .junit import to_junit
        return to_junit(self)

    def save_junit(self, path: str | Path) -> Path:
        """Write the JUnit XML report to `path`; returns the path."""
        from .junit import write_junit
        return write_junit(self, path)

    def to_page(self) -> str:
        """The static view as a standalone HTML page: the whole grid, each mark a link to its cell (assertions,
        output, trace); nothing is loaded from elsewhere."""
        from .html import experiment_page
        return experiment_page(self)

    def save_html(self, path: str | Path) -> Path:
        """Write `to_page()` to `path` (its folder made when missing); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_page(), encoding="utf-8")
        return path

    def compare(self, other: Experiment | str | Path, *, variants: Mapping[str, str] | None = None):
        """What changed from this run to `other` (an Experiment or its folder), cell by cell: a `Comparison`
        (`compare.py`) — pass→fail, fail→pass, status, assertions, output, new and missing cells, counts per
        variant, each changed cell's two traces for a diff. `variants` pairs variants named differently
        ({name here: name there}); one variant on each side is paired whatever the names."""
        from .compare import Comparison
        if not isinstance(other, Experiment):
            if not is_results_folder(other):
                raise LadrError(f"{other} holds no results ({RESULTS}): not the folder of an eval or an experiment")
            other = load_results(other)
        return Comparison(self, other, variants=variants)

    # ---- cells and traces ---------------------------------------------------------------------------------
    def _key(self, variant: str | None, row: str | None) -> tuple[str | None, str]:
        """(variant, row) of `cell(variant, row)` or `cell(row)` (an experiment of one variant, an evaluation)."""
        if row is not None:
            return variant, str(row)
        names = list(dict.fromkeys(c.variant for c in self.cells)) or list(self.variants) or [None]
        if len(names) > 1:
            raise KeyError(f"{self.out} has {len(names)} variants: name one (cell(variant, row))")
        return names[0], str(variant)

    def find(self, variant: str | None, row: str | None = None, repeat: int = 1) -> CellResult:
        """One cell, typed: `find(variant, row)`, or `find(row)` when there is one variant; `repeat`: which run of a
        repeated cell (1..N)."""
        variant, row = self._key(variant, row)
        for c in self.cells:
            if c.variant == variant and c.row == row and c.repeat == repeat:
                return c
        run = f" (run {repeat})" if repeat != 1 else ""
        raise KeyError(f"no row {row!r}{run} in {self.out}" if variant is None
                       else f"no cell {variant}/{row}{run} in {self.out}")

    def cell(self, variant: str | None, row: str | None = None, repeat: int = 1) -> dict:
        """One cell's results line: `cell(variant, row)`, or `cell(row)` when there is one variant."""
        return self.find(variant, row, repeat).to_dict()

    def trace(self, variant: str | None, row: str | None = None, repeat: int = 1) -> Trace:
        """One cell's trace (read once, then kept: re-judging reads every cell's trace at each edit):
        `trace(variant, row)`, or `trace(row)` when there is one variant (an evaluation)."""
        variant, row = self._key(variant, row)
        key = (variant, row, repeat)
        got = self._traces.get(key)
        if got is None:
            got = self._traces[key] = Trace.of(self.out / self.find(variant, row, repeat).trace)
        return got

    def traces(self, variant: str | None = None) -> list[tuple[str, Trace]]:
        """(cell id, trace) of every cell whose trace exists: ids `variant/row` (the row alone in an evaluation),
        or with `variant` that variant's cells only and ids the row ids — the shape schema tuning
        (`analysis.tune_request_match`) reads."""
        return [((c.row if variant is not None or c.variant is None else f"{c.variant}/{c.row}")
                 + (f"@{c.repeat}" if c.repeat != 1 else ""), self.trace(c.variant, c.row, c.repeat))
                for c in self.cells if (variant is None or c.variant == variant)
                and c.trace and (self.out / c.trace).is_file()]

    def tune(self, variants, *, variant: str | None = None, labels=None, step: str | None = None):
        """Which `requestMatch` tells requests from answers best over this experiment's recorded outputs, with no
        model call: `analysis.tune_request_match` over one variant's cells (default: the first variant), the rows'
        `labels` input column and `labels=` as its labels."""
        from ..analysis import tune_request_match
        names: list[str | None] = [*self.variants] or list(dict.fromkeys(c.variant for c in self.cells))
        if not names:
            raise KeyError(f"no cells in {self.out}")
        name = variant or names[0]
        return tune_request_match(self.traces(name) if name is not None else self.traces(), variants,
                                  labels=labels, step=step)

    def row_ids(self) -> list[str]:
        """The input rows' ids, in input order (each once, whatever the number of variants)."""
        return list(dict.fromkeys(c.row for c in self.cells))

    def counts(self) -> dict[str, int]:
        """How many cells ended with each status."""
        out: dict[str, int] = {}
        for c in self.cells:
            out[c.status] = out.get(c.status, 0) + 1
        return out

    def _retried_text(self) -> str:
        cells = [c for c in self.cells if c.retried]
        still = sum(c.status == "error" for c in cells)
        if not self._retried_by_this_run:       # a folder read back: which cells ran again, in some run
            return f"{self.retried} cell(s) ran again after an error in an earlier run" + \
                (f" ({still} an error still)" if still else "")
        return f"{self.retried} error cell(s) of the last run retried" + (f" ({still} an error again)" if still else "")

    def _score_lines(self) -> list[str]:
        """The scores' lines of `format` (none when the experiment used no weights, metrics, threshold or repeats)."""
        lines = []
        for s in self.summary_rows() if self.scored or self.repeats > 1 else ():
            parts = []
            if self.scored and not math.isnan(s["score_mean"]):
                parts.append(f"score {s['score_mean']:.2f}")
            parts += [f"{k[len('metric.'):]} {v:.2f}" for k, v in s.items()
                      if k.startswith("metric.") and not math.isnan(v)]
            if self.repeats > 1 and not math.isnan(s["agree_pass"]):
                parts.append(f"{self.repeats} runs a cell agree on pass/fail {s['agree_pass']:.0%}, on the output "
                             f"{s['agree_output']:.0%} ({s['flaky']} flaky)")
            if parts:
                lines.append(f"{s['variant']:<20} " + ", ".join(parts))
        return lines

    def _counts_text(self) -> str:
        return ", ".join(f"{n} {s}" for s, n in sorted(self.counts().items()))

    # ---- display ------------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (f"<Experiment: {len(self.variants)} variant(s), {len(self.cells)} cell(s) "
                f"({self._counts_text() or 'none'}) in {self.out}>")

    def format(self) -> str:
        """The summary per variant in a few lines, and the output folder."""
        lines = []
        for s in self.summary_rows():
            rate = "—" if math.isnan(s["pass_rate"]) else f"{s['pass_rate']:.0%}"
            extra = f", {s['rejudged']} re-judged" if s["rejudged"] else ""
            extra += f", {s['unsettled']} unsettled" if s["unsettled"] else ""
            extra += f", {s['errors']} error(s)" if s["errors"] else ""
            lines.append(f"{s['variant']:<20} pass {rate:>5}  {s['completed']}/{s['cells']} completed{extra}; "
                         f"{s['calls_mean']:.1f} calls/cell, {s['tokens_in'] + s['tokens_out']:,} tokens, "
                         f"${s['cost']:.4f}, p50 {s['p50_s']:.2f} s")
        lines += self._score_lines()
        lines += [f"note: {n}" for n in self.notes]
        if self.retried:
            lines.append(self._retried_text())
        return ("\n".join(lines) + (" (interrupted)" if self.interrupted else "")
                + f"\nresults: {self.out / TABLE}\nsummary: {self.out / SUMMARY}")

    def to_text(self) -> str:
        """The summary as `ladr-lab eval` prints it."""
        return self.format()

    def to_html(self) -> str:
        """The summary and the grid of variants × rows as a static HTML view."""
        from .html import experiment_html
        return experiment_html(self)


class Evaluation(Experiment):
    """An evaluation's results (`evaluate`): the experiment of one ladder with no assertions, whose cells have no
    variant — one row per input (status, output, calls, tokens, cost, gate outcomes, writes, error, the trace's
    path), read from and saved to its output folder."""

    def __init__(self, out: str | Path, rows: Iterable[CellResult | Mapping[str, Any]] = (),
                 interrupted: bool = False, retried: int | None = None) -> None:
        super().__init__(out, rows, (), interrupted, retried=retried)

    def to_dataframe(self):
        """The results as a pandas DataFrame (input fields as `input.NAME` columns), in input order."""
        import pandas as pd
        rows = [{k: v for k, v in r.items() if k not in ("fingerprint", "pos", "retried", "otel_trace", "otel_error")}
                for r in self.rows]
        extra = sorted({k for r in rows for k in r if k not in EVALUATION_COLUMNS})
        return pd.DataFrame(rows, columns=[EVALUATION_COLUMNS[0], *extra, *EVALUATION_COLUMNS[1:]])

    def save_tables(self) -> None:
        """Write results.csv into the output folder."""
        self.to_dataframe().to_csv(self.out / TABLE, index=False)

    def rejudge(self, ladder, *, step: str | None = None, slates: dict | None = None):
        """Re-judge every row's trace against an edited ladder (or `{step_id: schema}`): a pandas DataFrame
        with one row per evaluation row (how many verdicts flipped, how many outcomes changed, the first
        flip and its effect); filter `flips > 0` for the rows that would flip."""
        import pandas as pd
        return pd.DataFrame(self.rejudge_rows(ladder, step=step, slates=slates),
                            columns=["row", "status", "verdicts", "flips", "changed", "first_flip", "effect", "steps"])

    def rejudge_rows(self, ladder, *, step: str | None = None, slates: dict | None = None) -> list[dict]:
        """`rejudge` as plain dicts."""
        from ..analysis.rejudge import Edits, rejudge_rows
        edits = ladder if isinstance(ladder, Edits) else Edits(ladder)
        out = []
        for c in self.cells:
            if not (self.out / c.trace).is_file():
                out.append({"row": c.row, "status": c.status, "verdicts": 0, "flips": 0, "changed": 0,
                            "first_flip": "(no trace)", "effect": "", "steps": ""})
                continue
            rows = rejudge_rows(self.trace(c.variant, c.row), edits, step=step, slates=slates)
            flips = [x for x in rows if x["flipped"]]
            first = flips[0] if flips else None
            out.append({"row": c.row, "status": c.status, "verdicts": len(rows), "flips": len(flips),
                        "changed": sum(x["changed"] for x in rows),
                        "first_flip": "" if first is None else
                        f"{first['step']}/{first['node']}" + (f" r{first['round']}" if first["round"] else "")
                        + f" {first['test']} {first['old']}→{first['new']}"
                        + (f" ({first['keyword']} at {first['schema_path'] or '/'})" if first["keyword"] else ""),
                        "effect": "" if first is None else first["effect"],
                        "steps": ", ".join(sorted({x["step"] for x in flips}))})
        return out

    def __repr__(self) -> str:
        return f"<Evaluation: {len(self.cells)} row(s) ({self._counts_text() or 'none'}) in {self.out}>"

    def to_html(self) -> str:
        """Counts by status and the results table as a static HTML view."""
        from .html import evaluation_html
        return evaluation_html(self)

    def to_page(self) -> str:
        """The static view as a standalone HTML page: every row, and each row's part (output, error, trace)."""
        from .html import evaluation_page
        return evaluation_page(self)

    def format(self) -> str:
        """A one-line summary per status, and the output folder."""
        failed = sum(c.status != "completed" for c in self.cells)
        common = most_common_error(self.cells)
        error = "" if common is None else \
            f"\n{failed} of {len(self.cells)} rows failed; most common error ({common[1]}×): {common[0]}"
        return (f"{len(self.cells)} row(s): {self._counts_text() or 'none'}"
                + (" (interrupted)" if self.interrupted else "")
                + error + (f"\n{self._retried_text()}" if self.retried else "")
                + f"\nresults: {self.out / TABLE}\ntraces:  {self.out / 'traces'}")


def load_experiment(out: str | Path) -> Experiment:
    """An experiment read back from its output folder (the last result of each cell)."""
    out = Path(out)
    latest = latest_cells(out)
    manifest = read_manifest(out)
    variants = manifest.variants if manifest else []
    row_ids = manifest.rows if manifest else None
    # cells of variants or rows the experiment no longer has (an earlier run into the same folder) are not its own
    cells = [c for c in latest if (not variants or str(c.variant) in variants)
             and (row_ids is None or c.row in row_ids)]
    order = {v: i for i, v in enumerate(variants)}
    cells.sort(key=lambda c: (c.pos or 0, order.get(str(c.variant), len(order)), c.repeat))
    return Experiment(out, cells, variants or list(dict.fromkeys(str(c.variant) for c in cells)),
                      notes=manifest.notes if manifest else ())


def load_evaluation(out: str | Path) -> Evaluation:
    """An evaluation read back from its output folder (the last result of each row)."""
    cells: list[CellResult] = sorted(latest_cells(out, by_variant=False), key=lambda c: c.pos or 0)
    return Evaluation(out, cells)


def is_results_folder(out: str | Path) -> bool:
    """Whether `out` is a batch run's folder (it holds results).

    A folder of plain trace files is not."""
    return (Path(out) / RESULTS).is_file()


def is_evaluation_folder(out: str | Path) -> bool:
    """Whether a batch run's folder is an evaluation's: no manifest (an experiment writes it before its first
    cell), and no cell with a variant."""
    return read_manifest(out) is None and all(c.variant is None for c in latest_cells(out))


def load_results(out: str | Path) -> Experiment:
    """A batch run's folder read back as what wrote it: an Evaluation (`is_evaluation_folder`), else an
    Experiment."""
    return load_evaluation(out) if is_evaluation_folder(out) else load_experiment(out)
