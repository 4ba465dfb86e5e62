"""LivePanel: the model calls in flight, their text growing as the model writes it, their speed, and a Stop button
(the Stepper's and the ReplayView's part; a `CallWatcher`, models/stream.py).

Each call in flight shows where it is (step, node, round, model), how far it has got (reading the prompt, or tokens
written, tokens per second and seconds), and the text so far, scrolled to its end. A call shows once it writes (a
model that streams) or once it has run `SHOW_AFTER` seconds, so the instant answers of the offline model, a script or
a recording never flash by; the panel hides when the call ends, since the round then shows where it belongs. A
stopped call stays, marked stopped, with what it had written. The watchers are called on the thread that makes the
call: the panel sets its widgets' values from there (ipywidgets sends them from any thread), at most every
`INTERVAL` seconds, and a ticker thread keeps the elapsed time moving while a call is reading its prompt.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..display import Html, badge, concat, note, tag
from ..models import TokenStream
from ..models.stream import LiveDrawing
from .parts import html, ipw

__all__ = ["INTERVAL", "LivePanel", "SHOW_AFTER", "TAIL"]

INTERVAL = 0.15        # seconds between two redraws as text comes
SHOW_AFTER = 0.3       # a call that writes nothing shows after this long
TAIL = 12_000          # characters of a call's text the panel sends (the end of it)


class LivePanel(LiveDrawing):
    """The calls in flight as they write, and Stop (`on_stop` is called when it is clicked). A call shows once it
    writes or has run SHOW_AFTER seconds; a stopped one stays shown, marked."""

    interval = INTERVAL
    ticker_name = "ladr-live-panel"

    def __init__(self, on_stop: Callable[[], Any] | None = None) -> None:
        super().__init__()
        w = ipw()
        self.on_stop = on_stop
        self.view = html(cls="ladr-live-text")
        self.stop_button = w.Button(description="Stop", button_style="danger", icon="stop", disabled=True,
                                    tooltip="cancel the model call now: the run keeps it pending, Step sends it again")
        self.stop_button.add_class("ladr-stop")
        self.stop_button.on_click(lambda _b: self.stop())
        self.widget = w.VBox([self.view], layout=w.Layout(display="none"))
        self.widget.add_class("ladr-live")
        self._stopped: TokenStream | None = None

    # ---- CallWatcher --------------------------------------------------------------------------------------
    def _started(self, stream: TokenStream) -> None:
        self._stopped = None
        self.stop_button.disabled = False

    def _ended(self, stream: TokenStream) -> None:
        if stream.cancelled:
            self._stopped = stream
        if not self._active:
            self.stop_button.disabled = True

    # ---- Stop --------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """What the Stop button does: cancel every call in flight (through `on_stop`, the run's `cancel`)."""
        self.stop_button.disabled = True
        with self._lock:
            streams = list(self._active)
        if self.on_stop is not None:
            self.on_stop()
        else:
            for s in streams:
                s.cancel()
        with self._lock:
            self._draw()

    def clear(self) -> None:
        """Forget a stopped call and hide the panel (a new run)."""
        with self._lock:
            self._stopped = None
            self._draw()

    # ---- drawing -----------------------------------------------------------------------------------------
    @property
    def shown(self) -> list[TokenStream]:
        """The calls the panel shows now."""
        with self._lock:
            now = [s for s in self._active if (s.pieces and not s.whole) or s.elapsed >= SHOW_AFTER]
            return now + ([self._stopped] if self._stopped is not None and self._stopped not in now else [])

    def _draw(self) -> None:
        self._last = time.monotonic()
        shown = self.shown
        self.view.value = str(concat(*(_call_html(s) for s in shown))) if shown else ""
        self.widget.layout.display = None if shown else "none"


def _call_html(s: TokenStream) -> Html:
    """One call: its headline and its text so far (the end of it, scrolled into view)."""
    info = s.info
    where = " · ".join([*info.caller, info.step, f"node {info.node}", f"round {info.round}"]) if info else "call"
    if s.cancelled and s.ended_at is not None:
        state = badge("stopped", "#bc4c00")
        more = (f"after {s.elapsed:.1f} s, {len(s.text):,} characters written; the call is still pending: "
                "Step sends it again")
    elif s.cancelled:
        state, more = badge("stopping…", "#bc4c00"), f"{s.elapsed:.1f} s"
    elif s.first_at is None:
        state, more = badge("reading the prompt", "#0969da"), f"{s.elapsed:.1f} s"
    else:
        state = badge("writing", "#1a7f37")
        tps = s.tokens_per_s
        more = " · ".join([f"{s.pieces:,} token{'s' if s.pieces != 1 else ''}"]
                          + ([f"{tps:.1f} tok/s"] if tps else []) + [f"{s.elapsed:.1f} s"])
    text = s.text
    cut = len(text) > TAIL
    body = tag("pre", ("…" if cut else "") + text[-TAIL:] if text else "", cls="ladr-live-pre",
               style="margin: 0; white-space: pre-wrap; word-break: break-word; font-size: 12px")
    # column-reverse keeps the box scrolled to its end as the text grows, with no script
    box = tag("div", body, style="display: flex; flex-direction: column-reverse; max-height: 14em; overflow: auto; "
                                 "background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 4px; "
                                 "padding: 4px 6px; margin-top: 2px") if text else None
    return tag("div", tag("div", state, " ", tag("b", where), note((f" → {s.model}" if s.model else "") + " · " + more),
                          cls="ladr-live-head"),
               box, cls="ladr-live-call", style="margin: 4px 0; border-left: 3px solid #0969da; padding-left: 8px")
