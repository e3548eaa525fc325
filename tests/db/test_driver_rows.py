"""kernelindex.db.driver.fetch_rows: the page's statements run by the driver give the rows
session.execute gives (values, order, columns by name), and a session with changes still to flush
is answered by session.execute, which flushes them first."""

from __future__ import annotations

from sqlalchemy import select, text

from kernelindex.db import driver
from kernelindex.db.engine import in_own_transaction
from kernelindex.db.models import Workload
from kernelindex.graphql.session import SerializedSession
from kernelindex.services import pages
from kernelindex.services.facts import hardware_facts, load_catalogue, load_catalogue_facts
from tests.api.page_loaders import first_sources_statement, held_runs_statement, measured_runs_statement


class _Counting(SerializedSession):
    """A SerializedSession that counts what went to the driver."""

    def __init__(self, session):
        super().__init__(session)
        self.driver_calls = 0

    async def driver_call(self, call):
        self.driver_calls += 1
        return await super().driver_call(call)


def _statements(revision_ids, run_ids, cohorts, subjects):
    """Each page statement fetch_rows runs, and the parts of two of them read alone (sources, measured,
    held: tests/api/page_loaders, the tests' references), with parameters that find rows in the seeded database."""
    wanted = pages.array_values("wanted", pages._COHORT_TOPS, [(*c, 3) for c in cohorts])
    return {
        "bests": (pages._bests_statement(True, "latency"), {"revision_ids": revision_ids}),
        "runs by id": (pages._runs_by_id_statement(), {"run_ids": run_ids}),
        "sources": (first_sources_statement(True), {"revision_ids": revision_ids}),
        "cohort tops": (pages._cohort_tops_statement(), wanted),
        "measured": (measured_runs_statement(), {"revs": revision_ids}),
        "subjects": (pages._subject_measurements_statement(), pages.array_values("subjects", pages._SUBJECTS, subjects)),
        "held": (held_runs_statement(), {"revision_ids": revision_ids}),
        "page runs": (pages._page_runs_statement(), {"revs": revision_ids, "revision_ids": revision_ids}),
        "runs and sources": (pages._runs_and_sources_statement(True), {"run_ids": run_ids, "revision_ids": revision_ids}),
    }


async def test_driver_rows_are_session_rows(db_url):
    async def check(session):
        revision_ids = [r for (r,) in (await session.execute(text(
            "SELECT current_revision_id FROM workloads WHERE current_revision_id IS NOT NULL ORDER BY id"))).all()]
        run_ids = [r for (r,) in (await session.execute(text("SELECT id FROM runs ORDER BY id"))).all()]
        cohorts = [tuple(r) for r in (await session.execute(text(
            "SELECT DISTINCT workload_revision_id, configuration_key, protocol_id, environment_id FROM cohort_bests"))).all()]
        subjects = [tuple(r) for r in (await session.execute(text(
            "SELECT DISTINCT r.workload_revision_id, r.configuration_key, r.implementation_id, e.hardware_id "
            "FROM runs r JOIN environments e ON e.id = r.environment_id"))).all()]
        # One flagged run, so the held statement has a row to compare.
        await session.execute(text("INSERT INTO run_flags (run_id, code, reason, rule_version) "
                                   "SELECT id, 'implausible_speedup', 'x', 'plausibility-v2' FROM runs "
                                   "WHERE status = 'passed' ORDER BY id LIMIT 1"))
        # A few KernelIndex measurements, so the measured and subjects statements have rows (this test's own
        # database: without the fleet worker a measurement names, which no statement here reads).
        await session.execute(text("ALTER TABLE runs DROP CONSTRAINT ck_runs_measured_by_fleet"))
        await session.execute(text("UPDATE runs SET evidence = 'measured' WHERE id IN "
                                   "(SELECT id FROM runs WHERE status = 'passed' ORDER BY id DESC LIMIT 6)"))
        serialized = _Counting(session)
        empty = []
        for name, (statement, params) in _statements(revision_ids, run_ids, cohorts, subjects).items():
            expected = (await session.execute(statement, params)).all()
            before = serialized.driver_calls
            got = await driver.fetch_rows(serialized, statement, params)
            assert serialized.driver_calls > before, name  # the driver ran it
            assert [tuple(r) for r in got] == [tuple(r) for r in expected], name
            assert all(type(a) is type(b) for r, e in zip(got, expected, strict=True) for a, b in zip(r, e, strict=True)), name
            if name in ("bests", "sources"):  # the rows read by column name
                assert got[0]._fields == tuple(expected[0]._fields), name
            if not expected:
                empty.append(name)
        assert empty == []  # every statement had rows to compare
        bests = await driver.fetch_rows(serialized, *_statements(revision_ids, [], [], [])["bests"])
        assert {b.run_id for b in bests} <= set(run_ids) and all(isinstance(b.evidence_kinds, list) for b in bests)

    await in_own_transaction(db_url, check)


async def test_changes_to_flush_go_through_the_session(db_url):
    async def check(session):
        serialized = _Counting(session)
        statement = select(Workload.id, Workload.name).order_by(Workload.id)
        clean = await driver.fetch_rows(serialized, statement)
        assert serialized.driver_calls >= 1 and clean
        workload = await session.get(Workload, clean[0].id)
        workload.name = "renamed, not flushed yet"
        # The server's sessions do not autoflush: session.execute would not see the change, nor does the driver.
        assert not session.sync_session.autoflush
        calls = serialized.driver_calls
        assert [tuple(r) for r in await driver.fetch_rows(serialized, statement)] == [tuple(r) for r in clean]
        assert serialized.driver_calls > calls
        # An autoflush session flushes before session.execute: fetch_rows leaves the statement to it.
        session.sync_session.autoflush = True
        calls = serialized.driver_calls
        pending = await driver.fetch_rows(serialized, statement)
        assert serialized.driver_calls == calls
        assert pending[0].name == "renamed, not flushed yet"
        # Flushed, the driver answers again, and sees the change.
        assert [tuple(r) for r in await driver.fetch_rows(serialized, statement)] == [tuple(r) for r in pending]
        assert serialized.driver_calls > calls

    await in_own_transaction(db_url, check)


async def test_without_driver_call_the_session_answers(db_url):
    async def check(session):
        statement = pages._runs_by_id_statement()
        ids = [r for (r,) in (await session.execute(text("SELECT id FROM runs ORDER BY id LIMIT 3"))).all()]
        assert ids
        rows = await driver.fetch_rows(session, statement, {"run_ids": ids})  # a plain AsyncSession
        assert sorted(r[0] for r in rows) == ids

    await in_own_transaction(db_url, check)


async def test_catalogue_facts_are_those_of_the_rows(db_url):
    async def check(session):
        await session.execute(text("UPDATE hardware SET driver_product_names = '{}' WHERE id = (SELECT min(id) FROM hardware)"))
        await session.execute(text("UPDATE hardware SET driver_product_names = '{a,b}', memory_gb = 80.5 "
                                   "WHERE id = (SELECT max(id) FROM hardware)"))
        rows = await load_catalogue(session)
        expected = [hardware_facts(h) for h in rows]
        assert len(expected) > 1
        for wrapped in (session, SerializedSession(session)):  # by session.execute, and by the driver
            assert await load_catalogue_facts(wrapped) == expected

    await in_own_transaction(db_url, check)
