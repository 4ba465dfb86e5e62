"""Evaluation: one ladder run over many inputs, with bounded concurrency, a progress bar, one trace per row,
a results table, resumption after an interruption, and re-judging the whole evaluation at once.

The output folder holds `traces/<row>.jsonl` (one trace per row), `results.jsonl` (one line per finished
row, appended as rows finish: what a resumed evaluation reads) and `results.csv` (the table, in input
order, written at the end). A row is finished once its line is in `results.jsonl`, whatever its status;
a resumed evaluation skips finished rows whose fingerprint (the ladder text, knobs, model name and the
row's inputs) is unchanged, and runs the rest. A row that fails (a model error, a bad input, a bug)
is a row with status `error`; it never stops the others.

Slates: by default every row uses the slates as bound (`path:` or `slates=`), shared: writes are atomic
and serialized per file, so concurrent rows never lose an update or tear a file, but a row may see what
another row wrote (as successive runs of a deployed ladder would). `isolate_slates=True` gives each row
its own copy of every slate the ladder writes to, under `slates/<row>/<title>` in the output folder
(read-only slates are still shared), so rows are independent and reproducible.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.positions import as_ladder
from ..config.model import Ladder
from ..display import Displayable
from ..errors import LadrError
from ..trace import Trace
from .cells import CellSpec, run_cell, run_pool, safe_name
from .inputs import check_input_columns, input_columns, most_common_error

RESULTS = "results.jsonl"
TABLE = "results.csv"
COLUMNS = ("row", "status", "output", "llm_calls", "tokens_in", "tokens_out", "cost", "gates", "writes", "error",
           "error_type", "error_step", "latency", "seconds", "trace")


def load_inputs(inputs: Any) -> list[tuple[str, dict]]:
    """(row id, input fields) for each row of a DataFrame, a CSV or JSONL file, or a list of mappings.

    Column `id` names the row (default: its 1-based position); `context` (or `input`) sets input.context;
    every other column sets input.NAME. CSV cells are read as text."""
    records: list[dict]
    if isinstance(inputs, (str, Path)):
        path = Path(inputs)
        if not path.is_file():
            raise LadrError(f"inputs file {path} does not exist")
        if path.suffix.lower() in (".jsonl", ".ndjson"):
            records = []
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if line.strip():
                    try:
                        value = json.loads(line)
                    except ValueError as exc:
                        raise LadrError(f"{path}:{n}: not a JSON line ({exc})") from None
                    if not isinstance(value, dict):
                        raise LadrError(f"{path}:{n}: each line must be a JSON object of input fields")
                    records.append(value)
        elif path.suffix.lower() == ".csv":
            import pandas as pd
            try:
                records = pd.read_csv(path, dtype=str, keep_default_na=False).to_dict("records")
            except Exception as exc:
                raise LadrError(f"{path}: not a CSV file pandas can read ({exc})") from None
        else:
            raise LadrError(f"inputs file {path}: give a .csv or a .jsonl file")
    elif hasattr(inputs, "to_dict") and hasattr(inputs, "columns"):
        records = inputs.to_dict("records")
    else:
        records = [dict(r) for r in inputs]
    rows: list[tuple[str, dict]] = []
    for pos, rec in enumerate(records, 1):
        rec = {str(k): v for k, v in rec.items()}
        rid = str(rec.pop("id", pos))
        if "context" not in rec and "input" in rec:
            rec["context"] = rec.pop("input")
        rows.append((rid, rec))
    ids = [r for r, _ in rows]
    dup = sorted({r for r in ids if ids.count(r) > 1})
    if dup:
        raise LadrError(f"row ids must be unique (repeated: {', '.join(dup[:5])})")
    safe = [safe_name(r) for r in ids]
    if len(set(safe)) != len(safe):
        raise LadrError("two row ids map to the same trace file name; use ids of letters, digits, '.', '_' or '-'")
    return rows


def fingerprint(ladder: Ladder, knobs: dict | None, model_name: str, inputs: dict,
                model_options: Mapping[str, Any] | None = None) -> str:
    """What a finished row's result depends on: a resumed batch runs the row again when it changed."""
    import hashlib
    doc = {"ladder": ladder.text, "knobs": knobs or {}, "model": model_name, "inputs": inputs}
    if model_options:          # only when given: rows finished before model options existed keep their fingerprint
        doc["model_options"] = dict(model_options)
    data = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


