"""Labels of recorded outputs ("this output is a request" / "a final answer"): their spellings, the forms a
user gives them in (a mapping, a DataFrame or CSV, a row's `labels` input), and the labels CSV that keeps
them (row, step, node, round, iteration, label), written atomically so a widget can save at every click."""
from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import LadrError

REQUEST, ANSWER = "request", "answer"
CSV_COLUMNS = ("row", "step", "node", "round", "iteration", "label")

_SPELLINGS = {"request": REQUEST, "req": REQUEST, "r": REQUEST, "true": REQUEST, "retrieval": REQUEST,
              "answer": ANSWER, "final": ANSWER, "a": ANSWER, "false": ANSWER}
_UNSET = {"", "-", "—", "none", "nan"}

# (row, step, node, round, iteration): one recorded output of a retrieve step
Key = tuple[str, str, int, int, int]


def to_label(value: Any, where: str) -> str | None:
    """"request" or "answer" from any accepted spelling (None: no label); a LadrError naming `where` else."""
    if value is None or (isinstance(value, float) and value != value):      # None, NaN (an empty CSV cell)
        return None
    if isinstance(value, bool):
        return REQUEST if value else ANSWER
    text = str(value).strip().lower()
    if text in _UNSET:
        return None
    got = _SPELLINGS.get(text)
    if got is None:
        raise LadrError(f"{where}: label {value!r} is neither a request (request, req, r, True) nor an answer "
                        "(answer, final, a, False)")
    return got


def _int(value: Any, name: str, where: str, default: int | None = None) -> int:
    if value is None or (isinstance(value, str) and not value.strip()) or \
            (isinstance(value, float) and value != value):
        if default is None:
            raise LadrError(f"{where}: no {name}")
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise LadrError(f"{where}: {name} {value!r} is not a whole number") from None
    if number != int(number) or number < 1:
        raise LadrError(f"{where}: {name} {value!r} is not a whole number from 1")
    return int(number)


def _key(row: Any, step: Any, node: Any, round_: Any, iteration: Any, where: str) -> Key:
    if row is None or str(row) == "" or step is None or str(step) == "":
        raise LadrError(f"{where}: a label names its row and its step")
    return (str(row), str(step), _int(node, "node", where, 1), _int(round_, "round", where),
            _int(iteration, "iteration", where, 1))


