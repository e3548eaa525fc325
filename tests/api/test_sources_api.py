"""What the API serves of the public sources (issue 25, point 6), on the shared files, checked against an
independent reading of the raw rows: a Liger-Kernel workload's page compares liger with HuggingFace on
each GPU with the speedup over the baseline; a FlashInfer-Bench workload's record on B200 names the
implementation's authors and licence; suites and sources count what the files hold."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from datetime import date
from pathlib import Path

import pytest
import zstandard

from kernelindex.ingest.source_import import Snapshot, import_source_file

SHARED = Path(__file__).resolve().parents[3] / "shared" / "sources"
LIGER = SHARED / "liger-kernel" / "all_benchmark_data-2120862b.csv"
EXPORT = SHARED / "kernelindex-export" / "catalog-2026-08-16-94af2ae7.jsonl.zst"


@pytest.mark.skipif(not LIGER.is_file(), reason="../shared/sources/liger-kernel is not present")
async def test_a_liger_page_compares_liger_with_huggingface_with_the_speedup(db_url, graphql):
    from kernelindex.ingest.sources.liger import read_liger

    read = read_liger(LIGER, revision="2120862b", observed=date(2026, 8, 10))
    await import_source_file(db_url, read, [read.source], Snapshot("2120862b", date(2026, 8, 10), LIGER.name))
    data = await graphql("""{ workload(slug: "liger-kernel-layer-norm-forward") {
        suiteKey reference canonicalConfiguration { bindings { axis value } }
        comparisons { environment { hardware { sku driverProductNames } }
          rows { implementation { slug role version } run { figure figureLow figureHigh lowQuantile highQuantile metric } speedupVsBaseline verdict } } }
      suites { name workloadCount runCount } sources { key licence runCount latestRevision } }""")
    page = data["workload"]
    canonical = {b["axis"]: b["value"] for b in page["canonicalConfiguration"]["bindings"]}
    # The raw rows of the file, read here: (provider, GPU) → (median, p20, p80) at the canonical case
    raw: dict[tuple[str, str], tuple[float, float, float]] = {}
    with LIGER.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        config = json.loads(row["extra_benchmark_config_str"])
        if (row["kernel_name"], row["kernel_operation_mode"], row["metric_name"]) == ("layer_norm", "forward", "speed") and \
                {row["x_name"]: int(row["x_value"]), **{k: v for k, v in config.items() if isinstance(v, int)}} == canonical:
            raw[(row["kernel_provider"], row["gpu_name"])] = (float(row["y_value_50"]), float(row["y_value_20"]), float(row["y_value_80"]))
    assert len(page["comparisons"]) == len({gpu for _, gpu in raw}) >= 2
    for comparison in page["comparisons"]:
        names = comparison["environment"]["hardware"]["driverProductNames"]
        gpu = next(n for n in names if ("liger", n) in raw)
        by_provider = {row["implementation"]["slug"].split("/")[0]: row for row in comparison["rows"]}
        assert set(by_provider) == {p for p, g in raw if g == gpu}
        baseline = by_provider["huggingface"]
        assert baseline["implementation"]["role"] == "BASELINE" and baseline["speedupVsBaseline"] is None
        liger = by_provider["liger"]
        median, p20, p80 = raw[("liger", gpu)]
        assert (liger["run"]["figure"], liger["run"]["figureLow"], liger["run"]["figureHigh"]) == pytest.approx((median, p20, p80), rel=1e-11)
        assert (liger["run"]["lowQuantile"], liger["run"]["highQuantile"]) == (0.2, 0.8)
        assert liger["speedupVsBaseline"] == pytest.approx(raw[("huggingface", gpu)][0] / median, rel=1e-11)
        assert liger["verdict"] == "No verdict (no spread reported: no interval)."
    suites = {s["name"]: s for s in data["suites"]}
    assert suites["liger-kernel"]["runCount"] == len(rows)
    assert suites["liger-kernel"]["workloadCount"] == len({(r["kernel_name"], r["kernel_operation_mode"]) for r in rows})
    sources = {s["key"]: s for s in data["sources"]}
    assert sources["liger-kernel"]["licence"] == "BSD-2-Clause" and sources["liger-kernel"]["latestRevision"] == "2120862b"


@pytest.mark.skipif(not EXPORT.is_file(), reason="../shared/sources/kernelindex-export is not present")
async def test_a_flashinfer_record_on_b200_names_its_authors_and_licence(db_url, graphql):
    from kernelindex.ingest.sources.kernelindex_export import read_export

    read = read_export(EXPORT)
    await import_source_file(db_url, read, read.sources, Snapshot(read.revision, read.route_date, read.route))
    slug = "flashinfer-bench-gemm-nvfp4-n2048-k2048"
    data = await graphql("""query($slug: String!) { workload(slug: $slug) { suiteKey family
        records { run { figure upstreamId sourceSpeedup environment { hardware { sku } } protocol { metric statistic }
          implementation { title authors licence project } source { name licence terms attribution route } } } }
      suites { name runCount } sources { key name runCount terms attribution } }""", {"slug": slug})
    records = data["workload"]["records"]
    assert {r["run"]["environment"]["hardware"]["sku"] for r in records} == {"NVIDIA B200 180GB"}
    # the raw file, read here: the passed runs of this operation's canonical case on B200, mean in ns
    tables: dict[str, list[dict]] = defaultdict(list)
    with EXPORT.open("rb") as handle:
        for line in io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(handle), encoding="utf-8"):
            item = json.loads(line)
            tables[item["table"]].append(item["row"])
    runs = {r["id"]: r for r in tables["benchmark_runs"]}
    best = min(records, key=lambda r: r["run"]["figure"])["run"]
    raw = runs[best["upstreamId"]]
    mean = next(m["value"] for m in tables["measurements"] if m["runId"] == raw["id"] and m["statistic"] == "mean")
    assert raw["status"] == "passed" and raw["hardwareModel"] == "NVIDIA B200"
    assert best["figure"] == pytest.approx(mean / 1e6, rel=1e-11)
    same_case = [r for r in runs.values() if r["workloadId"] == raw["workloadId"] and r["status"] == "passed"
                 and r["hardwareModel"] == "NVIDIA B200"]
    fastest = min(next(m["value"] for m in tables["measurements"] if m["runId"] == r["id"] and m["statistic"] == "mean")
                  for r in same_case)
    assert mean == fastest
    impl = best["implementation"]
    raw_impl = next(i for i in tables["implementations"] if i["id"] == raw["implementationId"])
    assert impl["title"] == raw_impl["title"] and impl["licence"] and impl["authors"]
    assert best["source"]["name"] == "FlashInfer-Bench" and best["source"]["route"] == EXPORT.name
    assert best["source"]["licence"] == "Apache-2.0" and best["source"]["attribution"]
    assert best["protocol"] == {"metric": "LATENCY", "statistic": "mean"}
    counted = defaultdict(int)
    slugs = {s["id"]: s["slug"] for s in tables["sources"]}
    for r in runs.values():
        counted[slugs[r["sourceId"]]] += 1
    assert {s["key"]: s["runCount"] for s in data["sources"] if s["key"] in counted} == dict(counted)


@pytest.mark.skipif(not LIGER.is_file(), reason="../shared/sources/liger-kernel is not present")
async def test_every_liger_configuration_and_metric_holds_records_of_its_own(db_url, graphql):
    """Records at every x value and for peak memory apart from latency (eligibility-v3), each record the best
    figure the raw rows give for that configuration, metric and GPU."""
    from kernelindex.ingest.sources.liger import read_liger

    read = read_liger(LIGER, revision="2120862b", observed=date(2026, 8, 10))
    await import_source_file(db_url, read, [read.source], Snapshot("2120862b", date(2026, 8, 10), LIGER.name))
    slug = "liger-kernel-layer-norm-full"
    listed = (await graphql("""query($slug: String!) { workload(slug: $slug) { eligibleRunCount
        records { figure } configurations { key canonical metric eligibleRunCount configuration { bindings { axis value } }
          measuredOn { driverProductNames } } } }""", {"slug": slug}))["workload"]
    # The raw rows, read here: (bindings, metric, GPU) → {provider: median}
    raw: dict[tuple, dict[str, float]] = defaultdict(dict)
    with LIGER.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if (row["kernel_name"], row["kernel_operation_mode"]) != ("layer_norm", "full"):
                continue
            config = json.loads(row["extra_benchmark_config_str"])
            bindings = {row["x_name"]: int(row["x_value"]), **{k: v for k, v in config.items() if isinstance(v, int)}}
            metric = {"speed": "LATENCY", "memory": "MEMORY"}[row["metric_name"]]
            raw[(tuple(sorted(bindings.items())), metric, row["gpu_name"])][row["kernel_provider"]] = float(row["y_value_50"])
    # every configuration and metric of the file is listed once, the canonical latency first
    scopes = listed["configurations"]
    assert scopes[0]["canonical"] and scopes[0]["metric"] == "LATENCY"
    assert scopes[0]["eligibleRunCount"] == listed["eligibleRunCount"]
    assert {(tuple(sorted((b["axis"], b["value"]) for b in s["configuration"]["bindings"])), s["metric"]) for s in scopes} == \
        {(k[0], k[1]) for k in raw}
    assert len(scopes) == len({(k[0], k[1]) for k in raw}) and {s["metric"] for s in scopes} == {"LATENCY", "MEMORY"}
    sizes = sorted({dict(k[0])["N"] for k in raw})
    assert [dict((b["axis"], b["value"]) for b in s["configuration"]["bindings"])["N"] for s in scopes[2::2]] == \
        [n for n in sizes if n != dict((b["axis"], b["value"]) for b in scopes[0]["configuration"]["bindings"])["N"]]
    checked = 0
    for scope in scopes:
        bindings = tuple(sorted((b["axis"], b["value"]) for b in scope["configuration"]["bindings"]))
        records = (await graphql("""query($slug: String!, $key: String, $metric: Metric!) { workload(slug: $slug) {
            recordsAt(configuration: $key, metric: $metric) { figure figureUnit latencyMs metric runCount
              implementation { slug } environment { hardware { driverProductNames } } } } }""",
            {"slug": slug, "key": scope["key"], "metric": scope["metric"]}))["workload"]["recordsAt"]
        gpus = {g for (b, m, g) in raw if b == bindings and m == scope["metric"]}
        assert len(records) == len(gpus) and sum(r["runCount"] for r in records) == scope["eligibleRunCount"]
        for record in records:
            gpu = next(n for n in record["environment"]["hardware"]["driverProductNames"] if n in gpus)
            figures = raw[(bindings, scope["metric"], gpu)]
            # no figure here is over 10x its baseline's, so none is held for review: the record is the best
            assert max(figures.values()) / min(figures.values()) < 10
            assert record["figure"] == pytest.approx(min(figures.values()), rel=1e-11)
            assert record["implementation"]["slug"].split("/")[0] == min(figures, key=figures.__getitem__)
            assert record["metric"] == scope["metric"]
            assert record["figureUnit"] == ("MS" if scope["metric"] == "LATENCY" else "MB")
            assert (record["latencyMs"] is None) == (scope["metric"] == "MEMORY")
            checked += 1
    assert checked >= 2 * len(scopes)
    # the headline records are the canonical configuration's latencies, as before
    canonical = tuple(sorted((x["axis"], x["value"]) for x in scopes[0]["configuration"]["bindings"]))
    headline = sorted(min(v.values()) for (b, m, _), v in raw.items() if m == "LATENCY" and b == canonical)
    assert sorted(r["figure"] for r in listed["records"]) == pytest.approx(headline, rel=1e-11)
    # a configuration the workload holds no records at is an error that says where the others are listed
    body = await graphql("""query($slug: String!) { workload(slug: $slug) { recordsAt(configuration: "{}") { figure } } }""",
                         {"slug": slug}, expect_errors=True)
    assert "Workload.configurations lists the" in body["errors"][0]["message"]
    # a comparison at another configuration ranks its cohort with the speedup over the baseline
    other = next(s for s in scopes if not s["canonical"] and s["metric"] == "LATENCY")
    comparisons = (await graphql("""query($slug: String!, $key: String) { workload(slug: $slug) {
        comparisonsAt(configuration: $key) { rows { implementation { slug role } latencyMs speedupVsBaseline exactConfiguration } } } }""",
        {"slug": slug, "key": other["key"]}))["workload"]["comparisonsAt"]
    assert comparisons
    for comparison in comparisons:
        rows = comparison["rows"]
        baseline = next(r for r in rows if r["implementation"]["role"] == "BASELINE")
        for row in rows:
            assert row["exactConfiguration"]
            if row is not baseline:
                assert row["speedupVsBaseline"] == pytest.approx(baseline["latencyMs"] / row["latencyMs"], rel=1e-9)


@pytest.mark.skipif(not EXPORT.is_file(), reason="../shared/sources/kernelindex-export is not present")
async def test_every_flashinfer_case_holds_its_own_record(db_url, graphql):
    """A FlashInfer-Bench operation's every case (configuration) has its records, each the fastest passed run
    of that case and GPU in the raw file, read here."""
    from kernelindex.ingest.sources.kernelindex_export import read_export

    read = read_export(EXPORT)
    await import_source_file(db_url, read, read.sources, Snapshot(read.revision, read.route_date, read.route))
    tables: dict[str, list[dict]] = defaultdict(list)
    with EXPORT.open("rb") as handle:
        for line in io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(handle), encoding="utf-8"):
            item = json.loads(line)
            tables[item["table"]].append(item["row"])
    means = {m["runId"]: m["value"] for m in tables["measurements"] if m["metric"] == "latency" and m["statistic"] == "mean"}
    operation = next(o for o in tables["operations"] if o["slug"] == "gemm-n2048-k4096")
    cases = {c["id"]: c for c in tables["workloads"] if c["operationId"] == operation["id"]}
    fastest: dict[tuple, float] = {}
    for r in tables["benchmark_runs"]:
        if r["workloadId"] in cases and r["status"] == "passed" and r["id"] in means:
            axes = tuple(sorted((cases[r["workloadId"]].get("manifest", {}).get("spec", {}).get("axes") or {}).items()))
            key = (axes, r["hardwareModel"])
            fastest[key] = min(fastest.get(key, float("inf")), means[r["id"]])
    assert len({k[0] for k in fastest}) > 1
    page = (await graphql("""{ workload(slug: "flashinfer-bench-gemm-n2048-k4096") { configurations { key metric
        configuration { bindings { axis value } } } } }"""))["workload"]
    assert {tuple(sorted((b["axis"], b["value"]) for b in s["configuration"]["bindings"])) for s in page["configurations"]} == \
        {k[0] for k in fastest}
    for scope in page["configurations"]:
        axes = tuple(sorted((b["axis"], b["value"]) for b in scope["configuration"]["bindings"]))
        records = (await graphql("""query($key: String) { workload(slug: "flashinfer-bench-gemm-n2048-k4096") {
            recordsAt(configuration: $key) { figure environment { hardware { driverProductNames } } } } }""",
            {"key": scope["key"]}))["workload"]["recordsAt"]
        best: dict[str, float] = {}
        for record in records:
            gpu = next(n for n in record["environment"]["hardware"]["driverProductNames"] if (axes, n) in fastest)
            best[gpu] = min(best.get(gpu, float("inf")), record["figure"])
        assert best == pytest.approx({g: fastest[(a, g)] / 1e6 for a, g in fastest if a == axes}, rel=1e-11)
