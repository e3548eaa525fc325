"""Measured speed of the API (not a test): requests/s at saturation, p50/p99 unloaded and at half
the saturation rate, SQL statements per request, against a floor.

    python -m perf.api_speed [--runs 1000000] [--workloads 250] [--seconds 15] [--clients 16]

What it does:
1. Starts an embedded PostgreSQL in a temporary folder, migrates, seeds, adds `--workloads`
   KernelBench-shaped workloads (levels 1–3, fixture sources) and `--runs` synthetic runs spread
   over them (bulk SQL: many environments, implementations and source snapshots), then refreshes
   the precomputed records.
2. Starts the server as the README does (`kernelindex serve`) in a separate process, pointed at
   that database, twice: as deployed (the response cache on) and with the response cache off (what
   the first request after each write costs); and a floor server: a plain Starlette endpoint that
   runs the same SQL as an executed request with asyncpg and returns the same JSON bytes.
3. Drives each endpoint with benchmarks/loadgen.py in a child process: after a warm-up (a short
   closed-loop burst, `--closed 4 --seconds 2`, discarded: it fills the response cache, opens the
   pools), one connection in sequence (`--sequential`: unloaded p50/p99), `--clients` connections in
   a closed loop for `--seconds` (`--closed`: saturation requests/s), then an open loop with Poisson
   arrivals at half the saturation rate for `--seconds` (`--rate`: p50/p99 at half load).
   loadgen.py is raw asyncio protocols (on uvloop when installed), about 30 µs of CPU a request: light
   enough to share the 2-core machine with the server, so the server, not the client, saturates, and
   its open loop keeps to its schedule whatever the answers do (hey needs one Go process per ~40
   requests/s to stay open loop, most of a core at 3,000/s; an httpx client costs more a request).
   Percentiles are of the requests answered 200; any other answer, lost connection or request
   dropped by the load generator is counted, reported, and makes the exit status 1.
Two queries: the workload page (everything on a reference page) and a list (first 100 workloads
with their current records). Everything is on 127.0.0.1, client included, on the same cores; the
load stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perf.loadgen import percentile, run_child, write_mix

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "kernelbench_checkout" / "KernelBench"

LIST_QUERY = """{ workloads(first: 100) { totalCount nodes { slug name level eligibleRunCount
  headline { label latencyMs latencyDisplay implementation { slug title } }
  records { label latencyMs runCount implementation { slug } } } } }"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def build_dataset(url: str, n_workloads: int, n_runs: int) -> None:
    import asyncpg

    from kernelindex.db.engine import in_own_transaction
    from kernelindex.db.urls import to_libpq_url
    from kernelindex.ingest.seed import load_seed
    from kernelindex.ingest.workloads import WorkloadSpec, upsert_workload

    sources = sorted(FIXTURES.glob("level*/*.py"))

    async def seed_and_workloads(session) -> None:
        await load_seed(session)
        for i in range(n_workloads):
            source = sources[i % len(sources)].read_text() + f"\n# synthetic variant {i}\n"
            level = 1 + i % 3
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
                  observed_at, evidence, content_sha256)
                SELECT $1, $2, c.bindings, 'fp32', c.key, i.id, e.id, $4, s.id, 'passed',
                       m.mean, m.mean * 0.02, m.mean * 0.97, m.mean * 1.05, 100,
                       timestamptz '2026-06-01' + (random() * interval '150 days'),
                       CASE WHEN random() < 0.2 THEN 'measured' ELSE 'reported' END, md5(random()::text)
                FROM (SELECT id FROM implementations ORDER BY id LIMIT 8) i
                CROSS JOIN (SELECT id FROM environments WHERE fingerprint LIKE 'synthetic-env-%' AND (id + $1) % 10 = 0 ORDER BY id) e
                CROSS JOIN (SELECT id, row_number() OVER (ORDER BY id) AS n FROM source_snapshots WHERE revision LIKE 'r%' ORDER BY id LIMIT $5) s
                CROSS JOIN LATERAL (
                    SELECT CASE WHEN s.n <= 2 THEN '{"batch_size": 16}'::jsonb ELSE jsonb_build_object('batch_size', 16 * s.n) END AS bindings,
                           CASE WHEN s.n <= 2 THEN $3 ELSE '{"bindings":{"batch_size":' || (16 * s.n) || '},"dtype":"fp32"}' END AS key
                ) c
                CROSS JOIN LATERAL (SELECT 0.05 + random() * 5 + 0 * i.id * e.id * s.id AS mean) m
                LIMIT $6
                """,
                w["id"], w["current_revision_id"], w["canonical_configuration_key"], protocol, snapshots, runs_per_workload,
            )
        total = await conn.fetchval("SELECT count(*) FROM runs")
        print(f"dataset: {len(workloads) + 2} workloads, {total:,} runs (inserted in {time.perf_counter() - started:.0f} s)", file=sys.stderr)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()
    from kernelindex.services.records import refresh_all_records

    started = time.perf_counter()
    await in_own_transaction(url, refresh_all_records)
    print(f"records refreshed in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def floor_app_source() -> str:
    return '''
import json, os, asyncpg
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
SQL = json.loads(open(os.environ["FLOOR_SQL"]).read())
BODIES = {k: open(v, "rb").read() for k, v in json.loads(os.environ["FLOOR_BODIES"]).items()}
import contextlib
pool = None
@contextlib.asynccontextmanager
async def lifespan(app):
    global pool
    pool = await asyncpg.create_pool(os.environ["FLOOR_DSN"], min_size=4, max_size=10)
    yield
    await pool.close()
async def handler(request):
    name = request.path_params["name"]
    async with pool.acquire() as conn:
        async with conn.transaction():
            for statement, args in SQL[name]:
                await conn.fetch(statement, *args)
    return Response(BODIES[name], media_type="application/json")
app = Starlette(routes=[Route("/q/{name}", handler)], lifespan=lifespan)
'''


async def capture_sql(url: str, queries: dict[str, tuple[str, dict]]) -> tuple[dict, dict, dict]:
    """Run each query once through the app in-process; return its SQL (asyncpg form), body and statement count."""
    import httpx
    from sqlalchemy import event

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    app = create_app(Settings(), database_url=url)
    sql, bodies, counts = {}, {}, {}
    async with app.router.lifespan_context(app):
        engine = app.state.engine
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            for name, (query, variables) in queries.items():
                seen: list = []

                def grab(conn, cursor, statement, parameters, context, executemany):
                    seen.append((statement, list(parameters) if isinstance(parameters, (list, tuple)) else []))

                event.listen(engine.sync_engine, "before_cursor_execute", grab)
                response = await client.post("/graphql", json={"query": query, "variables": variables})
                event.remove(engine.sync_engine, "before_cursor_execute", grab)
                assert "errors" not in response.json(), response.json()
                bodies[name] = response.content
                counts[name] = len(seen)
                sql[name] = [(s, [p if not hasattr(p, "isoformat") else p for p in params]) for s, params in seen]
    return sql, bodies, counts


def loadgen(url: str, mix: Path, out: Path, *mode: str, seconds: float | None = None) -> dict:
    """One run of benchmarks/loadgen.py in a child process against `url` with the `mix` file.
    p50/p99 are of the requests answered 200 in its --out file; rps is the closed loop's completed
    rate, else the requests answered 200 over `seconds` (the open loop) or over the run's span."""
    summary, rows = run_child(url, mix, out, *mode, timeout_s=(seconds or 0) + 900)
    out.unlink(missing_ok=True)
    latencies = [latency for _, latency, _, status in rows if status == "200"]
    failures = [status for _, _, _, status in rows if status != "200"]
    if "rate" in summary:
        rps = summary["rate"]
    else:
        span = seconds or (max(sent + latency for sent, latency, _, _ in rows) - min(sent for sent, _, _, _ in rows) if rows else 0)
        rps = len(latencies) / span if span > 0 else float("nan")
    errors = len(failures) + summary["dropped"]
    result = {"requests": len(latencies) + len(failures), "rps": rps,
              "p50_ms": percentile(latencies, 0.50) * 1000, "p99_ms": percentile(latencies, 0.99) * 1000,
              "errors": errors, "dropped": summary["dropped"]}
    if summary.get("lag_p99_ms") is not None:
        result["lag_p99_ms"] = summary["lag_p99_ms"]  # how late the open loop's requests left their schedule
    if errors:
        result["first_error"] = failures[0] if failures else "dropped: no connection free (--max-connections)"
        print(f"{url} {' '.join(mode)}: {errors} failed ({summary['dropped']} dropped); first: {result['first_error']}",
              file=sys.stderr, flush=True)
    return result


