"""Reading YAML: plain values, the position of every value and key, and limits that refuse hostile documents.

PyYAML's composer recurses once per nesting level and its constructor expands aliases without bound,
so `[` nested 5,000 deep crashes it and nine levels of nine aliases ("billion laughs") never return.
This reader composes plain values straight from PyYAML's event stream with an explicit stack (libyaml's
parser when PyYAML has it, for speed, else PyYAML's own) and refuses, as one located problem each:

- nesting deeper than `MAX_DEPTH` collections (SnakeYAML's default is 50; a real ladder stays under 20),
- an alias used inside the collection it names (`steps: &s [*s]`),
- aliases that would add more than `MAX_ALIAS_NODES` nodes in all (the count is known before copying).

Aliases used the ordinary way (a schema written once, used by several steps) are copied into place.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..errors import ConfigError, ConfigErrors

MAX_DEPTH = 100
MAX_ALIAS_NODES = 10_000

_Parser = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader


class Positions:
    """Maps document paths to (line, column) of the value and, for mapping entries, of the key."""

    def __init__(self) -> None:
        self.values: dict[tuple, tuple[int, int]] = {}
        self.keys: dict[tuple, tuple[int, int]] = {}
        self.words: dict[tuple, str] = {}     # unquoted YAML 1.1 words read as booleans (YES, no, on, Off)

    def of(self, path: tuple, *, key: bool = False) -> tuple[int, int] | None:
        """The position of `path`, or of its nearest ancestor that has one."""
        p = tuple(path)
        while True:
            if key and p in self.keys:
                return self.keys[p]
            if p in self.values:
                return self.values[p]
            if not p:
                return None
            p = p[:-1]


def _mark(mark: Any) -> tuple[int, int]:
    return mark.line + 1, mark.column + 1


@dataclass
class _Open:
    """A collection being composed."""

    value: dict | list
    path: tuple
    mark: tuple[int, int]
    anchor: str | None
    first: int                       # index of its first entry in the composer's position log
    nodes: int = 1                   # nodes below and including it, aliases expanded
    height: int = 1                  # collections on the longest path down, itself included
    key: Any = None                  # mapping: the pending key, once read
    has_key: bool = False
    skip: bool = False               # mapping: drop the pending entry (a `<<` merge key)
    key_mark: tuple[int, int] | None = None


@dataclass
class _Anchor:
    """A finished anchored node: what an alias to it copies."""

    value: Any
    path: tuple
    first: int
    last: int
    nodes: int
    height: int


@dataclass
class _Composer:
    file: str | None
    pos: Positions = field(default_factory=Positions)
    errors: list[ConfigError] = field(default_factory=list)
    log: list[tuple[tuple, bool, tuple[int, int]]] = field(default_factory=list)  # (path, is_key, position)
    anchors: dict[str, _Anchor | _Open] = field(default_factory=dict)
    stack: list[_Open] = field(default_factory=list)
    added: int = 0                   # nodes added by aliases so far
    root: Any = None

    def fail(self, message: str, mark: tuple[int, int], rule: str) -> ConfigError:
        return ConfigError(message, file=self.file, line=mark[0], column=mark[1], rule=rule)

    def record(self, path: tuple, at: tuple[int, int], key: bool = False) -> None:
        (self.pos.keys if key else self.pos.values)[path] = at
        self.log.append((path, key, at))

    def child_path(self) -> tuple:
        if not self.stack:
            return ()
        top = self.stack[-1]
        if isinstance(top.value, list):
            return top.path + (len(top.value),)
        return top.path + ((top.key,) if top.has_key else ("<key>",))

    def start(self, event: Any, at: tuple[int, int]) -> tuple:
        if event.anchor is not None and event.anchor in self.anchors:
            raise self.fail(f'malformed YAML: found duplicate anchor "&{event.anchor}"', at, "yaml-syntax")
        path = self.child_path()
        self.record(path, at)
        return path

    def collection(self, event: Any, value: dict | list) -> None:
        at = _mark(event.start_mark)
        if len(self.stack) >= MAX_DEPTH:
            raise self.fail(f"YAML nesting is deeper than {MAX_DEPTH} levels; a ladder never needs that many",
                            at, "yaml-depth-limit")
        path = self.start(event, at)
        frame = _Open(value, path, at, event.anchor, len(self.log) - 1)
        if event.anchor is not None:
            self.anchors[event.anchor] = frame
        self.stack.append(frame)

    def scalar(self, event: Any, loader: yaml.SafeLoader) -> None:
        at = _mark(event.start_mark)
        top = self.stack[-1] if self.stack else None
        if top is not None and isinstance(top.value, dict) and not top.has_key:
            # Keys are taken verbatim: YAML 1.1 would turn an unquoted `on:` into True.
            self.key(top, event.value, at)
            if event.anchor is not None:
                self.anchors[event.anchor] = _Anchor(event.value, (), len(self.log), len(self.log), 1, 0)
            return
        path = self.start(event, at)
        tag = event.tag
        implicit = tag is None or tag == "!"
        if implicit:
            tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
        try:
            value = loader.construct_object(node, deep=True)
        except yaml.YAMLError:
            raise
        except Exception as exc:  # PyYAML's scalar constructors raise what they meet (!!bool maybe: KeyError)
            if not implicit:
                raise self.fail(f"malformed YAML: cannot read {event.value!r} as {tag} ({exc})", at,
                                "yaml-syntax") from None
            value = event.value  # looks like a date or number but is not one (2026-13-45): keep the text
        if implicit and isinstance(value, bool) and event.value.lower() not in ("true", "false"):
            self.pos.words[path] = event.value  # a rule that wanted a string can say why it got a boolean
        if event.anchor is not None:
            self.anchors[event.anchor] = _Anchor(value, path, len(self.log) - 1, len(self.log), 1, 0)
        self.deliver(value, 1, 0)

    def alias(self, event: Any) -> None:
        at = _mark(event.start_mark)
        target = self.anchors.get(event.anchor)
        if target is None:
            raise self.fail(f'malformed YAML: found undefined alias "*{event.anchor}"', at, "yaml-syntax")
        if isinstance(target, _Open):
            raise self.fail(f'recursive YAML alias "*{event.anchor}": it is used inside the collection '
                            f'"&{event.anchor}" names', at, "yaml-recursive-alias")
        self.added += target.nodes
        if self.added > MAX_ALIAS_NODES:
            raise self.fail(f"YAML aliases would add more than {MAX_ALIAS_NODES:,} nodes (at \"*{event.anchor}\"); "
                            "write the repeated part out or share less", at, "yaml-alias-limit")
        if len(self.stack) + target.height > MAX_DEPTH:
            raise self.fail(f'YAML nesting is deeper than {MAX_DEPTH} levels once alias "*{event.anchor}" is '
                            "expanded; a ladder never needs that many", at, "yaml-depth-limit")
        top = self.stack[-1] if self.stack else None
        if top is not None and isinstance(top.value, dict) and not top.has_key:
            self.key(top, target.value if isinstance(target.value, str) else str(target.value), at)
            return
        path = self.child_path()
        self.record(path, at)
        n = len(target.path)
        for sub, is_key, where in self.log[target.first + 1:target.last]:
            self.record(path + sub[n:], where, is_key)
        self.deliver(copy.deepcopy(target.value), target.nodes, target.height)

    def key(self, top: _Open, key: Any, at: tuple[int, int]) -> None:
        top.has_key, top.skip, top.key_mark = True, False, at
        if key == "<<":
            self.errors.append(self.fail("YAML merge keys (<<) are not supported", at, "yaml-merge-key"))
            self.errors[-1].path = top.path
            top.key, top.skip = key, True
            return
        if key in top.value:
            err = self.fail(f'duplicate key "{key}"', at, "duplicate-key")
            err.path = top.path + (key,)
            self.errors.append(err)
        top.key = key
        self.record(top.path + (key,), at, key=True)

    def end(self) -> None:
        frame = self.stack.pop()
        if frame.anchor is not None:
            self.anchors[frame.anchor] = _Anchor(frame.value, frame.path, frame.first, len(self.log),
                                                 frame.nodes, frame.height)
        if self.stack and isinstance(self.stack[-1].value, dict) and not self.stack[-1].has_key:
            # a collection used as a mapping key: keys are text
            self.key(self.stack[-1], str(frame.value), frame.mark)
            return
        self.deliver(frame.value, frame.nodes, frame.height)

    def deliver(self, value: Any, nodes: int, height: int) -> None:
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        top.nodes += nodes
        top.height = max(top.height, height + 1)
        if isinstance(top.value, list):
            top.value.append(value)
            return
        if not top.skip:
            top.value[top.key] = value
        top.has_key, top.skip = False, False

    def compose(self, text: str, parser: Any = _Parser) -> Any:
        loader = yaml.SafeLoader("")  # only its resolver and scalar constructors are used
        first_doc: Any = None
        for event in yaml.parse(text, Loader=parser):
            if isinstance(event, yaml.ScalarEvent):
                self.scalar(event, loader)
            elif isinstance(event, yaml.SequenceStartEvent):
                self.collection(event, [])
            elif isinstance(event, yaml.MappingStartEvent):
                self.collection(event, {})
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                self.end()
            elif isinstance(event, yaml.AliasEvent):
                self.alias(event)
            elif isinstance(event, yaml.DocumentStartEvent):
                if first_doc is not None:
                    raise self.fail("malformed YAML: expected a single document in the stream, but found another "
                                    "document", _mark(event.start_mark), "yaml-syntax")
                first_doc = event
            elif isinstance(event, yaml.DocumentEndEvent):
                self.anchors = {}
        return self.root


def load_yaml(text: str, file: str | None = None, *, parser: Any = _Parser) -> tuple[Any, Positions]:
    """Parse YAML text into plain Python values plus a Positions table; bad YAML is a ConfigError."""
    comp = _Composer(file)
    try:
        data = comp.compose(text, parser)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        if "maximum nesting depth" in str(exc.problem or ""):
            # libyaml's scanner reads a flow collection's openers ahead of the events counted here, so its own
            # nesting limit (1,000 levels) can fire first. The text up to that point nests past this reader's
            # limit too: the pure-Python parser over that prefix names the exact place, fast.
            if parser is not yaml.SafeLoader and mark is not None:
                load_yaml(text[: mark.index], file, parser=yaml.SafeLoader)
            raise ConfigError(f"YAML nesting is deeper than {MAX_DEPTH} levels; a ladder never needs that many",
                              file=file, line=line, column=col, rule="yaml-depth-limit") from None
        raise ConfigError(f"malformed YAML: {exc.problem or exc.context}", file=file, line=line, column=col,
                          rule="yaml-syntax") from None
    except yaml.reader.ReaderError as exc:
        at = min(max(int(exc.position), 0), len(text))
        line = text.count("\n", 0, at) + 1
        col = at - (text.rfind("\n", 0, at) + 1) + 1
        char = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
        raise ConfigError(f"malformed YAML: unacceptable character {char} ({exc.reason})",
                          file=file, line=line, column=col, rule="yaml-syntax") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"malformed YAML: {exc}", file=file, rule="yaml-syntax") from None
    except UnicodeEncodeError as exc:  # a lone surrogate (text decoded with errors="surrogateescape")
        line = text.count("\n", 0, exc.start) + 1
        col = exc.start - (text.rfind("\n", 0, exc.start) + 1) + 1
        raise ConfigError(f"malformed YAML: unacceptable character {text[exc.start]!r} (not Unicode text)",
                          file=file, line=line, column=col, rule="yaml-syntax") from None
    if comp.errors:
        raise ConfigErrors(comp.errors)
    return data, comp.pos

__all__ = ["MAX_ALIAS_NODES", "MAX_DEPTH", "Positions", "load_yaml"]
