"""The Trace: an append-only list of typed events, streamed to JSONL and to listeners, read back.

Listeners are views (the CLI's printer, the run-file writer, notebook widgets): a listener that
raises never fails the run it watches. Its exception is recorded in `Trace.listener_errors`, a
`ListenerWarning` is issued once per listener, and the run goes on. `with trace.listening(fn):`
attaches a listener for a block (as sqlite-utils' `Database.tracer()` does).
"""
from __future__ import annotations

import dataclasses
import json
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ..display import Displayable
from ..errors import TraceError
from .events import Event, LlmCall, RunEnd, Write
from .tables import TABLES, rows

Listener = Callable[[Event], Any]


class ListenerWarning(UserWarning):
    """A trace listener raised; the run went on without it seeing that event."""


@dataclasses.dataclass(frozen=True)
class ListenerFailure:
    """One exception a listener raised: which listener, on which event, and the exception."""

    listener: Listener
    event: Event
    exception: BaseException


class Trace(Displayable):
    """An append-only list of events, optionally streamed to a JSONL file and to listeners; displays in a
    notebook as its steps, rounds, gates and writes (`to_html`)."""

    def __init__(self, sink: str | Path | IO[str] | None = None, listeners: Iterable[Listener] = ()) -> None:
        self.events: list[Event] = []
        self.listener_errors: list[ListenerFailure] = []
        self.torn_line: int | None = None   # load_trace: the number of a last line cut mid-write (skipped)
        self._t0 = time.perf_counter()
        self._lock = threading.Lock()
        self._listeners: list[Listener] = list(listeners)
        self._warned: set[int] = set()
        self._own_sink = False
        self._sink: IO[str] | None = None
        if isinstance(sink, (str, Path)):
            Path(sink).parent.mkdir(parents=True, exist_ok=True)
            self._sink = open(sink, "w", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115 - closed by close(); a lone surrogate is written as its JSON escape
            self._own_sink = True
            _hold_writer_lock(self._sink)
        elif sink is not None:
            self._sink = sink

    @classmethod
    def of(cls, source: Trace | str | Path | Iterable[Any] | Any) -> Trace:
        """The Trace of a Trace, a Run (anything whose `.trace` is a Trace), a JSONL path, or events (typed, or
        dicts as in a JSONL file); events without a `seq` are numbered by their position.

        A Trace whose events all have a `seq` (any recorded or loaded one) is returned itself, so a view of a
        live run keeps listening to it; otherwise a copy is made, since analyses key on `seq`. A path that
        cannot be read raises TraceError (naming the file and line)."""
        if isinstance(source, Trace):
            return source._numbered()
        inner = getattr(source, "trace", None)      # a Run, duck-typed: trace never imports the engine
        if isinstance(inner, Trace):
            return inner._numbered()
        if isinstance(source, (str, Path)):
            return load_trace(source)._numbered()
        if isinstance(source, (bytes, Mapping)) or not isinstance(source, Iterable):
            raise TypeError("Trace.of takes a Trace, a Run, a JSONL path or events, "
                            f"not {type(source).__name__}")
        t = cls()
        for i, e in enumerate(source):
            t.events.append(e if isinstance(e, Event) else Event.from_dict(e, i))
        return t._numbered()

    def _numbered(self) -> Trace:
        """The trace itself, or (when some event lacks `seq`, as in a hand-written trace with only SPEC §9's
        fields) a copy whose events without one are numbered by their position."""
        if all(e.seq is not None for e in self.events):
            return self
        t = Trace()
        t.events.extend(e if e.seq is not None else dataclasses.replace(e, seq=i) for i, e in enumerate(self.events))
        t.torn_line = self.torn_line
        return t

    # ---- recording -------------------------------------------------------------------------------------
    def emit(self, event: Event) -> Event:
        """Record one event (setting seq and t), write it to the sink and tell the listeners."""
        if not isinstance(event, Event):
            raise TypeError(f"Trace.emit takes an Event, not {type(event).__name__}")
        with self._lock:
            event = dataclasses.replace(event, seq=len(self.events), t=round(time.perf_counter() - self._t0, 6))
            self.events.append(event)
            if self._sink is not None:
                self._sink.write(_line(event))
                self._sink.flush()
            listeners = list(self._listeners)
        for fn in listeners:
            try:
                fn(event)
            except Exception as exc:  # a broken view must never fail the run it displays
                self._listener_failed(fn, event, exc)
        return event

    def _listener_failed(self, fn: Listener, event: Event, exc: Exception) -> None:
        self.listener_errors.append(ListenerFailure(fn, event, exc))
        if id(fn) not in self._warned:
            self._warned.add(id(fn))
            warnings.warn(f"trace listener {getattr(fn, '__qualname__', fn)!r} raised on a {event.type} event "
                          f"({type(exc).__name__}: {exc}); the run goes on (see Trace.listener_errors)",
                          ListenerWarning, stacklevel=3)

    def add_listener(self, fn: Listener) -> Listener:
        """Call `fn(event)` for every event emitted from now on; returns `fn`."""
        with self._lock:
            self._listeners.append(fn)
        return fn

    def remove_listener(self, fn: Listener) -> None:
        """Stop calling `fn` (no error if it was not attached)."""
        with self._lock:
            if fn in self._listeners:
                self._listeners.remove(fn)

    @contextmanager
    def listening(self, fn: Listener) -> Iterator[Listener]:
        """Attach `fn` for the duration of a `with` block."""
        self.add_listener(fn)
        try:
            yield fn
        finally:
            self.remove_listener(fn)

    def close(self) -> None:
        """Close the sink if this trace opened it."""
        if self._own_sink and self._sink is not None:
            self._sink.close()
            self._sink = None

    # ---- reading ---------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __getitem__(self, i: int) -> Event:
        return self.events[i]

    def of_type(self, kind: str | type[Event]) -> list[Any]:
        """The events of one type (a type name or an event class), in order."""
        if isinstance(kind, type):
            return [e for e in self.events if isinstance(e, kind)]
        return [e for e in self.events if e.type == kind]

    def calls(self, step: str | None = None, node: int | None = None) -> list[LlmCall]:
        """The `llm_call` events, optionally of one step and node."""
        return [e for e in self.events if isinstance(e, LlmCall)
                and (step is None or e.step == step) and (node is None or e.node == node)]

    def call(self, step: str, node: int = 1, round: int = 1, iteration: int = 1,
             caller: tuple[str, ...] = ()) -> LlmCall:
        """The one model call of `step`'s `node` in `round` of loop `iteration` (KeyError if there is none)."""
        for e in self.events:
            if isinstance(e, LlmCall) and (e.step, e.node, e.round, e.iteration, e.caller) == \
                    (step, node, round, iteration, tuple(caller)):
                return e
        raise KeyError(f'no call of step "{step}" node {node} round {round} iteration {iteration}')

    def writes(self) -> list[Write]:
        """The `write` events, in order."""
        return [e for e in self.events if isinstance(e, Write)]

    def to_dicts(self) -> list[dict]:
        """Every event as its JSONL dict."""
        return [e.to_dict() for e in self.events]

    def to_jsonl(self, path: str | Path) -> None:
        """Write every event to `path`, one JSON object a line."""
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as fh:
            for e in self.events:
                fh.write(_line(e))

    def rows(self, kind: str = "calls") -> list[dict]:
        """The rows `to_dataframe` tabulates, as plain dicts (see `TABLES`)."""
        return rows(self.events, kind)

    def __repr__(self) -> str:
        calls = sum(1 for e in self.events if isinstance(e, LlmCall))
        end = next((e for e in reversed(self.events) if isinstance(e, RunEnd) and not e.depth), None)
        return (f"<Trace: {len(self.events)} events, {calls} model call{'s' if calls != 1 else ''}, "
                + (f"{end.status}>" if end is not None else "no run_end yet>"))

    def to_text(self) -> str:
        """The run round by round, as `ladr-lab show` prints it."""
        from .story import describe
        lines = []
        for e in self.events:
            story = describe(e)
            lines += ["  " * e.depth + ln for ln in (story.text_lines() or ([story.headline()]
                                                                             if e.type == "run_start" else []))]
        return "\n".join(lines) or repr(self)

    def to_html(self, max_chars: int | None = None) -> str:
        """The run as a static HTML view: header, prompt-size chart, each step's rounds, gates and writes
        collapsible (rounds past `max_chars` of HTML shown as one line each)."""
        from .html import TRACE_MAX_CHARS, trace_html
        return trace_html(self.events, max_chars=max_chars or TRACE_MAX_CHARS)

    def to_dataframe(self, kind: str = "calls"):
        """A pandas DataFrame of one of `TABLES`: `calls` (one row a model call), `fetches` (one row a
        retrieved entry), `writes`, `gates` or `events`."""
        import pandas as pd

        return pd.DataFrame(self.rows(kind))


def _line(event: Event) -> str:
    return json.dumps(event.to_dict(), ensure_ascii=False, default=str) + "\n"


def _hold_writer_lock(sink: IO[str]) -> None:
    """Hold an advisory lock on a trace file while it is written (until closed, or the process ends), so a reader
    can tell a run still going from one cut short (`is_being_written`). Where there is no `flock`, nothing."""
    try:
        import fcntl
        fcntl.flock(sink.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (ImportError, OSError):   # no fcntl (Windows), a file system without locks, or a second writer
        pass


def is_being_written(path: str | Path) -> bool:
    """True when a live run (this process or another) still holds the trace file open for writing: its missing
    `run_end` then means "not yet", not "cut short". False where locks cannot be told (no `flock`)."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        with open(path, "rb") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            except OSError:
                return False
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    except OSError:
        return False
    return False


def load_trace(path: str | Path) -> Trace:
    """Read a JSONL trace file back into a Trace of typed events (blank lines skipped); raises TraceError,
    naming the file and line, when it cannot be read or a line is not a JSON object. A last line cut mid-write
    (no newline, not JSON: the run was killed) is skipped and its number kept in `trace.torn_line`."""
    t = Trace()
    try:
        fh = open(path, encoding="utf-8")  # noqa: SIM115 - closed below; opening is what may fail here
    except OSError as exc:
        raise TraceError(f"cannot read trace {path}: {exc.strerror or exc}") from exc
    with fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as exc:
                    if not line.endswith("\n") and t.events:
                        # the last line, without its newline: a run killed while writing it; the events before it
                        # are whole (each is one write of one line), so they are kept and the torn one is said
                        t.torn_line = lineno
                        break
                    raise TraceError(f"trace {path}, line {lineno}: not a JSON line ({exc.msg}, column {exc.colno})"
                                     ) from exc
                if not isinstance(data, dict):
                    raise TraceError(f"trace {path}, line {lineno}: a trace line is a JSON object (an event), "
                                     f"not {type(data).__name__}")
                try:
                    t.events.append(Event.from_dict(data, len(t.events)))
                except (TypeError, ValueError) as exc:
                    raise TraceError(f"trace {path}, line {lineno}: not an event this version reads ({exc})") from exc
        except UnicodeDecodeError as exc:
            raise TraceError(f"trace {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    return t


__all__ = ["TABLES", "ListenerFailure", "ListenerWarning", "Trace", "is_being_written", "load_trace"]
