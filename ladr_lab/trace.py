"""Typed trace events of a run: recorded in memory, streamed to JSONL, read back, turned into tables.

Event types (SPEC §9): `run_start`, `step_start`, `llm_call`, `llm_error` (a model call that failed),
`write`, `gate`, `call`, `step_end`, `run_end`.
Every event carries `type`, `seq` (0-based order in the run) and `t` (seconds since the run started).
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

EVENT_TYPES = ("run_start", "step_start", "llm_call", "llm_error", "write", "gate", "call", "step_end", "run_end")


class Trace:
    """An append-only list of events, optionally streamed to a JSONL file and to listeners."""

    def __init__(self, sink: str | Path | IO[str] | None = None,
                 listeners: Iterable[Callable[[dict], None]] = ()) -> None:
        self.events: list[dict] = []
        self._t0 = time.perf_counter()
        self._lock = threading.Lock()
        self._listeners = list(listeners)
        self._own_sink = False
        self._sink: IO[str] | None = None
        if isinstance(sink, (str, Path)):
            Path(sink).parent.mkdir(parents=True, exist_ok=True)
            self._sink = open(sink, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
            self._own_sink = True
        elif sink is not None:
            self._sink = sink

    def emit(self, event: dict) -> dict:
        """Record one event (adding seq and t), write it to the sink and tell the listeners."""
        with self._lock:
            event = {"type": event["type"], "seq": len(self.events),
                     "t": round(time.perf_counter() - self._t0, 6), **{k: v for k, v in event.items() if k != "type"}}
            self.events.append(event)
            if self._sink is not None:
                self._sink.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
                self._sink.flush()
        for fn in self._listeners:
            fn(event)
        return event

    def add_listener(self, fn: Callable[[dict], None]) -> None:
        """Call `fn(event)` for every event emitted from now on."""
        self._listeners.append(fn)

    def close(self) -> None:
        """Close the sink if this trace opened it."""
        if self._own_sink and self._sink is not None:
            self._sink.close()
            self._sink = None

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.events)

    def of_type(self, kind: str) -> list[dict]:
        """The events of one type, in order."""
        return [e for e in self.events if e.get("type") == kind]

    def calls(self, step: str | None = None, node: int | None = None) -> list[dict]:
        """The `llm_call` events, optionally of one step and node."""
        return [e for e in self.of_type("llm_call")
                if (step is None or e.get("step") == step) and (node is None or e.get("node") == node)]

    def writes(self) -> list[dict]:
        """The `write` events, in order."""
        return self.of_type("write")

    def to_jsonl(self, path: str | Path) -> None:
        """Write every event to `path`, one JSON object a line."""
        with open(path, "w", encoding="utf-8") as fh:
            for e in self.events:
                fh.write(json.dumps(e, ensure_ascii=False, default=str) + "\n")

    def to_dataframe(self, kind: str = "calls"):
        """A pandas DataFrame of `calls` (one row a model call), `fetches` (one row a retrieved entry),
        `writes`, `gates` or `events`."""
        import pandas as pd

        return pd.DataFrame(self.rows(kind))

    def rows(self, kind: str = "calls") -> list[dict]:
        """The rows `to_dataframe` tabulates, as plain dicts."""
        if kind == "calls":
            return [{"step": e["step"], "node": e["node"], "round": e["round"], "iteration": e.get("iteration", 1),
                     "depth": e.get("depth", 0), "request_match": e.get("request_match"),
                     "forced_final": e.get("forced_final"), "reason": e.get("reason"),
                     "fetched": len(e.get("fetched") or []), "prompt_chars": sum(len(m["content"]) for m in e["messages"]),
                     "output": e.get("output"), "tokens_in": e.get("tokens_in"), "tokens_out": e.get("tokens_out"),
                     "cost": e.get("cost"), "latency": e.get("latency")} for e in self.calls()]
        if kind == "fetches":
            return [{"step": e["step"], "node": e["node"], "round": e["round"], **f}
                    for e in self.calls() for f in (e.get("fetched") or [])]
        if kind == "writes":
            return [{k: v for k, v in e.items() if k not in ("seq", "t")} for e in self.writes()]
        if kind == "gates":
            return [{k: v for k, v in e.items() if k not in ("seq", "t")} for e in self.of_type("gate")]
        if kind == "events":
            return [{"seq": e["seq"], "type": e["type"], "step": e.get("step"), "node": e.get("node"),
                     "round": e.get("round"), "status": e.get("status")} for e in self.events]
        raise ValueError(f"unknown table {kind!r}; use calls, fetches, writes, gates or events")


def load_trace(path: str | Path) -> Trace:
    """Read a JSONL trace file back into a Trace (blank lines skipped)."""
    t = Trace()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                t.events.append(json.loads(line))
    return t

