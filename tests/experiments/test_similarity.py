"""`similar` (cosine similarity on the embedder `similarTo` uses, offline by default) and `levenshtein` (promptfoo's:
the edit distance at most the threshold), with their default thresholds, negation, scores and spellings."""
from __future__ import annotations

import math

import pytest

from ladr_lab.experiments.assertions import check_all, load_asserts
from ladr_lab.experiments.checks import CHECKS, LEVENSHTEIN_THRESHOLD, SIMILAR_THRESHOLD
from ladr_lab.slate.embed import HashingEmbedder


def _one(spec, output: str):
    return next(iter(check_all(spec, {"status": "completed", "output": output}).values()))


def _cosine(a: str, b: str) -> float:
    e = HashingEmbedder()
    u, v = e.embed([a, b])
    return sum(x * y for x, y in zip(u, v, strict=True)) / (math.hypot(*u) * math.hypot(*v))


def test_similar_scores_the_cosine_of_the_offline_embedding_against_promptfoos_default():
    assert SIMILAR_THRESHOLD == 0.75 and CHECKS["similar"].graded
    want = "Deduplication keeps each retrieved file once across rounds."
    close = "Deduplication keeps each retrieved file once across all rounds."
    far = "The gate aborts the run when the output equals STOP."
    got = _one(f"similar: {want}", close)
    assert got.passed is True and got.score == pytest.approx(_cosine(want, close)) and got.score >= 0.75
    assert "hashing" in got.reason
    low = _one(f"similar: {want}", far)
    assert low.passed is False and low.score == pytest.approx(_cosine(want, far)) and low.score < 0.75
    # a threshold of its own, in either spelling; not-similar passes when the output is far
    assert _one({"type": "similar", "value": want, "threshold": low.score - 0.01}, far).passed is True
    assert _one(f"similar({low.score - 0.01:.4f}): {want}", far).passed is True
    assert _one(f"not-similar: {want}", far).passed is True and _one(f"not-similar: {want}", close).passed is False


def test_similar_with_an_embedder_that_cannot_be_made_is_unchecked_and_says_why():
    got = _one({"type": "similar", "value": "x", "provider": "nosuch:model"}, "x")
    assert got.passed is None and "nosuch:model" in got.reason
    with pytest.raises(Exception, match="provider names the embedder of a similar assertion"):
        load_asserts({"type": "contains", "value": "x", "provider": "hashing"})


@pytest.mark.parametrize("output, value, distance", [
    ("kitten", "sitting", 3),                 # the textbook pair: two substitutions and an insertion
    ("flaw", "lawn", 2),
    ("  OK\n", "OK", 0),                      # both sides stripped, as `equals` does
    ("", "abc", 3),
])
def test_levenshtein_is_the_edit_distance_at_most_the_threshold(output, value, distance):
    assert LEVENSHTEIN_THRESHOLD == 5
    got = _one(f"levenshtein: {value}", output)
    assert got.passed is True and f"edit distance {distance} ≤ 5" in got.reason and got.score == distance
    if distance:
        tight = _one({"type": "levenshtein", "value": value, "threshold": distance - 1}, output)
        assert tight.passed is False and f"edit distance {distance} > {distance - 1:g}" in tight.reason
    assert _one(f"levenshtein({distance}): {value}", output).passed is True


def test_levenshtein_counts_pass_one_fail_zero_in_the_weighted_score():
    """promptfoo's levenshtein scores 1 or 0, not the distance: the cell score is 1/2 with one of two passing."""
    from ladr_lab.experiments import CellResult
    from ladr_lab.experiments.cells import check_cell
    cell = CellResult(row="r", variant="v", status="completed", output="kitten")
    got = check_cell(cell, tuple(load_asserts(["levenshtein(3): sitting", "levenshtein(2): sitting"])), "/x",
                     threshold=0.5)
    assert list(got.scores.values()) == [1.0, 0.0]       # distance 3: ≤ 3 passes, ≤ 2 fails
    assert got.score == 0.5 and got.passed is True


def test_a_long_output_costs_little():
    """rapidfuzz's bit-parallel distance: 20,000 characters against 20,000 is one call, well under a second (the
    benchmark, benchmarks/assertions_bench.py, measures it)."""
    got = _one("levenshtein: " + "b" * 20_000, "a" * 20_000)
    assert got.passed is False and "edit distance 20000 > 5" in got.reason
