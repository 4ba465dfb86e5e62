"""Running some of an experiment's cells: `variants=`, `rows=` (globs, `re:`), a seeded `sample=`, and the cells an
earlier folder says failed (`filter_failing=`) or ended in an error (`filter_errors=`) — each counted at the model."""
from __future__ import annotations

import json
import threading

import pytest

from ladr_lab import experiment
from ladr_lab.errors import UsageError
from ladr_lab.experiments.filters import match_rows, sample_rows
from ladr_lab.models import ScriptedModel

LADDER = "name: t\nsteps:\n  - id: a\n    fields: [{ name: Q, type: text, from: input.context }]\n"
ROWS = [{"id": rid, "context": f"question {rid}"} for rid in
        ("dedup-1", "dedup-2", "rounds-1", "gates-1", "gates-2", "writes-1")]


class Counter:
    """A scripted model that counts each cell's calls, answers `ok` and fails the rows in `down`."""

    def __init__(self, down=(), wrong=()):
        self.calls: list[str] = []
        self.down, self.wrong = set(down), set(wrong)
        self.lock = threading.Lock()

    def __call__(self, messages, call):
        rid = messages[-1]["content"].split("question ")[-1].strip()
        with self.lock:
            self.calls.append(rid)
        if rid in self.down:
            raise RuntimeError("the model is down")
        return "wrong" if rid in self.wrong else "ok"


@pytest.fixture
def ladders(tmp_path):
    for name in ("a", "b"):      # two prompts: each variant calls the model (neither is re-judged from the other)
        (tmp_path / f"{name}.yaml").write_text(LADDER + f"    systemPrompt: Answer as {name}.\n")
    return {"a": str(tmp_path / "a.yaml"), "b": str(tmp_path / "b.yaml")}


def _run(ladders, out, model, **kw):
    return experiment(ladders, ROWS, model=ScriptedModel(model, reads_schemas=False), out=out, progress=False,
                      asserts=["contains: ok"], **kw)


def test_rows_by_glob_and_by_regex(tmp_path, ladders):
    m = Counter()
    exp = _run(ladders, tmp_path / "x", m, rows=["dedup-*", "re:^gates-[2-9]$"])
    assert exp.row_ids() == ["dedup-1", "dedup-2", "gates-2"] and len(exp.cells) == 6
    assert sorted(m.calls) == sorted(["dedup-1", "dedup-2", "gates-2"] * 2)
    assert any("rows matching dedup-*, re:^gates-[2-9]$: 3 of 6" in n for n in exp.notes)
    manifest = json.loads((tmp_path / "x" / "experiment.json").read_text())
    assert manifest["rows"] == ["dedup-1", "dedup-2", "gates-2"]
    assert manifest["filters"]["rows"] == ["dedup-*", "re:^gates-[2-9]$"]
    assert match_rows(["Dedup", "dedup"], ["dedup"]) == ["dedup"]          # globs are case-sensitive, whole ids
    assert match_rows(["a-dedup-b"], ["re:dedup"]) == ["a-dedup-b"]          # a regex is searched


def test_a_sample_is_seeded_in_input_order_and_said(tmp_path, ladders):
    m = Counter()
    exp = _run(ladders, tmp_path / "x", m, sample=3)
    again = _run(ladders, tmp_path / "y", Counter(), sample=3)
    other = _run(ladders, tmp_path / "z", Counter(), sample=3, sample_seed=7)
    ids = [r["id"] for r in ROWS]
    assert exp.row_ids() == again.row_ids() == sample_rows(ids, 3, 0) and len(exp.row_ids()) == 3
    assert exp.row_ids() == [r for r in ids if r in exp.row_ids()]       # input order kept
    assert other.row_ids() == sample_rows(ids, 3, 7) != exp.row_ids()
    assert len(m.calls) == 6 and any("a sample of 3 of 6 row(s) (seed 0)" in n for n in exp.notes)
    assert sample_rows(ids, 10, 0) == ids


