"""`kernelindex worker`: take the jobs of this machine's hardware off the queue, measure each in the
sandbox, store the runs.

The loop is procrastinate's worker (fetching, heartbeats, retries) over psycopg 3; what a job does is
here:

1. mark the fleet job running (one more attempt), read what it measures (trusted, in this process);
2. run ``benchmarks.candidate:measure_job`` in the sandbox (benchmarks.sandbox: a fresh confined
   process forked from a zygote started with a scrubbed environment: it never holds this process's
   database URL or credentials, has no network, its own /tmp, a wall-clock and memory limit);
3. check what came back as untrusted input (the candidate ran in that process): the record's identity
   fields are set from the job, never taken from the result, and the records pass the one run-record
   checker before the ingest writer stores them, in the same transaction as the job's final state.

A candidate that crashes, hangs, runs out of memory or computes the wrong answer ends its job failed
with that reason, and the worker goes on. A failure on the worker's own side (the database went away)
puts the job back on the queue until it has been started ``max_attempts`` times. A worker that dies
mid-job (SIGKILL, the machine gone) stops its heartbeat; every worker of the same SKU looks for such
jobs and puts them back (or fails them, after ``max_attempts``).

A job cancelled while it runs (kernelindex.fleet.jobs.cancel marks procrastinate's entry for abort,
which this worker hears at once by LISTEN/NOTIFY, or polls for every ``poll_s``) has its sandbox
stopped (the runner and everything it started killed; the zygote stays warm) and nothing stored: its
row, which is locked while a result is stored, is cancelled first.

This module never imports torch: the device is described by the sandbox (the zygote imports torch).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import procrastinate
from procrastinate.job_context import AbortReason
from procrastinate.jobs import Status
from procrastinate.retry import BaseRetryStrategy, RetryDecision
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from benchmarks.records import cpu_hardware_line  # torch-free
from benchmarks.sandbox import GiB, Limits, Outcome, Sandbox, SandboxError, describe_sandbox_failure  # stdlib only
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.models import Hardware
from kernelindex.db.urls import to_libpq_url
from kernelindex.fleet import jobs
from kernelindex.fleet.queue import CPU, TASK_NAME, queue_for
from kernelindex.fleet.registry import Registration, register_worker
from kernelindex.ingest.hardware import hardware_problem, upsert_hardware
from kernelindex.ingest.pipeline import write_within
from kernelindex.ingest.records import RunRecord, check_record

# What the sandbox's zygote imports once, so that every job starts warm.
PRELOAD = ("torch", "benchmarks.candidate", "benchmarks.environment")
MEASURE = "benchmarks.candidate:measure_job"
DESCRIBE = "benchmarks.environment:describe_device"
_SOURCE = "kernelindex worker"


class WorkerSideError(Exception):
    """The worker, not the candidate, failed (database, sandbox): the job is tried again."""


class JobDeclined(Exception):
    """This machine must not measure the job (it holds a sibling replica): back on the queue for another."""


class _Retries(BaseRetryStrategy):
    """procrastinate's retry decision: the worker's own failures soon, a declined replica after a pause
    (so this machine does not take it straight back); a candidate's failure never (it ends the job)."""

    def __init__(self, declined_wait_s: float):
        self.declined_wait_s = declined_wait_s

    def get_retry_decision(self, *, exception: BaseException, job: Any) -> RetryDecision | None:
        if isinstance(exception, JobDeclined):
            return RetryDecision(retry_in={"seconds": int(max(1, self.declined_wait_s))})
        if isinstance(exception, WorkerSideError):
            return RetryDecision(retry_in={"seconds": 1})
        return None


def machine_identity() -> str:
    """This machine, for telling replicas apart: $KERNELINDEX_MACHINE_ID (containers sharing or lacking
    /etc/machine-id set it), else a digest of /etc/machine-id, else of the host name. Stored with the
    environment, so runs from two machines are two environments (the trust ladder's Replicated)."""
    given = os.environ.get("KERNELINDEX_MACHINE_ID", "").strip()
    if given:
        return given[:64]
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        with contextlib.suppress(OSError):
            text = open(path, encoding="ascii", errors="replace").read().strip()
            if text:
                return hashlib.sha256(text.encode()).hexdigest()[:16]
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:16]


class WorkerStartError(RuntimeError):
    """The worker cannot start (unknown GPU, no sandbox, no database): the message says what to do."""


