"""The static views of a batch run: an `Experiment` — the summary per variant, the grid of input rows × variants
(each cell pass, fail or its status, the failing assertions' reasons in its tooltip, a `≠` on rows where two
variants differ) and why each failing cell failed — and an `Evaluation`, whose one variant is a table: counts by
status, where its files are, and a row per input.

The grid and the table are bounded (`ROWS` rows; the rest counted): the widget (`ExperimentView`) pages through all.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..analysis.html import ROWS
from ..display import Html, badge, concat, details, fmt_cost, join, kv_table, note, pre, root, table, tag
from .cells import CellResult

if TYPE_CHECKING:
    from .results import Evaluation, Experiment

__all__ = ["FAILURES", "cell_kind", "cell_label", "cell_mark", "cell_title", "evaluation_html",
           "evaluation_rows_html", "experiment_html", "failures_html", "grid_html", "reasons_html", "summary_html"]

Cell = CellResult | Mapping[str, Any]     # a cell, or its results line

FAILURES = 50          # failing cells the static view explains (the rest counted)
_COLORS = {"pass": "#1a7f37", "fail": "#cf222e", "error": "#cf222e", "other": "#bc4c00", "none": "#6e7781"}
_MARKS = {"pass": "✓ pass", "fail": "✗ fail"}


def _pct(x: Any) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0%}"


def _secs(x: Any) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f} s"


def cell_kind(cell: Cell) -> str:
    """What a cell's mark says: `pass`, `fail`, `error`, `other` (unsettled, aborted, ...) or `none` (no verdict)."""
    cell = CellResult.of(cell)
    status, passed = str(cell.status), cell.passed
    if status == "error":
        return "error"
    if passed is False:
        return "fail"
    if status != "completed":
        return "other"
    return "pass" if passed is True else "none"


def cell_label(cell: Cell) -> str:
    """A cell's mark as text: `✓ pass`, `✗ fail`, its status, or `—`; `↻` when it was re-judged, not run."""
    cell = CellResult.of(cell)
    kind = cell_kind(cell)
    text = _MARKS.get(kind) or ("—" if kind == "none" else str(cell.status))
    return text + (" ↻" if cell.rejudged else "")


def cell_title(cell: Cell) -> str:
    """A cell's tooltip: each failing (or unchecked) assertion and why, the error, and where the cell came from."""
    cell = CellResult.of(cell)
    reasons = cell.reasons()
    names = cell.asserts
    lines = []
    failed = [n for n in names if cell.check(n) is False]
    unchecked = [n for n in names if cell.check(n) is None]
    for n in failed:
        lines.append(f"✗ {n}: {reasons.get(n) or 'failed'}")
    for n in unchecked:
        lines.append(f"? {n}: {reasons.get(n) or 'not checked'}")
    if names and not failed and not unchecked:
        lines.append(f"✓ all {len(names)} assertion(s) passed")
    if not names:
        lines.append("no assertions")
    if cell.error:
        lines.append(f"error: {str(cell.error)[:300]}")
    if cell.rejudged and cell.source is not None:
        lines.append(f"source: {cell.source.text}")
    return "\n".join(lines)


def cell_mark(cell: Cell | None) -> Html:
    """A grid cell: a coloured badge (pass, fail, or the cell's status) whose title says why."""
    if cell is None:
        return note("·")
    kind = cell_kind(cell)
    return badge(cell_label(cell), _COLORS[kind], title=cell_title(cell), cls=f"ladr-exp-mark ladr-exp-{kind}")


def summary_html(exp: Experiment) -> Html:
    """One line per variant: pass rate (and its change from the first variant), completed cells, calls per cell,
    tokens, cost, latency p50/p95, and how many cells were re-judged rather than run."""
    rows = []
    for i, s in enumerate(exp.summary_rows()):
        delta = s.get("Δ pass_rate")
        change = "" if i == 0 or delta is None or (isinstance(delta, float) and math.isnan(delta)) \
            else f" ({delta:+.0%})"
        rows.append([tag("b", s["variant"]), concat(_pct(s["pass_rate"]), note(change) if change else None),
                     f"{s['passed']}/{s['cells']}", f"{s['completed']}/{s['cells']}", f"{s['calls_mean']:.1f}",
                     f"{s['tokens_in'] + s['tokens_out']:,}", fmt_cost(s["cost"]), _secs(s["p50_s"]),
                     _secs(s["p95_s"]), str(s["rejudged"])])
    return table(["variant", "pass rate", "passed", "completed", "calls/cell", "tokens", "cost", "p50", "p95",
                  "re-judged"], rows, cls="ladr-exp-summary")


def _disagree(diff: Mapping[str, Any] | None, a: str, b: str) -> Html:
    if diff is None:
        return Html("")
    why = f"{a} and {b} differ in {diff['differs']}"
    if diff.get("assertions"):
        why += f" (assertions: {diff['assertions']})"
    return badge("≠", "#8250df", title=why, cls="ladr-exp-disagree")


