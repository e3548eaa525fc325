"""Outage drill: one database outage under load. How the API answers while PostgreSQL is down, and
how fast it recovers once PostgreSQL is back.

    python -m perf.outage_check                          # 20 s, 8 clients, outage from 6 s to 11 s
    python -m perf.outage_check --clients 16 --duration 30 --outage-at 10 --outage-for 8

It starts an embedded PostgreSQL of its own in a temporary folder (perf/postgres.py), a
`kernelindex serve` against it on a free loopback port, and N clients that send a mix of requests
(GraphQL page query over POST and GET, a runs list, /healthz, the JSON twin, runs.csv) for the
whole duration. At --outage-at it stops PostgreSQL (`pg_ctl -m fast stop`, as the wheel's OS
user); --outage-for seconds later it starts it again with the wheel's own options.

Reported: requests and failures before, during and after the outage; whether every failure was a
proper 503 (GraphQL SERVICE_UNAVAILABLE, JSON error elsewhere); how fast the 503s came; and the
recovery time: from PostgreSQL accepting connections again to the first successful API response.
An export refused because every export slot was taken (the limiter's 503 with Retry-After: more
clients asking for runs.csv at once than settings.export_concurrency) is load shed, not an outage
answer nor a failure: it is counted in a column of its own, and its form is checked (busy_problem).
Exit status 1 when a request failed after recovery or any failure was neither a proper 503 nor a
proper busy answer.
Bounded: the load stops at --duration, and at --max-requests at the latest.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from dataclasses import dataclass

import httpx

from perf.postgres import OwnPostgres
from perf.responses import busy_problem, ok_problem, unavailable_problem
from perf.server import Server

RESNET18 = "kernelbench-l3-p9-resnet18"
PAGE = {"query": f'{{ workload(slug: "{RESNET18}") {{ eligibleRunCount headline {{ label latencyDisplay }} '
                 "records { label latencyDisplay } comparison { rows { rank latencyDisplay } } } }"}
RUNS = {"query": "{ runs(first: 20) { totalCount nodes { id meanMs implementation { slug } } } }"}
KINDS = {
    "graphql page POST": lambda c: c.post("/graphql", json=PAGE),
    "graphql page GET": lambda c: c.get("/graphql", params=PAGE),
    "graphql runs": lambda c: c.post("/graphql", json=RUNS),
    "healthz": lambda c: c.get("/healthz"),
    "json twin": lambda c: c.get(f"/workloads/{RESNET18}.json"),
    "runs.csv": lambda c: c.get("/exports/runs.csv"),
}


@dataclass
class Outcome:
    kind: str
    started: float
    ended: float
    ok: bool
    proper_503: bool
    problem: str | None
    busy: bool = False  # the export limiter's proper answer (load shed): neither a success nor a failure


def classify(kind: str, started: float, ended: float, response: httpx.Response) -> Outcome:
    """A response as the drill counts it: a success, the export limiter's busy answer, a proper
    outage 503, or a failure (with what is wrong with it as an outage answer)."""
    if ok_problem(kind, response) is None:
        return Outcome(kind, started, ended, True, False, None)
    if kind == "runs.csv" and busy_problem(response) is None:
        return Outcome(kind, started, ended, False, False, None, busy=True)
    outage_issue = unavailable_problem(kind, response, single=False)
    return Outcome(kind, started, ended, False, outage_issue is None, outage_issue)


async def client_loop(base_url: str, index: int, deadline: float, timeout_s: float, outcomes: list, limit: int) -> None:
    kinds = list(KINDS)
    i = index
    async with httpx.AsyncClient(base_url=base_url, timeout=timeout_s) as client:
        while time.monotonic() < deadline and len(outcomes) < limit:
            kind = kinds[i % len(kinds)]
            i += 1
            started = time.monotonic()
            try:
                response = await KINDS[kind](client)
                outcomes.append(classify(kind, started, time.monotonic(), response))
            except httpx.HTTPError as exc:
                outcomes.append(Outcome(kind, started, time.monotonic(), False, False, f"{type(exc).__name__}: {exc}"))
            await asyncio.sleep(0)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.outage_check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load in all (default 20)")
    parser.add_argument("--outage-at", type=float, default=6.0)
    parser.add_argument("--outage-for", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=5.0, help="per-request timeout in seconds")
    parser.add_argument("--max-requests", type=int, default=200_000)
    args = parser.parse_args()
    if args.outage_at + args.outage_for >= args.duration - 2:
        parser.error("the outage must end at least 2 s before --duration")

    marks: dict[str, float] = {}
    pg = OwnPostgres(prefix="kernelindex-outage-check-")
    try:
        with Server(database_url=pg.url) as server:
            print(f"PostgreSQL {pg.url}\nserver {server.url} (pid {server.pid})", flush=True)

            def outage() -> None:
                time.sleep(max(0.0, marks["load_start"] + args.outage_at - time.monotonic()))
                marks["stop_called"] = time.monotonic()
                pg.stop("fast")
                marks["stopped"] = time.monotonic()
                time.sleep(args.outage_for)
                marks["start_called"] = time.monotonic()
                pg.start()
                marks["pg_ctl_ready"] = time.monotonic()
                pg.wait_until_accepting(limit_s=30)
                marks["accepting"] = time.monotonic()

            outcomes: list[Outcome] = []
            marks["load_start"] = time.monotonic()
            controller = threading.Thread(target=outage, daemon=True)
            controller.start()
            deadline = marks["load_start"] + args.duration

            async def load() -> None:
                await asyncio.gather(*(client_loop(server.url, i, deadline, args.timeout, outcomes, args.max_requests)
                                       for i in range(args.clients)))

            asyncio.run(load())
            controller.join(timeout=60)
            log = server.log_path.read_text()
    finally:
        pg.close()

    if "accepting" not in marks:
        print("the outage controller did not finish: PostgreSQL did not come back", file=sys.stderr)
        return 1
    t0 = marks["load_start"]
    ready = marks["pg_ctl_ready"]
    before, during, transition, after = [], [], [], []
    for o in outcomes:
        if o.ended <= marks["stop_called"]:
            before.append(o)
        elif o.started >= marks["stopped"] and o.ended <= marks["start_called"]:
            during.append(o)
        elif o.started >= ready:
            after.append(o)
        else:
            transition.append(o)  # in flight while PostgreSQL stopped or started
    # A streamed export already under way when PostgreSQL stops has sent its 200 and part of its body:
    # it can only end short (an incomplete chunked body, which clients detect), not become a 503.
    cut = [o for o in outcomes if o.kind == "runs.csv" and not o.ok and o.started < marks["stopped"]
           and (o.problem or "").startswith("RemoteProtocolError")]
    improper = [o for o in outcomes if not o.ok and not o.proper_503 and not o.busy and o not in cut]
    successes_after_ready = sorted(o.ended for o in outcomes if o.ok and o.ended >= ready)
    recovery = successes_after_ready[0] - ready if successes_after_ready else float("nan")
    first_started_after = sorted(o.ended for o in after if o.ok)
    recovery_fresh = first_started_after[0] - ready if first_started_after else float("nan")
    failed_after = [o for o in after if not o.ok and not o.busy]
    latencies_503 = [o.ended - o.started for o in during if o.proper_503]

    def line(name: str, group: list[Outcome]) -> str:
        ok = sum(o.ok for o in group)
        proper = sum(o.proper_503 for o in group)
        busy = sum(o.busy for o in group)
        return (f"{name:>11}: {len(group):6} requests, {ok:6} ok, {proper:6} proper 503, {busy:4} busy (export limiter), "
                f"{len(group) - ok - proper - busy:4} other")

    print(f"\nload: {args.clients} clients for {args.duration:.0f} s, {len(outcomes)} requests "
          f"({len(outcomes) / args.duration:.0f}/s); PostgreSQL stopped at {marks['stop_called'] - t0:.2f} s "
          f"(stop took {marks['stopped'] - marks['stop_called']:.2f} s), started at {marks['start_called'] - t0:.2f} s "
          f"(ready after {ready - marks['start_called']:.2f} s, accepting after {marks['accepting'] - marks['start_called']:.2f} s)")
    print(line("before", before))
    print(line("during", during))
    print(line("transitions", transition))
    print(line("after", after))
    if latencies_503:
        print(f"503 latency during the outage: p50 {percentile(latencies_503, 0.5) * 1000:.1f} ms, "
              f"p99 {percentile(latencies_503, 0.99) * 1000:.1f} ms, max {max(latencies_503) * 1000:.1f} ms")
    print(f"recovery time (PostgreSQL ready → first successful response): {recovery * 1000:.1f} ms; "
          f"first success among requests sent after it: {recovery_fresh * 1000:.1f} ms")
    print(f"failures after recovery: {len(failed_after)}; failures that were not a proper 503 (any time): {len(improper)}; "
          f"exports cut short mid-stream by the stop: {len(cut)}")
    for o in (failed_after + improper + cut)[:10]:
        print(f"   {o.kind} at {o.started - t0:.2f} s: {o.problem}")
    print(f"server log: {log.count('unexpected error (request')} unexpected errors, "
          f"{log.count('database unavailable (request')} database-unavailable warnings, "
          f"{log.count('commit failed')} failed commits")
    if during:
        print(f"median latency of successful requests before the outage: "
              f"{statistics.median([o.ended - o.started for o in before if o.ok]) * 1000:.1f} ms")
    return 1 if failed_after or improper or not during or not after else 0


if __name__ == "__main__":
    sys.exit(main())
