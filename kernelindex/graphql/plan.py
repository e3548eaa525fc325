"""Documents planned once, executed without graphql-core's per-field dispatch (issue 27, point 1).

graphql-core walks a document anew for every request and every object: it looks up each field's
definition, builds a resolve-info object, decides the argument values, and dispatches on the output
type (non-null, list, leaf, abstract, object) at every value. For a query, all of that is decided by
the document, its operation name and the values of the variables that @skip and @include read. So a
query is planned once (per process, in a bounded LRU): a tree of closures, one per selected field, each
holding what graphql-core would find for it (the field definition, its merged nodes, its argument
values when they use no variable, how to call its resolver, how to complete its type, its child plan).
At run time the closures walk the root value and build the response's dicts.

How a field is resolved, from cheapest: a strawberry field without a resolver is the attribute of its
Python name (strawberry's own "basic field" shortcut); a resolver that takes no argument, no info and no
root, on a field without field extensions, is called as the plain method it is; anything else goes through
the resolver strawberry built for graphql-core, with the resolve info graphql-core's executor builds.
Leaves are completed by the schema's execution context class (RoundedFloats), after a type check that
passes the strings, ints and booleans that need no coercion as they are.

The run is graphql-core's own, step for step, where anything can be observed: awaitables are awaited
where graphql-core awaits them, siblings gathered (graphql-core's gather_with_cancel) where it gathers
them, so the loaders batch as before (kernelindex.graphql.loaders) and errors happen in the same order;
a field error goes through the executor's own handle_field_error (located, null propagated to the
nearest nullable parent, collected once per nulled position), with graphql-core's messages for a null
in a non-null field, a value that is not a list, or a value of another type. Whatever is unusual for
this schema (an async iterable as a list, an abstract type resolved by an awaitable) is completed by the
executor itself, for that value. The executor is graphql-core's, built per request as graphql-core
builds it (Executor.build: the operation, fragments and coerced variables); a request whose variables
do not coerce goes to graphql-core, which reports them.

A field marked PAGE_VALUE (Workload.headline, records, eligibleRunCount: functions of the workload's
page) whose whole selection reads nothing but its objects is completed once per page and kept with it
(_page_value): the next request that has that page loaded takes the completed value as it is. The read
model replaces a workload's page when the workload is written, and the kept values go with the page.

Not planned (graphql-core executes them): mutations and subscriptions; a document selecting
`__schema` or `__type`; directives other than @skip and @include; an operation with directives of its
own (e.g. the experimental one that turns error propagation off). `__typename` is planned.
"""

from __future__ import annotations

import enum
import logging
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any
from weakref import WeakKeyDictionary

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    GraphQLBoolean,
    GraphQLEnumType,
    GraphQLError,
    GraphQLFloat,
    GraphQLID,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    GraphQLString,
    OperationDefinitionNode,
    OperationType,
    is_abstract_type,
    is_leaf_type,
    is_list_type,
    is_non_null_type,
    is_object_type,
)
from graphql.execution.collect_fields import FieldDetails, collect_fields, collect_subfields
from graphql.execution.executor import collect_iterator_awaitables, invalid_return_type_error
from graphql.execution.values import get_argument_values
from graphql.language import DirectiveNode, VariableNode, Visitor, visit
from graphql.pyutils import Path, gather_with_cancel, is_iterable
from strawberry.execution.is_awaitable import optimized_is_awaitable
from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import _coerce_error
from strawberry.types import ExecutionResult as StrawberryExecutionResult
from strawberry.types.arguments import convert_arguments
from strawberry.types.base import StrawberryOptional
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType as StrawberryOperationType

from kernelindex.graphql.errors import report_errors
from kernelindex.graphql.runs_page import NotWritten, plan_runs
from kernelindex.graphql.session import release_connection, take_connection

log = logging.getLogger("kernelindex.graphql.plan")

PLAN_CACHE_SIZE = 512
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
# Argument values planned once must not be shared mutable objects between requests.
_IMMUTABLE = (str, int, float, bool, type(None), enum.Enum)
_DIRECTIVES = frozenset({"skip", "include"})
_BUILTIN_SCALARS = (GraphQLString, GraphQLInt, GraphQLFloat, GraphQLBoolean, GraphQLID)

# (value, path, executor) -> the completed value, or an awaitable of it
Complete = Callable[[Any, Any, Any], Any]
# (source, parent path, executor) -> the field's completed value, or an awaitable of it
RunField = Callable[[Any, Any, Any], Any]

