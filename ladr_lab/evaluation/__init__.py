"""Evaluation: a ladder run with a model over many inputs (a batch driver of the executor, `engine.Run`), with
bounded concurrency, a progress bar, one trace per row, a results table, resumption after an interruption,
and re-judging the whole evaluation at once (`analysis.rejudge`). Unlike `analysis`, it calls the model."""
from .batch import Evaluation, evaluate, load_evaluation

__all__ = ["Evaluation", "evaluate", "load_evaluation"]
