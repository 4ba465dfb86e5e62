"""What a flipped verdict would have changed downstream, as far as it can be known without the model.

Knowable: a retrieval round that would now be final ends its step there (and the step's gate and
slateWrite would then judge *that* output, which is recorded, so their verdicts are computed too); a
final answer that would now be a request would fetch something (computed against the slate as it is
now, read-only, with the step's dedup rebuilt from the recorded rounds); a gate that would now take
the other branch does what that branch says (prune, abort, jump, continue, writes); a slateWrite that
would now match writes, one that would not is skipped. Not knowable: anything a new model call would
answer, and everything after it. Those are "unknown", never guessed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.model import Action, Ladder
from ..engine.retrieve import Limits, fetch
from ..round.verdict import judge_equals, judge_json

UNKNOWN = "unknown"


@dataclass
class Effect:
    """A flip's consequence: a kind (none | ends_step | new_request | prune | abort | jump | continue |
    write | skip_write | unknown), the same in words, and for a new request what it would fetch."""

    kind: str
    text: str
    fetch: list[dict] | None = None


def describe_action(action: Action | None, branch: str) -> tuple[str, str]:
    """(kind, words) for a gate branch's action."""
    if action is None:
        return UNKNOWN, f"would take {branch}, whose action is unknown (pass the edited ladder to know it)"
    words = {"continue": "continue", "abort": "abort: the run would end with status aborted",
             "prune": "prune: this node would not survive",
             "jump": f"jump to {action.jump}"}.get(action.kind, action.kind)
    if action.writes:
        targets = ", ".join(w.target.describe() for w in action.writes)
        words = (words + " and " if action.kind != "write" else "") + f"write to {targets}"
        if action.jump and action.kind == "write":
            words += f", then jump to {action.jump}"
    kind = "jump" if action.jump and action.kind != "abort" else action.kind
    return kind, f"would take {branch} → {words}"


def gate_outcome(gate, output: str) -> tuple[bool, str, str]:
    """(matched, branch, reason) of a gate (config model) on an output."""
    if gate.json_matches is not None:
        judgement, why, _ = judge_json(output, gate.json_matches, "jsonMatches")
    else:
        judgement, why = judge_equals(output, gate.equals or "")
    return judgement.matched, ("then" if judgement.matched else "else"), why


def after_final(ladder: Ladder | None, step_id: str, output: str) -> str:
    """What the step's gate and slateWrite would do with `output` as its final answer (edited ladder)."""
    step = ladder.step(step_id) if ladder is not None else None
    if step is None:
        return "its gate and writes would judge this output (unknown without the edited ladder)"
    parts = []
    survives = True
    if step.gate is not None:
        matched, branch, why = gate_outcome(step.gate, output)
        action = step.gate.then if matched else step.gate.else_
        kind, words = describe_action(action, branch)
        survives = kind not in ("prune", "abort")
        parts.append(f"the gate {words} ({why})")
    if step.slate_write is not None:
        if not survives:
            parts.append("slateWrite would not run (the node does not survive)")
        else:
            judgement, why, _ = judge_json(output, step.slate_write.match, "match")
            target = step.slate_write.target.describe()
            parts.append(f"slateWrite to {target} would be {'made' if judgement.matched else 'skipped'} ({why})")
    return "; ".join(parts) if parts else "the step has no gate or slateWrite"


@dataclass
class Fetcher:
    """Fetches a would-be request against the ladder's slates, read-only, binding them on first use."""

    ladder: Ladder | None
    slates: dict[str, str | Path] = field(default_factory=dict)
    _store: Any = None
    _failed: dict[str, str] = field(default_factory=dict)

    def folder(self, step_id: str):
        """The retrieve folder of a step, or (None, why not)."""
        ladder = self.ladder
        step = ladder.step(step_id) if ladder is not None else None
        if ladder is None or step is None or step.retrieve is None:
            return None, "the edited ladder is needed to know the step's retrieve folder"
        r = step.retrieve
        if r.slate in self._failed:
            return None, self._failed[r.slate]
        decl = ladder.slate(r.slate)
        where = self.slates.get(r.slate) or (ladder.base_dir / decl.path if decl and decl.path else None)
        if where is None or not Path(where).is_dir():
            why = f'slate "{r.slate}" is not bound to an existing folder (pass slates={{"{r.slate}": DIR}})'
            self._failed[r.slate] = why
            return None, why
        if self._store is None:
            from ..slate import SlateStore
            self._store = SlateStore()
        if r.slate in self._store:
            slate = self._store.slate(r.slate)
        else:
            slate = self._store.bind(r.slate, Path(where), list(decl.folders) if decl else None)
        return slate.folder(r.folder), None

    def fetch(self, step_id: str, request: dict, seen: set[str], top_k: int | None) -> tuple[list[dict] | None, str]:
        """The entries the request would fetch now (None when it cannot be known) and the words for it."""
        folder, why = self.folder(step_id)
        if folder is None:
            return None, f"what it would fetch is unknown: {why}"
        try:
            entries = fetch(folder, request, set(seen), top_k, Limits())
        except Exception as exc:  # a slate that cannot be read now: say so, do not guess
            return None, f"what it would fetch is unknown ({type(exc).__name__}: {exc})"
        rows = [{"path": e.fetched.path, "mode": e.fetched.mode, "status": e.fetched.status} for e in entries
                if e.recorded]
        shown = ", ".join(f"{r['path']} ({r['status']})" for r in rows[:8]) + (" …" if len(rows) > 8 else "")
        return rows, f"it would fetch, against the slate as it is now: {shown or 'nothing'}"


__all__ = ["UNKNOWN", "Effect", "Fetcher", "after_final", "describe_action", "gate_outcome"]
