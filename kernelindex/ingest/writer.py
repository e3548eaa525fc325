"""Writing run records: resolve the dimensions, then bulk-insert, supersede or skip each run.

One call of `RunWriter.write` is one batch; the caller owns the transaction, so a batch lands whole
or not at all. Idempotent: a record whose natural key (workload revision, configuration,
implementation, environment, protocol, source revision) is already live with the same content is
"unchanged"; with other content it becomes a new run that supersedes the old one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any

from sqlalchemy import and_, func, or_, select, text, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import (
    Environment,
    Hardware,
    Implementation,
    Protocol,
    Run,
    Source,
    SourceSnapshot,
    Workload,
    WorkloadRevision,
)
from kernelindex.ingest.errors import InputProblem
from kernelindex.ingest.records import RunRecord
from kernelindex.rules.identity import configuration_key, digest

# Ingest batches take this transaction-scoped lock so concurrent ingests serialise instead of
# racing on the same natural keys.
INGEST_LOCK_KEY = 7_311_001

VOLATILE_ENVIRONMENT_DETAILS = ("clocks", "current_clocks", "fingerprint", "captured_at")


@dataclass
class IngestSummary:
    inserted: int = 0
    unchanged: int = 0
    superseded: int = 0
    rejected: int = 0
    workloads: set[int] = field(default_factory=set)
    implementations: set[int] = field(default_factory=set)
    environments: set[int] = field(default_factory=set)
    created_hardware: list[str] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    inserted_run_ids: list[int] = field(default_factory=list)

    def merge(self, other: IngestSummary) -> None:
        self.inserted += other.inserted
        self.unchanged += other.unchanged
        self.superseded += other.superseded
        self.rejected += other.rejected
        self.workloads |= other.workloads
        self.implementations |= other.implementations
        self.environments |= other.environments
        self.created_hardware += other.created_hardware
        self.problems += other.problems
        self.warnings += other.warnings
        self.inserted_run_ids += other.inserted_run_ids

    def table(self) -> list[tuple[str, int]]:
        return [
            ("workloads", len(self.workloads)),
            ("implementations", len(self.implementations)),
            ("environments", len(self.environments)),
            ("runs inserted", self.inserted),
            ("runs unchanged", self.unchanged),
            ("runs superseded", self.superseded),
            ("runs rejected", self.rejected),
        ]


def environment_fingerprint(sku: str, env: dict[str, Any]) -> str:
    details = {k: v for k, v in (env.get("details") or {}).items() if k not in VOLATILE_ENVIRONMENT_DETAILS}
    software = {k: v for k, v in (env.get("software") or {}).items() if v is not None}
    return digest(
        {"sku": sku, "provider": env.get("provider"), "label": env.get("label"), "software": software, "details": details}
    )


def content_digest(data: dict[str, Any]) -> str:
    keys = ("status", "failure_reason", "statistics", "samples_ms", "compile_time_ms", "correctness", "observed_at", "evidence")
    return digest({k: data.get(k) for k in keys})


class RunWriter:
    """Resolves and writes run records inside the caller's transaction."""

    def __init__(self, session: AsyncSession, *, now: datetime | None = None):
        self.session = session
        self.now = now or datetime.now(timezone.utc)
        self._hardware: list[Hardware] | None = None
        self._implementations: dict[str, Implementation] = {}
        self._environments: dict[str, Environment] = {}
        self._protocols: dict[tuple[str, str], Protocol] = {}
        self._snapshots: dict[tuple[str, str], SourceSnapshot] = {}

    # -- dimensions -------------------------------------------------------------------------

    async def hardware_catalogue(self) -> list[Hardware]:
        if self._hardware is None:
            self._hardware = list((await self.session.scalars(select(Hardware))).all())
        return self._hardware

    async def resolve_hardware(self, spec: dict[str, Any], summary: IngestSummary) -> Hardware | str:
        """The catalogue row for a SKU or a driver product name; a new row for an unknown product."""
        catalogue = await self.hardware_catalogue()
        sku = spec.get("sku")
        product = spec.get("product_name")
        if sku:
            for h in catalogue:
                if h.sku.lower() == sku.lower():
                    return h
            if not product:
                return f"unknown hardware SKU {sku!r} (not in the hardware catalogue)"
        wanted = product.lower()
        for h in catalogue:
            if h.sku.lower() == wanted or any(n.lower() == wanted for n in h.driver_product_names):
                return h
        stmt = (
            pg_insert(Hardware)
            .values(
                sku=product, short_name=product, family=product, vendor=product.split()[0],
                driver_product_names=[product], has_datasheet=False,
            )
            .on_conflict_do_nothing(index_elements=["sku"])
        )
        await self.session.execute(stmt)
        row = (await self.session.scalars(select(Hardware).where(Hardware.sku == product))).one()
        catalogue.append(row)
        summary.created_hardware.append(product)
        summary.warnings.append(f"hardware {product!r} is not in the catalogue: added without datasheet figures")
        return row

    async def resolve_environment(self, hardware: Hardware, env: dict[str, Any]) -> Environment:
        fingerprint = environment_fingerprint(hardware.sku, env)
        if fingerprint in self._environments:
            return self._environments[fingerprint]
        software = env.get("software") or {}
        stmt = (
            pg_insert(Environment)
            .values(
                hardware_id=hardware.id, provider=env.get("provider"), label=env.get("label"),
                torch_version=software.get("torch"), cuda_version=software.get("cuda"),
                driver_version=software.get("driver"), python_version=software.get("python"),
                triton_version=software.get("triton"), details=env.get("details") or {}, fingerprint=fingerprint,
            )
            .on_conflict_do_nothing(index_elements=["fingerprint"])
        )
        await self.session.execute(stmt)
        row = (await self.session.scalars(select(Environment).where(Environment.fingerprint == fingerprint))).one()
        self._environments[fingerprint] = row
        return row

    async def resolve_implementation(self, spec: dict[str, Any]) -> Implementation:
        slug = spec["slug"]
        if slug in self._implementations:
            return self._implementations[slug]
        values = {
            "slug": slug,
            "title": spec.get("title") or slug,
            "framework": spec.get("framework") or "unknown",
            "language": spec.get("language") or "unknown",
            "runtime_id": spec.get("runtime_id") or slug,
            "role": spec.get("role") or "candidate",
            "compile_mode": spec.get("compile_mode"),
            "licence": spec.get("licence"),
            "source_availability": spec.get("source_availability") or "none",
            "source_url": spec.get("source_url"),
            "install_recipe": spec.get("install_recipe"),
        }
        await self.session.execute(pg_insert(Implementation).values(**values).on_conflict_do_nothing(index_elements=["slug"]))
        row = (await self.session.scalars(select(Implementation).where(Implementation.slug == slug))).one()
        self._implementations[slug] = row
        return row

    async def resolve_protocol(self, spec: dict[str, Any]) -> Protocol:
        key = (spec["name"], spec["version"])
        if key in self._protocols:
            return self._protocols[key]
        values = {
            "name": spec["name"], "version": spec["version"], "timer": spec.get("timer"),
            "warmup": spec.get("warmup"), "trials": spec.get("trials"),
            "statistic": spec.get("statistic") or "mean", "l2_flush": spec.get("l2_flush"),
        }
        await self.session.execute(pg_insert(Protocol).values(**values).on_conflict_do_nothing(index_elements=["name", "version"]))
        row = (
            await self.session.scalars(select(Protocol).where(Protocol.name == key[0], Protocol.version == key[1]))
        ).one()
        self._protocols[key] = row
        return row

    async def resolve_snapshot(self, spec: dict[str, Any]) -> SourceSnapshot:
        key = (spec["name"], spec.get("revision") or "")
        if key in self._snapshots:
            return self._snapshots[key]
        await self.session.execute(
            pg_insert(Source)
            .values(name=spec["name"], url=spec.get("url"), licence=spec.get("licence"))
            .on_conflict_do_nothing(index_elements=["name"])
        )
        source = (await self.session.scalars(select(Source).where(Source.name == key[0]))).one()
        revision_date = date.fromisoformat(spec["revision_date"]) if spec.get("revision_date") else None
        await self.session.execute(
            pg_insert(SourceSnapshot)
            .values(source_id=source.id, revision=key[1], revision_date=revision_date)
            .on_conflict_do_nothing(index_elements=["source_id", "revision"])
        )
        row = (
            await self.session.scalars(
                select(SourceSnapshot).where(SourceSnapshot.source_id == source.id, SourceSnapshot.revision == key[1])
            )
        ).one()
        self._snapshots[key] = row
        return row

    async def resolve_workloads(
        self, records: list[RunRecord]
    ) -> dict[int, tuple[Workload, WorkloadRevision] | str]:
        """Per record index: its workload and the revision it measured, or why it cannot be found."""
        slugs = {r.data["workload"]["slug"] for r in records if "slug" in r.data["workload"]}
        triples = {
            (r.data["workload"]["suite"], r.data["workload"]["level"], r.data["workload"]["problem"])
            for r in records
            if "slug" not in r.data["workload"]
        }
        conditions = []
        if slugs:
            conditions.append(Workload.slug.in_(slugs))
        if triples:
            conditions.append(tuple_(Workload.suite, Workload.level, Workload.problem_number).in_(list(triples)))
        workloads = list((await self.session.scalars(select(Workload).where(or_(*conditions)))).all()) if conditions else []
        by_slug = {w.slug: w for w in workloads}
        by_triple = {(w.suite, w.level, w.problem_number): w for w in workloads}
        revisions = (
            list(
                (
                    await self.session.scalars(
                        select(WorkloadRevision).where(WorkloadRevision.workload_id.in_([w.id for w in workloads]))
                    )
                ).all()
            )
            if workloads
            else []
        )
        by_id = {r.id: r for r in revisions}
        by_sha = {(r.workload_id, r.source_sha256): r for r in revisions}
        out: dict[int, tuple[Workload, WorkloadRevision] | str] = {}
        for i, rec in enumerate(records):
            ref = rec.data["workload"]
            w = by_slug.get(ref["slug"]) if "slug" in ref else by_triple.get((ref["suite"], ref["level"], ref["problem"]))
            if w is None:
                name = ref.get("slug") or f"{ref['suite']} level {ref['level']} problem {ref['problem']}"
                out[i] = f"unknown workload {name!r}"
                continue
            sha = ref.get("source_sha256")
            if sha:
                rev = by_sha.get((w.id, sha))
                if rev is None:
                    out[i] = f"workload {w.slug!r} has no revision with source sha256 {sha[:12]}…"
                    continue
            else:
                rev = by_id.get(w.current_revision_id) if w.current_revision_id else None
                if rev is None:
                    out[i] = f"workload {w.slug!r} has no reference source revision yet"
                    continue
            out[i] = (w, rev)
        return out

    # -- runs -------------------------------------------------------------------------------

    async def write(self, records: list[RunRecord], *, dry_run: bool = False) -> IngestSummary:
        summary = IngestSummary()
        await self.session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": INGEST_LOCK_KEY})
        workloads = await self.resolve_workloads(records)
        rows: list[dict[str, Any]] = []
        first_line_of_key: dict[tuple, str] = {}
        for i, rec in enumerate(records):
            data = rec.data
            resolved = workloads[i]
            if isinstance(resolved, str):
                summary.problems.append(InputProblem(rec.file, rec.where, resolved, key="workload"))
                continue
            workload, revision = resolved
            hardware = await self.resolve_hardware(data["environment"]["hardware"], summary)
            if isinstance(hardware, str):
                summary.problems.append(InputProblem(rec.file, rec.where, hardware, key="environment.hardware.sku"))
                continue
            env = await self.resolve_environment(hardware, data["environment"])
            impl = await self.resolve_implementation(data["implementation"])
            protocol = await self.resolve_protocol(data["protocol"])
            snapshot = await self.resolve_snapshot(data["source"])
            config = data["configuration"]
            key_text = configuration_key(config["bindings"], config["dtype"])
            natural_key = (revision.id, key_text, impl.id, env.id, protocol.id, snapshot.id)
            if natural_key in first_line_of_key:
                summary.problems.append(
                    InputProblem(rec.file, rec.where, f"the same run as {first_line_of_key[natural_key]} (same natural key)")
                )
                continue
            first_line_of_key[natural_key] = rec.where
            stats = data.get("statistics") or {}
            correctness = data.get("correctness")
            rows.append(
                {
                    "workload_id": workload.id,
                    "workload_revision_id": revision.id,
                    "bindings": config["bindings"],
                    "dtype": config["dtype"],
                    "configuration_key": key_text,
                    "implementation_id": impl.id,
                    "environment_id": env.id,
                    "protocol_id": protocol.id,
                    "source_snapshot_id": snapshot.id,
                    "status": data["status"],
                    "failure_reason": data.get("failure_reason"),
                    "mean_ms": stats.get("mean"),
                    "std_ms": stats.get("std"),
                    "min_ms": stats.get("min"),
                    "max_ms": stats.get("max"),
                    "median_ms": stats.get("median"),
                    "p5_ms": stats.get("p5"),
                    "p95_ms": stats.get("p95"),
                    "num_trials": stats.get("num_trials"),
                    "samples_ms": data.get("samples_ms"),
                    "compile_time_ms": data.get("compile_time_ms"),
                    "correctness": correctness,
                    "observed_at": rec.observed_at,
                    "evidence": data["evidence"],
                    "content_sha256": content_digest(data),
                }
            )
            summary.workloads.add(workload.id)
            summary.implementations.add(impl.id)
            summary.environments.add(env.id)
        summary.rejected = len({(p.file, p.where) for p in summary.problems})
        await self._write_rows(rows, summary, dry_run=dry_run)
        return summary

    async def _write_rows(self, rows: list[dict[str, Any]], summary: IngestSummary, *, dry_run: bool) -> None:
        if not rows:
            return
        key_cols = (
            Run.workload_revision_id, Run.configuration_key, Run.implementation_id,
            Run.environment_id, Run.protocol_id, Run.source_snapshot_id,
        )
        revision_ids = sorted({r["workload_revision_id"] for r in rows})
        existing_rows = (
            await self.session.execute(
                select(Run.id, Run.content_sha256, *key_cols).where(
                    Run.superseded_at.is_(None), Run.workload_revision_id.in_(revision_ids)
                )
            )
        ).all()
        existing = {tuple(row[2:]): (row[0], row[1]) for row in existing_rows}
        to_insert: list[dict[str, Any]] = []
        to_supersede: dict[tuple, int] = {}
        for row in rows:
            key = (
                row["workload_revision_id"], row["configuration_key"], row["implementation_id"],
                row["environment_id"], row["protocol_id"], row["source_snapshot_id"],
            )
            found = existing.get(key)
            if found is None:
                to_insert.append(row)
            elif found[1] == row["content_sha256"]:
                summary.unchanged += 1
            else:
                to_insert.append(row)
                to_supersede[key] = found[0]
        summary.inserted = len(to_insert)
        summary.superseded = len(to_supersede)
        if dry_run or not to_insert:
            return
        if to_supersede:
            # Leave the live-key index first, so the new run can take the key.
            await self.session.execute(
                update(Run).where(Run.id.in_(list(to_supersede.values()))).values(superseded_at=self.now)
            )
        inserted = (await self.session.execute(pg_insert(Run).returning(Run.id, *key_cols), to_insert)).all()
        summary.inserted_run_ids = [row[0] for row in inserted]
        if to_supersede:
            pairs = [(to_supersede[tuple(row[1:])], row[0]) for row in inserted if tuple(row[1:]) in to_supersede]
            await self.session.execute(
                text(
                    "UPDATE runs SET superseded_by_id = v.new_id FROM unnest(CAST(:old AS bigint[]), CAST(:new AS bigint[])) "
                    "AS v(old_id, new_id) WHERE runs.id = v.old_id"
                ),
                {"old": [p[0] for p in pairs], "new": [p[1] for p in pairs]},
            )