_awaitable = optimized_is_awaitable
# Never awaitable (optimized_is_awaitable's own fast path, checked inline where a plan checks every value).
_PLAIN = frozenset({type(None), bool, int, float, str, bytes, list, tuple, dict})


class Unplanned(Exception):
    """This document cannot be planned: graphql-core executes it."""


class Stats:
    """What the planner did in this process (the differential test reads it)."""

    def __init__(self) -> None:
        self.planned = 0       # requests answered by a plan
        self.unplanned = 0     # requests graphql-core answered (no plan for the document, or variables that do not coerce)
        self.plans_built = 0
        self.ready = 0         # requests of a document kept ready, answered without strawberry's execution (execute_ready)


STATS = Stats()


# -- graphql-core's steps, as its Executor takes them (graphql/execution/executor.py) ------------------

async def _complete_awaitable(value: Any, complete: Complete, return_type: Any, details: Any, path: Path,
                              executor: Any) -> Any:
    """Executor.complete_awaitable_value (and complete_awaitable_list_item_value: the same steps)."""
    try:
        resolved = await value
        completed = complete(resolved, path, executor)
        if _awaitable(completed):
            completed = await completed
    except Exception as raw_error:
        executor.handle_field_error(raw_error, return_type, details, path)
        completed = None
    return completed


async def _await_completed(completed: Any, return_type: Any, details: Any, path: Path, executor: Any) -> Any:
    """execute_field's await_completed (and complete_list_item_value's)."""
    try:
        return await completed
    except Exception as raw_error:
        executor.handle_field_error(raw_error, return_type, details, path)
        return None


def _resolved(value: Any, complete: Complete, return_type: Any, details: Any, path: Path, executor: Any) -> Any:
    """A resolver's value completed, as execute_field goes on after calling it: awaited first where it is
    awaitable, its completion awaited where that is. What complete raises is the caller's to handle."""
    if _awaitable(value):
        return _complete_awaitable(value, complete, return_type, details, path, executor)
    completed = complete(value, path, executor)
    if _awaitable(completed):
        return _await_completed(completed, return_type, details, path, executor)
    return completed


async def _gather_items(out: list[Any], pending: list[int]) -> list[Any]:
    if len(pending) == 1:
        index = pending[0]
        out[index] = await out[index]
        return out
    values = await gather_with_cancel(*(out[index] for index in pending))
    for index, value in zip(pending, values, strict=True):
        out[index] = value
    return out


async def _gather_fields(out: dict[str, Any], pending: list[str]) -> dict[str, Any]:
    if len(pending) == 1:
        key = pending[0]
        out[key] = await out[key]
        return out
    values = await gather_with_cancel(*(out[key] for key in pending))
    out.update(zip(pending, values, strict=True))
    return out


def _execute_fields(fields: list[tuple[str, RunField]]) -> Complete:
    """Executor.execute_fields over planned fields."""
    def execute_fields(source: Any, path: Any, executor: Any) -> Any:
        out: dict[str, Any] = {}
        pending: list[str] = []
        try:
            for key, field in fields:
                completed = field(source, path, executor)
                out[key] = completed
                if type(completed) not in _PLAIN and _awaitable(completed):
                    pending.append(key)
        except Exception:
            if pending:
                executor.settle_in_background([out[key] for key in pending])
            raise
        if not pending:
            return out
        return _gather_fields(out, pending)
    return execute_fields


# -- completion of each output type (Executor.complete_value, by type, decided at plan time) -----------

# The built-in scalars whose values coerce_output_value returns unchanged when of exactly this Python
# type (bool is no int here; an Int within 32 bits): such a value is its own completion, nullable or not.
_AS_IS: dict[Any, type] = {GraphQLString: str, GraphQLInt: int, GraphQLBoolean: bool}


def _as_is_first(type_: Any, complete: Complete) -> Complete:
    """`complete`, after the exact-type check of _AS_IS for `type_` (no check where it has none): a
    value that passes is returned as it is, without the calls `complete` would make."""
    plain = _AS_IS.get(type_)
    if plain is None:
        return complete
    if plain is int:
        def complete_int(value: Any, path: Any, executor: Any) -> Any:
            if type(value) is int and _INT_MIN <= value <= _INT_MAX:
                return value
            return complete(value, path, executor)
        return complete_int

    def complete_plain(value: Any, path: Any, executor: Any) -> Any:
        return value if type(value) is plain else complete(value, path, executor)
    return complete_plain


def _leaf(return_type: Any) -> Complete:
    def complete_leaf(value: Any, path: Any, executor: Any) -> Any:
        if isinstance(value, Exception):
            raise value
        if value is None:
            return None
        return executor.complete_leaf_value(return_type, value)
    return _as_is_first(return_type, complete_leaf)


