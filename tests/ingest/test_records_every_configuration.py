"""Records at every configuration (eligibility-v3) are kept by every write, not only by a rebuild: runs
ingested at a configuration other than the canonical one hold records there as soon as the import ends,
the same bests a full rebuild of the records computes, and the canonical configuration's (the headline
records) do not move."""

from __future__ import annotations

import asyncio
import json

import asyncpg

from kernelindex.db.engine import in_own_transaction
from kernelindex.db.urls import to_libpq_url
from kernelindex.ingest.seed import SEEDS_DIR
from kernelindex.services.records import refresh_all_records

SLUG = "kernelbench-l3-p9-resnet18"
BESTS = ("SELECT b.configuration_key, b.implementation_id, b.environment_id, b.run_id, b.figure, b.run_count "
         f"FROM cohort_bests b JOIN workloads w ON w.id = b.workload_id WHERE w.slug = '{SLUG}' ORDER BY 1, 2, 3")


def _bests(db_url: str) -> list[tuple]:
    async def fetch():
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            return [tuple(r) for r in await conn.fetch(BESTS)]
        finally:
            await conn.close()

    return asyncio.run(fetch())


def _at_batch_size(line: str, batch_size: int, scale: float) -> dict:
    record = json.loads(line)
    record["configuration"]["bindings"]["batch_size"] = batch_size
    record["statistics"] = {k: v if k == "num_trials" else v * scale for k, v in record["statistics"].items()}
    return record


def test_runs_at_another_configuration_hold_records_there_at_once(cli, db_url, tmp_path):
    seeded = [json.loads(line) for line in (SEEDS_DIR / "runs.jsonl").read_text().splitlines()
              if f'"{SLUG}"' in line and '"status": "passed"' in line]
    assert len(seeded) >= 2
    canonical_before = [b for b in _bests(db_url) if '"batch_size":2' in b[0]]
    path = tmp_path / "batch8.jsonl"
    path.write_text("".join(json.dumps(_at_batch_size(json.dumps(r), 8, 3.5)) + "\n" for r in seeded))
    assert cli("ingest", "runs", str(path)) == 0
    after_import = _bests(db_url)
    at_8 = [b for b in after_import if '"batch_size":8' in b[0]]
    # one best per implementation and environment the new runs name, counting every new run, the fastest
    # of them the fastest new figure
    assert at_8 and len({b[2] for b in at_8}) >= 2 and len(at_8) == len({(b[1], b[2]) for b in at_8})
    assert sum(b[5] for b in at_8) == len(seeded)
    assert min(b[4] for b in at_8) == min(r["statistics"]["mean"] for r in seeded) * 3.5
    # the canonical configuration's bests did not move
    assert [b for b in after_import if '"batch_size":2' in b[0]] == canonical_before
    # and a rebuild from the runs alone computes the very same bests
    asyncio.run(in_own_transaction(db_url, refresh_all_records))
    assert _bests(db_url) == after_import
