"""Catalogue lines in a runs file: the hardware and workload revisions an export carries before its
runs, so `kernelindex ingest runs` can rebuild them in an empty database. New hardware comes in only
this way (a run naming hardware the catalogue lacks is refused).

Catalogue lines are checked as `ingest runs` reads them (check_catalogue_line) and take effect
before the runs after them (an export writes them first). A default ingest applies them in a
transaction of their own; --strict applies them in its one transaction with the runs, which is rolled
back when any line of the file is bad; a dry run never applies them, it lays them over what the
database holds (overlay_catalog) so its figures are those of the real run."""

from __future__ import annotations

import itertools
from datetime import date
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.locks import hold_index_writes
from kernelindex.ingest.errors import InputProblem
from kernelindex.ingest.hardware import hardware_problem, upsert_hardware
from kernelindex.ingest.records import HARDWARE_FORMAT, CatalogueLine
from kernelindex.ingest.resolve import HardwareIndex, SuiteKey, WorkloadRef, WorkloadTriple
from kernelindex.ingest.workloads import WorkloadSpec, record_snapshot, upsert_workload
from kernelindex.rules.names import axis_name_problem, name_problem
from kernelindex.services.records import refresh_workloads

WORKLOAD_REQUIRED = ("suite", "name", "reference_source", "canonical")


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


def _workload_problem(data: dict[str, Any]) -> tuple[str | None, str] | None:
    """(key, why) a workload line is refused, or None."""
    # A workload is identified in its suite by level and problem number (KernelBench) or by the suite's
    # own key (suite_key, with its slug): one of the two.
    keyed = data.get("suite_key") not in (None, "")
    missing = [k for k in (*WORKLOAD_REQUIRED, *(("slug",) if keyed else ("level", "problem_number"))) if data.get(k) in (None, "")]
    if missing:
        return missing[0], f"missing {', '.join(missing)}"
    for key in ("suite", "name", "reference_source"):
        if not isinstance(data[key], str):
            return key, f"{key} must be a string"
        bad = name_problem(data[key]) if key != "reference_source" else None
        if bad:
            return key, f"{key} {bad}"
    if data.get("slug") is not None and (not isinstance(data["slug"], str) or name_problem(data["slug"])):
        return "slug", "slug must be a non-empty string without invisible characters"
    for key in ("level", "problem_number"):
        if (data.get(key) is not None or not keyed) and (type(data[key]) is not int or data[key] < 1):
            return key, f"{key} must be a positive integer, got {data[key]!r}"
    for key in ("suite_key", "family", "reference"):
        if data.get(key) is not None and not isinstance(data[key], str):
            return key, f"{key} must be a string"
    aliases = data.get("aliases")
    if aliases is not None and not (isinstance(aliases, list) and all(isinstance(a, str) for a in aliases)):
        return "aliases", "aliases must be a list of names"
    canonical = data["canonical"]
    bindings = canonical.get("bindings") if isinstance(canonical, dict) else None
    if not isinstance(canonical, dict) or not isinstance(bindings or {}, dict):
        return "canonical", "canonical must be an object with bindings (axis → positive integer) and a dtype"
    for axis, value in (bindings or {}).items():
        bad = axis_name_problem(axis)
        if bad:
            return f"canonical.bindings.{axis}", bad
        if type(value) is not int or (value < 1 and not keyed):
            # (a suite's own axes bind what it states: an offset of -100 is not a size)
            return f"canonical.bindings.{axis}", f"{value!r} is not a size: an axis binding is a positive integer"
    stated_key = canonical.get("configuration_key")
    if stated_key is not None and (not isinstance(stated_key, str) or not stated_key):
        return "canonical.configuration_key", "canonical.configuration_key must be a non-empty string"
    problem = _snapshots_problem(data.get("snapshots"))
    return ("snapshots", problem) if problem else None


def check_catalogue_line(line: CatalogueLine, label: str) -> tuple[str, dict[str, Any]] | InputProblem:
    """(where, line) of a good catalogue line, or why it is refused."""
    data = line.data
    refused = hardware_problem(data) if data["format"] == HARDWARE_FORMAT else _workload_problem(data)
    if refused:
        return InputProblem(label, line.where, refused[1], key=refused[0])
    return line.where, data


