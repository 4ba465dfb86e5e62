"""Variants: how they are named, and which of them are re-judged from another (the same prompts, other judging)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ladr_lab.config.loader import load_ladder_text
from ladr_lab.errors import LadrError
from ladr_lab.experiments.variants import branch_key, load_variants, run_key

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMALL = (EXAMPLES / "research_small.yaml").read_text(encoding="utf-8")
VERIFY = (EXAMPLES / "verify_then_persist.yaml").read_text(encoding="utf-8")


def _lad(text: str):
    return load_ladder_text(text, file=str(EXAMPLES / "v.yaml"), base_dir=EXAMPLES)


def test_names_from_stems_repeats_and_knob_sets():
    vs = load_variants([EXAMPLES / "research_small.yaml", EXAMPLES / "research_small.yaml"])
    assert [v.name for v in vs] == ["research_small", "research_small-2"]
    vs = load_variants(EXAMPLES / "research_small.yaml", knob_sets={"x": {"example": "a.md"}, "y": {}})
    assert [v.name for v in vs] == ["x", "y"] and vs[0].ladder.knobs["example"] == "a.md"
    vs = load_variants({"s": EXAMPLES / "research_small.yaml", "t": EXAMPLES / "pitfall_tight.yaml"},
                       knob_sets={"k": {}})
    assert [v.name for v in vs] == ["s-k", "t-k"]
    with pytest.raises(LadrError, match="variant name"):
        load_variants({"../up": EXAMPLES / "research_small.yaml"})
    with pytest.raises(LadrError, match="at least one"):
        load_variants({})


def test_a_schema_or_gate_edit_keeps_the_run_key_and_a_prompt_edit_does_not():
    base = _lad(SMALL)
    schema = _lad(SMALL.replace("maxItems: 3", "maxItems: 5"))
    renamed = _lad(SMALL.replace("name: research-small", "name: other"))
    prompt = _lad(SMALL.replace("You answer questions", "You answer short questions"))
    assert run_key(base) == run_key(schema) == run_key(renamed) != run_key(prompt)
    assert branch_key(base) == branch_key(schema) != branch_key(prompt)
    vs = load_variants({"a": base, "b": schema, "c": prompt, "d": renamed})
    assert [(v.name, v.base) for v in vs] == [("a", None), ("b", "a"), ("c", None), ("d", "a")]


def test_gate_branches_change_the_branch_key_but_not_the_run_key():
    base = _lad(VERIFY)
    condition = _lad(VERIFY.replace("minimum: 0.9", "minimum: 0.5"))
    branch = _lad(VERIFY.replace("      else: abort", "      else: continue"))
    assert run_key(base) == run_key(condition) == run_key(branch)
    assert branch_key(base) == branch_key(condition) != branch_key(branch)
    assert run_key(base) != run_key(_lad(VERIFY.replace("Set verified to true", "Set verified true")))


def test_a_knob_set_that_changes_the_prompt_runs_again():
    vs = load_variants(EXAMPLES / "research_small.yaml", knob_sets={"x": {"example": "a.md"},
                                                                     "y": {"example": "b.md"}})
    assert [v.base for v in vs] == [None, None]
