"""DiffView: two runs compared (`diff_runs`): totals with deltas, the first divergence, and every aligned model
call, gate and write, each opened on demand to show what differs (a call's prompt section by section, its
outputs, its verdicts and fetched entries; a gate's or write's two outcomes)."""
from __future__ import annotations

from typing import Any

from ..analysis import RunDiff, diff_prompts, diff_runs
from ..analysis.html import diff_html, diff_rows_html, where_label
from ..analysis.prompts import text_diff
from ..display import badge, concat, join, note, pre, table, tag
from ..trace import Event, LlmCall, Trace
from ..trace.html import story_html
from ..trace.story import describe
from .parts import PAGE, PagedTable, View, html, ipw

__all__ = ["DiffView"]


def _name(given: Any, trace: Trace, side: str) -> str:
    """How the view names a run: its file, else its ladder and inputs (from run_start)."""
    from pathlib import Path
    if isinstance(given, (str, Path)):
        return str(given)
    start = next((e for e in trace.events if e.type == "run_start" and not e.depth), None)
    if start is None:
        return side
    inputs = ", ".join(f"{k}={v!r}" for k, v in (start.get("inputs") or {}).items())
    return f"{side}: {start.get('ladder')}" + (f" ({inputs[:80]})" if inputs else "")


class DiffView(View):
    """`DiffView(a, b)`: two runs (Traces, Runs or JSONL paths) compared, or a RunDiff already made (`a`)."""

    css_class = "ladr-diff-view"

    def __init__(self, a: Any, b: Any = None, *, page: int = PAGE, only_changes: bool = True,
                 names: tuple[str, str] | None = None) -> None:
        super().__init__()
        w = ipw()
        if isinstance(a, RunDiff):
            raise TypeError("DiffView(a, b) compares two runs: give the traces (the RunDiff keeps no events)")
        self.a, self.b = Trace.of(a), Trace.of(b)
        self.diff: RunDiff = diff_runs(self.a, self.b)
        if names is not None:
            self.diff.a, self.diff.b = names
        else:       # name the runs by what tells them apart, not "trace" and "trace"
            self.diff.a, self.diff.b = _name(a, self.a, "a"), _name(b, self.b, "b")
        self._events_a = {e.seq: e for e in self.a.events}
        self._events_b = {e.seq: e for e in self.b.events}
        self.page = page
        self.summary = html(self._summary_html())
        self.only = w.Checkbox(value=only_changes, description="only what differs", indent=False)
        self.pages = PagedTable(self.rows, lambda rows, start, size: diff_rows_html(rows, start, size, numbered=True),
                                size=page, controls=[self.only], pick=self._pick_label, on_pick=self.open_row,
                                pick_width="34em", cls="ladr-diff-table", empty=self._empty_text)
        # the parts the tests and notebooks reach for by name
        self.prev, self.next, self.page_label = self.pages.prev, self.pages.next, self.pages.page_label
        self.table, self.row_pick = self.pages.table, self.pages.pick
        self.detail = html(cls="ladr-diff-detail")
        self.widget = self._root([self.summary, self.pages.widget, self.detail])
        self.only.observe(lambda _c: self.show(0), names="value")

    def _summary_html(self) -> str:
        return diff_html(self.diff, max_rows=0)      # the table below pages through the rows

    def rows(self) -> list[dict]:
        """The aligned rows shown (only those that differ, unless the checkbox is cleared)."""
        return [r for r in self.diff.rows if not r["same"]] if self.only.value else list(self.diff.rows)

    @staticmethod
    def _pick_label(r: dict, index: int) -> tuple[str, int]:
        return f"{index + 1}. {r['kind']} {where_label(r)}", index

    def _empty_text(self) -> str:
        return "nothing differs" if self.only.value else "no aligned rows"

    def show(self, start: int) -> None:
        """Show the page of rows starting at `start`."""
        self.pages.show(start)

    def open_row(self, index: int) -> str:
        """Show what differs in row `index` (of the rows shown) below the table; returns its HTML."""
        rows = self.rows()
        if not 0 <= index < len(rows):
            return ""
        r = rows[index]
        self.detail.value = str(concat(tag("b", f"{index + 1}. {r['kind']} {where_label(r)}: "),
                                       badge("same") if r["same"] else badge("changed"), " ",
                                       ", ".join(r["changes"]))) + self.detail_html(r)
        return self.detail.value

    def detail_html(self, r: dict) -> str:
        """What differs in one aligned row: a call's prompt sections and output, or both sides' outcomes."""
        a: Event | None = self._events_a.get(r.get("a_seq"))
        b: Event | None = self._events_b.get(r.get("b_seq"))
        if a is None or b is None:
            only = a if a is not None else b
            side = "a" if a is not None else "b"
            return str(concat(tag("div", f"only in run {side}:"), story_html(describe(only), open=True))) if only \
                else ""
        if isinstance(a, LlmCall) and isinstance(b, LlmCall):
            secs = diff_prompts(a, b)
            rows = [[badge(d.status if d.status in ("same", "changed", "added", "removed") else "same"), d.kind, d.name,
                     f"{d.a_chars:,} → {d.b_chars:,}", pre(d.diff, 6000) if d.diff else ""] for d in secs
                    if d.status != "same"]
            same = sum(d.status == "same" for d in secs)
            parts = [tag("b", "prompt"), table(["", "kind", "section", "chars", "diff"], rows) if rows else
                     note(" the same"), note(f"  ({same} section(s) unchanged)") if same and rows else None]
            if a.output != b.output:
                parts += [tag("div", tag("b", "output")), pre(text_diff(a.output or "", b.output or ""), 6000)]
            sa, sb = describe(a), describe(b)
            parts += [tag("div", tag("b", "a: "), sa.headline(), note("  " + (a.reason or ""))),
                      tag("div", tag("b", "b: "), sb.headline(), note("  " + (b.reason or "")))]
            return str(join(parts))
        return str(join([tag("div", tag("b", "a: "), story_html(describe(a))),
                         tag("div", tag("b", "b: "), story_html(describe(b)))]))

    def static_html(self) -> str:
        """The diff as a static view, for a notebook saved without widget state."""
        return diff_html(self.diff, max_rows=50)
