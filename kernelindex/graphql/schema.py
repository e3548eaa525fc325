"""The GraphQL schema: the root Query composed from per-area classes, with limits and caches."""

from __future__ import annotations

import strawberry
from strawberry.extensions import MaxAliasesLimiter, MaxTokensLimiter, ParserCache, QueryDepthLimiter, ValidationCache
from strawberry.tools import merge_types

from kernelindex.graphql.queries import CatalogueQueries, RunQueries, WorkloadQueries
from kernelindex.settings import Settings, get_settings

Query = merge_types("Query", (WorkloadQueries, RunQueries, CatalogueQueries))


def build_schema(settings: Settings | None = None) -> strawberry.Schema:
    settings = settings or get_settings()
    extensions = [
        QueryDepthLimiter(max_depth=settings.max_query_depth),
        MaxAliasesLimiter(max_alias_count=settings.max_aliases),
        MaxTokensLimiter(max_token_count=settings.max_query_tokens),
        ParserCache(maxsize=256),
        ValidationCache(maxsize=256),
    ]
    return strawberry.Schema(query=Query, extensions=extensions)


def export_sdl() -> str:
    return build_schema(Settings()).as_str() + "\n"
