"""The GraphQL schema: the root Query composed from per-area classes, with limits and caches.

The limit rules are built once here and handed to every request through AddValidationRules: a
limiter constructed per request makes new rule classes each time, and the validation cache (keyed
by the rule classes) would then never hit. The depth and alias rules are ours (limits.py): strawberry's
walk a fragment once per spread, which fragments spreading fragments make exponential.
Validation is ours too (validation.py), to leave schema suggestions out of errors in production;
the query cost (cost.py) is measured after validation, with the variables, before execution.
A query is then answered by its plan (plan.py) where it has one, after every extension that may refuse
it and after the session's connection is taken; graphql-core executes the rest.
Errors are logged by ErrorPolicy (errors.py), which logs what is the server's: strawberry's own
logging of every error is off (a document of unknown fields logged its 100 validation errors, each
with its whole line of source, at ERROR level: a megabyte of log a request, for the client's mistake).
Every Float the schema returns is rounded by numbers-v1 (kernelindex.rules.numbers) where it is
completed (RoundedFloats), so no resolver can return binary noise and none has to remember to round.
"""

from __future__ import annotations

from typing import Any

import strawberry
from graphql import GraphQLError, GraphQLFloat, GraphQLLeafType
from graphql.validation import NoSchemaIntrospectionCustomRule
from strawberry.extensions import AddValidationRules, MaxTokensLimiter, ParserCache
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.tools import merge_types
from strawberry.types import ExecutionContext
from strawberry.types.base import get_object_definition

from kernelindex.graphql.cost import CostModel, QueryCost
from kernelindex.graphql.errors import ErrorPolicy
from kernelindex.graphql.inputs import TextInputPolicy
from kernelindex.graphql.limits import alias_limit_rule, depth_limit_rule
from kernelindex.graphql.mutations import Mutation as WriteMutations
from kernelindex.graphql.mutations import ReviewMutations
from kernelindex.graphql.plan import PlannedExecution
from kernelindex.graphql.queries.catalogue import CatalogueQueries
from kernelindex.graphql.queries.compare import CompareQueries
from kernelindex.graphql.queries.fleet import FleetMutations, FleetQueries
from kernelindex.graphql.queries.history import HistoryQueries
from kernelindex.graphql.queries.node import NodeQueries
from kernelindex.graphql.queries.policy import PolicyQueries
from kernelindex.graphql.queries.records import RecordQueries, WorkloadRecords
from kernelindex.graphql.queries.runs import RunQueries
from kernelindex.graphql.queries.workloads import WorkloadQueries
from kernelindex.graphql.session import SessionConnection
from kernelindex.graphql.subscriptions import Subscription, SubscriptionsOverWebSocket
from kernelindex.graphql.types.catalogue import Environment, Hardware, Implementation, Protocol, Source
from kernelindex.graphql.types.fleet import Job, Submission
from kernelindex.graphql.types.history import RecordEvent
from kernelindex.graphql.types.revision import WorkloadRevision
from kernelindex.graphql.types.run import Run
from kernelindex.graphql.types.workload import Workload
from kernelindex.graphql.validation import OneOperation, Validation
from kernelindex.rules.numbers import significant
from kernelindex.settings import Settings, get_settings

# The order of the areas is the order of the root fields in the SDL.
Query = merge_types(
    "Query",
    (WorkloadQueries, RunQueries, RecordQueries, HistoryQueries, CatalogueQueries, PolicyQueries, CompareQueries,
     FleetQueries, NodeQueries),
)
get_object_definition(Query, strict=True).description = (
    "KernelIndex: the fastest known implementation of a workload on a GPU, and how far to trust that number."
)

Mutation = merge_types("Mutation", (WriteMutations, ReviewMutations, FleetMutations))
get_object_definition(Mutation, strict=True).description = get_object_definition(WriteMutations, strict=True).description

CACHE_SIZE = 512


def validation_rules(settings: Settings) -> list[Any]:
    rules = [depth_limit_rule(settings.max_query_depth), alias_limit_rule(settings.max_aliases)]
    if not settings.introspection_enabled:
        rules.append(NoSchemaIntrospectionCustomRule)
    return rules


class KernelIndexSchema(strawberry.Schema):
    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        """Nothing: ErrorPolicy logs outages and unexpected errors, with the request id."""


class RoundedFloats(StrawberryGraphQLCoreExecutionContext):
    """Execution whose Float values are completed to 12 significant figures (numbers-v1): the one
    place GraphQL's numbers are rounded, and with them the JSON twins' (they run the page query).
    Not a scalar override: graphql-core reserves the name Float, and the SDL keeps the standard one."""

    # How a completed Float is rounded (kernelindex.graphql.runs_page rounds a finite float with it directly).
    float_rounding = staticmethod(significant)

    @staticmethod
    def complete_leaf_value(return_type: GraphQLLeafType, result: Any) -> Any:
        coerced = StrawberryGraphQLCoreExecutionContext.complete_leaf_value(return_type, result)
        return RoundedFloats.float_rounding(coerced) if return_type is GraphQLFloat else coerced


def build_schema(settings: Settings | None = None) -> strawberry.Schema:
    settings = settings or get_settings()
    rules = validation_rules(settings)
    cost_model = CostModel(
        limit=settings.max_query_cost, max_page_size=settings.max_page_size, long_text_bytes=settings.max_text_bytes
    )
    extensions = [
        lambda: MaxTokensLimiter(max_token_count=settings.max_query_tokens),
        lambda: ParserCache(maxsize=CACHE_SIZE),
        OneOperation,
        lambda: AddValidationRules(rules),
        lambda: Validation(hide_suggestions=settings.is_production),
        TextInputPolicy,
        lambda: QueryCost(cost_model),
        SubscriptionsOverWebSocket,
        SessionConnection,
        *([PlannedExecution] if settings.planned_execution else []),
        ErrorPolicy,
    ]
    # The node types are named here too: a client refetches them through `node`, which returns the interface.
    return KernelIndexSchema(
        query=Query, mutation=Mutation, subscription=Subscription, extensions=extensions, execution_context_class=RoundedFloats,
        types=[Workload, Run, Implementation, Hardware, Environment, Job, Protocol, Source, WorkloadRevision, RecordEvent,
               Submission, WorkloadRecords],
    )


def export_sdl() -> str:
    return build_schema(Settings()).as_str() + "\n"
