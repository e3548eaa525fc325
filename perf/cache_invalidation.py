"""Measured: page reads of other workloads while one workload is written (not a test).

    python -m perf.cache_invalidation [--runs 100000] [--workloads 50] [--pages 20] [--seconds 10] [--clients 8]

What it does:
1. Starts an embedded PostgreSQL in a temporary folder, migrates, and builds perf.dataset's synthetic
   dataset (`--workloads` KernelBench-shaped workloads, `--runs` runs over them, records refreshed).
2. Starts `kernelindex serve` on it (production settings, the response cache on, one worker).
3. The reads: the full workload page query (kernelindex.web.twins.WORKLOAD_PAGE_QUERY, ~1,000 fields)
   of `--pages` synthetic workloads, uniformly, POST /graphql, from perf.loadgen in a closed loop of
   `--clients` connections for `--seconds` (reads/s completed, p50/p99 of those answered 200). The
   written workload is never among them.
4. The writes, from this script on a connection of its own while the reads run: each one a committed
   transaction that changes one run of ONE workload (its observed_at moves by a microsecond), so the
   change log names that workload alone; none, one per second, one every 100 ms. Then the same rates
   of a new catalogue row: a new revision of a source (a source_snapshots row) and a new run of the
   written workload that names it, in one transaction, as an import of a new upstream revision
   writes them; nothing read names the new row, so the pages read stay (migration 0021; before it,
   every entry went). Then the same rates of a catalogue edit (one hardware row's
   datasheet_source), which every page reads: every entry goes, as every write did before 0007.
Each phase starts with the cache warm (every page read until it answers X-Cache: hit) and reads the
server's /metrics before and after: hits, misses and invalidated entries in the phase.

Everything runs on 127.0.0.1 on the same cores (no pinning); exit status 1 if any read failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx

from perf.loadgen import command, percentile, read_out, write_mix
from perf.server import REPO, Server

WRITE_RUN = """
UPDATE runs SET observed_at = observed_at + interval '1 microsecond'
 WHERE id = (SELECT id FROM runs WHERE workload_id = $1 ORDER BY id LIMIT 1)
"""
# {columns}: every column of runs but id and created_at, filled in by new_catalogue_row(); the new
# run is the written workload's first live run again, on a new revision of its source (the natural key
# holds the snapshot, so it is a run of its own).
WRITE_NEW_CATALOGUE_ROW = """
WITH run AS (SELECT * FROM runs WHERE workload_id = $1 AND superseded_at IS NULL ORDER BY id LIMIT 1),
     snapshot AS (INSERT INTO source_snapshots (source_id, revision)
                  SELECT s.source_id, 'perf-' || gen_random_uuid()::text
                    FROM source_snapshots s JOIN run ON s.id = run.source_snapshot_id
                  RETURNING id)
INSERT INTO runs ({columns}) SELECT {values} FROM run, snapshot
"""
WRITE_CATALOGUE = """
UPDATE hardware SET datasheet_source = coalesce(datasheet_source, '') || '.'
 WHERE id = (SELECT min(id) FROM hardware)
"""


async def new_catalogue_row(dsn: str) -> str:
    """WRITE_NEW_CATALOGUE_ROW with the columns of runs as the database has them."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        columns = [r["column_name"] for r in await conn.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs' "
            "AND column_name NOT IN ('id', 'created_at') ORDER BY ordinal_position")]
    finally:
        await conn.close()
    values = ["snapshot.id" if c == "source_snapshot_id" else f"run.{c}" for c in columns]
    return WRITE_NEW_CATALOGUE_ROW.format(columns=", ".join(columns), values=", ".join(values))


def metrics(base: str) -> dict[str, float]:
    text = httpx.get(f"{base}/metrics", timeout=10).text
    return {line.split("{")[0].removeprefix("kernelindex_response_cache_"): float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line and not line.startswith("#")}


def warm(base: str, query: str, slugs: list[str]) -> None:
    """Every page read once (executed if it is not in the cache), until each answers from the cache."""
    for _ in range(3):
        misses = 0
        for slug in slugs:
            response = httpx.post(f"{base}/graphql", json={"query": query, "variables": {"slug": slug}}, timeout=60)
            misses += response.headers.get("x-cache") != "hit"
        if misses == 0:
            return


async def writes(dsn: str, statement: str, workload_id: int, every_s: float | None, stop: asyncio.Event) -> list[float]:
    """Commit `statement` every `every_s` seconds until `stop`; the seconds each commit took."""
    import asyncpg

    took: list[float] = []
    if every_s is None:
        await stop.wait()
        return took
    conn = await asyncpg.connect(dsn)
    args = (workload_id,) if "$1" in statement else ()
    try:
        next_at = time.monotonic()
        while not stop.is_set():
            next_at += every_s
            started = time.monotonic()
            await conn.execute(statement, *args)
            took.append(time.monotonic() - started)
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, next_at - time.monotonic()))
            except TimeoutError:
                pass
    finally:
        await conn.close()
    return took


