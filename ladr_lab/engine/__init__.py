"""The executor: the retrieve loop, gates, writes, nodes, jumps and recursion."""
from .calls import CallRequest
from .knowledge import KnowledgeSource
from .retrieve import Entry, Limits, fetch
from .run import Run, RunResult, run_ladder

__all__ = [
    "CallRequest",
    "Entry",
    "KnowledgeSource",
    "Limits",
    "Run",
    "RunResult",
    "fetch",
    "run_ladder",
]
