"""Notebook widgets over ladr_lab's models: the only importer of ipywidgets (imported when a view is made).

    from . import (SlateView, TraceView, Stepper, RequestMatchEditor, ReplayView, DiffView, EvaluationView,
                   ExperimentView, ComparisonView, TuningView)

Each view is an object whose `widget` is its root ipywidgets box (carrying a CSS class, e.g. `ladr-stepper`);
as a cell's value it displays as that widget, and in a notebook saved without widget state as its static
HTML. Views only display and drive the APIs below them (`Run`, `Trace`, `rejudge`, `diff_runs`, `lint`,
`Evaluation`, `Experiment`, `Comparison`, `tune_request_match`, `ReplayModel`, the slate `Folder`); see
docs/widgets.md.
"""
from .comparison_view import ComparisonView
from .diff_view import DiffView
from .experiment_view import EvaluationView, ExperimentView
from .replay_view import ReplayView
from .schema_editor import RequestMatchEditor
from .slate_view import SlateView
from .stepper import Stepper
from .trace_view import TraceView
from .tuning_view import TuningView

__all__ = ["ComparisonView", "DiffView", "EvaluationView", "ExperimentView", "ReplayView", "RequestMatchEditor",
           "SlateView", "Stepper", "TraceView", "TuningView"]
