"""Argument values PostgreSQL cannot take, refused as bad input before anything runs.

Every string argument reaches SQL as a bound parameter. PostgreSQL refuses NUL characters in text,
asyncpg cannot encode an unpaired surrogate, and a time zone offset can carry a time past the ends
of the calendar: left alone, each would surface as an internal error. `TextInputPolicy` refuses NUL
and unpaired surrogates in every String and ID argument, literal or variable, naming the argument.
JSON arguments are left to their resolvers: submitRuns reports such problems record by record.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from graphql import (
    BREAK,
    ExecutionResult,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLSchema,
    OperationDefinitionNode,
    TypeInfo,
    TypeInfoVisitor,
    Visitor,
    get_named_type,
    type_from_ast,
    visit,
)
from strawberry.extensions import SchemaExtension

from kernelindex.db.text import text_problem
from kernelindex.graphql.errors import UserInputError

TEXT_TYPES = frozenset({"String", "ID"})


def check_text(name: str, value: str | None) -> None:
    """UserInputError naming `name` when `value` cannot be stored or compared in PostgreSQL."""
    if value is not None:
        problem = text_problem(value)
        if problem:
            raise UserInputError(f"{name} {problem}")


def check_datetime(name: str, value: datetime | None) -> None:
    """A time zone offset can push a time past the ends of the calendar (year 1 or 9999) in UTC."""
    if value is None or value.tzinfo is None:
        return
    try:
        value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise UserInputError(f"{name} is out of range: {value.isoformat()} is not a time in years 1 to 9999 UTC") from None


class _LiteralTexts(Visitor):
    def __init__(self, type_info: TypeInfo):
        super().__init__()
        self.type_info = type_info
        self.argument = "?"
        self.problem: str | None = None

    def enter_argument(self, node, *_):
        self.argument = node.name.value

    def enter_string_value(self, node, *_):
        named = get_named_type(self.type_info.get_input_type())
        if named is not None and named.name not in TEXT_TYPES:
            return None  # e.g. a string inside a JSON literal
        problem = text_problem(node.value)
        if problem:
            self.problem = f"argument {self.argument!r} {problem}"
            return BREAK
        return None


def _variable_texts(value: Any, type_: Any) -> Iterator[str]:
    """The strings a variable's value holds where its type says String or ID."""
    stack = [(value, type_)]
    while stack:
        item, t = stack.pop()
        if isinstance(t, GraphQLNonNull):
            t = t.of_type
        if isinstance(t, GraphQLList):
            named = get_named_type(t.of_type)
            if named is not None and not isinstance(named, GraphQLInputObjectType) and named.name not in TEXT_TYPES:
                continue  # a list of leaves that are not text (submitRuns' 1,000 JSON records): nothing to walk
            items = item if isinstance(item, list) else [item]
            stack.extend((i, t.of_type) for i in items)
        elif isinstance(t, GraphQLInputObjectType):
            if isinstance(item, dict):
                stack.extend((item[name], field.type) for name, field in t.fields.items() if name in item)
        elif getattr(t, "name", None) in TEXT_TYPES and isinstance(item, str):
            yield item


def find_text_problem(schema: GraphQLSchema, document, variables: dict[str, Any] | None, source: str | None) -> str | None:
    """The first String/ID argument value PostgreSQL cannot take, described; None when there is none."""
    variables = variables or {}
    for definition in document.definitions:
        if not isinstance(definition, OperationDefinitionNode):
            continue
        for variable in definition.variable_definitions or ():
            name = variable.variable.name.value
            if name not in variables:
                continue
            type_ = type_from_ast(schema, variable.type)
            for text in _variable_texts(variables[name], type_):
                problem = text_problem(text)
                if problem:
                    return f"variable ${name} {problem}"
    # In a literal only an escape sequence can produce NUL: the parser refuses raw control characters
    # and unpaired surrogate escapes. No escape, no walk.
    if source is None or "\\u" in source:
        type_info = TypeInfo(schema)
        visitor = _LiteralTexts(type_info)
        visit(document, TypeInfoVisitor(type_info, visitor))
        return visitor.problem
    return None


class TextInputPolicy(SchemaExtension):
    """Refuse, as BAD_USER_INPUT, String and ID arguments that PostgreSQL cannot take."""

    def on_execute(self) -> Iterator[None]:
        ctx = self.execution_context
        if ctx.graphql_document is not None and ctx.result is None:
            problem = find_text_problem(ctx.schema._schema, ctx.graphql_document, ctx.variables, ctx.query)
            if problem:
                ctx.result = ExecutionResult(data=None, errors=[UserInputError(problem)])
        yield
