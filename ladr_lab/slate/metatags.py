"""Metatag storage and semantics: the `.metatags.json` sidecar, typed values, `contains`, `created`.

The sidecar maps folder-relative paths to objects of user metatags. It is parsed once and cached
by the file's (inode, mtime_ns, size); the store rewrites it atomically under a folder-wide lock.

`created` cannot come from the file system: every atomic write replaces the file with a new inode,
so a birth time (where a platform has one) would be the last write. The store therefore keeps an
append-only log, `.ladr/created.log`, of one JSON line `[path, created_ns]` per file it creates
(or first rewrites), read incrementally. Files never written by the store fall back to the birth
time, else the earlier of mtime and ctime.
"""
from __future__ import annotations

import json
import math
import os
import stat
from datetime import datetime, timezone
from typing import Any

from ..errors import SlateError

__all__ = ["CreatedLog", "FOLDER_LEVEL", "METATAG_TYPES", "SIDECAR", "SYSTEM_METATAGS", "Sidecar", "contains_match",
           "fallback_created_ns", "format_metatag_value", "iso_utc", "parse_metatag_text", "value_matches_type"]

METATAG_TYPES = ("string", "string[]", "number", "boolean", "object")
FOLDER_LEVEL = ("index", "tree")          # the system metatags that describe the folder, not a file
SYSTEM_METATAGS = (*FOLDER_LEVEL, "created", "modified", "size", "embedding")
SIDECAR = ".metatags.json"


def value_matches_type(value: Any, type_: str) -> bool:
    """True when `value` has the declared metatag type (object accepts any JSON value)."""
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "string[]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if type_ == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "object":
        return True
    raise SlateError(f'unknown metatag type "{type_}" (known: {", ".join(METATAG_TYPES)})')


def parse_metatag_text(text: str, type_: str | None) -> Any:
    """A metatag value typed as a person writes it (a command line, an edit box) for its declared type: `string`
    as is; `string[]` a JSON array of strings or comma-separated words (`breakfast, recipe`); `number` a finite
    number; `boolean` true/false (yes/no, 1/0, any case); `object` any JSON text; undeclared (None): JSON when the
    text is JSON, else the text. A value that is not of the type is a SlateError saying what would be."""
    if type_ is not None and type_ not in METATAG_TYPES:
        raise SlateError(f'unknown metatag type "{type_}" (known: {", ".join(METATAG_TYPES)})')
    stripped = text.strip()
    if type_ == "string":
        return text
    if type_ == "string[]":
        if stripped.startswith("["):
            try:
                value = json.loads(stripped)
            except json.JSONDecodeError as exc:
                raise SlateError(f"{stripped!r} is not a JSON array of strings ({exc.msg})") from None
            if not value_matches_type(value, "string[]"):
                raise SlateError(f"{stripped!r} is not a JSON array of strings")
            return value
        return [part.strip() for part in text.split(",") if part.strip()]
    if type_ == "number":
        try:
            number = float(stripped)
        except ValueError:
            raise SlateError(f"{stripped!r} is not a number") from None
        if not math.isfinite(number):
            raise SlateError(f"{stripped!r} is not a finite number")
        return int(number) if number.is_integer() and "." not in stripped and "e" not in stripped.lower() \
            else number
    if type_ == "boolean":
        truth = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}.get(stripped.lower())
        if truth is None:
            raise SlateError(f"{stripped!r} is not a boolean (true or false)")
        return truth
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        if type_ == "object":
            raise SlateError(f"{stripped!r} is not JSON ({exc.msg})") from None
        return text


def format_metatag_value(value: Any, type_: str | None) -> str:
    """A stored metatag value as `parse_metatag_text` reads it back for the same type (an edit box's text)."""
    if value is None:
        return ""
    if type_ == "string" and isinstance(value, str):
        return value
    if type_ == "string[]" and value_matches_type(value, "string[]") and value and \
            all(v and v == v.strip() and "," not in v for v in value) and not value[0].startswith("["):
        return ", ".join(value)             # words read back as words; anything else as its JSON array
    if type_ is None and isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return value                     # plain text reads back as itself
    return json.dumps(value, ensure_ascii=False)


def contains_match(value: Any, contains: str | None, declared: str | None = None) -> bool:
    """Seed 000's `contains` test: a case-insensitive substring of a string, or of any element of a
    list; ignored (True) for numbers, booleans and objects, by declared type when known."""
    if contains is None:
        return True
    if declared is not None and declared not in ("string", "string[]"):
        return True
    needle = contains.casefold()
    if isinstance(value, str):
        return needle in value.casefold()
    if isinstance(value, list):
        return any(isinstance(v, str) and needle in v.casefold() for v in value)
    return True


