"""The executor: prompt assembly, the retrieve loop, gates, writes, nodes, jumps and recursion."""
from .prompt import FORCED_FINAL_LINE, assemble_messages, render_value
from .retrieve import Verdict, fetch, judge
from .run import CallRequest, Run, RunResult, run_ladder

__all__ = [
    "CallRequest",
    "FORCED_FINAL_LINE",
    "Run",
    "RunResult",
    "Verdict",
    "assemble_messages",
    "fetch",
    "judge",
    "render_value",
    "run_ladder",
]
