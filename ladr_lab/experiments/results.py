"""An experiment's results, read from and saved to its output folder: one row per cell (variant × input row),
a column per assertion, a summary per variant and the differences between variants."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..display import Displayable
from ..trace import Trace

__all__ = ["COLUMNS", "HIDDEN", "RESULTS", "SUMMARY", "TABLE", "Experiment", "load_experiment"]

RESULTS = "results.jsonl"
TABLE = "results.csv"
SUMMARY = "summary.csv"
COLUMNS = ("variant", "row", "status", "passed", "output", "llm_calls", "tokens_in", "tokens_out", "cost",
           "latency", "seconds", "source", "gates", "writes", "error", "error_type", "error_step", "trace")
HIDDEN = ("fingerprint", "pos", "asserts_fp", "asserts", "reasons", "live_calls")


def _quantile(values: list[float], q: float) -> float:
    """The q-quantile with linear interpolation (pandas' and numpy's default)."""
    if not values:
        return math.nan
    xs = sorted(values)
    k = (len(xs) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


@dataclass
class Experiment(Displayable):
    """An experiment's cells (one dict each, in input order, variants in their order) and its output folder."""

    out: Path
    rows: list[dict] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)
    _traces: dict[str, Trace] = field(default_factory=dict, repr=False, compare=False)

    # ---- tables ------------------------------------------------------------------------------------------
    def assertion_names(self) -> list[str]:
        """Every assertion column, in the order first met."""
        names: list[str] = []
        for r in self.rows:
            for n in r.get("asserts") or ():
                if n not in names:
                    names.append(n)
        return names

    @property
    def results(self):
        """The results as a pandas DataFrame: one row per cell, a column per assertion."""
        return self.to_dataframe()

    def to_dataframe(self):
        """The results as a pandas DataFrame (input fields as `input.NAME`), a row per cell."""
        import pandas as pd
        names = self.assertion_names()
        inputs = sorted({k for r in self.rows for k in r if k.startswith("input.")})
        cols = [*COLUMNS[:4], *names, *inputs, *COLUMNS[4:]]
        rows = [{k: v for k, v in r.items() if k not in HIDDEN} for r in self.rows]
        return pd.DataFrame(rows, columns=cols)

    def summary(self):
        """One row per variant: cells, completed, passed, unchecked (cells with assertions none failed but one could not
        check), pass rate (passed / cells with assertions), each assertion's pass
        rate, mean calls, tokens, cost, latency p50/p95 (the model's seconds per cell, as recorded: a re-judged
        cell has its base cell's), cells re-judged rather than run,
        and the pass rate's difference from the first variant (`Δ pass_rate`)."""
        import pandas as pd
        return pd.DataFrame(self.summary_rows())

    def summary_rows(self) -> list[dict]:
        """`summary` as plain dicts."""
        names = self.assertion_names()
        out = []
        for v in self.variants or sorted({str(r.get("variant")) for r in self.rows}):
            cells = [r for r in self.rows if r.get("variant") == v]
            judged = [r for r in cells if r.get("asserts")]       # cells with assertions, checked or not
            secs = [float(r.get("latency") or 0) for r in cells if r.get("status") != "error"]
            row: dict[str, Any] = {
                "variant": v, "cells": len(cells),
                "completed": sum(r.get("status") == "completed" for r in cells),
                "errors": sum(r.get("status") == "error" for r in cells),
                "unsettled": sum(r.get("status") == "unsettled" for r in cells),
                "passed": sum(r.get("passed") is True for r in cells),
                "unchecked": sum(r.get("passed") is None for r in judged),
                "pass_rate": (sum(r.get("passed") is True for r in judged) / len(judged)) if judged else math.nan}
            for n in names:
                checked = [r for r in cells if r.get(n) is not None and n in (r.get("asserts") or ())]
                row[n] = (sum(r[n] is True for r in checked) / len(checked)) if checked else math.nan
            row.update({
                "calls_mean": (sum(int(r.get("llm_calls") or 0) for r in cells) / len(cells)) if cells else math.nan,
                "tokens_in": sum(int(r.get("tokens_in") or 0) for r in cells),
                "tokens_out": sum(int(r.get("tokens_out") or 0) for r in cells),
                "cost": round(sum(float(r.get("cost") or 0) for r in cells), 6),
                "p50_s": _quantile(secs, 0.5), "p95_s": _quantile(secs, 0.95),
                "rejudged": sum(not str(r.get("source") or "run").startswith("run") for r in cells)})
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
        return pd.DataFrame(self.difference_rows(a, b),
                            columns=["row", "differs", f"passed.{a or self._pair()[0]}",
                                     f"passed.{b or self._pair()[1]}", "assertions", f"status.{a or self._pair()[0]}",
                                     f"status.{b or self._pair()[1]}", f"output.{a or self._pair()[0]}",
                                     f"output.{b or self._pair()[1]}"])

    def _pair(self) -> tuple[str, str]:
        vs = self.variants or sorted({str(r.get("variant")) for r in self.rows})
        if len(vs) < 2:
            return (vs[0] if vs else "", vs[0] if vs else "")
        return vs[0], vs[1]

    def difference_rows(self, a: str | None = None, b: str | None = None) -> list[dict]:
        """`differences` as plain dicts."""
        a, b = a or self._pair()[0], b or self._pair()[1]
        for name in (a, b):
            if name not in (self.variants or [str(r.get("variant")) for r in self.rows]):
                raise KeyError(f"no variant {name!r} (variants: {', '.join(self.variants)})")
        by = {(r.get("variant"), str(r["row"])): r for r in self.rows}
        out = []
        for rid in dict.fromkeys(str(r["row"]) for r in self.rows):
            ra, rb = by.get((a, rid)), by.get((b, rid))
            if ra is None or rb is None:
                continue
            what = [k for k, label in (("passed", "pass/fail"), ("status", "status"), ("output", "output"))
                    if ra.get(k) != rb.get(k)]
            if not what:
                continue
            names = [n for n in dict.fromkeys([*(ra.get("asserts") or ()), *(rb.get("asserts") or ())])
                     if ra.get(n) != rb.get(n)]
            out.append({"row": rid, "differs": ", ".join(what), f"passed.{a}": ra.get("passed"),
                        f"passed.{b}": rb.get("passed"), "assertions": ", ".join(names),
                        f"status.{a}": ra.get("status"), f"status.{b}": rb.get("status"),
                        f"output.{a}": ra.get("output"), f"output.{b}": rb.get("output")})
        return out

    def save_tables(self) -> None:
        """Write results.csv and summary.csv into the output folder."""
        self.to_dataframe().to_csv(self.out / TABLE, index=False)
        self.summary().to_csv(self.out / SUMMARY, index=False)

    # ---- cells and traces ---------------------------------------------------------------------------------
    def cell(self, variant: str, row: str) -> dict:
        """One cell's result row."""
        for r in self.rows:
            if r.get("variant") == variant and str(r["row"]) == str(row):
                return r
        raise KeyError(f"no cell {variant}/{row} in {self.out}")

    def trace(self, variant: str, row: str) -> Trace:
        """One cell's trace (read once, then kept)."""
        key = f"{variant}/{row}"
        got = self._traces.get(key)
        if got is None:
            got = self._traces[key] = Trace.of(self.out / self.cell(variant, row)["trace"])
        return got

    def traces(self, variant: str | None = None) -> list[tuple[str, Trace]]:
        """(cell id, trace) of every cell whose trace exists: ids `variant/row`, or with `variant` that variant's
        cells only and ids the row ids — the shape schema tuning (`analysis.tune_request_match`) reads."""
        return [(str(r["row"]) if variant is not None else f"{r.get('variant')}/{r['row']}",
                 self.trace(str(r.get("variant")), str(r["row"])))
                for r in self.rows if (variant is None or r.get("variant") == variant)
                and r.get("trace") and (self.out / r["trace"]).is_file()]

    def tune(self, variants, *, variant: str | None = None, labels=None, step: str | None = None):
        """Which `requestMatch` tells requests from answers best over this experiment's recorded outputs, with no
        model call: `analysis.tune_request_match` over one variant's cells (default: the first variant), the rows'
        `labels` input column and `labels=` as its labels."""
        from ..analysis import tune_request_match
        name = variant or (self.variants[0] if self.variants else None)
        if name is None:
            raise KeyError(f"no cells in {self.out}")
        return tune_request_match(self.traces(name), variants, labels=labels, step=step)

    def row_ids(self) -> list[str]:
        """The input rows' ids, in input order (each once, whatever the number of variants)."""
        return list(dict.fromkeys(str(r["row"]) for r in self.rows))

    def counts(self) -> dict[str, int]:
        """How many cells ended with each status."""
        out: dict[str, int] = {}
        for r in self.rows:
            out[r["status"]] = out.get(r["status"], 0) + 1
        return out

    # ---- display ------------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(self.counts().items()))
        return (f"<Experiment: {len(self.variants)} variant(s), {len(self.rows)} cell(s) ({counts or 'none'}) "
                f"in {self.out}>")

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
        lines += [f"note: {n}" for n in self.notes]
        return ("\n".join(lines) + (" (interrupted)" if self.interrupted else "")
                + f"\nresults: {self.out / TABLE}\nsummary: {self.out / SUMMARY}")

    def to_text(self) -> str:
        """The summary as `ladr-lab eval` prints it."""
        return self.format()

    def to_html(self) -> str:
        """The summary and the grid of variants × rows as a static HTML view."""
        from .html import experiment_html
        return experiment_html(self)


