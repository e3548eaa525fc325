"""`Query.runs` written from its rows, without an object per run (issue 27, point 5).

The general plan (kernelindex.graphql.plan) answers `runs` as graphql-core would: the resolver reads
every column of the page's runs and their six dimensions through SQLAlchemy, makes RunFacts, a Run and
its Implementation, Environment, Hardware, Protocol and Source objects per row and an Edge per run, and
the plan completes each selected field of each. For a page of 16 that was most of the request's time.

Here a `runs` field whose selection this module knows (the connection's `edges { cursor node }`,
`pageInfo` and `__typename`; the run's plain fields; its implementation, environment and hardware with
their plain fields; at any aliases, fragments and @skip/@include the plan resolved) is planned as:
the resolver's own checks of its arguments (queries.runs.runs_arguments), the page's statement for
those arguments built once and kept (the same filters, order and keyset as the resolver's, with only the
columns the known fields read), run on the session's connection as the driver's one prepared statement,
and each row written straight into the response's dicts: each value made by the very functions the Run
object's fields are made by (the facts' readable figures and std, the global ids, the enums, the
cursors) and completed by the plan's own completion of its field (the rounding of Floats, the enums'
names, the non-null checks).

Whatever this path does not know it leaves to the general plan of the same field, for that request:
arguments that do not check or a filter on the clock (`stale`), an empty page (the resolver then tells
an unknown name from no runs), a value whose completion fails (a null in a non-null field), a statement
that fails. The general plan then gives the answer (or error) graphql-core gives. The differential test
(tests/api/test_planned_execution.py) holds the two paths to the same bytes.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from datetime import UTC, datetime
from enum import Enum
from functools import lru_cache
from typing import Any, TypeVar

from graphql import GraphQLEnumType, GraphQLError, GraphQLFloat, GraphQLID, GraphQLNonNull, GraphQLObjectType, get_named_type
from graphql.execution.collect_fields import FieldDetails, collect_subfields
from graphql.execution.values import get_argument_values
from graphql.pyutils import Path
from sqlalchemy import Select, null, select
from strawberry.execution.is_awaitable import optimized_is_awaitable
from strawberry.types.arguments import convert_arguments

from kernelindex.db.models import Environment as EnvironmentRow
from kernelindex.db.models import Hardware as HardwareRow
from kernelindex.db.models import Implementation as ImplementationRow
from kernelindex.db.models import Protocol as ProtocolRow
from kernelindex.db.models import Run as RunRow
from kernelindex.graphql.enums import (
    Evidence,
    FigureUnit,
    ImplementationRole,
    Metric,
    RunOrder,
    RunStatus,
    SourceAvailability,
    of_rules,
)
from kernelindex.graphql.errors import UserInputError
from kernelindex.graphql.node import to_global_id
from kernelindex.graphql.pagination import Window, cursor_encoder, narrow_page_statement
from kernelindex.graphql.queries.runs import KEYS, ORDERS, runs_arguments
from kernelindex.rules.instants import as_utc
from kernelindex.rules.measurements import MAX_COMPILE_TIME_MS, readable
from kernelindex.services.facts import readable_std
from kernelindex.services.run_filters import FilterError, RunFilters, check_names

# The columns the page's statement reads (labels: the row's names), and how each known field's value is
# made from a row, as the Run (Implementation, Environment, Hardware) object's field holds it.
_COLUMNS = (
    RunRow.id, RunRow.mean_ms, RunRow.std_ms, RunRow.min_ms, RunRow.max_ms, RunRow.median_ms, RunRow.p5_ms,
    RunRow.p95_ms, RunRow.num_trials, RunRow.compile_time_ms, RunRow.observed_at, RunRow.evidence, RunRow.status,
    RunRow.superseded_at, RunRow.retracted_at, RunRow.figure, RunRow.figure_low, RunRow.figure_high,
    RunRow.low_quantile, RunRow.high_quantile, RunRow.source_speedup, RunRow.upstream_id, RunRow.claimed_evidence,
    ImplementationRow.id.label("implementation_id"), ImplementationRow.slug.label("implementation_slug"),
    ImplementationRow.title.label("implementation_title"),
    EnvironmentRow.id.label("environment_id"), EnvironmentRow.label.label("environment_label"),
    EnvironmentRow.provider.label("environment_provider"),
    HardwareRow.id.label("hardware_id"), HardwareRow.sku.label("hardware_sku"),
    HardwareRow.short_name.label("hardware_short_name"), HardwareRow.family.label("hardware_family"),
    # Read only to be checked (_check): the general path makes these enums of every run on a page.
    ImplementationRow.role.label("implementation_role"),
    ImplementationRow.source_availability.label("implementation_source_availability"),
    ProtocolRow.metric.label("protocol_metric"), ProtocolRow.unit.label("protocol_unit"),
)
_Row = namedtuple("_Row", [c.key for c in _COLUMNS])  # type: ignore[misc]  # the names are the columns'

Get = Callable[[Any], Any]
E = TypeVar("E", bound=Enum)
_INF = float("inf")
# Argument values kept between requests must not be shared mutable objects.
_IMMUTABLE = (str, int, float, bool, type(None), Enum, datetime)


def _member(enum: type[E]) -> Callable[[Any], E]:
    """of_rules(enum, value), by a look-up first: the member of each value the enum has (what Enum's own
    call finds first), of_rules (and its error) for any other value."""
    members = {member.value: member for member in enum}

    def member(value: Any) -> E:
        try:
            found = members.get(value)
        except TypeError:  # unhashable: not a value of the enum
            found = None
        return found if found is not None else of_rules(enum, value)
    return member


_EVIDENCE, _STATUS = _member(Evidence), _member(RunStatus)
_CHECKS = (_STATUS, _EVIDENCE, _member(Metric), _member(FigureUnit), _member(ImplementationRole), _member(SourceAvailability))


RUN_FIELDS: dict[str, Get] = {  # as Run.__init__ makes them from run_facts' values
    "id": lambda r: to_global_id("Run", r.id),
    "databaseId": lambda r: r.id,
    "meanMs": lambda r: readable(r.mean_ms),
    "stdMs": lambda r: readable_std(r.std_ms, r.min_ms, r.max_ms, r.mean_ms, r.num_trials),
    "minMs": lambda r: readable(r.min_ms),
    "maxMs": lambda r: readable(r.max_ms),
    "medianMs": lambda r: readable(r.median_ms),
    "p5Ms": lambda r: readable(r.p5_ms),
    "p95Ms": lambda r: readable(r.p95_ms),
    "numTrials": lambda r: r.num_trials,
    "compileTimeMs": lambda r: readable(r.compile_time_ms, 0.0, MAX_COMPILE_TIME_MS),
    "observedAt": lambda r: as_utc(r.observed_at),
    "observedDate": lambda r: as_utc(r.observed_at).date(),
    "evidence": lambda r: _EVIDENCE(r.evidence),
    "claimedEvidence": lambda r: None if r.claimed_evidence is None else _EVIDENCE(r.claimed_evidence),
    "status": lambda r: _STATUS(r.status),
    "superseded": lambda r: r.superseded_at is not None,
    "retracted": lambda r: r.retracted_at is not None,
    "figure": lambda r: readable(r.figure),
    "figureLow": lambda r: readable(r.figure_low),
    "figureHigh": lambda r: readable(r.figure_high),
    "lowQuantile": lambda r: r.low_quantile,
    "highQuantile": lambda r: r.high_quantile,
    "sourceSpeedup": lambda r: r.source_speedup,
    "upstreamId": lambda r: r.upstream_id or None,
}
IMPLEMENTATION_FIELDS: dict[str, Get] = {
    "id": lambda r: to_global_id("Implementation", r.implementation_id),
    "databaseId": lambda r: r.implementation_id,
    "slug": lambda r: r.implementation_slug,
    "title": lambda r: r.implementation_title,
}
ENVIRONMENT_FIELDS: dict[str, Get] = {
    "id": lambda r: to_global_id("Environment", r.environment_id),
    "databaseId": lambda r: r.environment_id,
    "label": lambda r: r.environment_label,
    "provider": lambda r: r.environment_provider,
}
HARDWARE_FIELDS: dict[str, Get] = {
    "id": lambda r: to_global_id("Hardware", r.hardware_id),
    "databaseId": lambda r: r.hardware_id,
    "sku": lambda r: r.hardware_sku,
    "shortName": lambda r: r.hardware_short_name,
    "family": lambda r: r.hardware_family,
}


def _reads(get: Get) -> set[str]:
    """The row's columns a field's function reads: the attribute names its code uses that are columns
    (each function above reads the row's attributes itself, `r.<column>`)."""
    return set(get.__code__.co_names) & set(_Row._fields)


# Read for every page whatever it shows: the order's keys (queries.runs.KEYS) and what _check checks.
_ALWAYS_READ = frozenset({"id", "figure", "observed_at", "status", "evidence", "claimed_evidence", "protocol_metric",
                          "protocol_unit", "implementation_role", "implementation_source_availability"})
assert all(_reads(get) for fields in (RUN_FIELDS, IMPLEMENTATION_FIELDS, ENVIRONMENT_FIELDS, HARDWARE_FIELDS)
           for get in fields.values())
assert _ALWAYS_READ <= set(_Row._fields)
# The objects under a run this path writes, with their fields and theirs.
_OBJECTS: dict[tuple[str, str], dict[str, Get]] = {
    ("Run", "implementation"): IMPLEMENTATION_FIELDS,
    ("Run", "environment"): ENVIRONMENT_FIELDS,
    ("Environment", "hardware"): HARDWARE_FIELDS,
}
_LEAVES = {"Run": RUN_FIELDS, "Implementation": IMPLEMENTATION_FIELDS, "Environment": ENVIRONMENT_FIELDS,
           "Hardware": HARDWARE_FIELDS}


def _check(row: Any) -> None:
    """Raises where the general path fails on this row whatever is selected: it makes a Run (with its
    Implementation and Protocol) of every run on the page, and with it every enum of their stored values
    and the run's instant in UTC. A page with such a run is left to it (and its error)."""
    values = (row.status, row.evidence, row.claimed_evidence, row.protocol_metric, row.protocol_unit,
              row.implementation_role, row.implementation_source_availability)
    if values not in _CHECKED:
        status, evidence, metric, unit, role, availability = _CHECKS
        status(row.status)
        evidence(row.evidence)
        if row.claimed_evidence is not None:
            evidence(row.claimed_evidence)
        metric(row.protocol_metric)
        unit(row.protocol_unit)
        role(row.implementation_role)
        availability(row.implementation_source_availability)
        if len(_CHECKED) < _CHECKED_SIZE:
            _CHECKED.add(values)
    as_utc(row.observed_at).date()


# The stored enum values found good (a few combinations: each is checked once per process).
_CHECKED: set[tuple[Any, ...]] = set()
_CHECKED_SIZE = 4096


class Stats:
    """What this path did in this process (the differential test reads it)."""

    def __init__(self) -> None:
        self.written = 0      # pages written from their rows
        self.fallbacks = 0    # requests of a written selection left to the general plan


STATS = Stats()


class NotWritten(Exception):
    """This selection is not one this module writes: the general plan answers it."""


class _FieldError(Exception):
    """The resolver's own error for these arguments: the field's error, as graphql-core reports it."""

    def __init__(self, error: GraphQLError) -> None:
        super().__init__(error.message)
        self.error = error


class _NotDriverSQL(Exception):
    """A statement the driver cannot take as SQLAlchemy compiled it (parameters expanded at execution)."""


class _Fallback(Exception):
    """This request's page is left to the general plan."""


# A writer: (row, executor) -> the completed dict of one object. Raises where a value does not complete.
Writer = Callable[[Any, Any], dict[str, Any]]


def _field_steps(planner: Any, object_type: GraphQLObjectType,
                 details: list[FieldDetails]) -> list[tuple[str, str, list[FieldDetails]]]:
    """The fields of an object's selection as this module writes them: (response key, field name, the
    field's merged details), in the selection's order. NotWritten: a field with arguments."""
    grouped, _defers, _forbidden = collect_subfields(
        planner.schema, planner.fragments, planner.variable_values, planner.operation, object_type, details)
    fields = []
    for key, field_details in grouped.items():
        node = field_details[0].node
        if field_details[0].fragment_variable_values is not None or node.arguments:
            raise NotWritten(f"{object_type.name}.{node.name.value} with arguments")
        fields.append((key, node.name.value, field_details))
    return fields


def _object_writer(planner: Any, object_type: GraphQLObjectType, details: list[FieldDetails], reads: set[str]) -> Writer:
    """How one object (a run, or an object under it) is written from a row: its fields in the
    selection's order, each value made and completed as the general plan completes that field. The
    columns its fields read are added to `reads`."""
    leaves = _LEAVES[object_type.name]
    steps: list[tuple[str, Any, Any]] = []  # (key, get or a constant, complete or a writer or None)
    for key, name, field_details in _field_steps(planner, object_type, details):
        if name == "__typename":
            steps.append((key, object_type.name, None))
            continue
        field_def = object_type.fields.get(name)
        if field_def is None:
            raise NotWritten(f"unknown field {object_type.name}.{name}")
        inner = _OBJECTS.get((object_type.name, name))
        if inner is not None:
            child_type = field_def.type.of_type if isinstance(field_def.type, GraphQLNonNull) else field_def.type
            if not isinstance(field_def.type, GraphQLNonNull) or not isinstance(child_type, GraphQLObjectType):
                raise NotWritten(f"{object_type.name}.{name} is not a non-null object")
            steps.append((key, None, _object_writer(planner, child_type, field_details, reads)))
            continue
        get = leaves.get(name)
        if get is None:
            raise NotWritten(f"{object_type.name}.{name} is not written here")
        reads.update(_reads(get))
        message = f"Cannot return null for non-nullable field {object_type}.{name}."
        complete, _needs_path = planner._complete(field_def.type, field_details, field_def,
                                                  [d.node for d in field_details], object_type, message)
        steps.append((key, get, _leaf_completion(planner, field_def.type, complete)))

    return _compiled_writer(steps)


def _compiled_writer(steps: list[tuple[str, Any, Any]]) -> Writer:
    """One function writing the object's dict in one display, its keys and values in the steps' order
    (Python evaluates a dict display's keys and values left to right): for each step, a constant
    (__typename), an object under this one written from the same row, or a leaf's value made and
    completed. The names in the source are only indexes; every key and function is passed by value."""
    namespace: dict[str, Any] = {}
    parts = []
    for index, (key, get, complete) in enumerate(steps):
        namespace[f"k{index}"] = key
        if complete is None:
            namespace[f"t{index}"] = get
            parts.append(f"k{index}: t{index}")
        elif get is None:
            namespace[f"w{index}"] = complete
            parts.append(f"k{index}: w{index}(row, executor)")
        else:
            namespace[f"g{index}"], namespace[f"c{index}"] = get, complete
            parts.append(f"k{index}: c{index}(g{index}(row), executor)")
    source = "def write(row, executor):\n    return {" + ", ".join(parts) + "}\n"
    exec(compile(source, "<kernelindex.graphql.runs_page writer>", "exec"), namespace)
    write: Writer = namespace["write"]
    return write


def _leaf_completion(planner: Any, field_type: Any, complete: Any) -> Callable[[Any, Any], Any]:
    """The plan's completion of a leaf field (`complete`), with the values it returns without a call
    taken first: a finite float of a Float, where the schema's execution rounds them (RoundedFloats, whose
    float_rounding it names: graphql-core's Float coerces a finite float to itself, then it is rounded); a str of an ID
    (graphql-core's ID coerces a str to itself); an enum member as its completion was the first time
    (an enum's coercion of a member is its name, the same every time)."""
    named = field_type.of_type if isinstance(field_type, GraphQLNonNull) else field_type
    rounding = getattr(planner.executor_class, "float_rounding", None)  # the schema's RoundedFloats
    if named is GraphQLFloat and rounding is not None:
        def complete_float(value: Any, executor: Any) -> Any:
            if type(value) is float and -_INF < value < _INF:
                return rounding(value)
            return complete(value, None, executor)
        return complete_float
    if named is GraphQLID:
        def complete_id(value: Any, executor: Any) -> Any:
            return value if type(value) is str else complete(value, None, executor)
        return complete_id
    if isinstance(named, GraphQLEnumType):
        completed: dict[Any, Any] = {}

        def complete_enum(value: Any, executor: Any) -> Any:
            if isinstance(value, Enum):
                found = completed.get(value)
                if found is None:
                    found = complete(value, None, executor)
                    if found is not None:
                        completed[value] = found
                return found
            return complete(value, None, executor)
        return complete_enum

    def complete_leaf(value: Any, executor: Any) -> Any:
        return complete(value, None, executor)
    return complete_leaf


def _edge_writer(planner: Any, edge_type: GraphQLObjectType, details: list[FieldDetails],
                 run_type: GraphQLObjectType, reads: set[str]) -> Callable[[Any, str, Any], dict[str, Any]]:
    steps: list[tuple[str, str, Any]] = []
    for key, name, field_details in _field_steps(planner, edge_type, details):
        if name == "__typename":
            steps.append((key, "typename", edge_type.name))
        elif name == "cursor":
            steps.append((key, "cursor", None))
        elif name == "node":
            steps.append((key, "node", _object_writer(planner, run_type, field_details, reads)))
        else:
            raise NotWritten(f"{edge_type.name}.{name}")

    namespace: dict[str, Any] = {}
    parts = []
    for index, (key, what, value) in enumerate(steps):  # as _compiled_writer, with the edge's cursor
        namespace[f"k{index}"], namespace[f"v{index}"] = key, value
        parts.append(f"k{index}: " + {"node": f"v{index}(row, executor)", "cursor": "cursor"}.get(what, f"v{index}"))
    source = "def write(row, cursor, executor):\n    return {" + ", ".join(parts) + "}\n"
    exec(compile(source, "<kernelindex.graphql.runs_page edge writer>", "exec"), namespace)
    write: Callable[[Any, str, Any], dict[str, Any]] = namespace["write"]
    return write


_PAGE_INFO = {"hasNextPage": 0, "hasPreviousPage": 1, "startCursor": 2, "endCursor": 3}


def _page_info_writer(planner: Any, page_info_type: GraphQLObjectType,
                      details: list[FieldDetails]) -> Callable[[tuple[Any, ...]], dict[str, Any]]:
    steps: list[tuple[str, int | str]] = []
    for key, name, _field_details in _field_steps(planner, page_info_type, details):
        if name == "__typename":
            steps.append((key, page_info_type.name))
        elif name in _PAGE_INFO:
            steps.append((key, _PAGE_INFO[name]))
        else:
            raise NotWritten(f"{page_info_type.name}.{name}")

    def write(values: tuple[Any, ...]) -> dict[str, Any]:
        return {key: values[what] if isinstance(what, int) else what for key, what in steps}
    return write


def plan_runs(planner: Any, response_key: str, field_def: Any, details: list[FieldDetails], constant_args: dict[str, Any] | None,
              general: Callable[[Any, Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """The runner of a `Query.runs` field that writes its page from rows, falling back to `general`
    (the general plan's runner of the same field) for a request it does not answer. NotWritten: the
    selection is not one it writes."""
    connection_type = field_def.type.of_type if isinstance(field_def.type, GraphQLNonNull) else field_def.type
    if not isinstance(field_def.type, GraphQLNonNull) or not isinstance(connection_type, GraphQLObjectType):
        raise NotWritten("runs is not a non-null connection")
    definition = (field_def.extensions or {}).get("strawberry-definition")
    converter = getattr(planner.strawberry_schema, "schema_converter", None)
    if definition is None or definition.extensions or converter is None:
        raise NotWritten("runs is not strawberry's plain resolver")
    reads = set(_ALWAYS_READ)
    steps: list[tuple[str, str, Any]] = []
    for key, name, field_details in _field_steps(planner, connection_type, details):
        if name == "__typename":
            steps.append((key, "typename", connection_type.name))
        elif name == "edges":
            edge_type = get_named_type(connection_type.fields["edges"].type)
            run_type = get_named_type(edge_type.fields["node"].type)
            steps.append((key, "edges", _edge_writer(planner, edge_type, field_details, run_type, reads)))
        elif name == "pageInfo":
            steps.append((key, "pageInfo", _page_info_writer(
                planner, get_named_type(connection_type.fields["pageInfo"].type), field_details)))
        else:
            raise NotWritten(f"{connection_type.name}.{name}")
    columns = frozenset(reads)
    node = details[0].node
    return_type = field_def.type
    scalar_registry, config = converter.scalar_registry, planner.strawberry_schema.config

    # Arguments without variables are converted once (strawberry's conversion names and converts each
    # argument anew per call): kept only where every converted value is immutable.
    kept_kwargs: dict[str, Any] | None = None
    if constant_args is not None:
        try:
            converted = convert_arguments(constant_args, definition.arguments, scalar_registry=scalar_registry,
                                          config=config, info=None)
        except Exception:  # converted (and failing) per request, as strawberry's resolver does
            converted = None
        if converted is not None and all(isinstance(v, _IMMUTABLE) for v in converted.values()):
            kept_kwargs = converted

    async def write_page(executor: Any) -> dict[str, Any]:
        # The resolver's steps, in its order; an error it raises (a GraphQLError: the arguments, the
        # filters, an unknown name) is raised here as _FieldError, for the field as graphql-core reports it.
        if kept_kwargs is not None:
            kwargs = kept_kwargs
        else:
            try:
                args = constant_args if constant_args is not None else get_argument_values(
                    field_def, node, executor.variable_values)
            except GraphQLError as error:
                raise _FieldError(error) from error
            try:
                kwargs = convert_arguments(args, definition.arguments, scalar_registry=scalar_registry, config=config,
                                           info=None)
            except Exception as exc:  # strawberry's error inside its resolver: the general plan reports it
                raise _Fallback() from exc
        context = executor.context_value
        try:
            filters, window = runs_arguments(context.settings.max_page_size, **kwargs)
        except GraphQLError as error:
            raise _FieldError(error) from error
        except Exception as exc:
            raise _Fallback() from exc
        if filters.stale is not None:
            raise _Fallback()  # its statement depends on the clock
        order_by = kwargs.get("order_by", RunOrder.NEWEST)
        try:
            sql, parameters = _page_sql(filters, order_by, window, context.session.bind.dialect, columns)
        except FilterError as exc:
            raise _FieldError(UserInputError(str(exc))) from exc
        except GraphQLError as error:  # a cursor that is not this list's
            raise _FieldError(error) from error
        records = await context.session.driver_fetch(sql, parameters)
        if not records:
            # Only an empty page can hide a name that matches nothing (queries.runs.run_connection).
            try:
                await check_names(context.session, workload=filters.workload,
                                  implementation=filters.implementation, hardware=filters.hardware)
            except FilterError as exc:
                raise _FieldError(UserInputError(str(exc))) from exc
        return _page(steps, records, order_by, window, executor)

    async def run_runs(source: Any, parent_path: Any, executor: Any) -> Any:
        try:
            page = await write_page(executor)
        except _FieldError as raised:
            STATS.written += 1
            # As the general plan's runner reports a resolver's error (graphql-core's execute_field).
            executor.handle_field_error(raised.error, return_type, details, Path(parent_path, response_key, "Query"))
            return None
        except Exception:  # _Fallback, or what the general plan meets again and reports as graphql-core does
            STATS.fallbacks += 1
        else:
            STATS.written += 1
            return page
        value = general(source, parent_path, executor)
        if optimized_is_awaitable(value):
            value = await value
        return value
    return run_runs


def _page(steps: list[tuple[str, str, Any]], records: list[Any], order_by: RunOrder, window: Window,
          executor: Any) -> dict[str, Any]:
    """The connection's dict, as pagination._connection pages the rows (size + 1 of them, in the list's
    order; the extra one beyond the page's far end says more items lie there)."""
    rows = [_Row._make(record) for record in records]
    size = window.size
    more = len(rows) > size
    shown = (rows[len(rows) - size:] if more else rows) if window.backward else rows[:size]
    for row in shown:  # the general path makes a Run of each run shown (not of the extra one)
        _check(row)
    encode = cursor_encoder(f"run:{order_by.value}")
    key_of = KEYS[order_by]
    cursors = [encode(key_of(row)) for row in shown]
    page_info = (window.cursor is not None if window.backward else more,
                 more if window.backward else window.cursor is not None,
                 cursors[0] if cursors else None, cursors[-1] if cursors else None)
    out: dict[str, Any] = {}
    for key, what, value in steps:
        if what == "edges":
            out[key] = [value(row, cursor, executor) for row, cursor in zip(shown, cursors, strict=True)]
        elif what == "pageInfo":
            out[key] = value(page_info)
        else:
            out[key] = value
    return out


@lru_cache(maxsize=256)
def _page_sql(filters: RunFilters, order_by: RunOrder, window: Window, dialect: Any,
              columns: frozenset[str]) -> tuple[str, tuple[Any, ...]]:
    """The page's statement for these arguments as the driver's SQL and parameters, kept: the resolver's
    (queries.runs._statements: the same narrow list, order and keyset), selecting _COLUMNS, those not
    in `columns` (read by no field of the selection) as NULL: PostgreSQL sends and the driver decodes
    only what the page shows."""
    narrow = select(RunRow.id).where(*filters.conditions(_NO_CLOCK))
    selected = [column if column.key in columns else null().label(column.key) for column in _COLUMNS]
    statement: Select = narrow_page_statement(
        narrow, lambda page: (
            select(*selected).select_from(RunRow)
            .join(page, page.c.page_id == RunRow.id)
            .join(ImplementationRow, RunRow.implementation_id == ImplementationRow.id)
            .join(EnvironmentRow, RunRow.environment_id == EnvironmentRow.id)
            .join(HardwareRow, EnvironmentRow.hardware_id == HardwareRow.id)
            .join(ProtocolRow, RunRow.protocol_id == ProtocolRow.id)),
        id_column=RunRow.id, kind=f"run:{order_by.value}", order=ORDERS[order_by](), window=window,
    )
    compiled = statement.compile(dialect=dialect)
    if compiled.positiontup is None or "POSTCOMPILE" in compiled.string:
        raise _NotDriverSQL(compiled.string[:200])
    params = compiled.construct_params()
    processors = compiled._bind_processors
    values: list[Any] = []
    for name in compiled.positiontup:
        processor = processors.get(name)
        if processor is None:
            values.append(params[name])
        elif callable(processor):
            values.append(processor(params[name]))
        else:  # a tuple's processors: expanded at execution
            raise _NotDriverSQL(name)
    return compiled.string, tuple(values)


# Never read: RunFilters reads `now` only for `stale`, which this path leaves to the general plan.
_NO_CLOCK = datetime.min.replace(tzinfo=UTC)
