"""ladr_lab: author, run, step through and debug LADR ladders (YAML LLM pipelines over slates).

    >>> import ladr_lab
    >>> ladder = ladr_lab.load_ladder("examples/research.yaml")
    >>> run = ladr_lab.Run(ladder, input="How does dedup work?")
    >>> run.step()          # exactly one model call; returns its events
    >>> run.run()           # to the end

In a notebook every object above displays itself (a static HTML view); `ladr_lab.widgets` adds the
interactive views, `%load_ext ladr_lab` the `%%ladder NAME` cell magic, and `ladr_lab.watch(path)` reloads a
ladder file when it changes. Heavy dependencies (litellm, pandas, ipywidgets, numpy) are imported only where used.
"""
from .analysis import (
    Finding,
    LintReport,
    NoStepsInCommon,
    Rejudging,
    RunDiff,
    SchemaTuning,
    SectionDiff,
    Suggestion,
    diff_prompts,
    diff_runs,
    lint,
    load_labels,
    rejudge,
    rejudge_rows,
    round_diff,
    save_labels,
)
from .config import Ladder, WatchedLadder, iter_problems, load_ladder, load_ladder_text, watch
from .cost import cost_report
from .engine import CallRequest, Run, RunResult, run_ladder
from .errors import (
    BudgetExhausted,
    CallCancelled,
    ConfigError,
    ConfigErrors,
    LadrError,
    ModelError,
    NodeDependencyError,
    PathRefused,
    RunArgumentError,
    RunError,
    ScriptExhausted,
    SlateError,
    SourceResolutionError,
    TraceError,
    UsageError,
)
from .experiments import (
    Evaluation,
    Experiment,
    ExperimentFileErrors,
    evaluate,
    experiment,
    load_evaluation,
    load_experiment,
    load_results,
    suggest_request_match,
    tune_request_match,
)
from .jsonx import NO_JSON, extract, extract_json
from .models import (
    CallInfo,
    Completion,
    LiteLLMModel,
    Model,
    OfflineModel,
    ReplayDivergence,
    ReplayModel,
    ScriptedModel,
    WeightsError,
    get_model,
)
from .otel import OtelExportError
from .round import FORCED_FINAL_LINE
from .search import InvalidRequestParams, OptionUnsupported, RequestTimeout, SearchError, SnapshotGone
from .server import RetrieveError
from .slate import FolderSpec, SlateStore
from .trace import Event, Trace, load_trace

__version__ = "0.1.0"


def load_ipython_extension(ipython) -> None:
    """`%load_ext ladr_lab`: register the `%%ladder NAME` cell magic (ladr_lab.magics, imported only now)."""
    from .magics import load_ipython_extension as load
    load(ipython)


__all__ = [
    "BudgetExhausted",
    "CallCancelled",
    "CallInfo",
    "CallRequest",
    "Completion",
    "ConfigError",
    "ConfigErrors",
    "Evaluation",
    "Event",
    "Experiment",
    "ExperimentFileErrors",
    "FORCED_FINAL_LINE",
    "Finding",
    "FolderSpec",
    "InvalidRequestParams",
    "Ladder",
    "LadrError",
    "LintReport",
    "LiteLLMModel",
    "Model",
    "ModelError",
    "NO_JSON",
    "NoStepsInCommon",
    "NodeDependencyError",
    "OfflineModel",
    "OptionUnsupported",
    "OtelExportError",
    "PathRefused",
    "Rejudging",
    "ReplayDivergence",
    "ReplayModel",
    "RequestTimeout",
    "RetrieveError",
    "Run",
    "RunArgumentError",
    "RunDiff",
    "RunError",
    "RunResult",
    "SchemaTuning",
    "ScriptExhausted",
    "ScriptedModel",
    "SearchError",
    "SectionDiff",
    "SlateError",
    "SlateStore",
    "SnapshotGone",
    "SourceResolutionError",
    "Suggestion",
    "Trace",
    "TraceError",
    "UsageError",
    "WatchedLadder",
    "WeightsError",
    "cost_report",
    "diff_prompts",
    "diff_runs",
    "evaluate",
    "experiment",
    "extract",
    "extract_json",
    "get_model",
    "iter_problems",
    "lint",
    "load_evaluation",
    "load_experiment",
    "load_ipython_extension",
    "load_labels",
    "load_ladder",
    "load_ladder_text",
    "load_results",
    "load_trace",
    "rejudge",
    "rejudge_rows",
    "round_diff",
    "run_ladder",
    "save_labels",
    "suggest_request_match",
    "tune_request_match",
    "watch",
]
