"""Ladder documents: loading, validation and the frozen models the engine runs."""
from .loader import check_text, iter_problems, load_ladder, load_ladder_text
from .model import (
    Action,
    Budget,
    CallSpec,
    FieldSpec,
    Gate,
    GateSpec,
    Ladder,
    Retrieve,
    SlateDecl,
    SlateWrite,
    Source,
    Step,
    Target,
    WriteSpec,
)
from .rules import suggest
from .standalone import iter_schema_problems
from .watched import WatchedLadder, watch

__all__ = [
    "Action",
    "Budget",
    "CallSpec",
    "FieldSpec",
    "Gate",
    "GateSpec",
    "Ladder",
    "Retrieve",
    "SlateDecl",
    "SlateWrite",
    "Source",
    "Step",
    "Target",
    "WatchedLadder",
    "WriteSpec",
    "check_text",
    "iter_problems",
    "iter_schema_problems",
    "load_ladder",
    "load_ladder_text",
    "suggest",
    "watch",
]
