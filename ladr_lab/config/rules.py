"""Rules: small generators that yield the ConfigErrors of one construct, each registered under a stable code.

A rule sees one `Site` (a construct of the document: the ladder, a slate, a step, a field, a schema, ...)
and yields `problem(...)`s with paths relative to it; the walker (`walker.py`) fills in the step, the
absolute path, the file, the line and the column, and prefixes `Step "ID": `, as jsonschema's
`iter_errors`/`descend` do. Adding a rule is one decorated generator:

    @rule("retrieve", "max-rounds")
    def _max_rounds(site):
        if site.raw.get("maxRounds") == 0:
            yield problem("retrieve.maxRounds must be > 0 (got 0).", at=("maxRounds",))

`CODES` lists every code with what it means (docs/config.md shows the same table; a test keeps them equal).
"""
from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from .model import SlateDecl

Rule = Callable[["Site"], Iterator[ConfigError]]


@dataclass(frozen=True)
class Code:
    """A rule code: what it means, and whether its problems point at the key (else at the value)."""

    summary: str
    at_key: bool = False


CODES: dict[str, Code] = {
    # reading YAML (reader.py)
    "yaml-syntax": Code("the text is not YAML PyYAML can read (or has several documents)"),
    "yaml-depth-limit": Code("collections nested deeper than the reader's limit (100)"),
    "yaml-alias-limit": Code("aliases that would add more than the reader's limit of nodes (10,000)"),
    "yaml-recursive-alias": Code("an alias used inside the collection its anchor names"),
    "yaml-merge-key": Code("a `<<` merge key (not supported)", at_key=True),
    "duplicate-key": Code("a mapping key written twice", at_key=True),
    "unreadable-file": Code("the ladder file cannot be read, or is not UTF-8 text"),
    # the document's shape (shape.py)
    "ladder-type": Code("the document is not a mapping"),
    "unknown-key": Code("a key the construct does not take", at_key=True),
    "wrong-type": Code("a value of the wrong type (a list, a mapping, a string, ...)"),
    "ladder-name": Code("the ladder has no name"),
    "budget-value": Code("an executionBudget value that is not a whole number >= 1"),
    "slate-title": Code("a slate without a title"),
    "duplicate-slate": Code("two slates with one title"),
    "folder-name": Code("a folder without a name"),
    "duplicate-folder": Code("two folders with one name in a slate"),
    "file-name": Code("a declared file without a name"),
    "unsafe-name": Code('a folder or file name that could leave its folder or is hidden ("..", "/x", ".x")'),
    "system-metatag": Code("a system metatag (index, tree, created, ...) declared as a user metatag", at_key=True),
    "metatag-type": Code("a metatag type other than string, string[], number, boolean, object"),
    # steps and fields (steps.py)
    "no-steps": Code("steps missing, empty, or not a list"),
    "step-id": Code("a step without an id"),
    "duplicate-step-id": Code("two steps with one id"),
    "step-type": Code("a step type other than normal, sequential, group, call"),
    "nodes-value": Code("nodes that is not a whole number >= 1"),
    "nodes-unbounded": Code("nodes above 10,000 with no executionBudget.maxLlmCalls to stop them"),
    "nodes-over-budget": Code("(warning) a step whose nodes alone exceed executionBudget.maxLlmCalls"),
    "ignored-prompt": Code("(warning) fields or systemPrompt on a group or call step, which makes no call"),
    "retrieve-step-type": Code("retrieve on a group or call step", at_key=True),
    "group-gate": Code("if: on a group step (a group has no output of its own)", at_key=True),
    "group-write": Code("slateWrite: on a group step (a group has no output of its own)", at_key=True),
    "group-steps": Code("steps: on a step that is not a group", at_key=True),
    "call-block": Code("call: missing on a call step, or present on another step", at_key=True),
    "call-ladder": Code('call.ladder that is not "self" or a path'),
    "call-max-depth": Code("call.maxDepth that is not a whole number >= 1"),
    "field-name": Code("a field without a name"),
    "duplicate-field": Code("two fields with one name in a step"),
    "field-type": Code("a field type other than the seven"),
    "field-needs-source": Code("a field without its from:, value: or knob:"),
    "ingest-output": Code("an ingest field reading from: output (the step has not run yet)"),
    "max-rounds": Code("retrieve.maxRounds missing, not a whole number, or not > 0"),
    "retrieve-as": Code("retrieve.as empty or not a string"),
    "retrieve-to": Code("retrieve.to that is not {slate, folder}"),
    "gate-condition": Code("if: with neither or both of equals and jsonMatches"),
    "unknown-action": Code("a gate branch that is not continue, abort, prune, jump or write"),
    "empty-action": Code("a gate branch mapping with neither jump nor write"),
    "jump-form": Code("a jump that is not {stepId: ...}"),
    "write-target": Code("a write's to: that is not {slate, folder, file[, metatag]}"),
    "write-source": Code("a gated write without from:"),
    "write-policy": Code("on: other than append, overwrite, mergeByKey"),
    "key-required": Code("on: mergeByKey without key"),
    "key-without-merge": Code("key with a policy other than mergeByKey"),
    "key-type": Code("a key that is not a field name (a non-empty string)"),
    "system-metatag-write": Code("a write to a system metatag"),
    # JSON Schemas (schemas.py)
    "empty-schema": Code("a requestMatch, match or jsonMatches that is missing or empty ({} or '{}')"),
    "schema-json": Code("a schema written as a string that is not JSON"),
    "schema-type": Code("a schema that is not a mapping"),
    "invalid-schema": Code("a schema its metaschema rejects"),
    "schema-ref": Code("a schema whose $ref does not resolve inside it, or whose $refs lead back to themselves"),
    "unknown-schema-keyword": Code("(warning) a keyword the schema's dialect does not know (JSON Schema ignores it)",
                                   at_key=True),
    # cross-references and knobs (references.py, knobs.py)
    "source-form": Code("a from: that is none of previous, output, a literal, a step ref, a slate ref"),
    "node-ref": Code("a nodeRef other than current, previous, accumulate"),
    "node-number": Code("a node: that is not a whole number >= 1"),
    "node-ref-conflict": Code("nodeRef and node together"),
    "depth-value": Code("a depth that is not a whole number >= 1"),
    "whole-folder-read": Code("a slate source with neither file nor metatag"),
    "folder-level-metatag": Code("a read of index or tree on one file (they are folder-level)"),
    "ref-incomplete": Code("a slate reference without its slate or folder"),
    "unknown-slate": Code("a reference to a slate that is not declared"),
    "unknown-folder": Code("a reference to a folder the slate does not declare"),
    "unknown-file": Code("a reference to a file the folder does not declare"),
    "unknown-metatag": Code("a reference to a metatag the file or folder does not declare"),
    "unknown-step": Code("a {stepId: X} source naming no step"),
    "unknown-jump-target": Code("a jump to a step that does not exist"),
    "jump-in-group": Code("a jump from a step inside a group"),
    "jump-into-group": Code("a jump to a step inside a group (jump targets are top-level steps)"),
    "previous-after-group": Code("from: previous where the step before is a group (ambiguous)"),
    "unknown-knob": Code("{{knobs.NAME}} naming no knob"),
    "undeclared-knob": Code("(warning) a knob given at run time that knobs: does not declare"),
    # lint only (ladr_lab.analysis.lint_rules: `ladr-lab lint`, not `validate`)
    "loose-request-match": Code("(lint) a requestMatch that accepts {} or a final-looking object"),
    "no-index-field": Code("(lint) a retrieve step without a field listing its folder (index, tree, or a metatag listing)", at_key=True),
    "max-rounds-high": Code("(lint) retrieve.maxRounds above 10"),
    "prompt-example-unmatched": Code("(lint) a request example in the systemPrompt that requestMatch refuses"),
    "listing-hides-files": Code("(lint) listing fields that show no file the model could ask for (only `index` "
                                "while every file is in a subfolder)"),
    "fan-out-cost": Code("(lint) nodes × (maxRounds + 1) above executionBudget.maxLlmCalls, or unbounded"),
    # the ladder against the disk (disk.py: `validate` and `lint`, not `load_ladder`)
    "missing-slate-root": Code("a slate path: that does not exist (or is not a directory) when no step writes to "
                               "the slate"),
    "new-slate-root": Code("(warning) a slate path: that does not exist yet, for a slate a step writes to"),
    "missing-slate-folder": Code("(warning) a declared folder missing from an existing slate directory, when no "
                                 "step writes to it"),
}

