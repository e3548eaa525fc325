"""Importing what a source adapter read: its catalogue entries, then its runs through the pipeline's batches.

An adapter (kernelindex.ingest.sources.<name>) reads a file into typed parts and decides nothing; this
module writes them through the one ingest pipeline (kernelindex.ingest.pipeline), as one unit of work
(`write_source`: the file lands whole or not at all, in the pipeline's mode):

    sources      → `sources` (key, licence, terms, attribution), newest snapshot's word kept
    the file     → one whole source snapshot per upstream source (its revision, date and route)
    workloads    → one complete suite snapshot per suite (kernelindex.ingest.workloads.record_snapshot):
                   workloads named by the suite's own key, their semantics as stated, the current
                   revision chosen by the snapshots' dates (revisions-v1)
    implementations, environments (hardware resolved against the catalogue), protocols (with metric,
                   statistic and unit) → their rows
    before runs  → which whole snapshots are outdated (a newer one of the same source exists: a file's
                   runs arrive in a snapshot already marked), and the records of every workload the steps
                   above or those marks moved rebuilt from the runs stored
    runs         → checked against the file's own parts and the hardware catalogue (a refusal: the
                   pipeline's problems), then each a run record in the stated form (`stated_record`: the
                   record /exports/catalog.jsonl writes of it) written by `Pipeline.write`: staged, merged
                   (unchanged, superseded or inserted by natural key and content digest), their cohorts'
                   records refreshed and counted in the pipeline's one summary, in its batches
    afterwards   → the pipeline's finish: the record events of the runs written (history-v1, in observed
                   order, as every way in makes them); a strict ingest with a problem aborts.

Order never matters: a snapshot's runs keep their own source snapshot (route), an older file imported
after a newer one marks itself outdated, and the canonical configuration of a stated workload is set
only from the newest snapshot of its suite. So two files in either order, with `seed` between, end in
one state. A run whose part cannot be written (an unknown GPU, statistics no run can have) is refused
with its file, line and field, and nothing else about the file changes.

The canonical configuration of a workload a suite names (the headline records are compared there: eligibility-v3)
is the one most implementations passed a latency run at in the suite's newest snapshot; ties go to the
smallest configuration key. KernelBench's stays the one its problem file declares.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Protocol

import msgspec
from sqlalchemy import bindparam, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.locks import hold_index_writes
from kernelindex.db.models import Environment, Implementation, Source, SourceSnapshot
from kernelindex.db.models import Protocol as ProtocolRow
from kernelindex.ingest.digests import FIGURE_FIELDS, add_stated_extras, configuration_key_memo, environment_fingerprint_memo
from kernelindex.ingest.errors import IngestAborted, InputProblem
from kernelindex.ingest.pipeline import Mode, Pipeline
from kernelindex.ingest.records import RunRecord
from kernelindex.ingest.resolve import HardwareRefusal, ensure_rows, load_hardware_index, table_of
from kernelindex.ingest.snapshots import mark_outdated, workloads_with_runs
from kernelindex.ingest.sources.parts import (
    ConfigurationPart,
    ImplementationPart,
    ReadSummary,
    RunPart,
    SourcePart,
    WorkloadPart,
)
from kernelindex.ingest.summary import IngestSummary
from kernelindex.ingest.workloads import WorkloadSpec, latest_complete_snapshot, record_snapshot
from kernelindex.rules.identity import configuration_key
from kernelindex.rules.instants import as_utc
from kernelindex.rules.measurements import statistics_problems
from kernelindex.services.records import refresh_workloads


class SourceRead(Protocol):
    """What an adapter's read gives: its parts and its read summary."""

    @property
    def workloads(self) -> Sequence[WorkloadPart]: ...
    @property
    def configurations(self) -> Sequence[ConfigurationPart]: ...
    @property
    def implementations(self) -> Sequence[ImplementationPart]: ...
    @property
    def runs(self) -> Sequence[RunPart]: ...
    @property
    def summary(self) -> ReadSummary: ...


