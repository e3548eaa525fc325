"""The rules beyond the pages, through the API: floors, ties, ladder, flags and reviews, history,
deployability and compare."""

from __future__ import annotations

import json

import pytest

from kernelindex.ingest.seed import SEEDS_DIR
from tests.api.helpers import make_token, seed_record, synthetic_records, write_records

RESNET = "kernelbench-l3-p9-resnet18"


async def test_roofline_floors_on_every_sku(graphql):
    data = await graphql(
        '{ workload(slug: "kernelbench-l3-p9-resnet18") { roofline { summary bound floorDisplay ratioAboveDisplay }'
        " floors { hardware { sku } floorDisplay bound recordMs notes unavailableReason } } }"
    )
    w = data["workload"]
    # The record (eager, 1.39 ms) is on H100 PCIe: memory-bound at 23.5 µs there.
    assert w["roofline"]["bound"] == "MEMORY"
    assert w["roofline"]["floorDisplay"] == "23.5 µs"
    assert w["roofline"]["ratioAboveDisplay"] == "59.04×"
    floors = {f["hardware"]["sku"]: f for f in w["floors"]}
    assert set(floors) == {h["sku"] for h in json.loads((SEEDS_DIR / "hardware.json").read_text(encoding="utf-8"))["hardware"]}
    assert floors["NVIDIA H100 SXM5 80GB"]["floorDisplay"] == "14.7 µs"
    assert floors["NVIDIA H100 SXM5 80GB"]["bound"] == "COMPUTE"
    assert floors["NVIDIA H100 SXM5 80GB"]["recordMs"] == 1.47
    assert floors["NVIDIA B200 180GB"]["recordMs"] is None  # not measured, still bounded
    assert floors["NVIDIA B200 180GB"]["floorDisplay"] == "6.60 µs"
    assert any("TF32" in n for n in floors["NVIDIA T4 16GB"]["notes"])


async def test_page_keeps_v1_wording_and_adds_intervals(graphql):
    data = await graphql(
        '{ workload(slug: "kernelbench-l3-p9-resnet18") { comparison { rows { rankDisplay position verdict '
        "verdictWithInterval trustLevel crossCheck } } implementations { trustLevel implementation { slug deployability "
        "{ deployable permissive reasons { code words } } } } } }"
    )
    rows = data["workload"]["comparison"]["rows"]
    assert [(r["rankDisplay"], r["position"]) for r in rows] == [("1", 1), ("2", 2)]
    assert rows[1]["verdict"] == "1.09× slower than the baseline."
    assert rows[1]["verdictWithInterval"].startswith("1.09× slower than the baseline (95% CI")
    assert [r["trustLevel"] for r in rows] == ["REPORTED", "REPORTED"]
    assert all(r["crossCheck"] is None for r in rows)
    for impl in data["workload"]["implementations"]:
        assert impl["trustLevel"] == "REPORTED"
        d = impl["implementation"]["deployability"]
        assert d["deployable"] is False and d["permissive"] is True
        assert [r["code"] for r in d["reasons"]] == ["NO_INSTALL_RECIPE"]


async def test_measured_run_confirms_a_reported_one(db_url, graphql):
    rec = seed_record(0)  # ResNet18 eager on H100 PCIe, reported 1.39 ms
    rec["evidence"] = "measured"
    rec["source"] = {"name": "KernelIndex runner", "revision": "benchmarks/1"}
    rec["environment"]["label"] = "kernelindex-pcie-1"
    rec["statistics"].update(mean=1.41, min=1.35, max=1.6)
    rec["correctness"] = {"passed": True, "max_abs_diff": 1e-6, "max_rel_diff": 1e-5, "atol": 1e-4, "rtol": 1e-4}
    await write_records(db_url, [rec])
    data = await graphql('{ workload(slug: "kernelbench-l3-p9-resnet18") { comparison { rows { latencyMs crossCheck trustLevel } } '
                         "implementations { implementation { slug } trustLevel } } }")
    reported = next(r for r in data["workload"]["comparison"]["rows"] if r["latencyMs"] == 1.39)
    assert reported["crossCheck"].startswith("Confirmed by a KernelIndex measurement on H100 PCIe")
    levels = {i["implementation"]["slug"]: i["trustLevel"] for i in data["workload"]["implementations"]}
    assert levels["torch_eager"] == "VERIFIED"


