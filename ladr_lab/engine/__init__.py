"""The executor: prompt assembly, the retrieve loop, gates, writes, nodes, jumps and recursion."""
from .calls import CallRequest
from .judging import Verdict, judge
from .knowledge import KnowledgeSource
from .prompt import FORCED_FINAL_LINE, assemble_messages, render_value
from .retrieve import Entry, Limits, fetch
from .run import Run, RunResult, run_ladder

__all__ = [
    "CallRequest",
    "Entry",
    "FORCED_FINAL_LINE",
    "KnowledgeSource",
    "Limits",
    "Run",
    "RunResult",
    "Verdict",
    "assemble_messages",
    "fetch",
    "judge",
    "render_value",
    "run_ladder",
]