RULES: dict[str, list[tuple[str, Rule]]] = {}              # construct kind -> (code, rule) in order
CHILDREN: dict[str, Callable[[Site], Iterator[Site]]] = {}  # construct kind -> the constructs below it


def rule(kind: str, code: str, *, registry: dict[str, list[tuple[str, Rule]]] | None = None
         ) -> Callable[[Rule], Rule]:
    """Register a generator as a rule on every construct of `kind`; what it yields gets `code` as its rule.

    Rules go into `RULES` (every validation runs them) unless another `registry` is given: a lint keeps
    its own and passes `{**RULES, ...}`-style merges to `check_text(..., registry=...)`.
    """
    if code not in CODES:
        raise KeyError(f"rule code {code!r} is not in CODES")

    def register(fn: Rule) -> Rule:
        (RULES if registry is None else registry).setdefault(kind, []).append((code, fn))
        return fn
    return register


def children(kind: str) -> Callable:
    """Register the function that lists the constructs below each construct of `kind`."""
    def register(fn: Callable[[Site], Iterator[Site]]) -> Callable[[Site], Iterator[Site]]:
        CHILDREN[kind] = fn
        return fn
    return register


def problem(message: str, *, at: tuple = (), rule: str | None = None, suggestion: str | None = None,
            field: str | None = None, severity: str = "error") -> ConfigError:
    """A problem at `at`, a path relative to the construct; the walker completes it."""
    return ConfigError(message, path=tuple(at), rule=rule, suggestion=suggestion, field=field, severity=severity)


