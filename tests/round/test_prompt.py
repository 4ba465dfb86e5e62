"""Prompt assembly is deterministic and exactly as SPEC §1 describes."""
from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from ladr_lab.round.prompt import FORCED_FINAL_LINE, Entry, assemble_messages, render_value
from ladr_lab.round.records import Fetched


def entry(path, mode, status, content=None, **kw):
    return Entry(Fetched(path=path, mode=mode, status=status, **kw), content)

scalars = st.one_of(st.text(max_size=8), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.booleans(), st.none())
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=5), inner, max_size=4)),
                           max_leaves=20)


@given(json_values)
def test_any_value_renders_as_indented_json_and_strings_verbatim(value):
    expected = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    assert render_value(value) == expected


def test_assembly_order_blocks_and_forced_line():
    msgs = assemble_messages("SYS", [("Question", "Why?"), ("Index", [{"name": "a.md", "size": 1}])], "Docs",
                             [[entry("a.md", "files", "fetched", "A")],
                              [entry("a.md", "glob", "already_in_context"), entry("b.md", "files", "not_found")]],
                             forced_final=True)
    assert msgs[0] == {"role": "system", "content": "SYS"}
    assert msgs[1]["content"] == (
        'Question:\nWhy?\n\nIndex:\n[\n  {\n    "name": "a.md",\n    "size": 1\n  }\n]\n\n'
        "Docs 1:\n--- a.md [files] ---\nA\n\n"
        "Docs 2:\n--- a.md [glob] ---\n(already in context)\n\n--- b.md [files] ---\n(not found)\n\n"
        + FORCED_FINAL_LINE)
