"""Re-judging a recorded run against an edited ladder (or edited schemas), with no model call.

Every judged output of the trace is judged again: each retrieve round against `requestMatch`, each
gate against its `equals` / `jsonMatches`, each slateWrite against its `match`. A row holds the old
and the new verdict, whether it flipped, the deciding keyword with its schema and instance paths (of
the failure that now rejects it, or of the one that no longer does), and what the flip would change
downstream (`effects.py`). Rows that come after an earlier flip in the same node, or in a later step,
describe a path the run might no longer take: `after_flip` names that flip and their effect is
"unknown". `rejudge` returns the rows as a `Rejudging`: a report that is the list of row dicts, shows
itself in a notebook and gives `.to_dataframe()` (and, as before, a DataFrame's columns and methods).

Fast enough for a schema editor's keystrokes: each distinct output is extracted once (and kept across
calls, since re-judging the same trace against the next edit is the common case), each distinct JSON
value is validated once per schema with a compiled validator, and the deciding error of a flip comes
out of that same pass. The verdicts are the engine's own: `round.verdict.Judge` decides them, here only
reported (see benchmarks/rejudge.py).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, SupportsIndex, overload

from ..config.model import Ladder
from ..display import Displayable
from ..errors import LadrError
from ..round.verdict import Judge, extraction
from ..trace import Call, Gate, LlmCall, StepEnd, Trace, Write
from .edits import Edits
from .effects import UNKNOWN, Effect, Fetcher, after_final, describe_action
from .positions import Where, iter_located

COLUMNS = ("seq", "kind", "test", "step", "node", "round", "iteration", "caller", "forced", "old", "new",
           "flipped", "keyword", "schema_path", "instance_path", "message", "extraction", "form", "changed",
           "effect_kind", "effect", "fetch", "after_flip", "old_reason", "new_reason", "output")

_PREFETCH_MAX = 4096    # outputs extracted ahead at once: well under the extraction cache's size


@dataclass
class _Exec:
    """One node's execution of a step, as recorded: its calls in order and its final output."""

    calls: list[LlmCall] = field(default_factory=list)
    final: str | None = None
    gate_writes: list[tuple[str, str]] = field(default_factory=list)   # (target, policy) of its gate's writes


@dataclass
class _Item:
    where: Where
    event: Any
    kind: str                     # requestMatch | gate | slateWrite | end
    output: str | None = None


def _collect(trace: Trace) -> tuple[list[_Item], dict[tuple, _Exec]]:
    items: list[_Item] = []
    execs: dict[tuple, _Exec] = {}
    for w, e in iter_located(trace.events):
        if w is None:
            continue
        if isinstance(e, LlmCall):
            ex = execs.setdefault(w.execution, _Exec())
            ex.calls.append(e)
            ex.final = e.output
            if e.request_match is not None:
                items.append(_Item(w, e, "requestMatch", e.output))
        elif isinstance(e, Call) and e.status == "completed":
            execs.setdefault(w.execution, _Exec()).final = e.output
        elif isinstance(e, Gate):
            items.append(_Item(w, e, "gate", execs.get(w.execution, _Exec()).final))
        elif isinstance(e, Write) and e.mechanism == "slateWrite":
            items.append(_Item(w, e, "slateWrite", execs.get(w.execution, _Exec()).final))
        elif isinstance(e, Write):
            # staged writes come after the gate: collected here, compared when the gate is re-judged
            execs.setdefault(w.execution, _Exec()).gate_writes.append((e.target, e.policy))
        elif isinstance(e, StepEnd):
            items.append(_Item(w, e, "end"))
    return items, execs


def _old_write(e: Write) -> bool | None:
    if e.verdict is not None:
        return e.verdict.matched
    return True if e.status == "written" else None


def _flip_detail(row: dict, new_j, old_j) -> None:
    """The deciding keyword and paths of a flip: of the failure that now rejects the output, or of the
    recorded failure that no longer does."""
    source = new_j if row["new"] is False else old_j
    if source is not None:
        row.update(keyword=source.keyword, schema_path=source.schema_path, instance_path=source.instance_path,
                   message=source.message)


