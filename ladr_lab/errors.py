"""The error tree of ladr_lab: every error a user can meet is a LadrError.

    LadrError
    ├── ConfigError (also ValueError)        a ladder document is wrong; names step, field, YAML line
    │   └── ConfigErrors                     several ConfigErrors reported at once
    │       └── ExperimentFileErrors (also UsageError) [experiments/file.py]   an experiment file's problems, all at once
    ├── UsageError (also ValueError)         what was asked cannot be read: an assertion's kind or value, an option's
    │                                        value; the command line exits 2 for it (as for a bad flag)
    ├── SlateError                           a slate operation failed (bad path, unreadable metatags)
    │   └── PathRefused                      a path would leave the slate folder, or is hidden
    ├── TraceError                           a trace file cannot be read (missing, not JSONL)
    ├── ModelError                           a model could not answer
    │   ├── CallCancelled                    a model call was stopped while it ran (`Run.cancel()`, a Stop button)
    │   ├── ScriptExhausted                  a scripted model ran out of outputs for a key
    │   ├── ReplayDivergence [models/replay.py]      a replayed run stopped matching its recording
    │   └── WeightsError [models/local/weights.py]   packaged model weights are missing, torn or not the pinned ones
    ├── RunError                             the runtime could not continue a run
    │   ├── RunArgumentError (also ValueError)  an argument of Run() it cannot take (max_fetch_chars=-1)
    │   ├── BudgetExhausted                  executionBudget.maxLlmCalls or maxSteps reached
    │   ├── NodeDependencyError              a step depends on a step that had zero survivors
    │   ├── SourceResolutionError            a `from:` source could not be resolved at run time
    │   └── Abort [engine/steps.py]          internal: a gate said abort (below)
    ├── NoStepsInCommon [analysis/rejudge.py]    rejudge: the edited ladder has none of the trace's steps
    ├── SearchError [search/errors.py]       a retrieval request could not be served; `data` says more
    │   ├── InvalidRequestParams [search/errors.py]  a parameter is missing, mistyped or out of range
    │   ├── OptionUnsupported [search/errors.py]     an option the engine lacks, asked with strict: true
    │   ├── SnapshotGone [search/errors.py]          the pinned indexVersion is no longer kept
    │   └── RequestTimeout [search/errors.py]        the request's time budget ran out (search/budget.py)
    ├── OtelExportError [otel/export.py]     spans could not be exported (the otel extra missing, no receiver)
    └── RetrieveError [server/client.py]     the retrieval server answered an error (`code`), or is gone

A class marked [module] lives in that module (the package that raises it owns it); the others live here.
Every one of them except Abort is re-exported as `ladr_lab.<Name>`, so `except ladr_lab.SearchError` works.

Abort is the engine's control flow, not an error a user catches: a gate's `abort` raises it and `Run` (or
the parent of a `call` step) catches it, so it never leaves `Run`; the run ends with status "aborted".
It stays a RunError because that is what it is when the run is read afterwards: `run.exception` of an
aborted run is a LadrError like every other ending, and run_end's `error_type` says "Abort". It is
therefore drawn here but not re-exported.

The exceptions that are not LadrErrors are internal and never reach a user:
`round.validators.PatternTimeout` (a slow `pattern:` is taken as not matching),
`round.validators.UnresolvableRef` (config reports it as the rule `schema-ref`), `engine.writes._Skip` (the
write is recorded as skipped), `server.protocol._NoSuchMethod`, `server.resources.ResourceRefused` and
`ResourceMissing` (each answered as a JSON-RPC error) and
`cli.printer.OutputClosed` (a BaseException: a closed pipe ends the CLI quietly), and
`runfiles.rules.gitleaks.TranslationError` (a ValueError raised by `runfiles.rules.refresh` when an upstream rule
uses RE2 syntax the translation does not know: a refresh fails before the rules ship).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ECHO_CHARS = 80     # how much of an offending value a message repeats


def short_repr(value: Any, limit: int = ECHO_CHARS) -> str:
    """`repr(value)` as an error message echoes it: at most `limit` characters, a cut one ending in "…"."""
    if isinstance(value, str) and len(value) > limit * 4:
        value = value[: limit * 4]           # repr of a 10 MB string is not built to keep 80 characters of it
    try:
        text = repr(value)
    except ValueError:                       # an int past Python's 4,300-digit str() limit
        return f"a whole number of about {int(abs(value).bit_length() * 0.30103):,} digits"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_text(value: Any, limit: int = ECHO_CHARS) -> str:
    """A value as a message quotes it ("unknown step type \"…\""): a string as is, else its repr, cut like
    `short_repr`."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[: limit - 1] + "…"
    return short_repr(value, limit)


class LadrError(Exception):
    """Root of every error ladr_lab raises on purpose."""


