"""What recorded outputs are judged against now: an edited ladder, or edited schemas by step."""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config.model import Ladder
from ..errors import ConfigError
from .positions import as_ladder

_TESTS = frozenset({"requestMatch", "jsonMatches", "match", "equals"})


class Edits:
    """What each step's outputs are judged against now: an edited Ladder (or ladder path), or a mapping
    `{step_id: schema}` (the step's requestMatch) / `{step_id: {"requestMatch" | "jsonMatches" | "match" |
    "equals": ...}}`. Steps a mapping does not name are not re-judged."""

    def __init__(self, edited: Ladder | str | Path | Mapping) -> None:
        self.ladder: Ladder | None = None
        self.tests: dict[str, dict[str, Any]] = {}
        self._steps: dict[str, Any] = {}
        if isinstance(edited, Mapping):
            for step_id, value in edited.items():
                self.tests[str(step_id)] = _tests_of(str(step_id), value)
        else:
            self.ladder = as_ladder(edited)

    def _step(self, step_id: str):
        # looked up once per step: re-judging asks for every recorded output
        if self.ladder is None:
            return None
        if step_id not in self._steps:
            self._steps[step_id] = self.ladder.step(step_id)
        return self._steps[step_id]

    def request_match(self, step_id: str) -> tuple[bool, dict | None]:
        """(covered, the requestMatch now; None when the step no longer retrieves)."""
        if self.ladder is None:
            tests = self.tests.get(step_id, {})
            return "requestMatch" in tests, tests.get("requestMatch")
        step = self._step(step_id)
        if step is None:
            return False, None
        return True, step.retrieve.request_match if step.retrieve else None

    def max_rounds(self, step_id: str) -> int | None:
        """maxRounds now (None when unknown)."""
        step = self._step(step_id)
        return step.retrieve.max_rounds if step is not None and step.retrieve else None

    def gate(self, step_id: str) -> tuple[bool, tuple[str, Any] | None, Any]:
        """(covered, (test, schema or string) now or None when the step has no gate, the gate model or None)."""
        if self.ladder is None:
            tests = self.tests.get(step_id, {})
            for test in ("jsonMatches", "equals"):
                if test in tests:
                    return True, (test, tests[test]), None
            return False, None, None
        step = self._step(step_id)
        if step is None:
            return False, None, None
        g = step.gate
        if g is None:
            return True, None, None
        return True, (g.condition, g.json_matches if g.json_matches is not None else (g.equals or "")), g

    def write_match(self, step_id: str) -> tuple[bool, dict | None, str | None]:
        """(covered, slateWrite.match now or None when the step has no slateWrite, its `field`)."""
        if self.ladder is None:
            tests = self.tests.get(step_id, {})
            return "match" in tests, tests.get("match"), None
        step = self._step(step_id)
        if step is None:
            return False, None, None
        sw = step.slate_write
        return True, (sw.match if sw else None), (sw.field if sw else None)


def _tests_of(step_id: str, value: Any) -> dict[str, Any]:
    from ..config.keywords import schema_ok
    from ..config.schemas import metaschema_errors
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ConfigError(f"the schema given for step {step_id!r} is not JSON: {exc}", step_id=step_id,
                              rule="schema-json") from None
    if not isinstance(value, Mapping):
        raise ConfigError(f"the schema given for step {step_id!r} must be a mapping", step_id=step_id,
                          rule="schema-type")
    tests = dict(value) if value and set(value) <= _TESTS else {"requestMatch": dict(value)}
    for test, schema in list(tests.items()):
        if test == "equals":
            tests[test] = str(schema)
            continue
        if isinstance(schema, str):
            tests[test] = schema = _tests_of(step_id, schema)["requestMatch"]
        if not isinstance(schema, Mapping) or not schema:
            raise ConfigError(f"the {test} given for step {step_id!r} must be a non-empty JSON Schema",
                              step_id=step_id, rule="empty-schema")
        problems = () if schema_ok(dict(schema)) else metaschema_errors(dict(schema))
        if problems:
            path, message = problems[0]
            raise ConfigError(f"the {test} given for step {step_id!r} is not a valid JSON Schema: {message}"
                              + (f" (at {'/'.join(map(str, path))})" if path else ""), step_id=step_id,
                              rule="invalid-schema")
    return tests


__all__ = ["Edits"]
