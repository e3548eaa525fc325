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
