"""YAML loading that remembers where every value came from (line and column, 1-based)."""
from __future__ import annotations

from typing import Any

import yaml

from ..errors import ConfigError

Path_ = tuple  # a path into the document: keys and list indexes


class Positions:
    """Maps document paths to (line, column) of the value and, for mapping entries, of the key."""

    def __init__(self) -> None:
        self.values: dict[tuple, tuple[int, int]] = {}
        self.keys: dict[tuple, tuple[int, int]] = {}

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


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _convert(node: yaml.Node, path: tuple, pos: Positions, errors: list[ConfigError], file: str | None) -> Any:
    pos.values[path] = _mark(node)
    if isinstance(node, yaml.MappingNode):
        out: dict = {}
        for knode, vnode in node.value:
            if isinstance(knode, yaml.ScalarNode):
                # Keys are taken verbatim: YAML 1.1 would turn an unquoted `on:` into True.
                key: Any = knode.value
            else:
                key = str(_convert(knode, path + ("<key>",), pos, errors, file))
            if key == "<<":
                errors.append(ConfigError("YAML merge keys (<<) are not supported", path=path, file=file,
                                          line=_mark(knode)[0], column=_mark(knode)[1]))
                continue
            if key in out:
                line, col = _mark(knode)
                errors.append(ConfigError(f'duplicate key "{key}"', path=path + (key,), file=file,
                                          line=line, column=col))
            pos.keys[path + (key,)] = _mark(knode)
            out[key] = _convert(vnode, path + (key,), pos, errors, file)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(v, path + (i,), pos, errors, file) for i, v in enumerate(node.value)]
    return yaml.SafeLoader.construct_object(_CONSTRUCTOR, node, deep=True)


class _Constructor(yaml.SafeLoader):
    def __init__(self) -> None:  # no stream: only construct_object is used
        yaml.constructor.SafeConstructor.__init__(self)


_CONSTRUCTOR = _Constructor()


def load_yaml(text: str, file: str | None = None) -> tuple[Any, Positions]:
    """Parse YAML text into plain Python values plus a Positions table; bad YAML is a ConfigError."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        msg = f"malformed YAML: {exc.problem or exc.context}"
        raise ConfigError(msg, file=file, line=line, column=col) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"malformed YAML: {exc}", file=file) from None
    pos = Positions()
    if node is None:
        return None, pos
    errors: list[ConfigError] = []
    try:
        data = _convert(node, (), pos, errors, file)
    except yaml.YAMLError as exc:
        raise ConfigError(f"malformed YAML: {exc}", file=file) from None
    if errors:
        from ..errors import ConfigErrors
        raise ConfigErrors(errors)
    return data, pos
