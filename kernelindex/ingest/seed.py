"""Loading the seed dataset (seeds/): hardware catalogue, implementations, workloads and runs.

Idempotent: loading twice leaves the same rows. Everything lands in the caller's transaction.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.engine import in_own_transaction
from kernelindex.db.models import Implementation, Workload
from kernelindex.ingest.errors import IngestAborted, InputProblem
from kernelindex.ingest.hardware import catalogue_problems, hardware_problem, upsert_hardware
from kernelindex.ingest.pipeline import write_within
from kernelindex.ingest.records import RunRecord, read_run_records
from kernelindex.ingest.summary import IngestSummary
from kernelindex.ingest.workloads import WorkloadSpec, record_snapshot, upsert_workload
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


def _load_upstream(path: Path) -> dict[str, Any] | None:
    """The upstream snapshot a workloads file speaks of (suite, revision, revision_date), if it names one."""
    upstream: dict[str, Any] | None = json.loads(path.read_text()).get("upstream")
    return upstream


def _reference_source(path: Path, name: str) -> str:
    return (path.parent / name).read_text()


async def load_hardware_catalogue(session: AsyncSession, path: Path) -> int:
    entries = _load(path, "hardware")
    for entry in entries:
        problem = hardware_problem(entry)
        if problem:
            raise IngestAborted([InputProblem(str(path), entry.get("sku", "?"), problem[1], key=problem[0])])
    clashes = catalogue_problems(entries)
    if clashes:
        raise IngestAborted([InputProblem(str(path), sku, why, key=key) for sku, key, why in clashes])
    for entry in entries:
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
    """The seed's workloads, as members of the partial upstream snapshot `upstream` names.

    Each entry states the upstream file's sha256 and size at that revision (the revision's identity)
    and brings our own module as its stand-in. Never a downgrade: a revision already holding the
    upstream source keeps it, and loading again (every `serve --seed`) changes nothing.
    """
    entries = _load(path, "workloads")
    upstream = _load_upstream(path)
    specs: list[WorkloadSpec] = []
    for entry in entries:
        source = _reference_source(path, entry["reference_file"])
        upstream_file = entry.get("upstream_file") or {}
        specs.append(
            WorkloadSpec(
                suite=entry["suite"], level=entry["level"], problem_number=entry["problem_number"],
                name=entry["name"], slug=entry.get("slug"), kind=entry.get("kind"),
                reference_source=source, source_filename=entry.get("source_filename"),
                upstream_revision=upstream["revision"] if upstream else None,
                canonical_bindings=entry["canonical"]["bindings"], canonical_dtype=entry["canonical"]["dtype"],
                semantics=entry.get("semantics"), analysis=entry.get("analysis"),
                source_sha256=upstream_file.get("sha256"), source_size=upstream_file.get("size"),
                stand_in=bool(entry.get("reference_is_stand_in")) and bool(upstream_file.get("sha256")),
            )
        )
    if upstream is None:
        for spec in specs:
            await upsert_workload(session, spec)
        return len(entries)
    by_suite: dict[str, list[WorkloadSpec]] = {}
    for spec in specs:
        by_suite.setdefault(spec.suite, []).append(spec)
    revision_date = date.fromisoformat(upstream["revision_date"]) if upstream.get("revision_date") else None
    for suite, suite_specs in by_suite.items():
        # Partial: the seed names two workloads of the suite, so it says nothing about the others.
        await record_snapshot(session, suite, upstream["revision"], revision_date, suite_specs, complete=False)
    return len(entries)


async def load_runs(session: AsyncSession, path: Path) -> IngestSummary:
    with path.open(encoding="utf-8") as stream:
        items = list(read_run_records(stream, str(path)))
    problems = [i for i in items if isinstance(i, InputProblem)]
    if problems:
        raise IngestAborted(problems)
    # The one ingest pipeline, strict, in the seed's one transaction: any problem aborts it (IngestAborted).
    written = await write_within(session, [i for i in items if isinstance(i, RunRecord)])
    if written.aborted is not None:
        raise written.aborted
    return written.summary


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
    return SeedSummary(hardware, implementations, workloads, runs.check())