def _spec(data: dict[str, Any]) -> WorkloadSpec:
    canonical = data["canonical"]
    return WorkloadSpec(
        suite=data["suite"], level=None if data.get("level") is None else int(data["level"]),
        problem_number=None if data.get("problem_number") is None else int(data["problem_number"]), name=data["name"],
        suite_key=data.get("suite_key"), family=data.get("family"), reference=data.get("reference"),
        aliases=tuple(data.get("aliases") or ()),
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
    moved |= await _stated_canonical_keys(session, [data for _, data in lines if data["format"] != HARDWARE_FORMAT])
    if moved:
        await refresh_workloads(session, moved)
    return hardware, touched


async def _stated_canonical_keys(session: AsyncSession, lines: list[dict[str, Any]]) -> set[int]:
    """The canonical configuration keys workload lines state where a source's case makes them (the key
    of bindings and dtype with the case: source_import.configuration_keys), on the revisions the lines
    name. Returns the workloads whose key moved."""
    wanted = [(data["slug"], _spec(data).digest, data["canonical"]["configuration_key"]) for data in lines
              if isinstance(data.get("canonical"), dict) and data["canonical"].get("configuration_key") and data.get("slug")]
    if not wanted:
        return set()
    moved = await session.execute(text(
        "UPDATE workload_revisions r SET canonical_configuration_key = v.cfg FROM workloads w, "
        "unnest(CAST(:slugs AS text[]), CAST(:shas AS text[]), CAST(:cfgs AS text[])) AS v(slug, sha, cfg) "
        "WHERE w.slug = v.slug AND r.workload_id = w.id AND r.source_sha256 = v.sha "
        "AND r.canonical_configuration_key <> v.cfg RETURNING r.workload_id"
    ), {"slugs": [w[0] for w in wanted], "shas": [w[1] for w in wanted], "cfgs": [w[2] for w in wanted]})
    return set(moved.scalars().all())


def overlay_catalog(
    lines: list[tuple[str, dict[str, Any]]], by_slug: dict[str, WorkloadRef], by_triple: dict[WorkloadTriple, WorkloadRef],
    hardware: HardwareIndex, by_key: dict[SuiteKey, WorkloadRef] | None = None,
) -> None:
    """Lay catalogue lines over what the database holds, in memory: the hardware and workload
    revisions they would create get placeholder ids (below zero), and a revision they would make
    current becomes current, so a dry run (and --strict's validation, before anything is written)
    resolves the runs that name them as the real run will. The current revision of a workload whose
    line names snapshots is the one the line says is current (an export states it); revisions-v1
    decides it for real when the lines are applied."""
    placeholders = itertools.count(-1_000_000_000, -1)
    for _, data in lines:
        if data["format"] == HARDWARE_FORMAT:
            names = [n for n in data.get("driver_product_names") or [] if isinstance(n, str)]
            existing = hardware.match({"sku": data["sku"]})
            hardware_id = existing[0] if isinstance(existing, tuple) else next(placeholders)
            hardware.add(hardware_id, data["sku"], names)
            continue
        spec = _spec(data)
        slug = spec.resolved_slug
        ref = by_slug.get(slug)
        if ref is None:
            ref = WorkloadRef(next(placeholders), slug, None)
            by_slug[slug] = ref
            if spec.level is not None and spec.problem_number is not None:
                by_triple.setdefault((spec.suite, spec.level, spec.problem_number), ref)
            if spec.suite_key is not None and by_key is not None:
                by_key.setdefault((spec.suite, spec.suite_key), ref)
        revision_id = ref.revisions.get(spec.digest)
        if revision_id is None:
            revision_id = ref.revisions[spec.digest] = next(placeholders)
        for entry in data.get("snapshots") or []:
            ref.snapshot_revisions.setdefault(str(entry["upstream_revision"]), revision_id)
        if data.get("snapshots"):
            current = data.get("current") is True
        else:
            current = data.get("current", True) is not False and not ref.snapshot_revisions
        if current or ref.current_revision_id is None:
            ref.current_revision_id = revision_id
