"""The static view of an `Evaluation`: counts by status, where its files are, and the results table.

The table is bounded (`ROWS` rows; the rest counted): the widget (`EvaluationView`) pages through all.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..analysis.html import ROWS
from ..display import Html, badge, concat, fmt_cost, join, kv_table, note, root, table

if TYPE_CHECKING:
    from .batch import Evaluation

__all__ = ["evaluation_html", "evaluation_rows_html"]


def _cell(v: Any, n: int = 160) -> str:
    text = "" if v is None else str(v)
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def evaluation_rows_html(rows: list[dict], start: int = 0, count: int = ROWS) -> Html:
    """Evaluation rows as a table: row id, inputs, status, calls, tokens, cost, output and error."""
    shown = rows[start:start + count]
    inputs = sorted({k for r in shown for k in r if k.startswith("input.")})
    cells = [[str(r.get("row")), *[_cell(r.get(k), 80) for k in inputs], badge(str(r.get("status"))),
              str(r.get("llm_calls", "")), f"{(r.get('tokens_in') or 0) + (r.get('tokens_out') or 0):,}",
              fmt_cost(r.get("cost")), _cell(r.get("output")), _cell(r.get("error"))] for r in shown]
    out = table(["row", *inputs, "status", "calls", "tokens", "cost", "output", "error"], cells,
                cls="ladr-eval-rows")
    rest = len(rows) - start - len(shown)
    return concat(out, note(f"… {rest:,} more rows") if rest > 0 else None)


def evaluation_html(ev: Evaluation, max_rows: int = ROWS) -> str:
    """An evaluation: rows by status, where its files are, and (the first `max_rows` rows of) the results."""
    counts = ev.counts()
    head = join((concat(badge(s), f" {n}") for s, n in sorted(counts.items())), "  ")
    pairs = [("rows", concat(f"{len(ev.rows):,}  ", head, note("  (interrupted)") if ev.interrupted else None)),
             ("folder", str(ev.out)),
             ("cost", fmt_cost(sum(float(r.get("cost") or 0) for r in ev.rows)))]
    return root(kv_table(pairs), evaluation_rows_html(ev.rows, 0, max_rows), cls="ladr-evaluation",
                title="Evaluation")
