"""Floors are lower bounds and holds are said on the page (issue 26, point 5), through the API.

- a run held for review is counted on its workload's page, in a field and in words;
- a SKU whose only runs are held was measured: it is not "Not measured on X";
- the source's designated baseline is never held, even under its floor: the floor says it is beaten
  (`defect`, `beatenBy`) instead;
- a candidate whose correctness check passed is not held for beating a floor either.
"""

from __future__ import annotations

from tests.api.helpers import seed_record, write_records

RESNET = "kernelbench-l3-p9-resnet18"
B200 = "NVIDIA B200 180GB"

PAGE = """
query($slug: String!) {
  workload(slug: $slug) {
    eligibleRunCount heldRunCount heldSummary
    headline { label latencyMs }
    notMeasured { message hardware { sku } }
    roofline { summary defect beatenBy { databaseId } }
    floors { hardware { sku } recordMs floorDisplay summary defect beatenBy { databaseId } }
  }
}
"""


def _b200_record(implementation: str, mean: float, label: str) -> dict:
    rec = seed_record(0)
    rec["implementation"] = {"slug": implementation}
    rec["environment"] = {"hardware": {"sku": B200}, "provider": "TestCloud", "label": label, "software": {}}
    rec["statistics"].update(mean=mean, std=mean / 100, min=mean * 0.99, max=mean * 1.01)
    return rec


async def _page(graphql) -> dict:
    return (await graphql(PAGE, {"slug": RESNET}))["workload"]


async def _run_id(graphql, implementation: str, sku: str) -> dict:
    data = await graphql(
        "query($impl: String!) { runs(implementation: $impl, first: 50) { nodes { databaseId flags { code } "
        "environment { hardware { sku } } } } }",
        {"impl": implementation},
    )
    (run,) = [n for n in data["runs"]["nodes"] if n["environment"]["hardware"]["sku"] == sku]
    return run


async def test_the_seed_page_holds_nothing(graphql):
    w = await _page(graphql)
    assert (w["heldRunCount"], w["heldSummary"]) == (0, None)
    assert "Not measured on B200 for this workload." in [g["message"] for g in w["notMeasured"]]
    assert all(f["defect"] is None and f["beatenBy"] is None for f in w["floors"])
    assert w["roofline"]["defect"] is None


async def test_a_faster_run_held_for_review_is_counted_in_words(db_url, graphql, client):
    """Level 1 problem 40's case: the baseline holds the headline while a faster run waits for review;
    the page says so instead of reading as if nothing were faster."""
    rec = seed_record(0)  # the PCIe cohort, where eager is 1.39 ms
    rec["implementation"] = {"slug": "too_good_kernel"}
    rec["statistics"].update(mean=0.1, min=0.09, max=0.11)  # 13.9× faster than the baseline, above the 23.5 µs floor
    await write_records(db_url, [rec])
    w = await _page(graphql)
    assert w["headline"] == {"label": "Source baseline · unbeaten", "latencyMs": 1.39}
    assert w["eligibleRunCount"] == 4
    assert w["heldRunCount"] == 1
    assert w["heldSummary"] == "1 faster run held for review: implausible speedup"
    # the JSON twin of the page says it too
    twin = (await client.get(f"/workloads/{RESNET}.json")).json()
    assert (twin["heldRunCount"], twin["heldSummary"]) == (1, "1 faster run held for review: implausible speedup")


async def test_a_sku_whose_only_run_is_held_is_not_called_unmeasured(db_url, graphql):
    # 0.001 ms under the B200 floor of 6.60 µs, from a candidate without a correctness check: held.
    await write_records(db_url, [_b200_record("too_good_kernel", 0.001, "b200-held")])
    w = await _page(graphql)
    assert w["eligibleRunCount"] == 4 and w["heldRunCount"] == 1
    assert w["heldSummary"] == "1 faster run held for review: below its estimated floor"
    messages = [g["message"] for g in w["notMeasured"]]
    assert "Not measured on B200 for this workload." not in messages
    assert B200 not in {g["hardware"]["sku"] for g in w["notMeasured"]}
    floors = {f["hardware"]["sku"]: f for f in w["floors"]}
    assert floors[B200]["recordMs"] is None and floors[B200]["defect"] is None  # a held run is no record


async def test_the_source_baseline_is_never_held_and_the_floor_it_beats_says_so(db_url, graphql):
    await write_records(db_url, [_b200_record("torch_eager", 0.001, "b200-baseline")])
    run = await _run_id(graphql, "torch_eager", B200)
    assert run["flags"] == []
    w = await _page(graphql)
    assert w["heldRunCount"] == 0 and w["heldSummary"] is None
    assert w["eligibleRunCount"] == 5
    assert w["headline"]["latencyMs"] == 0.001
    floor = {f["hardware"]["sku"]: f for f in w["floors"]}[B200]
    assert floor["recordMs"] == 0.001 and floor["floorDisplay"] == "6.60 µs"
    assert floor["defect"] == "record 1.00 µs is under this floor of 6.60 µs: the floor is wrong (a count or a peak), not the run"
    assert floor["summary"].endswith("record 0.15× the floor: a floor defect")
    assert floor["beatenBy"] == {"databaseId": run["databaseId"]}
    assert w["roofline"]["beatenBy"] == {"databaseId": run["databaseId"]}
    assert w["roofline"]["defect"] == floor["defect"]
    # every other SKU's floor stands
    assert [f["hardware"]["sku"] for f in w["floors"] if f["defect"]] == [B200]


