"""`kernelindex bench` on the CPU: measure a workload from the database and ingest the runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench_checkout" / "KernelBench" / "level1" / "2_ReLU.py"


@pytest.fixture
def relu_workload(db_url):
    from kernelindex.db.engine import make_engine, make_sessionmaker, transaction
    from kernelindex.ingest.workloads import WorkloadSpec, upsert_workload

    async def add():
        engine = make_engine(db_url, pool_size=1, max_overflow=0)
        async with transaction(make_sessionmaker(engine)) as session:
            await upsert_workload(session, WorkloadSpec(
                suite="kernelbench", level=1, problem_number=2, name="ReLU", reference_source=FIXTURE.read_text(),
                canonical_bindings={"batch_size": 16, "dim": 128}, canonical_dtype="fp32",
                semantics={"inputs": [{"name": "input_1", "dtype": "fp32", "shape": ["batch_size", "dim"]}],
                           "outputs": [{"name": "out", "dtype": "fp32", "shape": ["batch_size", "dim"]}],
                           "axes": [], "determinism": "deterministic", "constraints": []},
            ))
        await engine.dispose()

    asyncio.run(add())
    return "kernelbench-l1-p2-relu"


def _claims(db_url) -> list[str | None]:
    """The stored claims of the live runs (what an outside record said its evidence was)."""
    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    async def read():
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            rows = await conn.fetch("SELECT r.claimed_evidence FROM runs r JOIN workloads w ON w.id = r.workload_id "
                                    "WHERE w.slug = 'kernelbench-l1-p2-relu' AND r.superseded_at IS NULL")
            return [r["claimed_evidence"] for r in rows]
        finally:
            await conn.close()

    return asyncio.run(read())


def _page(db_url, slug):
    from tests.ingest.test_kernelbench_import import _page as page

    return page(db_url, slug)


def _run_lines(path) -> list[dict]:
    """The run records of a bench output file (a CPU run's catalogue line comes first)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [line for line in lines if line["format"] == "kernelindex.run/1"]


def test_bench_ingests_measured_runs(cli, db_url, relu_workload, tmp_path, capsys):
    out = tmp_path / "runs.jsonl"
    status = cli("bench", "--workload", relu_workload, "--impl", "torch_eager", "--device", "cpu",
                 "--trials", "5", "--warmup", "1", "--out", str(out), "--ingest")
    assert status == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    # The CPU is declared by a catalogue line first: the index takes new hardware only that way.
    assert [line["format"] for line in lines] == ["kernelindex.hardware/1", "kernelindex.run/1"]
    assert lines[0]["sku"] == lines[1]["environment"]["hardware"]["product_name"] and lines[0]["family"] == "CPU"
    records = lines[1:]
    assert len(records) == 1 and records[0]["evidence"] == "measured" and records[0]["status"] == "passed"
    assert records[0]["configuration"] == {"bindings": {"batch_size": 16, "dim": 128}, "dtype": "fp32"}
    assert "runs inserted" in capsys.readouterr().out
    page = _page(db_url, relu_workload)
    assert page["eligibleRunCount"] == 1
    # A local bench is not the fleet: its "measured" goes in through `ingest runs`, so it is a claim (trust-v2).
    assert page["headline"]["run"]["evidence"] == "REPORTED"
    assert _claims(db_url) == ["measured"]
    assert page["headline"]["run"]["protocol"]["name"] == "kernelindex-cpu-perf-counter"


def test_bench_other_configuration_is_not_canonical(cli, db_url, relu_workload, tmp_path):
    status = cli("bench", "--workload", relu_workload, "--impl", "torch_eager", "--device", "cpu", "--trials", "3",
                 "--warmup", "0", "--set", "batch_size=4", "--ingest")
    assert status == 0
    page = _page(db_url, relu_workload)
    assert page["eligibleRunCount"] == 0  # measured at batch_size = 4: stored, never mistaken for the canonical one


def test_bench_unknown_workload(cli, capsys):
    assert cli("bench", "--workload", "no-such-workload", "--device", "cpu") == 2
    assert "unknown workload(s): no-such-workload" in capsys.readouterr().err


def test_bench_file_from_a_checkout_records_the_importers_slug(cli, db_url, relu_workload, tmp_path):
    # FIXTURE is …/KernelBench/level1/2_ReLU.py: the run names kernelbench-l1-p2-relu, which `ingest runs` knows.
    out = tmp_path / "runs.jsonl"
    status = cli("bench", "--file", str(FIXTURE), "--impl", "torch_eager", "--device", "cpu",
                 "--trials", "3", "--warmup", "0", "--out", str(out), "--ingest")
    assert status == 0
    records = _run_lines(out)
    assert [r["workload"]["slug"] for r in records] == [relu_workload]
    assert records[0]["configuration"] == {"bindings": {"batch_size": 16, "dim": 128}, "dtype": "fp32"}
    assert _page(db_url, relu_workload)["eligibleRunCount"] == 1


def test_bench_file_elsewhere_keeps_the_file_name_slug(cli, tmp_path):
    loose = tmp_path / "My_Problem.py"
    loose.write_text(FIXTURE.read_text())
    out = tmp_path / "runs.jsonl"
    assert cli("bench", "--file", str(loose), "--impl", "torch_eager", "--device", "cpu",
               "--trials", "2", "--warmup", "0", "--out", str(out)) == 0
    assert _run_lines(out)[0]["workload"]["slug"] == "my-problem"
    assert cli("bench", "--file", str(FIXTURE), "--slug", "chosen", "--impl", "torch_eager", "--device", "cpu",
               "--trials", "2", "--warmup", "0", "--out", str(out)) == 0
    assert _run_lines(out)[0]["workload"]["slug"] == "chosen"
