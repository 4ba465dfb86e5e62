"""The prompt's two directions pinned together: what the engine renders, the grammar reads back exactly
(`parse(render(x)) == x`), and the recorded section spans cut a rendered prompt back into each block."""
from __future__ import annotations

import json

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ladr_lab.round import (
    FORCED_FINAL_LINE,
    FORCED_SPAN,
    MODES,
    ParsedEntry,
    ParsedPrompt,
    Section,
    SectionSpan,
    assemble_blocks,
    parse_prompt,
    render_block,
    render_field,
    render_value,
    split_sections,
)
from ladr_lab.round.grammar import _ENTRY, _HEADER
from ladr_lab.round.prompt import Entry as Shown
from ladr_lab.trace import Event, Fetched, LlmCall

AS_NAMES = ("Docs", "Retrieved", "RetrievedDocuments", "Search results")
# lines that look like the grammar's own: headers, block headers, entry headers, the forced line, markers
TRICKY = ("Question:", "Docs 1:", "Docs 2:", "Docs 7:", "Retrieved 2:", "Notes (draft):", "--- core.md [files] ---",
          "--- a/b.md ---", FORCED_FINAL_LINE, "(not found)", "(already in context)", "[1, 2]", "{", "  ", "",
          "key: value", "Docs 2: more", "x 1:")
plain_line = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e"
                                   "\x85\u2028\u2029"), max_size=30)
line = st.one_of(plain_line, st.sampled_from(TRICKY))
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_ .()/'-]{0,15}", fullmatch=True).filter(lambda n: n == n.strip())
segment = st.from_regex(r"[a-z0-9_][a-z0-9_.-]{0,7}", fullmatch=True)
MARKER_STATUSES = ("not_found", "already_in_context", "no_match", "left_out")
MARKER_WORDS = {"not_found": "not found", "already_in_context": "already in context", "no_match": "no match",
                "left_out": "left out"}


def _blank(s: str) -> bool:
    return not s.strip()


def _after_blank(lines: list[str]):
    return (ln for i, ln in enumerate(lines) if i and _blank(lines[i - 1]))


def _field_text_ok(text: str) -> bool:
    """Text the grammar can give back whole as one field: no header after a blank line, no blank edge."""
    lines = text.split("\n")
    return not _blank(lines[0]) and not _blank(lines[-1]) and not any(_HEADER.match(ln) for ln in _after_blank(lines))


def _content_ok(text: str, as_: str, k: int) -> bool:
    """Text the grammar gives back whole as one entry of block `k`: no entry header first or after a blank
    line, not the next block's header after a blank line, no blank edge, not the words of a status without
    content."""
    lines = text.split("\n")
    low = text.strip().lower()
    return (not _blank(lines[0]) and not _blank(lines[-1]) and not _ENTRY.match(lines[0])
            and not any(_ENTRY.match(ln) or ln == f"{as_} {k + 1}:" for ln in _after_blank(lines))
            and not any(low.startswith("(" + w) for w in MARKER_WORDS.values()))


texts = st.lists(line, min_size=1, max_size=6).map("\n".join)
# a top-level string renders raw, as text does: the same characters as `plain_line` (line breaks other than "\n"
# are read back as "\n", by design of a line grammar); strings inside lists and objects are JSON-escaped
json_values = st.recursive(st.one_of(plain_line, st.integers(), st.booleans(), st.none()),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                           max_leaves=8)


@st.composite
def shown_path(draw) -> tuple[str, str]:
    """(the path as the header shows it, the path as the grammar keys it)."""
    canonical = "/".join(draw(st.lists(segment, min_size=1, max_size=3)))
    shown = draw(st.sampled_from(["", "./", "/", "././"])) + canonical + draw(st.sampled_from(["", "/"]))
    return shown, canonical


@st.composite
def entries(draw, as_: str, k: int) -> tuple[Shown, ParsedEntry]:
    """One retrieved entry as the engine holds it, and as the grammar must read it back."""
    shown, path = draw(shown_path())
    mode = draw(st.sampled_from(MODES))
    kind = draw(st.sampled_from(("fetched", "fetched", "marker", "listed")))
    if kind == "listed":
        listing = draw(st.lists(st.fixed_dictionaries({"name": segment}, optional={"size": st.integers(0, 99)}),
                                max_size=3))
        text = json.dumps(listing, ensure_ascii=False)
        return (Shown(Fetched(path=shown, mode="subfolders", status="listed", chars=len(text)), text),
                ParsedEntry(path, "subfolders", "listed", text, listing))
    if kind == "marker":
        status = draw(st.sampled_from(MARKER_STATUSES))
        note = draw(st.one_of(st.none(), st.from_regex(r"[a-z][a-z ,;'-]{0,20}", fullmatch=True)))
        body = f"({MARKER_WORDS[status]}" + (f": {note})" if note else ")")
        return Shown(Fetched(path=shown, mode=mode, status=status, note=note)), ParsedEntry(path, mode, status, body)
    text = draw(texts)
    assume(_content_ok(text, as_, k))
    if mode == "subfolders":
        assume(not text.lstrip().startswith("["))
    return Shown(Fetched(path=shown, mode=mode, status="fetched", chars=len(text)), text), ParsedEntry(path, mode, "fetched", text)


