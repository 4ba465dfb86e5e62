"""The shared conformance cases (../shared/conformance), run through the `ladr-lab` command line."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT.parent / "shared" / "conformance"
CASES = sorted(p for p in (CONFORMANCE / "cases").glob("*") if (p / "case.yaml").exists()) \
    if CONFORMANCE.is_dir() else []


def _runner():
    spec = importlib.util.spec_from_file_location("run_cases", CONFORMANCE / "run_cases.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not CASES, reason="../shared/conformance is not present")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_conformance_case(case: Path) -> None:
    problems = _runner().run_case(case, verbose=False)
    assert problems == [], "\n".join(problems)
