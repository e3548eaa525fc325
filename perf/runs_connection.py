"""Measured speed of a workload's eligible runs, fastest first (not a test): uncached requests/s
and unloaded p50 of `runs(workload:, first: 16|100, orderBy: FASTEST, eligibleOnly: true)`, before
and after the page is chosen on `runs` alone, next to one raw asyncpg json_build_object statement.

    python -m perf.runs_connection [--runs 4000,40000] [--baseline DIR] [--seconds 10] [--clients 16]

For each size in `--runs`: an embedded PostgreSQL in a temporary folder, perf.dataset's seed plus
ONE synthetic workload holding that many runs (80 a source snapshot; two snapshots at the
canonical configuration, so 160 eligible runs whatever the size; past perf.dataset's 8,000 the rest
are copies of its batch-size sweep at further batch sizes, never eligible), then, each in its own process on
that database with the response cache off (KERNELINDEX_RESPONSE_CACHE_ENTRIES=0: every request is
executed):
  before  `kernelindex serve` of the code in `--baseline` (a copy of the code before, e.g.
          `mkdir /tmp/ki-base && git archive HEAD | tar -x -C /tmp/ki-base`), on the schema it
          knows (migrated to 0008); left out without `--baseline`;
  after   `kernelindex serve` of this checkout, the schema migrated to head (0009 adds ix_runs_fastest);
  floor   a plain Starlette endpoint (`floor_app` below, under uvicorn) that answers the same
          question with one asyncpg statement building the JSON in PostgreSQL (json_build_object):
          the same fields, not byte for byte the same text.
Each is driven with perf.loadgen in a child process: a warm-up (`--closed 4 --seconds 2`,
discarded), `--sequential` requests one after another (unloaded p50), then `--clients` connections
in a closed loop for `--seconds` (requests/s). The answers of before and after are checked to be
the same bytes (same runs, order and cursors). Client and servers share the machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from perf.loadgen import measure, write_mix
from perf.server import REPO, free_port, wait_for

# perf.dataset names its synthetic workloads kernelbench-l<level>-p<100 + i>-synthetic-<i>.
SLUG = "kernelbench-l1-p100-synthetic-0"
SIZES = (16, 100)


def graphql_query(first: int) -> str:
    return (f'{{ runs(workload: "{SLUG}", first: {first}, orderBy: FASTEST, eligibleOnly: true) {{ '
            "edges { cursor node { id meanMs stdMs numTrials observedAt evidence "
            "implementation { slug title } environment { label hardware { sku } } } } "
            "pageInfo { hasNextPage endCursor } } }")


# The floor: the same page and fields, built in one statement. The page is read as the API now
# reads it (the workload's current revision and canonical configuration, through ix_runs_fastest
# once it exists); cursors and ids are encoded as the API encodes them (base64url of
# ["run:fastest",[mean,id]] and of "Run:<id>").
FLOOR_SQL = """
WITH w AS (
  SELECT w.id, w.current_revision_id, r.canonical_configuration_key AS key
  FROM workloads w JOIN workload_revisions r ON r.id = w.current_revision_id WHERE w.slug = $1
), page AS (
  SELECT runs.* FROM runs, w
  WHERE runs.workload_id = w.id AND runs.workload_revision_id = w.current_revision_id AND runs.configuration_key = w.key
    AND runs.status = 'passed' AND runs.superseded_at IS NULL AND runs.retracted_at IS NULL
  ORDER BY coalesce(runs.mean_ms, 'Infinity'::float8), runs.id LIMIT $2 + 1
), shown AS (
  SELECT p.*, row_number() OVER (ORDER BY coalesce(p.mean_ms, 'Infinity'::float8), p.id) AS n,
         translate(replace(encode(convert_to('["run:fastest",[' || coalesce(p.mean_ms, 'Infinity'::float8)::text || ','
           || p.id || ']]', 'UTF8'), 'base64'), E'\\n', ''), '+/', '-_') AS cursor
  FROM page p
)
SELECT json_build_object('data', json_build_object('runs', json_build_object(
  'edges', coalesce((
    SELECT json_agg(json_build_object('cursor', s.cursor, 'node', json_build_object(
      'id', encode(convert_to('Run:' || s.id, 'UTF8'), 'base64'), 'meanMs', s.mean_ms, 'stdMs', s.std_ms,
      'numTrials', s.num_trials, 'observedAt', s.observed_at, 'evidence', s.evidence,
      'implementation', json_build_object('slug', i.slug, 'title', i.title),
      'environment', json_build_object('label', e.label, 'hardware', json_build_object('sku', h.sku))))
      ORDER BY s.n)
    FROM shown s JOIN implementations i ON i.id = s.implementation_id JOIN environments e ON e.id = s.environment_id
    JOIN hardware h ON h.id = e.hardware_id WHERE s.n <= $2), '[]'::json),
  'pageInfo', json_build_object(
    'hasNextPage', (SELECT count(*) FROM shown) > $2,
    'endCursor', (SELECT s.cursor FROM shown s WHERE s.n <= $2 ORDER BY s.n DESC LIMIT 1)))))::text
