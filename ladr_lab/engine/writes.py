"""Writes (seed 003, SPEC §5): schema-matched slateWrite and gated writes, with three policies.

Every write goes through the slate store's `update_text` / `update_metatag`, which hold a per-file lock
(threads and processes) and replace the file atomically, so concurrent nodes never lose an update.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..config.model import Target
from ..jsonx import extract
from .retrieve import schema_problem


@dataclass
class WriteOutcome:
    """What a write did: status written/skipped, why, and items left out of a mergeByKey."""

    status: str
    reason: str = ""
    chars: int = 0
    skipped_items: list = field(default_factory=list)


class _Skip(Exception):
    """A write that cannot be done as asked; the file is left as it was."""


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return "\n\n".join(value)
    return json.dumps(value, ensure_ascii=False)


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


def merge_by_key(existing: list, items: list, key: str) -> tuple[list, list]:
    """Order kept, matching keys replaced in place, new keys appended; items without the key are returned apart."""
    merged = list(existing)
    where = {}
    for i, item in enumerate(merged):
        if isinstance(item, dict) and key in item:
            where[_key_of(item[key])] = i
    skipped = []
    for item in items:
        if not isinstance(item, dict) or key not in item:
            skipped.append(item)
            continue
        k = _key_of(item[key])
        if k in where:
            merged[where[k]] = item
        else:
            where[k] = len(merged)
            merged.append(item)
    return merged, skipped


def _json_items(value: Any) -> list:
    if isinstance(value, str):
        ext = extract(value)
        if not ext.found:
            raise _Skip("mergeByKey needs JSON, and the source holds none")
        value = ext.value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        out = []
        for v in value:
            out.extend(_json_items(v))
        return out
    return value if isinstance(value, list) else [value]


def write_value(store, target: Target, value: Any, on: str, key: str | None, metatag_type: str | None) -> WriteOutcome:
    """Write `value` to a file's contents or to a metatag with the given policy."""
    folder = store.slate(target.slate).folder(target.folder)
    skipped: list = []
    try:
        if target.metatag is None:
            if on == "overwrite":
                text = _as_text(value)
                folder.write_text(target.file, text)
                return WriteOutcome("written", chars=len(text))
            if on == "append":
                text = _as_text(value)
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
        # a metatag
        is_text = metatag_type == "string"
        if on == "overwrite":
            v = _as_text(value) if is_text else value
            folder.set_metatag(target.file, target.metatag, v)
            return WriteOutcome("written", chars=len(json.dumps(v, ensure_ascii=False)))
        if on == "append":
            if is_text:
                text = _as_text(value)
                folder.update_metatag(target.file, target.metatag, lambda old: append_text(old, text))
                return WriteOutcome("written", chars=len(text))

            def app(old):
                new = value if isinstance(value, list) else [value]
                if old is None:
                    return list(new) if metatag_type in ("string[]", None) or isinstance(value, list) else value
                return (old if isinstance(old, list) else [old]) + list(new)
            folder.update_metatag(target.file, target.metatag, app)
            return WriteOutcome("written")
        items = _json_items(value)

        def merge_tag(old):
            current = old if isinstance(old, list) else ([] if old is None else [old])
            merged, left = merge_by_key(current, items, key)
            skipped.extend(left)
            return merged
        folder.update_metatag(target.file, target.metatag, merge_tag)
        return WriteOutcome("written", skipped_items=skipped,
                            reason=f"{len(skipped)} item(s) without key \"{key}\" skipped" if skipped else "")
    except _Skip as exc:
        return WriteOutcome("skipped", str(exc))


def schema_matched_value(output: str, match: dict, fld: str | None) -> tuple[Any, str | None]:
    """slateWrite's extract → match → field; returns (value, None) or (None, reason it was skipped)."""
    ext = extract(output)
    if not ext.found:
        return None, "no JSON found in the output"
    problem = schema_problem(ext.value, match)
    if problem is not None:
        return None, f"JSON found ({ext.method}) but it does not match slateWrite.match: {problem}"
    value = ext.value
    if fld is not None:
        if not isinstance(value, dict) or fld not in value:
            return None, f'the matched JSON has no field "{fld}"'
        value = value[fld]
    return value, None
