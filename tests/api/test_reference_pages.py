"""Both reference pages (../shared/seeds/) reproduced through GraphQL and the JSON twin."""

from __future__ import annotations

from datetime import UTC

import pytest

from kernelindex.web.twins import WORKLOAD_PAGE_QUERY

RESNET18 = "kernelbench-l3-p9-resnet18"
VGG19 = "kernelbench-l3-p12-vgg19"


@pytest.fixture(params=["graphql", "json"])
def page(request, graphql, client):
    async def fetch(slug: str) -> dict:
        if request.param == "graphql":
            return (await graphql(WORKLOAD_PAGE_QUERY, {"slug": slug}))["workload"]
        response = await client.get(f"/workloads/{slug}.json")
        assert response.status_code == 200
        return response.json()

    return fetch


def _common_checks(w: dict) -> None:
    assert w["kind"] == "MODEL"
    assert w["eligibleRunCount"] == 4
    assert w["eligibleRunCountDisplay"] == "4 eligible runs"
    assert w["description"] == (
        "The computation is the reference PyTorch module's forward pass; the output shape follows the module "
        "(mirrored as each implementation's source)."
    )
    assert w["lastObservedDisplay"] == "last observed 2026-03-05"
    assert [r["label"] for r in w["records"]] == ["NVIDIA H100 · env 1", "NVIDIA H100 · env 2"]
    assert [r["runCount"] for r in w["records"]] == [2, 2]
    assert "Not measured on B200 for this workload." in [g["message"] for g in w["notMeasured"]]
    measured = {g["hardware"]["family"] for g in w["notMeasured"]}
    assert "NVIDIA H100" not in measured
    for row in w["comparison"]["rows"]:
        assert row["trustLabel"] == "Reported · MIT · source"
        assert row["observedDisplay"] == "2026-03-05"
        assert row["stale"] is True
        assert row["exactConfiguration"] is True
        assert "Measured exactly what you asked." in row["notes"]
        assert "Reported by source; not independently reproduced." in row["notes"]
        impl = row["implementation"]
        assert (impl["availabilityDetail"], impl["licence"], impl["installLabel"]) == ("source mirrored", "MIT", "no install recipe")
    baseline_rows = [r for r in w["comparison"]["rows"] if r["isBaseline"]]
    assert len(baseline_rows) == 1 and baseline_rows[0]["verdict"] is None
    assert "The source's designated baseline implementation." in baseline_rows[0]["notes"]
    assert w["comparison"]["gpu"] == "NVIDIA H100"
    assert w["comparison"]["protocolName"] == "KernelBench timing scripts"
    assert w["comparison"]["statistic"] == "mean"
    assert w["comparison"]["resultCountDisplay"] == "2 results"
    assert w["comparison"]["title"] == "Source-native comparison"
    hr = w["headroom"]
    assert hr["method"] == "headroom-v1"
    assert hr["boundLine"].endswith("bandwidth-bound on H100 SXM")
    assert hr["basisLine"] == "every declared tensor crosses HBM exactly once (3,350 GB/s, H100 SXM datasheet)"
    assert hr["notes"] == ["no arithmetic formula for this family: bandwidth floor only", "estimate, not evidence"]
    assert hr["description"] == (
        "headroom-v1: a lower bound from declared tensors and datasheet peaks. A kernel can sit well above it for good reasons."
    )
    by_slug = {i["implementation"]["slug"]: i for i in w["implementations"]}
    assert by_slug["torch_eager"]["runtimeDisplay"] == "python · torch_eager"
    assert by_slug["torch_compile_inductor"]["runtimeDisplay"] == "python · torch_compile_inductor"
    for i in w["implementations"]:
        assert i["trustLevel"] == "REPORTED"
        assert i["availability"] == "MIT · source"
        assert i["implementation"]["installLabel"] == "no install recipe"
    s = w["semantics"]
    assert [(t["name"], t["display"]) for t in s["inputs"]] == [("input_1", "fp32 [batch_size, 3, 224, 224]")]
    assert [(t["name"], t["display"]) for t in s["outputs"]] == [("out", "float [out]")]
    assert [(a["name"], a["behaviour"]) for a in s["axes"]] == [("out", "VARIABLE"), ("batch_size", "VARIABLE")]
    assert s["determinism"] == "UNSPECIFIED"
    assert s["constraints"] == ["No mutation or aliasing"]
    assert len(w["identity"]["sha256"]) == 64
    assert w["identity"]["short"] == w["identity"]["sha256"][:12] + "…"
    assert [src["display"] for src in w["sources"]] == ["KernelBench baseline timings (2026-03-05) · MIT"]
    assert w["policy"]["title"] == "How records are decided"
    assert "ranking-v1" in w["policy"]["version"]


