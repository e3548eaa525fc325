"""One rule for "eligible" (issue 26, point 4): rules.eligibility decides, and every route that counts
or lists eligible runs agrees with it, run for run:

- the sum of Workload.eligibleRunCount over every workload (the records' run counts: cohort_bests);
- each workload's records' run counts, and runs(workload:, eligibleOnly: true) per workload;
- runs(eligibleOnly: true).totalCount and the ids it lists;
- the rows of /exports/runs.csv?eligible_only=true;
- services.eligibility.eligible_run_clause, the rule in SQL;
- the Python rule over every stored run, judged with its holds.

On hostile fixtures (a run held for review, superseded, retracted, failed, off the canonical
configuration, of an older revision, the seed's stand-in revisions, a retracted snapshot) and, when
../shared/kernelbench has its timing files, on the real tree (level 1, the level of problem 97)."""

from __future__ import annotations

import asyncio
import copy
import csv
import io
from collections import Counter
from datetime import UTC, date, datetime

import pytest
from sqlalchemy import select, text, update

from kernelindex.db.engine import in_own_transaction
from kernelindex.db.models import Run, Workload, WorkloadRevision
from kernelindex.rules import eligibility
from kernelindex.services.eligibility import eligible_run_clause
from kernelindex.services.facts import FactsBuilder, run_rows_statement, workload_facts
from kernelindex.services.holds import with_holds
from kernelindex.services.records import refresh_cohorts_of_runs, refresh_workloads
from tests.api.helpers import seed_record, synthetic_records, write_records
from tests.ingest.conftest import SHARED_TIMING

RESNET = "kernelbench-l3-p9-resnet18"
VGG = "kernelbench-l3-p12-vgg19"


async def python_rule(url: str) -> tuple[set[int], Counter]:
    """The eligible run ids by rules.eligibility over every stored run, and the reasons of the others."""

    async def work(session):
        workloads = {w.id: w for w in (await session.scalars(select(Workload))).all()}
        revisions = {r.id: r for r in (await session.scalars(select(WorkloadRevision))).all()}
        builder = FactsBuilder()
        facts = await with_holds(session, [builder.run(*row) for row in (await session.execute(run_rows_statement())).all()])
        eligible, reasons = set(), Counter()
        for run in facts:
            w = workloads[run.workload_id]
            reason = eligibility.ineligibility_reason(run, workload_facts(w, revisions.get(w.current_revision_id)))
            if reason is None:
                eligible.add(run.id)
            else:
                reasons[reason] += 1
        return eligible, reasons

    return await in_own_transaction(url, work)


async def sql_rule(url: str) -> set[int]:
    async def work(session):
        return set((await session.scalars(select(Run.id).where(eligible_run_clause()))).all())

    return await in_own_transaction(url, work)


async def routes(graphql, client) -> dict:
    """What each route of the API says, as a researcher or ops would read it."""
    pages, after = [], None
    while True:
        data = (await graphql(
            "query($after: String) { workloads(first: 100, after: $after) { pageInfo { hasNextPage endCursor } "
            "nodes { slug eligibleRunCount records(first: 100) { runCount } } } }", {"after": after}))["workloads"]
        pages += data["nodes"]
        if not data["pageInfo"]["hasNextPage"]:
            break
        after = data["pageInfo"]["endCursor"]
    listed, after = [], None
    while True:
        data = (await graphql(
            "query($after: String) { runs(eligibleOnly: true, first: 100, after: $after) { totalCount "
            "pageInfo { hasNextPage endCursor } nodes { databaseId } } }", {"after": after}))["runs"]
        total = data["totalCount"]
        listed += [n["databaseId"] for n in data["nodes"]]
        if not data["pageInfo"]["hasNextPage"]:
            break
        after = data["pageInfo"]["endCursor"]
    response = await client.get("/exports/runs.csv?eligible_only=true")
    assert response.status_code == 200, response.text
    csv_ids = [int(r["run_id"]) for r in csv.DictReader(io.StringIO(response.text))]
    per_workload = {}
    for w in pages:
        count = (await graphql(
            "query($slug: String!) { runs(workload: $slug, eligibleOnly: true, first: 1) { totalCount } }",
            {"slug": w["slug"]}))["runs"]["totalCount"]
        per_workload[w["slug"]] = (w["eligibleRunCount"], sum(r["runCount"] for r in w["records"]), count)
    return {
        "sum_of_workloads": sum(w["eligibleRunCount"] for w in pages),
        "runs_total": total, "runs_listed": listed, "csv": csv_ids, "per_workload": per_workload,
    }