async def test_implausible_run_is_held_until_reviewed(db_url, graphql, client):
    rec = synthetic_records(1)[0]
    rec["environment"] = seed_record(0)["environment"]  # the PCIe cohort, where eager is 1.39 ms
    rec["implementation"] = {"slug": "too_good_kernel"}
    rec["statistics"].update(mean=0.1, min=0.09, max=0.11)  # 13.9× faster than the baseline
    await write_records(db_url, [rec])
    query = '{ workload(slug: "kernelbench-l3-p9-resnet18") { eligibleRunCount headline { latencyMs } } runs(implementation: "too_good_kernel") { nodes { id reviewStatus reviewState flags { code reason } } } }'
    data = await graphql(query)
    assert data["workload"]["eligibleRunCount"] == 4 and data["workload"]["headline"]["latencyMs"] == 1.39
    (run,) = data["runs"]["nodes"]
    assert run["reviewStatus"] == "suspicious: needs review" and run["reviewState"] == "NEEDS_REVIEW"
    assert [f["code"] for f in run["flags"]] == ["IMPLAUSIBLE_SPEEDUP"]

    token = await make_token(db_url, "runs:review", name="reviewer")
    review = await client.post(
        "/graphql",
        json={"query": 'mutation($id: ID!) { reviewRun(id: $id, decision: APPROVED, note: "re-measured") { ok reviewStatus reviewState error } }',
              "variables": {"id": run["id"]}},
        headers={"authorization": f"Bearer {token}"},
    )
    assert review.json()["data"]["reviewRun"] == {"ok": True, "reviewStatus": "approved after review", "reviewState": "APPROVED", "error": None}
    data = await graphql(query)
    assert data["workload"]["eligibleRunCount"] == 5 and data["workload"]["headline"]["latencyMs"] == 0.1
    history = await graphql('{ recordFeed(first: 5) { nodes { kind workloadSlug improvementPercent words run { meanMs } previousRun { meanMs } } } }')
    newest = history["recordFeed"]["nodes"][0]
    assert newest["kind"] == "NEW_RECORD" and newest["run"]["meanMs"] == 0.1 and newest["previousRun"]["meanMs"] == 1.39
    assert newest["improvementPercent"] == pytest.approx((1.39 - 0.1) / 1.39 * 100)


async def test_retracting_the_holder_restores_the_previous_one(db_url, graphql, client):
    token = await make_token(db_url, "runs:retract", name="ops")
    data = await graphql('{ workload(slug: "kernelbench-l3-p9-resnet18") { headline { run { id } } } }')
    holder = data["workload"]["headline"]["run"]["id"]
    response = await client.post(
        "/graphql",
        json={"query": 'mutation($id: ID!) { retractRun(id: $id, reason: "bad clock") { ok } }', "variables": {"id": holder}},
        headers={"authorization": f"Bearer {token}"},
    )
    assert response.json()["data"]["retractRun"]["ok"] is True
    history = await graphql('{ workload(slug: "kernelbench-l3-p9-resnet18") { recordHistory(first: 10) { totalCount nodes { kind run { meanMs } previousRun { meanMs } } } } }')
    events = history["workload"]["recordHistory"]["nodes"]
    assert events[0]["kind"] == "RESTORED"
    assert events[0]["previousRun"]["meanMs"] == 1.39 and events[0]["run"]["meanMs"] == 1.52
    assert {e["kind"] for e in events[1:]} == {"NEW_RECORD"}  # the seed's first records stay in the history


async def test_compare_runs(graphql):
    data = await graphql('{ workload(slug: "kernelbench-l3-p9-resnet18") { comparison { rows { run { id } } } records { run { id } } } }')
    same_cohort = [r["run"]["id"] for r in data["workload"]["comparison"]["rows"]]
    result = (await graphql('query($ids: [ID!]!) { compareRuns(ids: $ids) { comparable winner { meanMs } incomparableBecause differences { field } } }',
                            {"ids": same_cohort}))["compareRuns"]
    assert result["comparable"] is True and result["winner"]["meanMs"] == 1.39 and result["incomparableBecause"] is None
    across = [r["run"]["id"] for r in data["workload"]["records"]]
    result = (await graphql('query($ids: [ID!]!) { compareRuns(ids: $ids) { comparable winner { meanMs } incomparableBecause } }',
                            {"ids": across}))["compareRuns"]
    assert result["comparable"] is False and result["winner"] is None
    assert "different hardware" in result["incomparableBecause"]
    body = await graphql('query($ids: [ID!]!) { compareRuns(ids: $ids) { comparable } }', {"ids": across[:1]}, expect_errors=True)
    assert "2 to 8 run IDs" in body["errors"][0]["message"]
