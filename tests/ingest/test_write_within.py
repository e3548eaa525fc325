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


class _RolledBack(Exception):
    def __init__(self, summary):
        self.summary = summary


def test_a_batchs_own_repeats_are_refused_alike_with_and_without_the_keys_table(db_url):
    """A writer that keeps no keys across batches (submitRuns, the fleet, seed) finds a batch's repeats
    in memory (merge._claimed_in_batch); an import's writer through ingest_keys. The same batch, with
    keys stated two and three times, gets the same refusals, in the same words, and the same counts."""
    from kernelindex.ingest.writer import RunWriter

    records = [_record(slug) for slug in ("rep-a", "rep-b", "rep-c", "rep-a", "rep-b", "rep-a", "rep-d")]
    records = [RunRecord(r.data, "test", f"line {i + 1}") for i, r in enumerate(records)]

    def written(track_keys: bool):
        async def work(session):
            summary = await RunWriter(track_keys=track_keys).write(session, records)
            raise _RolledBack(summary)  # each way on the same database as it was

        try:
            asyncio.run(in_own_transaction(db_url, work))
        except _RolledBack as done:
            return done.summary
        raise AssertionError("the write did not finish")

    in_memory, through_table = written(False), written(True)
    problems = [(p.where, p.key, p.reason) for p in in_memory.problems]
    assert problems == [(p.where, p.key, p.reason) for p in through_table.problems]
    assert [where for where, _, _ in problems] == ["line 4", "line 5", "line 6"]
    assert "the same run as line 1" in problems[0][2] and "the same run as line 2" in problems[1][2]
    assert "the same run as line 1" in problems[2][2]
    assert (in_memory.inserted, in_memory.rejected) == (through_table.inserted, through_table.rejected) == (4, 3)
