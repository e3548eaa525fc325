"""How long does `submitRuns` take for a full call (1,000 records)?

    python -m perf.submit_runs                 # 5 calls of 1,000 new records, then the same again
    python -m perf.submit_runs --records 200 --calls 10
    python -m perf.submit_runs --http          # to `kernelindex serve` in a child process, over a socket
    python -m perf.submit_runs --machines 4    # every call's records on the same 4 machines (many configurations)
    python -m perf.submit_runs --database-url URL   # into a database kept by perf.dataset (1M runs), not a new one

Starts an embedded PostgreSQL in a temporary folder, migrates and seeds it, makes a `runs:write`
token, and posts the mutation to the application in this process (httpx's ASGI transport: the
whole request path, without a socket), or with --http to `kernelindex serve` (uvicorn) on a loopback
port, as a client elsewhere would. Prints each call's wall time and the median, for calls whose
records are all new and for the same records again (all unchanged). By default each record names a
machine of its own, new to the index (a call brings 1,000 machines); --machines N spreads every call's
records over the same N machines instead (a new configuration each, so the runs are still new), the
shape of a producer that benchmarks one pool of machines.

In process, the CPU time this process spent on each call is printed too (the application's own
work, PostgreSQL's not included): on a busy machine it moves far less than the wall time. So is the
CPU time the PostgreSQL server spent on each call (perf.server_cpu, when the server runs on this
machine): a call's wall time lies between the larger of the two and their sum.

A call's time runs from sending the request's bytes to having the response's: the request is built
(httpx encodes the JSON body, the client's own work, ~20 ms with the standard library's encoder and
under 1 ms with orjson's) before the clock starts, and its median is printed on a line of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from perf.ingest_speed import synthetic_lines
from perf.server_cpu import postmaster_of, server_cpu, spent

SUBMIT = """
mutation Submit($records: [JSON!]!) {
  submitRuns(records: $records) { ok inserted unchanged superseded problems { index key reason } }
}
"""


async def measure(
    url: str, records: int, calls: int, http: bool = False, kept: bool = False, machines: int | None = None,
) -> dict[str, list[float]]:
    import httpx
    from sqlalchemy import text

    from kernelindex.db.engine import in_own_transaction
    from kernelindex.ingest.seed import seed_database
    from kernelindex.services import tokens as auth
    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    if not kept:
        await seed_database(url)

    async def make(session) -> str:
        _, token = await auth.create_token(session, scopes=("runs:write",), name="perf")
        return token

    token = await in_own_transaction(url, make)

    async def server_of(session) -> int | None:
        # Read while the backend is there (it exits with its connection).
        return postmaster_of((await session.execute(text("SELECT pg_backend_pid()"))).scalar_one())

    server_pid = await in_own_transaction(url, server_of)
    server_cpu_now = server_cpu(server_pid)
    workloads = [("kernelbench-l3-p9-resnet18", {"batch_size": 2}, "fp32", 1.67)]
    # Into a kept database, machines it has not seen (a number of the clock's): each run of this script
    # writes new runs there, as it does into a new database.
    first = time.time_ns() // 1000 % 10**12 if kept else 0
    lines = list(synthetic_lines(records * calls, workloads, environments=machines or records * calls, samples=0,
                                 first_environment=first))
    batches = [[json.loads(line) for line in lines[i * records:(i + 1) * records]] for i in range(calls)]
    times: dict[str, list[float]] = {"new": [], "unchanged": [], "client encode": [], "new cpu": [], "unchanged cpu": [],
                                     "new server cpu": [], "unchanged server cpu": []}

    async def post_all(client) -> None:
        for kind in ("new", "unchanged"):
            for batch in batches:
                start = time.perf_counter()
                request = client.build_request(
                    "POST", "/graphql", json={"query": SUBMIT, "variables": {"records": batch}},
                    headers={"authorization": f"Bearer {token}"},
                )
                sent = time.perf_counter()
                cpu = time.process_time()
                server_before = server_cpu_now()
                response = await client.send(request)
                elapsed = time.perf_counter() - sent
                cpu = time.process_time() - cpu
                server_used = spent(server_before, server_cpu_now())
                result = response.json()["data"]["submitRuns"]
                expected = (len(batch), 0) if kind == "new" else (0, len(batch))
                if (result["inserted"], result["unchanged"]) != expected or result["problems"]:
                    raise SystemExit(f"unexpected answer for {kind} records: {result}")
                times[kind].append(elapsed * 1000)
                times["client encode"].append((sent - start) * 1000)
                times[f"{kind} cpu"].append(cpu * 1000)
                if server_used is not None:
                    times[f"{kind} server cpu"].append(server_used * 1000)

    if http:
        from perf.server import Server

        with Server(database_url=url, migrate_and_seed=False) as server:
            async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
                await post_all(client)
        return times
    app = create_app(Settings(), database_url=url)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://perf", timeout=60) as client:
            await post_all(client)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.submit_runs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1000, help="records per call (default 1,000, the most a call takes)")
    parser.add_argument("--calls", type=int, default=5, help="calls of each kind (default 5)")
    parser.add_argument("--http", action="store_true", help="post to `kernelindex serve` in a child process over a loopback socket")
    parser.add_argument("--database-url", help="a migrated, seeded database to write into (e.g. perf.dataset's, 1M runs; it keeps "
                        "the records x calls new runs) instead of a new embedded one")
    parser.add_argument("--machines", type=int, help="the machines every call's records name, in all (default: one per record, "
                        "each new to the index)")
    args = parser.parse_args(argv)
    if args.database_url:
        times = asyncio.run(measure(args.database_url, args.records, args.calls, args.http, kept=True, machines=args.machines))
        _report(times, args)
        return 0

    from kernelindex.db.embedded import EmbeddedPostgres
    from kernelindex.db.migrate import upgrade

    tmp = Path(tempfile.mkdtemp(prefix="kernelindex-submit-runs-"))
    tmp.chmod(0o755)  # the server may run as another user
    server = None
    try:
        server = EmbeddedPostgres(tmp / "db", delete_on_stop=True)
        upgrade(server.url)
        times = asyncio.run(measure(server.url, args.records, args.calls, args.http, machines=args.machines))
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    _report(times, args)
    return 0


def _report(times: dict[str, list[float]], args: argparse.Namespace) -> None:
    where = "over HTTP to `kernelindex serve`" if args.http else "in process (ASGI)"
    if args.machines:
        where += f", on {args.machines:,} machines in all"
    for kind, values in times.items():
        each = ", ".join(f"{v:.0f}" for v in values)
        if kind == "client encode":
            print(f"(not timed above: the client's JSON encode of a call, median {statistics.median(values):.1f} ms)")
        elif kind.endswith(" server cpu"):
            if values:  # PostgreSQL's CPU time while the call ran (its backends' and its own), read from /proc
                print(f"  PostgreSQL's CPU time per {kind[:-11]} call: median {statistics.median(values):.0f} ms ({each} ms)")
        elif kind.endswith(" cpu"):
            if not args.http:  # the application's Python work in this process (PostgreSQL's not counted): steadier on a busy machine
                print(f"  this process's CPU time per {kind[:-4]} call: median {statistics.median(values):.0f} ms ({each} ms)")
        else:
            print(f"submitRuns, {args.records:,} {kind} records per call, {where}: median {statistics.median(values):.0f} ms "
                  f"({each} ms)")


if __name__ == "__main__":
    sys.exit(main())
