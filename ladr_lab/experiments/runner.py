"""`experiment()`: every variant on every input row, one trace per cell, assertions checked per cell, resumable.

The output folder holds `experiment.json` (the variants, their bases and the assertions), `<variant>/traces/
<row>.jsonl` (one trace per cell run or replayed), `results.jsonl` (one line per finished cell, appended as
cells finish: what a resumed experiment reads), `results.csv` and `summary.csv` (written at the end).

Cells run in two waves. First every variant that runs the model (on the local thread pool, or as Ray tasks
with `backend="ray"`); then every re-judged variant (`variants.py`): a cell whose row flips no verdict under
the variant's schemas is copied from its base cell; any other is replayed through the engine from the base
cell's trace, with no model call, and when the replay needs a call the recording does not have, it runs on
live (`rejudge="auto"`, the default) or stops there as `unsettled` (`rejudge="only"`). `rejudge="off"` runs
every variant with the model. The `source` column says which of these made each cell.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import LadrError
from ..evaluation.batch import Recorder, fingerprint, load_inputs
from ..evaluation.cells import UNSETTLED, CellSpec, run_pool, safe_name
from ..evaluation.inputs import check_input_columns, input_columns
from .asserts import Assertion, load_asserts
from .cell import CellTask, asserts_fingerprint, check_row, execute
from .results import RESULTS, Experiment, load_experiment
from .variants import Variant, branch_key, load_variants

__all__ = ["RESERVED", "experiment"]

# input columns that make `ladr-lab eval` an experiment: assertions (read by the experiment, not the ladder), and
# labels (kept as the input field `labels`, which schema tuning reads from each cell's trace)
RESERVED = ("assert", "__expected", "labels")
_REJUDGE = ("auto", "only", "off")
_BACKENDS = ("local", "ray")


def _split_inputs(inputs: Any, where: str) -> list[tuple[str, dict, tuple[Assertion, ...]]]:
    """(row id, input fields, the row's own assertions) for each input row."""
    rows = []
    for rid, fields in load_inputs(inputs):
        spec = [fields.pop(k) for k in ("assert", "__expected") if k in fields and fields[k] not in (None, "")]
        for k in ("assert", "__expected"):
            fields.pop(k, None)
        asserts = _columns_apart(a for s in spec for a in load_asserts(s, where=f"{where}, row {rid}"))
        rows.append((rid, fields, asserts))
    return rows


def _columns_apart(asserts) -> tuple[Assertion, ...]:
    """The assertions, a name that is also a result column (`status`, `output`...) prefixed `assert:`."""
    from dataclasses import replace

    from .results import COLUMNS, HIDDEN
    taken = {*COLUMNS, *HIDDEN, "variant", "row"}
    return tuple(replace(a, name=f"assert:{a.name}") if a.name in taken or a.name.startswith("input.") else a
                 for a in asserts)


def _merge(common: tuple[Assertion, ...], own: tuple[Assertion, ...]) -> tuple[Assertion, ...]:
    """The common assertions, then the row's own: one the same as a common one is not checked twice; one that only
    shares its name is kept, named apart (`NAME (row)`)."""
    from dataclasses import replace
    names = {a.name: a for a in common}
    out = list(common)
    for a in own:
        same = names.get(a.name)
        if same is None:
            out.append(a)
        elif same != a:
            out.append(replace(a, name=f"{a.name} (row)"))
    return tuple(out)


def experiment(ladders: Any, inputs: Any, *, model=None, asserts: Any = None, out: str | Path | None = None,
               knob_sets: Mapping[str, Mapping[str, Any]] | None = None, knobs: Mapping[str, Any] | None = None,
               concurrency: int = 8, backend: str = "local", ray_address: str | None = None,
               rate_limit: Mapping[str, str | float] | str | float | None = None, rejudge: str = "auto",
               grader: str | None = None, slates: Mapping[str, str | Path] | None = None,
               isolate_slates: bool = True, resume: bool = True, progress: bool = True,
               model_options: Mapping[str, Any] | None = None, max_fetch_chars: int | None = None,
               max_round_chars: int | None = None) -> Experiment:
    """Run every variant (`ladders`: {name: ladder file or Ladder}, a list of files, or one ladder with
    `knob_sets`) on every row of `inputs` (a CSV or JSONL file, a DataFrame, or a list of mappings), check
    `asserts` (and each row's own `assert` column) on every cell, and return the Experiment (`.results` is a
    DataFrame with a row per cell, `.summary()` one per variant). See the module docstring for the folder,
    the re-judged variants and resuming."""
    import tempfile

    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if rejudge not in _REJUDGE:
        raise LadrError(f"rejudge={rejudge!r}: give one of {', '.join(_REJUDGE)}")
    if backend not in _BACKENDS:
        raise LadrError(f"backend={backend!r}: give one of {', '.join(_BACKENDS)}")
    if backend == "ray" and model is not None and not isinstance(model, str):
        raise LadrError("backend='ray' sends cells to other processes: give the model by name, not as an object")
    variants = load_variants(ladders, knob_sets=knob_sets, knobs=knobs)
    grader = grader if grader is not None else default_grader(model)
    notes: list[str] = []
    reader = schema_reader(model, model_options, variants[0].ladder)
    if rejudge != "off" and reader and any(v.rejudged for v in variants):
        notes.append(f"variants that differ only in judging were run, not re-judged: {reader}")
    if rejudge == "off" or reader:
        variants = [Variant(v.name, v.ladder, v.knobs, v.source, None) for v in variants]
    where = f"inputs file {inputs}" if isinstance(inputs, (str, Path)) else "the inputs"
    common = _columns_apart(load_asserts(asserts, where="asserts"))
    rows = _split_inputs(inputs, where)
    for v in variants:
        check_input_columns(v.ladder, [(r, f) for r, f, _ in rows], where)
        unknown = sorted(set(slates or {}) - {d.title for d in v.ladder.slates})
        if unknown:
            raise LadrError(f"variant {v.name}: slates names undeclared slate(s): {', '.join(unknown)}")
    if model_options:      # an option the model does not take is said once, now, not as an error in every cell
        from ..models import get_model
        lad = variants[0].ladder
        get_model(model if model is not None else lad.model, base_dir=lad.base_dir, options=model_options).close()
    limiter = _limiter(rate_limit, backend)
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="ladr-exp-"))
    out.mkdir(parents=True, exist_ok=True)
    if not resume and (out / RESULTS).exists():
        (out / RESULTS).unlink()
    _write_manifest(out, variants, common, model, grader, [rid for rid, _, _ in rows], notes)
    done = {(r.get("variant"), r["row"]): r for r in load_experiment(out).rows}
    recorder = Recorder(out / RESULTS)
    ladders_by_name = {v.name: v.ladder for v in variants}
    finished: list[dict] = []
    total = len(variants) * len(rows)

    from tqdm.auto import tqdm
    bar = tqdm(total=total, desc=f"experiment ({len(variants)} variant(s) × {len(rows)} row(s))", unit="cell",
               disable=not progress)

    def record(row: dict) -> None:
        recorder.add(row)
        finished.append(row)
        bar.update(1)

    def keep(prev: dict | None, fp: str, asserts: tuple[Assertion, ...], pos: int) -> bool:
        """A finished cell from an earlier run is kept when its run is the same; its checks are redone when
        only the assertions changed."""
        if prev is None or prev.get("fingerprint") != fp:
            return False
        afp = asserts_fingerprint(asserts, grader)
        row = {**prev, "pos": pos}
        if prev.get("asserts_fp") != afp:
            row = {**check_row(row, asserts, out, grader=grader), "asserts_fp": afp}
            recorder.add(row)
        finished.append(row)
        bar.update(1)
        return True

    interrupted = False
    try:
        # wave 1: the variants that call the model
        tasks = []
        for v in variants:
            if v.rejudged:
                continue
            for pos, (rid, fields, own) in enumerate(rows, 1):
                spec = _spec(v, out, rid, pos, fields, model, model_options, slates, isolate_slates,
                             max_fetch_chars, max_round_chars)
                cell_asserts = _merge(common, own)
                if not keep(done.get((v.name, rid)), spec.fingerprint, cell_asserts, pos):
                    tasks.append(CellTask(spec, v.name, cell_asserts, grader))
        _dispatch(tasks, ladders_by_name, backend, ray_address, concurrency, limiter, record, progress)
        # wave 2: the re-judged variants, from the first wave's traces
        base_rows = {(r.get("variant"), str(r["row"])): r for r in finished}
        tasks = []
        for v in variants:
            if not v.rejudged:
                continue
            base = next(b for b in variants if b.name == v.base)
            same_tests = branch_key(base.ladder) == branch_key(v.ladder)
            for pos, (rid, fields, own) in enumerate(rows, 1):
                cell_asserts = _merge(common, own)
                b = base_rows.get((base.name, rid))
                spec = _spec(v, out, rid, pos, fields, model, model_options, slates, True,
                             max_fetch_chars, max_round_chars, base=b, live=rejudge == "auto")
                if keep(done.get((v.name, rid)), spec.fingerprint, cell_asserts, pos):
                    continue
                copied = _copy_if_unchanged(b, v, out, same_tests)
                if copied is not None:
                    row = {**copied, "variant": v.name, "pos": pos, "fingerprint": spec.fingerprint,
                           "source": f"same as {base.name}: no verdict changes"}
                    row = {**check_row(row, cell_asserts, out, grader=grader),
                           "asserts_fp": asserts_fingerprint(cell_asserts, grader)}
                    record(row)
                    continue
                if spec.replay is None and rejudge == "only":
                    # no recording to re-judge (the base cell failed before it had one): only a run could tell
                    why = f"the base cell {base.name}/{rid} has no recording to re-judge " \
                          f"({(b or {}).get('status', 'missing')}: {(b or {}).get('error') or 'no trace'})"
                    row = {"row": rid, "variant": v.name, **{f"input.{k}": x for k, x in fields.items()},
                           "status": UNSETTLED, "output": "", "llm_calls": 0, "tokens_in": 0, "tokens_out": 0,
                           "cost": 0.0, "latency": 0.0, "seconds": 0.0, "gates": "", "writes": 0, "error": why,
                           "error_type": None, "error_step": None, "trace": "", "fingerprint": spec.fingerprint,
                           "pos": pos, "source": f"re-judged from {base.name}"}
                    record({**check_row(row, cell_asserts, out, grader=grader),
                            "asserts_fp": asserts_fingerprint(cell_asserts, grader)})
                    continue
                tasks.append(CellTask(spec, v.name, cell_asserts, grader,
                                      f"re-judged from {base.name}" if spec.replay else
                                      f"run (the base cell {base.name}/{rid} has no recording)"))
        _dispatch(tasks, ladders_by_name, backend, ray_address, concurrency, limiter, record, progress)
    except BaseException:
        interrupted = True
        raise
    finally:
        bar.close()
        exp = Experiment(out, sorted(finished, key=lambda r: (r["pos"], _order(variants, r.get("variant")))),
                         variants=[v.name for v in variants], interrupted=interrupted, notes=notes)
        if not interrupted:
            exp.save_tables()
    return exp