def assert_one_answer(found: dict, python: set[int], sql: set[int]) -> None:
    assert sql == python, f"SQL rule only: {sorted(sql - python)}, Python rule only: {sorted(python - sql)}"
    assert sorted(found["runs_listed"]) == sorted(python)
    assert sorted(found["csv"]) == sorted(python)
    assert found["runs_total"] == len(python)
    assert found["sum_of_workloads"] == len(python)
    for slug, (count, records, listed) in found["per_workload"].items():
        assert count == records == listed, (slug, count, records, listed)


async def _retract_one(url: str, run_id: int) -> None:
    async def work(session):
        await session.execute(update(Run).where(Run.id == run_id).values(
            retracted_at=datetime(2026, 11, 1, tzinfo=UTC), retraction_reason="test: a bad run"))
        await refresh_cohorts_of_runs(session, [run_id])

    await in_own_transaction(url, work)


async def _new_vgg_revision(url: str) -> None:
    """VGG19 revised upstream: a later snapshot names a new file, so the seed's VGG runs are of an older revision."""
    from kernelindex.ingest.workloads import WorkloadSpec, record_snapshot

    async def work(session):
        spec = WorkloadSpec(suite="kernelbench", level=3, problem_number=12, name="VGG19", slug=VGG,
                            reference_source="# VGG19, revised upstream\n", canonical_bindings={"batch_size": 10})
        outcome = await record_snapshot(session, "kernelbench", "fedcba9876543", date(2026, 9, 1), [spec], complete=False)
        await refresh_workloads(session, outcome.workload_ids)

    await in_own_transaction(url, work)


_RUN_COPY = ("workload_id, workload_revision_id, bindings, dtype, configuration_key, implementation_id, environment_id, "
             "protocol_id, source_snapshot_id, status, mean_ms, std_ms, min_ms, max_ms, num_trials, observed_at, evidence, "
             "content_sha256, figure, fleet_worker_id, fleet_machine_id")


async def _kept_apart(url: str, run_id: int) -> None:
    """Two copies of an eligible run that the rule counts for nothing (eligibility-v2): one a peak-memory
    figure (another protocol's metric), one from a whole snapshot of a source that a newer one replaced."""
    async def work(session):
        memory = (await session.execute(text(
            "INSERT INTO protocols (name, version, statistic, metric, unit) VALUES ('peak memory', '1', 'median', 'memory', 'MB') "
            "RETURNING id"))).scalar_one()
        source = (await session.execute(text("INSERT INTO sources (name, key) VALUES ('A whole source', 'whole') RETURNING id"))).scalar_one()
        older = (await session.execute(text(
            "INSERT INTO source_snapshots (source_id, revision, revision_date, whole, outdated) "
            "VALUES (:s, 'older', '2026-01-01', true, true) RETURNING id"), {"s": source})).scalar_one()
        await session.execute(text("INSERT INTO source_snapshots (source_id, revision, revision_date, whole) VALUES (:s, 'newer', '2026-02-01', true)"),
                              {"s": source})
        for column, value in (("protocol_id", memory), ("source_snapshot_id", older)):
            columns = _RUN_COPY.replace(column, f":v AS {column}")
            await session.execute(text(f"INSERT INTO runs ({_RUN_COPY}) SELECT {columns} FROM runs WHERE id = :id"),
                                  {"v": value, "id": run_id})
        workload = (await session.execute(text("SELECT workload_id FROM runs WHERE id = :id"), {"id": run_id})).scalar_one()
        await refresh_workloads(session, [workload])

    await in_own_transaction(url, work)


