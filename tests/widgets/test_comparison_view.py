"""ComparisonView over two real experiment folders (tests/helpers_experiments.py): the counts, the changed cells as
buttons a page at a time with their filters, and a click opening the DiffView of the cell's two runs."""
from __future__ import annotations

import re

import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("pandas")

from ladr_lab.experiments import load_results  # noqa: E402
from ladr_lab.widgets import ComparisonView, DiffView  # noqa: E402
from tests.helpers_experiments import EXPECTED, two_runs  # noqa: E402


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return two_runs(tmp_path_factory.mktemp("cmpview"))


def test_counts_buttons_and_paging(folders):
    v = ComparisonView(*folders, page=5)
    assert "ladr-comparison-view" in v.widget._dom_classes
    assert "13 changed cell(s)" in v.header.value and re.search(r"pass→fail</span> 3\b", v.header.value)
    assert "terse" in v.summary.value and "71% → 57%" in v.summary.value
    assert "1–5 of 13" in v.page_label.value
    assert list(v.buttons) == [("terse", "regress"), ("terse", "fix"), ("terse", "down"), ("terse", "wording"),
                               ("terse", "worse")]
    assert [b.description for b in v.buttons.values()] == ["pass→fail", "fail→pass", "pass→fail", "output", "status"]
    assert "ladr-cmp-regressed" in v.buttons[("terse", "regress")]._dom_classes
    v.next.click()
    assert "6–10 of 13" in v.page_label.value and ("terse", "new") in v.buttons


def test_a_click_on_a_changed_cell_opens_the_diff_of_its_two_runs(folders):
    v = ComparisonView(load_results(folders[0]), folders[1])
    v.buttons[("terse", "regress")].click()
    assert v.opened == ("terse", "regress")
    assert isinstance(v.diff_view, DiffView) and v.diff_view.widget in v.detail.children
    assert (v.diff_view.diff.a, v.diff_view.diff.b) == ("before terse/regress", "after terse/regress")
    assert "first divergence" in v.diff_view.summary.value and not v.diff_view.diff.identical
    head = v.detail.children[0].value
    assert "before: ✓ pass" in head and "after: ✗ fail" in head and "never fetched core.md" in head
    assert "ANSWER: from memory" in head
    # another click closes the first diff and opens the next
    first = v.diff_view
    v.buttons[("terse", "wording")].click()
    assert v.diff_view is not first and first.widget.comm is None
    assert "(reworded)" in v.detail.children[0].value


def test_filters_and_a_cell_only_one_run_has(folders):
    v = ComparisonView(*folders)
    v.change.value = "new"
    assert [(r["variant"], r["row"]) for r in v.rows()] == [("terse", "new"), ("long", "new")]
    assert list(v.buttons) == [("terse", "new"), ("long", "new")]
    v.variant.value = "long"
    assert list(v.buttons) == [("long", "new")]
    assert v.open_change("long", "new") is None and v.diff_view is None
    assert "no such cell in this run" in v.detail.children[0].value
    assert set(v.change.options) == {"all", *{c for c in EXPECTED.values()}}


def test_identical_runs_and_the_static_view(folders):
    v = ComparisonView(folders[0], folders[0])
    assert "no cell changed" in v.header.value and v.rows() == [] and v.buttons == {}
    assert "no changed cell matches the filters" in v.pages.table.value
    data = ComparisonView(*folders)._repr_mimebundle_()
    assert "ladr-comparison" in data["text/html"] and "pass→fail" in data["text/html"]
    with pytest.raises(TypeError, match="give both"):
        ComparisonView(folders[0])
