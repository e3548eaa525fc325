"""CPU per cached request through the whole ASGI stack, by route (not a test).

    python -m perf.request_overhead [--requests 3000] [--profile]
    python -m perf.request_overhead --runs-connection [--requests 1000] [--profile]

A cached answer does no SQL beyond the data-version read, so what it costs is the framework: the
middleware, Strawberry's request parsing, the context, the response. That cost sets how far below
its saturation rate the server still answers in about its unloaded time (perf/soak.py), so it is
measured here on its own, without sockets or a load generator: the app is called in-process, one
request after another, against an embedded PostgreSQL with the seed data.

Reported per route, in microseconds per request: with the data-version read (one round trip to
PostgreSQL each, as an unloaded request pays it) and with the version held fixed (the CPU the
application itself spends). --profile prints where the fixed-version time goes (cProfile).

--runs-connection measures instead the two uncached questions of perf/postgraphile_compare.py
(`runs(first: 16|100)` of its synthetic workload, on its dataset, the response cache off: each request
executes and reads its page from PostgreSQL): per request, the wall time and this process's CPU time
(time.process_time: the application's share, without PostgreSQL's, which runs in its own process).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

PAGE = """{ workload(slug: "kernelbench-l3-p9-resnet18") { title eligibleRunCountDisplay
  headline { label latencyDisplay plusMinusDisplay speedupDisplay }
  records { label latencyDisplay implementation { title } runCount }
  comparison { header rows { rank implementation { title } latencyDisplay vsFirstDisplay summary trustLabel stale } } } }"""
ROUTES = {  # name: (method, path, JSON body or None)
    "graphql page (POST)": ("POST", "/graphql", {"query": PAGE}),
    "json twin (GET)": ("GET", "/workloads/kernelbench-l3-p9-resnet18.json", None),
    "runs.csv (GET)": ("GET", "/exports/runs.csv", None),
}


def make_request(app, method: str, path: str, payload: dict | None):
    body = json.dumps(payload).encode() if payload is not None else b""
    headers = [(b"host", b"bench"), (b"accept", b"application/json")]
    if payload is not None:
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    base = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
            "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}

    async def one() -> None:
        delivered = False
        status = []

        async def receive():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # the client never disconnects

        async def send(message):
            if message["type"] == "http.response.start":
                status.append(message["status"])

        await app(dict(base, headers=list(headers)), receive, send)
        if status != [200]:
            raise RuntimeError(f"{method} {path} answered {status}")

    return one


async def per_request_us(one, count: int) -> float:
    await one()
    started = time.perf_counter()
    for _ in range(count):
        await one()
    return (time.perf_counter() - started) / count * 1e6


async def per_request_wall_cpu_us(one, count: int) -> tuple[float, float]:
    for _ in range(20):  # warm: plans built, statements prepared
        await one()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        await one()
    return (time.perf_counter() - wall) / count * 1e6, (time.process_time() - cpu) / count * 1e6


async def measure_runs(url: str, count: int, profile: bool) -> None:
    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app
    from perf.runs_connection import SIZES, graphql_query

    app = create_app(Settings(response_cache_entries=0, environment="production"), database_url=url)
    async with app.router.lifespan_context(app):
        requests = {f"runs(first: {first}) (POST)": make_request(app, "POST", "/graphql", {"query": graphql_query(first)})
                    for first in SIZES}
        print(f"{'route':24} {'µs/request':>12} {'CPU µs/request':>15}")
        for name, one in requests.items():
            wall, cpu = await per_request_wall_cpu_us(one, count)
            print(f"{name:24} {wall:12.0f} {cpu:15.0f}")
        if profile:
            await print_profile(requests.values(), count, "tottime", 45)


async def print_profile(requests: Iterable[Callable[[], Awaitable[Any]]], count: int, sort: str, lines: int) -> None:
    """cProfile over `count` more of each request, its top `lines` by `sort`."""
    profiler = cProfile.Profile()
    profiler.enable()
    for one in requests:
        for _ in range(count):
            await one()
    profiler.disable()
    pstats.Stats(profiler).sort_stats(sort).print_stats(lines)


async def measure(url: str, count: int, profile: bool) -> None:
    from kernelindex.web.app import create_app

    app = create_app(database_url=url)
    async with app.router.lifespan_context(app):
        reader = app.state.data_version
        requests = {name: make_request(app, *route) for name, route in ROUTES.items()}
        print(f"{'route':24} {'µs/request':>12} {'version fixed':>14}")
        with_read = {name: await per_request_us(one, count) for name, one in requests.items()}
        version = await reader.current()
        real_current = reader.current

        async def fixed() -> int:
            return version

        reader.current = fixed
        for name, one in requests.items():
            print(f"{name:24} {with_read[name]:12.0f} {await per_request_us(one, count):14.0f}")
        if profile:
            await print_profile(requests.values(), count, "cumulative", 40)
        reader.current = real_current


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m perf.request_overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per route and mode")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--runs-connection", action="store_true",
                        help="the uncached runs(first: 16|100) of perf/postgraphile_compare.py instead")
    args = parser.parse_args()
    from kernelindex.db.embedded import temporary_embedded
    from kernelindex.db.migrate import upgrade
    from kernelindex.ingest.seed import seed_database
    from perf.loadgen import run

    with temporary_embedded("kernelindex-overhead-") as pg:
        upgrade(pg.url)
        if args.runs_connection:
            from perf.dataset import build_dataset
            from perf.postgraphile_compare import _approve_flagged, _workload
            from perf.runs_connection import _grow

            asyncio.run(build_dataset(pg.url, 1, 4000))
            asyncio.run(_grow(pg.url, 4000))
            asyncio.run(_approve_flagged(pg.url, asyncio.run(_workload(pg.url))["id"]))
            run(measure_runs(pg.url, args.requests, args.profile))
            return
        asyncio.run(seed_database(pg.url))
        run(measure(pg.url, args.requests, args.profile))  # on the loop `kernelindex serve` uses: uvloop

if __name__ == "__main__":
    main()
