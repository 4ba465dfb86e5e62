"""EvaluationView: an evaluation's results (`evaluate` / `load_evaluation`): rows by status, a paged results
table filtered by status, and any row's run opened in a TraceView."""
from __future__ import annotations

from pathlib import Path

from ..display import badge, concat, fmt_cost, join, note, tag
from ..evaluation import Evaluation, load_evaluation
from ..evaluation.html import evaluation_html, evaluation_rows_html
from .parts import PAGE, View, button, head_html, html, ipw, message_html
from .trace_view import TraceView

__all__ = ["EvaluationView"]


class EvaluationView(View):
    """`EvaluationView(evaluation)` (an Evaluation or its output folder): counts by status, the results table a
    page at a time (filtered by status), and the trace of the row picked."""

    css_class = "ladr-evaluation-view"

    def __init__(self, evaluation: Evaluation | str | Path, *, page: int = PAGE) -> None:
        super().__init__()
        w = ipw()
        self.evaluation = evaluation if isinstance(evaluation, Evaluation) else load_evaluation(evaluation)
        ev = self.evaluation
        self.page = page
        counts = ev.counts()
        head = concat(tag("b", f"Evaluation: {len(ev.rows):,} rows  "),
                      join((concat(badge(s), f" {n}") for s, n in sorted(counts.items())), "  "),
                      note(f"  ·  {fmt_cost(sum(float(r.get('cost') or 0) for r in ev.rows))}  ·  {ev.out}"),
                      note("  (interrupted)") if ev.interrupted else None)
        self.header = html(head_html(head))
        self.status = w.Dropdown(options=["all", *sorted(counts)], value="all", description="status")
        self.prev = button("◀", key="arrow", width="2.6em")
        self.next = button("▶", key="arrow", width="2.6em")
        self.page_label = html()
        self.table = html()
        self.table.add_class("ladr-eval-table")
        self.row_pick = w.Dropdown(options=[], description="open row")
        self.row_box = w.VBox([])
        self.trace_view: TraceView | None = None
        self.widget = self._root([self.header, w.HBox([self.status, self.prev, self.page_label, self.next],
                                                      layout=w.Layout(align_items="center")),
                                  self.table, self.row_pick, self.row_box])
        self._start = 0
        self.status.observe(lambda _c: self.show(0), names="value")
        self.prev.on_click(lambda _b: self.show(self._start - self.page))
        self.next.on_click(lambda _b: self.show(self._start + self.page))
        self.row_pick.observe(lambda c: self.open_row(c["new"]) if c["new"] else None, names="value")
        self.show(0)

    def rows(self) -> list[dict]:
        """The rows the status filter lets through."""
        s = self.status.value
        return [r for r in self.evaluation.rows if s == "all" or r.get("status") == s]

    def show(self, start: int) -> None:
        """Show the page of rows starting at `start`."""
        rows = self.rows()
        start = max(0, min(start, max(0, (len(rows) - 1) // self.page * self.page)))
        self._start = start
        self.table.value = str(evaluation_rows_html(rows, start, self.page))
        shown = rows[start:start + self.page]
        self.page_label.value = str(note(f"{start + 1 if rows else 0:,}–{start + len(shown):,} of {len(rows):,}"))
        self.prev.disabled = start <= 0
        self.next.disabled = start + self.page >= len(rows)
        self.row_pick.options = [""] + [str(r["row"]) for r in shown]

    def open_row(self, row: str) -> TraceView | None:
        """Show one row's run in a TraceView below the table."""
        try:
            trace = self.evaluation.trace(str(row))
        except (KeyError, OSError, ValueError) as exc:
            self.row_box.children = (html(message_html(f"row {row}: {exc}", "error")),)
            return None
        except Exception as exc:  # an unreadable trace file is that row's problem, not the view's
            self.row_box.children = (html(message_html(f"row {row}: {type(exc).__name__}: {exc}",
                                                                   "error")),)
            return None
        if self.trace_view is not None:
            self.trace_view.close()
        self.trace_view = TraceView(trace, live=False)
        self.row_box.children = (html(head_html(tag("b", f"row {row}"))), self.trace_view.widget)
        return self.trace_view

    def static_html(self) -> str:
        """The evaluation as a static view, for a notebook saved without widget state."""
        return evaluation_html(self.evaluation, max_rows=self.page)