@dataclass(frozen=True)
class Snapshot:
    """The file as a snapshot: its upstream revision (a commit, an export's id), date and route."""

    revision: str
    revision_date: date
    route: str


def workload_slug(suite: str, key: str) -> str:
    """'flashinfer-bench-gqa-paged-decode-h32-kv8-d128-ps1': the suite, then its own key, lower case,
    every other character a '-'."""
    cleaned = "".join(c if c.isascii() and c.isalnum() else "-" for c in key.lower())
    return "-".join(part for part in f"{suite}-{cleaned}".split("-") if part)


def _definition(part: WorkloadPart) -> str:
    """The stated definition as the revision's reference text: canonical JSON of what the source says
    (keys sorted, indented to be read)."""
    return msgspec.json.format(msgspec.json.encode(
        {"suite": part.suite, "key": part.key, "title": part.title, "family": part.family, "reference": part.reference,
         "semantics": part.semantics(), "digest": part.digest, "description": part.description},
        order="sorted",
    ), indent=1).decode()


def _stated_digest(part: WorkloadPart) -> str | None:
    """The source's own digest of the definition ("sha256:…"), the revision's identity where it gives one:
    a definition is the same revision however this code writes its text. None: the text's own digest."""
    digest = part.digest or ""
    hexdigest = digest.removeprefix("sha256:")
    return hexdigest if len(hexdigest) == 64 and all(c in "0123456789abcdef" for c in hexdigest) else None


def configuration_keys(configurations: Sequence[ConfigurationPart]) -> dict[tuple[str, str, str], str]:
    """(suite, workload key, the source's case key) → the run's configuration key: the index's key of its
    bindings and dtype, unless two of the workload's cases share those (a case that is a suite of cases,
    or a case that differs in a stated non-integer parameter), where the source's own case key is added."""
    ours: dict[tuple[str, str, str], str] = {}
    seen: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for c in configurations:
        base = configuration_key(dict(c.bindings), c.dtype or "unspecified")
        ours[(c.suite, c.workload, c.key)] = base
        seen[(c.suite, c.workload, base)].add(c.key)
    out = {}
    for c in configurations:
        base = ours[(c.suite, c.workload, c.key)]
        shared = len(seen[(c.suite, c.workload, base)]) > 1 or bool(c.cases)
        out[(c.suite, c.workload, c.key)] = f"{base}#{c.key}" if shared else base
    return out


def canonical_configurations(runs: Sequence[RunPart], keys: dict[tuple[str, str, str], str]) -> dict[tuple[str, str], str]:
    """(suite, workload key) → the source's case key of its canonical configuration: the one most
    implementations passed a latency run at; ties to the smallest configuration key."""
    passed: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for run in runs:
        if run.status == "passed" and run.protocol.metric == "latency" and run.configuration is not None:
            passed[(run.suite, run.workload)][run.configuration].add(run.implementation)
    out = {}
    for workload, by_case in passed.items():
        out[workload] = min(by_case, key=lambda case: (-len(by_case[case]), keys.get((*workload, case), case)))
    return out


async def _upsert_sources(session: AsyncSession, parts: Sequence[SourcePart], snapshot: Snapshot) -> dict[str, int]:
    """Each source's row by its key; its stated terms kept from the newest snapshot that states them."""
    ids: dict[str, int] = {}
    for part in parts:
        values = {"name": part.name, "key": part.key, "kind": part.kind, "url": part.url, "licence": part.licence,
                  "terms": part.terms, "attribution": part.attribution}
        row = (await session.scalars(select(Source).where((Source.key == part.key) | (Source.name == part.name)))).first()
        if row is None:
            ids[part.key] = (await session.execute(pg_insert(Source).values(**values).returning(Source.id))).scalar_one()
            continue
        ids[part.key] = row.id
        if any(getattr(row, k) != v for k, v in values.items()) and await _newest_of_its_sources(session, [row.id], snapshot):
            await session.execute(update(Source).where(Source.id == row.id).values(**values))
    return ids


