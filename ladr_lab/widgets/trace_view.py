"""TraceView: a run's steps, loop iterations, nodes and rounds, each opened on demand, updated live.

Per round: the exact prompt with each section (system prompt, every field, every retrieved block, the
forced-final line) collapsible and shown a chunk at a time, the output, the verdict with the deciding schema
keyword and paths, the parsed request by mode, the fetched entries, tokens, cost, latency and provenance.
Per step: its gates and writes (made or skipped, and why). On top: totals and a chart of prompt size per round.
Everything it says comes from `trace/story.py` and is drawn by `trace/html.py`, as the static views are.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..display import badge, concat, note, plural, tag
from ..trace import Event, Trace
from ..trace.html import (
    gate_html,
    prompt_chart,
    round_body_html,
    round_head_html,
    story_html,
    trace_html,
    write_html,
)
from ..trace.outline import NodeOutline, Outline, StepOutline
from ..trace.story import RoundStory, Story
from .parts import CHUNK, PAGE, Fold, Pager, View, head_html, html, ipw, paged

__all__ = ["TraceView"]

STATIC_CHARS = 50_000      # the static fallback of a live view stays small


class _NodeBody:
    """A node's rounds (paged) and its gates, writes and child runs."""

    def __init__(self, view: TraceView, block: StepOutline, node: NodeOutline) -> None:
        w = ipw()
        self.view, self.block, self.node = view, block, node
        self.rounds = Pager(node.rounds, self._make, page=view.page, noun="round", at_end=view.follow)
        self.extra = html()
        self.widget = w.VBox([self.rounds.widget, self.extra])
        self.refresh_extra()

    def _make(self, rounds: list[RoundStory]) -> list:
        return [self.view._round_fold(r).widget for r in rounds]

    def refresh_extra(self) -> None:
        n = self.node
        parts = [gate_html(g) for g in n.gates] + [write_html(x) for x in n.writes]
        parts += [story_html(c) for c in n.calls] + [story_html(e) for e in n.errors]
        self.extra.value = "".join(parts)

    def add(self, story: Story) -> None:
        if isinstance(story, RoundStory):
            self.rounds.append(story, follow=self.view.follow)
        else:
            self.refresh_extra()


class _StepRow:
    """One execution of a step: a fold whose body holds its node(s)."""

    def __init__(self, view: TraceView, block: StepOutline) -> None:
        self.view, self.block = view, block
        self.bodies: dict[int, _NodeBody] = {}
        self.node_folds: dict[int, Fold] = {}
        self.fold = Fold(self._head(), self._build, cls="ladr-step")

    def _head(self) -> str:
        b = self.block
        return head_html(tag("b", b.label), note("  " + b.headline()[len(b.label):]))

    def _single(self) -> bool:
        return len(self.block.nodes) <= 1 and self.block.nodes_declared <= 1

    def _build(self) -> list:
        self.bodies.clear()
        self.node_folds.clear()
        if self._single():
            if not self.block.nodes:
                return [html(str(note("no model call yet")))]
            n = next(iter(self.block.nodes.values()))
            body = self.bodies[n.node] = _NodeBody(self.view, self.block, n)
            return [body.widget]
        return [self._node_fold(self.block.nodes[k]).widget for k in sorted(self.block.nodes)]

    def _node_fold(self, n: NodeOutline) -> Fold:
        def build() -> list:
            body = self.bodies[n.node] = _NodeBody(self.view, self.block, n)
            return [body.widget]
        fold = self.node_folds[n.node] = Fold(self._node_head(n), build, cls="ladr-node")
        return fold

    @staticmethod
    def _node_head(n: NodeOutline) -> str:
        text = n.headline()
        return head_html(tag("b", f"node {n.node}"), note("  " + text.split(": ", 1)[-1]))

    def update(self, story: Story) -> None:
        """Show a new event of this step: the header always, the body if it was built."""
        self.fold.head.value = self._head()
        if not self.fold.built:
            return
        node = getattr(story.event, "node", None)
        if self._single():
            if node in self.bodies:
                self.bodies[node].add(story)
            else:
                self.fold.rebuild()
            return
        if node is None:
            return
        fold = self.node_folds.get(node)
        n = self.block.nodes.get(node)
        if n is None:
            return
        if fold is None:
            self.fold.body.children = self.fold.body.children + (self._node_fold(n).widget,)
            return
        fold.head.value = self._node_head(n)
        if node in self.bodies and fold.built:
            self.bodies[node].add(story)


