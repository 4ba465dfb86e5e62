"""An edited schema written back into a ladder's YAML text, in place: the rest of the document (its comments,
its layout, its other steps) stays as the author wrote it.

The schema editor (`widgets.RequestMatchEditor`) re-judges recorded outputs against a schema as one types;
applying the edit needs a Ladder whose text says the same, so that `lint`, `validate` and a saved file agree
with what was re-judged. The value's exact span comes from PyYAML's node marks; a block value is replaced
by the new schema in block style at the same indentation, a flow value (or a JSON string) by one line of
JSON. The result is loaded again and checked to hold the new schema; when the splice cannot be made (an
alias, a document PyYAML reads differently), the whole document is written out from its parsed form instead
(comments are then lost, which the result's `rewritten` says).
"""
from __future__ import annotations

import json
from typing import Any

from ..config.model import Ladder
from ..errors import ConfigError, ConfigErrors

__all__ = ["TEST_KEYS", "replace_schema", "schema_text", "to_yaml_text"]

# the test a schema edit names -> where it sits under the step
TEST_KEYS = {"requestMatch": ("retrieve", "requestMatch"), "jsonMatches": ("if", "jsonMatches"),
             "match": ("slateWrite", "match")}


def _child(node: Any, key: Any) -> Any:
    import yaml
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == str(key):
                return v
    elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
        return node.value[key]
    return None


def _content_end(node: Any) -> int:
    """Where a node's last token ends (a block node's end mark lies past the comments and blank lines after it)."""
    import yaml
    if isinstance(node, yaml.ScalarNode) or node.flow_style or not node.value:
        return node.end_mark.index
    last = node.value[-1]
    return _content_end(last[1] if isinstance(node, yaml.MappingNode) else last)


def to_yaml_text(value: Any) -> str:
    """A value as YAML the way ladders are usually written: collections of scalars in flow style
    (`{type: string}`, `[request]`), the rest in block style."""
    import yaml

    def dump(v: Any, flow: bool | None = None) -> str:
        return yaml.safe_dump(v, default_flow_style=flow, sort_keys=False, allow_unicode=True, width=100).rstrip("\n")
    if isinstance(value, dict) and value:       # the top level in block style, even when its values are scalars
        return "\n".join(dump({k: v}, None if isinstance(v, (dict, list)) else False) for k, v in value.items())
    return dump(value)


def _locate(text: str, path: tuple) -> tuple[Any, Any, bool] | None:
    """(the key node, the value node, whether it sits inside a flow collection) at `path`, or None."""
    import yaml
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    key_node, in_flow = None, False
    for key in path:
        if node is None:
            return None
        in_flow = in_flow or bool(getattr(node, "flow_style", False))
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(key)), None)
            key_node, node = pair if pair is not None else (None, None)
        else:
            node = _child(node, key)
    if node is None or key_node is None or getattr(node, "anchor", None):
        return None
    return key_node, node, in_flow


def _dedent(text: str) -> str:
    import textwrap
    lines = text.strip("\n").splitlines()
    if not lines:
        return ""
    # the first line of a span starts at the value's column; the others carry the document's indentation
    rest = textwrap.dedent("\n".join(lines[1:])) if len(lines) > 1 else ""
    return lines[0].strip() + ("\n" + rest if rest else "")


def schema_text(ladder: Ladder, step_id: str, test: str = "requestMatch") -> str:
    """The YAML a step's `test` is written in, as the author wrote it (comments and layout kept), or the
    schema written out when the ladder has no text."""
    step = ladder.step(step_id)
    if step is None:
        raise ConfigError(f'the ladder has no step "{step_id}"', step_id=step_id, rule="edit-step")
    value = _current(step, test)
    if value is None:
        raise ConfigError(f'Step "{step_id}" has no {".".join(TEST_KEYS.get(test, (test,)))} to edit',
                          step_id=step_id, rule="edit-test")
    found = _locate(ladder.text, tuple(step.path) + TEST_KEYS[test]) if ladder.text else None
    if found is not None:
        node = found[1]
        import yaml
        if not isinstance(node, yaml.ScalarNode):      # a JSON string is shown as the schema it holds
            span = _dedent(ladder.text[node.start_mark.index:_content_end(node)])
            try:
                if yaml.safe_load(span) == value:
                    return span
            except yaml.YAMLError:
                pass
    return to_yaml_text(value)