@dataclass
class WorkerOptions:
    database_url: str
    device: str = "cpu"  # "cpu", "cuda" or "cuda:N"
    until_idle: bool = False
    name: str | None = None
    provider: str | None = None
    label: str | None = None
    heartbeat_s: float = 10.0
    stalled_after_s: float = 30.0
    poll_s: float = 2.0
    job_wall_s: float = 600.0
    memory_bytes: int | None = 16 * GiB  # address space of a CPU job; a CUDA job maps more than it uses
    correctness_sets: int = 5
    timing: dict[str, Any] = field(default_factory=lambda: {
        "warmup": 3, "min_trials": 10, "max_trials": 1000, "target_half_width": 0.01, "budget_s": 10.0,
    })
    sandbox_level: str = "auto"
    # The sandbox function that measures a job ("module:function", JSON payload in, {"records": [...]} out);
    # perf/ swaps in a no-op to measure the queue's own overhead.
    measure: str = MEASURE
    preload: tuple[str, ...] = PRELOAD


@dataclass
class WorkerReport:
    name: str
    hardware: str
    queue: str
    sandbox: str
    passed: int = 0
    failed: int = 0
    retried: int = 0
    recovered: int = 0  # jobs of dead workers put back (or failed)
    cancelled: int = 0  # jobs cancelled while this worker ran them (their sandbox stopped)


def utc_now() -> datetime:
    return datetime.now(UTC)


def _trusted_record(data: Any, work: jobs.Work, environment: dict[str, Any]) -> dict[str, Any]:
    """A record from the sandbox with the fields the job decides set from the job: what was measured
    and who measured it are never the measured code's to say."""
    if not isinstance(data, dict):
        raise ValueError("a record is not a JSON object")
    record = dict(data)
    record["workload"] = {"slug": work.workload_slug, "source_sha256": work.source_sha256}
    record["environment"] = json.loads(json.dumps(environment))
    record["evidence"] = "measured"
    configuration = record.get("configuration")
    if isinstance(configuration, dict):
        # The job's configuration overrides are what was asked; the rest is what the problem defines.
        configuration["bindings"] = {**(configuration.get("bindings") or {}), **work.bindings}
    return record


FORGED = "the candidate forged results"


def forged_records(value: Any, work: jobs.Work, baseline: bool) -> str | None:
    """Why a measurement's answer is not what benchmarks.candidate's coordinator writes for this job, or None.

    The coordinator (never the candidate's process) writes exactly: the baseline's record first when the job
    asked for one (torch_eager, role baseline), then one record of the job's own implementation. Anything
    else (a record for another implementation, an extra or a missing one, keys the answer never has) is
    what a candidate that reached the result channel would write, so the job fails with FORGED rather than
    storing any of it."""
    if not isinstance(value, dict) or not set(value) <= {"records", "environment", "checks"}:
        return f"{FORGED}: the measurement's answer is not the harness's (keys {sorted(value) if isinstance(value, dict) else type(value).__name__})"
    raw = value.get("records")
    want = 2 if baseline else 1
    if not isinstance(raw, list) or len(raw) != want or not all(isinstance(r, dict) for r in raw):
        return f"{FORGED}: {len(raw) if isinstance(raw, list) else 'no'} run records where the job makes {want}"
    slugs = [(r.get("implementation") or {}).get("slug") if isinstance(r.get("implementation"), dict) else None for r in raw]
    if slugs[-1] != work.implementation.get("slug"):
        return f"{FORGED}: a record for {slugs[-1]!r}, not the job's implementation {work.implementation.get('slug')!r}"
    if baseline and (slugs[0] != "torch_eager" or raw[0]["implementation"].get("role") != "baseline"):
        return f"{FORGED}: a first record for {slugs[0]!r} where the job's baseline is torch_eager"
    return None


