"""Fleet jobs: what a submission or a sweep asks to be measured, and the states a worker moves it through.

One row per measurement (``fleet_jobs``): a workload's current revision × an implementation (a builtin
runner, or a submitted ``ModelNew`` module) × a kind of hardware (a catalogue SKU, or 'cpu') × a
configuration. The same request made again is the same row (``dedupe_key``), whatever its state, so a
file submitted twice is one job; a new revision of the workload is a new measurement, so a new job.

States: queued → running → passed | failed (with its reason) | cancelled. A queued or running job can be
cancelled (`cancel`: who and why go into its reason; a running one's worker stops its sandbox and stores
nothing); a finished one cannot, and a cancelled one stays cancelled. A job whose worker dies is
put back to queued by another worker of its SKU (kernelindex.fleet.worker) until it has been started
``max_attempts`` times, then failed with that reason. Nothing here runs submitted code: a submission's
source is parsed in a bounded child process, never imported, on this side (kernelindex.fleet.submissions,
which checks every field of a submission).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import FLEET_JOB_STATES, FleetJob, Hardware, Implementation, Submission, Workload, WorkloadRevision
from kernelindex.fleet.queue import CPU, defer, queue_for
from kernelindex.fleet.submissions import (
    FleetInputError,
    bindable_axes,
    check_bindings,
    check_bindings_name_axes,
    check_candidate_source,
    check_candidate_source_async,
    check_reference_length,
    checked_licence,
    checked_shown_text,
    checked_source_url,
    checked_title,
    shown_filename,
)
from kernelindex.rules.names import is_unstated_variant

DEFAULT_MAX_ATTEMPTS = 3
MAX_CANCEL_REASON_CHARS = 500
# Measurements of one subject on distinct machines: two make the Replicated rung reachable.
MAX_REPLICAS = 4
# The builtin runners a sweep may queue (benchmarks.runners.IMPLEMENTATIONS, named here so the API
# never imports torch to check a name).
BUILTIN_IMPLEMENTATIONS = (
    "torch_eager", "torch_compile_inductor", "torch_compile_inductor_reduce_overhead",
    "torch_compile_inductor_max_autotune", "torch_compile_inductor_max_autotune_no_cudagraphs",
)
# Re-exported: the checks of a submission live in kernelindex.fleet.submissions.
__all__ = ["FleetInputError", "check_bindings", "check_candidate_source"]


@dataclass(frozen=True)
class Enqueued:
    job: FleetJob
    created: bool  # False: the same request was made before; this is that job


# --- checks ----------------------------------------------------------------------------------------------


async def resolve_hardware(session: AsyncSession, name: str) -> str:
    """'cpu', or the catalogue SKU that ``name`` names (its SKU, short name or a driver product name,
    case and spacing ignored). FleetInputError when it names none, or several."""
    wanted = " ".join(name.split()).casefold()
    if not wanted:
        raise FleetInputError("hardware", "name the hardware to measure on: 'cpu' or a GPU of the catalogue (e.g. 'NVIDIA H200')")
    if wanted == CPU:
        return CPU
    catalogue = (await session.execute(select(Hardware.sku, Hardware.short_name, Hardware.driver_product_names, Hardware.family))).all()
    # A source's "NVIDIA H100" without its variant is a catalogue entry no machine is: a request naming it names
    # the family's SKUs, one of which the job must be for.
    rows = [(sku, short, names) for sku, short, names, _ in catalogue if not is_unstated_variant(sku)]
    stated = {family for sku, _, _, family in catalogue if not is_unstated_variant(sku)}
    exact = [sku for sku, short, names in rows if wanted in {sku.casefold(), short.casefold(), *(n.casefold() for n in names or [])}]
    for sku, short, names, family in catalogue:
        if is_unstated_variant(sku) and family in stated and wanted in {sku.casefold(), short.casefold(), *(n.casefold() for n in names or [])}:
            exact += [other for other, _, _, member_of in catalogue if member_of == family and not is_unstated_variant(other)]
    if len(exact) == 1:
        return exact[0]
    if not exact:
        # "NVIDIA H200" for "NVIDIA H200 SXM 141GB": a prefix of exactly one SKU.
        exact = [sku for sku, _, _ in rows if sku.casefold().startswith(wanted + " ")]
        if len(exact) == 1:
            return exact[0]
    if exact:
        raise FleetInputError("hardware", f"{name!r} names several SKUs ({', '.join(sorted(exact))}): name one")
    known = ", ".join(sorted(sku for sku, _, _ in rows if not sku.casefold().startswith("cpu"))[:12])
    raise FleetInputError("hardware", f"no hardware {name!r} in the catalogue; 'cpu' or one of: {known}")


async def current_revision(session: AsyncSession, slug: str) -> tuple[Workload, WorkloadRevision]:
    row = (
        await session.execute(
            select(Workload, WorkloadRevision)
            .join(WorkloadRevision, WorkloadRevision.id == Workload.current_revision_id)
            .where(Workload.slug == slug)
        )
    ).first()
    if row is None:
        raise FleetInputError("workload", f"no workload {slug!r} (with a current revision)")
    return row[0], row[1]


def framework_of(source: str) -> str:
    """What the module is written in, from its imports and calls (for the implementation's label)."""
    if "load_inline" in source or "cpp_extension" in source:
        return "CUDA C++ (load_inline)"
    if re.search(r"^\s*(import triton|from triton)", source, re.M):
        return "Triton"
    return "PyTorch"


def dedupe_key(*, kind: str, revision_id: int, implementation: str, hardware: str, bindings: dict[str, int], replica: int = 0) -> str:
    parts: list[Any] = [kind, revision_id, implementation, hardware, bindings]
    if replica:
        parts.append(replica)  # replica 0 keeps the key a single measurement always had
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def check_replicas(replicas: int) -> int:
    if type(replicas) is not int or not 1 <= replicas <= MAX_REPLICAS:
        raise FleetInputError("replicas", f"replicas must be 1 to {MAX_REPLICAS}, got {replicas!r}")
    return replicas


# --- requests --------------------------------------------------------------------------------------------


async def _enqueue(
    session: AsyncSession, *, kind: str, workload: Workload, revision: WorkloadRevision, implementation_slug: str,
    hardware: str, bindings: dict[str, int], submission_id: int | None, token_id: int | None, max_attempts: int,
    replica: int = 0,
) -> Enqueued:
    key = dedupe_key(kind=kind, revision_id=revision.id, implementation=implementation_slug, hardware=hardware,
                     bindings=bindings, replica=replica)
    queue = queue_for(hardware)
    inserted = (
        await session.execute(
            pg_insert(FleetJob)
            .values(
                dedupe_key=key, kind=kind, workload_id=workload.id, workload_revision_id=revision.id,
                implementation_slug=implementation_slug, submission_id=submission_id, hardware=hardware,
                queue_name=queue, bindings=bindings, replica=replica, max_attempts=max_attempts, requested_by_token_id=token_id,
            )
            .on_conflict_do_nothing(index_elements=["dedupe_key"])
            .returning(FleetJob.id)
        )
    ).scalar_one_or_none()
    if inserted is None:
        job = (await session.execute(select(FleetJob).where(FleetJob.dedupe_key == key))).scalar_one()
        return Enqueued(job, created=False)
    queue_job_id = await defer(session, queue=queue, job_id=inserted, lock=key)
    await session.execute(update(FleetJob).where(FleetJob.id == inserted).values(queue_job_id=queue_job_id))
    job = (await session.execute(select(FleetJob).where(FleetJob.id == inserted))).scalar_one()
    return Enqueued(job, created=True)


async def submit_implementation(
    session: AsyncSession, *, workload_slug: str, source: str, filename: str, title: str, licence: str | None,
    source_url: str | None, hardware: str, bindings: dict[str, Any] | None = None, token_id: int | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS, replicas: int = 1,
) -> list[Enqueued]:
    """Record a submitted ``ModelNew`` module for a workload's current revision and queue its measurement
    on ``hardware`` (``replicas`` of them, each on a machine of its own), in the session's transaction.
    The same bytes for the same revision and hardware (and configuration) are the jobs already made."""
    check_replicas(replicas)
    check_reference_length(workload_slug, "workload")
    check_reference_length(hardware, "hardware")
    filename = shown_filename(filename)
    title = checked_title(title)
    licence = checked_licence(licence)
    source_url = checked_source_url(source_url)
    checked_bindings = check_bindings(bindings or {})
    workload, revision = await current_revision(session, workload_slug)
    check_bindings_name_axes(checked_bindings, bindable_axes(revision.semantics, revision.canonical_bindings), workload.slug)
    await check_candidate_source_async(source, filename)
    sku = await resolve_hardware(session, hardware)
    sha = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    slug = f"submitted-{sha[:16]}"
    await session.execute(
        pg_insert(Implementation)
        .values(
            slug=slug, title=title, framework=framework_of(source), language="python", runtime_id=slug, role="candidate",
            compile_mode=None, licence=licence, source_availability="mirrored", source_url=source_url, install_recipe=None,
        )
        .on_conflict_do_nothing(index_elements=["slug"])
    )
    implementation_id = (await session.execute(select(Implementation.id).where(Implementation.slug == slug))).scalar_one()
    await session.execute(
        pg_insert(Submission)
        .values(
            workload_id=workload.id, workload_revision_id=revision.id, implementation_id=implementation_id,
            source_sha256=sha, source_text=source, filename=filename, submitted_by_token_id=token_id,
        )
        .on_conflict_do_nothing(index_elements=["workload_revision_id", "source_sha256"])
    )
    submission_id = (
        await session.execute(
            select(Submission.id).where(Submission.workload_revision_id == revision.id, Submission.source_sha256 == sha)
        )
    ).scalar_one()
    return [
        await _enqueue(
            session, kind="submission", workload=workload, revision=revision, implementation_slug=slug, hardware=sku,
            bindings=checked_bindings, submission_id=submission_id, token_id=token_id, max_attempts=max_attempts,
            replica=replica,
        )
        for replica in range(replicas)
    ]


async def enqueue_sweep(
    session: AsyncSession, *, workload_slugs: list[str], level: int | None, everything: bool, implementations: list[str],
    hardware: list[str], bindings: dict[str, Any] | None = None, max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    replicas: int = 1,
) -> list[Enqueued]:
    """One job per workload × builtin implementation × hardware (× replica), for the current revisions."""
    check_replicas(replicas)
    unknown = [s for s in implementations if s not in BUILTIN_IMPLEMENTATIONS]
    if unknown:
        raise FleetInputError("impl", f"unknown implementation(s) {', '.join(unknown)}; known: {', '.join(BUILTIN_IMPLEMENTATIONS)}")
    if not hardware:
        raise FleetInputError("hardware", "name the hardware to queue for (--hardware, repeatable)")
    skus = [await resolve_hardware(session, h) for h in hardware]
    checked_bindings = check_bindings(bindings or {})
    statement = select(Workload, WorkloadRevision).join(WorkloadRevision, WorkloadRevision.id == Workload.current_revision_id)
    if not everything:
        statement = statement.where(Workload.slug.in_(workload_slugs))
    if level is not None:
        statement = statement.where(Workload.level == level)
    rows = (await session.execute(statement.order_by(Workload.level, Workload.problem_number, Workload.slug))).all()
    missing = sorted(set(workload_slugs) - {w.slug for w, _ in rows}) if not everything else []
    if missing:
        raise FleetInputError("workload", f"unknown workload(s): {', '.join(missing)}")
    out = []
    for workload, revision in rows:
        for sku in dict.fromkeys(skus):
            for implementation in dict.fromkeys(implementations):
                for replica in range(replicas):
                    out.append(await _enqueue(
                        session, kind="sweep", workload=workload, revision=revision, implementation_slug=implementation,
                        hardware=sku, bindings=checked_bindings, submission_id=None, token_id=None,
                        max_attempts=max_attempts, replica=replica,
                    ))
    return out


# --- reading ---------------------------------------------------------------------------------------------


async def get_job(session: AsyncSession, job_id: int) -> FleetJob | None:
    return (await session.execute(select(FleetJob).where(FleetJob.id == job_id))).scalar_one_or_none()


async def jobs_of_hardware_and_workload(session: AsyncSession, statement: Any, hardware: str | None, workload_slug: str | None) -> Any:
    """The jobs filter `jobs` lists and counts by: a hardware name (resolved to its SKU) and a workload."""
    if hardware:
        sku = hardware if hardware == CPU else await resolve_hardware(session, hardware)
        statement = statement.where(FleetJob.hardware == sku)
    if workload_slug:
        statement = statement.where(FleetJob.workload_id == select(Workload.id).where(Workload.slug == workload_slug).scalar_subquery())
    return statement


async def list_jobs(
    session: AsyncSession, *, states: list[str] | None = None, hardware: str | None = None, workload_slug: str | None = None,
    submission_id: int | None = None, limit: int = 100, before_id: int | None = None,
) -> list[FleetJob]:
    """Newest first."""
    bad = [s for s in states or [] if s not in FLEET_JOB_STATES]
    if bad:
        raise FleetInputError("state", f"unknown state(s) {', '.join(bad)}; states are {', '.join(FLEET_JOB_STATES)}")
    statement = await jobs_of_hardware_and_workload(session, select(FleetJob), hardware, workload_slug)
    if states:
        statement = statement.where(FleetJob.state.in_(states))
    if submission_id is not None:
        statement = statement.where(FleetJob.submission_id == submission_id)
    if before_id is not None:
        statement = statement.where(FleetJob.id < before_id)
    return list((await session.execute(statement.order_by(FleetJob.id.desc()).limit(limit))).scalars())


@dataclass(frozen=True)
class Subject:
    """What a job measures, in the words a person reads: the workload's slug, the implementation's slug
    and (a submission's) title."""

    workload: str
    implementation: str
    title: str | None


async def subjects_of(session: AsyncSession, found: list[FleetJob]) -> dict[int, Subject]:
    """By job id, for the lines `submit`, `bench --enqueue`, `jobs` and `jobs cancel` print."""
    if not found:
        return {}
    rows = await session.execute(
        select(FleetJob.id, Workload.slug, FleetJob.implementation_slug, FleetJob.kind, Implementation.title)
        .join(Workload, Workload.id == FleetJob.workload_id)
        .outerjoin(Implementation, Implementation.slug == FleetJob.implementation_slug)
        .where(FleetJob.id.in_([job.id for job in found]))
    )
    return {job_id: Subject(workload, slug, title if kind == "submission" else None)
            for job_id, workload, slug, kind, title in rows}


async def count_by_state(session: AsyncSession, *, hardware: str | None = None, workload_slug: str | None = None) -> dict[str, int]:
    statement = await jobs_of_hardware_and_workload(
        session, select(FleetJob.state, func.count()).group_by(FleetJob.state), hardware, workload_slug)
    rows = (await session.execute(statement)).all()
    return {state: count for state, count in rows}


# --- the worker's transitions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    """What a worker needs to measure a job (read in the trusted worker; handed to the sandbox as JSON)."""

    job_id: int
    attempt: int
    workload_slug: str
    source_sha256: str
    reference_source: str
    reference_filename: str
    implementation: dict[str, Any]
    builtin: str | None
    candidate_source: str | None
    candidate_filename: str | None
    bindings: dict[str, int]


@dataclass(frozen=True)
class Declined:
    """This machine already measures (or measured) another replica of the job's measurement: a replica is
    worth something only from another machine, so the job goes back to the queue for one."""

    sibling_job_id: int


async def start(session: AsyncSession, job_id: int, worker: str, machine_id: str, now: datetime) -> Work | Declined | None:
    """Mark the job running on ``worker`` (one more attempt) and read what measuring it needs; None when
    the job is not there to run (cancelled, or already finished: a queue entry outliving its job).
    Declined when a sibling replica is running or passed on this machine (the job is left queued)."""
    subject = (
        await session.execute(
            select(FleetJob.workload_revision_id, FleetJob.implementation_slug, FleetJob.hardware, FleetJob.bindings)
            .where(FleetJob.id == job_id)
        )
    ).first()
    if subject is None:
        return None
    revision_id, slug, hardware, bindings = subject
    # Replicas of one subject are started one at a time, so two workers of one machine cannot both take one.
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 17))"),
        {"k": json.dumps([revision_id, slug, hardware, bindings], sort_keys=True)},
    )
    sibling = (
        await session.execute(
            select(FleetJob.id).where(
                FleetJob.workload_revision_id == revision_id, FleetJob.implementation_slug == slug,
                FleetJob.hardware == hardware, FleetJob.bindings == bindings, FleetJob.id != job_id,
                FleetJob.machine_id == machine_id, FleetJob.state.in_(("running", "passed")),
            ).limit(1)
        )
    ).first()
    if sibling is not None:
        await session.execute(
            update(FleetJob).where(FleetJob.id == job_id, FleetJob.state.in_(("queued", "running")))
            .values(state="queued", updated_at=now,
                    reason=f"waiting for another machine: job {sibling[0]} measures the same on this one")
        )
        return Declined(sibling[0])
    started = (
        await session.execute(
            update(FleetJob)
            .where(FleetJob.id == job_id, FleetJob.state.in_(("queued", "running")))
            .values(state="running", attempts=FleetJob.attempts + 1, worker=worker, machine_id=machine_id,
                    started_at=now, updated_at=now, finished_at=None, reason=None)
            .returning(FleetJob.attempts, FleetJob.workload_revision_id, FleetJob.implementation_slug,
                       FleetJob.submission_id, FleetJob.bindings, FleetJob.workload_id)
        )
    ).first()
    if started is None:
        return None
    attempt, revision_id, slug, submission_id, bindings, workload_id = started
    workload_slug, source_sha, reference, filename = (
        await session.execute(
            select(Workload.slug, WorkloadRevision.source_sha256, WorkloadRevision.reference_source, WorkloadRevision.source_filename)
            .join(WorkloadRevision, WorkloadRevision.workload_id == Workload.id)
            .where(WorkloadRevision.id == revision_id)
        )
    ).one()
    implementation = (await session.execute(select(Implementation).where(Implementation.slug == slug))).scalar_one_or_none()
    fields: dict[str, Any] = {"slug": slug}
    if implementation is not None:
        fields.update(
            title=implementation.title, framework=implementation.framework, language=implementation.language,
            role=implementation.role, licence=implementation.licence, source_url=implementation.source_url,
            source_availability=implementation.source_availability,
        )
    candidate_source = candidate_filename = None
    if submission_id is not None:
        candidate_source, candidate_filename = (
            await session.execute(select(Submission.source_text, Submission.filename).where(Submission.id == submission_id))
        ).one()
    return Work(
        job_id=job_id, attempt=attempt, workload_slug=workload_slug, source_sha256=source_sha, reference_source=reference,
        reference_filename=filename or f"{workload_slug}.py", implementation=fields,
        builtin=None if submission_id is not None else slug, candidate_source=candidate_source,
        candidate_filename=candidate_filename, bindings=dict(bindings or {}),
    )


