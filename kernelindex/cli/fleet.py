"""`kernelindex submit`, `kernelindex worker` and `kernelindex jobs`: the fleet from the command line.

`submit` records a ``ModelNew`` module for a workload and queues its measurement on the hardware
named; `bench --enqueue` (kernelindex.cli.bench) queues our own sweeps; `worker` runs on a GPU (or
CPU) machine and measures the jobs of its hardware; `jobs` lists them, with their state and reason, and
`jobs cancel` cancels queued or running ones (the operator's command: any job).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelindex.cli.common import EXIT_OK, EXIT_SOME_REJECTED, CommandError, database_url, say, write_stdout
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.models import FLEET_JOB_STATES, FleetJob
from kernelindex.fleet import jobs as fleet_jobs
from kernelindex.fleet.jobs import Enqueued, FleetInputError, Subject
from kernelindex.fleet.submissions import MAX_SOURCE_BYTES, check_candidate_source, shown_filename
from kernelindex.ingest.progress import Progress


def job_line(job: FleetJob, subject: Subject | None = None) -> str:
    """One line per job, for `submit`, `bench --enqueue`, `jobs` and `jobs cancel`: what it measures (the
    workload × the implementation, a submission's title beside its slug), where, and how it stands."""
    when = (job.finished_at or job.started_at or job.created_at).strftime("%Y-%m-%d %H:%M:%S")
    what = job.implementation_slug
    if subject is not None:
        what = f"{subject.workload} × {what}" + (f" {subject.title!r}" if subject.title else "")
    parts = [f"job {job.id}", job.state, what, f"on {job.hardware}"]
    if job.replica:
        parts.append(f"replica {job.replica}")
    parts += [f"attempts {job.attempts}/{job.max_attempts}", when]
    if job.run_id:
        parts.append(f"run {job.run_id}")
    if job.reason:
        parts.append(f"— {job.reason}")
    return "  ".join(parts)


def job_json(job: FleetJob, subject: Subject | None = None) -> dict[str, Any]:
    return {
        "id": job.id, "state": job.state, "kind": job.kind,
        "workload": subject.workload if subject else None, "implementation": job.implementation_slug,
        "title": subject.title if subject else None,
        "hardware": job.hardware, "queue": job.queue_name, "bindings": job.bindings, "replica": job.replica,
        "machine_id": job.machine_id, "attempts": job.attempts,
        "max_attempts": job.max_attempts, "reason": job.reason, "worker": job.worker, "run_id": job.run_id,
        "baseline_run_id": job.baseline_run_id, "environment_id": job.environment_id,
        "created_at": job.created_at.isoformat(), "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


async def in_transaction(url: str, work: Any) -> Any:
    engine = make_engine(url, pool_size=1, max_overflow=0)
    try:
        async with make_sessionmaker(engine)() as session, session.begin():
            return await work(session)
    except FleetInputError as exc:
        raise CommandError(str(exc)) from exc
    finally:
        await engine.dispose()


async def with_subjects(session, results: list[Enqueued]) -> tuple[list[Enqueued], dict[int, Subject]]:
    """The jobs just queued, with what each measures (read in the same transaction)."""
    return results, await fleet_jobs.subjects_of(session, [r.job for r in results])


def report_enqueued(results: list[Enqueued], subjects: dict[int, Subject]) -> None:
    created = sum(r.created for r in results)
    for result in results:
        say(("queued " if result.created else "already asked: ") + job_line(result.job, subjects.get(result.job.id)))
    say(f"{created} job(s) queued, {len(results) - created} already asked for")


def cmd_submit(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        size = path.stat().st_size
        # Refused before it is read: a file larger than any submission is not held in memory to say so.
        source = "" if size > MAX_SOURCE_BYTES else path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CommandError(f"no such file: {args.file}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {args.file}: {exc}") from exc
    # The module is checked before the database is touched: what is wrong with the file is the file's
    # problem (exit 1, as for any input refused), not a fatal error.
    try:
        name = shown_filename(path.name)  # first: every message below shows it
        if size > MAX_SOURCE_BYTES:
            raise FleetInputError("file", f"{name}: {size:,} bytes; a submission is at most {MAX_SOURCE_BYTES:,}")
        check_candidate_source(source, name)
    except FleetInputError as exc:
        say(f"error: {exc}")
        return EXIT_SOME_REJECTED
    url = database_url()

    async def work(session):
        return await with_subjects(session, await fleet_jobs.submit_implementation(
            session, workload_slug=args.workload, source=source, filename=path.name, title=args.title or path.stem,
            licence=args.licence, source_url=args.source_url, hardware=args.hardware, bindings=dict(args.bindings),
            max_attempts=args.max_attempts, replicas=args.replicas,
        ))

    results, subjects = asyncio.run(in_transaction(url, work))
    report_enqueued(results, subjects)
    if args.json:
        write_stdout("".join(json.dumps(job_json(r.job, subjects.get(r.job.id))) + "\n" for r in results))
    return EXIT_OK


def cmd_worker(args: argparse.Namespace) -> int:
    # The worker loop (procrastinate's worker, the sandbox): loaded only by this command.
    from kernelindex.fleet.worker import WorkerOptions, WorkerStartError, run_worker

    if args.device != "cpu" and not args.device.startswith("cuda"):
        raise CommandError(f"--device must be cpu, cuda or cuda:N, got {args.device!r}")
    options = WorkerOptions(
        database_url=database_url(), device=args.device, until_idle=args.until_idle, name=args.name,
        provider=args.provider, label=args.label, heartbeat_s=args.heartbeat, stalled_after_s=args.stalled_after,
        poll_s=args.poll, job_wall_s=args.job_timeout,
        memory_bytes=int(args.memory_gib * 1024**3) if args.memory_gib else None,
    )
    options.timing["budget_s"] = args.timing_budget
    try:
        report = asyncio.run(run_worker(options, say))
    except WorkerStartError as exc:
        raise CommandError(str(exc)) from exc
    say(f"worker {report.name}: {report.passed} passed, {report.failed} failed, {report.cancelled} cancelled while "
        f"running, {report.retried} to try again, {report.recovered} recovered from stalled workers")
    return EXIT_OK


async def _follow(url: str, args: argparse.Namespace) -> dict[str, int]:
    """Counts by state until nothing is queued or running, with a progress bar of the jobs finished."""
    engine = make_engine(url, pool_size=1, max_overflow=0)
    bar: Progress | None = None
    try:
        sessions = make_sessionmaker(engine)
        while True:
            async with sessions() as session:
                counts = await fleet_jobs.count_by_state(session, hardware=args.hardware, workload_slug=args.workload)
            total = sum(counts.values())
            finished = total - counts.get("queued", 0) - counts.get("running", 0)
            if bar is None:
                bar = Progress("jobs finished", total=total, every_s=args.every)
            elif bar.total != total:
                bar.total = total  # jobs queued meanwhile
            if finished > bar.done:
                bar.advance(finished - bar.done, note=f"{counts.get('running', 0)} running, {counts.get('failed', 0)} failed")
            if finished >= total:
                return counts
            await asyncio.sleep(args.every)
    except FleetInputError as exc:
        raise CommandError(str(exc)) from exc
    finally:
        if bar is not None:
            bar.close()
        await engine.dispose()


def cmd_jobs(args: argparse.Namespace) -> int:
    url = database_url()
    if args.follow:
        counts = asyncio.run(_follow(url, args))
        say("all finished: " + ", ".join(f"{counts.get(s, 0)} {s}" for s in FLEET_JOB_STATES))
        return EXIT_OK

    async def work(session):
        found = await fleet_jobs.list_jobs(session, states=args.state or None, hardware=args.hardware,
                                           workload_slug=args.workload, limit=args.limit)
        counts = await fleet_jobs.count_by_state(session, hardware=args.hardware, workload_slug=args.workload)
        return found, counts, await fleet_jobs.subjects_of(session, found)

    found, counts, subjects = asyncio.run(in_transaction(url, work))
    if args.json:
        write_stdout("".join(json.dumps(job_json(j, subjects.get(j.id))) + "\n" for j in found))
    else:
        write_stdout("".join(job_line(j, subjects.get(j.id)) + "\n" for j in found))
    total = sum(counts.values())
    finished = counts.get("passed", 0) + counts.get("failed", 0) + counts.get("cancelled", 0)
    summary = ", ".join(f"{counts.get(s, 0)} {s}" for s in FLEET_JOB_STATES)
    say(f"{total} job(s): {summary}; {finished}/{total} finished" if total else "no jobs")
    return EXIT_OK


def operator() -> str:
    """Who cancels from the command line, for the job's reason: the OS user on this host."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no login name and no passwd entry (a bare container)
        user = "an unnamed user"
    return f"{user}@{socket.gethostname()} (kernelindex jobs cancel)"


def cmd_jobs_cancel(args: argparse.Namespace) -> int:
    """Cancel queued or running jobs (any job: whoever holds the database URL operates the fleet). Exit 0
    when each is cancelled now or was already; 1 when one had finished (it stays as it finished; the others
    are cancelled); 2 when one does not exist (nothing is cancelled)."""
    url = database_url()
    ids = list(dict.fromkeys(args.ids))

    async def work(session):
        now = datetime.now(UTC)
        done = [await fleet_jobs.cancel(session, job_id, now=now, by=operator(), reason=args.reason) for job_id in ids]
        return done, await fleet_jobs.subjects_of(session, [c.job for c in done])

    done, subjects = asyncio.run(in_transaction(url, work))
    for cancellation in done:
        say(("error: " if cancellation.refused else "") + cancellation.message())
        say("  " + job_line(cancellation.job, subjects.get(cancellation.job.id)))
    return EXIT_SOME_REJECTED if any(c.refused for c in done) else EXIT_OK
