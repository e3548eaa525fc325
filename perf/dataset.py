"""The synthetic dataset the API figures are measured on (perf.api_speed, perf.crash_cycles): the seed,
KernelBench-shaped workloads (levels 1–3) with generated reference modules, and runs bulk-inserted in
SQL over many environments, implementations and source snapshots, then the records refreshed. Also
the two queries measured on it: the workload page (of PAGE_SLUG) and the list of the first 100.

To keep a built dataset for repeated figures (perf.page_split --database-url, perf.api_speed):

    python -m perf.dataset --data-dir /tmp/ki-1m --runs 1000000 --workloads 250 &   # prints the URL, then holds the server

It builds once (a folder already holding the dataset is only started again) and holds the server until
interrupted, since the embedded server stops with its last holder.

Nothing here reads tests/: the reference modules are generated (valid KernelBench problem files,
each different, so each workload has its own revision).
"""

from __future__ import annotations

import sys
import time

# Synthetic workload 1 (level 2, problem 101): one with records on most of its cohorts.
PAGE_SLUG = "kernelbench-l2-p101-synthetic-1"

LIST_QUERY = """{ workloads(first: 100) { totalCount nodes { slug name level eligibleRunCount
  headline { label latencyMs latencyDisplay implementation { slug title } }
  records { label latencyMs runCount implementation { slug } } } } }"""

# forward() bodies by level: one operator, a layer and an operator, a small MLP.
_FORWARD = {
    1: ("", "return torch.{op}(x)"),
    2: ("self.linear = nn.Linear(dim, dim)", "return torch.{op}(self.linear(x))"),
    3: ("self.layers = nn.Sequential(nn.Linear(dim, 4 * dim), nn.ReLU(), nn.Linear(4 * dim, dim))",
        "return torch.{op}(self.layers(x))"),
}
_OPS = ("relu", "sigmoid", "tanh", "abs")


