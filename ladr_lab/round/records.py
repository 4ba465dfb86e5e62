"""The small typed records one round produces: the verdict on an output (`Judgement`), one retrieved
entry's record (`Fetched`), a prompt's named parts (`PromptSection`) and the recorded length of each
(`SectionSpan`).

They live here, below the trace, because the verdict, the prompt's retrieved blocks and the prompt split
make them; `ladr_lab.trace` re-exports them and writes them into its events (`Judgement` and `Fetched` as
dicts, `SectionSpan` as the `[kind, name, chars]` list SPEC §9 fixes).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

__all__ = ["Fetched", "Judgement", "PromptSection", "Record", "SectionSpan", "spans"]


class Record:
    """A small typed record inside an event: `_ORDER` lists its keys as the trace writes them; the first
    `_ALWAYS` are always written, the rest only when set; keys a reader does not know stay in `extra`."""

    _ORDER: ClassVar[tuple[str, ...]] = ()
    _ALWAYS: ClassVar[int] = 0
    extra: Mapping[str, Any]

    def to_dict(self) -> dict:
        """The record as the trace writes it."""
        d: dict[str, Any] = {k: getattr(self, k) for k in self._ORDER[: self._ALWAYS]}
        for name in self._ORDER[self._ALWAYS:]:
            value = getattr(self, name)
            if value is not None:
                d[name] = value
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Any:
        """Read the record back from its dict form (a key missing from an older trace takes its default)."""
        known = {k: v for k, v in data.items() if k in cls._ORDER}
        return cls(**known, extra={k: v for k, v in data.items() if k not in cls._ORDER})  # type: ignore[call-arg]


@dataclass(frozen=True, kw_only=True)
class Judgement(Record):
    """Why an output was judged as it was, as data (the `reason` text says the same in words).

    `test` is what was applied: "requestMatch", "jsonMatches", "match" (slateWrite) or "equals".
    `extraction` is the JSON extraction rule that found a value ("strict" | "fence" | "balanced"), None
    when no JSON was found. For a requestMatch match, `form` is "wrapped" or "bare". For a schema failure,
    `keyword` is the deciding JSON Schema keyword, `schema_path` the JSON pointer of the subschema that
    holds it and `instance_path` the pointer of the offending value (`maxItems` at
    `/properties/request/properties/files`, instance `/request/files`)."""

    test: str = ""
    matched: bool = False
    extraction: str | None = None
    form: str | None = None
    keyword: str | None = None
    schema_path: str | None = None
    instance_path: str | None = None
    message: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    _ORDER: ClassVar[tuple[str, ...]] = ("test", "matched", "extraction", "form", "keyword", "schema_path",
                                         "instance_path", "message")
    _ALWAYS: ClassVar[int] = 2


@dataclass(frozen=True, kw_only=True)
class Fetched(Record):
    """One retrieved entry of a round: which path, by which mode, with what status (SPEC §3)."""

    path: str = ""                  # canonical folder-relative path (or the query label of a mode)
    mode: str = ""                  # one of round.vocabulary.MODES (files, subfolders, metatag, glob, similarTo)
    status: str = ""                # one of round.vocabulary.STATUSES (fetched, not_found, already_in_context, ...)
    chars: int = 0                  # characters delivered to the prompt
    score: float | None = None      # similarTo's cosine
    asked: str | None = None        # the path as the model wrote it, when it differs from `path`
    note: str | None = None         # why a no_match / not_found was answered, for the model and the author
    truncated: bool | None = None   # the content was cut at the fetch bound
    total_bytes: int | None = None  # size in bytes of what was cut, when truncated
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    _ORDER: ClassVar[tuple[str, ...]] = ("path", "mode", "status", "chars", "score", "asked", "note", "truncated",
                                         "total_bytes")
    _ALWAYS: ClassVar[int] = 4


@dataclass(frozen=True)
class SectionSpan:
    """One block of the user message as recorded: its kind (field | knowledge | retrieved | forced), its name
    and its length in characters. It unpacks as the trace's `[kind, name, chars]` (`to_list()`)."""

    kind: str
    name: str
    chars: int

    def __iter__(self) -> Iterator[Any]:
        return iter((self.kind, self.name, self.chars))

    def to_list(self) -> list:
        """The span as the trace writes it: `[kind, name, chars]`."""
        return [self.kind, self.name, self.chars]

    @classmethod
    def of(cls, value: SectionSpan | Iterable[Any]) -> SectionSpan:
        """A span from itself or from a trace's `[kind, name, chars]` list."""
        if isinstance(value, SectionSpan):
            return value
        kind, name, chars = value
        return cls(str(kind), str(name), int(chars))


def spans(values: Iterable[SectionSpan | Iterable[Any]] | None) -> tuple[SectionSpan, ...] | None:
    """Recorded sections as spans (None stays None: a trace without them)."""
    return None if values is None else tuple(SectionSpan.of(v) for v in values)


@dataclass(frozen=True)
class PromptSection:
    """One named part of a prompt: kind (system | field | retrieved | forced | user), name and text."""

    kind: str
    name: str
    text: str
