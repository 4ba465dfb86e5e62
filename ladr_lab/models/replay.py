"""ReplayModel: answer every call with the output recorded in a trace, and stop (or go live) where the
run stops matching the recording.

`ReplayModel("run.jsonl")` reads the trace's `llm_call` events and keys each by (the `call` steps above,
step, node, loop iteration, occurrence): the n-th call the runtime makes for a step's node in an
iteration gets the n-th output recorded there, with its recorded tokens, cost and latency (so a replayed
run reports what the original cost) and provenance `recorded`.

Each incoming prompt is compared with the recorded one. At the first divergence (a changed prompt, a
retrieval that fetched something else, a call the recording does not have):

- plain replay raises `ReplayDivergence` (a ModelError): the run ends with status `error`, and the
  error shows what was recorded and what is sent now;
- mixed replay, `ReplayModel(path, then=MODEL)` (command line: `--model replay:PATH --then MODEL`;
  `get_model("replay:PATH", then=MODEL)`), answers that call and every later one with the live model instead.
  `then` is a Model; a model name (`then="offline"`) is turned into one by `resolve_model`, which
  `ladr_lab.models.registry` sets to its `get_model` (this module knows no model by name).

A ReplayModel is a `Recording` (`models/base.py`): it answers every step of the run, also a step that
declares its own `model:` (`answers_every_step`, read by the engine's `Executor.model_for`); `Run.result.live_calls` counts the calls answered by any other model.

`divergence` holds the first divergence as a dict `{step, node, round, iteration, occurrence,
message_index, role, diff}` (`diff` is a unified diff of the message text, recorded → now).
"""
from __future__ import annotations

import difflib
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ModelError
from ..trace import Event, LlmCall
from .base import (
    CallInfo,
    Completion,
    Model,
    _content_text,
    estimate_message_tokens,
    estimate_tokens,
)

__all__ = ["ReplayDivergence", "ReplayModel"]

_DIFF_LINES = 24

# How `then=NAME` (a model name, not a Model) becomes a Model: `resolve_model(name, base_dir=...)`.
# `ladr_lab.models.registry` sets it to `get_model` when it is imported (importing this module imports the
# `ladr_lab.models` package, hence the registry, first), so this module never imports the registry.
resolve_model: Callable[..., Model] | None = None


class ReplayDivergence(ModelError):
    """A replayed run stopped matching its recording; `divergence` says where and how."""

    def __init__(self, message: str, divergence: dict) -> None:
        super().__init__(message)
        self.divergence = divergence

    def __reduce__(self):
        # the default (cls, self.args) would call __init__ without the divergence
        return (type(self), (str(self), self.divergence), dict(self.__dict__))


def _key(caller, step, node, iteration) -> tuple:
    return (tuple(caller or ()), str(step), "1" if node is None else str(node), int(iteration or 1))


def _diff(old: str, new: str) -> str:
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), fromfile="recorded", tofile="now",
                                      lineterm="", n=1))
    if len(lines) > _DIFF_LINES:
        lines = lines[:_DIFF_LINES] + [f"... ({len(lines) - _DIFF_LINES} more diff lines)"]
    return "\n".join(lines)