def reference_source(level: int, variant: int) -> str:
    """A KernelBench-format problem module: input and output (batch_size, 1024), fp32."""
    init, forward = _FORWARD[level]
    init_line = f"\n        {init}" if init else ""
    return f'''import torch
import torch.nn as nn


class Model(nn.Module):
    """Synthetic level-{level} problem {variant}."""

    def __init__(self):
        super().__init__(){init_line}

    def forward(self, x):
        {forward.format(op=_OPS[variant % len(_OPS)])}


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


async def build_dataset(url: str, n_workloads: int, n_runs: int) -> None:
    """Seed the migrated database at `url`, add `n_workloads` synthetic workloads and about `n_runs`
    runs spread over them, ANALYZE, refresh the precomputed records and VACUUM. Progress on stderr.
    The service is imported here, not at the top: the scripts' --help does not load it."""
    import asyncpg

    from kernelindex.db.engine import in_own_transaction
    from kernelindex.db.urls import to_libpq_url
    from kernelindex.ingest.seed import load_seed
    from kernelindex.ingest.workloads import WorkloadSpec, upsert_workload
    from kernelindex.services.records import refresh_all_records

    async def seed_and_workloads(session) -> None:
        await load_seed(session)
        for i in range(n_workloads):
            level = 1 + i % 3
            source = reference_source(level, i)
            await upsert_workload(session, WorkloadSpec(
                suite="kernelbench", level=level, problem_number=100 + i, name=f"Synthetic_{i}",
                reference_source=source, canonical_bindings={"batch_size": 16}, canonical_dtype="fp32",
                semantics={"inputs": [{"name": "input_1", "dtype": "fp32", "shape": ["batch_size", 1024]}],
                           "outputs": [{"name": "out", "dtype": "fp32", "shape": ["batch_size", 1024]}],
                           "axes": [{"name": "batch_size", "behaviour": "variable"}],
                           "determinism": "unspecified", "constraints": ["No mutation or aliasing"]},
            ))

    await in_own_transaction(url, seed_and_workloads)
    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        # Dimensions: 8 implementations, 100 environments on 5 SKUs, sources with several snapshots.
        await conn.execute("""
            INSERT INTO implementations (slug, title, framework, language, runtime_id, role, licence, source_availability)
            SELECT 'synthetic_impl_' || g, 'Synthetic implementation ' || g, 'PyTorch', 'python', 'synthetic_' || g,
                   'candidate', CASE WHEN g % 2 = 0 THEN 'MIT' ELSE 'Apache-2.0' END, 'upstream'
            FROM generate_series(1, 7) g ON CONFLICT DO NOTHING;
            INSERT INTO environments (hardware_id, provider, label, torch_version, fingerprint)
            SELECT h.id, 'Synthetic Cloud', 'pool-' || g, '2.13.0', 'synthetic-env-' || g
            FROM generate_series(1, 100) g
            JOIN LATERAL (SELECT id FROM hardware WHERE has_datasheet ORDER BY id OFFSET (g % 5) LIMIT 1) h ON true
            ON CONFLICT DO NOTHING;
            INSERT INTO sources (name) VALUES ('Synthetic load source') ON CONFLICT DO NOTHING;
            -- Only a registered fleet worker stores 'measured' (ck_runs_measured_by_fleet): the synthetic one.
            INSERT INTO fleet_workers (name, machine_id, hardware)
            VALUES ('synthetic-worker', 'synthetic-machine', 'synthetic') ON CONFLICT DO NOTHING;
            INSERT INTO source_snapshots (source_id, revision)
            SELECT (SELECT id FROM sources WHERE name = 'Synthetic load source'), 'r' || g FROM generate_series(1, 100) g
            ON CONFLICT DO NOTHING;
        """)
        per_snapshot = 8 * 10  # implementations × environments per workload (each workload: 10 of the 100)
        workloads = await conn.fetch(
            "SELECT w.id, w.current_revision_id, r.canonical_configuration_key FROM workloads w "
            "JOIN workload_revisions r ON r.id = w.current_revision_id WHERE w.name LIKE 'Synthetic_%' ORDER BY w.id"
        )
        runs_per_workload = max(1, n_runs // max(1, len(workloads)))
        snapshots = max(1, -(-runs_per_workload // per_snapshot))
        protocol = await conn.fetchval("SELECT id FROM protocols ORDER BY id LIMIT 1")
        started = time.perf_counter()
        for w in workloads:
            # Two source snapshots at the canonical configuration (cohorts of 16 runs, as a busy index
            # would hold), the rest a batch-size sweep: stored and listed, never eligible for records.
            await conn.execute(
                """
                INSERT INTO runs (workload_id, workload_revision_id, bindings, dtype, configuration_key, implementation_id,
                  environment_id, protocol_id, source_snapshot_id, status, mean_ms, std_ms, min_ms, max_ms, num_trials,
                  observed_at, evidence, content_sha256, figure, fleet_worker_id, fleet_machine_id)
                SELECT $1, $2, c.bindings, 'fp32', c.key, i.id, e.id, $4, s.id, 'passed',
                       m.mean, m.mean * 0.02, m.mean * 0.97, m.mean * 1.05, 100,
                       timestamptz '2026-06-01' + (random() * interval '150 days'),
                       CASE WHEN m.measured THEN 'measured' ELSE 'reported' END, md5(random()::text), m.mean,
                       CASE WHEN m.measured THEN w.id END, CASE WHEN m.measured THEN w.machine_id END
                FROM (SELECT id, machine_id FROM fleet_workers WHERE name = 'synthetic-worker') w
                CROSS JOIN (SELECT id FROM implementations ORDER BY id LIMIT 8) i
                CROSS JOIN (SELECT id FROM environments WHERE fingerprint LIKE 'synthetic-env-%' AND (id + $1) % 10 = 0 ORDER BY id) e
                CROSS JOIN (SELECT id, row_number() OVER (ORDER BY id) AS n FROM source_snapshots WHERE revision LIKE 'r%' ORDER BY id LIMIT $5) s
                CROSS JOIN LATERAL (
                    SELECT CASE WHEN s.n <= 2 THEN '{"batch_size": 16}'::jsonb ELSE jsonb_build_object('batch_size', 16 * s.n) END AS bindings,
                           CASE WHEN s.n <= 2 THEN $3 ELSE '{"bindings":{"batch_size":' || (16 * s.n) || '},"dtype":"fp32"}' END AS key
                ) c
                CROSS JOIN LATERAL (SELECT 0.05 + random() * 5 + 0 * i.id * e.id * s.id AS mean,
                                           random() + 0 * i.id * e.id * s.id < 0.2 AS measured) m
                LIMIT $6
                """,
                w["id"], w["current_revision_id"], w["canonical_configuration_key"], protocol, snapshots, runs_per_workload,
            )
        total = await conn.fetchval("SELECT count(*) FROM runs")
        print(f"dataset: {len(workloads) + 2} workloads, {total:,} runs (inserted in {time.perf_counter() - started:.0f} s)", file=sys.stderr)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()
    started = time.perf_counter()
    await in_own_transaction(url, refresh_all_records)
    print(f"records refreshed in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    # VACUUM now, not later: a table just loaded with a million rows is due an insert-triggered
    # autovacuum (PostgreSQL 13+), which otherwise starts a minute in, in the middle of whatever is
    # being measured, and takes one of the two cores for minutes (reads under writes at 1M runs fell
    # to 43% with it, flat without it). Outside any transaction, as VACUUM must be.
    started = time.perf_counter()
    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        await conn.execute("VACUUM (ANALYZE)")
    finally:
        await conn.close()
    print(f"vacuumed in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def main() -> int:
    """Build the dataset into an embedded PostgreSQL in --data-dir (once) and hold that server until interrupted,
    so the figures scripts can measure one database many times (a 1M-run build takes minutes)."""
    import argparse
    import asyncio
    import signal
    from pathlib import Path

    import asyncpg

    parser = argparse.ArgumentParser(prog="python -m perf.dataset", description=main.__doc__.splitlines()[0] if main.__doc__ else None)
    parser.add_argument("--data-dir", required=True, type=Path, help="an empty or new folder for the server's data")
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--workloads", type=int, default=250)
    args = parser.parse_args()

    from kernelindex.db.embedded import EmbeddedPostgres
    from kernelindex.db.migrate import upgrade
    from kernelindex.db.urls import to_libpq_url

    args.data_dir.mkdir(parents=True, exist_ok=True)
    # Not 0700: the server runs as another OS user when we are root.
    args.data_dir.chmod(0o755)
    server = EmbeddedPostgres(args.data_dir)
    upgrade(server.url)

    async def built() -> bool:
        conn = await asyncpg.connect(to_libpq_url(server.url))
        try:
            return bool(await conn.fetchval("SELECT EXISTS (SELECT FROM workloads WHERE name LIKE 'Synthetic_%')"))
        finally:
            await conn.close()

    if asyncio.run(built()):
        print("dataset already built in this folder: serving it", file=sys.stderr)
    else:
        asyncio.run(build_dataset(server.url, args.workloads, args.runs))
    print(server.url, flush=True)
    stop = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)
    try:
        signal.sigwait(stop)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
