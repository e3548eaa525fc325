"""Importing a source adapter's parts (kernelindex.ingest.source_import): Liger-Kernel's two results
files, in both orders, re-imported, against an independent reading of the raw CSV."""

from __future__ import annotations

import asyncio
import csv
from collections import defaultdict
from datetime import date
from pathlib import Path

import asyncpg
import pytest

from kernelindex.db.engine import in_own_transaction
from kernelindex.db.urls import to_libpq_url
from kernelindex.ingest.source_import import Snapshot, import_source
from kernelindex.ingest.sources.liger import read_liger

LIGER = Path(__file__).resolve().parents[3] / "shared" / "sources" / "liger-kernel"
OLD = ("all_benchmark_data-27fe47e2.csv", "27fe47e2", date(2026, 6, 10))
NEW = ("all_benchmark_data-2120862b.csv", "2120862b", date(2026, 8, 10))
needs_shared = pytest.mark.skipif(not LIGER.is_dir(), reason="../shared/sources/liger-kernel is not present")


def _import(db_url: str, which: tuple[str, str, date]):
    name, revision, observed = which
    read = read_liger(LIGER / name, revision=revision, observed=observed)

    async def work(session):
        return await import_source(session, read, [read.source], Snapshot(revision, observed, name))

    return asyncio.run(in_own_transaction(db_url, work))


def _state(db_url: str):
    async def fetch():
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            runs = await conn.fetch(
                "SELECT w.suite_key, i.slug, h.sku, p.metric, r.configuration_key, ss.revision, r.figure, r.figure_low, "
                "r.figure_high, r.median_ms, r.mean_ms, r.superseded_at IS NULL AS live, ss.outdated "
                "FROM runs r JOIN workloads w ON w.id = r.workload_id JOIN implementations i ON i.id = r.implementation_id "
                "JOIN environments e ON e.id = r.environment_id JOIN hardware h ON h.id = e.hardware_id "
                "JOIN protocols p ON p.id = r.protocol_id JOIN source_snapshots ss ON ss.id = r.source_snapshot_id "
                "WHERE w.suite = 'liger-kernel' ORDER BY 1, 2, 3, 4, 5, 6")
            bests = await conn.fetch(
                "SELECT w.suite_key, b.configuration_key, i.slug, b.figure, b.run_count, h.sku, p.metric FROM cohort_bests b "
                "JOIN workloads w ON w.id = b.workload_id JOIN implementations i ON i.id = b.implementation_id "
                "JOIN hardware h ON h.id = b.hardware_id JOIN protocols p ON p.id = b.protocol_id "
                "WHERE w.suite = 'liger-kernel' ORDER BY 1, 2, 3, 4, 6")
            current = await conn.fetch(
                "SELECT w.suite_key, r.source_sha256, r.canonical_configuration_key, w.in_latest_snapshot FROM workloads w "
                "JOIN workload_revisions r ON r.id = w.current_revision_id WHERE w.suite = 'liger-kernel' ORDER BY 1")
            return [tuple(r) for r in runs], [tuple(r) for r in bests], [tuple(r) for r in current]
        finally:
            await conn.close()

    return asyncio.run(fetch())


async def _held(db_url: str) -> list[tuple]:
    """The runs a flag holds (none has a review here), keyed as _state's runs are."""
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        rows = await conn.fetch(
            "SELECT DISTINCT w.suite_key, r.configuration_key, i.slug, h.sku, p.metric FROM run_flags f "
            "JOIN runs r ON r.id = f.run_id JOIN workloads w ON w.id = r.workload_id "
            "JOIN implementations i ON i.id = r.implementation_id JOIN environments e ON e.id = r.environment_id "
            "JOIN hardware h ON h.id = e.hardware_id JOIN protocols p ON p.id = r.protocol_id "
            "JOIN source_snapshots ss ON ss.id = r.source_snapshot_id WHERE w.suite = 'liger-kernel' AND NOT ss.outdated")
        return [tuple(r) for r in rows]
    finally:
        await conn.close()


