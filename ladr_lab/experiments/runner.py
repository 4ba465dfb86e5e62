"""`experiment()`: every variant on every input row, one trace per cell, assertions checked per cell, resumable;
and `evaluate()`, the experiment of one ladder with no assertions, whose folder has a row per input.

Both drive the same loop (`_Batch`): the folder (its format is `folder.py`'s: a manifest, a trace per cell, the
results file appended as cells finish — what a resumed run reads —, and the tables written at the end), the finished cells of an earlier run kept when their
fingerprint is unchanged, a progress bar, and the cells handed to a backend (`local_backend.py`, `ray_backend.py`).

Cells run in two waves. First every variant that runs the model (on the local thread pool, or as Ray tasks
with `backend="ray"`); then every re-judged variant (`variants.py`): a cell whose row flips no verdict under
the variant's schemas is copied from its base cell; any other is replayed through the engine from the base
cell's trace, with no model call, and when the replay needs a call the recording does not have, it runs on
live (`rejudge="auto"`, the default) or stops there as `unsettled` (`rejudge="only"`). `rejudge="off"` runs
every variant with the model. The `source` column says which of these made each cell.

An experiment may run each cell `repeat` times (runs 2..N ask the model afresh: `cells._cache`), check a cell
`threshold` on the weighted score of its assertions (`scoring.py`), and run only some of its cells: variants by
name, rows by id pattern or a seeded sample, and the cells an earlier folder says failed or ended in an error
(`filters.py`).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config.model import Ladder
from ..errors import LadrError
from .assertions import Assertion, load_asserts
from .cells import (
    UNSETTLED,
    CellResult,
    CellSource,
    CellSpec,
    CellTask,
    asserts_fingerprint,
    check_cell,
    fingerprint,
)
from .filters import DEFAULT_SEED, match_rows, pick_variants, row_patterns, sample_rows, split_names
from .folder import RESULTS, Recorder, cell_key, latest_cells, slates_path, trace_path, write_manifest
from .inputs import check_input_columns, input_columns, load_inputs
from .results import COLUMNS, HIDDEN, Evaluation, Experiment
from .scoring import pass_text
from .variants import Variant, assign_bases, branch_key, load_variants

__all__ = ["RESERVED", "default_grader", "evaluate", "experiment", "schema_reader"]

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


class _Batch:
    """One batch run's bookkeeping: its folder, the cells an earlier run into it finished, the recorder that appends
    each finished cell to the results file, the cells finished so far and the progress bar.

    The retry rule lives here, for `evaluate` and `experiment` alike: a cell an earlier run ended with status
    `error` (a model or connection error, a crashed worker, a timeout, a row the ladder cannot read) is not
    finished — a re-run runs it again (`retry_errors=True`, the default) and its new line says `retried` (how many
    earlier runs of it ended in an error); every other status (a failed assertion, `aborted`,
    `budget_exhausted`, `unsettled`) is a result and is kept. `retry_errors=False` keeps error cells too."""

    def __init__(self, out: Path, *, resume: bool, by_variant: bool, total: int, desc: str, unit: str,
                 progress: bool, grader: str | None = None, retry_errors: bool = True,
                 otel: Mapping[str, Any] | None = None) -> None:
        from tqdm.auto import tqdm
        self.out, self.by_variant, self.grader, self.retry_errors = out, by_variant, grader, retry_errors
        self.otel = otel          # each cell's run exported as spans with these options (telemetry.py)
        self.recorder = Recorder(out / RESULTS)
        if not resume:
            self.recorder.restart()
        self.done = {self.key(c.variant, c.row, c.repeat): c for c in latest_cells(out, by_variant=by_variant)}
        self.retrying: dict[Any, int] = {}      # key -> the `retried` count of an error cell run again now
        self.finished: list[CellResult] = []
        self.judged = self.passing = 0        # the running pass rate the bar shows (scoring.pass_text)
        self.bar = tqdm(total=total, desc=desc, unit=unit, disable=not progress)

    @property
    def retried(self) -> int:
        """How many error cells of the last run into the folder this run ran again."""
        return len(self.retrying)

    def key(self, variant: str | None, row: str, repeat: int = 1) -> Any:
        """How a finished cell is found again: (variant, row, repeat), or the row alone in an evaluation."""
        return cell_key(variant, row, repeat) if self.by_variant else row

    def stamp(self, cell: CellResult) -> CellResult:
        """The cell, saying how many earlier runs of it ended in an error when it is one run again."""
        n = self.retrying.get(self.key(cell.variant, cell.row, cell.repeat))
        return cell if not n or cell.retried == n else cell.replace(retried=n)

    def save(self, cell: CellResult) -> None:
        """Append a finished cell to the results file (not counted yet: `finish` counts it)."""
        self.recorder.add(self.stamp(cell))

    def finish(self, cell: CellResult) -> None:
        """Count a cell that is saved; the bar shows the running pass rate once cells have assertions."""
        self.finished.append(self.stamp(cell))
        if cell.checks:
            self.judged += 1
            self.passing += cell.passed is True
            self.bar.set_postfix_str(pass_text(self.passing, self.judged), refresh=False)
        self.bar.update(1)

    def record(self, cell: CellResult) -> None:
        """Save a finished cell, and count it."""
        self.save(cell)
        self.finish(cell)

    def keep(self, task: CellTask) -> bool:
        """Keep the cell an earlier run finished when its run is the same (its fingerprint) and it is a result (not
        an error, unless `retry_errors` is off); its checks are redone when only the assertions changed."""
        spec = task.spec
        key = self.key(spec.variant, spec.row, spec.repeat)
        prev = self.done.get(key)
        if prev is None or prev.fingerprint != spec.fingerprint:
            return False
        if prev.status == "error" and self.retry_errors:
            self.retrying[key] = prev.retried + 1       # an error is not a result: run it again
            return False
        cell = prev.replace(pos=spec.pos)
        if task.source is not None and prev.asserts_fp != asserts_fingerprint(task.asserts, task.grader,
                                                                               task.threshold):
            self.recorder.add(cell := check_cell(cell, task.asserts, self.out, grader=task.grader,
                                                 threshold=task.threshold))
        self.finish(cell)
        return True

    def run(self, tasks: list[CellTask], ladders: Mapping[str | None, Ladder], *, backend: str = "local",
            ray_address: str | None = None, concurrency: int, limiter: Any = None, name: str) -> None:
        """Run the tasks on the backend; each cell is saved as it finishes."""
        if not tasks:
            return
        if self.otel is not None:
            from dataclasses import replace
            tasks = [replace(t, spec=replace(t.spec, otel=self.otel)) for t in tasks]
        if backend == "ray":
            from .ray_backend import run_on_ray
            run_on_ray(tasks, ladders, address=ray_address, workers=concurrency, rate_limit=limiter,
                       on_result=self.record)
        else:
            from .local_backend import run_locally
            # Ctrl-C: no new cell starts; a cell in flight saves itself when it finishes (or a resume runs it)
            run_locally(tasks, ladders, concurrency=concurrency, limiter=limiter, save=self.save,
                        on_result=self.finish, name=name)


def _model_name(model, ladder: Ladder) -> str:
    return str(model if isinstance(model, str) else getattr(model, "name", type(model).__name__)
               if model is not None else (ladder.model or "offline"))


def _models_named(ladder: Ladder) -> set[str]:
    """The model names a ladder gives: its own `model:` and its steps' (group steps' too)."""
    names = {ladder.model} if ladder.model else set()
    todo = list(ladder.steps)
    while todo:
        step = todo.pop()
        if step.model:
            names.add(step.model)
        todo.extend(step.steps)
    return names


def _check_keys(model, ladders: list[Ladder], model_options) -> None:
    """A missing API key, said once before any cell (from the provider's name: nothing heavy imported), for the
    model given or, when none is, every model the ladders name."""
    from ..errors import ModelError
    from ..models import key_problem
    names = {model} if isinstance(model, str) else set() if model is not None else \
        {n for lad in ladders for n in _models_named(lad)}
    for name in sorted(names):
        problem = key_problem(name, model_options)
        if problem:
            raise ModelError(problem)


def _check_model_options(model, ladder: Ladder, model_options) -> None:
    if model_options:      # an option the model does not take is said once, now, not as an error in every cell
        from ..models import get_model
        get_model(model if model is not None else ladder.model, base_dir=ladder.base_dir,
                  options=model_options).close()


def _check_slates(ladder: Ladder, slates, who: str = "") -> None:
    unknown = sorted(set(slates or {}) - {d.title for d in ladder.slates})
    if unknown:
        raise LadrError(f"{who}slates names undeclared slate(s): {', '.join(unknown)}")


def evaluate(ladder: Ladder | str | Path, inputs: Any, *, model=None, concurrency: int = 4,
             out: str | Path | None = None, slates: Mapping[str, str | Path] | None = None,
             knobs: dict | None = None, isolate_slates: bool = False, resume: bool = True, progress: bool = True,
             max_fetch_chars: int | None = None, max_round_chars: int | None = None,
             model_options: Mapping[str, Any] | None = None, retry_errors: bool = True,
             cache: Any = True, otel: Any = False, phoenix: Any = False) -> Evaluation:
    """Run a ladder over many inputs (a DataFrame, a CSV or JSONL file, or a list of mappings), `concurrency`
    rows at a time, with a progress bar; one trace per row and the results table go to `out` (a new
    temporary folder by default). Finished rows of an earlier, interrupted evaluation in `out` are not run
    again (`resume=False` starts afresh), except rows that ended in an error, which run again (`retry_errors=False`
    keeps them; docs/experiments.md, "Resume"); `model_options` go to each row's model (and into the rows' fingerprint);
    `cache` is the response cache of live models' answers (True: the per-user one, a folder, or False: models/cache.py).
    `otel` and `phoenix`: each row's run exported as spans, and the evaluation uploaded to Phoenix, as for
    `experiment`. Returns the Evaluation (`.results` is the DataFrame).

    It is the experiment of one ladder with no assertions (`experiment()`'s loop), except that its folder keeps
    the evaluation's shape: a row per input (no variant column), `traces/<row>.jsonl`, no manifest or summary;
    and its slates are shared by default (`isolate_slates=True` gives each row its own copy under
    `slates/<row>/<title>`)."""
    import tempfile

    from ..config import load_ladder
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    lad = load_ladder(ladder, knobs=knobs) if isinstance(ladder, (str, Path)) and knobs else Ladder.of(ladder)
    rows = load_inputs(inputs)
    # a column the ladder reads and no row has: said once, naming the columns, instead of an error per row
    check_input_columns(lad, rows, f"inputs file {inputs}" if isinstance(inputs, (str, Path)) else "the inputs")
    _check_slates(lad, slates)
    _check_keys(model, [lad], model_options)
    _check_model_options(model, lad, model_options)
    cache = _cache_folder(cache)
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="ladr-eval-"))
    upload, otel_opts = _telemetry(otel, phoenix, out)
    (out / "traces").mkdir(parents=True, exist_ok=True)
    batch = _Batch(out, resume=resume, by_variant=False, total=len(rows), desc=f"eval {lad.name}", unit="row",
                   progress=progress, retry_errors=retry_errors, otel=otel_opts)
    tasks = [CellTask(_spec(None, lad, knobs, out, rid, pos, fields, model, model_options, slates, isolate_slates,
                            max_fetch_chars, max_round_chars, cache=cache), None, source=None)
             for pos, (rid, fields) in enumerate(rows, 1)]
    interrupted = False
    try:
        batch.run([t for t in tasks if not batch.keep(t)], {None: lad}, concurrency=concurrency, name="ladr-eval")
    except BaseException:
        interrupted = True
        raise
    finally:
        batch.bar.close()
        cells: list[CellResult] = sorted(batch.finished, key=lambda c: c.pos)
        ev = Evaluation(out, cells, interrupted, retried=batch.retried)
        if not interrupted:
            ev.save_tables()
    if upload is not None:
        ev.upload_to_phoenix(upload)
    return ev


def experiment(ladders: Any, inputs: Any, *, model=None, asserts: Any = None, out: str | Path | None = None,
               knob_sets: Mapping[str, Mapping[str, Any]] | None = None, knobs: Mapping[str, Any] | None = None,
               concurrency: int = 8, backend: str = "local", ray_address: str | None = None,
               rate_limit: Mapping[str, str | float] | str | float | None = None, rejudge: str = "auto",
               grader: str | None = None, slates: Mapping[str, str | Path] | None = None,
               isolate_slates: bool = True, resume: bool = True, progress: bool = True,
               model_options: Mapping[str, Any] | None = None, max_fetch_chars: int | None = None,
               max_round_chars: int | None = None, retry_errors: bool = True, cache: Any = True,
               threshold: float | None = None, repeat: int = 1, variants: Any = None, rows: Any = None,
               sample: int | None = None, sample_seed: int | None = None,
               filter_failing: str | Path | None = None, filter_errors: str | Path | None = None,
               otel: Any = False, phoenix: Any = False) -> Experiment:
    """Run every variant (`ladders`: {name: ladder file or Ladder, or {"ladder": ..., "knobs": {...}}}, a list of
    files, or one ladder with `knob_sets`) on every row of `inputs` (a CSV or JSONL file, a DataFrame, or a list of
    mappings), check `asserts` (and each row's own `assert` column) on every cell, and return the Experiment
    (`.results` is a DataFrame with a row per cell, `.summary()` one per variant). See the module docstring for the
    folder, the re-judged variants and resuming (cells that ended in an error run again unless
    `retry_errors=False`). `cache`: the response cache of live models' answers, as for `evaluate`.

    Scores (scoring.py): `threshold` passes a cell when the weighted score of its assertions (each one's `weight`,
    default 1) reaches it. `repeat=N` runs each cell N times; runs 2..N ask the model afresh (the response cache
    keys them apart), and the summary says how far the runs of a cell agree. Filters (filters.py): `variants`
    (names, or "A,B"), `rows` (globs on row ids, or `re:REGEX`), `sample` (N rows drawn with `sample_seed`, 0 by
    default), and `filter_failing` / `filter_errors` (an earlier experiment's folder: only the cells that failed /
    ended in an error there).

    `otel` (True, or OtelExport's options: `telemetry.OPTIONS`) exports each cell's run as spans tagged with the
    experiment (the folder's name), variant, row and assertion results; `phoenix` (True, a URL, or {url, dataset})
    uploads the finished experiment to Phoenix as a dataset and an experiment per variant (`phoenix.py`), its cells'
    runs exported there too (docs/experiments.md, "OpenTelemetry and Phoenix")."""
    import tempfile

    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if rejudge not in _REJUDGE:
        raise LadrError(f"rejudge={rejudge!r}: give one of {', '.join(_REJUDGE)}")
    if backend not in _BACKENDS:
        raise LadrError(f"backend={backend!r}: give one of {', '.join(_BACKENDS)}")
    if backend == "ray" and model is not None and not isinstance(model, str):
        raise LadrError("backend='ray' sends cells to other processes: give the model by name, not as an object")
    _check_scoring(threshold, repeat, sample, sample_seed)
    patterns = row_patterns(rows)
    loaded = load_variants(ladders, knob_sets=knob_sets, knobs=knobs)
    notes: list[str] = []
    chosen = split_names(variants, "variants")
    if chosen:
        keep = set(pick_variants([v.name for v in loaded], chosen))
        loaded = assign_bases([Variant(v.name, v.ladder, v.knobs, v.source) for v in loaded if v.name in keep])
    grader = grader if grader is not None else default_grader(model)
    reader = schema_reader(model, model_options, loaded[0].ladder)
    if rejudge != "off" and reader and any(v.rejudged for v in loaded):
        notes.append(f"variants that differ only in judging were run, not re-judged: {reader}")
    if rejudge == "off" or reader:
        loaded = [Variant(v.name, v.ladder, v.knobs, v.source, None) for v in loaded]
    where = f"inputs file {inputs}" if isinstance(inputs, (str, Path)) else "the inputs"
    common = _columns_apart(load_asserts(asserts, where="asserts"))
    table = _split_inputs(inputs, where)
    for v in loaded:
        check_input_columns(v.ladder, [(r, f) for r, f, _ in table], where)
        _check_slates(v.ladder, slates, f"variant {v.name}: ")
    ids = [rid for rid, _, _ in table]
    picked = match_rows(ids, patterns)
    if patterns:
        notes.append(f"rows matching {', '.join(patterns)}: {len(picked)} of {len(ids)}")
    if sample is not None and sample < len(picked):
        seed = DEFAULT_SEED if sample_seed is None else sample_seed
        notes.append(f"a sample of {sample} of {len(picked)} row(s) (seed {seed})")
        picked = sample_rows(picked, sample, seed)
    pairs = _failed_pairs(filter_failing, filter_errors, loaded, picked, notes)
    keep_rows = set(picked)
    table = [r for r in table if r[0] in keep_rows]

    def wanted(v: Variant, rid: str) -> bool:
        """Whether the cell (v, rid) runs: chosen by the folder filters, or the base of a re-judged cell that is."""
        if pairs is None:
            return True
        if (v.name, rid) in pairs or (None, rid) in pairs:
            return True
        return any(w.base == v.name and ((w.name, rid) in pairs or (None, rid) in pairs) for w in loaded)

    table = [r for r in table if any(wanted(v, r[0]) for v in loaded)]
    _check_keys(model, [v.ladder for v in loaded], model_options)
    _check_model_options(model, loaded[0].ladder, model_options)
    cache = _cache_folder(cache)
    limiter = _limiter(rate_limit, backend)
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="ladr-exp-"))
    upload, otel_opts = _telemetry(otel, phoenix, out)
    out.mkdir(parents=True, exist_ok=True)
    total = sum(wanted(v, rid) for v in loaded for rid, _, _ in table) * repeat
    batch = _Batch(out, resume=resume, by_variant=True, total=total,
                   desc=f"experiment ({len(loaded)} variant(s) × {len(table)} row(s)"
                        + (f" × {repeat} runs)" if repeat > 1 else ")"), unit="cell",
                   progress=progress, retry_errors=retry_errors, otel=otel_opts)
    extra: dict[str, Any] = {}
    if threshold is not None:
        extra["threshold"] = threshold
    if repeat > 1:
        extra["repeat"] = repeat
    filters = {k: v for k, v in (("variants", sorted(chosen) or None), ("rows", patterns or None),
                                 ("sample", sample), ("sample_seed", sample_seed if sample is not None else None),
                                 ("filter_failing", str(filter_failing) if filter_failing else None),
                                 ("filter_errors", str(filter_errors) if filter_errors else None)) if v}
    if filters:
        extra["filters"] = filters
    write_manifest(out, loaded, common, model, grader, [rid for rid, _, _ in table], notes, extra)
    ladders_by_name: dict[str | None, Ladder] = {v.name: v.ladder for v in loaded}

    def dispatch(tasks: list[CellTask]) -> None:
        batch.run(tasks, ladders_by_name, backend=backend, ray_address=ray_address, concurrency=concurrency,
                  limiter=limiter, name="ladr-exp")

    interrupted = False
    try:
        # wave 1: the variants that call the model
        tasks = []
        for v in loaded:
            if v.rejudged:
                continue
            for pos, (rid, fields, own) in enumerate(table, 1):
                if not wanted(v, rid):
                    continue
                for r in range(1, repeat + 1):
                    spec = _spec(v.name, v.ladder, v.knobs, out, rid, pos, fields, model, model_options, slates,
                                 isolate_slates, max_fetch_chars, max_round_chars, cache=cache, repeat=r)
                    task = CellTask(spec, v.name, _merge(common, own), grader, threshold=threshold)
                    if not batch.keep(task):
                        tasks.append(task)
        dispatch(tasks)
        # wave 2: the re-judged variants, from the first wave's traces
        base_cells = {(c.variant, c.row, c.repeat): c for c in batch.finished}
        tasks = []
        for v in loaded:
            if not v.rejudged:
                continue
            base = next(b for b in loaded if b.name == v.base)
            same_tests = branch_key(base.ladder) == branch_key(v.ladder)
            for pos, (rid, fields, own) in enumerate(table, 1):
                if not wanted(v, rid):
                    continue
                cell_asserts = _merge(common, own)
                for r in range(1, repeat + 1):
                    b = base_cells.get((base.name, rid, r))
                    spec = _spec(v.name, v.ladder, v.knobs, out, rid, pos, fields, model, model_options, slates,
                                 True, max_fetch_chars, max_round_chars, base=b, live=rejudge == "auto", cache=cache,
                                 repeat=r)
                    rejudged = CellSource("rejudged", base.name)
                    if batch.keep(CellTask(spec, v.name, cell_asserts, grader, rejudged, threshold=threshold)):
                        continue
                    copied = _copy_if_unchanged(b, v, out, same_tests)
                    if copied is not None:
                        cell = copied.replace(variant=v.name, pos=pos, fingerprint=spec.fingerprint,
                                              source=CellSource("copied", base.name))
                        batch.record(check_cell(cell, cell_asserts, out, grader=grader, threshold=threshold))
                        continue
                    if spec.replay is None and rejudge == "only":
                        # no recording to re-judge (the base cell failed before it had one): only a run could tell
                        why = f"the base cell {base.name}/{rid} has no recording to re-judge " \
                              f"({b.status if b else 'missing'}: {(b.error if b else None) or 'no trace'})"
                        cell = CellResult.failed(spec, why, status=UNSETTLED, source=rejudged, trace="")
                        batch.record(check_cell(cell, cell_asserts, out, grader=grader, threshold=threshold))
                        continue
                    tasks.append(CellTask(spec, v.name, cell_asserts, grader, rejudged if spec.replay else
                                          CellSource("run", base.name,
                                                     why=f"the base cell {base.name}/{rid} has no recording"),
                                          threshold=threshold))
        dispatch(tasks)
    except BaseException:
        interrupted = True
        raise
    finally:
        batch.bar.close()
        cells: list[CellResult] = sorted(batch.finished, key=lambda c: (c.pos, _order(loaded, c.variant), c.repeat))
        exp = Experiment(out, cells, variants=[v.name for v in loaded], interrupted=interrupted, notes=notes,
                         retried=batch.retried)
        if not interrupted:
            exp.save_tables()
    if upload is not None:
        exp.upload_to_phoenix(upload)
    return exp


def _telemetry(otel: Any, phoenix: Any, out: Path) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """The Phoenix upload's options (None: none) and the cells' export options (None: none), checked before any cell
    runs; an upload exports the cells' runs to the same Phoenix, so each of its runs links to its trace."""
    if (otel is None or otel is False) and (phoenix is None or phoenix is False):
        return None, None
    from .phoenix import phoenix_headers, phoenix_option
    from .telemetry import otel_options
    upload = phoenix_option(phoenix)
    opts = otel_options(otel, experiment=Path(out).resolve().name,
                        endpoint=upload["url"] if upload is not None else None,
                        headers=phoenix_headers() if upload is not None else None)
    return upload, opts


def _check_scoring(threshold: Any, repeat: Any, sample: Any, sample_seed: Any) -> None:
    """The scoring and filter arguments' values, each a UsageError when wrong."""
    from ..errors import UsageError
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                  or not 0 <= threshold <= 1):
        raise UsageError(f"threshold={threshold!r}: give a number from 0 to 1 (the least weighted score that passes)")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise UsageError(f"repeat={repeat!r}: give a whole number >= 1 (the runs of each cell)")
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int) or sample < 1):
        raise UsageError(f"sample={sample!r}: give a whole number >= 1 (the rows to draw)")
    if sample_seed is not None and (isinstance(sample_seed, bool) or not isinstance(sample_seed, int)):
        raise UsageError(f"sample_seed={sample_seed!r}: give a whole number")


def _failed_pairs(failing: Any, errors: Any, variants: list[Variant], rows: list[str],
                  notes: list[str]) -> set[tuple[str | None, str]] | None:
    """The (variant, row) cells the folder filters choose (None: no folder filter), said in `notes`."""
    from .filters import failed_cells
    if not failing and not errors:
        return None
    pairs: set[tuple[str | None, str]] = set()
    for folder, is_failing in ((failing, True), (errors, False)):
        if folder:
            pairs |= failed_cells(folder, failing=is_failing, errors=not is_failing)
    names, have = {v.name for v in variants}, set(rows)
    gone = sorted(f"{v}/{r}" if v is not None else r for v, r in pairs
                  if (v is not None and v not in names) or r not in have)
    kept = {(v, r) for v, r in pairs if (v is None or v in names) and r in have}
    said = " and ".join(x for x, on in (("failed", failing), ("ended in an error", errors)) if on)
    notes.append(f"only the {len(kept)} cell(s) that {said} in {failing or errors}" if not (failing and errors)
                 else f"only the {len(kept)} cell(s) that failed in {failing} or ended in an error in {errors}")
    if gone:
        notes.append(f"{len(gone)} of those cells are not in this experiment: {', '.join(gone[:5])}"
                     + (" …" if len(gone) > 5 else ""))
    return kept


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


def _spec(variant: str | None, lad: Ladder, knobs: Mapping[str, Any] | None, out: Path, rid: str, pos: int,
          fields: dict, model, model_options, slates, isolate: bool, max_fetch_chars, max_round_chars, *,
          base: CellResult | None = None, live: bool = True, cache: str | bool = False, repeat: int = 1) -> CellSpec:
    """The spec of one cell: an experiment's variant × row, or (variant None) an evaluation's row."""
    bound = {d.title: str(Path(slates[d.title])) for d in lad.slates if slates and d.title in slates}
    bound.update({d.title: str(lad.base_dir / d.path) for d in lad.slates if d.title not in bound and d.path})
    writes_to = tuple(sorted({t for t, _ in lad.written_targets()})) if isolate else ()
    model_name = _model_name(model, lad)
    fp = fingerprint(lad, knobs, model_name, fields, model_options)
    replay = then = None
    if base is not None and base.trace and (out / base.trace).is_file() and base.status != "error":
        replay = str((out / base.trace).resolve())
        fp = fingerprint(lad, knobs, f"re-judge {base.fingerprint} live={live}", fields, model_options)
        if live:           # the model a live call uses is the one the cell would have run with: given, or the ladder's
            then = model if model is not None else (lad.model or "offline")
    trace = trace_path(variant, rid, repeat)
    return CellSpec(row=rid, pos=pos, fields=dict(fields), out=str(out), trace=trace, fingerprint=fp, slates=bound,
                    isolate=writes_to, isolate_dir=slates_path(variant, rid, repeat), repeat=repeat,
                    model=model, model_options=model_options, expected=tuple(input_columns(lad)),
                    max_fetch_chars=max_fetch_chars, max_round_chars=max_round_chars, variant=variant,
                    replay=replay, then=then,
                    limit_key=_limit_key(model_name), cache=cache)


def _cache_folder(cache: Any) -> str | bool:
    """The response cache's folder, resolved once (a bad folder is said now, not in every cell), as a cell's spec
    carries it (picklable: a Ray worker opens the same folder); False for none."""
    from ..models.cache import resolve_cache
    found = resolve_cache(cache)
    return str(found.folder) if found is not None else False


def _limit_key(model_name: str) -> str:
    from ..models.limited import provider_of
    return provider_of(model_name) or model_name


def _copy_if_unchanged(base: CellResult | None, v: Variant, out: Path, same_tests: bool) -> CellResult | None:
    """The base cell, unchecked, when the variant's schemas flip none of its recorded verdicts (the same run)."""
    if base is None or not same_tests or base.status == "error" or not base.trace \
            or not (out / base.trace).is_file():
        return None          # a failed base cell is no run to copy: its failure may not happen again
    from ..analysis.edits import Edits
    from ..analysis.rejudge import rejudge_rows
    from ..trace import Trace
    try:
        rows = rejudge_rows(Trace.of(out / base.trace), Edits(v.ladder))
    except LadrError:
        return None
    if any(r["flipped"] for r in rows):
        return None
    return base.replace(checks=None, asserts_fp=None)
