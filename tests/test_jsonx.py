"""Tests for the JSON extraction engine (SPEC §5.1): rules, edge cases, properties, linear work."""

from __future__ import annotations

import copy
import json
import pickle
import random
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab import jsonx
from ladr_lab.jsonx import MAX_DEPTH, NO_JSON, Extraction, extract, extract_json, iter_candidates

# --------------------------------------------------------------------------------------------
# the examples of the brief


@pytest.mark.parametrize(
    ("text", "value", "method"),
    [
        ('{"a": 1}', {"a": 1}, "strict"),
        ('Here: {"score": 4} done', {"score": 4}, "balanced"),
        (
            'Let me look again. {"request": {"files": ["core.md", "glossary.md"]}} thanks',
            {"request": {"files": ["core.md", "glossary.md"]}},
            "balanced",
        ),
        ('```json\n{"fact": "x"}\n```', {"fact": "x"}, "fence"),
        ('x {not json} y {"b": 2}', {"b": 2}, "balanced"),
        ('prose {"s": "a } tricky { \\" quote"} more', {"s": 'a } tricky { " quote'}, "balanced"),
        ('[1, 2] and {"a": 1}', [1, 2], "balanced"),
        ('```json\n{"a": oops}\n```\nthen {"ok": true}', {"ok": True}, "balanced"),
    ],
)
def test_brief_examples(text: str, value: object, method: str) -> None:
    result = extract(text)
    assert result.found and result.value == value and result.method == method
    assert json.loads(text[result.span[0] : result.span[1]]) == value
    assert extract_json(text) == value


@pytest.mark.parametrize("text", ["No durable fact here.", 'The answer is {\\"score\\": 4}.', "", "   \n\t "])
def test_not_found(text: str) -> None:
    result = extract(text)
    assert result == Extraction(NO_JSON, False, None, None)
    assert not result
    assert extract_json(text) is NO_JSON
    assert list(iter_candidates(text)) == []


# --------------------------------------------------------------------------------------------
# rule 1: strict


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4", 4),
        ("  -2.5e3\n", -2500.0),
        ('"hello"', "hello"),
        ("true", True),
        ("[]", []),
        ('\n\n  {"a": [1, {"b": null}]}  \n', {"a": [1, {"b": None}]}),
        ('{"é": "ünïcødé ✓ \\u00e9 \\ud83d\\ude00"}', {"é": "ünïcødé ✓ é 😀"}),
    ],
)
def test_strict_any_value(text: str, value: object) -> None:
    result = extract(text)
    assert result.method == "strict" and result.value == value
    start, end = result.span
    assert text[start:end] == text.strip()


def test_strict_null_is_found_and_distinct_from_no_json() -> None:
    result = extract("null")
    assert result.found and result.value is None and result.method == "strict"
    assert extract_json("null") is None
    assert extract_json("nothing") is NO_JSON


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", '{"a": NaN}', "[1, Infinity]"])
def test_non_standard_constants_rejected(text: str) -> None:
    assert not extract(text).found
    assert not extract(f"prose {text} prose").found


def test_nan_inside_block_lets_a_later_block_win() -> None:
    assert extract_json('{"a": NaN} then {"a": 1}') == {"a": 1}


def test_control_character_inside_string_is_not_json() -> None:
    assert not extract('{"a": "line\nbreak"}').found
    assert extract_json('{"a": "line\nbreak"} {"b": "ok\\n"}') == {"b": "ok\n"}


# --------------------------------------------------------------------------------------------
# rule 2: fences


def test_fence_plain_and_prose_around() -> None:
    text = 'Sure, here it is:\n```\n[1, 2, 3]\n```\nHope that helps {"not": "this"}'
    result = extract(text)
    assert result.method == "fence" and result.value == [1, 2, 3]
    assert text[result.span[0] : result.span[1]] == "[1, 2, 3]"


def test_fence_beats_earlier_balanced_block() -> None:
    text = 'Thinking {"draft": 1}\n```json\n{"final": 2}\n```'
    assert extract(text).value == {"final": 2}
    assert [c.method for c in iter_candidates(text)] == ["fence", "balanced", "balanced"]


def test_first_parseable_fence_wins() -> None:
    text = '```json\n{broken\n```\n```json\n{"second": 2}\n```\n```json\n{"third": 3}\n```'
    assert extract(text).value == {"second": 2}


