"""Trace events are named as what happened, never like exceptions; their wire names (SPEC §9) stay fixed."""
from __future__ import annotations

import ladr_lab.trace as trace
from ladr_lab.trace import EVENT_TYPES, Event, InternalFailure, LlmCallFailed

WIRE = {
    "run_start": "RunStart", "step_start": "StepStart", "llm_call": "LlmCall", "llm_error": "LlmCallFailed",
    "gate": "Gate", "write": "Write", "call": "Call", "step_end": "StepEnd", "run_end": "RunEnd",
    "internal_error": "InternalFailure",
}


def test_the_registry_maps_the_unchanged_wire_names_to_the_event_classes():
    assert {t: cls.__name__ for t, cls in EVENT_TYPES.items()} == WIRE
    assert list(EVENT_TYPES) == list(WIRE)          # the registry's order, too
    assert LlmCallFailed.TYPE == "llm_error" and InternalFailure.TYPE == "internal_error"


def test_no_event_class_is_named_like_an_exception():
    events = {cls for cls in EVENT_TYPES.values()}
    events |= {v for v in vars(trace).values() if isinstance(v, type) and issubclass(v, Event)}
    assert [c.__name__ for c in events if c.__name__.endswith("Error")] == []
    assert not hasattr(trace, "LlmError") and not hasattr(trace, "InternalError")   # no alias left behind


def test_a_renamed_event_reads_back_from_its_wire_name():
    failed = LlmCallFailed(step="s", node=1, round=1, messages=[], error="boom")
    back = Event.from_dict(failed.to_dict())
    assert type(back) is LlmCallFailed and back.to_dict()["type"] == "llm_error"
