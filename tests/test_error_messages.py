"""The error tree's message helpers: an echoed value is short whatever it is."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ladr_lab.errors import ECHO_CHARS, short_repr, short_text


@given(st.one_of(st.text(), st.integers(), st.lists(st.text()), st.dictionaries(st.text(), st.integers())))
def test_an_echoed_value_is_its_repr_or_a_cut_of_it(value):
    shown = short_repr(value)
    assert len(shown) <= ECHO_CHARS
    assert shown == repr(value) or (shown.endswith("…") and repr(value).startswith(shown[:-1]))
    assert len(short_text(value)) <= ECHO_CHARS


def test_a_huge_string_or_number_is_described_without_building_it_whole():
    assert short_repr("[" * 10_000_000) == "'" + "[" * (ECHO_CHARS - 2) + "…"
    assert short_repr(10 ** 5000) == "a whole number of about 5,000 digits"
    assert short_text("word") == "word" and short_text(None) == "None"