def _order(variants: list[Variant], name: str | None) -> int:
    return next((i for i, v in enumerate(variants) if v.name == name), len(variants))


def default_grader(model) -> str | None:
    """The grader of model-graded assertions when none is given: the experiment's model when it is a model
    name that grades (`offline` is the deterministic stand-in); None (such assertions go unchecked, saying why)
    for scripts, replays and Model objects, whose answers are not a grader's."""
    if model is None:
        return "offline"
    if isinstance(model, str) and not model.strip().startswith(("script:", "replay:")):
        return model
    return None


def schema_reader(model, model_options, ladder) -> str | None:
    """Why the model's answers may depend on the schemas a call is judged by (so a variant that changes them must
    run to be known), or None when they depend on the prompt alone and re-judging is exact."""
    if model_options and model_options.get("constrain"):
        return "constrain decodes against requestMatch"
    spec = model if model is not None else (ladder.model or "offline")
    if isinstance(spec, str):
        name = spec.strip()
        if name in ("", "offline"):
            return "the offline model shapes its requests and JSON answers by the call's schemas"
        return None          # script files answer from lists; litellm and local models see the prompt only
    if getattr(spec, "reads_schemas", False):
        return f"{getattr(spec, 'name', type(spec).__name__)} reads the call's schemas (reads_schemas)"
    return None