class _Rejudge:
    def __init__(self, edits: Edits, slates: dict | None, detail: str) -> None:
        self.edits = edits
        self.judge = Judge()
        self.fetcher = Fetcher(edits.ladder, dict(slates or {}))
        self.detail = detail
        self.exec_flip: dict[tuple, int] = {}
        self.step_flip: dict[tuple, int] = {}
        self.upstream: int | None = None

    def after(self, w: Where) -> int | None:
        own = self.exec_flip.get(w.execution)
        if own is not None and self.upstream is not None:
            return min(own, self.upstream)
        return own if own is not None else self.upstream

    def note_change(self, w: Where, seq: int) -> None:
        self.exec_flip.setdefault(w.execution, seq)
        self.step_flip.setdefault((w.caller, w.step, w.iteration), seq)

    def end_step(self, w: Where) -> None:
        seq = self.step_flip.pop((w.caller, w.step, w.iteration), None)
        if seq is not None and (self.upstream is None or seq < self.upstream):
            self.upstream = seq

    # ---- rows ----------------------------------------------------------------------------------------
    def base(self, item: _Item, test: str) -> dict:
        w, e = item.where, item.event
        return {"seq": e.seq, "kind": item.kind, "test": test, "step": w.step, "node": w.node, "round": w.round,
                "iteration": w.iteration, "caller": " > ".join(w.caller), "forced": False, "old": None,
                "new": None, "flipped": False, "keyword": None, "schema_path": None, "instance_path": None,
                "message": None, "extraction": None, "form": None, "changed": False, "effect_kind": "none",
                "effect": "", "fetch": None, "after_flip": None, "old_reason": getattr(e, "reason", None),
                "new_reason": None, "output": item.output}

    def request_row(self, item: _Item, execs: dict) -> dict | None:
        e: LlmCall = item.event
        covered, schema = self.edits.request_match(e.step)
        if not covered:
            return None
        row = self.base(item, "requestMatch")
        row["forced"] = bool(e.forced_final)
        row["old"] = None if e.forced_final else e.request_match == "retrieval"
        if schema is None:
            row.update(effect_kind=UNKNOWN, effect="the edited ladder has no retrieve on this step", changed=True)
            return row
        row["new"] = self.judge.matches("requestMatch", schema, e.output, row["old"])
        row["flipped"] = row["old"] is not None and row["new"] != row["old"]
        if row["flipped"] or self.detail == "all":
            v = self.judge.request(schema, e.output, valid=row["new"])
            row.update(extraction=v.judgement.extraction, form=v.judgement.form, new_reason=v.reason)
            if row["flipped"]:
                _flip_detail(row, v.judgement, e.verdict)
                row["changed"] = True
                after = self.after(item.where)
                if after is None:
                    eff = self.request_effect(item, v, execs)
                    row.update(effect_kind=eff.kind, effect=eff.text, fetch=eff.fetch)
        elif row["forced"] and row["new"]:
            row["effect"] = "forced final call: its output is final whatever it matches"
        return row

    def unjudged_request_row(self, item: _Item) -> dict | None:
        """A round after a flip in its execution or upstream: the recorded side only (whether and how the
        edited run would judge it is unknown, so the output is not validated)."""
        e: LlmCall = item.event
        covered, _ = self.edits.request_match(e.step)
        if not covered:
            return None
        row = self.base(item, "requestMatch")
        row["forced"] = bool(e.forced_final)
        row["old"] = None if e.forced_final else e.request_match == "retrieval"
        return row

    def request_effect(self, item: _Item, v, execs: dict) -> Effect:
        e: LlmCall = item.event
        ex = execs.get(item.where.execution, _Exec())
        if not v.is_request:
            later = [c.round for c in ex.calls if c.round > e.round]
            text = f"the step would end at round {e.round}: this output becomes node {e.node}'s final answer"
            if later:
                text += (f"; round{'s' if len(later) > 1 else ''} {later[0]}"
                         + (f"–{later[-1]}" if len(later) > 1 else "") + " would not be made")
            return Effect("ends_step", text + "; " + after_final(self.edits.ladder, e.step, e.output))
        seen = {f.path for c in ex.calls if c.round < e.round for f in (c.fetched or ()) if f.status == "fetched"}
        rows, fetched = self.fetcher.fetch(e.step, v.request, seen, v.top_k)
        max_rounds = self.edits.max_rounds(e.step)
        nxt = "round {} would be {} (its output is unknown)".format(
            e.round + 1, "the forced final call" if max_rounds is not None and e.round >= max_rounds
            else "a new model call")
        return Effect("new_request", f"this output would now be read as a request; {fetched}; {nxt}", rows)

    def gate_row(self, item: _Item, execs: dict) -> dict | None:
        e: Gate = item.event
        covered, test, model = self.edits.gate(e.step)
        if not covered:
            return None
        row = self.base(item, test[0] if test else e.condition)
        row["old"] = e.matched
        if item.output is None:
            row.update(effect_kind=UNKNOWN, effect="the output this gate judged is not in the trace")
            return row
        if test is None:
            kind, words = ("continue", "the edited ladder has no gate here: the node continues")
            row.update(changed=e.action != "continue" or e.jump is not None)
        else:
            row["new"] = self.judge.matches(test[0], test[1], item.output, row["old"])
            row["flipped"] = row["new"] != row["old"]
            branch = "then" if row["new"] else "else"
            action = (model.then if row["new"] else model.else_) if model is not None else None
            if action is None and not row["flipped"]:
                kind, words = e.action, f"would take {branch} → {e.action}" + (f" {e.jump}" if e.jump else "")
            else:
                kind, words = describe_action(action, branch)
            same = action is not None and action.kind == e.action and action.jump == e.jump
            if same and row["flipped"]:
                # the other branch may do the same kind of thing (write, continue) with other writes
                same = self._same_writes(action, e, model, execs.get(item.where.execution, _Exec()))
            row["changed"] = row["flipped"] and not same or (action is not None and not same)
            if row["flipped"] or self.detail == "all":
                new_j, why = self._json_judgement(test, item.output, row["new"])
                row["new_reason"] = why
                row["extraction"] = new_j.extraction
                if row["flipped"]:
                    _flip_detail(row, new_j, e.verdict)
        if row["changed"]:
            after = self.after(item.where)
            if after is None:
                done = execs.get(item.where.execution, _Exec()).gate_writes
                recorded = f"{e.branch} → {e.action}" + (f" {e.jump}" if e.jump else "") + (
                    " to " + ", ".join(f"{t} ({p})" for t, p in done) if done else "")
                row.update(effect_kind=kind, effect=f"the gate {words} instead (recorded: {recorded})")
        return row

    @staticmethod
    def _same_writes(action: Any, e: Gate, model: Any, ex: _Exec) -> bool:
        """Whether the new branch writes what the recorded one did (targets and policies, in order): the
        recorded gate writes of this node when there are any, else the edited ladder's recorded branch."""
        new = [(w.target.describe(), w.on) for w in action.writes]
        if ex.gate_writes:
            return new == ex.gate_writes
        old_action = (model.then if e.branch == "then" else model.else_) if model is not None else None
        if old_action is None:
            return not new
        return new == [(w.target.describe(), w.on) for w in old_action.writes]

    def _json_judgement(self, test: tuple[str, Any], output: str, valid: bool | None = None):
        j, why, _ = self.judge.json(test[0], test[1], output, valid=valid)
        return j, why

    def write_row(self, item: _Item) -> dict | None:
        e: Write = item.event
        covered, schema, fld = self.edits.write_match(e.step)
        if not covered:
            return None
        row = self.base(item, "match")
        row["old"] = _old_write(e)
        aborted = (e.reason or "").startswith("the step aborted")
        if item.output is None or schema is None:
            row.update(effect_kind=UNKNOWN, effect="the output this write judged is not in the trace"
                       if item.output is None else "the edited ladder has no slateWrite on this step")
            row["changed"] = schema is None and e.status == "written"
            return row
        row["new"] = self.judge.matches("match", schema, item.output, row["old"])
        row["flipped"] = row["old"] is not None and row["new"] != row["old"]
        if row["flipped"] or self.detail == "all":
            j, why, value = self.judge.json("match", schema, item.output, valid=row["new"])
            row.update(new_reason=why, extraction=j.extraction)
            if row["flipped"]:
                _flip_detail(row, j, e.verdict)
            if row["new"] and fld is not None and (not isinstance(value, dict) or fld not in value):
                row["new_reason"] = f'the matched JSON has no field "{fld}"'
        if row["flipped"] and not aborted:
            row["changed"] = True
            if self.after(item.where) is None:
                made = row["new"] and not (row["new_reason"] or "").startswith("the matched JSON has no field")
                row.update(effect_kind="write" if made else "skip_write",
                           effect=f"the write to {e.target} ({e.policy}) would now be "
                                  + ("made" if made else f"skipped: {row['new_reason']}"))
        elif row["flipped"]:
            row["effect"] = "the step aborted: no write either way"
        return row

    def _prefetch_plan(self, items: list[_Item]) -> dict[int, list[str]]:
        """For the first item of each step's run, the outputs of its nodes' first requestMatch rounds (each is
        judged against an edited schema unless an upstream step flipped): extracted together before they are
        validated, which is faster than alternating extraction and validation output by output. Later rounds,
        which a flip in their node leaves unjudged, and the steps after a flip are extracted only if judged."""
        plan: dict[int, list[str]] = {}
        first: dict[tuple, int] = {}
        opened: set[tuple] = set()
        for i, item in enumerate(items):
            w = item.where
            start = first.setdefault((w.caller, w.step, w.iteration), i)
            if (item.kind == "requestMatch" and item.output is not None and w.execution not in opened
                    and self.edits.request_match(w.step)[1] is not None):
                opened.add(w.execution)
                plan.setdefault(start, []).append(item.output)
            if item.kind == "end":
                del first[(w.caller, w.step, w.iteration)]
        return {i: outs for i, outs in plan.items() if len(outs) <= _PREFETCH_MAX}

    def run(self, items: list[_Item], execs: dict, step: str | None) -> list[dict]:
        rows = []
        plan = self._prefetch_plan(items)
        for i, item in enumerate(items):
            if i in plan and self.upstream is None:
                for output in plan[i]:
                    extraction(output)
            if item.kind == "end":
                self.end_step(item.where)
                continue
            after = self.after(item.where)      # the row methods do not change it: computed once per item
            if item.kind == "requestMatch" and after is not None:
                row = self.unjudged_request_row(item)    # its verdict would be unknown anyway: not judged
            elif item.kind == "requestMatch":
                row = self.request_row(item, execs)
            elif item.kind == "gate":
                row = self.gate_row(item, execs)
            else:
                row = self.write_row(item)
            if row is None:
                continue
            row["after_flip"] = after
            if row["changed"]:
                self.note_change(item.where, item.event.seq)
            if after is not None:
                # the run might never get here, or judge another output here: no verdict is definite
                row.update(new=None, flipped=False, changed=False, keyword=None, schema_path=None,
                           instance_path=None, message=None, new_reason=None, fetch=None, effect_kind=UNKNOWN,
                           effect=f"after the flip at #{after}, whether and how this is judged is unknown")
            if step is None or item.where.step == step:
                rows.append(row)
        return rows


