"""Questions answered about recorded runs without calling the model again: re-judging against an edited
ladder, diffs of two runs and of two rounds' prompts, lint of the pitfalls of seed 001, and evaluation
over many inputs."""
from .diff import RunDiff, diff_runs
from .evaluation import Evaluation, evaluate, load_evaluation
from .lint import Finding, LintReport, lint
from .prompts import SectionDiff, diff_prompts, round_diff
from .rejudge import NoStepsInCommon, rejudge, rejudge_rows

__all__ = [
    "Evaluation",
    "Finding",
    "LintReport",
    "NoStepsInCommon",
    "RunDiff",
    "SectionDiff",
    "diff_prompts",
    "diff_runs",
    "evaluate",
    "lint",
    "load_evaluation",
    "rejudge",
    "rejudge_rows",
    "round_diff",
]
