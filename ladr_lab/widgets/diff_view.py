"""DiffView: two runs compared (`diff_runs`): totals with deltas, the first divergence, and every aligned model
call, gate and write, each opened on demand to show what differs (a call's prompt section by section, its
outputs, its verdicts and fetched entries; a gate's or write's two outcomes)."""
from __future__ import annotations

from typing import Any

from ..analysis import RunDiff, diff_prompts, diff_runs
from ..analysis.html import diff_html, where_label
from ..analysis.prompts import text_diff
from ..display import badge, concat, join, note, pre, table, tag
from ..trace import Event, LlmCall, Trace
from ..trace.html import story_html
from ..trace.story import describe
from .parts import PAGE, Fold, Pager, View, head_html, ipw

__all__ = ["DiffView"]


def _trace(x: Any) -> Any:
    """A Trace or path from a Trace, a Run or a JSONL path."""
    t = getattr(x, "trace", None)
    return t if isinstance(t, Trace) else x


class DiffView(View):
    """`DiffView(a, b)`: two runs (Traces, Runs or JSONL paths) compared, or a RunDiff already made (`a`)."""

    css_class = "ladr-diff-view"

    def __init__(self, a: Any, b: Any = None, *, page: int = PAGE, only_changes: bool = True) -> None:
        super().__init__()
        w = ipw()
        from ..analysis.positions import as_trace
        if isinstance(a, RunDiff):
            raise TypeError("DiffView(a, b) compares two runs: give the traces (the RunDiff keeps no events)")
        self.a, self.b = as_trace(_trace(a)), as_trace(_trace(b))
        self.diff: RunDiff = diff_runs(self.a, self.b)
        self._events_a = {e.seq: e for e in self.a.events}
        self._events_b = {e.seq: e for e in self.b.events}
        self.summary = w.HTML(value=self._summary_html())
        self.only = w.Checkbox(value=only_changes, description="only what differs", indent=False)
        self.rows = Pager(self._rows(), self._make, page=page, noun="aligned row")
        self.only.observe(lambda _c: self.rows.set_items(self._rows()), names="value")
        self.widget = self._root([self.summary, self.only, self.rows.widget])

    def _summary_html(self) -> str:
        d = self.diff
        # the static report without its row table (the pager below shows the rows)
        full = diff_html(d)
        cut = full.rfind("<details")
        return full[:cut] + "</div>" if cut > 0 else full

    def _rows(self) -> list[dict]:
        return [r for r in self.diff.rows if not r["same"]] if self.only.value else list(self.diff.rows)

    def _make(self, rows: list[dict]) -> list:
        out = []
        for r in rows:
            verdicts = "" if r.get("verdict_a") == r.get("verdict_b") else f"  {r.get('verdict_a')} → {r.get('verdict_b')}"
            head = head_html(tag("b", r["kind"]), " ", where_label(r), " ",
                             badge("same") if r["same"] else badge("changed"), note("  " + ", ".join(r["changes"])
                                                                                    + verdicts))
            out.append(Fold(head, lambda r=r: [ipw().HTML(value=self.detail_html(r))], cls="ladr-diff-row").widget)
        return out

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
        return diff_html(self.diff)