def _non_null(inner: Complete, message: str, of_type: Any = None) -> Complete:
    def complete_non_null(value: Any, path: Any, executor: Any) -> Any:
        if isinstance(value, Exception):
            raise value
        completed = inner(value, path, executor)
        if completed is None:
            raise TypeError(message)
        return completed
    # A non-null String, Int or Boolean: `inner` is _leaf's completion, which returns such a value as it is.
    return _as_is_first(of_type, complete_non_null)


# A field's strawberry metadata key: its value is a function of its object's workload page alone (and
# of its constant arguments and the server's settings), as the object's `page_value_key(context)` says
# (None: not loaded yet, so resolved as any field). Such a field whose whole selection reads nothing but
# its objects (resolvers without info or arguments: no loader, no request) is completed once per page
# and kept with it: a list of 100 workloads writes ~1,000 records a request, the same until a write
# replaces the page in the read model (issue 27, point 5).
PAGE_VALUE = "kernelindex.page_value"

# id(page) -> (a weak reference to it, {(planned field, key): completed value}); an entry goes with its page.
_PAGE_VALUES: dict[int, tuple[Any, dict[Any, Any]]] = {}


def _values_of(page: Any) -> dict[Any, Any]:
    entry = _PAGE_VALUES.get(id(page))
    if entry is not None and entry[0]() is page:
        return entry[1]
    page_id = id(page)
    values: dict[Any, Any] = {}

    def forget(ref: Any) -> None:
        kept = _PAGE_VALUES.get(page_id)
        if kept is not None and kept[0] is ref:
            del _PAGE_VALUES[page_id]

    _PAGE_VALUES[page_id] = (weakref.ref(page, forget), values)
    return values


def _page_value(run: RunField) -> RunField:
    """`run`, its completed value kept per page: taken from there when kept; kept when completed at
    once and without any error in the request so far (a value completed beside an error could be one
    graphql-core nulled). Shared between responses: nothing writes into a response after completion."""
    def run_page_value(source: Any, parent_path: Any, executor: Any) -> Any:
        key_of = getattr(source, "page_value_key", None)
        found = key_of(executor.context_value) if key_of is not None else None
        if found is None:
            return run(source, parent_path, executor)
        page, extra = found
        values = _values_of(page)
        key = (run_page_value, extra)
        value = values.get(key, _MISSING)
        if value is not _MISSING:
            return value
        errors = executor.collected_errors.errors
        clean = not errors
        value = run(source, parent_path, executor)
        if clean and not errors and (type(value) in _PLAIN or not _awaitable(value)):
            values[key] = value
        return value
    return run_page_value


