"""Deterministic prompt assembly (SPEC §1): system = systemPrompt; user = fields, retrieved blocks, forced line."""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

FORCED_FINAL_LINE = "Retrieval budget exhausted. Produce your final answer now."
STATUS_TEXT = {"not_found": "(not found)", "already_in_context": "(already in context)", "no_match": "(no match)",
               "left_out": "(left out)"}


def render_value(value: Any) -> str:
    """Strings verbatim; every other value as indented JSON (`json.dumps(value, indent=2)`)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def render_entry(entry) -> str:
    """One retrieved entry (an `engine.retrieve.Entry`) under its header line naming path and mode; the
    path is shown as the model asked for it."""
    f = entry.fetched
    body = entry.content
    if body is None:
        body = STATUS_TEXT.get(f.status, "")
        if f.note and body.endswith(")"):
            body = body[:-1] + f": {f.note})"
    return f"--- {f.asked or f.path} [{f.mode}] ---\n{body}"


def render_block(as_: str, k: int, entries: list) -> str:
    """The `<as> <k>:` field holding one round's retrieved entries (those left out past the round's bound
    are counted in its last entry, not shown)."""
    shown = [e for e in entries if getattr(e, "shown", True)]
    body = "\n\n".join(render_entry(e) for e in shown) if shown else "(nothing retrieved)"
    return f"{as_} {k}:\n{body}"


def render_field(name: str, value: Any) -> str:
    """One field as it appears in the user message: `Name:` then its value."""
    return f"{name}:\n{render_value(value)}"


def assemble_blocks(system_prompt: str, blocks: list[str], forced_final: bool = False) -> list[dict]:
    """The exact messages from already rendered field and retrieved blocks (the engine renders each once)."""
    parts = list(blocks)
    if forced_final:
        parts.append(FORCED_FINAL_LINE)
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": "\n\n".join(parts)}]


def assemble_messages(system_prompt: str, fields: list[tuple[str, Any]], as_: str | None = None,
                      retrieved: Sequence[list] = (), forced_final: bool = False) -> list[dict]:
    """The exact messages of one model call (`retrieved`: each round's list of Entry)."""
    blocks = [render_field(name, value) for name, value in fields]
    blocks += [render_block(as_ or "Retrieved", k, entries) for k, entries in enumerate(retrieved, start=1)]
    return assemble_blocks(system_prompt, blocks, forced_final)