def test_variants_by_name(tmp_path, ladders):
    m = Counter()
    exp = _run(ladders, tmp_path / "x", m, variants="b")
    assert exp.variants == ["b"] and {c.variant for c in exp.cells} == {"b"} and len(m.calls) == 6
    with pytest.raises(UsageError, match='no variant "c" \\(did you mean "a"\\?\\)|no variant "c"'):
        _run(ladders, tmp_path / "y", m, variants=["a", "c"])


def test_a_chosen_variant_whose_base_is_left_out_runs_itself(tmp_path):
    """`tight` is re-judged from `a` (same prompts); choosing `tight` alone makes it run: nothing to re-judge from."""
    base = LADDER + "    retrieve:\n      to: { slate: K, folder: d }\n      as: Doc\n      maxRounds: 1\n" \
                    "      requestMatch: { type: object, required: [files] }\n" \
                    "slates: [{ title: K, path: k, folders: [{ name: d }] }]\n"
    (tmp_path / "k" / "d").mkdir(parents=True)
    (tmp_path / "a.yaml").write_text(base)
    (tmp_path / "tight.yaml").write_text(base.replace("required: [files]", "required: [request]"))
    m = Counter()
    exp = _run({"a": str(tmp_path / "a.yaml"), "tight": str(tmp_path / "tight.yaml")}, tmp_path / "x", m,
               variants="tight", rows="dedup-1")
    assert [(c.variant, c.source.kind) for c in exp.cells] == [("tight", "run")] and m.calls == ["dedup-1"]


def test_filter_failing_and_filter_errors_run_only_those_cells(tmp_path, ladders):
    first = _run(ladders, tmp_path / "one", Counter(down={"rounds-1"}, wrong={"gates-1", "writes-1"}))
    assert first.counts() == {"completed": 10, "error": 2}
    assert sum(c.passed is False for c in first.cells) == 6          # 2 errors + 4 wrong answers fail their assert

    m = Counter()
    failing = _run(ladders, tmp_path / "two", m, filter_failing=tmp_path / "one")
    assert sorted((c.variant, c.row) for c in failing.cells) == sorted(
        (v, r) for v in "ab" for r in ("rounds-1", "gates-1", "writes-1"))
    assert sorted(m.calls) == sorted(["rounds-1", "gates-1", "writes-1"] * 2)      # the model is up and right now
    assert failing.pass_rate() == 1.0 and any("only the 6 cell(s) that failed" in n for n in failing.notes)

    m = Counter()
    errors = _run(ladders, tmp_path / "three", m, filter_errors=tmp_path / "one")
    assert sorted((c.variant, c.row) for c in errors.cells) == [("a", "rounds-1"), ("b", "rounds-1")]
    assert m.calls == ["rounds-1"] * 2

    m = Counter()
    both = _run(ladders, tmp_path / "four", m, filter_errors=tmp_path / "one", filter_failing=tmp_path / "one",
                variants="a")
    assert sorted(c.row for c in both.cells) == ["gates-1", "rounds-1", "writes-1"] and len(m.calls) == 3


def test_filtering_by_a_folder_that_holds_no_results_is_a_usage_error(tmp_path, ladders):
    with pytest.raises(UsageError, match="holds no experiment results"):
        _run(ladders, tmp_path / "x", Counter(), filter_failing=tmp_path)


def test_filter_failing_reads_an_evaluation_folder_by_row(tmp_path, ladders):
    from ladr_lab import evaluate
    evaluate(ladders["a"], ROWS, model=ScriptedModel(Counter(down={"dedup-2"}), reads_schemas=False),
             out=tmp_path / "ev", progress=False)
    m = Counter()
    exp = _run(ladders, tmp_path / "x", m, filter_failing=tmp_path / "ev")
    assert {(c.variant, c.row) for c in exp.cells} == {("a", "dedup-2"), ("b", "dedup-2")}


@pytest.mark.parametrize("kw, words", [({"sample": 0}, "sample=0"), ({"repeat": 0}, "repeat=0"),
                                       ({"threshold": 1.5}, "threshold=1.5"), ({"rows": "re:("}, "not a valid")])
def test_bad_filter_values_are_usage_errors(tmp_path, ladders, kw, words):
    with pytest.raises(UsageError, match=words.replace("(", "\\(")):
        _run(ladders, tmp_path / "x", Counter(), **kw)
