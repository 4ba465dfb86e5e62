"""`%load_ext ladr_lab` and the `%%ladder NAME` cell magic: validate, show problems at their lines, bind."""
from __future__ import annotations

import pytest

import ladr_lab
from ladr_lab.magics import ladder_cell

GOOD = """name: cell
slates:
  - title: K
    path: data
    folders: [{name: docs}]
steps:
  - id: a
    nodes: "{{knobs.n}}"
knobs: {n: 1}
"""
BAD = """name: broken
steps:
  - id: a
    retrieve: {to: {slate: K, folder: docs}, as: D, maxRounds: 0, requestMatch: {type: object}}
"""


def test_a_good_cell_binds_the_ladder_with_the_cwd_as_base(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    out = ladder_cell("research", GOOD, ns)
    assert out.ok and ns["research"] is out.ladder and out.ladder.base_dir == tmp_path
    assert "Ladder cell" in out.to_html() and repr(out).startswith("<%%ladder research: bound")


def test_knobs_on_the_magic_line():
    ns: dict = {}
    out = ladder_cell("x --knob n=3", GOOD, ns)
    assert out.ok and ns["x"].steps[0].nodes == 3


def test_a_bad_cell_shows_problems_at_their_lines_and_binds_nothing():
    ns = {"keep": "old"}
    out = ladder_cell("keep", BAD, ns)
    assert not out.ok and ns["keep"] == "old"
    h = out.to_html()
    assert "not bound" in h and "maxRounds must be &gt; 0" in h and 'class="ladr-problem"' in h
    line4 = [ln for ln in h.split("</div>") if ">4  <" in ln or "4  </span>" in ln]
    assert line4 and "rgba(207,34,46" in line4[0]           # the offending line is highlighted
    assert "<ladder>:4:" in out.to_text()


@pytest.mark.parametrize("line", ["", "--knob n=1", "not-a-name", "x --knob"])
def test_bad_usage_is_explained(line):
    out = ladder_cell(line, GOOD, {})
    assert not out.ok and out.problems[0].rule == "magic-usage"


def test_load_ext_registers_the_magic_in_ipython():
    IPython = pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "ladr_lab")
        result = shell.run_cell_magic("ladder", "bound_here", GOOD)
        assert shell.user_ns["bound_here"].name == "cell" and result.ok
    finally:
        InteractiveShell.clear_instance()
    assert IPython is not None and callable(ladr_lab.load_ipython_extension)
