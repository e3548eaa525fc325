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


def test_the_history_pass_reads_only_the_headline_cohorts(cli, db_url, tmp_path):
    """An import's closing history pass (RunWriter.record_events) refreshes only the cohorts that have a
    history (kernelindex.services.records.refresh_cohorts(history_only=True)): every batch already
    refreshed the flags and bests of what it touched. Shown by a best removed behind its back: the
    history pass leaves the off-canonical cohort's row missing and puts back no row at all, a full
    refresh of the same cohorts puts it back."""
    from sqlalchemy import text

    from kernelindex.services.records import refresh_cohorts

    seeded = [json.loads(line) for line in (SEEDS_DIR / "runs.jsonl").read_text().splitlines()
              if f'"{SLUG}"' in line and '"status": "passed"' in line]
    path = tmp_path / "batch8.jsonl"
    path.write_text("".join(json.dumps(_at_batch_size(json.dumps(r), 8, 3.5)) + "\n" for r in seeded))
    assert cli("ingest", "runs", str(path)) == 0
    before = _bests(db_url)
    cohorts = ("SELECT DISTINCT r.workload_revision_id, r.configuration_key, r.protocol_id, r.environment_id "
               f"FROM runs r JOIN workloads w ON w.id = r.workload_id WHERE w.slug = '{SLUG}' AND r.superseded_at IS NULL")

    async def remove_then(history_only: bool, session):
        keys = [tuple(r) for r in (await session.execute(text(cohorts))).all()]
        await session.execute(text("DELETE FROM cohort_bests WHERE configuration_key LIKE :at_8"), {"at_8": '%"batch_size":8%'})
        summary = await refresh_cohorts(session, keys, history_only=history_only)
        headline = sum('"batch_size":2' in k[1] for k in keys)
        assert 0 < headline < len(keys)
        return summary.cohorts, headline

    judged, headline = asyncio.run(in_own_transaction(db_url, lambda s: remove_then(True, s)))
    assert judged == headline
    assert _bests(db_url) == [b for b in before if '"batch_size":8' not in b[0]]
    judged, _ = asyncio.run(in_own_transaction(db_url, lambda s: remove_then(False, s)))
    assert judged > headline and _bests(db_url) == before