class Planner:
    """Builds the plan of one document (and operation, and @skip/@include values) for a schema."""

    def __init__(self, schema: GraphQLSchema, executor: Any, strawberry_schema: Any = None) -> None:
        self.schema = schema
        self.strawberry_schema = strawberry_schema
        self.fragments = executor.fragments
        self.variable_values = executor.variable_values
        self.operation: OperationDefinitionNode = executor.operation
        self.executor_class = type(executor)
        # One flag per page value being planned (PAGE_VALUE): cleared where its selection reads more
        # than its objects (a resolver given info or arguments, an abstract type).
        self._pure: list[list[bool]] = []

    def root(self) -> Complete:
        root_type = self.schema.get_root_type(OperationType.QUERY)
        if root_type is None:
            raise Unplanned("no query type")
        grouped, _defers, _forbidden = collect_fields(
            self.schema, self.fragments, self.variable_values, root_type, self.operation)
        return self._fields(root_type, grouped)

    def _fields(self, parent_type: GraphQLObjectType, grouped: dict[str, list[FieldDetails]]) -> Complete:
        return _execute_fields([(key, self._field(parent_type, key, details)) for key, details in grouped.items()])

    def _field(self, parent_type: GraphQLObjectType, key: str, details: list[FieldDetails]) -> RunField:
        """Executor.execute_field for one response key; `Query.runs` written from its rows where its
        selection allows (kernelindex.graphql.runs_page), this field's general plan beside it."""
        run = self._general_field(parent_type, key, details)
        if (parent_type is self.schema.query_type and details[0].node.name.value == "runs"
                and self.strawberry_schema is not None):
            field_def = self.schema.get_field(parent_type, "runs")
            try:
                return plan_runs(self, key, field_def, details, self._constant_args(field_def, details[0].node), run)
            except NotWritten as exc:
                log.debug("runs not written from rows: %s", exc)
        return run

    def _constant_args(self, field_def: Any, node: FieldNode) -> dict[str, Any] | None:
        """The field's argument values when the document gives them without variables (None otherwise,
        or where they do not coerce: then at run time, where the general plan reports it)."""
        if _uses_variables(node):
            return None
        try:
            return get_argument_values(field_def, node, self.variable_values)
        except GraphQLError:
            return None

    def _general_field(self, parent_type: GraphQLObjectType, key: str, details: list[FieldDetails]) -> RunField:
        """Executor.execute_field for one response key; a page value's kept per page where its
        selection allows (_page_value)."""
        field_def = self.schema.get_field(parent_type, details[0].node.name.value)
        definition = (field_def.extensions or {}).get("strawberry-definition") if field_def is not None else None
        if definition is None or not (definition.metadata or {}).get(PAGE_VALUE) or _uses_variables(details[0].node):
            return self._field_run(parent_type, key, details)
        depth = len(self._pure)
        flag = [True]
        self._pure.append(flag)
        try:
            run = self._field_run(parent_type, key, details, depth)
        finally:
            del self._pure[depth:]
        return _page_value(run) if flag[0] else run

    def _impure(self, depth: int | None = None) -> None:
        """The page values being planned (those entered before `depth`: not the field's own) read more
        than their objects: not kept."""
        for flag in self._pure[:depth]:
            flag[0] = False

    def _field_run(self, parent_type: GraphQLObjectType, key: str, details: list[FieldDetails],
                   depth: int | None = None) -> RunField:
        """Executor.execute_field for one response key."""
        if depth is None:
            depth = len(self._pure)
        node = details[0].node
        name = node.name.value
        if details[0].fragment_variable_values is not None:
            raise Unplanned("fragment variables")
        if name == "__typename":
            typename = parent_type.name

            def run_typename(source: Any, parent_path: Any, executor: Any) -> Any:
                return typename
            return run_typename
        if name.startswith("__"):
            raise Unplanned(f"introspection ({name})")
        field_def = self.schema.get_field(parent_type, name)
        if field_def is None:
            raise Unplanned(f"unknown field {parent_type.name}.{name}")
        nodes = [detail.node for detail in details]
        return_type = field_def.type
        message = f"Cannot return null for non-nullable field {parent_type}.{name}."
        complete, needs_path = self._complete(return_type, details, field_def, nodes, parent_type, message)
        parent_name = parent_type.name
        resolve = field_def.resolve
        if resolve is None:
            raise Unplanned("a field without a resolver")  # strawberry gives every field one

        # The arguments: decided once when no variable is used and the values are immutable.
        takes_arguments = bool(field_def.args or node.arguments)
        constant_args: dict[str, Any] | None = None
        if takes_arguments and not _uses_variables(node):
            try:
                values = get_argument_values(field_def, node, self.variable_values)
            except GraphQLError:
                values = None  # graphql-core's error, at run time, as a field error
            if values is not None and all(isinstance(v, _IMMUTABLE) for v in values.values()):
                constant_args = values

        definition = (field_def.extensions or {}).get("strawberry-definition")
        resolver = getattr(definition, "base_resolver", None)
        get: Callable[[Any], Any] | None = None
        if definition is not None and not takes_arguments and not definition.extensions:
            if resolver is None and getattr(resolve, "_is_default", False) and definition.is_basic_field:
                # A basic field: the attribute, as strawberry's _get_basic_result reads it.
                attribute = definition.python_name
                default_resolver = definition.default_resolver
                if default_resolver is getattr:
                    def get(source: Any) -> Any:
                        return getattr(source, attribute)
                else:
                    def get(source: Any) -> Any:
                        return default_resolver(source, attribute)
            elif (resolver is not None and not resolver.arguments and resolver.info_parameter is None
                  and resolver.root_parameter is None and resolver.parent_parameter is None
                  and callable(resolver.wrapped_func)):
                # A plain method, as strawberry's get_arguments and get_result call it.
                function = resolver.wrapped_func
                if resolver.self_parameter is not None:
                    get = function
                else:
                    def get(source: Any) -> Any:
                        return function()

        call = None if get is not None else self._info_call(definition, resolver, takes_arguments, constant_args)
        if get is None:
            self._impure(depth)  # a resolver given info or arguments may read the request
        if call is not None:
            info_class, info_name, with_self, kwargs_of, method = call

            # Strawberry's resolver without its per-call steps: its Info over graphql-core's resolve info,
            # the arguments it would convert (none, or constant scalars converted once), the method called.
            def run_with_info(source: Any, parent_path: Any, executor: Any) -> Any:
                path = Path(parent_path, key, parent_name)
                try:
                    kwargs = dict(kwargs_of) if kwargs_of else {}
                    kwargs[info_name] = info_class(
                        _raw_info=executor.build_resolve_info(field_def, nodes, parent_type, path), _field=definition)
                    value = method(source, **kwargs) if with_self else method(**kwargs)
                    return _resolved(value, complete, return_type, details, path, executor)
                except Exception as raw_error:
                    executor.handle_field_error(raw_error, return_type, details, path)
                    return None
            return run_with_info

        if get is not None and not needs_path and _sync_leaf(return_type):
            read = get

            # A leaf of a built-in scalar or an enum: its completion is never awaitable (run_direct's
            # steps, less that check and the path, made only for an error or an awaitable value).
            def run_leaf(source: Any, parent_path: Any, executor: Any) -> Any:
                try:
                    value = read(source)
                    if type(value) in _PLAIN or not _awaitable(value):
                        return complete(value, None, executor)
                    return _complete_awaitable(value, complete, return_type, details,
                                               Path(parent_path, key, parent_name), executor)
                except Exception as raw_error:
                    executor.handle_field_error(raw_error, return_type, details, Path(parent_path, key, parent_name))
                    return None
            return run_leaf

        if get is not None:
            direct = get

            def run_direct(source: Any, parent_path: Any, executor: Any) -> Any:
                path = Path(parent_path, key, parent_name) if needs_path else None
                try:
                    value = direct(source)
                    if _awaitable(value):
                        return _complete_awaitable(value, complete, return_type, details,
                                                   path or Path(parent_path, key, parent_name), executor)
                    completed = complete(value, path, executor)
                    if _awaitable(completed):
                        return _await_completed(completed, return_type, details,
                                                path or Path(parent_path, key, parent_name), executor)
                except Exception as raw_error:
                    executor.handle_field_error(raw_error, return_type, details, path or Path(parent_path, key, parent_name))
                    return None
                return completed
            return run_direct

        # Strawberry's resolver, as graphql-core calls it: with the resolve info and the arguments.
        def run_resolver(source: Any, parent_path: Any, executor: Any) -> Any:
            path = Path(parent_path, key, parent_name)
            info = executor.build_resolve_info(field_def, nodes, parent_type, path)
            try:
                if constant_args is not None:
                    args = constant_args
                elif takes_arguments:
                    args = get_argument_values(field_def, node, executor.variable_values)
                else:
                    args = {}
                return _resolved(resolve(source, info, **args), complete, return_type, details, path, executor)
            except Exception as raw_error:
                executor.handle_field_error(raw_error, return_type, details, path)
                return None
        return run_resolver

    def _info_call(self, definition: Any, resolver: Any, takes_arguments: bool,
                   constant_args: dict[str, Any] | None) -> tuple[Any, str, bool, dict[str, Any], Any] | None:
        """How to call a resolver that takes strawberry's Info (and self, and no other root or parent),
        on a field without field extensions, in a schema without exception handlers, whose arguments are
        none or constants of the built-in scalars (strawberry's get_arguments passes those unchanged):
        (the Info class, the Info parameter's name, whether it takes self, the keyword arguments, the
        function). None: through strawberry's resolver."""
        strawberry_schema = self.strawberry_schema
        if (strawberry_schema is None or definition is None or resolver is None or definition.extensions
                or resolver.info_parameter is None or resolver.root_parameter is not None
                or resolver.parent_parameter is not None or not callable(resolver.wrapped_func)):
            return None
        converter = getattr(strawberry_schema, "schema_converter", None)
        if converter is None or getattr(converter, "_exception_handler_specs", True):
            return None
        config = strawberry_schema.config
        kwargs: dict[str, Any] = {}
        if takes_arguments:
            if constant_args is None or not all(_builtin_scalar(a.type) for a in definition.arguments):
                return None
            try:
                kwargs = convert_arguments(constant_args, definition.arguments,
                                           scalar_registry=converter.scalar_registry, config=config, info=None)
            except Exception:  # strawberry's error, at run time, as a field error
                return None
            if not all(isinstance(v, _IMMUTABLE) for v in kwargs.values()):
                return None
        return (config.info_class, resolver.info_parameter.name, resolver.self_parameter is not None, kwargs,
                resolver.wrapped_func)

    def _complete(self, return_type: GraphQLOutputType, details: list[FieldDetails], field_def: Any,
                  nodes: list[FieldNode], parent_type: GraphQLObjectType, message: str) -> tuple[Complete, bool]:
        """How a value of the type is completed, and whether that needs the value's path (for more
        than an error: a list's items, an object's fields)."""
        if is_non_null_type(return_type):
            assert isinstance(return_type, GraphQLNonNull)
            inner, needs_path = self._complete(return_type.of_type, details, field_def, nodes, parent_type, message)
            return _non_null(inner, message, return_type.of_type), needs_path
        if is_list_type(return_type):
            assert isinstance(return_type, GraphQLList)
            return self._list(return_type, details, field_def, nodes, parent_type, message), True
        if is_leaf_type(return_type):
            return _leaf(return_type), False
        if is_abstract_type(return_type):
            return self._abstract(return_type, details, field_def, nodes, parent_type), True
        if is_object_type(return_type):
            assert isinstance(return_type, GraphQLObjectType)
            return self._object(return_type, details), True
        raise Unplanned(f"an output type {return_type}")

    def _list(self, return_type: GraphQLList, details: list[FieldDetails], field_def: Any, nodes: list[FieldNode],
              parent_type: GraphQLObjectType, message: str) -> Complete:
        """Executor.complete_list_value and complete_iterable_value."""
        item_type = return_type.of_type
        inner, inner_needs_path = self._complete(item_type, details, field_def, nodes, parent_type, message)
        not_iterable = (f"Expected Iterable, but did not find one for field '{parent_type}.{field_def_name(nodes)}'.")

        def complete_list(value: Any, path: Any, executor: Any) -> Any:
            if isinstance(value, Exception):
                raise value
            if value is None:
                return None
            if executor.is_async_iterable(value):
                info = executor.build_resolve_info(field_def, nodes, parent_type, path)
                return executor.complete_list_value(return_type, details, info, path, value, None)
            if not is_iterable(value):
                raise GraphQLError(not_iterable)
            out: list[Any] = []
            pending: list[int] = []
            iterator = iter(value)
            index = 0
            try:
                for item in iterator:
                    item_path = path.add_key(index, None) if inner_needs_path else None
                    if _awaitable(item):
                        out.append(_complete_awaitable(item, inner, item_type, details,
                                                       item_path or path.add_key(index, None), executor))
                        pending.append(index)
                    else:
                        try:
                            completed = inner(item, item_path, executor)
                            if _awaitable(completed):
                                out.append(_await_completed(completed, item_type, details,
                                                            item_path or path.add_key(index, None), executor))
                                pending.append(index)
                            else:
                                out.append(completed)
                        except Exception as raw_error:
                            executor.handle_field_error(raw_error, item_type, details,
                                                        item_path or path.add_key(index, None))
                            out.append(None)
                    index += 1
            except Exception:
                maybe_awaitables = [out[i] for i in pending]
                maybe_awaitables.extend(collect_iterator_awaitables(iterator, executor.is_awaitable))
                if maybe_awaitables:
                    executor.settle_in_background(maybe_awaitables)
                raise
            if not pending:
                return out
            return _gather_items(out, pending)
        return complete_list

    def _abstract(self, return_type: Any, details: list[FieldDetails], field_def: Any, nodes: list[FieldNode],
                  parent_type: GraphQLObjectType) -> Complete:
        """Executor.complete_abstract_value."""
        self._impure()
        plans = {possible.name: self._object(possible, details) for possible in self.schema.get_possible_types(return_type)}
        resolve_type = return_type.resolve_type

        async def complete_later(runtime_type: Any, value: Any, path: Any, info: Any, executor: Any) -> Any:
            object_type = executor.ensure_valid_runtime_type(await runtime_type, return_type, details, info, value)
            completed = plans[object_type.name](value, path, executor)
            if _awaitable(completed):
                return await completed
            return completed

        def complete_abstract(value: Any, path: Any, executor: Any) -> Any:
            if isinstance(value, Exception):
                raise value
            if value is None:
                return None
            info = executor.build_resolve_info(field_def, nodes, parent_type, path)
            runtime_type = (resolve_type or executor.type_resolver)(value, info, return_type)
            if _awaitable(runtime_type):
                return complete_later(runtime_type, value, path, info, executor)
            object_type = executor.ensure_valid_runtime_type(runtime_type, return_type, details, info, value)
            return plans[object_type.name](value, path, executor)
        return complete_abstract

    def _object(self, object_type: GraphQLObjectType, details: list[FieldDetails]) -> Complete:
        """Executor.complete_object_value, with the sub-fields collected once."""
        grouped, _defers, _forbidden = collect_subfields(
            self.schema, self.fragments, self.variable_values, self.operation, object_type, details)
        execute_fields = self._fields(object_type, grouped)
        is_type_of = object_type.is_type_of
        if is_type_of is not None and "_get_is_type_of" not in getattr(is_type_of, "__qualname__", ""):
            raise Unplanned(f"{object_type.name} has an is_type_of of its own")  # strawberry's reads no info

        def complete_object(value: Any, path: Any, executor: Any) -> Any:
            if isinstance(value, Exception):
                raise value
            if value is None:
                return None
            if is_type_of is not None and not is_type_of(value, None):  # type: ignore[arg-type]
                raise invalid_return_type_error(object_type, value, details)
            return execute_fields(value, path, executor)
        return complete_object


