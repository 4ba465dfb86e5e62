"""Stepper: drive a run one model call at a time, see the next prompt before it is sent, answer it by hand.

Buttons: Step (one model call, `Run.step()`), Run step (`Run.run_step()`), Run all (to the end, stopping
when a breakpoint step starts), Reset (a new run with the same arguments). When several calls are pending
(a step of several nodes), a picker chooses one (the oldest, `run.pending[0]`, unless you pick another): its
prompt is shown section by section, and it is the call Step makes and "Answer by hand" answers with the fork
box's text (`Run.step(call=..., output=...)`, a fork: the trace marks it `provenance: "edited"`). The round
just made (its output, verdict and why, what it fetched, and the gates and writes that followed) shows above
the next prompt. Before the first model call the counter says "not started · nothing sent yet". Its TraceView and SlateView
follow the run as its events arrive (the trace's listeners): rounds appear as they are made, the files a
round fetched are lit, and writes show in the SlateView.

While a call runs, its text grows under the prompt with its speed (tokens, tokens per second; `LivePanel`, live.py),
and **Stop** cancels it: the run records the call as a cancelled `llm_error` (with what it had written) and keeps it
pending, so Step sends it again. For Stop to be clicked while a call runs, the kernel must be free to hear the click:
in a notebook kernel the buttons therefore run the call on a thread of its own and return at once (`background`;
`wait()` waits for it), and the widgets are updated from that thread. Called from code (`stepper.step()`), or outside
a kernel, a call runs on the caller's thread, as before.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..config import Ladder
from ..config.rules import suggest
from ..display import badge, concat, details, json_text, note, plural, pre, tag
from ..engine import CallRequest, Run
from ..engine.html import run_html
from ..errors import LadrError
from ..trace import Event, Events, Gate, LlmCall, LlmCallFailed, Write
from ..trace.html import gate_html, not_started_html, round_body_html, round_head_html, write_html
from ..trace.story import GateStory, RoundStory, WriteStory, describe
from .live import LivePanel
from .parts import CHUNK, Fold, View, head_html, html, in_kernel, ipw, message_html, paged
from .slate_view import SlateView
from .trace_view import TraceView

__all__ = ["Stepper"]


def _is_factory(m: Any) -> bool:
    """Whether `m` makes a model when called with nothing (a callable that answers prompts, `lambda messages:
    ...`, is not one: Run is given it as it is, and says what it accepts)."""
    if not callable(m) or hasattr(m, "complete"):
        return False
    import inspect
    try:
        params = inspect.signature(m).parameters.values()
    except (TypeError, ValueError):     # no signature to read (a builtin): called as a factory, as before
        return True
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


class Stepper(View):
    """A run driven from buttons: `Stepper(ladder, input=..., model=..., breakpoints=("verify",))`.

    `model` is a model name, a model object (reset with it when it has `reset()`, as ScriptedModel does) or a
    function of no arguments that makes a fresh model for every run. `run` is the current Run, `rounds` the
    model calls made so far, `trace_view` and `slate_view` its views. `cache` is the runs' response cache of live
    models' answers (True: the per-user one, a folder, or False: models/cache.py); Reset with it on replays the answers
    the last run got, each round marked `cached`. `background` says whether the buttons run a call on a thread of its
    own, so that Stop can be clicked while it runs (None, the default: when running in a notebook kernel)."""

    css_class = "ladr-stepper"

    def __init__(self, ladder: Ladder | str | Path, *, input: str | None = None, inputs: dict | None = None,
                 model: Any = None, slates: dict | None = None, breakpoints: tuple | list = (),
                 cache: Any = True, background: bool | None = None) -> None:
        super().__init__()
        w = ipw()
        self.background = in_kernel() if background is None else bool(background)
        self._thread: threading.Thread | None = None
        self._busy = False
        self.live = LivePanel(on_stop=self.stop)
        self.ladder = Ladder.of(ladder)
        self._args: dict[str, Any] = {"input": input, "inputs": inputs, "slates": slates, "cache": cache}
        self._model = model
        ids = [s.id for s in self.ladder.all_steps()]
        unknown = [b for b in breakpoints if b not in ids]
        if unknown:
            hint = suggest(unknown[0], ids)
            raise ValueError(f"breakpoint {unknown[0]!r} is not a step of {self.ladder.name}"
                             + (f' (did you mean "{hint}"?)' if hint else f" (steps: {', '.join(ids)})"))
        self.run: Run = self._new_run()
        self.counter = html()
        self.counter.add_class("ladr-round-count")
        title = html(head_html(tag("b", f"Stepper · {self.ladder.name}")))
        self.step_button = w.Button(description="Step", button_style="primary", tooltip="make exactly one model call")
        self.run_step_button = w.Button(description="Run step", tooltip="finish the step now executing")
        self.run_all_button = w.Button(description="Run all", tooltip="run to the end, stopping at breakpoints")
        self.reset_button = w.Button(description="Reset", tooltip="start a new run with the same arguments")
        self.breakpoint_box = w.TagsInput(value=list(breakpoints), allowed_tags=ids, allow_duplicates=False,
                                          tooltip="Run all stops when one of these steps starts")
        self.stop_button = self.live.stop_button
        controls = w.HBox([self.step_button, self.run_step_button, self.run_all_button, self.reset_button,
                           self.stop_button], layout=w.Layout(flex_flow="row wrap"))
        bp = w.HBox([html(str(note("breakpoints: "))), self.breakpoint_box],
                    layout=w.Layout(align_items="center"))
        self.message = html()
        self.last = html()
        self.last.add_class("ladr-last-round")
        self.pick = w.Dropdown(options=[], description="call", layout=w.Layout(width="auto"),
                               tooltip="the pending call whose prompt is shown: Step makes it, Answer by hand "
                                       "answers it")
        self.pick.add_class("ladr-call-pick")
        self._picked: tuple | None = None        # the node the user picked (it stays picked while it waits)
        self._drawing = False
        self.pick.observe(self._picked_changed, names="value")
        self.pending_box = w.VBox([])
        self.pending_box.add_class("ladr-pending")
        self.fork = w.Textarea(placeholder="Type an answer for the pending call, then press “Answer by hand” "
                                           "(it is judged like a model output; the trace marks it edited).",
                               layout=w.Layout(width="100%", height="5em"))
        self.fork.add_class("ladr-fork")
        self.fork_button = w.Button(description="Answer by hand", tooltip="answer the pending call with this text")
        self.fork_box = w.VBox([self.fork, self.fork_button])
        self.trace_view = TraceView(self.run, follow=True)
        # the Slate tab reads its (maybe 10,000-file) listing when first opened, not before the first paint
        self.slate_view = SlateView(self.run, ladder=self.ladder, lazy=True)
        self.trace_view.on_round(self._round_opened)
        self.tabs = w.Tab(children=[self.trace_view.widget, self.slate_view.widget])
        self.tabs.set_title(0, "Trace")
        self.tabs.set_title(1, "Slate")
        self.tabs.observe(lambda c: self.slate_view.load() if c["new"] == 1 else None, names="selected_index")
        self.widget = self._root([w.HBox([title, self.counter], layout=w.Layout(justify_content="space-between")),
                                  controls, bp, self.message, self.last, self.pick, self.pending_box, self.live.widget,
                                  self.fork_box, self.tabs])
        self.step_button.on_click(lambda _b: self._click(self.step))
        self.run_step_button.on_click(lambda _b: self._click(self.run_step))
        self.run_all_button.on_click(lambda _b: self._click(self.run_all))
        self.reset_button.on_click(lambda _b: self.reset())
        self.fork_button.on_click(lambda _b: self.answer(self.fork.value))
        self._listen()
        self._refresh()

    # ---- the run ---------------------------------------------------------------------------------------
    def _make_model(self) -> Any:
        m = self._model
        if _is_factory(m):
            return m()              # a factory: a fresh model for every run
        if m is not None and hasattr(m, "reset"):
            m.reset()
        return m

    def _new_run(self) -> Run:
        a = self._args
        # one call at a time, whatever the model's max_concurrency: Run all then makes the calls in the order
        # Step would (a multi-node step's trace does not depend on which call of a thread pool ends first)
        return Run(self.ladder, model=self._make_model(), input=a["input"], inputs=a["inputs"],
                   slates=a["slates"], max_workers=1, cache=a["cache"], watch=self.live)

    def _listen(self) -> None:
        self._stack.enter_context(self.run.trace.listening(self._on_event))

    def _on_event(self, e: Event) -> None:
        if isinstance(e, LlmCall) and e.fetched:
            self.slate_view.light(e)
        elif isinstance(e, Write):
            self.slate_view.note_write(e)

    def _round_opened(self, r: RoundStory) -> None:
        if r.fetched:
            self.slate_view.light(r)

    @property
    def rounds(self) -> int:
        """Model calls made so far in this run (answers by hand included)."""
        return sum(1 for e in self.run.trace.events if isinstance(e, LlmCall))

    @property
    def breakpoints(self) -> list[str]:
        """The step ids Run all stops at."""
        return list(self.breakpoint_box.value)

    # ---- driving ---------------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """Whether a button's call is running on its thread (`background`)."""
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the call a button started on its thread (`background`); True once none runs."""
        t = self._thread
        if t is not None:
            t.join(timeout)
        return not self.busy

    def stop(self) -> int:
        """Cancel the model call that runs now (the Stop button, `Run.cancel()`): it is recorded as cancelled and
        stays pending, so Step sends it again. Returns how many calls were stopped."""
        n = self.run.cancel()
        if n:
            self.message.value = message_html("Stopping the model call…", "warning")
        return n

    def _click(self, action: Any) -> None:
        """A button's action: on a thread of its own in `background` mode (the kernel stays free to hear Stop)."""
        if not self.background:
            action()
            return
        if self.busy:
            return
        self._set_busy(True)

        def work() -> None:
            try:
                action()
            except Exception as exc:      # noqa: BLE001 - a thread's error has no cell to show it: the view says it
                self._refresh(message_html(f"{type(exc).__name__}: {exc}", "error"))
            finally:
                self._set_busy(False)

        self._thread = threading.Thread(target=work, name="ladr-stepper", daemon=True)
        self._thread.start()

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._enable()
        if busy:
            self.message.value = message_html("working… (Stop cancels the model call)")

    def _enable(self) -> None:
        """Buttons as the run allows: none while a call runs on its thread, none but Reset once the run has ended."""
        done, busy = self.run.done, self._busy
        for b in (self.step_button, self.run_step_button, self.run_all_button, self.fork_button):
            b.disabled = done or busy
        self.reset_button.disabled = busy
        self.pick.disabled = busy

    def _drive(self, what: str, fn: Any) -> Any:
        if self.run.done:
            self._refresh(message_html(f"The run has ended ({self.run.status}): Reset starts a new one."))
            return None
        try:
            out = fn()
        except LadrError as exc:            # e.g. a call that is no longer pending: say so, keep the view
            self._refresh(message_html(f"{what}: {type(exc).__name__}: {exc}", "error"))
            return None
        self._show_last(out or [])
        stopped = [e for e in out or [] if isinstance(e, LlmCallFailed) and e.cancelled]
        if stopped:
            e = stopped[-1]
            self._refresh(message_html(
                f"Stopped: {e.step} · node {e.node} · round {e.round} was cancelled after "
                f"{len(e.partial or ''):,} characters (the trace records it as a cancelled llm_error). The call is "
                "still pending: Step sends it again.", "warning"))
        else:
            self._refresh()
        return out

    @property
    def chosen(self) -> CallRequest | None:
        """The pending call shown (the picker's, else `run.pending[0]`): Step makes it, Answer by hand answers it."""
        if self.run.done:
            return None
        pending = self.run.pending
        if not pending:
            return None
        return next((r for r in pending if r.id == self.pick.value), pending[0])

    def _picked_changed(self, change: dict) -> None:
        if self._drawing:
            return
        req = next((r for r in self.run.pending if r.id == change["new"]), None) if not self.run.done else None
        self._picked = _node_key(req) if req is not None else None
        self._refresh()

    def step(self) -> Events:
        """Make exactly one model call, the one shown (the Step button); returns its events."""
        req = self.chosen
        out = self._drive("Step", lambda: self.run.step(call=req))
        return out if out is not None else Events()

    def run_step(self) -> Events:
        """Finish the step now executing (the Run step button); returns its events."""
        out = self._drive("Run step", self.run.run_step)
        return out if out is not None else Events()

    def run_all(self) -> list[Event]:
        """Run to the end, or until a breakpoint step starts (the Run all button, `Run.run(stop_before=...)`):
        the run then waits before that step's first call, and the next Run all goes on from there."""
        stops = self.breakpoints

        def go() -> list[Event]:
            mark = len(self.run.trace.events)
            self.run.run(stop_before=stops)
            return Events(self.run.trace.events[mark:])

        out = self._drive("Run all", go)
        if self.run.stopped_before is not None:
            self._refresh(message_html(f"Stopped at breakpoint {self.run.stopped_before!r}: its first call is "
                                       "pending.", "warning"))
        return out if out is not None else Events()

    def answer(self, text: str) -> Events:
        """Answer the pending call by hand with `text` (the "Answer by hand" button): a fork."""
        req = self.chosen
        out = self._drive("Answer by hand", lambda: self.run.step(output=text, call=req))
        if out is None:
            return Events()
        self.fork.value = ""
        return out

    def reset(self) -> None:
        """Start a new run with the same ladder, inputs, model and slates (the Reset button)."""
        if self.busy:                 # a call still runs on its thread: stop it first
            self.run.cancel()
            self.wait(30)
        self.live.clear()
        self._stack.close()
        self.run.close()
        self.run = self._new_run()
        self.trace_view.set_source(self.run)
        self.slate_view.clear_light()
        self.slate_view.writes.clear()
        self.slate_view.message.value = ""
        self.slate_view.refresh()
        self._listen()
        self._picked = None
        self.last.value = ""
        self._refresh(message_html("A new run: nothing sent yet."))

    # ---- drawing ---------------------------------------------------------------------------------------
    def _show_last(self, events: list) -> None:
        """Show what the action just done made: its last round (output, verdict and why, fetched entries) and the
        gates and writes that followed it."""
        rounds = [e for e in events if isinstance(e, LlmCall)]
        if not rounds:
            return
        last = rounds[-1]
        after = [describe(e) for e in events[events.index(last) + 1:] if isinstance(e, (Gate, Write))]
        r = describe(last)
        assert isinstance(r, RoundStory)
        more = f"  ({len(rounds)} rounds made; the last one)" if len(rounds) > 1 else ""
        extra = [gate_html(x) if isinstance(x, GateStory) else write_html(x) for x in after
                 if isinstance(x, (GateStory, WriteStory))]
        self.last.value = str(tag("div", tag("div", tag("b", "just made: "), round_head_html(r), note(more)),
                                  tag("div", round_body_html(r, prompt=False, limit=4000), *extra,
                                      cls="ladr-scroll", style="max-height: 18em"),
                                  style="border-left: 3px solid #1a7f37; padding: 2px 8px; margin: 4px 0"))

    def _refresh(self, message: str = "") -> None:
        run = self.run
        pending = [] if run.done else run.pending       # starts the run: the next prompt shows before it is sent
        n = self.rounds
        if n == 0 and not run.done:                     # reading the first prompt sends nothing
            self.counter.value = head_html(not_started_html())
        else:
            self.counter.value = head_html(tag("b", plural(n, "round")), " ", badge(run.status))
        self.message.value = message
        done = run.done
        self._enable()
        self.fork_box.layout.display = "none" if done else None
        self._draw_pick(pending)
        if done:
            res = run.result
            text = concat(badge(res.status), f" after {plural(res.llm_calls, 'model call')}",
                          tag("div", res.error, style="color: #cf222e") if res.error else None,
                          tag("div", tag("b", "output")), pre(res.output or "(empty)", 4000))
            self.pending_box.children = (html(str(text)),)
            return
        if not pending:
            self.pending_box.children = ()
            return
        req = self.chosen or pending[0]
        head = head_html(tag("b", "next: "), tag("b", f"{req.step} · node {req.node} · round {req.round}"),
                         " ", badge("forced final") if req.info.forced_final else None,
                         note(f"  {req.prompt_chars:,} prompt chars → {getattr(req.model, 'name', '?')}"
                              + (f"; {len(pending) - 1} more pending (pick one above)" if len(pending) > 1 else "")))
        parts: list = [html(head)]
        for s in req.prompt_sections():
            parts.append(Fold(head_html(badge(s.kind, "#6e7781"), " ", tag("b", s.name), note(f"  {len(s.text):,} chars")),
                              paged(s.text, CHUNK), cls="ladr-section").widget)
        if req.info.request_match is not None:
            parts.append(html(str(details(concat(tag("b", "requestMatch"),
                                                         note("  a match is a retrieval request; anything else is "
                                                              "the final answer")),
                                                  pre(json_text(req.info.request_match), 8000)))))
        elif req.info.forced_final:
            parts.append(html(str(note("forced final call: its output is final whatever it looks like"))))
        self.pending_box.children = tuple(parts)

    def _draw_pick(self, pending: list[CallRequest]) -> None:
        """The picker's options (every pending call, oldest first) and its value: the node picked while it still
        waits, else the oldest call."""
        keep = next((r for r in pending if _node_key(r) == self._picked), None) if self._picked else None
        if keep is None:
            self._picked = None
        self._drawing = True
        try:
            self.pick.options = [(_call_label(r), r.id) for r in pending]
            self.pick.value = (keep or pending[0]).id if pending else None
        finally:
            self._drawing = False
        self.pick.layout.display = None if len(pending) > 1 else "none"

    def static_html(self) -> str:
        """The run as a static view, for a notebook saved without widget state."""
        return run_html(self.run)


def _node_key(req: CallRequest) -> tuple:
    """What names one node's execution of a step, across its rounds."""
    i = req.info
    return (i.caller, i.step, i.iteration, i.node, i.depth)


def _call_label(req: CallRequest) -> str:
    """`verify · node 2 · round 1` (with the callers of a child run)."""
    i = req.info
    return " · ".join([*i.caller, i.step, f"node {i.node}", f"round {i.round}"]
                      + ([f"iteration {i.iteration}"] if i.iteration != 1 else [])
                      + (["forced final"] if i.forced_final else []))
