"""IPython magics: `%load_ext ladr_lab`, then a cell that starts with `%%ladder NAME` holds a ladder's YAML.

    %%ladder research [--knob K=V]...
    name: research
    slates: ...

The cell's text is parsed and validated; every problem is shown at its line (the text with line numbers, the
message under the line), and, when there is no error, the Ladder is bound to NAME in the notebook's
namespace (relative slate paths are relative to the notebook's working directory) and shown. A cell with
errors binds nothing and leaves an earlier NAME alone. IPython is needed only to register the magic:
`ladder_cell()` does the work and is what the tests call.
"""
from __future__ import annotations

import os
import shlex
from typing import Any

from .config import check_text
from .config.html import ladder_html, problems_html
from .config.model import Ladder
from .display import Displayable
from .errors import ConfigError

__all__ = ["LadderCell", "ladder_cell", "load_ipython_extension"]


class LadderCell(Displayable):
    """What a `%%ladder` cell shows: its problems at their lines, and the ladder when it was bound."""

    def __init__(self, name: str, text: str, ladder: Ladder | None, problems: list[ConfigError]) -> None:
        self.name, self.text, self.ladder, self.problems = name, text, ladder, problems

    @property
    def ok(self) -> bool:
        """True when the cell had no error (and NAME was bound)."""
        return self.ladder is not None

    def __repr__(self) -> str:
        errors = sum(p.severity == "error" for p in self.problems)
        if self.ladder is None:
            return f"<%%ladder {self.name}: {errors} error(s); nothing bound>"
        return f"<%%ladder {self.name}: bound {self.ladder!r}" + (f", {len(self.problems)} warning(s)>"
                                                                  if self.problems else ">")

    def to_text(self) -> str:
        """The problems as `ladr-lab validate` prints them (lines are the cell's), then the ladder."""
        lines = [repr(self)] + [p.format() for p in self.problems]
        if self.ladder is not None:
            lines.append(self.ladder.to_text())
        return "\n".join(lines)

    def to_html(self) -> str:
        """The cell's text with its problems at their lines, and the ladder when it was bound."""
        parts = []
        if self.problems:
            title = f"%%ladder {self.name}: " + ("not bound" if self.ladder is None else "bound, with warnings")
            parts.append(problems_html(self.text, self.problems, title=title))
        if self.ladder is not None:
            parts.append(ladder_html(self.ladder))
        return "".join(parts)


def _parse_line(line: str) -> tuple[str, dict]:
    args = shlex.split(line or "")
    if not args or args[0].startswith("-"):
        raise ConfigError("usage: %%ladder NAME [--knob K=V]...: name the variable to bind the ladder to",
                          rule="magic-usage")
    name, knobs = args[0], {}
    if not name.isidentifier():
        raise ConfigError(f"%%ladder: {name!r} is not a Python name", rule="magic-usage")
    rest = args[1:]
    while rest:
        flag = rest.pop(0)
        value = None
        if flag.startswith("--knob="):
            value = flag.split("=", 1)[1]
        elif flag == "--knob" and rest:
            value = rest.pop(0)
        if value is None or "=" not in value:
            raise ConfigError(f"%%ladder: expected --knob K=V, got {flag!r}", rule="magic-usage")
        import yaml
        k, v = value.split("=", 1)
        knobs[k] = yaml.safe_load(v)
    return name, knobs


def ladder_cell(line: str, cell: str, namespace: dict[str, Any] | None = None, *,
                base_dir: str | os.PathLike | None = None) -> LadderCell:
    """The `%%ladder NAME` magic: validate the cell's YAML, bind the Ladder to NAME in `namespace` when it has no
    error, and return what the cell shows."""
    try:
        name, knobs = _parse_line(line)
    except ConfigError as exc:
        return LadderCell((line or "").strip() or "?", cell, None, [exc])
    ladder, problems = check_text(cell, knobs=knobs or None, base_dir=base_dir if base_dir is not None else os.getcwd())
    if ladder is not None and namespace is not None:
        namespace[name] = ladder
    return LadderCell(name, cell, ladder, problems)


def load_ipython_extension(ipython: Any) -> None:
    """Register `%%ladder` (called by `%load_ext ladr_lab`)."""
    def ladder(line: str, cell: str) -> LadderCell:
        return ladder_cell(line, cell, ipython.user_ns)

    ladder.__doc__ = ladder_cell.__doc__
    ipython.register_magic_function(ladder, magic_kind="cell", magic_name="ladder")