async def _snapshot_ids(session: AsyncSession, source_ids: dict[str, int], snapshot: Snapshot) -> dict[str, int]:
    ids = {}
    for key, source_id in source_ids.items():
        statement = pg_insert(SourceSnapshot).values(
            source_id=source_id, revision=snapshot.revision, revision_date=snapshot.revision_date, route=snapshot.route, whole=True,
        ).on_conflict_do_nothing(index_elements=["source_id", "revision"])
        await session.execute(statement)
        row = (await session.scalars(select(SourceSnapshot).where(
            SourceSnapshot.source_id == source_id, SourceSnapshot.revision == snapshot.revision))).one()
        ids[key] = row.id
    return ids


async def _newest_of_its_sources(session: AsyncSession, source_ids: Collection[int], snapshot: Snapshot) -> bool:
    """No snapshot of these sources (not retracted) is dated after this one."""
    later = (await session.scalars(select(SourceSnapshot.id).where(
        SourceSnapshot.source_id.in_(list(source_ids)), SourceSnapshot.revision_date > snapshot.revision_date,
        SourceSnapshot.retracted_at.is_(None),
    ).limit(1))).first()
    return later is None


async def _update_rows(session: AsyncSession, model: Any, rows: dict[str, dict[str, Any]]) -> set[int]:
    """The stored rows (by slug) set to these values where they differ (missing ones are left to
    _ensure_rows). Returns the ids of the rows changed."""
    if not rows:
        return set()
    columns = [c for c in next(iter(rows.values())) if c != "slug"]
    table = model.__table__
    stored = (await session.execute(select(table.c.id, table.c.slug, *(table.c[c] for c in columns))
                                    .where(table.c.slug.in_(list(rows))))).all()
    changes = []
    for row in stored:
        wanted = rows[row[1]]
        if any(_differs(row[2 + n], wanted[c]) for n, c in enumerate(columns)):
            changes.append({"row_id": row[0], **{c: wanted[c] for c in columns}})
    if changes:
        await session.execute(
            update(table).where(table.c.id == bindparam("row_id")).values({c: bindparam(c) for c in columns}), changes,
        )
    return {c["row_id"] for c in changes}


def _differs(stored: Any, wanted: Any) -> bool:
    if isinstance(stored, (list, tuple)) or isinstance(wanted, (list, tuple)):
        return list(stored or ()) != list(wanted or ())
    return bool(stored != wanted)


def _implementation_row(part: ImplementationPart) -> dict[str, Any]:
    return {
        "slug": part.key, "title": part.title, "framework": part.framework or "unknown", "language": part.language or "unknown",
        "runtime_id": part.key, "role": part.role, "licence": part.licence,
        "source_availability": "upstream" if part.source_available else "none", "source_url": part.source_url,
        "authors": list(part.authors), "project": part.project, "target_architectures": list(part.target_architectures),
        "artifact_sha256": part.artifact_digest, "artifact_bytes": part.artifact_bytes, "version": part.version,
    }


def _latency_columns(run: RunPart) -> dict[str, Any]:
    """The ms columns of a latency run, each only where the source states that very statistic."""
    figure = run.figure
    if figure is None or run.protocol.metric != "latency":
        return {}
    statistic = run.protocol.statistic
    return {
        "mean_ms": figure.value if statistic == "mean" else figure.mean,
        "median_ms": figure.value if statistic == "median" else None,
        "min_ms": figure.min, "max_ms": figure.max, "std_ms": figure.std, "num_trials": figure.samples,
    }


def _run_problem(run: RunPart) -> tuple[str | None, str] | None:
    """What a run part cannot be stored with (field, why), checked before anything is written."""
    figure = run.figure
    if run.status == "passed" and figure is None:
        return "figure", "a passed run states no figure"
    if run.status == "failed" and not run.failure_reason:
        return "status", "a failed run states no reason"
    if figure is None:
        return None
    for name in ("value", "low", "high", "min", "max", "mean"):
        value = getattr(figure, name)
        if value is not None and not (isinstance(value, (int, float)) and 0 < value < float("inf")):
            return f"figure.{name}", f"{value!r} is not a finite number above zero"
    columns = _latency_columns(run)
    if columns.get("mean_ms") is not None:
        stats = {k.removesuffix("_ms"): v for k, v in columns.items() if v is not None and k != "num_trials"}
        stats["num_trials"] = columns.get("num_trials") or 1
        problems = statistics_problems(stats)
        if problems:
            return problems[0]
    return None


