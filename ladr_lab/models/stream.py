"""TokenStream: one model call's text as it is generated, watched while it grows, and stopped on request.

The runtime hands a call's stream to the model in `CallInfo.stream` (as httpx hands a transport a `trace` callback
in `Request.extensions`): a model that can stream (`local`, litellm models, `OpenAICompatModel`, `ScriptedModel`
with `stream_delay`) writes each piece of text to it as it comes (`write`) and checks `cancelled` between pieces; a
model that cannot stream ignores it, and the runtime writes the whole answer at once when it returns (`whole` is then
True). Streaming
never changes what is recorded: the model still returns its `Completion`, the same text it would return unstreamed,
and the trace records that.

A stream exists only while someone watches (`Run(watch=...)`, the CLI printout on a terminal, the Stepper): a run
nobody watches calls its models as before. Watchers are objects with three methods (`CallWatcher`): `started` when
the call is sent, `wrote` for each piece, `ended` when the call has returned, failed or been cancelled; they are
called on the thread that makes the call, so they must be quick and thread-safe.

`cancel()` (what `Run.cancel()` and a Stop button do) sets a flag the model checks between pieces and runs the
model's cancel hooks (`on_cancel`: a socket shut down, so a read blocked on the network returns at once). The
model then raises `CallCancelled`; a model that never looks is stopped when it returns (its answer is dropped).
"""
from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import CallCancelled

if TYPE_CHECKING:
    from .base import CallInfo, Completion

__all__ = ["CallWatcher", "LiveDrawing", "TokenStream"]


@runtime_checkable
class CallWatcher(Protocol):
    """Something that follows model calls as they are made (a printout, a widget)."""

    def started(self, stream: TokenStream) -> None:
        """The call was sent: `stream.info` says which (step, node, round)."""
        ...

    def wrote(self, stream: TokenStream, text: str) -> None:
        """The model wrote `text` (the stream's `text` holds everything so far)."""
        ...

    def ended(self, stream: TokenStream) -> None:
        """The call returned (`stream.completion`), failed (`stream.error`) or was cancelled (`stream.cancelled`)."""
        ...


class LiveDrawing:
    """A CallWatcher that draws the calls in flight (the CLI's terminal region, the Stepper's panel): `_draw()`,
    under the lock, at most every `interval` seconds as text comes (not for a whole answer written at once when the
    model returned: the call ends next), when a call ends, and every `tick` seconds from a ticker thread while calls
    run, so the elapsed time moves on while a call reads its prompt. `_started` / `_ended` add to what a call's start
    and end do (under the lock; `_ended` after the call left `_active`, before the draw)."""

    interval = 0.1
    tick = 0.25
    ticker_name = "ladr-live"

    def __init__(self) -> None:
        self._active: list[TokenStream] = []
        self._lock = threading.RLock()
        self._last = 0.0
        self._ticker: threading.Thread | None = None

    def started(self, stream: TokenStream) -> None:
        """A call was sent: it gets its place; the ticker runs while calls do."""
        with self._lock:
            self._active.append(stream)
            self._started(stream)
            if self._ticker is None or not self._ticker.is_alive():
                self._ticker = threading.Thread(target=self._tick, name=self.ticker_name, daemon=True)
                self._ticker.start()

    def wrote(self, stream: TokenStream, text: str) -> None:
        """The call's text grew: redraw, at most every `interval` seconds."""
        if stream.whole or time.monotonic() - self._last < self.interval:
            return
        with self._lock:
            self._draw()

    def ended(self, stream: TokenStream) -> None:
        """The call ended: it leaves the calls in flight, and the drawing is redone."""
        with self._lock:
            if stream in self._active:
                self._active.remove(stream)
            self._ended(stream)
            self._draw()

    def _started(self, stream: TokenStream) -> None:
        """What a subclass adds to a call's start."""

    def _ended(self, stream: TokenStream) -> None:
        """What a subclass adds to a call's end."""

    def _draw(self) -> None:
        """Draw the calls in flight (a subclass's; it sets `self._last = time.monotonic()` when it draws)."""
        raise NotImplementedError

    def _tick(self) -> None:
        while True:
            time.sleep(self.tick)
            with self._lock:
                if not self._active:
                    return
                if time.monotonic() - self._last >= self.tick:
                    self._draw()