@st.composite
def prompts(draw):
    """(rendered blocks, their spans, forced, retrieve_as, the parse the grammar must give)."""
    as_ = draw(st.sampled_from(AS_NAMES))
    blocks: list[str] = []
    spans: list[SectionSpan] = []
    sections: list[Section] = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(names)
        assume(name != f"{as_} 1")
        value = draw(st.one_of(texts, json_values))
        text = render_value(value)
        assume(text and _field_text_ok(text))
        blocks.append(render_field(name, value))
        spans.append(SectionSpan("field", name, len(blocks[-1])))
        sections.append(Section(name, text))
    rounds: list[tuple[ParsedEntry, ...]] = []
    for k in range(1, draw(st.integers(0, 3)) + 1):
        pairs = draw(st.lists(entries(as_, k), max_size=3))
        blocks.append(render_block(as_, k, [p[0] for p in pairs]))
        spans.append(SectionSpan("retrieved", f"{as_} {k}", len(blocks[-1])))
        rounds.append(tuple(p[1] for p in pairs))
    forced = draw(st.booleans())
    if forced:
        spans.append(FORCED_SPAN)
    expected = ParsedPrompt(tuple(sections), tuple(rounds), forced, as_ if rounds else None)
    return blocks, spans, forced, as_, expected


@settings(max_examples=200, deadline=None)
@given(prompts())
def test_the_grammar_reads_back_what_the_engine_renders(drawn):
    blocks, _, forced, as_, expected = drawn
    user = assemble_blocks("SYS", blocks, forced)[1]["content"]
    if not forced and user:
        assume(user.rstrip("\n").split("\n")[-1].strip() != FORCED_FINAL_LINE)
    got = parse_prompt(user, as_)
    assert got == expected
    assert got.forced == user.endswith(FORCED_FINAL_LINE)


@settings(max_examples=200, deadline=None)
@given(prompts())
def test_the_recorded_spans_cut_a_rendered_prompt_back_into_its_blocks(drawn):
    blocks, spans, forced, _, _ = drawn
    assume(spans)        # a prompt without spans is cut into the system prompt and the whole user message
    messages = assemble_blocks("SYS", blocks, forced)
    parts = split_sections(messages, spans)
    assert [(p.kind, p.name) for p in parts] == [("system", "systemPrompt")] + [(s.kind, s.name) for s in spans]
    assert [p.text for p in parts] == ["SYS", *blocks] + ([FORCED_FINAL_LINE] if forced else [])
    # the trace writes the spans as SPEC §9's [kind, name, chars] lists and reads them back as spans
    call = LlmCall(step="s", node=1, round=1, iteration=1, messages=messages, output="", forced_final=forced,
                   request_match=None, model="m", sections=spans)
    line = json.loads(json.dumps(call.to_dict()))
    assert line["sections"] == [[s.kind, s.name, s.chars] for s in spans]
    back = Event.from_dict(line)
    assert back == call and back.prompt_sections() == parts


def test_the_status_words_of_an_entry_are_the_traces():
    text = ("Docs 1:\n--- a.md [files] ---\n(already in context)\n\n--- b.md [files] ---\n(left out: the round is full)"
            "\n\n--- c.md [glob] ---\n(not found)\n\n--- q [metatag] ---\n(no match)")
    got = parse_prompt(text, "Docs")
    assert [e.status for e in got.blocks[0]] == ["already_in_context", "left_out", "not_found", "no_match"]


def test_an_old_traces_section_lists_read_back_as_spans():
    line = {"type": "llm_call", "seq": 0, "step": "s", "node": 1, "round": 1, "iteration": 1,
            "messages": [{"role": "system", "content": ""}, {"role": "user", "content": "Q:\nx\n\nR:\ny"}],
            "output": "", "forced_final": False, "request_match": None, "model": "m",
            "sections": [["field", "Q", 4], ["field", "R", 4]]}
    e = Event.from_dict(line)
    assert e.sections == (SectionSpan("field", "Q", 4), SectionSpan("field", "R", 4))
    assert e.to_dict()["sections"] == [["field", "Q", 4], ["field", "R", 4]]
    assert [p.text for p in e.prompt_sections()] == ["", "Q:\nx", "R:\ny"]