@pytest.mark.parametrize("info", ["json", "JSON", "Json", "jsonc", "json5", "", "json title=x"])
def test_fence_info_strings_accepted(info: str) -> None:
    assert extract(f'x\n```{info}\n{{"a": 1}}\n```\ny').method == "fence"


def test_fence_other_language_is_skipped_whole() -> None:
    text = '```python\nx = [1, 2]\n```\n```json\n{"a": 1}\n```'
    result = extract(text)
    assert result.method == "fence" and result.value == {"a": 1}
    # a python fence alone is not a fence candidate, but its brackets are still balanced blocks
    assert extract("```python\nx = [1, 2]\n```").method == "balanced"


def test_fence_scalar_contents_count() -> None:
    assert extract("The score:\n```\n4\n```").value == 4


def test_fence_indented_and_crlf() -> None:
    assert extract('1. item\n   ```json\n   {"a": 1}\n   ```\n').method == "fence"
    assert extract('text\r\n```json\r\n{"a": 1}\r\n```\r\nmore').value == {"a": 1}


def test_fence_longer_closing_required() -> None:
    # the inner ``` does not close a ```` fence, so its body is the whole block (not JSON)
    text = '````json\n{"a": 1}\n```\n````\n'
    assert extract(text).method == "balanced"


def test_unclosed_fence_runs_to_end() -> None:
    text = 'Answer:\n```json\n{"a": [1, 2]}\n'
    result = extract(text)
    assert result.method == "fence" and result.value == {"a": [1, 2]}


def test_inline_backticks_are_not_fences() -> None:
    text = 'Use ```json``` fences; here: {"a": 1}'
    assert extract(text).method == "balanced"


# --------------------------------------------------------------------------------------------
# rule 3: balanced blocks


def test_outer_block_preferred_to_nested() -> None:
    result = extract('a {"x": {"y": [1, {"z": 2}]}} b')
    assert result.value == {"x": {"y": [1, {"z": 2}]}}


def test_nested_start_tried_when_outer_fails() -> None:
    assert extract_json('{"a": [1, 2],}') == [1, 2]  # trailing comma breaks the outer object
    assert extract_json('{"a": 1 {"b": 2} }') == {"b": 2}
    assert extract_json('{"a": 1, unclosed... {"b": [true]}') == {"b": [True]}


def test_start_inside_a_string_of_a_failed_block() -> None:
    assert extract_json('{"note": "see [1, 2]" oops}') == [1, 2]


def test_quote_in_prose_before_block() -> None:
    assert extract_json('He said "hi {"a": 1}') == {"a": 1}
    assert extract_json('it\'s "quoted" text {"a": "b"}') == {"a": "b"}


def test_escapes_and_unicode() -> None:
    text = 'x {"p": "C:\\\\dir\\\\{file}", "q": "\\"]\\"", "u": "\\u263a", "r": "日本"} y'
    assert extract_json(text) == {"p": "C:\\dir\\{file}", "q": '"]"', "u": "☺", "r": "日本"}


def test_mismatched_brackets() -> None:
    assert not extract("{] [}").found
    assert extract_json('{"a": [1, 2} then [3]') == [3]


def test_empty_containers_and_whitespace_inside() -> None:
    assert extract_json("x {} y") == {}
    assert extract_json("x [ ] y") == []
    assert extract_json('x {\n  "a" :\t[ 1 ,\r\n 2 ]\n} y') == {"a": [1, 2]}


def test_unclosed_blocks() -> None:
    assert not extract('{"a": [1, 2').found
    assert extract_json("[[[[ 1, [2] ") == [2]


def test_deep_nesting_within_limit() -> None:
    depth = MAX_DEPTH
    text = "value: " + "[" * depth + "]" * depth
    assert extract(text).span == (7, 7 + 2 * depth)


def test_too_deep_value_is_not_json_but_inner_blocks_are() -> None:
    depth = MAX_DEPTH + 44
    text = "[" * depth + "]" * depth
    result = extract(text)  # strict parse refused (too deep), the outermost shallow-enough block wins
    assert result.method == "balanced" and result.span == (44, 2 * depth - 44)


@pytest.mark.parametrize(
    "text", ["[" * 100_000, "{" * 100_000, '{"a":' * 50_000, "[" * 100_000 + "]" * 100_000]
)
def test_very_deep_input_never_raises(text: str) -> None:
    result = extract(text)
    assert result.found == ("]" in text)


