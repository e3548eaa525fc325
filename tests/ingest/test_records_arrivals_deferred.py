"""The delta refresh of batches whose events are deferred (an import's: services.records._SqlDelta, the
flags and bests in SQL over the new runs) and the history found after them (services.records.record_history,
in SQL) make the records and events a full judgement makes (refresh_cohorts, history_only for the events),
row for row.

The random writes of test_records_arrivals (new runs, runs that supersede, a first baseline after its
candidates, implausibly fast and below-floor runs, an outdated snapshot, retractions and reviews between
writes), each batch written as an import writes it: events deferred to record_events at the batch's end.
One copy refreshes as the writer does, the twin judges every touched cohort in full."""

from __future__ import annotations

import asyncio

import pytest

from tests.ingest.test_records_arrivals import NOW, _tables, twin_db_url, write_at_random  # noqa: F401  (a fixture)


async def _deferred_writes(db_url: str, seed: int, *, full: bool, monkeypatch: pytest.MonkeyPatch, seen: list[int]) -> None:
    from kernelindex.ingest import merge
    from kernelindex.services import records as records_service

    if full:
        async def every_cohort_in_full(session, cohorts, arrived, *, left=(), now=None, events=True, storing=None, new_environments=()):
            if storing is not None:  # the new runs' INSERT, planned: run before the cohorts are read
                await storing()
            return await records_service.refresh_cohorts(session, cohorts, now=now, arrived=arrived, events=events)
        monkeypatch.setattr(merge, "refresh_after_arrivals", every_cohort_in_full)

        async def history_in_full(session, cohorts, *, arrived, now=None):
            return await records_service.refresh_cohorts(session, cohorts, now=now, arrived=arrived, history_only=True)
        monkeypatch.setattr(merge, "record_history", history_in_full)
    else:
        monkeypatch.setattr(merge, "refresh_after_arrivals", records_service.refresh_after_arrivals)
        monkeypatch.setattr(merge, "record_history", records_service.record_history)
        real = records_service._SqlDelta.refresh

        async def counted(self):
            found = await real(self)
            seen.append(len(found[1]))  # the runs it flagged
            return found
        monkeypatch.setattr(records_service._SqlDelta, "refresh", counted)
    await write_at_random(db_url, seed, defer_events=True)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_deferred_delta_equals_a_full_refresh(db_url, twin_db_url, seed, monkeypatch):  # noqa: F811
    seen: list[int] = []
    asyncio.run(_deferred_writes(db_url, seed, full=False, monkeypatch=monkeypatch, seen=seen))
    asyncio.run(_deferred_writes(twin_db_url, seed, full=True, monkeypatch=monkeypatch, seen=[]))
    delta, full = asyncio.run(_tables(db_url)), asyncio.run(_tables(twin_db_url))
    assert seen, "the SQL delta judged the batches"
    kinds = {row[5] for row in delta["record_events"]}
    assert {"new_record", "restored"} <= kinds, kinds
    assert delta["cohort_bests"], "the writes made records"
    assert any(row[1] == "implausible_speedup" for row in delta["run_flags"]), "some run was judged against a baseline"
    for name in ("cohort_bests", "run_flags", "workload_sources", "record_events", "outdated"):
        assert delta[name] == full[name], name

    from kernelindex.db.engine import in_own_transaction
    from kernelindex.services.records import refresh_all_records

    asyncio.run(in_own_transaction(db_url, lambda s: refresh_all_records(s, now=NOW)))
    assert asyncio.run(_tables(db_url)) == delta


def test_the_deferred_delta_flags_runs(db_url, twin_db_url, monkeypatch):  # noqa: F811
    """Over the seeds above, the SQL delta itself raised flags (not only the full judgements)."""
    totals = []
    for seed in (1, 2, 3):
        seen: list[int] = []
        asyncio.run(_deferred_writes(db_url, seed, full=False, monkeypatch=monkeypatch, seen=seen))
        totals.append(sum(seen))
    assert sum(totals) > 0, totals
