"""Two runs compared: model calls, gates and writes aligned by (callers, step, loop iteration, node, round),
the first divergence, and the deltas of calls, tokens, cost, verdicts, fetched files and writes.

Alignment follows the recorded order of run A; what only B has is placed after the last item both share
before it (a sequence alignment of the keys, as difflib does for lines). Two aligned calls are the same
when their prompts, outputs, verdicts and fetched entries are; tokens, cost, latency and provenance may
differ without that counting as a divergence (a replayed run reports the recording's cost), and are
reported as deltas.
"""
from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..display import Displayable
from ..trace import Gate, LlmCall, RunEnd, Trace, Write
from .positions import Where, iter_located, trace_label
from .prompts import diff_prompts, format_diffs, text_diff


def _items(trace: Trace) -> list[tuple[tuple, Where, Any]]:
    out = []
    seen: Counter = Counter()
    for w, e in iter_located(trace.events):
        if w is None:
            continue
        key: tuple
        if isinstance(e, LlmCall):
            key = ("call", w.caller, w.step, w.iteration, w.node, w.round)
        elif isinstance(e, Gate):
            key = ("gate", w.caller, w.step, w.iteration, w.node)
        elif isinstance(e, Write):
            base = ("write", w.caller, w.step, w.iteration, w.node, e.mechanism, e.branch, e.target)
            seen[base] += 1
            key = base + (seen[base],)
        else:
            continue
        out.append((key, w, e))
    return out


def _fetched(e: LlmCall) -> list[tuple[str, str]]:
    return [(f.path, f.status) for f in (e.fetched or ())]


def _compare(a, b) -> list[str]:
    """What differs between two aligned events (empty: the same)."""
    changes = []
    if isinstance(a, LlmCall):
        if a.messages != b.messages:
            names = [d.name for d in diff_prompts(a, b) if d.status != "same"]
            changes.append("prompt" + (f" ({', '.join(names)})" if names else ""))
        if a.output != b.output:
            changes.append("output")
        if a.request_match != b.request_match or a.forced_final != b.forced_final:
            changes.append("verdict")
        if _fetched(a) != _fetched(b):
            changes.append("fetched")
        if a.error != b.error:
            changes.append("error")
    elif isinstance(a, Gate):
        if a.matched != b.matched or a.condition != b.condition:
            changes.append("verdict")
        if (a.branch, a.action, a.jump) != (b.branch, b.action, b.jump):
            changes.append("action")
    elif isinstance(a, Write):
        if a.status != b.status:
            changes.append("status")
        if a.policy != b.policy or a.source != b.source:
            changes.append("write")
    return changes


def _verdict(e) -> str | None:
    if isinstance(e, LlmCall):
        return "forced final" if e.forced_final else e.request_match
    if isinstance(e, Gate):
        return f"{e.branch}:{e.action}" + (f"→{e.jump}" if e.jump else "")
    if isinstance(e, Write):
        return e.status
    return None


def _row(key: tuple, w: Where, a, b) -> dict:
    e = a if a is not None else b
    changes = _compare(a, b) if a is not None and b is not None else (["only in a"] if b is None else ["only in b"])
    row = {"kind": key[0], "step": w.step, "node": w.node, "round": w.round if key[0] == "call" else None,
           "iteration": w.iteration, "caller": " > ".join(w.caller), "in_a": a is not None, "in_b": b is not None,
           "same": not changes, "changes": changes, "a_seq": a.seq if a is not None else None,
           "b_seq": b.seq if b is not None else None, "verdict_a": _verdict(a) if a is not None else None,
           "verdict_b": _verdict(b) if b is not None else None, "target": getattr(e, "target", None)}
    if key[0] == "call":
        for side, ev in (("a", a), ("b", b)):
            row[f"tokens_in_{side}"] = ev.tokens_in if ev is not None else 0
            row[f"tokens_out_{side}"] = ev.tokens_out if ev is not None else 0
            row[f"cost_{side}"] = ev.cost if ev is not None else 0.0
        fa = {p for p, s in _fetched(a) if s == "fetched"} if a is not None else set()
        fb = {p for p, s in _fetched(b) if s == "fetched"} if b is not None else set()
        row["fetched_only_a"], row["fetched_only_b"] = sorted(fa - fb), sorted(fb - fa)
    return row