class FleetWorker:
    """One worker process: one sandbox slot (one job at a time: one GPU, timed alone)."""

    def __init__(self, options: WorkerOptions, say: Callable[[str], None] = print):
        self.options = options
        self.say = say
        self.limits = Limits(
            wall_s=options.job_wall_s,
            address_space=options.memory_bytes if options.device == "cpu" else None,
            processes=256, open_files=1024, file_size=512 * 1024**2, scratch_bytes=2 * GiB, result_bytes=16 * 1024**2,
        )
        self.name = options.name or f"{socket.gethostname()}:{os.getpid()}"
        self.machine_id = machine_identity()
        self.registration: Registration | None = None  # registered at start (__aenter__)
        self._declined: set[int] = set()  # queue entries this machine handed back (sibling replicas)
        self.sandbox: Sandbox | None = None
        self.environment: dict[str, Any] = {}
        self.hardware = CPU
        self.queue = queue_for(CPU)
        self.report: WorkerReport | None = None
        self._engine: Any = None
        self._sessions: async_sessionmaker[AsyncSession] | None = None
        self.app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=to_libpq_url(options.database_url)))
        self.app.task(
            name=TASK_NAME, pass_context=True,
            # Only the worker's own failures and declined replicas go back; how many times is the fleet job's
            # max_attempts (a declined start is not an attempt).
            retry=_Retries(declined_wait_s=max(2.0, options.poll_s * 5)),
        )(self._measure)

    # --- start-up ---

    async def _describe_device(self) -> None:
        assert self.sandbox is not None
        outcome = await asyncio.to_thread(
            self.sandbox.run, DESCRIBE, {"device": self.options.device, "provider": self.options.provider, "label": self.options.label}
        )
        if not outcome.ok or not isinstance(outcome.value, dict):
            raise WorkerStartError(f"could not describe device {self.options.device}: {describe_sandbox_failure(outcome, self.limits)}")
        self.environment = outcome.value
        # Described in a clean fork before any job ran: the environment every run of this worker names.
        details = self.environment.setdefault("details", {})
        details["machine_id"] = self.machine_id
        if self.options.device == CPU:
            self.hardware = CPU
        else:
            product = self.environment.get("hardware", {}).get("product_name")
            sku = self.environment.get("hardware", {}).get("sku")
            assert self._sessions is not None
            async with self._sessions() as session:
                known = sku is not None and (await session.execute(select(Hardware.id).where(Hardware.sku == sku))).first()
            if not known:
                raise WorkerStartError(
                    f"this GPU ({product!r}) is not in the index's hardware catalogue: add its catalogue line "
                    "(`kernelindex ingest runs` reads hardware lines) so jobs can be queued for it"
                )
            self.hardware = sku
        self.queue = queue_for(self.hardware)

    async def __aenter__(self) -> FleetWorker:
        self._engine = make_engine(self.options.database_url, pool_size=2, max_overflow=0)
        self._sessions = make_sessionmaker(self._engine)
        try:
            self.sandbox = await asyncio.to_thread(
                Sandbox, self.options.preload, workers=1, limits=self.limits, level=self.options.sandbox_level,
                # torch's meta-device shape inference (sympy, about 0.7 s) imported once in the zygote, not in
                # every job's coordinator (benchmarks.candidate forks its reference and executors after it).
                warm_up="benchmarks.candidate:load_shape_inference",
            )
        except SandboxError as exc:
            raise WorkerStartError(f"the sandbox would not start: {exc}") from exc
        await self._describe_device()
        # The fleet identity its runs are stored under: only runs naming a registered worker are
        # 'measured' and climb the trust ladder (kernelindex.fleet.registry).
        assert self._sessions is not None
        try:
            async with self._sessions() as session, session.begin():
                self.registration = await register_worker(
                    session, name=self.name, machine_id=self.machine_id, hardware=self.hardware, now=utc_now()
                )
        except Exception as exc:
            raise WorkerStartError(f"could not register this worker in the index's database: {exc}") from exc
        self.report = WorkerReport(self.name, self.hardware, self.queue, self.sandbox.describe())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
        if self._engine is not None:
            await self._engine.dispose()

    # --- the loop ---

    async def run(self) -> WorkerReport:
        """Work until stopped (SIGINT/SIGTERM), or with until_idle until this queue has nothing queued
        or running."""
        assert self.report is not None
        options = self.options
        worker_options: dict[str, Any] = dict(
            queues=[self.queue], name=self.name, concurrency=1, update_heartbeat_interval=options.heartbeat_s,
            stalled_worker_timeout=options.stalled_after_s, fetch_job_polling_interval=options.poll_s,
            # A cancelled running job is told by NOTIFY at once; this poll is the fallback (a lost notification).
            abort_job_polling_interval=options.poll_s,
            install_signal_handlers=not options.until_idle,
        )
        async with self.app.open_async():
            if not options.until_idle:
                sweeper = asyncio.create_task(self._sweep_forever())
                try:
                    await self.app.run_worker_async(wait=True, **worker_options)
                finally:
                    sweeper.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await sweeper
                return self.report
            while True:
                await self.recover_stalled()
                await self.app.run_worker_async(wait=False, **worker_options)
                if not await self._queue_busy():
                    return self.report
                await asyncio.sleep(options.poll_s)

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(max(1.0, self.options.stalled_after_s / 3))
            try:
                await self.recover_stalled()
            except Exception as exc:
                self.say(f"worker {self.name}: looking for stalled jobs failed: {exc}")

    async def _queue_busy(self) -> bool:
        """Jobs left that this worker could still take or wait for: queued or running, but not the
        replicas this machine handed back (another machine measures those)."""
        jobs_left = await self.app.job_manager.list_jobs_async(queue=self.queue, task=TASK_NAME)
        return any(j.status in (Status.TODO.value, Status.DOING.value) and j.id not in self._declined for j in jobs_left)

    async def recover_stalled(self) -> int:
        """Put back the running jobs of this queue whose worker stopped sending heartbeats; a job started
        max_attempts times is failed instead. The number of jobs handled."""
        assert self._sessions is not None and self.report is not None
        stalled = await self.app.job_manager.get_stalled_jobs(
            queue=self.queue, task_name=TASK_NAME, seconds_since_heartbeat=self.options.stalled_after_s
        )
        handled = 0
        for queue_job in stalled:
            raw_id = queue_job.task_kwargs.get("job_id")
            job_id = raw_id if isinstance(raw_id, int) else 0
            now = utc_now()
            async with self._sessions() as session, session.begin():
                counts = await jobs.attempts_of(session, job_id)
                if counts is not None and counts[0] >= counts[1]:
                    await jobs.finish(session, job_id, state="failed", now=now, reason=(
                        f"the worker measuring it stopped answering, {counts[0]} time(s) (of {counts[1]} allowed)"))
                    await self.app.job_manager.finish_job(queue_job, status=Status.FAILED, delete_job=False)
                else:
                    await jobs.requeue(session, job_id, now=now, reason="its worker stopped answering; queued again")
                    await self.app.job_manager.retry_job(queue_job)
            handled += 1
            self.say(f"worker {self.name}: job {job_id} of a stalled worker {'failed' if counts and counts[0] >= counts[1] else 'queued again'}")
        self.report.recovered += handled
        return handled

    # --- one job ---

    async def _measure(self, context: procrastinate.JobContext, job_id: int) -> None:
        assert self._sessions is not None and self.sandbox is not None and self.report is not None
        try:
            async with self._sessions() as session, session.begin():
                work = await jobs.start(session, job_id, self.name, self.machine_id, utc_now())
        except Exception as exc:
            raise WorkerSideError(f"could not start job {job_id}: {exc}") from exc
        if work is None:
            return  # cancelled, or finished by another worker
        if isinstance(work, jobs.Declined):
            if context.job.id is not None:
                self._declined.add(context.job.id)
            self.say(f"worker {self.name}: job {job_id} handed back: job {work.sibling_job_id} measures the same on this machine")
            raise JobDeclined(f"job {work.sibling_job_id} measures the same subject on this machine")
        self.say(f"worker {self.name}: job {job_id} ({work.workload_slug} × {work.implementation['slug']}), attempt {work.attempt}")
        payload = {
            # The revision's digest is the upstream file's, which a stand-in reference (the seed's) is not: the
            # record's workload is set from the job afterwards, so the sandbox is not asked to vouch for it.
            "workload_slug": work.workload_slug, "source_sha256": None,
            "reference_source": work.reference_source, "reference_filename": work.reference_filename,
            "implementation": work.implementation, "builtin": work.builtin,
            "candidate_source": work.candidate_source, "candidate_filename": work.candidate_filename,
            "bindings": work.bindings, "device": self.options.device, "baseline": work.builtin != "torch_eager",
            "correctness_sets": self.options.correctness_sets, "tolerance": None, "timing": self.options.timing,
            "provider": self.options.provider, "label": self.options.label,
        }
        started = time.monotonic()
        # Shielded: when procrastinate cancels this task (the job was cancelled), the measurement is stopped
        # and waited for, never left running in its thread.
        measuring = asyncio.ensure_future(asyncio.to_thread(self.sandbox.run, self.options.measure, payload))
        try:
            outcome = await asyncio.shield(measuring)
        except SandboxError as exc:
            await self._worker_failed(work, f"the sandbox failed: {exc}")
            raise WorkerSideError(str(exc)) from exc
        except asyncio.CancelledError:
            if context.abort_reason() == AbortReason.USER_REQUEST:
                self.sandbox.stop_running()
                with contextlib.suppress(Exception):
                    await measuring
                self.report.cancelled += 1
                self.say(f"worker {self.name}: job {job_id} cancelled while it ran: its sandbox stopped after "
                         f"{time.monotonic() - started:.1f} s, nothing stored")
            raise
        try:
            state = await self._store(work, outcome)
        except Exception as exc:
            await self._worker_failed(work, f"storing the result failed: {type(exc).__name__}: {exc}")
            raise WorkerSideError(str(exc)) from exc
        self.say(f"worker {self.name}: job {job_id} {state} in {time.monotonic() - started:.1f} s")

    async def _worker_failed(self, work: jobs.Work, reason: str) -> None:
        """The attempt failed on our side: back to queued, or failed after max_attempts."""
        assert self._sessions is not None and self.report is not None
        async with self._sessions() as session, session.begin():
            counts = await jobs.attempts_of(session, work.job_id)
            if counts is not None and counts[0] >= counts[1]:
                await jobs.finish(session, work.job_id, state="failed", now=utc_now(),
                                  reason=f"{reason} (attempt {counts[0]} of {counts[1]})")
                self.report.failed += 1
            else:
                await jobs.requeue(session, work.job_id, now=utc_now(), reason=reason)
                self.report.retried += 1

    async def _store(self, work: jobs.Work, outcome: Outcome) -> str:
        """The job's runs and final state, in one transaction. The state it ended in."""
        assert self._sessions is not None and self.report is not None
        now = utc_now()
        async with self._sessions() as session, session.begin():
            # Cancelled while it ran, before its worker heard (or a lost notification): nothing of it is stored.
            # The row stays locked to the end of this transaction, so a cancellation waits for the result instead.
            if await jobs.lock_state(session, work.job_id) == "cancelled":
                self.report.cancelled += 1
                return "cancelled (nothing stored)"

            async def failed(reason: str) -> str:
                assert self.report is not None
                await jobs.finish(session, work.job_id, state="failed", now=now, reason=reason)
                self.report.failed += 1
                return "failed"

            if not outcome.ok:
                return await failed(describe_sandbox_failure(outcome, self.limits))
            value = outcome.value if isinstance(outcome.value, dict) else {}
            raw = value.get("records")
            if not isinstance(raw, list) or not raw:
                return await failed("the measurement returned no run records")
            forged = forged_records(outcome.value, work, baseline=work.builtin != "torch_eager")
            if forged:
                return await failed(forged)
            run_ids: list[int | None] = []
            environment_id = None
            for index, data in enumerate(raw):
                record = _trusted_record(data, work, self.environment)
                problems = check_record(record)
                if problems:
                    key, why = problems[0]
                    return await failed(f"the measurement's record {index} was refused: {key}: {why}")
                hardware = cpu_hardware_line(record["environment"])
                if hardware is not None and hardware_problem(hardware) is None:
                    await upsert_hardware(session, hardware)
                assert self.registration is not None
                # The one ingest pipeline, strict, in the job's transaction (a refused record writes nothing).
                written = await write_within(session, [RunRecord(record, _SOURCE, f"job {work.job_id}")], now=now,
                                             fleet_worker=self.registration.writer_identity)
                summary = written.summary
                if written.aborted is not None:
                    problem = summary.problems[0]
                    return await failed(f"the measurement's record {index} was refused: {problem.key}: {problem.reason}")
                run_ids.append(summary.inserted_run_ids[0] if summary.inserted_run_ids else None)
                if environment_id is None and summary.environments:
                    environment_id = min(summary.environments)  # one environment per job: this worker's
            candidate = raw[-1] if isinstance(raw[-1], dict) else {}
            passed = candidate.get("status") == "passed"
            await jobs.finish(
                session, work.job_id, state="passed" if passed else "failed", now=now,
                reason=None if passed else str(candidate.get("failure_reason") or "the candidate failed"),
                run_id=run_ids[-1], baseline_run_id=run_ids[0] if len(run_ids) > 1 else None, environment_id=environment_id,
            )
        if passed:
            self.report.passed += 1
        else:
            self.report.failed += 1
        return "passed" if passed else "failed"


async def run_worker(options: WorkerOptions, say: Callable[[str], None] = print) -> WorkerReport:
    async with FleetWorker(options, say) as worker:
        assert worker.report is not None
        say(f"worker {worker.name}: hardware {worker.hardware!r}, queue {worker.queue!r}; {worker.report.sandbox}")
        return await worker.run()
