"""/exports/catalog.jsonl carries every run of every suite (issue 25, point 6): a source adapter's runs
(Liger-Kernel's medians with their 20th/80th percentiles, peak memory in MB, GPU MODE's score in s,
FlashInfer-Bench's runs without a trial count and with their own speedup) in the run-record format's
stated form, with their upstream source and licence. `kernelindex ingest runs` reads the export back
into an empty database as the same runs, compared here by a query of its own over both databases; and
ingesting it again where it came from changes nothing (0 inserted, 0 superseded).

The shared files (../shared/sources/) make the first test; the second, synthetic, needs none."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, date, datetime
from pathlib import Path

import asyncpg
import pytest

from kernelindex.db.engine import in_own_transaction
from kernelindex.db.migrate import upgrade
from kernelindex.db.urls import to_libpq_url
from kernelindex.ingest.runs import ingest_runs_file
from kernelindex.ingest.source_import import Snapshot, import_source
from kernelindex.ingest.sources.parts import (
    ConfigurationPart,
    Figure,
    ImplementationPart,
    ProtocolPart,
    ReadSummary,
    RunPart,
    SourcePart,
    Where,
    WorkloadPart,
)

SHARED = Path(__file__).resolve().parents[3] / "shared" / "sources"
EXPORT = SHARED / "kernelindex-export" / "catalog-2026-08-16-94af2ae7.jsonl.zst"
LIGER = SHARED / "liger-kernel" / "all_benchmark_data-2120862b.csv"
needs_shared = pytest.mark.skipif(not (EXPORT.is_file() and LIGER.is_file()),
                                  reason="../shared/sources (kernelindex-export, liger-kernel) is not present")

# Every run, by what identifies it and everything stored about it, in words of the tables (not ids).
RUNS = """
SELECT w.slug, w.suite, w.suite_key, w.level, w.problem_number, w.family, w.reference, w.aliases, wr.source_sha256,
       wr.canonical_configuration_key, i.slug, i.licence, i.authors, i.project, i.version, h.sku, e.fingerprint,
       e.details, e.cuda_version, p.name, p.version, p.metric, p.statistic, p.unit, p.family, p.harness,
       s.name, s.licence, s.terms, s.attribution, s.key, ss.revision, ss.revision_date, ss.route, ss.whole, ss.outdated,
       r.configuration_key, r.bindings, r.dtype, r.status, r.failure_reason, r.figure, r.figure_low, r.figure_high,
       r.low_quantile, r.high_quantile, r.mean_ms, r.median_ms, r.min_ms, r.max_ms, r.std_ms, r.p5_ms, r.p95_ms,
       r.num_trials, r.samples_ms, r.compile_time_ms, r.correctness, r.source_speedup, r.upstream_id, r.observed_at,
       r.evidence, r.claimed_evidence, r.content_sha256, r.superseded_at IS NULL, r.retracted_at IS NULL