@dataclass
class _SourceRuns:
    """What the catalogue step of a source file leaves for its runs: the run records (stated form) to
    write through the pipeline, the problems of the runs it refused (file, line and field), the runs
    kept by source, and the rows and workloads the end of the step (_refresh_moved) works on."""

    records: list[RunRecord]
    problems: list[InputProblem]
    by_source: Counter[str]
    source_ids: dict[str, int]
    snapshot_ids: dict[str, int]
    changed: set[int]  # workloads whose eligible runs the catalogue step may have changed: rebuilt before the runs


async def import_source(
    session: AsyncSession, read: SourceRead, sources: Sequence[SourcePart], snapshot: Snapshot, *,
    now: datetime | None = None, dry_run: bool = False,
) -> IngestSummary:
    """Write what an adapter read as one snapshot (see the module), in the caller's transaction, through
    the one pipeline (Pipeline.within, in the default mode: a run refused costs only itself). A dry run
    reads, resolves and counts, and writes nothing (its savepoint is rolled back)."""
    summary = read_summary(read.summary)
    async with Pipeline.within(session, summary, now=now, mode=Mode.DRY_RUN if dry_run else Mode.DEFAULT) as pipeline:
        await write_source(pipeline, read, sources, snapshot)
    return summary.check()


async def write_source(pipeline: Pipeline, read: SourceRead, sources: Sequence[SourcePart], snapshot: Snapshot) -> None:
    """A source file through the pipeline, as one unit of work (the pipeline holds one transaction): its
    catalogue step (sources, the snapshot, workloads and their canonical configurations, implementations,
    environments, protocols; then which snapshots are outdated and the records of the workloads it moved),
    the runs it refused as the pipeline's problems, the others as run records in the stated form written
    by the pipeline's batches (staged, merged, superseded, their cohorts refreshed, counted in its
    summary), then the pipeline's finish (their record events; a strict ingest with a problem aborts).
    The pipeline's summary starts as the adapter's (read_summary)."""
    steps: list[_SourceRuns] = []

    async def catalogue(session: AsyncSession) -> None:
        steps.append(await _write_catalogue(session, read, sources, snapshot, pipeline.summary))
        await _refresh_moved(session, steps[-1], pipeline.summary, now=pipeline.writer.now, dry_run=pipeline.mode is Mode.DRY_RUN)

    await pipeline.catalogue(catalogue)
    if not steps:
        return  # a strict ingest that failed already: nothing more is done
    runs = steps[0]
    pipeline.problems(runs.problems)
    pipeline.summary.runs_by_source.update(runs.by_source)
    await pipeline.write(runs.records)
    await pipeline.finish()


