"""Writes committed by another OS process, as an importer or a second server would commit them: the
API under test learns of them only through the database (kernelindex.db.changes), never through
anything this process holds. Not a test module: `python -m tests.api.other_process` reads one job
(JSON) on stdin."""

from __future__ import annotations

import asyncio
import json
import sys


async def run_elsewhere(db_url: str, *, records: list[dict] | None = None, statements: tuple[str, ...] = ()) -> None:
    """Commit `records` through the ingest path (one transaction), then each SQL statement (a
    transaction each), in a child process; return once it has exited."""
    job = json.dumps({"db_url": db_url, "records": records or [], "statements": list(statements)})
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.api.other_process", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await child.communicate(job.encode())
    assert child.returncode == 0, (out + err).decode()[-3000:]


async def _main(job: dict) -> None:
    import asyncpg

    from kernelindex.db.urls import to_libpq_url
    from tests.api.test_cache_invalidation import write_runs

    if job["records"]:
        await write_runs(job["db_url"], job["records"])
    if job["statements"]:
        conn = await asyncpg.connect(to_libpq_url(job["db_url"]))
        try:
            for statement in job["statements"]:
                await conn.execute(statement)
        finally:
            await conn.close()


if __name__ == "__main__":
    asyncio.run(_main(json.loads(sys.stdin.read())))