async def test_resnet18_page(page):
    w = await page(RESNET18)
    _common_checks(w)
    assert w["title"] == "KernelBench level3 problem 9: ResNet18."
    h = w["headline"]
    assert h["label"] == "Source baseline · unbeaten"
    assert (h["latencyDisplay"], h["plusMinusDisplay"], h["statisticDisplay"]) == ("1.39 ms", "± 0.02", "mean of 100")
    assert h["latencyMs"] == pytest.approx(1.39)
    assert h["ciHalfWidthMs"] == pytest.approx(1.984217 * 0.0868 / 10)  # stats-v2: t(0.975, 99), not 1.96
    assert h["speedupDisplay"] is None
    assert h["implementation"]["title"] == "PyTorch eager"
    assert h["implementation"]["implementationLine"] == "PyTorch · MIT · python"
    assert h["implementation"]["packageLabel"] == "No package · vendor the source"
    assert h["evidenceLine"] == "Reported evidence · last observed 2026-03-05."
    assert h["caveats"] == ["The source's designated baseline implementation.", "Reported by source; not independently reproduced."]
    assert [(r["latencyDisplay"], r["implementation"]["title"]) for r in w["records"]] == [
        ("1.39 ms", "PyTorch eager"),
        ("1.47 ms", "torch.compile (inductor)"),
    ]
    c = w["comparison"]
    assert c["configuration"]["bindingsDisplay"] == "batch_size = 2"
    assert c["configuration"]["dtype"] == "fp32"
    assert c["header"] == (
        "Source-native comparison · GPU NVIDIA H100 · Workload batch_size = 2 · fp32 · Protocol KernelBench timing "
        "scripts · mean · 2 results · last observed 2026-03-05"
    )
    rows = c["rows"]
    assert [(r["rank"], r["implementation"]["title"], r["latencyDisplay"], r["plusMinusDisplay"], r["vsFirstDisplay"]) for r in rows] == [
        (1, "PyTorch eager", "1.39 ms", "± 0.02", "1.00×"),
        (2, "torch.compile (inductor)", "1.52 ms", "± 0.00", "1.09×"),
    ]
    assert rows[1]["verdict"] == "1.09× slower than the baseline."
    assert rows[1]["summary"] == (
        "1.09× slower than the baseline. Measured exactly what you asked. Reported by source; not independently reproduced."
    )
    assert rows[0]["summary"] == (
        "Measured exactly what you asked. The source's designated baseline implementation. "
        "Reported by source; not independently reproduced."
    )
    impls = {i["implementation"]["slug"]: (i["bestLatencyDisplay"], i["vsBestDisplay"]) for i in w["implementations"]}
    assert impls == {"torch_eager": ("1.39 ms", "1.00×"), "torch_compile_inductor": ("1.47 ms", "1.06×")}
    hr = w["headroom"]
    assert hr["bytes"] == 1_204_224
    assert hr["bytesDisplay"] == "1,204,224 bytes"
    assert hr["floorDisplay"] == "359 ns"
    assert hr["ratioAboveDisplay"] == "3866.81×"
    assert hr["summary"] == "Estimated floor 359 ns · record 3866.81× above it"
    assert hr["boundLine"] == "DRAM 359 ns · bandwidth-bound on H100 SXM"