async def _write_catalogue(
    session: AsyncSession, read: SourceRead, sources: Sequence[SourcePart], snapshot: Snapshot, summary: IngestSummary,
) -> _SourceRuns:
    """Everything of the file but its runs, in the session's transaction; its runs checked against it and
    turned into run records in the stated form, each naming the rows written here."""
    file = snapshot.route
    await hold_index_writes(session)
    source_ids = await _upsert_sources(session, sources, snapshot)
    snapshot_ids = await _snapshot_ids(session, source_ids, snapshot)
    # The records name a source by its stored name (a renamed source keeps the newest snapshot's name).
    stored_names = dict((await session.execute(select(Source.id, Source.name).where(Source.id.in_(list(source_ids.values()))))).all())
    source_names = {key: stored_names[source_id] for key, source_id in source_ids.items()}

    keys = configuration_keys(read.configurations)
    canonical_case = canonical_configurations(read.runs, keys)
    configurations = {(c.suite, c.workload, c.key): c for c in read.configurations}

    # Workloads, one complete snapshot per suite.
    by_suite: dict[str, list[WorkloadPart]] = defaultdict(list)
    for part in read.workloads:
        by_suite[part.suite].append(part)
    revision_of: dict[tuple[str, str], tuple[int, int]] = {}
    changed: set[int] = set()  # workloads whose eligible runs this import may have changed: their records are refreshed
    for suite, parts in sorted(by_suite.items()):
        specs = []
        for part in parts:
            case = configurations.get((suite, part.key, canonical_case.get((suite, part.key), "")))
            specs.append(WorkloadSpec(
                suite=suite, level=None, problem_number=None, name=part.title, reference_source=_definition(part),
                kind="operator", slug=workload_slug(suite, part.key), suite_key=part.key, family=part.family,
                reference=part.reference, aliases=tuple(part.aliases), description=part.description,
                upstream_revision=snapshot.revision,
                canonical_bindings=dict(case.bindings) if case else {}, canonical_dtype=(case.dtype if case and case.dtype else "unspecified"),
                semantics=part.semantics(), source_sha256=_stated_digest(part),
            ))
        outcome = await record_snapshot(session, suite, snapshot.revision, snapshot.revision_date, specs, complete=True)
        changed |= set(outcome.changed_workload_ids)
        for part, written in zip(parts, outcome.outcomes):
            revision_of[(suite, part.key)] = (written.workload_id, written.revision_id)
        inserted, new, unchanged = outcome.tally()
        summary.workloads_inserted += inserted
        summary.workloads_new_revision += new
        summary.workloads_unchanged += unchanged
        if await latest_complete_snapshot(session, suite) == outcome.snapshot_id:
            changed |= await _set_canonical(session, suite, parts, revision_of, canonical_case, configurations, keys)

    # Dimensions.
    hardware = await load_hardware_index(session)
    implementations = {p.key: _implementation_row(p) for p in read.implementations}
    if await _newest_of_its_sources(session, source_ids.values(), snapshot):
        # What an implementation is (its role, licence, authors) follows the newest snapshot that states it,
        # so two files in either order leave the same rows; an older file only adds the ones it alone names.
        updated = await _update_rows(session, Implementation, implementations)
        # a role or a name moved: the cohorts' baselines and flags are judged again
        changed |= await workloads_with_runs(session, "implementation_id", updated)
    impl_ids = await ensure_rows(session, table_of(Implementation), implementations, ["slug"])
    protocols: dict[tuple[str, str], dict[str, Any]] = {}
    environments: dict[str, dict[str, Any]] = {}
    problems: list[InputProblem] = []
    records: list[RunRecord] = []
    by_source: Counter[str] = Counter()
    for run in read.runs:
        where = f"line {run.where.line}"
        problem = _run_problem(run)
        matched = hardware.match({"product_name": run.hardware})
        if problem is None and (run.suite, run.workload) not in revision_of:
            problem = ("workload", f"names workload {run.workload!r}, which the file does not define")
        if problem is None and run.implementation not in impl_ids:
            problem = ("implementation", f"names implementation {run.implementation!r}, which the file does not define")
        if problem is None and run.source not in snapshot_ids:
            problem = ("source", f"names source {run.source!r}, which the file does not define")
        if problem is None and isinstance(matched, HardwareRefusal):
            problem = ("hardware", matched.reason)
        if problem is not None:
            problems.append(InputProblem(file, where, problem[1], key=problem[0]))
            continue
        assert isinstance(matched, tuple)
        hardware_id, sku = matched
        software = dict(sorted(run.software.items()))
        details = {"vendor": run.vendor, "architecture": run.architecture}
        fingerprint = environment_fingerprint_memo(sku, {"software": software, "details": details})
        environments.setdefault(fingerprint, {
            "hardware_id": hardware_id, "provider": None, "label": None, "cuda_version": run.software.get("cuda"),
            "torch_version": run.software.get("torch"), "triton_version": run.software.get("triton"),
            "details": {**details, "software": software}, "fingerprint": fingerprint,
        })
        p = run.protocol
        protocols.setdefault((p.name, p.version), {
            "name": p.name, "version": p.version, "timer": p.timer, "statistic": p.statistic, "metric": p.metric,
            "unit": p.unit, "harness": p.harness, "comparator": p.comparator, "family": p.family, "notes": p.notes,
        })
        case_key = keys.get((run.suite, run.workload, run.configuration or ""))
        records.append(RunRecord(
            stated_record(run, snapshot, source_names[run.source], fingerprint, case_key), file, where, line=run.where.line,
        ))
        by_source[run.source] += 1
    # The rows the records name, as the file states them (the writer finds them by their keys).
    await ensure_rows(session, table_of(Environment), environments, ["fingerprint"])
    await ensure_rows(session, table_of(ProtocolRow), protocols, ["name", "version"])
    return _SourceRuns(records, problems, by_source, source_ids, snapshot_ids, changed)


