"""Soak: a steady mixed load for minutes, watching errors, latency and the server's memory.

    python -m perf.soak --minutes 10                       # rate: half the measured saturation
    python -m perf.soak --minutes 10 --saturation 7000     # rate: 3,500/s, no measurement
    python -m perf.soak --minutes 1 --rate 50

It starts `kernelindex serve` (fresh database, temporary KERNELINDEX_DATA_DIR, free loopback port)
and splits the machine: the server and its PostgreSQL on --server-cpus, the load generator and this
script on the other CPUs (on a small machine a load generator sharing the server's core measures
the scheduler's time slice, ~10 ms, not the server). Then, with perf.loadgen:
  1. the unloaded latency: --unloaded-requests of the mix one after another, p50 and p99;
  2. unless --rate or --saturation is given, the saturation rate: --clients closed-loop
     connections for --saturation-s seconds, requests/s completed;
  3. the mix at the rate (default half the saturation), Poisson arrivals, for --minutes;
  4. meanwhile from this script: the server's RSS and CPU every --sample-s seconds, a content check
     of every kind each second (GraphQL errors come back with HTTP 200) and, with
     --write-every-s N, a submitRuns write every N seconds (each one invalidates the response
     cache under load, so the reads after it run the full execution again).
The mix: the workload page (GraphQL), the workload list, a runs list, the JSON twin, runs.csv.

Exit status 1 if any request failed or was dropped, if the soak's p99 is over 3x the unloaded p99,
or if the RSS grew by more than 10 % from the end of the warm-up (the first --warmup-s seconds) to
the end. For reading the p99: the script also prints what an ideal single queue (Poisson arrivals,
every request the same service time, the server's measured utilisation) would show at that rate:
no single-threaded server can do better than that on average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from perf.loadgen import command, percentile, read_out, run_child, write_mix
from perf.server import REPO, Server

RESNET18 = "kernelbench-l3-p9-resnet18"
PAGE = {"query": '{ workload(slug: "' + RESNET18 + '") { title eligibleRunCountDisplay' + """
  headline { label latencyDisplay plusMinusDisplay speedupDisplay }
  records { label latencyDisplay implementation { title } runCount }
  comparison { header rows { rank implementation { title } latencyDisplay vsFirstDisplay summary trustLabel stale } }
  headroom { summary boundLine basisLine notes } notMeasured { message } } }"""}
WORKLOADS = {"query": "{ workloads(first: 20) { totalCount nodes { slug title eligibleRunCount headline { latencyDisplay } } } }"}
RUNS = {"query": "{ runs(first: 20) { totalCount nodes { id meanMs latencyDisplay trustLabel implementation { slug } "
                 "environment { label hardware { sku } } } } }"}
MIX = [  # (name, weight, method, path, JSON body or None)
    ("workload page", 4, "POST", "/graphql", PAGE),
    ("workload list", 2, "POST", "/graphql", WORKLOADS),
    ("runs list", 2, "POST", "/graphql", RUNS),
    ("json twin", 2, "GET", f"/workloads/{RESNET18}.json", None),
    ("runs.csv", 1, "GET", "/exports/runs.csv", None),
]

SUBMIT = """mutation Submit($records: [JSON!]!) { submitRuns(records: $records) { ok inserted problems { reason } } }"""


def write_record(n: int) -> dict:
    """A new passed run on the page's workload, in an environment of its own (so it is inserted)."""
    record = json.loads((REPO / "seeds" / "runs.jsonl").read_text().splitlines()[3])
    record["environment"] = {"hardware": {"sku": "NVIDIA H100 SXM5 80GB"}, "provider": "SoakCloud",
                             "label": f"soak-{n}", "software": {"torch": "2.13.0"}}
    mean = 1.5 + (n % 40) / 100
    record["statistics"] = {"mean": mean, "std": 0.01, "min": mean - 0.01, "max": mean + 0.01, "num_trials": 100}
    record["source"] = {"name": "Soak writer", "revision": "s1"}
    record["evidence"] = "measured"
    return record


def write_failed(response: httpx.Response) -> str | None:
    error = failed(response)
    if error:
        return error
    result = response.json()["data"]["submitRuns"]
    return None if result["ok"] and result["inserted"] == 1 else f"submitRuns: {result}"


