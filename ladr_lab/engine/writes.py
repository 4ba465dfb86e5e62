"""Writes (seed 003, SPEC §5): schema-matched slateWrite and gated writes, with three policies.

A node *plans* its writes (the value is resolved at once, from this node's output and sources) and
the step *applies* them when it is known not to abort ("the write only fires if the step doesn't
abort"). Applying goes through the slate store's `update_text` / `update_metatag`, which hold a
per-file lock (threads and processes) and replace the file atomically. Writes are opportunistic:
anything that stops one (no JSON, no match, a file that is not an array, a value of the wrong
metatag type, a missing file, a refused path, a full disk) is a recorded skip, never a failed run.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..config.model import Target
from ..errors import LadrError
from ..jsonx import extract
from ..round.verdict import judge_json
from ..slate import value_matches_type
from ..trace import Judgement
from .state import Survivors, join_survivors

__all__ = ["PlannedWrite", "WriteOutcome", "append_text", "merge_by_key", "schema_matched_value", "write_value"]


@dataclass
class WriteOutcome:
    """What a write did: status written/skipped, why, and items left out of a mergeByKey."""

    status: str
    reason: str = ""
    chars: int = 0
    skipped_items: list = field(default_factory=list)


@dataclass
class PlannedWrite:
    """A write a node asked for, applied (or skipped) when its step settles."""

    node: int
    mechanism: str                  # slateWrite | gate
    target: Target
    policy: str
    key: str | None = None
    value: Any = None
    metatag_type: str | None = None
    branch: str | None = None       # gate writes: then | else
    source: str | None = None       # gate writes: the source, described
    skip: str | None = None         # set when the write is already known not to happen
    verdict: Judgement | None = None  # slateWrite: the output judged against `match`


class _Skip(Exception):
    """A write that cannot be done as asked; the file is left as it was."""


def append_text(existing: str | None, new: str) -> str:
    """Text append: joined with a blank line (nothing added to an empty file)."""
    if existing is None or not existing.strip():
        return new
    return existing.rstrip("\n") + "\n\n" + new


def _key_of(value: Any) -> Any:
    # JSON scalars compare by type and value ("1" and 1 are different keys); others by canonical JSON.
    if value is None or isinstance(value, (str, int, float, bool)):
        return (type(value).__name__, value)
    return ("json", json.dumps(value, sort_keys=True))


def merge_by_key(existing: list, items: list, key: str | None) -> tuple[list, list]:
    """Order kept, matching keys replaced in place, new keys appended; items without the key are returned
    apart. Existing entries that share a key with an incoming item are all replaced by it: the first
    keeps its place, the others go (seed 003: "existing entries with matching keys are replaced")."""
    if not key:
        raise _Skip("mergeByKey needs a key")
    incoming: dict[Any, Any] = {}
    order: list[Any] = []
    skipped = []
    for item in items:
        if not isinstance(item, dict) or key not in item:
            skipped.append(item)
            continue
        k = _key_of(item[key])
        if k not in incoming:
            order.append(k)
        incoming[k] = item              # a key repeated in one write: the last item wins
    merged: list = []
    placed: set = set()
    for item in existing:
        k = _key_of(item[key]) if isinstance(item, dict) and key in item else None
        if k is not None and k in incoming:
            if k not in placed:
                merged.append(incoming[k])
                placed.add(k)
            continue
        merged.append(item)
    merged.extend(incoming[k] for k in order if k not in placed)
    return merged, skipped


def _json_items(value: Any) -> list:
    if isinstance(value, Survivors):
        out: list = []
        for v in value:
            out.extend(_json_items(v))
        return out
    if isinstance(value, str):
        ext = extract(value)
        if not ext.found:
            raise _Skip("mergeByKey needs JSON, and the source holds none")
        value = ext.value
    return value if isinstance(value, list) else [value]


def _typed(value: Any, mtype: str | None) -> Any:
    """A source value shaped for a metatag of declared type `mtype` (SPEC §1's types)."""
    if mtype == "string":
        return join_survivors(value)
    if isinstance(value, Survivors):
        if mtype in ("string[]", "object"):
            # seed 003: "survivors are written as a JSON array", however many survived (one is ["x"])
            return _survivor_array(value, mtype)
        if len(value) == 1:               # a number/boolean (or undeclared) metatag: one survivor is that output
            return _typed(value[0], mtype)
        return [_typed(v, "object") for v in value]
    if isinstance(value, str) and mtype is not None:
        ext = extract(value)
        if ext.found and ext.method == "strict":
            parsed = ext.value
            if mtype == "object" or value_matches_type(parsed, mtype):
                return parsed
    return value


def _survivor_array(value: Survivors, mtype: str) -> list:
    """Survivors as a JSON array: for `object` each survivor's JSON value (its text when it is not JSON); for
    `string[]` each survivor's text, or its strings when it is a JSON array of strings (so one node that emits
    `["a", "b"]` writes those tags, as several nodes each emitting one do)."""
    out: list = []
    for v in value:
        ext = extract(v) if isinstance(v, str) else None
        parsed = ext.value if ext is not None and ext.found and ext.method == "strict" else v
        if mtype == "object":
            out.append(parsed)
        elif isinstance(parsed, list) and all(isinstance(x, str) for x in parsed):
            out.extend(parsed)
        else:
            out.append(join_survivors(v))
    return out


def _check_type(name: str, value: Any, mtype: str | None) -> None:
    if mtype is not None and value is not None and not value_matches_type(value, mtype):
        shown = json.dumps(value, ensure_ascii=False)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise _Skip(f'metatag "{name}" is declared {mtype}, and the new value would be {shown} '
                    "(the slate's schema is enforced)")


def write_value(store, target: Target, value: Any, on: str, key: str | None, metatag_type: str | None) -> WriteOutcome:
    """Write `value` to a file's contents or to a metatag with the given policy; never raises for a
    write that cannot be done (it is a skipped WriteOutcome with the reason)."""
    try:
        return _write(store, target, value, on, key, metatag_type)
    except _Skip as exc:
        return WriteOutcome("skipped", str(exc))
    except (LadrError, OSError) as exc:   # a missing file, a refused path, a full disk: not the ladder's fault
        return WriteOutcome("skipped", f"{type(exc).__name__}: {exc}")


def _write(store, target: Target, value: Any, on: str, key: str | None, mtype: str | None) -> WriteOutcome:
    folder = store.slate(target.slate).folder(target.folder)
    skipped: list = []
    if target.metatag is None:
        if on == "overwrite":
            text = join_survivors(value)
            folder.write_text(target.file, text)
            return WriteOutcome("written", chars=len(text))
        if on == "append":
            text = join_survivors(value)
            folder.update_text(target.file, lambda old: append_text(old, text))
            return WriteOutcome("written", chars=len(text))
        items = _json_items(value)

        def merge(old: str | None) -> str:
            if old is None or not old.strip():
                current = []
            else:
                try:
                    current = json.loads(old)
                except ValueError:
                    raise _Skip(f'the existing content of "{target.file}" is not a JSON array') from None
                if not isinstance(current, list):
                    raise _Skip(f'the existing content of "{target.file}" is not a JSON array')
            merged, left = merge_by_key(current, items, key)
            skipped.extend(left)
            return json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
        new = folder.update_text(target.file, merge)
        return WriteOutcome("written", chars=len(new), skipped_items=skipped,
                            reason=f"{len(skipped)} item(s) without key \"{key}\" skipped" if skipped else "")
    name = target.metatag
    if not folder.exists(target.file):
        raise _Skip(f'metatag "{name}" is set on a file, and "{target.file}" does not exist')
    if on == "overwrite":
        v = _typed(value, mtype)
        _check_type(name, v, mtype)
        folder.set_metatag(target.file, name, v)
        return WriteOutcome("written", chars=len(json.dumps(v, ensure_ascii=False)))
    if on == "append":
        if mtype == "string":
            text = join_survivors(value)

            def app_text(old):
                new = append_text(old if isinstance(old, str) else None if old is None else join_survivors(old), text)
                return new
            folder.update_metatag(target.file, name, app_text)
            return WriteOutcome("written", chars=len(text))
        typed = _typed(value, mtype)

        def app(old):
            new = typed if isinstance(typed, list) else [typed]
            if old is None:
                result = list(new) if mtype in ("string[]", None) or isinstance(typed, list) else typed
            else:
                result = (old if isinstance(old, list) else [old]) + list(new)
            _check_type(name, result, mtype)
            return result
        folder.update_metatag(target.file, name, app)
        return WriteOutcome("written")
    items = _json_items(value)

    def merge_tag(old):
        current = old if isinstance(old, list) else ([] if old is None else [old])
        merged, left = merge_by_key(current, items, key)
        skipped.extend(left)
        _check_type(name, merged, mtype)
        return merged
    folder.update_metatag(target.file, name, merge_tag)
    return WriteOutcome("written", skipped_items=skipped,
                        reason=f"{len(skipped)} item(s) without key \"{key}\" skipped" if skipped else "")


def schema_matched_value(output: str, match: dict, fld: str | None) -> tuple[Any, str | None, Judgement]:
    """slateWrite's extract → match → field: (value, None, judgement) or (None, why it was skipped, judgement)."""
    judgement, why, value = judge_json(output, match, "match")
    if not judgement.matched:
        return None, why, judgement
    if fld is not None:
        if not isinstance(value, dict) or fld not in value:
            return None, f'the matched JSON has no field "{fld}"', judgement
        value = value[fld]
    return value, None, judgement
