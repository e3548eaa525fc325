"""Streamed exports."""

from __future__ import annotations

import csv
import io
import json

from kernelindex.ingest.seed import SEEDS_DIR

# Every SKU of the seed's catalogue is a hardware line of the export.
CATALOGUE_SIZE = len(json.loads((SEEDS_DIR / "hardware.json").read_text(encoding="utf-8"))["hardware"])


async def test_runs_csv(client):
    response = await client.get("/exports/runs.csv")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert len(rows) == 8
    eager_pcie = next(r for r in rows if r["workload"] == "kernelbench-l3-p9-resnet18" and r["implementation"] == "torch_eager"
                      and r["hardware_sku"] == "NVIDIA H100 PCIe 80GB")
    assert float(eager_pcie["mean_ms"]) == 1.39
    assert abs(float(eager_pcie["ci95_half_width_ms"]) - 1.984217 * 0.0868 / 10) < 1e-8  # stats-v2: t(0.975, 99), not 1.96
    assert eager_pcie["trust_label"] == "Reported · MIT · source"
    assert eager_pcie["stale"] == "True"
    assert eager_pcie["source_revision"] == "423217d"


async def test_runs_csv_filters(client):
    rows = list(csv.DictReader(io.StringIO((await client.get("/exports/runs.csv?workload=kernelbench-l3-p12-vgg19&hardware=NVIDIA+H100+SXM5+80GB")).text)))
    assert sorted(float(r["mean_ms"]) for r in rows) == [2.43, 3.88]
    bad = await client.get("/exports/runs.csv?evidence=rumoured")
    assert bad.status_code == 400 and "evidence must be" in bad.json()["error"]
    unknown = await client.get("/exports/runs.csv?colour=blue")
    assert unknown.status_code == 400 and "unknown filter(s): colour" in unknown.json()["error"]


async def test_catalog_jsonl_shape(client):
    response = await client.get("/exports/catalog.jsonl")
    assert response.status_code == 200
    lines = [json.loads(line) for line in response.text.splitlines()]
    formats = [line["format"] for line in lines]
    assert formats.count("kernelindex.hardware/1") == CATALOGUE_SIZE == 21
    assert formats.count("kernelindex.workload/1") == 2
    assert formats.count("kernelindex.run/1") == 8
    assert formats == sorted(formats, key=["kernelindex.hardware/1", "kernelindex.workload/1", "kernelindex.run/1"].index)
    from kernelindex.ingest.records import check_record

    for line in lines:
        if line["format"] == "kernelindex.run/1":
            assert check_record(line) == []


async def test_catalog_round_trip_into_an_empty_database(client, db_url, empty_db_url, tmp_path):
    """The JSONL export re-imports through `kernelindex ingest runs` into an empty database to the same runs."""
    import asyncio as _asyncio

    from kernelindex.db.migrate import upgrade
    from kernelindex.ingest.runs import ingest_runs_file
    from tests.api.helpers import synthetic_records, write_records

    await write_records(db_url, synthetic_records(5))
    exported = (await client.get("/exports/catalog.jsonl")).text
    path = tmp_path / "catalog.jsonl"
    path.write_text(exported)
    await _asyncio.to_thread(upgrade, empty_db_url)
    summary = await ingest_runs_file(empty_db_url, path, str(path), progress=False)
    assert summary.problems == [] and summary.inserted == 13
    again = await ingest_runs_file(empty_db_url, path, str(path), progress=False)
    assert again.inserted == 0 and again.unchanged == 13

    def runs_of(url):
        from tests.ingest.conftest import snapshot

        keep = ("mean_ms", "std_ms", "min_ms", "max_ms", "num_trials", "status", "observed_at", "dtype")
        # The evidence as the record said it: in the copy the fleet's measurements are a file's claims
        # (reported, the claim kept), since only a fleet worker of that index stores "measured".
        return sorted((*(r[k] for k in keep), r["claimed_evidence"] or r["evidence"]) for r in snapshot(url)["runs"])

    original, copy = await _asyncio.to_thread(runs_of, db_url), await _asyncio.to_thread(runs_of, empty_db_url)
    assert copy == original
    assert "measured" in {r[-1] for r in copy}
    from tests.ingest.conftest import snapshot

    assert {r["evidence"] for r in (await _asyncio.to_thread(snapshot, empty_db_url))["runs"]} == {"reported"}
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    app = create_app(Settings(), database_url=empty_db_url)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            page = (await c.get("/workloads/kernelbench-l3-p9-resnet18.json")).json()
    assert page["eligibleRunCount"] == 9 and page["headline"]["latencyMs"] == 1.2


async def _add_old_revision(db_url: str, slug: str) -> None:
    """A second, older revision of the workload (not current, no runs): a copy of the current one
    with another digest."""
    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        columns = [r["column_name"] for r in await conn.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'workload_revisions' "
            "AND column_name NOT IN ('id', 'source_sha256') AND is_generated = 'NEVER' ORDER BY ordinal_position")]
        cols = ", ".join(f'"{c}"' for c in columns)
        await conn.execute(
            f"INSERT INTO workload_revisions ({cols}, source_sha256) SELECT {cols}, md5(source_sha256) || md5(source_sha256) "
            "FROM workload_revisions WHERE id = (SELECT current_revision_id FROM workloads WHERE slug = $1)", slug)
    finally:
        await conn.close()


def _workload_lines(text: str) -> list[dict]:
    return [line for line in map(json.loads, text.splitlines()) if line["format"] == "kernelindex.workload/1"]


async def test_catalog_of_one_workload_carries_only_its_current_revision_unless_asked_for_all(client, db_url):
    resnet = "kernelbench-l3-p9-resnet18"
    await _add_old_revision(db_url, resnet)
    one = (await client.get("/exports/catalog.jsonl", params={"workload": resnet})).text
    lines = _workload_lines(one)
    assert [(w["slug"], w["current"]) for w in lines] == [(resnet, True)]
    runs = [json.loads(line) for line in one.splitlines() if '"kernelindex.run/1"' in line]
    assert runs and {r["workload"]["slug"] for r in runs} == {resnet}
    every = _workload_lines((await client.get("/exports/catalog.jsonl", params={"workload": resnet, "revisions": "all"})).text)
    assert sorted((w["slug"], w["current"]) for w in every) == [(resnet, False), (resnet, True)]
    # Without a workload filter: every workload, each with its current revision (the one the runs are on).
    assert sorted(w["slug"] for w in _workload_lines((await client.get("/exports/catalog.jsonl")).text)) == [
        "kernelbench-l3-p12-vgg19", resnet]
    bad = await client.get("/exports/catalog.jsonl", params={"revisions": "some"})
    assert bad.status_code == 400 and "revisions must be current or all" in bad.json()["error"]
    assert (await client.get("/exports/runs.csv", params={"revisions": "all"})).status_code == 400  # catalog only
