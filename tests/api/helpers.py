"""Building run records for tests."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx

from kernelindex.ingest.seed import SEEDS_DIR


def seed_record(index: int = 0) -> dict:
    lines = (SEEDS_DIR / "runs.jsonl").read_text().splitlines()
    return json.loads(lines[index])


def synthetic_records(count: int, slug: str = "kernelbench-l3-p9-resnet18", batch: int = 2, start: int = 0) -> list[dict]:
    """`count` passed runs, each in an environment of its own on H100 SXM."""
    base = seed_record(3 if batch == 2 else 7)
    out = []
    for i in range(start, start + count):
        rec = copy.deepcopy(base)
        rec["workload"] = {"slug": slug}
        rec["configuration"]["bindings"] = {"batch_size": batch}
        rec["environment"] = {
            "hardware": {"sku": "NVIDIA H100 SXM5 80GB"},
            "provider": "TestCloud",
            "label": f"pool-{i}",
            "software": {"torch": "2.13.0"},
        }
        mean = 1.2 + (i % 50) / 100
        rec["statistics"] = {"mean": mean, "std": 0.01, "min": mean - 0.01, "max": mean + 0.01, "num_trials": 100}
        rec["source"] = {"name": "Synthetic test source", "revision": "t1"}
        rec["evidence"] = "measured"
        out.append(rec)
    return out


# Tests that need measured runs stand in for the fleet (only the fleet's runs are measured, trust-v2):
# the records are written in one batch by a registered test worker, so "measured" is stored as said
# and may supersede an earlier measurement, as the fleet's own would; then each measured run is
# re-pointed to a test worker of its own environment's machine (distinct environments, distinct
# machines, as the fleet's workers would be: two that agree are Replicated), and the reported ones
# to no worker. One write, so ids and order stay as the records are.
_REGISTER_TEST_MACHINES = """
INSERT INTO fleet_workers (name, machine_id, hardware)
SELECT DISTINCT 'test-worker@env-' || r.environment_id, 'test-machine-env-' || r.environment_id, 'test'
  FROM runs r WHERE r.id = ANY(CAST(:ids AS bigint[])) AND r.evidence = 'measured'
ON CONFLICT DO NOTHING
"""
_ON_THEIR_MACHINES = """
UPDATE runs r SET fleet_worker_id = w.id, fleet_machine_id = w.machine_id
  FROM fleet_workers w
 WHERE w.name = 'test-worker@env-' || r.environment_id AND w.machine_id = 'test-machine-env-' || r.environment_id
   AND w.hardware = 'test' AND r.id = ANY(CAST(:ids AS bigint[])) AND r.evidence = 'measured'
"""
_REPORTED_BY_NO_WORKER = """
UPDATE runs SET fleet_worker_id = NULL, fleet_machine_id = NULL WHERE id = ANY(CAST(:ids AS bigint[])) AND evidence = 'reported'
"""


async def write_records(db_url: str, records: list[dict]):
    """Store the records in one transaction; those saying "measured" as the fleet's measurements
    (above), the rest as a source's."""
    from sqlalchemy import text

    from kernelindex.db.engine import in_own_transaction
    from kernelindex.fleet.registry import register_worker
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter
    from kernelindex.services.records import refresh_all_records

    async def work(session):
        fleet = await register_worker(session, name="test-fleet", machine_id="test-machine", hardware="test", now=datetime.now(UTC))
        summary = await RunWriter(fleet_worker=fleet.writer_identity).write(
            session, [RunRecord(r, "test", f"line {i + 1}") for i, r in enumerate(records)]
        )
        if summary.inserted_run_ids:
            for statement in (_REGISTER_TEST_MACHINES, _ON_THEIR_MACHINES, _REPORTED_BY_NO_WORKER):
                await session.execute(text(statement), {"ids": summary.inserted_run_ids})
        await refresh_all_records(session)
        return summary

    return await in_own_transaction(db_url, work)


async def make_token(db_url: str, *scopes: str, name: str = "test", revoked: bool = False) -> str:
    """A new API token with the scopes (default runs:write), printed nowhere: returned."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.services import tokens as auth

    async def work(session) -> str:
        row, token = await auth.create_token(session, scopes=scopes or ("runs:write",), name=name)
        if revoked:
            await auth.revoke_token(session, row.id)
        return token

    return await in_own_transaction(db_url, work)


@contextlib.asynccontextmanager
async def serving_uncached(db_url: str, **settings: Any) -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    """An app with the response cache off (every request executes; the read model as `settings` say),
    at the tests' fixed clock, and a client over its ASGI transport."""
    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app
    from tests.conftest import FIXED_NOW

    application = create_app(Settings(response_cache_entries=0, **settings), database_url=db_url, clock=lambda: FIXED_NOW)
    async with application.router.lifespan_context(application):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=application), base_url="http://testserver") as client:
            yield application, client
