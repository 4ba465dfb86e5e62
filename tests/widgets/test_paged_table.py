"""PagedTable: a table a page at a time (◀ / ▶, the page label), its rows read again on every show, and a
dropdown of the page's rows whose pick (only the reader's) opens a row."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

from ladr_lab.widgets.parts import PagedTable, span_text  # noqa: E402


def _render(rows: list, start: int, size: int) -> str:
    return "<table>" + "".join(f"<tr><td>{r}</td></tr>" for r in rows[start:start + size]) + "</table>"


def test_it_pages_forward_and_back_and_stops_at_the_ends():
    t = PagedTable([f"r{i}" for i in range(7)], _render, size=3)
    assert "1–3 of 7" in t.page_label.value and t.table.value.count("<tr>") == 3 and "r0" in t.table.value
    assert t.prev.disabled and not t.next.disabled and t.shown == ["r0", "r1", "r2"]
    t.next.click()
    assert "4–6 of 7" in t.page_label.value and not t.prev.disabled and not t.next.disabled
    t.next.click()
    assert "7–7 of 7" in t.page_label.value and t.table.value.count("<tr>") == 1 and t.next.disabled
    t.next.click()                                      # at the end: stays there
    t.turn(5)
    assert t.start == 6 and "7–7 of 7" in t.page_label.value
    t.prev.click()
    assert t.start == 3 and "4–6 of 7" in t.page_label.value
    t.turn(-9)                                          # at the start: stays there
    assert t.start == 0 and t.prev.disabled


def test_the_page_size_and_a_start_within_a_page():
    t = PagedTable(list(range(10)), _render, size=4)
    assert t.size == 4 and "1–4 of 10" in t.page_label.value
    t.show(2)                                           # any start: shown from there
    assert t.shown == [2, 3, 4, 5] and "3–6 of 10" in t.page_label.value
    t.show(99)                                          # past the end: the last page
    assert t.start == 8 and t.shown == [8, 9]
    t.show_row(5)
    assert t.start == 4 and t.start_of(9) == 8
    assert PagedTable([1, 2], _render, size=0).size == 1                # at least one row a page


def test_an_empty_table():
    t = PagedTable([], _render, pick=lambda r, i: str(r))
    assert "0–0 of 0" in t.page_label.value and t.prev.disabled and t.next.disabled
    assert t.table.value == "<table></table>" and t.pick.layout.display == "none"
    said = PagedTable([], _render, empty=lambda: "nothing here")
    assert "nothing here" in said.table.value
    t.set_rows(["a"])                                   # rows come: the dropdown shows again
    assert "1–1 of 1" in t.page_label.value and t.pick.layout.display is None
    assert span_text(0, 0, 0) == "0–0 of 0" and span_text(20, 20, 1311) == "21–40 of 1,311"


def test_rows_are_read_again_on_every_show():
    rows = list(range(5))
    t = PagedTable(lambda: rows, _render, size=2)
    t.next.click()
    rows.extend(range(5, 9))
    t.show()                                            # the page shown, from the rows read again
    assert t.start == 2 and "3–4 of 9" in t.page_label.value
    rows[:] = [0]
    t.show()                                            # fewer rows: the page kept within them
    assert t.start == 0 and "1–1 of 1" in t.page_label.value


def test_picking_a_row_calls_back_with_its_value():
    opened = []
    t = PagedTable([{"id": f"r{i}"} for i in range(5)], _render, size=2, pick=lambda r, i: r["id"],
                   on_pick=opened.append)
    assert list(t.pick.options) == ["", "r0", "r1"] and t.pick.value == ""
    t.pick.value = "r1"
    assert opened == ["r1"]
    t.next.click()                                      # a new page starts unpicked, and opens nothing
    assert list(t.pick.options) == ["", "r2", "r3"] and t.pick.value == "" and opened == ["r1"]
    t.pick.value = ""                                   # the blank option opens nothing
    assert opened == ["r1"]


def test_labelled_options_give_their_values():
    opened = []
    t = PagedTable(["x", "y", "z"], _render, size=2, pick=lambda r, i: (f"{i + 1}. {r}", i), on_pick=opened.append)
    assert t.pick.options[0] == ("", None) and t.pick.options[1] == ("1. x", 0) and t.pick.value is None
    t.pick.value = 0                                    # a value of 0 is a row, not the blank
    t.next.click()
    t.pick.value = 2
    assert opened == [0, 2]


def test_keep_keeps_the_pick_while_its_row_is_on_the_page():
    opened = []
    rows = ["a", "b", "c", "d"]
    t = PagedTable(lambda: rows, _render, size=3, pick=lambda r, i: r, on_pick=opened.append, blank=False,
                   keep=True)
    assert t.pick.options == ("a", "b", "c") and t.pick.value is None      # nothing previewed for a first paint
    t.pick.value = "b"
    rows.insert(0, "0")
    t.show()                                            # "b" still on the page: still picked, not opened again
    assert t.pick.value == "b" and opened == ["b"]
    t.next.click()                                      # not on the page: unpicked, nothing opened
    assert t.pick.value is None and opened == ["b"]


def test_controls_sit_before_the_arrows_and_deferred_draws_nothing():
    import ipywidgets as w
    box = w.Checkbox(description="only")
    t = PagedTable([1, 2, 3], _render, controls=[box], cls="ladr-x-table", defer=True)
    assert t.bar.children == (box, t.prev, t.page_label, t.next) and t.table.value == "" and t.rows == []
    assert "ladr-x-table" in t.table._dom_classes and "ladr-paged-table" in t.widget._dom_classes
    assert t.pick is None and t.widget.children == (t.bar, t.table)
    t.show(0)
    assert "1–3 of 3" in t.page_label.value


def test_a_render_of_widgets_shows_them_in_the_tables_place():
    import ipywidgets as w
    t = PagedTable(list(range(5)), lambda rows, start, size: [w.Button(description=str(r))
                                                              for r in rows[start:start + size]], size=2,
                   label=lambda start, shown, total: "rows " + span_text(start, shown, total))
    assert [b.description for b in t.widget.children[1:]] == ["0", "1"] and "rows 1–2 of 5" in t.page_label.value
    t.next.click()
    assert [b.description for b in t.widget.children[1:]] == ["2", "3"]