def stated_record(run: RunPart, snapshot: Snapshot, source_name: str, fingerprint: str, case_key: str | None) -> dict[str, Any]:
    """A source adapter's run as a run record in the stated form (the record /exports/catalog.jsonl
    writes of it: kernelindex.ingest.export): what the writer stages from it is what the run states, with
    the content digest the same run read back from the export has (digests.stated_content_digest)."""
    figure = run.figure
    p = run.protocol
    bindings = dict(run.bindings)
    dtype = run.dtype or "unspecified"
    record: dict[str, Any] = {
        "format": "kernelindex.run/1",
        "workload": {"suite": run.suite, "key": run.workload},
        "configuration": {"bindings": bindings, "dtype": dtype, "key": case_key or configuration_key_memo(bindings, dtype)},
        "implementation": {"slug": run.implementation},
        "environment": {"hardware": {"product_name": run.hardware}, "fingerprint": fingerprint},
        "protocol": {"name": p.name, "version": p.version, "metric": p.metric, "statistic": p.statistic, "unit": p.unit},
        "status": run.status,
        "failure_reason": run.failure_reason,
        "figure": None if figure is None else {name: getattr(figure, name) for name in FIGURE_FIELDS},
        "observed_at": as_utc(run.observed_at).isoformat(),
        "evidence": "reported",
        "source": {"name": source_name, "revision": snapshot.revision, "revision_date": snapshot.revision_date.isoformat(),
                   "route": snapshot.route, "whole": True},
    }
    add_stated_extras(record, run.source_speedup, run.upstream_id, run.correctness)
    return record


async def _refresh_moved(
    session: AsyncSession, runs: _SourceRuns, summary: IngestSummary, *, now: datetime, dry_run: bool,
) -> None:
    """The end of the catalogue step, before any run of the file arrives: which whole snapshots of its
    sources are outdated (this one, when a newer one is stored: its runs then arrive counting for
    nothing; the older ones, when this one is newer), and the records of every workload the step or those
    marks moved rebuilt from the runs stored. The file's runs then join them as the pipeline's batches
    merge them, each batch refreshing the cohorts it joins, and the pipeline's finish makes their record
    events in observed order, as for every other way in. Only what moved: an unchanged re-import
    refreshes nothing (and writes nothing); a dry run refreshes nothing."""
    runs.changed |= await mark_outdated(session, list(runs.source_ids.values()))
    summary.outdated = bool(runs.source_ids) and all((await session.scalars(
        select(SourceSnapshot.outdated).where(SourceSnapshot.id.in_(list(runs.snapshot_ids.values())))
    )).all())
    if summary.outdated:
        summary.notes.append("a newer snapshot of its sources is stored: its runs are kept and count for nothing")
    if not dry_run:
        await refresh_workloads(session, runs.changed, now=now)