def _detail(a, b) -> str:
    """The first divergence in words: which sections of the prompt changed (with diffs), or the outputs."""
    if a is None or b is None:
        e = a if a is not None else b
        return f"only run {'a' if a is not None else 'b'} has this {e.type}"
    if isinstance(a, LlmCall):
        if a.messages != b.messages:
            return "prompt differs:\n" + format_diffs(diff_prompts(a, b))
        if a.output != b.output:
            return "output differs:\n" + text_diff(a.output or "", b.output or "")
        if _fetched(a) != _fetched(b):
            return f"fetched differs: a {_fetched(a)} / b {_fetched(b)}"
        return f"verdict differs: a {_verdict(a)} ({a.reason}) / b {_verdict(b)} ({b.reason})"
    if isinstance(a, Gate):
        return f"gate: a {_verdict(a)} ({a.reason}) / b {_verdict(b)} ({b.reason})"
    return f"write {a.target}: a {a.status} ({a.reason}) / b {b.status} ({b.reason})"


@dataclass
class RunDiff(Displayable):
    """Two runs compared: aligned rows, the first divergence, totals and per-step deltas, fetched files and
    writes that only one run made."""

    a: str
    b: str
    rows: list[dict]
    first_divergence: dict | None
    totals: dict[str, Any]
    per_step: dict[str, dict]
    fetched: dict[str, list[str]] = field(default_factory=dict)
    writes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def identical(self) -> bool:
        """True when nothing but tokens, cost, latency or provenance differs."""
        return self.first_divergence is None and self.totals["status"]["a"] == self.totals["status"]["b"] \
            and self.totals["output"]["same"]

    def to_dataframe(self):
        """The aligned rows as a pandas DataFrame."""
        import pandas as pd
        return pd.DataFrame(self.rows)

    def to_dict(self) -> dict:
        """Everything as JSON-ready data (what `ladr-lab trace diff --json` prints)."""
        return {"a": self.a, "b": self.b, "identical": self.identical, "first_divergence": self.first_divergence,
                "totals": self.totals, "per_step": self.per_step, "fetched": self.fetched, "writes": self.writes,
                "rows": self.rows}

    def __repr__(self) -> str:
        fd = self.first_divergence
        what = "identical" if self.identical else (f"first divergence: {fd['kind']} {fd['where']}" if fd else
                                                   "same calls, different ending")
        return f"<RunDiff {self.a} vs {self.b}: {len(self.rows)} aligned rows, {what}>"

    def to_text(self) -> str:
        """The report as `ladr-lab trace diff` prints it."""
        return self.format()

    def to_html(self) -> str:
        """Totals, the first divergence and the aligned rows as a static HTML view."""
        from .html import diff_html
        return diff_html(self)

    def format(self) -> str:
        """A readable report: totals, the first divergence, then every aligned row that differs."""
        lines = [f"a: {self.a}", f"b: {self.b}"]
        t = self.totals
        for name in ("status", "llm_calls", "tokens_in", "tokens_out", "cost", "steps"):
            d = t[name]
            delta = f"  ({d['delta']:+g})" if isinstance(d.get("delta"), (int, float)) and d["delta"] else ""
            lines.append(f"  {name:<11} {d['a']!s:>12} → {d['b']!s:<12}{delta}")
        lines.append(f"  {'output':<11} {'same' if t['output']['same'] else 'differs'}")
        if self.first_divergence is None:
            lines.append("no divergence: every aligned call, gate and write is the same")
        else:
            fd = self.first_divergence
            lines.append(f"first divergence: {fd['kind']} {fd['where']} — {', '.join(fd['changes'])}")
            lines.extend("  " + ln for ln in fd["detail"].splitlines())
        for side in ("a", "b"):
            if self.fetched.get(f"only_{side}"):
                lines.append(f"fetched only in {side}: " + ", ".join(self.fetched[f"only_{side}"]))
            if self.writes.get(f"only_{side}"):
                lines.append(f"written only in {side}: " + ", ".join(self.writes[f"only_{side}"]))
        differing = [r for r in self.rows if not r["same"]]
        if differing:
            lines.append(f"{len(differing)} of {len(self.rows)} aligned item(s) differ:")
            for r in differing:
                where = r["step"] + (f"/{r['node']}" if r["node"] is not None else "") + \
                    (f" r{r['round']}" if r["round"] is not None else "") + \
                    (f" it{r['iteration']}" if r["iteration"] != 1 else "")
                lines.append(f"  {r['kind']:<5} {where:<28} {', '.join(r['changes'])}"
                             + (f"  [{r['verdict_a']} → {r['verdict_b']}]" if r["verdict_a"] != r["verdict_b"] else ""))
        return "\n".join(lines)


