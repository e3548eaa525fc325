"""What building the MCP server leaves alone: the process's root logger (the SDK's MCPServer would
configure it as it is made)."""

from __future__ import annotations

import logging

from kernelindex.graphql.schema import build_schema
from kernelindex.mcp.server import GatewaySlot, build_server
from kernelindex.mcp.tools import http_authorization
from kernelindex.settings import Settings


def test_building_the_server_leaves_the_root_logger_as_it_was():
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    root.handlers[:] = []  # as in `kernelindex serve`, where nothing configured it (pytest did, here)
    root.setLevel(logging.ERROR)
    try:
        build_server(GatewaySlot(), http_authorization, build_schema(Settings())._schema)
        assert (root.handlers, root.level) == ([], logging.ERROR)
    finally:
        root.handlers[:] = saved
        root.setLevel(level)


def test_compact_output_schemas_accept_and_refuse_what_pydantic_s_did():
    """kernelindex.mcp.answers.compact writes a tool's output schema shorter: the same answers validate."""
    from typing import Literal

    import jsonschema
    from pydantic import TypeAdapter

    from kernelindex.mcp.answers import compact, typed

    # As kernelindex.mcp.answers types a document's objects: named "GraphQLType.path".
    leaf = {"slug": str, "licence": str | None}
    answer = typed("Answer", {
        "kind": Literal["A", "B"] | None,
        "count": int | None,
        "tags": list[str] | None,
        "only": Literal["X"] | None,  # a one-value enum is a `const`: left as anyOf
        "first": typed("Implementation.answer_first", leaf),
        "second": typed("Implementation.answer_second", leaf) | None,
        "other": typed("Implementation.answer_other", {"slug": str}),
    })
    before = TypeAdapter(answer).json_schema()
    after = compact(before)
    # Two selections alike are one definition, named by the type; another selection is its own.
    assert set(after["$defs"]) == {"Implementation", "Implementation2"} and len(before["$defs"]) == 3
    assert after["properties"]["kind"] == {"enum": ["A", "B", None], "type": ["string", "null"]}
    good = {"kind": None, "count": None, "tags": None, "only": None, "first": {"slug": "a", "licence": None},
            "second": None, "other": {"slug": "b"}}
    cases = [good, {**good, "kind": "A", "count": 3, "tags": ["t"], "only": "X", "second": {"slug": "s", "licence": "MIT"}},
             {**good, "kind": "C"}, {**good, "count": "3"}, {**good, "only": "Y"}, {**good, "tags": [1]},
             {**good, "second": {"slug": "s"}}, {**good, "first": {"slug": 1, "licence": None}},
             {key: value for key, value in good.items() if key != "count"}]
    for instance in cases:
        assert (jsonschema.Draft202012Validator(before).is_valid(instance)
                == jsonschema.Draft202012Validator(after).is_valid(instance)), instance
    assert [jsonschema.Draft202012Validator(after).is_valid(c) for c in cases] == [True, True] + [False] * 7
