"""The tables a trace turns into (rows of plain dicts; `Trace.to_dataframe` makes them DataFrames)."""
from __future__ import annotations

from collections.abc import Iterable

from .events import Event, Gate, LlmCall, Write

TABLES = ("calls", "fetches", "writes", "gates", "events")


def _calls(events: Iterable[Event]) -> list[dict]:
    return [{"step": e.step, "node": e.node, "round": e.round, "iteration": e.iteration, "depth": e.depth,
             "request_match": e.request_match, "forced_final": e.forced_final, "reason": e.reason,
             "fetched": len(e.fetched or ()), "prompt_chars": e.prompt_chars, "output": e.output,
             "tokens_in": e.tokens_in, "tokens_out": e.tokens_out, "cost": e.cost, "latency": e.latency}
            for e in events if isinstance(e, LlmCall)]


def _fetches(events: Iterable[Event]) -> list[dict]:
    return [{"step": e.step, "node": e.node, "round": e.round, **f.to_dict()}
            for e in events if isinstance(e, LlmCall) for f in (e.fetched or ())]


def _plain(e: Event) -> dict:
    return {k: v for k, v in e.to_dict().items() if k not in ("seq", "t")}


def rows(events: Iterable[Event], kind: str = "calls") -> list[dict]:
    """The rows of one table: calls, fetches, writes, gates or events."""
    if kind == "calls":
        return _calls(events)
    if kind == "fetches":
        return _fetches(events)
    if kind == "writes":
        return [_plain(e) for e in events if isinstance(e, Write)]
    if kind == "gates":
        return [_plain(e) for e in events if isinstance(e, Gate)]
    if kind == "events":
        return [{"seq": e.seq, "type": e.type, "step": e.get("step"), "node": e.get("node"),
                 "round": e.get("round"), "status": e.get("status")} for e in events]
    raise ValueError(f"unknown table {kind!r}; use " + ", ".join(TABLES))