@dataclass(eq=False)
class ConfigError(LadrError, ValueError):
    """One problem in a ladder document, located by step, field, path and YAML position, named by its rule."""

    message: str
    step_id: str | None = None
    field: str | None = None
    path: tuple = ()
    file: str | None = None
    line: int | None = None
    column: int | None = None
    suggestion: str | None = None
    severity: str = "error"
    rule: str | None = None        # stable kebab-case code, e.g. "unknown-key" (docs/config.md lists them)

    def __post_init__(self) -> None:
        self.path = tuple(self.path)
        super().__init__(self.message)

    def location(self) -> str:
        """`file:line:column` (as much of it as is known)."""
        parts = [self.file or "<ladder>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def __str__(self) -> str:
        text = self.message
        if self.suggestion and "did you mean" not in text:
            text += f' (did you mean "{self.suggestion}"?)'
        return text

    def format(self) -> str:
        """One line as `ladr-lab validate` prints it: location, severity, message."""
        return f"{self.location()}: {self.severity}: {self}"

    def to_dict(self) -> dict:
        """The problem as JSON-ready data (what `ladr-lab validate --json` prints for each problem)."""
        return {"message": str(self), "severity": self.severity, "rule": self.rule, "step": self.step_id,
                "field": self.field, "path": list(self.path), "file": self.file, "line": self.line,
                "column": self.column, "suggestion": self.suggestion}


class ConfigErrors(ConfigError):
    """Several ConfigErrors found in one document; iterating yields each."""

    def __init__(self, errors: list[ConfigError]) -> None:
        self.errors = list(errors)
        first = self.errors[0] if self.errors else ConfigError("invalid ladder")
        super().__init__(
            message=f"{len(self.errors)} problem(s) in ladder: " + "; ".join(str(e) for e in self.errors),
            step_id=first.step_id, field=first.field, path=first.path, file=first.file,
            line=first.line, column=first.column, suggestion=first.suggestion, rule=first.rule,
        )

    def __reduce__(self):
        # the default (cls, self.args) would call __init__ with the message string, not the list
        return (type(self), (self.errors,))

    def __iter__(self):
        return iter(self.errors)

    def __len__(self) -> int:
        return len(self.errors)

    def format(self) -> str:
        return "\n".join(e.format() for e in self.errors)

    def to_dict(self) -> dict:
        """The first problem's fields, plus every problem under `problems`."""
        return {**super().to_dict(), "problems": [e.to_dict() for e in self.errors]}


class UsageError(LadrError, ValueError):
    """What was asked cannot be read as asked (an assertion's unknown kind or bad value, an experiment option's bad
    value): a usage error, which the command line answers with exit code 2, as it does a bad flag."""


class SlateError(LadrError):
    """A slate operation failed."""


class PathRefused(SlateError):
    """A requested path is outside the slate folder, hidden, or otherwise not allowed."""


class TraceError(LadrError):
    """A trace file cannot be read: it is missing, or a line of it is not a JSON object."""


class ModelError(LadrError):
    """A model could not produce a completion; `call` is the CallInfo of the failed call, when known."""

    call: Any = None


class CallCancelled(ModelError):
    """A model call was stopped while it ran (`Run.cancel()`, the Stepper's Stop): the run records it as a cancelled
    `llm_error` and keeps the call pending, so the next `step()` makes it again. `partial` is the text the model had
    written when it stopped, `latency` the seconds it ran."""

    partial: str = ""
    latency: float | None = None


class ScriptExhausted(ModelError):
    """A scripted model has no more outputs for the key it was asked under."""


class RunError(LadrError):
    """The runtime could not continue a run.

    It keeps its context as data (as httpx errors keep `.request`): `step_id`, `node`, `path` (where in
    the ladder document the failing construct is declared) and `call`, the CallInfo of the model call
    being made or judged when it failed. The original exception, if any, is `__cause__`."""

    def __init__(self, message: str, step_id: str | None = None, path: tuple = (), *, node: int | None = None,
                 call=None) -> None:
        super().__init__(message)
        self.step_id = step_id
        self.path = tuple(path)
        self.node = node
        self.call = call

    def __reduce__(self):
        return (type(self), (str(self),), dict(self.__dict__))

    def to_dict(self) -> dict:
        """The error as data: type, message, step, node, round, path."""
        call = self.call
        return {"type": type(self).__name__, "message": str(self), "step": self.step_id,
                "node": self.node if self.node is not None else getattr(call, "node", None),
                "round": getattr(call, "round", None), "path": list(self.path)}


class RunArgumentError(RunError, ValueError):
    """An argument of `Run(...)` has a value it cannot take (raised before anything runs)."""


class BudgetExhausted(RunError):
    """executionBudget.maxLlmCalls or maxSteps was reached."""


class NodeDependencyError(RunError):
    """A step depends on a step that left zero survivors."""


class SourceResolutionError(RunError):
    """A `from:` source could not be resolved at run time."""


__all__ = [
    "BudgetExhausted", "CallCancelled", "ConfigError", "ConfigErrors", "LadrError", "ModelError", "NodeDependencyError",
    "PathRefused", "RunArgumentError", "RunError", "ScriptExhausted", "SlateError", "SourceResolutionError",
    "TraceError", "UsageError", "short_repr", "short_text",
]
