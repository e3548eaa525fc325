"""Rungs come from the fleet alone (trust-v2): Verified needs a run stored by a registered fleet worker,
Replicated two such workers on distinct registered machines. Every route from outside (submitRuns,
`kernelindex ingest runs`, the seed) stores "reported" whatever the record's `evidence` says, keeping
a "measured" as the source's claim. One test per route, the fleet's own, the database's guard, and
the migration of what was stored before.

The fleet's own route end to end (real `kernelindex worker` processes) is tests/fleet/test_workers.py;
here the worker's storing step is driven directly: the writer a registered worker stores with.
"""

from __future__ import annotations

import asyncio
import copy
import json
from datetime import UTC, datetime

import asyncpg
import pytest
from alembic import command

from kernelindex.db.urls import to_libpq_url
from kernelindex.graphql.node import to_global_id
from tests.api.helpers import make_token, synthetic_records

RESNET = "kernelbench-l3-p9-resnet18"
CORRECT = {"passed": True, "max_abs_diff": 0.0, "max_rel_diff": 0.0, "atol": 0.0001, "rtol": 0.0001, "reference": "torch_eager"}

SUBMIT = """mutation($records: [JSON!]!) { submitRuns(records: $records) { ok runDatabaseIds problems { index key reason } } }"""
RUN = """query($id: ID!) { node(id: $id) { ... on Run { databaseId evidence claimedEvidence trustLevel trustLabel } } }"""


def measured_claims(count: int, start: int, *, mean: float = 1.3) -> list[dict]:
    """Records saying "measured", correctness passed, the same subject and SKU, each in an environment
    of its own that names a machine of its own (as a hostile source would invent them), agreeing."""
    records = synthetic_records(count, start=start)
    for i, record in enumerate(records):
        record["evidence"] = "measured"
        record["correctness"] = dict(CORRECT)
        record["statistics"] = {"mean": mean, "std": 0.01, "min": mean - 0.01, "max": mean + 0.01, "num_trials": 100}
        record["environment"]["details"] = {"machine_id": f"invented-machine-{start + i}"}
    return records


async def sql(db_url: str, query: str, *args) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        return await conn.fetch(query, *args)
    finally:
        await conn.close()


async def rung(graphql, run_id: int) -> dict:
    return (await graphql(RUN, {"id": to_global_id("Run", run_id)}))["node"]


async def stored(db_url: str, ids: list[int]) -> list[tuple]:
    rows = await sql(db_url, "SELECT evidence, claimed_evidence, fleet_worker_id FROM runs WHERE id = ANY($1::bigint[]) ORDER BY id", ids)
    return [tuple(r) for r in rows]


