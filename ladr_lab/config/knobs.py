"""Knobs: `{{knobs.NAME}}` substituted in every string value before the rules run."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..errors import ConfigError
from .rules import Site, problem, rule, suggest

KNOB_RE = re.compile(r"\{\{\s*knobs\.([A-Za-z_][A-Za-z0-9_\-]*)\s*\}\}")


def declared_knobs(raw: dict) -> dict:
    """The `knobs:` mapping of a document (empty when it is missing or not a mapping)."""
    knobs = raw.get("knobs")
    return knobs if isinstance(knobs, dict) else {}


def substitute_knobs(data: Any, knobs: dict, errors: list[ConfigError], path: tuple = ()) -> Any:
    """Replace `{{knobs.NAME}}` in every string; a string that is only a template keeps the knob's type.

    Unknown knobs are appended to `errors` (rule `unknown-knob`, path set, position left to the caller).
    """
    if isinstance(data, dict):
        return {k: (v if k == "knobs" and not path else substitute_knobs(v, knobs, errors, path + (k,)))
                for k, v in data.items()}
    if isinstance(data, list):
        return [substitute_knobs(v, knobs, errors, path + (i,)) for i, v in enumerate(data)]
    if isinstance(data, str) and "{{" in data:
        whole = KNOB_RE.fullmatch(data.strip())
        if whole:
            name = whole.group(1)
            if name in knobs:
                return knobs[name]
            errors.append(problem(f'unknown knob "{name}"', at=path, rule="unknown-knob",
                                  suggestion=suggest(name, knobs)))
            return data

        def rep(m: re.Match) -> str:
            if m.group(1) in knobs:
                return str(knobs[m.group(1)])
            errors.append(problem(f'unknown knob "{m.group(1)}"', at=path, rule="unknown-knob",
                                  suggestion=suggest(m.group(1), knobs)))
            return m.group(0)
        return KNOB_RE.sub(rep, data)
    return data


@rule("ladder", "wrong-type")
def _knobs_mapping(site: Site) -> Iterator[ConfigError]:
    if not isinstance(site.raw.get("knobs") or {}, dict):
        yield problem("knobs must be a mapping", at=("knobs",))


@rule("ladder", "undeclared-knob")
def _undeclared_runtime_knobs(site: Site) -> Iterator[ConfigError]:
    declared = declared_knobs(site.raw)
    for k in site.doc.runtime_knobs:
        if k not in declared:
            yield problem(f'knob "{k}" given at run time is not declared in knobs:', at=("knobs",),
                          suggestion=suggest(k, declared), severity="warning")

__all__ = ["KNOB_RE", "declared_knobs", "substitute_knobs"]