async def _set_canonical(
    session: AsyncSession, suite: str, parts: Sequence[WorkloadPart],
    revision_of: dict[tuple[str, str], tuple[int, int]], canonical_case: dict[tuple[str, str], str],
    configurations: dict[tuple[str, str, str], ConfigurationPart], keys: dict[tuple[str, str, str], str],
) -> set[int]:
    """What a workload is and the canonical configuration of each revision, from the suite's newest
    snapshot (the caller calls this only for it: an older file imported later never moves what the newer
    one decided). Returns the workloads whose canonical configuration moved."""
    # What the newest snapshot says a workload is (its name, family, reference, aliases, description).
    await session.execute(text(
        "UPDATE workloads w SET name = v.name, family = v.family, reference = v.reference, description = v.description, "
        "aliases = ARRAY(SELECT jsonb_array_elements_text(CAST(v.aliases AS jsonb))) "
        "FROM unnest(CAST(:ids AS int[]), CAST(:names AS text[]), CAST(:families AS text[]), CAST(:refs AS text[]), "
        "CAST(:descs AS text[]), CAST(:aliases AS text[])) AS v(id, name, family, reference, description, aliases) "
        "WHERE w.id = v.id AND (w.name, w.family, w.reference, w.description, to_jsonb(w.aliases)) IS DISTINCT FROM "
        "(v.name, v.family, v.reference, v.description, CAST(v.aliases AS jsonb))"
    ), {"ids": [revision_of[(suite, p.key)][0] for p in parts], "names": [p.title for p in parts],
        "families": [p.family for p in parts], "refs": [p.reference for p in parts], "descs": [p.description for p in parts],
        "aliases": [msgspec.json.encode(list(p.aliases)).decode() for p in parts]})
    ids: list[int] = []
    bindings: list[str] = []
    dtypes: list[str] = []
    cfg_keys: list[str] = []
    for part in parts:
        case_key = canonical_case.get((suite, part.key))
        case = configurations.get((suite, part.key, case_key or ""))
        if case is None:
            continue
        ids.append(revision_of[(suite, part.key)][1])
        bindings.append(msgspec.json.encode(dict(case.bindings)).decode())
        dtypes.append(case.dtype or "unspecified")
        cfg_keys.append(keys[(suite, part.key, case.key)])
    if not ids:
        return set()
    # One statement for the suite, writing only the revisions whose canonical configuration moves.
    moved = await session.execute(text(
        "UPDATE workload_revisions r SET canonical_bindings = CAST(v.bindings AS jsonb), canonical_dtype = v.dtype, "
        "canonical_configuration_key = v.cfg FROM unnest(CAST(:ids AS int[]), CAST(:bindings AS text[]), "
        "CAST(:dtypes AS text[]), CAST(:cfgs AS text[])) AS v(id, bindings, dtype, cfg) "
        "WHERE r.id = v.id AND r.canonical_configuration_key <> v.cfg RETURNING r.workload_id"
    ), {"ids": ids, "bindings": bindings, "dtypes": dtypes, "cfgs": cfg_keys})
    return set(moved.scalars().all())




async def _remember_file(session: AsyncSession, sha256: str, snapshot: Snapshot, summary: IngestSummary) -> None:
    """The file's digest and what its import found, on each source snapshot it made (see known_file)."""
    found = {
        "lines": dict(summary.lines), "skipped": dict(summary.lines_skipped),
        "refused": summary.rejected, "runs_read": summary.found - summary.skipped_count - sum(summary.lines_refused.values()),
        "runs_by_source": dict(summary.runs_by_source),
    }
    await session.execute(
        update(SourceSnapshot).where(SourceSnapshot.revision == snapshot.revision, SourceSnapshot.route == snapshot.route)
        .values(file_sha256=sha256, file_summary=found)
    )


