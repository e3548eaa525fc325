"""Soak: a steady mixed load for minutes, watching errors, latency and the server's memory.

    python scripts/soak.py --minutes 10                       # rate: half the measured saturation
    python scripts/soak.py --minutes 10 --saturation 400      # rate: 200/s, no measurement
    python scripts/soak.py --minutes 1 --rate 50

It starts `kernelindex serve` (fresh database, temporary KERNELINDEX_DATA_DIR, free loopback port),
then:
  1. measures the unloaded latency: requests of the mix one at a time, p50 and p99;
  2. unless --rate or --saturation is given, measures the saturation rate: --clients closed-loop
     clients for --saturation-s seconds, requests per second completed;
  3. sends the mix at the rate (default half the saturation) for --minutes;
  4. samples the server process's RSS (psutil) every --sample-s seconds.
The load comes from `hey` when it is installed (apt install hey; see HeyLoad): one Python process
cannot send more than a few hundred requests/s, and on two shared cores it took the CPU the server
needed, so the script measured its own queueing. Without hey (or with --client python) it is this
script's asyncio client, open-loop, latency counted from each request's scheduled time. With hey,
this script still sends a content check of every kind each second (GraphQL errors come back with
HTTP 200, which hey counts as success) and the writes.
The mix: the workload page (GraphQL), the workload list, a runs list, the JSON twin, runs.csv.
With --write-every-s N, also a write every N seconds (submitRuns with a token, one new run on the
page's workload): each one invalidates the response cache under load, so the reads after it run
the full execution again.

Exit status 1 if any request failed (with hey: or under 98 % of the scheduled load completed), if the soak's p99 is over 3x the unloaded p99, or if the RSS
grew by more than 10 % from the end of the warm-up (the first --warmup-s seconds) to the end.
Bounded: the load stops at --minutes; at most --max-in-flight requests are outstanding at once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
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

from _server import Server

RESNET18 = "kernelbench-l3-p9-resnet18"
PAGE = {"query": """{ workload(slug: "%s") { title eligibleRunCountDisplay
  headline { label latencyDisplay plusMinusDisplay speedupDisplay }
  records { label latencyDisplay implementation { title } runCount }
  comparison { header rows { rank implementation { title } latencyDisplay vsFirstDisplay summary trustLabel stale } }
  headroom { summary boundLine basisLine notes } notMeasured { message } } }""" % RESNET18}
WORKLOADS = {"query": "{ workloads(first: 20) { totalCount nodes { slug title eligibleRunCount headline { latencyDisplay } } } }"}
RUNS = {"query": "{ runs(first: 20) { totalCount nodes { id meanMs latencyDisplay trustLabel implementation { slug } "
                 "environment { label hardware { sku } } } } }"}
MIX = [  # (name, weight, send)
    ("workload page", 4, lambda c: c.post("/graphql", json=PAGE)),
    ("workload list", 2, lambda c: c.post("/graphql", json=WORKLOADS)),
    ("runs list", 2, lambda c: c.post("/graphql", json=RUNS)),
    ("json twin", 2, lambda c: c.get(f"/workloads/{RESNET18}.json")),
    ("runs.csv", 1, lambda c: c.get("/exports/runs.csv")),
]


# The same mix as hey sees it: (method, path, JSON body or None).
HTTP = {
    "workload page": ("POST", "/graphql", PAGE),
    "workload list": ("POST", "/graphql", WORKLOADS),
    "runs list": ("POST", "/graphql", RUNS),
    "json twin": ("GET", f"/workloads/{RESNET18}.json", None),
    "runs.csv": ("GET", "/exports/runs.csv", None),
}
HEY_WORKER_MAX_RATE = 40.0  # requests/s per hey worker: a stall of one request delays few others

SUBMIT = """mutation Submit($records: [JSON!]!) { submitRuns(records: $records) { ok inserted problems { reason } } }"""


def write_record(n: int) -> dict:
    """A new passed run on the page's workload, in an environment of its own (so it is inserted)."""
    import json

    from _server import REPO

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


def pick(rng: random.Random):
    return rng.choices(MIX, weights=[w for _, w, _ in MIX])[0]


def failed(response: httpx.Response) -> str | None:
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    if response.request.url.path == "/graphql" and response.json().get("errors"):
        return f"GraphQL errors: {response.json()['errors'][0]['message'][:100]}"
    return None


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