def suggest(name: Any, choices) -> str | None:
    """The closest of `choices` to `name`, if one is close enough to be a likely typo."""
    got = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return got[0] if got else None


def typename(v: Any) -> str:
    """How messages name a value's type."""
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "empty"}.get(type(v), type(v).__name__)


def yaml_word(site: Site, rel: tuple = ()) -> str:
    """'; YAML read YES as true: quote it ("YES")' when the value at `rel` below `site` is an unquoted YAML 1.1
    boolean word (yes, no, on, off in any case), else ''. For "must be a string" messages."""
    words = getattr(site.doc.positions, "words", None) or {}
    word = words.get(site.path + tuple(rel))
    if word is None:
        return ""
    value = "true" if word.lower() in ("yes", "y", "on") else "false"
    return f'; YAML read {word} as {value}: quote it ("{word}")'


def whole(v: Any, minimum: int = 1) -> bool:
    """True for a whole number (not a boolean) >= minimum."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= minimum


@dataclass(frozen=True)
class StepScope:
    """Where a step sits: its id, type, enclosing group and what `from: previous` means there."""

    id: str | None                 # None when the step has no usable id (messages then carry no prefix)
    key: str                       # id, or "#N" for a step without one
    raw: dict
    path: tuple
    type: str                      # the declared type when valid, else "normal"
    group: str | None = None       # the innermost group this step is a branch of
    after_group: str | None = None  # the group that `previous` would name here (an ambiguous source)


@dataclass
class Doc:
    """The document being checked: its data (knobs substituted), declarations and step scopes."""

    data: dict
    file: str | None
    positions: Any
    slates: dict[str, SlateDecl] = field(default_factory=dict)
    steps: dict[str, StepScope] = field(default_factory=dict)      # first step of each id (or "#N")
    scopes: dict[tuple, StepScope] = field(default_factory=dict)   # by the step's path
    runtime_knobs: dict = field(default_factory=dict)
    base_dir: Any = None           # the ladder file's directory (a slate's relative path: is relative to it)


@dataclass(frozen=True)
class Site:
    """One construct of the document, as rules see it."""

    kind: str
    raw: Any
    path: tuple
    doc: Doc
    step: StepScope | None = None
    what: str = ""                 # how messages name it: 'slateRead field "X"', "if.then write", ...
    branch: str | None = None      # then | else, for gate branches and their writes
    field: str | None = None       # the field this construct belongs to
    inputs: bool = False           # a source here may be input.NAME

    @property
    def scope(self) -> StepScope:
        """The step this construct belongs to (every construct below `steps:` has one)."""
        assert self.step is not None, f"a {self.kind} site outside a step"
        return self.step

    def at(self, kind: str, raw: Any, rel: tuple, **changes: Any) -> Site:
        """A construct below this one, `rel` further down the document."""
        base = {"step": self.step, "field": self.field, "branch": self.branch, "what": "", "inputs": False}
        return Site(kind, raw, self.path + tuple(rel), self.doc, **{**base, **changes})

__all__ = [
    "CHILDREN", "CODES", "Code", "Doc", "RULES", "Rule", "Site", "StepScope", "children", "problem", "rule",
    "suggest", "typename", "whole", "yaml_word"
]