class TraceView(View):
    """A run's rounds, gates and writes, opened on demand: `TraceView(trace_or_run)` (a Trace, a Run, a JSONL
    path or a list of events). Given a Run (or a Trace still being recorded) it updates live as events arrive;
    `close()` or `set_source()` detaches it."""

    css_class = "ladr-trace-view"

    def __init__(self, trace_or_run: Any = None, *, page: int = PAGE, follow: bool = False, live: bool = True,
                 chunk: int = CHUNK) -> None:
        super().__init__()
        self.page, self.follow, self.live, self.chunk = page, follow, live, chunk
        self.header = html()
        self.header.add_class("ladr-trace-header")
        self.chart = html()
        self.steps = Pager([], self._make_steps, page=page, noun="step execution")
        self.widget = self._root([self.header, self.chart, self.steps.widget])
        self._round_callbacks: list[Callable[[RoundStory], Any]] = []
        self.trace: Trace = Trace()
        self.run: Any = None
        self.outline = Outline()
        self._rows: dict[tuple, _StepRow] = {}
        self._round_folds: dict[int, Fold] = {}
        self.set_source(trace_or_run)

    # ---- source -----------------------------------------------------------------------------------------
    def set_source(self, trace_or_run: Any) -> None:
        """Show another trace or run (detaching from the previous one)."""
        self._stack.close()
        self.trace = Trace() if trace_or_run is None else Trace.of(trace_or_run)
        self.run = trace_or_run if isinstance(getattr(trace_or_run, "trace", None), Trace) else None
        self.outline = Outline.of(self.trace.events)
        self._rows.clear()
        self._round_folds.clear()
        self.steps.set_items(self.outline.steps, at_end=self.follow)
        self._refresh_header()
        if self.live:
            self._stack.enter_context(self.trace.listening(self._on_event))

    def on_round(self, fn: Callable[[RoundStory], Any]) -> None:
        """Call `fn(round_story)` whenever a round is opened (the Stepper lights its fetched files)."""
        self._round_callbacks.append(fn)

    def _round_opened(self, r: RoundStory) -> None:
        for fn in self._round_callbacks:
            fn(r)

    # ---- building ---------------------------------------------------------------------------------------
    def _make_steps(self, blocks: list[StepOutline]) -> list:
        out = []
        for b in blocks:
            row = self._rows.get(b.key) or _StepRow(self, b)
            self._rows[b.key] = row
            if self.follow and b is self.outline.steps[-1]:
                row.fold.set_open(True)
            out.append(row.fold.widget)
        return out

    def _round_fold(self, r: RoundStory) -> Fold:
        def build() -> list:
            parts = [html(str(round_body_html(r, prompt=False, limit=self.chunk)))]
            sections = r.prompt_sections()
            parts.append(html(str(concat(tag("b", "prompt"),
                                                 note(f"  {len(sections)} sections, {r.prompt_chars:,} chars")))))
            for s in sections:
                parts.append(Fold(head_html(badge(s.kind, "#6e7781"), " ", tag("b", s.name),
                                            note(f"  {len(s.text):,} chars")),
                                  paged(s.text, self.chunk),
                                  cls="ladr-section").widget)
            return parts

        fold = Fold(str(round_head_html(r)), build, cls="ladr-round",
                    on_open=lambda _f: self._round_opened(r))
        self._round_folds[id(r.event)] = fold
        return fold

    def _refresh_header(self) -> None:
        o = self.outline
        t = o.totals()
        bits: list = []
        if o.start is not None:
            bits += [tag("b", o.start.event.ladder), note(f"  {o.start.event.model}  ")]
        if o.end is not None:
            bits += [badge(o.end.event.status), " "]
        elif o.start is not None and not t["rounds"]:       # a run shown before its first call sent nothing
            bits += [badge("not started", "#6e7781"), note(" nothing sent yet · ")]
        elif o.start is not None:
            bits += [badge("running"), " "]
        bits.append(f"{plural(t['rounds'], 'round')}, {t['tokens_in']:,} tokens in, {t['tokens_out']:,} out"
                    + (f", ${t['cost']:.4f}" if t["cost"] else "")
                    + f"; {t['written']} write(s) made, {t['skipped']} skipped")
        if o.end is not None and o.end.event.error:
            bits.append(tag("div", o.end.event.error, style="color: #cf222e"))
        self.header.value = head_html(*bits)
        self.chart.value = str(prompt_chart(o.rounds)) if len(o.rounds) > 1 else ""

    # ---- live -------------------------------------------------------------------------------------------
    def _on_event(self, e: Event) -> None:
        block, story = self.outline.add(e)
        if block is not None:
            row = self._rows.get(block.key)
            if row is None:
                if not any(b is block for b in self.steps.items):
                    if self.follow:     # the step that just started is the one to watch: close the others
                        for other in self._rows.values():
                            if other.fold.is_open:
                                other.fold.set_open(False)
                    self.steps.append(block, follow=self.follow)
            else:
                row.update(story)
        if e.type == "run_end":     # steps the run left unfinished now say how they ended
            for row in self._rows.values():
                if row.block.end is None:
                    row.fold.head.value = row._head()
        if block is None or e.type in ("llm_call", "step_end"):
            self._refresh_header()

    # ---- reading and driving, for code and tests -----------------------------------------------------------
    def step_fold(self, step: str, iteration: int = 1, caller: tuple[str, ...] = ()) -> Fold:
        """The fold of one step execution (its page is shown first); KeyError if there is none."""
        key = (tuple(caller), step, iteration)
        for i, b in enumerate(self.steps.items):
            if b.key == key:
                if b.key not in self._rows or i // self.steps.size != self.steps.page:
                    self.steps.show(i // self.steps.size)
                return self._rows[key].fold
        raise KeyError(f"no execution of step {step!r} (iteration {iteration}) in this trace")

    def open_round(self, step: str, node: int = 1, round: int = 1, iteration: int = 1,
                   caller: tuple[str, ...] = ()) -> Fold:
        """Open a round (its step, node and page too) and return its fold."""
        row_fold = self.step_fold(step, iteration, caller)
        row_fold.set_open(True)
        row = self._rows[(tuple(caller), step, iteration)]
        if not row._single():
            row.node_folds[node].set_open(True)
        body = row.bodies[node]
        idx = next(i for i, r in enumerate(body.rounds.items) if r.round == round)
        if idx // body.rounds.size != body.rounds.page:
            body.rounds.show(idx // body.rounds.size)
        fold = self._round_folds[id(body.rounds.items[idx].event)]
        fold.set_open(True)
        return fold

    def static_html(self) -> str:
        """The trace as a static view (bounded), for a notebook saved without widget state."""
        return str(trace_html(self.trace.events, max_chars=STATIC_CHARS))
