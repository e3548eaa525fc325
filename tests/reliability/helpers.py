"""Shared by the reliability tests: tokens, row counts, and what counts as an internal failure."""

from __future__ import annotations

import asyncpg
import httpx

from kernelindex.db.urls import to_libpq_url
from kernelindex.graphql.errors import UNAVAILABLE_MESSAGE
from tests.api.helpers import make_token  # noqa: F401  (the reliability tests take it from here)

INTERNAL_MESSAGE = "Unexpected error."
WATCHED_TABLES = ("runs", "api_tokens", "run_reviews", "run_flags", "workloads", "workload_revisions", "implementations",
                  "environments", "hardware", "protocols", "sources", "source_snapshots", "record_events", "cohort_bests")


async def table_counts(db_url: str, tables: tuple[str, ...] = WATCHED_TABLES) -> dict[str, int]:
    """Row counts of the tables, and how many runs are retracted."""
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        counts = {t: await conn.fetchval(f'SELECT count(*) FROM "{t}"') for t in tables}
        counts["runs_retracted"] = await conn.fetchval("SELECT count(*) FROM runs WHERE retracted_at IS NOT NULL")
        return counts
    finally:
        await conn.close()


def internal_errors(body: dict) -> list[dict]:
    """The GraphQL errors in a response body that are the server's fault."""
    return [
        e for e in body.get("errors") or []
        if (e.get("extensions") or {}).get("code") == "INTERNAL_SERVER_ERROR" or e.get("message") == INTERNAL_MESSAGE
    ]


def unavailable_problem(kind: str, response: httpx.Response, *, single: bool = True) -> str | None:
    """What is wrong with this response as an outage answer; None when it is a proper 503.
    `single=False` accepts several SERVICE_UNAVAILABLE errors: a GraphQL request cut off mid-flight
    reports each field that lost the connection."""
    if response.status_code != 503:
        return f"status {response.status_code}: {response.text[:200]}"
    try:
        body = response.json()
    except ValueError:
        return f"not JSON: {response.text[:200]}"
    if kind.startswith("graphql"):
        errors = body.get("errors") or []
        codes = [(e.get("extensions") or {}).get("code") for e in errors]
        if not codes or set(codes) != {"SERVICE_UNAVAILABLE"} or (single and len(codes) != 1):
            return f"errors {errors}"
        if any(e["message"] != UNAVAILABLE_MESSAGE or not e["extensions"].get("request_id") for e in errors):
            return f"message {errors}"
    elif kind == "healthz":
        if body.get("status") != "unavailable":
            return f"body {body}"
    elif body.get("error") != UNAVAILABLE_MESSAGE or not body.get("request_id"):
        return f"body {body}"
    return None


def ok_problem(kind: str, response: httpx.Response) -> str | None:
    """What is wrong with this response as a success; None when it is one."""
    if response.status_code != 200:
        return f"status {response.status_code}: {response.text[:200]}"
    if kind.startswith("graphql"):
        try:
            body = response.json()
        except ValueError:
            return f"not JSON: {response.text[:200]}"
        if body.get("errors"):
            return f"errors {body['errors']}"
    return None
