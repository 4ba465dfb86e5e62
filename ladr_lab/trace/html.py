"""Static HTML of a run's stories (`story.py`): a round, a gate, a write, a step, a whole trace.

The notebook widgets use the same functions for the parts they show (a round's header and body, a step's
gates and writes), so a saved notebook, `jupyter nbconvert` and a live widget say the same things. Sizes are
bounded: a prompt section or an output shows its first few thousand characters, and a whole trace is kept
under `max_chars` by showing the rounds past that point as one line each.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..display import (
    Html,
    badge,
    bar_chart,
    concat,
    details,
    fmt_cost,
    fmt_int,
    join,
    json_text,
    kv_table,
    note,
    plural,
    pre,
    root,
    table,
    tag,
)
from .events import Event
from .outline import NodeOutline, Outline, StepOutline
from .story import (
    CallStory,
    EndStory,
    ErrorStory,
    FetchRow,
    GateStory,
    RoundStory,
    StartStory,
    StepStory,
    Story,
    VerdictStory,
    WriteStory,
    describe,
)

__all__ = [
    "SECTION_CHARS", "TRACE_MAX_CHARS", "event_html", "events_html", "fetched_html", "gate_html", "prompt_chart",
    "prompt_html", "round_body_html", "round_head_html", "round_html", "section_html", "step_html", "story_html",
    "trace_html", "verdict_html", "write_html",
]

SECTION_CHARS = 3000        # characters of one prompt section or output a static view shows
TRACE_MAX_CHARS = 450_000   # full rounds up to this much HTML; one-line rounds and steps after, to about twice it


def not_started_html() -> Html:
    """The status of a run whose first prompt was read but to which no model call was made yet."""
    return concat(badge("not started", "#6e7781"), note(" · nothing sent yet"))


def verdict_html(v: VerdictStory | None) -> Html:
    """The verdict: test, match or not, extraction rule and form, and the deciding keyword with its paths."""
    if v is None:
        return Html("")
    how = ", ".join(x for x in (v.extraction, v.form) if x)
    bits: list = [tag("b", v.test), " ", badge("match" if v.matched else "no match")]
    if how:
        bits.append(note(f" {how}"))
    elif not v.matched and v.test != "equals":
        bits.append(note(" no JSON found"))
    if v.keyword:
        bits += [" — deciding keyword ", tag("code", v.keyword), " at ", tag("code", v.schema_path or "/"),
                 " (instance ", tag("code", v.instance_path or "/"), ")"]
        if v.message:
            bits += [": ", tag("span", v.message, style="color: #cf222e")]
    return tag("div", *bits, cls="ladr-verdict")


def fetched_html(rows: Sequence[FetchRow]) -> Html:
    """The retrieved entries of a round: status, mode, path (and the path as asked), size and remarks."""
    if not rows:
        return Html("")
    body = []
    for f in rows:
        path = concat(tag("code", f.path), note(f" (asked {f.asked})") if f.asked else None)
        rest = f.detail.strip()
        body.append([badge(f.status), f.mode, path, rest])
    return table(["status", "mode", "path", "size / remarks"], body, cls="ladr-fetched")


def round_head_html(r: RoundStory) -> Html:
    """One line: the round's label, its tag, and its tokens, cost, latency and provenance."""
    return concat(tag("b", r.label), " → ", badge(r.tag), " ", note(r.stats()),
                  badge("error", title=r.error) if r.error else None,
                  " " if r.provenance == "edited" else None, badge("edited") if r.provenance == "edited" else None,
                  " " if r.provenance == "cached" else None,
                  badge("cached", title="answer from the response cache, not a fresh call")
                  if r.provenance == "cached" else None)


def section_html(kind: str, name: str, text: str, limit: int = SECTION_CHARS) -> Html:
    """One prompt section, collapsible, its text cut at `limit` characters."""
    return details(concat(badge(kind, "#6e7781"), " ", tag("b", name), note(f"  {len(text):,} chars")),
                   pre(text, limit), cls="ladr-section")


def prompt_html(r: RoundStory, limit: int = SECTION_CHARS) -> Html:
    """The exact prompt of a round as its named sections (system prompt, fields, retrieved blocks, the
    forced-final line), each collapsible."""
    parts = [section_html(s.kind, s.name, s.text, limit) for s in r.prompt_sections()]
    return details(concat(tag("b", "prompt"), note(f"  {plural(len(parts), 'section')}, {r.prompt_chars:,} chars")),
                   *parts, cls="ladr-prompt")


