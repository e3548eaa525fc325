"""How many jobs a second go through the fleet's queue, and what a worker spends on each job besides
measuring it.

    python -m perf.fleet_queue                          # 200 jobs, 1, 2 and 4 workers, 3 times each
    python -m perf.fleet_queue --jobs 100 --workers 1,2 --repeat 1 --json figures.json

Starts an embedded PostgreSQL in a temporary folder (or, with KERNELINDEX_DATABASE_URL set, creates a
scratch database on that server and drops it afterwards), migrates it, and per round adds one small
workload of its own and submits N distinct tiny candidate files for it on the 'cpu' queue
(kernelindex.fleet.jobs.submit_implementation: N submissions, N fleet jobs, N queue entries). Then it
starts K worker processes at once and waits for them to drain the queue and exit.

The workers are the fleet's own (kernelindex.fleet.worker.run_worker: procrastinate's worker, one
sandbox slot, each job in a fresh confined process, its run stored through the ingest writer with the
job's final state), started by this module's hidden launcher (`python -m perf.fleet_queue --worker`),
which swaps the measurement for perf.fleet_noop:measure: it returns one passed run record at once. So
a job costs what the queue, the sandbox and the storing cost, and nothing else.

Figures, per K (medians over the repeats):
  wall    spawning the K processes to the last one exiting (start-up included: each worker starts its
          sandbox and describes the device once, which imports torch in a child);
  drain   the first job's start to the last job's end (fleet_jobs.started_at / finished_at), and jobs/s
          over it: the queue's throughput once the workers run.
And, for K = 1, one job's overhead split from the database's timestamps and the worker's log lines
(which the launcher stamps with the time):
  start   fleet_jobs.started_at → the worker's "job N …, attempt" line: jobs.start's transaction
          (mark running, read the reference and the implementation);
  sandbox that line → fleet_jobs.finished_at: the sandbox round trip (a forked, confined process
          running the no-op and returning its record as JSON);
  store   finished_at → the "job N passed in" line: the record checked and written by the ingest
          writer (records refreshed), the job's final state, in one transaction;
  queue   that line → the next job's started_at: procrastinate marks the job done and fetches the next.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg

from kernelindex.db.urls import to_libpq_url

REPO = Path(__file__).resolve().parent.parent
NOOP = "perf.fleet_noop:measure"
# What the no-op's zygote imports: stdlib and the record builder only (no torch: a warm fork is cheap).
NOOP_PRELOAD = ("benchmarks.records",)
REFERENCE = '''"""perf.fleet_queue's workload: never run (the workers' measurement is a no-op)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x + 1


def get_inputs():
    return [torch.ones(4)]


def get_init_inputs():
    return []