async def test_vgg19_page(page):
    w = await page(VGG19)
    _common_checks(w)
    assert w["title"] == "KernelBench level3 problem 12: VGG19."
    h = w["headline"]
    assert h["label"] == "Fastest reported"
    assert (h["latencyDisplay"], h["plusMinusDisplay"], h["statisticDisplay"]) == ("2.43 ms", "± 0.00", "mean of 100")
    assert h["speedupDisplay"] == "1.60× faster than baseline"
    assert h["speedupVsBaseline"] == pytest.approx(3.88 / 2.43)
    assert h["implementation"]["title"] == "torch.compile (inductor)"
    assert h["implementation"]["implementationLine"] == "PyTorch · MIT · python"
    assert h["caveats"] == ["Reported by source; not independently reproduced."]
    assert [(r["latencyDisplay"], r["implementation"]["title"]) for r in w["records"]] == [
        ("2.43 ms", "torch.compile (inductor)"),
        ("3.64 ms", "torch.compile (inductor)"),
    ]
    c = w["comparison"]
    assert c["configuration"]["bindingsDisplay"] == "batch_size = 10"
    assert c["header"].startswith("Source-native comparison · GPU NVIDIA H100 · Workload batch_size = 10 · fp32 ·")
    rows = c["rows"]
    assert [(r["rank"], r["implementation"]["title"], r["latencyDisplay"], r["plusMinusDisplay"], r["vsFirstDisplay"]) for r in rows] == [
        (1, "torch.compile (inductor)", "2.43 ms", "± 0.00", "1.00×"),
        (2, "PyTorch eager", "3.88 ms", "± 0.00", "1.60×"),
    ]
    assert rows[0]["verdict"] == "1.60× faster than the baseline."
    assert rows[0]["summary"] == (
        "1.60× faster than the baseline. Measured exactly what you asked. Reported by source; not independently reproduced."
    )
    impls = {i["implementation"]["slug"]: (i["bestLatencyDisplay"], i["vsBestDisplay"]) for i in w["implementations"]}
    assert impls == {"torch_eager": ("3.88 ms", "1.60×"), "torch_compile_inductor": ("2.43 ms", "1.00×")}
    hr = w["headroom"]
    assert hr["bytes"] == 6_021_120
    assert hr["floorDisplay"] == "1.80 µs"
    assert hr["summary"] == "Estimated floor 1.80 µs · record 1351.99× above it"


async def test_twin_and_graphql_agree(graphql, client):
    for slug in (RESNET18, VGG19):
        via_graphql = (await graphql(WORKLOAD_PAGE_QUERY, {"slug": slug}))["workload"]
        via_twin = (await client.get(f"/workloads/{slug}.json")).json()
        assert via_graphql == via_twin


async def test_unknown_workload(graphql, client):
    assert (await graphql('{ workload(slug: "no-such") { slug } }'))["workload"] is None
    response = await client.get("/workloads/no-such.json")
    assert response.status_code == 404
    assert "no-such" in response.json()["error"]


async def test_stale_flag_follows_the_clock(db_url):
    """'now' is injected: the same runs are fresh the day after they were observed."""
    from datetime import datetime

    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    app = create_app(Settings(), database_url=db_url, clock=lambda: datetime(2026, 3, 6, tzinfo=UTC))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            body = (await client.get(f"/workloads/{RESNET18}.json")).json()
    assert [r["stale"] for r in body["comparison"]["rows"]] == [False, False]


async def test_a_tiny_interval_keeps_the_pages_notation_and_can_be_read_itself(graphql):
    """VGG19's record interval (0.0021 ms on 2.43 ms) reads "± 0.00" as its reference page shows;
    ciHalfWidthDisplay gives the interval itself, on the headline, the comparison's rows and a run."""
    query = """query ($slug: String!) { workload(slug: $slug) {
      headline { plusMinusDisplay ciHalfWidthDisplay ciHalfWidthMs run { plusMinusDisplay ciHalfWidthDisplay } }
      comparison { rows { plusMinusDisplay ciHalfWidthDisplay } } } }"""
    w = (await graphql(query, {"slug": VGG19}))["workload"]
    h = w["headline"]
    assert (h["plusMinusDisplay"], h["ciHalfWidthDisplay"]) == ("± 0.00", "± 0.0021 ms")
    assert h["ciHalfWidthMs"] == pytest.approx(0.0021, abs=5e-5)
    assert (h["run"]["plusMinusDisplay"], h["run"]["ciHalfWidthDisplay"]) == ("± 0.00", "± 0.0021 ms")
    assert [r["plusMinusDisplay"] for r in w["comparison"]["rows"]] == ["± 0.00", "± 0.00"]
    assert all(r["ciHalfWidthDisplay"].startswith("± 0.00") and r["ciHalfWidthDisplay"] != "± 0.00 ms"
               for r in w["comparison"]["rows"])