def round_body_html(r: RoundStory, *, limit: int = SECTION_CHARS, prompt: bool = True) -> Html:
    """Everything about a round: why it was taken so, the verdict, the request by mode, the fetched entries,
    the output, an error, and (with `prompt`) the prompt's sections."""
    bits: list = []
    if r.why:
        bits.append(tag("div", tag("b", "why "), r.why))
    bits.append(verdict_html(r.verdict))
    if r.request or r.top_k is not None:
        rows = [[m, tag("code", json_text(v, None))] for m, v in r.request]
        if r.top_k is not None:
            rows.append(["topK", tag("code", str(r.top_k))])
        bits.append(concat(tag("b", "request"), table(["mode", "value"], rows, cls="ladr-request")))
    if r.fetched:
        bits.append(concat(tag("b", "fetched"), fetched_html(r.fetched)))
    bits.append(concat(tag("b", "output"), note(f"  {len(r.output):,} chars"), pre(r.output, limit, cls="ladr-output")))
    if r.error:
        bits.append(tag("div", tag("b", "error while handling this output: "), r.error, style="color: #cf222e"))
    if prompt:
        bits.append(prompt_html(r, limit))
    return join(bits)


def round_html(r: RoundStory, *, open: bool = False, limit: int = SECTION_CHARS) -> Html:
    """A round, collapsible: its header line, then its body."""
    return details(round_head_html(r), round_body_html(r, limit=limit), open=open, cls="ladr-round")


def gate_html(g: GateStory) -> Html:
    """A gate's decision: condition, branch, action, and why."""
    return tag("div", "◆ gate ", tag("b", g.label), f": {g.condition} → ", badge(g.branch),
               f" {g.action}" + (f" → {g.jump}" if g.jump else ""), note(f"  {g.reason}"),
               verdict_html(g.verdict) if g.verdict is not None and g.verdict.keyword else None, cls="ladr-gate")


def write_html(w: WriteStory, *, who: bool = False) -> Html:
    """A write: target, policy, mechanism, made or skipped, and why (`who`: led by the step#node that made it)."""
    how = w.mechanism + (f" {w.branch}" if w.branch else "")
    return tag("div", "✎ write ", concat(tag("b", w.label), " ") if who else None, tag("code", w.target), note(f" ({w.policy}, {how}) "), badge(w.status),
               note(f"  {w.reason}") if w.reason else None,
               note(f"  {w.chars:,} chars") if w.chars else None, cls="ladr-write")


def story_html(s: Story, *, open: bool = False, limit: int = SECTION_CHARS) -> Html:
    """Any story as HTML (a round collapsible, the others one line)."""
    if isinstance(s, RoundStory):
        return round_html(s, open=open, limit=limit)
    if isinstance(s, GateStory):
        return gate_html(s)
    if isinstance(s, WriteStory):
        return write_html(s)
    if isinstance(s, EndStory):
        e = s.event
        return tag("div", "■ ", badge(e.status), f" after {plural(e.llm_calls, 'model call')}"
                   + (f", {e.edited_calls} answered by hand" if e.edited_calls else ""),
                   tag("div", e.error, style="color: #cf222e") if e.error else None,
                   concat(tag("b", "output"), pre(e.output, limit)) if e.output else None, cls="ladr-end")
    if isinstance(s, StepStory):
        return tag("div", "▶ " if s.started else "◼ ", s.headline(), cls="ladr-step-line")
    if isinstance(s, ErrorStory):
        failed = s.event
        if failed.cancelled:           # stopped by hand: not a failure; what it had written is worth a look
            return tag("div", s.headline(), pre(failed.partial, limit) if failed.partial else None,
                       style="color: #bc4c00", cls="ladr-cancelled")
        return tag("div", s.headline(), style="color: #cf222e")
    if isinstance(s, (CallStory, StartStory)):
        return tag("div", s.headline())
    return tag("div", note(s.headline()))


def _node_html(n: NodeOutline, rounds_html: list[Html | None], budget: _Budget | None = None) -> Html:
    hidden = sum(1 for x in rounds_html if x is None)
    parts = [x for x in rounds_html if x is not None] + ([note(f"… {plural(hidden, 'round')} not shown")]
                                                           if hidden else [])
    events = [gate_html(g) for g in n.gates] + [write_html(w) for w in n.writes]
    events += [tag("div", "↳ ", c.headline()) for c in n.calls] + [story_html(e) for e in n.errors]
    if budget is None or budget.left > 0:
        parts += events
        if budget is not None:
            budget.left -= sum(len(x) for x in events)
    elif events:
        made = sum(w.written for w in n.writes)
        parts.append(note(", ".join(x for x in (
            f"gate → {', '.join(g.outcome() for g in n.gates)}" if n.gates else "",
            f"{made} of {len(n.writes)} write(s) made" if n.writes else "",
            plural(len(n.calls), "child run event") if n.calls else "",
            plural(len(n.errors), "failed call") if n.errors else "") if x)))
    return join(parts)


class _Budget:
    """How much of a page is left: rounds past it are shown as one plain line each, and past half as much again
    they are only counted."""

    def __init__(self, chars: int) -> None:
        self.limit = chars
        self.left = chars
        self.cut_at: int | None = None
        self.hidden = 0

    def round(self, r: RoundStory, limit: int) -> Html | None:
        if self.left > 0:
            out = round_html(r, limit=limit)
            self.left -= len(out)
            return out
        if self.cut_at is None:
            self.cut_at = r.seq
        if self.left < -self.limit // 2:
            self.hidden += 1
            return None
        line = tag("div", f"{r.label} → {r.tag}  ", note(f"{r.tokens_in:,} → {r.tokens_out:,} tokens"),
                   cls="ladr-round-line", style="padding-left: 16px")
        self.left -= len(line)
        return line


