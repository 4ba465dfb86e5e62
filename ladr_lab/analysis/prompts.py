"""Prompts as named sections, compared: what changed between two calls, section by section (the system
prompt, each field, each retrieved block, the forced-final line), e.g. between two consecutive rounds.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from ..trace import LlmCall, Trace

_MAX_DIFF_LINES = 40


@dataclass(frozen=True)
class SectionDiff:
    """One prompt section compared: same | changed | added | removed, sizes, and a unified diff if changed."""

    kind: str
    name: str
    status: str
    a_chars: int
    b_chars: int
    diff: str = ""

    def to_dict(self) -> dict:
        """The comparison as JSON-ready data."""
        return {"kind": self.kind, "name": self.name, "status": self.status, "a_chars": self.a_chars,
                "b_chars": self.b_chars, "diff": self.diff}


def text_diff(a: str, b: str, a_name: str = "a", b_name: str = "b", max_lines: int = _MAX_DIFF_LINES) -> str:
    """A unified diff of two texts (one line of context), cut at `max_lines`."""
    lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), fromfile=a_name, tofile=b_name, lineterm="",
                                      n=1))
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more diff lines)"]
    return "\n".join(lines)


def diff_prompts(a: LlmCall, b: LlmCall, a_name: str = "a", b_name: str = "b") -> list[SectionDiff]:
    """Compare two calls' prompts section by section (matched by kind and name), in prompt order."""
    sa = {(s.kind, s.name): s.text for s in a.prompt_sections()}
    sb = {(s.kind, s.name): s.text for s in b.prompt_sections()}
    order = list(sa) + [k for k in sb if k not in sa]
    out = []
    for key in order:
        ta, tb = sa.get(key), sb.get(key)
        if ta is None:
            out.append(SectionDiff(key[0], key[1], "added", 0, len(tb or "")))
        elif tb is None:
            out.append(SectionDiff(key[0], key[1], "removed", len(ta), 0))
        elif ta == tb:
            out.append(SectionDiff(key[0], key[1], "same", len(ta), len(tb)))
        else:
            out.append(SectionDiff(key[0], key[1], "changed", len(ta), len(tb),
                                   text_diff(ta, tb, f"{a_name} {key[1]}", f"{b_name} {key[1]}")))
    return out


def round_diff(trace: Trace | str | Path, step: str, node: int = 1, round: int = 2, iteration: int = 1,
               caller: tuple[str, ...] = ()) -> list[SectionDiff]:
    """How the prompt of `round` differs from the round before it, for one node of one step."""
    if round < 2:
        raise ValueError("round 1 has no round before it; give round >= 2")
    t = Trace.of(trace)
    before = t.call(step, node, round - 1, iteration, caller)
    now = t.call(step, node, round, iteration, caller)
    return diff_prompts(before, now, f"round {round - 1}", f"round {round}")


def format_diffs(diffs: list[SectionDiff], *, show_same: bool = False) -> str:
    """The section comparison as text: one line per section, the diff of each changed one below it."""
    lines = []
    for d in diffs:
        if d.status == "same" and not show_same:
            continue
        size = {"added": f"+{d.b_chars}", "removed": f"-{d.a_chars}"}.get(d.status, f"{d.a_chars} → {d.b_chars}")
        lines.append(f"{d.status:<8} {d.kind:<9} {d.name}  ({size} chars)")
        if d.diff:
            lines.extend("    " + ln for ln in d.diff.splitlines())
    same = sum(d.status == "same" for d in diffs)
    if same and not show_same:
        lines.append(f"({same} section(s) unchanged)")
    return "\n".join(lines)


__all__ = ["SectionDiff", "diff_prompts", "format_diffs", "round_diff", "text_diff"]