def grid_html(exp: Experiment, rows: list[str] | None = None, max_rows: int = ROWS, *,
              pair: tuple[str, str] | None = None, start: int = 0) -> Html:
    """The grid: a line per input row, a column per variant, each cell pass / fail / its status (its failing
    assertions' reasons in its title), and `≠` on rows where the `pair` of variants (default: the first two)
    differs in pass/fail, status or output."""
    by = {(c.variant, c.row): c for c in exp.cells if c.repeat == 1}     # a repeated cell: its first run
    ids = rows if rows is not None else exp.row_ids()
    shown = ids[start:start + max_rows]
    a, b = pair or ((exp.variants + exp.variants)[:2] if exp.variants else ("", ""))
    diffs = {d["row"]: d for d in exp.difference_rows(a, b)} if a and b and a != b else {}
    cells = [[rid, _disagree(diffs.get(rid), a, b), *[cell_mark(by.get((v, rid))) for v in exp.variants]]
             for rid in shown]
    head = [tag("span", v, title="compared" if v in (a, b) and a != b else None) for v in exp.variants]
    rest = len(ids) - start - len(shown)
    return concat(table(["row", tag("span", "≠", title=f"{a} and {b} differ"), *head], cells, cls="ladr-exp-grid"),
                  note(f"… {rest:,} more rows") if rest > 0 else None)


def reasons_html(cell: Cell) -> Html:
    """A cell's assertions, one line each: passed or not and, for each that did not pass, why."""
    cell = CellResult.of(cell)
    names = cell.asserts
    if not names:
        return note("no assertions were checked on this cell")
    reasons = cell.reasons()
    rows = [[badge("✓ pass", _COLORS["pass"]) if cell.check(n) is True else badge("✗ fail", _COLORS["fail"])
             if cell.check(n) is False else badge("? unchecked", _COLORS["other"]), tag("code", n),
             "" if cell.check(n) is True else str(reasons.get(n) or "")] for n in names]
    return table(["", "assertion", "why"], rows, cls="ladr-exp-reasons")


def failures_html(exp: Experiment, max_cells: int = FAILURES) -> Html:
    """Every cell that did not pass (the first `max_cells`): its row, variant, mark and each failing
    assertion's reason, in a collapsible part."""
    bad = [c for c in exp.cells if cell_kind(c) in ("fail", "error", "other")]
    if not bad:
        return Html("")
    rows = []
    for c in bad[:max_cells]:
        why = cell_title(c).splitlines()
        rows.append([c.row, str(c.variant), cell_mark(c),
                     pre("\n".join(x for x in why if not x.startswith("✓")), 1200, max_height="8em")])
    more = len(bad) - len(rows)
    return details(concat(tag("b", f"why {len(bad):,} cell(s) did not pass")),
                   table(["row", "variant", "", "why"], rows, cls="ladr-exp-failures"),
                   note(f"… {more:,} more") if more > 0 else None, cls="ladr-exp-why")


def experiment_html(exp: Experiment, max_rows: int = ROWS, *, pair: tuple[str, str] | None = None) -> str:
    """An experiment: its variants and folder, the summary per variant, the grid and why cells failed."""
    a, b = pair or ((exp.variants + exp.variants)[:2] if exp.variants else ("", ""))
    disagree = len(exp.difference_rows(a, b)) if a and b and a != b else 0
    pairs = [("variants", ", ".join(exp.variants)),
             ("cells", f"{len(exp.rows):,} ({len(exp.row_ids()):,} rows × {len(exp.variants)} variants)"
              + ("  (interrupted)" if exp.interrupted else "")),
             ("disagree", f"{disagree:,} row(s) where {a} and {b} differ" if a != b else None),
             ("folder", str(exp.out))]
    return root(kv_table(pairs), summary_html(exp), grid_html(exp, max_rows=max_rows, pair=(a, b)),
                note("hover a cell for why it failed; ↻: re-judged from another variant's recorded runs, not run"),
                failures_html(exp), cls="ladr-experiment", title="Experiment")


# ---- an evaluation: one variant, a table ------------------------------------------------------------------

def _cell(v: Any, n: int = 160) -> str:
    text = "" if v is None else str(v)
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def evaluation_rows_html(rows: Sequence[Cell], start: int = 0, count: int = ROWS) -> Html:
    """Evaluation rows (cells, or their results lines) as a table: row id, inputs, status, calls, tokens, cost,
    output and error."""
    shown = [CellResult.of(r) for r in rows[start:start + count]]
    inputs = sorted({k for c in shown for k in c.inputs})
    cells = [[c.row, *[_cell(c.inputs.get(k), 80) for k in inputs], badge(str(c.status)), str(c.llm_calls),
              f"{(c.tokens_in or 0) + (c.tokens_out or 0):,}", fmt_cost(c.cost), _cell(c.output), _cell(c.error)]
             for c in shown]
    out = table(["row", *[f"input.{k}" for k in inputs], "status", "calls", "tokens", "cost", "output", "error"], cells,
                cls="ladr-eval-rows")
    rest = len(rows) - start - len(shown)
    return concat(out, note(f"… {rest:,} more rows") if rest > 0 else None)


def evaluation_html(ev: Evaluation, max_rows: int = ROWS) -> str:
    """An evaluation: rows by status, where its files are, and (the first `max_rows` rows of) the results."""
    counts = ev.counts()
    head = join((concat(badge(s), f" {n}") for s, n in sorted(counts.items())), "  ")
    pairs = [("rows", concat(f"{len(ev.rows):,}  ", head, note("  (interrupted)") if ev.interrupted else None)),
             ("folder", str(ev.out)),
             ("cost", fmt_cost(sum(float(c.cost or 0) for c in ev.cells)))]
    return root(kv_table(pairs), evaluation_rows_html(ev.cells, 0, max_rows), cls="ladr-evaluation",
                title="Evaluation")