async def test_every_route_gives_the_rule_on_hostile_fixtures(db_url, graphql, client):
    held = seed_record(0)  # the PCIe cohort, where eager is 1.39 ms: 13.9× faster is held (implausible speedup)
    held["implementation"] = {"slug": "too_good_kernel"}
    held["statistics"].update(mean=0.1, min=0.09, max=0.11)
    failed = copy.deepcopy(seed_record(2))
    failed.update(status="failed", statistics=None, failure_reason="output mismatch")
    failed["environment"]["label"] = "failing-pool"
    off_canonical = synthetic_records(2, slug=RESNET, batch=2, start=0)
    for r in off_canonical:
        r["configuration"]["bindings"] = {"batch_size": 16}
    live = synthetic_records(3, slug=RESNET, start=10)
    await write_records(db_url, [held, failed, *off_canonical, *live])
    # superseded: the same natural key with a changed figure
    changed = copy.deepcopy(live[0])
    mean = live[0]["statistics"]["mean"] + 0.05
    changed["statistics"].update(mean=mean, min=mean - 0.01, max=mean + 0.01)
    await write_records(db_url, [changed])
    # retracted: one of the live runs
    async def newest_live(session):
        return (await session.scalars(select(Run.id).where(Run.superseded_at.is_(None), Run.status == "passed",
                                                           Run.bindings["batch_size"].as_integer() == 2)
                                      .order_by(Run.id.desc()).limit(1))).one()
    await _retract_one(db_url, await in_own_transaction(db_url, newest_live))
    await _kept_apart(db_url, await in_own_transaction(db_url, newest_live))
    await _new_vgg_revision(db_url)

    python, reasons = await python_rule(db_url)
    # Every kind of ineligible run is there (else the test proves less than it says) and some are eligible.
    assert set(reasons) == set(eligibility.REASONS), reasons
    assert python
    found = await routes(graphql, client)
    assert_one_answer(found, python, await sql_rule(db_url))
    assert found["per_workload"][VGG][0] == 0  # its runs are of the older revision now


async def test_a_held_run_counts_nowhere_and_an_approved_one_everywhere(db_url, graphql, client):
    """The case seen on the real tree (984 against 978): runs(eligibleOnly) and the export counted a
    held run that the records, and so eligibleRunCount, left out."""
    held = seed_record(0)
    held["implementation"] = {"slug": "too_good_kernel"}
    held["statistics"].update(mean=0.1, min=0.09, max=0.11)
    await write_records(db_url, [held])
    python, reasons = await python_rule(db_url)
    assert reasons[eligibility.HELD] == 1
    before = await routes(graphql, client)
    assert_one_answer(before, python, await sql_rule(db_url))

    async def approve(session):
        run_id = (await session.scalars(text("SELECT run_id FROM run_flags"))).one()
        await session.execute(text("INSERT INTO run_reviews (run_id, decision, reviewer, created_at) "
                                   "VALUES (:id, 'approved', 'test', now())"), {"id": run_id})
        await refresh_cohorts_of_runs(session, [run_id])

    await in_own_transaction(db_url, approve)
    python_after, _ = await python_rule(db_url)
    assert len(python_after) == len(python) + 1
    after = await routes(graphql, client)
    assert_one_answer(after, python_after, await sql_rule(db_url))


REAL_TREE = SHARED_TIMING.parent.parent


@pytest.mark.skipif(not SHARED_TIMING.is_dir(), reason="../shared/kernelbench has no results/timing: no runs to count")
def test_every_route_gives_the_rule_on_the_real_tree_level_1(cli, db_url):
    """Level 1 of the real tree (problem 97, ScaledDotProductAttention, read 0 against 4), imported as ops
    would, then counted by every route."""
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app
    from tests.conftest import FIXED_NOW

    assert cli("ingest", "kernelbench", str(REAL_TREE), "--levels", "1", "--revision", "423217d",
               "--observed", "2026-03-05") == 0

    async def check():
        app = create_app(Settings(), database_url=db_url, clock=lambda: FIXED_NOW)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
                async def graphql(query, variables=None):
                    body = (await client.post("/graphql", json={"query": query, "variables": variables or {}})).json()
                    assert "errors" not in body, body["errors"]
                    return body["data"]

                found = await routes(graphql, client)
        python, _ = await python_rule(db_url)
        assert_one_answer(found, python, await sql_rule(db_url))
        sdpa = [v for slug, v in found["per_workload"].items() if slug.startswith("kernelbench-l1-p97-")]
        assert sdpa and sdpa[0][0] == sdpa[0][2] > 0

    asyncio.run(check())
