"""The fleet's fixtures: a workload small enough to measure on a CPU in a test, the candidate files of
tests/fixtures/fleet, and `kernelindex worker` processes against the test's database."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from kernelindex.db.urls import to_libpq_url
from kernelindex.rules.identity import configuration_key

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "fleet"
TINY = "test-tiny-matmul-relu"
REPEATED = "test-repeated-matmul-relu"
REPO = Path(__file__).resolve().parents[2]
# What the problem files define (N = 48): the configuration whose runs hold records.
CANONICAL = {"N": 48}


def candidate(name: str) -> str:
    return (FIXTURES / f"{name}.py").read_text(encoding="utf-8")


async def _add_tiny_workload(url: str, slug: str = TINY, reference: str = "reference.py", number: int = 901) -> int:
    source = (FIXTURES / reference).read_text(encoding="utf-8")
    sha = hashlib.sha256(source.encode()).hexdigest()
    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        async with conn.transaction():
            workload_id = await conn.fetchval(
                "INSERT INTO workloads (slug, suite, level, problem_number, name, kind) "
                "VALUES ($1, 'test', 1, $2, $1, 'fusion') RETURNING id", slug, number)
            revision_id = await conn.fetchval(
                "INSERT INTO workload_revisions (workload_id, source_sha256, reference_source, source_size, source_filename, "
                "identity_sha256, canonical_bindings, canonical_dtype, canonical_configuration_key) "
                "VALUES ($1, $2, $3, $4, $5, $2, $6::jsonb, 'fp32', $7) RETURNING id",
                workload_id, sha, source, len(source), reference, json.dumps(CANONICAL), configuration_key(CANONICAL, "fp32"))
            await conn.execute("UPDATE workloads SET current_revision_id = $1 WHERE id = $2", revision_id, workload_id)
    finally:
        await conn.close()
    return workload_id


@pytest.fixture
async def tiny_workload(db_url) -> str:
    await _add_tiny_workload(db_url)
    return TINY


@pytest.fixture
async def repeated_workload(db_url) -> str:
    await _add_tiny_workload(db_url, REPEATED, "repeated_reference.py", 902)
    return REPEATED


@pytest.fixture
def start_worker(db_url):
    """Start `kernelindex worker --device cpu …` as its own process (its own session, so a test can
    SIGKILL it with everything it started); the processes left are killed after the test."""
    started: list[subprocess.Popen[str]] = []

    def start(*extra: str, name: str, machine: str | None = None) -> subprocess.Popen[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_")}
        env["KERNELINDEX_DATABASE_URL"] = db_url
        if machine is not None:
            env["KERNELINDEX_MACHINE_ID"] = machine  # two "machines" on one test host
        process = subprocess.Popen(
            [sys.executable, "-m", "kernelindex.cli", "worker", "--device", "cpu", "--name", name,
             "--heartbeat", "0.5", "--poll", "0.3", *extra],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            try:
                os.killpg(process.pid, 9)
            except ProcessLookupError:
                pass
            process.wait()
