"""Loading the seed dataset (seeds/): hardware catalogue, implementations, workloads and runs.

Idempotent: loading twice leaves the same rows. Everything lands in the caller's transaction.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.engine import in_own_transaction
from kernelindex.db.models import Implementation, Workload
from kernelindex.ingest.errors import IngestAborted, InputProblem
from kernelindex.ingest.hardware import hardware_problem, upsert_hardware
from kernelindex.ingest.records import RunRecord, read_run_records
from kernelindex.ingest.workloads import WorkloadSpec, upsert_workload
from kernelindex.ingest.writer import IngestSummary, RunWriter
from kernelindex.services.records import refresh_workloads

SEEDS_DIR = Path(__file__).resolve().parent.parent.parent / "seeds"

IMPLEMENTATION_FIELDS = (
    "slug", "title", "framework", "language", "runtime_id", "role", "compile_mode", "licence",
    "source_availability", "source_url", "install_recipe",
)


@dataclass
class SeedSummary:
    hardware: int
    implementations: int
    workloads: int
    runs: IngestSummary


def _load(path: Path, key: str) -> list[dict[str, Any]]:
    try:
        entries: list[dict[str, Any]] = json.loads(path.read_text())[key]
        return entries
    except (OSError, ValueError, KeyError) as exc:
        raise IngestAborted([InputProblem(str(path), key, f"cannot read seed file: {exc}")]) from exc


async def load_hardware_catalogue(session: AsyncSession, path: Path) -> int:
    entries = _load(path, "hardware")
    for entry in entries:
        problem = hardware_problem(entry)
        if problem:
            raise IngestAborted([InputProblem(str(path), entry.get("sku", "?"), problem)])
        await upsert_hardware(session, entry)
    return len(entries)


async def load_implementations(session: AsyncSession, path: Path) -> int:
    entries = _load(path, "implementations")
    for entry in entries:
        values = {f: entry.get(f) for f in IMPLEMENTATION_FIELDS}
        stmt = pg_insert(Implementation).values(**values)
        update = {k: stmt.excluded[k] for k in values if k != "slug"}
        await session.execute(stmt.on_conflict_do_update(index_elements=["slug"], set_=update))
    return len(entries)


async def load_workloads(session: AsyncSession, path: Path) -> int:
    entries = _load(path, "workloads")
    for entry in entries:
        source = (path.parent / entry["reference_file"]).read_text()
        await upsert_workload(
            session,
            WorkloadSpec(
                suite=entry["suite"], level=entry["level"], problem_number=entry["problem_number"],
                name=entry["name"], slug=entry.get("slug"), kind=entry.get("kind"),
                reference_source=source, source_filename=entry.get("source_filename"),
                canonical_bindings=entry["canonical"]["bindings"], canonical_dtype=entry["canonical"]["dtype"],
                semantics=entry.get("semantics"), analysis=entry.get("analysis"),
            ),
        )
    return len(entries)


async def load_runs(session: AsyncSession, path: Path) -> IngestSummary:
    with path.open(encoding="utf-8") as stream:
        items = list(read_run_records(stream, str(path)))
    problems = [i for i in items if isinstance(i, InputProblem)]
    if problems:
        raise IngestAborted(problems)
    summary = await RunWriter(session).write([i for i in items if isinstance(i, RunRecord)])
    if summary.problems:
        raise IngestAborted(summary.problems)
    return summary


async def seed_database(database_url: str) -> SeedSummary:
    """Load the seed into the database at the URL, in one transaction on an engine of its own."""
    return await in_own_transaction(database_url, load_seed)


async def load_seed(session: AsyncSession, seeds_dir: Path = SEEDS_DIR) -> SeedSummary:
    """Any problem aborts the whole seed (the caller rolls back)."""
    hardware = await load_hardware_catalogue(session, seeds_dir / "hardware.json")
    implementations = await load_implementations(session, seeds_dir / "implementations.json")
    workloads = await load_workloads(session, seeds_dir / "workloads.json")
    runs = IngestSummary()
    # The folder is listed off the event loop (a blocking call in a coroutine); same files, same order.
    runs_files = await asyncio.to_thread(lambda: sorted(seeds_dir.glob("runs*.jsonl")))
    for runs_file in runs_files:
        runs.merge(await load_runs(session, runs_file))
    await refresh_workloads(session, (await session.scalars(select(Workload.id))).all())
    return SeedSummary(hardware, implementations, workloads, runs)