@pytest.mark.skipif(getattr(sys, "get_int_max_str_digits", lambda: 0)() == 0, reason="no int digit limit")
def test_integer_too_long_for_python_is_not_json() -> None:
    digits = "1" * (sys.get_int_max_str_digits() + 1)
    assert not extract(f'{{"a": {digits}}}').found
    assert extract_json(f'{{"a": [{digits}]}} then [2]') == [2]
    exponent = f"e-{len(digits)}"
    assert extract_json(f'{{"a": {digits}{exponent}}}') == {"a": float(digits + exponent)}  # floats: no limit


def test_numbers() -> None:
    assert extract_json("x [-0, 1.5e-3, 2E+2, 10] y") == [0, 0.0015, 200.0, 10]
    assert extract_json("x [01] y [1]") == [1]  # leading zeros are not JSON


# --------------------------------------------------------------------------------------------
# API details


def test_no_json_sentinel() -> None:
    assert repr(NO_JSON) == "NO_JSON"
    assert not NO_JSON
    assert type(NO_JSON)() is NO_JSON
    assert copy.copy(NO_JSON) is NO_JSON and copy.deepcopy(NO_JSON) is NO_JSON
    assert pickle.loads(pickle.dumps(NO_JSON)) is NO_JSON


def test_extraction_is_frozen_and_truthy_when_found() -> None:
    result = extract('{"a": 1}')
    assert result and isinstance(result, Extraction)
    with pytest.raises(AttributeError):
        result.found = False  # type: ignore[misc]


def test_iter_candidates_order_and_first_equals_extract() -> None:
    text = '[0]\n```\nnot json\n```\n```json\n{"f": 1}\n```\n{"b": [2]}'
    candidates = list(iter_candidates(text))
    assert [(c.method, c.value) for c in candidates] == [
        ("fence", {"f": 1}),
        ("balanced", [0]),
        ("balanced", {"f": 1}),
        ("balanced", {"b": [2]}),
        ("balanced", [2]),
    ]
    assert extract(text) == candidates[0]


def test_iter_candidates_includes_strict_first() -> None:
    assert [c.method for c in iter_candidates('{"a": [1]}')] == ["strict", "balanced", "balanced"]


@pytest.mark.parametrize("bad", [None, b'{"a": 1}', 4])
def test_non_str_input_rejected(bad: object) -> None:
    with pytest.raises(TypeError):
        extract(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        iter_candidates(bad)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# properties

_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
containers = st.one_of(
    st.lists(json_values, max_size=4),
    st.dictionaries(st.text(max_size=6), json_values, max_size=4),
)
prose = st.text(alphabet=st.characters(blacklist_characters='{[`"\\'), max_size=40)
# text rich in JSON structure, to shake the scanner
jsonish = st.text(
    alphabet=st.sampled_from(list('{}[]"\\,: 01-.etrufalsnx\n\t`') + ["\x01", "é"]), max_size=60
)
fragments = st.lists(
    st.one_of(
        jsonish, json_values.map(json.dumps), prose, st.sampled_from(["```json\n", "\n```\n", "```\n"])
    ),
    max_size=6,
).map("".join)
any_text = st.one_of(st.text(max_size=80), jsonish, fragments)


@_SETTINGS
@given(containers, prose, prose, st.booleans())
def test_prop_embedded_container_is_found(value: object, prefix: str, suffix: str, ascii_only: bool) -> None:
    text = prefix + json.dumps(value, ensure_ascii=ascii_only) + suffix
    assert extract(text).value == value


@_SETTINGS
@given(any_text)
def test_prop_found_value_is_the_parse_of_its_span(text: str) -> None:
    result = extract(text)  # also: never raises
    if result.found:
        start, end = result.span
        assert 0 <= start < end <= len(text)
        assert json.loads(text[start:end]) == result.value
        assert extract_json(text) == result.value
    else:
        assert result.value is NO_JSON and result.span is None and result.method is None


@_SETTINGS
@given(any_text)
def test_prop_extract_is_first_candidate(text: str) -> None:
    candidates = list(iter_candidates(text))
    assert extract(text) == (candidates[0] if candidates else Extraction(NO_JSON, False, None, None))
    for candidate in candidates:
        assert json.loads(text[candidate.span[0] : candidate.span[1]]) == candidate.value


def _oracle_balanced(text: str) -> list[tuple[int, int]]:
    """Brute force: every offset of `{`/`[` from which a standard JSON object/array parses."""
    spans = []
    for k, ch in enumerate(text):
        if ch not in "{[":
            continue
        try:
            _, end = jsonx._DECODER.raw_decode(text, k)
        except (ValueError, RecursionError):
            continue
        spans.append((k, end))
    return spans


@_SETTINGS
@given(any_text)
def test_prop_balanced_candidates_match_brute_force(text: str) -> None:
    got = [c.span for c in iter_candidates(text) if c.method == "balanced"]
    assert got == _oracle_balanced(text)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300), st.integers(0, 2**32))
