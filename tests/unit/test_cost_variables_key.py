"""kernelindex.graphql.cost._variables_key: what a kept query cost is keyed by. A null variable (the
default page) and any other value the walk cannot size (a string, a float, a list: the largest page)
are kinds apart, named so, and a cost kept for one is never given for the other."""

from __future__ import annotations

import pytest
from graphql import parse

from kernelindex.graphql import cost
from kernelindex.graphql.schema import build_schema
from kernelindex.settings import Settings


def test_each_kind_is_named_and_null_is_not_another_value():
    key = dict(cost._variables_key({"a": None, "b": "7", "c": 7, "d": True, "e": 7.0, "f": [7]}))
    assert key == {"a": ("null", None), "b": ("other", None), "c": ("int", 7), "d": ("bool", True),
                   "e": ("other", None), "f": ("other", None)}
    assert cost._variables_key({"n": None}) != cost._variables_key({"n": "x"})
    assert cost._variables_key({"n": "x"}) == cost._variables_key({"n": [1, 2]})  # the walk sizes them alike
    assert cost._variables_key({"n": 1}) != cost._variables_key({"n": True})


@pytest.mark.parametrize("order", [("null", "other"), ("other", "null")])
def test_a_cost_kept_for_null_is_not_given_for_another_value(order):
    settings = Settings()
    schema = build_schema(settings)._schema
    model = cost.CostModel(limit=settings.max_query_cost, max_page_size=settings.max_page_size,
                           long_text_bytes=settings.max_text_bytes)
    # a document of its own, so no other test's kept cost is found
    document = parse("query($n: Int) { workloads(first: $n) { nodes { slug runs(first: 2) { totalCount } } } }")
    values = {"null": None, "other": "many"}
    costs = {kind: cost.query_cost(schema, document, None, {"n": values[kind]}, model) for kind in order}
    assert costs["null"] == cost._query_cost(schema, document, None, {"n": None}, model)
    assert costs["other"] == cost._query_cost(schema, document, None, {"n": cost._OTHER}, model)
    assert costs["other"] > costs["null"]  # the largest page against the default one