def _end(trace: Trace) -> RunEnd | None:
    ends = [e for e in trace.events if isinstance(e, RunEnd) and not e.depth]
    return ends[-1] if ends else None


def _sum(trace: Trace, attr: str) -> float:
    return sum(getattr(e, attr) or 0 for e in trace.events if isinstance(e, LlmCall))


def _delta(a, b) -> dict:
    d = {"a": a, "b": b}
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        d["delta"] = round(b - a, 8)
    return d


def _written(trace: Trace) -> set[str]:
    return {f"{e.target} ({e.policy})" for e in trace.events if isinstance(e, Write) and e.status == "written"}


def _all_fetched(trace: Trace) -> set[str]:
    return {f"{e.step}: {f.path}" for e in trace.events if isinstance(e, LlmCall) for f in (e.fetched or ())
            if f.status == "fetched"}


def diff_runs(a: Trace | str | Path, b: Trace | str | Path) -> RunDiff:
    """Compare two recorded runs (Traces or JSONL paths): aligned calls, gates and writes, the first
    divergence, and the deltas of calls, tokens, cost, verdicts, fetched files and writes."""
    ta, tb = Trace.of(a), Trace.of(b)
    ia, ib = _items(ta), _items(tb)
    ka, kb = [k for k, _, _ in ia], [k for k, _, _ in ib]
    rows: list[dict] = []
    first = None
    matcher = difflib.SequenceMatcher(a=ka, b=kb, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        pairs: list[tuple] = []
        if op == "equal":
            pairs = [(ia[i], ib[j]) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)]
        else:
            pairs = [(ia[i], None) for i in range(i1, i2)] + [(None, ib[j]) for j in range(j1, j2)]
        for pa, pb in pairs:
            key, w = (pa or pb)[0], (pa or pb)[1]
            ea, eb = (pa[2] if pa else None), (pb[2] if pb else None)
            row = _row(key, w, ea, eb)
            rows.append(row)
            if first is None and not row["same"]:
                first = {"kind": key[0], "where": w.label(), "step": w.step, "node": w.node,
                         "round": w.round if key[0] == "call" else None, "iteration": w.iteration,
                         "caller": list(w.caller), "a_seq": row["a_seq"], "b_seq": row["b_seq"],
                         "changes": row["changes"], "detail": _detail(ea, eb)}
    end_a, end_b = _end(ta), _end(tb)
    totals = {
        "status": _delta(end_a.status if end_a else None, end_b.status if end_b else None),
        "llm_calls": _delta(len(ta.calls()), len(tb.calls())),
        "tokens_in": _delta(int(_sum(ta, "tokens_in")), int(_sum(tb, "tokens_in"))),
        "tokens_out": _delta(int(_sum(ta, "tokens_out")), int(_sum(tb, "tokens_out"))),
        "cost": _delta(round(_sum(ta, "cost"), 8), round(_sum(tb, "cost"), 8)),
        "steps": _delta(end_a.steps if end_a else None, end_b.steps if end_b else None),
        "output": {"same": (end_a.output if end_a else None) == (end_b.output if end_b else None),
                   "a": end_a.output if end_a else None, "b": end_b.output if end_b else None},
        "verdicts_changed": sum(1 for r in rows if "verdict" in r["changes"] or "action" in r["changes"]),
    }
    per: dict[str, dict] = defaultdict(lambda: {"calls_a": 0, "calls_b": 0, "tokens_a": 0, "tokens_b": 0,
                                                "cost_a": 0.0, "cost_b": 0.0})
    for side, t in (("a", ta), ("b", tb)):
        for e in t.calls():
            p = per[e.step]
            p[f"calls_{side}"] += 1
            p[f"tokens_{side}"] += (e.tokens_in or 0) + (e.tokens_out or 0)
            p[f"cost_{side}"] = round(p[f"cost_{side}"] + (e.cost or 0.0), 8)
    fa, fb = _all_fetched(ta), _all_fetched(tb)
    wa, wb = _written(ta), _written(tb)
    return RunDiff(trace_label(a), trace_label(b), rows, first, totals, dict(per),
                   fetched={"only_a": sorted(fa - fb), "only_b": sorted(fb - fa)},
                   writes={"only_a": sorted(wa - wb), "only_b": sorted(wb - wa)})


__all__ = ["RunDiff", "diff_runs"]
