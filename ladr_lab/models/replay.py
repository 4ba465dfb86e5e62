"""ReplayModel: answer every call with the output recorded in a trace, and say where prompts changed.

`ReplayModel("run.jsonl")` reads the trace's `llm_call` events (other events are ignored) and keys
each by (callers, step, node, loop iteration, occurrence): the n-th call the runtime makes for a
step's node in an iteration (of a child run, when `call` steps are above it) gets the n-th output
recorded there. Each incoming message list is compared with the recorded
one; every mismatch is appended to `divergences` and the first is kept in `divergence`, as a dict
`{step, node, round, occurrence, message_index, role, diff}` where `diff` is a short unified diff of
the message text (recorded → now). A call with no recording fails with ModelError naming the step,
node and how many calls were recorded for it.
"""
from __future__ import annotations

import difflib
import json
import threading
from pathlib import Path

from ladr_lab.errors import ModelError
from ladr_lab.models.base import CallInfo, Completion, _content_text, estimate_message_tokens, estimate_tokens
from ladr_lab.trace import Event, LlmCall

__all__ = ["ReplayModel"]

_DIFF_LINES = 24


def _key(caller, step, node, iteration) -> tuple:
    return (tuple(caller or ()), str(step), "1" if node is None else str(node), int(iteration or 1))


def _diff(old: str, new: str) -> str:
    lines = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), fromfile="recorded", tofile="now", lineterm="", n=1
        )
    )
    if len(lines) > _DIFF_LINES:
        lines = lines[:_DIFF_LINES] + [f"... ({len(lines) - _DIFF_LINES} more diff lines)"]
    return "\n".join(lines)


class ReplayModel:
    """A model that replays the outputs of a recorded trace and records prompt divergences."""

    def __init__(self, trace_path: str | Path, *, max_concurrency: int = 8) -> None:
        self.path = Path(trace_path)
        self.name = f"replay:{trace_path}"
        self.max_concurrency = max_concurrency
        self.divergence: dict | None = None
        self.divergences: list[dict] = []
        self._lock = threading.Lock()
        self._recorded: dict[tuple, list[LlmCall]] = {}
        self._served: dict[tuple, int] = {}
        self._load()

    def _load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ModelError(f"replay trace {self.path}: cannot read it ({exc.strerror or exc})") from exc
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ModelError(f"replay trace {self.path}:{lineno}: not a JSON line ({exc.msg})") from exc
            if not isinstance(data, dict) or data.get("type") != "llm_call":
                continue
            event = Event.from_dict(data)
            assert isinstance(event, LlmCall)
            key = _key(event.caller, event.step, event.node, event.iteration)
            self._recorded.setdefault(key, []).append(event)

    @property
    def recorded_calls(self) -> int:
        """How many llm_call events the trace holds."""
        return sum(len(v) for v in self._recorded.values())

    def complete(self, messages: list[dict], call: CallInfo | None = None) -> Completion:
        """Return the recorded output for this step/node's next call, noting any prompt divergence."""
        call = call or CallInfo()
        key = _key(call.caller, call.step, call.node, call.iteration)
        with self._lock:
            index = self._served.get(key, 0)
            recorded = self._recorded.get(key, [])
            if index >= len(recorded):
                where = f" iteration {call.iteration}" if call.iteration > 1 else ""
                raise ModelError(
                    f'replay: no recorded call #{index + 1} for step "{call.step}" node {call.node}{where} '
                    f"({len(recorded)} recorded in {self.path})"
                )
            self._served[key] = index + 1
            event = recorded[index]
            found = self._compare(event.messages or [], messages)
            if found is not None:
                found = {"step": call.step, "node": call.node, "round": call.round, "occurrence": index + 1, **found}
                self.divergences.append(found)
                if self.divergence is None:
                    self.divergence = found
        output = event.output
        text = output if isinstance(output, str) else ("" if output is None else json.dumps(output))
        return Completion(
            text=text,
            tokens_in=int(event.tokens_in or estimate_message_tokens(messages)),
            tokens_out=int(event.tokens_out or estimate_tokens(text)),
            model=self.name,
        )

    @staticmethod
    def _compare(old: list[dict], new: list[dict]) -> dict | None:
        for i in range(max(len(old), len(new))):
            if i >= len(old) or i >= len(new):
                return {
                    "message_index": i,
                    "role": (new[i] if i < len(new) else old[i]).get("role"),
                    "diff": f"recorded {len(old)} messages, now {len(new)}",
                }
            a, b = old[i], new[i]
            a_text, b_text = _content_text(a.get("content")), _content_text(b.get("content"))
            if a.get("role") != b.get("role") or a_text != b_text:
                diff = _diff(a_text, b_text)
                if a.get("role") != b.get("role"):
                    diff = f"role: recorded {a.get('role')!r}, now {b.get('role')!r}\n" + diff
                return {"message_index": i, "role": b.get("role"), "diff": diff}
        return None

    def close(self) -> None:
        """Nothing to release (the trace was read whole)."""

    def __repr__(self) -> str:
        return f"ReplayModel({str(self.path)!r}, {self.recorded_calls} calls)"
