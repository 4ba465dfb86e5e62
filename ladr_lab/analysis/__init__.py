"""Questions answered about recorded runs without calling the model again: re-judging against an edited
ladder, diffs of two runs and of two rounds' prompts, and lint of the pitfalls of seed 001. (Running a ladder
over many inputs is `ladr_lab.evaluation`.)"""
from .diff import RunDiff, diff_runs
from .lint import Finding, LintReport, lint
from .prompts import SectionDiff, diff_prompts, round_diff
from .rejudge import NoStepsInCommon, rejudge, rejudge_rows

__all__ = [
    "Finding",
    "LintReport",
    "NoStepsInCommon",
    "RunDiff",
    "SectionDiff",
    "diff_prompts",
    "diff_runs",
    "lint",
    "rejudge",
    "rejudge_rows",
    "round_diff",
]
