from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import asyncpg
import pytest

from kernelindex.db.urls import to_libpq_url
from kernelindex.ingest.seed import SEEDS_DIR

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SHARED_TIMING = Path(__file__).resolve().parents[3] / "shared" / "kernelbench" / "results" / "timing"

TABLES = ("workloads", "workload_revisions", "implementations", "hardware", "environments", "protocols", "sources", "source_snapshots", "runs")


def snapshot(db_url: str) -> dict[str, list]:
    """Every row of every table (minus timestamps), to compare two database states."""

    async def read():
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            out = {}
            for table in TABLES:
                rows = await conn.fetch(f"SELECT * FROM {table} ORDER BY id")
                out[table] = [
                    {k: v for k, v in dict(r).items() if k not in ("created_at", "updated_at", "superseded_at")} for r in rows
                ]
            return out
        finally:
            await conn.close()

    return asyncio.run(read())


def fetch(db_url: str, query: str, *args) -> list[dict]:
    """The rows of one query, as dicts."""

    async def go():
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            return [dict(r) for r in await conn.fetch(query, *args)]
        finally:
            await conn.close()

    return asyncio.run(go())


async def execute(db_url: str, *statements: str) -> None:
    """Run SQL statements on one connection, in order (for tests that set up what the code refuses)."""
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


def counts(db_url: str) -> dict[str, int]:
    return {t: len(rows) for t, rows in snapshot(db_url).items()}


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A KernelBench-format checkout: the fixture problems plus the two reference modules."""
    root = tmp_path / "KernelBench-checkout"
    shutil.copytree(FIXTURES / "kernelbench_checkout", root)
    level3 = root / "KernelBench" / "level3"
    shutil.copy(SEEDS_DIR / "reference" / "resnet18.py", level3 / "9_ResNet18.py")
    shutil.copy(SEEDS_DIR / "reference" / "vgg19.py", level3 / "12_VGG19.py")
    return root


def write_timing(root: Path, folder: str, config: str, data: dict) -> Path:
    path = root / "results" / "timing" / folder / f"baseline_time_{config}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def entry(mean: float, std: float | None = None, trials: int = 100, hardware: str = "NVIDIA H100 80GB HBM3") -> dict:
    # By default a spread the statistics allow (measurements-v1: std within max - min).
    std = round(mean * 0.01, 6) if std is None else std
    return {"mean": mean, "std": std, "min": round(mean * 0.98, 4), "max": round(mean * 1.05, 4), "num_trials": trials, "hardware": hardware, "device": "cuda:0"}
