"""Variants of an experiment: named ladders (ladder files, or one ladder under several knob sets), and which of
them differ from another only in what judges the model's outputs, so their cells can be re-judged from that
other variant's recorded runs instead of calling the model again.

Two keys decide it. A variant's *run key* is its ladder document with every judging part taken out (each
step's `retrieve.requestMatch`, its gate `if` — condition and branches —, its `slateWrite.match`) and the
ladder's `name`; its *branch key* takes out only the test schemas (`requestMatch`, `jsonMatches`, `equals`,
`match`), keeping the gates' branches. Variants with the same run key send the model the same prompts for as
long as the recorded outputs are judged the same way, so a later one is *re-judged* from the first: its
cells replay that variant's traces through the engine (`models.ReplayModel`). Variants that also share the
branch key, on a row where no verdict flips, are the very same run: the cell is copied without running anything.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.model import Ladder
from ..errors import LadrError

__all__ = ["NAME_PATTERN", "Variant", "assign_bases", "branch_key", "load_variants", "run_key"]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_TESTS = ("requestMatch", "jsonMatches", "equals", "match")


@dataclass(frozen=True)
class Variant:
    """One variant: its name, the loaded ladder, the knob set applied (empty when none) and where it came from;
    `base` names the variant whose recorded runs it is re-judged from (None: it runs the model itself)."""

    name: str
    ladder: Ladder = field(repr=False)
    knobs: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    base: str | None = None

    @property
    def rejudged(self) -> bool:
        """True when its cells come from another variant's recorded runs."""
        return self.base is not None


def _load(ladder: Any, knobs: Mapping[str, Any] | None) -> tuple[Ladder, str]:
    from ..config import load_ladder
    from ..config.loader import load_ladder_text
    if isinstance(ladder, Ladder):
        if not knobs:
            return ladder, ladder.file or f"<ladder {ladder.name}>"
        merged = {**ladder.knobs, **knobs}
        return (load_ladder_text(ladder.text, file=ladder.file, knobs=merged, base_dir=ladder.base_dir),
                ladder.file or f"<ladder {ladder.name}>")
    if isinstance(ladder, (str, Path)):
        return load_ladder(ladder, knobs=dict(knobs) if knobs else None), str(ladder)
    raise LadrError(f"a variant is a ladder file or a Ladder, not {type(ladder).__name__}")


def _check_name(name: str) -> str:
    if not NAME_PATTERN.match(name):
        raise LadrError(f"variant name {name!r}: use 1-64 letters, digits, '.', '_' or '-' (it names a folder)")
    return name


def load_variants(ladders: Any, *, knob_sets: Mapping[str, Mapping[str, Any]] | None = None,
                  knobs: Mapping[str, Any] | None = None) -> list[Variant]:
    """The variants of an experiment: `ladders` is a mapping {name: ladder file or Ladder, or {"ladder": file or
    Ladder, "knobs": {...}}: a ladder under its own knobs}, a list of ladder files (named by their file stem), or one
    ladder; `knob_sets` {name: knobs} runs each ladder under each knob set (named `set` for one ladder, `ladder-set`
    for several); `knobs` applies to all (a variant's own knobs over them, a knob set's over both). Bases are
    assigned."""
    if isinstance(ladders, Mapping):
        named = [(str(k), v) for k, v in ladders.items()]
    elif isinstance(ladders, (str, Path, Ladder)):
        named = [(_stem(ladders), ladders)]
    elif isinstance(ladders, Sequence):
        named = []
        for lad in ladders:
            name = _stem(lad)
            n, base = 2, name
            while any(name == x for x, _ in named):
                name, n = f"{base}-{n}", n + 1
            named.append((name, lad))
    else:
        raise LadrError("ladders: give a mapping {name: ladder}, a list of ladder files, or one ladder")
    if not named:
        raise LadrError("ladders: give at least one ladder")
    out: list[Variant] = []
    sets = list((knob_sets or {}).items()) or [("", {})]
    for lname, lad in named:
        own: Mapping[str, Any] = {}
        if isinstance(lad, Mapping):
            unknown = sorted(set(map(str, lad)) - {"ladder", "knobs"})
            if unknown or "ladder" not in lad:
                raise LadrError(f"variant {lname}: give {{ladder: FILE, knobs: {{...}}}}"
                                + (f" (unknown key {unknown[0]!r})" if unknown else " (no ladder)"))
            own, lad = dict(lad.get("knobs") or {}), lad["ladder"]
        for sname, kset in sets:
            name = sname if len(named) == 1 and sname else f"{lname}-{sname}" if sname else lname
            merged = {**(knobs or {}), **own, **dict(kset)}
            ladder, source = _load(lad, merged or None)
            out.append(Variant(_check_name(name), ladder, merged, source))
    names = [v.name for v in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise LadrError(f"variant names must be unique (repeated: {', '.join(dup)})")
    return assign_bases(out)


def _stem(ladder: Any) -> str:
    if isinstance(ladder, Ladder):
        return re.sub(r"[^A-Za-z0-9._-]", "_", ladder.name)[:64] or "ladder"
    return re.sub(r"[^A-Za-z0-9._-]", "_", Path(str(ladder)).stem)[:64] or "ladder"


def assign_bases(variants: list[Variant]) -> list[Variant]:
    """The variants with `base` set: each variant whose run key an earlier variant shares is re-judged from
    the first such variant."""
    first: dict[str, str] = {}
    out = []
    for v in variants:
        key = run_key(v.ladder)
        base = first.get(key)
        if base is None:
            first[key] = v.name
        out.append(Variant(v.name, v.ladder, v.knobs, v.source, base))
    return out


def _strip(doc: Any, *, branches: bool) -> Any:
    """The document without its judging parts (and without gate branches when `branches`)."""
    if isinstance(doc, list):
        return [_strip(x, branches=branches) for x in doc]
    if not isinstance(doc, dict):
        return doc
    out: dict[str, Any] = {}
    for k, v in doc.items():
        if k == "retrieve" and isinstance(v, dict):
            out[k] = {kk: _strip(vv, branches=branches) for kk, vv in v.items() if kk != "requestMatch"}
        elif k == "if" and isinstance(v, dict):
            if not branches:
                out[k] = {kk: _strip(vv, branches=branches) for kk, vv in v.items() if kk not in _TESTS}
        elif k == "slateWrite" and isinstance(v, (dict, list)):
            writes = v if isinstance(v, list) else [v]
            kept = [{kk: _strip(vv, branches=branches) for kk, vv in w.items() if kk != "match"}
                    if isinstance(w, dict) else w for w in writes]
            out[k] = kept if isinstance(v, list) else kept[0]
        else:
            out[k] = _strip(v, branches=branches)
    return out


def _key(ladder: Ladder, *, branches: bool) -> str:
    doc = _strip(ladder.raw, branches=branches)
    if isinstance(doc, dict):
        doc = {k: v for k, v in doc.items() if k != "name"}
    data = json.dumps({"doc": doc, "knobs": ladder.knobs, "base": str(ladder.base_dir)}, sort_keys=True,
                      default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def run_key(ladder: Ladder) -> str:
    """What decides the prompts the model is sent: the ladder without requestMatch, gates and write matches."""
    return _key(ladder, branches=True)


def branch_key(ladder: Ladder) -> str:
    """The ladder without its test schemas only: equal branch keys and no flipped verdict mean the same run."""
    return _key(ladder, branches=False)
