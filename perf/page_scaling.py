"""The uncached workload page as its one cohort grows: latency at 10, 1,000 and 10,000 eligible runs.

    python -m perf.page_scaling [--sizes 10,1000,10000] [--repeat 30] [--split] [--cold] [--out figures.json]

Starts an embedded PostgreSQL in a temporary folder, migrates, builds perf.dataset's dataset (a few
synthetic workloads), then gives one synthetic workload per size that many more passed runs, every
one eligible and all in ONE cohort (one environment, the dataset's implementations, a source
snapshot per eight runs), and refreshes the records. Then, in this process, through the whole ASGI
app with the response cache off (KERNELINDEX_RESPONSE_CACHE_ENTRIES=0, so every request executes;
over the read model unless `--cold`, which computes the page's values on every request),
times `GET /workloads/<slug>.json` (the workload page: headline, records, the comparison's 20 rows,
sources…) `--repeat` times after two warm-up requests, and prints the median and p90 per size with
the page's eligible run count, comparison rows and sources.

What must hold: the latency stays flat (within noise) from 10 to 10,000 eligible runs. The
comparison's rows are an index range of ix_runs_cohort_top (migration 0010), not a sort of the cohort;
`--split` then prints, per size, perf.page_split's split of the request (SQL, SQLAlchemy, rules/read
model, GraphQL, JSON), timed after the figures above: what still grows with the cohort shows there. A script,
not a test: the figures depend on the machine. To compare with another commit, run this file
against that commit's code (e.g. a `git worktree` with this file copied in).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

import httpx

os.environ["KERNELINDEX_RESPONSE_CACHE_ENTRIES"] = "0"


async def grow(url: str, sizes: list[int]) -> dict[int, str]:
    """One synthetic workload per size, with that many more eligible runs in one cohort; by size, its slug."""
    import asyncpg

    from kernelindex.db.engine import in_own_transaction
    from kernelindex.db.urls import to_libpq_url
    from kernelindex.services.records import refresh_workloads

    conn = await asyncpg.connect(to_libpq_url(url))
    slugs: dict[int, str] = {}
    ids = []
    try:
        workloads = await conn.fetch(
            "SELECT w.id, w.slug, w.current_revision_id, r.canonical_configuration_key FROM workloads w "
            "JOIN workload_revisions r ON r.id = w.current_revision_id WHERE w.name LIKE 'Synthetic_%' "
            "ORDER BY w.id DESC LIMIT $1", len(sizes),
        )
        env = await conn.fetchval("SELECT id FROM environments WHERE fingerprint LIKE 'synthetic-env-%' ORDER BY id DESC LIMIT 1")
        protocol = await conn.fetchval("SELECT id FROM protocols ORDER BY id LIMIT 1")
        source = await conn.fetchval("SELECT id FROM sources WHERE name = 'Synthetic load source'")
        for size, w in zip(sizes, workloads, strict=True):
            tag = f"scale-{w['id']}-"
            await conn.execute(
                "INSERT INTO source_snapshots (source_id, revision) SELECT $1, $2 || g FROM generate_series(1, $3) g "
                "ON CONFLICT DO NOTHING", source, tag, -(-size // 8),
            )
            await conn.execute(
                """
                INSERT INTO runs (workload_id, workload_revision_id, bindings, dtype, configuration_key, implementation_id,
                  environment_id, protocol_id, source_snapshot_id, status, mean_ms, std_ms, min_ms, max_ms,
                  num_trials, observed_at, evidence, content_sha256, figure)
                SELECT $1, $2, '{"batch_size": 16}'::jsonb, 'fp32', $3, i.id, $4, $5, s.id, 'passed',
                       m.mean, m.mean * 0.02, m.mean * 0.97, m.mean * 1.05, 100,
                       timestamptz '2026-06-01' + (random() * interval '150 days'), 'reported', md5(random()::text), m.mean
                FROM (SELECT id FROM implementations ORDER BY id LIMIT 8) i
                CROSS JOIN (SELECT id FROM source_snapshots WHERE revision LIKE $6 || '%' ORDER BY id) s
                CROSS JOIN LATERAL (SELECT 0.05 + random() * 5 + 0 * i.id * s.id AS mean) m
                LIMIT $7
                """,
                w["id"], w["current_revision_id"], w["canonical_configuration_key"], env, protocol, tag, size,
            )
            slugs[size] = w["slug"]
            ids.append(w["id"])
        await conn.execute("ANALYZE")
    finally:
        await conn.close()

    async def refresh(session):
        await refresh_workloads(session, ids)

    await in_own_transaction(url, refresh)
    return slugs


async def measure(url: str, slugs: dict[int, str], repeat: int) -> list[dict]:
    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    app = create_app(Settings(), database_url=url)
    out = []
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://page") as client:
            for size, slug in slugs.items():
                times = []
                response: httpx.Response | None = None  # the last one's page is what the row describes
                for i in range(repeat + 2):
                    started = time.perf_counter()
                    response = await client.get(f"/workloads/{slug}.json")
                    elapsed = time.perf_counter() - started
                    assert response.status_code == 200, response.text[:300]
                    assert response.headers.get("x-cache") != "hit", "the response cache answered"
                    if i >= 2:
                        times.append(elapsed * 1000)
                assert response is not None, "two warm-up requests at least"
                page = response.json()
                times.sort()
                out.append({
                    "cohort_runs": size, "eligible_runs": page["eligibleRunCount"],
                    "comparison_rows": len(page["comparison"]["rows"]), "result_count": page["comparison"]["resultCount"],
                    "sources": len(page["sources"]), "bytes": len(response.content),
                    "median_ms": round(statistics.median(times), 1), "p90_ms": round(times[int(len(times) * 0.9) - 1], 1),
                })
                print(json.dumps(out[-1]), file=sys.stderr)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.page_scaling", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,1000,10000", help="eligible runs in the one cohort, comma-separated")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--split", action="store_true", help="then print perf.page_split's split per size")
    parser.add_argument("--cold", action="store_true",
                        help="the read model off too: every request computes the page's values (the first after a write)")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    if args.cold:
        os.environ["KERNELINDEX_READ_MODEL_WORKLOADS"] = "0"
    sizes = [int(s) for s in args.sizes.split(",")]

    from kernelindex.db.embedded import temporary_embedded
    from kernelindex.db.migrate import upgrade
    from perf.dataset import build_dataset

    with temporary_embedded("kernelindex-scaling-") as pg:
        upgrade(pg.url)
        asyncio.run(build_dataset(pg.url, max(10, len(sizes)), 2000))
        slugs = asyncio.run(grow(pg.url, sizes))
        results = asyncio.run(measure(pg.url, slugs, args.repeat))
        split = None
        if args.split:
            from kernelindex.web.twins import WORKLOAD_PAGE_QUERY
            from perf import page_split

            queries = {f"{size:,} runs": (WORKLOAD_PAGE_QUERY, {"slug": slug}) for size, slug in slugs.items()}
            split = asyncio.run(page_split.measure(pg.url, queries, 10, 3))
    print("read model off (cold): every request computes the page's values" if args.cold else
          "over the read model (the page's values computed once; --cold for every request)")
    print(f"{'cohort runs':>11} {'eligible':>9} {'rows':>5} {'sources':>8} {'median':>9} {'p90':>9}")
    for r in results:
        print(f"{r['cohort_runs']:>11,} {r['eligible_runs']:>9,} {r['comparison_rows']:>5} {r['sources']:>8} "
              f"{r['median_ms']:>6.1f} ms {r['p90_ms']:>6.1f} ms")
    figures: dict = {"scaling": results}
    if split is not None:
        from perf import page_split

        print()
        figures["split"] = page_split.report(split, "the page per cohort size; 3 rounds of 10 requests, medians", 10)
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