def _sync_leaf(return_type: Any) -> bool:
    """A (non-null) built-in scalar or enum: graphql-core's completion of it returns a plain value."""
    named = return_type.of_type if isinstance(return_type, GraphQLNonNull) else return_type
    return named in _BUILTIN_SCALARS or isinstance(named, GraphQLEnumType)


def _builtin_scalar(type_: Any) -> bool:
    """A strawberry argument type whose values strawberry's convert_argument returns as they are."""
    if isinstance(type_, StrawberryOptional):
        type_ = type_.of_type
    return type_ in (int, str, float, bool)


def field_def_name(nodes: list[FieldNode]) -> str:
    return nodes[0].name.value


def _uses_variables(node: Any) -> bool:
    found = False

    class Finder(Visitor):
        def enter_variable(self, *_args: Any) -> Any:
            nonlocal found
            found = True
            return Visitor.BREAK

    for argument in node.arguments or ():
        visit(argument, Finder())
    return found


def _document_facts(document: DocumentNode) -> tuple[tuple[str, ...], str | None]:
    """The variables @skip and @include read (their values are part of a plan's key), and why the
    document cannot be planned (None: it can)."""
    names: set[str] = set()
    problem: str | None = None

    class Walker(Visitor):
        def enter_directive(self, node: DirectiveNode, *_args: Any) -> Any:
            nonlocal problem
            if node.name.value not in _DIRECTIVES:
                problem = f"directive @{node.name.value}"
                return Visitor.BREAK
            for argument in node.arguments or ():
                if isinstance(argument.value, VariableNode):
                    names.add(argument.value.name.value)
            return None

        def enter_field(self, node: FieldNode, *_args: Any) -> Any:
            nonlocal problem
            if node.name.value in ("__schema", "__type"):
                problem = "introspection"
                return Visitor.BREAK
            return None

    visit(document, Walker())
    return tuple(sorted(names)), problem


