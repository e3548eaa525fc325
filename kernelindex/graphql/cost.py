"""The cost of a query, computed from its document before anything runs, and the limit on it.

In the manner of GitHub's GraphQL node limit: a field that takes `first` (every connection, and the
lists capped by a `first` argument) returns up to `first` items, and whatever is selected under it
is asked for once per item. So a field with page size n costs n times the multiplier of where it
sits, and multiplies the cost of its selection by n: `workloads(first: 100) { runs(first: 100) }`
asks for 100 + 100 × 100 = 10,100 items. A field returning long text costs its size limit in KiB
(`cost_weight`): the cost is about the size of the largest response the query can have, in KiB.
Everything else is free. The page size of a field is its `first` argument (literal or variable)
or its schema default, clamped to the page size the server allows (a larger one is refused by the
resolver anyway, with a clearer message than a cost).

Like limits.py, each fragment is measured once and its figure reused at every spread (the cost is
linear in the multiplier), so a document of fragments spreading fragments costs time linear in its
size to measure, however large the figure it reaches.

`QueryCost` refuses an operation over the limit before execution, with extensions.code
QUERY_TOO_COSTLY naming the cost and the limit, and reports `extensions.cost = {requested, limit}`
on every executed operation. The response cache stores the whole encoded response, extensions
included, under a key of query, operation and variables: a cached answer carries the same cost.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    get_named_type,
    get_operation_ast,
)
from graphql.language import ValueNode
from strawberry.extensions import SchemaExtension

from kernelindex.graphql.errors import QUERY_TOO_COSTLY
from kernelindex.graphql.identity import kept_by_identity
from kernelindex.graphql.pagination import PAGE_DEFAULT

# Where a field's extra weight is kept: strawberry.field(metadata={COST_KEY: ...}).
COST_KEY = "kernelindex.cost"
# The weight of a field whose text is capped at the server's long-text limit (settings.max_text_bytes).
LONG_TEXT = "long-text"
PAGE_ARGUMENTS = ("first", "last")
# Figures above this are reported as "more than" it: a fragment bomb reaches numbers of hundreds of digits.
SHOWN_LIMIT = 10**9
TOO_COSTLY = QUERY_TOO_COSTLY  # its own code, older than QUERY_TOO_COMPLEX, kept for the clients that read it


def cost_weight(kib: int | str) -> dict[str, Any]:
    """Field metadata: the field costs `kib` (KiB of response), or LONG_TEXT for the long-text limit."""
    return {COST_KEY: kib}


@dataclass(frozen=True)
class CostModel:
    limit: int
    max_page_size: int
    long_text_bytes: int

    @property
    def long_text_kib(self) -> int:
        return -(-self.long_text_bytes // 1024)


class _Walk:
    """The cost of selection sets under one operation, each fragment measured once."""

    def __init__(self, schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode,
                 variables: Mapping[str, Any], model: CostModel) -> None:
        self.schema = schema
        self.model = model
        self.fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
        self.variables = dict(variables)
        for definition in operation.variable_definitions or ():
            name = definition.variable.name.value
            if name not in self.variables and isinstance(definition.default_value, IntValueNode):
                self.variables[name] = int(definition.default_value.value)
        self.memo: dict[str, int] = {}
        self.in_progress: set[str] = set()

    def of(self, parent: GraphQLNamedType | None, selection_set: SelectionSetNode | None) -> int:
        total = 0
        for selection in selection_set.selections if selection_set else ():
            if isinstance(selection, FieldNode):
                field = self._field(parent, selection.name.value)
                if field is None:
                    continue  # __typename, introspection: bounded by the schema, not the data
                weight, page = self._weight(field, selection)
                total += weight
                if selection.selection_set is not None:
                    total += page * self.of(get_named_type(field.type), selection.selection_set)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                inner = self.schema.get_type(condition.name.value) if condition else parent
                total += self.of(inner, selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                total += self.fragment(selection.name.value)
        return total

    def fragment(self, name: str) -> int:
        if name in self.memo:
            return self.memo[name]
        fragment = self.fragments.get(name)
        if fragment is None or name in self.in_progress:
            return 0  # unknown fragments and cycles are refused by validation
        self.in_progress.add(name)
        try:
            self.memo[name] = self.of(self.schema.get_type(fragment.type_condition.name.value), fragment.selection_set)
        finally:
            self.in_progress.discard(name)
        return self.memo[name]

    @staticmethod
    def _field(parent: GraphQLNamedType | None, name: str) -> GraphQLField | None:
        if isinstance(parent, (GraphQLObjectType, GraphQLInterfaceType)):
            return parent.fields.get(name)
        return None

    def _weight(self, field: GraphQLField, node: FieldNode) -> tuple[int, int]:
        """(cost of the field itself, multiplier of its selection)."""
        names = [name for name in PAGE_ARGUMENTS if name in field.args]
        if names:
            page = self._page_size(node, names, field.args[names[0]].default_value)
            return page, page
        definition = (field.extensions or {}).get("strawberry-definition")
        weight = (getattr(definition, "metadata", None) or {}).get(COST_KEY, 0)
        return (self.model.long_text_kib if weight == LONG_TEXT else int(weight)), 1

    def _page_size(self, node: FieldNode, names: list[str], default: Any) -> int:
        """The page size `first` or `last` gives (a connection refuses both); neither: the field's
        default, or the connections' PAGE_DEFAULT where `first` has none (null)."""
        value: Any = default if isinstance(default, int) else PAGE_DEFAULT
        for argument in node.arguments or ():
            if argument.name.value in names:
                given = self._value(argument.value)
                if given is not None:  # null, or a variable not given: the default page
                    value = given
                    break
        if isinstance(value, bool) or not isinstance(value, int):
            value = self.model.max_page_size  # unknown: the most the resolver would return
        return max(0, min(value, self.model.max_page_size))

    def _value(self, value: ValueNode) -> Any:
        if isinstance(value, IntValueNode):
            return int(value.value)
        if isinstance(value, VariableNode):
            return self.variables.get(value.name.value)
        return None