async def write_loop(client: httpx.AsyncClient, token: str, t0: float, seconds: float, every_s: float, results: list) -> None:
    """One submitRuns write every `every_s` seconds until the soak ends, each recorded in `results`."""
    n = 0
    while time.monotonic() - t0 + every_s < seconds:
        await asyncio.sleep(every_s)
        n += 1
        started = time.monotonic()
        try:
            response = await client.post("/graphql", json={"query": SUBMIT, "variables": {"records": [write_record(n)]}},
                                         headers={"Authorization": f"Bearer {token}"})
            error = write_failed(response)
        except (httpx.HTTPError, ValueError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        results.append((started - t0, time.monotonic() - started, "submitRuns", error))


def failed(response: httpx.Response) -> str | None:
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    if response.request.url.path == "/graphql" and response.json().get("errors"):
        return f"GraphQL errors: {response.json()['errors'][0]['message'][:100]}"
    return None


class LoadGen:
    """perf.loadgen in a child process (it inherits this process's CPUs), on the MIX."""

    def __init__(self, url: str, folder: Path):
        self.url = url
        self.folder = folder
        self.mix = folder / "mix.json"
        write_mix(self.mix, MIX)
        self.runs = 0

    def out(self) -> Path:
        self.runs += 1
        return self.folder / f"run-{self.runs}.csv"

    def run(self, *mode: str) -> tuple[dict, list[tuple[float, float, str, str | None]]]:
        out = self.out()
        summary, _ = run_child(self.url, self.mix, out, *mode)
        return summary, self.read(out)

    def start(self, *mode: str, t0: float) -> tuple[subprocess.Popen, Path]:
        out = self.out()
        return subprocess.Popen(command(self.url, self.mix, out, *mode, t0=t0), stdout=subprocess.PIPE, text=True, cwd=REPO), out

    @staticmethod
    def read(out: Path) -> list[tuple[float, float, str, str | None]]:
        """(offset, latency, kind, error) per request."""
        return [(sent, latency, MIX[kind][0] if kind >= 0 else "connect", None if status == "200" else status)
                for sent, latency, kind, status in read_out(out)]


async def send(client: httpx.AsyncClient, method: str, path: str, body: dict | None) -> httpx.Response:
    return await client.request(method, path, json=body)


async def soak(load: LoadGen, client: httpx.AsyncClient, server: Server, workers: int, rate: float, seconds: float,
               sample_s: float, token: str | None, write_every_s: float) -> dict:
    """The open-loop mix from the load generator, plus from this process: RSS and CPU samples, the
    writes, and a content check of every kind once a second."""
    t0 = time.monotonic()
    proc, out = load.start("--rate", repr(rate), "--seconds", repr(seconds), t0=t0)
    generator = psutil.Process(proc.pid)
    checks: list[tuple[float, float, str, str | None]] = []
    rss: list[tuple[float, int]] = []
    cpu: list[tuple[float, float, float, float]] = []  # (offset, machine %, server %, load generator and this script %)
    me = psutil.Process()
    processes = server.processes()  # with --workers: the supervisor and each worker, summed
    queues = min(workers, len(processes[0].cpu_affinity()))  # each worker is a queue of its own, on a core at most

    async def sampler() -> None:
        cores = psutil.cpu_count() or 1
        psutil.cpu_percent(None), me.cpu_percent(None), generator.cpu_percent(None)
        for proc in processes:
            proc.cpu_percent(None)
        while (now := time.monotonic() - t0) < seconds:
            await asyncio.sleep(sample_s)
            rss.append((now, sum(proc.memory_info().rss for proc in processes)))
            try:
                gen = generator.cpu_percent(None)
            except psutil.Error:
                gen = 0.0
            served = sum(proc.cpu_percent(None) for proc in processes)
            cpu.append((now, psutil.cpu_percent(None), served / cores, (gen + me.cpu_percent(None)) / cores))

    async def checker() -> None:
        while time.monotonic() - t0 < seconds - 1:
            for name, _, method, path, body in MIX:
                started = time.monotonic()
                try:
                    error = failed(await send(client, method, path, body))
                except (httpx.HTTPError, ValueError) as exc:
                    error = f"{type(exc).__name__}: {exc}"
                checks.append((started - t0, time.monotonic() - started, f"check: {name}", error))
            await asyncio.sleep(1.0)

    tasks = [sampler(), checker()]
    if token and write_every_s > 0:
        tasks.append(write_loop(client, token, t0, seconds, write_every_s, checks))
    await asyncio.gather(*tasks)
    stdout, _ = await asyncio.to_thread(proc.communicate)
    if proc.returncode != 0:
        raise RuntimeError(f"loadgen exited {proc.returncode}")
    summary = json.loads(stdout)
    # Of each worker's core: the server's CPU time over the soak, after the first fifth.
    utilisation = statistics.mean(c[2] for c in cpu[len(cpu) // 5:]) * (psutil.cpu_count() or 1) / 100 / queues if cpu else float("nan")
    return {"results": load.read(out), "checks": checks, "rss": rss, "cpu": cpu, "summary": summary,
            "utilisation": utilisation, "queues": queues}


def ideal_queue_p99(rate: float, service_s: float, base_s: float, n: int = 200_000, seed: int = 7) -> float:
    """p99 latency of a single FIFO server with Poisson arrivals at `rate` and every request taking
    `service_s`, plus a fixed `base_s` outside the server (the network, the client): M/D/1."""
    rng = random.Random(seed)
    arrival = free = 0.0
    latencies = []
    for _ in range(n):
        arrival += rng.expovariate(rate)
        free = max(arrival, free) + service_s
        latencies.append(free - arrival + base_s)
    return percentile(latencies, 0.99)


def parse_cpus(spec: str, workers: int) -> set[int]:
    """--server-cpus: "auto", "none", or a list like "1" or "2-3,5". auto: the last `workers` CPUs,
    when that leaves at least one for the load generator; otherwise no pinning."""
    available = sorted(os.sched_getaffinity(0))
    if spec == "none":
        return set()
    if spec == "auto":
        return set(available[-workers:]) if len(available) > workers else set()
    cpus: set[int] = set()
    for part in spec.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    if not cpus < set(available):
        raise SystemExit(f"--server-cpus {spec}: must be a proper subset of this process's CPUs {available}")
    return cpus


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, help="requests per second (default: half the saturation)")
    parser.add_argument("--saturation", type=float, help="a saturation rate measured before, requests per second")
    parser.add_argument("--clients", type=int, default=16, help="closed-loop connections for the saturation measurement")
    parser.add_argument("--saturation-s", type=float, default=10.0)
    parser.add_argument("--unloaded-requests", type=int, default=500)
    parser.add_argument("--warmup-s", type=float, default=None, help="default: a fifth of the soak, at most 60 s")
    parser.add_argument("--sample-s", type=float, default=2.0)
    parser.add_argument("--write-every-s", type=float, default=0.0,
                        help="also one submitRuns write this often, e.g. 5 (default 0: reads only, the gate's mix)")
    parser.add_argument("--workers", type=int, default=1, help="kernelindex serve --workers")
    parser.add_argument("--server-cpus", default="auto",
                        help="CPUs for the server and its database, e.g. 1 or 2-3; the load generator and this script "
                             "get the rest. auto: the last --workers CPUs when that leaves one; none: no pinning")
    parser.add_argument("--dump", help="write every request (offset, latency, kind, error) and the RSS samples here, as JSON")
    args = parser.parse_args()
    seconds = args.minutes * 60
    warmup = args.warmup_s if args.warmup_s is not None else min(60.0, seconds / 5)

    with Server(serve_args=("--workers", str(args.workers))) as server:
        print(f"server {server.url} (pid {server.pid}, {args.workers} worker processes), log {server.log_path}", flush=True)
        server_cpus = parse_cpus(args.server_cpus, args.workers)
        if server_cpus:
            others = server.pin(server_cpus, database_cpus=server_cpus)
            print(f"CPUs: server and PostgreSQL {sorted(server_cpus)}; load generator and this script {sorted(others)}", flush=True)
        token = server.kernelindex("token", "create", "--scope", "runs:write", "--name", "soak").strip() if args.write_every_s > 0 else None
        folder = Path(tempfile.mkdtemp(prefix="kernelindex-soak-"))
        load = LoadGen(server.url, folder)

        async def run() -> dict:
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                for name, _, method, path, body in MIX:  # every kind answers, and the caches are warm
                    if error := failed(await send(client, method, path, body)):
                        raise RuntimeError(f"{name} failed before the soak: {error}")
                # Warm every worker's response cache: a miss in the unloaded sample would be its p99.
                await asyncio.to_thread(load.run, "--closed", str(4 * args.workers), "--seconds", "2")
                _, base = await asyncio.to_thread(load.run, "--sequential", str(args.unloaded_requests))
                if bad := [r for r in base if r[3]]:
                    raise RuntimeError(f"unloaded requests failed: {bad[:3]}")
                saturation = args.saturation
                if args.rate is None and saturation is None:
                    summary, _ = await asyncio.to_thread(load.run, "--closed", str(args.clients), "--seconds", str(args.saturation_s))
                    saturation = summary["rate"]
                    await asyncio.sleep(2)
                rate = args.rate or saturation / 2
                latencies = [r[1] for r in base]
                print(f"unloaded: p50 {statistics.median(latencies) * 1000:.2f} ms, p99 {percentile(latencies, 0.99) * 1000:.2f} ms; "
                      f"saturation {saturation or float('nan'):.0f}/s; soaking at {rate:.0f}/s for {seconds:.0f} s", flush=True)
                out = await soak(load, client, server, args.workers, rate, seconds, args.sample_s, token, args.write_every_s)
                return {**out, "unloaded": latencies, "rate": rate}

        try:
            out = asyncio.run(run())
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        log = server.log_path.read_text()

    results, checks, summary = out["results"], out["checks"], out["summary"]
    if args.dump:
        with open(args.dump, "w") as f:
            json.dump({"results": results, "checks": checks, "rss": out["rss"], "cpu": out["cpu"],
                       "unloaded": out["unloaded"], "rate": out["rate"]}, f)
    errors = [r for r in results + checks if r[3]]
    after_warmup = [r[1] for r in results if not r[3] and r[0] >= warmup]
    unloaded_p50, unloaded_p99 = percentile(out["unloaded"], 0.5), percentile(out["unloaded"], 0.99)
    soak_p50, soak_p99 = percentile(after_warmup, 0.5), percentile(after_warmup, 0.99)
    samples = [(t, b) for t, b in out["rss"] if t >= warmup]
    first = statistics.median([b for _, b in samples[:3]]) if samples else float("nan")
    last = statistics.median([b for _, b in samples[-3:]]) if samples else float("nan")
    growth = (last - first) / first if samples else float("nan")
    peak = max(b for _, b in out["rss"])

    print(f"\nload: {summary['scheduled']} scheduled ({summary['scheduled'] / seconds:.1f}/s), {summary['completed']} "
          f"completed, {summary['dropped']} dropped, {summary['errors']} errors; sender lag p99 {summary['lag_p99_ms']:.2f} ms; "
          f"load generator's event loop held up at most {summary['stall_max_ms']:.1f} ms ({summary['stalls_over_10ms']} times over 10 ms); "
          f"{summary['connections']} connections at the end; {len(checks)} checks and writes from this script")
    for kind in [m[0] for m in MIX] + sorted({r[2] for r in checks}):
        lat = [r[1] for r in results + checks if r[2] == kind and not r[3] and r[0] >= warmup]
        print(f"   {kind:>20}: {len(lat):7} ok after warm-up, p50 {percentile(lat, 0.5) * 1000:7.2f} ms, "
              f"p99 {percentile(lat, 0.99) * 1000:7.2f} ms")
    for r in errors[:10]:
        print(f"   error at {r[0]:.1f} s ({r[2]}): {r[3]}")
    rho = out["utilisation"]
    per_queue = out["rate"] / out["queues"]
    service = rho / per_queue if rho == rho else float("nan")
    ideal = ideal_queue_p99(per_queue, service, max(0.0, unloaded_p50 - service)) if 0 < rho < 1 else float("nan")
    print(f"latency after a {warmup:.0f} s warm-up: p50 {soak_p50 * 1000:.2f} ms, p99 {soak_p99 * 1000:.2f} ms "
          f"(unloaded p99 {unloaded_p99 * 1000:.2f} ms: x{soak_p99 / unloaded_p99:.2f})")
    print(f"server utilisation {rho * 100:.0f} % of each worker's core, {service * 1e6:.0f} µs of CPU a request; an "
          f"ideal single queue at that load (M/D/1) has p99 {ideal * 1000:.2f} ms (x{ideal / unloaded_p99:.2f} the unloaded p99)")
    print(f"server RSS: {first / 2**20:.1f} MiB after warm-up, {last / 2**20:.1f} MiB at the end ({growth * 100:+.1f} %), "
          f"peak {peak / 2**20:.1f} MiB, {len(out['rss'])} samples")
    print(f"server log: {log.count('unexpected error (request')} unexpected errors, {log.count('Traceback')} tracebacks")
    window = max(10.0, seconds / 30)
    print(f"per {window:.0f} s window: p99 | CPU (share of all cores) of the machine, the server, the load generator "
          f"and this script, everything else")
    for start in [k * window for k in range(int(seconds // window) + 1)]:
        lat = [r[1] for r in results if start <= r[0] < start + window and not r[3]]
        use = [c for c in out["cpu"] if start <= c[0] < start + window]
        if not lat or not use:
            continue
        machine, srv, gen = (statistics.mean(c[i] for c in use) for i in (1, 2, 3))
        print(f"   {start:5.0f}-{start + window:5.0f} s: p99 {percentile(lat, 0.99) * 1000:7.2f} ms | "
              f"{machine:5.1f} % {srv:5.1f} % {gen:5.1f} % {max(0.0, machine - srv - gen):5.1f} %")
    verdicts = {
        "no errors": not errors and summary["dropped"] == 0 and summary["completed"] == summary["scheduled"],
        "p99 within 3x unloaded p99": soak_p99 <= 3 * unloaded_p99,
        "RSS growth within 10 %": growth <= 0.10,
    }
    for name, passed in verdicts.items():
        print(f"{'PASS' if passed else 'FAIL'}: {name}")
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