@needs_shared
def test_both_files_in_either_order_end_alike_and_a_reimport_changes_nothing(db_url, empty_db_url):
    first = _import(db_url, OLD)
    assert first.rejected == 0 and first.inserted == 2376, first.problems[:3]
    second = _import(db_url, NEW)
    assert second.rejected == 0 and second.inserted == 2448
    forward = _state(db_url)
    again = _import(db_url, NEW)
    assert (again.inserted, again.unchanged, again.superseded) == (0, 2448, 0)
    assert _state(db_url) == forward
    # the other order, on a database of its own
    from kernelindex.db.migrate import upgrade
    from kernelindex.ingest.seed import seed_database

    upgrade(empty_db_url)
    asyncio.run(seed_database(empty_db_url))
    _import(empty_db_url, NEW)
    _import(empty_db_url, OLD)
    assert _state(empty_db_url) == forward


@needs_shared
def test_the_older_files_runs_stay_stored_but_only_the_newest_counts(db_url):
    _import(db_url, OLD)
    _import(db_url, NEW)
    runs, bests, current = _state(db_url)
    assert {r[5] for r in runs if r[12]} == {"27fe47e2"} and {r[5] for r in runs if not r[12]} == {"2120862b"}
    # megatron_cross_entropy's rows of the older file are in no newer one: stored, counted for nothing
    old_only = [r for r in runs if r[0].startswith("megatron_cross_entropy") and r[5] == "27fe47e2"]
    assert old_only and all(r[12] for r in old_only)
    assert all(not b[0].startswith("megatron_cross_entropy") or "TP" in b[1] for b in bests)
    # records at every configuration (each x value) and for each metric (latency and peak memory, apart),
    # each the figure the newest file states (the median for a latency)
    assert bests and {b[6] for b in bests} == {"latency", "memory"}
    configurations = {}
    for b in bests:
        configurations.setdefault((b[0], b[6]), set()).add(b[1])
    assert max(len(c) for c in configurations.values()) > 1
    by_key = {(r[0], r[1], r[2], r[3], r[4]): r for r in runs if r[5] == "2120862b"}
    for suite_key, cfg, slug, figure, _count, sku, metric in bests:
        run = by_key.get((suite_key, slug, sku, metric, cfg))
        assert run is not None and run[6] == figure
        assert (run[9] == figure and run[10] is None) if metric == "latency" else run[9] is None
    # and every run of the newest file is its implementation's best at its configuration, but for the runs
    # held for review (plausibility-v2: over 10x the baseline, a 15.6 GB peak cut to 1.5 GB among them)
    held = set(asyncio.run(_held(db_url)))
    assert held
    assert {(r[0], r[4], r[1], r[2], r[3]) for r in by_key.values()} - held == {(b[0], b[1], b[2], b[5], b[6]) for b in bests}
    assert current and all(c[3] is True for c in current)  # the newest file holds every workload the older one did


@needs_shared
def test_figures_match_an_independent_reading_of_the_csv(db_url):
    _import(db_url, NEW)
    runs, _, _ = _state(db_url)
    stored = defaultdict(list)
    for r in runs:
        stored[(r[0], r[2], r[3])].append((r[6], r[7], r[8]))
    raw = defaultdict(list)
    with open(LIGER / NEW[0], newline="") as handle:
        for row in csv.DictReader(handle):
            key = (f"{row['kernel_name']}-{row['kernel_operation_mode']}", row["gpu_name"], "latency" if row["metric_name"] == "speed" else "memory")
            raw[key].append((float(row["y_value_50"]), float(row["y_value_20"]), float(row["y_value_80"])))
    # the GPU names map to SKUs: compare per workload and metric the sorted figures of each GPU's rows
    def per(d, index):
        out = defaultdict(list)
        for (workload, _gpu, metric), values in d.items():
            out[(workload, metric)] += [v[index] for v in values]
        return {k: sorted(v) for k, v in out.items()}

    for index in range(3):
        assert per(stored, index) == per(raw, index)