class PlanCache:
    """Plans by (query, operation name, values of the @skip/@include variables); least recently used
    dropped beyond `size`. A document that cannot be planned is remembered as such (None)."""

    def __init__(self, size: int = PLAN_CACHE_SIZE) -> None:
        self.size = size
        self._facts: OrderedDict[str, tuple[tuple[str, ...], str | None]] = OrderedDict()
        self._plans: OrderedDict[tuple[Any, ...], Callable[[Any, Any, Any], Any] | None] = OrderedDict()

    def facts(self, query: str, document: DocumentNode) -> tuple[tuple[str, ...], str | None]:
        facts = self._facts.get(query)
        if facts is None:
            facts = _document_facts(document)
            self._facts[query] = facts
            if len(self._facts) > self.size:
                self._facts.popitem(last=False)
        else:
            self._facts.move_to_end(query)
        return facts

    def get(self, key: tuple[Any, ...]) -> Any:
        plan = self._plans.get(key, _MISSING)
        if plan is not _MISSING:
            self._plans.move_to_end(key)
        return plan

    def put(self, key: tuple[Any, ...], plan: Callable[[Any, Any, Any], Any] | None) -> None:
        self._plans[key] = plan
        if len(self._plans) > self.size:
            self._plans.popitem(last=False)

    def __len__(self) -> int:
        return len(self._plans)


