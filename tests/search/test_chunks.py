"""Chunking: whole paragraphs packed to a size, heading context, offsets that point into the text."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ladr_lab.search.chunks import iter_chunks, title_of


def test_headings_give_context_and_start_new_chunks():
    text = "# Guide\n\nIntro.\n\n## Install\n\nRun pip.\n\n## Use\n\nCall it."
    chunks = list(iter_chunks(text, "T", 1000))
    assert [c.context for c in chunks] == ["Guide", "Guide > Install", "Guide > Use"]
    assert [c.index for c in chunks] == [0, 1, 2]
    assert chunks[1].text == "## Install\n\nRun pip."
    assert title_of(text, "x") == "Guide"
    assert title_of("\n\n  plain first line  \nmore", "x") == "plain first line"
    assert title_of("", "fallback.md") == "fallback.md"


def test_long_paragraphs_are_cut_at_sentences_or_spaces():
    text = "Sentence one is here. " * 200
    chunks = list(iter_chunks(text, "T", 300))
    assert all(len(c.text) <= 300 for c in chunks)
    assert all(c.text.endswith(".") for c in chunks[:-1])


@given(st.lists(st.text(alphabet="ab #.\n", min_size=1, max_size=80), max_size=20).map("\n\n".join),
       st.integers(20, 200))
def test_property_chunks_cover_the_text_in_order(text, size):
    chunks = list(iter_chunks(text, "T", size))
    assert [c.index for c in chunks] == list(range(len(chunks)))
    joined = "".join("".join(c.text.split()) for c in chunks)
    assert joined == "".join(text.split())
    for c in chunks:
        first = c.text.split("\n\n", 1)[0]
        assert text[c.start:c.start + len(first)] == first