async def finish(
    session: AsyncSession, job_id: int, *, state: str, now: datetime, reason: str | None = None,
    run_id: int | None = None, baseline_run_id: int | None = None, environment_id: int | None = None,
) -> bool:
    """The job's final state, from a worker. A job cancelled meanwhile stays cancelled (False)."""
    assert state in ("passed", "failed")
    done = await session.execute(
        update(FleetJob).where(FleetJob.id == job_id, FleetJob.state.in_(("queued", "running"))).values(
            state=state, reason=reason, run_id=run_id, baseline_run_id=baseline_run_id, environment_id=environment_id,
            finished_at=now, updated_at=now,
        ).returning(FleetJob.id)
    )
    return done.first() is not None


async def lock_state(session: AsyncSession, job_id: int) -> str | None:
    """The job's state, its row locked until the transaction ends: a worker storing a result reads it so,
    and a cancellation (which locks the row too) lands either before (nothing is stored) or after (too late)."""
    return (await session.execute(select(FleetJob.state).where(FleetJob.id == job_id).with_for_update())).scalar_one_or_none()


async def requeue(session: AsyncSession, job_id: int, *, reason: str, now: datetime) -> None:
    """Back to queued after an attempt that did not finish (the worker died, or failed on its side)."""
    await session.execute(
        update(FleetJob).where(FleetJob.id == job_id, FleetJob.state.in_(("queued", "running")))
        .values(state="queued", reason=reason, updated_at=now)
    )


