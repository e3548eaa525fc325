"""The outage tests' database: an embedded PostgreSQL of their own (perf.postgres.OwnPostgres, the
same one perf.outage_check stops and starts), migrated and seeded."""

from __future__ import annotations

import asyncio


def migrate_and_seed(url: str) -> None:
    from kernelindex.db.migrate import upgrade
    from kernelindex.ingest.seed import seed_database

    upgrade(url)
    asyncio.run(seed_database(url))