def _limiter(rate_limit, backend: str):
    if rate_limit is None:
        return None
    if backend == "ray":
        return rate_limit          # the Ray backend makes its one shared actor from the rates
    from ..models.limited import RateLimiter
    return RateLimiter(rate_limit)


def _dispatch(tasks, ladders, backend, ray_address, concurrency, limiter, record, progress) -> None:
    if not tasks:
        return
    if backend == "ray":
        from .ray_backend import run_on_ray
        run_on_ray(tasks, ladders, address=ray_address, workers=concurrency, rate_limit=limiter, on_result=record)
    else:
        # Ctrl-C: no new cell starts; cells in flight are not recorded (a resume runs them)
        run_pool(lambda t: execute(t, ladders[t.variant], limiter=limiter), [(t,) for t in tasks],
                 concurrency=concurrency, on_result=record, name="ladr-exp")


def _spec(v: Variant, out: Path, rid: str, pos: int, fields: dict, model, model_options, slates, isolate: bool,
          max_fetch_chars, max_round_chars, *, base: dict | None = None, live: bool = True) -> CellSpec:
    lad = v.ladder
    bound = {d.title: str(Path(slates[d.title])) for d in lad.slates if slates and d.title in slates}
    bound.update({d.title: str(lad.base_dir / d.path) for d in lad.slates if d.title not in bound and d.path})
    writes_to = tuple(sorted({t for t, _ in lad.written_targets()})) if isolate else ()
    model_name = model if isinstance(model, str) else getattr(model, "name", type(model).__name__) \
        if model is not None else (lad.model or "offline")
    fp = fingerprint(lad, dict(v.knobs), str(model_name), fields, model_options)
    replay = None
    if base is not None and base.get("trace") and (out / base["trace"]).is_file() and base.get("status") != "error":
        replay = str((out / base["trace"]).resolve())
        fp = fingerprint(lad, dict(v.knobs), f"re-judge {base.get('fingerprint')} live={live}", fields,
                          model_options)
    return CellSpec(row=rid, pos=pos, fields=dict(fields), out=str(out),
                    trace=f"{safe_name(v.name)}/traces/{safe_name(rid)}.jsonl", fingerprint=fp, slates=bound,
                    isolate=writes_to, isolate_dir=f"{safe_name(v.name)}/slates/{safe_name(rid)}", model=model,
                    model_options=model_options, expected=tuple(input_columns(lad)),
                    max_fetch_chars=max_fetch_chars, max_round_chars=max_round_chars, variant=v.name,
                    replay=replay, then=(model if live else None) if replay else None,
                    limit_key=_limit_key(model_name))


