"""The worst queries the limits admit, against a server on a large dataset: peak RSS, response size, time.

    python -m perf.worst_query [--workloads 100] [--runs 60000] [--big-runs 50000] [--source-bytes 1000000]

1. Starts an embedded PostgreSQL in a temporary folder, migrates, builds perf.dataset's dataset
   (`--workloads` synthetic workloads, `--runs` runs over them), then makes it hostile: every
   synthetic workload's reference source padded to `--source-bytes` (non-ASCII included), and
   `--big-runs` more runs on one workload (perf.dataset.PAGE_SLUG) at its canonical configuration,
   one in ten failed with an 8 KiB failure reason. Records are refreshed after.
2. Builds each worst query under the server's limits (cost, aliases, depth), fitting page sizes
   with the server's own cost function so each comes as close to the cost limit as it can:
   - text: long text (referenceSource) as often as the cost allows, over many workloads;
   - nodes: nested connections of runs with every Run field (short texts and samples included);
   - comparisons: every cohort of the workload with the most runs, each with its rows;
   - aliases: the same heavy selection under the most aliases the limits allow.
3. For each, starts a fresh `kernelindex serve` (the response cache off, so the query executes),
   sends it once, samples the server's RSS every 5 ms meanwhile, and prints RSS before and at peak,
   the response size, the time, whether it was refused and the cost the server reported.

A script, not a test: minutes of setup, figures that depend on the machine. `--out` writes them as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from pathlib import Path

import httpx

from perf.dataset import PAGE_SLUG, build_dataset
from perf.server import Server

RUN_FIELDS = """id databaseId workloadSlug status failureReason meanMs stdMs minMs maxMs medianMs p5Ms p95Ms numTrials
  samplesMs compileTimeMs ciHalfWidthMs latencyDisplay plusMinusDisplay statisticDisplay observedAt observedDisplay
  evidence trustLabel stale superseded retracted caveats reviewStatus
  configuration { dtype display bindings { axis value } }
  implementation { slug title licence installRecipe installLabel sourceUrl availabilityLabel }
  environment { id provider label torchVersion hardware { sku family shortName driverProductNames } }
  protocol { name version statistic } source { name revision display }"""


def padded_source(size: int) -> str:
    """A valid Python module of about `size` UTF-8 bytes: comments, a third of them non-ASCII."""
    line = "# padding: ünïcödé text so byte offsets and character offsets differ — €€€ 😀\n"
    ascii_line = "# padding: plain ASCII text of the kind most reference modules hold, repeated\n"
    block = line + ascii_line + ascii_line
    return block * max(1, size // len(block.encode()))


async def make_hostile(url: str, source_bytes: int, big_runs: int) -> None:
    import asyncpg

    from kernelindex.db.engine import in_own_transaction
    from kernelindex.db.urls import to_libpq_url
    from kernelindex.services.records import refresh_all_records

    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        padding = padded_source(source_bytes)
        await conn.execute(
            "UPDATE workload_revisions r SET reference_source = r.reference_source || $1 FROM workloads w "
            "WHERE w.current_revision_id = r.id AND w.name LIKE 'Synthetic_%'", padding,
        )
        big = await conn.fetchrow(
            "SELECT w.id, w.current_revision_id, r.canonical_configuration_key FROM workloads w "
            "JOIN workload_revisions r ON r.id = w.current_revision_id WHERE w.slug = $1", PAGE_SLUG,
        )
        if big is None:
            raise SystemExit(f"worst_query: the dataset has no workload {PAGE_SLUG!r}")
        snapshots = -(-big_runs // (8 * 10)) + 1
        await conn.execute(
            "INSERT INTO source_snapshots (source_id, revision) "
            "SELECT (SELECT id FROM sources WHERE name = 'Synthetic load source'), 'big-' || g FROM generate_series(1, $1) g "
            "ON CONFLICT DO NOTHING", snapshots,
        )
        reason = "Traceback (most recent call last): " + "x" * 8192
        protocol = await conn.fetchval("SELECT id FROM protocols ORDER BY id LIMIT 1")
        started = time.perf_counter()
        await conn.execute(
            """
            INSERT INTO runs (workload_id, workload_revision_id, bindings, dtype, configuration_key, implementation_id,
              environment_id, protocol_id, source_snapshot_id, status, failure_reason, mean_ms, std_ms, min_ms, max_ms,
              num_trials, observed_at, evidence, content_sha256, figure)
            SELECT $1, $2, '{"batch_size": 16}'::jsonb, 'fp32', $3, i.id, e.id, $4, s.id,
                   CASE WHEN f.failed THEN 'failed' ELSE 'passed' END, CASE WHEN f.failed THEN $6 END,
                   CASE WHEN f.failed THEN NULL ELSE m.mean END, CASE WHEN f.failed THEN NULL ELSE m.mean * 0.02 END,
                   CASE WHEN f.failed THEN NULL ELSE m.mean * 0.97 END, CASE WHEN f.failed THEN NULL ELSE m.mean * 1.05 END,
                   100, timestamptz '2026-06-01' + (random() * interval '150 days'), 'reported', md5(random()::text),
                   CASE WHEN f.failed THEN NULL ELSE m.mean END
            FROM (SELECT id FROM implementations ORDER BY id LIMIT 8) i
            CROSS JOIN (SELECT id FROM environments WHERE fingerprint LIKE 'synthetic-env-%' AND (id + $1) % 10 = 0 ORDER BY id) e
            CROSS JOIN (SELECT id FROM source_snapshots WHERE revision LIKE 'big-%' ORDER BY id) s
            CROSS JOIN LATERAL (SELECT random() < 0.1 + 0 * i.id * e.id * s.id AS failed) f
            CROSS JOIN LATERAL (SELECT 0.05 + random() * 5 + 0 * i.id * e.id * s.id AS mean) m
            LIMIT $5
            """,
            big["id"], big["current_revision_id"], big["canonical_configuration_key"], protocol, big_runs, reason,
        )
        count = await conn.fetchval("SELECT count(*) FROM runs WHERE workload_id = $1", big["id"])
        print(f"hostile: sources padded to {source_bytes:,} bytes; {PAGE_SLUG} has {count:,} runs "
              f"(inserted in {time.perf_counter() - started:.0f} s)", file=sys.stderr)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()
    await in_own_transaction(url, refresh_all_records)


def fit(template: str, limit: int) -> tuple[str, int]:
    """`template` with {n} replaced by the largest page size (1 to 100) whose cost is within `limit`."""
    from graphql import parse

    from kernelindex.graphql.cost import CostModel, query_cost
    from kernelindex.graphql.schema import build_schema
    from kernelindex.settings import Settings

    settings = Settings()
    schema = build_schema(settings)._schema
    model = CostModel(limit=limit, max_page_size=settings.max_page_size, long_text_bytes=settings.max_text_bytes)

    def cost(n: int) -> int:
        return query_cost(schema, parse(template.replace("{n}", str(n))), None, {}, model) or 0

    best = max((n for n in range(1, 101) if cost(n) <= limit), default=1)
    return template.replace("{n}", str(best)), cost(best)


def worst_queries(limit: int, aliases: int) -> dict[str, tuple[str, int]]:
    text = " ".join(f"t{i}: workloads(first: {{n}}) {{ nodes {{ referenceSource }} }}" for i in range(aliases))
    queries = {
        "text": "{ " + text + " }",
        "nodes": "{ a: workloads(first: {n}) { nodes { runs(first: {n}) { nodes { ...R } } } }"
                 " b: workloads(first: {n}) { nodes { runs(first: {n}) { nodes { ...R } } } } }",
        "comparisons": f'{{ workload(slug: "{PAGE_SLUG}") {{ comparisons(first: {{n}}) {{ header rows(first: {{n}}) '
                       "{ rank notes summary trustLevel run { ...R } } } } }",
        "aliases": "{ " + " ".join(
            f'w{i}: workload(slug: "{PAGE_SLUG}") {{ referenceSource runs(first: {{n}}) {{ nodes {{ ...R }} }} }}'
            for i in range(aliases)
        ) + " }",
    }
    fragment = f" fragment R on Run {{ {RUN_FIELDS} }}"
    return {name: fit(q + (fragment if "...R" in q else ""), limit) for name, q in queries.items()}


class RssSampler(threading.Thread):
    def __init__(self, server: Server, interval_s: float = 0.005):
        super().__init__(daemon=True)
        self.processes = server.processes()
        self.interval_s = interval_s
        self.peak = self.rss()
        self.stop = threading.Event()

    def rss(self) -> int:
        return sum(p.memory_info().rss for p in self.processes)

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(self.interval_s)


def measure(url: str, name: str, query: str) -> dict:
    env = {"KERNELINDEX_RESPONSE_CACHE_ENTRIES": "0", "KERNELINDEX_REQUEST_TIMEOUT_S": "600"}
    with Server(database_url=url, migrate_and_seed=False, extra_env=env) as server:
        with httpx.Client(base_url=server.url, timeout=600) as http:
            http.post("/graphql", json={"query": "{ policy { version } }"})  # imports and pools warmed
            sampler = RssSampler(server)
            before = sampler.rss()
            sampler.start()
            started = time.perf_counter()
            response = http.post("/graphql", json={"query": query})
            elapsed = time.perf_counter() - started
            sampler.stop.set()
            sampler.join()
        body = response.json()
        errors = body.get("errors") or []
        return {
            "query": name, "status": response.status_code, "seconds": round(elapsed, 3),
            "response_bytes": len(response.content), "rss_before_mib": round(before / 2**20, 1),
            "rss_peak_mib": round(sampler.peak / 2**20, 1), "cost": (body.get("extensions") or {}).get("cost"),
            "errors": [e["message"][:160] for e in errors[:3]], "query_bytes": len(query),
        }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.worst_query", description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=100)
    parser.add_argument("--runs", type=int, default=60_000)
    parser.add_argument("--big-runs", type=int, default=50_000)
    parser.add_argument("--source-bytes", type=int, default=1_000_000)
    parser.add_argument("--only", action="append", help="measure only these queries (text, nodes, comparisons, aliases)")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()

    from kernelindex.db.embedded import temporary_embedded
    from kernelindex.db.migrate import upgrade
    from kernelindex.settings import Settings

    settings = Settings()
    queries = worst_queries(settings.max_query_cost, settings.max_aliases)
    results = []
    with temporary_embedded("kernelindex-worst-") as pg:
        upgrade(pg.url)
        asyncio.run(build_dataset(pg.url, args.workloads, args.runs))
        asyncio.run(make_hostile(pg.url, args.source_bytes, args.big_runs))
        for name, (query, cost) in queries.items():
            if args.only and name not in args.only:
                continue
            result = measure(pg.url, name, query)
            result["computed_cost"] = cost
            results.append(result)
            print(json.dumps(result), file=sys.stderr)
    print(f"\nlimits: cost {settings.max_query_cost:,}, aliases {settings.max_aliases}, depth {settings.max_query_depth}, "
          f"long text {settings.max_text_bytes:,} bytes; dataset: {args.workloads} workloads, {args.runs:,} runs "
          f"+ {args.big_runs:,} on {PAGE_SLUG}, sources of {args.source_bytes:,} bytes")
    print(f"{'query':<12} {'cost':>7} {'status':>6} {'seconds':>8} {'response':>12} {'RSS before':>11} {'RSS peak':>10}  errors")
    for r in results:
        print(f"{r['query']:<12} {r['computed_cost']:>7,} {r['status']:>6} {r['seconds']:>8.2f} "
              f"{r['response_bytes'] / 2**20:>9.2f} MiB {r['rss_before_mib']:>7.1f} MiB {r['rss_peak_mib']:>6.1f} MiB  "
              f"{'; '.join(r['errors']) or '-'}")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
