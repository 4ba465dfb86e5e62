"""The static view of an `Experiment`: the summary per variant and the grid of rows × variants, pass or fail."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..analysis.html import ROWS
from ..display import Html, badge, concat, fmt_cost, kv_table, note, root, table

if TYPE_CHECKING:
    from .results import Experiment

__all__ = ["experiment_html", "grid_html", "summary_html"]


def _pct(x: Any) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0%}"


def _mark(passed: Any, status: str) -> Html:
    if status not in ("completed",) and passed is not True:
        return badge(status)
    return badge("pass" if passed is True else "fail" if passed is False else "—")


def summary_html(exp: Experiment) -> Html:
    """One line per variant: pass rate, completed cells, calls, tokens, cost, latency, re-judged cells."""
    rows = [[s["variant"], _pct(s["pass_rate"]), f"{s['completed']}/{s['cells']}", f"{s['calls_mean']:.1f}",
             f"{s['tokens_in'] + s['tokens_out']:,}", fmt_cost(s["cost"]),
             "—" if math.isnan(s["p50_s"]) else f"{s['p50_s']:.2f} s",
             "—" if math.isnan(s["p95_s"]) else f"{s['p95_s']:.2f} s", str(s["rejudged"])]
            for s in exp.summary_rows()]
    return table(["variant", "pass", "completed", "calls/cell", "tokens", "cost", "p50", "p95", "re-judged"], rows,
                 cls="ladr-exp-summary")


def grid_html(exp: Experiment, rows: list[str] | None = None, max_rows: int = ROWS) -> Html:
    """The grid: a line per input row, a column per variant, each cell pass / fail / its status."""
    by = {(r.get("variant"), str(r["row"])): r for r in exp.rows}
    ids = rows if rows is not None else list(dict.fromkeys(str(r["row"]) for r in exp.rows))
    shown = ids[:max_rows]
    cells = [[rid, *[_mark(by[(v, rid)].get("passed"), str(by[(v, rid)].get("status"))) if (v, rid) in by else "·"
                     for v in exp.variants]] for rid in shown]
    rest = len(ids) - len(shown)
    return concat(table(["row", *exp.variants], cells, cls="ladr-exp-grid"),
                  note(f"… {rest:,} more rows") if rest > 0 else None)


def experiment_html(exp: Experiment, max_rows: int = ROWS) -> str:
    """An experiment: its folder, the summary per variant and the grid."""
    pairs = [("variants", ", ".join(exp.variants)), ("cells", f"{len(exp.rows):,}"
              + ("  (interrupted)" if exp.interrupted else "")), ("folder", str(exp.out))]
    return root(kv_table(pairs), summary_html(exp), grid_html(exp, max_rows=max_rows), cls="ladr-experiment",
                title="Experiment")
