"""docs/ladders.md: every ```yaml block is a whole ladder that validates, so the user's reference cannot drift."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ladr_lab.config import load_ladder_text

DOC = Path(__file__).resolve().parents[2] / "docs" / "ladders.md"
BLOCKS = re.findall(r"^```yaml\n(.*?)^```", DOC.read_text(), re.S | re.M)


def test_the_reference_has_an_example_for_each_part():
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("block", BLOCKS, ids=[re.search(r"^name: (\S+)", b, re.M).group(1) for b in BLOCKS])
def test_every_yaml_example_is_a_valid_ladder(block):
    ladder = load_ladder_text(block, file=DOC, base_dir=DOC.parent)
    assert ladder.steps
