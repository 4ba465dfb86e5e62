"""Agent names: one file per agent, readable, and the same name inside the records."""
from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ladr_lab.runfiles import agent_name, decode_name, encode_name, split_agent_name
from ladr_lab.runfiles.names import MAX_STEM_BYTES, is_plain_stem


@pytest.mark.parametrize(("raw", "stem"), [
    ("Alice", "Alice"), ("a/b", "a%2Fb"), ("a b", "a%20b"), ("a_b", "a_b"), ("\u65e5\u672c", "\u65e5\u672c"),
    ("..", "%2E."), (".hidden", "%2Ehidden"), ("", "%"), ("50%", "50%25"), ("x@1", "x%401"), ("a#b", "a%23b"),
    ("ok-name_1.v2", "ok-name_1.v2"), ("tab\there", "tab%09here"), ("caf\u00e9", "caf\u00e9"),
    ("e\u0301", "e%CC%81"), ("a~b", "a%7Eb"),
])
def test_readable_encoding(raw: str, stem: str) -> None:
    assert encode_name(raw) == stem == agent_name(raw)
    assert decode_name(stem) == raw


def test_the_names_the_issue_found_colliding_are_distinct() -> None:
    names = ["a/b", "a b", "a_b", "\u65e5\u672c", "..", "__", "_", "a%2Fb"]
    stems = [agent_name(n) for n in names]
    assert len(set(stems)) == len(stems)
    assert all(is_plain_stem(s) for s in stems)


@given(st.text(max_size=40), st.text(max_size=40))
def test_encoding_is_one_to_one_and_reversible(a: str, b: str) -> None:
    assert decode_name(encode_name(a)) == a
    if a != b:
        assert encode_name(a) != encode_name(b)
    stem = encode_name(a)
    assert is_plain_stem(stem) and not stem.startswith(".")


@given(st.text(max_size=12), st.lists(st.tuples(st.text(max_size=8), st.integers(1, 99)), max_size=3))
def test_child_agent_names_split_back(step: str, callers: list[tuple[str, int]]) -> None:
    stem = agent_name(step, callers)
    assume("~" not in stem)  # a digested (over-long) stem keeps only its head
    assert split_agent_name(stem) == (step, [(s, str(n)) for s, n in callers])


def test_child_agent_name_reads_innermost_call_first() -> None:
    assert agent_name("research", [("outer", 1), ("inner", 2)]) == "research@inner#2@outer#1"


def test_long_names_stay_short_and_apart() -> None:
    a, b = agent_name("s" * 300 + "a"), agent_name("s" * 300 + "b")
    assert a != b and len(a.encode()) <= MAX_STEM_BYTES and len(b.encode()) <= MAX_STEM_BYTES
    assert "~" in a and is_plain_stem(a)
    c = agent_name("\u65e5" * 200)  # multi-byte characters are not cut in half
    assert len(c.encode()) <= MAX_STEM_BYTES and c.startswith("\u65e5")
    d = agent_name("/" * 100)  # nor are escapes
    assert "%2F~" in d or d.split("~")[0].endswith("%2F")