def iso_utc(ns: int) -> str:
    """Format nanoseconds since the epoch as ISO-8601 UTC to the second ("2026-11-30T09:55:40Z")."""
    return datetime.fromtimestamp(ns // 1_000_000_000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def fallback_created_ns(st: os.stat_result) -> int:
    """Best creation time the file system offers for a file the store did not create."""
    birth = getattr(st, "st_birthtime", None)
    if birth is not None:
        return int(birth * 1e9)
    return min(st.st_mtime_ns, st.st_ctime_ns)


def _stat_key(st: os.stat_result) -> tuple:
    # ctime too: a rewrite in place that keeps the size and puts the old mtime back still moves it
    return (st.st_ino, st.st_mtime_ns, st.st_size, st.st_ctime_ns)


class Sidecar:
    """A folder's `.metatags.json`, parsed once and re-parsed only when the file changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._key: tuple | None = None
        self._data: dict[str, dict] = {}

    def load(self) -> dict[str, dict]:
        """The parsed sidecar ({} when missing or empty); raises SlateError when it is corrupt.

        The returned dict is the cache itself: callers must not modify it.
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._key, self._data = None, {}
            return self._data
        except OSError as exc:
            raise SlateError(f"cannot read metatags file {self.path}: {exc}") from exc
        if not stat.S_ISREG(st.st_mode):
            raise SlateError(f"metatags file {self.path} is not a regular file")
        key = _stat_key(st)
        if key == self._key:
            return self._data
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            raise SlateError(f"cannot read metatags file {self.path}: {exc}") from exc
        self._data = self.parse(raw)
        self._key = key
        return self._data

    def parse(self, raw: bytes) -> dict[str, dict]:
        """Parse sidecar bytes, checking the `{path: {name: value}}` shape."""
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise SlateError(f"corrupt metatags file {self.path}: {exc}") from exc
        if not isinstance(data, dict):
            raise SlateError(f"corrupt metatags file {self.path}: top level must be an object")
        for rel, tags in data.items():
            if not isinstance(tags, dict):
                raise SlateError(f'corrupt metatags file {self.path}: entry "{rel}" must be an object')
        return data

    @staticmethod
    def serialize(data: dict[str, dict]) -> bytes:
        """The bytes the store writes: indented JSON, keys in insertion order, UTF-8."""
        try:
            return (json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise SlateError(f"metatag value is not JSON: {exc}") from exc

    def adopt(self, data: dict[str, dict], st: os.stat_result) -> None:
        """Cache `data` as the parse of the file the store just wrote (whose stat is `st`)."""
        self._data, self._key = data, _stat_key(st)

    def forget(self) -> None:
        """Drop the cached parse."""
        self._key, self._data = None, {}


class CreatedLog:
    """The append-only `created` log (see the module docstring); later lines win."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._times: dict[str, int] = {}
        self._offset = 0
        self._ino: int | None = None

    def _catch_up(self) -> None:
        try:
            st = os.stat(self.path)
        except OSError:
            self._times, self._offset, self._ino = {}, 0, None
            return
        if st.st_ino != self._ino or st.st_size < self._offset:
            self._times, self._offset, self._ino = {}, 0, st.st_ino
        if st.st_size == self._offset:
            return
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except OSError:
            return
        end = chunk.rfind(b"\n")
        if end < 0:
            return  # a line still being appended; read it next time
        for line in chunk[:end].split(b"\n"):
            try:
                rel, ns = json.loads(line)
                self._times[str(rel)] = int(ns)
            except (ValueError, TypeError):
                continue  # a damaged line costs one created time, not the log
        self._offset += end + 1

    def get(self, rel: str) -> int | None:
        """The recorded creation time of `rel` in nanoseconds, if any."""
        self._catch_up()
        return self._times.get(rel)

    def record(self, rel: str, ns: int) -> None:
        """Append a creation time for `rel` (O_APPEND keeps concurrent writers' lines whole)."""
        line = (json.dumps([rel, ns], ensure_ascii=True) + "\n").encode("ascii")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        self._times[rel] = ns

    def forget(self) -> None:
        """Drop what was read so far."""
        self._times, self._offset, self._ino = {}, 0, None
