"""Metadata filters: and/or/not over eq ne gt gte lt lte in contains, checked before they run."""
from __future__ import annotations

import pytest

from ladr_lab.search import InvalidRequestParams, load_filter

META = {"year": 2017, "lang": "en", "tags": ["nlp", "Transformer"], "draft": False, "title": "Attention"}


@pytest.mark.parametrize("leaf,expected", [
    ({"field": "year", "op": "eq", "value": 2017}, True),
    ({"field": "year", "op": "eq", "value": 2017.0}, True),
    ({"field": "draft", "op": "eq", "value": 0}, False),
    ({"field": "draft", "op": "eq", "value": False}, True),
    ({"field": "year", "op": "ne", "value": 2018}, True),
    ({"field": "missing", "op": "ne", "value": 1}, True),
    ({"field": "missing", "op": "eq", "value": 1}, False),
    ({"field": "year", "op": "gt", "value": 2016}, True),
    ({"field": "year", "op": "gte", "value": 2017}, True),
    ({"field": "year", "op": "lt", "value": 2017}, False),
    ({"field": "year", "op": "lte", "value": 2017}, True),
    ({"field": "year", "op": "gt", "value": "2016"}, False),
    ({"field": "title", "op": "lt", "value": "B"}, True),
    ({"field": "lang", "op": "in", "value": ["fr", "en"]}, True),
    ({"field": "tags", "op": "in", "value": ["vision", "nlp"]}, True),
    ({"field": "tags", "op": "eq", "value": "nlp"}, True),
    ({"field": "tags", "op": "contains", "value": "transf"}, True),
    ({"field": "title", "op": "contains", "value": "TENT"}, True),
    ({"field": "tags", "op": "ne", "value": "nlp"}, False),
])
def test_leaf_operators(leaf, expected):
    assert load_filter(leaf)(META) is expected


def test_combinators():
    f = load_filter({"and": [{"field": "lang", "op": "eq", "value": "en"},
                             {"or": [{"field": "year", "op": "gte", "value": 2020},
                                     {"not": {"field": "tags", "op": "contains", "value": "vision"}}]}]})
    assert f(META)
    assert not f({**META, "lang": "fr"})
    assert not f({**META, "tags": ["vision"], "year": 2015})
    assert f({**META, "tags": ["vision"], "year": 2021})


@pytest.mark.parametrize("tree,message", [
    ("year", "must be an object"),
    ({"and": []}, "non-empty array"),
    ({"field": "year", "op": "like", "value": 1}, "op must be one of"),
    ({"field": "year", "op": "in", "value": 1}, "must be an array"),
    ({"field": "year", "op": "gt", "value": [1]}, "number or a string"),
    ({"field": "", "op": "eq", "value": 1}, "non-empty string"),
    ({"field": "year", "op": "eq"}, "must be"),
    ({"and": [{"field": "nope", "op": "eq", "value": 1}]}, 'filter.and[0].field "nope" is not a filter field'),
])
def test_problems_are_reported_with_their_place(tree, message):
    with pytest.raises(InvalidRequestParams, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_filter(tree, {"year": "number", "lang": "string"})


def test_deep_trees_are_refused_not_crashed():
    tree: dict = {"field": "year", "op": "eq", "value": 1}
    for _ in range(100):
        tree = {"not": tree}
    with pytest.raises(InvalidRequestParams, match="too large"):
        load_filter(tree)


@pytest.mark.parametrize("values,meta,expected", [
    ([1.0], {"year": 1}, True),            # JSON equality: 1 == 1.0
    ([1], {"year": True}, False),          # but true is not 1
    ([True], {"year": 1}, False),
    ([None], {"year": None}, True),
    ([float("nan")], {"year": float("nan")}, False),
    ([[1, 2]], {"year": [[1, 2]]}, True),  # an array value is compared one by one
    (["a", 2], {"year": ["x", 2.0]}, True),
    (["a"], {}, False),
])
def test_in_keeps_json_equality_through_its_set(values, meta, expected):
    assert load_filter({"field": "year", "op": "in", "value": values})(meta) is expected


def test_in_caps_its_values_naming_the_field_and_the_cap():
    from ladr_lab.search.filters import MAX_IN_VALUES

    load_filter({"field": "lang", "op": "in", "value": list(range(MAX_IN_VALUES))})
    with pytest.raises(InvalidRequestParams, match=rf'on field "lang"; at most {MAX_IN_VALUES}'):
        load_filter({"and": [{"field": "lang", "op": "in", "value": list(range(100_000))}]})


def test_in_costs_a_set_lookup_per_document_not_one_per_value(monkeypatch):
    import ladr_lab.search.filters as filters

    calls = [0]
    real = filters._eq

    def counting(a, b):
        calls[0] += 1
        return real(a, b)

    monkeypatch.setattr(filters, "_eq", counting)
    pred = load_filter({"field": "lang", "op": "in", "value": [f"v{i}" for i in range(1000)] + [3, 4.5, True]})
    docs = [{"lang": f"v{i * 7}" if i % 2 else ["x", f"w{i}"]} for i in range(3000)]
    assert sum(pred(m) for m in docs) == sum(1 for i in range(3000) if i % 2 and i * 7 < 1000)
    assert calls[0] == 0   # a list of values compared value by value would cost documents x values (3 million)


@pytest.mark.parametrize("value", ["Attention", "STRASSE", ["nlp", "Straße"], ["x"], 7, True, {"a": "b"}, None, []])
@pytest.mark.parametrize("needle", ["tent", "straße", "ss", "", "nope"])
def test_contains_is_the_slates_rule(value, needle):
    from ladr_lab.slate import contains_match

    expected = contains_match(value, needle, "string[]" if isinstance(value, list) else "string")
    assert load_filter({"field": "f", "op": "contains", "value": needle})({"f": value}) is expected
