"""Submitting and queueing: checks before anything is stored, one job per request, procrastinate's
queue entry in the same transaction."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, text

from kernelindex.db.models import FleetJob, Implementation, Submission
from kernelindex.fleet import jobs
from kernelindex.fleet.jobs import FleetInputError
from kernelindex.fleet.queue import queue_for
from tests.fleet.conftest import candidate


async def submit_one(session, **request):
    (result,) = await jobs.submit_implementation(session, **request)
    return result


async def _queue_rows(session) -> list[tuple]:
    return list((await session.execute(text(
        "SELECT id, queue_name, task_name, status::text, args FROM procrastinate_jobs ORDER BY id"))).all())


async def test_a_submission_is_one_job_on_its_hardware_queue(session, tiny_workload):
    result = await submit_one(
        session, workload_slug=tiny_workload, source=candidate("honest"), filename="honest.py", title="fair relu",
        licence="MIT", source_url="https://example.org/k", hardware="cpu")
    assert result.created and result.job.state == "queued" and result.job.hardware == "cpu"
    assert result.job.kind == "submission" and result.job.implementation_slug.startswith("submitted-")
    queued = await _queue_rows(session)
    assert [(q[0], q[1], q[2], q[3], q[4]) for q in queued] == [
        (result.job.queue_job_id, queue_for("cpu"), "kernelindex.measure", "todo", {"job_id": result.job.id})]
    implementation = (await session.execute(select(Implementation).where(Implementation.slug == result.job.implementation_slug))).scalar_one()
    assert (implementation.role, implementation.source_availability, implementation.licence) == ("candidate", "mirrored", "MIT")


async def test_the_same_file_twice_is_the_same_job(session, tiny_workload):
    first = await submit_one(session, workload_slug=tiny_workload, source=candidate("honest"),
                                             filename="honest.py", title="fair relu", licence=None, source_url=None, hardware="cpu")
    again = await submit_one(session, workload_slug=tiny_workload, source=candidate("honest"),
                                             filename="other-name.py", title="another title", licence=None, source_url=None,
                                             hardware="CPU")
    assert not again.created and again.job.id == first.job.id
    assert await session.scalar(select(func.count()).select_from(FleetJob)) == 1
    assert await session.scalar(select(func.count()).select_from(Submission)) == 1
    assert len(await _queue_rows(session)) == 1
    # Other hardware, or another configuration, is another measurement.
    gpu = await submit_one(session, workload_slug=tiny_workload, source=candidate("honest"),
                                           filename="honest.py", title="fair relu", licence=None, source_url=None,
                                           hardware="NVIDIA H200")
    assert gpu.created and gpu.job.hardware == "NVIDIA H200 SXM 141GB" and gpu.job.queue_name == queue_for("NVIDIA H200 SXM 141GB")
    bigger = await submit_one(session, workload_slug=tiny_workload, source=candidate("honest"),
                                              filename="honest.py", title="fair relu", licence=None, source_url=None,
                                              hardware="cpu", bindings={"N": 64})
    assert bigger.created and bigger.job.bindings == {"N": 64}
    assert await session.scalar(select(func.count()).select_from(Submission)) == 1
    assert len(await _queue_rows(session)) == 3


@pytest.mark.parametrize(
    ("source", "key", "words"),
    [
        ("def broken(:\n    pass\n", "file", "line 1: not valid Python"),
        ("import torch\nclass Model(torch.nn.Module):\n    pass\n", "file", "defines no ModelNew"),
        ("x = '\x00'\nclass ModelNew: pass\n", "file", "NUL"),
    ],
)
async def test_a_source_that_is_not_a_candidate_is_refused_before_anything_is_stored(session, tiny_workload, source, key, words):
    with pytest.raises(FleetInputError) as raised:
        await submit_one(session, workload_slug=tiny_workload, source=source, filename="new.py",
                                         title="t", licence=None, source_url=None, hardware="cpu")
    assert raised.value.key == key and words in str(raised.value) and "new.py" in str(raised.value)
    assert await session.scalar(select(func.count()).select_from(Submission)) == 0


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"hardware": "NVIDIA Z9000"}, "hardware", "no hardware 'NVIDIA Z9000'"),
        ({"hardware": "NVIDIA H100"}, "hardware", "several SKUs"),
        ({"workload_slug": "no-such-workload"}, "workload", "no workload 'no-such-workload'"),
        ({"title": "   "}, "title", "needs a title"),
        ({"source_url": "ftp://x"}, "sourceUrl", "not an http(s) URL"),
        ({"bindings": {"N": -1}}, "bindings", "positive integer"),
        ({"bindings": {"N; DROP": 1}}, "bindings", "not a Python identifier"),
    ],
)
async def test_bad_requests_name_their_field(session, tiny_workload, change, key, words):
    request = dict(workload_slug=tiny_workload, source=candidate("honest"), filename="honest.py", title="t",
                   licence=None, source_url=None, hardware="cpu") | change
    with pytest.raises(FleetInputError) as raised:
        await submit_one(session, **request)
    assert raised.value.key == key and words in str(raised.value)
    assert await session.scalar(select(func.count()).select_from(FleetJob)) == 0


async def test_a_sweep_is_one_job_per_workload_implementation_and_hardware_and_asking_again_adds_none(session, tiny_workload):
    made = await jobs.enqueue_sweep(session, workload_slugs=[], level=None, everything=True,
                                    implementations=["torch_eager", "torch_compile_inductor"], hardware=["cpu", "H200"])
    workloads = await session.scalar(text("SELECT count(*) FROM workloads WHERE current_revision_id IS NOT NULL"))
    assert len(made) == workloads * 2 * 2 and all(m.created for m in made)
    again = await jobs.enqueue_sweep(session, workload_slugs=[], level=None, everything=True,
                                     implementations=["torch_eager", "torch_compile_inductor"], hardware=["cpu", "H200"])
    assert not any(m.created for m in again) and {m.job.id for m in again} == {m.job.id for m in made}
    assert len(await _queue_rows(session)) == len(made)
    with pytest.raises(FleetInputError, match="unknown implementation"):
        await jobs.enqueue_sweep(session, workload_slugs=[tiny_workload], level=None, everything=False,
                                 implementations=["my_kernel"], hardware=["cpu"])


async def test_a_new_revision_is_a_new_job(session, tiny_workload):
    first = await jobs.enqueue_sweep(session, workload_slugs=[tiny_workload], level=None, everything=False,
                                     implementations=["torch_eager"], hardware=["cpu"])
    await session.execute(text(
        "WITH r AS (INSERT INTO workload_revisions (workload_id, source_sha256, reference_source, identity_sha256) "
        "SELECT id, 'new-sha', 'changed', 'new-sha' FROM workloads WHERE slug = :s RETURNING id, workload_id) "
        "UPDATE workloads w SET current_revision_id = r.id FROM r WHERE w.id = r.workload_id"), {"s": tiny_workload})
    second = await jobs.enqueue_sweep(session, workload_slugs=[tiny_workload], level=None, everything=False,
                                      implementations=["torch_eager"], hardware=["cpu"])
    assert second[0].created and second[0].job.id != first[0].job.id
    assert second[0].job.workload_revision_id != first[0].job.workload_revision_id


async def test_cancel_takes_a_queued_job_off_the_queue(session, tiny_workload):
    made = (await jobs.enqueue_sweep(session, workload_slugs=[tiny_workload], level=None, everything=False,
                                     implementations=["torch_eager"], hardware=["cpu"]))[0]
    assert await jobs.cancel(session, made.job.id, made.job.created_at)
    assert not await jobs.cancel(session, made.job.id, made.job.created_at)  # once
    assert (await _queue_rows(session))[0][3] == "cancelled"
    assert (await jobs.get_job(session, made.job.id)).state == "cancelled"


async def test_a_rolled_back_submission_leaves_no_queue_entry(engine, tiny_workload):
    from kernelindex.db.engine import make_sessionmaker

    sessions = make_sessionmaker(engine)
    async with sessions() as session:
        async with session.begin():
            await submit_one(session, workload_slug=tiny_workload, source=candidate("honest"),
                                             filename="honest.py", title="t", licence=None, source_url=None, hardware="cpu")
            await session.rollback()
    async with sessions() as session:
        assert await _queue_rows(session) == []
        assert await session.scalar(select(func.count()).select_from(FleetJob)) == 0


async def test_replicas_are_jobs_of_their_own_and_a_machine_takes_one_of_them(session, tiny_workload):
    from datetime import UTC, datetime

    made = await jobs.submit_implementation(session, workload_slug=tiny_workload, source=candidate("honest"), filename="h.py",
                                            title="t", licence=None, source_url=None, hardware="cpu", replicas=2)
    assert [m.job.replica for m in made] == [0, 1] and all(m.created for m in made)
    assert len({m.job.dedupe_key for m in made}) == 2 and len(await _queue_rows(session)) == 2
    now = datetime.now(UTC)
    first = await jobs.start(session, made[0].job.id, "w1", "machine-a", now)
    assert isinstance(first, jobs.Work)
    # The same machine may not measure the other replica: it stays queued, no attempt spent.
    declined = await jobs.start(session, made[1].job.id, "w2", "machine-a", now)
    assert declined == jobs.Declined(made[0].job.id)
    row = await jobs.get_job(session, made[1].job.id)
    await session.refresh(row)
    assert (row.state, row.attempts) == ("queued", 0) and "another machine" in row.reason
    other = await jobs.start(session, made[1].job.id, "w3", "machine-b", now)
    assert isinstance(other, jobs.Work) and other.attempt == 1
    with pytest.raises(FleetInputError, match="replicas must be 1 to 4"):
        await jobs.submit_implementation(session, workload_slug=tiny_workload, source=candidate("honest"), filename="h.py",
                                         title="t", licence=None, source_url=None, hardware="cpu", replicas=9)