EXPORTS = Path(__file__).resolve().parents[3] / "shared" / "sources" / "kernelindex-export"
EXPORT_OLD, EXPORT_NEW = "catalog-2026-08-15-167a1d6d.jsonl.zst", "catalog-2026-08-16-94af2ae7.jsonl.zst"
needs_exports = pytest.mark.skipif(not EXPORTS.is_dir(), reason="../shared/sources/kernelindex-export is not present")


def _import_export(db_url: str, name: str):
    from kernelindex.ingest.sources.kernelindex_export import read_export

    read = read_export(EXPORTS / name)
    assert read.revision and read.route_date

    async def work(session):
        return await import_source(session, read, read.sources, Snapshot(read.revision, read.route_date, read.route))

    return asyncio.run(in_own_transaction(db_url, work))


@needs_exports
def test_an_export_imports_every_run_and_again_changes_nothing(db_url):
    summary = _import_export(db_url, EXPORT_NEW)
    assert summary.rejected == 0, summary.problems[:5]
    assert dict(summary.runs_by_source) == {"gpumode-kernelbot": 5215, "flashinfer-bench": 1937, "sol-execbench": 705}
    assert summary.inserted == 7857
    again = _import_export(db_url, EXPORT_NEW)
    assert (again.inserted, again.unchanged, again.superseded, again.rejected) == (0, 7857, 0, 0)


def _export_state(db_url: str):
    async def fetch():
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            runs = await conn.fetch(
                "SELECT w.suite, w.suite_key, i.slug, i.role, i.licence, h.sku, r.configuration_key, ss.revision, ss.outdated, "
                "r.upstream_id, r.figure, r.superseded_at IS NULL FROM runs r JOIN workloads w ON w.id = r.workload_id "
                "JOIN implementations i ON i.id = r.implementation_id JOIN environments e ON e.id = r.environment_id "
                "JOIN hardware h ON h.id = e.hardware_id JOIN source_snapshots ss ON ss.id = r.source_snapshot_id "
                "WHERE w.suite <> 'kernelbench' ORDER BY 1, 2, 3, 6, 7, 8, 10")
            bests = await conn.fetch(
                "SELECT w.suite_key, b.configuration_key, i.slug, b.figure, b.run_count, h.sku FROM cohort_bests b "
                "JOIN workloads w ON w.id = b.workload_id JOIN implementations i ON i.id = b.implementation_id "
                "JOIN hardware h ON h.id = b.hardware_id WHERE w.suite <> 'kernelbench' ORDER BY 1, 2, 3, 4, 6")
            current = await conn.fetch(
                "SELECT w.suite, w.suite_key, r.source_sha256, r.canonical_configuration_key, w.in_latest_snapshot FROM workloads w "
                "JOIN workload_revisions r ON r.id = w.current_revision_id WHERE w.suite <> 'kernelbench' ORDER BY 1, 2")
            return [tuple(r) for r in runs], [tuple(r) for r in bests], [tuple(r) for r in current]
        finally:
            await conn.close()

    return asyncio.run(fetch())


@needs_exports
def test_two_exports_in_either_order_with_seed_between_end_alike(db_url, empty_db_url):
    from kernelindex.db.migrate import upgrade
    from kernelindex.ingest.seed import seed_database

    _import_export(db_url, EXPORT_OLD)
    asyncio.run(seed_database(db_url))
    _import_export(db_url, EXPORT_NEW)
    forward = _export_state(db_url)
    upgrade(empty_db_url)
    asyncio.run(seed_database(empty_db_url))
    _import_export(empty_db_url, EXPORT_NEW)
    asyncio.run(seed_database(empty_db_url))
    _import_export(empty_db_url, EXPORT_OLD)
    assert _export_state(empty_db_url) == forward
    runs, bests, current = forward
    # the older export's runs are stored, outdated; a run's upstream id in both files is two runs (one per route)
    assert {r[7] for r in runs if r[8]} == {"167a1d6d"} and {r[7] for r in runs if not r[8]} == {"94af2ae7"}
    assert bests and all(c[4] is True for c in current if c[0] == "flashinfer-bench")
