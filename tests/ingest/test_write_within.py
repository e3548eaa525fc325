"""write_within (kernelindex.ingest.pipeline): the one strict write in a caller's transaction that
submitRuns, the fleet worker and `seed` share. A refused record writes nothing of its call and leaves
the caller's transaction (and what it wrote before) as it was; the refusal comes back, not raised."""

from __future__ import annotations

import asyncio
import json

from kernelindex.db.engine import in_own_transaction
from kernelindex.ingest.pipeline import write_within
from kernelindex.ingest.records import RunRecord
from kernelindex.ingest.seed import SEEDS_DIR
from tests.ingest.conftest import fetch


def _record(slug: str, *, hardware: str | None = None) -> RunRecord:
    data = json.loads((SEEDS_DIR / "runs.jsonl").read_text().splitlines()[0])
    data["implementation"] = {"slug": slug}  # a new implementation: a new run, not the seed's
    if hardware is not None:
        data["environment"]["hardware"] = {"product_name": hardware}
    return RunRecord(data, "test", slug)


def test_a_refused_record_writes_nothing_of_its_call_and_keeps_the_callers_writes(db_url):
    async def work(session):
        first = await write_within(session, [_record("within-first")])
        second = await write_within(session, [_record("within-second"), _record("within-bad", hardware="NVIDIA Z9000 96GB")])
        return first, second

    first, second = asyncio.run(in_own_transaction(db_url, work))
    assert first.aborted is None
    assert first.summary.inserted == 1 and len(first.summary.inserted_run_ids) == 1
    assert second.aborted is not None
    assert [p.where for p in second.aborted.problems] == [p.where for p in second.summary.problems] == ["within-bad"]
    assert "Z9000" in second.summary.problems[0].reason
    slugs = {row["slug"] for row in fetch(
        db_url, "SELECT i.slug FROM runs r JOIN implementations i ON i.id = r.implementation_id WHERE i.slug LIKE 'within-%'")}
    # the first call's run is committed with the caller's transaction; nothing of the refused call is
    assert slugs == {"within-first"}
    assert [row["id"] for row in fetch(db_url, "SELECT id FROM runs WHERE id = $1", first.summary.inserted_run_ids[0])]