def _limit_key(model_name: str) -> str:
    from ..models.limited import provider_of
    return provider_of(model_name) or model_name


def _copy_if_unchanged(base: dict | None, v: Variant, out: Path, same_tests: bool) -> dict | None:
    """The base cell, when the variant's schemas flip none of its recorded verdicts (the same run)."""
    if base is None or not same_tests or base.get("status") == "error" or not base.get("trace") \
            or not (out / base["trace"]).is_file():
        return None          # a failed base cell is no run to copy: its failure may not happen again
    from ..analysis.edits import Edits
    from ..analysis.rejudge import rejudge_rows
    from ..trace import Trace
    try:
        rows = rejudge_rows(Trace.of(out / base["trace"]), Edits(v.ladder))
    except LadrError:
        return None
    if any(r["flipped"] for r in rows):
        return None
    keep = {k: val for k, val in base.items()
            if k not in ("variant", "fingerprint", "asserts_fp", "passed", "reasons", "asserts", "source", "pos")
            and k not in (base.get("asserts") or ())}
    return keep


def _write_manifest(out: Path, variants: list[Variant], common, model, grader, rows: list[str],
                    notes: list[str]) -> None:
    import os
    doc = {"variants": [{"name": v.name, "source": v.source, "ladder": v.ladder.name, "knobs": dict(v.knobs),
                         "base": v.base} for v in variants],
           "asserts": [{"type": ("not-" if a.negate else "") + a.kind, "name": a.name,
                        "value": a.value if not callable(a.value) else getattr(a.value, "__qualname__", "python")}
                       for a in common],
           "model": model if isinstance(model, str) or model is None else getattr(model, "name", "?"),
           "grader": grader, "rows": rows, "notes": notes}
    tmp = out / "experiment.json.tmp"
    tmp.write_text(json.dumps(doc, indent=2, default=str), encoding="utf-8")
    os.replace(tmp, out / "experiment.json")
