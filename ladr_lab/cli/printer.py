"""The round-by-round printer of `ladr-lab run`: one trace listener writing to a stream."""
from __future__ import annotations

import textwrap

from ..trace import Call, Event, Gate, LlmCall, RunEnd, StepStart, Write


class RoundPrinter:
    """Prints a run round by round as its events arrive."""

    def __init__(self, stream, width: int = 100) -> None:
        self.out = stream
        self.width = width

    def _clip(self, text: str, n: int = 600) -> str:
        text = text.strip()
        return text if len(text) <= n else text[:n] + f" … [{len(text) - n} more chars]"

    def __call__(self, e: Event) -> None:
        w = self.out.write
        ind = "  " * e.depth
        if isinstance(e, StepStart):
            w(f"{ind}▶ step {e.step} ({e.step_type}, {e.nodes} node{'s' if e.nodes != 1 else ''}"
              + (f", iteration {e.iteration}" if e.iteration > 1 else "") + ")\n")
        elif isinstance(e, LlmCall):
            tag = "forced final" if e.forced_final else (e.request_match or "answer")
            w(f"{ind}  ── {e.step} · node {e.node} · round {e.round} → {tag}\n")
            w(textwrap.indent(self._clip(e.output or ""), ind + "     │ ") + "\n")
            if e.reason:
                w(f"{ind}     why: {e.reason}\n")
            for f in e.fetched or ():
                w(f"{ind}     {f.status:<19} {f.mode:<10} {f.path}"
                  + (f"  ({f.chars} chars)" if f.chars else "")
                  + (f"  (cut: {f.total_bytes:,} bytes)" if f.truncated else "")
                  + (f"  — {f.note}" if f.note else "") + "\n")
            if e.error:
                w(f"{ind}     error while handling this output: {e.error}\n")
        elif isinstance(e, Gate):
            w(f"{ind}  ◆ gate {e.step}#{e.node}: {e.condition} → {e.branch} ({e.action}"
              + (f" → {e.jump}" if e.jump else "") + f"); {e.reason}\n")
        elif isinstance(e, Write):
            w(f"{ind}  ✎ write {e.target} ({e.policy}, {e.mechanism}): {e.status}"
              + (f" — {e.reason}" if e.reason else "") + "\n")
        elif isinstance(e, Call):
            w(f"{ind}  ↳ call {e.step}#{e.node}: {e.status} (depth {e.child_depth})\n")
        elif isinstance(e, RunEnd) and not e.depth:
            w(f"■ {e.status} after {e.llm_calls} model call(s)" + (f": {e.error}" if e.error else "") + "\n")
        self.out.flush()