class ReplayModel:
    """A model that replays the outputs of a recorded trace; `then` answers from the first divergence on."""

    answers_every_step = True     # a `Recording`: the recording holds every step's outputs

    def __init__(self, trace_path: str | Path, *, then: str | Model | None = None, max_concurrency: int = 8,
                 base_dir: str | Path | None = None) -> None:
        self.path = Path(trace_path)
        self.name = f"replay:{trace_path}"
        self.max_concurrency = max_concurrency
        self.divergence: dict | None = None
        self.divergences: list[dict] = []
        self.recorded_inputs: dict | None = None
        self.live_calls = 0
        self._lock = threading.Lock()
        self._recorded: dict[tuple, list[LlmCall]] = {}
        self._served: dict[tuple, int] = {}
        self._order: list[tuple[tuple, int, LlmCall]] = []      # every recorded call in file order
        self._live_from_now = False
        self.then: Model | None = None
        if isinstance(then, str):
            if resolve_model is None:
                raise ModelError(f"then={then!r}: a model name needs ladr_lab.models.get_model; pass a Model")
            then = resolve_model(then, base_dir=base_dir)
        elif then is not None and not callable(getattr(then, "complete", None)):
            raise ModelError(f"not a model name or Model: {then!r}")
        if then is not None:
            self.then = then
            self.name += f" then {getattr(self.then, 'name', '?')}"
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
            if not isinstance(data, dict):
                continue
            if data.get("type") == "run_start" and self.recorded_inputs is None and not data.get("depth"):
                self.recorded_inputs = dict(data.get("inputs") or {})
            if data.get("type") != "llm_call":
                continue
            event = Event.from_dict(data)
            assert isinstance(event, LlmCall)
            key = _key(event.caller, event.step, event.node, event.iteration)
            recorded = self._recorded.setdefault(key, [])
            self._order.append((key, len(recorded), event))
            recorded.append(event)

    @property
    def recorded_calls(self) -> int:
        """How many llm_call events the trace holds."""
        return sum(len(v) for v in self._recorded.values())

    @property
    def unserved(self) -> list[LlmCall]:
        """The recorded calls no call of the replayed run has asked for (yet), in recording order."""
        with self._lock:
            return [e for key, i, e in self._order if i >= self._served.get(key, 0)]

    def unserved_divergence(self) -> dict | None:
        """For a replay that has ended without diverging: the recorded calls it never asked for, as a
        divergence (`unserved`: how many; step, node, round and iteration of the first), or None."""
        if self.divergence is not None:
            return None
        left = self.unserved
        if not left:
            return None
        first = left[0]
        it = f" iteration {first.iteration}" if (first.iteration or 1) > 1 else ""
        return {"step": first.step, "node": first.node, "round": first.round, "iteration": first.iteration or 1,
                "occurrence": None, "message_index": None, "role": None, "unserved": len(left),
                "diff": f"{len(left)} recorded call(s) were not asked for by the replayed run; the first: "
                        f'step "{first.step}" node {first.node} round {first.round}{it}'}

    def complete(self, messages: list[dict], call: CallInfo | None = None) -> Completion:
        """The recorded output for this call; at a divergence, stop (or answer live with `then`)."""
        call = call or CallInfo()
        key = _key(call.caller, call.step, call.node, call.iteration)
        with self._lock:
            live = self._live_from_now
            if not live:
                index = self._served.get(key, 0)
                recorded = self._recorded.get(key, [])
                found: dict | None
                where: dict = {"step": call.step, "node": call.node, "round": call.round, "iteration": call.iteration,
                         "occurrence": index + 1}
                if index >= len(recorded):
                    it = f" iteration {call.iteration}" if call.iteration > 1 else ""
                    found = {**where, "message_index": None, "role": None,
                             "diff": f'no recorded call #{index + 1} for step "{call.step}" node {call.node}{it} '
                                     f"({len(recorded)} recorded in {self.path})"}
                else:
                    self._served[key] = index + 1
                    event = recorded[index]
                    found = self._compare(event.messages or [], messages)
                    if found is not None:
                        found = {**where, **found}
                if found is not None:
                    self.divergences.append(found)
                    if self.divergence is None:
                        self.divergence = found
                    if self.then is None:
                        raise ReplayDivergence(_describe(found), found)
                    self._live_from_now = live = True
        if live:
            assert self.then is not None
            with self._lock:
                self.live_calls += 1
            return self.then.complete(messages, call=call)
        output = event.output
        text = output if isinstance(output, str) else ("" if output is None else json.dumps(output))
        return Completion(
            text=text,
            tokens_in=int(event.tokens_in or estimate_message_tokens(messages)),
            tokens_out=int(event.tokens_out or estimate_tokens(text)),
            cost=float(event.cost or 0.0),
            latency=float(event.latency or 0.0),
            model=event.model or self.name,
            provenance="recorded",
            constrained=event.constrained,
            finish_reason=event.finish_reason,
            invocation_parameters=event.invocation_parameters,
        )

    @staticmethod
    def _compare(old: list[dict], new: list[dict]) -> dict | None:
        for i in range(max(len(old), len(new))):
            if i >= len(old) or i >= len(new):
                return {"message_index": i, "role": (new[i] if i < len(new) else old[i]).get("role"),
                        "diff": f"recorded {len(old)} messages, now {len(new)}"}
            a, b = old[i], new[i]
            a_text, b_text = _content_text(a.get("content")), _content_text(b.get("content"))
            if a.get("role") != b.get("role") or a_text != b_text:
                diff = _diff(a_text, b_text)
                if a.get("role") != b.get("role"):
                    diff = f"role: recorded {a.get('role')!r}, now {b.get('role')!r}\n" + diff
                return {"message_index": i, "role": b.get("role"), "diff": diff}
        return None

    def check(self) -> None:
        """Check the live model of a mixed replay before the run (a missing API key, an unknown name)."""
        check = getattr(self.then, "check", None)
        if callable(check):
            check()

    def close(self) -> None:
        """Close the live model of a mixed replay (the trace itself was read whole)."""
        if self.then is not None and callable(getattr(self.then, "close", None)):
            self.then.close()

    def __repr__(self) -> str:
        return f"ReplayModel({str(self.path)!r}, {self.recorded_calls} calls)"


def _describe(d: dict) -> str:
    it = f" (iteration {d['iteration']})" if d.get("iteration", 1) > 1 else ""
    head = f'replay diverged at step "{d["step"]}" node {d["node"]} round {d["round"]}{it}'
    if d.get("message_index") is None:
        return f"{head}: {d['diff']}"
    return f"{head}, in the {d['role']} message; recorded → now:\n{d['diff']}"


if TYPE_CHECKING:
    from .base import Recording

    def _is_a_recording(m: ReplayModel) -> Recording:
        return m      # mypy checks here that a ReplayModel keeps the Recording protocol
