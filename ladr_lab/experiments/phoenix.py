"""An experiment (or an evaluation) uploaded to Arize Phoenix as one thing (`ladr-lab eval ... --phoenix`,
`experiment(..., phoenix=True)`, `Experiment.to_phoenix()`): a Phoenix **dataset** of its input rows, and per variant
a Phoenix **experiment** whose runs are the recorded cells and whose evaluations are their assertion results.

Through Phoenix's own client (`arize-phoenix-client`, imported here only): `datasets.create_dataset` (one example a
row: its inputs, `metadata.row`), `experiments.create`, then for each cell `experiments.log_run` (its output, its
error when its status is `error`, its start and end, and `trace_id`: the OpenTelemetry trace its run was exported as,
which links the run to its spans) and `experiments.log_evaluation` (one per assertion: score 1 or 0, label `pass`,
`fail` or `unchecked`, the reason as explanation — a graded kind's grade as its score in a scored experiment —;
`status`: score 1 when the cell completed, its status as the label; and in a scored experiment (weights, metrics or
a cell threshold) `score`, the cell's weighted score labelled with its verdict, and `metric.NAME`, each metric). Nothing runs again: Phoenix's `run_experiment` would call a task; the cells were already run and judged, so
their results are logged as they were recorded.

A dataset of the same name whose examples are the same rows is reused (each upload adds experiments to it); another
rows' dataset of that name is not touched: the upload makes `NAME (YYYY-MM-DD HH:MM:SS)`. docs/experiments.md,
"OpenTelemetry and Phoenix".
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LadrError

if TYPE_CHECKING:
    from .cells import CellResult
    from .results import Experiment

__all__ = ["INSTALL", "PhoenixUpload", "phoenix_headers", "phoenix_option", "phoenix_url", "require_phoenix", "upload"]

INSTALL = "pip install arize-phoenix-client"
DEFAULT_URL = "http://localhost:6006"


def require_phoenix() -> None:
    """Raise a LadrError naming the install when Phoenix's client is missing."""
    try:
        import phoenix.client  # noqa: F401
    except ImportError as exc:
        raise LadrError(f"uploading to Phoenix needs its client, which is not installed: {INSTALL} ({exc})") from exc


def phoenix_url(url: str | None = None) -> str:
    """The Phoenix to upload to: `url`, else the one Phoenix's client finds from its variables
    (`PHOENIX_COLLECTOR_ENDPOINT`, `PHOENIX_HOST`/`PHOENIX_PORT`, ...), else http://localhost:6006."""
    if url:
        if not url.startswith(("http://", "https://")):
            raise LadrError(f"--phoenix takes the URL of a Phoenix server, e.g. http://127.0.0.1:6006 (got {url!r})")
        return url.rstrip("/")
    try:
        from phoenix.client.utils.config import get_base_url
        return str(get_base_url()).rstrip("/")
    except Exception:  # an older client, or variables it cannot read: Phoenix's own default
        return DEFAULT_URL


def phoenix_headers() -> dict[str, str] | None:
    """The OTLP headers Phoenix's own `register()` sends: its API key (`PHOENIX_API_KEY`) as a bearer token."""
    key = os.environ.get("PHOENIX_API_KEY", "").strip()
    return {"authorization": f"Bearer {key}"} if key else None


@dataclass
class PhoenixUpload:
    """What an upload made: the dataset (its id, name and whether it was reused) and an experiment id per variant,
    with the runs and evaluations logged."""

    url: str
    dataset_id: str
    dataset_name: str
    reused: bool = False
    experiments: dict[str, str] = field(default_factory=dict)     # variant -> Phoenix experiment id
    runs: int = 0
    evaluations: int = 0
    links: dict[str, str] = field(default_factory=dict)           # variant -> the experiment's page

    def format(self) -> str:
        """One line per variant, as `ladr-lab eval --phoenix` prints it."""
        head = (f"Phoenix: dataset {self.dataset_name!r} ({'reused' if self.reused else 'new'}), "
                f"{len(self.experiments)} experiment(s), {self.runs} run(s), {self.evaluations} evaluation(s)")
        return "\n".join([head, *(f"  {v}: {self.links.get(v) or e}" for v, e in self.experiments.items())])

    def to_dict(self) -> dict[str, Any]:
        """The upload as plain data (the `phoenix` key of `ladr-lab eval --json`)."""
        return {"url": self.url, "dataset_id": self.dataset_id, "dataset": self.dataset_name, "reused": self.reused,
                "experiments": dict(self.experiments), "runs": self.runs, "evaluations": self.evaluations}


