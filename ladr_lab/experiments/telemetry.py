"""An experiment's cells as OpenTelemetry traces (`experiment(..., otel=True)`, `ladr-lab eval ... --otel`): each cell's
run is exported once its assertions are checked, its root span tagged with the experiment, the variant, the row, the
status and the assertion results, as attributes Phoenix and other OpenInference backends filter on:

- `metadata` (OpenInference's, JSON): `{"experiment", "variant", "row", "status", "passed", "assertions": {name:
  true | false | null}}`, and `repeat` (run 2..N of a repeated cell), `score` and `metrics` (a scored cell's
  weighted score and named metrics) when they apply; in Phoenix, `metadata['variant'] == 'B'`,
  `metadata['passed'] == False` or `metadata['score'] < 0.5`;
- `tag.tags`: `experiment:NAME`, `variant:V`, `row:R`, and `passed`, `failed` or `unchecked`;
- `ladr.experiment.name`, `.variant`, `.row`, `.status`, `.passed`, `.failed` (the failed assertions' names), and
  `.repeat`, `.score` when they apply.

The export's options travel in `CellSpec.otel` (a plain mapping: a Ray worker receives it), and a failed export is
the cell's note `otel_error`, never its failure. docs/experiments.md, "OpenTelemetry and Phoenix".
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import LadrError

if TYPE_CHECKING:
    from ..otel import OtelExport
    from .cells import CellResult, CellSpec

__all__ = ["OPTIONS", "cell_attributes", "cell_export", "export_cell", "otel_options"]

# what `otel=` may set (OtelExport's keywords); `experiment` names the experiment in the tags
OPTIONS = ("content", "document_chars", "endpoint", "headers", "hide_inputs", "hide_outputs")


def otel_options(otel: Any, *, experiment: str, endpoint: str | None = None,
                 headers: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The cells' export options from `experiment(otel=...)`: None or False (no export, unless `endpoint` is given:
    the Phoenix an upload goes to), True (the defaults), or a mapping of `OPTIONS`; checked now, once, with the
    receiver: a receiver that does not answer is a LadrError before any cell runs, not a wait in every cell."""
    if (otel is None or otel is False) and endpoint is None:
        return None
    opts: dict[str, Any] = {}
    if isinstance(otel, Mapping):
        unknown = sorted(set(otel) - set(OPTIONS))
        if unknown:
            near = difflib.get_close_matches(unknown[0], OPTIONS, n=1)
            raise LadrError(f"otel: unknown option(s) {', '.join(unknown)}"
                            + (f' (did you mean "{near[0]}"?)' if near else f"; options: {', '.join(OPTIONS)}"))
        opts.update(otel)
    elif otel not in (None, False, True):
        raise LadrError(f"otel must be True, False or a mapping of options ({', '.join(OPTIONS)}); got {otel!r}")
    if endpoint is not None:
        opts.setdefault("endpoint", endpoint)
    if headers and not opts.get("headers"):
        opts["headers"] = dict(headers)
    from ..otel import global_provider, receiver_problem, require_otel
    require_otel()
    if opts.get("endpoint") is not None or global_provider() is None:
        problem = receiver_problem(opts.get("endpoint"))
        if problem:
            raise LadrError(f"otel: {problem}; start one (Phoenix: `phoenix serve`) or set OTEL_EXPORTER_OTLP_ENDPOINT")
    opts["experiment"] = experiment
    return opts


def cell_export(spec: CellSpec) -> OtelExport | None:
    """The deferred export a cell's run records its spans into (None: the experiment exports nothing)."""
    if spec.otel is None:
        return None
    from ..otel import OtelExport
    opts = {k: v for k, v in spec.otel.items() if k in OPTIONS}
    return OtelExport(defer=True, **opts)


def cell_attributes(cell: CellResult, experiment: str | None) -> dict[str, Any]:
    """The root span's tags of a cell: the experiment, variant, row, status and assertion results (module docstring)."""
    passed = cell.passed
    checks = {n: r.passed for n, r in (cell.checks or {}).items()}
    verdict = "unchecked" if passed is None else "passed" if passed else "failed"
    meta = {"experiment": experiment, "variant": cell.variant, "row": cell.row, "status": cell.status,
            "passed": passed, "assertions": checks,
            "repeat": cell.repeat if cell.repeat != 1 else None,         # run 2..N of a repeated cell
            "score": cell.score if cell.scored else None,
            "metrics": dict(cell.metrics) if cell.scored and cell.metrics else None}
    tags = [f"experiment:{experiment}"] if experiment else []
    tags += ([f"variant:{cell.variant}"] if cell.variant is not None else []) + [f"row:{cell.row}", verdict]
    attrs: dict[str, Any] = {"metadata": {k: v for k, v in meta.items() if v is not None or k == "passed"},
                             "tag.tags": tags, "ladr.experiment.name": experiment,
                             "ladr.experiment.variant": cell.variant, "ladr.experiment.row": cell.row,
                             "ladr.experiment.status": cell.status,
                             "ladr.experiment.failed": [n for n, ok in checks.items() if ok is False]}
    if passed is not None:
        attrs["ladr.experiment.passed"] = passed
    if cell.repeat != 1:
        attrs["ladr.experiment.repeat"] = cell.repeat
    if meta["score"] is not None:
        attrs["ladr.experiment.score"] = meta["score"]
    return attrs


def export_cell(otel: OtelExport | None, cell: CellResult, spec: CellSpec) -> CellResult:
    """Send the cell's recorded spans tagged with its results; the cell, saying its trace id (`otel_trace`), or why
    the export failed (`otel_error` in its line)."""
    if otel is None:
        return cell
    try:
        made = otel.flush(cell_attributes(cell, (spec.otel or {}).get("experiment")))
    except LadrError as exc:
        return cell.replace(extra={**cell.extra, "otel_error": str(exc)})
    return cell.replace(otel_trace=otel.trace_id) if made else cell