@dataclass
class Evaluation(Displayable):
    """An evaluation's results: one row per input (status, output, calls, tokens, cost, gate outcomes,
    writes, error, the trace's path), read from and saved to its output folder."""

    out: Path
    rows: list[dict] = field(default_factory=list)
    interrupted: bool = False
    _traces: dict[str, Trace] = field(default_factory=dict, repr=False, compare=False)

    @property
    def results(self):
        """The results as a pandas DataFrame (input fields as `input.NAME` columns), in input order."""
        return self.to_dataframe()

    def to_dataframe(self):
        """The results as a pandas DataFrame, in input order."""
        import pandas as pd
        rows = [{k: v for k, v in r.items() if k not in ("fingerprint", "pos")} for r in self.rows]
        extra = sorted({k for r in rows for k in r if k not in COLUMNS})
        return pd.DataFrame(rows, columns=[COLUMNS[0], *extra, *COLUMNS[1:]])

    def trace(self, row: str) -> Trace:
        """The trace of one row (read once, then kept: re-judging reads every row's trace at each edit)."""
        got = self._traces.get(str(row))
        if got is not None:
            return got
        for r in self.rows:
            if str(r["row"]) == str(row):
                got = self._traces[str(row)] = Trace.of(self.out / r["trace"])
                return got
        raise KeyError(f"no row {row!r} in {self.out}")

    def traces(self) -> list[tuple[str, Trace]]:
        """(row id, trace) of every row whose trace file exists, in input order."""
        return [(str(r["row"]), self.trace(str(r["row"]))) for r in self.rows if (self.out / r["trace"]).is_file()]

    def counts(self) -> dict[str, int]:
        """How many rows ended with each status."""
        out: dict[str, int] = {}
        for r in self.rows:
            out[r["status"]] = out.get(r["status"], 0) + 1
        return out

    def rejudge(self, ladder, *, step: str | None = None, slates: dict | None = None):
        """Re-judge every row's trace against an edited ladder (or `{step_id: schema}`): a pandas DataFrame
        with one row per evaluation row (how many verdicts flipped, how many outcomes changed, the first
        flip and its effect); filter `flips > 0` for the rows that would flip."""
        import pandas as pd
        return pd.DataFrame(self.rejudge_rows(ladder, step=step, slates=slates),
                            columns=["row", "status", "verdicts", "flips", "changed", "first_flip", "effect", "steps"])

    def rejudge_rows(self, ladder, *, step: str | None = None, slates: dict | None = None) -> list[dict]:
        """`rejudge` as plain dicts."""
        from ..analysis.rejudge import Edits, rejudge_rows
        edits = ladder if isinstance(ladder, Edits) else Edits(ladder)
        out = []
        for r in self.rows:
            path = self.out / r["trace"]
            if not path.is_file():
                out.append({"row": r["row"], "status": r["status"], "verdicts": 0, "flips": 0, "changed": 0,
                            "first_flip": "(no trace)", "effect": "", "steps": ""})
                continue
            rows = rejudge_rows(self.trace(str(r["row"])), edits, step=step, slates=slates)
            flips = [x for x in rows if x["flipped"]]
            first = flips[0] if flips else None
            out.append({"row": r["row"], "status": r["status"], "verdicts": len(rows), "flips": len(flips),
                        "changed": sum(x["changed"] for x in rows),
                        "first_flip": "" if first is None else
                        f"{first['step']}/{first['node']}" + (f" r{first['round']}" if first["round"] else "")
                        + f" {first['test']} {first['old']}→{first['new']}"
                        + (f" ({first['keyword']} at {first['schema_path'] or '/'})" if first["keyword"] else ""),
                        "effect": "" if first is None else first["effect"],
                        "steps": ", ".join(sorted({x["step"] for x in flips}))})
        return out

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(self.counts().items()))
        return f"<Evaluation: {len(self.rows)} row(s) ({counts or 'none'}) in {self.out}>"

    def to_text(self) -> str:
        """The summary as `ladr-lab eval` prints it."""
        return self.format()

    def to_html(self) -> str:
        """Counts by status and the results table as a static HTML view."""
        from .html import evaluation_html
        return evaluation_html(self)

    def format(self) -> str:
        """A one-line summary per status, and the output folder."""
        counts = ", ".join(f"{n} {s}" for s, n in sorted(self.counts().items()))
        failed = sum(r["status"] != "completed" for r in self.rows)
        common = most_common_error(self.rows)
        error = "" if common is None else \
            f"\n{failed} of {len(self.rows)} rows failed; most common error ({common[1]}×): {common[0]}"
        return (f"{len(self.rows)} row(s): {counts or 'none'}" + (" (interrupted)" if self.interrupted else "")
                + error + f"\nresults: {self.out / TABLE}\ntraces:  {self.out / 'traces'}")


def read_results(path: Path) -> list[dict]:
    """The result lines of a results.jsonl (each a dict with a `row`), in file order; a line cut by a kill (or
    anything else that is not one) is skipped: that row is simply not finished."""
    out: list[dict] = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and "row" in rec:
                out.append(rec)
    return out


def load_evaluation(out: str | Path) -> Evaluation:
    """An evaluation read back from its output folder (the last result of each row)."""
    out = Path(out)
    latest = {str(rec["row"]): rec for rec in read_results(out / RESULTS)}
    return Evaluation(out, sorted(latest.values(), key=lambda r: r.get("pos", 0)))