_MISSING = object()


async def planned_result(schema: Any, ctx: Any, cache: PlanCache) -> ExecutionResult | None:
    """The result of the operation by its plan, or None: graphql-core is to execute it."""
    document = ctx.graphql_document
    query = ctx.query
    if document is None or query is None or ctx.operation_type is not StrawberryOperationType.QUERY:
        return None
    prepared = prepared_plan(schema, document, query, ctx.operation_name, ctx.variables, ctx.root_value, ctx.context,
                             ctx.operation_extensions, cache)
    if prepared is None:
        STATS.unplanned += 1
        return None
    return await run_plan(*prepared, ctx.root_value)


def prepared_plan(schema: Any, document: DocumentNode, query: str, operation_name: str | None, variables: Any,
                  root_value: Any, context: Any, operation_extensions: Any,
                  cache: PlanCache) -> tuple[Callable[[Any, Any, Any], Any], Any] | None:
    """The plan of a query's operation (built once and kept) and graphql-core's executor for this request,
    or None: graphql-core is to execute it."""
    variable_names, problem = cache.facts(query, document)
    if problem is not None:
        return None
    # graphql-core's executor for this request, built as graphql-core's execute builds it (strawberry passes
    # these arguments): the resolve infos, leaf completion and error collection are its own.
    executor = schema.execution_context_class.build(
        schema._schema, document, root_value, context, variables, operation_name,
        is_awaitable=optimized_is_awaitable, operation_extensions=operation_extensions,
    )
    if isinstance(executor, list):  # no such operation, or variables that do not coerce: graphql-core says so
        return None
    coerced = executor.variable_values.coerced
    key = (query, operation_name, tuple(coerced.get(name) for name in variable_names))
    plan = cache.get(key)
    if plan is _MISSING:
        try:
            if executor.operation.directives:
                raise Unplanned("an operation with directives")
            plan = Planner(schema._schema, executor, schema).root()
            STATS.plans_built += 1
        except Unplanned as exc:
            log.debug("not planned: %s", exc)
            plan = None
        cache.put(key, plan)
    if plan is None:
        return None
    return plan, executor