'''
_STAMPED = re.compile(r"^(?P<t>\d+\.\d+) worker (?P<name>\S+): job (?P<job>\d+) (?P<what>.*)$")


# --- the hidden worker launcher ----------------------------------------------------------------------


def run_noop_worker(name: str, poll_s: float) -> int:
    """One fleet worker on the 'cpu' queue whose sandbox function is the no-op; exits when idle. Every
    line it says is stamped with the wall-clock time (the clock of fleet_jobs' timestamps)."""
    from kernelindex.fleet.worker import WorkerOptions, run_worker

    url = os.environ.get("KERNELINDEX_DATABASE_URL")
    if not url:
        print("perf.fleet_queue --worker: KERNELINDEX_DATABASE_URL is not set", file=sys.stderr)
        return 2

    def say(message: str) -> None:
        print(f"{time.time():.6f} {message}", flush=True)

    options = WorkerOptions(
        database_url=url, device="cpu", until_idle=True, name=name, poll_s=poll_s, heartbeat_s=2.0,
        stalled_after_s=60.0, measure=NOOP, preload=NOOP_PRELOAD,
    )
    report = asyncio.run(run_worker(options, say))
    say(f"worker {report.name}: done: {report.passed} passed, {report.failed} failed, {report.retried} retried")
    return 0 if report.failed == 0 and report.retried == 0 else 1


# --- the database --------------------------------------------------------------------------------------


@contextmanager
def database() -> Iterator[str]:
    """A migrated database of our own: an embedded server, or a scratch database on $KERNELINDEX_DATABASE_URL."""
    from kernelindex.db.migrate import upgrade

    given = os.environ.get("KERNELINDEX_DATABASE_URL")
    if not given:
        from kernelindex.db.embedded import temporary_embedded

        with temporary_embedded("kernelindex-fleet-queue-") as server:
            upgrade(server.url)
            yield server.url
        return
    from sqlalchemy.engine import make_url

    name = f"kernelindex_fleet_queue_{os.getpid()}"
    admin = to_libpq_url(given)

    async def admin_sql(statement: str) -> None:
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(admin_sql(f'CREATE DATABASE "{name}"'))
    try:
        url = make_url(given).set(database=name).render_as_string(hide_password=False)
        upgrade(url)
        yield url
    finally:
        asyncio.run(admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def queue_round(url: str, tag: str, number: int, jobs: int) -> str:
    """A fresh workload (so every round stores into an empty cohort) and ``jobs`` distinct submissions
    of it on the 'cpu' queue, in one transaction. The workload's slug."""
    from kernelindex.db.engine import make_engine, make_sessionmaker
    from kernelindex.fleet.jobs import submit_implementation

    slug = f"perf-fleet-noop-{tag}"
    sha = hashlib.sha256(REFERENCE.encode()).hexdigest()
    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        async with conn.transaction():
            workload_id = await conn.fetchval(
                "INSERT INTO workloads (slug, suite, level, problem_number, name, kind) "
                "VALUES ($1, 'perf', 1, $2, 'perf.fleet_queue no-op workload', 'fusion') RETURNING id", slug, 9000 + number)
            revision_id = await conn.fetchval(
                "INSERT INTO workload_revisions (workload_id, source_sha256, reference_source, source_size, source_filename, "
                "identity_sha256) VALUES ($1, $2, $3, $4, 'reference.py', $2) RETURNING id",
                workload_id, sha, REFERENCE, len(REFERENCE))
            await conn.execute("UPDATE workloads SET current_revision_id = $1 WHERE id = $2", revision_id, workload_id)
    finally:
        await conn.close()
    engine = make_engine(url, pool_size=1, max_overflow=0)
    try:
        async with make_sessionmaker(engine)() as session, session.begin():
            for index in range(jobs):
                source = f"class ModelNew:  # perf.fleet_queue {tag} candidate {index}\n    pass\n"
                made = await submit_implementation(
                    session, workload_slug=slug, source=source, filename=f"noop_{index}.py", title=f"no-op {index}",
                    licence=None, source_url=None, hardware="cpu")
                # One job each (replicas=1): a list since submissions may ask for several machines.
                assert [e.created for e in made] == [True], f"submission {index} of round {tag} was not one new job"
    finally:
        await engine.dispose()
    return slug


async def job_times(url: str, slug: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        return list(await conn.fetch(
            "SELECT j.id, j.state, j.reason, j.worker, j.attempts, j.run_id, j.started_at, j.finished_at FROM fleet_jobs j "
            "JOIN workloads w ON w.id = j.workload_id WHERE w.slug = $1 ORDER BY j.started_at", slug))
    finally:
        await conn.close()


# --- one round -----------------------------------------------------------------------------------------


@dataclass
class Round:
    workers: int
    jobs: int
    wall_s: float
    drain_s: float
    failed: list[str] = field(default_factory=list)  # jobs that did not pass, with their reasons
    split_ms: dict[str, list[float]] = field(default_factory=dict)

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.drain_s if self.drain_s > 0 else float("nan")


def _epoch(value: datetime) -> float:
    return value.timestamp()


def split_of(rows: list[asyncpg.Record], logs: str) -> dict[str, list[float]]:
    """Per job, in ms: start, sandbox, store and queue (see the module's docstring), for one worker's jobs."""
    started_line: dict[int, float] = {}
    done_line: dict[int, float] = {}
    for line in logs.splitlines():
        match = _STAMPED.match(line)
        if not match:
            continue
        job, stamp, what = int(match["job"]), float(match["t"]), match["what"]
        if what.startswith("(") and ", attempt " in what:
            started_line[job] = stamp
        elif re.match(r"^(passed|failed) in ", what):
            done_line[job] = stamp
    split: dict[str, list[float]] = {"start": [], "sandbox": [], "store": [], "queue": [], "job": []}
    ordered = [r for r in rows if r["started_at"] and r["finished_at"] and r["id"] in started_line and r["id"] in done_line]
    for index, row in enumerate(ordered):
        begun, ended = _epoch(row["started_at"]), _epoch(row["finished_at"])
        split["start"].append((started_line[row["id"]] - begun) * 1000)
        split["sandbox"].append((ended - started_line[row["id"]]) * 1000)
        split["store"].append((done_line[row["id"]] - ended) * 1000)
        if index + 1 < len(ordered):
            following = _epoch(ordered[index + 1]["started_at"])
            split["queue"].append((following - done_line[row["id"]]) * 1000)
            split["job"].append((following - begun) * 1000)
    return split


def run_round(url: str, workers: int, jobs: int, number: int, poll_s: float) -> Round:
    tag = f"k{workers}-r{number}-{os.getpid()}"
    slug = asyncio.run(queue_round(url, tag, number, jobs))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_")}
    env.update(KERNELINDEX_DATABASE_URL=url, PYTHONPATH=str(REPO))
    started = time.monotonic()
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "perf.fleet_queue", "--worker", "--name", f"perf-{tag}-w{index}", "--poll", str(poll_s)],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        for index in range(workers)
    ]
    logs = [p.communicate(timeout=1800)[0] for p in processes]
    wall_s = time.monotonic() - started
    rows = asyncio.run(job_times(url, slug))
    unfinished = [(r["id"], r["state"], r["reason"]) for r in rows if r["state"] not in ("passed", "failed")]
    if unfinished or len(rows) != jobs:
        tails = "\n".join(log[-2000:] for log in logs)
        raise SystemExit(f"round {tag}: {len(rows)} jobs, not finished: {unfinished[:5]}\n{tails}")
    # A failed job still went through the queue, the sandbox and the store: it counts, and is reported.
    failed = [f"job {r['id']}: {r['reason']}" for r in rows if r["state"] != "passed" or r["run_id"] is None]
    for process, log in zip(processes, logs):
        if process.returncode != 0 and not failed:
            raise SystemExit(f"a worker exited with status {process.returncode}:\n{log[-4000:]}")
    drain_s = max(_epoch(r["finished_at"]) for r in rows) - min(_epoch(r["started_at"]) for r in rows)
    result = Round(workers, jobs, wall_s, drain_s, failed=failed)
    if workers == 1:
        result.split_ms = split_of(rows, logs[0])
    print(f"  {workers} worker(s), round {number}: {jobs} jobs, wall {wall_s:.1f} s, drain {drain_s:.2f} s, "
          f"{result.jobs_per_s:.1f} jobs/s" + (f"; {len(failed)} FAILED: {failed[0]}" if failed else ""),
          file=sys.stderr, flush=True)
    return result


# --- the figures -------------------------------------------------------------------------------------


def summarize(rounds: list[Round]) -> dict[str, Any]:
    table = []
    for workers in sorted({r.workers for r in rounds}):
        mine = [r for r in rounds if r.workers == workers]
        table.append({
            "workers": workers, "jobs": mine[0].jobs, "repeats": len(mine),
            "wall_s": statistics.median(r.wall_s for r in mine),
            "drain_s": statistics.median(r.drain_s for r in mine),
            "jobs_per_s": statistics.median(r.jobs_per_s for r in mine),
            "jobs_per_s_each": [round(r.jobs_per_s, 2) for r in mine],
            "failed": [reason for r in mine for reason in r.failed],
        })
    split: dict[str, Any] = {}
    ones = [r for r in rounds if r.workers == 1 and r.split_ms]
    for part in ("job", "start", "sandbox", "store", "queue"):
        values = [v for r in ones for v in r.split_ms.get(part, [])]
        if values:
            split[part] = {
                "median_ms": statistics.median(values), "mean_ms": statistics.fmean(values),
                "p90_ms": sorted(values)[int(len(values) * 0.9)], "samples": len(values),
            }
    return {"table": table, "one_worker_per_job": split}


def print_figures(figures: dict[str, Any], poll_s: float) -> None:
    print(f"{'workers':>7}  {'jobs':>5}  {'wall s':>7}  {'drain s':>7}  {'jobs/s':>7}  jobs/s per repeat")
    for row in figures["table"]:
        each = ", ".join(f"{v:.1f}" for v in row["jobs_per_s_each"])
        print(f"{row['workers']:>7}  {row['jobs']:>5}  {row['wall_s']:>7.1f}  {row['drain_s']:>7.2f}  {row['jobs_per_s']:>7.1f}  {each}")
    for row in figures["table"]:
        for reason in row["failed"]:
            print(f"  FAILED with {row['workers']} worker(s): {reason}")
    split = figures["one_worker_per_job"]
    if split:
        print(f"\none worker, per job (ms; poll {poll_s:g} s):  {'median':>7}  {'mean':>7}  {'p90':>7}")
        names = {"job": "whole job (start to next start)", "start": "start (jobs.start transaction)",
                 "sandbox": "sandbox round trip (no-op)", "store": "store (check, ingest writer, final state)",
                 "queue": "queue (procrastinate: done, fetch next)"}
        for part, label in names.items():
            if part in split:
                v = split[part]
                print(f"  {label:<42}  {v['median_ms']:>7.1f}  {v['mean_ms']:>7.1f}  {v['p90_ms']:>7.1f}")


def _counts(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected worker counts like 1,2,4, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"worker counts must be positive, got {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.fleet_queue", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200, help="no-op jobs queued per round (default 200)")
    parser.add_argument("--workers", type=_counts, default=[1, 2, 4], help="worker counts, comma-separated (default 1,2,4)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per worker count; medians are printed (default 3)")
    parser.add_argument("--poll", type=float, default=0.5, help="the workers' queue poll interval in s (default 0.5)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return run_noop_worker(args.name or f"perf-noop-{os.getpid()}", args.poll)
    if args.jobs < 2 or args.repeat < 1:
        parser.error("--jobs must be at least 2 and --repeat at least 1")

    rounds: list[Round] = []
    with database() as url:
        number = 0
        for _ in range(args.repeat):  # interleaved, so that a noisy minute does not land on one K only
            for workers in args.workers:
                number += 1
                rounds.append(run_round(url, workers, args.jobs, number, args.poll))
    figures = summarize(rounds)
    figures["settings"] = {"jobs": args.jobs, "workers": args.workers, "repeat": args.repeat, "poll_s": args.poll,
                           "cpus": os.cpu_count()}
    print_figures(figures, args.poll)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 1 if any(r.failed for r in rounds) else 0


if __name__ == "__main__":
    sys.exit(main())