class NoStepsInCommon(LadrError):
    """The edited ladder has none of the steps the trace recorded: nothing could be re-judged."""


def _check_overlap(items: list[_Item], edits: Edits, path: Any) -> None:
    traced = sorted({i.where.step for i in items if not i.where.caller})
    if not traced or edits.ladder is None:
        return  # an empty trace has nothing to re-judge; a `{step_id: schema}` mapping names only what it edits
    known = [s.id for s in edits.ladder.all_steps()]
    if not set(traced) & set(known):
        where = f"the trace {path}" if isinstance(path, (str, Path)) else "the trace"
        raise NoStepsInCommon(f"the ladder has none of the steps of {where}: the trace has {', '.join(traced)}; "
                              f"the ladder has {', '.join(known) or 'none'} (is it the ladder this run was made "
                              "with, or an edit of it?)")


class Rejudging(list[dict], Displayable):
    """What re-judging a trace against an edited ladder decided: the list of row dicts (one per judged output,
    keys as in `COLUMNS`; `len`, iteration and `r[i]` give the dicts themselves), shown in a notebook as a table.

    `flips` are the rows whose verdict flipped, `to_dataframe()` the rows as a pandas DataFrame (columns in
    `COLUMNS` order) and `to_text()` what `ladr-lab trace rejudge` prints. A column name or a DataFrame
    attribute (`r.flipped`, `r[["old", "new"]]`, `r[r.flipped]`, `r.iloc[0]`, `r.query(...)`) answers as
    the DataFrame does, so code written when `rejudge` returned a DataFrame keeps working."""

    def __init__(self, rows: Iterable[dict] = ()) -> None:
        super().__init__(rows)

    @overload
    def __getitem__(self, key: SupportsIndex) -> dict: ...

    @overload
    def __getitem__(self, key: slice) -> Rejudging: ...

    @overload
    def __getitem__(self, key: Any) -> Any: ...

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return Rejudging(super().__getitem__(key))
        if isinstance(key, SupportsIndex):
            return super().__getitem__(key)
        return self.to_dataframe()[key]          # a column, a list of columns or a mask: the DataFrame's answer

    def __getattr__(self, name: str) -> Any:
        # only reached for names a list has not: a column (`r.flipped`) or DataFrame API (`r.iloc`)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.to_dataframe(), name)

    @property
    def flips(self) -> Rejudging:
        """The rows whose verdict flipped."""
        return Rejudging(r for r in self if r["flipped"])

    def to_dataframe(self):
        """The rows as a pandas DataFrame, one column per key of `COLUMNS` (pandas is imported here)."""
        import pandas as pd
        return pd.DataFrame(list(self), columns=list(COLUMNS))

    def __repr__(self) -> str:
        changed = sum(1 for r in self if r["changed"])
        return f"<Rejudging: {len(self)} verdict(s), {len(self.flips)} flipped, {changed} with a different outcome>"

    def to_text(self, *, flips_only: bool = False) -> str:
        """The rows as a readable table (`flips_only`: the flips alone), as `ladr-lab trace rejudge` prints."""
        return format_rows(self, flips_only=flips_only)

    def to_html(self) -> str:
        """The counts, then the re-judged rows (flips highlighted, bounded), as static HTML."""
        from .html import rejudging_html
        return rejudging_html(self)