async def run_plan(plan: Callable[[Any, Any, Any], Any], executor: Any, root_value: Any) -> ExecutionResult:
    """A prepared plan run: Executor.execute_operation, where an error that reaches the root nulls the data."""
    STATS.planned += 1
    try:
        data = plan(root_value, None, executor)
        if _awaitable(data):
            data = await data
    except GraphQLError as error:
        executor.collected_errors.add(error, None)
        data = None
    return executor.build_response(data)


async def execute_ready(schema: Any, document: DocumentNode, query: str, operation_name: str | None, variables: Any,
                        context: Any, extensions: dict[str, Any] | None) -> StrawberryExecutionResult | None:
    """A query the view keeps ready (kernelindex.web.app: the same document, operation and no variables
    were answered by their plan before, so every check before execution passed and will pass again)
    answered as strawberry's execution answers it, without its extension hooks: the operation's
    connection taken and given back as SessionConnection takes it (kernelindex.graphql.session), the plan
    run as PlannedExecution runs it, the errors reported as ErrorPolicy reports them, the result's
    `extensions` those of the earlier answer (QueryCost's: the cost of this document without variables).
    None, before anything ran: no plan now (graphql-core is to execute it, through strawberry)."""
    prepared = prepared_plan(schema, document, query, operation_name, variables, None, context, None,
                             plan_cache(schema._schema))
    if prepared is None:
        return None
    STATS.ready += 1
    context.state.read_only = True
    refusal, autocommit = await take_connection(context)
    result: Any = refusal
    failed = True
    try:
        if result is None:
            try:
                result = await run_plan(*prepared, None)
            except Exception as exc:  # as strawberry's execute reports what escaped execution, unreported
                return PreExecutionError(data=None, errors=[_coerce_error(exc)], extensions=extensions)
        failed = bool(result.errors)
    finally:
        await release_connection(context.session, autocommit=autocommit, failed=failed)
    report_errors(result, context)
    return StrawberryExecutionResult(data=result.data, errors=result.errors, extensions=extensions)


# One cache per schema: a plan holds the field definitions (and so the resolvers) of the schema it was built for.
_CACHES: WeakKeyDictionary[GraphQLSchema, PlanCache] = WeakKeyDictionary()


def plan_cache(schema: GraphQLSchema) -> PlanCache:
    cache = _CACHES.get(schema)
    if cache is None:
        cache = _CACHES[schema] = PlanCache()
    return cache


class PlannedExecution(SchemaExtension):
    """Answers a query by its plan before graphql-core would execute it (strawberry skips execution
    when an extension has set the result). Placed after the extensions that refuse an operation
    (text inputs, cost, subscriptions over HTTP) and after the session's connection is taken."""

    async def on_execute(self) -> AsyncIterator[None]:
        ctx = self.execution_context
        if ctx.result is None:
            result = await planned_result(ctx.schema, ctx, plan_cache(ctx.schema._schema))
            if result is not None:
                ctx.result = result
                ctx.context.state.planned = ctx.graphql_document  # (kernelindex.web.app keeps it ready)
        yield
