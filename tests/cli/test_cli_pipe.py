"""Piping into `head`: the command ends quietly (no BrokenPipeError traceback), exit 141 as after SIGPIPE."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args", [["run", "examples/research.yaml", "--input", "How does dedup work?"]])
def test_a_pipe_closed_after_three_lines_ends_quietly(args):
    env = dict(os.environ, PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    p = subprocess.Popen([sys.executable, "-m", "ladr_lab", *args], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    assert p.stdout is not None and p.stderr is not None
    for _ in range(3):
        p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    p.stderr.close()
    rc = p.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert rc == 141
