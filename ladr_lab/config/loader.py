"""Ladder document → frozen models, with every problem reported at once.

The pipeline, one module per step: `reader` turns text into values and positions (refusing hostile
YAML), `knobs` substitutes `{{knobs.NAME}}`, the `walker` runs every rule (`shape`, `steps`, `writes`,
`schemas`, `references`) over every construct, and `builder` makes the models once nothing is wrong.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ..errors import ConfigError, ConfigErrors
from .builder import build_budget, build_steps
from .knobs import declared_knobs, substitute_knobs
from .model import Ladder
from .reader import load_yaml
from .rules import Site, problem, typename
from .walker import Registry, iter_errors, locate, new_doc

PathLike = str | os.PathLike


def _severity_order(problems: list[ConfigError]) -> list[ConfigError]:
    errors = sorted((p for p in problems if p.severity == "error"), key=lambda e: (e.line or 0, e.column or 0))
    return errors + [p for p in problems if p.severity != "error"]


def _build(text: str, *, file: PathLike | None, knobs: dict | None, base_dir: PathLike | None,
           registry: Registry | None = None) -> tuple[Ladder | None, list[ConfigError]]:
    """Parse, check and (when no error) build; (the Ladder or None, every problem: errors then warnings)."""
    file = None if file is None else os.fspath(file)
    raw, pos = load_yaml(text, file)
    if not isinstance(raw, dict):
        err = problem(f"a ladder must be a YAML mapping with name, slates and steps (got {typename(raw)})",
                      rule="ladder-type")
        err.file, lc = file, pos.of(())
        if lc:
            err.line, err.column = lc
        return None, [err]
    merged = {**declared_knobs(raw), **(knobs or {})}
    found: list[ConfigError] = []
    data = substitute_knobs(raw, merged, found)
    doc = new_doc(data, file, pos, dict(knobs or {}), base_dir)
    root = Site("ladder", data, (), doc)
    problems = [locate(e, root) for e in found] + list(iter_errors(doc, registry))
    problems = _severity_order(problems)
    if any(p.severity == "error" for p in problems):
        return None, problems
    ladder = Ladder(name=data["name"], steps=build_steps(data["steps"], ("steps",)),
                    slates=tuple(doc.slates[s["title"]] for s in data.get("slates") or ()
                                 if doc.slates.get(s["title"]) is not None),
                    model=data.get("model"), knobs=merged, budget=build_budget(data), file=file,
                    base_dir=Path(base_dir) if base_dir is not None else Path("."), text=text, raw=raw,
                    warnings=tuple(problems), positions=pos)
    return ladder, problems


def check_text(text: str, *, file: PathLike | None = None, knobs: dict | None = None,
               base_dir: PathLike | None = None, registry: Registry | None = None
               ) -> tuple[Ladder | None, list[ConfigError]]:
    """Parse once: the Ladder (None when it has errors) and every problem, errors and warnings.

    `registry` replaces the rules run (default: every rule in `rules.RULES`), e.g. to add a lint's own.
    """
    try:
        return _build(text, file=file, knobs=knobs, base_dir=base_dir, registry=registry)
    except ConfigErrors as many:
        return None, list(many.errors)
    except ConfigError as one:
        return None, [one]


def iter_problems(text: str, *, file: PathLike | None = None, knobs: dict | None = None,
                  base_dir: PathLike | None = None, registry: Registry | None = None) -> Iterator[ConfigError]:
    """Yield every problem (errors and warnings) in a ladder document's text."""
    yield from check_text(text, file=file, knobs=knobs, base_dir=base_dir, registry=registry)[1]


def load_ladder_text(text: str, *, file: PathLike | None = None, knobs: dict | None = None,
                     base_dir: PathLike | None = None) -> Ladder:
    """Parse and validate ladder text; raise ConfigErrors listing every problem, or return the Ladder."""
    ladder, problems = _build(text, file=file, knobs=knobs, base_dir=base_dir)
    if ladder is None:
        raise ConfigErrors([p for p in problems if p.severity == "error"] or problems)
    return ladder


MAX_LADDER_BYTES = 16 * 1024 * 1024    # a ladder is a page of YAML; 16 MB is far past any real one


def read_ladder_file(path: PathLike) -> str:
    """The text of a ladder file; anything but a regular file of at most 16 MB of UTF-8 text is a ConfigError
    (rule `unreadable-file`) naming the file."""
    name = os.fspath(path)

    def refuse(why: str) -> ConfigError:
        return ConfigError(f"cannot read ladder file: {why}", file=name, rule="unreadable-file")

    try:
        # non-blocking, so opening a FIFO does not wait for a writer; the type is checked on the open file
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise refuse(exc.strerror or str(exc)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else \
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else \
                "not a regular file"
            raise refuse(f"it is {kind}, not a regular file")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(MAX_LADDER_BYTES + 1)
    except OSError as exc:
        raise refuse(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    if len(data) > MAX_LADDER_BYTES:
        raise refuse(f"it is larger than {MAX_LADDER_BYTES // (1024 * 1024)} MB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refuse(f"it is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})") from None


def load_ladder(path: PathLike, *, knobs: dict | None = None) -> Ladder:
    """Load and validate a ladder file; raise ConfigErrors listing every problem."""
    text = read_ladder_file(path)
    return load_ladder_text(text, file=os.fspath(path), knobs=knobs, base_dir=Path(path).resolve().parent)

__all__ = ["MAX_LADDER_BYTES", "check_text", "iter_problems", "load_ladder", "load_ladder_text", "read_ladder_file"]
