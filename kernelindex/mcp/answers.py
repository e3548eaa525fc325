"""What each tool answers, as types read off the GraphQL schema: every object a document selects becomes
a TypedDict of the fields it selects, each field typed, made optional or not, and described as the schema
has it (an enum as its values). The tools' output schemas, and the SDK's check of every answer against
them, come from these, so they cannot drift from the documents or the API: a field added to a document,
or a type changed in the schema, changes the answer's type with it."""

from __future__ import annotations

import json
import types
import typing
from typing import Annotated, Any, Literal

from graphql import (
    FieldNode,
    GraphQLEnumType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLScalarType,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    parse,
)
from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

from kernelindex.mcp.gateway import Document

# The schema's scalars as JSON carries them (dates as ISO text, JSON as itself).
SCALARS: dict[str, Any] = {"Int": int, "Float": float, "String": str, "ID": str, "Boolean": bool, "Date": str,
                           "DateTime": str, "JSON": Any}


def answer_types(schema: GraphQLSchema, document: Document) -> dict[str, Any]:
    """Each root field's answer type in `document`, by its name in the answer."""
    (operation,) = [d for d in parse(document.text).definitions if isinstance(d, OperationDefinitionNode)]
    root = schema.mutation_type if operation.operation is OperationType.MUTATION else schema.query_type
    assert root is not None  # the schema has the root the document's operation names
    return _fields(schema, root, operation.selection_set, document.name)


def _untitled(schema: dict[str, Any]) -> None:
    """Leave out pydantic's title of every property ("Latencyms" for latencyMs): it says nothing the name
    does not, and every tool's output schema is read by the agent that lists the tools."""
    for value in schema.get("properties", {}).values():
        value.pop("title", None)


COMPACT = ConfigDict(json_schema_extra=_untitled)


def typed(name: str, fields: dict[str, Any], description: str | None = None) -> Any:
    """A TypedDict of these fields (a tool's own shape around what the documents answer)."""
    made = TypedDict(name, fields)  # type: ignore[misc]  # the functional form, with computed fields
    made.__doc__ = description
    return with_config(COMPACT)(made)