def test_prop_never_raises_on_arbitrary_text(text: str, seed: int) -> None:
    rnd = random.Random(seed)
    mixed = "".join(rnd.choice([text, "{", "[", '"', "\\", "]", "}", "```\n"]) for _ in range(30))
    for candidate_text in (text, mixed):
        extract(candidate_text)
        for _ in iter_candidates(candidate_text):
            pass


# --------------------------------------------------------------------------------------------
# linear work on adversarial inputs (counted, never timed)


def _repeat(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def _soup(alphabet: str, n: int) -> str:
    rnd = random.Random(7)
    return "".join(rnd.choice(alphabet) for _ in range(n))


ADVERSARIAL = {
    "open_braces": lambda n: "{" * n,
    "open_brackets": lambda n: "[" * n,
    "object_chain": lambda n: _repeat('{"a":', n),
    "array_chain": lambda n: _repeat("[1,", n),
    "quote_backslash_soup": lambda n: _soup('"\\{[ ', n),
    "json_soup": lambda n: _soup('{}[]":,1 \\', n),
    "unclosed_fences": lambda n: _repeat("```json\n{\n", n),
    "fence_pairs": lambda n: _repeat("```\n", n),
    "mismatched": lambda n: _repeat("[1}", n),
    "string_frames": lambda n: _repeat('[",', n),
    "brace_in_string": lambda n: _repeat('{"', n),
    "deep_failing_blocks": lambda n: _repeat("[" * 200 + "1 1" + "]" * 200, n),
    "nested_early_failures": lambda n: _repeat("[1 1 ", n) + "]" * (n // 5),
    "deep_balanced_unclosed": lambda n: "[" * (n // 2) + "]" * (n // 2 - 1),
    "too_deep_balanced": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "long_unterminated_strings": lambda n: _repeat('["' + "x" * 50, n),
    "big_integers": lambda n: _repeat("[" * 50 + "1" * 4400 + "]" * 50 + " ", n),
}

BASE = 20_000
WORK_PER_CHAR = 8  # measured ≤ ~5; the bound is what the module docstring argues (a few passes)


@pytest.mark.parametrize("kind", sorted(ADVERSARIAL))
def test_extract_work_is_linear(kind: str) -> None:
    make = ADVERSARIAL[kind]
    small, large = make(BASE), make(4 * BASE)
    w_small, w_large = jsonx._measure(small).total, jsonx._measure(large).total
    assert w_small <= WORK_PER_CHAR * len(small)
    assert w_large <= WORK_PER_CHAR * len(large)
    assert w_large / max(w_small, 1) < 6


@pytest.mark.parametrize(
    "kind",
    [
        "open_brackets",
        "object_chain",
        "string_frames",
        "brace_in_string",
        "deep_failing_blocks",
        "mismatched",
    ],
)
def test_iter_candidates_work_is_linear_when_nothing_parses(kind: str) -> None:
    make = ADVERSARIAL[kind]
    small, large = make(BASE), make(4 * BASE)
    w_small, w_large = jsonx._measure(small, every=True).total, jsonx._measure(large, every=True).total
    assert w_large <= WORK_PER_CHAR * len(large)
    assert w_large / max(w_small, 1) < 6


def test_full_iteration_is_output_sensitive() -> None:
    # a check of the hook itself: when every nested block parses, *full* iteration parses each of
    # them again (the output is quadratic) -- the counter must show it; extract stays linear
    text = "[" * 200 + "]" * 200
    assert jsonx._measure(text, every=True).parse > 50 * len(text)
    assert jsonx._measure(text).total <= WORK_PER_CHAR * len(text)