def query_cost(schema: GraphQLSchema, document: DocumentNode, operation_name: str | None,
               variables: Mapping[str, Any] | None, model: CostModel) -> int | None:
    """The cost of the operation `operation_name` would run; None when there is no such operation
    (execution then reports it). Kept by the document's identity (the parser cache gives the same
    document for the same text) and what the variables' values can change of it (_variables_key)."""
    return _kept_cost(document, schema, operation_name, model, _variables_key(variables or {}))


COSTS_KEPT = 1024  # costs kept, by document and what its variables' values can change
_OTHER = object()  # a value that is neither null nor an integer: a page size the walk cannot know


def _variables_key(variables: Mapping[str, Any]) -> tuple[tuple[str, tuple[str, Any]], ...]:
    """All the walk reads of each variable's value (_Walk._page_size), as (kind, value): ("int", n) and
    ("bool", b) as they are; ("null", None) for null (the default page); ("other", None) for anything
    else (a string, a float, a list: any of them sizes a page alike, the largest). Null and the others
    are kinds apart, so a cost kept for one is never given for the other."""
    return tuple(sorted((name, _value_key(v)) for name, v in variables.items()))


def _value_key(value: Any) -> tuple[str, Any]:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", int(value))
    return ("null", None) if value is None else ("other", None)


def _key_value(kind: str, value: Any) -> Any:
    """The value the walk is given for a kept key (_variables_key): any other value as _OTHER."""
    return _OTHER if kind == "other" else value


@kept_by_identity(COSTS_KEPT)
def _kept_cost(document: DocumentNode, schema: GraphQLSchema, operation_name: str | None, model: CostModel,
               variables_key: tuple[tuple[str, tuple[str, Any]], ...]) -> int | None:
    variables = {name: _key_value(kind, value) for name, (kind, value) in variables_key}
    return _query_cost(schema, document, operation_name, variables, model)


def _query_cost(schema: GraphQLSchema, document: DocumentNode, operation_name: str | None,
                variables: Mapping[str, Any], model: CostModel) -> int | None:
    operation = get_operation_ast(document, operation_name)
    if operation is None:
        return None
    root = {
        OperationType.QUERY: schema.query_type,
        OperationType.MUTATION: schema.mutation_type,
        OperationType.SUBSCRIPTION: schema.subscription_type,
    }[operation.operation]
    return _Walk(schema, document, operation, variables, model).of(root, operation.selection_set)


def shown(cost: int) -> int:
    return min(cost, SHOWN_LIMIT)


def too_costly_error(cost: int, limit: int) -> GraphQLError:
    figure = f"{cost:,}" if cost <= SHOWN_LIMIT else f"more than {SHOWN_LIMIT:,}"
    return GraphQLError(
        f"Query cost {figure} is over the limit of {limit:,}. Each field taking `first` counts its page size "
        f"(its default when not given) and multiplies what is selected under it; long text counts its size "
        f"limit in KiB. Ask for smaller pages, or fewer nested lists.",
        extensions={"code": TOO_COSTLY, "cost": {"requested": shown(cost), "limit": limit}},
    )


class QueryCost(SchemaExtension):
    """Measures the operation before execution: refuses it over the limit, reports its cost in
    `extensions.cost` otherwise."""

    def __init__(self, model: CostModel) -> None:
        super().__init__()
        self.model = model
        self.cost: int | None = None

    def on_execute(self) -> Iterator[None]:
        ctx = self.execution_context
        if ctx.graphql_document is not None and ctx.result is None:
            self.cost = query_cost(ctx.schema._schema, ctx.graphql_document, ctx.operation_name, ctx.variables, self.model)
            if self.cost is not None and self.cost > self.model.limit:
                ctx.result = ExecutionResult(data=None, errors=[too_costly_error(self.cost, self.model.limit)])
        yield

    def get_results(self) -> dict[str, Any]:
        if self.cost is None:
            return {}
        return {"cost": {"requested": shown(self.cost), "limit": self.model.limit}}