def _current(step: Any, test: str) -> Any:
    if test == "requestMatch":
        return step.retrieve.request_match if step.retrieve else None
    if test == "jsonMatches":
        return step.gate.json_matches if step.gate else None
    if test == "match":
        return step.slate_write.match if step.slate_write else None
    return None


def _splice(text: str, path: tuple, new_text: str, schema: Any) -> str | None:
    found = _locate(text, path)
    if found is None:
        return None
    key_node, node, in_flow = found
    start, end = node.start_mark.index, _content_end(node)
    # inside a flow collection (`retrieve: {..., requestMatch: {...}}`) only flow text fits
    lines = [json.dumps(schema, ensure_ascii=False)] if in_flow else (new_text.strip("\n").splitlines() or ["{}"])
    inline = node.start_mark.line == key_node.start_mark.line
    if len(lines) == 1:
        new = lines[0].strip()
    elif inline:
        # a block cannot start on its key's line: open it on the next one, indented under the key
        pad = " " * (key_node.start_mark.column + 2)
        new = "\n" + "\n".join(pad + ln if ln.strip() else "" for ln in lines)
        start = key_node.end_mark.index + 1             # right after the colon that follows the key
        while start < len(text) and text[start - 1] != ":":
            start += 1
    else:
        pad = " " * node.start_mark.column
        new = lines[0].strip() + "".join("\n" + (pad + ln if ln.strip() else "") for ln in lines[1:])
    return text[:start] + new + text[end:]


def _dump_all(ladder: Ladder, path: tuple, schema: Any) -> str:
    import copy

    import yaml
    data = copy.deepcopy(ladder.raw)
    holder = data
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = schema
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def replace_schema(ladder: Ladder, step_id: str, schema: dict, test: str = "requestMatch", *,
                   text: str | None = None) -> Ladder:
    """The ladder with `step_id`'s `test` (requestMatch, jsonMatches or match) replaced by `schema`, its YAML
    text rewritten in place (with `text`, the YAML or JSON the schema was written in, as it was written;
    else in the usual ladder style); raises ConfigError when the step has no such test, ConfigErrors when
    the edited ladder is invalid."""
    from ..config import check_text
    if test not in TEST_KEYS:
        raise ConfigError(f"cannot edit {test!r}: give one of {', '.join(TEST_KEYS)}", step_id=step_id,
                          rule="edit-test")
    step = ladder.step(step_id)
    if step is None:
        raise ConfigError(f'the ladder has no step "{step_id}"', step_id=step_id, rule="edit-step")
    if _current(step, test) is None:
        raise ConfigError(f'Step "{step_id}" has no {".".join(TEST_KEYS[test])} to edit', step_id=step_id,
                          rule="edit-test")
    path = tuple(step.path) + TEST_KEYS[test]
    kw: dict[str, Any] = {"file": ladder.file, "knobs": ladder.knobs, "base_dir": ladder.base_dir}
    attempts = []
    for source in ([text] if text and text.strip() else []) + [to_yaml_text(schema)]:
        spliced = _splice(ladder.text, path, source, schema) if ladder.text else None
        if spliced is not None:
            attempts.append(spliced)
    if ladder.raw is not None:
        attempts.append(_dump_all(ladder, path, schema))
    problems: list[ConfigError] = []
    for text in attempts:
        built, problems = check_text(text, **kw)
        if built is None:
            continue
        now = built.step(step_id)
        if now is not None and _current(now, test) == schema:
            return built
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise ConfigErrors(errors)
    raise ConfigError(f'could not write the edited {test} of step "{step_id}" into the ladder text',
                      step_id=step_id, rule="edit-failed")
