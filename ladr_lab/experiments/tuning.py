"""Schema tuning over a batch run: `analysis.tune_request_match` (which stands below this package and reads sources
only through `.traces()`), given a batch run's folder too — read here, with `load_results`, so its rows keep their
ids and their input order. `ladr_lab.tune_request_match` is this one; the widgets and `ladr-lab trace tune` read a
folder the same way (`as_source`)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..analysis import SchemaTuning, Suggestion
from ..analysis import suggest_request_match as _suggest
from ..analysis import tune_request_match as _tune
from .results import is_results_folder, load_results

__all__ = ["as_source", "suggest_request_match", "tune_request_match"]


def as_source(source: Any) -> Any:
    """A batch run's folder as its Evaluation or Experiment (`load_results`); any other source as it is."""
    if isinstance(source, (str, Path)) and Path(source).is_dir() and is_results_folder(source):
        return load_results(source)
    return source


def tune_request_match(source: Any, variants: Mapping[str, Any], *, labels: Any = None,
                       step: str | None = None) -> SchemaTuning:
    """`analysis.tune_request_match` over `source`, which may also be an evaluation's or experiment's output folder
    (its rows by id, in input order; an experiment's cells as `variant/row`)."""
    return _tune(as_source(source), variants, labels=labels, step=step)


def suggest_request_match(source: Any, *, labels: Any = None, step: str | None = None, ladder: Any = None,
                          variants: Mapping[str, Any] | None = None, folds: int = 5,
                          system_prompt: str | None = None) -> Suggestion:
    """`analysis.suggest_request_match` over `source`, which may also be an evaluation's or experiment's output
    folder (read as `tune_request_match` reads it)."""
    return _suggest(as_source(source), labels=labels, step=step, ladder=ladder, variants=variants, folds=folds,
                    system_prompt=system_prompt)