def _plain(value: Any) -> Any:
    """A value as JSON holds it (a row's inputs may hold anything a CSV or JSONL file gives)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def _rows(cells: list[CellResult]) -> list[tuple[str, dict]]:
    """The experiment's input rows (id, inputs), in input order, each once."""
    seen: dict[str, dict] = {}
    for c in sorted(cells, key=lambda c: c.pos or 0):
        seen.setdefault(c.row, _plain(dict(c.inputs)))
    return list(seen.items())


def _dataset(client: Any, name: str, rows: list[tuple[str, dict]]) -> tuple[Any, bool]:
    """The dataset of these rows: the one named `name` when its examples are these rows, else a new one."""
    names = {str(d.get("name")) for d in client.datasets.list()}
    if name in names:
        found = client.datasets.get_dataset(dataset=name)
        if sorted(str((e.get("metadata") or {}).get("row")) for e in found.examples) == sorted(r for r, _ in rows):
            return found, True
        name = f"{name} ({datetime.now().strftime('%Y-%m-%d %H:%M:%S')})"
    made = client.datasets.create_dataset(name=name, inputs=[fields for _, fields in rows],
                                          outputs=[{} for _ in rows], metadata=[{"row": rid} for rid, _ in rows],
                                          dataset_description="input rows of a ladr_lab experiment")
    return made, False


def _times(out: Path, cell: CellResult) -> tuple[datetime, datetime]:
    """When the cell's run began (its trace's `run_start.started_at`) and ended (`seconds` later); now when unknown."""
    start = None
    path = out / cell.trace if cell.trace else None
    if path is not None and path.is_file():
        try:
            with open(path, encoding="utf-8") as fh:
                first = json.loads(fh.readline() or "{}")
            at = first.get("started_at")
            if isinstance(at, (int, float)) and not isinstance(at, bool):
                start = float(at)
        except (OSError, ValueError):
            start = None
    if start is None:
        start = time.time() - float(cell.seconds or 0.0)
    end = start + float(cell.seconds or 0.0)
    return datetime.fromtimestamp(start, timezone.utc), datetime.fromtimestamp(end, timezone.utc)


def _label(ok: bool | None) -> str:
    return "unchecked" if ok is None else "pass" if ok else "fail"


def _evaluations(cell: CellResult) -> list[dict[str, Any]]:
    """The cell's evaluations: its status, one per assertion, and for a scored cell (weights, metrics or a cell
    threshold) its weighted `score` (labelled with the cell's verdict) and each `metric.NAME`."""
    out: list[dict[str, Any]] = [{"name": "status", "score": 1.0 if cell.status == "completed" else 0.0,
                                  "label": cell.status, "explanation": cell.error or None}]
    for name, result in (cell.checks or {}).items():
        ok = result.passed
        score = None if ok is None else cell.scores.get(name, 1.0 if ok else 0.0)   # a graded kind: its grade
        out.append({"name": name, "score": score, "label": _label(ok), "explanation": result.reason or None})
    if cell.scored:
        said = [f"threshold {cell.threshold:g}" if cell.threshold is not None else "",
                ", ".join(f"weight {w:g}: {n}" for n, w in cell.weights.items())]
        out.append({"name": "score", "score": cell.score, "label": _label(cell.passed),
                    "explanation": "; ".join(x for x in said if x) or None})
        out += [{"name": f"metric.{m}", "score": v} for m, v in cell.metrics.items()]
    return out


