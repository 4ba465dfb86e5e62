"""The round-by-round printer of `ladr-lab run`: one trace listener writing to a stream."""
from __future__ import annotations

import textwrap


class RoundPrinter:
    """Prints a run round by round as its events arrive."""

    def __init__(self, stream, width: int = 100) -> None:
        self.out = stream
        self.width = width

    def _clip(self, text: str, n: int = 600) -> str:
        text = text.strip()
        return text if len(text) <= n else text[:n] + f" … [{len(text) - n} more chars]"

    def __call__(self, e: dict) -> None:
        w = self.out.write
        ind = "  " * e.get("depth", 0)
        kind = e["type"]
        if kind == "step_start":
            w(f"{ind}▶ step {e['step']} ({e['step_type']}, {e['nodes']} node{'s' if e['nodes'] != 1 else ''}"
              + (f", iteration {e['iteration']}" if e.get("iteration", 1) > 1 else "") + ")\n")
        elif kind == "llm_call":
            tag = "forced final" if e.get("forced_final") else (e.get("request_match") or "answer")
            w(f"{ind}  ── {e['step']} · node {e['node']} · round {e['round']} → {tag}\n")
            w(textwrap.indent(self._clip(e.get("output", "")), ind + "     │ ") + "\n")
            if e.get("reason"):
                w(f"{ind}     why: {e['reason']}\n")
            for f in e.get("fetched") or []:
                w(f"{ind}     {f['status']:<19} {f['mode']:<10} {f['path']}"
                  + (f"  ({f['chars']} chars)" if f.get("chars") else "") + "\n")
        elif kind == "gate":
            w(f"{ind}  ◆ gate {e['step']}#{e['node']}: {e['condition']} → {e['branch']} ({e['action']}"
              + (f" → {e['jump']}" if e.get("jump") else "") + f"); {e['reason']}\n")
        elif kind == "write":
            w(f"{ind}  ✎ write {e['target']} ({e['policy']}, {e.get('mechanism')}): {e['status']}"
              + (f" — {e['reason']}" if e.get("reason") else "") + "\n")
        elif kind == "call":
            w(f"{ind}  ↳ call {e['step']}#{e['node']}: {e['status']} (depth {e.get('child_depth')})\n")
        elif kind == "run_end" and not e.get("depth"):
            w(f"■ {e['status']} after {e['llm_calls']} model call(s)"
              + (f": {e['error']}" if e.get("error") else "") + "\n")
        self.out.flush()
