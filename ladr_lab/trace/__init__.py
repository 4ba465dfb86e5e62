"""Typed trace events of a run: recorded in memory, streamed to JSONL, read back, turned into tables.

Event types (SPEC §9): `run_start`, `step_start`, `llm_call`, `llm_error` (a model call that failed),
`gate`, `write`, `call`, `step_end`, `run_end`, `internal_error`; each is one frozen class in
`events.py` with `to_dict()` / `Event.from_dict()`. Every recorded event carries `seq` (0-based order
in the run) and `t` (seconds since the run started). What each event says, for every view (the round
printer, the static HTML, the widgets), is decided in `story.py`, imported when first needed
(`from ladr_lab.trace.story import describe`); `outline.py` groups those stories by step, iteration and node.
"""
from .events import (
    EVENT_TYPES,
    Call,
    Event,
    Events,
    Fetched,
    Gate,
    InternalFailure,
    Judgement,
    LlmCall,
    LlmCallFailed,
    PromptSection,
    RunEnd,
    RunStart,
    StepEnd,
    StepStart,
    UnknownEvent,
    Write,
)
from .recording import ListenerFailure, ListenerWarning, Trace, is_being_written, load_trace
from .tables import TABLES

__all__ = [
    "Call",
    "EVENT_TYPES",
    "Event",
    "Events",
    "Fetched",
    "Gate",
    "InternalFailure",
    "Judgement",
    "ListenerFailure",
    "ListenerWarning",
    "LlmCall",
    "LlmCallFailed",
    "PromptSection",
    "RunEnd",
    "RunStart",
    "StepEnd",
    "StepStart",
    "TABLES",
    "Trace",
    "UnknownEvent",
    "Write",
    "is_being_written",
    "load_trace",
]
