"""A deprecated alias: batch runs have one home, `ladr_lab.experiments` (an evaluation is the experiment of one
ladder with no assertions). `from ladr_lab.evaluation import evaluate, Evaluation, load_evaluation` still works,
with a DeprecationWarning; `ladr_lab.evaluate`, `ladr_lab.Evaluation` and `ladr_lab.load_evaluation` are unchanged.
"""
from __future__ import annotations

import warnings
from typing import Any

__all__ = ["Evaluation", "evaluate", "load_evaluation"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        warnings.warn(f"ladr_lab.evaluation.{name} is ladr_lab.experiments.{name} (or ladr_lab.{name})",
                      DeprecationWarning, stacklevel=2)
        from .. import experiments
        return getattr(experiments, name)
    raise AttributeError(f"module 'ladr_lab.evaluation' has no attribute {name!r}")