def step_html(s: StepOutline, *, open: bool = False, limit: int = SECTION_CHARS, budget: _Budget | None = None
              ) -> Html:
    """One execution of a step, collapsible: its nodes (a node each when there are several), their rounds,
    gates and writes."""
    b = budget or _Budget(TRACE_MAX_CHARS)
    nodes = [s.nodes[k] for k in sorted(s.nodes)]
    if len(nodes) == 1:
        body = _node_html(nodes[0], [b.round(r, limit) for r in nodes[0].rounds], b)
    else:
        body = join(details(n.headline(), _node_html(n, [b.round(r, limit) for r in n.rounds], b), cls="ladr-node")
                    for n in nodes)
    style = f"margin-left: {16 * s.depth}px" if s.depth else None
    return tag("div", details(concat(tag("b", s.label), note("  " + s.headline()[len(s.label):])), body,
                              open=open, cls="ladr-step"), style=style)


def prompt_chart(rounds: Sequence[RoundStory]) -> Html:
    """A small bar chart of prompt size per round."""
    return bar_chart([r.prompt_chars for r in rounds], [f"#{r.seq} {r.label}" for r in rounds],
                     title=f"prompt characters per round ({len(rounds):,} rounds)")


def _header(o: Outline) -> Html:
    t = o.totals()
    pairs: list = []
    if o.start is not None:
        s = o.start.event
        pairs += [("ladder", s.ladder), ("model", s.model),
                  ("inputs", tag("code", json_text(s.inputs, None)[:400]))]
    if o.end is not None:
        e = o.end.event
        pairs.append(("status", concat(badge(e.status), f"  {plural(e.llm_calls, 'model call')}, "
                                                         f"{plural(e.steps, 'step')}")))
        if e.error:
            pairs.append(("error", tag("span", e.error, style="color: #cf222e")))
    pairs.append(("totals", f"{plural(t['rounds'], 'round')}, {fmt_int(t['tokens_in'])} tokens in, "
                            f"{fmt_int(t['tokens_out'])} out, {fmt_cost(t['cost'])}; "
                            f"{t['written']} write(s) made, {t['skipped']} skipped"))
    return kv_table(pairs)


def trace_html(events: Iterable[Event], *, max_chars: int = TRACE_MAX_CHARS, limit: int = SECTION_CHARS,
               title: str | None = "Trace") -> Html:
    """A whole run: its header (ladder, model, inputs, status, totals), a chart of prompt size per round, each
    step's execution collapsible with its rounds, gates and writes, and the output. Past `max_chars` of
    HTML, rounds are shown as one line each."""
    o = Outline.of(events)
    budget = _Budget(max_chars)
    steps: list[Html] = []
    uncounted = 0
    for s in o.steps:
        if budget.left > -budget.limit // 2:
            steps.append(step_html(s, open=len(o.steps) <= 2, limit=limit, budget=budget))
        elif budget.left > -budget.limit:       # far past the budget: each step execution as its headline
            line = tag("div", "▸ ", tag("b", s.label), note("  " + s.headline()[len(s.label):]), cls="ladr-step-line")
            budget.left -= len(line)
            budget.hidden += len(s.rounds())
            steps.append(line)
        else:
            uncounted += 1
            budget.hidden += len(s.rounds())
    if uncounted:
        steps.append(note(f"… {plural(uncounted, 'more step execution')} not shown"))
    cut = None
    if budget.cut_at is not None:
        hidden = f"; {budget.hidden:,} more are only counted" if budget.hidden else ""
        cut = tag("div", note(f"To keep this page small, rounds from #{budget.cut_at} on are shown as one line each"
                              f"{hidden}: TraceView (ladr_lab.widgets) opens any of them, and "
                              "trace.call(step, node, round) returns one."))
    out = None
    if o.end is not None and o.end.event.output:
        out = details(concat(tag("b", "output"), note(f"  {len(o.end.event.output):,} chars")),
                      pre(o.end.event.output, limit), open=True)
    return root(_header(o), prompt_chart(o.rounds) if len(o.rounds) > 1 else None, cut, join(steps), out,
                cls="ladr-trace", title=title)


def event_html(e: Event) -> Html:
    """One event (a model call opened, with its prompt's sections collapsible)."""
    return root(story_html(describe(e), open=True), cls=f"ladr-event ladr-{e.type}")


def events_html(events: Sequence[Event]) -> Html:
    """Events in order (what `Run.step()` returned): model calls open, the others one line each."""
    if not events:
        return root(note("no events"), cls="ladr-events")
    o = Outline()
    parts = []
    few = sum(1 for x in events if x.type == "llm_call") <= 2
    for e in events:
        _, story = o.add(e)
        if isinstance(story, StartStory):
            continue
        parts.append(story_html(story, open=few))
    return root(join(parts), cls="ladr-events", title=plural(len(events), "event"))
