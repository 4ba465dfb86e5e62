"""Whether the local model can run here (the local extra and the default weights installed): `MISSING` says why
not, `needs_model` skips on it, and with LADR_REQUIRE_LOCAL_MODEL set (CI installs the extra) a missing model is
an error at collection, not a skip."""
from __future__ import annotations

import importlib.util
import os

import pytest


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "the local extra (llama-cpp-python) is not installed"
    from ladr_lab.models.local.weights import CATALOGUE, DEFAULT_LOCAL, WeightsError, installed_parts

    try:
        installed_parts(CATALOGUE[DEFAULT_LOCAL])
    except WeightsError as exc:
        return str(exc)
    return None


MISSING = _missing()
if MISSING and os.environ.get("LADR_REQUIRE_LOCAL_MODEL"):
    raise RuntimeError(f"LADR_REQUIRE_LOCAL_MODEL is set but {MISSING}")
needs_model = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
