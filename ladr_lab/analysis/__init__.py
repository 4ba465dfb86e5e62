"""Questions answered about recorded runs without calling the model again: re-judging against an edited
ladder, tuning requestMatch over a data set (variants scored against labels, a schema suggested from them), diffs of two runs and of two
rounds' prompts, and lint of the pitfalls of seed 001. (Running a ladder
over many inputs is `ladr_lab.experiments`, which stands above this package.)"""
from .diff import RunDiff, diff_runs
from .labels import load_labels, save_labels
from .lint import Finding, LintReport, lint
from .prompts import SectionDiff, diff_prompts, round_diff
from .rejudge import NoStepsInCommon, Rejudging, rejudge, rejudge_rows
from .suggest import Suggestion, suggest_request_match
from .tuning import SchemaTuning, tune_request_match

__all__ = [
    "Finding",
    "LintReport",
    "NoStepsInCommon",
    "Rejudging",
    "RunDiff",
    "SchemaTuning",
    "SectionDiff",
    "Suggestion",
    "diff_prompts",
    "diff_runs",
    "lint",
    "load_labels",
    "rejudge",
    "rejudge_rows",
    "round_diff",
    "save_labels",
    "suggest_request_match",
    "tune_request_match",
]
