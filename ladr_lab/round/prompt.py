"""Deterministic prompt assembly (SPEC §1): system = systemPrompt; user = fields, retrieved blocks, forced line.

The user message is `Name:\\n<value>` fields separated by blank lines, then one `<as> <k>:` block per
retrieval round whose entries are `--- <path> [<mode>] ---\\n<content>`, then, on a forced final call,
`FORCED_FINAL_LINE`. An `Entry` is one retrieved entry as the prompt shows it: its trace record
(`Fetched`) and its body. Each block's length is recorded as a `SectionSpan`, so `split_sections` can cut the
exact messages back into named parts; `grammar.py` reads the text back without the spans.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .records import Fetched, PromptSection, SectionSpan
from .vocabulary import STATUS_TEXT

__all__ = ["Entry", "FORCED_FINAL_LINE", "FORCED_SPAN", "SEPARATOR", "STATUS_TEXT", "assemble_blocks",
           "assemble_messages", "entry_text", "render_block", "render_entry", "render_field", "render_value", "split_sections",
           "status_text"]

FORCED_FINAL_LINE = "Retrieval budget exhausted. Produce your final answer now."
FORCED_SPAN = SectionSpan("forced", "forced final", len(FORCED_FINAL_LINE))
SEPARATOR = "\n\n"     # between two blocks of the user message, and between two entries of a block


@dataclass(frozen=True)
class Entry:
    """One retrieved entry: its trace record and the body the model is shown.

    `shown` is False for an entry past the round's bound: the trace records it (`left_out`) but the model
    sees it only counted in the round's closing summary entry, which has `recorded` False."""

    fetched: Fetched
    content: str | None = None
    shown: bool = True
    recorded: bool = True


def render_value(value: Any) -> str:
    """Strings verbatim; every other value as indented JSON (`json.dumps(value, indent=2)`)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def status_text(status: str, note: str | None = None) -> str:
    """The body of an entry without content: its status in words, with the note when there is one
    (`(not found: why)`)."""
    body = STATUS_TEXT.get(status, "")
    if note and body.endswith(")"):
        body = body[:-1] + f": {note})"
    return body


def entry_text(path: str, mode: str, body: str) -> str:
    """One entry as the model sees it: the header line naming path and mode, then the body."""
    return f"--- {path} [{mode}] ---\n{body}"


def render_entry(entry: Entry) -> str:
    """One retrieved entry under its header line naming path and mode; the path is shown as the model
    asked for it."""
    f = entry.fetched
    body = entry.content
    if body is None:
        body = status_text(f.status, f.note)
    return entry_text(f.asked or f.path, f.mode, body)


def render_block(as_: str, k: int, entries: Sequence[Entry]) -> str:
    """The `<as> <k>:` field holding one round's retrieved entries (those left out past the round's bound
    are counted in its last entry, not shown)."""
    shown = [e for e in entries if e.shown]
    body = SEPARATOR.join(render_entry(e) for e in shown) if shown else "(nothing retrieved)"
    return f"{as_} {k}:\n{body}"


def render_field(name: str, value: Any) -> str:
    """One field as it appears in the user message: `Name:` then its value."""
    return f"{name}:\n{render_value(value)}"


def assemble_blocks(system_prompt: str, blocks: list[str], forced_final: bool = False) -> list[dict]:
    """The exact messages from already rendered field and retrieved blocks (the engine renders each once)."""
    parts = list(blocks)
    if forced_final:
        parts.append(FORCED_FINAL_LINE)
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": SEPARATOR.join(parts)}]


def assemble_messages(system_prompt: str, fields: list[tuple[str, Any]], as_: str | None = None,
                      retrieved: Sequence[Sequence[Entry]] = (), forced_final: bool = False) -> list[dict]:
    """The exact messages of one model call (`retrieved`: each round's list of Entry)."""
    blocks = [render_field(name, value) for name, value in fields]
    blocks += [render_block(as_ or "Retrieved", k, entries) for k, entries in enumerate(retrieved, start=1)]
    return assemble_blocks(system_prompt, blocks, forced_final)


def split_sections(messages: list, sections: Iterable[SectionSpan | Sequence] | None) -> list[PromptSection]:
    """A prompt's messages cut into named parts by `sections` (the spans of the user message's blocks, joined
    by blank lines; a trace's `[kind, name, chars]` lists do too); without `sections`, the system prompt and
    the whole user message."""
    system = next((m.get("content") or "" for m in messages if isinstance(m, dict) and m.get("role") == "system"), "")
    user = next((m.get("content") or "" for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"),
                "")
    out = [PromptSection("system", "systemPrompt", system)]
    if not sections:
        return out + [PromptSection("user", "user", user)]
    pos = 0
    for span in sections:
        s = SectionSpan.of(span)
        out.append(PromptSection(s.kind, s.name, user[pos:pos + s.chars]))
        pos += s.chars + len(SEPARATOR)
    return out