class TokenStream:
    """One call's text as it is generated: `text`, `pieces`, the times of its first and last piece, and `cancel()`."""

    def __init__(self, info: CallInfo | None = None, watchers: Iterable[CallWatcher] = (), *, model: str = "") -> None:
        self.info = info
        self.model = model
        self.watchers = list(watchers)
        self.started_at = time.perf_counter()
        self.first_at: float | None = None       # when the first piece of text came
        self.last_at: float | None = None
        self.ended_at: float | None = None
        self.pieces = 0                          # pieces written (a token each, for most models)
        self.whole = False                       # True: the runtime wrote the whole answer at once (no streaming)
        self.completion: Completion | None = None
        self.error: BaseException | None = None
        self._parts: list[str] = []
        self._cancel = threading.Event()
        self._hooks: list[Callable[[], Any]] = []
        self._lock = threading.Lock()

    # ---- what the model does -----------------------------------------------------------------------------
    def write(self, text: str) -> None:
        """Add `text` to the stream and tell the watchers (a watcher that fails is dropped, never the call)."""
        if not text:
            return
        now = time.perf_counter()
        with self._lock:
            if self.first_at is None:
                self.first_at = now
            self.last_at = now
            self.pieces += 1
            self._parts.append(text)
        self._tell("wrote", text)

    def check(self) -> None:
        """Raise CallCancelled when the call has been cancelled (a model calls it between pieces)."""
        if self._cancel.is_set():
            raise CallCancelled(self.stopped_message())

    def sleep(self, seconds: float) -> None:
        """Wait `seconds` (a model that paces its pieces), raising CallCancelled at once when the call is cancelled."""
        if self._cancel.wait(seconds):
            raise CallCancelled(self.stopped_message())

    def on_cancel(self, hook: Callable[[], Any]) -> Callable[[], None]:
        """Run `hook` when the call is cancelled (at once if it already is); returns a function that forgets it."""
        with self._lock:
            self._hooks.append(hook)
        if self._cancel.is_set():
            with contextlib.suppress(Exception):
                hook()

        def forget() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._hooks.remove(hook)
        return forget

    # ---- what the caller does ----------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop the call: the model sees `cancelled` at its next piece, and its cancel hooks run now."""
        if self._cancel.is_set():
            return
        self._cancel.set()
        with self._lock:
            hooks = list(self._hooks)
        for hook in hooks:
            with contextlib.suppress(Exception):     # a hook that fails must not keep the Stop from working
                hook()

    @property
    def cancelled(self) -> bool:
        """Whether `cancel()` was called."""
        return self._cancel.is_set()

    def stopped_message(self) -> str:
        """What a cancelled call says: where it stopped and how much it had written."""
        where = f"{self.info.label} round {self.info.round}" if self.info is not None else "the call"
        return f"{where} was stopped after {len(self.text):,} characters of output"

    # ---- reading it --------------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        """Everything written so far."""
        with self._lock:
            if len(self._parts) > 1:
                self._parts[:] = ["".join(self._parts)]
            return self._parts[0] if self._parts else ""

    @property
    def elapsed(self) -> float:
        """Seconds since the call was sent (until it ended, once it has)."""
        return (self.ended_at or time.perf_counter()) - self.started_at

    @property
    def ttft(self) -> float | None:
        """Seconds from the call's start to its first piece of text (None before it)."""
        return None if self.first_at is None else self.first_at - self.started_at

    @property
    def tokens_per_s(self) -> float | None:
        """Pieces written per second since the first one (a token each for most models); None until two came."""
        if self.first_at is None or self.last_at is None or self.pieces < 2 or self.last_at <= self.first_at:
            return None
        return (self.pieces - 1) / (self.last_at - self.first_at)

    # ---- the runtime's side ------------------------------------------------------------------------------
    def start(self) -> None:
        """Tell the watchers the call is sent (the runtime calls it)."""
        self.started_at = time.perf_counter()
        self._tell("started")

    def end(self, result: Completion | BaseException) -> None:
        """Record how the call ended and tell the watchers (the runtime calls it once)."""
        self.ended_at = time.perf_counter()
        if isinstance(result, BaseException):
            self.error = result
        else:
            self.completion = result
        self._tell("ended")

    def _tell(self, what: str, *args: Any) -> None:
        for w in list(self.watchers):
            fn = getattr(w, what, None)
            if fn is None:
                continue
            try:
                fn(self, *args)
            except Exception as exc:     # noqa: BLE001 - a broken display must not break the model call
                with contextlib.suppress(ValueError):
                    self.watchers.remove(w)
                warnings.warn(f"the call watcher {w!r} failed and was dropped: {type(exc).__name__}: {exc}",
                              RuntimeWarning, stacklevel=2)

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled else ("ended" if self.ended_at else "running")
        where = f" {self.info.label} round {self.info.round}" if self.info is not None else ""
        return f"<TokenStream{where}: {state}, {len(self.text):,} chars in {self.pieces} pieces>"
