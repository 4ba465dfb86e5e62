"""Experiments: ladder variants × input rows, one trace per cell, assertions and scores per cell, a summary per
variant, variants that differ only in judging re-judged from recorded runs, and Ray to scale out. Like
`evaluation` (whose cell runner it shares), it calls the model; `analysis.tune_request_match` asks the same
recorded runs which `requestMatch` tells requests from answers best, without it."""
from .assertions import Assertion, load_asserts
from .checks import AssertionResult
from .results import Experiment, load_experiment
from .runner import experiment
from .variants import Variant, load_variants

__all__ = ["Assertion", "AssertionResult", "Experiment", "Variant", "experiment", "load_asserts",
           "load_experiment", "load_variants"]