async def attempts_of(session: AsyncSession, job_id: int) -> tuple[int, int] | None:
    row = (await session.execute(select(FleetJob.attempts, FleetJob.max_attempts).where(FleetJob.id == job_id))).first()
    return None if row is None else (row[0], row[1])


# --- cancelling ------------------------------------------------------------------------------------------


class JobNotFoundError(FleetInputError):
    def __init__(self, job_id: int):
        super().__init__("job", f"no job {job_id} (see `kernelindex jobs`)")


class NotYourJobError(FleetInputError):
    """The canceller may cancel only the jobs it asked for, and this one it did not."""

    def __init__(self, job_id: int):
        super().__init__("job", f"job {job_id} was not queued by this token: a token cancels the jobs it submitted "
                                "(implementations:submit), or any job with the jobs:cancel scope")


@dataclass(frozen=True)
class Cancellation:
    """What a request to cancel a job found and did. ``outcome``: 'cancelled' (by this request; ``was``
    says whether it was queued or running), 'already cancelled' (nothing changed) or 'finished' (it
    passed or failed before: nothing changed, and a finished job is never cancelled)."""

    job: FleetJob
    outcome: str
    was: str

    @property
    def refused(self) -> bool:
        return self.outcome == "finished"

    def message(self) -> str:
        if self.outcome == "cancelled":
            stopped = "; its worker stops its sandbox and stores nothing" if self.was == "running" else ""
            return f"cancelled job {self.job.id} (it was {self.was}{stopped})"
        if self.outcome == "already cancelled":
            return f"job {self.job.id} was already cancelled ({self.job.reason}); nothing changed"
        return f"job {self.job.id} already {self.job.state}: a finished job cannot be cancelled"


