"""Streamed exports."""

from __future__ import annotations

import csv
import io
import json


async def test_runs_csv(client):
    response = await client.get("/exports/runs.csv")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert len(rows) == 8
    eager_pcie = next(r for r in rows if r["workload"] == "kernelbench-l3-p9-resnet18" and r["implementation"] == "torch_eager"
                      and r["hardware_sku"] == "NVIDIA H100 PCIe 80GB")
    assert float(eager_pcie["mean_ms"]) == 1.39
    assert float(eager_pcie["ci95_half_width_ms"]) == 1.96 * 0.0868 / 10
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
    assert formats.count("kernelindex.hardware/1") == 12
    assert formats.count("kernelindex.workload/1") == 2
    assert formats.count("kernelindex.run/1") == 8
    assert formats == sorted(formats, key=["kernelindex.hardware/1", "kernelindex.workload/1", "kernelindex.run/1"].index)
    from kernelindex.ingest.records import check_record

    for line in lines:
        if line["format"] == "kernelindex.run/1":
            assert check_record(line) == []
