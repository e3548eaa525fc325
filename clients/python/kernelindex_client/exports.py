"""The export URLs (GET /exports/…) with their filters, checked here so that a misspelt filter fails
before a download, not as the server's 400 after it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Literal
from urllib.parse import urlencode

# The run filters every export takes (kernelindex/web/exports.py filters_from_query), by the names the
# client's run queries use (snake_case); the GraphQL spellings are accepted too and sent as they are.
RUN_FILTERS = frozenset({"workload", "implementation", "hardware", "level", "evidence", "licence", "status", "stale",
                         "observed_since", "eligible_only", "include_superseded"})
GRAPHQL_SPELLINGS = {"observedSince": "observed_since", "eligibleOnly": "eligible_only",
                     "includeSuperseded": "include_superseded"}
Export = Literal["runs.csv", "runs.parquet", "catalog.jsonl"]
# Each export's own parameters besides the filters, with the values it takes. runs.parquet is named here
# before it exists on every server: an older one answers its URL with 404.
EXPORT_PARAMETERS: dict[str, dict[str, tuple[str, ...]]] = {
    "runs.csv": {"names": ("csv", "graphql")},
    "runs.parquet": {"names": ("csv", "graphql")},
    "catalog.jsonl": {"revisions": ("current", "all")},
}
FilterValue = str | int | bool | datetime | Enum | None


def _spelled(value: str | int | bool | datetime | Enum) -> str:
    if isinstance(value, Enum):  # the generated enums: their values are the GraphQL names (PASSED)
        return str(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"observed_since needs a time zone (the server reads UTC times), got {value!r}")
        return value.isoformat()
    return str(value)


def export_url(api: str, export: Export = "runs.csv", filters: Mapping[str, FilterValue] | None = None,
               **more: FilterValue) -> str:
    """The URL of an export of the API at `api` (e.g. http://127.0.0.1:8000), filtered like the run
    queries: `export_url(api, "runs.csv", workload="kernelbench-l3-p9-resnet18", status=RunStatus.PASSED)`.
    A filter given None is left out. Raises ValueError for an export, filter or parameter value the
    server does not take."""
    if export not in EXPORT_PARAMETERS:
        raise ValueError(f"unknown export {export!r}; known: {', '.join(EXPORT_PARAMETERS)}")
    parameters = EXPORT_PARAMETERS[export]
    query: list[tuple[str, str]] = []
    for name, value in {**(filters or {}), **more}.items():
        if value is None:
            continue
        canonical = GRAPHQL_SPELLINGS.get(name, name)
        if canonical in parameters:
            if value not in parameters[canonical]:
                raise ValueError(f"{name} must be one of {', '.join(parameters[canonical])}, got {value!r}")
        elif canonical not in RUN_FILTERS:
            known = sorted(RUN_FILTERS | set(parameters))
            raise ValueError(f"{export} takes no filter {name!r}; known: {', '.join(known)}")
        query.append((name, _spelled(value)))
    url = f"{api.rstrip('/')}/exports/{export}"
    return f"{url}?{urlencode(query)}" if query else url