"""


def _floor_app():
    import contextlib

    import asyncpg
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        app.state.pool = await asyncpg.create_pool(os.environ["FLOOR_DSN"], min_size=4, max_size=10)
        try:
            yield
        finally:
            await app.state.pool.close()

    async def page(request: Request) -> Response:
        async with request.app.state.pool.acquire() as conn:
            body = await conn.fetchval(FLOOR_SQL, SLUG, int(request.path_params["first"]))
        return Response(body, media_type="application/json")

    return Starlette(routes=[Route("/q/{first:int}", page)], lifespan=lifespan)


def __getattr__(name: str):
    # `uvicorn perf.runs_connection:floor_app` builds it; importing this module for --help does not.
    if name == "floor_app":
        return _floor_app()
    raise AttributeError(name)


def _serve(code: Path, url: str, port: int, log: Path) -> subprocess.Popen:
    """`kernelindex serve` of the checkout `code` (its own package first on the path), uncached."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_")}
    env.update({"KERNELINDEX_DATABASE_URL": url, "KERNELINDEX_ENVIRONMENT": "production",
                "KERNELINDEX_RESPONSE_CACHE_ENTRIES": "0", "PYTHONPATH": str(code)})
    where = subprocess.run([sys.executable, "-c", "import kernelindex; print(kernelindex.__file__)"], env=env, cwd=code,
                           capture_output=True, text=True, check=True).stdout.strip()
    if not Path(where).resolve().is_relative_to(code.resolve()):
        raise SystemExit(f"{code}: its kernelindex is not the one imported ({where})")
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, "-m", "kernelindex.cli", "serve", "--port", str(port), "--log-level", "warning"],
                                env=env, cwd=code, stdout=out, stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def _drive(tmp: Path, port: int, method: str, path: str, body: dict | None, args) -> dict:
    import httpx

    base = f"http://127.0.0.1:{port}"
    check = (httpx.post(base + path, json=body, timeout=60) if body else httpx.get(base + path, timeout=60))
    check.raise_for_status()
    if b'"errors"' in check.content[:200]:
        raise SystemExit(f"{base}{path}: {check.text[:300]}")
    mix, out = tmp / f"{port}{path.replace('/', '_')}.json", tmp / f"{port}.csv"
    write_mix(mix, [("runs", 1, method, path, body)])
    measure(base, mix, out, "--closed", "4", "--seconds", "2")  # warm-up: pools, prepared statements, caches
    unloaded = measure(base, mix, out, "--sequential", str(args.sequential))
    saturated = measure(base, mix, out, "--closed", str(args.clients), "--seconds", repr(args.seconds))
    return {"rps": saturated["rps"], "p50_ms": unloaded["p50_ms"], "p99_ms": unloaded["p99_ms"],
            "errors": unloaded["errors"] + saturated["errors"], "body": check.content}