async def unloaded(client: httpx.AsyncClient, count: int, rng: random.Random) -> list[float]:
    latencies = []
    for _ in range(count):
        _, _, send = pick(rng)
        started = time.perf_counter()
        response = await send(client)
        latencies.append(time.perf_counter() - started)
        if failed(response):
            raise RuntimeError(f"unloaded request failed: {failed(response)}")
    return latencies


async def saturation(client: httpx.AsyncClient, clients: int, seconds: float, rng: random.Random) -> float:
    done = 0
    deadline = time.monotonic() + seconds

    async def loop():
        nonlocal done
        while time.monotonic() < deadline:
            _, _, send = pick(rng)
            await send(client)
            done += 1

    started = time.monotonic()
    await asyncio.gather(*(loop() for _ in range(clients)))
    return done / (time.monotonic() - started)


async def soak(client: httpx.AsyncClient, process: psutil.Process, rate: float, seconds: float, sample_s: float,
               max_in_flight: int, rng: random.Random, token: str | None = None, write_every_s: float = 0) -> dict:
    results: list[tuple[float, float, str, str | None]] = []  # (scheduled offset, latency, kind, error)
    rss: list[tuple[float, int]] = []
    in_flight = asyncio.Semaphore(max_in_flight)
    skipped = 0
    t0 = time.monotonic()

    async def one(scheduled: float, kind: str, send) -> None:
        try:
            response = await send(client)
            error = failed(response)
        except (httpx.HTTPError, ValueError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        finally:
            in_flight.release()
        results.append((scheduled - t0, time.monotonic() - scheduled, kind, error))

    cpu: list[tuple[float, float, float, float]] = []  # (offset, machine %, server %, this load generator %)
    me = psutil.Process()

    async def sampler() -> None:
        psutil.cpu_percent(None), process.cpu_percent(None), me.cpu_percent(None)  # start the counters
        while True:
            now = time.monotonic() - t0
            rss.append((now, process.memory_info().rss))
            cores = psutil.cpu_count() or 1
            cpu.append((now, psutil.cpu_percent(None), process.cpu_percent(None) / cores, me.cpu_percent(None) / cores))
            if now >= seconds:
                break
            await asyncio.sleep(sample_s)

    sampling = asyncio.create_task(sampler())
    writing = asyncio.create_task(write_loop(client, token, t0, seconds, write_every_s, results)) if token and write_every_s > 0 else None
    tasks = set()
    i = 0
    while True:
        scheduled = t0 + i / rate
        if scheduled - t0 >= seconds:
            break
        delay = scheduled - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        if in_flight.locked():
            skipped += 1  # the server fell this far behind: count it, do not pile on
        else:
            await in_flight.acquire()
            kind, _, send = pick(rng)
            task = asyncio.create_task(one(scheduled, kind, send))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        i += 1
    if tasks:
        await asyncio.wait(tasks, timeout=60)
    await sampling
    if writing is not None:
        await writing
    return {"results": results, "rss": rss, "cpu": cpu, "skipped": skipped, "sent": i}


class HeyLoad:
    """The mix sent by `hey` processes (Debian package hey): Go clients, so the load generator does
    not take the core the server needs. Each kind gets its share of the rate, split over workers of
    at most HEY_WORKER_MAX_RATE each, one single-worker hey per worker, started spread out: one hey
    with many workers and -q fires them all on the same tick, in bursts."""

    def __init__(self, base_url: str, folder: Path):
        self.base_url = base_url
        self.folder = folder
        self.bodies = {}
        for i, (kind, (_, _, body)) in enumerate(HTTP.items()):
            if body is not None:
                path = folder / f"body-{i}.json"
                path.write_text(json.dumps(body))
                self.bodies[kind] = path
        self.runs: list[tuple[str, float, subprocess.Popen, Path]] = []  # (kind, started offset, process, csv)

    def command(self, kind: str, *, seconds: float | None = None, requests: int | None = None, workers: int = 1,
                rate: float | None = None) -> list[str]:
        method, path, _ = HTTP[kind]
        cmd = ["hey", "-o", "csv", "-t", "30", "-c", str(workers)]
        cmd += ["-z", f"{seconds}s"] if seconds else ["-n", str(requests)]
        if rate:
            cmd += ["-q", f"{rate:.4f}"]
        if kind in self.bodies:
            cmd += ["-m", "POST", "-T", "application/json", "-D", str(self.bodies[kind])]
        return cmd + [self.base_url + path]

    def start(self, kind: str, t0: float, **options) -> None:
        out = self.folder / f"run-{len(self.runs)}.csv"
        with open(out, "w") as f:
            proc = subprocess.Popen(self.command(kind, **options), stdout=f, stderr=subprocess.DEVNULL)
        self.runs.append((kind, time.monotonic() - t0, proc, out))

    def collect(self) -> list[tuple[float, float, str, str | None]]:
        """(offset from t0, latency, kind, error) per completed request. hey leaves failed requests
        (connection errors) out of its CSV: the caller compares completed with scheduled."""
        results = []
        for kind, started, proc, out in self.runs:
            proc.wait()
            for line in out.read_text().splitlines()[1:]:
                fields = line.split(",")
                if len(fields) >= 8:
                    status = fields[6]
                    results.append((started + float(fields[7]), float(fields[0]), kind, None if status == "200" else f"HTTP {status}"))
        self.runs.clear()
        return results


def weights() -> dict[str, float]:
    total = sum(w for _, w, _ in MIX)
    return {name: w / total for name, w, _ in MIX}


def hey_unloaded(load: HeyLoad, count: int) -> list[float]:
    latencies = []
    for kind, share in weights().items():
        load.start(kind, time.monotonic(), requests=max(10, round(count * share)))
        latencies += [r[1] for r in load.collect() if not r[3]]
    return latencies


def hey_saturation(load: HeyLoad, clients: int, seconds: float) -> float:
    t0 = time.monotonic()
    for kind, share in weights().items():
        load.start(kind, t0, seconds=seconds, workers=max(1, round(clients * share)))
    return len([r for r in load.collect() if not r[3]]) / seconds


async def hey_soak(load: HeyLoad, client: httpx.AsyncClient, process: psutil.Process, rate: float, seconds: float,
                   sample_s: float, token: str | None, write_every_s: float) -> dict:
    """The open-loop mix from hey, plus from this process: the RSS and CPU samples, the writes, and a
    content check of every kind once a second (hey sees status codes, not GraphQL errors)."""
    t0 = time.monotonic()
    checks: list[tuple[float, float, str, str | None]] = []
    rss: list[tuple[float, int]] = []
    cpu: list[tuple[float, float, float, float]] = []
    me = psutil.Process()
    plan = []
    for kind, share in weights().items():
        workers = max(1, math.ceil(rate * share / HEY_WORKER_MAX_RATE))
        plan += [(kind, rate * share / workers, k / (rate * share)) for k in range(workers)]
    scheduled = rate * seconds

    async def starter() -> None:
        for kind, worker_rate, delay in sorted(plan, key=lambda p: p[2]):
            await asyncio.sleep(max(0.0, t0 + delay - time.monotonic()))
            load.start(kind, t0, seconds=seconds, rate=worker_rate)

    async def sampler() -> None:
        psutil.cpu_percent(None), process.cpu_percent(None), me.cpu_percent(None)
        watched: dict[int, psutil.Process] = {}  # one Process per pid: cpu_percent counts from its previous call
        while (now := time.monotonic() - t0) < seconds:
            rss.append((now, process.memory_info().rss))
            cores = psutil.cpu_count() or 1
            hey_cpu = 0.0
            for _, _, proc, _ in list(load.runs):
                try:
                    if proc.pid not in watched:
                        watched[proc.pid] = psutil.Process(proc.pid)
                        watched[proc.pid].cpu_percent(None)
                    hey_cpu += watched[proc.pid].cpu_percent(None) / cores
                except psutil.Error:
                    pass
            cpu.append((now, psutil.cpu_percent(None), process.cpu_percent(None) / cores, hey_cpu + me.cpu_percent(None) / cores))
            await asyncio.sleep(sample_s)

    async def checker() -> None:
        while time.monotonic() - t0 < seconds - 1:
            for name, _, send in MIX:
                started = time.monotonic()
                try:
                    error = failed(await send(client))
                except (httpx.HTTPError, ValueError) as exc:
                    error = f"{type(exc).__name__}: {exc}"
                checks.append((started - t0, time.monotonic() - started, f"check: {name}", error))
            await asyncio.sleep(1.0)

    tasks = [starter(), sampler(), checker()]
    if token and write_every_s > 0:
        tasks.append(write_loop(client, token, t0, seconds, write_every_s, checks))
    await asyncio.gather(*tasks)
    results = await asyncio.to_thread(load.collect)
    return {"results": results + checks, "rss": rss, "cpu": cpu, "skipped": 0, "sent": round(scheduled),
            "completed_load": len(results), "hey_processes": len(plan)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, help="requests per second (default: half the saturation)")
    parser.add_argument("--saturation", type=float, help="a saturation rate measured before, requests per second")
    parser.add_argument("--clients", type=int, default=16, help="closed-loop clients for the saturation measurement")
    parser.add_argument("--saturation-s", type=float, default=10.0)
    parser.add_argument("--unloaded-requests", type=int, default=300)
    parser.add_argument("--warmup-s", type=float, default=None, help="default: a fifth of the soak, at most 60 s")
    parser.add_argument("--sample-s", type=float, default=2.0)
    parser.add_argument("--max-in-flight", type=int, default=256)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write-every-s", type=float, default=0.0,
                        help="also one submitRuns write this often, e.g. 5 (default 0: reads only, the gate's mix)")
    parser.add_argument("--client", choices=("auto", "hey", "python"), default="auto",
                        help="load generator: hey (apt install hey) or this script's asyncio client; auto: hey when installed")
    parser.add_argument("--dump", help="write every request (offset, latency, kind, error) and the RSS samples here, as JSON")
    args = parser.parse_args()
    seconds = args.minutes * 60
    warmup = args.warmup_s if args.warmup_s is not None else min(60.0, seconds / 5)
    rng = random.Random(args.seed)

    with Server() as server:
        process = psutil.Process(server.process.pid)
        print(f"server {server.url} (pid {process.pid}), log {server.log_path}", flush=True)
        token = server.kernelindex("token", "create", "--scope", "runs:write", "--name", "soak").strip() if args.write_every_s > 0 else None

        use_hey = args.client == "hey" or (args.client == "auto" and shutil.which("hey") is not None)
        print(f"load generator: {'hey' if use_hey else 'asyncio (httpx)'}", flush=True)

        async def run_hey() -> dict:
            folder = Path(tempfile.mkdtemp(prefix="kernelindex-soak-"))
            load = HeyLoad(server.url, folder)
            try:
                async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                    await unloaded(client, 50, rng)  # warm the caches and the pool; checks every kind answers
                    base = await asyncio.to_thread(hey_unloaded, load, args.unloaded_requests)
                    out = {"unloaded": base, "saturation": args.saturation}
                    if args.rate is None and args.saturation is None:
                        out["saturation"] = await asyncio.to_thread(hey_saturation, load, args.clients, args.saturation_s)
                        await asyncio.sleep(2)
                    out["rate"] = args.rate or out["saturation"] / 2
                    print(f"unloaded: p50 {statistics.median(base) * 1000:.1f} ms, p99 {percentile(base, 0.99) * 1000:.1f} ms; "
                          f"saturation {out['saturation'] or float('nan'):.0f}/s; soaking at {out['rate']:.0f}/s "
                          f"for {seconds:.0f} s", flush=True)
                    out.update(await hey_soak(load, client, process, out["rate"], seconds, args.sample_s, token, args.write_every_s))
                    return out
            finally:
                shutil.rmtree(folder, ignore_errors=True)

        async def run() -> dict:
            limits = httpx.Limits(max_connections=args.max_in_flight, max_keepalive_connections=args.max_in_flight)
            async with httpx.AsyncClient(base_url=server.url, timeout=30, limits=limits) as client:
                await unloaded(client, 50, rng)  # warm the caches and the pool
                base = await unloaded(client, args.unloaded_requests, rng)
                out = {"unloaded": base, "saturation": args.saturation}
                if args.rate is None and args.saturation is None:
                    out["saturation"] = await saturation(client, args.clients, args.saturation_s, rng)
                    await asyncio.sleep(2)
                out["rate"] = args.rate or out["saturation"] / 2
                print(f"unloaded: p50 {statistics.median(base) * 1000:.1f} ms, p99 {percentile(base, 0.99) * 1000:.1f} ms; "
                      f"saturation {out['saturation'] or float('nan'):.0f}/s; soaking at {out['rate']:.0f}/s "
                      f"for {seconds:.0f} s", flush=True)
                out.update(await soak(client, process, out["rate"], seconds, args.sample_s, args.max_in_flight, rng,
                                      token, args.write_every_s))
                return out

        out = asyncio.run(run_hey() if use_hey else run())
        log = server.log_path.read_text()

    results = out["results"]
    if args.dump:
        import json

        with open(args.dump, "w") as f:
            json.dump({"results": results, "rss": out["rss"], "cpu": out["cpu"], "unloaded": out["unloaded"],
                       "rate": out["rate"]}, f)
    errors = [r for r in results if r[3]]
    latencies = [r[1] for r in results if not r[3]]
    after_warmup = [r[1] for r in results if not r[3] and r[0] >= warmup]
    unloaded_p99 = percentile(out["unloaded"], 0.99)
    soak_p50, soak_p99 = percentile(after_warmup, 0.5), percentile(after_warmup, 0.99)
    samples = [(t, b) for t, b in out["rss"] if t >= warmup]
    first = statistics.median([b for _, b in samples[:3]]) if samples else float("nan")
    last = statistics.median([b for _, b in samples[-3:]]) if samples else float("nan")
    growth = (last - first) / first if samples else float("nan")
    peak = max(b for _, b in out["rss"])

    print(f"\nsent {out['sent']} ({out['sent'] / seconds:.1f}/s scheduled), completed {len(results)}, "
          f"skipped (in-flight cap) {out['skipped']}, errors {len(errors)}")
    delivered = None
    if "completed_load" in out:
        # hey leaves connection failures out of its CSV, and skips ticks while a worker waits: both
        # show as load requests scheduled but never completed.
        delivered = out["completed_load"] / out["sent"]
        print(f"hey: {out['hey_processes']} single-worker processes; {out['completed_load']} of {out['sent']} scheduled "
              f"load requests completed ({delivered * 100:.2f} %); {len(results) - out['completed_load']} checks and writes "
              f"from this script")
    for kind in sorted({r[2] for r in results}):
        lat = [r[1] for r in results if r[2] == kind and not r[3] and r[0] >= warmup]
        print(f"   {kind:>14}: {len(lat):6} ok after warm-up, p50 {percentile(lat, 0.5) * 1000:7.1f} ms, "
              f"p99 {percentile(lat, 0.99) * 1000:7.1f} ms")
    for r in errors[:10]:
        print(f"   error at {r[0]:.1f} s ({r[2]}): {r[3]}")
    print(f"latency after a {warmup:.0f} s warm-up: p50 {soak_p50 * 1000:.1f} ms, p99 {soak_p99 * 1000:.1f} ms "
          f"(unloaded p99 {unloaded_p99 * 1000:.1f} ms: x{soak_p99 / unloaded_p99:.2f}); all: p99 {percentile(latencies, 0.99) * 1000:.1f} ms")
    print(f"server RSS: {first / 2**20:.1f} MiB after warm-up, {last / 2**20:.1f} MiB at the end ({growth * 100:+.1f} %), "
          f"peak {peak / 2**20:.1f} MiB, {len(out['rss'])} samples")
    print(f"server log: {log.count('unexpected error (request')} unexpected errors, {log.count('Traceback')} tracebacks")
    # The machine may be shared: CPU taken by other processes shows as latency here. Per window: the
    # soak's p99, and the CPU (share of all cores) of the whole machine, the server and this script.
    window = max(10.0, seconds / 30)
    print(f"per {window:.0f} s window: p99 | CPU of the machine, the server, the load generator, everything else")
    for start in [k * window for k in range(int(seconds // window) + 1)]:
        lat = sorted(r[1] for r in results if start <= r[0] < start + window and not r[3])
        use = [c for c in out["cpu"] if start <= c[0] < start + window]
        if not lat or not use:
            continue
        machine, srv, gen = (statistics.mean(c[i] for c in use) for i in (1, 2, 3))
        print(f"   {start:5.0f}-{start + window:5.0f} s: p99 {percentile(lat, 0.99) * 1000:7.1f} ms | "
              f"{machine:5.1f} % {srv:5.1f} % {gen:5.1f} % {max(0.0, machine - srv - gen):5.1f} %")
    verdicts = {
        "no errors": not errors and out["skipped"] == 0 and (delivered is None or delivered >= 0.98),
        "p99 within 3x unloaded p99": soak_p99 <= 3 * unloaded_p99,
        "RSS growth within 10 %": growth <= 0.10,
    }
    for name, passed in verdicts.items():
        print(f"{'PASS' if passed else 'FAIL'}: {name}")
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