def read_summary(read: ReadSummary) -> IngestSummary:
    """The summary of an import of a source file, as its adapter read it: its lines by table; each line of a
    table the index does not model found and skipped, each line refused found and rejected with its
    problem (file, line and table, field). Its run parts are counted found by the import."""
    summary = IngestSummary(unit="entries", catalogue=True, lines=Counter(read.lines), lines_read=Counter(read.read),
                            lines_skipped=Counter(read.skipped), lines_refused=Counter(read.refused_by_table))
    for table, count in sorted(read.skipped.items()):
        summary.found += count
        summary.skip(f"{table}: not modelled", count=count)
    for r in read.refused:
        summary.reject([InputProblem(r.where.file, f"line {r.where.line} ({r.where.table})", r.reason, key=r.key)])
    return summary


def known_summary(known: KnownFile) -> IngestSummary:
    """What an import of the very bytes imported before finds, told from what that import found (nothing is
    read): every run unchanged, the same lines skipped."""
    skipped = Counter(known.skipped)
    summary = IngestSummary(unit="entries", found=known.runs_read, unchanged=known.runs_read, lines=Counter(known.lines),
                            lines_read=Counter(known.lines) - skipped, lines_skipped=skipped,
                            runs_by_source=Counter(known.runs_by_source))
    for table, count in sorted(skipped.items()):
        summary.found += count
        summary.skip(f"{table}: not modelled", count=count)
    return summary.check()


def read_problems(read: SourceRead) -> list[InputProblem]:
    """The adapter's refusals as input problems (file, line and field)."""
    return [InputProblem(r.where.file, f"line {r.where.line}", r.reason, key=r.key) for r in read.summary.refused]


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes (a 3 MB export: a few milliseconds)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class KnownFile:
    """A file whose very bytes were imported before, whole and without a refusal: what that import found."""

    route: str
    imported_at: datetime
    lines: dict[str, int]
    skipped: dict[str, int]
    runs_read: int
    runs_by_source: dict[str, int]


async def known_file(database_url: str, sha256: str, revision: str, revision_date: date) -> KnownFile | None:
    """The earlier import of these very bytes as this revision and date, when it landed with nothing refused
    and its snapshots stand
    (none retracted). Importing them again would change nothing: ingesting is idempotent, and what a
    newer file decides (the current revisions, roles, canonical configurations) an older one never
    moves. None: read and import the file."""
    engine = make_engine(database_url, pool_size=1, max_overflow=0)
    try:
        async with make_sessionmaker(engine)() as session:
            rows = (await session.execute(select(SourceSnapshot).where(
                SourceSnapshot.file_sha256 == sha256, SourceSnapshot.revision == revision,
                SourceSnapshot.revision_date == revision_date))).scalars().all()
    finally:
        await engine.dispose()
    if not rows or any(r.retracted_at is not None for r in rows):
        return None
    summary = rows[0].file_summary or {}
    if summary.get("refused"):
        return None
    return KnownFile(rows[0].route or "", rows[0].created_at, dict(summary.get("lines", {})), dict(summary.get("skipped", {})),
                     int(summary.get("runs_read", 0)), dict(summary.get("runs_by_source", {})))


async def import_source_file(
    database_url: str, read: SourceRead, sources: Sequence[SourcePart], snapshot: Snapshot, *,
    strict: bool = False, dry_run: bool = False, sha256: str | None = None,
) -> IngestSummary:
    """One file, one unit of work of the ingest pipeline (kernelindex.ingest.pipeline, opened whole: its
    catalogue step and every batch of its runs in one transaction): it lands whole or not at all, in the
    pipeline's mode. --strict: any line the adapter refused or any run this import refuses aborts with
    nothing written (IngestAborted). --dry-run: everything is done and counted in the pipeline's one
    transaction, then rolled back."""
    mode = Mode.of(strict=strict, dry_run=dry_run)
    if mode is Mode.STRICT and read.summary.refused:
        raise IngestAborted(read_problems(read), len(read.summary.refused))
    summary = read_summary(read.summary)
    async with Pipeline.open(database_url, mode, summary, whole=True) as pipeline:
        await write_source(pipeline, read, sources, snapshot)
        if mode is not Mode.DRY_RUN and sha256 is not None:
            async with pipeline.unit() as session:
                await _remember_file(session, sha256, snapshot, summary)
    return summary.check()
