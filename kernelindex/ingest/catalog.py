"""Catalogue lines in a runs file: the hardware and workload revisions an export carries before its
runs, so `kernelindex ingest runs` can rebuild them in an empty database."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.locks import hold_index_writes
from kernelindex.ingest.errors import InputProblem
from kernelindex.ingest.hardware import hardware_problem, upsert_hardware
from kernelindex.ingest.records import CATALOG_FORMATS, HARDWARE_FORMAT
from kernelindex.ingest.workloads import WorkloadSpec, record_snapshot, upsert_workload
from kernelindex.services.records import refresh_workloads

WORKLOAD_REQUIRED = ("suite", "level", "problem_number", "name", "reference_source", "canonical")


def _snapshots_problem(snapshots: Any) -> str | None:
    """Why a workload line's `snapshots` cannot be read, or None."""
    if snapshots is None:
        return None
    if not isinstance(snapshots, list):
        return "snapshots must be a list"
    for entry in snapshots:
        if not isinstance(entry, dict) or not isinstance(entry.get("upstream_revision"), str) or not entry["upstream_revision"]:
            return "each snapshot needs an upstream_revision"
        revision_date = entry.get("revision_date")
        if revision_date is not None:
            try:
                date.fromisoformat(str(revision_date))
            except ValueError:
                return f"snapshot revision_date is not a date (YYYY-MM-DD): {revision_date!r}"
    return None


def catalog_lines(path: Path, label: str) -> tuple[list[tuple[str, dict[str, Any]]], list[InputProblem]]:
    """(where, line) for every catalogue line, cheaply: only lines that name a catalogue format are parsed."""
    found: list[tuple[str, dict[str, Any]]] = []
    problems: list[InputProblem] = []
    markers = [f'"{f}"'.encode() for f in CATALOG_FORMATS]
    with path.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            if not any(m in raw for m in markers):
                continue
            where = f"line {number}"
            try:
                data = json.loads(raw)
            except ValueError:
                continue  # the runs pass reports it with its reason
            if not isinstance(data, dict) or data.get("format") not in CATALOG_FORMATS:
                continue
            if data["format"] == HARDWARE_FORMAT:
                problem = hardware_problem(data)
            else:
                missing = [k for k in WORKLOAD_REQUIRED if data.get(k) in (None, "")]
                problem = f"missing {', '.join(missing)}" if missing else _snapshots_problem(data.get("snapshots"))
            if problem:
                problems.append(InputProblem(label, where, problem))
            else:
                found.append((where, data))
    return found, problems


def _spec(data: dict[str, Any]) -> WorkloadSpec:
    canonical = data["canonical"]
    return WorkloadSpec(
        suite=data["suite"], level=int(data["level"]), problem_number=int(data["problem_number"]), name=data["name"],
        slug=data.get("slug"), kind=data.get("kind"), description=data.get("description"),
        reference_source=data["reference_source"], source_filename=data.get("source_filename"),
        upstream_revision=data.get("upstream_revision"), canonical_bindings=canonical.get("bindings") or {},
        canonical_dtype=canonical.get("dtype") or "fp32", semantics=data.get("semantics"),
        semantics_error=data.get("semantics_error"), analysis=data.get("analysis"),
        source_sha256=data.get("source_sha256"), source_size=data.get("source_size"), stand_in=bool(data.get("stand_in")),
    )


def _snapshot_key(data: dict[str, Any], entry: dict[str, Any]) -> tuple[str, str, date | None, bool]:
    revision_date = entry.get("revision_date")
    return (
        data["suite"], str(entry["upstream_revision"]),
        date.fromisoformat(revision_date) if revision_date else None, bool(entry.get("complete")),
    )


async def apply_catalog(session: AsyncSession, lines: list[tuple[str, dict[str, Any]]]) -> tuple[int, list[int]]:
    """Upsert the hardware and workloads; (hardware count, workload ids touched).

    A workload line that names the upstream snapshots holding its revision (an export does) records
    them, so the snapshots decide the current revision as they did where it was exported (revisions-v1);
    one that names none (an older export) becomes current in file order, as before. The records of
    workloads whose current revision moved are refreshed here, in the caller's transaction.
    """
    await hold_index_writes(session)
    hardware = 0
    touched: list[int] = []
    moved: set[int] = set()
    by_snapshot: dict[tuple[str, str, date | None, bool], list[WorkloadSpec]] = {}
    for _, data in lines:
        if data["format"] == HARDWARE_FORMAT:
            await upsert_hardware(session, data)
            hardware += 1
            continue
        spec = _spec(data)
        snapshots = [s for s in data.get("snapshots") or [] if isinstance(s, dict) and s.get("upstream_revision")]
        if snapshots:
            for entry in snapshots:
                by_snapshot.setdefault(_snapshot_key(data, entry), []).append(spec)
            continue
        outcome = await upsert_workload(session, spec, make_current=data.get("current", True) is not False)
        touched.append(outcome.workload_id)
        if outcome.status != "unchanged":
            moved.add(outcome.workload_id)
    for (suite, revision, revision_date, complete), specs in by_snapshot.items():
        result = await record_snapshot(session, suite, revision, revision_date, specs, complete=complete)
        touched += [o.workload_id for o in result.outcomes]
        moved |= set(result.current_changed)
    if moved:
        await refresh_workloads(session, moved)
    return hardware, touched
