"""Batch runs: a ladder over a table (`evaluate`: one run per input row) and experiments (`experiment`: ladder
variants × input rows, one trace per cell, assertions and scores per cell, a summary per variant, variants that
differ only in judging re-judged from recorded runs, and Ray to scale out). An evaluation is the experiment of one
ladder with no assertions; both call the model, and both keep their results in one folder format (`folder.py`).
`analysis.tune_request_match` asks the same recorded runs which `requestMatch` tells requests from answers best,
without the model. An experiment may be written down as a YAML file (`file.py`, `load_experiment_file`), scored
with weights, metrics and a threshold (`scoring.py`), repeated, and filtered to some of its cells (`filters.py`).
Two runs are compared cell by cell (`Experiment.compare`, a `Comparison`), and a run is reported for CI and for
people as JUnit XML (`junit.py`) and as a standalone HTML page."""
from .assertions import Assertion, load_asserts
from .cells import CellResult, CellSource
from .checks import AssertionResult
from .compare import Comparison
from .file import ExperimentFile, ExperimentFileErrors, load_experiment_file
from .results import Evaluation, Experiment, load_evaluation, load_experiment, load_results
from .runner import evaluate, experiment
from .tuning import suggest_request_match, tune_request_match
from .variants import Variant, load_variants

__all__ = ["Assertion", "AssertionResult", "CellResult", "CellSource", "Comparison", "Evaluation", "Experiment",
           "ExperimentFile", "ExperimentFileErrors", "Variant", "evaluate", "experiment", "load_asserts",
           "load_evaluation", "load_experiment", "load_experiment_file", "load_results", "load_variants",
           "suggest_request_match", "tune_request_match"]
