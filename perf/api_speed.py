"""Measured speed of the API (not a test): requests/s at saturation, p50/p99 unloaded and at half
the saturation rate, SQL statements per request, against a floor.

    python -m perf.api_speed [--runs 1000000] [--workloads 250] [--seconds 15] [--clients 16]
    python -m perf.api_speed --queries list --targets uncached    # one figure: the uncached list
    python -m perf.api_speed --database-url URL    # a dataset kept by `python -m perf.dataset --data-dir DIR` (it prints URL)

What it does:
1. Starts an embedded PostgreSQL in a temporary folder, migrates, and builds perf.dataset's
   synthetic dataset: the seed, `--workloads` KernelBench-shaped workloads (levels 1–3, generated
   reference modules) and `--runs` synthetic runs spread over them (bulk SQL: many environments,
   implementations and source snapshots), then refreshes the precomputed records.
2. Starts the server as the README does (`kernelindex serve`) in a separate process, pointed at
   that database, three times: as deployed (the response cache on); with the response cache off
   ("cache off": every request executes, over the read model, kernelindex.services.read_model, which
   keeps each workload's page values until that workload is written); and with both off ("cold":
   what the first request after a write to the workload shown costs); and the floor (perf/floor_app.py under uvicorn): a
   plain Starlette endpoint that runs the same SQL as an executed request with asyncpg and returns
   the same JSON bytes. The SQL is that of each query's first request through a new app (capture_sql):
   the reads of the data it shows, the read model empty (issue 27's floor: "the same data by asyncpg"),
   so a warm request's (a few statements, the read model answering the rest) is not what it replays:
   for the list of 100 workloads that is 100 pages' reads a request, and the list is judged by its own
   rate rather than against this floor. The ratio line says so.
3. Drives each endpoint with perf.loadgen in a child process: after a warm-up (a short
   closed-loop burst, `--closed 4 --seconds 2`, discarded: it fills the response cache, opens the
   pools), one connection in sequence (`--sequential`: unloaded p50/p99), `--clients` connections in
   a closed loop for `--seconds` (`--closed`: saturation requests/s), then an open loop with Poisson
   arrivals at half the saturation rate for `--seconds` (`--rate`: p50/p99 at half load).
   perf.loadgen is raw asyncio protocols (on uvloop when installed), about 30 µs of CPU a request: light
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
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

from perf.dataset import LIST_QUERY, PAGE_SLUG, build_dataset
from perf.loadgen import measure, write_mix
from perf.server import REPO, free_port, wait_for


async def capture_sql(url: str, queries: dict[str, tuple[str, dict]]) -> tuple[dict, dict, dict]:
    """Run each query once through the app in-process; return its SQL (asyncpg form), body and statement count.

    Caught where asyncpg runs it, whoever sent it: SQLAlchemy (a prepared statement's fetch) or the
    statements the app runs by the driver itself (kernelindex.db.driver, graphql.session.driver_fetch:
    a connection's fetch), which SQLAlchemy's cursor events never see."""
    import asyncpg
    import httpx
    from asyncpg.prepared_stmt import PreparedStatement

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    app = create_app(Settings(), database_url=url)
    sql, bodies, counts = {}, {}, {}
    seen: list = []
    originals = {(owner, name): getattr(owner, name) for owner in (asyncpg.Connection, PreparedStatement)
                 for name in ("fetch", "fetchrow", "fetchval")}

    def catching(owner, name, original):
        async def caught(self, *args, **kwargs):
            statement = self.get_query() if owner is PreparedStatement else args[0]
            seen.append((statement, list(args if owner is PreparedStatement else args[1:])))
            return await original(self, *args, **kwargs)
        return caught

    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            for name, (query, variables) in queries.items():
                seen.clear()
                for (owner, method), original in originals.items():
                    setattr(owner, method, catching(owner, method, original))
                try:
                    response = await client.post("/graphql", json={"query": query, "variables": variables})
                finally:
                    for (owner, method), original in originals.items():
                        setattr(owner, method, original)
                assert "errors" not in response.json(), response.json()
                bodies[name] = response.content
                counts[name] = len(seen)
                sql[name] = list(seen)
    return sql, bodies, counts


def httpx_post_or_get(url: str, payload: dict | None) -> bytes:
    import httpx

    response = httpx.post(url, json=payload, timeout=60) if payload is not None else httpx.get(url, timeout=60)
    response.raise_for_status()
    return response.content


# The endpoints driven, by their short names (--targets) and the labels the figures carry.
TARGETS = {"api": "api", "uncached": "api, cache off", "cold": "api, cold", "floor": "floor"}


def target_labels(text: str) -> list[str]:
    """The labels of the targets named in `text` (comma-separated short names)."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        raise SystemExit(f"unknown targets {unknown} (known: {', '.join(TARGETS)})")
    return [TARGETS[n] for n in names]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.api_speed", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--workloads", type=int, default=250)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--sequential", type=int,
                        help="requests for the unloaded figures (default: about min(--seconds, 10) s of them, "
                             "at least 200, from the warm-up's rate)")
    parser.add_argument("--queries", default="page,list", help="comma-separated, of: page, list")
    parser.add_argument("--targets", default="api,uncached,cold,floor",
                        help="comma-separated, of: api (as deployed), uncached (the response cache off), cold (the "
                             "read model off too), floor; e.g. --queries list --targets uncached for that figure alone")
    parser.add_argument("--out", help="write the figures as JSON here")
    parser.add_argument("--database-url", help="measure this database, already built by perf.dataset (`python -m "
                        "perf.dataset --data-dir DIR` prints its URL), instead of building one: a 1M-run build takes minutes")
    args = parser.parse_args()

    from kernelindex.db.embedded import temporary_embedded
    from kernelindex.db.migrate import upgrade
    from kernelindex.web.twins import WORKLOAD_PAGE_QUERY

    procs: list[subprocess.Popen] = []
    failed = 0  # requests that failed or were dropped
    given = contextlib.nullcontext(types.SimpleNamespace(url=args.database_url)) if args.database_url else None
    with given or temporary_embedded("kernelindex-speed-") as server:
        try:
            if not args.database_url:
                upgrade(server.url)
                asyncio.run(build_dataset(server.url, args.workloads, args.runs))
            known = {
                "page": (WORKLOAD_PAGE_QUERY, {"slug": PAGE_SLUG}),
                "list": (LIST_QUERY, {}),
            }
            queries = {name: known[name] for name in (q.strip() for q in args.queries.split(","))}
            wanted = target_labels(args.targets)
            sql, bodies, counts = asyncio.run(capture_sql(server.url, queries))
            tmp = Path(tempfile.mkdtemp(prefix="kernelindex-floor-"))
            (tmp / "sql.json").write_text(json.dumps(sql, default=str))
            body_files = {}
            for name, body in bodies.items():
                (tmp / f"{name}.json").write_bytes(body)
                body_files[name] = str(tmp / f"{name}.json")

            api_port, uncached_port, cold_port, floor_port = free_port(), free_port(), free_port(), free_port()
            env = {**os.environ, "KERNELINDEX_DATABASE_URL": server.url, "KERNELINDEX_ENVIRONMENT": "production", "PYTHONFAULTHANDLER": "1", **dict(a.split("=", 1) for a in os.environ.get("API_SPEED_SERVER_ENV", "").split() if "=" in a)}
            # As deployed (the response cache on); with it off (every request executes, over the read
            # model); and with the read model off too: what the first request after a write costs.
            serve = [sys.executable, "-m", "kernelindex.cli", "serve", "--log-level", "warning", "--port"]
            procs.append(subprocess.Popen([*serve, str(api_port)], env=env))
            procs.append(subprocess.Popen([*serve, str(uncached_port)], env={**env, "KERNELINDEX_RESPONSE_CACHE_ENTRIES": "0"}))
            procs.append(subprocess.Popen([*serve, str(cold_port)], env={
                **env, "KERNELINDEX_RESPONSE_CACHE_ENTRIES": "0", "KERNELINDEX_READ_MODEL_WORKLOADS": "0"}))
            floor_env = {**os.environ, "FLOOR_SQL": str(tmp / "sql.json"), "FLOOR_BODIES": json.dumps(body_files),
                         "FLOOR_DSN": server.url.replace("postgresql+asyncpg", "postgresql")}
            procs.append(subprocess.Popen([sys.executable, "-m", "uvicorn", "perf.floor_app:app", "--port", str(floor_port),
                                           "--log-level", "warning"], env=floor_env, cwd=REPO))
            for port in (api_port, uncached_port, cold_port):
                wait_for(f"http://127.0.0.1:{port}/healthz")
            wait_for(f"http://127.0.0.1:{floor_port}/q/{next(iter(queries))}")
            dataset = {"database": "--database-url"} if args.database_url else {"runs": args.runs, "workloads": args.workloads + 2}
            results: dict[str, Any] = {"dataset": dataset, "client": "perf.loadgen",
                       "statements_per_request": {"executed": counts, "served from the response cache": 1}}
            for name, (query, variables) in queries.items():
                payload = {"query": query, "variables": variables}
                targets = {
                    "api": (api_port, "POST", "/graphql", payload),
                    "api, cache off": (uncached_port, "POST", "/graphql", payload),
                    "api, cold": (cold_port, "POST", "/graphql", payload),
                    "floor": (floor_port, "GET", f"/q/{name}", None),
                }
                for label, (port, method, path, body) in targets.items():
                    if label not in wanted:
                        continue
                    base = f"http://127.0.0.1:{port}"
                    check = httpx_post_or_get(base + path, body)
                    assert b'"errors"' not in check[:200], check[:300]
                    mix = tmp / f"{name}-{port}.mix.json"
                    write_mix(mix, [(name, 1, method, path, body)])
                    out = tmp / f"{name}-{port}.csv"
                    warm = measure(base, mix, out, "--closed", "4", "--seconds", "2")  # discarded: fills the cache
                    count = args.sequential or max(200, min(20_000, int(min(args.seconds, 10) * warm["rps"] / 4)))
                    unloaded = measure(base, mix, out, "--sequential", str(count))
                    saturated = measure(base, mix, out, "--closed", str(args.clients), "--seconds", repr(args.seconds))
                    half = measure(base, mix, out, "--rate", repr(saturated["rps"] / 2), "--seconds", repr(args.seconds),
                                   seconds=args.seconds)
                    errors = unloaded["errors"] + saturated["errors"] + half["errors"]
                    failed += errors
                    results[f"{name}/{label}"] = {"unloaded": unloaded, "saturation": saturated, "half_saturation": half,
                                                  "warm_up_errors": warm["errors"]}
                    print(f"{name:5} {label:15} saturation {saturated['rps']:7.0f} req/s | unloaded p50 {unloaded['p50_ms']:6.2f} ms "
                          f"p99 {unloaded['p99_ms']:6.2f} ms | half load p50 {half['p50_ms']:6.2f} ms p99 {half['p99_ms']:6.2f} ms "
                          f"| errors {errors}" + (" FAILED" if errors else ""), flush=True)
                if len(wanted) != len(TARGETS):
                    continue  # the ratios need every target
                floor_rps = results[f"{name}/floor"]["saturation"]["rps"]
                print(f"{name:5} SQL statements per request: {counts[name]} executed by a first (cold) request, the floor's; "
                      "1 from the response cache; "
                      f"api/floor throughput {results[f'{name}/api']['saturation']['rps'] / floor_rps:.2f} "
                      f"(cache off {results[f'{name}/api, cache off']['saturation']['rps'] / floor_rps:.2f}, "
                      f"cold {results[f'{name}/api, cold']['saturation']['rps'] / floor_rps:.2f})", flush=True)
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