async def phase(base: str, mix: Path, out: Path, dsn: str, statement: str, workload_id: int, every_s: float | None,
                clients: int, seconds: float) -> dict:
    stop = asyncio.Event()
    writer = asyncio.create_task(writes(dsn, statement, workload_id, every_s, stop))
    process = await asyncio.create_subprocess_exec(
        *command(base, mix, out, "--closed", str(clients), "--seconds", repr(seconds)),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
    stdout, stderr = await process.communicate()
    stop.set()
    took = await writer
    if process.returncode != 0:
        raise RuntimeError(f"loadgen exited {process.returncode}: {stderr.decode()[-2000:]}")
    summary = json.loads(stdout)
    rows = read_out(out)  # the load has ended: blocking file work holds nothing up
    out.unlink(missing_ok=True)  # noqa: ASYNC240
    ok = [latency for _, latency, _, status in rows if status == "200"]
    return {"reads_per_s": summary["rate"], "p50_ms": percentile(ok, 0.5) * 1e3, "p99_ms": percentile(ok, 0.99) * 1e3,
            "errors": summary["errors"] + summary["dropped"], "writes": len(took),
            "write_p50_ms": percentile(took, 0.5) * 1e3 if took else None}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.cache_invalidation", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--workloads", type=int, default=50)
    parser.add_argument("--pages", type=int, default=20, help="how many other workloads' pages are read")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()

    import asyncpg

    from kernelindex.db.embedded import temporary_embedded
    from kernelindex.db.migrate import upgrade
    from kernelindex.db.urls import to_libpq_url
    from kernelindex.web.twins import WORKLOAD_PAGE_QUERY
    from perf.dataset import build_dataset

    failed = 0
    results: dict = {"dataset": {"runs": args.runs, "workloads": args.workloads + 2}, "pages": args.pages,
                     "clients": args.clients, "seconds": args.seconds}
    with temporary_embedded("kernelindex-invalidation-") as pg:
        upgrade(pg.url)
        asyncio.run(build_dataset(pg.url, args.workloads, args.runs))
        dsn = to_libpq_url(pg.url)

        async def workloads() -> list[tuple[int, str]]:
            conn = await asyncpg.connect(dsn)
            try:
                rows = await conn.fetch("SELECT id, slug FROM workloads WHERE name LIKE 'Synthetic_%' ORDER BY id")
                return [(r["id"], r["slug"]) for r in rows]
            finally:
                await conn.close()

        found = asyncio.run(workloads())
        if len(found) < args.pages + 1:
            raise SystemExit(f"--pages {args.pages} needs at least {args.pages + 1} synthetic workloads (--workloads)")
        (written_id, written_slug), read = found[0], found[1:args.pages + 1]
        results["written_workload"] = written_slug
        tmp = Path(tempfile.mkdtemp(prefix="kernelindex-invalidation-"))
        mix, out = tmp / "mix.json", tmp / "out.csv"
        write_mix(mix, [(slug, 1, "POST", "/graphql", {"query": WORKLOAD_PAGE_QUERY, "variables": {"slug": slug}})
                        for _, slug in read])
        try:
            with Server(database_url=pg.url, migrate_and_seed=False,
                        extra_env={"KERNELINDEX_ENVIRONMENT": "production"}) as server:
                base = server.url
                page = httpx.post(f"{base}/graphql", json={"query": WORKLOAD_PAGE_QUERY, "variables": {"slug": read[0][1]}},
                                  timeout=60).json()
                assert "errors" not in page and page["data"]["workload"] is not None, str(page)[:300]
                phases: list[tuple[str, str, float | None]] = [("none", WRITE_RUN, None)]
                for label, statement in (("one workload", WRITE_RUN), ("new catalogue row", asyncio.run(new_catalogue_row(dsn))),
                                         ("catalogue edit", WRITE_CATALOGUE)):
                    phases += [(f"{label}, 1/s", statement, 1.0), (f"{label}, every 100 ms", statement, 0.1)]
                for name, statement, every_s in phases:
                    warm(base, WORKLOAD_PAGE_QUERY, [slug for _, slug in read])
                    before = metrics(base)
                    figures = asyncio.run(phase(base, mix, out, dsn, statement, written_id, every_s, args.clients,
                                                args.seconds))
                    after = metrics(base)
                    figures.update({k: int(after[k + "_total"] - before[k + "_total"])
                                    for k in ("hits", "misses", "invalidated")})
                    failed += figures["errors"]
                    results[name] = figures
                    print(f"writes: {name:33} reads {figures['reads_per_s']:7.0f}/s  p50 {figures['p50_ms']:7.2f} ms  "
                          f"p99 {figures['p99_ms']:7.2f} ms  | {figures['writes']:3} writes  hits {figures['hits']:6} "
                          f"misses {figures['misses']:5} invalidated {figures['invalidated']:5}  errors {figures['errors']}",
                          flush=True)
                # The figure of issue 27: reads of other workloads under one new catalogue row a second,
                # beside no writes in the same run.
                ratio = results["new catalogue row, 1/s"]["reads_per_s"] / max(results["none"]["reads_per_s"], 1e-9)
                results["new_catalogue_row_1s_vs_none"] = ratio
                print(f"reads under one new catalogue row a second / no writes: {ratio:.2f}", flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    if failed:
        print(f"FAILED: {failed} reads failed or were dropped", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
