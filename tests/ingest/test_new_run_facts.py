"""The cohort refresh judges a write's new runs by facts made from the rows their writer staged
(kernelindex.ingest.stage.new_run), not read back: those facts equal the ones read back from the
database (run_columns_statement), field for field, for records of every shape a measured record takes
(samples, correctness, an offset instant, integral figures, a failed run, a key stated twice)."""

from __future__ import annotations

import copy
from dataclasses import fields

import pytest

from tests.api.helpers import synthetic_records


def _records() -> list[dict]:
    records = synthetic_records(6, start=300)
    records[0]["samples_ms"] = [1.5, 2, 1.25]  # an integral sample: float8[] gives it back as 2.0
    records[1]["correctness"] = {"passed": True, "max_abs_error": 0.0}
    records[2]["observed_at"] = "2026-05-01T09:30:00.123456+02:00"  # read back in UTC
    records[3]["statistics"] = {"mean": 2, "std": 0, "min": 2, "max": 2, "num_trials": 5}  # integral figures
    records[3]["compile_time_ms"] = 12
    records[4]["status"] = "failed"
    records[4]["failure_reason"] = "timeout"
    again = copy.deepcopy(records[5])  # the same natural key stated twice: the first is written
    again["statistics"] = {"mean": 9.5, "std": 0.1, "min": 9.4, "max": 9.6, "num_trials": 100}
    return [*records, again]


async def test_new_runs_facts_equal_the_facts_read_back(db_url, monkeypatch: pytest.MonkeyPatch):
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter
    from kernelindex.services import records as records_service
    from kernelindex.services.facts import FactsBuilder, NewRun

    compared: list[int] = []
    made: list = []
    made_from_values, write_delta = records_service._arrived_facts, records_service._write_delta

    def recorded(builder, passed):
        # Made while the runs are being inserted (refresh_after_arrivals' storing): compared once they are stored.
        assert all(isinstance(run, NewRun) for run in passed), "the writer hands the refresh its new runs' values"
        found = made_from_values(builder, passed)
        made.extend(found)
        return found

    async def checked(session, state, judged, keys):
        read = await records_service._live_runs_by_id(session, FactsBuilder(), sorted(f.id for f in made))
        made_by_id, read_by_id = {f.id: f for f in made}, {f.id: f for f in read}
        assert made_by_id.keys() == read_by_id.keys()
        for run_id, facts in made_by_id.items():
            differ = [f.name for f in fields(facts) if getattr(facts, f.name) != getattr(read_by_id[run_id], f.name)]
            assert differ == [], (run_id, differ)
            assert facts.observed_at.tzinfo == read_by_id[run_id].observed_at.tzinfo
            assert type(facts.samples_ms) is type(read_by_id[run_id].samples_ms)
        compared.extend(made_by_id)
        return await write_delta(session, state, judged, keys)

    monkeypatch.setattr(records_service, "_arrived_facts", recorded)
    monkeypatch.setattr(records_service, "_write_delta", checked)
    records = _records()

    writer = RunWriter()

    async def write(session):
        return await writer.write(session, [RunRecord(r, "facts", f"line {i + 1}") for i, r in enumerate(records)])

    summary = await in_own_transaction(db_url, write)
    assert summary.inserted == 6 and summary.rejected == 1  # the key stated again is refused
    assert len(compared) == 5  # every passed run written (the failed one competes for no record)
    # Their machines were new to the database: those facts were made from the values the writer inserted
    # (FactsBuilder.know_environments), not read back, and equal the facts read back all the same.
    new = writer.resolver.new_environments
    assert new and {f.environment.id for f in made} <= set(new)
    assert any(f.environment.torch_version and f.environment.label for f in made)
