"""ReplayView: replay a recorded run against a ladder (usually an edited one) with the recorded outputs
(`ReplayModel`), and see where it stops matching the recording and what changed.

Plain replay stops at the first divergence (a prompt that is not the recorded one, a call the recording
does not have); with a live model named in `then` (mixed replay) the run goes on live from there. The
view shows the divergence (where, and the recorded → now diff of the message), the replayed run's
result, a DiffView of the recording against the replay and a TraceView of the replay.

The live continuation streams: while the `then` model answers, its text grows in the view with its speed
(`LivePanel`, live.py), and Stop cancels the call (the replayed run then stops where it was; Replay starts again).
In a notebook kernel the Replay button runs on a thread of its own so that Stop can be clicked (`background`,
`wait()`); `replay()` called from code runs on the caller's thread, as before.
"""
from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from typing import Any

from ..config import Ladder
from ..display import badge, concat, note, pre, tag
from ..engine import Run
from ..errors import LadrError
from ..models import ReplayModel
from ..trace import Trace
from .diff_view import DiffView
from .live import LivePanel
from .parts import View, head_html, html, in_kernel, ipw, message_html
from .trace_view import TraceView

__all__ = ["ReplayView"]


class ReplayView(View):
    """`ReplayView(ladder, trace, then=None, slates=None, inputs=None)`: press Replay (or call `replay()`) to
    run `ladder` with `trace`'s recorded outputs; `then` (a model name or object) answers live from the first
    divergence on. `run` is the replayed Run, `divergence` where it diverged (None: it did not), `diff_view`
    and `trace_view` its views. `background` (None: in a notebook kernel) runs the Replay button on a thread of its own,
    so that Stop can cancel a live call while it runs."""

    css_class = "ladr-replay-view"

    def __init__(self, ladder: Ladder | str | Path, trace: Any, *, then: Any = None, slates: dict | None = None,
                 inputs: dict | None = None, background: bool | None = None) -> None:
        super().__init__()
        w = ipw()
        self.background = in_kernel() if background is None else bool(background)
        self._thread: threading.Thread | None = None
        self._running: Run | None = None
        self.live = LivePanel(on_stop=self.stop)
        self.stop_button = self.live.stop_button
        self.ladder = Ladder.of(ladder)
        self.recorded, self.path = self._recorded(trace)
        self.slates, self.inputs = slates, inputs
        self.run: Run | None = None
        self.divergence: dict | None = None
        self.diff_view: DiffView | None = None
        self.trace_view: TraceView | None = None
        self.then = w.Text(value=then if isinstance(then, str) else "", placeholder="offline, or a litellm model",
                           description="then", tooltip="answer live with this model from the first divergence on "
                                                       "(empty: stop there)")
        self._then_model = then if then is not None and not isinstance(then, str) else None
        self.replay_button = w.Button(description="Replay", button_style="primary")
        self.status = html()
        self.status.add_class("ladr-replay-status")
        self.tabs = w.Tab(children=[])
        calls = len(self.recorded.calls())
        title = html(head_html(tag("b", f"Replay · {self.ladder.name}"),
                                       note(f"  against {calls} recorded model call(s) from {self.path}")))
        self.widget = self._root([title, w.HBox([self.replay_button, self.then, self.stop_button]), self.status,
                                  self.live.widget, self.tabs])
        self.replay_button.on_click(lambda _b: self._click())

    @staticmethod
    def _recorded(trace: Any) -> tuple[Trace, Path]:
        t = getattr(trace, "trace", trace)
        if isinstance(t, (str, Path)):
            return Trace.of(t), Path(t)
        t = Trace.of(t)
        # ReplayModel reads a JSONL file: write an in-memory trace to one
        fh = tempfile.NamedTemporaryFile("w", suffix=".jsonl", prefix="ladr-replay-", delete=False)
        fh.close()
        t.to_jsonl(fh.name)
        return t, Path(fh.name)

    @property
    def busy(self) -> bool:
        """Whether the Replay button's replay is running on its thread (`background`)."""
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the replay the button started on its thread; True once none runs."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.busy

    def stop(self) -> int:
        """Cancel the live call that runs now (the Stop button): the replayed run stops there, recorded as cancelled."""
        run = self._running
        return run.cancel() if run is not None else 0

    def _click(self) -> None:
        if not self.background:
            self.replay()
            return
        if self.busy:
            return
        self.replay_button.disabled = True

        def work() -> None:
            try:
                self.replay()
            except Exception as exc:      # noqa: BLE001 - a thread's error has no cell to show it: the view says it
                self.status.value = message_html(f"replay failed: {type(exc).__name__}: {exc}", "error")
            finally:
                self.replay_button.disabled = False

        self._thread = threading.Thread(target=work, name="ladr-replay", daemon=True)
        self._thread.start()

    def replay(self) -> Run | None:
        """Replay now (the Replay button); returns the replayed Run (None if it could not start)."""
        then = self._then_model if self._then_model is not None else (self.then.value.strip() or None)
        try:
            model = ReplayModel(self.path, then=then, base_dir=self.ladder.base_dir)
            model.check()  # a mistyped `then` or a missing API key: said at once, before any call
            run = Run(self.ladder, model=model, inputs=self.inputs, slates=self.slates, watch=self.live)
        except LadrError as exc:
            self.status.value = message_html(f"cannot replay: {type(exc).__name__}: {exc}", "error")
            return None
        # a live `then` model can take a while: show that the view is working until the run is back
        self.status.value = message_html("working… replaying" + (" (live model calls wait for answers)"
                                                                 if then is not None else ""), "info")
        self.replay_button.disabled = True
        self.live.clear()
        self._running = run
        try:
            res = run.run()
        finally:
            self._running = None
            self.replay_button.disabled = False
        self.run, self.divergence = run, res.divergence
        d = self.divergence
        if not run.done:                  # Stop: the live call was cancelled, the run waits where it was
            text = message_html(f"stopped: the live call was cancelled after {res.llm_calls} call(s) (the trace records "
                                "it as a cancelled llm_error); Replay starts again", "warning")
        elif d is None:
            text = concat(badge(res.status), f" replayed {res.llm_calls} call(s) from the recording: no divergence")
        else:
            where = f"step {d.get('step')} node {d.get('node')} round {d.get('round')}" + \
                (f" iteration {d['iteration']}" if d.get("iteration", 1) != 1 else "")
            live = f"; {res.live_calls} call(s) answered live" if res.live_calls else ""
            # the error message ends with the same diff shown below: keep only what it says before it
            error = res.error.split("; recorded → now:", 1)[0] if res.error and d.get("diff") else res.error
            text = concat(badge(res.status), " ", tag("b", f"diverged at {where}"), live,
                          tag("div", error, style="color: #cf222e") if error and not res.live_calls else None,
                          tag("div", note("recorded → now, in the " + str(d.get("role") or "") + " message:")),
                          pre(d.get("diff") or "", 8000))
        self.status.value = str(text)
        for view in (self.diff_view, self.trace_view):
            if view is not None:
                view.close()
        self.diff_view = DiffView(self.recorded, run.trace, names=("recorded", "replayed"))
        self.trace_view = TraceView(run)
        self.tabs.children = [self.diff_view.widget, self.trace_view.widget]
        self.tabs.set_title(0, "Diff")
        self.tabs.set_title(1, "Replayed run")
        return run

    def static_html(self) -> str:
        """The replay's outcome as a static view, for a notebook saved without widget state."""
        return self.status.value + (self.diff_view.static_html() if self.diff_view is not None else "")
