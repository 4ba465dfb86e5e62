"""An edited schema written back into a ladder's YAML text, in place: the rest of the document (its comments,
its layout, its other steps) stays as the author wrote it.

The schema editor (`widgets.RequestMatchEditor`) re-judges recorded outputs against a schema as one types;
applying the edit needs a Ladder whose text says the same, so that `lint`, `validate` and a saved file agree
with what was re-judged. The value's exact span comes from PyYAML's node marks; a block value is replaced
by the new schema in block style at the same indentation, a flow value (or a JSON string) by one line of
JSON. The result is loaded again and checked to hold the new schema; when the splice cannot be made (a
document PyYAML reads differently), the whole document is written out from its parsed form instead (comments
are then lost, which `SchemaRewrite.rewritten` says).

YAML anchors: a schema anchored in one step (`requestMatch: &rm {...}`) and named in others (`requestMatch:
*rm`) is one value. Editing the anchored one keeps the anchor, so the other steps change too; editing an alias
writes the new schema in place of `*rm`, so that step gets its own copy and the others keep theirs. Either
way `rewrite_schema` names the steps concerned (`shared_with`), for the editor to warn before applying.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, ConfigErrors
from .model import Ladder

__all__ = ["TEST_KEYS", "SchemaRewrite", "current_schema", "replace_schema", "rewrite_schema", "schema_text",
           "to_yaml_text"]

# the test a schema edit names -> where it sits under the step
TEST_KEYS = {"requestMatch": ("retrieve", "requestMatch"), "jsonMatches": ("if", "jsonMatches"),
             "match": ("slateWrite", "match")}


@dataclass(frozen=True)
class SchemaRewrite:
    """An edited ladder and what writing the edit into its text did besides: the other steps sharing the
    schema through a YAML anchor, and whether the whole document had to be written out again."""

    ladder: Ladder
    anchor: str | None = None               # the YAML anchor the edited schema was (or was an alias of)
    shared_with: tuple[str, ...] = ()       # other steps whose schemas are (or were) the same YAML node
    unshared: bool = False                  # an alias was edited: this step now has its own copy, the others not
    rewritten: bool = False                 # the document was written out from its parsed form: comments lost

    @property
    def warnings(self) -> list[str]:
        """What the author should know before saving the edited ladder (empty when nothing else changed)."""
        out = []
        if self.shared_with:
            others = ", ".join(f'"{s}"' for s in self.shared_with)
            step_word = "step" if len(self.shared_with) == 1 else "steps"
            anchor = f"&{self.anchor}" if self.anchor else "a YAML anchor"
            if self.unshared:
                out.append(f"this schema was an alias of {anchor}, shared with {step_word} {others}: the edit gives "
                           f"this step its own copy and {others} keep{'s' if len(self.shared_with) == 1 else ''} "
                           "the old schema")
            else:
                out.append(f"this schema is anchored ({anchor}) and {step_word} {others} use"
                           f"{'s' if len(self.shared_with) == 1 else ''} it too: the edit changes "
                           f"{'it' if len(self.shared_with) == 1 else 'them'} as well")
        if self.rewritten:
            out.append("the edit could not be written in place: the whole ladder was written out again, so its "
                       "comments and layout are lost")
        return out


class _Alias:
    """Where a YAML alias (`*name`) stands, and the node it names (PyYAML's composer gives only the node)."""

    def __init__(self, target: Any, anchor: str, start_mark: Any, end_mark: Any) -> None:
        self.target, self.anchor, self.start_mark, self.end_mark = target, anchor, start_mark, end_mark
        self.flow_style = getattr(target, "flow_style", None)
        self.value = target.value


def _compose(text: str) -> Any:
    """The document's node tree, with each alias kept as an `_Alias` where it stands and each anchored node
    carrying its anchor (`ladr_anchor`)."""
    import yaml

    class Composer(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                node = super().compose_node(parent, index)
                return _Alias(node, str(event.anchor), event.start_mark, event.end_mark)
            node = super().compose_node(parent, index)
            if event.anchor is not None and node is not None:
                setattr(node, "ladr_anchor", event.anchor)  # noqa: B010 - PyYAML's Node declares no such slot
            return node

    loader = Composer(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def _resolved(node: Any) -> Any:
    return node.target if isinstance(node, _Alias) else node


def _node_ids(node: Any, seen: set[int] | None = None) -> set[int]:
    """The identities of a node and every node under it (aliases resolved)."""
    import yaml
    seen = set() if seen is None else seen
    node = _resolved(node)
    if id(node) in seen:
        return seen
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            _node_ids(k, seen)
            _node_ids(v, seen)
    elif isinstance(node, yaml.SequenceNode):
        for v in node.value:
            _node_ids(v, seen)
    return seen


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


def _locate(text: str, path: tuple, root: Any = None) -> tuple[Any, Any, bool] | None:
    """(the key node, the value node, whether it sits inside a flow collection) at `path`, or None; an alias
    at `path` is given as an `_Alias` (where `*name` stands)."""
    import yaml
    if root is None:
        try:
            root = _compose(text)
        except yaml.YAMLError:
            return None
    node, key_node, in_flow = root, None, False
    for key in path:
        if node is None:
            return None
        node = _resolved(node)
        in_flow = in_flow or bool(getattr(node, "flow_style", False))
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(key)), None)
            key_node, node = pair if pair is not None else (None, None)
        else:
            node = _child(node, key)
    if node is None or key_node is None:
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
    value = current_schema(step, test)
    if value is None:
        raise ConfigError(f'Step "{step_id}" has no {".".join(TEST_KEYS.get(test, (test,)))} to edit',
                          step_id=step_id, rule="edit-test")
    found = _locate(ladder.text, tuple(step.path) + TEST_KEYS[test]) if ladder.text else None
    if found is not None:
        node = found[1]
        import yaml
        # a JSON string is shown as the schema it holds, an alias (`*rm`) as the schema it names
        if not isinstance(node, (yaml.ScalarNode, _Alias)):
            start = node.start_mark.index
            anchor = getattr(node, "ladr_anchor", None)
            if anchor and ladder.text.startswith(f"&{anchor}", start):    # the anchor is not part of the schema
                start += len(anchor) + 1
            span = _dedent(ladder.text[start:_content_end(node)])
            try:
                if yaml.safe_load(span) == value:
                    return span
            except yaml.YAMLError:
                pass
    return to_yaml_text(value)


def current_schema(step: Any, test: str) -> Any:
    """The schema a step's `test` (a key of `TEST_KEYS`) holds, or None when the step has none."""
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
    start, end = node.start_mark.index, (node.end_mark.index if isinstance(node, _Alias) else _content_end(node))
    # inside a flow collection (`retrieve: {..., requestMatch: {...}}`) only flow text fits
    lines = [json.dumps(schema, ensure_ascii=False)] if in_flow else (new_text.strip("\n").splitlines() or ["{}"])
    # an anchored schema stays anchored (the steps naming it with `*anchor` must still load); the node's span
    # starts at its `&anchor`
    anchor = getattr(node, "ladr_anchor", None)
    mark = f"&{anchor} " if anchor else ""
    if anchor and lines[0].lstrip().startswith(f"&{anchor}"):
        lines[0] = lines[0].lstrip()[len(anchor) + 1:]
        lines = lines if lines[0].strip() else (lines[1:] or ["{}"])
    inline = node.start_mark.line == key_node.start_mark.line
    if len(lines) == 1:
        new = mark + lines[0].strip()
    elif inline:
        # a block cannot start on its key's line: open it on the next one, indented under the key (or where
        # its content was)
        column = key_node.start_mark.column + 2
        content = node.value[0][0] if anchor and isinstance(node.value, list) and node.value and \
            isinstance(node.value[0], tuple) else None
        if content is not None and content.start_mark.line > key_node.start_mark.line:
            column = content.start_mark.column
        pad = " " * column
        new = (" " + mark.strip() if anchor else "") + "\n" + "\n".join(pad + ln if ln.strip() else "" for ln in lines)
        start = key_node.end_mark.index + 1             # right after the colon that follows the key
        while start < len(text) and text[start - 1] != ":":
            start += 1
    else:
        pad = " " * node.start_mark.column
        lines = ([mark.strip()] if anchor else []) + lines
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


def _sharing(ladder: Ladder, step_id: str, path: tuple) -> tuple[str | None, tuple[str, ...], bool]:
    """(the anchor, the other steps whose schemas are the same YAML node as the one at `path` or hold part of
    it, whether the one at `path` is an alias)."""
    import yaml
    try:
        root = _compose(ladder.text)
    except yaml.YAMLError:
        return None, (), False
    found = _locate(ladder.text, path, root)
    if found is None:
        return None, (), False
    node = found[1]
    ids = _node_ids(node)
    if len(ids) == 1 and not isinstance(node, _Alias) and not getattr(node, "ladr_anchor", None):
        return None, (), False
    others = []
    for step in ladder.all_steps():
        if step.id == step_id:
            continue
        for keys in TEST_KEYS.values():
            there = _locate(ladder.text, tuple(step.path) + keys, root)
            if there is not None and ids & _node_ids(there[1]):
                others.append(step.id)
                break
    anchor = node.anchor if isinstance(node, _Alias) else getattr(node, "ladr_anchor", None)
    return anchor, tuple(others), isinstance(node, _Alias)


def replace_schema(ladder: Ladder, step_id: str, schema: dict, test: str = "requestMatch", *,
                   text: str | None = None) -> Ladder:
    """The ladder with `step_id`'s `test` (requestMatch, jsonMatches or match) replaced by `schema`, its YAML
    text rewritten in place (with `text`, the YAML or JSON the schema was written in, as it was written;
    else in the usual ladder style); raises ConfigError when the step has no such test, ConfigErrors when
    the edited ladder is invalid. `rewrite_schema` also says what else the edit changed."""
    return rewrite_schema(ladder, step_id, schema, test, text=text).ladder


def rewrite_schema(ladder: Ladder, step_id: str, schema: dict, test: str = "requestMatch", *,
                   text: str | None = None) -> SchemaRewrite:
    """`replace_schema`, reporting the other steps that share the schema through a YAML anchor and whether
    the whole document was written out again (its comments lost)."""
    from .loader import check_text
    if test not in TEST_KEYS:
        raise ConfigError(f"cannot edit {test!r}: give one of {', '.join(TEST_KEYS)}", step_id=step_id,
                          rule="edit-test")
    step = ladder.step(step_id)
    if step is None:
        raise ConfigError(f'the ladder has no step "{step_id}"', step_id=step_id, rule="edit-step")
    if current_schema(step, test) is None:
        raise ConfigError(f'Step "{step_id}" has no {".".join(TEST_KEYS[test])} to edit', step_id=step_id,
                          rule="edit-test")
    path = tuple(step.path) + TEST_KEYS[test]
    kw: dict[str, Any] = {"file": ladder.file, "knobs": ladder.knobs, "base_dir": ladder.base_dir}
    anchor, shared, alias = _sharing(ladder, step_id, path) if ladder.text else (None, (), False)
    attempts: list[tuple[str, bool]] = []
    for source in ([text] if text and text.strip() else []) + [to_yaml_text(schema)]:
        spliced = _splice(ladder.text, path, source, schema) if ladder.text else None
        if spliced is not None:
            attempts.append((spliced, False))
    if ladder.raw is not None:
        attempts.append((_dump_all(ladder, path, schema), bool(ladder.text)))
    problems: list[ConfigError] = []
    for attempt, dumped in attempts:
        built, problems = check_text(attempt, **kw)
        if built is None:
            continue
        now = built.step(step_id)
        if now is not None and current_schema(now, test) == schema:
            return SchemaRewrite(built, anchor=anchor, shared_with=shared, unshared=alias, rewritten=dumped)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise ConfigErrors(errors)
    raise ConfigError(f'could not write the edited {test} of step "{step_id}" into the ladder text',
                      step_id=step_id, rule="edit-failed")
