"""The registry of assertion kinds: the reader accepts exactly the kinds `CHECKS` holds, each entry says what its
check needs and the shape of its value, and a new kind is one entry (load_asserts reads it, check_all runs it)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from ladr_lab import LadrError
from ladr_lab.experiments import assertions, checks
from ladr_lab.experiments.assertions import ALIASES, check_all, load_asserts
from ladr_lab.experiments.checks import CHECKS, KINDS, AssertionResult, Check

ROOT = Path(__file__).resolve().parents[2]
# a value of each shape a Check may name, as a YAML file or a CSV cell would give it
SAMPLE = {"text": "dedup", "regex": "^D", "json": "", "schema": '{"type": "object"}', "count": "3",
          "number": "0.5", "status": "completed", "function": "json:dumps"}
CELL = {"status": "completed", "output": "Dedup keeps each file once.", "llm_calls": 2, "tokens_in": 10,
        "tokens_out": 5, "cost": 0.01, "seconds": 1.5, "error": None}


def test_kinds_are_the_registry():
    assert KINDS == tuple(CHECKS)
    assert all(isinstance(c, Check) for c in CHECKS.values())


@pytest.mark.parametrize("kind", KINDS)
def test_every_registered_kind_is_read_and_checked(kind):
    """Each entry's value shape is one the reader knows, and the kind is read (plain and negated) and checked."""
    shape = CHECKS[kind].value
    assert shape in SAMPLE, f"{kind}: add a sample of shape {shape!r} here"
    (a,) = load_asserts({"type": kind, "value": SAMPLE[shape]})
    (b,) = load_asserts({"type": f"not-{kind}", "value": SAMPLE[shape]})
    assert (a.kind, a.negate, b.kind, b.negate) == (kind, False, kind, True)
    for res in check_all([a, b], CELL, grader="offline").values():
        assert isinstance(res, AssertionResult) and res.reason


def test_the_reader_accepts_no_kind_outside_the_registry():
    """Every kind the reader accepts has an entry: the reader's value shapes are the ones entries name, aliases
    point into the registry, and a kind the registry lacks is refused."""
    assert {c.value for c in CHECKS.values()} == set(assertions._VALUES) == set(SAMPLE)
    assert {kind for kind, _neg in ALIASES.values()} <= set(CHECKS)
    with pytest.raises(LadrError, match="unknown assertion kind"):
        load_asserts("word-count: 3")


def test_the_import_goes_one_way():
    """assertions imports checks; checks imports assertions only under TYPE_CHECKING, for its annotations (and
    of its own package only the cell's record, `cells.CellSource`, which imports neither)."""
    reader = ast.parse(Path(assertions.__file__).read_text())
    assert any(isinstance(n, ast.ImportFrom) and n.level == 1 and n.module == "checks" for n in reader.body)
    tree = ast.parse(Path(checks.__file__).read_text())
    guarded = {id(n) for s in tree.body if isinstance(s, ast.If) and "TYPE_CHECKING" in ast.unparse(s.test)
               for n in ast.walk(s)}
    back = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module != "cells"]
    assert [n.module for n in back] == ["assertions"] and all(id(n) in guarded for n in back)
    cells = ast.parse(Path(checks.__file__).with_name("cells.py").read_text())
    at_import = [n.module for n in cells.body if isinstance(n, ast.ImportFrom) and n.level == 1]
    assert "checks" not in at_import and "assertions" not in at_import


def test_every_kind_has_a_row_in_the_docs():
    doc = (ROOT / "docs" / "experiments.md").read_text()
    rows = set(re.findall(r"^\| `([a-z-]+)`", doc, re.M))
    assert set(KINDS) <= rows, set(KINDS) - rows


def test_a_new_kind_is_one_entry(monkeypatch):
    def short(a, out, cell, trace, grader):
        n = len(out.split())
        return AssertionResult(n <= a.value, f"{n} words", score=n)

    monkeypatch.setitem(CHECKS, "max-words", Check(short, value="count"))
    got = check_all("max-words: 10\nnot-max-words: 2\ncontains: Dedup", CELL)
    assert {n: (r.passed, r.reason) for n, r in got.items()} == {
        "max-words:10": (True, "5 words"), "not-max-words:2": (True, "5 words: not-max-words passes"),
        "contains:Dedup": (True, "output contains 'Dedup'")}
    with pytest.raises(LadrError, match="needs a whole number"):
        load_asserts("max-words: many")
    with pytest.raises(LadrError, match=r"did you mean \"max-words\"\?.*max-words, each also as not-KIND"):
        load_asserts("max-wrds: 3")
    errored = check_all("max-words: 10", {"status": "error", "output": "", "error": "boom"})
    assert errored["max-words:10"].reason == "the cell ended in error: boom"      # content=True by default


def test_a_check_is_given_only_what_its_entry_says_it_needs(monkeypatch):
    seen = []

    def spy(a, out, cell, trace, grader):
        seen.append((trace, grader))
        return AssertionResult(True, "seen")

    monkeypatch.setitem(CHECKS, "spy", Check(spy, content=False))
    monkeypatch.setitem(CHECKS, "spy-all", Check(spy, content=False, needs_trace=True, needs_grader=True))
    class Grader:
        def complete(self, messages, info):
            raise AssertionError("a spy grades nothing")

    grader = Grader()
    check_all("spy: x\nspy-all: x", CELL, trace="T", grader=grader)
    assert seen == [(None, None), ("T", grader)]