def load_experiment(out: str | Path) -> Experiment:
    """An experiment read back from its output folder (the last result of each cell)."""
    from ..evaluation.batch import read_results
    out = Path(out)
    latest = {(rec.get("variant"), str(rec["row"])): rec for rec in read_results(out / RESULTS)}
    variants: list[str] = []
    row_ids: list[str] | None = None
    notes: list[str] = []
    manifest = out / "experiment.json"
    if manifest.is_file():
        try:
            doc = json.loads(manifest.read_text(encoding="utf-8"))
            variants = [v["name"] for v in doc["variants"]]
            row_ids = [str(r) for r in doc["rows"]] if isinstance(doc.get("rows"), list) else None
            notes = [str(n) for n in doc.get("notes") or ()]
        except (ValueError, KeyError, TypeError):
            variants = []
    # cells of variants or rows the experiment no longer has (an earlier run into the same folder) are not its own
    cells = [r for r in latest.values() if (not variants or str(r.get("variant")) in variants)
             and (row_ids is None or str(r["row"]) in row_ids)]
    order = {v: i for i, v in enumerate(variants)}
    rows = sorted(cells, key=lambda r: (r.get("pos", 0), order.get(str(r.get("variant")), len(order))))
    return Experiment(out, rows, variants or list(dict.fromkeys(str(r.get("variant")) for r in rows)), notes=notes)
