"""A write's new machines (environments it created) have cohorts that hold nothing stored, so the Python
delta reads no stored state for them (services.records.refresh_after_arrivals' new_environments). The
records it makes must still be those of a full judgement of every run of each cohort: the same random
writes, with runs on machines new to each batch beside runs on stored ones, go into two copies of the
seeded database, one refreshing as the writer does and one in full, and every precomputed table must
come out the same, row for row. A machine created by one batch is not new to the next batch of the same
writer in the same transaction (its cohorts hold that batch's runs by then): that order is written both
ways round too.
"""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta

import pytest

from tests.api.helpers import synthetic_records
from tests.ingest.test_records_arrivals import NOW, TABLES, _record, _tables, twin_db_url  # noqa: F401  (a fixture)


def _batches(seed: int) -> list[list[dict]]:
    """Six batches, each with runs on two machines first named in it and on the three stored ones."""
    rng = random.Random(seed)
    base = synthetic_records(1, start=7)[0]
    written: list[dict] = []
    batches = []
    for step in range(6):
        batch = []
        for i in range(rng.randrange(6, 14)):
            record = _record(rng, base, written)
            if i == 0 or rng.random() < 0.5:
                record["environment"]["label"] = f"arrivals-new-{step}-{rng.randrange(2)}"
            batch.append(record)
        written += batch
        batches.append(batch)
    return batches


async def _write(db_url: str, batches: list[list[dict]], *, one_transaction: bool) -> None:
    """Each batch in a transaction of its own, or (one_transaction) all through one writer in one transaction."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter

    async def write(session, writer: RunWriter, batch: list[dict]) -> None:
        summary = await writer.write(session, [RunRecord(r, "arrivals", f"line {i + 1}") for i, r in enumerate(batch)])
        assert all("same natural key" in p.reason for p in summary.problems), summary.problems

    if one_transaction:
        async def all_batches(session) -> None:
            writer = RunWriter(now=NOW)
            for batch in batches:
                await write(session, writer, batch)
        await in_own_transaction(db_url, all_batches)
    else:
        for step, batch in enumerate(batches):
            await in_own_transaction(db_url, lambda s, batch=batch, step=step: write(s, RunWriter(now=NOW + timedelta(minutes=step)), batch))


@pytest.mark.parametrize("one_transaction", [False, True], ids=["a-transaction-a-batch", "one-transaction"])
@pytest.mark.parametrize("seed", [1, 2])
def test_new_machines_refresh_equals_a_full_one(db_url, twin_db_url, seed, one_transaction, monkeypatch):  # noqa: F811
    from kernelindex.ingest import merge
    from kernelindex.services import records as records_service

    unread: list[tuple[int, int]] = []  # per refresh: the cohorts left unread, and all it judged by the delta
    load = records_service._DeltaState.load.__func__

    async def counting_load(cls, session, context, keys, *args, **kwargs):
        state = await load(cls, session, context, keys, *args, **kwargs)
        unread.append((len(state.unread), len(keys)))
        return state

    async def every_cohort_in_full(session, cohorts, arrived, *, left=(), now=None, events=True, storing=None, new_environments=()):
        if storing is not None:  # the new runs' INSERT, planned: run before the cohorts are read
            await storing()
        return await records_service.refresh_cohorts(session, cohorts, now=now, arrived=arrived, events=events)

    monkeypatch.setattr(records_service._DeltaState, "load", classmethod(counting_load))
    batches = _batches(seed)
    for url, full in ((db_url, False), (twin_db_url, True)):
        monkeypatch.setattr(merge, "refresh_after_arrivals", every_cohort_in_full if full else records_service.refresh_after_arrivals)
        asyncio.run(_write(url, batches, one_transaction=one_transaction))
    delta, full_tables = asyncio.run(_tables(db_url)), asyncio.run(_tables(twin_db_url))
    # Every batch named new machines, and some refreshes judged cohorts with stored state beside them
    # (a cohort a superseded run left is judged in full, not by the delta).
    assert len(unread) == len(batches) and all(n for n, _ in unread), unread
    assert sum(n < total for n, total in unread) >= 2, unread
    assert delta["record_events"] and any(row[1] == "implausible_speedup" for row in delta["run_flags"])
    for name in TABLES:
        assert delta[name] == full_tables[name], name


def test_a_machine_is_new_only_to_the_batch_that_created_it(db_url):
    """The second batch of one writer in one transaction names the machine the first created: its
    cohorts hold the first batch's runs, and the resolver no longer counts it new."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter

    base = synthetic_records(1, start=7)[0]
    base["environment"]["label"] = "arrivals-new-once"

    async def two_batches(session) -> tuple[set[int], set[int], set[int]]:
        writer = RunWriter(now=NOW)
        first = await writer.write(session, [RunRecord(base, "arrivals", "line 1")])
        created = set(writer.resolver.new_environments)
        again = dict(base, implementation={"slug": "arrivals_a", "title": "arrivals_a", "role": "candidate"})
        await writer.write(session, [RunRecord(again, "arrivals", "line 2")])
        return first.environments, created, set(writer.resolver.new_environments)

    environments, created, second = asyncio.run(in_own_transaction(db_url, two_batches))
    assert created == environments and len(created) == 1
    assert second == set()