FROM runs r JOIN workloads w ON w.id = r.workload_id JOIN workload_revisions wr ON wr.id = r.workload_revision_id
JOIN implementations i ON i.id = r.implementation_id JOIN environments e ON e.id = r.environment_id
JOIN hardware h ON h.id = e.hardware_id JOIN protocols p ON p.id = r.protocol_id
JOIN source_snapshots ss ON ss.id = r.source_snapshot_id JOIN sources s ON s.id = ss.source_id
"""


async def _runs(url: str) -> list[tuple]:
    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        return sorted((tuple(r) for r in await conn.fetch(RUNS)), key=repr)
    finally:
        await conn.close()


def _differences(copy: list[tuple], original: list[tuple]) -> list[tuple]:
    """(column, copy's, original's) of the first runs that differ: what a failure shows."""
    names = [line.strip().split(" ")[-1] for line in RUNS.split("FROM")[0].removeprefix("\nSELECT").split(",")]
    out = []
    for a, b in zip(copy, original, strict=False):
        out += [(names[i], x, y) for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(out) > 10:
            break
    return out


async def _export_and_read_back(client, db_url: str, empty_db_url: str, tmp_path: Path) -> tuple[Path, list[dict]]:
    response = await client.get("/exports/catalog.jsonl")
    assert response.status_code == 200
    path = tmp_path / "catalog.jsonl"
    path.write_text(response.text)
    lines = [json.loads(line) for line in response.text.splitlines()]
    await asyncio.to_thread(upgrade, empty_db_url)
    runs = [line for line in lines if line["format"] == "kernelindex.run/1"]
    # A dry run lays the catalogue lines (suite-keyed workloads among them) over the empty database in memory.
    dry = await ingest_runs_file(empty_db_url, path, str(path), progress=False, dry_run=True)
    assert dry.problems == [] and dry.inserted == len(runs), dry.problems[:3]
    copy = await ingest_runs_file(empty_db_url, path, str(path), progress=False)
    assert copy.problems == [] and copy.rejected == 0, copy.problems[:3]
    assert copy.inserted == len(runs)
    return path, runs


@needs_shared
async def test_an_export_and_a_liger_file_round_trip_through_catalog_jsonl(client, db_url, empty_db_url, tmp_path):
    from kernelindex.ingest.sources.kernelindex_export import read_export
    from kernelindex.ingest.sources.liger import read_liger

    export = await asyncio.to_thread(read_export, EXPORT)
    liger = await asyncio.to_thread(read_liger, LIGER, revision="2120862b", observed=date(2026, 8, 10))
    for read, sources, snapshot in (
        (export, export.sources, Snapshot(export.revision, export.route_date, export.route)),
        (liger, [liger.source], Snapshot("2120862b", date(2026, 8, 10), LIGER.name)),
    ):
        summary = await in_own_transaction(db_url, lambda s, r=read, so=sources, sn=snapshot: import_source(s, r, so, sn))
        assert summary.rejected == 0

    original = await _runs(db_url)
    path, runs = await _export_and_read_back(client, db_url, empty_db_url, tmp_path)
    assert len(runs) == len(original) > 10_000
    # Every run names its upstream source; the stated ones their figure as stated, or null when failed.
    assert all(r["source"]["name"] for r in runs)
    stated = [r for r in runs if "figure" in r]
    assert {r["protocol"].get("metric", "latency") for r in stated} == {"latency", "memory", "score"}
    assert any(r["figure"] and r["figure"].get("quantiles") == [0.2, 0.8] for r in stated)
    assert any(r.get("source_speedup") is not None for r in stated)
    assert any(r["status"] == "failed" and r["figure"] is None for r in stated)
    assert {r["source"].get("licence") for r in stated} >= {"BSD-2-Clause", "Apache-2.0"}

    copy = await _runs(empty_db_url)
    assert len(copy) == len(original)
    # figures, statistic, metric, bounds, source and licence, suite keys: all of it
    assert copy == original, _differences(copy, original)
    assert await _bests(empty_db_url) == await _bests(db_url)  # and the records our rules compute from them

    again = await ingest_runs_file(db_url, path, str(path), progress=False)
    assert again.problems == [] and (again.inserted, again.superseded) == (0, 0)
    assert again.unchanged == len(runs)
    assert await _runs(db_url) == original


# -- synthetic: no shared files -------------------------------------------------------------------

ROUTE = "synthetic-2026-08-01.csv"


def _where(table: str, line: int = 1) -> Where:
    return Where(ROUTE, line, table)


def _synthetic_read():
    """A suite with one workload and three runs: a median latency with its 20th/80th percentiles, a
    peak-memory run in MB, and a score in s (a geometric mean, no trials), one of them with a speedup."""
    workload = WorkloadPart(
        suite="synth-suite", key="rms-norm-forward", title="RMSNorm (forward)", family="norm", reference="torch.nn.RMSNorm",
        aliases=("rmsnorm",), inputs=(), outputs=(), axes=(), mutates=None, deterministic=None, digest=None,
        description="A synthetic workload.", where=_where("operations"),
    )
    configuration = ConfigurationPart(suite="synth-suite", workload=workload.key, key="H=4096", bindings={"H": 4096},
                                      dtype="bf16", title=None, where=_where("cases"))
    offset = ConfigurationPart(suite="synth-suite", workload=workload.key, key="offset=-100", bindings={"offset": -100},
                               dtype="nvfp4", title=None, where=_where("cases", 2))
    implementation = ImplementationPart(
        key="synth/rms_norm@1.0", title="RMSNorm (synth)", authors=("A. Person",), project="synth", licence="BSD-2-Clause",
        language="triton", framework=None, role="candidate", target_architectures=("sm_90",), source_url=None,
        source_available=True, artifact_digest="sha256:" + "ab" * 32, artifact_bytes=1234, version="1.0",
        where=_where("implementations"),
    )

    def protocol(metric: str, statistic: str, unit: str) -> ProtocolPart:
        return ProtocolPart(name=f"synth {metric} {statistic}", version="", metric=metric, statistic=statistic, unit=unit,  # type: ignore[arg-type]
                            harness="synth harness", timer=None, comparator="allclose", family="synth", notes=None)

    def run(line: int, proto: ProtocolPart, figure: Figure, case: ConfigurationPart = configuration, **more) -> RunPart:
        return RunPart(
            suite="synth-suite", workload=workload.key, configuration=case.key, bindings=dict(case.bindings), dtype=case.dtype,
            implementation=implementation.key, hardware="NVIDIA H100 80GB HBM3", vendor="nvidia", architecture="sm_90",
            software={"cuda": "12", "summary": "synthetic"}, protocol=proto, status="passed", failure_reason=None,
            figure=figure, correctness={"comparator": "allclose", "maximumAbsoluteError": 0.001}, observed_at=datetime(
                2026, 8, 1, 12, 0, 0, 123456, tzinfo=UTC), source="synth", route=ROUTE, route_date=date(2026, 8, 1),
            upstream_id=f"run-{line}", where=_where("runs", line), **{"source_speedup": None, **more},
        )

    runs = [
        run(1, protocol("latency", "median", "ms"), Figure(value=0.0123, low=0.0119, high=0.0131, quantiles=(0.2, 0.8))),
        run(2, protocol("memory", "median", "MB"), Figure(value=96.5, low=96.0, high=97.25, quantiles=(0.2, 0.8))),
        run(3, protocol("score", "geomean", "s"), Figure(value=0.000417), source_speedup=1.75),
        run(4, protocol("latency", "mean", "ms"), Figure(value=0.5, min=0.4, max=0.7, std=0.05, samples=20), case=offset),
    ]
    source = SourcePart(key="synth", name="Synthetic Source", kind="benchmark", url="https://example.org", licence="CC-BY-4.0",
                        terms="Cite us.", attribution="Synthetic authors", where=_where("sources"))

    class Read:
        workloads = [workload]
        configurations = [configuration, offset]
        implementations = [implementation]
        summary = ReadSummary(file=ROUTE)

    Read.runs = runs  # type: ignore[attr-defined]
    return Read, source


async def test_a_median_a_memory_and_a_score_run_round_trip_exactly(client, db_url, empty_db_url, tmp_path):
    read, source = _synthetic_read()
    summary = await in_own_transaction(db_url, lambda s: import_source(s, read, [source], Snapshot("r1", date(2026, 8, 1), ROUTE)))
    assert summary.rejected == 0 and summary.inserted == 4, summary.problems
    original = await _runs(db_url)
    path, runs = await _export_and_read_back(client, db_url, empty_db_url, tmp_path)
    stated = {r["upstream_id"]: r for r in runs if "figure" in r}
    assert sorted(stated) == ["run-1", "run-2", "run-3", "run-4"]
    assert stated["run-1"]["figure"] == {"value": 0.0123, "low": 0.0119, "high": 0.0131, "quantiles": [0.2, 0.8]}
    assert stated["run-1"]["protocol"]["statistic"] == "median" and "metric" not in stated["run-1"]["protocol"]
    assert (stated["run-2"]["protocol"]["metric"], stated["run-2"]["protocol"]["unit"]) == ("memory", "MB")
    assert (stated["run-3"]["protocol"]["metric"], stated["run-3"]["protocol"]["unit"]) == ("score", "s")
    assert stated["run-3"]["source_speedup"] == 1.75 and "samples" not in stated["run-3"]["figure"]
    assert stated["run-4"]["configuration"]["bindings"] == {"offset": -100}
    assert stated["run-1"]["source"].items() >= {"name": "Synthetic Source", "licence": "CC-BY-4.0", "terms": "Cite us.",
                                                 "attribution": "Synthetic authors", "whole": True}.items()
    assert stated["run-1"]["source_correctness"] == {"comparator": "allclose", "maximumAbsoluteError": 0.001}
    workload_line = next(line for line in map(json.loads, path.read_text().splitlines())
                         if line["format"] == "kernelindex.workload/1" and line.get("suite_key") == "rms-norm-forward")
    assert (workload_line["family"], workload_line["reference"], workload_line["aliases"]) == ("norm", "torch.nn.RMSNorm", ["rmsnorm"])

    copy = await _runs(empty_db_url)
    assert copy == original, _differences(copy, original)
    again = await ingest_runs_file(db_url, path, str(path), progress=False)
    assert again.problems == [] and (again.inserted, again.superseded, again.unchanged) == (0, 0, len(runs))
    assert await _runs(db_url) == original

    # A record may name a suite's workload by the suite's own key instead of its slug: the same run.
    by_key = tmp_path / "by_key.jsonl"
    named = [{**stated["run-1"], "workload": {"suite": "synth-suite", "key": "rms-norm-forward"}},
             {**stated["run-2"], "workload": {"suite": "synth-suite", "key": "no-such-kernel"}}]
    by_key.write_text("".join(json.dumps(r) + "\n" for r in named))
    keyed = await ingest_runs_file(empty_db_url, by_key, str(by_key), progress=False)
    assert (keyed.unchanged, keyed.inserted, keyed.rejected) == (1, 0, 1)
    assert [(p.where, p.key) for p in keyed.problems] == [("line 2", "workload.key")]
    assert "unknown workload 'no-such-kernel' of suite 'synth-suite'" in keyed.problems[0].reason


BESTS = """
SELECT w.slug, b.configuration_key, i.slug, h.sku, p.name, e.fingerprint, b.figure, b.run_count, b.observed_at
FROM cohort_bests b JOIN workloads w ON w.id = b.workload_id JOIN implementations i ON i.id = b.implementation_id
JOIN hardware h ON h.id = b.hardware_id JOIN protocols p ON p.id = b.protocol_id JOIN environments e ON e.id = b.environment_id
"""


async def _bests(url: str) -> list[tuple]:
    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        return sorted((tuple(r) for r in await conn.fetch(BESTS)), key=repr)
    finally:
        await conn.close()


@needs_shared
async def test_both_liger_snapshots_read_back_with_the_older_outdated_and_the_same_records(client, db_url, empty_db_url, tmp_path):
    """Two whole snapshots of one source: the copy marks the older outdated as the adapter's import did,
    so its runs count for nothing there too, and the records (cohort bests) are the same."""
    from kernelindex.ingest.sources.liger import read_liger

    for name, revision, observed in (("all_benchmark_data-27fe47e2.csv", "27fe47e2", date(2026, 6, 10)),
                                     (LIGER.name, "2120862b", date(2026, 8, 10))):
        read = await asyncio.to_thread(read_liger, LIGER.parent / name, revision=revision, observed=observed)
        summary = await in_own_transaction(db_url, lambda s, r=read, n=name, rv=revision, o=observed: import_source(
            s, r, [r.source], Snapshot(rv, o, n)))
        assert summary.rejected == 0
    original = await _runs(db_url)
    assert {(row[31], row[35]) for row in original if row[1] == "liger-kernel"} == {("27fe47e2", True), ("2120862b", False)}
    await _export_and_read_back(client, db_url, empty_db_url, tmp_path)
    copy = await _runs(empty_db_url)
    assert copy == original, _differences(copy, original)
    assert await _bests(empty_db_url) == await _bests(db_url)