def checked_cancel_reason(reason: str | None) -> str | None:
    """Why a job is cancelled: optional, one line of visible text."""
    if reason is None:
        return None
    text = " ".join(reason.split())
    if not text:
        return None
    return checked_shown_text(text, "reason", "a reason", MAX_CANCEL_REASON_CHARS)


async def cancel(
    session: AsyncSession, job_id: int, *, now: datetime, by: str, reason: str | None = None,
    only_requested_by: int | None = None,
) -> Cancellation:
    """Cancel a queued or running job in the session's transaction: its state 'cancelled', with who
    (``by``) and why in its reason. A queued job's queue entry is cancelled with it; a running one's is
    marked for abort, which procrastinate tells its worker at once (LISTEN/NOTIFY, polled as a fallback):
    the worker stops the job's sandbox, and since the row is cancelled it stores no run for it.
    ``only_requested_by``: a token that may cancel only the jobs it queued (NotYourJobError otherwise).
    JobNotFoundError when there is no such job."""
    reason = checked_cancel_reason(reason)
    # The row locked first: a worker storing its result holds the same lock (lock_state), so the two never
    # both win; a job found finished here stays as it finished.
    job = (await session.execute(
        select(FleetJob).where(FleetJob.id == job_id).with_for_update().execution_options(populate_existing=True)
    )).scalar_one_or_none()
    if job is None:
        raise JobNotFoundError(job_id)
    if only_requested_by is not None and job.requested_by_token_id != only_requested_by:
        raise NotYourJobError(job_id)
    was = job.state
    if was == "cancelled":
        return Cancellation(job, "already cancelled", was)
    if was not in ("queued", "running"):
        return Cancellation(job, "finished", was)
    said = f"cancelled by {by}" + (f": {reason}" if reason else "") + (" (while running)" if was == "running" else "")
    await session.execute(
        update(FleetJob).where(FleetJob.id == job_id)
        .values(state="cancelled", reason=said, finished_at=now, updated_at=now)
    )
    if job.queue_job_id is not None:
        # procrastinate's entry: a waiting one cancelled, a running one marked for abort (a no-op when it
        # is already finished: a worker that takes the job finds it cancelled and leaves it).
        await session.execute(text("SELECT procrastinate_cancel_job_v1(:id, true, false)"), {"id": job.queue_job_id})
    await session.refresh(job)
    return Cancellation(job, "cancelled", was)