class LabelSheet(dict):
    """Labels by output key, and, when the sheet had an `output` column (`--write-labels` writes one), the text each
    labelled output had when it was labelled (`outputs`): a tuning compares it with what it recorded, so a sheet
    of another run, whose rows and rounds happen to match, is said to be one."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.outputs: dict[Key, str] = {}


def _from_records(records: Iterable[Mapping[str, Any]], source: str) -> dict[Key, str]:
    out = LabelSheet()
    for n, rec in enumerate(records, 1):
        rec = {str(k).strip().lower() if k is not None else k: v for k, v in rec.items()}    # `Row`, ` label`
        row = rec.get("row")
        where = f"{source}, line {n}" + (f" (row {row})" if row not in (None, "") else "")
        missing = [c for c in ("row", "step", "round", "label") if c not in rec]
        if missing:
            raise LadrError(f"{source}: no column {', '.join(missing)} (the columns are row, step, round, label, "
                            "and optionally node and iteration)")
        key = _key(row, rec.get("step"), rec.get("node"), rec.get("round"), rec.get("iteration"), where)
        label = to_label(rec.get("label"), f"row {key[0]} ({source}, line {n})")
        if label is not None:
            out[key] = label
            text = rec.get("output")
            if isinstance(text, str) and text.strip():
                out.outputs[key] = text
    return out


def to_labels(labels: Any) -> dict[Key, str]:
    """Labels by output key from a mapping `{(row, step, round) | (row, step, node, round) | (row, step, node,
    round, iteration): label}`, a DataFrame or CSV path (columns row, step, round, label; node and iteration
    default to 1), or None."""
    if labels is None:
        return {}
    if isinstance(labels, (str, Path)):
        return load_labels(labels)
    if hasattr(labels, "to_dict") and hasattr(labels, "columns"):
        return _from_records(labels.to_dict("records"), "the labels table")
    if not isinstance(labels, Mapping):
        raise LadrError("labels are a mapping {(row, step, round): label}, a DataFrame or a CSV path, "
                        f"not {type(labels).__name__}")
    out: dict[Key, str] = {}
    for k, value in labels.items():
        if not isinstance(k, tuple) or len(k) not in (3, 4, 5):
            raise LadrError(f"label key {k!r}: give (row, step, round), (row, step, node, round) or (row, step, "
                            "node, round, iteration)")
        row, step, *rest = k
        node, round_, iteration = (1, rest[0], 1) if len(rest) == 1 else (*rest, 1)[:3]
        key = _key(row, step, node, round_, iteration, f"label key {k!r}")
        label = to_label(value, f"row {key[0]} (step {key[1]}, round {key[3]})")
        if label is not None:
            out[key] = label
    return out


def input_labels(row: str, value: Any, step: str | None, steps: list[str]) -> dict[Key, str]:
    """The labels a row carries in its `labels` input: a list in round order (of node 1 of `step`, or of the
    only retrieve step), or `{"step/round" | "step/node/round": label}`; JSON text or the value itself."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise LadrError(f"row {row}: its labels input is not JSON: give a list such as [\"request\", "
                            "\"answer\"] or a mapping such as {\"research/1\": \"request\"}") from None
    if value is None or value == "":
        return {}
    out: dict[Key, str] = {}
    if isinstance(value, list):
        target = step or (steps[0] if len(steps) == 1 else None)
        if target is None:
            raise LadrError(f"row {row}: a list of labels is for one retrieve step, and these traces have "
                            f"{', '.join(steps) or 'none'}: give step=..., or label by \"step/round\"")
        for n, item in enumerate(value, 1):
            label = to_label(item, f"row {row} (labels input, round {n})")
            if label is not None:
                out[(row, target, 1, n, 1)] = label
        return out
    if not isinstance(value, Mapping):
        raise LadrError(f"row {row}: its labels input is a list or a mapping, not {type(value).__name__}")
    for where, item in value.items():
        parts = str(where).split("/")
        if len(parts) not in (2, 3):
            raise LadrError(f"row {row}: labels key {where!r} is not \"step/round\" or \"step/node/round\"")
        node, round_ = (1, parts[1]) if len(parts) == 2 else (parts[1], parts[2])
        key = _key(row, parts[0], node, round_, 1, f"row {row} (labels key {where!r})")
        label = to_label(item, f"row {row} (labels key {where!r})")
        if label is not None:
            out[key] = label
    return out


def load_labels(path: str | Path) -> dict[Key, str]:
    """Labels read from a CSV file (columns row, step, round, label; node and iteration default to 1)."""
    path = Path(path)
    if not path.is_file():
        raise LadrError(f"labels file {path} does not exist")
    with open(path, newline="", encoding="utf-8-sig") as fh:     # a spreadsheet's "CSV UTF-8" starts with a BOM
        return _from_records(list(csv.DictReader(fh)), f"labels file {path}")


def save_label_sheet(entries: Iterable[tuple[Key, str | None, Mapping[str, Any]]], path: str | Path) -> Path:
    """Write a sheet to label by hand: one CSV line per (key, label or None, extra columns) in the given order,
    `label` blank where there is none yet, the extra columns (what was recorded, the output) after it; `load_labels`
    reads it back (blank labels are skipped, extra columns ignored). Written atomically."""
    rows = [(key, label, dict(extra)) for key, label, extra in entries]
    extras: list[str] = []
    for _, _, extra in rows:
        extras += [c for c in extra if c not in extras and c not in CSV_COLUMNS]
    return _write_csv(path, [*CSV_COLUMNS, *extras],
                      ([row, step, node, round_, iteration, label or "", *(extra.get(c, "") for c in extras)]
                       for (row, step, node, round_, iteration), label, extra in rows))


def _write_csv(path: str | Path, header: list[str], lines: Iterable[list[Any]]) -> Path:
    """A CSV file written atomically (a temporary file renamed over it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
            out = csv.writer(fh)
            out.writerow(header)
            out.writerows(lines)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def save_labels(labels: Any, path: str | Path) -> Path:
    """Write labels (anything `to_labels` takes, or a SchemaTuning's `labels`) to a CSV file, atomically
    (a temporary file renamed over it), sorted by row, step, iteration, node and round."""
    got = to_labels(getattr(labels, "labels", labels))
    return _write_csv(path, list(CSV_COLUMNS),
                      ([row, step, node, round_, iteration, label] for (row, step, node, round_, iteration), label
                       in sorted(got.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][4], kv[0][2], kv[0][3]))))


__all__ = ["ANSWER", "CSV_COLUMNS", "REQUEST", "Key", "input_labels", "load_labels", "save_label_sheet", "save_labels",
           "to_label", "to_labels"]
