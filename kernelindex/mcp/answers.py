"""What each tool answers, as types read off the GraphQL schema: every object a document selects becomes
a TypedDict of the fields it selects, each field typed, made optional or not, and described as the schema
has it (an enum as its values). The tools' output schemas, and the SDK's check of every answer against
them, come from these, so they cannot drift from the documents or the API: a field added to a document,
or a type changed in the schema, changes the answer's type with it."""

from __future__ import annotations

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
        inner = typed(path, _fields(schema, kind, node.selection_set, path), kind.description)
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
