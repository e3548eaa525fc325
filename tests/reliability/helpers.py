"""Shared by the reliability tests: tokens, row counts, and what counts as an internal failure.
What counts as a proper success or a proper outage answer is perf.responses (perf.outage_check uses it too)."""

from __future__ import annotations

import asyncpg

from kernelindex.db.urls import to_libpq_url
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