async def test_a_correct_candidate_under_its_floor_is_not_held(db_url, graphql):
    rec = _b200_record("fast_kernel", 0.001, "b200-checked")
    rec["correctness"] = {"passed": True, "max_abs_diff": 1e-6, "max_rel_diff": 1e-5, "atol": 1e-4, "rtol": 1e-4}
    await write_records(db_url, [rec])
    run = await _run_id(graphql, "fast_kernel", B200)
    assert run["flags"] == []
    w = await _page(graphql)
    assert w["heldRunCount"] == 0 and w["eligibleRunCount"] == 5
    floor = {f["hardware"]["sku"]: f for f in w["floors"]}[B200]
    assert floor["beatenBy"] == {"databaseId": run["databaseId"]} and floor["defect"] is not None


async def test_a_v1_below_floor_flag_on_the_baseline_holds_nothing(db_url, graphql):
    """A database judged under plausibility-v1 keeps its flags as history; the baseline's v1 below_floor
    flag (level 1 problem 97's case) no longer holds it, in Python or in SQL (the comparison's LIMIT)."""
    from sqlalchemy import text

    from kernelindex.db.engine import in_own_transaction
    from kernelindex.services.records import refresh_all_records

    async def flag_the_pcie_baseline(session):
        run_id = (await session.execute(text(
            "SELECT r.id FROM runs r JOIN implementations i ON i.id = r.implementation_id "
            "JOIN environments e ON e.id = r.environment_id JOIN workloads w ON w.id = r.workload_id "
            "WHERE w.slug = :slug AND i.slug = 'torch_eager' AND e.label = 'H100_PCIe_LambdaLabs'"
        ), {"slug": RESNET})).scalar_one()
        await session.execute(text(
            "INSERT INTO run_flags (run_id, code, reason, rule_version) "
            "VALUES (:id, 'below_floor', '1.39 ms is below the estimated floor of 2.00 ms', 'plausibility-v1')"
        ), {"id": run_id})
        await refresh_all_records(session)
        return run_id

    run_id = await in_own_transaction(db_url, flag_the_pcie_baseline)
    w = await _page(graphql)
    assert (w["eligibleRunCount"], w["heldRunCount"], w["heldSummary"]) == (4, 0, None)
    assert w["headline"] == {"label": "Source baseline · unbeaten", "latencyMs": 1.39}
    data = await graphql(
        "query($slug: String!) { workload(slug: $slug) { comparison { rows { run { databaseId } } } } "
        "runs(workload: $slug, first: 20) { nodes { databaseId flags { code } reviewStatus reviewState } } }",
        {"slug": RESNET},
    )
    assert run_id in [r["run"]["databaseId"] for r in data["workload"]["comparison"]["rows"]]
    (run,) = [n for n in data["runs"]["nodes"] if n["databaseId"] == run_id]
    assert run == {"databaseId": run_id, "flags": [{"code": "BELOW_FLOOR"}], "reviewStatus": None, "reviewState": None}


async def test_v1_below_floor_flags_are_judged_again_against_the_current_floor(db_url, graphql):
    """plausibility-v1's below_floor flags were raised against headroom-v2's floor (level 1 problem 97's
    inductor run held under a 16.4 ms floor it was not under at 2.56 ms): they hold nothing now, and a
    refresh raises the flag again, as plausibility-v2's, only where the run is under the current floor."""
    from sqlalchemy import text

    from kernelindex.db.engine import in_own_transaction
    from kernelindex.services.records import refresh_all_records

    above = seed_record(0)  # the PCIe cohort: 1.00 ms, far above the 23.5 µs floor, 1.39× faster than eager
    above["implementation"] = {"slug": "steady_kernel"}
    above["statistics"].update(mean=1.0, min=0.99, max=1.01)
    below = _b200_record("too_good_kernel", 0.001, "b200-judged-again")  # under the B200 floor of 6.60 µs
    await write_records(db_url, [above, below])
    steady, too_good = (await _run_id(graphql, "steady_kernel", "NVIDIA H100 PCIe 80GB"))["databaseId"], (
        await _run_id(graphql, "too_good_kernel", B200))["databaseId"]

    async def as_if_judged_by_v1(session):
        await session.execute(text(
            "INSERT INTO run_flags (run_id, code, reason, rule_version) "
            "VALUES (:id, 'below_floor', '1.00 ms is below the estimated floor of 2.00 ms', 'plausibility-v1')"
        ), {"id": steady})
        await session.execute(text("UPDATE run_flags SET rule_version = 'plausibility-v1' WHERE run_id = :id"), {"id": too_good})
        await refresh_all_records(session)
        return (await session.execute(text(
            "SELECT run_id, rule_version FROM run_flags WHERE run_id IN (:a, :b) ORDER BY run_id"
        ), {"a": steady, "b": too_good})).all()

    flags = await in_own_transaction(db_url, as_if_judged_by_v1)
    assert [tuple(f) for f in flags] == [(steady, "plausibility-v1"), (too_good, "plausibility-v2")]
    w = await _page(graphql)
    assert w["eligibleRunCount"] == 5  # the steady kernel counts; the one under the B200 floor is held again
    assert w["heldSummary"] == "1 faster run held for review: below its estimated floor"
