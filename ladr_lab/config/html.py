"""Static views of ladder documents: a `Ladder` (its slates, steps, budget and warnings, the YAML source), and a
ladder's text with its problems shown at their lines (what the `%%ladder` cell magic displays)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..display import Html, badge, concat, details, join, json_text, kv_table, note, pre, root, table, tag

if TYPE_CHECKING:
    from ..errors import ConfigError
    from .model import Action, Ladder, Step

__all__ = ["ladder_html", "ladder_text", "problems_html", "source_html"]

_MONO = "font-family: SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace; font-size: 12px"


def _action(a: Action) -> str:
    bits = ([a.kind] if a.kind != "write" else []) + ([f"→ {a.jump}"] if a.jump else [])
    bits += [f"write {w.target.describe()} ({w.on})" for w in a.writes]
    return " ".join(bits)


def _step_rows(steps: Sequence[Step], depth: int = 0) -> list[list]:
    rows = []
    for s in steps:
        fields = ", ".join(f"{f.name}: {f.type}" for f in s.fields) or "-"
        r = s.retrieve
        retrieve = (f"{r.slate}/{r.folder} as {r.as_}, maxRounds {r.max_rounds}" if r else "-")
        gate = "-"
        if s.gate is not None:
            g = s.gate
            test = f"equals {g.equals!r}" if g.json_matches is None else "jsonMatches"
            gate = f"{test}: then {_action(g.then)}; else {_action(g.else_)}"
        write = f"{s.slate_write.target.describe()} ({s.slate_write.on})" if s.slate_write else "-"
        extra = []
        if s.system_prompt:
            extra.append(details("systemPrompt", pre(s.system_prompt, 4000)))
        if r is not None:
            extra.append(details("requestMatch", pre(json_text(r.request_match), 4000)))
        if s.call is not None:
            retrieve = f"call {s.call.ladder} (maxDepth {s.call.max_depth})"
        rows.append([concat(Html("&nbsp;" * 4 * depth), tag("b", s.id)), s.type, str(s.nodes), fields, retrieve,
                     gate, write, join(extra)])
        rows += _step_rows(s.steps, depth + 1)
    return rows


def source_html(text: str, marks: dict[int, list[tuple[int | None, str]]] | None = None, *, max_lines: int = 400
                ) -> Html:
    """A document's text with line numbers; each line in `marks` (line -> [(column, message)]) highlighted, a
    caret under each column and the message under the caret."""
    marks = marks or {}
    lines = text.splitlines() or [""]
    shown = lines[:max_lines]
    out = []
    width = len(str(len(shown)))
    for n, line in enumerate(shown, 1):
        style = "background: rgba(207,34,46,0.12)" if n in marks else None
        out.append(tag("div", tag("span", f"{n:>{width}}  ", style="color: #6e7781; user-select: none"), line or " ",
                       style=style))
        for col, msg in marks.get(n, []):
            out.append(tag("div", " " * (width + 2 + max(0, (col or 1) - 1)) + "^", style="color: #cf222e"))
            out.append(tag("div", " " * (width + 2) + msg, cls="ladr-problem",
                           style="color: #cf222e; white-space: pre-wrap"))
    if len(lines) > max_lines:
        out.append(note(f"… {len(lines) - max_lines} more lines"))
    return tag("div", join(out), style=f"{_MONO}; white-space: pre; overflow-x: auto; margin: 4px 0")


def problems_html(text: str, problems: Sequence[ConfigError], *, title: str = "Ladder") -> str:
    """A ladder's text with every problem shown under its line (problems without a line listed first)."""
    marks: dict[int, list[tuple[int | None, str]]] = {}
    loose = []
    for p in problems:
        msg = f"{p.severity}: {p}" + (f" [{p.rule}]" if p.rule else "")
        if p.line:
            marks.setdefault(p.line, []).append((p.column, msg))
        else:
            loose.append(msg)
    errors = sum(p.severity == "error" for p in problems)
    head = concat(badge("error" if errors else "warning"),
                  f" {errors} error(s), {len(problems) - errors} warning(s)")
    return root(head, join(tag("div", m, cls="ladr-problem", style="color: #cf222e") for m in loose),
                source_html(text, marks), cls="ladr-problems", title=title)


def ladder_html(ladder: Ladder) -> str:
    """A ladder: model, budget, knobs, slates and their folders, each step (fields, retrieve, gate, slateWrite,
    with its systemPrompt and requestMatch collapsible), warnings, and the YAML source."""
    b = ladder.budget
    pairs = [("file", ladder.file), ("model", ladder.model or "offline (default)"),
             ("budget", f"maxLlmCalls {b.max_llm_calls if b.max_llm_calls is not None else '∞'}, "
                        f"maxSteps {b.max_steps if b.max_steps is not None else '∞'}"),
             ("knobs", tag("code", json_text(ladder.knobs, None)) if ladder.knobs else None)]
    slates = table(["slate", "path", "folders"],
                   [[tag("b", s.title), s.path or note("(bind at run time)"),
                     join((concat(tag("code", f.name), note(" " + json_text(dict(f.metatags), None)) if f.metatags
                                  else None) for f in s.folders), Html("<br>"))]
                    for s in ladder.slates]) if ladder.slates else note("no slates")
    steps = table(["step", "type", "nodes", "fields", "retrieve", "if", "slateWrite", ""], _step_rows(ladder.steps),
                  cls="ladr-steps")
    warnings = [tag("div", badge("warning"), " ", p.format() if hasattr(p, "format") else str(p))
                for p in ladder.warnings if getattr(p, "severity", "warning") != "error"]
    src = details(concat("YAML source", note(f"  {len(ladder.text.splitlines())} lines")),
                  source_html(ladder.text)) if ladder.text else None
    return root(kv_table(pairs), tag("b", "slates"), slates, tag("b", "steps"), steps, join(warnings), src,
                cls="ladr-ladder", title=f"Ladder {ladder.name}")


def ladder_text(ladder: Ladder) -> str:
    """A ladder in a few lines: name, file, and one line per step."""
    lines = [repr(ladder)]
    for s in ladder.all_steps():
        bits = [s.type, f"{s.nodes} node{'s' if s.nodes != 1 else ''}"]
        if s.retrieve:
            bits.append(f"retrieve {s.retrieve.slate}/{s.retrieve.folder} (maxRounds {s.retrieve.max_rounds})")
        if s.gate:
            bits.append(f"if {s.gate.condition}")
        if s.slate_write:
            bits.append(f"slateWrite {s.slate_write.target.describe()}")
        lines.append(f"  {s.id}: " + ", ".join(bits))
    lines += [f"  warning: {p}" for p in ladder.warnings]
    return "\n".join(lines)
