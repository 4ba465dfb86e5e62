"""What recorded outputs are judged against now: an edited ladder, or edited schemas by step."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import iter_schema_problems
from ..config.model import Ladder
from ..config.standalone import read_schema
from ..errors import ConfigError

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
            self.ladder = Ladder.of(edited)

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
    if isinstance(value, str):
        value = _read(step_id, value)
    if not isinstance(value, Mapping):
        raise ConfigError(f"the schema given for step {step_id!r} must be a mapping", step_id=step_id,
                          rule="schema-type")
    tests = dict(value) if value and set(value) <= _TESTS else {"requestMatch": dict(value)}
    for test, schema in list(tests.items()):
        if test == "equals":
            tests[test] = str(schema)
            continue
        if isinstance(schema, str):
            tests[test] = schema = _read(step_id, schema)
        # a $ref that does not resolve is left to the verdict, which says so as the engine's judge does
        for problem in iter_schema_problems(schema, refs=False):
            if problem.severity == "error":
                raise _given(step_id, test, problem)
    return tests


def _read(step_id: str, text: str) -> Any:
    """The value of a schema given as JSON text (ConfigError when it is not JSON)."""
    value, _pos, error = read_schema(text, "json")
    if error is not None:
        raise _given(step_id, "schema", error)
    return value


def _given(step_id: str, test: str, problem: ConfigError) -> ConfigError:
    """A problem of an edited schema, said of the step it was given for."""
    if problem.rule in ("schema-type", "empty-schema"):
        said = "must be a non-empty JSON Schema"
    elif problem.rule == "schema-json":
        said = f"is {problem.message}" + (f": line {problem.line} column {problem.column}" if problem.line else "")
    else:
        said = f"is not a valid JSON Schema: {problem.message}"
    return ConfigError(f"the {test} given for step {step_id!r} {said}", step_id=step_id, path=problem.path,
                       suggestion=problem.suggestion, rule=problem.rule)


__all__ = ["Edits"]
