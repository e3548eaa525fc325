"""Catalogue lines in a runs file: the hardware and workload revisions an export carries before its
runs, so `kernelindex ingest runs` can rebuild them in an empty database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.ingest.errors import InputProblem
from kernelindex.ingest.hardware import hardware_problem, upsert_hardware
from kernelindex.ingest.records import CATALOG_FORMATS, HARDWARE_FORMAT
from kernelindex.ingest.workloads import WorkloadSpec, upsert_workload

WORKLOAD_REQUIRED = ("suite", "level", "problem_number", "name", "reference_source", "canonical")


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
                problem = f"missing {', '.join(missing)}" if missing else None
            if problem:
                problems.append(InputProblem(label, where, problem))
            else:
                found.append((where, data))
    return found, problems


async def apply_catalog(session: AsyncSession, lines: list[tuple[str, dict[str, Any]]]) -> tuple[int, list[int]]:
    """Upsert the hardware and workloads; (hardware count, workload ids touched)."""
    hardware = 0
    touched: list[int] = []
    for _, data in lines:
        if data["format"] == HARDWARE_FORMAT:
            await upsert_hardware(session, data)
            hardware += 1
            continue
        canonical = data["canonical"]
        outcome = await upsert_workload(session, WorkloadSpec(
            suite=data["suite"], level=int(data["level"]), problem_number=int(data["problem_number"]), name=data["name"],
            slug=data.get("slug"), kind=data.get("kind"), description=data.get("description"),
            reference_source=data["reference_source"], source_filename=data.get("source_filename"),
            upstream_revision=data.get("upstream_revision"), canonical_bindings=canonical.get("bindings") or {},
            canonical_dtype=canonical.get("dtype") or "fp32", semantics=data.get("semantics"),
            semantics_error=data.get("semantics_error"), analysis=data.get("analysis"),
        ))
        touched.append(outcome.workload_id)
    return hardware, touched