def measure_size(n_runs: int, args, tmp: Path) -> dict:
    from kernelindex.db.embedded import temporary_embedded
    from kernelindex.db.migrate import upgrade
    from perf.dataset import build_dataset

    results: dict = {}
    with temporary_embedded("kernelindex-runs-connection-") as server:
        upgrade(server.url, "0008")  # the schema the code before knows
        asyncio.run(build_dataset(server.url, 1, n_runs))
        asyncio.run(_grow(server.url, n_runs))
        targets = []
        if args.baseline:
            targets.append(("before", Path(args.baseline)))
        targets.append(("after", REPO))
        bodies = {}
        for label, code in targets:
            if label == "after":
                upgrade(server.url)
                asyncio.run(_analyze(server.url))
            port = free_port()
            proc = _serve(code, server.url, port, tmp / f"{label}.log")
            try:
                wait_for(f"http://127.0.0.1:{port}/healthz", timeout=120)
                for first in SIZES:
                    r = _drive(tmp, port, "POST", "/graphql", {"query": graphql_query(first)}, args)
                    bodies[(label, first)] = r.pop("body")
                    results[f"{label}/{first}"] = r
            finally:
                _stop(proc)
        port = free_port()
        floor_env = {**os.environ, "FLOOR_DSN": server.url}
        floor = subprocess.Popen([sys.executable, "-m", "uvicorn", "perf.runs_connection:floor_app", "--port", str(port),
                                  "--log-level", "warning"], env=floor_env, cwd=REPO)
        try:
            wait_for(f"http://127.0.0.1:{port}/q/16")
            for first in SIZES:
                r = _drive(tmp, port, "GET", f"/q/{first}", None, args)
                bodies[("floor", first)] = r.pop("body")
                results[f"floor/{first}"] = r
        finally:
            _stop(floor)
    for first in SIZES:
        after = json.loads(bodies[("after", first)])["data"]["runs"]
        floor_page = json.loads(bodies[("floor", first)])["data"]["runs"]
        # The floor answers the same question: the same runs in the same order, the same cursors.
        assert [e["cursor"] for e in after["edges"]] == [e["cursor"] for e in floor_page["edges"]], first
        assert len(after["edges"]) == first
        if args.baseline:
            before = json.loads(bodies[("before", first)])
            results[f"same answer before and after/{first}"] = before["data"] == json.loads(bodies[("after", first)])["data"]
    return results


async def _grow(url: str, n_runs: int) -> None:
    """Bring the workload to `n_runs` runs (perf.dataset stops at 8,000: 100 source snapshots of 80):
    copies of its off-canonical runs, each copy at batch sizes of its own, then ANALYZE."""
    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        workload = await conn.fetchrow(
            "SELECT w.id, r.canonical_configuration_key AS key FROM workloads w "
            "JOIN workload_revisions r ON r.id = w.current_revision_id WHERE w.slug = $1", SLUG)
        if workload is None:
            raise SystemExit(f"runs_connection: the dataset has no workload {SLUG!r}")
        copy = 0
        while (have := await conn.fetchval("SELECT count(*) FROM runs WHERE workload_id = $1", workload["id"])) < n_runs:
            copy += 1
            await conn.execute("""
                INSERT INTO runs (workload_id, workload_revision_id, bindings, dtype, configuration_key, implementation_id,
                  environment_id, protocol_id, source_snapshot_id, status, mean_ms, std_ms, min_ms, max_ms, num_trials,
                  observed_at, evidence, content_sha256, figure)
                SELECT workload_id, workload_revision_id, jsonb_build_object('batch_size', b.size), dtype,
                       '{"bindings":{"batch_size":' || b.size || '},"dtype":"fp32"}', implementation_id, environment_id,
                       protocol_id, source_snapshot_id, status, mean_ms, std_ms, min_ms, max_ms, num_trials, observed_at,
                       evidence, md5(random()::text), figure
                FROM runs CROSS JOIN LATERAL (SELECT 100000 * $3 + (bindings->>'batch_size')::int AS size) b
                WHERE workload_id = $1 AND configuration_key <> $2 AND (bindings->>'batch_size')::int < 100000
                ORDER BY id LIMIT $4""", workload["id"], workload["key"], copy, n_runs - have)
        await conn.execute("ANALYZE")
        print(f"workload {SLUG}: {have:,} runs", file=sys.stderr, flush=True)
    finally:
        await conn.close()


async def _analyze(url: str) -> None:
    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.runs_connection", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="4000,40000", help="runs in the workload, one dataset per size (comma-separated)")
    parser.add_argument("--baseline", help="a copy of the code to measure as 'before' (e.g. git archive HEAD)")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--sequential", type=int, default=300, help="requests for the unloaded p50")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kernelindex-runs-connection-"))
    figures: dict = {}
    failed = 0
    try:
        for n_runs in (int(n) for n in args.runs.split(",")):
            results = measure_size(n_runs, args, tmp)
            figures[str(n_runs)] = results
            for key, r in results.items():
                if isinstance(r, dict):
                    failed += r["errors"]
                    print(f"{n_runs:>7} runs  {key:10} {r['rps']:8.0f} req/s  unloaded p50 {r['p50_ms']:7.2f} ms  "
                          f"p99 {r['p99_ms']:7.2f} ms  errors {r['errors']}", flush=True)
                else:
                    failed += not r
                    print(f"{n_runs:>7} runs  {key}: {r}", flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(figures, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