def _fields(schema: GraphQLSchema, parent: GraphQLObjectType, selections: SelectionSetNode, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for selection in selections.selections:
        assert isinstance(selection, FieldNode)  # the documents select fields only: no fragments, no aliases
        name = selection.name.value
        field = parent.fields[name]
        python = _type(schema, field.type, selection, f"{path}_{name}")
        out[name] = Annotated[python, Field(description=field.description)] if field.description else python
    return out


def _type(schema: GraphQLSchema, kind: GraphQLOutputType, node: FieldNode, path: str, nullable: bool = True) -> Any:
    if isinstance(kind, GraphQLNonNull):
        return _type(schema, kind.of_type, node, path, nullable=False)
    inner: Any
    if isinstance(kind, GraphQLList):
        inner = list[_type(schema, kind.of_type, node, path)]  # type: ignore[misc]  # a type built at run time
    elif isinstance(kind, GraphQLEnumType):
        inner = Literal[tuple(kind.values)]  # the schema's values, whatever they become
    elif isinstance(kind, GraphQLScalarType):
        inner = SCALARS[kind.name]
    elif isinstance(kind, GraphQLObjectType):
        assert node.selection_set is not None  # an object is always selected into
        # Named "Type.path": pydantic keys its definition by the path (unique), and compact() names it by the type.
        inner = typed(f"{kind.name}.{path}", _fields(schema, kind, node.selection_set, path), kind.description)
    else:  # interfaces and unions: the documents select none
        raise TypeError(f"{path}: {kind} is not answered by a tool")
    return inner | None if nullable else inner


def member(kind: Any, *names: str) -> Any:
    """The type of `kind`'s field `names[0]`, then of its field `names[1]`, …, each without its description,
    optionality or list: the type of one item (find_workloads answers the workloads' `nodes` as its own list)."""
    for name in names:
        kind = _bare(typing.get_type_hints(_bare(kind), include_extras=True)[name])
    return _bare(kind)


def _bare(kind: Any) -> Any:
    """`kind` without Annotated, `| None` or list around it."""
    while True:
        origin = typing.get_origin(kind)
        if origin is Annotated:
            kind = typing.get_args(kind)[0]
        elif origin is list:
            kind = typing.get_args(kind)[0]
        elif origin in (typing.Union, types.UnionType):
            (kind,) = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        else:
            return kind


DEFS = "#/$defs/"


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's output schema as pydantic makes it, written shorter with the same meaning: every tool's
    schema is sent whole in `tools/list`, and an agent reads it there (78 KB for the eight tools before).

    - an object selected the same way twice (the same type, fields and descriptions) is one definition;
    - a definition is named by its GraphQL type (`Run`; `Run2` for a second selection of Run's fields),
      not by its path through the document, and has no `title` (its name says it);
    - `X | None` is `"type": [T, "null"]` (with null among an enum's values), not `anyOf` of two schemas.
    Descriptions, required fields, enums and types are kept as they are: the answers validated against
    the schema (the SDK checks each) are exactly those validated before."""
    defs: dict[str, Any] = schema.get("$defs", {})
    types_of = {name: str(definition.get("title", name)).split(".")[0] for name, definition in defs.items()}
    root = _shortened({k: v for k, v in schema.items() if k != "$defs"})
    root.pop("title", None)
    defs = {name: _shortened(definition) for name, definition in defs.items()}
    for definition in defs.values():
        definition.pop("title", None)
    # Merge equal definitions until none are left (a merge can make their parents equal).
    while True:
        seen: dict[str, str] = {}
        same: dict[str, str] = {}
        for name, definition in defs.items():
            key = types_of[name] + canonical(definition)
            if key in seen:
                same[name] = seen[key]
            else:
                seen[key] = name
        if not same:
            break
        defs = {name: _renamed(d, same) for name, d in defs.items() if name not in same}
        root = _renamed(root, same)
    # A definition's own description (its GraphQL type's) is left out where every property that refers to
    # it says what it is there: "run: The run it produced" is what an agent reads, not Run's general words.
    described = _described_everywhere(root, defs)
    for name in described:
        defs[name].pop("description", None)
    # Named by type, numbered in the order they come.
    names: dict[str, str] = {}
    counts: dict[str, int] = {}
    for name in defs:
        kind = types_of[name]
        counts[kind] = counts.get(kind, 0) + 1
        names[name] = kind if counts[kind] == 1 else f"{kind}{counts[kind]}"
    out = _renamed(root, names)
    if defs:
        out["$defs"] = {names[name]: _renamed(d, names) for name, d in defs.items()}
    return out


def _described_everywhere(root: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    """The definitions each of whose references is in a property (or a property's items) with a description."""
    referred: dict[str, bool] = {}

    def walk(value: Any, described: bool) -> None:
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and ref.startswith(DEFS):
                name = ref[len(DEFS):]
                referred[name] = referred.get(name, True) and described
            for key, item in value.items():
                if key == "properties":
                    for prop in item.values():
                        walk(prop, isinstance(prop, dict) and bool(prop.get("description")))
                elif key in ("items", "anyOf"):
                    walk(item, described)
                else:
                    walk(item, False)
        elif isinstance(value, list):
            for item in value:
                walk(item, described)

    walk(root, False)
    for definition in defs.values():
        walk(definition, False)
    return {name for name, yes in referred.items() if yes}


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _renamed(value: Any, names: dict[str, str]) -> Any:
    """`value` with each `$ref` to a definition in `names` pointing to its new name."""
    if isinstance(value, dict):
        out = {k: _renamed(v, names) for k, v in value.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith(DEFS) and ref[len(DEFS):] in names:
            out["$ref"] = DEFS + names[ref[len(DEFS):]]
        return out
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return value


def _shortened(value: Any) -> Any:
    """`value` with each `anyOf: [{type: T, …}, {type: null}]` written as `type: [T, "null"]`."""
    if isinstance(value, list):
        return [_shortened(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _shortened(v) for k, v in value.items()}
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and options[1] == {"type": "null"}:
        first = options[0]
        if isinstance(first, dict) and isinstance(first.get("type"), str) and "const" not in first and not set(first) & set(out):
            del out["anyOf"]
            merged = {**first, **out, "type": [first["type"], "null"]}
            if "enum" in first:
                merged["enum"] = [*first["enum"], None]
            return merged
    return out