class Recorder:
    """Appends finished rows to results.jsonl, one line each, under a lock (rows finish on many threads)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()

    def add(self, row: dict) -> None:
        line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
        with self.lock, open(self.path, "a", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(line)
            fh.flush()


def evaluate(ladder: Ladder | str | Path, inputs: Any, *, model=None, concurrency: int = 4,
             out: str | Path | None = None, slates: Mapping[str, str | Path] | None = None,
             knobs: dict | None = None, isolate_slates: bool = False, resume: bool = True, progress: bool = True,
             max_fetch_chars: int | None = None, max_round_chars: int | None = None,
             model_options: Mapping[str, Any] | None = None) -> Evaluation:
    """Run a ladder over many inputs (a DataFrame, a CSV or JSONL file, or a list of mappings), `concurrency`
    rows at a time, with a progress bar; one trace per row and the results table go to `out` (a new
    temporary folder by default). Finished rows of an earlier, interrupted evaluation in `out` are not run
    again (`resume=False` starts afresh); `model_options` go to each row's model (and into the rows' fingerprint).
    Returns the Evaluation (`.results` is the DataFrame)."""
    import tempfile

    from ..config import load_ladder
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    lad = load_ladder(ladder, knobs=knobs) if isinstance(ladder, (str, Path)) and knobs else as_ladder(ladder)
    rows = load_inputs(inputs)
    # a column the ladder reads and no row has: said once, naming the columns, instead of an error per row
    check_input_columns(lad, rows, f"inputs file {inputs}" if isinstance(inputs, (str, Path)) else "the inputs")
    expected = input_columns(lad)
    unknown = sorted(set(slates or {}) - {d.title for d in lad.slates})
    if unknown:
        raise LadrError(f"slates names undeclared slate(s): {', '.join(unknown)}")
    if model_options:      # an option the model does not take is said once, now, not as an error in every row
        from ..models import get_model
        get_model(model if model is not None else lad.model, base_dir=lad.base_dir, options=model_options).close()
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="ladr-eval-"))
    (out / "traces").mkdir(parents=True, exist_ok=True)
    if not resume and (out / RESULTS).exists():
        (out / RESULTS).unlink()
    model_name = model if isinstance(model, str) else getattr(model, "name", type(model).__name__) \
        if model is not None else (lad.model or "offline")
    done = {r["row"]: r for r in load_evaluation(out).rows}
    recorder = Recorder(out / RESULTS)
    writes_to = {t for t, _ in lad.written_targets()} if isolate_slates else set()
    base_slates = {d.title: Path(slates[d.title]) if slates and d.title in slates else
                   (lad.base_dir / d.path if d.path else None) for d in lad.slates}
    todo: list[tuple[int, str, dict, str]] = []
    finished: list[dict] = []
    for pos, (rid, fields) in enumerate(rows, 1):
        fp = fingerprint(lad, knobs, str(model_name), fields, model_options)
        prev = done.get(rid)
        if prev is not None and prev.get("fingerprint") == fp:
            finished.append({**prev, "pos": pos})
        else:
            todo.append((pos, rid, fields, fp))

    slate_paths = {t: str(p) for t, p in base_slates.items() if p is not None}
    if slates:
        slate_paths.update({t: str(p) for t, p in slates.items()})

    def run_row(pos: int, rid: str, fields: dict, fp: str) -> dict:
        spec = CellSpec(row=rid, pos=pos, fields=fields, out=str(out), trace=f"traces/{safe_name(rid)}.jsonl",
                        fingerprint=fp, slates=slate_paths, isolate=tuple(sorted(writes_to)),
                        isolate_dir=f"slates/{safe_name(rid)}", model=model, model_options=model_options,
                        expected=tuple(expected), max_fetch_chars=max_fetch_chars, max_round_chars=max_round_chars)
        row = run_cell(spec, lad)
        recorder.add(row)
        return row

    from tqdm.auto import tqdm
    bar = tqdm(total=len(rows), initial=len(finished), desc=f"eval {lad.name}", unit="row", disable=not progress)
    interrupted = False

    def done_row(row: dict) -> None:
        finished.append(row)
        bar.update(1)
    try:
        # Ctrl-C (or a model raising it): no new row starts; rows in flight finish and record themselves
        run_pool(run_row, todo, concurrency=concurrency, on_result=done_row, name="ladr-eval")
    except BaseException:
        interrupted = True
        raise
    finally:
        bar.close()
        ev = Evaluation(out, sorted(finished, key=lambda r: r["pos"]), interrupted)
        if not interrupted:
            ev.to_dataframe().to_csv(out / TABLE, index=False)
    return ev


__all__ = ["COLUMNS", "Evaluation", "Recorder", "evaluate", "fingerprint", "load_evaluation", "load_inputs",
           "read_results"]