def wait_for(url: str, timeout: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"{url} did not come up")


def httpx_post_or_get(url: str, payload: dict | None) -> bytes:
    import httpx

    response = httpx.post(url, json=payload, timeout=60) if payload is not None else httpx.get(url, timeout=60)
    response.raise_for_status()
    return response.content


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--workloads", type=int, default=250)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--sequential", type=int,
                        help="requests for the unloaded figures (default: about min(--seconds, 10) s of them, "
                             "at least 200, from the warm-up's rate)")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()

    from kernelindex.db.embedded import temporary_embedded
    from kernelindex.db.migrate import upgrade
    from kernelindex.web.twins import WORKLOAD_PAGE_QUERY

    procs: list[subprocess.Popen] = []
    failed = 0  # requests that failed or were dropped
    with temporary_embedded("kernelindex-speed-") as server:
        try:
            upgrade(server.url)
            asyncio.run(build_dataset(server.url, args.workloads, args.runs))
            queries = {
                "page": (WORKLOAD_PAGE_QUERY, {"slug": "kernelbench-l2-p101-synthetic-1"}),
                "list": (LIST_QUERY, {}),
            }
            sql, bodies, counts = asyncio.run(capture_sql(server.url, queries))
            tmp = Path(tempfile.mkdtemp(prefix="kernelindex-floor-"))
            (tmp / "sql.json").write_text(json.dumps(sql, default=str))
            body_files = {}
            for name, body in bodies.items():
                (tmp / f"{name}.json").write_bytes(body)
                body_files[name] = str(tmp / f"{name}.json")
            (tmp / "floor_app.py").write_text(floor_app_source())

            api_port, uncached_port, floor_port = free_port(), free_port(), free_port()
            env = {**os.environ, "KERNELINDEX_DATABASE_URL": server.url, "KERNELINDEX_ENVIRONMENT": "production", "PYTHONFAULTHANDLER": "1", **dict(a.split("=", 1) for a in os.environ.get("API_SPEED_SERVER_ENV", "").split() if "=" in a)}
            # As deployed (the response cache on), and with the cache off: what every first request after a write costs.
            procs.append(subprocess.Popen([sys.executable, "-m", "kernelindex.cli", "serve", "--port", str(api_port), "--log-level", "warning"], env=env))
            procs.append(subprocess.Popen([sys.executable, "-m", "kernelindex.cli", "serve", "--port", str(uncached_port), "--log-level", "warning"],
                                          env={**env, "KERNELINDEX_RESPONSE_CACHE_ENTRIES": "0"}))
            floor_env = {**os.environ, "FLOOR_SQL": str(tmp / "sql.json"), "FLOOR_BODIES": json.dumps(body_files),
                         "FLOOR_DSN": server.url.replace("postgresql+asyncpg", "postgresql")}
            procs.append(subprocess.Popen([sys.executable, "-m", "uvicorn", "floor_app:app", "--port", str(floor_port),
                                           "--log-level", "warning", "--app-dir", str(tmp)], env=floor_env))
            for port in (api_port, uncached_port):
                wait_for(f"http://127.0.0.1:{port}/healthz")
            wait_for(f"http://127.0.0.1:{floor_port}/q/page")
            results = {"dataset": {"runs": args.runs, "workloads": args.workloads + 2}, "client": "benchmarks/loadgen.py",
                       "statements_per_request": {"executed": counts, "served from the response cache": 1}}
            for name, (query, variables) in queries.items():
                payload = {"query": query, "variables": variables}
                targets = {
                    "api": (api_port, "POST", "/graphql", payload),
                    "api, cache off": (uncached_port, "POST", "/graphql", payload),
                    "floor": (floor_port, "GET", f"/q/{name}", None),
                }
                for label, (port, method, path, body) in targets.items():
                    base = f"http://127.0.0.1:{port}"
                    check = httpx_post_or_get(base + path, body)
                    assert b'"errors"' not in check[:200], check[:300]
                    mix = tmp / f"{name}-{port}.mix.json"
                    write_mix(mix, [(name, 1, method, path, body)])
                    out = tmp / f"{name}-{port}.csv"
                    warm = loadgen(base, mix, out, "--closed", "4", "--seconds", "2")  # discarded: fills the cache
                    count = args.sequential or max(200, min(20_000, int(min(args.seconds, 10) * warm["rps"] / 4)))
                    unloaded = loadgen(base, mix, out, "--sequential", str(count))
                    saturated = loadgen(base, mix, out, "--closed", str(args.clients), "--seconds", repr(args.seconds))
                    half = loadgen(base, mix, out, "--rate", repr(saturated["rps"] / 2), "--seconds", repr(args.seconds),
                                   seconds=args.seconds)
                    errors = unloaded["errors"] + saturated["errors"] + half["errors"]
                    failed += errors
                    results[f"{name}/{label}"] = {"unloaded": unloaded, "saturation": saturated, "half_saturation": half,
                                                  "warm_up_errors": warm["errors"]}
                    print(f"{name:5} {label:15} saturation {saturated['rps']:7.0f} req/s | unloaded p50 {unloaded['p50_ms']:6.2f} ms "
                          f"p99 {unloaded['p99_ms']:6.2f} ms | half load p50 {half['p50_ms']:6.2f} ms p99 {half['p99_ms']:6.2f} ms "
                          f"| errors {errors}" + (" FAILED" if errors else ""), flush=True)
                floor_rps = results[f"{name}/floor"]["saturation"]["rps"]
                print(f"{name:5} SQL statements per request: {counts[name]} executed, 1 from the response cache; "
                      f"api/floor throughput {results[f'{name}/api']['saturation']['rps'] / floor_rps:.2f} "
                      f"(cache off {results[f'{name}/api, cache off']['saturation']['rps'] / floor_rps:.2f})", flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps(results, indent=2))
            shutil.rmtree(tmp, ignore_errors=True)
            if failed:
                print(f"FAILED: {failed} requests failed or were dropped (first errors above)", file=sys.stderr, flush=True)
        finally:
            for p in procs:
                p.send_signal(signal.SIGINT)
            for p in procs:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
