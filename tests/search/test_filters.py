"""Metadata filters: and/or/not over eq ne gt gte lt lte in contains, checked before they run."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# --- bulk evaluation over columns equals the per-document rules --------------------------------------------------
# Small pools, so documents and leaves often meet the same value, and the values JSON equality tells apart or not
# (1, 1.0, true; two NaN objects and one shared NaN; -0.0; 2**53 and 2**53 + 1; ß and SS; a NUL) meet each other.
_NAN = float("nan")
_NUMBERS = [0, 1, 2, 1.0, 1.5, -0.0, _NAN, float("nan"), float("inf"), float(2 ** 53), 2 ** 53 + 1]
_STRINGS = ["", "a", "A", "ab", "b", "ß", "SS", "ss", "x\x00y", "2017", "2017-06"]
_SCALARS = st.sampled_from([None, True, False, *_NUMBERS, *_STRINGS])
_NESTED = st.sampled_from([[], [1], [1.0], [True], ["a"], {"k": 1}, {"k": True}, {"k": [1]}])
_VALUES = st.one_of(_SCALARS, _SCALARS, _NESTED, st.lists(st.one_of(_SCALARS, _NESTED), max_size=3))
_FIELDS = st.sampled_from(["a", "b"])
_LEAVES = st.one_of(
    st.builds(lambda f, op, v: {"field": f, "op": op, "value": v}, _FIELDS, st.sampled_from(["eq", "ne"]), _VALUES),
    st.builds(lambda f, v: {"field": f, "op": "in", "value": v}, _FIELDS, st.lists(_VALUES, max_size=4)),
    st.builds(lambda f, op, v: {"field": f, "op": op, "value": v}, _FIELDS, st.sampled_from(["gt", "gte", "lt", "lte"]),
              st.sampled_from(_NUMBERS + _STRINGS)),
    st.builds(lambda f, v: {"field": f, "op": "contains", "value": v}, _FIELDS,
              st.sampled_from(["", "a", "A", "b", "ss", "SS", "ß", "x\x00", "\x00", "201", "zz"])))
_TREES = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.builds(lambda xs: {"and": xs}, st.lists(inner, min_size=1, max_size=4)),
    st.builds(lambda xs: {"or": xs}, st.lists(inner, min_size=1, max_size=4)),
    st.builds(lambda x: {"not": x}, inner)), max_leaves=8)
_METAS = st.lists(st.fixed_dictionaries({}, optional={"a": _VALUES, "b": _VALUES}), max_size=20)


def _agree(tree, metas):
    from ladr_lab.search.columns import Columns

    f = load_filter(tree)
    cols = Columns([f"d{i}" for i in range(len(metas))], metas)
    expected = [f(m) for m in metas]
    assert f.rows(cols).tolist() == expected, tree
    assert cols.ids_of(f.rows(cols)) == {f"d{i}" for i, ok in enumerate(expected) if ok}


def test_every_leaf_over_every_pooled_value_agrees_in_bulk():
    """Exhaustive over the pools: each operator with each value, against a document holding each value (alone, in
    a list, twice) and one without the field."""
    from ladr_lab.search.columns import Columns

    nested = [[], [1], [1.0], [True], ["a"], {"k": 1}, {"k": True}, {"k": [1]}]
    pool = [None, True, False, *_NUMBERS, *_STRINGS]
    metas = [{"a": v} for v in pool + nested] + [{"a": [v, "a"]} for v in pool + nested] + [{"a": pool[3]}, {}]
    cols = Columns([str(i) for i in range(len(metas))], metas)
    leaves = [{"field": "a", "op": op, "value": v} for op in ("eq", "ne") for v in pool + nested]
    leaves += [{"field": "a", "op": op, "value": v} for op in ("gt", "gte", "lt", "lte") for v in _NUMBERS + _STRINGS]
    leaves += [{"field": "a", "op": "in", "value": [v]} for v in pool + nested]
    leaves += [{"field": "a", "op": "contains", "value": v} for v in ["", "a", "A", "ss", "SS", "ß", "x\x00", "a\x00", "\x00", "zz"]]
    for leaf in leaves:
        f = load_filter(leaf)
        assert f.rows(cols).tolist() == [f(m) for m in metas], leaf


@settings(max_examples=200, deadline=None)
@given(leaves=st.lists(_LEAVES, min_size=1, max_size=8), metas=_METAS)
def test_property_each_leaf_in_bulk_equals_the_per_document_rule(leaves, metas):
    for leaf in leaves:
        _agree(leaf, metas)
    for tree in ({"and": leaves}, {"or": leaves}, {"not": {"or": leaves}}):   # grouped set tests included
        _agree(tree, metas)


@settings(max_examples=100, deadline=None)
@given(tree=_TREES, metas=_METAS)
def test_property_bulk_evaluation_equals_the_per_document_rules(tree, metas):
    _agree(tree, metas)


def test_bulk_evaluation_groups_one_fields_set_tests_and_still_agrees():
    from ladr_lab.search.columns import Columns
    from ladr_lab.search.filters import _plan

    tree = {"or": [{"field": "lang", "op": "eq", "value": "en"}, {"field": "year", "op": "gt", "value": 2016},
                   {"field": "lang", "op": "in", "value": ["de", "fr"]},
                   {"and": [{"field": "lang", "op": "ne", "value": "x"}, {"field": "lang", "op": "ne", "value": "y"}]}]}
    f = load_filter(tree)
    plan = _plan(f.tree)
    assert plan[0] == "or" and [p[0] for p in plan[1]] == ["any", "range", "and"]
    assert plan[1][0] == ("any", "lang", ["en", "de", "fr"])   # three leaves, one set test
    assert plan[1][2] == ("and", [("none", "lang", ["x", "y"])])
    metas = [{"lang": "en"}, {"lang": "fr", "year": 2000}, {"year": 2020}, {"lang": "x"}, {}]
    cols = Columns([str(i) for i in range(len(metas))], metas)
    assert f.rows(cols).tolist() == [f(m) for m in metas] == [True, True, True, False, True]