def rejudge(trace: Trace | str | Path, ladder: Ladder | str | Path | Mapping | Edits, *, step: str | None = None,
            slates: Mapping[str, str | Path] | None = None, detail: str = "flips") -> Rejudging:
    """Re-judge every recorded output of a run against an edited ladder (or `{step_id: schema}`), with no
    model call: a `Rejudging`, the rows of old and new verdicts, flips, their deciding keyword and paths,
    and what each flip would change downstream ("unknown" where only the model could tell); its
    `to_dataframe()` is the pandas table. Raises NoStepsInCommon when the ladder has none of the trace's steps.

    `slates` binds slate titles to folders for computing what a would-be request fetches (default: the
    ladder's `path:`); `detail="all"` gives the new reason of every row, not only of the flips."""
    if detail not in ("flips", "all"):
        raise ValueError('detail is "flips" (reasons and paths of the flips only) or "all"')
    t = Trace.of(trace)
    items, execs = _collect(t)
    edits = ladder if isinstance(ladder, Edits) else Edits(ladder)
    _check_overlap(items, edits, trace)
    return Rejudging(_Rejudge(edits, dict(slates or {}), detail).run(items, execs, step))


def rejudge_rows(trace: Trace | str | Path, ladder: Ladder | str | Path | Mapping | Edits, *, step: str | None = None,
                 slates: Mapping[str, str | Path] | None = None, detail: str = "flips") -> Rejudging:
    """`rejudge` by its older name: the same `Rejudging`, a list of plain dicts (columns as in `COLUMNS`)."""
    return rejudge(trace, ladder, step=step, slates=slates, detail=detail)