def upload(exp: Experiment, *, url: str | None = None, dataset: str | None = None, client: Any = None,
           name: str | None = None) -> PhoenixUpload:
    """Upload an experiment (or an evaluation: one experiment named after the folder) to Phoenix: the dataset of
    its rows and, per variant, an experiment of its recorded cells (module docstring); return what was made."""
    require_phoenix()
    base = phoenix_url(url) if client is None or url else ""
    if client is None:
        from phoenix.client import Client
        client = Client(base_url=base)
    title = name or Path(exp.out).resolve().name
    cells = list(exp.cells)
    if not cells:
        raise LadrError(f"the experiment in {exp.out} has no finished cell to upload")
    try:
        ds, reused = _dataset(client, dataset or title, _rows(cells))
        examples = {str((e.get("metadata") or {}).get("row")): e["id"] for e in ds.examples}
        done = PhoenixUpload(base, ds.id, ds.name, reused)
        variants: list[str | None] = [*exp.variants] or list(dict.fromkeys(str(c.variant) for c in cells
                                                                   if c.variant is not None)) or [None]
        for variant in variants:
            label = variant if variant is not None else title
            made = client.experiments.create(
                dataset_id=ds.id, dataset_version_id=ds.version_id, experiment_name=label,
                experiment_description=f"ladr_lab experiment {title}" + (f", variant {variant}" if variant else ""),
                experiment_metadata={"ladr_lab": {"experiment": title, "variant": variant,
                                                  "folder": str(Path(exp.out).resolve())}},
                repetitions=max([c.repeat for c in cells if c.variant == variant] or [1]))
            done.experiments[label] = made["id"]
            link = getattr(client.experiments, "get_experiment_url", None)
            if callable(link):
                done.links[label] = link(ds.id, made["id"])
            for cell in cells:
                if cell.variant != variant:
                    continue
                done.runs += 1
                done.evaluations += _log_cell(client, made["id"], examples[cell.row], cell, Path(exp.out))
    except LadrError:
        raise
    except Exception as exc:  # the client's HTTP and validation errors: said as one line naming the server
        raise LadrError(f"could not upload to Phoenix at {base or url or DEFAULT_URL}: {type(exc).__name__}: "
                        f"{exc}") from exc
    return done


def _log_cell(client: Any, experiment_id: str, example_id: str, cell: CellResult, out: Path) -> int:
    """Log one cell as a run of the experiment, with its evaluations; return how many evaluations were logged."""
    start, end = _times(out, cell)
    run = client.experiments.log_run(experiment_id=experiment_id, dataset_example_id=example_id,
                                     output=_plain(cell.output), start_time=start, end_time=end,
                                     repetition_number=cell.repeat, trace_id=cell.otel_trace or None,
                                     error=(cell.error or cell.status) if cell.status == "error" else None)
    n = 0
    for ev in _evaluations(cell):
        client.experiments.log_evaluation(experiment_run_id=run["id"], annotator_kind="CODE", start_time=end,
                                          end_time=end, trace_id=cell.otel_trace or None,
                                          **{k: v for k, v in ev.items() if v is not None})
        n += 1
    return n


def _option(phoenix: Any) -> Mapping[str, Any] | None:
    """`experiment(phoenix=...)` as options: None (no upload), {} (the default Phoenix), {"url": URL}, or a mapping
    of `url`, `dataset`."""
    if phoenix is None or phoenix is False:
        return None
    if phoenix is True or phoenix == "":
        return {}
    if isinstance(phoenix, str):
        return {"url": phoenix}
    if isinstance(phoenix, Mapping):
        unknown = sorted(set(phoenix) - {"url", "dataset"})
        if unknown:
            raise LadrError(f"phoenix: unknown option(s) {', '.join(unknown)} (options: url, dataset)")
        return dict(phoenix)
    raise LadrError(f"phoenix must be True, a URL or a mapping (url, dataset); got {phoenix!r}")


def phoenix_option(phoenix: Any) -> Mapping[str, Any] | None:
    """`experiment(phoenix=...)` read and checked (None: no upload); the client must be installed."""
    opts = _option(phoenix)
    if opts is not None:
        require_phoenix()
        opts = {**opts, "url": phoenix_url(opts.get("url"))}
    return opts