async def fleet_write(db_url: str, records: list[dict], *, name: str, machine: str) -> list[int]:
    """Store records as the registered worker `name` on `machine` does (kernelindex.fleet.worker)."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.fleet.registry import register_worker
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter

    async def work(session) -> list[int]:
        registration = await register_worker(session, name=name, machine_id=machine, hardware="NVIDIA H100 SXM5 80GB", now=datetime.now(UTC))
        summary = await RunWriter(fleet_worker=registration.writer_identity).write(
            session, [RunRecord(r, "kernelindex worker", f"job {i}") for i, r in enumerate(records)]
        )
        assert not summary.problems, summary.problems
        return summary.inserted_run_ids

    return await in_own_transaction(db_url, work)


# --- outside routes: Reported, whatever they say -----------------------------------------------------


async def test_submit_runs_saying_measured_stays_reported_on_two_invented_machines(db_url, client, graphql):
    token = await make_token(db_url, "runs:write")
    response = await client.post(
        "/graphql", json={"query": SUBMIT, "variables": {"records": measured_claims(2, start=500)}},
        headers={"Authorization": f"Bearer {token}"},
    )
    body = response.json()["data"]["submitRuns"]
    assert body["ok"] and not body["problems"], body
    ids = body["runDatabaseIds"]
    assert len(ids) == 2
    assert await stored(db_url, ids) == [("reported", "measured", None)] * 2
    for run_id in ids:
        # Both agree, on one SKU, from two environments naming two machines: still only a source's report.
        assert await rung(graphql, run_id) == {
            "databaseId": run_id, "evidence": "REPORTED", "claimedEvidence": "MEASURED", "trustLevel": "REPORTED",
            "trustLabel": "Reported · MIT · source",
        }
    # The claim does not confirm or contradict anything either: no reported figure is cross-checked by it.
    page = (await client.get(f"/workloads/{RESNET}.json")).json()
    assert "KernelIndex measurement" not in json.dumps(page)


def test_ingest_runs_file_saying_measured_stays_reported(cli, db_url, tmp_path, capsys):
    path = tmp_path / "claims.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in measured_claims(2, start=600)), encoding="utf-8")
    assert cli("ingest", "runs", str(path)) == 0
    rows = asyncio.run(sql(db_url, "SELECT evidence, claimed_evidence, fleet_worker_id FROM runs r JOIN environments e "
                                   "ON e.id = r.environment_id WHERE e.label IN ('pool-600', 'pool-601')"))
    assert [tuple(r) for r in rows] == [("reported", "measured", None)] * 2
    # Ingested again: the same records, unchanged (the claim is what the record said, kept).
    assert cli("ingest", "runs", str(path)) == 0
    assert "nothing new" in capsys.readouterr().err


async def test_the_seed_route_stores_reported_whatever_a_record_says(empty_db_url, tmp_path):
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.db.migrate import upgrade
    from kernelindex.ingest.seed import SEEDS_DIR, load_seed

    await asyncio.to_thread(upgrade, empty_db_url)
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for item in SEEDS_DIR.iterdir():
        (seeds / item.name).symlink_to(item)
    (seeds / "runs.jsonl").unlink()
    lines = (SEEDS_DIR / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    claims = [json.loads(line) for line in lines]
    claims[0] = {**claims[0], "evidence": "measured", "correctness": dict(CORRECT)}
    (seeds / "runs.jsonl").write_text("".join(json.dumps(c) + "\n" for c in claims), encoding="utf-8")
    await in_own_transaction(empty_db_url, lambda session: load_seed(session, seeds))
    rows = await sql(empty_db_url, "SELECT evidence, claimed_evidence, count(*) AS n FROM runs GROUP BY 1, 2 ORDER BY 1, 2")
    assert [tuple(r) for r in rows] == [("reported", "measured", 1), ("reported", None, len(lines) - 1)]


# --- the fleet's own route ----------------------------------------------------------------------------


async def test_a_registered_workers_run_is_verified(db_url, graphql):
    (run_id,) = await fleet_write(db_url, measured_claims(1, start=700), name="w-a", machine="machine-a")
    assert await stored(db_url, [run_id]) == [("measured", None, (await _worker_id(db_url, "w-a")))]
    found = await rung(graphql, run_id)
    assert (found["evidence"], found["claimedEvidence"], found["trustLevel"]) == ("MEASURED", None, "VERIFIED")


async def _worker_id(db_url: str, name: str) -> int:
    (row,) = await sql(db_url, "SELECT id FROM fleet_workers WHERE name = $1", name)
    return row["id"]


async def test_two_registered_workers_on_distinct_machines_that_agree_are_replicated(db_url, graphql):
    (a,) = await fleet_write(db_url, measured_claims(1, start=710), name="w-a", machine="machine-a")
    (b,) = await fleet_write(db_url, measured_claims(1, start=711, mean=1.301), name="w-b", machine="machine-b")
    assert [(await rung(graphql, i))["trustLevel"] for i in (a, b)] == ["REPLICATED", "REPLICATED"]


async def test_two_workers_of_one_machine_do_not_replicate(db_url, graphql):
    # Two environments, two worker names, one registered machine: not a second machine.
    (a,) = await fleet_write(db_url, measured_claims(1, start=720), name="w-1", machine="machine-a")
    (b,) = await fleet_write(db_url, measured_claims(1, start=721), name="w-2", machine="machine-a")
    assert [(await rung(graphql, i))["trustLevel"] for i in (a, b)] == ["VERIFIED", "VERIFIED"]


async def test_claims_from_outside_neither_replicate_nor_are_lifted_by_a_fleet_run(db_url, client, graphql):
    (fleet_run,) = await fleet_write(db_url, measured_claims(1, start=730), name="w-a", machine="machine-a")
    token = await make_token(db_url, "runs:write")
    body = (await client.post(
        "/graphql", json={"query": SUBMIT, "variables": {"records": measured_claims(1, start=731)}},
        headers={"Authorization": f"Bearer {token}"},
    )).json()["data"]["submitRuns"]
    (claim,) = body["runDatabaseIds"]
    assert (await rung(graphql, fleet_run))["trustLevel"] == "VERIFIED"
    assert (await rung(graphql, claim))["trustLevel"] == "REPORTED"


async def test_a_record_from_outside_cannot_replace_a_fleet_measurement(db_url, client, graphql):
    record = measured_claims(1, start=740)[0]
    (fleet_run,) = await fleet_write(db_url, [record], name="w-a", machine="machine-a")
    forged = copy.deepcopy(record)
    forged["statistics"] = {"mean": 41.16, "std": 0.01, "min": 41.15, "max": 41.17, "num_trials": 100}
    token = await make_token(db_url, "runs:write")
    body = (await client.post(
        "/graphql", json={"query": SUBMIT, "variables": {"records": [forged]}}, headers={"Authorization": f"Bearer {token}"},
    )).json()["data"]["submitRuns"]
    assert not body["ok"]
    assert [p["index"] for p in body["problems"]] == [0]
    assert f"run {fleet_run} with this natural key was measured by the fleet" in body["problems"][0]["reason"]
    rows = await sql(db_url, "SELECT mean_ms, superseded_at FROM runs WHERE id = $1", fleet_run)
    assert (rows[0]["mean_ms"], rows[0]["superseded_at"]) == (1.3, None)
    # The very record the fleet stored, sent again from outside, is unchanged (nothing to replace).
    body = (await client.post(
        "/graphql", json={"query": SUBMIT, "variables": {"records": [record]}}, headers={"Authorization": f"Bearer {token}"},
    )).json()["data"]["submitRuns"]
    assert body["ok"], body
    assert (await rung(graphql, fleet_run))["trustLevel"] == "VERIFIED"


# --- the database's guard and the migration -----------------------------------------------------------


async def test_the_database_refuses_measured_without_a_registered_worker(db_url):
    (run_id,) = [r["id"] for r in await sql(db_url, "SELECT id FROM runs ORDER BY id LIMIT 1")]
    with pytest.raises(asyncpg.CheckViolationError, match="ck_runs_measured_by_fleet"):
        await sql(db_url, "UPDATE runs SET evidence = 'measured' WHERE id = $1", run_id)
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await sql(db_url, "UPDATE runs SET evidence = 'measured', fleet_worker_id = 999999, fleet_machine_id = 'x' WHERE id = $1", run_id)
    (worker,) = await sql(db_url, "INSERT INTO fleet_workers (name, machine_id, hardware) VALUES ('w', 'real', 'cpu') RETURNING id")
    # A registered worker, but not the machine it registered: the copy is held to the worker's.
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await sql(db_url, "UPDATE runs SET evidence = 'measured', fleet_worker_id = $2, fleet_machine_id = 'forged' WHERE id = $1",
                  run_id, worker["id"])


async def test_migration_demotes_outside_claims_and_keeps_what_fleet_jobs_stored(db_url):
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.db.migrate import alembic_config
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter

    outside = measured_claims(1, start=800)
    (fleet_run,) = await fleet_write(db_url, measured_claims(1, start=801), name="w-a", machine="machine-a")
    summary = await in_own_transaction(db_url, lambda s: RunWriter().write(s, [RunRecord(outside[0], "t", "line 1")]))
    (claim_run,) = summary.inserted_run_ids
    # Rolled back, the claim's run stays reported (its claim goes with the column): no rung regained.
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0012")
    assert await stored_before(db_url, [claim_run, fleet_run]) == ["reported", "measured"]
    # Before 0013 a run was whatever its record said (as a token could store it), and the worker
    # named in fleet_jobs was the only trace of the fleet.
    await sql(db_url, "UPDATE runs SET evidence = 'measured' WHERE id = $1", claim_run)
    ids = await sql(db_url, "SELECT workload_id, workload_revision_id FROM runs WHERE id = $1", fleet_run)
    await sql(db_url, """INSERT INTO fleet_jobs (dedupe_key, kind, state, workload_id, workload_revision_id, implementation_slug,
        hardware, queue_name, max_attempts, worker, machine_id, run_id, started_at)
        VALUES ('k', 'sweep', 'passed', $1, $2, 'torch_eager', 'NVIDIA H100 SXM5 80GB', 'q', 1, 'w-a', 'machine-a', $3, now())""",
              ids[0]["workload_id"], ids[0]["workload_revision_id"], fleet_run)
    await asyncio.to_thread(command.upgrade, alembic_config(db_url), "head")
    rows = await sql(db_url, "SELECT r.id, r.evidence, r.claimed_evidence, w.name, w.machine_id FROM runs r "
                             "LEFT JOIN fleet_workers w ON w.id = r.fleet_worker_id WHERE r.id = ANY($1::bigint[]) ORDER BY r.id",
                     [claim_run, fleet_run])
    assert {r["id"]: tuple(r)[1:] for r in rows} == {
        claim_run: ("reported", "measured", None, None),
        fleet_run: ("measured", None, "w-a", "machine-a"),
    }


async def stored_before(db_url: str, ids: list[int]) -> list[str]:
    rows = await sql(db_url, "SELECT id, evidence FROM runs WHERE id = ANY($1::bigint[])", ids)
    by_id = {r["id"]: r["evidence"] for r in rows}
    return [by_id[i] for i in ids]