def _mark(v: bool | None, unknown: bool = False) -> str:
    return "?" if unknown and v is None else {True: "match", False: "no", None: "-"}[v]


def format_rows(rows: list[dict], *, flips_only: bool = False) -> str:
    """A readable table of re-judged rows (what `ladr-lab trace rejudge` prints)."""
    flips = [r for r in rows if r["flipped"]]
    changed = [r for r in rows if r["changed"]]
    lines = [f"{len(rows)} verdict(s) re-judged, {len(flips)} flipped, {len(changed)} with a different outcome"]
    shown = flips if flips_only else rows
    if not shown:
        return lines[0]
    lines.append(f"{'#':>5}  {'where':<32} {'test':<12} {'old':>5} → {'new':<5}  why / effect")
    for r in shown:
        where = str(r["step"]) + (f"/{r['node']}" if r["node"] is not None else "") + \
            (f" r{r['round']}" if r["round"] is not None else "") + \
            (f" it{r['iteration']}" if r["iteration"] not in (1, None) else "")
        if r["caller"]:
            where = r["caller"] + " > " + where
        old = "forced" if r["forced"] else _mark(r["old"])
        mark = "⇄" if r["flipped"] else " "
        seq = "?" if r["seq"] is None else r["seq"]
        lines.append(f"{seq:>5}  {where[:32]:<32} {r['test']:<12} {old:>5} → {_mark(r['new'], r['after_flip'] is not None):<5}{mark} "
                     + (f"{r['keyword']} at {r['schema_path'] or '/'} (instance {r['instance_path'] or '/'})"
                        if r["keyword"] else "")
                     + (f" [after the flip at #{r['after_flip']}]" if r["after_flip"] is not None else ""))
        if r["effect"]:
            lines.append(" " * 8 + "→ " + r["effect"])
    return "\n".join(lines)


__all__ = ["COLUMNS", "Edits", "NoStepsInCommon", "Rejudging", "format_rows", "rejudge", "rejudge_rows"]
