"""The code base stays clean under ruff (a dev dependency), so CI enforces the house style."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("ruff") is None and subprocess.run([sys.executable, "-m", "ruff", "--version"],
                    capture_output=True).returncode != 0, reason="ruff is not installed")
def test_ruff_check_passes():
    p = subprocess.run([sys.executable, "-m", "ruff", "check", "ladr_lab", "tests", "benchmarks"], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
